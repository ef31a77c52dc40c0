package main

// The emergency abort of a CanaryRoute that cannot be composed: what the
// last good run composed, with the canary at 0%, never blocked by an
// unrelated mistake; and never trusting a record of the canary that the
// route does not bear out. FuzzAbortRescue (fuzz_test.go) throws arbitrary
// routes and records at it.

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
)

// abortedFlagger is the Flagger scenario with abort set and a canary that the
// Input no longer allows (an ExternalName without allowExternalNames): a
// spec that cannot be composed.
var abortedFlagger = strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: canary.example.net"),
	"    weight: 20", "    weight: 20\n    abort: true", 1)

// externalNameRefused is why abortedFlagger cannot be composed.
const externalNameRefused = "CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"

// recordedCanary is the status a good run of the Flagger scenario at 20%
// wrote: its canary backend, and a condition of the function's.
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

// observedFlagger are the Flagger scenario's objects as a good run at
// 80/20 composed them.
var observedFlagger = map[string]string{
	"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
	"service-primary":           observedPrimary,
	"referencegrant-monitoring": observedGrant,
}

// rescuedFlagger is the answer to the abort of abortedFlagger over
// observedFlagger: the route as last observed with the canary at 0 and its
// A/B rule and mirror removed, the Service and the grant as composed, the
// trusted canaryBackends (a YAML flow list) recorded, a Warning, the
// conditions the XR had (kept, YAML list items) re-sent.
func rescuedFlagger(canaryBackends, kept string) string {
	return `
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
          canaryBackends: ` + canaryBackends + `
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
    message: "spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: ` + externalNameRefused + `"
conditions:
` + kept + `  - {type: RolloutHealthy, status: STATUS_CONDITION_FALSE, reason: Aborted, message: "` + compose.MsgRescuedAbort + `", target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + externalNameRefused + `", target: TARGET_COMPOSITE_AND_CLAIM}
`
}

// grantsReadyKept is recordedCanary's condition, re-sent.
const grantsReadyKept = "  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: composed, target: TARGET_COMPOSITE_AND_CLAIM}\n"

// fatalResponse is a Fatal with a message, re-sending the conditions the XR
// had (kept, YAML list items).
func fatalResponse(msg, kept string) string {
	return `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "` + msg + `"
conditions:
` + kept + `  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "` + msg + `", target: TARGET_COMPOSITE_AND_CLAIM}
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

// TestRescueAbort compares whole responses: what the rescue composes and
// says is all Crossplane applies, and the record of the canary is status,
// which anyone who may write the XR's status can forge.
func TestRescueAbort(t *testing.T) {
	// podinfoRescue is a namespaced CanaryRoute that cannot be composed
	// (weight 120) with abort set, its primary as given, whose record
	// names test/podinfo: the primary of the observed podinfoRoute.
	podinfoRescue := func(primary string) string {
		return namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  `+primary+`
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 120, abort: true}
`) + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo}`)
	}
	podinfoRoute := map[string]string{"route-httproute": routeAt(
		`{group: "", kind: Service, name: podinfo, port: 9898, weight: 80}`,
		`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 20}`)}
	const weight120 = "invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent from 0 to 100 with at most two decimals"
	const canary = `{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`
	cases := map[string]struct {
		reason string
		args   runArgs // input: allowMonitoring when ""
		want   string
	}{
		"RescuesTheLastRoute": {
			reason: "With abort set, a spec that cannot be composed still sends the canary to 0%: the route as last observed, the recorded canary backend at 0, the A/B rule and the mirror to the canary removed, the other objects kept as composed (identity and spec, nothing the API server added); a Warning says why, RolloutHealthy is False with reason Aborted, the other conditions are re-sent.",
			args:   runArgs{xr: abortedFlagger + recordedCanary, observed: observedFlagger},
			want:   rescuedFlagger("["+canary+"]", grantsReadyKept),
		},
		"WithoutRecordedCanaryIsFatal": {
			reason: "Without status.rollout.canaryBackends the function cannot tell the canary's backends from the primary's, and never guesses by name: the Fatal stands, and Crossplane applies nothing.",
			args: runArgs{
				xr:       abortedFlagger,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: fatalResponse(externalNameRefused, ""),
		},
		"CanaryBackendsNamingThePrimaryAsObserved": {
			reason: "A status.rollout.canaryBackends that names the primary's proxy Service (as Crossplane observes it under service-primary) is not trusted: the rescue cannot tell the canary apart, so it composes nothing new (the Fatal stands, Crossplane applies nothing) and says so in a Warning, rather than zeroing the primary.",
			args: runArgs{
				xr:       abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 9898}`),
				observed: observedFlagger,
			},
			want: abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
		},
		"AbortNotAppliedWarnsOnce": {
			reason: "A Fatal leaves status.rollout alone, but the conditions the function re-sends say that an earlier run already warned: the Warning is not sent again on every reconcile.",
			args: runArgs{
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
			args: runArgs{
				xr: strings.Replace(abortedFlagger, "    service:\n      selector: {app: podinfo}", "    backendRef: {name: podinfo-stable, port: 9898}", 1) +
					forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-stable}`),
				observed: map[string]string{"route-httproute": strings.Replace(ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"{group: \"\", kind: Service, name: podinfo-primary, port: 9898, weight: 80}", "{name: podinfo-stable, port: 9898, weight: 80}", 1)},
			},
			want: abortNotApplied("Service test/podinfo-stable, which carries the primary's traffic", externalNameRefused),
		},
		"EveryBackendOfAWeightedRuleRecorded": {
			reason: "canaryBackends that name every backend of a weighted rule (which always holds the primary) cannot be told from the primary when neither the spec (its primary does not decode) nor a proxy Service says which one the primary is.",
			args: runArgs{
				xr: strings.Replace(abortedFlagger, "    service:\n      selector: {app: podinfo}", "    backendRef: {name: 1}", 1) +
					forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary}`, `{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`),
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: abortNotApplied("Service test/podinfo-primary, Service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", "invalid CanaryRoute: spec.primary.backendRef.name: Invalid value: must be a string, not number"),
		},
		"ObservedWeightOutOfRange": {
			reason: "An observed weight that does not fit the route's int32 field (2^32+80, which only a forged observation carries: the API server caps weights at 1,000,000) is refused, never wrapped to 80: the route as last observed cannot be re-emitted, so the rescue gives up as for a route that does not decode, and the Fatal stands.",
			args: runArgs{
				xr: abortedFlagger + recordedCanary,
				observed: map[string]string{
					"route-httproute": ownRoute("crossplane.io/composite: podinfo", 4294967376, 20),
					"service-primary": observedPrimary,
				},
			},
			want: fatalResponse(externalNameRefused, grantsReadyKept),
		},
		"OddBackendsNeverPanic": {
			reason: "An observed route with backends of odd shapes (null, a string) does not decode into an HTTPRoute: the rescue gives up without a panic, and the Fatal stands.",
			args: runArgs{
				xr:       abortedFlagger + recordedCanary,
				observed: map[string]string{"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [null, "canary-proxy", {name: canary-proxy, namespace: monitoring, weight: 20}]}]}}`},
			},
			want: fatalResponse(externalNameRefused, grantsReadyKept),
		},

		// Forged records: each is trusted only as far as the route bears
		// it out, the canary beside the primary.
		"RecordNamesPrimaryAndCanary": {
			reason: "Attack: a record that names the primary's proxy Service beside the real canary. The primary is dropped from the record, the canary goes to 0, and the primary keeps its weight.",
			args: runArgs{
				xr:       abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary}`, canary),
				observed: observedFlagger,
			},
			want: rescuedFlagger("["+canary+"]", ""),
		},
		"RecordRepeatsTheCanary": {
			reason: "Attack: the canary recorded four times is still the canary: it goes to 0, the primary keeps its weight, and the record is kept as written.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(canary, canary, canary, canary), observed: observedFlagger},
			want:   rescuedFlagger("["+strings.Repeat(canary+", ", 3)+canary+"]", ""),
		},
		"RecordWithoutPort": {
			reason: "A record without a port names the backend on every port: the canary goes to 0, recorded as written.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`), observed: observedFlagger},
			want:   rescuedFlagger(`[{group: "", kind: Service, namespace: monitoring, name: canary-proxy}]`, ""),
		},
		"RecordNamesThePrimaryWithoutPort": {
			reason: "Attack: the primary's proxy Service recorded without a port (on every port, the primary's too) is never zeroed.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary}`), observed: observedFlagger},
			want:   abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
		},
		"RecordNamesThePrimaryOnAnotherPort": {
			reason: "Attack: the primary's proxy Service recorded on another port is still the primary's Service.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 1}`), observed: observedFlagger},
			want:   abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
		},
		"RecordNamesThePrimaryWithoutGroup": {
			reason: "Attack: the primary's proxy Service recorded without its (empty) group is the same Service.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{kind: Service, namespace: test, name: podinfo-primary}`), observed: observedFlagger},
			want:   abortNotApplied("Service test/podinfo-primary, which carries the primary's traffic", externalNameRefused),
		},
		"RecordWithNegativePort": {
			reason: "Attack: a port no backend has names no backend of the route: nothing is zeroed and nothing claims it was.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: -1}`), observed: observedFlagger},
			want:   abortNotApplied("Service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordNamesAnotherBackend": {
			reason: "Attack: a record naming no backend of the route (a forged or stale one) must not be trusted, else nothing would be zeroed while the status says Aborted with the canary at 0%.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: monitoring, name: nothing}`), observed: observedFlagger},
			want:   abortNotApplied("Service monitoring/nothing, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordWithoutNamespace": {
			reason: "Attack: the canary's name without its namespace names no backend of the route.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, name: canary-proxy}`), observed: observedFlagger},
			want:   abortNotApplied("Service /canary-proxy, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordWithLowercaseKind": {
			reason: "Attack: kinds are case-sensitive: service is no Service.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: service, namespace: monitoring, name: canary-proxy}`), observed: observedFlagger},
			want:   abortNotApplied("service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordOnAnotherPort": {
			reason: "Attack: the canary's Service on a port the route does not use names no backend of the route.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 1}`), observed: observedFlagger},
			want:   abortNotApplied("Service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordOfAnEmptyEntry": {
			reason: "Attack: an empty entry names nothing.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{}`), observed: observedFlagger},
			want:   abortNotApplied(" /, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordOfAnOlderCanary": {
			reason: "A stale record of an older canary that the route no longer carries is not trusted either.",
			args:   runArgs{xr: abortedFlagger + forgedCanaryBackends(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy-v1, port: 3456}`), observed: observedFlagger},
			want:   abortNotApplied("Service monitoring/canary-proxy-v1, which no rule of the route holds beside the primary's backend", externalNameRefused),
		},
		"RecordNamesThePrimaryEditedAway": {
			reason: "Attack: the record names the observed route's primary test/podinfo, while the spec's primary moved to podinfo-v2 in the edit that broke the spec: the record is borne out by no rule holding it beside the primary, so the primary is never zeroed.",
			args:   runArgs{xr: podinfoRescue("primary: {backendRef: {name: podinfo-v2}}"), input: emptyInput, observed: podinfoRoute},
			want:   abortNotApplied("Service test/podinfo, which no rule of the route holds beside the primary's backend", weight120),
		},
		"RecordNamesThePrimaryOfAnUndecodableSpec": {
			reason: "Attack: the same with a spec.primary that does not decode (a port written as a string), which is why the spec is refused.",
			args:   runArgs{xr: podinfoRescue(`primary: {backendRef: {name: podinfo, port: "9898"}}`), input: emptyInput, observed: podinfoRoute},
			want: abortNotApplied("Service test/podinfo, which no rule of the route holds beside the primary's backend",
				"invalid CanaryRoute: spec.primary.backendRef.port: Invalid value: must be an integer, not string"),
		},
		"RecordNamesThePrimaryNowAService": {
			reason: "Attack: the same with spec.primary turned into a service side whose proxy Service does not exist yet.",
			args:   runArgs{xr: podinfoRescue("primary: {service: {selector: {app: podinfo}}}"), input: emptyInput, observed: podinfoRoute},
			want:   abortNotApplied("Service test/podinfo, which no rule of the route holds beside the primary's backend", weight120),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			input := tc.args.input
			if input == "" {
				input = allowMonitoring
			}
			req, rsp := runFunction(t, tc.args.xr, input, tc.args.observed, nil)
			if diff := cmp.Diff(responseYAML(t, tc.want), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// ownRulesXR is a cluster-scoped CanaryRoute whose first rule is one of its
// own (rule, YAML at the rules' indentation), whose canary is the Service
// podinfo-canary, at 20%, with abort and whatever else traffic holds.
func ownRulesXR(rule, traffic string) string {
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  rules:
` + rule + `
    - name: api
  primary: {service: {selector: {app: podinfo}}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 20, abort: true` + traffic + `}
`
}

// recordedCanaryStatus is a status whose canaryBackends name the given
// backends, as a good run at 20% recorded them.
func recordedCanaryStatus(backends ...string) string {
	return `status:
  rollout:
    phase: Stable
    reason: Manual
    canaryWeight: 20
    primaryWeight: 80
    canaryBackends: [` + strings.Join(backends, ", ") + `]
`
}

const podinfoCanaryID = `{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`

// observedOwnRoute is the route a good run at 20% composed: the rule of its
// own first (its backendRefs as the API server returns them), then the
// weighted rule.
func observedOwnRoute(ruleName, path string, refs ...string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - name: ` + ruleName + `
      matches: [{path: {type: PathPrefix, value: ` + path + `}}]
      backendRefs: [` + strings.Join(refs, ", ") + `]
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}, {group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 20}]
`
}

// TestAbortWithRulesOfTheirOwn: docs/reference.md, "An abort, or a Failed
// rollout, leaves these rules alone unless they send traffic to the
// canary", and "An emergency abort is never blocked". The same whether the
// spec can be composed (the abort, ValidSpec) or not (the rescue,
// BrokenSpec: an unknown field).
func TestAbortWithRulesOfTheirOwn(t *testing.T) {
	const broken = ", wieght: 3"
	preview := `    - name: preview
      matches: [{path: {type: PathPrefix, value: /preview}}]
      backendRefs: [{name: podinfo-canary, port: 9898}]`
	observedPreview := map[string]string{
		"route-httproute": observedOwnRoute("preview", "/preview", `{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 1}`),
		"service-primary": observedPrimary,
	}
	drain := `    - name: drain
      matches: [{path: {type: PathPrefix, value: /drain}}]
      backendRefs: [{name: legacy, port: 80, weight: 0}]`
	observedDrain := map[string]string{
		"route-httproute": observedOwnRoute("drain", "/drain", `{group: "", kind: Service, name: legacy, port: 80, weight: 0}`),
		"service-primary": observedPrimary,
	}
	beta := `    - name: beta
      matches: [{path: {type: PathPrefix, value: /beta}}]
      backendRefs: [{name: podinfo-canary, port: 9898, weight: 50}, {name: legacy, port: 80, weight: 50}]`
	observedBeta := map[string]string{
		"route-httproute": observedOwnRoute("beta", "/beta", `{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`, `{group: "", kind: Service, name: legacy, port: 80, weight: 50}`),
		"service-primary": observedPrimary,
	}
	status := recordedCanaryStatus(podinfoCanaryID)
	testViews(t, map[string]viewCase{
		"CanaryOnlyRuleValidSpec": {
			reason: "A rule of its own that sends /preview to the canary's Service is left out, so that \"aborted: all traffic goes to the primary\" holds.",
			args:   runArgs{xr: ownRulesXR(preview, "") + status, input: allowTest, observed: observedPreview},
			want: view{
				Results:      []string{"WARNING RolloutAborted: aborted: all traffic goes to the primary"},
				Conditions:   []string{"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=False Aborted: aborted: all traffic goes to the primary"},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=100", "Service/podinfo-canary:9898=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary", "phase": "Aborted", "primaryWeight": float64(100), "reason": "Aborted"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"CanaryOnlyRuleBrokenSpec": {
			reason: "The rescue removes the rule of its own that sends only to the canary.",
			args:   runArgs{xr: ownRulesXR(preview, broken) + status, input: allowTest, observed: observedPreview},
			want: view{
				Results:    []string{"WARNING RolloutAborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: invalid CanaryRoute: spec.traffic.wieght: Invalid value: unknown field"},
				Conditions: []string{"RolloutHealthy=False Aborted: aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"},
				Resources:  []string{"route-httproute", "service-primary"},
				Ready:      map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:    [][]string{{"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=0"}},
				Rollout:    map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed", "phase": "Aborted", "primaryWeight": float64(100), "reason": "AbortRescued"},
				TTL:        time.Minute,
			},
		},
		"DrainedRuleValidSpec": {
			reason: "A drained rule of its own (every weight 0: the gateway answers 500 there) never sent to the canary: the abort composes it as written, instead of giving its backend all of /drain, and the weighted rule with the canary at 0.",
			args:   runArgs{xr: ownRulesXR(drain, "") + status, input: allowTest, observed: observedDrain},
			want: view{
				Results:      []string{"WARNING RolloutAborted: aborted: all traffic goes to the primary"},
				Conditions:   []string{"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=False Aborted: aborted: all traffic goes to the primary"},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:      [][]string{{"Service/legacy:80=0"}, {"Service/podinfo-primary:9898=100", "Service/podinfo-canary:9898=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary", "phase": "Aborted", "primaryWeight": float64(100), "reason": "Aborted"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"DrainedRuleBrokenSpec": {
			reason: "The rescue keeps the route as last observed, the canary at 0 and the drained rule as it was.",
			args:   runArgs{xr: ownRulesXR(drain, broken) + status, input: allowTest, observed: observedDrain},
			want: view{
				Results:    []string{"WARNING RolloutAborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: invalid CanaryRoute: spec.traffic.wieght: Invalid value: unknown field"},
				Conditions: []string{"RolloutHealthy=False Aborted: aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"},
				Resources:  []string{"route-httproute", "service-primary"},
				Ready:      map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:    [][]string{{"Service/legacy:80=0"}, {"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=0"}},
				Rollout:    map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed", "phase": "Aborted", "primaryWeight": float64(100), "reason": "AbortRescued"},
				TTL:        time.Minute,
			},
		},
		"SplitRuleBrokenSpec": {
			reason: "A rule of its own that splits /beta between the canary and a legacy Service does not stop the rescue: the canary, trusted because the weighted rule holds it beside the primary, gets nothing in either rule, and the legacy Service all of /beta.",
			args:   runArgs{xr: ownRulesXR(beta, broken) + status, input: allowTest, observed: observedBeta},
			want: view{
				Results:    []string{"WARNING RolloutAborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: invalid CanaryRoute: spec.traffic.wieght: Invalid value: unknown field"},
				Conditions: []string{"RolloutHealthy=False Aborted: aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"},
				Resources:  []string{"route-httproute", "service-primary"},
				Ready:      map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:    [][]string{{"Service/podinfo-canary:9898=0", "Service/legacy:80=50"}, {"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=0"}},
				Rollout:    map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed", "phase": "Aborted", "primaryWeight": float64(100), "reason": "AbortRescued"},
				TTL:        time.Minute,
			},
		},
	})
}

// TestRescueDistrustsRecordNamingRuleOfItsOwnBackend: "the abort trusts a
// canary record only where the primary (as the spec resolves it or as
// observed) stands beside it". Attack: a forged canaryBackends naming the
// CDN Service of the /assets rule of its own is borne out by no rule
// weighing it against the primary: the abort is not applied (and says so),
// rather than deleting /assets, leaving the real canary at 20% and writing
// "all traffic goes to the primary".
func TestRescueDistrustsRecordNamingRuleOfItsOwnBackend(t *testing.T) {
	cdn := `{group: "", kind: Service, namespace: test, name: cdn-cache, port: 80}`
	cases := map[string]struct {
		reason   string
		rule     string
		observed string // the observed route
	}{
		"SingleBackend": {
			reason: "The rule of its own's only backend.",
			rule: `    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: cdn-cache, port: 80}]`,
			observed: observedOwnRoute("static", "/assets", `{group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`),
		},
		"BesideThePrimary": {
			reason: "The shape of a weighted rule, but a rule of its own by name: it bears nothing out.",
			rule: `    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]`,
			observed: observedOwnRoute("static", "/assets", `{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 1}, {group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`),
		},
		"UnnamedBesideThePrimary": {
			reason: "A rule of its own needs no name: where the spec puts it says it is no weighted rule.",
			rule: `    - matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]`,
			observed: strings.Replace(observedOwnRoute("static", "/assets",
				`{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 1}, {group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`),
				"    - name: static\n      matches", "    - matches", 1),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := runFunction(t, ownRulesXR(tc.rule, ", wieght: 3")+recordedCanaryStatus(cdn), allowTest,
				map[string]string{"route-httproute": tc.observed, "service-primary": observedPrimary}, nil)
			want := abortNotApplied("Service test/cdn-cache, which no rule of the route holds beside the primary's backend",
				"invalid CanaryRoute: spec.traffic.wieght: Invalid value: unknown field")
			if diff := cmp.Diff(responseYAML(t, want), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
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
	s.add(`{apiVersion: v1, kind: Service, metadata: {name: podinfo-canary, namespace: test, labels: {team: other}}, spec: {selector: {app: other}, ports: [{port: 80}]}}`)
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
	if diff := cmp.Diff([][]string{{"Service/podinfo:9898=90", "Service/podinfo-canary:9898=0"}}, viewOf(t, r.rsp).Weights); diff != "" {
		t.Errorf("the rescued route, as last composed with the canary at 0: -want, +got:\n%s", diff)
	}
}

// TestRescuedAbortWarnsOnce: each transition is one event, emitted on the
// run that makes it, never repeated by runs that change nothing. An
// emergency abort of a CanaryRoute that cannot be composed warns once, on
// the run that rescues it.
func TestRescuedAbortWarnsOnce(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
	for range 3 {
		s.run(0)
	}
	// The spec breaks (a host name the Gateway API refuses) and the user
	// aborts.
	s.setSpec("hostnames", []any{"NOT A HOST"})
	s.setSpec("traffic.abort", true)
	for range 4 {
		s.run(0)
	}
	var warnings []string
	for _, r := range s.runs[3:] {
		if r.out["reason"] != "AbortRescued" {
			t.Fatalf("setup: the abort was not rescued at %s:\n%s", r.at.Format(time.TimeOnly), s.describe())
		}
		for _, e := range r.events {
			if strings.HasPrefix(e, "WARNING") {
				warnings = append(warnings, r.at.Format(time.TimeOnly)+" "+e)
			}
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "WARNING RolloutAborted: spec.traffic.abort is set") {
		t.Errorf("the rescued abort warns %d times over 4 runs, want once, on the first:\n%s", len(warnings), strings.Join(warnings, "\n"))
	}
	if q := quietRuns(s, 4); len(q) > 0 {
		t.Errorf("runs that changed nothing sent events: %v", q)
	}
}
