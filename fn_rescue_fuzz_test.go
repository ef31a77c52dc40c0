package main

import (
	"context"
	"encoding/json"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	xrcomposite "github.com/crossplane/function-sdk-go/resource/composite"
)

// FuzzAbortRescue feeds an emergency abort of a CanaryRoute that cannot be
// composed (its ExternalName is not allowed) with an arbitrary observed route
// and status.rollout: the run must never panic or return a gRPC error, must be
// deterministic, and when it rescues the abort (a Warning, no Fatal) no
// backend recorded as a canary may keep a weight in the route.
func FuzzAbortRescue(f *testing.F) {
	asJSON := func(y string) string {
		b, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		return string(b)
	}
	f.Add(asJSON(ownRoute("crossplane.io/composite: podinfo", 80, 20)), `{"phase":"Stable","canaryBackends":[{"group":"","kind":"Service","namespace":"monitoring","name":"canary-proxy","port":3456}]}`)
	f.Add(asJSON(ownRoute("", 0, 100)), `{"canaryBackends":[{"kind":"Service","namespace":"monitoring","name":"canary-proxy"}]}`)
	f.Add(`{"spec":{"rules":[{"backendRefs":[{"name":"canary-proxy","namespace":"monitoring","port":3456}]}]}}`, `{"canaryBackends":[{"kind":"Service","namespace":"monitoring","name":"canary-proxy"}]}`)
	f.Add(`{"spec":{"rules":"x"}}`, `{"step":"x","canaryBackends":[{"name":1}]}`)

	xr := map[string]any{}
	if err := yaml.Unmarshal([]byte(flaggerXR), &xr); err != nil {
		f.Fatal(err)
	}
	spec := xr["spec"].(map[string]any)
	spec["canary"] = map[string]any{"externalName": "canary.example.net"}
	spec["traffic"] = map[string]any{"weight": 20, "abort": true}

	f.Fuzz(func(t *testing.T, route, rollout string) {
		// JSON, not YAML: the YAML decoder's cost on large mutated inputs
		// would slow the fuzzer down to a crawl.
		var routeObj map[string]any
		if err := json.Unmarshal([]byte(route), &routeObj); err != nil || routeObj == nil {
			t.Skip()
		}
		var rolloutObj any
		if err := json.Unmarshal([]byte(rollout), &rolloutObj); err != nil {
			t.Skip()
		}
		obj := map[string]any{}
		for k, v := range xr {
			obj[k] = v
		}
		obj["status"] = map[string]any{"rollout": rolloutObj}
		composite, err := structpb.NewStruct(obj)
		if err != nil {
			t.Skip()
		}
		observed, err := structpb.NewStruct(routeObj)
		if err != nil {
			t.Skip()
		}
		input, _ := structpb.NewStruct(map[string]any{"allowedRouteNamespaces": []any{"test"}, "allowedBackendNamespaces": []any{"monitoring"}})
		req := &fnv1.RunFunctionRequest{
			Input: input,
			Observed: &fnv1.State{
				Composite: &fnv1.Resource{Resource: composite},
				Resources: map[string]*fnv1.Resource{"route-httproute": {Resource: observed}},
			},
		}

		fn := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
		rsp, err := fn.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error: %v", err)
		}
		again, _ := fn.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if !proto.Equal(rsp, again) {
			t.Fatal("RunFunction is not deterministic")
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				return
			}
		}
		// Rescued: every recorded canary backend is at weight 0.
		observedXR := xrcomposite.New()
		observedXR.Object = obj
		canary := lenientRollout(observedXR.GetValueInto).CanaryBackends
		var rescued gwv1.HTTPRoute
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap(), &rescued); err != nil {
			t.Fatalf("the rescued route does not decode: %v", err)
		}
		if len(rescued.Spec.Rules) == 0 {
			t.Fatal("a rescued route has no rules")
		}
		for _, rule := range rescued.Spec.Rules {
			for _, ref := range rule.BackendRefs {
				if namesRecordedCanary(ref.BackendObjectReference, canary, "test") && ptr.Deref(ref.Weight, 1) != 0 {
					t.Fatalf("the rescued route still sends weight %d to the canary %+v", ptr.Deref(ref.Weight, 1), ref)
				}
			}
		}
	})
}

// namesRecordedCanary reports whether a backendRef names one of the recorded
// canary backends, with Gateway API's defaults (core group, kind Service,
// the route's namespace) applied.
func namesRecordedCanary(ref gwv1.BackendObjectReference, canary []xr.BackendID, routeNamespace string) bool {
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
	for _, c := range canary {
		if c.Group == group && c.Kind == kind && c.Namespace == ns && c.Name == string(ref.Name) &&
			(c.Port == nil || (ref.Port != nil && *ref.Port == *c.Port)) {
			return true
		}
	}
	return false
}
