// Package rollout is the traffic policy engine: from the spec's traffic
// policy, the rollout state that the previous run left in the XR's status,
// what the gateway says about the route, the gate conditions and the clock,
// it decides the canary weight of this run and the next rollout state.
//
// A function keeps no memory between runs, so everything the engine needs to
// carry over lives in status.rollout. The engine is a pure function: the same
// inputs give the same decision, byte for byte, and nothing in the status
// changes from one run to the next unless the rollout moves, since a status
// that changes on every run makes Crossplane reconcile again at once.
package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Bounds of the response TTL, which is how long Crossplane may wait before
// running the function again.
const (
	MinRequeue  = 5 * time.Second
	MaxRequeue  = time.Minute
	HoldRequeue = 30 * time.Second

	percentTotal = 100
)

// Messages that the engine reads back from the previous status, and holds
// that are not observations.
const (
	// msgRefused starts the message of a canary refused by policy. It tells
	// a refusal from a gate failure in status.rollout, which has no reason
	// field: the first lasts only while the policy refuses, the second stays
	// until the next revision.
	msgRefused = "canary refused: "
	// holdDue holds a step that nothing else holds, in a run that already
	// moved the rollout: a run moves at most one step.
	holdDue = "due, the next run moves on (one step per run)"
)

// Reasons of the RolloutHealthy condition when the rollout is not healthy.
const (
	ReasonGateFailed         = "GateFailed"
	ReasonAborted            = "Aborted"
	ReasonNotAllowedByPolicy = "NotAllowedByPolicy"
)

// Input is everything the engine decides from.
type Input struct {
	Traffic  xr.Traffic
	Revision string
	// Previous is status.rollout as the previous run left it; nil on the
	// first run.
	Previous *xr.RolloutStatus
	// RouteAtWeight reports whether the observed route carries the weights
	// of the route the function composes at the given canary weight, and
	// every parent accepted it at its current generation. Nil means the
	// route has not been observed.
	RouteAtWeight func(weight int32) (ok bool, hold string)
	// Gates are the observed gate objects, one per traffic.gates entry.
	Gates []GateObservation
	// CanaryRefused is set when the policy refused the canary's backend.
	CanaryRefused       bool
	CanaryRefusedReason string
	Now                 time.Time
}

// GateObservation is what the function found for one gate.
type GateObservation struct {
	Gate xr.Gate
	// Found is false when Crossplane returned no object for the gate (not
	// yet fetched, or not there).
	Found bool
	// Condition is the gate's condition on the object; nil when the object
	// does not carry it.
	Condition *metav1.Condition
}

// Decision is the engine's verdict for this run.
type Decision struct {
	// CanaryWeight is the canary percent to compose, 0..100.
	CanaryWeight int32
	// Active is true while the rollout is under way: A/B matches and
	// mirroring apply only then.
	Active bool
	// Status is the new status.rollout.
	Status xr.RolloutStatus
	// Requeue is the response TTL: when Crossplane should call again.
	Requeue time.Duration
	// Event, when not empty, is a one-line Normal result: the rollout moved.
	Event string
	// Healthy is false when the rollout failed or was aborted; Reason says
	// why.
	Healthy bool
	Reason  string
}

// Decide runs the traffic policy for one pipeline run.
func Decide(in Input) Decision {
	// Status times have second precision, so the engine works in seconds:
	// a time read back from status compares equal to the one written.
	in.Now = in.Now.Truncate(time.Second)
	if in.Traffic.Progressive() {
		return progressive(in)
	}
	return manual(in)
}

// manual is traffic.weight: the user moves traffic by hand.
func manual(in Input) Decision {
	w := ptr.Deref(in.Traffic.Weight, 0)
	d := Decision{Healthy: true, Requeue: MaxRequeue}
	status := xr.RolloutStatus{Phase: xr.PhaseStable, Revision: in.Revision}

	switch {
	case in.CanaryRefused:
		w = 0
		status.Phase = xr.PhaseFailed
		status.Message = msgRefused + in.CanaryRefusedReason
		d.Healthy, d.Reason = false, ReasonNotAllowedByPolicy
	case in.Traffic.Abort:
		w = 0
		status.Phase = xr.PhaseAborted
		status.Message = "aborted: all traffic goes to the primary"
		d.Healthy, d.Reason = false, ReasonAborted
	case in.Traffic.Paused:
		// Paused freezes the weight the previous run composed, even if
		// traffic.weight changes meanwhile, clamped to a percent: anyone may
		// write the status. Without a previous run there is nothing to
		// freeze yet, so the first run is Paused at traffic.weight (and the
		// next run agrees, so the status does not change).
		if in.Previous != nil {
			w = min(max(in.Previous.CanaryWeight, 0), percentTotal)
		}
		status.Phase = xr.PhasePaused
		status.Message = fmt.Sprintf("paused at %d%%", w)
	}
	status.CanaryWeight, status.PrimaryWeight = w, percentTotal-w
	d.CanaryWeight, d.Active, d.Status = w, w > 0, status
	return d
}

// progressive walks traffic.steps.
func progressive(in Input) Decision {
	steps := in.Traffic.Steps
	prev := in.Previous
	cur := xr.RolloutStatus{Revision: in.Revision, Phase: xr.PhaseProgressing}
	var event string

	restart := restarts(in)
	if restart {
		cur.Step = ptr.To[int32](0)
		cur.StepStartedAt = &metav1.Time{Time: in.Now}
		event = fmt.Sprintf("rollout of revision %s started at step 0 (%d%%)", in.Revision, steps[0].Weight)
	} else {
		cur.Step = ptr.To(min(*prev.Step, int32(len(steps)-1))) //nolint:gosec // At most maxSteps.
		cur.StepStartedAt = stepStartedAt(prev.StepStartedAt, in.Now)
		cur.Phase = prev.Phase
	}
	step := steps[*cur.Step]

	switch {
	case in.CanaryRefused:
		return terminal(cur, xr.PhaseFailed, msgRefused+in.CanaryRefusedReason, ReasonNotAllowedByPolicy, "")
	case !restart && prev.Phase == xr.PhaseFailed:
		// A failed revision stays failed, aborted or not: only a new
		// revision retries, so aborting and clearing abort cannot restart
		// it.
		return terminal(cur, xr.PhaseFailed, prev.Message, ReasonGateFailed, "")
	case in.Traffic.Abort:
		return terminal(cur, xr.PhaseAborted, "aborted: all traffic goes to the primary; clear abort to restart from step 0", ReasonAborted, "")
	case !restart && prev.Phase == xr.PhaseSucceeded:
		return settled(cur, xr.PhaseSucceeded, step.Weight, prev.Message, "")
	case in.Traffic.Paused:
		return settled(cur, xr.PhasePaused, step.Weight,
			fmt.Sprintf("paused at step %d (%d%%)", *cur.Step, step.Weight), event)
	}
	if !restart && prev.Phase == xr.PhasePaused {
		// Resuming restarts the step's pause: paused time never counts as
		// observation time.
		cur.StepStartedAt = &metav1.Time{Time: in.Now}
		event = fmt.Sprintf("rollout resumed at step %d (%d%%)", *cur.Step, step.Weight)
	}
	cur.Phase = xr.PhaseProgressing
	return advance(in, cur, event)
}

// restarts says whether this run starts the revision over at step 0.
func restarts(in Input) bool {
	prev := in.Previous
	// A negative step (a status edited by hand) is no step, like a missing
	// one. A canary the policy no longer refuses restarts the revision, as
	// clearing abort does: it ran at 0% meanwhile, and it did not fail.
	return prev == nil || prev.Revision != in.Revision || prev.Step == nil || *prev.Step < 0 ||
		(prev.Phase == xr.PhaseAborted && !in.Traffic.Abort) ||
		(prev.Phase == xr.PhaseFailed && strings.HasPrefix(prev.Message, msgRefused) && !in.CanaryRefused)
}

// stepStartedAt is the current step's start as the previous run wrote it.
func stepStartedAt(prev *metav1.Time, now time.Time) *metav1.Time {
	// A zero stepStartedAt counts as missing: it is written as null and
	// reads back as missing. A hand-written one is truncated to seconds like
	// now, since writing it loses the fraction: either way the next run
	// computes the same status.
	if prev == nil || prev.IsZero() {
		return &metav1.Time{Time: now}
	}
	return &metav1.Time{Time: prev.Truncate(time.Second)}
}

// advance holds the current step or moves past it. A run moves at most one
// step: the gateway must accept each step's weights before the next.
func advance(in Input, cur xr.RolloutStatus, event string) Decision {
	steps := in.Traffic.Steps
	i := *cur.Step

	// A gate that has failed ends the rollout, whatever else holds.
	if failed, msg := failedGate(in, cur); failed {
		return terminal(cur, xr.PhaseFailed, msg, ReasonGateFailed, event)
	}
	hold, requeue := holds(in, cur)
	if hold == "" && event != "" {
		// A run that starts or resumes the step (event set) has moved the
		// rollout already, so it holds the step even when nothing else does:
		// the route has not carried this step's weights yet.
		hold, requeue = holdDue, MinRequeue
	}
	if hold != "" {
		return holding(in, cur, hold, requeue, event)
	}

	weight := steps[i].Weight
	if int(i) == len(steps)-1 {
		return settled(cur, xr.PhaseSucceeded, weight,
			fmt.Sprintf("revision %s completed all %d steps at %d%%", in.Revision, len(steps), weight),
			fmt.Sprintf("rollout of revision %s succeeded at %d%%", in.Revision, weight))
	}

	cur.Step = ptr.To(i + 1)
	cur.StepStartedAt = &metav1.Time{Time: in.Now}
	// The new step's message is what the next runs show until something
	// changes, so the status does not flap.
	hold, requeue = holds(in, cur)
	if hold == "" {
		// A new step that nothing holds (no pause, route not required or
		// already there, gates True) is due: the next run, soon, moves on.
		hold, requeue = holdDue, MinRequeue
	}
	return holding(in, cur, hold, requeue,
		fmt.Sprintf("rollout of revision %s advanced to step %d (%d%%)", in.Revision, i+1, steps[i+1].Weight))
}

// holds says what holds the current step, if anything, and when to look
// again.
func holds(in Input, cur xr.RolloutStatus) (string, time.Duration) {
	i := *cur.Step
	step := in.Traffic.Steps[i]
	due := cur.StepStartedAt.Add(step.Pause)
	// The clock may be behind the one that started the step (skew between
	// replicas): then the step simply waits.
	pausing := in.Now.Before(cur.StepStartedAt.Time) || in.Now.Before(due)
	if in.Traffic.RequireAcceptedRoute {
		if ok, why := routeAtWeight(in, step.Weight); !ok {
			if pausing {
				return why, min(HoldRequeue, clamp(due.Sub(in.Now)))
			}
			return why, HoldRequeue
		}
	}
	if pausing {
		return "pause until " + due.UTC().Format(time.RFC3339), clamp(due.Sub(in.Now))
	}
	if gate := heldGate(in); gate != "" {
		return gate, HoldRequeue
	}
	return "", 0
}

// holding is a rollout that stays at its current step for now.
func holding(in Input, cur xr.RolloutStatus, hold string, requeue time.Duration, event string) Decision {
	step := in.Traffic.Steps[*cur.Step]
	cur.Phase = xr.PhaseProgressing
	cur.NextStepAt = &metav1.Time{Time: cur.StepStartedAt.Add(step.Pause)}
	cur.Message = fmt.Sprintf("holding step %d (%d%%): %s", *cur.Step, step.Weight, hold)
	return Decision{
		CanaryWeight: step.Weight,
		Active:       true,
		Status:       withWeights(cur, step.Weight),
		Requeue:      requeue,
		Event:        event,
		Healthy:      true,
	}
}

func routeAtWeight(in Input, weight int32) (bool, string) {
	if in.RouteAtWeight == nil {
		return false, "the route has not been observed yet"
	}
	return in.RouteAtWeight(weight)
}

// failedGate finds a gate whose condition has been False for longer than
// its failAfter.
func failedGate(in Input, cur xr.RolloutStatus) (bool, string) {
	for i, g := range in.Gates {
		c := g.Condition
		// Without a transition time there is no telling how long the
		// condition has been False: it holds, never fails.
		if !g.Found || c == nil || c.Status != metav1.ConditionFalse || c.LastTransitionTime.IsZero() {
			continue
		}
		since := c.LastTransitionTime.Time
		// The time False counts from the start of the current step at the
		// earliest: a gate left False by a failed revision must not fail the
		// new one on its first run, and time paused never counts.
		counted := since
		if cur.StepStartedAt != nil && cur.StepStartedAt.After(counted) {
			counted = cur.StepStartedAt.Time
		}
		if in.Now.Sub(counted) > g.Gate.FailAfter {
			return true, fmt.Sprintf("gate %d failed: %s %s has had %s False since %s (%s), longer than %s",
				i, g.Gate.Kind, g.Gate.Name, g.Gate.ConditionType, since.UTC().Format(time.RFC3339), c.Reason, g.Gate.FailAfter)
		}
	}
	return false, ""
}

// heldGate names the first gate that does not hold yet.
func heldGate(in Input) string {
	for i, g := range in.Gates {
		switch {
		case !g.Found:
			return fmt.Sprintf("gate %d: %s %s not found", i, g.Gate.Kind, g.Gate.Name)
		case g.Condition == nil:
			return fmt.Sprintf("gate %d: %s %s has no %s condition", i, g.Gate.Kind, g.Gate.Name, g.Gate.ConditionType)
		case g.Condition.Status != metav1.ConditionTrue:
			return fmt.Sprintf("gate %d: %s %s has %s %s (%s)", i, g.Gate.Kind, g.Gate.Name,
				g.Gate.ConditionType, g.Condition.Status, g.Condition.Reason)
		}
	}
	return ""
}

// terminal is a rollout that sends nothing to the canary.
func terminal(cur xr.RolloutStatus, phase xr.Phase, msg, reason, event string) Decision {
	cur.Phase, cur.Message, cur.NextStepAt = phase, msg, nil
	return Decision{
		CanaryWeight: 0,
		Status:       withWeights(cur, 0),
		Requeue:      MaxRequeue,
		Event:        event,
		Healthy:      false,
		Reason:       reason,
	}
}

// settled is a rollout that holds its weight until the user acts.
func settled(cur xr.RolloutStatus, phase xr.Phase, weight int32, msg, event string) Decision {
	cur.Phase, cur.Message, cur.NextStepAt = phase, msg, nil
	return Decision{
		CanaryWeight: weight,
		// A paused rollout is still under way: its A/B rules and mirror
		// stay, or pausing would change who sees the canary.
		Active:  weight > 0 || phase == xr.PhasePaused,
		Status:  withWeights(cur, weight),
		Requeue: MaxRequeue,
		Event:   event,
		Healthy: true,
	}
}

func withWeights(s xr.RolloutStatus, canary int32) xr.RolloutStatus {
	s.CanaryWeight, s.PrimaryWeight = canary, percentTotal-canary
	return s
}

func clamp(d time.Duration) time.Duration {
	return min(max(d, MinRequeue), MaxRequeue)
}
