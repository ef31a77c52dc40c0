package route

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// fuzzCanaries are the canaries recorded for FuzzZeroCanary's routes: a
// Service on a port, and an object of a kind without a port.
var fuzzCanaries = []xr.BackendID{
	recordedCanary,
	{Group: "inference.networking.k8s.io", Kind: "InferencePool", Namespace: "test", Name: "pool"},
}

// namesCanary says whether a reference names a recorded canary, written
// apart from the code under test: Gateway API's defaults (core group, kind
// Service, the route's namespace), and a recorded port of nil for any port.
func namesCanary(ref gwv1.BackendObjectReference, routeNamespace string) bool {
	group, kind, ns := "", "Service", routeNamespace
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	for _, c := range fuzzCanaries {
		if c.Group != group || c.Kind != kind || c.Namespace != ns || c.Name != string(ref.Name) {
			continue
		}
		if c.Port == nil || (ref.Port != nil && *ref.Port == *c.Port) {
			return true
		}
	}
	return false
}

// FuzzZeroCanary decodes arbitrary JSON as an HTTPRoute and zeroes its
// canary: ZeroCanary never panics and, when it reports true, every
// backendRef left that names a recorded canary has weight 0, no mirror to a
// canary is left, and a rule is left.
func FuzzZeroCanary(f *testing.F) {
	for _, rules := range []string{
		`[{"backendRefs": [{"name": "podinfo-primary", "port": 9898, "weight": 80}, {"name": "canary-proxy", "namespace": "monitoring", "port": 3456, "weight": 20}]}]`,
		`[{"backendRefs": [{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": 3456}]}, {"backendRefs": [{"name": "podinfo-primary", "port": 9898, "weight": 0}, {"name": "canary-proxy", "namespace": "monitoring", "port": 3456, "weight": 100}]}]`,
		`[{"filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "canary-proxy", "namespace": "monitoring", "port": 3456}}}], "backendRefs": [{"name": "podinfo-primary", "port": 9898, "filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool"}}}]}]}]`,
		`[{"backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool", "weight": 5}, {"name": "canary-proxy", "namespace": "monitoring", "port": 3457, "weight": 5}]}]`,
		`[{"backendRefs": [{"name": "canary-proxy", "namespace": "", "port": 3456, "weight": 1}]}, {}]`,
		`[{"backendRefs": [{"name": "podinfo-primary", "port": 9898}, {"name": "canary-proxy", "namespace": "monitoring", "port": 3456}]}]`,
		`[]`,
	} {
		f.Add([]byte(`{"metadata": {"name": "podinfo", "namespace": "test"}, "spec": {"parentRefs": [{"name": "gateway"}], "rules": ` + rules + `}}`))
	}
	f.Add([]byte(`{"spec": {"rules": null}}`))
	f.Add([]byte(`{"spec": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			t.Skip()
		}
		obj["apiVersion"], obj["kind"] = "gateway.networking.k8s.io/v1", "HTTPRoute"
		decodedObj, err := Decode(obj)
		if err != nil {
			t.Skip()
		}
		r, isHTTP := decodedObj.(*gwv1.HTTPRoute)
		if !isHTTP {
			t.Fatalf("Decode(HTTPRoute): got %T", decodedObj)
		}
		if !ZeroCanary(r, fuzzCanaries, "test") {
			return
		}
		if len(r.Spec.Rules) == 0 {
			t.Fatal("ZeroCanary(...) reported true and left no rule")
		}
		mirrorsCanary := func(filters []gwv1.HTTPRouteFilter) error {
			for _, f := range filters {
				if f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil && namesCanary(f.RequestMirror.BackendRef, "test") {
					return fmt.Errorf("a RequestMirror to the canary is left: %+v", f.RequestMirror.BackendRef)
				}
			}
			return nil
		}
		for i, rule := range r.Spec.Rules {
			if err := mirrorsCanary(rule.Filters); err != nil {
				t.Errorf("rule %d: %v", i, err)
			}
			for j, b := range rule.BackendRefs {
				if namesCanary(b.BackendObjectReference, "test") && ptr.Deref(b.Weight, 1) != 0 {
					t.Errorf("rule %d, backendRef %d names a recorded canary and has weight %d", i, j, ptr.Deref(b.Weight, 1))
				}
				if err := mirrorsCanary(b.Filters); err != nil {
					t.Errorf("rule %d, backendRef %d: %v", i, j, err)
				}
			}
		}
	})
}
