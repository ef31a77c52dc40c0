package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The safety round of API.md: route namespaces, no takeover, every backend
// under the policy, an abort that always works, paused means nothing moves,
// bounded errors and the deadline.

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

func TestRunFunctionSafety(t *testing.T) {
	type args struct {
		xr       string
		input    string
		observed map[string]string
		required map[string][]string
		ctx      func() context.Context
	}
	flaggerWith := func(from, to string) string { return strings.Replace(flaggerXR, from, to, 1) }
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

		// An emergency abort is never blocked.
		"AbortRescuesTheLastRoute": {
			reason: "With abort set, a spec that cannot be composed (here a revoked allowExternalNames) still sends the canary to 0%: the route as last observed, the recorded canary backend at 0, the A/B rule and the mirror to the canary removed, the other objects kept; a Warning says why and RolloutHealthy is False with reason Aborted.",
			args: args{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: canary.example.net"),
					"    weight: 20", "    weight: 20\n    abort: true", 1) + recordedCanary,
				observed: map[string]string{
					"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"service-primary":           `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test}, spec: {type: ClusterIP, clusterIP: 10.0.0.7, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}}`,
					"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`,
				},
			},
			want: func() view {
				v := view{
					Results: []string{"WARNING Aborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"},
					Conditions: []string{
						"ReferenceGrantsReady=True Ready: composed",
						"RolloutHealthy=False Aborted: " + msgRescuedAbort,
					},
					Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
					Ready:     map[string]string{"referencegrant-monitoring": "READY_TRUE", "route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
					Weights:   [][]string{{"Service/podinfo-primary:9898=80", "Service/monitoring/canary-proxy:3456=0"}},
					Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-proxy"}},
					Rollout: map[string]any{
						"phase": "Aborted", "reason": "Aborted", "canaryWeight": float64(0), "primaryWeight": float64(100),
						"canaryBackends": canaryProxyBackends, "message": msgRescuedAbort,
					},
					TTL: time.Minute,
				}
				return v
			}(),
		},
		"AbortWithoutRecordedCanaryIsFatal": {
			reason: "Without status.rollout.canaryBackends the function cannot tell the canary's backends from the primary's, and never guesses by name: the Fatal stands.",
			args: args{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: canary.example.net"),
					"    weight: 20", "    weight: 20\n    abort: true", 1),
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"},
				TTL:     time.Minute,
			},
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
