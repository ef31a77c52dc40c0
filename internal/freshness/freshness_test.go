package freshness

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// The orders of reads, the stamps and the memory are tested with
// Crossplane's requests and responses in package pipeline (answer_test.go),
// which reads them from the wire; these are the numbers alone.

func TestCounter(t *testing.T) {
	cases := map[string]struct {
		reason string
		v      *structpb.Value
		want   int64
	}{
		"Whole":    {reason: "A whole number reads as itself.", v: structpb.NewNumberValue(7), want: 7},
		"Absent":   {reason: "None reads as 0.", v: nil, want: 0},
		"Negative": {reason: "A negative one, written by hand, reads as 0.", v: structpb.NewNumberValue(-3), want: 0},
		"Fraction": {reason: "A fraction reads as 0.", v: structpb.NewNumberValue(2.5), want: 0},
		"String":   {reason: "A string reads as 0: never a Fatal.", v: structpb.NewStringValue("7"), want: 0},
		"Huge":     {reason: "Beyond what a JSON number holds exactly, the largest.", v: structpb.NewNumberValue(1e300), want: xr.MaxSequence},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Counter(tc.v); got != tc.want {
				t.Errorf("%s\nCounter(%v) = %d, want %d", tc.reason, tc.v, got, tc.want)
			}
		})
	}
}

func TestStatusOfLeavesOutWhatAnXRDMayPrune(t *testing.T) {
	status := func(rollout, release map[string]any) *structpb.Value {
		v, err := structpb.NewValue(map[string]any{"rollout": rollout, "release": release})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	_, base := StatusOf(status(map[string]any{"step": float64(1)}, map[string]any{"stable": "v1"}))
	_, pruned := StatusOf(status(map[string]any{"step": float64(1), "sequence": float64(4)}, map[string]any{"stable": "v1", "canaryMove": map[string]any{"to": "v2"}}))
	_, other := StatusOf(status(map[string]any{"step": float64(2)}, map[string]any{"stable": "v1"}))
	if base != pruned {
		t.Error("the sequence and a canary move under way are not part of what a status says")
	}
	if base == other {
		t.Error("another step says something else")
	}
}
