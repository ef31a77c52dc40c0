package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The preview route (spec.traffic.preview): composed while the rollout is
// active, deleted once it ends, gating nothing.

const previewKey = "route-httproute-preview"

// previewXR is steppedXR (the canary podinfo-canary, revision v2) with a
// preview on preview.example.com; traffic holds more lines of traffic.
func previewXR(steps, traffic string) string {
	return steppedXR(steps, "    preview: {hostnames: [preview.example.com]}\n"+traffic)
}

// blueGreenSteps are blue/green's steps: the canary at 0% until approved,
// then every request at once.
const blueGreenSteps = "[{weight: 0, approval: true}, {weight: 100}]"

// previewOf is the preview route a response desires, nil for none.
func previewOf(rsp *fnv1.RunFunctionResponse) map[string]any {
	r, ok := rsp.GetDesired().GetResources()[previewKey]
	if !ok {
		return nil
	}
	return r.GetResource().AsMap()
}

// activePhases are the phases in which a rollout is active.
var activePhases = []any{"Progressing", "Paused", "Promoting"}

// checkPreview holds a sim's run to the preview's rule: composed only
// while the rollout is active, every request of its hostnames to the
// canary (the backend named canary), on the route's parents, and the
// cluster holding it exactly when the run composes it. It reports whether
// the run composed it.
func checkPreview(t *testing.T, s *xpSim, r simRun, canary string) bool {
	t.Helper()
	at := r.at.Format(time.TimeOnly)
	preview := previewOf(r.rsp)
	_, held := s.keys[previewKey]
	if held != (preview != nil) && r.fatal == "" {
		t.Errorf("at %s: the run composes the preview: %t, the cluster holds it: %t", at, preview != nil, held)
	}
	if preview == nil {
		return false
	}
	if !slices.Contains(activePhases, r.out["phase"]) {
		t.Errorf("at %s: the preview is composed in phase %v:\n%s", at, r.out["phase"], s.describe())
	}
	if diff := cmp.Diff([][]string{{"Service/" + canary + ":9898=100"}}, routeWeights(preview)); diff != "" {
		t.Errorf("at %s: the preview sends every request to %s: -want, +got:\n%s", at, canary, diff)
	}
	md, _ := preview["metadata"].(map[string]any)
	spec, _ := preview["spec"].(map[string]any)
	if md["name"] != "podinfo-preview" || md["namespace"] != "test" {
		t.Errorf("at %s: the preview is %v/%v, want test/podinfo-preview", at, md["namespace"], md["name"])
	}
	if diff := cmp.Diff([]any{"preview.example.com"}, spec["hostnames"]); diff != "" {
		t.Errorf("at %s: the preview's hostnames: -want, +got:\n%s", at, diff)
	}
	main := r.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
	mainSpec, _ := main["spec"].(map[string]any)
	if diff := cmp.Diff(mainSpec["parentRefs"], spec["parentRefs"]); diff != "" {
		t.Errorf("at %s: the preview is on the route's parents: -route, +preview:\n%s", at, diff)
	}
	return true
}

// TestPreviewBlueGreen drives the release loop's blue/green with a preview
// across a release: v2 waits at 0% for its approval while testers reach it
// by the preview's hostname, then takes every request at once, is
// promoted, and the preview goes. The preview never sends a request to the
// canary Service before it is observed selecting v2.
func TestPreviewBlueGreen(t *testing.T) {
	s := newSim(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  hostnames: [www.example.com]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: v1}
  traffic:
    steps: `+blueGreenSteps+`
    preview: {hostnames: [preview.example.com]}`), emptyInput)
	seen := map[any]bool{}
	run := func(step time.Duration) simRun {
		t.Helper()
		observedCanary := s.observedSelector("service-canary")
		r := s.run(step)
		if r.fatal != "" {
			t.Fatalf("at %s: Fatal: %s", r.at.Format(time.TimeOnly), r.fatal)
		}
		if checkPreview(t, s, r, "podinfo-canary") {
			seen[r.out["phase"]] = true
			if observedCanary != r.out["revision"] {
				t.Errorf("at %s: the preview sends requests to the canary Service, observed selecting %v, before it selects %v:\n%s", r.at.Format(time.TimeOnly), observedCanary, r.out["revision"], s.describe())
			}
		}
		return r
	}

	if r := run(0); r.out["phase"] != "Succeeded" || previewOf(r.rsp) != nil {
		t.Fatalf("the first release is stable at once, without a preview: %v", r.out)
	}
	s.setSpec("canary.revision", "v2")
	// The canary Service moves to v2 first (the route sends it nothing),
	// then the preview sends it the testers' requests while v2 waits for
	// its approval at 0%.
	waiting := false
	for range 20 {
		if r := run(30 * time.Second); r.out["awaitingApproval"] == true && previewOf(r.rsp) != nil {
			waiting = true
			if w := canaryWeightOf(r.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()); w != 0 {
				t.Fatalf("awaiting approval, the route gives v2 %d%%, want 0%%", w)
			}
			break
		}
	}
	if !waiting {
		t.Fatalf("v2 never awaited its approval with its preview:\n%s", s.describe())
	}

	s.setSpec("traffic.paused", true)
	if r := run(30 * time.Second); r.out["phase"] != "Paused" || previewOf(r.rsp) == nil {
		t.Fatalf("paused: phase %v, preview composed: %t; want Paused with its preview", r.out["phase"], previewOf(r.rsp) != nil)
	}
	s.setSpec("traffic.paused", nil)

	s.setSpec("traffic.approval", map[string]any{"revision": "v2", "step": float64(0)})
	done := false
	for range 30 {
		r := run(15 * time.Second)
		release, _ := s.status["release"].(map[string]any)
		stable, _ := release["stable"].(map[string]any)
		if r.out["phase"] == "Succeeded" && stable["revision"] == "v2" {
			done = true
			break
		}
	}
	if !done {
		t.Fatalf("v2 never became stable:\n%s", s.describe())
	}
	if diff := cmp.Diff(map[any]bool{"Progressing": true, "Paused": true, "Promoting": true}, seen); diff != "" {
		t.Errorf("the phases the preview was composed in: -want, +got:\n%s\n%s", diff, s.describe())
	}
	if r := run(time.Minute); previewOf(r.rsp) != nil {
		t.Errorf("the release settled on v2, and the preview is still composed")
	}
}

// TestPreviewEnds pins that the preview goes with the rollout, however it
// ends, and comes back with a restart; a spec without preview never
// composes one.
func TestPreviewEnds(t *testing.T) {
	gate := func(status string) string {
		return `{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo-canary, namespace: test},
  status: {conditions: [{type: Available, status: "` + status + `", reason: R, lastTransitionTime: "2026-12-02T09:00:00Z"}]}}`
	}
	gated := "    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available, failAfter: 1m}]\n"
	cases := map[string]struct {
		reason string
		// end ends the rollout; restart, when set, starts it again.
		end, restart func(s *xpSim)
		phase        string
		traffic      string
	}{
		"Succeeded": {
			reason: "Approved, blue/green switches every request to the canary, and the rollout succeeds: the preview goes.",
			end:    func(s *xpSim) { s.setSpec("traffic.approval", map[string]any{"revision": "v2", "step": float64(0)}) },
			phase:  "Succeeded",
		},
		"Aborted": {
			reason:  "An abort ends the preview with the canary's traffic; clearing it restarts the rollout, and the preview with it.",
			end:     func(s *xpSim) { s.setSpec("traffic.abort", true) },
			restart: func(s *xpSim) { s.setSpec("traffic.abort", nil) },
			phase:   "Aborted",
		},
		"Failed": {
			reason:  "A failed gate fails the rollout: the preview goes; a retry restarts it, and the preview with it.",
			traffic: gated,
			end:     func(s *xpSim) { s.add(gate("False")) },
			restart: func(s *xpSim) {
				s.add(gate("True"))
				s.setSpec("traffic.retry", "1")
			},
			phase: "Failed",
		},
	}
	for name, tc := range cases {
		for _, withPreview := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "", false: "WithoutPreview"}[withPreview], func(t *testing.T) {
				xrYAML := previewXR(blueGreenSteps, tc.traffic)
				if !withPreview {
					xrYAML = steppedXR(blueGreenSteps, tc.traffic)
				}
				s := newSim(t, xrYAML, emptyInput)
				s.add(gate("True"))
				composed := func(r simRun) bool {
					t.Helper()
					if r.fatal != "" {
						t.Fatalf("at %s: Fatal: %s", r.at.Format(time.TimeOnly), r.fatal)
					}
					got := checkPreview(t, s, r, "podinfo-canary")
					if got && !withPreview {
						t.Fatalf("at %s: a spec without preview composes one", r.at.Format(time.TimeOnly))
					}
					return got
				}
				if r := s.run(30 * time.Second); r.out["phase"] != "Progressing" || composed(r) != withPreview {
					t.Fatalf("%s\nthe rollout starts: phase %v, preview composed: %t", tc.reason, r.out["phase"], previewOf(r.rsp) != nil)
				}
				tc.end(s)
				var r simRun
				for range 10 {
					if r = s.run(30 * time.Second); composed(r) && r.out["phase"] == tc.phase {
						t.Fatalf("%s\nthe preview is composed in phase %s", tc.reason, tc.phase)
					}
					if r.out["phase"] == tc.phase {
						break
					}
				}
				if r.out["phase"] != tc.phase || previewOf(r.rsp) != nil {
					t.Fatalf("%s\nphase %v, preview composed: %t; want %s without a preview:\n%s", tc.reason, r.out["phase"], previewOf(r.rsp) != nil, tc.phase, s.describe())
				}
				if composed(s.run(time.Minute)) {
					t.Fatalf("%s\nthe preview came back in phase %s", tc.reason, tc.phase)
				}
				if tc.restart == nil {
					return
				}
				tc.restart(s)
				if r := s.run(30 * time.Second); r.out["phase"] != "Progressing" || composed(r) != withPreview {
					t.Fatalf("%s\nrestarted: phase %v, preview composed: %t:\n%s", tc.reason, r.out["phase"], previewOf(r.rsp) != nil, s.describe())
				}
			})
		}
	}
}

// TestPreviewHeldWhilePaused: a paused rollout whose revision changes
// holds its previous composition, the preview as it was among it; clearing
// paused restarts the new revision at step 0, with its preview.
func TestPreviewHeldWhilePaused(t *testing.T) {
	s := newSim(t, previewXR(blueGreenSteps, ""), emptyInput)
	before := s.run(30 * time.Second)
	if !checkPreview(t, s, before, "podinfo-canary") {
		t.Fatalf("the rollout started without its preview:\n%s", s.describe())
	}
	s.setSpec("traffic.paused", true)
	s.setSpec("canary.revision", "v3")
	r := s.run(30 * time.Second)
	if r.fatal != "" || r.out["phase"] != "Paused" || r.out["revision"] != "v2" {
		t.Fatalf("paused with a new revision: %v (%s), want Paused on v2", r.out, r.fatal)
	}
	if !checkPreview(t, s, r, "podinfo-canary") {
		t.Fatalf("the held composition lost its preview:\n%s", s.describe())
	}
	if diff := cmp.Diff(previewOf(before.rsp)["spec"], previewOf(r.rsp)["spec"]); diff != "" {
		t.Errorf("the held preview is not the one composed before: -before, +held:\n%s", diff)
	}
	s.setSpec("traffic.paused", nil)
	r = s.run(30 * time.Second)
	if r.out["phase"] != "Progressing" || r.out["revision"] != "v3" || !checkPreview(t, s, r, "podinfo-canary") {
		t.Fatalf("resumed: %v, preview composed: %t; want v3 at step 0 with its preview:\n%s", r.out, previewOf(r.rsp) != nil, s.describe())
	}
}

// TestPreviewGatesNothing: a gateway that does not accept the preview route
// holds no step: the steps wait for the main route alone. The preview is
// not ready meanwhile, as the gateway says.
func TestPreviewGatesNothing(t *testing.T) {
	s := newSim(t, previewXR("[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]", ""), emptyInput)
	s.gatewayOf = func(key string, _ time.Time) (string, string) {
		if key == previewKey {
			return "False", "NotAllowedByListeners"
		}
		return "True", "Accepted"
	}
	for range 20 {
		r := s.run(30 * time.Second)
		if r.fatal != "" {
			t.Fatalf("Fatal: %s", r.fatal)
		}
		if checkPreview(t, s, r, "podinfo-canary") && len(r.condsIn) > 0 {
			if got := r.rsp.GetDesired().GetResources()[previewKey].GetReady(); got != fnv1.Ready_READY_FALSE {
				t.Errorf("at %s: a preview its gateway does not accept is %s, want READY_FALSE", r.at.Format(time.TimeOnly), got)
			}
			if got := r.rsp.GetDesired().GetResources()["route-httproute"].GetReady(); got != fnv1.Ready_READY_TRUE {
				t.Errorf("at %s: the accepted route is %s, want READY_TRUE", r.at.Format(time.TimeOnly), got)
			}
		}
		if r.out["phase"] == "Succeeded" {
			return
		}
	}
	t.Fatalf("a preview its gateway refuses held the rollout:\n%s", s.describe())
}

// TestPreviewRescuedAbort: the emergency abort of a CanaryRoute that cannot
// be composed ends the preview too: the route is kept with its canary at
// 0%, and the preview is not composed, so Crossplane deletes it.
func TestPreviewRescuedAbort(t *testing.T) {
	s := newSim(t, previewXR(blueGreenSteps, ""), emptyInput)
	if r := s.run(30 * time.Second); previewOf(r.rsp) == nil {
		t.Fatalf("the rollout started without its preview:\n%s", s.describe())
	}
	s.setSpec("port", float64(70000))
	s.setSpec("traffic.abort", true)
	r := s.run(30 * time.Second)
	if r.out["reason"] != "AbortRescued" {
		t.Fatalf("want the abort rescued, got %v (%s)", r.out, r.fatal)
	}
	if previewOf(r.rsp) != nil || r.rsp.GetDesired().GetResources()["route-httproute"] == nil {
		t.Errorf("the rescue composes %v, want the route without its preview", r.resources)
	}
	if _, ok := s.keys[previewKey]; ok {
		t.Error("the cluster still holds the preview after the rescued abort")
	}
}

// TestPreviewViews pins one run's whole answer about a preview: composed
// while a blue/green rollout awaits its approval, ready as its own parents
// say and gating nothing, gone once the rollout succeeded; and what the
// function refuses of one.
func TestPreviewViews(t *testing.T) {
	status := func(rollout string) string { return "status:\n  rollout: " + rollout + "\n" }
	awaiting := previewXR(blueGreenSteps, "") + status(`{phase: Progressing, reason: AwaitingApproval, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 0, primaryWeight: 100, awaitingApproval: true}`)
	accepted := func(route, name, refs string, acceptedStatus string) string {
		return `
apiVersion: gateway.networking.k8s.io/v1
kind: ` + route + `
metadata: {name: ` + name + `, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway}]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [` + refs + `]}]
status:
  parents:
    - parentRef: {name: gateway}
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "` + acceptedStatus + `", reason: R, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
        - {type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
`
	}
	mainAt0 := accepted("HTTPRoute", "podinfo", `{group: "", kind: Service, name: podinfo, port: 9898, weight: 100}, {group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 0}`, "True")
	previewRoute := func(acceptedStatus string) string {
		return accepted("HTTPRoute", "podinfo-preview", `{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 100}`, acceptedStatus)
	}
	canaryBackends := []any{map[string]any{"group": "", "kind": "Service", "namespace": "test", "name": "podinfo-canary", "port": float64(9898)}}
	requirements := []string{
		"existing-route-httproute-preview: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo-preview",
		"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
	}
	awaitingView := func(previewReady string) view {
		return view{
			Conditions: []string{
				"RouteAccepted=True Accepted: every parent accepted the route and resolved its references",
				"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
				"RolloutHealthy=True Progressing: holding step 0 (0%): awaiting approval: set traffic.approval to {revision: v2, step: 0}",
			},
			Resources: []string{"route-httproute", "route-httproute-preview"},
			Ready:     map[string]string{"route-httproute": "READY_TRUE", "route-httproute-preview": previewReady},
			Weights:   [][]string{{"Service/podinfo:9898=100", "Service/podinfo-canary:9898=0"}},
			Preview:   [][]string{{"Service/podinfo-canary:9898=100"}},
			Rollout: map[string]any{
				"phase": "Progressing", "reason": "AwaitingApproval", "revision": "v2", "step": float64(0),
				"stepStartedAt": "2026-12-02T10:00:00Z", "nextStepAt": "2026-12-02T10:00:00Z",
				"canaryWeight": float64(0), "primaryWeight": float64(100), "awaitingApproval": true,
				"message":      "holding step 0 (0%): awaiting approval: set traffic.approval to {revision: v2, step: 0}",
				"canaryDigest": "set", "canaryBackends": canaryBackends,
			},
			TTL:          time.Minute,
			Requirements: requirements,
		}
	}
	refused := func(msg string) view { return fatalView("invalid CanaryRoute: " + msg) }
	testViews(t, map[string]viewCase{
		"AwaitingApproval": {
			reason: "At step 0 the route gives the canary 0% and the preview every request of its hostnames, both on the route's parents and ready as their parents say.",
			args:   runArgs{xr: awaiting, input: emptyInput, observed: map[string]string{"route-httproute": mainAt0, previewKey: previewRoute("True")}},
			want:   awaitingView("READY_TRUE"),
		},
		"PreviewNotAccepted": {
			reason: "A preview its parents do not accept is not ready, and holds nothing: the route is accepted, the rollout healthy, RouteAccepted about the route alone.",
			args:   runArgs{xr: awaiting, input: emptyInput, observed: map[string]string{"route-httproute": mainAt0, previewKey: previewRoute("False")}},
			want:   awaitingView("READY_FALSE"),
		},
		"Succeeded": {
			reason: "Once the rollout succeeded the preview is not composed, so Crossplane deletes the one observed.",
			args: runArgs{
				xr: previewXR(blueGreenSteps, "") + status(`{phase: Succeeded, reason: Succeeded, revision: v2, step: 1, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 100, primaryWeight: 0}`), input: emptyInput,
				observed: map[string]string{
					"route-httproute": accepted("HTTPRoute", "podinfo", `{group: "", kind: Service, name: podinfo, port: 9898, weight: 0}, {group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 100}`, "True"),
					previewKey:        previewRoute("True"),
				},
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=True Accepted: every parent accepted the route and resolved its references",
					"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
					"RolloutHealthy=True Succeeded: revision v2 completed all 2 steps at 100%",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_TRUE"},
				Weights:   [][]string{{"Service/podinfo:9898=0", "Service/podinfo-canary:9898=100"}},
				Rollout: map[string]any{
					"phase": "Succeeded", "reason": "RolloutSucceeded", "revision": "v2", "step": float64(1),
					"stepStartedAt": "2026-12-02T10:00:00Z", "canaryWeight": float64(100), "primaryWeight": float64(0),
					"message": "revision v2 completed all 2 steps at 100%", "canaryDigest": "set", "canaryBackends": canaryBackends,
				},
				TTL:          time.Minute,
				Requirements: requirements,
			},
		},
		"TCPRoute": {
			reason: "A TCPRoute has no hostnames: a preview is a Fatal naming the field.",
			args:   runArgs{xr: strings.Replace(previewXR(blueGreenSteps, ""), "port: 9898", "port: 9898\n  kind: TCPRoute", 1), input: emptyInput},
			want:   refused("spec.traffic.preview: Forbidden: a TCPRoute has no hostnames: the preview route is a route of its own hostnames (HTTPRoute, GRPCRoute, TLSRoute)"),
		},
		"HostnameOfTheRoute": {
			reason: "A preview hostname that the route names too would be the route's: a Fatal naming both.",
			args:   runArgs{xr: strings.Replace(previewXR(blueGreenSteps, ""), "port: 9898", "port: 9898\n  hostnames: [www.example.com, preview.example.com]", 1), input: emptyInput},
			want:   refused(`spec.traffic.preview.hostnames[0]: Invalid value: "preview.example.com": is also spec.hostnames[1]: the main route would take its requests; a preview hostname is one the main route does not name`),
		},
		"ManualMode": {
			reason: "A preview needs a rollout: manual mode has none.",
			args: runArgs{xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 20, preview: {hostnames: [preview.example.com]}}`), input: emptyInput},
			want: refused("spec.traffic.preview: Forbidden: a preview shows the canary while a rollout is active: it needs traffic.steps"),
		},
		"Takeover": {
			reason: "A route named like the preview that this XR did not compose is never composed over, rollout or not: a Fatal names it.",
			args: runArgs{xr: awaiting, input: emptyInput, required: map[string][]string{
				"existing-route-httproute-preview": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo-preview, namespace: test, labels: {team: other}}}`},
			}},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: HTTPRoute test/podinfo-preview exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},
	})
}

// TestPreviewDeterministic: the same request that composes a preview gets
// the same answer, byte for byte.
func TestPreviewDeterministic(t *testing.T) {
	req := testRequest(t, previewXR(blueGreenSteps, ""), emptyInput, nil)
	f := functionAt(testNow)
	var first []byte
	for i := range 20 {
		rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			t.Fatal(err)
		}
		if previewOf(rsp) == nil {
			t.Fatalf("run %d composes no preview: %s", i, fatalOf(rsp))
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
}
