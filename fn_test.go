package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
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
		required map[string][]string
		ctx      func() context.Context
	}
	mirrorTo := func(ref string) string {
		return flaggerWith("  traffic:", `  rules:
    - filters:
        - type: RequestMirror
          requestMirror: {backendRef: `+ref+`}
  traffic:`)
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
				v.Results = []string{
					`WARNING NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`,
					`WARNING RolloutFailed: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`,
				}
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
				Results: []string{
					"WARNING NotAllowedByPolicy: the canary backend Backend.gateway.envoyproxy.io anywhere is refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"WARNING RolloutFailed: canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
				},
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
				Results: []string{"NORMAL RolloutStarted: rollout of revision v2 started at step 0 (10%)"},
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

		// A claim reference is proven, not believed.
		"ForgedClaimRefRefused": {
			reason: "A cluster-scoped XR whose hand-written claimRef names kube-system, with no such claim referencing it, is a cluster-scoped XR like any: its namespace must be in allowedRouteNamespaces, or a Fatal names spec.claimRef.",
			args: args{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{
				"claim": {},
			}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimOfAnotherXRRefused": {
			reason: "A claim that exists but is bound to another XR proves nothing for this one.",
			args: args{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{
				"claim": {claimObject("kube-system", "podinfo-other")},
			}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimOfAnotherGroupNotAsked": {
			reason: "A claim is of its XR's own API group: a claimRef naming another group (a Secret in kube-system) is never asked of Crossplane, which would read it, and proves nothing.",
			args:   args{xr: strings.Replace(claimedXR("kube-system"), "apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim", "apiVersion: v1, kind: Secret", 1), input: allowMonitoring},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no Secret kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ProvenClaimRoutesInItsNamespace": {
			reason: "A claim that Crossplane bound to this XR (its resourceRef names the XR) lets the route live in the claim's namespace without allowedRouteNamespaces; the claim is required back on every run.",
			args: args{xr: claimedXR("team-a"), input: emptyInput, required: map[string][]string{
				"claim": {claimObject("team-a", "podinfo-x7k2p")},
			}},
			want: claimedView(),
		},
		"ClaimNotFetchedYet": {
			reason: "On the first call Crossplane has fetched nothing: the run asks for the claim, and its answer is never applied (the requirement sends Crossplane back for a second call), so it proceeds as if proven.",
			args:   args{xr: claimedXR("team-a"), input: emptyInput},
			want:   claimedView(),
		},

		// Route namespaces.
		"RouteNamespaceNotAllowed": {
			reason: "A cluster-scoped CanaryRoute may only route in a namespace of allowedRouteNamespaces (default none): a Fatal names spec.namespace.",
			args:   args{xr: flaggerXR, input: emptyInput + "allowedBackendNamespaces: [monitoring]\n"},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.namespace: Forbidden: namespace "test" is not in the function Input's allowedRouteNamespaces`},
				TTL:     time.Minute,
			},
		},
		"AnyRouteNamespace": {
			reason: `"*" allows every route namespace.`,
			args:   args{xr: flaggerXR, input: emptyInput + "allowedRouteNamespaces: ['*']\nallowedBackendNamespaces: [monitoring]\n"},
			want:   flaggerView(),
		},

		// No takeover.
		"TakeoverRefused": {
			reason: "An HTTPRoute of the same name that this XR did not compose (no crossplane.io/composite label) is never composed over: a Fatal names it.",
			args: args{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-route-httproute": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {team: other}}}`},
			}},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: HTTPRoute test/podinfo exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},
		"TakeoverOfServiceAndGrantRefused": {
			reason: "The proxy Service and the ReferenceGrant are protected the same way; another XR's label is no better than none.",
			args: args{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-service-primary":           {`{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test}}`},
				"existing-referencegrant-monitoring": {`{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring, labels: {crossplane.io/composite: other}}}`},
			}},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: " +
					"Service test/podinfo-primary exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over); " +
					"ReferenceGrant monitoring/httproute.podinfo.test exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL: time.Minute,
			},
		},
		"OwnObjectsComposed": {
			reason: "Objects labelled with this XR's name are its own: composed as usual; objects not found are created.",
			args: args{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-route-httproute":           {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {crossplane.io/composite: podinfo}}}`},
				"existing-service-primary":           {},
				"existing-referencegrant-monitoring": {},
			}},
			want: flaggerView(),
		},
		"OtherControllerRefused": {
			reason: "A label naming this XR is not enough when another object controls it (a namespaced and a cluster-scoped XR of the same name): the controller's UID must be this XR's.",
			args: args{
				xr: strings.Replace(flaggerXR, "  name: podinfo\n", "  name: podinfo\n  uid: 0000-aaaa\n", 1), input: allowMonitoring,
				required: map[string][]string{
					"existing-route-httproute": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {crossplane.io/composite: podinfo}, ownerReferences: [{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: podinfo, uid: 1111-bbbb, controller: true}]}}`},
				},
			},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: HTTPRoute test/podinfo exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},

		// Every backend reference passes the policy.
		"MirrorToClusterLocalHostnameRefused": {
			reason: "A user's RequestMirror to an Istio Hostname that is cluster-local would reach another namespace around the policy: a Fatal names the filter.",
			args:   args{input: allowMonitoring, xr: mirrorTo("{group: networking.istio.io, kind: Hostname, name: secrets.other.svc.cluster.local, port: 80}")},
			want: view{
				Results: []string{"FATAL: invalid CanaryRoute: spec.rules[0].filters[0].requestMirror.backendRef.name: Invalid value: \"secrets.other.svc.cluster.local\": must not be a cluster-local name (*.cluster.local): it would reach another namespace without a ReferenceGrant; use backendRef with a namespace instead"},
				TTL:     time.Minute,
			},
		},
		"MirrorKindRefused": {
			reason: "A mirror's kind passes allowedBackendKinds like a side's.",
			args:   args{input: allowMonitoring + "allowedBackendKinds: [{group: '', kind: Service}]\n", xr: mirrorTo("{group: networking.istio.io, kind: Hostname, name: audit.example.com, port: 80}")},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.rules[0].filters[0].requestMirror.backendRef: Forbidden: the mirror's backend Hostname.networking.istio.io audit.example.com:80 is refused: backend kind Hostname.networking.istio.io is not in the Input's allowedBackendKinds"},
				TTL:     time.Minute,
			},
		},
		"MirrorNamespaceRefused": {
			reason: "A mirror on a side to a namespace outside allowedBackendNamespaces is a Fatal naming the side's filter.",
			args: args{input: allowMonitoring, xr: flaggerWith("          add: [{name: X-Route, value: primary}]", `          add: [{name: X-Route, value: primary}]
      - type: RequestMirror
        requestMirror: {backendRef: {name: vault, namespace: secrets, port: 8200}}`)},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.primary.filters[1].requestMirror.backendRef: Forbidden: the mirror's backend Service secrets/vault:8200 is refused: namespace "secrets" is not in the Input's allowedBackendNamespaces`},
				TTL:     time.Minute,
			},
		},
		"MirrorNamespaceGranted": {
			reason: "A mirror to an allowed namespace gets its grant, like a side: the grant in monitoring names both the canary and the mirror target.",
			args:   args{input: allowMonitoring, xr: mirrorTo("{name: audit, namespace: monitoring, port: 80}")},
			want: flaggerView(func(v *view) {
				v.Grants = map[string][]string{"monitoring": {"from HTTPRoute test", "to Service audit", "to Service canary-proxy"}}
			}),
		},

		// Paused means nothing moves.
		"PausedNewRevisionHoldsPreviousComposition": {
			reason: "A new revision while paused keeps the previous composition as it is: the route's weights and the canary it had; the status keeps the previous revision for the restart.",
			args: args{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, namespace: monitoring, port: 3456}\n    revision: v3"),
					"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1) + `
status:
  rollout:
    phase: Progressing
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T10:00:00Z"
    canaryWeight: 50
    primaryWeight: 50
    canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
`,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
			},
			want: view{
				Results: []string{"NORMAL RolloutPaused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/monitoring/canary-proxy:3456=1"}, {"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=50"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(50), "primaryWeight": float64(50), "canaryBackends": canaryProxyBackends,
					"message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				TTL: time.Minute,
				Requirements: []string{
					"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
				},
			},
		},

		"PausedHoldReopensNothing": {
			reason: "A paused rollout holding its previous route for a new revision re-emits neither the grant nor the weight of a canary whose namespace the Input has since revoked: the grant is not composed (Crossplane deletes it), the old canary goes to 0% with its A/B rule and mirror, and the status says what the route carries.",
			args: args{
				input: allowTest,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, port: 3456}\n    revision: v3"),
					"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1) + pausedAtStep1,
				observed: map[string]string{
					"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 50, 50),
					"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`,
				},
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
					"RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=0"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(0), "primaryWeight": float64(100), "canaryBackends": canaryProxyBackends,
					"message": "paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy",
				},
				TTL: time.Minute,
				Requirements: []string{
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
				},
			},
		},
		"PausedNewRevisionWithoutRoute": {
			reason: "Paused with a new revision on a new backend while the route is not observed (deleted, or spec.kind changed in the same edit): nothing composed can be held, so the new, untested canary is composed at 0% without canary-only rules, never at the frozen weight.",
			args: args{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, namespace: monitoring, port: 3456}\n    revision: v3"),
					"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true\n    matches: [{headers: [{name: X-Beta, value: 'yes'}]}]", 1) + pausedAtStep1,
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused with the canary at 0%: the route was not observed, so nothing composed can be held; revision v3 starts at step 0 when paused is cleared",
				},
				Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
				Ready:     map[string]string{"referencegrant-monitoring": "READY_FALSE", "route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-v3:3456=0"}},
				Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-v3"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(0), "primaryWeight": float64(100),
					"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "namespace": "monitoring", "name": "canary-v3", "port": float64(3456)}},
					"message":        "paused with the canary at 0%: the route was not observed, so nothing composed can be held; revision v3 starts at step 0 when paused is cleared",
				},
				TTL: time.Minute,
				Requirements: []string{
					"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
				},
			},
		},
		"HeldRouteReadyOnceItExists": {
			reason: "A held route honours requireAcceptedRoute: false like any other: ready once it exists.",
			args: args{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, namespace: monitoring, port: 3456}\n    revision: v3"),
					"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true\n    requireAcceptedRoute: false", 1) + pausedAtStep1,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_TRUE"},
				Weights:   [][]string{{"Service/monitoring/canary-proxy:3456=1"}, {"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=50"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(50), "primaryWeight": float64(50), "canaryBackends": canaryProxyBackends,
					"message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				TTL: time.Minute,
				Requirements: []string{
					"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
				},
			},
		},
		"DeniedExternalName": {
			reason: "An ExternalName under one of the Input's deniedExternalNames is a Fatal naming the field, even where ExternalNames are allowed.",
			args: args{
				input: allowMonitoring + "allowExternalNames: true\ndeniedExternalNames: [corp.internal]\n",
				xr:    flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: billing.corp.internal"),
			},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: host "billing.corp.internal" is covered by "corp.internal" in the function Input's deniedExternalNames`},
				TTL:     time.Minute,
			},
		},
		"MetadataHostnameRefused": {
			reason: "An Istio Hostname backend naming a cloud's metadata endpoint is refused like a cluster-local one.",
			args: args{
				input: allowMonitoring,
				xr:    flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {group: networking.istio.io, kind: Hostname, name: metadata.google.internal, port: 80}"),
			},
			want: view{
				Results: []string{`FATAL: invalid CanaryRoute: spec.canary.backendRef.name: Invalid value: "metadata.google.internal": must not name a metadata or host endpoint (metadata.google.internal): it would reach the node's credentials or the machine the gateway runs on`},
				TTL:     time.Minute,
			},
		},

		// Canary-only rules end with the rollout.
		"NoCompanionAtHundred": {
			reason: "At 100% (manual) there are no A/B or session rules and no mirror: the canary would only get duplicated load.",
			args:   args{input: allowMonitoring, xr: flaggerWith("    weight: 20", "    weight: 100\n    matches: [{headers: [{name: X-Beta, value: 'yes'}]}]\n    mirror: {percent: 50}")},
			want: flaggerView(func(v *view) {
				v.Weights = [][]string{{"Service/podinfo-primary:9898=0", "Service/monitoring/canary-proxy:3456=100"}}
				v.Conditions[2] = "RolloutHealthy=True Stable: Stable: canary 100%, primary 0%"
				v.Rollout["canaryWeight"], v.Rollout["primaryWeight"] = float64(100), float64(0)
			}),
		},

		// Readiness honours requireAcceptedRoute.
		"RouteReadyOnceItExists": {
			reason: "With requireAcceptedRoute false the route is ready once it exists, even if no gateway reports on it.",
			args: args{
				input: allowMonitoring, xr: flaggerWith("    weight: 20", "    weight: 20\n    requireAcceptedRoute: false"),
				observed: map[string]string{"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`},
			},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet"
				v.Ready["route-httproute"] = "READY_TRUE"
			}),
		},

		// Bounded work and clear errors.
		"HugeSelectorIsOneError": {
			reason: "Thousands of invalid selector labels give one short error, not thousands.",
			args:   args{input: allowMonitoring, xr: flaggerWith("      selector: {app: podinfo}", "      selector: {"+selectorLabels(3000)+"}")},
			want: view{
				Results: []string{"FATAL: invalid CanaryRoute: spec.primary.service.selector: Too many: 3000: must have at most 64 items"},
				TTL:     time.Minute,
			},
		},
		"ErrorsCapped": {
			reason: "A Fatal lists at most 20 errors and says how many more there were.",
			args:   args{input: allowMonitoring, xr: flaggerWith("    weight: 20", "    steps: ["+strings.Repeat("{weight: 101},", 31)+"{weight: 101}]")},
			want: view{
				Results: []string{"FATAL: invalid CanaryRoute: [" + cappedStepErrors() + "] (and 13 more errors)"},
				TTL:     time.Minute,
			},
		},
		"LongValueCut": {
			reason: "A Fatal quotes at most 256 characters of a value.",
			args:   args{input: allowMonitoring, xr: flaggerWith("      selector: {app: podinfo}", "      selector: {app: "+strings.Repeat("x", 1000)+"}")},
			want: view{
				Results: []string{`FATAL: invalid CanaryRoute: spec.primary.service.selector[app]: Invalid value: "` + strings.Repeat("x", 256) + `...(1000 characters)": must be no more than 63 bytes`},
				TTL:     time.Minute,
			},
		},
		"DeadlineHonoured": {
			reason: "A run whose deadline has passed stops and says so, instead of composing for a caller that gave up.",
			args: args{input: allowMonitoring, xr: flaggerXR, ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			}},
			want: view{
				Results: []string{"FATAL: the run ran out of time: context canceled"},
				TTL:     time.Minute,
			},
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.args.xr, tc.args.input, tc.args.observed)
			if tc.args.required != nil {
				req.RequiredResources = map[string]*fnv1.Resources{}
				for name, objs := range tc.args.required {
					rs := &fnv1.Resources{}
					for _, o := range objs {
						rs.Items = append(rs.Items, &fnv1.Resource{Resource: toStruct(t, o)})
					}
					req.RequiredResources[name] = rs
				}
			}
			ctx := context.Background()
			if tc.args.ctx != nil {
				ctx = tc.args.ctx()
			}
			rsp, err := f.RunFunction(ctx, req)
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

// TestRunFunctionResponse compares whole responses, for the runs where every
// part of the answer is the point: what Crossplane applies, the XR's status,
// the conditions, the requirements and the TTL.
func TestRunFunctionResponse(t *testing.T) {
	type args struct {
		xr    string
		input string
	}
	conditions := `
status:
  conditions:
    - {type: RouteAccepted, status: "True", reason: Accepted, message: "every parent accepted the route and resolved its references"}
    - {type: Synced, status: "True", reason: ReconcileSuccess}
`
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"FlaggerScenario": {
			reason: "A canary behind a proxy in another namespace gets 20% through the HTTPRoute (the primary with its own header filter), a ReferenceGrant in its namespace names exactly the canary proxy, the primary gets a proxy Service; nothing exists yet, so nothing is ready; every object to compose is required back by name.",
			args:   args{xr: flaggerXR, input: allowMonitoring},
			want: `
meta: {ttl: 60s}
desired:
  composite:
    resource:
      status:
        rollout:
          phase: Stable
          reason: Manual
          canaryWeight: 20
          primaryWeight: 80
          canaryDigest: v2-0c9b3348d78394dd
          canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
        route:
          kind: HTTPRoute
          name: podinfo
          namespace: test
          parents: [{name: gateway, namespace: istio-ingress, accepted: false, resolvedRefs: false, reason: Pending}]
  resources:
    route-httproute:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1
        kind: HTTPRoute
        metadata: {name: podinfo, namespace: test}
        spec:
          hostnames: [www.example.com]
          parentRefs: [{name: gateway, namespace: istio-ingress}]
          rules:
            - matches: [{path: {type: PathPrefix, value: /}}]
              backendRefs:
                - group: ""
                  kind: Service
                  name: podinfo-primary
                  port: 9898
                  weight: 80
                  filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-Route, value: primary}]}}]
                - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}
    referencegrant-monitoring:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1beta1
        kind: ReferenceGrant
        metadata: {name: httproute.podinfo.test, namespace: monitoring}
        spec:
          from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}]
          to: [{group: "", kind: Service, name: canary-proxy}]
    service-primary:
      ready: READY_FALSE
      resource:
        apiVersion: v1
        kind: Service
        metadata: {name: podinfo-primary, namespace: test}
        spec:
          type: ClusterIP
          selector: {app: podinfo}
          ports: [{name: http, port: 9898, protocol: TCP, targetPort: 9898}]
conditions:
  - {type: RouteAccepted, status: STATUS_CONDITION_FALSE, reason: Pending, message: the route has not been created yet, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: "ReferenceGrants composed in namespaces: monitoring", target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_TRUE, reason: Composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: RolloutHealthy, status: STATUS_CONDITION_TRUE, reason: Stable, message: "Stable: canary 20%, primary 80%", target: TARGET_COMPOSITE_AND_CLAIM}
requirements:
  resources:
    existing-route-httproute: {apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, matchName: podinfo, namespace: test}
    existing-service-primary: {apiVersion: v1, kind: Service, matchName: podinfo-primary, namespace: test}
    existing-referencegrant-monitoring: {apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, matchName: httproute.podinfo.test, namespace: monitoring}
`,
		},
		"BadSpecIsFatal": {
			reason: "A spec the function refuses is a Fatal naming the field: nothing to apply, so the cluster keeps its last good route, and the function's own conditions are re-sent as the XR has them (Crossplane's are not the function's to send).",
			args:   args{xr: flaggerWith("weight: 20", "weight: 120") + conditions, input: allowMonitoring},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent between 0 and 100"
conditions:
  - {type: RouteAccepted, status: STATUS_CONDITION_TRUE, reason: Accepted, message: every parent accepted the route and resolved its references, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent between 0 and 100", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.args.xr, tc.args.input, nil)
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(withRequirementsInContext(t, responseYAML(t, tc.want)), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// testRequest is a request for an XR, an Input and observed composed
// resources, each written in YAML.
func testRequest(t *testing.T, composite, input string, observed map[string]string) *fnv1.RunFunctionRequest {
	t.Helper()
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(t, input),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, composite)}, Resources: map[string]*fnv1.Resource{}},
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
	composite := req.GetObserved().GetComposite().GetResource().AsMap()
	composite["status"] = status
	xrds := crdschema.XRDs(t, "example/definitions/canaryroute-namespaced.yaml", "example/definitions/canaryroute-cluster.yaml")
	if errs := xrds.Validate(composite); len(errs) > 0 {
		t.Errorf("the XRD rejects the XR with the status the function desires: %v", errs)
	}
}

// claimedXR is a cluster-scoped CanaryRoute podinfo-x7k2p whose claimRef
// names the claim podinfo in a namespace.
func claimedXR(namespace string) string {
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo-x7k2p}
spec:
  claimRef: {apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim, name: podinfo, namespace: ` + namespace + `}
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 10}
`
}

// claimObject is the claim podinfo in a namespace, bound to an XR.
func claimObject(namespace, xrName string) string {
	return `{apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim, metadata: {name: podinfo, namespace: ` + namespace +
		`}, spec: {resourceRef: {apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute, name: ` + xrName + `}}}`
}

// claimedView is what a run of claimedXR("team-a") gives.
func claimedView() view {
	return view{
		Conditions: []string{
			"RouteAccepted=False Pending: the route has not been created yet",
			"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
			"RolloutHealthy=True Stable: Stable: canary 10%, primary 90%",
		},
		Resources: []string{"route-httproute"},
		Ready:     map[string]string{"route-httproute": "READY_FALSE"},
		Weights:   [][]string{{"Service/podinfo:9898=90", "Service/podinfo-canary:9898=10"}},
		Rollout: map[string]any{
			"phase": "Stable", "reason": "Manual", "canaryWeight": float64(10), "primaryWeight": float64(90), "canaryDigest": "set",
			"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "namespace": "team-a", "name": "podinfo-canary", "port": float64(9898)}},
		},
		TTL: time.Minute,
		Requirements: []string{
			"claim: platform.example.org/v1alpha1 CanaryRouteClaim team-a/podinfo",
			"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute team-a/podinfo",
		},
	}
}

// flaggerWith is the Flagger scenario's XR with one text replaced.
func flaggerWith(from, to string) string { return strings.Replace(flaggerXR, from, to, 1) }

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

// checkComposedCondition holds every response to the Composed condition's
// rule: once in each response, True (reason Composed) where the function
// composes the CanaryRoute, False (reason Refused) where it refuses it: a
// Fatal, whose message it carries, or a rescued abort.
func checkComposedCondition(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	fatal, refused := "", false
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			fatal, refused = r.GetMessage(), true
		}
	}
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	if ro, _ := status["rollout"].(map[string]any); ro["reason"] == "AbortRescued" {
		refused = true
	}
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
	case fatal != "" && c.GetMessage() != xr.CutRunes(fatal, xr.MaxStatusMessage):
		t.Errorf("Composed says %q, want the Fatal's message %q", c.GetMessage(), fatal)
	case !refused && (c.GetStatus() != fnv1.Status_STATUS_CONDITION_TRUE || c.GetReason() != "Composed"):
		t.Errorf("a composed CanaryRoute has Composed %s %s, want True, Composed", c.GetStatus(), c.GetReason())
	}
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

// ownRoute is the Flagger scenario's route as Crossplane returns it when
// the XR podinfo composed it, at weights primary/canary.
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

const recordedCanary = `
status:
  rollout:
    phase: Stable
    canaryWeight: 20
    primaryWeight: 80
    canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
  conditions:
    - {type: ReferenceGrantsReady, status: "True", reason: Ready, message: composed}
`

// selectorLabels is a YAML flow map body of n labels whose keys are invalid.
func selectorLabels(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("'bad key %d': v", i)
	}
	return strings.Join(items, ", ")
}

// cappedStepErrors are the first 20 errors of 32 steps at 101%.
func cappedStepErrors() string {
	errs := make([]string, 20)
	for i := range errs {
		errs[i] = fmt.Sprintf("spec.traffic.steps[%d].weight: Invalid value: 101: must be a percent between 0 and 100", i)
	}
	return strings.Join(errs, ", ")
}

// A progressive CanaryRoute: 10% for 1m, 50% for 5m, then 100%, gated on
// the canary Deployment being Available.
const simulatedXR = `
apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata: {name: podinfo, namespace: test}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary:
    service: {selector: {app: podinfo, version: v2}}
    revision: v2
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 5m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-v2, conditionType: Available, failAfter: 2m}]
`

// cluster fakes what Crossplane and the gateway do between two runs: the
// desired state is applied (a route whose spec changed gets a new
// generation), the gateway reports on the route's current generation, and
// the gate Deployment reports its condition.
type cluster struct {
	// accept is the gateway's verdict: Accepted status and reason.
	accept func(now time.Time) (status, reason string)
	// available is the gate's Available condition at a time: status and
	// last transition time.
	available func(now time.Time) (status string, since time.Time)

	xrStatus   map[string]any
	route      map[string]any
	generation int64
	observed   map[string]*fnv1.Resource
}

func (c *cluster) request(t *testing.T, now time.Time) *fnv1.RunFunctionRequest {
	t.Helper()
	composite := toStruct(t, simulatedXR).AsMap()
	if c.xrStatus != nil {
		composite["status"] = c.xrStatus
	}
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(t, emptyInput),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, composite)}, Resources: map[string]*fnv1.Resource{}},
	}
	for name, r := range c.observed {
		req.Observed.Resources[name] = r
	}
	if c.route != nil {
		status, reason := c.accept(now)
		route := deepCopyMap(c.route)
		route["metadata"].(map[string]any)["generation"] = c.generation
		cond := func(typ, status, reason string) map[string]any {
			return map[string]any{"type": typ, "status": status, "reason": reason, "observedGeneration": c.generation, "lastTransitionTime": "2026-12-02T10:00:00Z", "message": ""}
		}
		route["status"] = map[string]any{"parents": []any{map[string]any{
			"parentRef":      map[string]any{"name": "gateway", "namespace": "istio-ingress"},
			"controllerName": "example.com/gateway",
			"conditions":     []any{cond("Accepted", status, reason), cond("ResolvedRefs", "True", "ResolvedRefs")},
		}}}
		req.Observed.Resources["route-httproute"] = &fnv1.Resource{Resource: mustStruct(t, route)}
	}
	status, since := c.available(now)
	req.RequiredResources = map[string]*fnv1.Resources{"gate-0": {Items: []*fnv1.Resource{{Resource: mustStruct(t, map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo-v2", "namespace": "test"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": "Simulated", "lastTransitionTime": since.Format(time.RFC3339),
		}}},
	})}}}}
	return req
}

// apply takes the run's desired state as the cluster's new observed state.
func (c *cluster) apply(rsp *fnv1.RunFunctionResponse) {
	desired := rsp.GetDesired()
	if s, ok := desired.GetComposite().GetResource().AsMap()["status"].(map[string]any); ok {
		c.xrStatus = s
	}
	c.observed = map[string]*fnv1.Resource{}
	for name, r := range desired.GetResources() {
		if name == "route-httproute" {
			route := r.GetResource().AsMap()
			if c.route == nil || !cmp.Equal(c.route["spec"], route["spec"]) {
				c.generation++
			}
			c.route = route
			continue
		}
		c.observed[name] = r
	}
}

func TestRolloutSimulation(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	accepted := func(time.Time) (string, string) { return "True", "Accepted" }
	availableSince := func(since time.Time) func(time.Time) (string, time.Time) {
		return func(time.Time) (string, time.Time) { return "True", since }
	}
	cases := map[string]struct {
		reason  string
		cluster *cluster
		runs    int
		want    []string
	}{
		"Succeeds": {
			reason:  "The rollout walks 10% -> 50% -> 100% -> Succeeded: each step waits for the gateway to accept its weights and for its pause, one step per run.",
			cluster: &cluster{accept: accepted, available: availableSince(start.Add(-time.Hour))},
			runs:    14,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
				"10:01:00 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 1 (50%)]",
				"10:01:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:02:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:03:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:04:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:05:30 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:06:00 Progressing step 2 at 100%, again in 30s: holding step 2 (100%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 2 (100%)]",
				"10:06:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100% [rollout of revision v2 succeeded at 100%]",
				"10:07:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:08:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:09:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:10:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
			},
		},
		"GatewayRefuses": {
			reason: "A gateway that does not accept the route holds the rollout at step 0, saying which parent and why.",
			cluster: &cluster{
				accept:    func(time.Time) (string, string) { return "False", "NotAllowedByListeners" },
				available: availableSince(start.Add(-time.Hour)),
			},
			runs: 5,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:01:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:01:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:02:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
			},
		},
		"GateFails": {
			reason: "The canary Deployment becomes unavailable at 10:02 during step 1: the step holds, and 2m later (failAfter) the rollout fails back to 0%.",
			cluster: &cluster{accept: accepted, available: func(now time.Time) (string, time.Time) {
				down := start.Add(2 * time.Minute)
				if now.Before(down) {
					return "True", start.Add(-time.Hour)
				}
				return "False", down
			}},
			runs: 12,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
				"10:01:00 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 1 (50%)]",
				"10:01:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:02:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:03:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:04:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s [RolloutFailed: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s]",
				"10:05:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:06:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:07:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:08:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:09:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := start
			var got []string
			for range tc.runs {
				f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return now })}
				rsp, err := f.RunFunction(context.Background(), tc.cluster.request(t, now))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, describeRun(t, now, rsp))
				assertXRDAccepts(t, tc.cluster.request(t, now), rsp)
				assertWeights(t, rsp)
				tc.cluster.apply(rsp)
				now = now.Add(rsp.GetMeta().GetTtl().AsDuration())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe rollout run by run: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// describeRun says what one run decided, in a line.
func describeRun(t *testing.T, now time.Time, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("%s: unexpected Fatal: %s", now.Format(time.TimeOnly), r.GetMessage())
		}
	}
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	r, _ := status["rollout"].(map[string]any)
	var line strings.Builder
	fmt.Fprintf(&line, "%s %s step %v at %v%%, again in %s: %s", now.Format(time.TimeOnly), r["phase"], r["step"], r["canaryWeight"],
		rsp.GetMeta().GetTtl().AsDuration(), r["message"])
	for _, res := range rsp.GetResults() {
		msg := res.GetMessage()
		// The transitions of phases carry their reason: the moves are
		// told by their messages.
		if r := res.GetReason(); r == "RolloutFailed" || r == "RolloutAborted" || r == "RolloutPaused" || r == "AwaitingApproval" {
			msg = r + ": " + msg
		}
		line.WriteString(" [" + msg + "]")
	}
	return line.String()
}

// assertWeights checks that the composed route carries the weights the
// status reports.
func assertWeights(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	r, _ := status["rollout"].(map[string]any)
	route := rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
	want := [][]string{{
		fmt.Sprintf("Service/podinfo-primary:9898=%v", r["primaryWeight"]),
		fmt.Sprintf("Service/podinfo-canary:9898=%v", r["canaryWeight"]),
	}}
	if diff := cmp.Diff(want, routeWeights(route)); diff != "" {
		t.Errorf("the composed route must carry the weights of status.rollout: -want, +got:\n%s", diff)
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deepCopyMap(m map[string]any) map[string]any {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s.AsMap()
}

// hostileSpecs are the worst specs a request under the gRPC limit can carry:
// each makes one part of the function work as hard as the bytes allow. The reference
// says a run answers within 100 ms for anything the XRD does not admit;
// BenchmarkHostileInputs measures it, TestHostileInputs checks that each is
// a short Fatal.
func hostileSpecs() map[string]map[string]any {
	base := func() map[string]any {
		return map[string]any{
			"parentRefs": []any{map[string]any{"name": "gateway"}},
			"port":       float64(80),
			"primary":    map[string]any{"backendRef": map[string]any{"name": "podinfo"}},
			"canary":     map[string]any{"backendRef": map[string]any{"name": "podinfo-canary"}},
		}
	}
	many := func(n int, item func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item(i)
		}
		return out
	}
	specs := map[string]map[string]any{}

	s := base()
	selector := map[string]any{}
	for i := range 120_000 {
		selector[fmt.Sprintf("Bad Key %d", i)] = "Bad Value"
	}
	s["primary"] = map[string]any{"service": map[string]any{"selector": selector}}
	specs["SelectorLabels"] = s

	s = base()
	s["hostnames"] = many(150_000, func(i int) any { return fmt.Sprintf("Bad_Host_%d", i) })
	specs["Hostnames"] = s

	s = base()
	s["parentRefs"] = many(100_000, func(i int) any { return map[string]any{"name": fmt.Sprintf("Bad Gateway %d", i)} })
	specs["ParentRefs"] = s

	s = base()
	s["rules"] = many(30_000, func(int) any {
		return map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "Bogus", "value": "no slash"}}}}
	})
	specs["Rules"] = s

	s = base()
	s["rules"] = []any{map[string]any{"matches": many(40_000, func(int) any {
		return map[string]any{"headers": []any{map[string]any{"name": "Bad Header", "value": "v"}}}
	})}}
	specs["Matches"] = s

	s = base()
	s["canary"] = map[string]any{"backendRef": map[string]any{"name": "c"}, "filters": many(30_000, func(int) any {
		return map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "Bad Name", "value": "v"}}}}
	})}
	specs["Filters"] = s

	s = base()
	s["traffic"] = map[string]any{"steps": many(80_000, func(int) any { return map[string]any{"weight": float64(101), "pause": "never"} })}
	specs["Steps"] = s

	s = base()
	s["traffic"] = map[string]any{"weight": float64(10), "gates": many(40_000, func(int) any {
		return map[string]any{"apiVersion": "a/b/c", "kind": "", "name": "Bad Name", "conditionType": strings.Repeat("C", 10)}
	})}
	specs["Gates"] = s

	s = base()
	s["routeName"] = strings.Repeat("x", 3<<20)
	specs["HugeValue"] = s

	s = base()
	s["canary"] = map[string]any{"externalName": strings.Repeat("a.", 1<<20)}
	specs["HugeExternalName"] = s
	return specs
}

// hostileRequest is a request with a spec, under the gRPC limit.
func hostileRequest(tb testing.TB, spec map[string]any) *fnv1.RunFunctionRequest {
	tb.Helper()
	composite, err := structpb.NewStruct(map[string]any{
		"apiVersion": "platform.example.org/v1alpha1",
		"kind":       "CanaryRoute",
		"metadata":   map[string]any{"name": "podinfo", "namespace": "test"},
		"spec":       spec,
	})
	if err != nil {
		tb.Fatal(err)
	}
	input, err := structpb.NewStruct(map[string]any{"apiVersion": "canaryroute.fn.crossplane.io/v1beta1", "kind": "Input"})
	if err != nil {
		tb.Fatal(err)
	}
	req := &fnv1.RunFunctionRequest{Input: input, Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: composite}}}
	if size := proto.Size(req); size > grpcLimit {
		tb.Fatalf("the hostile request has %d bytes, more than the gRPC limit %d", size, grpcLimit)
	}
	return req
}

// TestHostileInputs checks that each hostile spec is a Fatal result of
// bounded size: at most 20 errors, values cut.
func TestHostileInputs(t *testing.T) {
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, spec := range hostileSpecs() {
		t.Run(name, func(t *testing.T) {
			rsp, err := f.RunFunction(context.Background(), hostileRequest(t, spec))
			if err != nil {
				t.Fatalf("RunFunction(...): unexpected error: %v", err)
			}
			results := rsp.GetResults()
			if len(results) != 1 || results[0].GetSeverity() != fnv1.Severity_SEVERITY_FATAL {
				t.Fatalf("want one Fatal result, got %v", results)
			}
			// 20 errors of a few hundred characters each, at most.
			if n := len(results[0].GetMessage()); n > 16<<10 {
				t.Errorf("the Fatal message has %d bytes: errors or values are not bounded", n)
			}
		})
	}
}

// responseYAML is a RunFunctionResponse written in YAML, in the protobuf
// JSON mapping.
// withRequirementsInContext is a response whose context records its
// requirements, as every response of the function does, so that the next
// call of the reconcile knows them (see TestRequirementsRecorded).
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

// TestCanaryDigestComparesMeaning runs a rollout at step 1, then the same
// CanaryRoute with its canary respelled (defaults written out), and one whose
// status holds a digest of an older release: neither restarts the rollout.
func TestCanaryDigestComparesMeaning(t *testing.T) {
	progressive := strings.Replace(flaggerXR, "    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1h}, {weight: 100}]", 1)
	progressive = strings.Replace(progressive, "    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}",
		"    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}\n    revision: v2", 1)
	respelled := strings.Replace(progressive, "{name: canary-proxy, namespace: monitoring, port: 3456}",
		"{group: '', kind: Service, name: canary-proxy, namespace: monitoring, port: 3456}", 1)
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	run := func(t *testing.T, xrYAML string, status map[string]any) map[string]any {
		t.Helper()
		req := testRequest(t, xrYAML, allowMonitoring, map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)})
		if status != nil {
			obj := req.GetObserved().GetComposite().GetResource().AsMap()
			obj["status"] = map[string]any{"rollout": status}
			req.Observed.Composite.Resource = mustStruct(t, obj)
		}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil || isFatal(rsp) {
			t.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
		rollout, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["rollout"].(map[string]any)
		return rollout
	}
	atStep1 := map[string]any{
		"phase": "Progressing", "reason": "StepAdvanced", "revision": "v2", "step": float64(1),
		"stepStartedAt": "2026-12-02T10:00:00Z", "canaryWeight": float64(50), "primaryWeight": float64(50),
	}
	first := run(t, progressive, atStep1)
	digest, _ := first["canaryDigest"].(string)
	if digest == "" || first["step"] != float64(1) {
		t.Fatalf("the first run should stay at step 1 with a digest: %v", first)
	}
	cases := map[string]struct {
		reason string
		xr     string
		digest string
	}{
		"Respelled": {
			reason: "Writing the canary's default group and kind out is the same canary: no restart, the same digest.",
			xr:     respelled, digest: digest,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status := maps.Clone(atStep1)
			status["canaryDigest"] = tc.digest
			got := run(t, tc.xr, status)
			if got["step"] != float64(1) || got["reason"] == "CanaryChanged" || got["canaryDigest"] != digest {
				t.Errorf("%s\nthe rollout restarted or changed its digest: step %v, reason %v, digest %v (want step 1, digest %s)",
					tc.reason, got["step"], got["reason"], got["canaryDigest"], digest)
			}
		})
	}
	t.Run("LegacyDigestOfAnotherCanary", func(t *testing.T) {
		// An older release's digest of another canary: the canary changed
		// across the upgrade, and nothing jumps to the current weight with
		// a backend nobody tested.
		status := maps.Clone(atStep1)
		status["canaryDigest"] = "098b289f787e740b"
		changed := strings.Replace(progressive, "name: canary-proxy,", "name: canary-untested,", 1)
		got := run(t, changed, status)
		if got["step"] != float64(0) || got["reason"] != "CanaryChanged" {
			t.Errorf("the changed canary did not restart the rollout: step %v, reason %v", got["step"], got["reason"])
		}
	})
}

func TestCapabilitiesAndServedVersions(t *testing.T) {
	caps := func(c ...fnv1.Capability) *fnv1.RequestMeta { return &fnv1.RequestMeta{Capabilities: c} }
	all := caps(fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES,
		fnv1.Capability_CAPABILITY_CONDITIONS, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS)
	schema := func(s string) *fnv1.Schema { return &fnv1.Schema{OpenapiV3: toStruct(t, s)} }
	type want struct {
		fatal   string   // a part of the Fatal's message; "" for none
		schemas []string // the schema requirements' names
		grant   string   // the composed grant's apiVersion
		route   string   // the composed route's apiVersion
		// versions is status.route.versions, as recorded.
		versions map[string]any
	}
	// The Flagger scenario's route and grant as observed, at a version.
	observedAt := func(route, grant string) map[string]string {
		return map[string]string{
			"route-httproute":           `{apiVersion: gateway.networking.k8s.io/` + route + `, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`,
			"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/` + grant + `, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}}`,
		}
	}
	cases := map[string]struct {
		reason   string
		meta     *fnv1.RequestMeta
		xr       string
		observed map[string]string
		schemas  map[string]*fnv1.Schema
		want     want
	}{
		"NoCapabilities": {
			reason: "A caller that advertises no capabilities predates them: no schemas are asked for, and the defaults apply.",
			xr:     flaggerXR,
			want:   want{grant: "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1"},
		},
		"NoRequiredResources": {
			reason: "A caller that advertises its capabilities without required resources cannot answer the takeover check: a Fatal that says which capability is missing, never a silent skip.",
			meta:   caps(fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_CONDITIONS),
			xr:     flaggerXR,
			want:   want{fatal: "not CAPABILITY_REQUIRED_RESOURCES"},
		},
		"SchemasAsked": {
			reason: "Where the caller offers required schemas, the function asks for the XR's own and every version of each kind it composes; the first call, before any is handed, composes the defaults.",
			meta:   all,
			xr:     flaggerXR,
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"SchemasHanded": {
			reason: "With the schemas handed, the newest served versions are composed: ReferenceGrant v1.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": schema(`{type: object}`), "schema-httproute-v1": schema(`{type: object}`),
				"schema-referencegrant-v1": schema(`{type: object}`), "schema-referencegrant-v1beta1": schema(`{type: object}`),
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1", route: "gateway.networking.k8s.io/v1",
				versions: map[string]any{"route": "v1", "referenceGrant": "v1", "checkedAt": "2026-12-02T10:07:00Z"},
			},
		},
		"VersionsReused": {
			reason:   "status.route.versions read less than ten minutes ago are reused: no schema is asked for, so Crossplane neither fetches nor parses them on this reconcile, and the record stays as it was.",
			meta:     all,
			xr:       flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			observed: observedAt("v1", "v1"),
			want: want{
				grant: "gateway.networking.k8s.io/v1", route: "gateway.networking.k8s.io/v1",
				versions: map[string]any{"route": "v1", "referenceGrant": "v1", "checkedAt": "2026-12-02T10:00:00Z"},
			},
		},
		"VersionsNotBorneOut": {
			reason: "Recorded versions that the observed objects do not bear out (a forged status, or one the cluster no longer serves) are not reused: a version the cluster does not serve would make Crossplane fail every reconcile on the requirement at that version. The schemas are read again.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			// The grant the cluster holds is v1beta1: it serves no v1.
			observed: observedAt("v1", "v1beta1"),
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsBeforeTheGrant": {
			reason: "Nor where the run composes a grant that does not exist yet (a canary moved to another namespace): no grant bears out the recorded grant version.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			observed: map[string]string{
				"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`,
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsBeforeTheRoute": {
			reason: "Nor are they reused before the route exists: nothing bears them out yet.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsStale": {
			reason: "Versions read ten minutes ago or more are read again: the schemas are asked for, and this first call composes the defaults.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T09:57:00Z\"}}\n",
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"NoSelfSchema": {
			reason: "crossplane render without --required-schemas answers every schema empty, the XR's own too: nothing can be concluded, and the defaults apply.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": {}, "schema-httproute-v1": {}, "schema-referencegrant-v1": {}, "schema-referencegrant-v1beta1": {},
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"KindNotServed": {
			reason: "A cluster that serves no HTTPRoute at all: a Fatal naming spec.kind.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": schema(`{type: object}`), "schema-httproute-v1": {},
				"schema-referencegrant-v1": schema(`{type: object}`), "schema-referencegrant-v1beta1": schema(`{type: object}`),
			},
			want: want{fatal: "spec.kind: Invalid value: \"HTTPRoute\": the cluster serves no HTTPRoute version"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.xr, allowMonitoring, tc.observed)
			req.Meta, req.RequiredSchemas = tc.meta, tc.schemas
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			var got want
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					got.fatal = r.GetMessage()
				}
			}
			if tc.want.fatal != "" && strings.Contains(got.fatal, tc.want.fatal) {
				got.fatal = tc.want.fatal
			}
			for name := range rsp.GetRequirements().GetSchemas() {
				got.schemas = append(got.schemas, name)
			}
			slices.Sort(got.schemas)
			got.grant, _ = rsp.GetDesired().GetResources()["referencegrant-monitoring"].GetResource().AsMap()["apiVersion"].(string)
			got.route, _ = rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()["apiVersion"].(string)
			status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			route, _ := status["route"].(map[string]any)
			got.versions, _ = route["versions"].(map[string]any)
			assertXRDAccepts(t, req, rsp)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
