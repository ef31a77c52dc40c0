package rollout

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Reasons of the hooks.
const (
	// ReasonAwaitingConfirmation: a confirm-rollout,
	// confirm-traffic-increase or confirm-promotion hook has not answered
	// 2xx yet.
	ReasonAwaitingConfirmation = "AwaitingConfirmation"
	// ReasonAwaitingHook: a pre-rollout hook has not answered 2xx yet; the
	// rollout waits at 0% short of its first step.
	ReasonAwaitingHook = "AwaitingHook"
	// ReasonRollbackRequested: a rollback hook answered 2xx; the revision
	// stays Aborted until a new revision or traffic.retry.
	ReasonRollbackRequested = "RollbackRequested"
	// ReasonHookFailed: a pre-rollout or rollout hook failed its
	// failureLimit calls.
	ReasonHookFailed = "HookFailed"
)

// Reasons of the events of a hook's call: said when a hook's result
// changes, not on every call.
const (
	EventHookSucceeded = "HookSucceeded"
	EventHookFailed    = "HookFailed"
)

// A HookCall is a call of a hook the engine asks for (Decision.Asks) or
// tells (Tells): the hook, the transition it is for and, for an event
// hook, the event.
type HookCall struct {
	Hook       xr.Hook
	Transition string
	Event      *Event
}

// A HookAnswer is what a call answered.
type HookAnswer struct {
	// OK is an answer of 2xx.
	OK bool
	// Status is the answer's HTTP status, 0 for none.
	Status int
	// Reason says why it is not OK.
	Reason string
}

// hookState is what the engine knows of a hook for a transition.
type hookState int

const (
	// hookUnanswered: no call for the transition yet.
	hookUnanswered hookState = iota
	// hookYes: it answered 2xx.
	hookYes
	// hookNo: it answered otherwise; asked again once its interval has
	// passed.
	hookNo
	// hookGaveUp: a pre-rollout or rollout hook failed its failureLimit.
	hookGaveUp
)

// transition names a moment of the rollout for the hooks' records: the
// revision, the attempt (a retry's value) and the moment.
func transition(in Input, attempt, moment string) string {
	// Cut within the XRD's bound, in characters as it counts them, and
	// told apart from another cut the same way by a digest of the whole.
	return fielderr.Truncate(xr.HookTransition(in.Revision, attempt, moment), maxTransition, fielderr.Characters, digestOf)
}

// digestOf is a short digest of a string.
func digestOf(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("#%08x", h.Sum32())
}

// since names a moment of a step by the time the step started: each time
// the rollout enters a step (a restart, a resume, steps edited) is a
// moment of its own, whose hooks are asked again.
func since(moment string, started *metav1.Time) string {
	if started == nil {
		return moment
	}
	return moment + "@" + started.UTC().Format(time.RFC3339)
}

// maxTransition bounds a record's transition, as the XRDs do.
const maxTransition = 256

// hooksOf are the hooks of a type, in the spec's order.
func hooksOf(in Input, t hooks.Type) []xr.Hook {
	var out []xr.Hook
	for _, h := range in.Traffic.Hooks {
		if h.Type == t {
			out = append(out, h)
		}
	}
	return out
}

// ask is what the engine knows of a hook for a transition; it asks for a
// call when none was made for it, or the last did not answer 2xx and its
// interval has passed (never again for a hook that gave up). The record is
// the hook's last call for the transition, zero without one.
func ask(in Input, h xr.Hook, t string) (hookState, xr.HookStatus) {
	rec, ok := recordFor(in, h, t)
	if !ok {
		in.want(HookCall{Hook: h, Transition: t})
		return hookUnanswered, xr.HookStatus{}
	}
	switch {
	case rec.Result == xr.HookSucceeded:
		return hookYes, rec
	case (h.Type == hooks.PreRollout || h.Type == hooks.Rollout) && rec.Failures >= h.FailureLimit:
		return hookGaveUp, rec
	case !in.Now.Before(rec.Time.Add(h.Interval)):
		in.want(HookCall{Hook: h, Transition: t})
	}
	return hookNo, rec
}

// recordFor is a hook's record of its last call for a transition: a
// record of another transition, or dated beyond the clock skew (written by
// hand), is no call for this one.
func recordFor(in Input, h xr.Hook, t string) (xr.HookStatus, bool) {
	rec, ok := in.Hooks[h.Name]
	if !ok || rec.Transition != t || beyondSkew(rec.Time.Time, in.Now) {
		return xr.HookStatus{}, false
	}
	return rec, true
}

// want records a call the engine asks for, once per hook.
func (in Input) want(c HookCall) {
	if in.asks == nil || slices.ContainsFunc(*in.asks, func(o HookCall) bool { return o.Hook.Name == c.Hook.Name }) {
		return
	}
	*in.asks = append(*in.asks, c)
}

// hookWait is the first hook of a type that has not answered 2xx for a
// transition: why it holds, when to ask again, and whether it gave up.
// Every hook of the type is asked at once.
func hookWait(in Input, t hooks.Type, tr string) (why string, requeue time.Duration, gaveUp bool) {
	requeue = MaxRequeue
	for _, h := range hooksOf(in, t) {
		state, rec := ask(in, h, tr)
		switch state {
		case hookYes:
			continue
		case hookGaveUp:
			if !gaveUp {
				why, gaveUp = fmt.Sprintf("%s hook %s failed %d time(s), its failureLimit: %s", t, h.Name, rec.Failures, quote(rec.Reason)), true
			}
			continue
		case hookUnanswered:
			requeue = MinRequeue
			if why == "" {
				why = fmt.Sprintf("%s hook %s has not answered yet", t, h.Name)
			}
		case hookNo:
			requeue = min(requeue, clamp(rec.Time.Add(h.Interval).Sub(in.Now)))
			if why == "" {
				why = fmt.Sprintf("%s hook %s did not answer 2xx at %s (%s); asked again at %s", t, h.Name,
					rec.Time.UTC().Format(time.RFC3339), answerOf(rec), rec.Time.Add(h.Interval).UTC().Format(time.RFC3339))
			}
		}
	}
	if gaveUp {
		return why, requeue, true
	}
	return why, requeue, false
}

// answerOf says what a failed call answered.
func answerOf(rec xr.HookStatus) string {
	if rec.Reason != "" {
		return quote(rec.Reason)
	}
	return fmt.Sprintf("status %d", rec.Status)
}

// rollbackRequested asks the rollback hooks of a progressing rollout; one
// that answered 2xx for this attempt aborts it.
func rollbackRequested(in Input, cur xr.RolloutStatus) (string, bool) {
	tr := transition(in, cur.Attempt, "rollback")
	for _, h := range hooksOf(in, hooks.Rollback) {
		if state, rec := ask(in, h, tr); state == hookYes {
			return fmt.Sprintf("rollback hook %s asked for a rollback at %s: all traffic goes to the primary until a new revision or traffic.retry",
				h.Name, rec.Time.UTC().Format(time.RFC3339)), true
		}
	}
	return "", false
}

// rollbackDue is how soon the rollback hooks of a progressing rollout are
// asked again: at its interval after a hook's last call for this attempt,
// soon when it has none.
func rollbackDue(in Input, s xr.RolloutStatus) (time.Duration, bool) {
	if s.Phase != xr.PhaseProgressing || len(in.Traffic.Hooks) == 0 {
		return 0, false
	}
	tr := transition(in, s.Attempt, "rollback")
	due, found := MaxRequeue, false
	for _, h := range hooksOf(in, hooks.Rollback) {
		found = true
		rec, ok := recordFor(in, h, tr)
		if !ok {
			due = MinRequeue
			continue
		}
		due = min(due, clamp(rec.Time.Add(h.Interval).Sub(in.Now)))
	}
	return due, found
}

// hasStartHooks reports whether the rollout has confirm-rollout or
// pre-rollout hooks: its first step waits for them at 0%.
func hasStartHooks(in Input) bool {
	return slices.ContainsFunc(in.Traffic.Hooks, func(h xr.Hook) bool {
		return h.Type == hooks.ConfirmRollout || h.Type == hooks.PreRollout
	})
}

// awaitingStartHooks keeps a rollout at 0%, short of its first step, until
// every confirm-rollout hook and then every pre-rollout hook answered 2xx
// for this attempt; a pre-rollout hook that gave up fails it.
func awaitingStartHooks(in Input, cur xr.RolloutStatus, ev Event) (Decision, bool) {
	if !hasStartHooks(in) {
		return Decision{}, false
	}
	tr := transition(in, cur.Attempt, since("start", cur.StepStartedAt))
	reason := ReasonAwaitingConfirmation
	why, requeue, _ := hookWait(in, hooks.ConfirmRollout, tr)
	if why == "" {
		reason = ReasonAwaitingHook
		var gaveUp bool
		why, requeue, gaveUp = hookWait(in, hooks.PreRollout, tr)
		if gaveUp {
			return withEvent(terminal(cur, xr.PhaseFailed, ReasonHookFailed, "the rollout failed before its first step: "+why), ev), true
		}
	}
	if why == "" {
		return Decision{}, false
	}
	cur.Phase, cur.Reason = xr.PhaseProgressing, reason
	cur.Message = "waiting at 0% to enter step 0: " + why
	cur.NextStepAt, cur.AwaitingApproval = nil, false
	return withEvent(Decision{
		CanaryWeight: percent.Zero,
		Status:       withWeights(cur, percent.Zero),
		Requeue:      requeue,
		Healthy:      true,
	}, ev), true
}

// rolloutHookHold is what the rollout hooks of the current step hold: they
// are asked once the gateway carries the step's weight (the previous run
// was at the step and its weight), so that the load they drive reaches the
// canary at that weight.
func rolloutHookHold(in Input, cur xr.RolloutStatus) (why string, requeue time.Duration, gaveUp bool) {
	i := *cur.Step
	p := in.Previous
	if p == nil || p.Step == nil || *p.Step != i || p.Revision != in.Revision || !p.CanaryWeight.Equal(in.Traffic.Steps[i].Weight) {
		return "", 0, false
	}
	return hookWait(in, hooks.Rollout, stepMoment(in, cur))
}

// stepMoment is the transition of the current step's rollout hooks: the
// step, and when it started.
func stepMoment(in Input, cur xr.RolloutStatus) string {
	return transition(in, cur.Attempt, since(fmt.Sprintf("step-%d", *cur.Step), cur.StepStartedAt))
}

// failedHook finds a rollout hook of the current step that gave up.
func failedHook(in Input, cur xr.RolloutStatus) (bool, string) {
	tr := stepMoment(in, cur)
	for _, h := range hooksOf(in, hooks.Rollout) {
		if rec, ok := recordFor(in, h, tr); ok && rec.Result == xr.HookFailed && rec.Failures >= h.FailureLimit {
			return true, fmt.Sprintf("rollout hook %s of step %d failed %d time(s), its failureLimit: %s", h.Name, *cur.Step, rec.Failures, answerOf(rec))
		}
	}
	return false, ""
}

// confirmWait is what a confirm-traffic-increase (before step next) or
// confirm-promotion (next < 0: before Succeeded) hook holds.
func confirmWait(in Input, cur xr.RolloutStatus, next int32) (hold, bool) {
	// A confirmation is of a move to a weight: steps edited meanwhile
	// make the next move another, which a 2xx for the old one does not
	// confirm.
	steps := in.Traffic.Steps
	t, moment := hooks.ConfirmPromotion, fmt.Sprintf("promotion-at-%s", steps[len(steps)-1].Weight)
	if next >= 0 {
		t, moment = hooks.ConfirmTrafficIncrease, fmt.Sprintf("step-%d-at-%s", next, steps[next].Weight)
	}
	why, requeue, _ := hookWait(in, t, transition(in, cur.Attempt, since(moment, cur.StepStartedAt)))
	if why == "" {
		return hold{}, false
	}
	return hold{why: why, requeue: requeue}, true
}

// Tells are the calls of this decision's event and post-rollout hooks: an
// event hook is told each event of the decision, once (its record names
// the events it was told); a post-rollout hook once, on the run that ends
// the rollout (Succeeded, Failed or Aborted).
func Tells(in Input, d Decision) []HookCall {
	var out []HookCall
	if len(d.Events) > 0 {
		tr := transition(in, d.Status.Attempt, eventsMoment(d.Events))
		for _, h := range hooksOf(in, hooks.Event) {
			if rec, ok := in.Hooks[h.Name]; ok && rec.Transition == tr {
				continue
			}
			for i := range d.Events[:min(len(d.Events), maxToldEvents)] {
				out = append(out, HookCall{Hook: h, Transition: tr, Event: &d.Events[i]})
			}
		}
	}
	phase := d.Status.Phase
	ended := phase == xr.PhaseSucceeded || phase == xr.PhaseFailed || phase == xr.PhaseAborted
	// A rollout ends on a run that leaves another phase behind: never on
	// the first run (a release's first revision goes straight to
	// Succeeded: no rollout happened).
	if p := in.Previous; ended && p != nil && (p.Phase != phase || p.Revision != in.Revision) {
		tr := transition(in, d.Status.Attempt, since(string(phase), d.Status.StepStartedAt))
		for _, h := range hooksOf(in, hooks.PostRollout) {
			if rec, ok := in.Hooks[h.Name]; !ok || rec.Transition != tr {
				out = append(out, HookCall{Hook: h, Transition: tr})
			}
		}
	}
	return out
}

// maxToldEvents bounds the events an event hook is told on one run.
const maxToldEvents = 8

// eventsMoment names the events of a decision: their reasons and a digest
// of their messages, so that the same transition said again (another call
// of the same reconcile) is known and another is not.
func eventsMoment(events []Event) string {
	reasons := make([]string, 0, len(events))
	var all strings.Builder
	for _, e := range events {
		reasons = append(reasons, e.Reason)
		all.WriteString(e.Reason + "\x00" + e.Message + "\x00")
	}
	return fielderr.Cut(strings.Join(reasons, "+"), 160) + digestOf(all.String())
}

// Record is a hook's record after a call: its answer for the transition,
// and how many of its calls for that transition failed.
func Record(old xr.HookStatus, c HookCall, a HookAnswer, now time.Time) xr.HookStatus {
	rec := xr.HookStatus{
		Name: c.Hook.Name, Transition: c.Transition, Time: metav1.Time{Time: now.Truncate(time.Second)},
		Result: xr.HookSucceeded, Status: int32(min(max(a.Status, 0), 999)),
	}
	if old.Name == c.Hook.Name && old.Transition == c.Transition {
		rec.Failures = old.Failures
	}
	if !a.OK {
		rec.Result, rec.Reason = xr.HookFailed, a.Reason
		rec.Failures++
	}
	// Within what the XRD admits, as every record the status holds.
	return rec.Bounded()
}

// HookEvent is the event of a call whose result differs from the hook's
// last for the transition: a Warning when it failed (but for a gate's or
// a rollback hook's 4xx, its ordinary answer), HookSucceeded when a hook
// that is asked answered 2xx; nothing when the result is the same as
// before.
func HookEvent(old, rec xr.HookStatus, t hooks.Type) (Event, bool) {
	if old.Name == rec.Name && old.Transition == rec.Transition && old.Result == rec.Result {
		return Event{}, false
	}
	told := t == hooks.Event || t == hooks.PostRollout
	if rec.Result == xr.HookSucceeded {
		if told {
			// Telling succeeded: the transition's own event says enough.
			return Event{}, false
		}
		return Event{Reason: EventHookSucceeded, Message: fmt.Sprintf("%s hook %s answered %d for %s", t, rec.Name, rec.Status, rec.Transition)}, true
	}
	// A gate's or a rollback hook's refusal (an answer of 4xx) is its
	// ordinary "not yet", "no": only no answer, or a server's error, warns.
	asked := t == hooks.Rollback || t == hooks.ConfirmRollout || t == hooks.ConfirmTrafficIncrease || t == hooks.ConfirmPromotion
	if asked && rec.Status >= 400 && rec.Status < 500 {
		return Event{}, false
	}
	return Event{Reason: EventHookFailed, Warning: true, Message: fmt.Sprintf("%s hook %s failed for %s: %s", t, rec.Name, rec.Transition, answerOf(rec))}, true
}

// HookStatuses are status.rollout.hooks: the record of each hook of the
// spec that has one, in the spec's order.
func HookStatuses(hs []xr.Hook, records map[string]xr.HookStatus) []xr.HookStatus {
	var out []xr.HookStatus
	for _, h := range hs {
		if rec, ok := records[h.Name]; ok {
			out = append(out, rec)
		}
	}
	return out
}
