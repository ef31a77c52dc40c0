package promql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

const (
	datadogQueryPath      = "/api/v1/query"
	headerDatadogAPIKey   = "DD-API-KEY" //nolint:gosec // A header's name, not a credential.
	headerDatadogAppKey   = "DD-APPLICATION-KEY"
	datadogOK             = "ok"
	datadogError          = "error"
	whyNoInstant          = "no instant to end the window at: a Datadog query reads the metric's interval up to the run's time"
	whyFmtDatadogSeries   = "%d series: the query must give one series (aggregate it, e.g. sum:metric{...})"
	whyDatadogNoPoints    = "a series without points"
	whyDatadogNullPoints  = "a series whose every point is null"
	whyFmtDatadogErrors   = "errors: %s"
	whyFmtDatadogError    = "an error: %s"
	whyFmtDatadogStatus   = "an unknown status %s"
	whyFmtDatadogNotPoint = "a point is not [time, value]"
	datadogDefaultWindow  = time.Minute
)

// errNoInstant is a Datadog query asked at no instant.
var errNoInstant = errors.New(whyNoInstant)

// DatadogAddress is the base URL of a Datadog site's API: the site's
// api. host (datadoghq.com's is https://api.datadoghq.com).
func DatadogAddress(site string) string {
	return "https://api." + site
}

// datadogAPI is Datadog's metrics query API (v1): GET /api/v1/query with
// the window [at - Window, at] in seconds and the query, authenticated by
// the DD-API-KEY and DD-APPLICATION-KEY headers. Its answer is the series
// the query gives over the window, each a list of points; the value is the
// last point (not null) of the one series.
type datadogAPI struct{}

func (datadogAPI) endpoint(p Provider, query string, at time.Time) (string, error) {
	u, err := base(p.Address)
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", errors.New(errAddressQuery)
	}
	if at.IsZero() {
		return "", errNoInstant
	}
	window := p.Window
	if window <= 0 {
		// The XRD's default interval: a query of no window would ask
		// Datadog for no point.
		window = datadogDefaultWindow
	}
	to := at.Unix()
	from := to - int64(math.Ceil(window.Seconds()))
	u.Path = strings.TrimSuffix(u.Path, "/") + datadogQueryPath
	u.RawPath = ""
	u.RawQuery = url.Values{
		"from":  {strconv.FormatInt(from, 10)},
		"to":    {strconv.FormatInt(to, 10)},
		"query": {query},
	}.Encode()
	return u.String(), nil
}

// authorize sends the keys, each a header of its own.
func (datadogAPI) authorize(req *http.Request, a Auth) {
	if a.APIKey != "" {
		req.Header.Set(headerDatadogAPIKey, a.APIKey)
	}
	if a.AppKey != "" {
		req.Header.Set(headerDatadogAppKey, a.AppKey)
	}
}

// datadogAnswerJSON is Datadog's answer to a metrics query: the series are
// read later, one at a time; errors is the shape of its error answers
// (HTTP 400, 403), error that of a status "error".
type datadogAnswerJSON struct {
	Status string          `json:"status"`
	Error  string          `json:"error"`
	Errors []string        `json:"errors"`
	Series json.RawMessage `json:"series"`
}

// datadogSeriesJSON is one series: its points, each [time in ms, value],
// the value null where the series has none in a rollup's bucket. The
// other fields (metric, scope, tags) are skipped.
type datadogSeriesJSON struct {
	Pointlist [][]*float64 `json:"pointlist"`
}

// answer reads Datadog's answer: the last point of its one series.
// (Decision: the last point that is not null. Datadog writes null for a
// rollup bucket without data, which the newest, still filling, often is;
// every point lies within the metric's interval, so an earlier one is no
// staler than the interval allows.)
func (datadogAPI) answer(body []byte, secrets redact.Secrets) (float64, string, string) {
	var a datadogAnswerJSON
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Sprintf(whyFmtInvalid, invalid(datadogJSON, err, body, secrets)), OutcomeError
	}
	switch {
	case len(a.Errors) > 0:
		return 0, fmt.Sprintf(whyFmtDatadogErrors, secrets.Quote(strings.Join(a.Errors, "; "))), OutcomeError
	case a.Status == datadogError:
		return 0, fmt.Sprintf(whyFmtDatadogError, secrets.Quote(a.Error)), OutcomeError
	case a.Status != datadogOK:
		return 0, fmt.Sprintf(whyFmtDatadogStatus, secrets.Quote(a.Status)), OutcomeError
	}
	series, n, err := firstOf[datadogSeriesJSON](a.Series)
	if err != nil {
		return 0, fmt.Sprintf(whyFmtInvalid, invalid(datadogJSON, err, nil, secrets)), OutcomeError
	}
	switch {
	case n == 0:
		return 0, whyNoSeries, OutcomeNoData
	case n > 1:
		return 0, fmt.Sprintf(whyFmtDatadogSeries, n), OutcomeNoData
	case len(series.Pointlist) == 0:
		return 0, whyDatadogNoPoints, OutcomeNoData
	}
	for i := len(series.Pointlist) - 1; i >= 0; i-- {
		point := series.Pointlist[i]
		if len(point) != 2 {
			return 0, fmt.Sprintf(whyFmtInvalid, whyFmtDatadogNotPoint), OutcomeError
		}
		if point[1] != nil {
			// JSON holds no NaN nor infinity: a number decoded is finite.
			return *point[1], "", OutcomeOK
		}
	}
	return 0, whyDatadogNullPoints, OutcomeNoData
}

// httpError says what an answer other than 200 OK holds: Datadog's errors
// when it is its error shape, else the start of the body, quoted through
// secrets.
func (datadogAPI) httpError(status int, body []byte, secrets redact.Secrets) string {
	var a datadogAnswerJSON
	if err := json.Unmarshal(body, &a); err == nil && len(a.Errors) > 0 {
		return fmt.Sprintf(whyFmtHTTP, status, secrets.Quote(strings.Join(a.Errors, "; ")))
	}
	return fmt.Sprintf(whyFmtHTTP, status, secrets.Quote(string(body)))
}

// firstOf reads a JSON list, keeping its first item and counting the
// others without keeping them: what it allocates stays a small multiple of
// one item, however many the list holds. null or nothing is an empty list.
func firstOf[T any](list json.RawMessage) (T, int, error) {
	var first T
	if len(bytes.TrimSpace(list)) == 0 || string(bytes.TrimSpace(list)) == "null" {
		return first, 0, nil
	}
	d := json.NewDecoder(bytes.NewReader(list))
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return first, 0, errors.New("the series are not a list")
	}
	n := 0
	for d.More() {
		var err error
		if n == 0 {
			err = d.Decode(&first)
		} else {
			err = d.Decode(&struct{}{})
		}
		if err != nil {
			return first, 0, err
		}
		n++
	}
	return first, n, nil
}

// ExpandDatadog replaces the placeholders of a Datadog query by their
// values: the interval as a duration ("1m"), the others with every
// character that Datadog's tags do not hold (letters, digits and _ - . /
// :) replaced by "_", as Datadog itself normalizes a tag. A value then
// cannot close a scope ({...}), add a tag (",") or a function, however it
// is written: a Kubernetes name is left as it is. A value is never
// expanded again.
func ExpandDatadog(query string, v Values) string {
	return expand(query, func(name string) string {
		if name == PlaceholderInterval {
			return Duration(v.Interval)
		}
		return datadogTag(raw(name, v))
	})
}

// datadogTag is s in the characters of a Datadog tag.
func datadogTag(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		case r == '_', r == '-', r == '.', r == '/', r == ':':
			return r
		default:
			return '_'
		}
	}, s)
}
