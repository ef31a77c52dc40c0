package release

import (
	"fmt"
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

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.Time{Time: t0.Add(d)} }

// podinfo is the contract's release: four replicas, a Deployment per
// revision, 30s before a retired revision scales down.
func podinfo() *xr.Release {
	return &xr.Release{
		Selector: map[string]string{"app": "podinfo"}, RevisionLabel: "version", Replicas: 4,
		Workload: &xr.Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo-{{revision}}"}, ScaleDownDelay: 30 * time.Second,
	}
}

// steps are 10% and 50% for a minute each, then 100%.
func steps() []xr.Step {
	return []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50), Pause: time.Minute}, {Weight: percent.Int(100)}}
}

// routeAt is a gateway whose observed route carries canary weight w,
// accepted.
func routeAt(w int32) func(percent.Percent) (bool, string) {
	return func(asked percent.Percent) (bool, string) {
		if asked.Equal(percent.Int(w)) {
			return true, ""
		}
		return false, fmt.Sprintf("the route carries %d%%, not %s%%", w, asked)
	}
}

// ready is every revision's workload with n ready replicas.
func ready(n int32) func(string) (int32, bool) { return func(string) (int32, bool) { return n, true } }

// stableAt is status.release with v1 stable (digest d1) since t0.
func stableAt(revision, digest string, history ...xr.ReleasedRevision) *xr.ReleaseStatus {
	return &xr.ReleaseStatus{Stable: &xr.StableRevision{Revision: revision, Digest: digest, Since: at(0)}, History: history}
}

// in is revision rev (digest) of the release at now, changed by f.
func in(rev, digest string, now time.Duration, f func(*Input)) Input {
	i := Input{
		Rollout: rollout.Input{
			Traffic:  xr.Traffic{Steps: steps(), RequireAcceptedRoute: true},
			Revision: rev, CanaryDigest: digest, Now: t0.Add(now), RouteAtWeight: routeAt(0),
		},
		Release: podinfo(),
		Ready:   ready(4),
		// The canary Service selects the canary's revision already.
		ObservedCanary: rev,
	}
	f(&i)
	return i
}

// progressingAt is status.rollout of revision v2 at step i since start.
func progressingAt(i int32, start time.Duration) *xr.RolloutStatus {
	w := steps()[i].Weight
	return &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: rollout.ReasonAdvanced, Revision: "v2", CanaryDigest: "d2", Step: ptr.To(i),
		StepStartedAt: &metav1.Time{Time: t0.Add(start)}, CanaryWeight: w, PrimaryWeight: w.Rest(),
	}
}

// promotingAt is status.rollout of revision v2 promoting at weight w.
func promotingAt(whole int32) *xr.RolloutStatus {
	w := percent.Int(whole)
	return &xr.RolloutStatus{
		Phase: xr.PhasePromoting, Reason: ReasonPromotionStarted, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](2),
		StepStartedAt: &metav1.Time{Time: t0}, CanaryWeight: w, PrimaryWeight: w.Rest(),
	}
}

func TestDecide(t *testing.T) {
	type want struct {
		phase    xr.Phase
		reason   string
		weight   percent.Percent
		primary  string
		stable   string
		history  []string
		retiring string
		replicas map[string]int32
		events   []string
		// movesAt is status.rollout.nextStepAt, after t0, while promoting:
		// when the primary Service moves.
		movesAt *time.Duration
	}
	cases := map[string]struct {
		reason string
		in     Input
		want   want
	}{
		"FirstRelease": {
			reason: "The first revision has nothing to compare to: it is stable at once, the primary serves it, said once.",
			in:     in("v1", "d1", 0, func(*Input) {}),
			want: want{
				phase: xr.PhaseSucceeded, reason: ReasonReleased, weight: percent.Int(0), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4}, events: []string{ReasonReleased},
			},
		},
		"Stable": {
			reason: "A canary at the stable revision has nothing to roll out: the primary serves every request, and nothing is said.",
			in: in("v1", "d1", time.Hour, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonReleased, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2), CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100)}
			}),
			want: want{phase: xr.PhaseSucceeded, reason: ReasonReleased, weight: percent.Int(0), primary: "v1", stable: "v1", replicas: map[string]int32{"v1": 4}},
		},
		"NewRevisionStarts": {
			reason: "Changing canary.revision is the one edit of a release: the rollout starts at step 0; the canary is scaled ahead of its traffic, for the next step's 50%.",
			in: in("v2", "d2", time.Hour, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonReleased, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: rollout.ReasonStarted, weight: percent.Int(10), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 2}, events: []string{rollout.ReasonStarted},
			},
		},
		"CanaryNotReadyWaitsAtZero": {
			reason: "A canary whose workload cannot carry the first step's weight waits at 0%: no request reaches pods that are not there.",
			in: in("v2", "d2", time.Hour, func(i *Input) {
				i.Status, i.ObservedPrimary, i.Ready = stableAt("v1", "d1"), "v1", ready(0)
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonReleased, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: rollout.ReasonAwaitingCapacity, weight: percent.Int(0), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 2}, events: []string{rollout.ReasonStarted},
			},
		},
		"StepWaitsForCapacity": {
			reason: "A move to the next step waits until the canary's ready replicas carry its weight (2 of 4 for 50%).",
			in: in("v2", "d2", 2*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary, i.Ready = stableAt("v1", "d1"), "v1", ready(1)
				i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(0, 0), routeAt(10)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: rollout.ReasonAwaitingCapacity, weight: percent.Int(10), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 2},
			},
		},
		"LastStepStartsThePromotion": {
			reason: "Once the last step passed, the promotion starts: the route already sends every request to the canary, but the primary Service moves only PromotionSettle later, once the gateway serves the route.",
			in: in("v2", "d2", 5*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = progressingAt(2, time.Minute), routeAt(100)
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{ReasonPromotionStarted}, movesAt: ptr.To(5*time.Minute + PromotionSettle),
			},
		},
		"PromotionSettles": {
			reason: "Until the time the route was first found carrying every request to the canary plus PromotionSettle, the primary Service stays where it is, and the time stays as set.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
				i.Rollout.Previous.NextStepAt = ptr.To(at(6*time.Minute + time.Second))
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, movesAt: ptr.To(6*time.Minute + time.Second),
			},
		},
		"PromotionSettleNeverLonger": {
			reason: "A nextStepAt further than PromotionSettle away (a status written by hand) is brought back to it: a promotion is never held longer by its status.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
				i.Rollout.Previous.NextStepAt = ptr.To(at(24 * time.Hour))
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, movesAt: ptr.To(6*time.Minute + PromotionSettle),
			},
		},
		"PromotionSettleRestartsWithoutTheRoute": {
			reason: "A route not found at 100% holds the promotion, and the settle time starts again once it is.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(50)
				i.Rollout.Previous.NextStepAt = ptr.To(at(5 * time.Minute))
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4},
			},
		},
		"PromotionWaitsForThePrimary": {
			reason: "Once settled, the primary Service moves; the route moves back to the primary only once the primary Service is observed selecting the new revision.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
				i.Rollout.Previous.NextStepAt = ptr.To(at(6 * time.Minute))
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v2", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, movesAt: ptr.To(6 * time.Minute),
			},
		},
		"Promoted": {
			reason: "With the primary selecting the new revision and its replicas ready, the revision is stable: the route sends every request to the primary, the old revision goes to history and retires after scaleDownDelay.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v2"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
			}),
			want: want{
				phase: xr.PhaseSucceeded, reason: ReasonPromoted, weight: percent.Int(0), primary: "v2", stable: "v2", history: []string{"v1"}, retiring: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{ReasonPromoted},
			},
		},
		"RetiredScalesDown": {
			reason: "Once scaleDownDelay passed, the retired revision gets no replicas.",
			in: in("v2", "d2", time.Hour, func(i *Input) {
				i.Status, i.ObservedPrimary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"}), "v2"
				i.Status.Retiring = &xr.RetiringRevision{Revision: "v1", At: at(7 * time.Minute)}
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhaseSucceeded, reason: ReasonPromoted, weight: percent.Int(0), primary: "v2", stable: "v2", history: []string{"v1"}, retiring: "v1",
				replicas: map[string]int32{"v1": 0, "v2": 4},
			},
		},
		"FastRollback": {
			reason: "A revision among the last rollbackWindow stable ones, unchanged, goes straight to its promotion: every request to it at once.",
			in: in("v1", "d1", time.Hour, func(i *Input) {
				i.Rollout.Traffic.RollbackWindow = 3
				i.Status, i.ObservedPrimary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"}), "v2"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v2", stable: "v2", history: []string{"v1"},
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{ReasonPromotionStarted},
			},
		},
		"RollbackWaitsForTheCanaryService": {
			reason: "A rollback moves the canary Service to the earlier revision on the run that starts it: no request goes to it while its selector changes, only once it is observed selecting the revision.",
			in: in("v1", "d1", time.Hour, func(i *Input) {
				i.Rollout.Traffic.RollbackWindow = 3
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"}), "v2", "v2"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhasePromoting, reason: rollout.ReasonAwaitingCapacity, weight: percent.Int(0), primary: "v2", stable: "v2", history: []string{"v1"},
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{ReasonPromotionStarted},
			},
		},
		"RollbackOfAChangedRevisionRollsOut": {
			reason: "A history entry of another digest (the revision changed since, or a forged entry) rolls back nothing: the revision goes through the steps.",
			in: in("v1", "d1", time.Hour, func(i *Input) {
				i.Rollout.Traffic.RollbackWindow = 3
				i.Status, i.ObservedPrimary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "other"}), "v2"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v2", CanaryDigest: "d2", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: rollout.ReasonStarted, weight: percent.Int(10), primary: "v2", stable: "v2", history: []string{"v1"},
				replicas: map[string]int32{"v1": 2, "v2": 4}, events: []string{rollout.ReasonStarted},
			},
		},
		"RolledBack": {
			reason: "A rollback ends as RolledBack: the earlier revision is stable again, the one it replaces goes to history.",
			in: in("v1", "d1", time.Hour, func(i *Input) {
				i.Rollout.Traffic.RollbackWindow = 3
				i.Status, i.ObservedPrimary = stableAt("v2", "d2", xr.ReleasedRevision{Revision: "v1", Digest: "d1"}), "v1"
				p := promotingAt(100)
				p.Revision, p.CanaryDigest = "v1", "d1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = p, routeAt(100)
			}),
			want: want{
				phase: xr.PhaseSucceeded, reason: ReasonRolledBack, weight: percent.Int(0), primary: "v1", stable: "v1", history: []string{"v2"}, retiring: "v2",
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{ReasonRolledBack},
			},
		},
		"AbortDuringPromotionPrimaryMoved": {
			reason: "An abort after the promotion moved the primary Service: the primary moves back to the stable revision while every request stays on the canary, which selects v2 and keeps its replicas; the primary's too.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Rollout.Traffic.Abort = true
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v2"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
			}),
			want: want{
				phase: xr.PhasePromoting, reason: ReasonPromotionStarted, weight: percent.Int(100), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4},
			},
		},
		"AbortDuringPromotionPrimaryBack": {
			reason: "An abort during a promotion whose primary selects the stable revision: every request goes back to it, and v2, which the route still sends everything, keeps its replicas until the route is observed at 0.",
			in: in("v2", "d2", 6*time.Minute, func(i *Input) {
				i.Rollout.Traffic.Abort = true
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				i.Rollout.Previous, i.Rollout.RouteAtWeight = promotingAt(100), routeAt(100)
			}),
			want: want{
				phase: xr.PhaseAborted, reason: rollout.ReasonAborted, weight: percent.Int(0), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 4}, events: []string{rollout.EventAborted},
			},
		},
		"AbortedRouteAtZero": {
			reason: "Once the route is observed sending the aborted canary nothing, its revision gets no replicas.",
			in: in("v2", "d2", 7*time.Minute, func(i *Input) {
				i.Rollout.Traffic.Abort = true
				i.Status, i.ObservedPrimary = stableAt("v1", "d1"), "v1"
				p := promotingAt(0)
				p.Phase, p.Reason = xr.PhaseAborted, rollout.ReasonAborted
				i.Rollout.Previous, i.Rollout.RouteAtWeight = p, routeAt(0)
			}),
			want: want{
				phase: xr.PhaseAborted, reason: rollout.ReasonAborted, weight: percent.Int(0), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v2": 0},
			},
		},
		"ForgedStableDistrusted": {
			reason: "Attack: status.release naming a stable revision that never rolled out (v9) is not believed: the primary Service observed selecting v1 says which is stable, so v9 rolls out through the steps (the canary Service moves to it at 0% first).",
			in: in("v9", "d9", time.Hour, func(i *Input) {
				i.Status, i.ObservedPrimary, i.ObservedCanary = stableAt("v9", "d9"), "v1", "v1"
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v9", CanaryDigest: "d9", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: rollout.ReasonAwaitingCapacity, weight: percent.Int(0), primary: "v1", stable: "v1",
				replicas: map[string]int32{"v1": 4, "v9": 2}, events: []string{rollout.ReasonStarted},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			got := want{
				phase: d.Rollout.Status.Phase, reason: d.Rollout.Status.Reason, weight: d.Rollout.CanaryWeight, primary: d.PrimaryRevision,
				replicas: d.Record.Replicas,
			}
			if d.Status.Stable != nil {
				got.stable = d.Status.Stable.Revision
			}
			for _, h := range d.Status.History {
				got.history = append(got.history, h.Revision)
			}
			if d.Status.Retiring != nil {
				got.retiring = d.Status.Retiring.Revision
			}
			for _, e := range d.Rollout.Events {
				got.events = append(got.events, e.Reason)
			}
			if n := d.Rollout.Status.NextStepAt; n != nil && d.Rollout.Status.Phase == xr.PhasePromoting {
				got.movesAt = ptr.To(n.Sub(t0))
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s\nmessage: %s", tc.reason, diff, d.Rollout.Status.Message)
			}
			if !d.Rollout.Status.CanaryWeight.Equal(d.Rollout.CanaryWeight) || !d.Rollout.Status.PrimaryWeight.Equal(d.Rollout.CanaryWeight.Rest()) {
				t.Errorf("%s\nthe status says %s/%s, the route carries %s%% to the canary", tc.reason, d.Rollout.Status.PrimaryWeight, d.Rollout.Status.CanaryWeight, d.Rollout.CanaryWeight)
			}
		})
	}
}

// TestNeed pins the replicas a weight needs: the release's replicas in
// proportion, rounded up, for whole weights as before and for finer ones.
func TestNeed(t *testing.T) {
	cases := map[string]struct {
		reason   string
		replicas int32
		weight   percent.Percent
		want     int32
	}{
		"Whole":       {reason: "10% of 3 replicas is 0.3, rounded up to 1, as before.", replicas: 3, weight: percent.Int(10), want: 1},
		"WholeExact":  {reason: "50% of 10 replicas is 5.", replicas: 10, weight: percent.Int(50), want: 5},
		"Tenth":       {reason: "0.1% of 10 replicas is 0.01: a canary that gets any traffic gets a replica.", replicas: 10, weight: percent.Hundredths(10), want: 1},
		"TenthOfMany": {reason: "0.1% of 1,000 replicas is 1.", replicas: 1000, weight: percent.Hundredths(10), want: 1},
		"Fine":        {reason: "25.5% of 10 replicas is 2.55, rounded up to 3.", replicas: 10, weight: percent.Hundredths(2550), want: 3},
		"Zero":        {reason: "0% needs none.", replicas: 10, weight: percent.Zero, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, need(tc.replicas, tc.weight)); diff != "" {
				t.Errorf("%s\nneed(%d, %s): -want, +got:\n%s", tc.reason, tc.replicas, tc.weight, diff)
			}
		})
	}
}

// TestReturnToStableIsARollback: canary.revision set back to the stable
// revision while another one rolls out ends as a rollback (reason, message
// and one event), not with the abandoned rollout's reason; the runs after
// keep saying so without a second event.
func TestReturnToStableIsARollback(t *testing.T) {
	type want struct {
		phase  xr.Phase
		reason string
		events []string
	}
	cases := map[string]struct {
		reason string
		in     Input
		want   want
	}{
		"FromAStep": {
			reason: "v2 at 50%, canary.revision set back to the stable v1: rolled back, said once",
			in: in("v1", "d1", 3*time.Minute, func(i *Input) {
				i.Status = stableAt("v1", "d1")
				i.Rollout.Previous = progressingAt(1, time.Minute)
			}),
			want: want{phase: xr.PhaseSucceeded, reason: ReasonRolledBack, events: []string{ReasonRolledBack}},
		},
		"TheRunAfter": {
			reason: "once rolled back, the status says so on every run, and no event is sent again",
			in: in("v1", "d1", 4*time.Minute, func(i *Input) {
				i.Status = stableAt("v1", "d1")
				i.Rollout.Previous = &xr.RolloutStatus{
					Phase: xr.PhaseSucceeded, Reason: ReasonRolledBack, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2),
					PrimaryWeight: percent.Int(100), Message: "rolled back to revision v1: the primary serves every request; revision v2 gets none",
				}
			}),
			want: want{phase: xr.PhaseSucceeded, reason: ReasonRolledBack},
		},
		"StableAllAlong": {
			reason: "a release whose canary is its stable revision keeps the reason it had",
			in: in("v1", "d1", 4*time.Minute, func(i *Input) {
				i.Status = stableAt("v1", "d1")
				i.Rollout.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: "v1", CanaryDigest: "d1", Step: ptr.To[int32](2), PrimaryWeight: percent.Int(100)}
			}),
			want: want{phase: xr.PhaseSucceeded, reason: ReasonPromoted},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			got := want{phase: d.Rollout.Status.Phase, reason: d.Rollout.Status.Reason}
			for _, e := range d.Rollout.Events {
				got.events = append(got.events, e.Reason)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nDecide(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
