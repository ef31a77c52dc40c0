package main

// What the tests of package main share: the CanaryRoutes and Inputs they
// run, one way to build a request from YAML and run it, the objects as the
// API server returns them, and the readers of a response.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// testNow is the instant the tests' clock reports.
var testNow = time.Date(2026, 12, 2, 10, 7, 0, 0, time.UTC)

// ---------------------------------------------------------------------------
// CanaryRoutes and Inputs.

// The Flagger scenario of the README: a cluster-scoped XR whose canary sits
// behind a proxy in another namespace.
const flaggerXR = `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata:
  name: podinfo
spec:
  namespace: test
  parentRefs:
    - name: gateway
      namespace: istio-ingress
  hostnames: [www.example.com]
  port: 9898
  primary:
    service:
      selector: {app: podinfo}
    filters:
      - type: RequestHeaderModifier
        requestHeaderModifier:
          add: [{name: X-Route, value: primary}]
  canary:
    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}
  traffic:
    weight: 20
`

// flaggerWith is the Flagger scenario's XR with one text replaced.
func flaggerWith(from, to string) string { return strings.Replace(flaggerXR, from, to, 1) }

// progressiveXR is the Flagger scenario as a progressive rollout with a
// gate, at step 0.
var progressiveXR = strings.Replace(strings.Replace(flaggerXR, "weight: 20", `steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 5m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]`, 1),
	"namespace: monitoring, port: 3456}", "namespace: monitoring, port: 3456}\n    revision: v2", 1) + `
status:
  rollout: {phase: Progressing, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 10, primaryWeight: 90}
`

// pausedFlagger is the Flagger scenario paused as a progressive rollout of
// revision v2 at step 1 (50%), changed to canary, a new backend of revision
// v3, and with extra lines of traffic (indented by four spaces): a hold.
func pausedFlagger(canary, traffic string) string {
	return strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: "+canary+"\n    revision: v3"),
		"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true"+traffic, 1) + pausedAtStep1
}

// pausedAtStep1 is the status of the Flagger scenario's rollout of
// revision v2, paused at step 1 (50%), its canary the proxy in monitoring.
const pausedAtStep1 = `
status:
  rollout:
    phase: Paused
    reason: Paused
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T10:00:00Z"
    canaryWeight: 50
    primaryWeight: 50
    canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
`

// pausedStatus is a rollout of revision v2 paused at step 1 (50%) whose
// canary is the given backend.
func pausedStatus(canary string) string {
	return `
status:
  rollout:
    phase: Paused
    reason: Paused
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T10:00:00Z"
    canaryWeight: 50
    primaryWeight: 50
    canaryDigest: v2-00000000000000ff
    canaryBackends: [` + canary + `]
`
}

// namespacedXR is the namespaced CanaryRoute podinfo in namespace test with
// the given spec (indented by two spaces).
func namespacedXR(spec string) string {
	return "apiVersion: platform.example.org/v1alpha1\nkind: CanaryRoute\nmetadata: {name: podinfo, namespace: test}\nspec:" + spec + "\n"
}

// steppedXR is a namespaced progressive CanaryRoute of revision v2 whose
// steps are given, with extra lines of traffic (indented by four spaces).
func steppedXR(steps, traffic string) string {
	return namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: ` + steps + "\n" + traffic)
}

// analysisXR is steppedXR with the analysis template smoke: a Job whose
// success or failure judges the step.
func analysisXR(steps, traffic string) string {
	return steppedXR(steps, `    analysis:
      smoke:
        template:
          apiVersion: batch/v1
          kind: Job
          spec: {template: {spec: {restartPolicy: Never, containers: [{name: t, image: curlimages/curl}]}}}
        successWhen: "has(object.status.succeeded) && object.status.succeeded > 0"
        failWhen: "has(object.status.failed) && object.status.failed > 0"
`+traffic)
}

// featureXR is a cluster-scoped CanaryRoute routing in test, of a kind,
// with a rule (a YAML flow object and what follows it at the rules'
// indentation), the sides' extras and the traffic given (each a YAML
// flow object's fields, after a comma); its sides are service sides, the
// canary of revision v2, at 20%.
func featureXR(kind, rule, primaryExtra, canaryExtra, traffic string) string {
	hostnames := ""
	if kind == "TLSRoute" {
		hostnames = "  hostnames: [www.example.com]\n"
	}
	rules := ""
	if rule != "" {
		rules = "  rules:\n    - " + rule + "\n"
	}
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  kind: ` + kind + `
` + hostnames + `  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
` + rules + `  primary: {service: {selector: {app: podinfo}}` + primaryExtra + `}
  canary: {service: {selector: {app: podinfo-canary}}` + canaryExtra + `, revision: v2}
  traffic: {weight: 20` + traffic + `}
`
}

// Inputs.
const (
	emptyInput = `
apiVersion: canaryroute.fn.crossplane.io/v1beta1
kind: Input
`
	// allowTest lets cluster-scoped CanaryRoutes route in namespace test,
	// and nothing more.
	allowTest = emptyInput + "allowedRouteNamespaces: [test]\n"
	// allowMonitoring lets the Flagger scenario route in test and reach
	// its canary in monitoring.
	allowMonitoring = allowTest + "allowedBackendNamespaces: [monitoring]\n"
)

// ---------------------------------------------------------------------------
// Objects as the API server returns them.

// ownRoute is the Flagger scenario's route as Crossplane returns it when
// the XR podinfo composed it, at weights primary/canary, with an A/B rule
// and a mirror to the canary.
func ownRoute(labels string, primary, canary int) string {
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {%s}}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - matches: [{headers: [{name: X-Beta, value: "yes"}]}]
      backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]
    - matches: [{path: {type: PathPrefix, value: /}}]
      filters:
        - type: RequestMirror
          requestMirror: {backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}, percent: 10}
      backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: %d}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: %d}
`, labels, primary, canary)
}

// routeAt is an observed HTTPRoute test/podinfo of the XR podinfo whose
// only rule carries the given backendRefs (YAML flow objects).
func routeAt(refs ...string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [` + strings.Join(refs, ", ") + `]
`
}

// acceptedRoute is an observed HTTPRoute at a generation, whose parent
// accepted the generation given.
func acceptedRoute(generation, observedGeneration int) string {
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: %d}
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: istio.io/gateway-controller
      conditions:
        - {type: Accepted, status: "True", reason: Accepted, observedGeneration: %d, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
        - {type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: %d, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
`, generation, observedGeneration, observedGeneration)
}

// observedPrimary and observedGrant are the Flagger scenario's Service and
// grant as the API server returns them.
const (
	observedPrimary = `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, uid: 6a1c7e0e-1b2f-4c55-9a7e-0c1d2e3f4a5b, labels: {crossplane.io/composite: podinfo}}, spec: {type: ClusterIP, clusterIP: 10.0.0.7, sessionAffinity: None, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}, status: {loadBalancer: {}}}`
	observedGrant   = `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`
)

// ---------------------------------------------------------------------------
// Requests and runs.

// toStruct converts an object written in YAML to a protobuf Struct.
func toStruct(tb testing.TB, y string) *structpb.Struct {
	tb.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		tb.Fatalf("cannot parse the test's YAML: %v\n%s", err, y)
	}
	s := &structpb.Struct{}
	if err := s.UnmarshalJSON(j); err != nil {
		tb.Fatalf("the test's YAML is no object: %v\n%s", err, y)
	}
	return s
}

// mustStruct converts an object to a protobuf Struct.
func mustStruct(tb testing.TB, m map[string]any) *structpb.Struct {
	tb.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		tb.Fatalf("cannot convert to a Struct: %v", err)
	}
	return s
}

// deepCopyMap copies an object of the JSON types.
func deepCopyMap(m map[string]any) map[string]any {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s.AsMap()
}

// testRequest is a request for an XR, an Input and observed composed
// resources, each written in YAML.
func testRequest(tb testing.TB, composite, input string, observed map[string]string) *fnv1.RunFunctionRequest {
	tb.Helper()
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(tb, input),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(tb, composite)}, Resources: map[string]*fnv1.Resource{}},
	}
	for name, o := range observed {
		req.Observed.Resources[name] = &fnv1.Resource{Resource: toStruct(tb, o)}
	}
	return req
}

// withRequired sets the required resources Crossplane fetched, by
// requirement, each object written in YAML; nil leaves every requirement
// unanswered (the first call of a reconcile).
func withRequired(tb testing.TB, req *fnv1.RunFunctionRequest, required map[string][]string) *fnv1.RunFunctionRequest {
	tb.Helper()
	if required == nil {
		return req
	}
	req.RequiredResources = map[string]*fnv1.Resources{}
	for name, objs := range required {
		rs := &fnv1.Resources{}
		for _, o := range objs {
			rs.Items = append(rs.Items, &fnv1.Resource{Resource: toStruct(tb, o)})
		}
		req.RequiredResources[name] = rs
	}
	return req
}

// functionAt is the function whose clock reports now.
func functionAt(now time.Time) *Function {
	return &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return now })}
}

// runFunction runs the function in process at testNow on an XR, an Input,
// observed composed resources and required resources (see withRequired),
// and returns the request and the response. A gRPC error fails the test:
// bad input is a Fatal result.
func runFunction(t *testing.T, xrYAML, input string, observed map[string]string, required map[string][]string) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse) {
	t.Helper()
	req := withRequired(t, testRequest(t, xrYAML, input, observed), required)
	rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatalf("RunFunction(...): unexpected error: %v", err)
	}
	return req, rsp
}

// responseYAML is a RunFunctionResponse written in YAML, in the protobuf
// JSON mapping.
func responseYAML(t *testing.T, y string) *fnv1.RunFunctionResponse {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	rsp := &fnv1.RunFunctionResponse{}
	if err := protojson.Unmarshal(j, rsp); err != nil {
		t.Fatalf("cannot read the expected response: %v", err)
	}
	return rsp
}

// withRequirementsInContext is a response whose context records its
// requirements, as every response of the function does, so that the next
// call of the reconcile knows them (internal/reconcile).
func withRequirementsInContext(t *testing.T, rsp *fnv1.RunFunctionResponse) *fnv1.RunFunctionResponse {
	t.Helper()
	if rsp.GetRequirements() == nil {
		return rsp
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp.GetRequirements())
	if err != nil {
		t.Fatal(err)
	}
	rsp.Context = &structpb.Struct{Fields: map[string]*structpb.Value{
		"canaryroute.fn.crossplane.io/requirements": structpb.NewStringValue(base64.StdEncoding.EncodeToString(b)),
	}}
	return rsp
}

// ---------------------------------------------------------------------------
// Reading a response.

// isFatal reports whether the response carries a Fatal result.
func isFatal(rsp *fnv1.RunFunctionResponse) bool { return fatalOf(rsp) != "" }

// fatalOf is the message of the response's Fatal result, "" for none.
func fatalOf(rsp *fnv1.RunFunctionResponse) string {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return r.GetMessage()
		}
	}
	return ""
}

// rolloutOf is status.rollout as the response desires it.
func rolloutOf(rsp *fnv1.RunFunctionResponse) map[string]any {
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	r, _ := status["rollout"].(map[string]any)
	return r
}

// view is the part of a response that the tests compare: what Crossplane
// acts on, in a form that reads well in a diff.
type view struct {
	// Results are "SEVERITY Reason: message".
	Results []string
	// Conditions are "Type=Status Reason: message", but Composed, which
	// checkComposedCondition checks on every response.
	Conditions []string
	// Resources are the keys of the desired composed resources, and Ready
	// their readiness.
	Resources []string
	Ready     map[string]string
	// Weights are the composed route's rules (see routeWeights), and
	// Preview the preview route's.
	Weights [][]string
	Preview [][]string
	// Grants are the composed ReferenceGrants by namespace: "from Kind
	// namespace", "to Kind name".
	Grants map[string][]string
	// Rollout is status.rollout, its canaryDigest "set" when there is one.
	Rollout map[string]any
	TTL     time.Duration
	// Requirements are the required resources, "name: apiVersion Kind
	// namespace/name".
	Requirements []string
}

func viewOf(t *testing.T, rsp *fnv1.RunFunctionResponse) view {
	t.Helper()
	var v view
	for _, r := range rsp.GetResults() {
		prefix := strings.TrimPrefix(r.GetSeverity().String(), "SEVERITY_")
		if r.Reason != nil {
			prefix += " " + r.GetReason()
		}
		v.Results = append(v.Results, prefix+": "+r.GetMessage())
	}
	checkComposedCondition(t, rsp)
	for _, c := range rsp.GetConditions() {
		if c.GetType() == compose.ConditionComposed {
			continue // checkComposedCondition checked it.
		}
		status := map[fnv1.Status]string{fnv1.Status_STATUS_CONDITION_TRUE: "True", fnv1.Status_STATUS_CONDITION_FALSE: "False"}[c.GetStatus()]
		v.Conditions = append(v.Conditions, fmt.Sprintf("%s=%s %s: %s", c.GetType(), status, c.GetReason(), c.GetMessage()))
	}
	for name, r := range rsp.GetDesired().GetResources() {
		v.Resources = append(v.Resources, name)
		if v.Ready == nil {
			v.Ready = map[string]string{}
		}
		v.Ready[name] = r.GetReady().String()
		obj := r.GetResource().AsMap()
		switch {
		case names.Key(name).IsPreview():
			v.Preview = routeWeights(obj)
		case names.Key(name).IsRoute():
			v.Weights = routeWeights(obj)
		case names.Key(name).IsGrant():
			if v.Grants == nil {
				v.Grants = map[string][]string{}
			}
			v.Grants[strings.TrimPrefix(name, "referencegrant-")] = grantSummary(obj)
		}
	}
	slices.Sort(v.Resources)
	v.Rollout = rolloutOf(rsp)
	// The digest's value is the backend package's business: the view says
	// that there is one.
	if _, ok := v.Rollout["canaryDigest"]; ok {
		v.Rollout["canaryDigest"] = "set"
	}
	v.TTL = rsp.GetMeta().GetTtl().AsDuration()
	for name, sel := range rsp.GetRequirements().GetResources() {
		v.Requirements = append(v.Requirements, fmt.Sprintf("%s: %s %s %s/%s", name, sel.GetApiVersion(), sel.GetKind(), sel.GetNamespace(), sel.GetMatchName()))
	}
	slices.Sort(v.Requirements)
	return v
}

// routeWeights summarises a route's rules, one list each, as
// kind/[namespace/]name[:port]=weight per backend (the weight <nil> where
// the route leaves it to the API server's default).
func routeWeights(route map[string]any) [][]string {
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	out := make([][]string, 0, len(rules))
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		refs, _ := rule["backendRefs"].([]any)
		var summary []string
		for _, b := range refs {
			ref, _ := b.(map[string]any)
			kind, _ := ref["kind"].(string)
			if kind == "" {
				kind = "Service"
			}
			name, _ := ref["name"].(string)
			if ns, ok := ref["namespace"].(string); ok {
				name = ns + "/" + name
			}
			s := kind + "/" + name
			if port, ok := ref["port"].(float64); ok {
				s += fmt.Sprintf(":%d", int(port))
			}
			summary = append(summary, fmt.Sprintf("%s=%v", s, ref["weight"]))
		}
		out = append(out, summary)
	}
	return out
}

// grantSummary lists a grant's from and to entries.
func grantSummary(g map[string]any) []string {
	spec, _ := g["spec"].(map[string]any)
	from, _ := spec["from"].([]any)
	to, _ := spec["to"].([]any)
	out := make([]string, 0, len(from)+len(to))
	for _, f := range from {
		from, _ := f.(map[string]any)
		out = append(out, fmt.Sprintf("from %s %s", from["kind"], from["namespace"]))
	}
	for _, t := range to {
		to, _ := t.(map[string]any)
		out = append(out, fmt.Sprintf("to %s %s", to["kind"], to["name"]))
	}
	return out
}

// ruleShapes summarises the rules of the composed route under a key, one
// line each: the rule's name, then its matches, each in brackets (the
// path, h:header, q:query parameter, m:method or m:service/method), its
// filters (f:Type), its backends (b:name=weight, <nil> where the route
// leaves the weight to the API server) and "persistence" for
// sessionPersistence. A route that is not composed has none.
func ruleShapes(rsp *fnv1.RunFunctionResponse, key string) []string {
	d, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		return nil
	}
	spec, _ := d.GetResource().AsMap()["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	out := make([]string, 0, len(rules))
	for _, ru := range rules {
		rule, _ := ru.(map[string]any)
		parts := []string{fmt.Sprintf("%v:", rule["name"])}
		ms, _ := rule["matches"].([]any)
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			var items []string
			if path, ok := mm["path"].(map[string]any); ok {
				items = append(items, fmt.Sprint(path["value"]))
			}
			hs, _ := mm["headers"].([]any)
			for _, h := range hs {
				items = append(items, fmt.Sprint("h:", h.(map[string]any)["name"]))
			}
			qs, _ := mm["queryParams"].([]any)
			for _, q := range qs {
				items = append(items, fmt.Sprint("q:", q.(map[string]any)["name"]))
			}
			switch mt := mm["method"].(type) {
			case string:
				items = append(items, "m:"+mt)
			case map[string]any:
				service, _ := mt["service"].(string)
				method, _ := mt["method"].(string)
				items = append(items, "m:"+service+"/"+method)
			}
			parts = append(parts, "["+strings.Join(items, " ")+"]")
		}
		fs, _ := rule["filters"].([]any)
		for _, f := range fs {
			parts = append(parts, fmt.Sprint("f:", f.(map[string]any)["type"]))
		}
		bs, _ := rule["backendRefs"].([]any)
		for _, b := range bs {
			bm, _ := b.(map[string]any)
			parts = append(parts, fmt.Sprintf("b:%v=%v", bm["name"], bm["weight"]))
		}
		if rule["sessionPersistence"] != nil {
			parts = append(parts, "persistence")
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// runArgs are a run's request: the XR, the Input, the observed composed
// resources and the required resources (see withRequired), each object
// written in YAML, and the run's context (nil: a background context).
type runArgs struct {
	xr       string
	input    string
	observed map[string]string
	required map[string][]string
	ctx      func() context.Context
}

// A viewCase is a run and the view of its response it must give.
type viewCase struct {
	reason string
	args   runArgs
	want   view
}

// testViews runs each case at testNow and compares the view of its
// response; every status the function desires must pass the XRD, and every
// route, grant and BackendTLSPolicy it composes the Gateway API CRDs.
func testViews(t *testing.T, cases map[string]viewCase) {
	t.Helper()
	crds := gatewayAPICRDs(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := withRequired(t, testRequest(t, tc.args.xr, tc.args.input, tc.args.observed), tc.args.required)
			ctx := context.Background()
			if tc.args.ctx != nil {
				ctx = tc.args.ctx()
			}
			rsp, err := functionAt(testNow).RunFunction(ctx, req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, viewOf(t, rsp)); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
			crds.checkComposed(t, name, rsp)
		})
	}
}

// fatalView is the view of a Fatal result with a message: nothing to
// apply, no condition of the XR's to re-send.
func fatalView(msg string) view {
	return view{Results: []string{"FATAL: " + msg}, TTL: time.Minute}
}

// flaggerView is what a run of the Flagger scenario gives before anything
// exists in the cluster, changed by each mutation.
func flaggerView(mutate ...func(*view)) view {
	v := view{
		Conditions: []string{
			"RouteAccepted=False Pending: the route has not been created yet",
			"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
			"RolloutHealthy=True Stable: Stable: canary 20%, primary 80%",
		},
		Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
		Ready:     map[string]string{"referencegrant-monitoring": "READY_FALSE", "route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
		Weights:   [][]string{{"Service/podinfo-primary:9898=80", "Service/monitoring/canary-proxy:3456=20"}},
		Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-proxy"}},
		Rollout: map[string]any{
			"phase": "Stable", "reason": "Manual", "canaryWeight": float64(20), "primaryWeight": float64(80),
			"canaryDigest": "set", "canaryBackends": canaryProxyBackends,
		},
		TTL: time.Minute,
		Requirements: []string{
			"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
			"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
			"existing-service-primary: v1 Service test/podinfo-primary",
		},
	}
	for _, m := range mutate {
		m(&v)
	}
	return v
}

// canaryProxyBackends is status.rollout.canaryBackends of the Flagger
// scenario: the canary proxy in monitoring.
var canaryProxyBackends = []any{map[string]any{"group": "", "kind": "Service", "namespace": "monitoring", "name": "canary-proxy", "port": float64(3456)}}

// withoutGrant is the Flagger scenario's view without its ReferenceGrant.
func withoutGrant(v *view) {
	v.Resources = []string{"route-httproute", "service-primary"}
	v.Ready = map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"}
	v.Grants = nil
	v.Requirements = slices.DeleteFunc(v.Requirements, func(r string) bool { return strings.HasPrefix(r, "existing-referencegrant-") })
}

// ---------------------------------------------------------------------------
// What holds for every response.

// checkComposedCondition holds every response to the Composed condition's
// rule: once in each response, True (reason Composed) where the function
// composes the CanaryRoute, False (reason Refused) where it refuses it: a
// Fatal, whose message it carries, or a rescued abort.
func checkComposedCondition(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	fatal := fatalOf(rsp)
	refused := isFatal(rsp) || rolloutOf(rsp)["reason"] == "AbortRescued"
	var found []*fnv1.Condition
	for _, c := range rsp.GetConditions() {
		if c.GetType() == compose.ConditionComposed {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Errorf("the response carries %d Composed conditions, want 1", len(found))
		return
	}
	c := found[0]
	switch {
	case c.GetTarget() != fnv1.Target_TARGET_COMPOSITE_AND_CLAIM:
		t.Errorf("Composed targets %s, want the composite and its claim", c.GetTarget())
	case refused && (c.GetStatus() != fnv1.Status_STATUS_CONDITION_FALSE || c.GetReason() != "Refused" || c.GetMessage() == ""):
		t.Errorf("a refused CanaryRoute has Composed %s %s %q, want False, Refused, and why", c.GetStatus(), c.GetReason(), c.GetMessage())
	case fatal != "" && c.GetMessage() != fielderr.Truncate(fatal, xr.MaxStatusMessage, fielderr.Characters, nil):
		t.Errorf("Composed says %q, want the Fatal's message %q", c.GetMessage(), fatal)
	case !refused && (c.GetStatus() != fnv1.Status_STATUS_CONDITION_TRUE || c.GetReason() != "Composed"):
		t.Errorf("a composed CanaryRoute has Composed %s %s, want True, Composed", c.GetStatus(), c.GetReason())
	}
}

// xrdFiles are the XRDs of the examples, which the tests validate the
// status the function writes against.
var xrdFiles = []string{"example/definitions/canaryroute-namespaced.yaml", "example/definitions/canaryroute-cluster.yaml"}

// assertXRDAccepts checks that the XR with the status the function desires
// passes its XRD (schema and CEL rules), as the API server would on the
// status update: Crossplane prunes what the XRD does not declare.
func assertXRDAccepts(t *testing.T, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	status, ok := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
	if !ok {
		return
	}
	composite := req.GetObserved().GetComposite().GetResource().AsMap()
	composite["status"] = status
	if errs := crdschema.XRDs(t, xrdFiles...).Validate(composite); len(errs) > 0 {
		t.Errorf("the XRD rejects the XR with the status the function desires: %v", errs)
	}
}

// gatewayAPI are the Gateway API CRDs of both channels.
type gatewayAPI struct{ standard, experimental *crdschema.Set }

func gatewayAPICRDs(tb testing.TB) gatewayAPI {
	tb.Helper()
	return gatewayAPI{standard: crdschema.GatewayAPI(tb, crdschema.Standard), experimental: crdschema.GatewayAPI(tb, crdschema.Experimental)}
}

// checkComposed validates every composed route, grant and BackendTLSPolicy
// against the Gateway API CRDs of both channels (v1alpha2 routes are
// experimental only). spec names the input in the failure.
func (g gatewayAPI) checkComposed(t *testing.T, spec string, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	for name, r := range rsp.GetDesired().GetResources() {
		obj := r.GetResource().AsMap()
		if k := names.Key(name); !k.IsRoute() && !k.IsGrant() && !k.IsBackendTLSPolicy() {
			continue
		}
		schemas := []*crdschema.Set{g.standard, g.experimental}
		if apiVersion, _ := obj["apiVersion"].(string); strings.HasSuffix(apiVersion, "v1alpha2") {
			schemas = schemas[1:]
		}
		for _, s := range schemas {
			if errs := s.Validate(obj); len(errs) > 0 {
				b, _ := yaml.Marshal(obj)
				t.Fatalf("the function accepted %s but the Gateway API CRDs reject %s:\n%v\n%s", spec, name, errs, b)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// The examples, as crossplane render sends them.

// exampleRequests is, for each example, the request crossplane render
// sends: the XR, the Composition's Input, the observed composed resources
// (observed.yaml) and the gate objects the function asks for
// (required.yaml). Keyed by the example's folder, e.g. "example/flagger".
func exampleRequests(t *testing.T) map[string]*fnv1.RunFunctionRequest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("example", "*", "xr.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example XRs: %v", err)
	}
	reqs := make(map[string]*fnv1.RunFunctionRequest, len(files))
	for _, file := range files {
		dir := filepath.Dir(file)
		composite := yamlDocuments(t, file)
		comp := yamlDocuments(t, filepath.Join(dir, "composition.yaml"))
		if len(composite) != 1 || len(comp) != 1 {
			t.Fatalf("%s: want one XR and one Composition, got %d and %d", dir, len(composite), len(comp))
		}
		req := &fnv1.RunFunctionRequest{
			Meta:     &fnv1.RequestMeta{Tag: dir},
			Input:    mustStruct(t, pipelineInput(t, dir, comp[0])),
			Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, composite[0])}},
		}
		for _, o := range yamlDocuments(t, filepath.Join(dir, "observed.yaml")) {
			meta, _ := o["metadata"].(map[string]any)
			annotations, _ := meta["annotations"].(map[string]any)
			name, _ := annotations["crossplane.io/composition-resource-name"].(string)
			if name == "" {
				t.Fatalf("%s: an observed resource without crossplane.io/composition-resource-name", dir)
			}
			if req.Observed.Resources == nil {
				req.Observed.Resources = map[string]*fnv1.Resource{}
			}
			req.Observed.Resources[name] = &fnv1.Resource{Resource: mustStruct(t, o)}
		}
		if required := yamlDocuments(t, filepath.Join(dir, "required.yaml")); len(required) > 0 {
			// As Crossplane does: run once, then fetch what the function
			// asked for. The first call's request is a case of its own.
			first := proto.Clone(req).(*fnv1.RunFunctionRequest)
			first.Meta.Tag = dir + "/first-call"
			reqs[first.Meta.Tag] = first
			req.RequiredResources = requiredFor(t, dir, runInProcess(t, req), required)
		}
		reqs[dir] = req
	}
	return reqs
}

// requiredFor selects the objects that the response's requirements name.
func requiredFor(t *testing.T, dir string, rsp *fnv1.RunFunctionResponse, objs []map[string]any) map[string]*fnv1.Resources {
	t.Helper()
	out := map[string]*fnv1.Resources{}
	for key, sel := range rsp.GetRequirements().GetResources() {
		items := []*fnv1.Resource{}
		for _, o := range objs {
			meta, _ := o["metadata"].(map[string]any)
			if o["apiVersion"] == sel.GetApiVersion() && o["kind"] == sel.GetKind() &&
				meta["name"] == sel.GetMatchName() && meta["namespace"] == sel.GetNamespace() {
				items = append(items, &fnv1.Resource{Resource: mustStruct(t, o)})
			}
		}
		out[key] = &fnv1.Resources{Items: items}
	}
	if len(out) == 0 {
		t.Fatalf("%s has required.yaml but the function requires nothing", dir)
	}
	return out
}

// pipelineInput is the Input of the Composition's step of this function.
func pipelineInput(t *testing.T, dir string, comp map[string]any) map[string]any {
	t.Helper()
	spec, _ := comp["spec"].(map[string]any)
	pipeline, _ := spec["pipeline"].([]any)
	// The step of this function: the release example has a second one.
	var steps []map[string]any
	for _, s := range pipeline {
		step, _ := s.(map[string]any)
		ref, _ := step["functionRef"].(map[string]any)
		if ref["name"] == "function-canary-route" {
			steps = append(steps, step)
		}
	}
	if len(steps) != 1 {
		t.Fatalf("%s: want one pipeline step of function-canary-route, got %d", dir, len(steps))
	}
	input, ok := steps[0]["input"].(map[string]any)
	if !ok {
		t.Fatalf("%s: the pipeline step has no input", dir)
	}
	return input
}

// yamlDocuments reads the YAML documents of a file; none when it does not
// exist.
func yamlDocuments(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
}

// runInProcess runs the function on a copy of req (a run writes the
// request's desired state, which response.To shares with the response), at
// cliNow, as the served function does. A panic fails the test: the server
// would turn it into a Fatal, but it is a bug all the same.
func runInProcess(t *testing.T, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	now, err := time.Parse(time.RFC3339, cliNow)
	if err != nil {
		t.Fatal(err)
	}
	log := &logRecorder{}
	fn := withRecover(&Function{log: log, clock: ClockFunc(func() time.Time { return now })}, log, nil)
	rsp, err := fn.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
	if err != nil {
		t.Fatalf("request %s: RunFunction returned a gRPC error: %v", req.GetMeta().GetTag(), err)
	}
	for _, e := range log.entries {
		if e["stack"] != nil {
			t.Errorf("request %s: the function panicked: %v\n%v", req.GetMeta().GetTag(), e["panic"], e["stack"])
		}
	}
	return rsp
}

// Every run of the tests proves that the routes runs share are the routes
// their plans build, and that nothing changes them: see compose.VerifyShared.
func init() { compose.VerifyShared = true }
