package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The fuzz targets decode the fuzzer's bytes into a route's spec (skipping
// what does not decode), then require that admission does not panic and
// agrees with the CRD validator of both channels: it accepts exactly what
// both accept. Seeds are the hand-written cases; failing inputs found so far
// live in testdata/fuzz as regression seeds.

func FuzzHTTPRoute(f *testing.F) {
	for _, c := range allCases() {
		if r, ok := c.obj.(*gwv1.HTTPRoute); ok {
			addSeed(f, r.Spec)
		}
	}
	// Load and compile the CRDs before fuzzing: under the fuzzer's
	// instrumentation that takes long enough for a first input to be taken
	// for a hang.
	judge(f, httpRoute())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := httpRoute()
		r.Spec = gwv1.HTTPRouteSpec{}
		if err := json.Unmarshal(data, &r.Spec); err != nil {
			t.Skip()
		}
		if !agrees(t, r) {
			t.Fatal(report("FuzzHTTPRoute", r, judge(t, r)))
		}
	})
}

func FuzzGRPCRoute(f *testing.F) {
	for _, c := range allCases() {
		if r, ok := c.obj.(*gwv1.GRPCRoute); ok {
			addSeed(f, r.Spec)
		}
	}
	judge(f, grpcRoute())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := grpcRoute()
		r.Spec = gwv1.GRPCRouteSpec{}
		if err := json.Unmarshal(data, &r.Spec); err != nil {
			t.Skip()
		}
		if !agrees(t, r) {
			t.Fatal(report("FuzzGRPCRoute", r, judge(t, r)))
		}
	})
}

func addSeed(f *testing.F, spec any) {
	f.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// FuzzGenerated explores the differential test's generator beyond its fixed
// seed: each input is a seed and a kind.
func FuzzGenerated(f *testing.F) {
	gens := generators()
	kinds := slices.Sorted(maps.Keys(gens))
	for i := range kinds {
		f.Add(uint64(i), uint8(i))
	}
	judge(f, httpRoute())
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8) {
		k := kinds[int(kind)%len(kinds)]
		obj := gens[k](newGen(seed))
		if !agrees(t, obj) {
			t.Fatal(report(fmt.Sprintf("FuzzGenerated %s seed %d", k, seed), obj, judge(t, obj)))
		}
	})
}
