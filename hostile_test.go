package main

// Attacks on the safety rules at their seams (pause x policy, claims x
// namespaces, status x XRD limits, hostile and forged status), from a hostile
// review: each is a way the rules were, or might have been, broken, and a
// t.Error says which rule.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// attackRun runs the function in process on an XR, an Input, observed
// composed resources and required resources (nil: not answered at all).
func attackRun(t *testing.T, xrYAML, input string, observed map[string]string, required map[string][]string) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse) {
	t.Helper()
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	req := testRequest(t, xrYAML, input, observed)
	if required != nil {
		req.RequiredResources = map[string]*fnv1.Resources{}
		for name, objs := range required {
			rs := &fnv1.Resources{}
			for _, o := range objs {
				rs.Items = append(rs.Items, &fnv1.Resource{Resource: toStruct(t, o)})
			}
			req.RequiredResources[name] = rs
		}
	}
	rsp, err := f.RunFunction(context.Background(), req)
	if err != nil {
		t.Fatalf("RunFunction: unexpected error: %v", err)
	}
	return req, rsp
}

// logView prints the response's view.
func logView(t *testing.T, rsp *fnv1.RunFunctionResponse) view {
	t.Helper()
	v := viewOf(t, rsp)
	b, _ := json.MarshalIndent(v, "", "  ")
	t.Logf("view:\n%s", b)
	return v
}

// canaryShare is the share of a route's weighted rule (the last rule with
// more than one backend, or the only backend) that a named backend gets.
func shareOf(t *testing.T, rsp *fnv1.RunFunctionResponse, key, name string) (share float64, found bool) {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		return 0, false
	}
	spec, _ := r.GetResource().AsMap()["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	for _, ru := range rules {
		rule, _ := ru.(map[string]any)
		refs, _ := rule["backendRefs"].([]any)
		var total, mine float64
		hit := false
		for _, b := range refs {
			ref, _ := b.(map[string]any)
			w := 1.0
			if x, ok := ref["weight"].(float64); ok {
				w = x
			}
			total += w
			if ref["name"] == name {
				mine += w
				hit = true
			}
		}
		if hit && len(refs) > 1 && total > 0 {
			return mine / total, true
		}
	}
	return 0, false
}

// ---------------------------------------------------------------------------
// 1. Abort rescue: canaryBackends naming the primary as observed.

// routeAt is an observed HTTPRoute test/podinfo of the XR podinfo whose
// weighted rule carries the given backendRefs (YAML flow objects).
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

// TestHostileRescuePrimaryAsObserved: the observed route's primary is Service
// test/podinfo (weight 80), its canary test/podinfo-canary (20). The spec's
// primary no longer resolves to test/podinfo (edited in the same change that
// broke the spec, or undecodable), and status.rollout.canaryBackends names
// test/podinfo. the reference: canaryBackends "is trusted only where it does not
// name the primary side's backend (as the spec resolves it, or as observed)".
func TestHostileRescuePrimaryAsObserved(t *testing.T) {
	status := `
status:
  rollout:
    phase: Stable
    canaryWeight: 20
    primaryWeight: 80
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo}]
`
	observed := map[string]string{"route-httproute": routeAt(
		`{group: "", kind: Service, name: podinfo, port: 9898, weight: 80}`,
		`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 20}`)}
	cases := map[string]string{
		// The platform promoted in the same edit that broke the spec.
		"PrimaryEdited": "primary: {backendRef: {name: podinfo-v2}}",
		// spec.primary does not decode, which is why the spec is refused.
		"PrimaryUndecodable": "primary: {backendRef: {name: podinfo, port: \"9898\"}}",
		// spec.primary turned into a service side, no proxy Service yet.
		"PrimaryNowService": "primary: {service: {selector: {app: podinfo}}}",
	}
	for name, primary := range cases {
		t.Run(name, func(t *testing.T) {
			x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  `+primary+`
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 120, abort: true}
`) + status
			_, rsp := attackRun(t, x, emptyInput, observed, nil)
			logView(t, rsp)
			if s, ok := shareOf(t, rsp, "route-httproute", "podinfo-canary"); ok && s > 0.2 {
				t.Errorf("the rescue sends %.0f%% of the traffic to the canary podinfo-canary (it had 20%%): the record named the observed primary test/podinfo and was trusted", s*100)
			}
		})
	}
}

// TestHostileRescueRecordMatchesNothing: a recorded canary backend that names
// no backend of the observed route (a forged or stale record: another
// namespace, a lowercase kind, another port) is "trusted", nothing is
// zeroed, yet the answer says Aborted with the canary at 0%.
func TestHostileRescueRecordMatchesNothing(t *testing.T) {
	cases := map[string]string{
		"OtherName":      `{group: "", kind: Service, namespace: monitoring, name: nothing}`,
		"NoNamespace":    `{group: "", kind: Service, name: canary-proxy}`,
		"LowercaseKind":  `{group: "", kind: service, namespace: monitoring, name: canary-proxy}`,
		"OtherPort":      `{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 1}`,
		"EmptyEntry":     `{}`,
		"StaleOldCanary": `{group: "", kind: Service, namespace: monitoring, name: canary-proxy-v1, port: 3456}`,
	}
	for name, entry := range cases {
		t.Run(name, func(t *testing.T) {
			x := abortedFlagger + forgedCanaryBackends(entry)
			_, rsp := attackRun(t, x, allowMonitoring, map[string]string{
				"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
				"service-primary":           observedPrimary,
				"referencegrant-monitoring": observedGrant,
			}, nil)
			v := logView(t, rsp)
			s, ok := shareOf(t, rsp, "route-httproute", "canary-proxy")
			if ok && s > 0 && v.Rollout["phase"] == "Aborted" && v.Rollout["canaryWeight"] == float64(0) {
				t.Errorf("status says Aborted with canaryWeight 0 and RolloutHealthy says all traffic goes to the primary, but the route applied keeps %.0f%% on the canary (and its A/B rule and mirror)", s*100)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 2. Holds under the policy of now.

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

// TestHostileHoldZeroesOldPrimary: paused at 50% with revision v2; the
// platform moves spec.primary to a new backend and starts revision v3 in one
// edit (a hold), while the Input no longer allows the old primary's
// namespace. The held route zeroes the old primary, so the old canary gets
// every request, and the status says the canary is at 0%.
func TestHostileHoldZeroesOldPrimary(t *testing.T) {
	x := `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v2}}
  canary: {backendRef: {name: canary-proxy-v3, namespace: monitoring, port: 3456}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
` + pausedStatus(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`)
	observed := map[string]string{
		"route-httproute": routeAt(
			`{group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 50}`,
			`{group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 50}`),
	}
	req, rsp := attackRun(t, x, allowMonitoring, observed, nil)
	v := logView(t, rsp)
	assertXRDAccepts(t, req, rsp)
	if s, ok := shareOf(t, rsp, "route-httproute", "canary-proxy"); ok && s > 0.5 {
		t.Errorf("the held route sends %.0f%% to the old canary (it had 50%%, paused); status says canaryWeight=%v, message %q", s*100, v.Rollout["canaryWeight"], v.Rollout["message"])
	}
}

// TestHostileHoldReemitsDeniedExternalName: paused at 50% with a canary
// ExternalName proxy Service to evil.example.com; the Input now denies
// evil.example.com (deniedExternalNames), and the canary is changed to
// another host (a hold). The hold re-emits the ExternalName Service to the
// denied host and keeps 50% on it.
func TestHostileHoldReemitsDeniedExternalName(t *testing.T) {
	cases := map[string]struct{ input, canary string }{
		"DeniedNow": {
			input:  allowTest + "allowExternalNames: true\ndeniedExternalNames: [evil.example.com]\n",
			canary: "canary: {externalName: good.example.net, revision: v2}",
		},
		"ExternalNamesRevoked": {
			input:  allowTest,
			canary: "canary: {backendRef: {name: podinfo-v3, port: 9898}, revision: v3}",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {service: {selector: {app: podinfo}}}
  ` + tc.canary + `
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
` + pausedStatus(`{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`)
			observed := map[string]string{
				"route-httproute": routeAt(
					`{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 50}`,
					`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`),
				"service-primary": `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, labels: {crossplane.io/composite: podinfo}}, spec: {type: ClusterIP, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}}`,
				"service-canary":  `{apiVersion: v1, kind: Service, metadata: {name: podinfo-canary, namespace: test, labels: {crossplane.io/composite: podinfo}}, spec: {type: ExternalName, externalName: evil.example.com., ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}}`,
			}
			_, rsp := attackRun(t, x, tc.input, observed, nil)
			v := logView(t, rsp)
			svc, ok := rsp.GetDesired().GetResources()["service-canary"]
			if !ok {
				return
			}
			spec, _ := svc.GetResource().AsMap()["spec"].(map[string]any)
			s, _ := shareOf(t, rsp, "route-httproute", "podinfo-canary")
			if spec["externalName"] == "evil.example.com." && s > 0 {
				t.Errorf("the hold re-emits the ExternalName Service to %v that the Input now refuses, with %.0f%% of the traffic (status: %v %v%%)", spec["externalName"], s*100, v.Rollout["phase"], v.Rollout["canaryWeight"])
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 3. The canary digest at the seam with the older release.

func TestHostileDeterminism(t *testing.T) {
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	reqs := map[string]*fnv1.RunFunctionRequest{
		"Flagger": testRequest(t, flaggerXR, allowMonitoring, nil),
		"Rescue": testRequest(t, abortedFlagger+recordedCanary, allowMonitoring, map[string]string{
			"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
			"service-primary":           observedPrimary,
			"referencegrant-monitoring": observedGrant,
		}),
		"RescueTwoRoutes": testRequest(t, abortedFlagger+recordedCanary, allowMonitoring, map[string]string{
			"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
			"route-grpcroute":           strings.Replace(strings.Replace(ownRoute("crossplane.io/composite: podinfo", 80, 20), "HTTPRoute", "GRPCRoute", 1), "matches: [{path: {type: PathPrefix, value: /}}]", "matches: [{method: {service: a}}]", 1),
			"service-primary":           observedPrimary,
			"referencegrant-monitoring": observedGrant,
		}),
	}
	holdXR := strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, port: 3456}\n    revision: v3"),
		"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1) + pausedAtStep1
	reqs["Hold"] = testRequest(t, holdXR, allowTest, map[string]string{
		"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 50, 50),
		"service-primary":           observedPrimary,
		"referencegrant-monitoring": observedGrant,
		"referencegrant-keda":       strings.Replace(observedGrant, "namespace: monitoring", "namespace: keda", 1),
	})
	reqs["RescueForgedMany"] = testRequest(t, abortedFlagger+forgedCanaryBackends(
		`{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`, `{group: "", kind: Service, namespace: test, name: podinfo-primary}`,
		`{kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`, `{}`), allowMonitoring, map[string]string{
		"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
		"service-primary":           observedPrimary,
		"referencegrant-monitoring": observedGrant,
	})
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			var first []byte
			for i := range 50 {
				rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
				if err != nil {
					t.Fatal(err)
				}
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = b
					continue
				}
				if !bytes.Equal(b, first) {
					t.Fatalf("run %d differs from run 0", i)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Claims x namespaces.

// TestHostileClaims runs claimedXR in kube-system (not allowed) with required
// answers of several shapes; every one must be a Fatal naming spec.claimRef.
func TestHostileClaims(t *testing.T) {
	good := claimObject("kube-system", "podinfo-x7k2p")
	cases := map[string]struct {
		xr       string
		required map[string][]string
		proven   bool // the contract says the XR routes in kube-system
		// design: unanswered means "first call of the reconcile", whose
		// answer Crossplane never applies (its requirements differ from
		// none); not a break under Crossplane's loop.
		design bool
	}{
		"AnsweredEmpty":         {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {}}},
		"OtherRequirementsOnly": {xr: claimedXR("kube-system"), required: map[string][]string{"existing-route-httproute": {}}, design: true},
		"ClaimOtherKind": {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {
			strings.Replace(good, "kind: CanaryRouteClaim", "kind: ConfigMap", 1),
		}}},
		"ClaimOtherNamespace": {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {claimObject("team-a", "podinfo-x7k2p")}}},
		"ClaimOtherXRKind": {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {
			strings.Replace(good, "kind: XCanaryRoute", "kind: XOther", 1),
		}}},
		"ClaimResourceRefNoAPIVersion": {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {
			strings.Replace(good, "apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute", "kind: XCanaryRoute", 1),
		}}},
		"ClaimRefNoKind": {xr: strings.Replace(claimedXR("kube-system"), "kind: CanaryRouteClaim, ", "", 1), required: map[string][]string{"claim": {good}}},
		"ClaimRefNoName": {xr: strings.Replace(claimedXR("kube-system"), "name: podinfo, ", "", 1), required: map[string][]string{"claim": {good}}},
		"ClaimRefWithSpecNamespace": {
			xr:       strings.Replace(claimedXR("kube-system"), "  port: 9898", "  namespace: kube-system\n  port: 9898", 1),
			required: map[string][]string{"claim": {}},
		},
		"TwoClaimsOneGood": {xr: claimedXR("kube-system"), required: map[string][]string{"claim": {claimObject("kube-system", "other"), good}}, proven: true},
		"XRWithoutName": {
			xr:       strings.Replace(claimedXR("kube-system"), "metadata: {name: podinfo-x7k2p}", "metadata: {}", 1),
			required: map[string][]string{"claim": {strings.Replace(good, "name: podinfo-x7k2p", `name: ""`, 1)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, tc.xr, allowMonitoring, nil, tc.required)
			v := logView(t, rsp)
			fatal := len(v.Results) > 0 && strings.HasPrefix(v.Results[len(v.Results)-1], "FATAL")
			composedInKubeSystem := false
			if r, ok := rsp.GetDesired().GetResources()["route-httproute"]; ok {
				md, _ := r.GetResource().AsMap()["metadata"].(map[string]any)
				composedInKubeSystem = md["namespace"] == "kube-system"
			}
			if tc.design {
				t.Logf("by design (claim unanswered): composed in kube-system=%v, results %v", composedInKubeSystem, v.Results)
				return
			}
			if !tc.proven && composedInKubeSystem {
				t.Errorf("a route is composed in kube-system without a proven claim")
			}
			if !tc.proven && !fatal {
				t.Errorf("want a Fatal naming spec.claimRef, got %v", v.Results)
			}
			if !fatal {
				assertXRDAccepts(t, req, rsp)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 6. Bounded work at the new code paths.

// ---------------------------------------------------------------------------
// 7. Status within the XRD's limits.

// TestHostileStatusLimits runs progressive rollouts whose observations are
// hostile and checks the desired status against the XRD.
func TestHostileStatusLimits(t *testing.T) {
	long := strings.Repeat("ü日本\u200b", 3000)
	progressive := namespacedXR(`
  parentRefs: [{name: gateway}, {name: ` + strings.Repeat("g", 253) + `, sectionName: ` + strings.Repeat("s", 253) + `}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: ` + strings.Repeat("r", 63) + `}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 24h}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: ` + strings.Repeat("d", 253) + `, conditionType: ` + strings.Repeat("C", 316) + `, failAfter: 1m}]
`)
	statusAt := func(step int, phase, reason string) string {
		return fmt.Sprintf(`
status:
  rollout:
    phase: %s
    reason: %s
    revision: %s
    step: %d
    stepStartedAt: "2026-12-02T10:00:00Z"
    canaryWeight: 50
    primaryWeight: 50
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}]
    message: %q
`, phase, reason, strings.Repeat("r", 63), step, strings.Repeat("m", 1024))
	}
	gateObj := func(status, reason string) map[string]any {
		return map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": strings.Repeat("d", 253), "namespace": "test"},
			"status": map[string]any{"conditions": []any{map[string]any{
				"type": strings.Repeat("C", 316), "status": status, "reason": reason, "message": long, "lastTransitionTime": "2026-12-02T09:00:00Z",
			}}},
		}
	}
	hostileRoute := map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "podinfo", "namespace": "test", "generation": float64(2)},
		"status": map[string]any{"parents": []any{map[string]any{
			"parentRef": map[string]any{"name": "gateway"}, "controllerName": "x.io/y",
			"conditions": []any{map[string]any{"type": "Accepted", "status": "False", "reason": long, "message": long, "observedGeneration": float64(2), "lastTransitionTime": "2026-12-02T10:00:00Z"}},
		}}},
	}
	cases := map[string]struct {
		status string
		gate   map[string]any
	}{
		"GateFalseLongReason":   {status: statusAt(1, "Progressing", "StepAdvanced"), gate: gateObj("False", long)},
		"GateUnknownLongReason": {status: statusAt(1, "Progressing", "StepAdvanced"), gate: gateObj(long, long)},
		"HugeStepPaused":        {status: strings.Replace(statusAt(2147483647, "Paused", "Paused"), "    canaryWeight", "    canaryDigest: v2-0000000000000000\n    canaryWeight", 1)},
		"NegativeStep":          {status: statusAt(-5, "Progressing", "StepAdvanced"), gate: gateObj("True", "ok")},
		"FailedLongMessage":     {status: statusAt(1, "Failed", "GateFailed"), gate: gateObj("False", long)},
	}
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := progressive + tc.status
			if name == "HugeStepPaused" {
				x = strings.Replace(x, "failAfter: 1m}]", "failAfter: 1m}]\n    paused: true", 1)
			}
			req := testRequest(t, x, emptyInput, nil)
			o, _ := structpbNew(hostileRoute)
			req.Observed.Resources["route-httproute"] = &fnv1.Resource{Resource: o}
			if tc.gate != nil {
				g, _ := structpbNew(tc.gate)
				req.RequiredResources = map[string]*fnv1.Resources{"gate-0": {Items: []*fnv1.Resource{{Resource: g}}}}
			}
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			v := viewOf(t, rsp)
			t.Logf("results %v\nrollout message (%d runes): %.200s", v.Results, len([]rune(fmt.Sprint(v.Rollout["message"]))), v.Rollout["message"])
			for _, c := range rsp.GetConditions() {
				t.Logf("condition %s reason %d chars, message %d chars", c.GetType(), len(c.GetReason()), len(c.GetMessage()))
			}
			for _, r := range rsp.GetResults() {
				t.Logf("result %s %d chars", r.GetSeverity(), len(r.GetMessage()))
			}
			if _, err := proto.Marshal(rsp); err != nil {
				t.Errorf("the response does not marshal: %v", err)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

func structpbNew(m map[string]any) (*structpb.Struct, error) { return structpb.NewStruct(m) }

// ---------------------------------------------------------------------------
// 8. Holds of other kinds and versions.

// TestHostileHoldOtherKinds: paused with a new revision, the previous
// composition a TLSRoute or TCPRoute v1alpha2 whose canary's namespace was
// revoked, with a v1 grant holding an allowed and a revoked entry.
func TestHostileHoldOtherKinds(t *testing.T) {
	for _, kind := range []string{"TLSRoute", "TCPRoute"} {
		t.Run(kind, func(t *testing.T) {
			hostnames := ""
			if kind == "TLSRoute" {
				hostnames = "  hostnames: [www.example.com]\n"
			}
			x := `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  kind: ` + kind + `
` + hostnames + `  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo, namespace: keda}}
  canary: {backendRef: {name: canary-v3, namespace: keda}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
` + pausedStatus(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`)
			lower := strings.ToLower(kind)
			observed := map[string]string{
				"route-" + lower: `
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: ` + kind + `
metadata: {name: podinfo, namespace: test, generation: 2}
spec:
` + hostnames + `  parentRefs: [{name: gateway}]
  rules:
    - backendRefs:
        - {name: podinfo, namespace: keda, port: 9898, weight: 50}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 50}
`,
				"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1, kind: ReferenceGrant, metadata: {name: x, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: ` + kind + `, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`,
				"referencegrant-keda":       `{apiVersion: gateway.networking.k8s.io/v1, kind: ReferenceGrant, metadata: {name: x, namespace: keda}, spec: {from: [{group: gateway.networking.k8s.io, kind: ` + kind + `, namespace: test}], to: [{group: "", kind: Service, name: podinfo}, {group: example.com, kind: Other, name: o}]}}`,
			}
			input := allowTest + "allowedBackendNamespaces: [keda]\nallowedBackendKinds: [{group: \"\", kind: Service}]\ntcpRouteVersion: v1alpha2\ntlsRouteVersion: v1alpha2\n"
			req, rsp := attackRun(t, x, input, observed, nil)
			v := logView(t, rsp)
			assertXRDAccepts(t, req, rsp)
			if _, ok := rsp.GetDesired().GetResources()["referencegrant-monitoring"]; ok {
				t.Errorf("the hold re-emits the grant in revoked namespace monitoring")
			}
			if s, ok := shareOf(t, rsp, "route-"+lower, "canary-proxy"); ok && s > 0 {
				t.Errorf("the revoked canary keeps %.0f%%", s*100)
			}
			if g, ok := v.Grants["keda"]; ok && len(g) != 2 {
				t.Errorf("held keda grant: %v (the Other entry must be dropped)", g)
			}
		})
	}
}

// TestHostilePausedPolicy: paused rollouts while the Input changes.
func TestHostilePausedPolicy(t *testing.T) {
	progressive := strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}\n    revision: v2"),
		"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1)
	manual := strings.Replace(flaggerXR, "    weight: 20", "    weight: 20\n    paused: true", 1)
	cases := map[string]struct {
		xr, input string
		observed  map[string]string
		wantZero  bool
	}{
		"ProgressiveCanaryNamespaceRevoked": {
			xr: progressive + pausedAtStep1, input: allowTest, wantZero: true,
			observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
		},
		"ManualCanaryNamespaceRevoked": {
			xr: manual + pausedAtStep1, input: allowTest, wantZero: true,
			observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
		},
		"ProgressiveRouteNamespaceRevoked": {
			xr: progressive + pausedAtStep1, input: emptyInput + "allowedBackendNamespaces: [monitoring]\n",
			observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
		},
		"PausedAbortRevoked": {
			xr: strings.Replace(progressive, "paused: true", "paused: true\n    abort: true", 1) + pausedAtStep1, input: emptyInput, wantZero: true,
			observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, tc.xr, tc.input, tc.observed, nil)
			v := logView(t, rsp)
			assertXRDAccepts(t, req, rsp)
			if s, ok := shareOf(t, rsp, "route-httproute", "canary-proxy"); tc.wantZero && ok && s > 0 {
				t.Errorf("the refused canary keeps %.0f%%", s*100)
			}
			_ = v
		})
	}
}

// ---------------------------------------------------------------------------
// 9. Status the XRD admits but the function cannot read.

// TestHostileStatusXRDAdmitsFunctionRefuses: a stepStartedAt in a spelling
// that the XRD's date-time admits (lowercase t and z, as RFC 3339 allows)
// but Go's RFC 3339 parser refuses: every run is a Fatal, and no run writes
// a status that would repair it.
func TestHostileStatusXRDAdmitsFunctionRefuses(t *testing.T) {
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 100}]
`) + `
status:
  rollout:
    phase: Progressing
    revision: v2
    step: 0
    stepStartedAt: "2026-12-02t10:00:00z"
    canaryWeight: 10
    primaryWeight: 90
`
	req, rsp := attackRun(t, x, emptyInput, nil, nil)
	xrds := crdschema.XRDs(t, "example/definitions/canaryroute-namespaced.yaml", "example/definitions/canaryroute-cluster.yaml")
	errs := xrds.Validate(req.GetObserved().GetComposite().GetResource().AsMap())
	v := logView(t, rsp)
	if len(errs) == 0 && len(v.Results) > 0 && strings.HasPrefix(v.Results[0], "FATAL") {
		t.Errorf("the XRD admits status.rollout.stepStartedAt %q, but the function refuses it on every run: %s", "2026-12-02t10:00:00z", v.Results[0])
	}
}

// ---------------------------------------------------------------------------
// 10. Bounded Input errors.

// ---------------------------------------------------------------------------
// 11. Manual mode: paused while the canary changes.

// TestHostileManualPausedChangedCanary: manual mode, paused at 50% (the
// previous run's weight) with canary podinfo-canary; the canary is changed to
// podinfo-untested. "Paused means nothing moves, in every case: ... a new
// revision or a changed canary while paused: true keep the weight the
// previous run composed".
func TestHostileManualPausedChangedCanary(t *testing.T) {
	// The digest this release records for podinfo-canary (no revision).
	_, first := attackRun(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 50}
`), emptyInput, nil, nil)
	st := first.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["rollout"].(map[string]any)
	digest := st["canaryDigest"].(string)
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-untested}}
  traffic: {weight: 50, paused: true}
`) + `
status:
  rollout:
    phase: Stable
    reason: Manual
    canaryWeight: 50
    primaryWeight: 50
    canaryDigest: ` + digest + `
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}]
`
	observed := map[string]string{"route-httproute": routeAt(
		`{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}`,
		`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`)}
	_, rsp := attackRun(t, x, emptyInput, observed, nil)
	v := logView(t, rsp)
	if s, ok := shareOf(t, rsp, "route-httproute", "podinfo-untested"); ok && s > 0 {
		t.Errorf("paused (manual): the changed canary podinfo-untested gets %.0f%% at once (phase %v, message %q)", s*100, v.Rollout["phase"], v.Rollout["message"])
	}
}

// TestHostileHoldZeroesOldPrimaryKind: the natural path to the same break.
// The platform stops allowing ServiceImport backends; the XR's primary is a
// ServiceImport, which is now a Fatal, so the tenant moves the primary to a
// Service, while the rollout is paused with a new revision pending (a hold).
// The held route zeroes the old ServiceImport primary: the old canary gets
// every request, and the status says the canary is at 0%.
func TestHostileHoldZeroesOldPrimaryKind(t *testing.T) {
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v1}}
  canary: {backendRef: {name: podinfo-v3}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
`) + pausedStatus(`{group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9898}`)
	observed := map[string]string{"route-httproute": routeAt(
		`{group: multicluster.x-k8s.io, kind: ServiceImport, name: podinfo, port: 9898, weight: 50}`,
		`{group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}`)}
	req, rsp := attackRun(t, x, emptyInput+"allowedBackendKinds: [{group: \"\", kind: Service}]\n", observed, nil)
	v := logView(t, rsp)
	assertXRDAccepts(t, req, rsp)
	if s, ok := shareOf(t, rsp, "route-httproute", "podinfo-v2"); ok && s > 0.5 {
		t.Errorf("the held route sends %.0f%% to the old canary podinfo-v2 (it had 50%%, paused); status says canaryWeight=%v, message %q", s*100, v.Rollout["canaryWeight"], v.Rollout["message"])
	}
}

// TestHostileRescueForgedShapes: canaryBackends forged in the shapes the XRD
// admits, with the primary's proxy Service observed.
func TestHostileRescueForgedShapes(t *testing.T) {
	canary := `{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`
	cases := map[string]struct {
		backends []string
		wantZero bool // the canary must end at 0 (else: nothing applied)
	}{
		"PrimaryWithPort":     {backends: []string{`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 9898}`}},
		"PrimaryWithoutPort":  {backends: []string{`{group: "", kind: Service, namespace: test, name: podinfo-primary}`}},
		"PrimaryOtherPort":    {backends: []string{`{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 1}`}},
		"PrimaryAndCanary":    {backends: []string{`{group: "", kind: Service, namespace: test, name: podinfo-primary}`, canary}, wantZero: true},
		"Duplicates":          {backends: []string{canary, canary, canary, canary}, wantZero: true},
		"CanaryWithoutPort":   {backends: []string{`{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`}, wantZero: true},
		"NegativePort":        {backends: []string{`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: -1}`}},
		"PrimaryNoGroupField": {backends: []string{`{kind: Service, namespace: test, name: podinfo-primary}`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, abortedFlagger+forgedCanaryBackends(tc.backends...), allowMonitoring, map[string]string{
				"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
				"service-primary":           observedPrimary,
				"referencegrant-monitoring": observedGrant,
			}, nil)
			v := viewOf(t, rsp)
			t.Logf("results %v weights %v", v.Results, v.Weights)
			if ps, ok := shareOf(t, rsp, "route-httproute", "podinfo-primary"); ok && ps < 0.8 {
				t.Errorf("the primary drops to %.0f%%", ps*100)
			}
			if s, ok := shareOf(t, rsp, "route-httproute", "canary-proxy"); tc.wantZero && (!ok || s > 0) {
				t.Errorf("the canary is not at 0 (share %.0f%%, found %v)", s*100, ok)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// TestHostileHoldReemitsDeniedHostname: the same hold with an Istio Hostname
// canary whose host the Input now denies: the held route keeps 50% on it
// (the hold re-checks kinds and namespaces only, never host names).
func TestHostileHoldReemitsDeniedHostname(t *testing.T) {
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 443
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {group: networking.istio.io, kind: Hostname, name: api.good.example.net}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
`) + pausedStatus(`{group: networking.istio.io, kind: Hostname, namespace: test, name: api.evil.example.com, port: 443}`)
	observed := map[string]string{"route-httproute": routeAt(
		`{group: "", kind: Service, name: podinfo, port: 443, weight: 50}`,
		`{group: networking.istio.io, kind: Hostname, name: api.evil.example.com, port: 443, weight: 50}`)}
	_, rsp := attackRun(t, x, emptyInput+"deniedExternalNames: [evil.example.com]\n", observed, nil)
	v := logView(t, rsp)
	if s, ok := shareOf(t, rsp, "route-httproute", "api.evil.example.com"); ok && s > 0 {
		t.Errorf("the hold keeps %.0f%% on Hostname api.evil.example.com, which deniedExternalNames now covers (status %v %v%%)", s*100, v.Rollout["phase"], v.Rollout["canaryWeight"])
	}
}
