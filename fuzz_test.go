package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// FuzzRunFunction feeds arbitrary specs, Inputs, status.rollout and
// status.release to the function. Bad input must be a Fatal result, never a
// panic or a gRPC error; good input must compose routes and grants that the
// Gateway API CRDs accept and a status that the XRD admits; the same request
// must always give the same response; and a run's status and composed
// objects, fed back as the next run's observed state (the gateway accepting
// the route), must never make that run Fatal or its status inadmissible.
func FuzzRunFunction(f *testing.F) {
	for _, seed := range exampleSeeds(f) {
		// Each example as written, then without its status.
		f.Add(seed.spec, fuzzInput, seed.rollout, seed.release)
		f.Add(seed.spec, fuzzInput, "", "")
	}
	f.Add(`{"primary":{},"canary":{}}`, emptyInput, "", "")
	f.Add(`{"kind":"TLSRoute","primary":{"backendRef":{"name":"a"}},"canary":{"backendRef":{"name":"b"}},"port":1,"parentRefs":[{"name":"g"}]}`, emptyInput, "", "")
	f.Add(`{"traffic":{"steps":[{"weight":50}]},"canary":{"revision":"v1","service":{"selector":{"a":"b"}}},"primary":{"backendRef":{"name":"x","port":80}},"port":80,"parentRefs":[{"name":"g"}]}`, emptyInput,
		`{"phase":"Progressing","revision":"v1","step":0,"stepStartedAt":"9999-12-31T23:59:59Z","canaryWeight":50,"primaryWeight":50}`, "")
	f.Add(`{"traffic":{"steps":[{"weight":10},{"weight":100}],"gates":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","conditionType":"Available"}]},"canary":{"revision":"v2","backendRef":{"name":"c"}},"primary":{"backendRef":{"name":"p"}},"port":80,"parentRefs":[{"name":"g"}]}`, emptyInput,
		`{"phase":"Failed","reason":"ProgressDeadlineExceeded","revision":"v2","step":0,"canaryWeight":0,"primaryWeight":100,"message":"step 0 (10%) held"}`, "")
	// A release whose forged history names the canary's revision, and a
	// metric whose forged measurements claim a pass in the future.
	f.Add(`{"release":{"selector":{"app":"a"},"revisionLabel":"version","replicas":3},"canary":{"revision":"v3"},"port":80,"parentRefs":[{"name":"g"}],"traffic":{"steps":[{"weight":10},{"weight":100}],"rollbackWindow":2}}`, fuzzInput,
		`{"phase":"Succeeded","revision":"v2","step":1,"canaryWeight":100,"primaryWeight":0}`,
		`{"stable":{"revision":"v2","since":"2026-12-01T00:00:00Z"},"history":[{"revision":"v3","digest":"v2-forged","succeededAt":"9999-12-31T23:59:59Z"}],"retiring":{"revision":"v1","at":"0001-01-01T00:00:00Z"}}`)
	f.Add(`{"traffic":{"steps":[{"weight":10},{"weight":100}],"metrics":[{"name":"e","provider":"prometheus","query":"sum(up{service=\"{{service}}\"})","successWhen":"result < baseline","compareTo":"primary"}],"bake":"1m"},"canary":{"revision":"v2","backendRef":{"name":"c"}},"primary":{"backendRef":{"name":"p"}},"port":80,"parentRefs":[{"name":"g"}]}`, fuzzInput,
		`{"phase":"Progressing","revision":"v2","step":0,"stepStartedAt":"2026-12-02T09:00:00Z","canaryWeight":10,"primaryWeight":90,"metrics":[{"name":"e","measurements":[{"time":"9999-12-31T23:59:59Z","step":0,"value":"NaN","baseline":"+Inf","verdict":"Passed"}]}],"bakeStartedAt":"0001-01-01T00:00:00Z"}`, "")

	crds := gatewayAPICRDs(f)
	xrds := crdschema.XRDs(f, "example/definitions/canaryroute-namespaced.yaml")

	f.Fuzz(func(t *testing.T, spec, input, rollout, release string) {
		var specObj any
		if err := json.Unmarshal([]byte(spec), &specObj); err != nil {
			t.Skip()
		}
		var inputObj map[string]any
		if err := yaml.Unmarshal([]byte(input), &inputObj); err != nil || inputObj == nil {
			t.Skip()
		}
		composite := map[string]any{
			"apiVersion": "platform.example.org/v1alpha1",
			"kind":       "CanaryRoute",
			"metadata":   map[string]any{"name": "fuzz", "namespace": "test"},
			"spec":       specObj,
		}
		status := map[string]any{}
		for key, value := range map[string]string{"rollout": rollout, "release": release} {
			if value == "" {
				continue
			}
			var obj any
			if err := json.Unmarshal([]byte(value), &obj); err != nil {
				t.Skip()
			}
			status[key] = obj
		}
		if len(status) > 0 {
			composite["status"] = status
		}
		req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{}}}
		var err error
		if req.Observed.Composite.Resource, err = structpb.NewStruct(composite); err != nil {
			t.Skip()
		}
		if req.Input, err = structpb.NewStruct(inputObj); err != nil {
			t.Skip()
		}

		f := functionAt(testNow)
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error for %s: %v", spec, err)
		}
		again, _ := f.RunFunction(context.Background(), req)
		if !proto.Equal(rsp, again) {
			t.Fatalf("RunFunction is not deterministic for %s", spec)
		}

		if isFatal(rsp) {
			if len(rsp.GetDesired().GetResources()) > 0 {
				t.Fatalf("a Fatal result must come with nothing new to apply, got %d resources", len(rsp.GetDesired().GetResources()))
			}
			return
		}
		crds.checkComposed(t, spec, rsp)
		checkStatus(t, spec, rsp, xrds)

		// The next run sees what this one wrote: its status, and its objects
		// applied, the gateway accepting the route.
		next := proto.Clone(req).(*fnv1.RunFunctionRequest)
		composite["status"] = rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
		if next.Observed.Composite.Resource, err = structpb.NewStruct(composite); err != nil {
			t.Fatalf("the run's status cannot be fed back: %v", err)
		}
		next.Observed.Resources = map[string]*fnv1.Resource{}
		for name, r := range rsp.GetDesired().GetResources() {
			next.Observed.Resources[name] = &fnv1.Resource{Resource: acceptedByGateway(r.GetResource())}
		}
		rsp2, err := f.RunFunction(context.Background(), next)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error on the next run for %s: %v", spec, err)
		}
		if isFatal(rsp2) {
			t.Fatalf("the next run refuses what the run before wrote, for spec %s: %v", spec, rsp2.GetResults())
		}
		crds.checkComposed(t, spec, rsp2)
		checkStatus(t, spec, rsp2, xrds)
	})
}

// statusProbeSpec is a valid spec: the XRD's rules on the spec are not the
// point of checkStatus, which validates the status the function wrote.
var statusProbeSpec = map[string]any{
	"parentRefs": []any{map[string]any{"name": "gateway"}},
	"port":       int64(80),
	"primary":    map[string]any{"backendRef": map[string]any{"name": "p"}},
	"canary":     map[string]any{"backendRef": map[string]any{"name": "c"}},
}

// checkStatus validates the status the function wrote against the XRD, as
// the API server does on the status update.
func checkStatus(t *testing.T, spec string, rsp *fnv1.RunFunctionResponse, xrds *crdschema.Set) {
	t.Helper()
	status, ok := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
	if !ok {
		return
	}
	obj := map[string]any{
		"apiVersion": "platform.example.org/v1alpha1",
		"kind":       "CanaryRoute",
		"metadata":   map[string]any{"name": "fuzz", "namespace": "test"},
		"spec":       statusProbeSpec,
		"status":     status,
	}
	if errs := xrds.Validate(obj); len(errs) > 0 {
		b, _ := yaml.Marshal(status)
		t.Fatalf("for spec %s the function wrote a status the XRD refuses:\n%v\n%s", spec, errs, b)
	}
}

// acceptedByGateway is a composed object as the cluster returns it once
// applied: a route gets generation 1 and every parent's Accepted and
// ResolvedRefs True for it, as a gateway that accepts everything would
// write.
func acceptedByGateway(s *structpb.Struct) *structpb.Struct {
	obj := s.AsMap()
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	parents, isRoute := spec["parentRefs"].([]any)
	if !isRoute {
		return s
	}
	meta["generation"] = int64(1)
	reports := make([]any, 0, len(parents))
	for _, p := range parents {
		cond := func(typ string) map[string]any {
			return map[string]any{"type": typ, "status": "True", "reason": typ, "observedGeneration": int64(1), "lastTransitionTime": "2026-12-02T10:00:00Z", "message": ""}
		}
		reports = append(reports, map[string]any{"parentRef": p, "controllerName": "example.com/gateway", "conditions": []any{cond("Accepted"), cond("ResolvedRefs")}})
	}
	obj["status"] = map[string]any{"parents": reports}
	out, err := structpb.NewStruct(obj)
	if err != nil {
		return s
	}
	return out
}

// fuzzInput allows the examples' namespaces and names the examples' metric
// provider and webhooks. The function under fuzzing has no querier and no
// caller: it never queries, and calls no webhook.
const fuzzInput = allowMonitoring + `metricProviders:
  - name: prometheus
    prometheus: {address: "http://prometheus.monitoring.svc:9090"}
webhooks:
  - {name: loadtester, url: "http://flagger-loadtester.test/"}
  - {name: loadtester-gate, url: "http://flagger-loadtester.test/gate/check"}
  - {name: loadtester-rollback, url: "http://flagger-loadtester.test/rollback/check"}
  - {name: team-chat, urlFrom: {credentials: chat, key: url}, format: slack}
`

// exampleSeed is an example XR's spec and status, as JSON.
type exampleSeed struct {
	spec, rollout, release string
}

// exampleSeeds returns the spec, status.rollout and status.release of every
// example XR.
func exampleSeeds(tb testing.TB) []exampleSeed {
	tb.Helper()
	files, err := filepath.Glob("example/*/xr.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no example XRs: %v", err)
	}
	seeds := make([]exampleSeed, 0, len(files))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var doc struct {
			Spec   json.RawMessage `json:"spec"`
			Status struct {
				Rollout json.RawMessage `json:"rollout"`
				Release json.RawMessage `json:"release"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, exampleSeed{spec: string(doc.Spec), rollout: string(doc.Status.Rollout), release: string(doc.Status.Release)})
	}
	return seeds
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

	composite := map[string]any{}
	if err := yaml.Unmarshal([]byte(flaggerXR), &composite); err != nil {
		f.Fatal(err)
	}
	spec := composite["spec"].(map[string]any)
	spec["canary"] = map[string]any{"externalName": "canary.example.net"}
	spec["traffic"] = map[string]any{"weight": 20, "abort": true}
	xrds := crdschema.XRDs(f, "example/definitions/canaryroute-cluster.yaml")

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
		for k, v := range composite {
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

		fn := functionAt(testNow)
		rsp, err := fn.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error: %v", err)
		}
		again, _ := fn.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if !proto.Equal(rsp, again) {
			t.Fatal("RunFunction is not deterministic")
		}
		if isFatal(rsp) {
			return
		}
		// Rescued: every recorded canary backend is at weight 0.
		var canary []xr.BackendID
		_ = fieldpath.Pave(obj).GetValueInto("status.rollout.canaryBackends", &canary)
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
		status := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
		probe := map[string]any{
			"apiVersion": "platform.example.org/v1alpha1", "kind": "XCanaryRoute", "metadata": map[string]any{"name": "podinfo"},
			"spec": map[string]any{
				"namespace": "test", "parentRefs": []any{map[string]any{"name": "gateway"}}, "port": int64(80),
				"primary": map[string]any{"backendRef": map[string]any{"name": "p"}}, "canary": map[string]any{"backendRef": map[string]any{"name": "c"}},
			},
			"status": status,
		}
		if errs := xrds.Validate(probe); len(errs) > 0 {
			t.Fatalf("the rescue wrote a status the XRD refuses: %v", errs)
		}

		// The next run sees the rescued route and status: the abort holds,
		// with the same route.
		obj["status"] = status
		next := proto.Clone(req).(*fnv1.RunFunctionRequest)
		if next.Observed.Composite.Resource, err = structpb.NewStruct(obj); err != nil {
			t.Fatalf("the rescue's status cannot be fed back: %v", err)
		}
		next.Observed.Resources = rsp.GetDesired().GetResources()
		rsp2, err := fn.RunFunction(context.Background(), next)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error on the next run: %v", err)
		}
		if isFatal(rsp2) {
			t.Fatalf("the next run does not hold the abort: %v", rsp2.GetResults())
		}
		if !proto.Equal(rsp.GetDesired().GetResources()["route-httproute"].GetResource(), rsp2.GetDesired().GetResources()["route-httproute"].GetResource()) {
			t.Fatal("the next run rescues another route than the run before")
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
