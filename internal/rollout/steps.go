package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// A hold is what keeps the current step from advancing.
type hold struct {
	// why says what holds, for the message; "" when nothing does.
	why     string
	requeue time.Duration
	// beyondPause is true for what the progress deadline counts: the route,
	// a gate, an analysis; never the step's own pause, nor an approval,
	// which waits for a person as long as it takes.
	beyondPause bool
	// approval is true while an approval step waits for traffic.approval.
	approval bool
}

// advance holds the current step or moves past it. A run moves at most one
// step: the gateway must accept each step's weights before the next. moved
// says this run already moved the rollout (started, resumed, relocated or
// promoted the step, or moved its start), and ev says so to the user.
func advance(in Input, cur xr.RolloutStatus, ev Event, moved bool) Decision {
	steps := in.Traffic.Steps
	i := *cur.Step
	cur = withMeasured(in, cur)

	// A gate, an analysis or a metric that has failed ends the rollout,
	// whatever else holds.
	if failed, msg := failedGate(in, cur); failed {
		return withEvent(terminal(cur, xr.PhaseFailed, ReasonGateFailed, msg), ev)
	}
	var passed []string
	cur, passed = judgeAnalysis(in, cur)
	if failed, msg := failedAnalysis(cur); failed {
		return withEvent(terminal(cur, xr.PhaseFailed, ReasonAnalysisFailed, msg), ev)
	}
	if failed, msg := failedMetric(in, cur); failed {
		return withEvent(terminal(cur, xr.PhaseFailed, ReasonMetricFailed, msg), ev)
	}
	if failed, msg := failedHook(in, cur); failed {
		return withEvent(terminal(cur, xr.PhaseFailed, ReasonHookFailed, msg), ev)
	}
	h := holds(in, cur)
	if h.why != "" && h.beyondPause {
		if late, msg := pastDeadline(in, cur, h.why); late {
			return withEvent(terminal(cur, xr.PhaseFailed, ReasonProgressDeadlineExceeded, msg), ev)
		}
	}
	if (h.why == "" || promoteDue(in, cur)) && moved {
		// A run that starts or resumes the step has moved the rollout
		// already, so it holds the step even when nothing else does, or a
		// promote is due: the next run, soon, moves on.
		h = hold{why: holdDue, requeue: MinRequeue}
	}
	if h.why != "" {
		return withPassed(holding(in, cur, h, ev), in, passed)
	}

	if int(i) == len(steps)-1 {
		return withPassed(lastStep(in, cur, ev), in, passed)
	}

	// The canary scales ahead of its traffic: the move waits until it can
	// carry the next step's weight.
	if ch, waiting := capacityHold(in, i+1); waiting {
		if late, msg := pastDeadline(in, cur, ch.why); late {
			return withEvent(terminal(cur, xr.PhaseFailed, ReasonProgressDeadlineExceeded, msg), ev)
		}
		cur.Reason = ReasonAwaitingCapacity
		ch.requeue = untilDeadline(in, cur.StepStartedAt.Add(steps[i].Pause))
		return withPassed(holding(in, cur, ch, ev), in, passed)
	}

	// The next step's weight waits for every confirm-traffic-increase
	// hook's 2xx.
	if h, waiting := confirmWait(in, cur, i+1); waiting {
		cur.Reason = ReasonAwaitingConfirmation
		return withPassed(holding(in, cur, h, ev), in, passed)
	}

	next := Event{Reason: ReasonAdvanced, Message: fmt.Sprintf("rollout of revision %s advanced to step %d (%s%%)", in.Revision, i+1, steps[i+1].Weight)}
	if steps[i].Approval {
		next = Event{Reason: ReasonApproved, Message: fmt.Sprintf("step %d of revision %s approved: the rollout advanced to step %d (%s%%)", i, in.Revision, i+1, steps[i+1].Weight)}
	}
	cur.Step = ptr.To(i + 1)
	cur.StepStartedAt = &metav1.Time{Time: in.Now}
	cur.Reason = next.Reason
	cur.AwaitingApproval = false
	// The new step's message is what the next runs show until something
	// changes, so the status does not flap.
	h = holds(in, cur)
	if h.why == "" || h.approval {
		// A new step that nothing else holds is due: the next run, soon,
		// moves on, or waits for its approval from then on.
		h = hold{why: holdDue, requeue: MinRequeue}
	}
	return withPassed(holding(in, cur, h, next), in, passed)
}

// lastStep is a rollout whose last step passed: it bakes, waits for its
// confirm-promotion hooks, or succeeds.
func lastStep(in Input, cur xr.RolloutStatus, ev Event) Decision {
	weight := in.Traffic.Steps[*cur.Step].Weight
	started := cur.BakeStartedAt == nil
	if c, h, ok := baking(in, cur); ok {
		cur = c
		cur.Reason = ReasonBaking
		if started {
			ev = Event{Reason: ReasonBaking, Message: fmt.Sprintf("rollout of revision %s passed its last step (%s%%): its metrics are measured for %s before it succeeds", in.Revision, weight, in.Traffic.Bake)}
		}
		d := holding(in, cur, h, ev)
		// The next move is the bake's end.
		d.Status.NextStepAt = &metav1.Time{Time: cur.BakeStartedAt.Add(in.Traffic.Bake)}
		return d
	}
	// Succeeded waits for every confirm-promotion hook's 2xx.
	if h, waiting := confirmWait(in, cur, -1); waiting {
		cur.Reason = ReasonAwaitingConfirmation
		return holding(in, cur, h, ev)
	}
	return succeeded(in, cur, weight, Event{
		Reason:  ReasonSucceeded,
		Message: fmt.Sprintf("rollout of revision %s succeeded at %s%%", in.Revision, weight),
	})
}

// holds says what holds the current step, if anything, and when to look
// again: the route, the step's pause, its gates, its analysis, its
// approval, in that order.
func holds(in Input, cur xr.RolloutStatus) hold {
	i := *cur.Step
	step := in.Traffic.Steps[i]
	due := cur.StepStartedAt.Add(step.Pause)
	// The clock may be behind the one that started the step (skew between
	// replicas): then the step simply waits.
	pausing := in.Now.Before(cur.StepStartedAt.Time) || in.Now.Before(due)
	// Metrics are measured whatever holds the step: its next measurement
	// may be due before anything else changes.
	measure := metricRequeue(in, cur)
	if in.Traffic.RequireAcceptedRoute {
		if ok, why := routeOfStep(in, i, step.Weight); !ok {
			if pausing {
				return hold{why: why, requeue: min(HoldRequeue, clamp(due.Sub(in.Now)), measure)}
			}
			return hold{why: why, requeue: min(untilDeadline(in, due), measure), beyondPause: true}
		}
	}
	// The step's rollout hooks (a load test) run once the gateway carries
	// its weight; one that has not answered 2xx holds the step.
	if why, requeue, _ := rolloutHookHold(in, cur); why != "" {
		return hold{why: why, requeue: min(requeue, measure), beyondPause: !pausing}
	}
	if pausing {
		return hold{why: "pause until " + due.UTC().Format(time.RFC3339), requeue: min(clamp(due.Sub(in.Now)), measure)}
	}
	if gate := heldGate(in); gate != "" {
		return hold{why: gate, requeue: min(untilDeadline(in, due), measure), beyondPause: true}
	}
	if analysis := heldAnalysis(in, cur); analysis != "" {
		return hold{why: analysis, requeue: min(untilDeadline(in, due), measure), beyondPause: true}
	}
	if metric, _ := heldMetric(in, cur); metric != "" {
		return hold{why: metric, requeue: min(untilDeadline(in, due), measure), beyondPause: true}
	}
	if step.Approval && !approved(in, i) {
		return hold{
			why:     fmt.Sprintf("awaiting approval: set traffic.approval to {revision: %s, step: %d}", in.Revision, i),
			requeue: MaxRequeue, approval: true,
		}
	}
	return hold{}
}

// approved reports whether traffic.approval approves step i of the
// revision: it names the revision and a step at or after i.
func approved(in Input, i int32) bool {
	a := in.Traffic.Approval
	return a != nil && a.Revision == in.Revision && a.Step >= i
}

// pastDeadline reports whether a hold has lasted past the step's pause for
// longer than traffic.progressDeadline. Only what holds the step beyond its
// own pause counts: the route, a gate missing, Unknown, or False within its
// failAfter, an analysis not finished.
func pastDeadline(in Input, cur xr.RolloutStatus, why string) (bool, string) {
	deadline := in.Traffic.ProgressDeadline
	if deadline <= 0 {
		return false, ""
	}
	i := *cur.Step
	step := in.Traffic.Steps[i]
	due := cur.StepStartedAt.Add(step.Pause)
	if in.Now.Sub(due) <= deadline {
		return false, ""
	}
	// The rollout fails to 0%: the message names the step, not its weight.
	return true, fmt.Sprintf("step %d was held for longer than the progress deadline %s after its pause ended at %s: %s",
		i, deadline, due.UTC().Format(time.RFC3339), why)
}

// untilDeadline is a hold's requeue, HoldRequeue, shortened so that the
// run after the progress deadline comes soon after it.
func untilDeadline(in Input, due time.Time) time.Duration {
	if in.Traffic.ProgressDeadline <= 0 {
		return HoldRequeue
	}
	left := due.Add(in.Traffic.ProgressDeadline).Sub(in.Now) + time.Second
	if left <= 0 {
		return HoldRequeue
	}
	return min(HoldRequeue, clamp(left))
}

// holding is a rollout that stays at its current step for now.
func holding(in Input, cur xr.RolloutStatus, h hold, ev Event) Decision {
	step := in.Traffic.Steps[*cur.Step]
	cur.Phase = xr.PhaseProgressing
	cur.NextStepAt = &metav1.Time{Time: cur.StepStartedAt.Add(step.Pause)}
	cur.Message = fmt.Sprintf("holding step %d (%s%%): %s", *cur.Step, step.Weight, h.why)
	cur.AwaitingApproval = h.approval
	if h.approval {
		cur.Reason = ReasonAwaitingApproval
	}
	return withEvent(Decision{
		CanaryWeight: step.Weight,
		// A dark launch (a step at 0%) mirrors to the canary; at 100% the
		// canary-only rules would only duplicate load.
		Active:   step.Weight.Less(percent.Max),
		Status:   withWeights(cur, step.Weight),
		Requeue:  h.requeue,
		Analysis: step.Analysis,
		Healthy:  true,
	}, ev)
}

// routeOfStep asks whether the gateway accepted the route of step i at a
// weight.
func routeOfStep(in Input, i int32, weight percent.Percent) (bool, string) {
	switch {
	case in.RouteAtStep != nil:
		return in.RouteAtStep(i, weight)
	case in.RouteAtWeight != nil:
		return in.RouteAtWeight(weight)
	default:
		return false, "the route has not been observed yet"
	}
}

// failedGate finds a gate that failed: a condition False for longer than
// its failAfter, a failWhen that is true, or a successWhen false for longer
// than its failAfter.
func failedGate(in Input, cur xr.RolloutStatus) (bool, string) {
	for i, g := range in.Gates {
		if !g.Found {
			continue
		}
		if g.Gate.SuccessWhen != "" {
			if failed, msg := failedCheck(in, cur, g); failed {
				return true, fmt.Sprintf("gate %d failed: %s %s %s", i, quote(g.Gate.Kind), quote(g.Gate.Name), msg)
			}
			continue
		}
		c := g.Condition
		// Without a transition time there is no telling how long the
		// condition has been False: it holds, never fails.
		if c == nil || c.Status != metav1.ConditionFalse || c.LastTransitionTime.IsZero() {
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
				i, quote(g.Gate.Kind), quote(g.Gate.Name), quote(g.Gate.ConditionType), since.UTC().Format(time.RFC3339), quote(c.Reason), g.Gate.FailAfter)
		}
	}
	return false, ""
}

// failedCheck judges an expression gate: failWhen true fails at once, and
// successWhen false fails once it has been so for longer than failAfter,
// counted from the start of the current step (the function keeps no record
// of when an expression turned false).
func failedCheck(in Input, cur xr.RolloutStatus, g GateObservation) (bool, string) {
	switch {
	case g.Check.Failed:
		return true, "matches failWhen " + quote(g.Gate.FailWhen)
	case g.Check.Err != "" || g.Check.Success || cur.StepStartedAt == nil:
		return false, ""
	case in.Now.Sub(cur.StepStartedAt.Time) > g.Gate.FailAfter:
		return true, fmt.Sprintf("has not matched successWhen %s for longer than %s since step %d started at %s",
			quote(g.Gate.SuccessWhen), g.Gate.FailAfter, *cur.Step, cur.StepStartedAt.UTC().Format(time.RFC3339))
	default:
		return false, ""
	}
}

// heldGate names the first gate that does not hold yet.
func heldGate(in Input) string {
	for i, g := range in.Gates {
		switch {
		case !g.Found:
			return fmt.Sprintf("gate %d: %s %s not found", i, quote(g.Gate.Kind), quote(g.Gate.Name))
		case g.Gate.SuccessWhen != "":
			if msg := checkHold(g.Check, g.Gate.SuccessWhen); msg != "" {
				return fmt.Sprintf("gate %d: %s %s %s", i, quote(g.Gate.Kind), quote(g.Gate.Name), msg)
			}
		case g.Condition == nil:
			return fmt.Sprintf("gate %d: %s %s has no %s condition", i, quote(g.Gate.Kind), quote(g.Gate.Name), quote(g.Gate.ConditionType))
		case g.Condition.Status != metav1.ConditionTrue:
			return fmt.Sprintf("gate %d: %s %s has %s %s (%s)", i, quote(g.Gate.Kind), quote(g.Gate.Name),
				quote(g.Gate.ConditionType), quote(string(g.Condition.Status)), quote(g.Condition.Reason))
		}
	}
	return ""
}

// checkHold says why an expression check holds, or "" when it passes.
func checkHold(c Check, successWhen string) string {
	switch {
	case c.Err != "":
		return "cannot be judged yet: " + quote(c.Err)
	case !c.Success:
		return "does not match successWhen " + quote(successWhen) + " yet"
	default:
		return ""
	}
}

// judgeAnalysis records the verdicts of the current step's analysis from
// the objects observed for it (this revision, this retry, this step): a
// verdict, once recorded, is never judged again, since the object is
// deleted once the step has passed. It returns the names that passed on
// this run.
func judgeAnalysis(in Input, cur xr.RolloutStatus) (xr.RolloutStatus, []string) {
	i := *cur.Step
	var passed []string
	for _, name := range in.Traffic.Steps[i].Analysis {
		if verdictOf(cur.Analysis, name, i) != "" {
			continue
		}
		o, found := observedAnalysis(in, cur, name)
		if !found {
			continue
		}
		verdict := ""
		switch {
		case o.Check.Failed:
			verdict = xr.VerdictFailed
		case o.Check.Success && o.Check.Err == "":
			verdict = xr.VerdictPassed
			passed = append(passed, name)
		}
		if verdict != "" {
			cur.Analysis = append(slices.Clone(cur.Analysis), xr.AnalysisVerdict{Name: name, Step: i, Verdict: verdict, Time: metav1.Time{Time: in.Now}})
			// The XRD bounds the list: the oldest verdicts give way to the
			// current step's, which decide what happens next.
			if over := len(cur.Analysis) - maxVerdicts; over > 0 {
				cur.Analysis = cur.Analysis[over:]
			}
		}
	}
	return cur, passed
}

// failedAnalysis finds an analysis of the current step that failed.
func failedAnalysis(cur xr.RolloutStatus) (bool, string) {
	for _, v := range cur.Analysis {
		if v.Step == *cur.Step && v.Verdict == xr.VerdictFailed {
			return true, fmt.Sprintf("analysis %s of step %d failed at %s", quote(v.Name), v.Step, v.Time.UTC().Format(time.RFC3339))
		}
	}
	return false, ""
}

// heldAnalysis names the first analysis of the current step without a
// verdict yet.
func heldAnalysis(in Input, cur xr.RolloutStatus) string {
	i := *cur.Step
	for _, name := range in.Traffic.Steps[i].Analysis {
		if verdictOf(cur.Analysis, name, i) != "" {
			continue
		}
		o, found := observedAnalysis(in, cur, name)
		if !found {
			return fmt.Sprintf("analysis %s has not been created yet", quote(name))
		}
		if tmpl, ok := in.Traffic.Template(name); ok {
			return "analysis " + quote(name) + " " + checkHold(o.Check, tmpl.SuccessWhen)
		}
		return "analysis " + quote(name) + " has no template"
	}
	return ""
}

// observedAnalysis finds the analysis object of a name composed for the
// current revision, canary, attempt and step: an object left by another
// step, another canary or an earlier attempt says nothing about this one,
// and neither does one being deleted.
func observedAnalysis(in Input, cur xr.RolloutStatus, name string) (AnalysisObservation, bool) {
	for _, o := range in.Analysis {
		if o.Name == name && o.Revision == xr.LabelValue(in.Revision) && o.CanaryDigest == in.CanaryDigest &&
			o.Retry == xr.LabelValue(cur.Attempt) && o.Step == *cur.Step && !o.Deleting {
			return o, true
		}
	}
	return AnalysisObservation{}, false
}

// verdictOf is the recorded verdict of an analysis at a step, or "".
func verdictOf(verdicts []xr.AnalysisVerdict, name string, step int32) string {
	for _, v := range verdicts {
		if v.Name == name && v.Step == step {
			return v.Verdict
		}
	}
	return ""
}

// verdictsOf are the verdicts a status carries that can still mean
// something: of steps reached so far, once each.
func verdictsOf(verdicts []xr.AnalysisVerdict, current int32) []xr.AnalysisVerdict {
	var out []xr.AnalysisVerdict
	for _, v := range verdicts {
		// A verdict of a step not reached yet is stale (the steps were
		// edited back) or forged: the step is judged again when entered.
		if v.Step < 0 || v.Step > current || (v.Verdict != xr.VerdictPassed && v.Verdict != xr.VerdictFailed) ||
			verdictOf(out, v.Name, v.Step) != "" {
			continue
		}
		out = append(out, v)
	}
	// The newest verdicts are the ones that still decide something.
	if over := len(out) - maxVerdicts; over > 0 {
		out = out[over:]
	}
	return out
}

// maxVerdicts bounds status.rollout.analysis, as the XRDs do.
var maxVerdicts = xr.MaxVerdicts

// terminal is a rollout that sends nothing to the canary.
func terminal(cur xr.RolloutStatus, phase xr.Phase, reason, msg string) Decision {
	cur.Phase, cur.Reason, cur.Message, cur.NextStepAt = phase, reason, msg, nil
	cur.AwaitingApproval = false
	return Decision{
		CanaryWeight: percent.Zero,
		Status:       withWeights(cur, percent.Zero),
		Requeue:      MaxRequeue,
		Healthy:      false,
		Reason:       reason,
	}
}

// succeeded is a rollout that completed its steps: it holds the last step's
// weight until the user acts, and the canary-only rules (A/B, session,
// mirror) are gone, since the rollout is over.
func succeeded(in Input, cur xr.RolloutStatus, weight percent.Percent, ev Event) Decision {
	cur.Phase, cur.Reason, cur.NextStepAt = xr.PhaseSucceeded, ReasonSucceeded, nil
	cur.AwaitingApproval = false
	cur.Message = fmt.Sprintf("revision %s completed all %d steps at %s%%", in.Revision, len(in.Traffic.Steps), weight)
	return withEvent(Decision{
		CanaryWeight: weight,
		Status:       withWeights(cur, weight),
		Requeue:      MaxRequeue,
		Healthy:      true,
	}, ev)
}

// withEvent adds an event to a decision, unless it says nothing.
func withEvent(d Decision, ev Event) Decision {
	if ev.Message != "" {
		d.Events = append(d.Events, ev)
	}
	return d
}

// withPassed says which analysis passed on this run, before what the run
// did next.
func withPassed(d Decision, in Input, passed []string) Decision {
	if len(passed) == 0 {
		return d
	}
	ev := Event{
		Reason:  EventAnalysisPassed,
		Message: fmt.Sprintf("analysis %s of revision %s passed", strings.Join(passed, ", "), in.Revision),
	}
	d.Events = append([]Event{ev}, d.Events...)
	return d
}
