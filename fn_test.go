package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// testNow is the instant the tests' clock reports.
var testNow = time.Date(2026, 12, 2, 10, 7, 0, 0, time.UTC)

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

const allowMonitoring = `
apiVersion: canaryroute.fn.crossplane.io/v1beta1
kind: Input
allowedRouteNamespaces: [test]
allowedBackendNamespaces: [monitoring]
`

// allowTest lets cluster-scoped CanaryRoutes route in namespace test, and
// nothing more.
const allowTest = `
apiVersion: canaryroute.fn.crossplane.io/v1beta1
kind: Input
allowedRouteNamespaces: [test]
`

const emptyInput = `
apiVersion: canaryroute.fn.crossplane.io/v1beta1
kind: Input
`

// view is the part of a response that the tests compare: what Crossplane
// acts on, in a form that reads well in a diff.
type view struct {
	Results      []string
	Conditions   []string
	Resources    []string
	Ready        map[string]string
	Weights      [][]string
	Grants       map[string][]string
	Rollout      map[string]any
	TTL          time.Duration
	Requirements []string
}

func TestRunFunction(t *testing.T) {
	type args struct {
		xr       string
		input    string
		observed map[string]string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   view
	}{
		"FlaggerScenario": {
			reason: "A canary behind a proxy in another namespace gets 20% through a composed HTTPRoute, a ReferenceGrant in its namespace, and the primary a proxy Service.",
			args:   args{xr: flaggerXR, input: allowMonitoring},
			want:   flaggerView(),
		},
		"ObservedResourcesAreReady": {
			reason: "A Service and a grant are ready once they exist; the route once every parent accepted it with its references resolved, at its current generation.",
			args: args{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-httproute":           acceptedRoute(3, 3),
				"service-primary":           `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test}}`,
				"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: podinfo.test, namespace: monitoring}}`,
			}},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=True Accepted: every parent accepted the route and resolved its references"
				v.Ready = map[string]string{"referencegrant-monitoring": "READY_TRUE", "route-httproute": "READY_TRUE", "service-primary": "READY_TRUE"}
			}),
		},
		"StaleAcceptanceIsNotReady": {
			reason: "A parent's verdict on an older generation of the route says nothing about the current one.",
			args: args{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-httproute": acceptedRoute(4, 3),
			}},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=False Stale: istio-ingress/gateway has not accepted the route (Stale): Accepted was reported for generation 3, the route is at generation 4"
			}),
		},
		"CanaryNamespaceNotAllowed": {
			reason: "Without the canary's namespace in allowedBackendNamespaces there is no grant, the canary is held at 0 (Failed) and a Warning names the reference.",
			args:   args{xr: flaggerXR, input: allowTest},
			want: flaggerView(withoutGrant, func(v *view) {
				v.Results = []string{`WARNING NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`}
				v.Conditions[1] = `ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
				v.Conditions[2] = `RolloutHealthy=False NotAllowedByPolicy: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
				v.Weights = [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-proxy:3456=0"}}
				v.Rollout["phase"], v.Rollout["reason"], v.Rollout["canaryWeight"], v.Rollout["primaryWeight"] = "Failed", "NotAllowedByPolicy", float64(0), float64(100)
				v.Rollout["message"] = `canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
			}),
		},
		"NamespacedXRCannotComposeGrant": {
			reason: "A namespaced XR composes only into its namespace: no grant, a Warning and GrantNotComposable naming the grant to create; the canary keeps its weight.",
			args: args{input: allowMonitoring, xr: namespacedXR(`
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}}
  traffic: {weight: 20}
`)},
			want: view{
				Results: []string{"WARNING GrantNotComposable: a namespaced CanaryRoute cannot compose into another namespace; the platform team must create ReferenceGrant httproute.podinfo.test in namespace monitoring from HTTPRoute in namespace test to Service canary-proxy"},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=False GrantNotComposable: a namespaced CanaryRoute cannot compose into another namespace; the platform team must create ReferenceGrant httproute.podinfo.test in namespace monitoring from HTTPRoute in namespace test to Service canary-proxy",
					"RolloutHealthy=True Stable: Stable: canary 20%, primary 80%",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo:9898=80", "Service/monitoring/canary-proxy:3456=20"}},
				Rollout: map[string]any{
					"phase": "Stable", "reason": "Manual", "canaryWeight": float64(20), "primaryWeight": float64(80),
					"canaryDigest": "set", "canaryBackends": canaryProxyBackends,
				},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"SkipGrants": {
			reason: "referenceGrants: Skip composes no grant and warns of none.",
			args:   args{xr: strings.Replace(flaggerXR, "  traffic:", "  referenceGrants: Skip\n  traffic:", 1), input: allowMonitoring},
			want: flaggerView(withoutGrant, func(v *view) {
				v.Conditions[1] = "ReferenceGrantsReady=True Skipped: spec.referenceGrants is Skip: grants are managed outside this CanaryRoute"
			}),
		},
		"SameBackendOnce": {
			reason: "When primary and canary resolve to one backend (a promotion), the rule carries it once, at 100.",
			args: args{input: emptyInput, xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v2}}
  canary: {backendRef: {name: podinfo-v2, port: 9898}}
  traffic: {weight: 40}
`)},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
					"RolloutHealthy=True Stable: Stable: canary 40%, primary 60%",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-v2:9898=100"}},
				// One backend is the primary: no canary backend is recorded,
				// so an emergency abort never zeroes the only backend.
				Rollout:      map[string]any{"phase": "Stable", "reason": "Manual", "canaryWeight": float64(40), "primaryWeight": float64(60), "canaryDigest": "set"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"KindChangeDropsOldRoute": {
			reason: "The route's kind is in its resource name: after a change of kind the old route is not desired any more, so Crossplane deletes it.",
			args: args{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-grpcroute": `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}}`,
			}},
			want: flaggerView(),
		},
		"BadSpecIsFatal": {
			reason: "An invalid spec is a Fatal result naming the field; the conditions the XR had are re-sent so they do not turn Unknown.",
			args: args{input: allowMonitoring, xr: strings.Replace(flaggerXR, "weight: 20", "weight: 120", 1) + `
status:
  conditions:
    - {type: RouteAccepted, status: "True", reason: Accepted, message: all good}
    - {type: Ready, status: "True", reason: Available}
`},
			want: view{
				Results:    []string{"FATAL: invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent between 0 and 100"},
				Conditions: []string{"RouteAccepted=True Accepted: all good"},
				TTL:        time.Minute,
			},
		},
		"BadInputIsFatal": {
			reason: "An invalid Input is a Fatal result naming the Input's field.",
			args:   args{xr: flaggerXR, input: allowMonitoring + "referenceGrantVersion: v2\n"},
			want: view{
				Results: []string{`FATAL: invalid function Input: referenceGrantVersion: Unsupported value: "v2": supported values: "v1beta1", "v1"`},
				TTL:     time.Minute,
			},
		},
		"ExternalNameNeedsInput": {
			reason: "An externalName side is refused unless the Input sets allowExternalNames.",
			args:   args{input: allowTest, xr: strings.Replace(flaggerXR, "backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "externalName: canary.example.net", 1)},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"},
				TTL:     time.Minute,
			},
		},
		"MissingPortIsFatal": {
			reason: "A Service backend needs a port: with neither the reference's nor spec.port the Fatal names the field (the CRD's 'Must have port for Service reference').",
			args: args{input: emptyInput, xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary, port: 80}}
`)},
			want: view{
				Results: []string{"FATAL: invalid CanaryRoute: spec.primary.backendRef.port: Required value: a Service backend needs a port: set it here or set spec.port"},
				TTL:     time.Minute,
			},
		},
		"RefusedPrimaryKindIsFatal": {
			reason: "A primary of a kind outside allowedBackendKinds is a Fatal naming the field: in the route's own namespace no gateway would refuse it.",
			args: args{input: emptyInput + "allowedBackendKinds: [{group: \"\", kind: Service}]\n", xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {group: gateway.envoyproxy.io, kind: Backend, name: anywhere}}
  canary: {backendRef: {name: podinfo-canary, port: 80}}
`)},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.primary.backendRef.kind: Forbidden: backend kind Backend.gateway.envoyproxy.io is not in the function Input's allowedBackendKinds"},
				TTL:     time.Minute,
			},
		},
		"RefusedCanaryKindHeldAtZero": {
			reason: "A canary of a kind outside allowedBackendKinds is held at 0 (Failed), even in the route's namespace.",
			args: args{input: emptyInput + "allowedBackendKinds: [{group: \"\", kind: Service}]\n", xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {name: podinfo, port: 80}}
  canary: {backendRef: {group: gateway.envoyproxy.io, kind: Backend, name: anywhere}}
  traffic: {weight: 30}
`)},
			want: view{
				Results: []string{"WARNING NotAllowedByPolicy: the canary backend Backend.gateway.envoyproxy.io anywhere is refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds"},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Backend.gateway.envoyproxy.io anywhere is refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"RolloutHealthy=False NotAllowedByPolicy: canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo:80=100", "Backend/anywhere=0"}},
				Rollout: map[string]any{
					"phase": "Failed", "reason": "NotAllowedByPolicy", "canaryWeight": float64(0), "primaryWeight": float64(100),
					"message":      "canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"canaryDigest": "set", "canaryBackends": []any{map[string]any{"group": "gateway.envoyproxy.io", "kind": "Backend", "namespace": "test", "name": "anywhere"}},
				},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"GatesAreRequired": {
			reason: "Each gate's object is required from Crossplane by name, in the route namespace only; the first run, without them, holds the rollout.",
			args: args{input: allowMonitoring, xr: strings.Replace(strings.Replace(flaggerXR, "weight: 20", `steps: [{weight: 10, pause: 1m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]`, 1),
				"namespace: monitoring, port: 3456}", "namespace: monitoring, port: 3456}\n    revision: v2", 1)},
			want: view{
				Results: []string{"NORMAL: rollout of revision v2 started at step 0 (10%)"},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Progressing: holding step 0 (10%): the route has not been created yet",
				},
				Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
				Ready:     map[string]string{"referencegrant-monitoring": "READY_FALSE", "route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=90", "Service/monitoring/canary-proxy:3456=10"}},
				Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-proxy"}},
				Rollout: map[string]any{
					"phase": "Progressing", "reason": "RolloutStarted", "revision": "v2", "step": float64(0), "canaryWeight": float64(10), "primaryWeight": float64(90),
					"stepStartedAt": "2026-12-02T10:07:00Z", "nextStepAt": "2026-12-02T10:08:00Z",
					"message":      "holding step 0 (10%): the route has not been created yet",
					"canaryDigest": "set", "canaryBackends": canaryProxyBackends,
				},
				TTL: 30 * time.Second,
				Requirements: []string{
					"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
					"gate-0: apps/v1 Deployment test/podinfo-canary",
				},
			},
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.args.xr, tc.args.input, tc.args.observed)
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, viewOf(t, rsp)); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// testRequest is a request for an XR, an Input and observed composed
// resources, each written in YAML.
func testRequest(t *testing.T, xr, input string, observed map[string]string) *fnv1.RunFunctionRequest {
	t.Helper()
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(t, input),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, xr)}, Resources: map[string]*fnv1.Resource{}},
	}
	for name, o := range observed {
		req.Observed.Resources[name] = &fnv1.Resource{Resource: toStruct(t, o)}
	}
	return req
}

// assertXRDAccepts checks that the XR with the status the function desires
// passes its XRD (schema and CEL rules), as the API server would on the
// status update: Crossplane prunes what the XRD does not declare.
func assertXRDAccepts(t *testing.T, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	status, ok := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
	if !ok {
		return
	}
	xr := req.GetObserved().GetComposite().GetResource().AsMap()
	xr["status"] = status
	xrds := crdschema.XRDs(t, "example/definitions/canaryroute-namespaced.yaml", "example/definitions/canaryroute-cluster.yaml")
	if errs := xrds.Validate(xr); len(errs) > 0 {
		t.Errorf("the XRD rejects the XR with the status the function desires: %v", errs)
	}
}

// namespacedXR is the namespaced CanaryRoute podinfo in namespace test with
// the given spec (indented by two spaces).
func namespacedXR(spec string) string {
	return "apiVersion: platform.example.org/v1alpha1\nkind: CanaryRoute\nmetadata: {name: podinfo, namespace: test}\nspec:" + spec + "\n"
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

func toStruct(t *testing.T, y string) *structpb.Struct {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s := &structpb.Struct{}
	if err := s.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return s
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
	for _, c := range rsp.GetConditions() {
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
		case compose.Key(name).IsRoute():
			v.Weights = routeWeights(obj)
		case compose.Key(name).IsGrant():
			if v.Grants == nil {
				v.Grants = map[string][]string{}
			}
			v.Grants[strings.TrimPrefix(name, "referencegrant-")] = grantSummary(obj)
		}
	}
	slices.Sort(v.Resources)
	if s := rsp.GetDesired().GetComposite().GetResource().AsMap(); s != nil {
		if status, ok := s["status"].(map[string]any); ok {
			v.Rollout, _ = status["rollout"].(map[string]any)
		}
	}
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

// routeWeights summarises a route's rules as kind/[namespace/]name:port=weight.
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
			name := ref["name"].(string)
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

func grantSummary(g map[string]any) []string {
	spec, _ := g["spec"].(map[string]any)
	from, _ := spec["from"].([]any)
	to, _ := spec["to"].([]any)
	out := make([]string, 0, len(from)+len(to))
	for _, f := range from {
		from := f.(map[string]any)
		out = append(out, fmt.Sprintf("from %s %s", from["kind"], from["namespace"]))
	}
	for _, t := range to {
		to := t.(map[string]any)
		out = append(out, fmt.Sprintf("to %s %s", to["kind"], to["name"]))
	}
	return out
}
