package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	xrcomposite "github.com/crossplane/function-sdk-go/resource/composite"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// FuzzRunFunction feeds arbitrary specs (and status) to the function. Bad
// input must be a Fatal result, never a panic or a gRPC error; good input
// must compose routes and grants that the Gateway API CRDs accept; and the
// same request must always give the same response.
func FuzzRunFunction(f *testing.F) {
	for _, seed := range exampleSpecs(f) {
		f.Add(seed, allowMonitoring)
	}
	f.Add(`{"primary":{},"canary":{}}`, emptyInput)
	f.Add(`{"kind":"TLSRoute","primary":{"backendRef":{"name":"a"}},"canary":{"backendRef":{"name":"b"}},"port":1,"parentRefs":[{"name":"g"}]}`, emptyInput)
	f.Add(`{"traffic":{"steps":[{"weight":50}]},"canary":{"revision":"v1","service":{"selector":{"a":"b"}}},"primary":{"backendRef":{"name":"x","port":80}},"port":80,"parentRefs":[{"name":"g"}]}`, emptyInput)

	standard := crdschema.GatewayAPI(f, crdschema.Standard)
	experimental := crdschema.GatewayAPI(f, crdschema.Experimental)

	f.Fuzz(func(t *testing.T, spec, input string) {
		var specObj any
		if err := json.Unmarshal([]byte(spec), &specObj); err != nil {
			t.Skip()
		}
		var inputObj map[string]any
		if err := yaml.Unmarshal([]byte(input), &inputObj); err != nil || inputObj == nil {
			t.Skip()
		}
		xr := map[string]any{
			"apiVersion": "platform.example.org/v1alpha1",
			"kind":       "CanaryRoute",
			"metadata":   map[string]any{"name": "fuzz", "namespace": "test"},
			"spec":       specObj,
		}
		req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{}}}
		var err error
		if req.Observed.Composite.Resource, err = structpb.NewStruct(xr); err != nil {
			t.Skip()
		}
		if req.Input, err = structpb.NewStruct(inputObj); err != nil {
			t.Skip()
		}

		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error for %s: %v", spec, err)
		}
		again, _ := f.RunFunction(context.Background(), req)
		if !proto.Equal(rsp, again) {
			t.Fatalf("RunFunction is not deterministic for %s", spec)
		}

		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				if len(rsp.GetDesired().GetResources()) > 0 {
					t.Fatalf("a Fatal result must come with nothing new to apply, got %d resources", len(rsp.GetDesired().GetResources()))
				}
				return
			}
		}
		for name, r := range rsp.GetDesired().GetResources() {
			obj := r.GetResource().AsMap()
			if k := compose.Key(name); !k.IsRoute() && !k.IsGrant() {
				continue
			}
			schemas := []*crdschema.Set{standard, experimental}
			if strings.HasSuffix(obj["apiVersion"].(string), "v1alpha2") {
				schemas = schemas[1:]
			}
			for _, s := range schemas {
				if errs := s.Validate(obj); len(errs) > 0 {
					b, _ := yaml.Marshal(obj)
					t.Fatalf("the function accepted spec %s but the Gateway API CRDs reject %s:\n%v\n%s", spec, name, errs, b)
				}
			}
		}
	})
}

// exampleSpecs returns the spec of every example XR, as JSON.
func exampleSpecs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("example/*/xr.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no example XRs: %v", err)
	}
	specs := make([]string, 0, len(files))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var xr struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &xr); err != nil {
			tb.Fatal(err)
		}
		specs = append(specs, string(xr.Spec))
	}
	return specs
}

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
