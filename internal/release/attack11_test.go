package release

// Attacks on the promotion's settle time (status.rollout.nextStepAt while
// Promoting) and on the rollback's wait for the canary Service, at their
// seams with what the status held before and with the other ways through a
// promotion.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func TestPromotionSettleAttacks(t *testing.T) {
	type want struct {
		phase  xr.Phase
		reason string
		weight int32
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
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"SettleIsDue": {
			reason: "Control: at nextStepAt the primary Service moves, the route still at 100% to the canary.",
			in:     settling(now, ptr.To(now), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v2",
				nextStepAt: ptr.To(now), requeueAtMost: rollout.MinRequeue,
			},
		},
		"ForgedFarFutureNextStepAt": {
			reason: "Attack: a nextStepAt a year ahead (written by hand, or by a replica whose clock runs ahead) must not hold the promotion for a year nor ask Crossplane to call back in a year: the engine counts a time nobody reached as now (rollout.stepStartedAt), and the settle is PromotionSettle at most, the requeue MaxRequeue at most.",
			in:     settling(now, ptr.To(365*24*time.Hour), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"ClockAheadByAnHour": {
			reason: "Attack: a replica whose clock ran an hour ahead wrote nextStepAt: the promotion waits PromotionSettle at most from now, not an hour.",
			in:     settling(now, ptr.To(now+time.Hour), func(*Input) {}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v1",
				nextStepAt: ptr.To(now + PromotionSettle), requeueAtMost: PromotionSettle,
			},
		},
		"ProgressDeadlineDuringSettle": {
			reason: "Control: a deadline that passes while the settle waits (even a forged one far ahead) fails the promotion; the primary never moved, so the stable revision takes every request at once.",
			in: settling(now, ptr.To(365*24*time.Hour), func(i *Input) {
				i.Rollout.Traffic.ProgressDeadline = time.Minute
			}),
			want: want{phase: xr.PhaseFailed, reason: rollout.ReasonProgressDeadlineExceeded, weight: 0, primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"AbortDuringSettle": {
			reason: "Control: an abort while the settle waits goes straight to 0% without unwinding (the primary Service never moved), and leaves no nextStepAt.",
			in:     settling(now, ptr.To(now+5*time.Second), func(i *Input) { i.Rollout.Traffic.Abort = true }),
			want:   want{phase: xr.PhaseAborted, reason: rollout.ReasonAborted, weight: 0, primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"PauseDuringSettle": {
			reason: "Control: a pause while the settle waits moves nothing and forgets the time: the settle starts again on resume.",
			in:     settling(now, ptr.To(now+5*time.Second), func(i *Input) { i.Rollout.Traffic.Paused = true }),
			want:   want{phase: xr.PhasePromoting, reason: rollout.ReasonPaused, weight: 100, primary: "v1", requeueAtMost: rollout.MaxRequeue},
		},
		"NewRevisionDuringSettle": {
			reason: "Control: canary.revision set to v3 while v2 settles: the primary never moved, v3 starts at 0% (its canary Service moves from v2 to v3 with no request), and the promotion's nextStepAt is not v3's.",
			in: settling(now, ptr.To(now+5*time.Second), func(i *Input) {
				i.Rollout.Revision, i.Rollout.CanaryDigest, i.ObservedCanary = "v3", "d3", "v2"
			}),
			want: want{phase: xr.PhaseProgressing, reason: rollout.ReasonAwaitingCapacity, weight: 0, primary: "v1", nextStepAt: ptr.To(now + time.Minute), requeueAtMost: rollout.HoldRequeue},
		},
		"PromotedLeavesNoNextStepAt": {
			reason: "Control: once the primary is observed at v2 and ready, the release is Succeeded without the promotion's nextStepAt.",
			in:     settling(now, ptr.To(now-time.Second), func(i *Input) { i.ObservedPrimary = "v2" }),
			want:   want{phase: xr.PhaseSucceeded, reason: ReasonPromoted, weight: 0, primary: "v2", requeueAtMost: rollout.MaxRequeue},
		},
		"RouteFoundStaleAfterThePrimaryMoved": {
			reason: "Attack: after the primary Service moved to v2, the route is found not at 100% accepted (a new generation not yet accepted, or a gateway that reports Pending after a restart): nothing is known of what the data plane sends the primary, so its selector must not change on this run (it moves back to v1, and then v2 again after another settle, each a Service moved with no proof it gets no request).",
			in: settling(now, ptr.To(now-time.Minute), func(i *Input) {
				i.ObservedPrimary = "v2"
				i.Rollout.RouteAtWeight = func(int32) (bool, string) { return false, "the gateway has not accepted generation 8" }
			}),
			want: want{phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v2", requeueAtMost: rollout.HoldRequeue},
		},
		"NoAcceptanceAsked": {
			reason: "Control: with requireAcceptedRoute false the settle still runs, from the run after the one that composed 100%.",
			in: settling(now, nil, func(i *Input) {
				i.Rollout.Traffic.RequireAcceptedRoute = false
				i.Rollout.RouteAtWeight = nil
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v1",
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
					StepStartedAt: ptr.To(at(time.Hour)), CanaryWeight: 0, PrimaryWeight: 100,
				}
			}),
			want: want{phase: xr.PhaseFailed, reason: rollout.ReasonProgressDeadlineExceeded, weight: 0, primary: "v2", requeueAtMost: rollout.MaxRequeue},
		},
		"PromotionFromTheLastStepWithoutACanaryService": {
			reason: "Control: a promotion from a last step already at 100% never waits for the canary Service (only a weight below 100 does), so an unobserved canary Service cannot stall it.",
			in: in("v2", "d2", 5*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v1", "d1"), "v1", ""
				i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(2, time.Minute), routeAt(100)
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: 100, primary: "v1",
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
