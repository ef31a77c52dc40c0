// Package rollout is the traffic policy engine: from the spec's traffic
// policy, the rollout state that the previous run left in the XR's status,
// what the gateway says about the route, the gate conditions and the clock,
// it decides the canary weight of this run and the next rollout state.
//
// A function keeps no memory between runs, so everything the engine needs to
// carry over lives in status.rollout, and the engine reads its own past
// decisions from its fields (phase, reason, revision, canaryDigest, step),
// never from the wording of its message. The engine is a pure function: the
// same inputs give the same decision, byte for byte, and nothing in the
// status changes from one run to the next unless the rollout moves, since a
// status that changes on every run makes Crossplane reconcile again at once.
package rollout

import (
	"fmt"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Bounds of the response TTL, which is how long Crossplane may wait before
// running the function again.
const (
	MinRequeue  = 5 * time.Second
	MaxRequeue  = time.Minute
	HoldRequeue = 30 * time.Second
)

// ClockSkew is how far ahead of a run's clock a time the status records may
// be and still be another replica's (whose clock runs ahead, or which ran
// a moment later than this one, a replica behind): a step's start, a
// bake's start or a measurement dated up to ClockSkew after now is kept as
// written, and counts from its own time (nothing before it is due: a step
// that started later by another clock waits, and a measurement counts
// once its time comes). One dated further ahead was never reached by any
// replica (a status written by hand): a start counts as now, and a
// measurement is dropped. A replica behind thus never moves a step's start
// back, and never erases what a replica ahead recorded.
const ClockSkew = time.Hour

// holdDue holds a step that nothing else holds, in a run that already moved
// the rollout: a run moves at most one step.
const holdDue = "due, the next run moves on (one step per run)"

// Reasons of status.rollout.reason: the machine-readable reason of the
// phase. The RolloutHealthy condition carries the same reason when the
// rollout is not healthy.
const (
	// ReasonManual: phase Stable, the weight is traffic.weight.
	ReasonManual = "Manual"
	// ReasonPaused: phase Paused, nothing moves.
	ReasonPaused = "Paused"
	// ReasonStarted: step 0 of a new revision (or of the first run).
	ReasonStarted = "RolloutStarted"
	// ReasonRestarted: step 0 again after abort was cleared or a policy
	// refusal was lifted.
	ReasonRestarted = "RolloutRestarted"
	// ReasonCanaryChanged: step 0 again because the canary side changed
	// without a new revision.
	ReasonCanaryChanged = "CanaryChanged"
	// ReasonStepsChanged: the steps were edited under the rollout, which
	// continues from the step that matches its weight, or from step 0.
	ReasonStepsChanged = "StepsChanged"
	// ReasonAdvanced: the rollout moved to its current step.
	ReasonAdvanced = "StepAdvanced"
	// ReasonResumed: paused was cleared and the step's pause starts over.
	ReasonResumed = "RolloutResumed"
	// ReasonSucceeded: the last step's weight was accepted.
	ReasonSucceeded = "RolloutSucceeded"
	// ReasonAborted: traffic.abort sends every request to the primary.
	ReasonAborted = "Aborted"
	// ReasonAbortRescued: traffic.abort sends every request to the
	// primary although the CanaryRoute cannot be composed: the route is
	// kept as last composed, with the canary at 0%.
	ReasonAbortRescued = "AbortRescued"
	// ReasonGateFailed: a gate was False for longer than its failAfter.
	ReasonGateFailed = "GateFailed"
	// ReasonNotAllowedByPolicy: the function's Input refuses the canary.
	ReasonNotAllowedByPolicy = "NotAllowedByPolicy"
	// ReasonProgressDeadlineExceeded: a step was held past its pause for
	// longer than traffic.progressDeadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonAnalysisFailed: an analysis of the step failed.
	ReasonAnalysisFailed = "AnalysisFailed"
	// ReasonAwaitingApproval: an approval step waits for traffic.approval.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonApproved: traffic.approval released an approval step.
	ReasonApproved = "RolloutApproved"
	// ReasonPromoted: traffic.promote moved the revision to its last step.
	ReasonPromoted = "RolloutPromoted"
	// ReasonRetried: traffic.retry restarted a failed or aborted revision.
	ReasonRetried = "RolloutRetried"
)

// Reasons of events only: transitions that are not a phase's reason.
const (
	// EventPaused: the rollout was paused.
	EventPaused = "RolloutPaused"
	// EventFailed: the rollout failed (a Warning).
	EventFailed = "RolloutFailed"
	// EventAborted: the rollout was aborted (a Warning).
	EventAborted = "RolloutAborted"
	// EventAnalysisPassed: an analysis of the step passed.
	EventAnalysisPassed = "AnalysisPassed"
)

// Input is everything the engine decides from.
type Input struct {
	Traffic  xr.Traffic
	Revision string
	// CanaryDigest is the digest of the canary side as the spec has it now.
	CanaryDigest string
	// Previous is status.rollout as the previous run left it; nil on the
	// first run.
	Previous *xr.RolloutStatus
	// RouteAtWeight reports whether the observed route carries the weights
	// of the route the function composes at the given canary weight, and
	// every parent accepted it at its current generation. Nil means the
	// route has not been observed.
	RouteAtWeight func(weight percent.Percent) (ok bool, hold string)
	// RouteAtStep, when set, is asked instead of RouteAtWeight: a step's own
	// matches and mirror shape its route, so the step tells which route to
	// look for, not only its weight.
	RouteAtStep func(step int32, weight percent.Percent) (ok bool, hold string)
	// Gates are the observed gate objects, one per traffic.gates entry.
	Gates []GateObservation
	// RouteMissing is set when the route does not exist (deleted, or of
	// another kind): there is no composition to hold.
	RouteMissing bool
	// Analysis are the analysis objects observed, of any step.
	Analysis []AnalysisObservation
	// Capacity, when set, says whether the canary can carry a weight (a
	// release's workload has the ready replicas it needs), and if not,
	// why: a move to a weight waits for it. Nil: any weight.
	Capacity func(weight percent.Percent) (ok bool, why string)
	// Measured are the measurements of traffic.metrics that this run (or an
	// earlier call of the same reconcile) took, by metric: at most one each,
	// at the step of the previous status (see Due).
	Measured map[string]xr.Measurement
	// CanaryRefused is set when the policy refused the canary's backend.
	CanaryRefused       bool
	CanaryRefusedReason string
	Now                 time.Time
	// Hooks are the records of traffic.hooks' calls, by hook name:
	// status.rollout.hooks with the calls that earlier calls of this
	// reconcile, and this run, made. A hook the engine needs an answer of
	// and has none for is in Decision.Asks.
	Hooks map[string]xr.HookStatus

	// asks collects the calls the engine asks for while it decides.
	asks *[]HookCall
}

// GateObservation is what the function found for one gate.
type GateObservation struct {
	Gate xr.Gate
	// Found is false when Crossplane returned no object for the gate (not
	// yet fetched, or not there).
	Found bool
	// Condition is the gate's condition on the object; nil when the object
	// does not carry it. Only for a gate with a conditionType.
	Condition *metav1.Condition
	// Check is what the gate's expressions say of the object. Only for a
	// gate with successWhen.
	Check Check
}

// A Check is what an object's successWhen and failWhen expressions say.
type Check struct {
	// Success: successWhen is true.
	Success bool
	// Failed: failWhen is true.
	Failed bool
	// Err is an evaluation error (a missing field, a value of another
	// type): it holds, and says why.
	Err string
}

// AnalysisObservation is an analysis object that the function composed
// earlier, as observed, and what its template's expressions say of it.
type AnalysisObservation struct {
	Name string
	// Revision, CanaryDigest, Retry and Step are the ones the object was
	// composed for, as its labels hold them (xr.LabelValue).
	Revision     string
	CanaryDigest string
	Retry        string
	Step         int32
	// Deleting is true once the object is being deleted: it no longer
	// judges anything.
	Deleting bool
	Check    Check
}

// An Event is a transition of the rollout: said once, on the run that
// makes it, with its own reason.
type Event struct {
	Reason  string
	Message string
	// Warning marks a failure: a Warning event, not a Normal one.
	Warning bool
}

// Decision is the engine's verdict for this run.
type Decision struct {
	// CanaryWeight is the canary percent to compose, 0 to 100 with at most
	// two decimals.
	CanaryWeight percent.Percent
	// Active is true while the rollout is under way and the canary gets
	// less than everything: A/B matches, session affinity and mirroring
	// apply only then.
	Active bool
	// HoldPrevious asks the caller to compose what the previous run
	// composed, unchanged: the rollout is paused while a new revision or a
	// changed canary waits for its restart, and composing from the spec
	// would give the paused weight to a canary nobody tested.
	HoldPrevious bool
	// Status is the new status.rollout.
	Status xr.RolloutStatus
	// Requeue is the response TTL: when Crossplane should call again.
	Requeue time.Duration
	// Events are the transitions this run makes, in order: none on a run
	// that changes nothing.
	Events []Event
	// Analysis names the analysis templates to compose for the current
	// step, while it is current.
	Analysis []string
	// Healthy is false when the rollout failed or was aborted; Reason says
	// why.
	Healthy bool
	Reason  string
	// Asks are the hooks' calls the decision needs an answer of, and has
	// none for: the caller makes them and decides again with their
	// answers in Input.Hooks.
	Asks []HookCall
	// Restarted says the decision starts the rollout over at step 0 (a new
	// revision, a retry, abort cleared, a changed canary, ...): the hooks'
	// records of the status are of the rollout before, no answer for this
	// one (a load test of the old canary, a confirmation of its promotion,
	// its post-rollout told): the caller drops them and decides again.
	// Said only of a rollout with hooks.
	Restarted bool
}

// Decide runs the traffic policy for one pipeline run.
func Decide(in Input) Decision {
	// Status times have second precision, so the engine works in seconds:
	// a time read back from status compares equal to the one written.
	in.Now = in.Now.Truncate(time.Second)
	// The collector is allocated only for a rollout with hooks: taking
	// the address of a local would move it to the heap on every run.
	if len(in.Traffic.Hooks) > 0 {
		in.asks = new([]HookCall)
	}
	var d Decision
	if in.Traffic.Progressive() {
		d = progressive(in)
	} else {
		d = manual(in)
	}
	// Whatever was observed, the next run and the API server accept the
	// status: a status they refuse would never be written, and every later
	// run would start from the last one that was.
	d.Status = d.Status.Bounded()
	d.Events = append(metricEvents(in, d), transitions(in, d)...)
	if in.asks != nil {
		d.Asks = *in.asks
	}
	// A progressing rollout comes back when its rollback hooks are due,
	// whatever else it waits for.
	if due, ok := rollbackDue(in, d.Status); ok {
		d.Requeue = min(d.Requeue, due)
	}
	return d
}

// manual is traffic.weight: the user moves traffic by hand.
func manual(in Input) Decision {
	w := ptr.Deref(in.Traffic.Weight, percent.Zero)
	d := Decision{Healthy: true, Requeue: MaxRequeue}
	status := xr.RolloutStatus{Phase: xr.PhaseStable, Reason: ReasonManual, Revision: in.Revision, CanaryDigest: in.CanaryDigest}

	switch {
	case in.CanaryRefused:
		w = percent.Zero
		status.Phase, status.Reason = xr.PhaseFailed, ReasonNotAllowedByPolicy
		status.Message = "canary refused: " + in.CanaryRefusedReason
		d.Healthy, d.Reason = false, ReasonNotAllowedByPolicy
	case in.Traffic.Abort:
		w = percent.Zero
		status.Phase, status.Reason = xr.PhaseAborted, ReasonAborted
		status.Message = "aborted: all traffic goes to the primary"
		d.Healthy, d.Reason = false, ReasonAborted
	case in.Traffic.Paused:
		// Paused freezes the weight the previous run composed, even if
		// traffic.weight changes meanwhile, clamped to a percent: anyone may
		// write the status. Without a previous run there is nothing to
		// freeze yet, so the first run is Paused at traffic.weight (and the
		// next run agrees, so the status does not change).
		status.Phase, status.Reason = xr.PhasePaused, ReasonPaused
		status.Message = fmt.Sprintf("paused at %s%%", w)
		prev := in.Previous
		if prev == nil {
			break
		}
		w = prev.CanaryWeight.Clamp()
		status.Message = fmt.Sprintf("paused at %s%%", w)
		// The frozen weight belongs to the canary the previous run composed:
		// a changed canary must not inherit it. The previous composition is
		// held (or, with no route to hold, the new canary gets 0%) until
		// paused is cleared; the status keeps the digest it is measured
		// against.
		if prev.CanaryDigest != "" && in.CanaryDigest != "" && prev.CanaryDigest != in.CanaryDigest {
			status.CanaryDigest = prev.CanaryDigest
			if in.RouteMissing {
				w = percent.Zero
				status.Message = "paused with the canary at 0%: the route was not observed, so nothing composed can be held; the changed canary gets traffic.weight when paused is cleared"
			} else {
				d.HoldPrevious = true
				status.Message = fmt.Sprintf("paused at %s%%; the changed canary gets traffic.weight when paused is cleared", w)
			}
		}
	}
	status.CanaryWeight, status.PrimaryWeight = w, w.Rest()
	d.CanaryWeight, d.Active, d.Status = w, !w.IsZero() && w.Less(percent.Max), status
	return d
}

// restart is why a run starts the revision over at step 0; noRestart when
// it does not.
type restart int

const (
	noRestart restart = iota
	// restartFirst: no previous progressive status (the first run, a
	// status without a step, or a manual rollout turned progressive).
	restartFirst
	restartRevision
	restartCanaryChanged
	restartAbortCleared
	restartRefusalLifted
	restartRetried
)

// restartOf says whether, and why, this run starts the revision over.
func restartOf(in Input) restart {
	prev := in.Previous
	switch {
	// A negative step (a status edited by hand) is no step, like a missing
	// one.
	case prev == nil || prev.Step == nil || *prev.Step < 0:
		return restartFirst
	case prev.Revision != in.Revision:
		return restartRevision
	// A status written before canaryDigest existed adopts the current
	// digest instead of restarting every rollout under way.
	case prev.CanaryDigest != "" && in.CanaryDigest != "" && prev.CanaryDigest != in.CanaryDigest:
		return restartCanaryChanged
	// A retry value not acted on yet restarts a failed or aborted revision.
	case (prev.Phase == xr.PhaseFailed || (prev.Phase == xr.PhaseAborted && !in.Traffic.Abort)) &&
		in.Traffic.Retry != "" && in.Traffic.Retry != prev.Retry:
		return restartRetried
	// A rollback a hook asked for stays until a new revision or a retry.
	case prev.Phase == xr.PhaseAborted && prev.Reason == ReasonRollbackRequested:
		return noRestart
	case prev.Phase == xr.PhaseAborted && !in.Traffic.Abort:
		return restartAbortCleared
	// A canary the policy no longer refuses restarts the revision: it ran
	// at 0% meanwhile, and it did not fail.
	case prev.Phase == xr.PhaseFailed && prev.Reason == ReasonNotAllowedByPolicy && !in.CanaryRefused:
		return restartRefusalLifted
	}
	return noRestart
}

// carried is where a progressive run starts from: the previous run's step,
// phase and verdicts, or step 0 of a restart; and what promote and retry
// acted on.
func carried(in Input, why restart) xr.RolloutStatus {
	steps, prev := in.Traffic.Steps, in.Previous
	cur := xr.RolloutStatus{Revision: in.Revision, CanaryDigest: in.CanaryDigest, Phase: xr.PhaseProgressing}
	if why == noRestart {
		// A step beyond the list (steps removed, or a status written by
		// hand) is kept within it; relocate finds the right one.
		cur.Step = ptr.To(min(*prev.Step, int32(len(steps)-1))) //nolint:gosec // At most maxSteps.
		cur.StepStartedAt = stepStartedAt(prev.StepStartedAt, in.Now)
		cur.Phase, cur.Reason = prev.Phase, prev.Reason
		cur.Analysis = verdictsOf(prev.Analysis, *cur.Step)
		cur.Metrics = carriedMetrics(in, prev.Metrics, *cur.Step)
		if prev.BakeStartedAt != nil && !prev.BakeStartedAt.IsZero() {
			cur.BakeStartedAt = prev.BakeStartedAt // A zero time is written as null: no bake.
		}
	} else {
		cur.Step = ptr.To[int32](0)
		cur.StepStartedAt = &metav1.Time{Time: in.Now}
	}
	// promote and retry act once: what they acted on stays recorded, and a
	// retry value seen is recorded even when there was nothing to retry, so
	// that it never restarts a later failure by itself.
	if prev != nil {
		cur.Promoted, cur.Retry = prev.Promoted, prev.Retry
	}
	if in.Traffic.Retry != "" {
		cur.Retry = in.Traffic.Retry
	}
	// The attempt changes only when a retry restarts the revision, and
	// starts over with a new revision.
	switch {
	case why == restartRetried:
		cur.Attempt = in.Traffic.Retry
	case why == restartFirst || why == restartRevision:
		cur.Attempt = ""
	case prev != nil:
		cur.Attempt = prev.Attempt
	}
	return cur
}

// progressive walks traffic.steps.
func progressive(in Input) Decision {
	steps := in.Traffic.Steps
	prev := in.Previous
	why := restartOf(in)

	cur := carried(in, why)
	// A step that started after now (by another replica's clock, kept, or
	// written by hand, moved to now) has not run by this clock: this run
	// does not move the rollout on.
	startAhead := why == noRestart && prev.StepStartedAt != nil && prev.StepStartedAt.After(in.Now)

	if d, ok := stoppedOrStarted(in, cur, why); ok {
		return d
	}

	// A rollback hook that answered 2xx aborts a progressing rollout.
	if prev.Phase == xr.PhaseProgressing {
		if msg, requested := rollbackRequested(in, cur); requested {
			return terminal(cur, xr.PhaseAborted, ReasonRollbackRequested, msg)
		}
	}
	// A rollout waiting to enter its first step enters it once the canary
	// can carry its weight.
	if entering(in, prev) {
		return enter(in, cur)
	}

	// A Succeeded rollout stays Succeeded while the last step has its
	// weight, whatever steps were added before it.
	last := int32(len(steps) - 1) //nolint:gosec // At most maxSteps.
	if prev.Phase == xr.PhaseSucceeded && prev.CanaryWeight.Equal(steps[last].Weight) {
		cur.Step = ptr.To(last)
		return succeeded(in, cur, steps[last].Weight, Event{})
	}
	// The steps may have been edited since the previous run: a step that no
	// longer has the weight the route carries is found again by its weight,
	// so the route never jumps to a weight nobody observed.
	if i, moved := relocate(steps, *prev.Step, prev.CanaryWeight); moved {
		cur.Step = ptr.To(i)
		cur.StepStartedAt = &metav1.Time{Time: in.Now}
		cur.Phase, cur.Reason = xr.PhaseProgressing, ReasonStepsChanged
		cur.Analysis = nil
		return advance(in, cur, Event{
			Reason:  ReasonStepsChanged,
			Message: fmt.Sprintf("steps of revision %s changed: the rollout continues at step %d (%s%%)", in.Revision, i, steps[i].Weight),
		}, true)
	}
	// promote moves the revision to its last step, once, from a step whose
	// route the gateway accepted; the last step's own pause, gates,
	// analysis and approval still apply.
	if prev.Phase != xr.PhasePaused && !startAhead && promoteDue(in, cur) {
		from := *cur.Step
		cur.Step, cur.StepStartedAt = ptr.To(last), &metav1.Time{Time: in.Now}
		cur.Phase, cur.Reason, cur.Promoted = xr.PhaseProgressing, ReasonPromoted, in.Revision
		cur.AwaitingApproval = false
		return advance(in, cur, Event{
			Reason:  ReasonPromoted,
			Message: fmt.Sprintf("revision %s promoted from step %d to its last step %d (%s%%)", in.Revision, from, last, steps[last].Weight),
		}, true)
	}

	step := steps[*cur.Step]
	switch prev.Phase {
	case xr.PhasePaused:
		// Resuming restarts the step's pause: paused time never counts as
		// observation time.
		cur.StepStartedAt = &metav1.Time{Time: in.Now}
		cur.Phase, cur.Reason = xr.PhaseProgressing, ReasonResumed
		resumed := Event{Reason: ReasonResumed, Message: fmt.Sprintf("rollout resumed at step %d (%s%%)", *cur.Step, step.Weight)}
		// A rollout paused before it entered its first step waits for its
		// start hooks when resumed.
		if *cur.Step == 0 && prev.CanaryWeight.IsZero() {
			if d, waiting := awaitingStartHooks(in, cur, resumed); waiting {
				return d
			}
		}
		return advance(in, cur, resumed, true)
	default:
		cur.Phase = xr.PhaseProgressing
		return advance(in, cur, Event{}, startAhead)
	}
}

// stoppedOrStarted decides a run that neither holds nor moves a rollout
// under way: one the policy refuses, that failed or was rolled back,
// aborted, paused, or that starts over at step 0.
func stoppedOrStarted(in Input, cur xr.RolloutStatus, why restart) (Decision, bool) {
	prev := in.Previous
	switch {
	case in.CanaryRefused:
		return terminal(cur, xr.PhaseFailed, ReasonNotAllowedByPolicy, "canary refused: "+in.CanaryRefusedReason), true
	case why == noRestart && prev.Phase == xr.PhaseFailed:
		// A failed revision stays failed, aborted or paused or not: only a
		// new revision (or a changed canary) retries, so aborting and
		// clearing abort cannot restart it.
		return terminal(cur, xr.PhaseFailed, failedReason(prev.Reason), failedMessage(in, prev)), true
	// A rollback a hook asked for stays, abort set or not: an abort set
	// with paused (which would otherwise freeze it) must not turn it into
	// an abort that clearing restarts.
	case why == noRestart && prev.Phase == xr.PhaseAborted && prev.Reason == ReasonRollbackRequested && (!in.Traffic.Paused || in.Traffic.Abort):
		return terminal(cur, xr.PhaseAborted, ReasonRollbackRequested, prev.Message), true
	case in.Traffic.Abort:
		return terminal(cur, xr.PhaseAborted, ReasonAborted, "aborted: all traffic goes to the primary; clear abort to restart from step 0"), true
	case in.Traffic.Paused && prev != nil:
		return frozen(in, why), true
	case in.Traffic.Paused:
		return pausedFirst(in, cur, why), true
	case why != noRestart:
		cur.Reason = restartReason[why]
		d, waiting := awaitingEntry(in, cur, restartEvent(in, why))
		if !waiting {
			d = advance(in, cur, restartEvent(in, why), true)
		}
		d.Restarted = len(in.Traffic.Hooks) > 0
		return d, true
	}
	return Decision{}, false
}

// enter moves a rollout waiting short of its first step into it, once the
// canary can carry its weight.
func enter(in Input, cur xr.RolloutStatus) Decision {
	if d, waiting := awaitingEntry(in, cur, Event{}); waiting {
		return d
	}
	cur.StepStartedAt = &metav1.Time{Time: in.Now}
	cur.Phase, cur.Reason = xr.PhaseProgressing, ReasonAdvanced
	return advance(in, cur, Event{
		Reason:  ReasonAdvanced,
		Message: fmt.Sprintf("the canary of revision %s can carry step 0: the rollout entered it (%s%%)", in.Revision, in.Traffic.Steps[0].Weight),
	}, true)
}

// pausedFirst is the first run of a paused rollout: nothing was composed
// before, so there is nothing to freeze yet.
func pausedFirst(in Input, cur xr.RolloutStatus, why restart) Decision {
	steps := in.Traffic.Steps
	// Nothing was composed before, so there is nothing to freeze yet:
	// the first run is Paused at step 0, and the next run agrees.
	w := steps[0].Weight
	if in.Capacity != nil {
		if ok, _ := in.Capacity(w); !ok {
			// The canary cannot carry the step yet: paused short of it.
			w = percent.Zero
		}
	}
	if hasStartHooks(in) {
		// Its start hooks are asked when paused is cleared: short of it
		// until then.
		w = percent.Zero
	}
	cur.Phase, cur.Reason = xr.PhasePaused, ReasonPaused
	cur.Message = fmt.Sprintf("paused at step 0 (%s%%)", w)
	return Decision{
		CanaryWeight: w,
		Active:       w.Less(percent.Max),
		Status:       withWeights(cur, w),
		Requeue:      MaxRequeue,
		Events:       []Event{restartEvent(in, why)},
		Analysis:     steps[0].Analysis,
		Healthy:      true,
	}
}

// promoteDue reports whether traffic.promote moves the rollout to its last
// step now: it names the revision, has not acted on it yet, the rollout is
// not at its last step, and the gateway accepted the current step's route.
func promoteDue(in Input, cur xr.RolloutStatus) bool {
	pr := in.Traffic.Promote
	if pr == nil || pr.Revision != in.Revision || cur.Promoted == in.Revision || cur.Step == nil || int(*cur.Step) >= len(in.Traffic.Steps)-1 {
		return false
	}
	if in.Capacity != nil {
		// Not before the canary can carry the last step: promote skips
		// pauses, gates, analysis and approvals, never capacity.
		if ok, _ := in.Capacity(in.Traffic.Steps[len(in.Traffic.Steps)-1].Weight); !ok {
			return false
		}
	}
	ok, _ := routeOfStep(in, *cur.Step, in.Traffic.Steps[*cur.Step].Weight)
	return ok || !in.Traffic.RequireAcceptedRoute
}

var restartReason = map[restart]string{
	restartFirst:         ReasonStarted,
	restartRevision:      ReasonStarted,
	restartCanaryChanged: ReasonCanaryChanged,
	restartAbortCleared:  ReasonRestarted,
	restartRefusalLifted: ReasonRestarted,
	restartRetried:       ReasonRetried,
}

// restartEvent says why the rollout starts at step 0.
func restartEvent(in Input, why restart) Event {
	w := in.Traffic.Steps[0].Weight
	ev := Event{Reason: restartReason[why]}
	switch why {
	case restartCanaryChanged:
		ev.Message = fmt.Sprintf("the canary of revision %s changed: the rollout restarted at step 0 (%s%%)", in.Revision, w)
	case restartAbortCleared:
		ev.Message = fmt.Sprintf("abort cleared: the rollout of revision %s restarted at step 0 (%s%%)", in.Revision, w)
	case restartRefusalLifted:
		ev.Message = fmt.Sprintf("the canary is allowed again: the rollout of revision %s restarted at step 0 (%s%%)", in.Revision, w)
	case restartRetried:
		ev.Message = fmt.Sprintf("retry %s: the rollout of revision %s restarted at step 0 (%s%%)", in.Traffic.Retry, in.Revision, w)
	default:
		ev.Message = fmt.Sprintf("rollout of revision %s started at step 0 (%s%%)", in.Revision, w)
	}
	return ev
}

// pendingNote says what will happen once paused is cleared.
func pendingNote(in Input, why restart) string {
	switch why {
	case restartRevision:
		return fmt.Sprintf("; revision %s starts at step 0 when paused is cleared", in.Revision)
	case restartCanaryChanged:
		return "; the changed canary starts at step 0 when paused is cleared"
	case restartAbortCleared:
		return "; abort was cleared: the rollout restarts at step 0 when paused is cleared"
	case restartRefusalLifted:
		return "; the canary is allowed again: the rollout restarts at step 0 when paused is cleared"
	case restartRetried:
		return "; retry " + in.Traffic.Retry + ": the rollout restarts at step 0 when paused is cleared"
	case restartFirst:
		return "; the rollout starts at step 0 when paused is cleared"
	default:
		return ""
	}
}

// frozen is a paused rollout: nothing moves, in every case. The weight is the
// one the previous run composed; a new revision, a changed canary, a cleared
// abort or a lifted refusal waits until paused is cleared, so the status
// keeps the previous revision, digest and step that the restart is measured
// against.
func frozen(in Input, why restart) Decision {
	prev := *in.Previous
	cur := asReadBack(prev, in.Now)
	w := prev.CanaryWeight.Clamp()
	changed := prev.Revision != in.Revision ||
		(prev.CanaryDigest != "" && in.CanaryDigest != "" && prev.CanaryDigest != in.CanaryDigest)
	d := Decision{
		CanaryWeight: w,
		// The paused weight belongs to the canary that the previous run
		// composed: a new revision or a changed canary must not inherit it,
		// so the caller composes the previous composition as it is.
		HoldPrevious: changed,
		Requeue:      MaxRequeue,
		Healthy:      true,
	}
	if why == noRestart {
		// The digest of a status written before canaryDigest existed.
		cur.CanaryDigest = in.CanaryDigest
	}
	note := pendingNote(in, why)
	if changed && in.RouteMissing {
		// Nothing composed can be held: the new canary, which nobody has
		// tested, is composed at 0% and without canary-only rules until
		// paused is cleared.
		d.CanaryWeight, d.HoldPrevious = percent.Zero, false
		if prev.Phase == xr.PhaseAborted || prev.Phase == xr.PhaseFailed {
			cur.Reason = stoppedReason(prev)
			cur.Message = fmt.Sprintf("%s at 0%% while paused%s", prev.Phase, note)
			d.Healthy, d.Reason = false, cur.Reason
		} else {
			cur.Phase, cur.Reason = xr.PhasePaused, ReasonPaused
			cur.Message = "paused with the canary at 0%: the route was not observed, so nothing composed can be held" + note
		}
		d.Status = withWeights(cur, percent.Zero)
		return d
	}
	switch prev.Phase {
	case xr.PhaseAborted, xr.PhaseFailed:
		// Nothing goes to the canary, and nothing will until paused is
		// cleared: the phase stays, so does its reason.
		w = percent.Zero
		cur.Reason = stoppedReason(prev)
		cur.Message = fmt.Sprintf("%s at 0%% while paused%s", prev.Phase, note)
		d.Healthy, d.Reason = false, cur.Reason
		d.CanaryWeight = percent.Zero
	case xr.PhaseSucceeded:
		cur.Reason = ReasonSucceeded
		cur.Message = fmt.Sprintf("revision %s completed all its steps at %s%%; paused%s", prev.Revision, w, note)
	default:
		cur.Phase, cur.Reason = xr.PhasePaused, ReasonPaused
		// A paused rollout waits for paused to be cleared, not for an
		// approval: resuming restarts the step, and its wait.
		cur.AwaitingApproval = false
		cur.Message = fmt.Sprintf("paused at %s%%%s", w, note)
		if cur.Step != nil && why != restartFirst {
			cur.Message = fmt.Sprintf("paused at step %d (%s%%)%s", *cur.Step, w, note)
		}
		// Pausing never changes who sees the canary: a step in progress
		// keeps its A/B rules and mirror, even at 0%, and its analysis.
		d.Active = w.Less(percent.Max) && (!w.IsZero() || cur.Step != nil)
		if cur.Step != nil && int(*cur.Step) < len(in.Traffic.Steps) && !changed {
			d.Analysis = in.Traffic.Steps[*cur.Step].Analysis
		}
	}
	d.Status = withWeights(cur, w)
	return d
}

// asReadBack is a previous status as the next run reads it back, with no
// next step due: a negative step (written by hand) is no step at all, a zero
// stepStartedAt is written as null, and a fraction of a second is lost.
func asReadBack(prev xr.RolloutStatus, now time.Time) xr.RolloutStatus {
	cur := prev
	cur.NextStepAt = nil
	if cur.Step != nil && *cur.Step < 0 {
		cur.Step = nil
	}
	if cur.StepStartedAt != nil {
		if cur.StepStartedAt.IsZero() {
			cur.StepStartedAt = nil
		} else {
			cur.StepStartedAt = stepStartedAt(cur.StepStartedAt, now)
		}
	}
	return cur
}

// stoppedReason is the reason of a rollout that stopped: Aborted, or the
// reason it failed.
func stoppedReason(prev xr.RolloutStatus) string {
	if prev.Phase == xr.PhaseAborted {
		if prev.Reason == ReasonRollbackRequested {
			return ReasonRollbackRequested
		}
		return ReasonAborted
	}
	return failedReason(prev.Reason)
}

// WithCanaryAtZero is a decision whose composition sends nothing to the
// canary after all: a hold whose previous canary the Input now refuses. The
// status says what the route carries, and why.
func WithCanaryAtZero(d Decision, why string) Decision {
	d.CanaryWeight, d.Active = percent.Zero, false
	d.Status = withWeights(d.Status, percent.Zero)
	d.Status.Message = "paused with the canary at 0%: " + why
	d.Status = d.Status.Bounded()
	return d
}

// failedMessage is the message of a revision that failed on an earlier
// run, which says why: a message that names another weight than the 0% the
// route carries (written by an older release, or by hand) is replaced.
func failedMessage(in Input, prev *xr.RolloutStatus) string {
	for _, m := range stepWeightPattern.FindAllStringSubmatch(prev.Message, -1) {
		if m[1] != "0" {
			return fmt.Sprintf("the rollout of revision %s failed (%s): all traffic goes to the primary until a new revision",
				in.Revision, failedReason(prev.Reason))
		}
	}
	return prev.Message
}

// stepWeightPattern finds the weights that the engine's messages name, as
// in "step 1 (50%)"; the values a message quotes from elsewhere do not count.
var stepWeightPattern = regexp.MustCompile(`step \d+ \((\d+(?:\.\d+)?)%\)`)

// quote cuts a value that the status quotes from elsewhere (a gate object,
// the gateway) to a bounded length.
func quote(s string) string { return fielderr.Cut(s, xr.MaxStatusValue) }

// failedReason is the reason of a Failed phase read back from status: a
// status without one failed on a gate.
func failedReason(reason string) string {
	if reason == "" {
		return ReasonGateFailed
	}
	return reason
}

// relocate finds the current step again after the steps were edited: the
// step at index i no longer exists or no longer has the weight the route
// carries. The rollout continues from the first step with that weight, or
// from step 0.
func relocate(steps []xr.Step, i int32, weight percent.Percent) (int32, bool) {
	if int(i) < len(steps) && steps[i].Weight.Equal(weight) {
		return i, false
	}
	for j, s := range steps {
		if s.Weight.Equal(weight) {
			return int32(j), true
		}
	}
	return 0, true
}

// stepStartedAt is the current step's start as the previous run wrote it.
func stepStartedAt(prev *metav1.Time, now time.Time) *metav1.Time {
	// A zero stepStartedAt counts as missing: it is written as null and
	// reads back as missing. A hand-written one is truncated to seconds like
	// now, since writing it loses the fraction: either way the next run
	// computes the same status.
	// One up to ClockSkew ahead (a replica whose clock runs ahead, or this
	// one's behind) is kept: writing this run's now instead would move the
	// step's start back for every later run, which would find the pause
	// over and a measurement due early. Until its time comes the step
	// simply waits. One further ahead (written by hand) counts as now: a
	// pause never runs from a time nobody reached.
	if prev == nil || prev.IsZero() || beyondSkew(prev.Time, now) {
		return &metav1.Time{Time: now}
	}
	return &metav1.Time{Time: prev.Truncate(time.Second)}
}

// beyondSkew reports whether t is further ahead of now than ClockSkew: no
// replica reached it.
func beyondSkew(t, now time.Time) bool { return t.After(now.Add(ClockSkew)) }

func withWeights(s xr.RolloutStatus, canary percent.Percent) xr.RolloutStatus {
	s.CanaryWeight, s.PrimaryWeight = canary, canary.Rest()
	return s
}

func clamp(d time.Duration) time.Duration {
	return min(max(d, MinRequeue), MaxRequeue)
}
