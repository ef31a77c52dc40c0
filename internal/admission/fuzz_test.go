package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
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

// FuzzBackendTLSPolicy decodes the input into a BackendTLSPolicy's spec;
// v1alpha3, which has the same schema, is covered by FuzzGenerated.
func FuzzBackendTLSPolicy(f *testing.F) {
	for _, c := range allCases() {
		if p, ok := c.obj.(*gwv1.BackendTLSPolicy); ok {
			addSeed(f, p.Spec)
		}
	}
	addSeed(f, maximalBackendTLSPolicy().Spec)
	judge(f, backendTLSPolicy())
	f.Fuzz(func(t *testing.T, data []byte) {
		p := backendTLSPolicy()
		p.Spec = gwv1.BackendTLSPolicySpec{}
		if err := json.Unmarshal(data, &p.Spec); err != nil {
			t.Skip()
		}
		if !agrees(t, p) {
			t.Fatal(report("FuzzBackendTLSPolicy", p, judge(t, p)))
		}
	})
}

// FuzzUDPRoute decodes the input into the spec of a UDPRoute of both
// versions: v1, which both channels serve, and v1alpha2, whose rules are
// sent as null when nil.
func FuzzUDPRoute(f *testing.F) {
	for _, c := range allCases() {
		switch r := c.obj.(type) {
		case *gwv1.UDPRoute:
			addSeed(f, r.Spec)
		case *gwv1alpha2.UDPRoute:
			addSeed(f, r.Spec)
		}
	}
	judge(f, udpRoute())
	judge(f, udpRouteV1Alpha2())
	f.Fuzz(func(t *testing.T, data []byte) {
		v1, v1alpha2 := udpRoute(), udpRouteV1Alpha2()
		v1.Spec, v1alpha2.Spec = gwv1.UDPRouteSpec{}, gwv1alpha2.UDPRouteSpec{}
		if json.Unmarshal(data, &v1.Spec) != nil || json.Unmarshal(data, &v1alpha2.Spec) != nil {
			t.Skip()
		}
		for _, r := range []any{v1, v1alpha2} {
			if !agrees(t, r) {
				t.Fatal(report("FuzzUDPRoute", r, judge(t, r)))
			}
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
