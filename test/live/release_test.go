package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane-contrib/function-canary-route/internal/release"
)

// The release loop, live: the release example's pipeline (function-canary-
// route, then function-go-templating composing a Deployment per revision),
// installed from their packages into the real Crossplane, against the real
// gateway. See release_helpers_test.go for what stands in for the pods.

// scaleDownDelay is how long v1 keeps its replicas once v2 is promoted, in
// releaseToV2.
const scaleDownDelay = 3 * time.Second

// A releaseRun is a release taken from v1 to v2 by releaseToV2.
type releaseRun struct {
	ns      string
	log     *eventLog
	primary *revisionBackend
	// steady sent requests through the gateway from step 1 until the
	// promotion had ended.
	steady *steadyProbe
	// promoted is when the test saw v2 promoted.
	promoted time.Time
}

// releaseToV2 releases v1, then takes the release to v2 with one edit of
// canary.revision, holding each step on capacity (the test is the
// kubelet) for as long as it counts requests through the gateway, until
// v2 is promoted. It checks what it waits for on the way.
func releaseToV2(t *testing.T, prefix string) releaseRun {
	t.Helper()
	ns := newNamespace(t, prefix)
	r := releaseRun{ns: ns, log: watchLog(t, ns, gvkCanaryRoute, gvkHTTPRoute, gvkService, gvkDeployment)}
	k := startKubelet(t, ns)
	xr := releaseXR(t, ns, freePort(t), "v1", fmt.Sprintf(`
release: {scaleDownDelay: %s}
traffic:
  steps: [{weight: 25, pause: 1s}, {weight: 50, pause: 1s}, {weight: 100}]`, scaleDownDelay))
	apply(t, xr)
	r.primary = serveRevisions(t, ns, releasePrimary, r.log)
	serveRevisions(t, ns, releaseCanary, r.log)
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
	r.steady = startSteadyProbe(t, p)
	k.uncap("web-v2")
	await(t, settle, "v2 promoted", releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"))
	r.promoted = time.Now()
	awaitAnswers(t, "v2 promoted", p, revisions(map[string]int{"v2": 100}))
	r.steady.stop()
	awaitLogBackOnPrimary(t, r.log, 1)
	return r
}

// primaryMove is the one move of the primary Service of a run, v1 to v2;
// it fails the test if there is not exactly that one.
func (r releaseRun) primaryMove(t *testing.T) selectorMove {
	t.Helper()
	moves := r.log.moves(releasePrimary)
	if len(moves) != 1 || moves[0].from != "v1" || moves[0].to != "v2" || moves[0].next.rv == 0 {
		t.Fatalf("the primary Service's moves: want one, v1 -> v2, then weighted again; got:\n%s", describeMoves(moves))
	}
	return moves[0]
}

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
	r := releaseToV2(t, "release")

	u, why := get(t.Context(), gvkCanaryRoute, r.ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(releaseStatus{Stable: "v2", History: []string{"v1"}, Retiring: "v1"}, releaseOf(u)); diff != "" {
		t.Errorf("status.release once v2 is promoted: -want, +got:\n%s", diff)
	}
	// The route moved one step at a time, then back to the primary, which
	// serves v2 now.
	if diff := cmp.Diff([]int64{0, 25, 50, 100, 0}, r.log.canaryWeights()); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s", diff)
	}
	// The canary's replicas followed the weights, ahead of them.
	if diff := cmp.Diff([]int64{2, 4}, r.log.replicas("web-v2")); diff != "" {
		t.Errorf("web-v2's spec.replicas, in order: -want, +got:\n%s", diff)
	}

	// The primary Service moved to v2 once, while the route gave it no
	// request (accepted so by the gateway), and the route gave it requests
	// again only on a later reconcile; the canary Service moved to v2
	// while it had no weight either.
	m := r.primaryMove(t)
	if m.weight != 0 || !m.routeAccepted || !m.reconciled {
		t.Errorf("the primary Service moved %s: want while the accepted route gave it weight 0, weighted again after a reconcile", m)
	}
	for _, m := range r.log.moves(releaseCanary) {
		if m.weight != 0 || (m.next.rv != 0 && !m.reconciled) {
			t.Errorf("the canary Service moved %s: want while the route gave it weight 0, weighted again after a reconcile", m)
		}
	}
	// Every request sent while the primary moved was answered, by v2. How
	// many reached the primary is TestReleasePromotionDrainsThePrimary's.
	got := r.steady.between(m.at, m.next.at)
	if len(got) != 1 || got["v2"] == 0 {
		t.Errorf("requests sent while the primary Service moved (%s to %s): want all answered by v2, got %s", m.at.Format(time.StampMilli), m.next.at.Format(time.StampMilli), describeCounts(got))
	}
	t.Logf("while the primary Service moved: %s in %s, %d of them reached the primary", describeCounts(got),
		m.next.at.Sub(m.at).Round(time.Millisecond), r.primary.requestsBetween(m.at, m.next.at))

	// v1 keeps its replicas for scaleDownDelay, then gets none, on the
	// first run after it (TestReleaseRetiresOnTime times it).
	await(t, settle, "web-v1 scaled to 0 after scaleDownDelay", replicasOf(r.ns, "web-v1", 0))
	// The API server answered before the watch behind the log may have
	// delivered the same write: wait for the log too, or the order below
	// misses its last entry.
	await(t, settle, "the log saw web-v1 scaled to 0", func(context.Context) (bool, string) {
		got := r.log.replicas("web-v1")
		return len(got) > 0 && got[len(got)-1] == 0, fmt.Sprintf("web-v1's spec.replicas in the log: %v", got)
	})
	t.Logf("web-v1 scaled to 0 %s after v2 was promoted (scaleDownDelay %s)", time.Since(r.promoted).Round(100*time.Millisecond), scaleDownDelay)
	if diff := cmp.Diff([]int64{4, 0}, r.log.replicas("web-v1")); diff != "" {
		t.Errorf("web-v1's spec.replicas, in order: -want, +got:\n%s", diff)
	}
}

// TestReleasePromotionDrainsThePrimary counts the requests that reached the
// primary Service from the moment its selector changed until the route
// sent it requests again: none may, and the gateway must have been sending
// them elsewhere for long enough that none was on its way.
func TestReleasePromotionDrainsThePrimary(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	r := releaseToV2(t, "drain")
	m := r.primaryMove(t)
	if n := r.primary.requestsBetween(m.at, m.next.at); n != 0 {
		t.Errorf("the primary got %d of %s requests between its move (%s) and the route's move back (%s), want none",
			n, describeCounts(r.steady.between(m.at, m.next.at)), m.at.Format(time.StampMilli), m.next.at.Format(time.StampMilli))
	}
}

// TestReleaseRetiresOnTime checks that the retired revision gets no
// replicas soon after its scaleDownDelay, whatever else happens: the
// function asks Crossplane to call again when it is due.
func TestReleaseRetiresOnTime(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	r := releaseToV2(t, "retire")
	// The first run after the delay scales v1 down: the TTL rounds up to
	// rollout.MinRequeue (5 s), and the gateway's and Crossplane's own
	// delays come on top.
	await(t, scaleDownDelay+15*time.Second, "web-v1 scaled to 0 soon after scaleDownDelay", replicasOf(r.ns, "web-v1", 0))
}

// rollBack releases v1, promotes v2 through its steps, then sets
// canary.revision back to v1 within the rollback window, and waits until
// v1 is stable again.
func rollBack(t *testing.T, prefix string) (string, *eventLog, probe) {
	t.Helper()
	ns := newNamespace(t, prefix)
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

	// Back to v1, which keeps its replicas for 10 minutes.
	patchRevision(t, ns, "v1")
	await(t, settle, "rolled back to v1", releaseAt(ns, "Succeeded", "RolledBack", -1, 0, "v1"))
	return ns, log, p
}

// TestReleaseRollback promotes v2, then sets canary.revision back to v1
// within the rollback window: v1 goes straight to its promotion, without
// a step, and the primary serves it again.
func TestReleaseRollback(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns, log, p := rollBack(t, "rollback")
	awaitAnswers(t, "rolled back", p, revisions(map[string]int{"v1": 100}))
	awaitLogBackOnPrimary(t, log, 2)

	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(releaseStatus{Stable: "v1", History: []string{"v2"}, Retiring: "v2"}, releaseOf(u)); diff != "" {
		t.Errorf("status.release once rolled back: -want, +got:\n%s", diff)
	}
	// v2 through its steps (50%, 100%), back to the primary; then the
	// rollback without a step: every request to the canary (v1) at once,
	// then back to the primary, which serves v1 again.
	if diff := cmp.Diff([]int64{0, 50, 100, 0, 100, 0}, log.canaryWeights()); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s", diff)
	}
	moves := log.moves(releasePrimary)
	if len(moves) != 2 || moves[1].from != "v2" || moves[1].to != "v1" {
		t.Fatalf("the primary Service's moves: want v1 -> v2, v2 -> v1; got:\n%s", describeMoves(moves))
	}
	for _, m := range moves {
		if m.weight != 0 || !m.routeAccepted || m.next.rv == 0 || !m.reconciled {
			t.Errorf("the primary Service moved %s: want while the accepted route gave it weight 0, weighted again after a reconcile", m)
		}
	}
	// v1 kept its replicas throughout (scaleDownDelay 10m): nothing to
	// scale up for the rollback.
	if diff := cmp.Diff([]int64{4}, log.replicas("web-v1")); diff != "" {
		t.Errorf("web-v1's spec.replicas, in order: -want, +got:\n%s", diff)
	}
	// The events say so: v1 started no rollout and advanced no step. Events
	// are recorded after the status that they tell of: await them.
	var events []corev1.Event
	await(t, settle, "the RolledBack event", func(ctx context.Context) (bool, string) {
		l, err := env.c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		events = l.Items
		reasons := make([]string, 0, len(events))
		for _, e := range events {
			reasons = append(reasons, e.Reason)
			if e.Reason == "RolledBack" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %v", reasons)
	})
	for _, e := range events {
		if (e.Reason == "RolloutStarted" || e.Reason == "StepAdvanced") && strings.Contains(e.Message, "revision v1") {
			t.Errorf("event %s: %s: want no rollout of v1, which is rolled back to", e.Reason, e.Message)
		}
	}
}

// TestReleaseRollbackMovesTheCanaryFirst checks that a rollback moves the
// canary Service to the earlier revision before the route sends it a
// request: the Service may not be sent requests while its selector changes.
func TestReleaseRollbackMovesTheCanaryFirst(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	_, log, _ := rollBack(t, "rollbackcanary")
	for _, m := range log.moves(releaseCanary) {
		if m.weight != 0 || (m.next.rv != 0 && !m.reconciled) {
			t.Errorf("the canary Service moved %s: want while the route gave it weight 0, weighted again after a reconcile", m)
		}
	}
}

// TestReleaseCanaryMove edits canary.revision in the middle of a step,
// under steady requests through the gateway: v3 while v2 holds step 1
// (50%), then v1, the stable revision, while v3 holds step 0 (25%), each
// step held on capacity. Each time the route first takes the canary to 0%;
// the canary Service's selector moves only once the gateway accepted that
// route and the move's settle (release.PromotionSettle, due at
// status.release.canaryMove.at) has passed; the canary Service gets no
// request from when the gateway serves the route at 0% through its move
// until the new revision's step 0 weighs it; and the new revision gets
// requests only from then. The requests it got in the settle's first
// moments, before the gateway applied the route it had accepted, are
// logged.
func TestReleaseCanaryMove(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "canarymove")
	log := watchLog(t, ns, gvkCanaryRoute, gvkHTTPRoute, gvkService, gvkDeployment)
	k := startKubelet(t, ns)
	apply(t, releaseXR(t, ns, freePort(t), "v1", `
release: {scaleDownDelay: 10m}
traffic:
  steps: [{weight: 25, pause: 1s}, {weight: 50, pause: 1s}, {weight: 100}]`))
	serveRevisions(t, ns, releasePrimary, log)
	can := serveRevisions(t, ns, releaseCanary, log)
	p := probe{host: hostname(ns)}
	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	awaitAnswers(t, "v1 released", p, revisions(map[string]int{"v1": 100}))

	// Two ready replicas of v2 carry step 1 (50% of 4), not step 2.
	k.capReady("web-v2", 2)
	patchRevision(t, ns, "v2")
	await(t, settle, "v2 held at step 1 for step 2's capacity", releaseAt(ns, "Progressing", "AwaitingCapacity", 1, 50, "v1"))
	awaitAnswers(t, "v2 at step 1 (50%)", p, revisions(map[string]int{"v1": 50, "v2": 50}))

	// v3 in the middle of v2's step 1; one ready replica of v3 carries its
	// step 0 (25% of 4), not step 1.
	// Paced (500 a second at most), so that the probe does not load the
	// machine that it measures for a minute.
	steady := startProbeEvery(t, p, 2*time.Millisecond)
	start := time.Now()
	k.capReady("web-v3", 1)
	patchRevision(t, ns, "v3")
	await(t, 2*time.Minute, "v3 held at step 0 for step 1's capacity", releaseAt(ns, "Progressing", "AwaitingCapacity", 0, 25, "v1"))
	await(t, settle, "v3 at step 0 (25%) through the gateway", steady.answeredLast(batch, revisions(map[string]int{"v1": 75, "v3": 25})))

	// Back to v1, the stable revision, in the middle of v3's step 0.
	patchRevision(t, ns, "v1")
	await(t, 2*time.Minute, "v1 stable again, the canary Service selecting it", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		ro, sel := rollout(u), log.selected(releaseCanary)
		return ro.Phase == "Succeeded" && ro.CanaryWeight == 0 && releaseOf(u).Stable == "v1" && sel == "v1",
			fmt.Sprintf("%s; the canary Service selects %q", xrState(u), sel)
	})
	await(t, settle, "every request to v1 through the gateway", steady.answeredLast(batch, revisions(map[string]int{"v1": 100})))
	steady.stop()
	end := time.Now()

	// The route: v2 through steps 0 and 1, to 0% for the move, v3's step
	// 0, to 0% for the move back.
	if diff := cmp.Diff([]int64{0, 25, 50, 0, 25, 0}, log.canaryWeights()); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s", diff)
	}
	moves := log.moves(releaseCanary)
	if len(moves) != 3 || moves[0].to != "v2" || moves[1].from != "v2" || moves[1].to != "v3" || moves[2].from != "v3" || moves[2].to != "v1" {
		t.Fatalf("the canary Service's moves: want v1 -> v2, v2 -> v3, v3 -> v1; got:\n%s", describeMoves(moves))
	}
	for _, m := range moves {
		if m.weight != 0 || !m.routeAccepted {
			t.Errorf("the canary Service moved %s: want while the route, accepted by the gateway, gave it weight 0", m)
		}
	}
	prev := moves[0].rv
	for _, m := range moves[1:] {
		edit := log.editTo(prev, m.to)
		prev = m.rv
		recorded, due, ok := log.canaryMoveRecorded(m.from, m.to)
		if !ok {
			t.Errorf("the canary Service moved %s without status.release.canaryMove recording it first, with its time", m)
			continue
		}
		until, again := m.next.at, "until the route weighted it again"
		if m.next.rv == 0 {
			until, again = end, "until the test ended, the route never weighting it again"
		}
		// The move is due PromotionSettle after the run that found the
		// route sending the canary nothing (canaryMove.at, in whole
		// seconds), and comes no earlier.
		settled := m.at.Sub(recorded.at)
		if m.at.Before(due) {
			t.Errorf("the canary Service moved %s at %s: want at or after canaryMove.at %s, PromotionSettle (%s) after the run that recorded the move (written at %s)",
				m, m.at.Format(time.StampMilli), due.Format(time.StampMilli), release.PromotionSettle, recorded.at.Format(time.StampMilli))
		}
		// The settle starts when the gateway reports the route at 0%
		// accepted, which Traefik does before its data plane applies it
		// (at most every 500 ms): the canary Service may get the last of
		// its requests in the settle's first moments, never once the
		// gateway serves the route at 0% (batch answers in a row by v1,
		// the primary's), through the move, until the route weighs it
		// again.
		zeroed, ok := log.zeroedBefore(m.rv, releaseCanary)
		if !ok {
			t.Errorf("the canary Service moved %s: no route write took it to 0%% before", m)
			continue
		}
		served, servedBy, ok := steady.run(zeroed.at, batch, "v1")
		if !ok || !servedBy.Before(m.at) {
			t.Errorf("the canary Service moved %s at %s: want the gateway serving the route at 0%% before (%d answers in a row by v1 after the write at %s), got %t, by %s",
				m, m.at.Format(time.StampMilli), batch, zeroed.at.Format(time.StampMilli), ok, servedBy.Format(time.StampMilli))
			continue
		}
		if n := can.requestsBetween(served, until); n != 0 {
			t.Errorf("the canary Service got %d requests from when the gateway served the route at 0%% (%s) through its move %s to its next weight (%s), want none",
				n, served.Format(time.StampMilli), m, until.Format(time.StampMilli))
		}
		during := can.requestTimes(recorded.at, m.at)
		last := "none"
		if n := len(during); n > 0 {
			last = fmt.Sprintf("the last %s after the route's write at 0%%, %s after the move was recorded, %s before the move",
				during[n-1].Sub(zeroed.at).Round(time.Millisecond), during[n-1].Sub(recorded.at).Round(time.Millisecond), m.at.Sub(during[n-1]).Round(time.Millisecond))
		}
		t.Logf("the canary Service moved %s -> %s %s after the move was recorded (%s after the route's write at 0%%; the gateway served that %s after it); %d requests reached it during the settle, %s; then %s in %s %s",
			m.from, m.to, settled.Round(10*time.Millisecond), m.at.Sub(zeroed.at).Round(10*time.Millisecond), served.Sub(zeroed.at).Round(time.Millisecond),
			len(during), last, describeCounts(steady.between(m.at, until)), until.Sub(m.at).Round(10*time.Millisecond), again)
		t.Logf("the XR's status.rollout from the edit to %s (resource version %d) to the route's next weight:\n%s", m.to, edit, log.rolloutMessages(edit, m.next.rv))
	}
	// v3 answered nothing before its own step 0 weighted the canary.
	if first, ok := steady.firstAnswer("v3"); !ok || first.Before(moves[1].next.at) {
		t.Errorf("v3's first answer: %s (answered %t), want after its step 0 weighted the canary (%s)", first.Format(time.StampMilli), ok, moves[1].next.at.Format(time.StampMilli))
	}
	got := steady.between(start, end)
	for who := range got {
		if who != "v1" && who != "v2" && who != "v3" {
			t.Errorf("requests sent from %s to %s: want each answered by a revision, got %s", start.Format(time.StampMilli), end.Format(time.StampMilli), describeCounts(got))
			break
		}
	}
	t.Logf("requests through the gateway from the edit to v3 to the end: %s", describeCounts(got))
}

// TestReleaseRescuedAbortKeepsTheRelease aborts a settled release whose
// spec cannot be composed (a workload kind the Input does not allow): the
// emergency abort is rescued, and the release keeps its memory and its
// replicas.
func TestReleaseRescuedAbortKeepsTheRelease(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "rescue")
	startKubelet(t, ns)
	xr := releaseXR(t, ns, freePort(t), "v1", `traffic: {steps: [{weight: 50, pause: 1s}, {weight: 100}], rollbackWindow: 2}`)
	apply(t, xr)
	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	patchRevision(t, ns, "v2")
	await(t, settle, "v2 promoted", releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"))

	r, err := env.c.Resource(t.Context(), gvkCanaryRoute, ns)
	if err != nil {
		t.Fatal(err)
	}
	patch := `{"spec":{"traffic":{"abort":true},"release":{"workload":{"kind":"StatefulSet"}}}}`
	if _, err := r.Patch(t.Context(), releaseRoute, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "the abort rescued", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		ro := rollout(u)
		return ro.Phase == "Aborted" && ro.Reason == "AbortRescued", xrState(u)
	})
	await(t, settle, "web-v2, which the primary serves, keeps every replica", replicasOf(ns, "web-v2", 4))
	await(t, settle, "status.release kept: v2 stable, v1 in history", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		rel := releaseOf(u)
		return rel.Stable == "v2" && cmp.Equal(rel.History, []string{"v1"}), fmt.Sprintf("release: %+v", rel)
	})
}
