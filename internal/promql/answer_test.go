package promql

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// decoded is what answer returns, as one comparable value.
type decoded struct {
	Value   float64
	Why     string
	Outcome string
}

func decode(body []byte) decoded {
	v, why, outcome := answer(body, redact.Secrets{})
	return decoded{Value: v, Why: why, Outcome: outcome}
}

const (
	answerOne      = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"web"},"value":[1700000000.123,"0.0125"]}]}}`
	answerScalar   = `{"status":"success","data":{"resultType":"scalar","result":[1700000000.123,"42"]}}`
	answerNone     = `{"status":"success","data":{"resultType":"vector","result":[]}}`
	answerTwo      = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]}}`
	answerNaN      = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`
	answerPlusInf  = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"+Inf"]}]}}`
	answerMinusInf = `{"status":"success","data":{"resultType":"scalar","result":[1,"-Inf"]}}`
	answerMatrix   = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"2"]]}]}}`
	answerString   = `{"status":"success","data":{"resultType":"string","result":[1,"hello"]}}`
	answerError    = `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}`
)

func TestAnswer(t *testing.T) {
	cases := map[string]struct {
		reason string
		body   string
		want   decoded
	}{
		"OneSeries": {
			reason: "One series is the value; its labels do not matter.",
			body:   answerOne,
			want:   decoded{Value: 0.0125, Outcome: OutcomeOK},
		},
		"Scalar": {
			reason: "A scalar is the value.",
			body:   answerScalar,
			want:   decoded{Value: 42, Outcome: OutcomeOK},
		},
		"Warnings": {
			reason: "Warnings beside a result do not change it.",
			body:   `{"status":"success","warnings":["w"],"infos":["i"],"data":{"resultType":"scalar","result":[1,"-0.5"]}}`,
			want:   decoded{Value: -0.5, Outcome: OutcomeOK},
		},
		"NoSeries": {
			reason: "No series is no data, not an error: the query is valid, the traffic may be absent.",
			body:   answerNone,
			want:   decoded{Why: "no series", Outcome: OutcomeNoData},
		},
		"TwoSeries": {
			reason: "Several series are no one number: the message says how to aggregate.",
			body:   answerTwo,
			want:   decoded{Why: "2 series: the query must give one number (aggregate it, e.g. sum(...))", Outcome: OutcomeNoData},
		},
		"NaN": {
			reason: "NaN (0/0: no traffic) is no number.",
			body:   answerNaN,
			want:   decoded{Why: "the value is NaN, not a number", Outcome: OutcomeNoData},
		},
		"PlusInf": {
			reason: "+Inf is no number.",
			body:   answerPlusInf,
			want:   decoded{Why: "the value is +Inf, not a number", Outcome: OutcomeNoData},
		},
		"MinusInf": {
			reason: "-Inf is no number.",
			body:   answerMinusInf,
			want:   decoded{Why: "the value is -Inf, not a number", Outcome: OutcomeNoData},
		},
		"OutOfRange": {
			reason: "A number beyond float64 is infinite.",
			body:   `{"status":"success","data":{"resultType":"scalar","result":[1,"1e400"]}}`,
			want:   decoded{Why: "the value is +Inf, not a number", Outcome: OutcomeNoData},
		},
		"Matrix": {
			reason: "A range vector is no number.",
			body:   answerMatrix,
			want:   decoded{Why: "a range vector (matrix): the query must give one number", Outcome: OutcomeNoData},
		},
		"String": {
			reason: "A string is no number.",
			body:   answerString,
			want:   decoded{Why: "a string: the query must give one number", Outcome: OutcomeNoData},
		},
		"Histogram": {
			reason: "A native histogram sample is no number.",
			body:   `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1"}]}]}}`,
			want:   decoded{Why: "a native histogram sample: the query must give one number (such as histogram_quantile(...))", Outcome: OutcomeNoData},
		},
		"ErrorStatus": {
			reason: "Prometheus's error is an error, named by its type and message.",
			body:   answerError,
			want:   decoded{Why: `an error: "bad_data": "invalid parameter \"query\": 1:1: parse error"`, Outcome: OutcomeError},
		},
		"ErrorBounded": {
			reason: "Prometheus's error message is cut to 256 characters.",
			body:   `{"status":"error","errorType":"execution","error":"` + strings.Repeat("e", 5000) + `"}`,
			want:   decoded{Why: `an error: "execution": "` + strings.Repeat("e", 256) + `...(5000 characters)"`, Outcome: OutcomeError},
		},
		"UnknownStatus": {
			reason: "A status other than success or error is an error.",
			body:   `{"status":"maybe"}`,
			want:   decoded{Why: `an unknown status "maybe"`, Outcome: OutcomeError},
		},
		"UnknownResultType": {
			reason: "An unknown result type is an error.",
			body:   `{"status":"success","data":{"resultType":"tensor","result":[]}}`,
			want:   decoded{Why: `an unknown result type "tensor"`, Outcome: OutcomeError},
		},
		"NotJSON": {
			reason: "A proxy's HTML page is an error that quotes its start.",
			body:   `<html>login</html>`,
			want:   decoded{Why: `an invalid answer (not Prometheus's JSON: invalid character '<' looking for beginning of value; it begins "<html>login</html>")`, Outcome: OutcomeError},
		},
		"TrailingGarbage": {
			reason: "JSON followed by more is not an answer.",
			body:   answerScalar + `x`,
			want:   decoded{Why: `an invalid answer (not Prometheus's JSON: invalid character 'x' after top-level value; it begins "` + strings.ReplaceAll(answerScalar, `"`, `\"`) + `x")`, Outcome: OutcomeError},
		},
		"VectorNotList": {
			reason: "A vector must be a list.",
			body:   `{"status":"success","data":{"resultType":"vector","result":{}}}`,
			want:   decoded{Why: "an invalid answer (the vector is not a list)", Outcome: OutcomeError},
		},
		"SampleShort": {
			reason: "A sample is a pair.",
			body:   `{"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}}`,
			want:   decoded{Why: `an invalid answer (a sample is not [time, "value"])`, Outcome: OutcomeError},
		},
		"ValueNotString": {
			reason: "Prometheus writes a sample's value as a string.",
			body:   `{"status":"success","data":{"resultType":"scalar","result":[1,1]}}`,
			want:   decoded{Why: "an invalid answer (a sample's value is not a string)", Outcome: OutcomeError},
		},
		"ValueNotNumber": {
			reason: "A sample's value must read as a number.",
			body:   `{"status":"success","data":{"resultType":"scalar","result":[1,"many"]}}`,
			want:   decoded{Why: `an invalid answer (a sample's value "many" is not a number)`, Outcome: OutcomeError},
		},
		"SecondSeriesNotObject": {
			reason: "A vector of anything but series is invalid, even past the first.",
			body:   `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},7]}}`,
			want:   decoded{Why: "an invalid answer (not Prometheus's JSON: json: cannot unmarshal number into Go value of type struct {})", Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decode([]byte(tc.body))); diff != "" {
				t.Errorf("%s\nanswer(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// oneSample reports whether body is, by a decoder that keeps everything, a
// success with a scalar, or a vector of exactly one series.
func oneSample(body []byte) bool {
	var a struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     any    `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &a) != nil || a.Status != "success" {
		return false
	}
	switch a.Data.ResultType {
	case "scalar":
		return true
	case "vector":
		l, ok := a.Data.Result.([]any)
		return ok && len(l) == 1
	default:
		return false
	}
}

func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		answerOne, answerScalar, answerNone, answerTwo, answerNaN, answerPlusInf, answerMinusInf,
		answerMatrix, answerString, answerError, `{}`, `null`, `[]`, ``, `{"status":"success","data":null}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"0x1p-2"]}]}}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"1e400"]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, why, outcome := answer(body, redact.Secrets{})
		switch outcome {
		case OutcomeOK:
			if why != "" {
				t.Errorf("answer(%q) = %v, %q, ok: a value with a reason", body, v, why)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("answer(%q) = %v: a value that is not finite", body, v)
			}
			if !oneSample(body) {
				t.Errorf("answer(%q) = %v: a value from an answer that is not one sample", body, v)
			}
		case OutcomeNoData, OutcomeError:
			if why == "" || v != 0 {
				t.Errorf("answer(%q) = %v, %q, %s: no value needs a reason, and no value", body, v, why, outcome)
			}
			// Bounded: what it quotes is cut to 256 characters, each
			// of which %q writes in at most 10 bytes.
			if len(why) > 4096 {
				t.Errorf("answer(%q): a reason of %d bytes", body, len(why))
			}
		default:
			t.Errorf("answer(%q): outcome %q", body, outcome)
		}
	})
}
