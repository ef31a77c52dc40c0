package main

// The rollout across runs: steps, pauses, the gateway's verdict and gates,
// through the simulated Crossplane; and the canary's digest, which tells a
// changed canary (a restart) from the same one written another way.

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

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

func TestRolloutSimulation(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	availableSince := func(since time.Time) func(time.Time) (string, time.Time) {
		return func(time.Time) (string, time.Time) { return "True", since }
	}
	cases := map[string]struct {
		reason string
		// gateway is the gateway's verdict on the route (nil: accepted),
		// and available the gate Deployment's Available condition at a
		// time: its status and since when.
		gateway   func(time.Time) (string, string)
		available func(time.Time) (string, time.Time)
		runs      int
		want      []string
	}{
		"Succeeds": {
			reason:    "The rollout walks 10% -> 50% -> 100% -> Succeeded: each step waits for the gateway to accept its weights and for its pause, one step per run.",
			available: availableSince(start.Add(-time.Hour)),
			runs:      14,
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
			reason:    "A gateway that does not accept the route holds the rollout at step 0, saying which parent and why.",
			gateway:   func(time.Time) (string, string) { return "False", "NotAllowedByListeners" },
			available: availableSince(start.Add(-time.Hour)),
			runs:      5,
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
			available: func(now time.Time) (string, time.Time) {
				down := start.Add(2 * time.Minute)
				if now.Before(down) {
					return "True", start.Add(-time.Hour)
				}
				return "False", down
			},
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
			s := newSim(t, simulatedXR, emptyInput)
			s.gateway = tc.gateway
			var got []string
			for range tc.runs {
				status, since := tc.available(s.now)
				s.add(fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo-v2, namespace: test},
  status: {conditions: [{type: Available, status: %q, reason: Simulated, lastTransitionTime: %q}]}}`, status, since.Format(time.RFC3339)))
				r := s.run(0)
				got = append(got, describeRun(t, r))
				assertXRDAccepts(t, r.req, r.rsp)
				assertWeights(t, r.rsp)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe rollout run by run: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// describeRun says what one run decided, in a line.
func describeRun(t *testing.T, run simRun) string {
	t.Helper()
	now, rsp := run.at, run.rsp
	if run.fatal != "" {
		t.Fatalf("%s: unexpected Fatal: %s", now.Format(time.TimeOnly), run.fatal)
	}
	r := rolloutOf(rsp)
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
	r := rolloutOf(rsp)
	route := rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
	want := [][]string{{
		fmt.Sprintf("Service/podinfo-primary:9898=%v", r["primaryWeight"]),
		fmt.Sprintf("Service/podinfo-canary:9898=%v", r["canaryWeight"]),
	}}
	if diff := cmp.Diff(want, routeWeights(route)); diff != "" {
		t.Errorf("the composed route must carry the weights of status.rollout: -want, +got:\n%s", diff)
	}
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
	f := functionAt(testNow)
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
		return rolloutOf(rsp)
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

// TestBackendTLSInTheDigest: a changed canary tls restarts a progressive
// rollout at step 0, a changed primary tls does not, and an unchanged
// canary keeps its digest across runs.
func TestBackendTLSInTheDigest(t *testing.T) {
	x := strings.Replace(featureXR("HTTPRoute", "", "", "", ""), "  traffic: {weight: 20}", "  traffic: {steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 10m}, {weight: 100}]}", 1)
	s := newSim(t, x, allowTest)
	var r simRun
	for range 6 {
		if r = s.run(0); r.out["step"] == float64(1) {
			break
		}
	}
	if r.out["step"] != float64(1) {
		t.Fatalf("setup: %s", s.describe())
	}
	digest := r.out["canaryDigest"]
	r = s.run(0)
	if r.out["canaryDigest"] != digest || r.out["step"] != float64(1) {
		t.Errorf("an unchanged canary changes its digest or step: %v -> %v", digest, r.out)
	}
	s.setSpec("primary.tls", map[string]any{"hostname": "p.example.com", "wellKnownCACertificates": "System"})
	r = s.run(0)
	if r.out["step"] != float64(1) || r.fatal != "" {
		t.Errorf("tls on the primary restarts the rollout or fails: %v %s", r.out, r.fatal)
	}
	s.setSpec("canary.tls", map[string]any{"hostname": "c.example.com", "wellKnownCACertificates": "System"})
	r = s.run(0)
	if r.out["step"] != float64(0) || r.out["reason"] != "CanaryChanged" {
		t.Errorf("tls added to the canary does not restart the rollout (want step 0, reason CanaryChanged): %v", r.out)
	}
}
