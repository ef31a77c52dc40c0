package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// violations lists the invariants that decision d, for input in, breaks.
// They hold for any input, including a previous status written by hand.
func violations(in Input, d Decision) []string {
	var v []string
	bad := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	s := d.Status
	w := d.CanaryWeight

	// Weights.
	if s.CanaryWeight.Hundredths()+s.PrimaryWeight.Hundredths() != percent.Max.Hundredths() {
		bad("canary %s + primary %s != 100", s.CanaryWeight, s.PrimaryWeight)
	}
	if !w.Equal(s.CanaryWeight) {
		bad("decision weight %s != status weight %s", w, s.CanaryWeight)
	}
	if !w.Valid() {
		bad("weight %s is not a percent", w)
	}

	// Phases, health and activity.
	switch s.Phase {
	case xr.PhaseFailed, xr.PhaseAborted:
		if !w.IsZero() || d.Active || d.Healthy || d.Reason == "" {
			bad("phase %s with weight %s, active %t, healthy %t, reason %q", s.Phase, w, d.Active, d.Healthy, d.Reason)
		}
	case xr.PhaseStable, xr.PhaseProgressing, xr.PhasePaused, xr.PhaseSucceeded:
		if !d.Healthy || d.Reason != "" {
			bad("phase %s unhealthy (%q)", s.Phase, d.Reason)
		}
	default:
		bad("phase %q is none of the documented phases", s.Phase)
	}
	if d.Active != wantActive(in, d) {
		bad("active %t in phase %s at %s%%", d.Active, s.Phase, w)
	}
	if d.Requeue < MinRequeue || d.Requeue > MaxRequeue {
		bad("requeue %s outside [%s, %s]", d.Requeue, MinRequeue, MaxRequeue)
	}
	for _, e := range d.Events {
		if strings.Contains(e.Message, "\n") || e.Reason == "" || e.Message == "" {
			bad("event %+v is not one line with a reason", e)
		}
	}
	if strings.Contains(s.Message, "\n") {
		bad("message %q is not one line", s.Message)
	}

	// What the API server and the next run accept, and what the route
	// carries.
	if n := utf8.RuneCountInString(s.Message); n > xr.MaxStatusMessage || !utf8.ValidString(s.Message) {
		bad("message of %d characters (valid UTF-8: %t), more than %d", n, utf8.ValidString(s.Message), xr.MaxStatusMessage)
	}
	for _, t := range []*metav1.Time{s.StepStartedAt, s.NextStepAt} {
		if t != nil && (t.Year() < 1 || t.Year() > 9999) {
			bad("time %s outside what date-time admits", t)
		}
	}
	// A start up to ClockSkew ahead is another replica's, kept; further
	// ahead nobody reached it.
	if s.StepStartedAt != nil && s.StepStartedAt.After(in.Now.Add(ClockSkew)) {
		bad("stepStartedAt %s more than %s after now %s", s.StepStartedAt, ClockSkew, in.Now)
	}
	for _, m := range namedWeights.FindAllStringSubmatch(s.Message, -1) {
		if m[1] != w.String() && m[2] != w.String() {
			bad("message %q names a weight the route does not carry (%s%%)", s.Message, w)
		}
	}
	if d.HoldPrevious && !isFrozen(in) && !manualHold(in) {
		bad("holds the previous composition without being paused")
	}
	if isFrozen(in) {
		return append(v, frozenViolations(in, d)...)
	}
	if s.Revision != in.Revision {
		bad("revision %q, spec says %q", s.Revision, in.Revision)
	}

	if !in.Traffic.Progressive() {
		if s.Step != nil || s.StepStartedAt != nil || s.NextStepAt != nil || moveEvent(d) != "" {
			bad("manual mode with step %v, times %v/%v or event %q", s.Step, s.StepStartedAt, s.NextStepAt, moveEvent(d))
		}
		if s.Phase == xr.PhaseProgressing || s.Phase == xr.PhaseSucceeded {
			bad("manual mode in phase %s", s.Phase)
		}
		return v
	}

	steps := in.Traffic.Steps
	if s.Phase == xr.PhaseStable {
		bad("progressive mode in phase Stable")
	}
	if s.Step == nil || *s.Step < 0 || int(*s.Step) >= len(steps) {
		bad("step %v outside the %d steps", s.Step, len(steps))
		return v
	}
	if s.StepStartedAt == nil {
		bad("no stepStartedAt")
		return v
	}
	step := steps[*s.Step]
	last := steps[len(steps)-1].Weight
	switch {
	case s.Phase == xr.PhaseProgressing && awaitingEntryStatus(in, s):
		if !strings.HasPrefix(s.Message, "waiting at 0% to enter step 0: ") || in.Capacity == nil && !hasStartHooks(in) {
			bad("waiting to enter step 0 with message %q, capacity gate %t", s.Message, in.Capacity != nil)
		}
	case s.Phase == xr.PhaseProgressing:
		next := s.StepStartedAt.Add(step.Pause)
		if s.Reason == ReasonBaking && s.BakeStartedAt != nil {
			next = s.BakeStartedAt.Add(in.Traffic.Bake) // A bake ends at its end.
		}
		if s.NextStepAt == nil || !s.NextStepAt.Equal(&metav1.Time{Time: next}) {
			bad("nextStepAt %v, want %v (stepStartedAt %v + %s, or the bake's end)", s.NextStepAt, next, s.StepStartedAt, step.Pause)
		}
		if !strings.HasPrefix(s.Message, fmt.Sprintf("holding step %d (%s%%): ", *s.Step, step.Weight)) ||
			strings.HasSuffix(s.Message, ": ") {
			bad("progressing message %q does not name what holds step %d", s.Message, *s.Step)
		}
		if !w.Equal(step.Weight) || last.Less(w) {
			bad("phase %s at %s%%, step %d is %s%%, last step %s%%", s.Phase, w, *s.Step, step.Weight, last)
		}
	case s.Phase == xr.PhasePaused && shortOfStep0(in, s):
		// Paused while it waited to enter step 0: at 0%, capacity-gated.
		if in.Capacity == nil && !hasStartHooks(in) {
			bad("paused short of step 0 at 0%% without a capacity gate or start hooks")
		}
	case s.Phase == xr.PhasePaused, s.Phase == xr.PhaseSucceeded:
		if !w.Equal(step.Weight) || last.Less(w) {
			bad("phase %s at %s%%, step %d is %s%%, last step %s%%", s.Phase, w, *s.Step, step.Weight, last)
		}
	default:
		// Failed and Aborted: weight 0, checked above.
	}
	if s.Phase != xr.PhaseProgressing && s.NextStepAt != nil {
		bad("nextStepAt %v in phase %s", s.NextStepAt, s.Phase)
	}
	if s.AwaitingApproval && (s.Phase != xr.PhaseProgressing || !step.Approval || approved(in, *s.Step)) {
		bad("awaiting approval in phase %s at step %d (approval step: %t, approved: %t)", s.Phase, *s.Step, step.Approval, approved(in, *s.Step))
	}
	if s.Phase == xr.PhaseFailed && s.Reason == ReasonAnalysisFailed && in.Previous != nil && in.Previous.Phase != xr.PhaseFailed &&
		verdictOf(s.Analysis, "smoke", *s.Step) != xr.VerdictFailed {
		bad("failed on an analysis without a Failed verdict at step %d: %v", *s.Step, s.Analysis)
	}
	if s.Phase == xr.PhaseFailed && len(d.Analysis) > 0 {
		bad("a failed rollout composes analysis %v", d.Analysis)
	}

	// The run moved at most one step, and never with the clock behind the
	// step's start.
	p := in.Previous
	if p == nil || p.Step == nil || *p.Step < 0 || p.Revision != in.Revision {
		if *s.Step != 0 {
			bad("no previous step, yet at step %d", *s.Step)
		}
		return v
	}
	from := *p.Step
	relocated := int(from) >= len(steps) || steps[from].Weight != p.CanaryWeight
	switch {
	case *s.Step == from, *s.Step == int32(len(steps)-1) && from >= int32(len(steps)):
		// The same step, or a step beyond the list kept within it.
	case s.Phase == xr.PhaseSucceeded && p.Phase == xr.PhaseSucceeded && int(*s.Step) == len(steps)-1:
		// Still Succeeded: at the last step, whatever steps came before.
	case *s.Step == from+1 && strings.Contains(moveEvent(d), fmt.Sprintf("advanced to step %d ", from+1)):
		// One step on: never past an approval nobody gave, nor an analysis
		// that did not pass.
		if int(from) < len(steps) && steps[from].Approval && !approved(in, from) {
			bad("advanced past approval step %d without an approval (%+v)", from, in.Traffic.Approval)
		}
		if int(from) < len(steps) && len(steps[from].Analysis) > 0 && verdictOf(s.Analysis, "smoke", from) != xr.VerdictPassed {
			bad("advanced past step %d without its analysis passing: %v", from, s.Analysis)
		}
	case int(*s.Step) == len(steps)-1 && s.Promoted == in.Revision && p.Promoted != in.Revision && strings.Contains(moveEvent(d), " promoted from step "):
		// promote moves to the last step, once.
	case *s.Step == 0 && (p.Phase == xr.PhaseAborted || p.Phase == xr.PhaseFailed):
		// Clearing abort, or a refusal lifted, restarts.
	case *s.Step == 0 && p.CanaryDigest != "" && in.CanaryDigest != "" && p.CanaryDigest != in.CanaryDigest:
		// A changed canary restarts.
	case relocated && (*s.Step == 0 || steps[*s.Step].Weight == p.CanaryWeight):
		// Edited steps: found again by weight, or from step 0.
	default:
		bad("moved from step %d to %d, event %q", from, *s.Step, moveEvent(d))
	}
	// Finding edited steps again by weight is no move in time, so a clock
	// behind the step's start does not stop it.
	foundAgain := relocated && int(*s.Step) < len(steps) && steps[*s.Step].Weight == p.CanaryWeight
	if p.StepStartedAt != nil && in.Now.Truncate(time.Second).Before(p.StepStartedAt.Truncate(time.Second)) && !foundAgain &&
		((*s.Step > from && p.Phase != xr.PhaseSucceeded) || (s.Phase == xr.PhaseSucceeded && p.Phase != xr.PhaseSucceeded)) {
		bad("clock %s behind stepStartedAt %s, yet moved from step %d to %d (%s)", in.Now, p.StepStartedAt, from, *s.Step, s.Phase)
	}
	return v
}

// namedWeights finds the weights the engine's own phrases name: "step 1
// (50%)" and "paused at 50%".
var namedWeights = regexp.MustCompile(`step \d+ \((\d+(?:\.\d+)?)%\)|paused at (\d+(?:\.\d+)?)%`)

// wantActive is when the canary-only rules (A/B, session, mirror) apply:
// while the rollout is under way and the canary gets less than everything.
func wantActive(in Input, d Decision) bool {
	s, w := d.Status, d.CanaryWeight
	if !w.Less(percent.Max) {
		return false
	}
	switch s.Phase {
	case xr.PhaseStable:
		return !w.IsZero()
	case xr.PhasePaused:
		if isFrozen(in) && in.RouteMissing && canaryChanged(in) {
			return false // A canary nobody tested, composed at 0%.
		}
		return !w.IsZero() || (in.Traffic.Progressive() && s.Step != nil)
	case xr.PhaseProgressing:
		// Waiting at 0% to enter the first step: the canary cannot carry
		// anything yet, not even testers.
		return !awaitingEntryStatus(in, s)
	default:
		return false
	}
}

// awaitingEntryStatus reports whether a status waits at 0% to enter the
// first step, for the canary's capacity.
func awaitingEntryStatus(in Input, s xr.RolloutStatus) bool {
	if (s.Reason == ReasonAwaitingConfirmation || s.Reason == ReasonAwaitingHook) && hasStartHooks(in) &&
		s.CanaryWeight.IsZero() && s.Step != nil && *s.Step == 0 && strings.HasPrefix(s.Message, "waiting at 0% to enter step 0: ") {
		// Or for its confirm-rollout and pre-rollout hooks, whatever step
		// 0's weight.
		return true
	}
	return s.Reason == ReasonAwaitingCapacity && s.CanaryWeight.IsZero() && s.Step != nil && *s.Step == 0 &&
		len(in.Traffic.Steps) > 0 && !in.Traffic.Steps[0].Weight.IsZero()
}

// shortOfStep0 reports whether a status is at step 0 at 0% while step 0
// has a weight: a rollout that never entered its first step.
func shortOfStep0(in Input, s xr.RolloutStatus) bool {
	return s.CanaryWeight.IsZero() && s.Step != nil && *s.Step == 0 && len(in.Traffic.Steps) > 0 && !in.Traffic.Steps[0].Weight.IsZero()
}

// isFrozen reports whether the run is a paused progressive rollout with a
// previous status: one where nothing moves.
func isFrozen(in Input) bool {
	p := in.Previous
	if !in.Traffic.Progressive() || !in.Traffic.Paused || p == nil || in.Traffic.Abort || in.CanaryRefused {
		return false
	}
	// A failed revision stays failed (terminal), paused or not.
	return p.Phase != xr.PhaseFailed || restartOf(in) != noRestart
}

// frozenViolations are the invariants of a paused rollout: the weight is the
// one the previous run composed (nothing when it had failed or aborted), no
// event, and the revision and digest the restart is measured against are
// kept.
func frozenViolations(in Input, d Decision) []string {
	var v []string
	p, s := in.Previous, d.Status
	changed := canaryChanged(in)
	want := p.CanaryWeight.Clamp()
	if p.Phase == xr.PhaseFailed || p.Phase == xr.PhaseAborted || (changed && in.RouteMissing) {
		want = percent.Zero
	}
	if !d.CanaryWeight.Equal(want) {
		v = append(v, fmt.Sprintf("paused at %s%%, the previous run composed %s%% (%s)", d.CanaryWeight, p.CanaryWeight, p.Phase))
	}
	if ev := moveEvent(d); ev != "" {
		v = append(v, fmt.Sprintf("event %q while paused", ev))
	}
	if s.Revision != p.Revision {
		v = append(v, fmt.Sprintf("revision %q while paused, the previous run had %q", s.Revision, p.Revision))
	}
	if d.HoldPrevious != (changed && !in.RouteMissing) {
		v = append(v, fmt.Sprintf("holds the previous composition: %t, the canary changed: %t, the route is missing: %t", d.HoldPrevious, changed, in.RouteMissing))
	}
	return v
}

// moveEvent is the message of the events of moves (not of phase changes)
// that a decision carries, joined.
func moveEvent(d Decision) string {
	var msgs []string
	for _, e := range d.Events {
		switch e.Reason {
		case EventPaused, EventFailed, EventAborted, ReasonAwaitingApproval:
		default:
			msgs = append(msgs, e.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// manualHold reports whether a paused manual run sees another canary than
// the previous run composed, and a route to hold.
func manualHold(in Input) bool {
	p := in.Previous
	return !in.Traffic.Progressive() && in.Traffic.Paused && !in.Traffic.Abort && !in.CanaryRefused && p != nil && !in.RouteMissing &&
		p.CanaryDigest != "" && in.CanaryDigest != "" && p.CanaryDigest != in.CanaryDigest
}

// canaryChanged reports whether a paused run sees another canary than the
// previous run composed.
func canaryChanged(in Input) bool {
	p := in.Previous
	return p.Revision != in.Revision || (p.CanaryDigest != "" && in.CanaryDigest != "" && p.CanaryDigest != in.CanaryDigest)
}

// roundTrip is what Crossplane keeps of a status between runs: its JSON.
func roundTrip(s xr.RolloutStatus) (*xr.RolloutStatus, []byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	out := &xr.RolloutStatus{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, b, fmt.Errorf("status %s does not read back: %w", b, err)
	}
	return out, b, nil
}

// rerunViolations runs the engine again on its own status with nothing else
// changed, and reports what changed though nothing was due: the status must
// come out byte for byte the same (as JSON, which is what Crossplane
// stores), without an event. A run that says the step is due is the one
// case where the next run moves.
func rerunViolations(in Input, d Decision) []string {
	prev, before, err := roundTrip(d.Status)
	if err != nil {
		return []string{err.Error()}
	}
	if strings.HasSuffix(d.Status.Message, holdDue) {
		return nil
	}
	in.Previous = prev
	d2 := Decide(in)
	if len(d2.Asks) > 0 || len(in.Hooks) > 0 {
		// A hook asked about (a step's rollout hook, asked once the
		// previous run was at the step's weight), or a record of an answer
		// that only this run's step consults (a rollback hook's 2xx, read
		// once the restart is behind): news the status may say.
		return nil
	}
	after, err := json.Marshal(d2.Status)
	if err != nil {
		return []string{err.Error()}
	}
	var v []string
	if !bytes.Equal(before, after) {
		v = append(v, fmt.Sprintf("status changed on a run with no change:\nbefore %s\nafter  %s", before, after))
	}
	if len(d2.Events) > 0 {
		v = append(v, fmt.Sprintf("events %+v on a run with no change", d2.Events))
	}
	if diff := cmp.Diff(d.Status, d2.Status); diff == "" && d2.CanaryWeight != d.CanaryWeight {
		v = append(v, fmt.Sprintf("weight %s -> %s with the same status", d.CanaryWeight, d2.CanaryWeight))
	}
	return v
}
