package rollout

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// ReasonAwaitingCapacity is the reason of a move to a weight that waits
// until the canary can carry it (a release's workload has the ready
// replicas it needs).
const ReasonAwaitingCapacity = "AwaitingCapacity"

// entering reports whether the previous run left a rollout whose moves
// wait for capacity short of its first step: at step 0, at 0%, awaiting
// capacity for the step's weight, or paused (or anything else) while it
// waited. Whatever the reason, step 0 at 0% was never entered.
func entering(in Input, prev *xr.RolloutStatus) bool {
	if prev.Step == nil || *prev.Step != 0 || !prev.CanaryWeight.IsZero() {
		return false
	}
	// A rollout that waited for its start hooks enters its first step
	// (and starts its pause) once they answer, whatever its weight. A
	// wait short of the first step has no next step's time, where a step
	// entered at 0% that waits for a confirm-traffic-increase hook to
	// move on has one: that step is not entered again.
	if (prev.Reason == ReasonAwaitingConfirmation || prev.Reason == ReasonAwaitingHook) && prev.NextStepAt == nil {
		return true
	}
	return (in.Capacity != nil || hasStartHooks(in)) && !in.Traffic.Steps[0].Weight.IsZero()
}

// awaitingEntry keeps a rollout at 0%, at step 0, while the canary cannot
// carry the step's weight: the step's pause starts once it can. It reports
// false when it can, or nothing gates the weight. The wait counts toward
// the progress deadline, from when it started.
func awaitingEntry(in Input, cur xr.RolloutStatus, ev Event) (Decision, bool) {
	if d, waiting := awaitingStartHooks(in, cur, ev); waiting {
		return d, true
	}
	steps := in.Traffic.Steps
	if in.Capacity == nil || steps[0].Weight.IsZero() {
		return Decision{}, false
	}
	ok, why := in.Capacity(steps[0].Weight)
	if ok {
		return Decision{}, false
	}
	msg := "waiting at 0% to enter step 0: the canary cannot carry its weight yet: " + why
	if deadline := in.Traffic.ProgressDeadline; deadline > 0 && in.Now.Sub(cur.StepStartedAt.Time) > deadline {
		return withEvent(terminal(cur, xr.PhaseFailed, ReasonProgressDeadlineExceeded,
			fmt.Sprintf("the canary could not carry step 0 for longer than the progress deadline %s: %s", deadline, why)), ev), true
	}
	cur.Phase, cur.Reason, cur.Message = xr.PhaseProgressing, ReasonAwaitingCapacity, msg
	cur.NextStepAt = &metav1.Time{Time: cur.StepStartedAt.Add(steps[0].Pause)}
	cur.AwaitingApproval = false
	return withEvent(Decision{
		CanaryWeight: percent.Zero,
		Status:       withWeights(cur, percent.Zero),
		Requeue:      untilDeadline(in, cur.StepStartedAt.Time),
		Analysis:     steps[0].Analysis,
		Healthy:      true,
	}, ev), true
}

// capacityHold is what holds a move to the next step that the canary
// cannot carry yet; none when it can.
func capacityHold(in Input, next int32) (hold, bool) {
	if in.Capacity == nil {
		return hold{}, false
	}
	w := in.Traffic.Steps[next].Weight
	ok, why := in.Capacity(w)
	if ok {
		return hold{}, false
	}
	return hold{why: fmt.Sprintf("awaiting capacity for step %d (%s%%): %s", next, w, why), requeue: HoldRequeue, beyondPause: true}, true
}
