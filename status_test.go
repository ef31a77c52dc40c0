package main

// The status the function writes within the XRD's limits, and the status
// the XRD admits read back: what an earlier run (or anyone who may write
// the XR's status) left there never makes a run fail or write a status the
// API server refuses.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// TestStatusBoundedWhateverWasObserved: attack: progressive rollouts whose
// observations are hostile (a gateway's reason and message of thousands of
// multi-byte characters, names at their longest, a step far out of range)
// still answer a response that encodes and a status the XRD admits: every
// message the function writes is cut to what the XRD allows.
func TestStatusBoundedWhateverWasObserved(t *testing.T) {
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
	f := functionAt(testNow)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := progressive + tc.status
			if name == "HugeStepPaused" {
				x = strings.Replace(x, "failAfter: 1m}]", "failAfter: 1m}]\n    paused: true", 1)
			}
			req := testRequest(t, x, emptyInput, nil)
			req.Observed.Resources["route-httproute"] = &fnv1.Resource{Resource: mustStruct(t, hostileRoute)}
			if tc.gate != nil {
				req.RequiredResources = map[string]*fnv1.Resources{"gate-0": {Items: []*fnv1.Resource{{Resource: mustStruct(t, tc.gate)}}}}
			}
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			viewOf(t, rsp) // checks the Composed condition
			if _, err := proto.Marshal(rsp); err != nil {
				t.Errorf("the response does not marshal: %v", err)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// TestStatusTheXRDAdmitsIsRead: a stepStartedAt in a spelling
// that the XRD's date-time admits (lowercase t and z, as RFC 3339 allows)
// but Go's RFC 3339 parser refuses: every run is a Fatal, and no run writes
// a status that would repair it.
func TestStatusTheXRDAdmitsIsRead(t *testing.T) {
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
	req, rsp := runFunction(t, x, emptyInput, nil, nil)
	if errs := crdschema.XRDs(t, xrdFiles...).Validate(req.GetObserved().GetComposite().GetResource().AsMap()); len(errs) > 0 {
		t.Fatalf("setup: the XRD refuses the status: %v", errs)
	}
	if msg := fatalOf(rsp); msg != "" {
		t.Errorf("the XRD admits status.rollout.stepStartedAt %q, but the function refuses it: %s", "2026-12-02t10:00:00z", msg)
	}
	assertXRDAccepts(t, req, rsp)
}

// TestGrantConditionsAreBounded: a namespaced CanaryRoute with 240 backends
// in other namespaces cannot compose their grants: the ReferenceGrantsReady
// condition names at most 20 (it was 55,778 characters, past what the XR's
// status may hold), and at most 21 Warnings say so.
func TestGrantConditionsAreBounded(t *testing.T) {
	var rules strings.Builder
	for i := range 15 {
		refs := make([]string, 0, 16)
		for j := range 16 {
			refs = append(refs, fmt.Sprintf(`{name: backend-with-a-longish-name-%d-%d, namespace: team-%d-%d, port: 80}`, i, j, i, j))
		}
		fmt.Fprintf(&rules, "    - {name: own%d, matches: [{path: {type: PathPrefix, value: /o%d}}], backendRefs: [%s]}\n", i, i, strings.Join(refs, ", "))
	}
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
` + rules.String() + `    - {name: api}
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}}
  traffic: {weight: 10}`)
	req, rsp := runFunction(t, x, emptyInput+"allowedBackendNamespaces: [\"*\"]\n", nil, nil)
	if isFatal(rsp) {
		t.Fatalf("refused: %v", viewOf(t, rsp).Results)
	}
	assertXRDAccepts(t, req, rsp)
	if n := len(rsp.GetResults()); n > 21 {
		t.Errorf("%d results: at most 20 Warnings and one that says how many more", n)
	}
	for _, r := range rsp.GetResults() {
		if n := len(r.GetMessage()); n > 1024 {
			t.Errorf("a %s result (%s) is %d characters long", r.GetSeverity(), r.GetReason(), n)
		}
	}
	for _, c := range rsp.GetConditions() {
		if n := len([]rune(c.GetMessage())); n > 1024 {
			t.Errorf("condition %s's message is %d characters long, more than a status message may be", c.GetType(), n)
		}
	}
}
