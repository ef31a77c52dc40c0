package live

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The release loop, live: the release example's pipeline (function-canary-
// route, then function-go-templating composing a Deployment per revision),
// installed from their packages into the real Crossplane, against the real
// gateway. See release_helpers_test.go for what stands in for the pods.

// TestReleaseLoop takes a release from v1 to v2 with one edit of
// canary.revision: the v2 Deployment is composed and scaled ahead of its
// traffic, each move waits until the test (the kubelet here) reports the
// ready replicas it needs, the requests through the gateway show the split
// between revisions at every step, the promotion moves the primary Service
// only while the route gives it no request, then the route back to it, and
// v1 is scaled to 0 once its scaleDownDelay has passed.
func TestReleaseLoop(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "release")
	log := watchLog(t, ns, gvkCanaryRoute, gvkHTTPRoute, gvkService, gvkDeployment)
	k := startKubelet(t, ns)
	xr := releaseXR(t, ns, freePort(t), "v1", `
release: {scaleDownDelay: 3s}
traffic:
  steps: [{weight: 25, pause: 1s}, {weight: 50, pause: 1s}, {weight: 100}]`)
	apply(t, xr)
	primary := serveRevisions(t, ns, releasePrimary, log)
	serveRevisions(t, ns, releaseCanary, log)
	p := probe{host: hostname(ns)}

	// The first revision is stable at once: nothing to compare it to.
	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	await(t, settle, "web-v1 composed with every replica", replicasOf(ns, "web-v1", 4))
	awaitAnswers(t, "v1 released", p, revisions(map[string]int{"v1": 100}))

	// The one edit. v2's pods are not ready: the rollout waits at 0%.
	k.capReady("web-v2", 0)
	patchRevision(t, ns, "v2")
	await(t, settle, "v2 waiting at 0% to enter step 0", releaseAt(ns, "Progressing", "AwaitingCapacity", 0, 0, "v1"))
	await(t, settle, "web-v2 composed, scaled ahead for step 1 (50% of 4)", replicasOf(ns, "web-v2", 2))
	awaitAnswers(t, "v2 not ready", p, revisions(map[string]int{"v1": 100}))

	// One ready replica carries step 0 (25% of 4), not step 1 (50%): the
	// rollout enters step 0 and holds there once its pause has run out.
	k.capReady("web-v2", 1)
	await(t, settle, "step 0 held for step 1's capacity", releaseAt(ns, "Progressing", "AwaitingCapacity", 0, 25, "v1"))
	awaitAnswers(t, "step 0 (25%)", p, revisions(map[string]int{"v1": 75, "v2": 25}))

	// Two carry step 1; step 2 (100%) needs all four, which the canary is
	// scaled to ahead of it.
	k.capReady("web-v2", 2)
	await(t, settle, "step 1 held for step 2's capacity", releaseAt(ns, "Progressing", "AwaitingCapacity", 1, 50, "v1"))
	await(t, settle, "web-v2 scaled ahead for step 2 (100% of 4)", replicasOf(ns, "web-v2", 4))
	awaitAnswers(t, "step 1 (50%)", p, revisions(map[string]int{"v1": 50, "v2": 50}))

	// Every replica ready: step 2, then the promotion, with requests
	// through the gateway all along.
	steady := startSteadyProbe(t, p)
	k.uncap("web-v2")
	await(t, settle, "v2 promoted", releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"))
	promoted := time.Now()
	awaitAnswers(t, "v2 promoted", p, revisions(map[string]int{"v2": 100}))
	steady.stop()

	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(releaseStatus{Stable: "v2", History: []string{"v1"}, Retiring: "v1"}, releaseOf(u)); diff != "" {
		t.Errorf("status.release once v2 is promoted: -want, +got:\n%s", diff)
	}
	// The route moved one step at a time, then back to the primary, which
	// serves v2 now.
	if diff := cmp.Diff([]int64{0, 25, 50, 100, 0}, log.canaryWeights()); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s", diff)
	}
	// The canary's replicas followed the weights, ahead of them.
	if diff := cmp.Diff([]int64{2, 4}, log.replicas("web-v2")); diff != "" {
		t.Errorf("web-v2's spec.replicas, in order: -want, +got:\n%s", diff)
	}

	// The primary Service moved to v2 once, while the route gave it no
	// request (accepted so by the gateway), and the route gave it requests
	// again only on a later reconcile.
	moves := log.moves(releasePrimary)
	if len(moves) != 1 || moves[0].from != "v1" || moves[0].to != "v2" || moves[0].weight != 0 || !moves[0].routeAccepted ||
		moves[0].next.rv == 0 || !moves[0].reconciled {
		t.Errorf("the primary Service's moves: want one, v1 -> v2, while the accepted route gave it weight 0, weighted again after a reconcile; got:\n%s", describeMoves(moves))
	}
	// On the data plane: from the moment the primary Service moved until
	// the route sent it requests again, it got none of the steady
	// requests, which the canary answered with v2 all.
	if len(moves) == 1 && moves[0].next.rv != 0 {
		from, to := moves[0].at, moves[0].next.at
		if n := primary.requestsBetween(from, to); n != 0 {
			t.Errorf("the primary got %d requests between its move (%s) and the route's move back (%s), want none", n, from.Format(time.StampMilli), to.Format(time.StampMilli))
		}
		got := steady.between(from, to)
		if len(got) != 1 || got["v2"] == 0 {
			t.Errorf("requests sent while the primary Service moved (%s to %s): want all answered v2 by the canary, got %s", from.Format(time.StampMilli), to.Format(time.StampMilli), describeCounts(got))
		}
		t.Logf("while the primary Service moved: %s in %s", describeCounts(got), to.Sub(from).Round(time.Millisecond))
	}
	// The canary Service moved to v2 while it had no weight too.
	for _, m := range log.moves(releaseCanary) {
		if m.weight != 0 || (m.next.rv != 0 && !m.reconciled) {
			t.Errorf("the canary Service moved %s while the route gave it weight %d, or got weight again in the same reconcile", m, m.weight)
		}
	}

	// v1 keeps its replicas for scaleDownDelay (3s), then gets none.
	await(t, settle, "web-v1 scaled to 0 after scaleDownDelay", replicasOf(ns, "web-v1", 0))
	t.Logf("web-v1 scaled to 0 %s after v2 was promoted (scaleDownDelay 3s)", time.Since(promoted).Round(100*time.Millisecond))
	if diff := cmp.Diff([]int64{4, 0}, log.replicas("web-v1")); diff != "" {
		t.Errorf("web-v1's spec.replicas, in order: -want, +got:\n%s", diff)
	}
}

// TestReleaseRollback promotes v2, then sets canary.revision back to v1
// within the rollback window: v1 goes straight to its promotion, without
// a step, and the primary serves it again.
func TestReleaseRollback(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "rollback")
	log := watchLog(t, ns, gvkCanaryRoute, gvkHTTPRoute, gvkService, gvkDeployment)
	startKubelet(t, ns)
	xr := releaseXR(t, ns, freePort(t), "v1", `
release: {scaleDownDelay: 10m}
traffic:
  steps: [{weight: 50, pause: 1s}, {weight: 100}]
  rollbackWindow: 2`)
	apply(t, xr)
	serveRevisions(t, ns, releasePrimary, log)
	serveRevisions(t, ns, releaseCanary, log)
	p := probe{host: hostname(ns)}

	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	patchRevision(t, ns, "v2")
	await(t, settle, "v2 promoted", releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"))
	awaitAnswers(t, "v2 promoted", p, revisions(map[string]int{"v2": 100}))
	before := len(log.canaryWeights())

	// Back to v1, which keeps its replicas for 10 minutes.
	patchRevision(t, ns, "v1")
	await(t, settle, "rolled back to v1", releaseAt(ns, "Succeeded", "RolledBack", -1, 0, "v1"))
	awaitAnswers(t, "rolled back", p, revisions(map[string]int{"v1": 100}))

	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(releaseStatus{Stable: "v1", History: []string{"v2"}, Retiring: "v2"}, releaseOf(u)); diff != "" {
		t.Errorf("status.release once rolled back: -want, +got:\n%s", diff)
	}
	// No step: every request to the canary (v1) at once, then back to the
	// primary, which serves v1 again.
	weights := log.canaryWeights()
	if diff := cmp.Diff([]int64{0, 50, 100, 0, 100, 0}, weights); diff != "" || before != 4 {
		t.Errorf("the route's canary weights, in order (the rollback from the 4th on): -want, +got:\n%s", diff)
	}
	moves := log.moves(releasePrimary)
	if len(moves) != 2 {
		t.Fatalf("the primary Service's moves: want v1 -> v2, v2 -> v1; got:\n%s", describeMoves(moves))
	}
	for _, m := range moves {
		if m.weight != 0 || !m.routeAccepted || m.next.rv == 0 || !m.reconciled {
			t.Errorf("the primary Service moved %s: want while the accepted route gave it weight 0, weighted again after a reconcile", m)
		}
	}
	t.Logf("the canary Service's moves:\n%s", describeMoves(log.moves(releaseCanary)))
	if diff := cmp.Diff([]int64{4}, log.replicas("web-v1")); diff != "" {
		t.Errorf("web-v1's spec.replicas, in order (it keeps them for scaleDownDelay): -want, +got:\n%s", diff)
	}
}
