package promql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

const (
	whyNoSeries      = "no series"
	whyFmtSeries     = "%d series: the query must give one number (aggregate it, e.g. sum(...))"
	whyFmtNotNumber  = "the value is %s, not a number"
	whyMatrix        = "a range vector (matrix): the query must give one number"
	whyString        = "a string: the query must give one number"
	whyFmtResultType = "an unknown result type %s"
	whyFmtInvalid    = "an invalid answer (%s)"
	whyFmtError      = "an error: %s: %s"
	whyFmtStatus     = "an unknown status %s"
	whyNotSample     = "a sample is not [time, \"value\"]"
	whyHistogram     = "a native histogram sample: the query must give one number (such as histogram_quantile(...))"
)

// answerJSON is Prometheus's answer to an instant query. The result is
// read later, by its type; warnings and infos are not read.
type answerJSON struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// sampleJSON is one series of an instant vector. Its labels are skipped.
type sampleJSON struct {
	Value     []json.RawMessage `json:"value"`
	Histogram json.RawMessage   `json:"histogram"`
}

// answer reads Prometheus's answer to an instant query: its one finite
// number, or why there is none (which does not name the provider) and the
// outcome. The body is at most MaxAnswer bytes; decoding keeps at most one
// series, so that what it allocates stays a small multiple of the body.
// What it quotes of the answer goes through secrets, the credentials the
// query sent: the body itself is read as it came, since a credential
// replaced in it could change what it says.
func answer(body []byte, secrets redact.Secrets) (float64, string, string) {
	var a answerJSON
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Sprintf(whyFmtInvalid, invalid(prometheusJSON, err, body, secrets)), OutcomeError
	}
	switch a.Status {
	case "success":
	case "error":
		return 0, fmt.Sprintf(whyFmtError, secrets.Quote(a.ErrorType), secrets.Quote(a.Error)), OutcomeError
	default:
		return 0, fmt.Sprintf(whyFmtStatus, secrets.Quote(a.Status)), OutcomeError
	}
	switch a.Data.ResultType {
	case "scalar":
		var pair []json.RawMessage
		if err := json.Unmarshal(a.Data.Result, &pair); err != nil {
			return 0, fmt.Sprintf(whyFmtInvalid, whyNotSample), OutcomeError
		}
		return sample(pair, secrets)
	case "vector":
		return vector(a.Data.Result, secrets)
	case "matrix":
		return 0, whyMatrix, OutcomeNoData
	case "string":
		return 0, whyString, OutcomeNoData
	default:
		return 0, fmt.Sprintf(whyFmtResultType, secrets.Quote(a.Data.ResultType)), OutcomeError
	}
}

// vector reads an instant vector of one series. It counts the others
// without keeping them.
func vector(result json.RawMessage, secrets redact.Secrets) (float64, string, string) {
	d := json.NewDecoder(bytes.NewReader(result))
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return 0, fmt.Sprintf(whyFmtInvalid, "the vector is not a list"), OutcomeError
	}
	var first sampleJSON
	n := 0
	for d.More() {
		var err error
		if n == 0 {
			err = d.Decode(&first)
		} else {
			err = d.Decode(&struct{}{})
		}
		if err != nil {
			return 0, fmt.Sprintf(whyFmtInvalid, invalid(prometheusJSON, err, nil, secrets)), OutcomeError
		}
		n++
	}
	switch {
	case n == 0:
		return 0, whyNoSeries, OutcomeNoData
	case n > 1:
		return 0, fmt.Sprintf(whyFmtSeries, n), OutcomeNoData
	case first.Value == nil && first.Histogram != nil:
		return 0, whyHistogram, OutcomeNoData
	}
	return sample(first.Value, secrets)
}

// sample reads a sample, [<unix time>, "<number>"]: its number when finite.
func sample(pair []json.RawMessage, secrets redact.Secrets) (float64, string, string) {
	if len(pair) != 2 {
		return 0, fmt.Sprintf(whyFmtInvalid, whyNotSample), OutcomeError
	}
	var text string
	if err := json.Unmarshal(pair[1], &text); err != nil {
		return 0, fmt.Sprintf(whyFmtInvalid, "a sample's value is not a string"), OutcomeError
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Sprintf(whyFmtInvalid, "a sample's value "+secrets.Quote(text)+" is not a number"), OutcomeError
	}
	switch {
	case math.IsNaN(v):
		return 0, fmt.Sprintf(whyFmtNotNumber, "NaN"), OutcomeNoData
	case math.IsInf(v, 1):
		return 0, fmt.Sprintf(whyFmtNotNumber, "+Inf"), OutcomeNoData
	case math.IsInf(v, -1):
		return 0, fmt.Sprintf(whyFmtNotNumber, "-Inf"), OutcomeNoData
	}
	return v, "", OutcomeOK
}

// quotedHead is how much of the start of an answer invalid reads to quote
// it: far more than the fielderr.MaxValue bytes a quote shows, so that what
// it shows is redacted as a whole answer's would be, but not the whole of
// an answer of up to MaxAnswer bytes, whose redaction (every escape of an
// answer dense with them decoded in every order) would cost a run 100 ms.
const quotedHead = 16 * fielderr.MaxValue

// What each kind's answer is, as invalid names it.
const (
	prometheusJSON = "Prometheus's JSON"
	datadogJSON    = "Datadog's JSON"
	webJSON        = "JSON"
)

// invalid says why an answer is not what the provider's kind answers
// (what: Prometheus's JSON, Datadog's), quoting the start of the body when
// there is one (an HTML page of a proxy says most). Only its head is read
// to quote it, made safe as a text cut short (a credential may run past
// the head's end).
func invalid(what string, err error, body []byte, secrets redact.Secrets) string {
	msg := "not " + what + ": " + secrets.Cut(err.Error())
	if len(body) > quotedHead {
		body = secrets.Truncated(body[:quotedHead])
	}
	if len(body) > 0 {
		msg += "; it begins " + secrets.Quote(string(body))
	}
	return msg
}
