package expr

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetricExpressions(t *testing.T) {
	type want struct {
		compileErr   bool
		usesBaseline bool
		result       bool
		evalErr      bool
	}
	cases := map[string]struct {
		reason           string
		text             string
		result, baseline float64
		want             want
	}{
		"Threshold": {
			reason: "A threshold over result, written as a double.",
			text:   "result <= 0.01", result: 0.005,
			want: want{result: true},
		},
		"IntegerThreshold": {
			reason: "A threshold written as an integer compares with the double result, as people mean it.",
			text:   "result > 0", result: 0.5,
			want: want{result: true},
		},
		"IntegerArithmetic": {
			reason: "Integer literals are doubles in a metric's expression: baseline * 2 and result * 100 read as written.",
			text:   "result * 100 < baseline * 2", result: 0.01, baseline: 1,
			want: want{usesBaseline: true, result: true},
		},
		"Baseline": {
			reason: "baseline is the primary's number; the program says it reads it.",
			text:   "result <= 0.01 || result <= baseline * 1.5", result: 0.03, baseline: 0.02,
			want: want{usesBaseline: true, result: true},
		},
		"BaselineFails": {
			reason: "A canary far worse than its baseline fails.",
			text:   "result <= baseline * 1.5", result: 0.5, baseline: 0.01,
			want: want{usesBaseline: true},
		},
		"NotBool": {
			reason: "successWhen must return a bool.",
			text:   "result * 2",
			want:   want{compileErr: true},
		},
		"ObjectIsNoVariable": {
			reason: "A metric's expression knows result and baseline, not a gate's object.",
			text:   "object.status.ready",
			want:   want{compileErr: true},
		},
		"NaNIsNoVerdict": {
			reason: "NaN cannot be judged: an evaluation error, which a measurement records as no data (package promql answers NaN as no data before it gets here anyway).",
			text:   "result <= 1", result: math.NaN(),
			want: want{evalErr: true},
		},
	}
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			prg, err := c.CompileMetric(tc.text)
			if err != nil {
				got.compileErr = true
			} else {
				got.usesBaseline = prg.UsesBaseline()
				got.result, err = prg.EvalMetric(context.Background(), &Budget{}, tc.result, tc.baseline)
				got.evalErr = err != nil
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	// A gate's expression of the same text is another program: the two
	// environments never share a cached program.
	gate, err := c.Compile("result > 0")
	if err == nil || gate != nil {
		t.Errorf("a gate's expression over result must not compile from the metrics' cache, got %v, %v", gate, err)
	}
}
