package rollout

import (
	"slices"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// transitions adds to a decision's events the phase changes this run makes
// that its move does not already say: the rollout paused, failed or was
// aborted, or an approval step started waiting. A run that changes nothing
// says nothing, so no event repeats on every reconcile: Crossplane would
// count it against the XR's event budget and drop the ones that matter.
func transitions(in Input, d Decision) []Event {
	var prevPhase xr.Phase
	prevAwaiting := false
	if p := in.Previous; p != nil {
		prevPhase, prevAwaiting = p.Phase, p.AwaitingApproval
	}
	s := d.Status
	events := d.Events
	said := func(reasons ...string) bool {
		return slices.ContainsFunc(events, func(e Event) bool { return slices.Contains(reasons, e.Reason) })
	}
	// A restart leaves the previous phase behind on this run: a retry or a
	// new revision that fails again at once has failed anew, and says so
	// (the failures metric counts these events).
	if slices.ContainsFunc(events, func(e Event) bool { return isRestart(e.Reason) }) {
		prevPhase = ""
	}
	switch {
	case s.Phase == xr.PhaseFailed && prevPhase != xr.PhaseFailed:
		events = append(events, Event{Reason: EventFailed, Message: s.Message, Warning: true})
	case s.Phase == xr.PhaseAborted && prevPhase != xr.PhaseAborted:
		events = append(events, Event{Reason: EventAborted, Message: s.Message, Warning: true})
	case s.Phase == xr.PhasePaused && prevPhase != xr.PhasePaused && !said(ReasonPaused):
		events = append(events, Event{Reason: EventPaused, Message: s.Message})
	case s.Phase == xr.PhaseSucceeded && prevPhase != xr.PhaseSucceeded && prevPhase != "" && !said(ReasonSucceeded):
		events = append(events, Event{Reason: ReasonSucceeded, Message: s.Message})
	}
	if s.AwaitingApproval && !prevAwaiting {
		events = append(events, Event{Reason: ReasonAwaitingApproval, Message: s.Message})
	}
	// A confirmation starts waiting: said once, not on every run it waits.
	prevReason := ""
	if p := in.Previous; p != nil && prevPhase != "" {
		prevReason = p.Reason
	}
	if s.Reason == ReasonAwaitingConfirmation && prevReason != ReasonAwaitingConfirmation {
		events = append(events, Event{Reason: ReasonAwaitingConfirmation, Message: s.Message})
	}
	return events
}

// FailureReasons are the reasons a rollout fails for, as status.rollout
// says: what a metric of failures counts.
var FailureReasons = []string{ReasonGateFailed, ReasonAnalysisFailed, ReasonMetricFailed, ReasonProgressDeadlineExceeded, ReasonNotAllowedByPolicy, ReasonHookFailed}

// EventReasons are the reasons of the events the engine says, one per
// transition: what a metric of transitions counts.
var EventReasons = []string{
	ReasonStarted, ReasonRestarted, ReasonCanaryChanged, ReasonStepsChanged, ReasonAdvanced, ReasonResumed,
	ReasonSucceeded, ReasonAwaitingApproval, ReasonApproved, ReasonPromoted, ReasonRetried,
	EventPaused, EventFailed, EventAborted, EventAnalysisPassed,
	ReasonBaking, EventMetricPassed, EventMetricFailing, EventMetricNoData,
	ReasonAwaitingConfirmation, EventHookSucceeded, EventHookFailed,
}

// isRestart reports whether an event's reason is one of a restart at step 0.
func isRestart(reason string) bool {
	for _, r := range restartReason {
		if r == reason {
			return true
		}
	}
	return false
}
