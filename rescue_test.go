package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

// abortedFlagger is the Flagger scenario with abort set and a canary that the
// Input no longer allows (an ExternalName without allowExternalNames): a
// spec that cannot be composed.
var abortedFlagger = strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: canary.example.net"),
	"    weight: 20", "    weight: 20\n    abort: true", 1)

// observedPrimary and observedGrant are the Flagger scenario's Service and
// grant as the API server returns them.
const (
	observedPrimary = `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, uid: 6a1c7e0e-1b2f-4c55-9a7e-0c1d2e3f4a5b, labels: {crossplane.io/composite: podinfo}}, spec: {type: ClusterIP, clusterIP: 10.0.0.7, sessionAffinity: None, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}, status: {loadBalancer: {}}}`
	observedGrant   = `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`
)

func TestRescueAbort(t *testing.T) {
	type args struct {
		xr       string
		observed map[string]string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"RescuesTheLastRoute": {
			reason: "With abort set, a spec that cannot be composed still sends the canary to 0%: the route as last observed, the recorded canary backend at 0, the A/B rule and the mirror to the canary removed, the other objects kept as composed (identity and spec, nothing the API server added); a Warning says why, RolloutHealthy is False with reason Aborted, the other conditions are re-sent.",
			args: args{
				xr: abortedFlagger + recordedCanary,
				observed: map[string]string{
					"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"service-primary":           observedPrimary,
					"referencegrant-monitoring": observedGrant,
				},
			},
			want: `
meta: {ttl: 60s}
desired:
  composite:
    resource:
      status:
        rollout:
          phase: Aborted
          reason: AbortRescued
          canaryWeight: 0
          primaryWeight: 100
          canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
          message: "` + compose.MsgRescuedAbort + `"
  resources:
    route-httproute:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1
        kind: HTTPRoute
        metadata: {name: podinfo, namespace: test}
        spec:
          parentRefs: [{name: gateway, namespace: istio-ingress}]
          rules:
            - matches: [{path: {type: PathPrefix, value: /}}]
              backendRefs:
                - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}
                - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}
    service-primary:
      ready: READY_TRUE
      resource:
        apiVersion: v1
        kind: Service
        metadata: {name: podinfo-primary, namespace: test}
        spec: {type: ClusterIP, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}
    referencegrant-monitoring:
      ready: READY_TRUE
      resource:
        apiVersion: gateway.networking.k8s.io/v1beta1
        kind: ReferenceGrant
        metadata: {name: httproute.podinfo.test, namespace: monitoring}
        spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}
results:
  - severity: SEVERITY_WARNING
    reason: RolloutAborted
    target: TARGET_COMPOSITE_AND_CLAIM
    message: "spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"
conditions:
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: RolloutHealthy, status: STATUS_CONDITION_FALSE, reason: Aborted, message: "` + compose.MsgRescuedAbort + `", target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + externalNameRefused + `", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
		"WithoutRecordedCanaryIsFatal": {
			reason: "Without status.rollout.canaryBackends the function cannot tell the canary's backends from the primary's, and never guesses by name: the Fatal stands, and Crossplane applies nothing.",
			args: args{
				xr:       abortedFlagger,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "` + externalNameRefused + `"
conditions:
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + externalNameRefused + `", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
		"CanaryBackendsNamingThePrimaryAsObserved": {
			reason: "A status.rollout.canaryBackends that names the primary's proxy Service (as Crossplane observes it under service-primary) is not trusted: the rescue cannot tell the canary apart, so it composes nothing new (the Fatal stands, Crossplane applies nothing) and says so in a Warning, rather than zeroing the primary.",
			args: args{
				xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 9898}`),
				observed: map[string]string{
					"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"service-primary": observedPrimary,
				},
			},
			want: abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
		},
		"AbortNotAppliedWarnsOnce": {
			reason: "A Fatal leaves status.rollout alone, but the conditions the function re-sends say that an earlier run already warned: the Warning is not sent again on every reconcile.",
			args: args{
				xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 9898}`) +
					"  conditions:\n    - {type: RolloutHealthy, status: \"False\", reason: AbortNotApplied, message: earlier, lastTransitionTime: \"2026-12-02T10:00:00Z\"}\n",
				observed: map[string]string{
					"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"service-primary": observedPrimary,
				},
			},
			want: strings.Replace(abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
				"  - severity: SEVERITY_WARNING\n    reason: AbortNotApplied\n    target: TARGET_COMPOSITE_AND_CLAIM\n    message: \"spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names Service test/podinfo-primary, which carries the primary's traffic. Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand\"\n", "", 1),
		},
		"CanaryBackendsNamingThePrimaryOfTheSpec": {
			reason: "A primary backendRef resolved from the spec (defaults applied: core group, kind Service, the route's namespace) is never taken for the canary either.",
			args: args{
				xr: strings.Replace(abortedFlagger, "    service:\n      selector: {app: podinfo}", "    backendRef: {name: podinfo-stable, port: 9898}", 1) +
					forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-stable}`),
				observed: map[string]string{"route-httproute": strings.Replace(ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"{group: \"\", kind: Service, name: podinfo-primary, port: 9898, weight: 80}", "{name: podinfo-stable, port: 9898, weight: 80}", 1)},
			},
			want: abortNotApplied("Service test/podinfo-stable, which carries the primary's traffic", externalNameRefused),
		},
		"EveryBackendOfAWeightedRuleRecorded": {
			reason: "canaryBackends that name every backend of a weighted rule (which always holds the primary) cannot be told from the primary when neither the spec (its primary does not decode) nor a proxy Service says which one the primary is.",
			args: args{
				xr: strings.Replace(abortedFlagger, "    service:\n      selector: {app: podinfo}", "    backendRef: {name: 1}", 1) +
					forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary}`, `{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`),
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: abortNotApplied("Service test/podinfo-primary, Service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", "invalid CanaryRoute: spec.primary.backendRef.name: Invalid value: must be a string, not number"),
		},
		"ObservedWeightOutOfRange": {
			reason: "An observed weight that does not fit the route's int32 field (2^32+80, which only a forged observation carries: the API server caps weights at 1,000,000) is refused, never wrapped to 80: the route as last observed cannot be re-emitted, so the rescue gives up as for a route that does not decode, and the Fatal stands.",
			args: args{
				xr: abortedFlagger + recordedCanary,
				observed: map[string]string{
					"route-httproute": ownRoute("crossplane.io/composite: podinfo", 4294967376, 20),
					"service-primary": observedPrimary,
				},
			},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "` + externalNameRefused + `"
conditions:
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + externalNameRefused + `", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
		"OddBackendsNeverPanic": {
			reason: "An observed route with backends of odd shapes (null, a string) does not decode into an HTTPRoute: the rescue gives up without a panic, and the Fatal stands.",
			args: args{
				xr:       abortedFlagger + recordedCanary,
				observed: map[string]string{"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [null, "canary-proxy", {name: canary-proxy, namespace: monitoring, weight: 20}]}]}}`},
			},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"
conditions:
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + externalNameRefused + `", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.args.xr, allowMonitoring, tc.args.observed)
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(responseYAML(t, tc.want), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// externalNameRefused is why abortedFlagger cannot be composed.
const externalNameRefused = "CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"

// forgedCanaryBackends is a status whose canaryBackends name the given
// backends (YAML flow objects).
func forgedCanaryBackends(backends ...string) string {
	return `
status:
  rollout:
    phase: Stable
    canaryWeight: 20
    primaryWeight: 80
    canaryBackends: [` + strings.Join(backends, ", ") + `]
`
}

// abortNotApplied is the answer to an abort whose recorded canary backends
// name the primary, or are borne out by no rule of the route (what says
// which, and why): the Fatal stands, a Warning says why the abort was not
// applied, and RolloutHealthy says so too.
func abortNotApplied(what, cause string) string {
	msg := "spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names " + what +
		". Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand"
	return `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_WARNING
    reason: AbortNotApplied
    target: TARGET_COMPOSITE_AND_CLAIM
    message: "` + msg + `"
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "` + cause + `"
conditions:
  - {type: RolloutHealthy, status: STATUS_CONDITION_FALSE, reason: AbortNotApplied, message: "` + msg + `", target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + cause + `", target: TARGET_COMPOSITE_AND_CLAIM}
`
}

// TestRescueUnderCrossplaneLoop: an abort whose cause shows only once
// Crossplane hands over the required resources (the canary's new proxy
// Service would take the name of another team's Service: the takeover
// Fatal). Crossplane applies a response once its requirements equal the
// call before's, so the rescue makes the requirements of the call before
// it; a rescue without them would send Crossplane back for a call that
// composes again, until it gives up the reconcile and the abort is never
// applied.
func TestRescueUnderCrossplaneLoop(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
	for range 3 {
		s.run(30 * time.Second)
	}
	if st, _ := s.status["rollout"].(map[string]any); st["canaryWeight"] != float64(10) {
		t.Fatalf("setup: the canary is not at 10%%: %v", st)
	}
	s.objects["v1|Service|test|podinfo-canary"] = map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "podinfo-canary", "namespace": "test", "labels": map[string]any{"team": "other"}},
		"spec":     map[string]any{"selector": map[string]any{"app": "other"}, "ports": []any{map[string]any{"port": float64(80)}}},
	}
	s.setSpec("canary.backendRef", nil)
	s.setSpec("canary.service", map[string]any{"selector": map[string]any{"app": "podinfo", "track": "canary"}})
	s.setSpec("traffic.abort", true)
	r := s.run(30 * time.Second) // Fails the test if the requirements do not settle.
	if r.fatal != "" {
		t.Fatalf("the abort was not rescued: %s", r.fatal)
	}
	if r.out["phase"] != "Aborted" || r.out["reason"] != "AbortRescued" || r.out["canaryWeight"] != float64(0) {
		t.Errorf("after the rescued abort: phase %v, reason %v, canary %v%%; want Aborted, AbortRescued, 0%%", r.out["phase"], r.out["reason"], r.out["canaryWeight"])
	}
}
