package release

// No request reaches a Service whose selector is changing, and no
// revision a Service may still send requests to loses its replicas: the
// ways into and out of a promotion, a held composition, a new revision, and
// what a forged or edited status or Service can do.

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// servedBy is what a run's traffic reaches: for each Service the route
// gives a weight, the revision it selects as observed (what the data plane
// uses until the new selector is applied) and the revision it is about to
// select; and the replicas the record gives the revisions the observed
// Services select.
type servedBy struct {
	// PrimaryGetsTraffic: the route sends the primary Service requests.
	PrimaryGetsTraffic bool
	// PrimarySelectorChanges: the run moves the primary Service to another
	// revision than the observed one.
	PrimarySelectorChanges bool
	// ObservedPrimaryReplicas are the replicas the record gives the
	// revision the observed primary Service selects (-1: absent from the
	// record, its workload no longer composed).
	ObservedPrimaryReplicas int32
}

func served(in Input, d Decision) servedBy {
	n, ok := d.Record.Replicas[in.ObservedPrimary]
	if !ok {
		n = -1
	}
	return servedBy{
		PrimaryGetsTraffic:      d.Rollout.CanaryWeight.Less(percent.Max),
		PrimarySelectorChanges:  d.PrimaryRevision != in.ObservedPrimary,
		ObservedPrimaryReplicas: n,
	}
}

// TestLeavingPromotionMovesNoServiceUnderTraffic: once a promotion moved
// the primary Service to the new revision, every way out of the promotion
// but its end (an abort, a new canary.revision, a changed canary side)
// first moves the primary back while every request stays on the canary,
// and the revision the primary still selects keeps its replicas.
func TestLeavingPromotionMovesNoServiceUnderTraffic(t *testing.T) {
	moved := func(f func(*Input)) Input {
		return in("v2", "d2", 6*time.Minute, func(i *Input) {
			// Both Services select v2, which carries every request.
			i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v2", "v2"
			i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
			f(i)
		})
	}
	// What the contract allows: a primary that gets traffic keeps its
	// selector on this run, and the revision it selects keeps replicas.
	safe := func(got servedBy) bool {
		if got.PrimaryGetsTraffic && got.PrimarySelectorChanges {
			return false
		}
		return !got.PrimaryGetsTraffic || got.ObservedPrimaryReplicas > 0
	}
	cases := map[string]struct {
		reason string
		in     Input
	}{
		"Abort": {
			reason: "abort after the primary moved: every request to the primary Service, whose selector moves v2 -> v1 on this run, while v2 is scaled to 0",
			in:     moved(func(i *Input) { i.Rollout.Traffic.Abort = true }),
		},
		"NewRevision": {
			reason: "canary.revision set to v3 during the promotion: the primary gets 90% (or 100% with v3 awaiting capacity) while it moves v2 -> v1, and v2 leaves the record (its Deployment is deleted)",
			in:     moved(func(i *Input) { i.Rollout.Revision, i.Rollout.CanaryDigest = "v3", "d3" }),
		},
		"CanaryChanged": {
			reason: "the canary side changed (a new digest) during the promotion: the rollout restarts at step 0, the primary gets 90% while it moves v2 -> v1",
			in:     moved(func(i *Input) { i.Rollout.CanaryDigest = "d2b" }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			got := served(tc.in, d)
			if !safe(got) {
				t.Errorf("%s\nDecide(...): primary revision %q (observed %q), canary weight %s, record %v: %+v",
					tc.reason, d.PrimaryRevision, tc.in.ObservedPrimary, d.Rollout.CanaryWeight, d.Record.Replicas, got)
			}
		})
	}
}

// TestPausedNewRevisionKeepsHeldCanaryReplicas: a rollout of v2 paused at
// 50% whose canary.revision is set to v3 holds the previous composition,
// the canary Service selecting v2 with half the requests: v2 keeps the
// replicas for them.
func TestPausedNewRevisionKeepsHeldCanaryReplicas(t *testing.T) {
	i := in("v3", "d3", 3*time.Minute, func(i *Input) {
		// The held canary Service selects v2.
		i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
		i.Rollout.Traffic.Paused = true
		p := progressingAt(1, time.Minute)
		p.Phase, p.Reason = xr.PhasePaused, rollout.ReasonPaused
		i.Rollout.Previous, i.Rollout.RouteAtWeight = p, routeAt(50)
	})
	d := Decide(i)
	if !d.Rollout.HoldPrevious || !d.Rollout.CanaryWeight.Equal(percent.Int(50)) {
		t.Fatalf("precondition: the paused run holds the previous composition at 50%%, got hold %t at %s%%", d.Rollout.HoldPrevious, d.Rollout.CanaryWeight)
	}
	// v2 carries 50% through the held canary Service: ceil(4*50/100) = 2.
	if got := d.Record.Replicas["v2"]; got < 2 {
		t.Errorf("the held canary Service sends 50%% of the requests to v2, the record gives v2 %d replicas (record %v, canary %q)", got, d.Record.Replicas, d.Record.Canary)
	}
}

// TestPromoteWaitsForCapacity: traffic.promote skips pauses, gates and
// approvals, never capacity: with 1 ready replica of 4 the rollout stays
// where it is, and the record scales the canary for the last step.
func TestPromoteWaitsForCapacity(t *testing.T) {
	i := in("v2", "d2", 30*time.Second, func(i *Input) {
		i.Status, i.ObservedPrimary, i.Ready = stableAt("v1", "d1"), "v1", ready(1)
		i.Rollout.Traffic.Promote = &xr.Promote{Revision: "v2"}
		i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(0, 0), routeAt(10)
	})
	d := Decide(i)
	// One ready replica of four carries at most 25%.
	if percent.Int(25).Less(d.Rollout.CanaryWeight) {
		t.Errorf("traffic.promote sent %s%% to a canary with 1 ready replica of 4 (phase %s, reason %s: %s)",
			d.Rollout.CanaryWeight, d.Rollout.Status.Phase, d.Rollout.Status.Reason, d.Rollout.Status.Message)
	}
}

// TestResumeShortOfStep0WaitsForCapacity: a rollout waiting at 0% to
// enter step 0, paused and resumed while the canary still has no ready
// replica, keeps waiting (it was not relocated to step 0 as if the steps had
// changed).
func TestResumeShortOfStep0WaitsForCapacity(t *testing.T) {
	waiting := &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: rollout.ReasonAwaitingCapacity, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](0),
		StepStartedAt: &metav1.Time{Time: t0}, CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
	}
	paused := in("v2", "d2", time.Minute, func(i *Input) {
		i.Status, i.ObservedPrimary, i.Ready = stableAt("v1", "d1"), "v1", ready(0)
		i.Rollout.Traffic.Paused = true
		i.Rollout.Previous, i.Rollout.RouteAtWeight = waiting, routeAt(0)
	})
	p := Decide(paused)
	resumed := in("v2", "d2", 2*time.Minute, func(i *Input) {
		i.Status, i.ObservedPrimary, i.Ready = stableAt("v1", "d1"), "v1", ready(0)
		i.Rollout.Previous, i.Rollout.RouteAtWeight = &p.Rollout.Status, routeAt(0)
	})
	d := Decide(resumed)
	if !d.Rollout.CanaryWeight.Equal(percent.Int(0)) {
		t.Errorf("resumed with the canary at 0 ready replicas: %s%% goes to it (reason %s: %s)", d.Rollout.CanaryWeight, d.Rollout.Status.Reason, d.Rollout.Status.Message)
	}
}

// TestEditedPrimaryNeverMovedBack: someone who may edit the primary
// Service points its selector at revision v9. The Service is the cluster's
// evidence of what the primary serves, and every request it gets already
// goes to v9: the run does not move it (back to v1) under that traffic on
// the word of status, which anyone who may write it may forge as well; v9
// is stable.
func TestEditedPrimaryNeverMovedBack(t *testing.T) {
	i := in("v1", "d1", time.Hour, func(i *Input) {
		i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v9"
		i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonReleased, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
	})
	d := Decide(i)
	type view struct {
		Primary, Stable string
		V9Replicas      int32
	}
	got := view{Primary: d.PrimaryRevision, Stable: d.Status.Stable.Revision, V9Replicas: d.Record.Replicas["v9"]}
	want := view{Primary: "v9", Stable: "v9", V9Replicas: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an edited primary Service: -want, +got:\n%s\nrecord %v", diff, d.Record.Replicas)
	}
}

// TestPromotionEndsAtProgressDeadline: a promotion whose primary Service is
// never observed selecting the new revision, or whose workload never gets
// its replicas ready, fails at traffic.progressDeadline: after the primary
// Service, if it moved, is back at the stable revision.
func TestPromotionEndsAtProgressDeadline(t *testing.T) {
	cases := map[string]func(*Input){
		"PrimaryNeverMoves": func(i *Input) { i.ObservedPrimary = "v1" },
		"NeverReady":        func(i *Input) { i.ObservedPrimary, i.Ready = "v2", ready(3) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			i := in("v2", "d2", 48*time.Hour, func(i *Input) {
				i.Status = stableAt("v1", "d1")
				i.Rollout.Traffic.ProgressDeadline = 30 * time.Minute
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
				f(i)
			})
			// A primary Service that moved goes back first, the canary
			// carrying every request: then the promotion fails.
			d := Decide(i)
			for run := 0; run < 2 && d.Rollout.Status.Phase == xr.PhasePromoting; run++ {
				if !d.Rollout.CanaryWeight.Equal(percent.Int(100)) || d.PrimaryRevision != "v1" {
					t.Fatalf("leaving the promotion: canary at %s%%, primary at %s", d.Rollout.CanaryWeight, d.PrimaryRevision)
				}
				i.Rollout.Previous, i.ObservedPrimary = &d.Rollout.Status, d.PrimaryRevision
				d = Decide(i)
			}
			got := []any{d.Rollout.Status.Phase, d.Rollout.Status.Reason, d.Rollout.CanaryWeight, d.PrimaryRevision}
			want := []any{xr.PhaseFailed, rollout.ReasonProgressDeadlineExceeded, percent.Zero, "v1"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("48h into a promotion with progressDeadline 30m: -want, +got:\n%s\n%s", diff, d.Rollout.Status.Message)
			}
		})
	}
}

// TestSecondPromotionKeepsRetiringDelay: v1 retires at
// promotion+scaleDownDelay; a promotion of v3 before then, which retires
// v2, leaves v1 its replicas until its own delay passed.
func TestSecondPromotionKeepsRetiringDelay(t *testing.T) {
	i := in("v3", "d3", 10*time.Second, func(i *Input) {
		i.Status = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"})
		i.Status.Retiring = &xr.RetiringRevision{Revision: "v1", At: at(30 * time.Second)}
		i.ObservedPrimary = "v3"
		p := promotingAt(100)
		p.Revision, p.CanaryDigest = "v3", "d3"
		i.Rollout.Previous, i.Rollout.RouteAtWeight = p, routeAt(100)
	})
	d := Decide(i)
	if d.Rollout.Status.Reason != ReasonPromoted {
		t.Fatalf("precondition: v3 promoted, got %s: %s", d.Rollout.Status.Reason, d.Rollout.Status.Message)
	}
	if got, ok := d.Record.Replicas["v1"]; !ok || got != 4 {
		t.Errorf("v1 retires at t0+30s, the run at t0+10s gives it %d replicas (present: %t); record %v", got, ok, d.Record.Replicas)
	}
}

// TestSettledStatusStableAfterPromotion: the run after a promotion, which
// changes nothing, writes the status the promotion wrote: what judged the
// stable revision stays on record.
func TestSettledStatusStableAfterPromotion(t *testing.T) {
	p := promotingAt(100)
	p.Analysis = []xr.AnalysisVerdict{{Name: "smoke", Step: 1, Verdict: "Passed", Time: at(time.Minute)}}
	p.BakeStartedAt = ptr.To(at(2 * time.Minute))
	promote := in("v2", "d2", 6*time.Minute, func(i *Input) {
		i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v2"
		i.Rollout.Previous, i.Rollout.RouteAtWeight = p, routeAt(100)
	})
	d1 := Decide(promote)
	if d1.Rollout.Status.Reason != ReasonPromoted {
		t.Fatalf("precondition: promoted, got %s: %s", d1.Rollout.Status.Reason, d1.Rollout.Status.Message)
	}
	next := in("v2", "d2", 7*time.Minute, func(i *Input) {
		st := d1.Status
		i.Status, i.ObservedPrimary = &st, "v2"
		i.Rollout.Previous, i.Rollout.RouteAtWeight = &d1.Rollout.Status, routeAt(0)
	})
	d2 := Decide(next)
	if diff := cmp.Diff(d1.Rollout.Status, d2.Rollout.Status); diff != "" {
		t.Errorf("the run after the promotion changes status.rollout with nothing moving: -promoted, +next:\n%s", diff)
	}
}

// TestNewRevisionWaitsForCanaryService: a rollout of v2 at 50% gets
// canary.revision v3, whose workload is ready already. The canary Service
// moves to v3 at 0%, and v2, which it selects until the new selector is
// applied, keeps its replicas.
func TestNewRevisionWaitsForCanaryService(t *testing.T) {
	i := in("v3", "d3", 3*time.Minute, func(i *Input) {
		// The canary Service still selects v2.
		i.Status, i.ObservedPrimary, i.ObservedCanary, i.Ready = stableAt("v1", "d1"), "v1", "v2", ready(4)
		i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(1, time.Minute), routeAt(50)
	})
	d := Decide(i)
	_, v2Kept := d.Record.Replicas["v2"]
	if percent.Int(0).Less(d.Rollout.CanaryWeight) || !v2Kept {
		t.Errorf("the run that moves the canary Service from v2 to v3 sends it %s%% and drops v2 from the record %v", d.Rollout.CanaryWeight, d.Record.Replicas)
	}
}

// TestCanaryServiceMovesOnlyWithoutTraffic: whatever moves the canary
// Service to another revision (a new revision in the middle of a step, a
// return to the stable revision, a rollback, a new revision during a
// promotion or once its unwinding is done), the route first sends the
// canary nothing, and the Service keeps selecting its revision until the
// observed route carries that, accepted, for PromotionSettle.
func TestCanaryServiceMovesOnlyWithoutTraffic(t *testing.T) {
	v3At50 := &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: rollout.ReasonAdvanced, Revision: "v3", CanaryDigest: "d3", Step: ptr.To[int32](1),
		StepStartedAt: &metav1.Time{Time: t0}, CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50),
	}
	cases := map[string]struct {
		reason   string
		in       Input
		from, to string
	}{
		"NewRevisionMidStep": {
			reason: "v2 at 50%, canary.revision set to v3",
			in: in("v3", "d3", 3*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
				i.Rollout.Previous = progressingAt(1, time.Minute)
			}),
			from: "v2", to: "v3",
		},
		"ReturnToStable": {
			reason: "v2 at 50%, canary.revision set back to the stable v1",
			in: in("v1", "d1", 3*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
				i.Rollout.Previous = progressingAt(1, time.Minute)
			}),
			from: "v2", to: "v1",
		},
		"Rollback": {
			reason: "v3 at 50% over the stable v2, canary.revision set to v1 of the history: a rollback",
			in: in("v1", "d1", 3*time.Minute, func(i *Input) {
				i.Status = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1", SucceededAt: at(0)})
				i.ObservedPrimary, i.ObservedCanary = "v2", "v3"
				i.Rollout.Previous, i.Rollout.Traffic.RollbackWindow = v3At50, 3
			}),
			from: "v3", to: "v1",
		},
		"NewRevisionWhilePromoting": {
			reason: "v2 promoting with every request on the canary, the primary not moved yet, canary.revision set to v3",
			in: in("v3", "d3", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
				i.Rollout.Previous = promotingAt(100)
			}),
			from: "v2", to: "v3",
		},
		"NewRevisionAfterUnwinding": {
			reason: "the promotion of v2 unwound (the primary back on v1, every request still on the canary), v3 waiting",
			in: in("v3", "d3", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
				unwound := promotingAt(100)
				unwound.Reason = ReasonPromotionStarted
				i.Rollout.Previous = unwound
			}),
			from: "v2", to: "v3",
		},
	}
	canaryOf := func(in Input, d Decision) string {
		if d.CanaryRevision != "" {
			return d.CanaryRevision
		}
		return in.Rollout.Revision
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The route still sends the canary requests: it goes to 0%
			// first, its Service keeps its revision.
			busy := tc.in
			busy.RouteWithoutCanary = func() (bool, string) { return false, "the route sends the canary 50%" }
			d := Decide(busy)
			if got := canaryOf(busy, d); got != tc.from || !d.Rollout.CanaryWeight.Equal(percent.Int(0)) || d.Rollout.Active || d.Status.CanaryMove != nil {
				t.Fatalf("%s, the route still sending the canary requests: the canary Service must keep %s at 0%% with no canary-only rule; got %s at %s%% (active %t), move %v: %s",
					tc.reason, tc.from, got, d.Rollout.CanaryWeight, d.Rollout.Active, d.Status.CanaryMove, d.Rollout.Status.Message)
			}

			// The observed route sends it nothing: the move is due
			// PromotionSettle later, the Service still on its revision.
			drained := tc.in
			drained.Rollout.Previous, drained.Status = &d.Rollout.Status, &d.Status
			drained.RouteWithoutCanary = func() (bool, string) { return true, "" }
			d = Decide(drained)
			want := &xr.CanaryMove{From: tc.from, To: tc.to, At: metav1.Time{Time: drained.Rollout.Now.Add(PromotionSettle)}}
			if got := canaryOf(drained, d); got != tc.from || !d.Rollout.CanaryWeight.Equal(percent.Int(0)) || !cmp.Equal(d.Status.CanaryMove, want) {
				t.Fatalf("%s, the route observed sending the canary nothing: the move must wait %s with the Service on %s; got %s at %s%%, move %v",
					tc.reason, PromotionSettle, tc.from, got, d.Rollout.CanaryWeight, d.Status.CanaryMove)
			}

			// PromotionSettle later, still nothing: the Service moves.
			settled := drained
			settled.Rollout.Now = drained.Rollout.Now.Add(PromotionSettle)
			settled.Rollout.Previous, settled.Status = &d.Rollout.Status, &d.Status
			d = Decide(settled)
			if got := canaryOf(settled, d); got != tc.to || d.Status.CanaryMove != nil {
				t.Errorf("%s, the route sending the canary nothing for %s: the Service must move to %s; got %s, move %v", tc.reason, PromotionSettle, tc.to, got, d.Status.CanaryMove)
			}
			if d.Rollout.Requeue != rollout.MinRequeue {
				t.Errorf("%s: the run that moves the canary Service must ask for the next run %s later, to find it moved; it asks %s", tc.reason, rollout.MinRequeue, d.Rollout.Requeue)
			}
			if strings.Contains(d.Rollout.Status.Message, " at 20") {
				t.Errorf("%s: the message must not name the move's time once it moved: %s", tc.reason, d.Rollout.Status.Message)
			}
		})
	}
}

// TestCanaryServiceMovesUnderAZeroStep: a release whose first step is at
// 0% (blue/green: the canary waits for an approval, or testers reach it by
// matches or a preview) moves the canary Service to the new revision once
// the route sends it nothing: the engine's decision is active on every run
// of that step, and the run that moves the Service composes it inactive,
// so the step's canary-only rules come with the next run, never with the
// move.
func TestCanaryServiceMovesUnderAZeroStep(t *testing.T) {
	zeroFirst := func(now time.Duration, f func(*Input)) Input {
		return in("v2", "d2", now, func(i *Input) {
			i.Rollout.Traffic.Steps = []xr.Step{{Weight: percent.Int(0), Approval: true}, {Weight: percent.Int(100)}}
			// v1 is stable; the canary Service still selects it.
			i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v1"
			i.RouteWithoutCanary = func() (bool, string) { return true, "" }
			f(i)
		})
	}
	first := zeroFirst(time.Minute, func(*Input) {})
	d := Decide(first)
	want := &xr.CanaryMove{From: "v1", To: "v2", At: metav1.Time{Time: first.Rollout.Now.Add(PromotionSettle)}}
	if d.CanaryRevision != "v1" || d.Rollout.Active || !d.Rollout.CanaryWeight.Equal(percent.Int(0)) || !cmp.Equal(d.Status.CanaryMove, want) {
		t.Fatalf("v2 starts at its 0%% step, the route sending v1's Service nothing: the move must wait %s with the Service on v1 and no canary-only rule; got %q (active %t) at %s%%, move %v: %s",
			PromotionSettle, d.CanaryRevision, d.Rollout.Active, d.Rollout.CanaryWeight, d.Status.CanaryMove, d.Rollout.Status.Message)
	}

	settled := zeroFirst(time.Minute+PromotionSettle, func(i *Input) { i.Rollout.Previous, i.Status = &d.Rollout.Status, &d.Status })
	d = Decide(settled)
	if d.CanaryRevision != "" || d.Status.CanaryMove != nil || d.Rollout.Active || !d.Rollout.CanaryWeight.Equal(percent.Int(0)) {
		t.Fatalf("%s later, the canary Service must move to v2 on a run whose route sends it nothing; got %q (active %t) at %s%%, move %v: %s",
			PromotionSettle, d.CanaryRevision, d.Rollout.Active, d.Rollout.CanaryWeight, d.Status.CanaryMove, d.Rollout.Status.Message)
	}

	moved := zeroFirst(time.Minute+PromotionSettle+rollout.MinRequeue, func(i *Input) {
		i.Rollout.Previous, i.Status, i.ObservedCanary = &d.Rollout.Status, &d.Status, "v2"
	})
	d = Decide(moved)
	if d.CanaryRevision != "" || !d.Rollout.Active || d.Rollout.Status.Phase != xr.PhaseProgressing || d.Rollout.Status.Step == nil || *d.Rollout.Status.Step != 0 {
		t.Errorf("with the Service observed on v2, step 0 is under way: got %q (active %t), %s step %v: %s",
			d.CanaryRevision, d.Rollout.Active, d.Rollout.Status.Phase, d.Rollout.Status.Step, d.Rollout.Status.Message)
	}
}

// TestCanaryServiceMoveStartsOverWhenTrafficReturns: a move under way
// whose route sends the canary requests again (a stale apply, a person)
// starts its wait over once the route sends it nothing again.
func TestCanaryServiceMoveStartsOverWhenTrafficReturns(t *testing.T) {
	i := in("v3", "d3", 3*time.Minute, func(i *Input) {
		i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
		i.Status.CanaryMove = &xr.CanaryMove{From: "v2", To: "v3", At: at(3*time.Minute - time.Second)}
		i.Rollout.Previous = progressingAt(0, 2*time.Minute)
		i.Rollout.Previous.Revision, i.Rollout.Previous.CanaryWeight, i.Rollout.Previous.PrimaryWeight = "v3", percent.Zero, percent.Max
		i.RouteWithoutCanary = func() (bool, string) { return false, "the route sends the canary 10%" }
	})
	d := Decide(i)
	if d.CanaryRevision != "v2" || d.Status.CanaryMove != nil {
		t.Errorf("a move whose route carries the canary again must keep the Service on v2 and forget its time; got %q, %v", d.CanaryRevision, d.Status.CanaryMove)
	}
}

// TestPausedRevisionEditMovesNothing: a paused rollout whose revision is
// edited holds its composition (the canary Service as it was): the move
// waits for paused to be cleared, and the weight stays.
func TestPausedRevisionEditMovesNothing(t *testing.T) {
	i := in("v3", "d3", 3*time.Minute, func(i *Input) {
		i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", "v2"
		i.Rollout.Previous, i.Rollout.Traffic.Paused = progressingAt(1, time.Minute), true
		i.RouteWithoutCanary = func() (bool, string) { return false, "the route sends the canary 50%" }
	})
	d := Decide(i)
	if !d.Rollout.HoldPrevious || !d.Rollout.CanaryWeight.Equal(percent.Int(50)) || d.Status.CanaryMove != nil {
		t.Errorf("paused: the previous composition is held at 50%% and nothing moves; got hold %t at %s%%, move %v", d.Rollout.HoldPrevious, d.Rollout.CanaryWeight, d.Status.CanaryMove)
	}
}

// TestPromotionSettleHostileEdits attacks the promotion's settle time
// (status.rollout.nextStepAt while Promoting) and the rollback's wait for
// the canary Service, at their seams with what the status held before and
// with the other ways through a promotion.
func TestPromotionSettleHostileEdits(t *testing.T) {
	type want struct {
		phase  xr.Phase
		reason string
		weight percent.Percent
		// primary is the revision the primary Service selects after the
		// run.
		primary string
		// nextStepAt is status.rollout.nextStepAt after t0; nil for none.
		nextStepAt *time.Duration
		// requeueAtMost bounds when Crossplane is asked to call again.
		requeueAtMost time.Duration
	}
	// settling is v2 promoting at 100%, the route found there and
	// accepted, the primary Service still at v1; nextStepAt (after t0) is
	// when it moves.
	settling := func(now time.Duration, movesAt *time.Duration, f func(*Input)) Input {
		return in("v2", "d2", now, func(i *Input) {
			i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
			i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
			if movesAt != nil {
				i.Rollout.Previous.NextStepAt = ptr.To(at(*movesAt))
			}
			f(i)
		})
	}
	now := 6 * time.Minute
	cases := map[string]struct {
		reason string
		in     Input
		want   want
	}{
		"SettleStarts": {
			reason: "Control: the run that first finds the route at 100% sets the primary's move PromotionSettle later and asks to be called then.",
			in:     settling(now, nil, func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"SettleIsDue": {
			reason: "Control: at nextStepAt the primary Service moves, the route still at 100% to the canary.",
			in:     settling(now, ptr.To(now), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v2",
				nextStepAt: ptr.To(now), requeueAtMost: rollout.MinRequeue,
			},
		},
		"ForgedFarFutureNextStepAt": {
			reason: "Attack: a nextStepAt a year ahead (written by hand, or by a replica whose clock runs ahead) must not hold the promotion for a year nor ask Crossplane to call back in a year: the engine counts a time nobody reached as now (rollout.stepStartedAt), and the settle is PromotionSettle at most, the requeue MaxRequeue at most.",
			in:     settling(now, ptr.To(365*24*time.Hour), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"ClockAheadByAnHour": {
			reason: "Attack: a replica whose clock ran an hour ahead wrote nextStepAt: the promotion waits PromotionSettle at most from now, not an hour.",
			in:     settling(now, ptr.To(now+time.Hour), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"ProgressDeadlineDuringSettle": {
			reason: "Control: a deadline that passes while the settle waits (even a forged one far ahead) fails the promotion; the primary never moved, so the stable revision takes every request at once.",
			in: settling(now, ptr.To(365*24*time.Hour), func(i *Input) {
				i.Rollout.Traffic.ProgressDeadline = time.Minute
			}),
			want: want{phase: xr.PhaseFailed, reason: rollout.ReasonProgressDeadlineExceeded, weight: percent.Int(0), primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"AbortDuringSettle": {
			reason: "Control: an abort while the settle waits goes straight to 0% without unwinding (the primary Service never moved), and leaves no nextStepAt.",
			in:     settling(now, ptr.To(now+5*time.Second), func(i *Input) { i.Rollout.Traffic.Abort = true }),
			want:   want{phase: xr.PhaseAborted, reason: rollout.ReasonAborted, weight: percent.Int(0), primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"PauseDuringSettle": {
			reason: "Control: a pause while the settle waits moves nothing and forgets the time: the settle starts again on resume.",
			in:     settling(now, ptr.To(now+5*time.Second), func(i *Input) { i.Rollout.Traffic.Paused = true }),
			want:   want{phase: xr.PhasePromoting, reason: rollout.ReasonPaused, weight: percent.Int(100), primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"NewRevisionDuringSettle": {
			reason: "Control: canary.revision set to v3 while v2 settles: the primary never moved, v3 starts at 0% (its canary Service moves from v2 to v3 with no request), and the promotion's nextStepAt is not v3's.",
			in: settling(now, ptr.To(now+5*time.Second), func(i *Input) {
				i.Rollout.Revision, i.Rollout.CanaryDigest, i.ObservedCanary = "v3", "d3", "v2"
			}),
			want: want{phase: xr.PhaseProgressing, reason: rollout.ReasonAwaitingCapacity, weight: percent.Int(0), primary: "v1", nextStepAt: ptr.To(now + time.Minute), requeueAtMost: rollout.HoldRequeue},
		},
		"PromotedLeavesNoNextStepAt": {
			reason: "Control: once the primary is observed at v2 and ready, the release is Succeeded without the promotion's nextStepAt.",
			in:     settling(now, ptr.To(now-time.Second), func(i *Input) { i.ObservedPrimary = "v2" }),
			want:   want{phase: xr.PhaseSucceeded, reason: ReasonPromoted, weight: percent.Int(0), primary: "v2", requeueAtMost: rollout.MaxRequeue},
		},
		"RouteFoundStaleAfterThePrimaryMoved": {
			reason: "Attack: after the primary Service moved to v2, the route is found not at 100% accepted (a new generation not yet accepted, or a gateway that reports Pending after a restart): nothing is known of what the data plane sends the primary, so its selector must not change on this run (it moves back to v1, and then v2 again after another settle, each a Service moved with no proof it gets no request).",
			in: settling(now, ptr.To(now-time.Minute), func(i *Input) {
				i.ObservedPrimary = "v2"
				i.Rollout.RouteAtWeight = func(percent.Percent) (bool, string) { return false, "the gateway has not accepted generation 8" }
			}),
			want: want{phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v2", requeueAtMost: rollout.HoldRequeue},
		},
		"NoAcceptanceAsked": {
			reason: "Control: with requireAcceptedRoute false the settle still runs, from the run after the one that composed 100%.",
			in: settling(now, nil, func(i *Input) {
				i.Rollout.Traffic.RequireAcceptedRoute = false
				i.Rollout.RouteAtWeight = nil
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"RollbackHoldCountsTowardTheDeadline": {
			reason: "Control: a rollback whose canary Service is never observed at the revision fails at its progressDeadline rather than holding forever.",
			in: in("v1", "d1", time.Hour+2*time.Minute, func(i *Input) {
				i.Rollout.Traffic.RollbackWindow, i.Rollout.Traffic.ProgressDeadline = 3, time.Minute
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"}), "v2", "v2"
				i.Rollout.Previous = &xr.RolloutStatus{
					Phase: xr.PhasePromoting, Reason: rollout.ReasonAwaitingCapacity, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2),
					StepStartedAt: ptr.To(at(time.Hour)), CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
				}
			}),
			want: want{phase: xr.PhaseFailed, reason: rollout.ReasonProgressDeadlineExceeded, weight: percent.Int(0), primary: "v2", requeueAtMost: rollout.MaxRequeue},
		},
		"PromotionFromTheLastStepWithoutACanaryService": {
			reason: "Control: a promotion from a last step already at 100% never waits for the canary Service (only a weight below 100 does), so an unobserved canary Service cannot stall it.",
			in: in("v2", "d2", 5*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", ""
				i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(2, time.Minute), routeAt(100)
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1",
				nextStepAt: ptr.To(5*time.Minute + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			s := d.Rollout.Status
			got := want{phase: s.Phase, reason: s.Reason, weight: d.Rollout.CanaryWeight, primary: d.PrimaryRevision, requeueAtMost: tc.want.requeueAtMost}
			if s.NextStepAt != nil {
				got.nextStepAt = ptr.To(s.NextStepAt.Sub(t0))
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s\nmessage: %s", tc.reason, diff, s.Message)
			}
			if d.Rollout.Requeue > tc.want.requeueAtMost {
				t.Errorf("%s\nDecide(...).Rollout.Requeue: want at most %s, got %s", tc.reason, tc.want.requeueAtMost, d.Rollout.Requeue)
			}
		})
	}
}
