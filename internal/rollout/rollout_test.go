package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	msgAborted            = "aborted: all traffic goes to the primary; clear abort to restart from step 0"
	evStarted             = "rollout of revision v2 started at step 0 (10%)"
	evRestartedAfterAbort = "abort cleared: the rollout of revision v2 restarted at step 0 (10%)"
	evRefusalLifted       = "the canary is allowed again: the rollout of revision v2 restarted at step 0 (10%)"
	evCanaryChanged       = "the canary of revision v2 changed: the rollout restarted at step 0 (10%)"
	evAdvanced1           = "rollout of revision v2 advanced to step 1 (50%)"
	evAdvanced2           = "rollout of revision v2 advanced to step 2 (100%)"
	evSucceeded           = "rollout of revision v2 succeeded at 100%"
	msgSucceeded          = "revision v2 completed all 3 steps at 100%"
	holdNotObserved       = "the route has not been observed yet"
	holdGatewayNoGo       = "istio-ingress/gateway has not accepted the route (NotAllowedByListeners)"
	reasonUnavailble      = "MinimumReplicasUnavailable"
)

// manualIn is a manual-mode input at t0.
func manualIn(f func(in *Input)) Input {
	in := Input{Traffic: xr.Traffic{RequireAcceptedRoute: true}, Revision: "v2", Now: at(0)}
	if f != nil {
		f(&in)
	}
	return in
}

// progIn is a progressive input over steps3 for revision v2 at t0, with no
// route observed and no gates.
func progIn(f func(in *Input)) Input {
	in := Input{Traffic: xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true}, Revision: "v2", Now: at(0)}
	if f != nil {
		f(&in)
	}
	return in
}

// holdingAt is the decision for a run that holds step i of steps3, started
// at start, with the given hold, requeue and event. The reason is the one of
// the event's move; without an event, the one progressing() left.
func holdingAt(i int32, start time.Duration, hold string, requeue time.Duration, event string) Decision {
	s := steps3()[i]
	reason := ReasonAdvanced
	switch {
	case strings.HasPrefix(event, "rollout of revision v2 started"):
		reason = ReasonStarted
	case strings.Contains(event, "restarted at step 0") && strings.HasPrefix(event, "the canary of"):
		reason = ReasonCanaryChanged
	case strings.Contains(event, "restarted at step 0"):
		reason = ReasonRestarted
	case strings.HasPrefix(event, "rollout resumed"):
		reason = ReasonResumed
	case strings.HasPrefix(event, "steps of revision"):
		reason = ReasonStepsChanged
	}
	return Decision{
		CanaryWeight: s.Weight,
		Active:       s.Weight.Less(percent.Max),
		Status: xr.RolloutStatus{
			Phase:         xr.PhaseProgressing,
			Reason:        reason,
			Revision:      "v2",
			Step:          i32(i),
			StepStartedAt: mt(start),
			NextStepAt:    mt(start + s.Pause),
			CanaryWeight:  s.Weight,
			PrimaryWeight: s.Weight.Rest(),
			Message:       fmt.Sprintf("holding step %d (%s%%): %s", i, s.Weight, hold),
		},
		Requeue: requeue,
		Events:  evs(event),
		Healthy: true,
	}
}

// withoutTransitions is a decision without the events of phase changes
// (paused, failed, aborted, awaiting approval).
func withoutTransitions(d Decision) Decision {
	var kept []Event
	for _, e := range d.Events {
		switch e.Reason {
		case EventPaused, EventFailed, EventAborted, ReasonAwaitingApproval:
		default:
			kept = append(kept, e)
		}
	}
	d.Events = kept
	return d
}

// evs is the event of a move, its reason told by its message; none for "".
func evs(msg string) []Event {
	if msg == "" {
		return nil
	}
	reason := ReasonAdvanced
	switch {
	case strings.Contains(msg, " started at step 0"):
		reason = ReasonStarted
	case strings.Contains(msg, "restarted at step 0") && strings.HasPrefix(msg, "the canary of"):
		reason = ReasonCanaryChanged
	case strings.HasPrefix(msg, "retry "):
		reason = ReasonRetried
	case strings.Contains(msg, "restarted at step 0"):
		reason = ReasonRestarted
	case strings.HasPrefix(msg, "rollout resumed"):
		reason = ReasonResumed
	case strings.HasPrefix(msg, "steps of revision"):
		reason = ReasonStepsChanged
	case strings.Contains(msg, " succeeded at "):
		reason = ReasonSucceeded
	case strings.Contains(msg, " approved: "):
		reason = ReasonApproved
	case strings.Contains(msg, " promoted "):
		reason = ReasonPromoted
	}
	return []Event{{Reason: reason, Message: msg}}
}

// ended is a decision that sends nothing to the canary.
func ended(phase xr.Phase, step int32, start time.Duration, msg, reason string) Decision {
	return Decision{
		Status: xr.RolloutStatus{
			Phase: phase, Reason: reason, Revision: "v2", Step: i32(step), StepStartedAt: mt(start),
			CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100), Message: msg,
		},
		Requeue: MaxRequeue,
		Healthy: false,
		Reason:  reason,
	}
}

func TestDecideManual(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     Input
		want   Decision
	}{
		"DefaultWeightIsZero": {
			reason: "Without traffic.weight the canary gets 0%, the phase is Stable and the rollout is not active.",
			in:     manualIn(nil),
			want: Decision{
				Status:  xr.RolloutStatus{Phase: xr.PhaseStable, Reason: ReasonManual, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100)},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"Weight": {
			reason: "traffic.weight is the canary percent, the primary gets the rest, and a canary above 0% is active.",
			in:     manualIn(func(in *Input) { in.Traffic.Weight = ptr.To(percent.Int(20)) }),
			want: Decision{
				CanaryWeight: percent.Int(20), Active: true,
				Status:  xr.RolloutStatus{Phase: xr.PhaseStable, Reason: ReasonManual, Revision: "v2", CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80)},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"WeightIgnoresPreviousStatus": {
			reason: "Manual mode recomputes from the spec: a previous progressive status neither moves nor freezes the weight. At 100% the canary-only rules are off.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(100))
				in.Previous = progressing(1, 0)
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status:       xr.RolloutStatus{Phase: xr.PhaseStable, Reason: ReasonManual, Revision: "v2", CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0)},
				Requeue:      MaxRequeue, Healthy: true,
			},
		},
		"Abort": {
			reason: "abort sends everything to the primary, phase Aborted, unhealthy with reason Aborted, and not active.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(20))
				in.Traffic.Abort = true
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhaseAborted, Reason: ReasonAborted, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "aborted: all traffic goes to the primary",
				},
				Requeue: MaxRequeue, Reason: ReasonAborted,
			},
		},
		"PausedFreezesPreviousWeight": {
			reason: "paused keeps the weight the previous run composed, even though traffic.weight changed meanwhile.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(50))
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, Revision: "v2", CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80)}
			}),
			want: Decision{
				CanaryWeight: percent.Int(20), Active: true,
				Status:  xr.RolloutStatus{Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80), Message: "paused at 20%"},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"PausedChangedCanaryHoldsPrevious": {
			reason: "Paused means nothing moves in manual mode too: a changed canary never inherits the frozen weight; the previous composition is held and the status keeps the digest the change is measured against.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight, in.Traffic.Paused, in.CanaryDigest = ptr.To(percent.Int(20)), true, "d2"
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), CanaryDigest: "d1"}
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true, HoldPrevious: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryDigest: "d1", CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50),
					Message: "paused at 50%; the changed canary gets traffic.weight when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"PausedChangedCanaryWithoutRoute": {
			reason: "With no route to hold, the changed canary is composed at 0%, not at the frozen weight.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight, in.Traffic.Paused, in.CanaryDigest, in.RouteMissing = ptr.To(percent.Int(20)), true, "d2", true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), CanaryDigest: "d1"}
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryDigest: "d1", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "paused with the canary at 0%: the route was not observed, so nothing composed can be held; the changed canary gets traffic.weight when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"PausedAtZeroIsNotActive": {
			reason: "Pausing never changes who sees the canary: a manual route paused at 0% keeps A/B rules and mirroring off (the reference: active means weight > 0 or a step in progress).",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(50))
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100)}
			}),
			want: Decision{
				Status:  xr.RolloutStatus{Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100), Message: "paused at 0%"},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"PausedWithoutPreviousStatus": {
			reason: "With no previous run there is no weight to freeze yet: the first run is Paused at traffic.weight, so the next run (which freezes it) changes nothing.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(30))
				in.Traffic.Paused = true
			}),
			want: Decision{
				CanaryWeight: percent.Int(30), Active: true,
				Status:  xr.RolloutStatus{Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryWeight: percent.Int(30), PrimaryWeight: percent.Int(70), Message: "paused at 30%"},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"PausedClampsNonsensePreviousWeight": {
			reason: "A status weight outside 0..100 (written by hand) must not compose a negative primary weight: it is clamped to a percent.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(30))
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhasePaused, CanaryWeight: percent.Int(250), PrimaryWeight: percent.Int(-150)}
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status:       xr.RolloutStatus{Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0), Message: "paused at 100%"},
				Requeue:      MaxRequeue, Healthy: true,
			},
		},
		"CanaryRefused": {
			reason: "A canary that the policy refuses gets 0%, phase Failed, unhealthy with reason NotAllowedByPolicy.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(20))
				in.CanaryRefused = true
				in.CanaryRefusedReason = "namespace monitoring is not in allowedBackendNamespaces"
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhaseFailed, Reason: ReasonNotAllowedByPolicy, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "canary refused: namespace monitoring is not in allowedBackendNamespaces",
				},
				Requeue: MaxRequeue, Reason: ReasonNotAllowedByPolicy,
			},
		},
		"CanaryRefusedBeatsAbortAndPause": {
			reason: "A refusal is reported as such even when the user also aborted or paused: the policy is the reason the canary gets nothing.",
			in: manualIn(func(in *Input) {
				in.Traffic.Weight = ptr.To(percent.Int(20))
				in.Traffic.Abort = true
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80)}
				in.CanaryRefused = true
				in.CanaryRefusedReason = "kind Foo is not allowed"
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhaseFailed, Reason: ReasonNotAllowedByPolicy, Revision: "v2", CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "canary refused: kind Foo is not allowed",
				},
				Requeue: MaxRequeue, Reason: ReasonNotAllowedByPolicy,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Phase changes are said by events of their own, which
			// TestEvents pins.
			got := withoutTransitions(Decide(tc.in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDecideProgressive(t *testing.T) {
	deploy := gateDeployment("podinfo-canary")
	other := gateDeployment("podinfo-db")

	cases := map[string]struct {
		reason string
		in     Input
		want   Decision
	}{
		// Starting a revision.
		"FirstRunStartsAtStepZero": {
			reason: "With no previous status the rollout starts at step 0 now (truncated to the second), with one Normal event; the route has not been observed, which holds the step.",
			in:     progIn(func(in *Input) { in.Now = at(500 * time.Millisecond) }),
			want:   holdingAt(0, 0, holdNotObserved, HoldRequeue, evStarted),
		},
		"NewRevisionRestarts": {
			reason: "A new canary revision restarts at step 0, whatever step the previous revision reached.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(1, -time.Hour), func(s *xr.RolloutStatus) { s.Revision = "v1" })
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(0, 0, "the route carries 50%, not 10%", HoldRequeue, evStarted),
		},
		"PreviousWithoutStepRestarts": {
			reason: "A previous status without a step (manual mode, or written by hand) restarts at step 0.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseStable, Revision: "v2", CanaryWeight: percent.Int(30), PrimaryWeight: percent.Int(70)}
				in.RouteAtWeight = routeAt(30)
			}),
			want: holdingAt(0, 0, "the route carries 30%, not 10%", HoldRequeue, evStarted),
		},
		"NewRevisionAfterFailed": {
			reason: "Failed is sticky only for its revision: a new revision starts over.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v1", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: "gate 0 failed"}
			}),
			want: holdingAt(0, 0, holdNotObserved, HoldRequeue, evStarted),
		},
		"NewRevisionAfterSucceeded": {
			reason: "Succeeded is sticky only for its revision: a new revision starts over at step 0.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Revision: "v1", Step: i32(2), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(100), Message: "done"}
				in.RouteAtWeight = routeAt(100)
			}),
			want: holdingAt(0, 0, "the route carries 100%, not 10%", HoldRequeue, evStarted),
		},
		"NewRevisionAfterAborted": {
			reason: "A new revision after an abort (abort cleared) starts over at step 0.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "v1", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: msgAborted}
				in.RouteAtWeight = routeAt(0)
			}),
			want: holdingAt(0, 0, "the route carries 0%, not 10%", HoldRequeue, evStarted),
		},
		"NewRevisionWhileAborted": {
			reason: "A new revision while abort is still set stays aborted, at step 0 of the new revision, without an event.",
			in: progIn(func(in *Input) {
				in.Traffic.Abort = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "v1", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: msgAborted}
			}),
			want: ended(xr.PhaseAborted, 0, 0, msgAborted, ReasonAborted),
		},
		"StartDoesNotAlsoAdvance": {
			reason: "At most one step per run: the run that starts a revision holds step 0 even when nothing else holds it (no pause, no route requirement), and says the step is due with the shortest requeue.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10)}, {Weight: percent.Int(100)}}
				in.Traffic.RequireAcceptedRoute = false
			}),
			want: Decision{
				CanaryWeight: percent.Int(10), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonStarted, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), NextStepAt: mt(0),
					CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90),
					Message: "holding step 0 (10%): due, the next run moves on (one step per run)",
				},
				Requeue: MinRequeue, Events: evs(evStarted), Healthy: true,
			},
		},
		"NewRevisionGetsFreshFailAfter": {
			reason: "A gate left False by the previous revision (transition long ago) must not fail the new revision on its first run: the new revision gets its full failAfter, so it holds.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v1", Step: i32(0), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: "gate 0 failed"}
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(-time.Hour)))}
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", time.Minute, evStarted),
		},

		// Holds.
		"HoldsUntilRouteObserved": {
			reason: "A nil RouteAtWeight means the route was not observed: the step holds even though its pause has elapsed, 30s requeue.",
			in:     progIn(func(in *Input) { in.Previous, in.Now = progressing(0, 0), at(2*time.Minute) }),
			want:   holdingAt(0, 0, holdNotObserved, HoldRequeue, ""),
		},
		"HoldsForGatewayWithItsReason": {
			reason: "A route the gateway has not accepted holds the step, and the message is the gateway's hold string.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, HoldRequeue, ""),
		},
		"RouteAskedAboutTheStepWeight": {
			reason: "The route is checked at the current step's weight: a route still at step 0's 10% holds step 1 (50%).",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(5*time.Minute)
				in.RouteAtWeight = routeAt(10)
			}),
			want: holdingAt(1, 0, "the route carries 10%, not 50%", HoldRequeue, ""),
		},
		"RouteHoldRequeuesNoLaterThanPause": {
			reason: "Held by the route with 10s of pause left: requeue after the pause left (10s), not 30s.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(50*time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, 10*time.Second, ""),
		},
		"RouteHoldRequeueAtMostThirtySeconds": {
			reason: "Held by the route with a long pause left: requeue after 30s, since the route may change before the pause ends.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(5*time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, HoldRequeue, ""),
		},
		"HoldsForPause": {
			reason: "An accepted route with 40s of pause left holds with 'pause until <RFC3339>' (never a countdown) and requeues when the pause ends.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(20*time.Second)
				in.RouteAtWeight = routeAt(10)
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", 40*time.Second, ""),
		},
		"PauseRequeueAtLeastFiveSeconds": {
			reason: "With 2s of pause left the requeue is clamped up to 5s.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(58*time.Second)
				in.RouteAtWeight = routeAt(10)
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", MinRequeue, ""),
		},
		"PauseRequeueAtMostOneMinute": {
			reason: "With 4m of pause left the requeue is clamped down to 1m.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(time.Minute)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(1, 0, "pause until 2026-12-02T10:05:00Z", MaxRequeue, ""),
		},
		"PauseHoldsEvenIfTruncationWouldNot": {
			reason: "now is truncated to the second: 59.9s into a 1m pause is still 59s, so the step holds (5s requeue).",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(59*time.Second+900*time.Millisecond)
				in.RouteAtWeight = routeAt(10)
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", MinRequeue, ""),
		},
		"GateNotFoundHolds": {
			reason: "A gate object not found holds the step once the pause has elapsed, 30s requeue, with the gate named.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{{Gate: deploy}}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary not found", HoldRequeue, ""),
		},
		"GateWithoutConditionHolds": {
			reason: "A gate object without the condition holds the step, naming the condition.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{{Gate: deploy, Found: true}}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has no Available condition", HoldRequeue, ""),
		},
		"GateFalseHoldsWithinFailAfter": {
			reason: "A gate False for 1m (failAfter 5m) holds the step, naming the condition and its reason.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(time.Minute)))}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"GateUnknownNeverFails": {
			reason: "Only False fails a rollout: a gate Unknown for an hour (failAfter 5m) only holds.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Hour)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionUnknown, "Progressing", tp(at(time.Minute)))}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has Available Unknown (Progressing)", HoldRequeue, ""),
		},
		"GateFirstHeldGateNamed": {
			reason: "With several gates, the message names the first one that does not hold; True gates pass.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{
					gateObs(deploy, metav1.ConditionTrue, "MinimumReplicasAvailable", tp(at(0))),
					gateObs(other, metav1.ConditionFalse, reasonUnavailble, tp(at(time.Minute))),
				}
			}),
			want: holdingAt(0, 0, "gate 1: Deployment podinfo-db has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"PauseHoldsBeforeGates": {
			reason: "While the pause runs, the message is the pause (the stable thing to wait for), not a gate that may still turn True.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(30*time.Second)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{{Gate: deploy}}
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", 30*time.Second, ""),
		},
		"RouteHoldsBeforePause": {
			reason: "The route is the first hold: the message names the gateway's reason even while the pause runs.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(30*time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
				in.Gates = []GateObservation{{Gate: deploy}}
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, HoldRequeue, ""),
		},
		"RequireAcceptedRouteFalse": {
			reason: "With requireAcceptedRoute false, an unobserved route does not hold the step: only the pause does.",
			in: progIn(func(in *Input) {
				in.Traffic.RequireAcceptedRoute = false
				in.Previous, in.Now = progressing(0, 0), at(20*time.Second)
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", 40*time.Second, ""),
		},
		"MissingStepStartedAtStartsNow": {
			reason: "A status with a step but no stepStartedAt (edited by hand) starts that step's pause now instead of failing or skipping it.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(1, 0), func(s *xr.RolloutStatus) { s.StepStartedAt = nil })
				in.Now = at(time.Hour)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(1, time.Hour, "pause until 2026-12-02T11:05:00Z", MaxRequeue, ""),
		},

		"ZeroStepStartedAtStartsNow": {
			reason: "A zero stepStartedAt is written as null, so it counts as missing: the step starts now, and the next run reads back the same status.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(1, 0), func(s *xr.RolloutStatus) { s.StepStartedAt = &metav1.Time{} })
				in.Now = at(time.Hour)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(1, time.Hour, "pause until 2026-12-02T11:05:00Z", MaxRequeue, ""),
		},
		"FractionalStepStartedAtTruncated": {
			reason: "A hand-written stepStartedAt with a fraction of a second is truncated like now: 59.9s after it the 1m pause is due, as it is on every later run once the fraction is lost in the status.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(0, 0), func(s *xr.RolloutStatus) { s.StepStartedAt = &metav1.Time{Time: at(900 * time.Millisecond)} })
				in.Now = at(time.Minute)
				in.RouteAtWeight = routeAt(10)
			}),
			want: holdingAt(1, time.Minute, "the route carries 10%, not 50%", HoldRequeue, evAdvanced1),
		},

		// Gate failure.
		"GateFalseExactlyFailAfterHolds": {
			reason: "A gate False for exactly failAfter (5m) has not been False for longer than failAfter: it holds.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(6*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(time.Minute)))}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"GateFalseJustPastFailAfterFails": {
			reason: "A gate False for failAfter plus 1s fails the rollout: weight 0, phase Failed, reason GateFailed, the message naming the gate.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(6*time.Minute+time.Second)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(time.Minute)))}
			}),
			want: ended(xr.PhaseFailed, 0, 0,
				"gate 0 failed: Deployment podinfo-canary has had Available False since 2026-12-02T10:01:00Z (MinimumReplicasUnavailable), longer than 5m0s",
				ReasonGateFailed),
		},
		"GateFailureDuringPause": {
			reason: "A failed gate ends the rollout even while the step's pause still runs and the route still holds; each gate has its own failAfter.",
			in: progIn(func(in *Input) {
				quick := deploy
				quick.FailAfter = time.Minute
				in.Previous, in.Now = progressing(1, 0), at(2*time.Minute)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
				in.Gates = []GateObservation{
					gateObs(other, metav1.ConditionFalse, reasonUnavailble, tp(at(10*time.Second))),
					gateObs(quick, metav1.ConditionFalse, reasonUnavailble, tp(at(10*time.Second))),
				}
			}),
			want: ended(xr.PhaseFailed, 1, 0,
				"gate 1 failed: Deployment podinfo-canary has had Available False since 2026-12-02T10:00:10Z (MinimumReplicasUnavailable), longer than 1m0s",
				ReasonGateFailed),
		},
		"GateWithoutTransitionTimeNeverFails": {
			reason: "A False condition without lastTransitionTime cannot be timed: it holds forever, never fails.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(24*time.Hour)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, nil)}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"GateFromTheFutureNeverFails": {
			reason: "A lastTransitionTime ahead of our clock (skew) is False for no time at all: it holds.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(time.Hour)))}
			}),
			want: holdingAt(0, 0, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"FailedIsSticky": {
			reason: "Failed stays Failed (weight 0, the same message, reason GateFailed) for the revision even once every gate is True again.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), PrimaryWeight: percent.Int(100), Message: "gate 0 failed: x"}
				in.Now = at(time.Hour)
				in.RouteAtWeight = routeOK
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionTrue, "", tp(at(0)))}
			}),
			want: ended(xr.PhaseFailed, 1, 0, "gate 0 failed: x", ReasonGateFailed),
		},
		"FailedStaysFailedWhenAborted": {
			reason: "Aborting a failed rollout keeps it Failed, so that clearing abort (which restarts an aborted rollout) cannot retry the failed revision.",
			in: progIn(func(in *Input) {
				in.Traffic.Abort = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), PrimaryWeight: percent.Int(100), Message: "gate 0 failed: x"}
			}),
			want: ended(xr.PhaseFailed, 1, 0, "gate 0 failed: x", ReasonGateFailed),
		},
		"FailedStaysFailedWhenPaused": {
			reason: "Pausing a failed rollout does not bring its weight back: it stays Failed at 0%.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), PrimaryWeight: percent.Int(100), Message: "gate 0 failed: x"}
			}),
			want: ended(xr.PhaseFailed, 1, 0, "gate 0 failed: x", ReasonGateFailed),
		},

		// Advancing.
		"Advance": {
			reason: "Pause elapsed, route accepted at the step's weight, gates True: the rollout moves to the next step now, with an event, and holds it (the route does not carry the new weight yet).",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(time.Minute)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionTrue, "", tp(at(-time.Hour)))}
			}),
			want: holdingAt(1, time.Minute, "the route carries 10%, not 50%", HoldRequeue, evAdvanced1),
		},
		"AdvanceWithoutRouteRequirement": {
			reason: "With requireAcceptedRoute false the step advances without a route, and the new step holds for its pause (5m: 1m requeue).",
			in: progIn(func(in *Input) {
				in.Traffic.RequireAcceptedRoute = false
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute)
			}),
			want: holdingAt(1, 2*time.Minute, "pause until 2026-12-02T10:07:00Z", MaxRequeue, evAdvanced1),
		},
		"AdvanceOneStepPerRun": {
			reason: "A run moves at most one step: when the new step has no pause and nothing holds it, the run still stops there, says it is due, and requeues at the minimum.",
			in: progIn(func(in *Input) {
				in.Traffic.RequireAcceptedRoute = false
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10)}, {Weight: percent.Int(20)}, {Weight: percent.Int(100)}}
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseProgressing, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90)}
			}),
			want: Decision{
				CanaryWeight: percent.Int(20), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonAdvanced, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), NextStepAt: mt(0),
					CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80),
					Message: "holding step 1 (20%): due, the next run moves on (one step per run)",
				},
				Requeue: MinRequeue, Events: evs("rollout of revision v2 advanced to step 1 (20%)"), Healthy: true,
			},
		},
		"AdvanceToLastStep": {
			reason: "Step 1 done: the rollout moves to the last step (100%).",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(5*time.Minute)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(2, 5*time.Minute, "the route carries 50%, not 100%", HoldRequeue, evAdvanced2),
		},
		"LastStepSucceeds": {
			reason: "The last step, once the route carries it, ends in Succeeded at its weight, with an event, no nextStepAt, a 1m requeue, and the canary-only rules off: the rollout is over.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(2, 0), at(10*time.Second)
				in.RouteAtWeight = routeAt(100)
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status: xr.RolloutStatus{
					Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0), Message: msgSucceeded,
				},
				Requeue: MaxRequeue, Events: evs(evSucceeded), Healthy: true,
			},
		},
		"LastStepHeldByGate": {
			reason: "The last step is held by its gates like any other: no Succeeded while a gate is False.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(2, 0), at(10*time.Second)
				in.RouteAtWeight = routeAt(100)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(0)))}
			}),
			want: holdingAt(2, 0, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
		},
		"SucceededIsSticky": {
			reason: "Succeeded stays Succeeded at the last weight for the revision: no event, no canary-only rules, and a gate failing later does not undo it.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0), CanaryWeight: percent.Int(100), Message: msgSucceeded}
				in.Now = at(time.Hour)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(0)))}
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status: xr.RolloutStatus{
					Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0), Message: msgSucceeded,
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},

		// Pause and resume.
		"Paused": {
			reason: "paused freezes the current step's weight, phase Paused, no nextStepAt, still active, no event, even though the step is due.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous, in.Now = progressing(1, 0), at(time.Hour)
				in.RouteAtWeight = routeOK
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "paused at step 1 (50%)",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"NewRevisionWhilePausedWaits": {
			reason: "Paused means nothing moves: a new revision while paused keeps the weight the previous run composed, for the previous revision's canary (the caller holds the previous composition), and starts at step 0 once paused is cleared.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous = with(progressing(1, -time.Hour), func(s *xr.RolloutStatus) { s.Revision = "v1" })
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true, HoldPrevious: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v1", Step: i32(1), StepStartedAt: mt(-time.Hour),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "paused at step 1 (50%); revision v2 starts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"NewRevisionWhilePausedWithoutRoute": {
			reason: "Paused, with a new revision, and the route not observed (deleted, or of another kind): there is nothing composed to hold, so the new, untested canary is composed at 0% with no canary-only rules, never at the frozen weight; the restart still waits for paused to be cleared.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.RouteMissing = true
				in.Previous = with(progressing(1, -time.Hour), func(s *xr.RolloutStatus) { s.Revision = "v1" })
			}),
			want: Decision{
				CanaryWeight: percent.Int(0),
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v1", Step: i32(1), StepStartedAt: mt(-time.Hour),
					CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "paused with the canary at 0%: the route was not observed, so nothing composed can be held; revision v2 starts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"FutureStepStartedAtCountsAsNow": {
			reason: "A stepStartedAt in the future (a status written by hand, or far ahead of this replica's clock) counts as now: the step's pause runs from now, and nextStepAt stays a time the API server admits.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(1, 0), func(s *xr.RolloutStatus) {
					s.StepStartedAt = &metav1.Time{Time: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}
				})
				in.Now = at(6 * time.Minute)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(1, 6*time.Minute, "pause until 2026-12-02T10:11:00Z", MaxRequeue, ""),
		},
		"LongGateReasonIsCut": {
			reason: "A gate's reason is quoted in the message at most 256 characters long: the status stays within what the XRD admits, whatever the gate object says.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(6*time.Minute)
				in.RouteAtWeight = routeAt(50)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, strings.Repeat("x", 5000), tp(at(5*time.Minute)))}
			}),
			want: holdingAt(1, 0, "gate 0: Deployment podinfo-canary has Available False ("+strings.Repeat("x", 256)+"...(5000 characters))", HoldRequeue, ""),
		},
		"LongHoldIsBounded": {
			reason: "Whatever holds the step, the message is at most 1,024 characters: the next run, and the API server, accept the status.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(6*time.Minute)
				in.RouteAtWeight = routeRefused(strings.Repeat("y", 5000))
			}),
			want: with2(holdingAt(1, 0, "", HoldRequeue, ""), func(d *Decision) {
				d.Status.Message = string([]rune("holding step 1 (50%): " + strings.Repeat("y", 5000))[:xr.MaxStatusMessage-1]) + "…"
			}),
		},
		"FailedMessageNamingAWeightIsReplaced": {
			reason: "A Failed rollout sends nothing to the canary: a message carried from an earlier run that names another weight (written by an older release, or by hand) is replaced by one that says what the route carries.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(0, 0), func(s *xr.RolloutStatus) {
					s.Phase, s.Reason, s.CanaryWeight, s.PrimaryWeight = xr.PhaseFailed, ReasonProgressDeadlineExceeded, percent.Zero, percent.Max
					s.Message = "step 0 (10%) was held for longer than the progress deadline"
				})
				in.Now = at(10 * time.Minute)
			}),
			want: ended(xr.PhaseFailed, 0, 0, "the rollout of revision v2 failed (ProgressDeadlineExceeded): all traffic goes to the primary until a new revision", ReasonProgressDeadlineExceeded),
		},
		"FirstRunPaused": {
			reason: "With nothing composed before there is nothing to freeze: the first run is Paused at step 0, with the start event.",
			in:     progIn(func(in *Input) { in.Traffic.Paused = true }),
			want: Decision{
				CanaryWeight: percent.Int(10), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", Step: i32(0), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90), Message: "paused at step 0 (10%)",
				},
				Requeue: MaxRequeue, Events: evs(evStarted), Healthy: true,
			},
		},
		"PausedGateFailureWaits": {
			reason: "A paused rollout is frozen: a gate False past failAfter does not fail it while paused.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous, in.Now = progressing(1, 0), at(time.Hour)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(0)))}
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "paused at step 1 (50%)",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"ResumeRestartsPause": {
			reason: "Resuming restarts the step's pause at now (paused time never counts), with an event; the step then holds for its whole pause.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhasePaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "paused at step 1 (50%)"}
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(1, 0, "pause until 2026-12-02T10:05:00Z", MaxRequeue, "rollout resumed at step 1 (50%)"),
		},
		"ResumeGetsFreshFailAfter": {
			reason: "A gate that turned False while paused is timed from the resume, not from its transition: paused time never counts, so it holds.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhasePaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50)}
				in.RouteAtWeight = routeAt(50)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(-30*time.Minute)))}
			}),
			want: holdingAt(1, 0, "pause until 2026-12-02T10:05:00Z", MaxRequeue, "rollout resumed at step 1 (50%)"),
		},
		"ResumeDoesNotAlsoAdvance": {
			reason: "The resuming run holds its step even when the step has no pause and nothing holds it: the event says it resumed, the next run moves on.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10)}, {Weight: percent.Int(50)}, {Weight: percent.Int(100)}}
				in.Previous = &xr.RolloutStatus{Phase: xr.PhasePaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50)}
				in.RouteAtWeight = routeAt(50)
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonResumed, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), NextStepAt: mt(0),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50),
					Message: "holding step 1 (50%): due, the next run moves on (one step per run)",
				},
				Requeue: MinRequeue, Events: evs("rollout resumed at step 1 (50%)"), Healthy: true,
			},
		},

		// Abort.
		"Abort": {
			reason: "abort sends everything to the primary: phase Aborted, not active, unhealthy with reason Aborted, no event; the step is kept.",
			in: progIn(func(in *Input) {
				in.Traffic.Abort = true
				in.Previous, in.Now = progressing(1, 0), at(time.Minute)
				in.RouteAtWeight = routeOK
			}),
			want: ended(xr.PhaseAborted, 1, 0, msgAborted, ReasonAborted),
		},
		"AbortBeatsPause": {
			reason: "abort wins over paused: weight 0.",
			in: progIn(func(in *Input) {
				in.Traffic.Abort, in.Traffic.Paused = true, true
				in.Previous = progressing(1, 0)
			}),
			want: ended(xr.PhaseAborted, 1, 0, msgAborted, ReasonAborted),
		},
		"AbortAfterSucceeded": {
			reason: "abort after success still sends everything back to the primary.",
			in: progIn(func(in *Input) {
				in.Traffic.Abort = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0), CanaryWeight: percent.Int(100), Message: msgSucceeded}
			}),
			want: ended(xr.PhaseAborted, 2, 0, msgAborted, ReasonAborted),
		},
		"ClearingAbortRestarts": {
			reason: "Clearing abort restarts the revision at step 0 now, with an event saying why.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: msgAborted}
				in.RouteAtWeight = routeAt(0)
			}),
			want: holdingAt(0, 0, "the route carries 0%, not 10%", HoldRequeue, evRestartedAfterAbort),
		},

		// Refused by policy.
		"CanaryRefused": {
			reason: "A canary refused by policy holds the rollout at 0%: phase Failed, reason NotAllowedByPolicy, not active.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(1, 0), at(time.Minute)
				in.CanaryRefused = true
				in.CanaryRefusedReason = "namespace monitoring is not allowed"
			}),
			want: ended(xr.PhaseFailed, 1, 0, "canary refused: namespace monitoring is not allowed", ReasonNotAllowedByPolicy),
		},
		"CanaryRefusedStaysRefused": {
			reason: "A refusal that persists gives the same status again (no restart churn, no event).",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Revision: "v2", Step: i32(1), StepStartedAt: mt(0), PrimaryWeight: percent.Int(100), Message: "canary refused: old reason"}
				in.Now = at(time.Hour)
				in.CanaryRefused = true
				in.CanaryRefusedReason = "namespace monitoring is not allowed"
			}),
			want: ended(xr.PhaseFailed, 1, 0, "canary refused: namespace monitoring is not allowed", ReasonNotAllowedByPolicy),
		},
		"RefusalLiftedRestarts": {
			reason: "Once the policy allows the canary again, the rollout restarts at step 0 (it ran at 0% meanwhile); a refusal is not a gate failure and must not stay Failed with reason GateFailed.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Reason: ReasonNotAllowedByPolicy, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: "canary refused: namespace monitoring is not allowed"}
				in.RouteAtWeight = routeAt(0)
			}),
			want: holdingAt(0, 0, "the route carries 0%, not 10%", HoldRequeue, evRefusalLifted),
		},

		// Paused means nothing moves.
		"AbortClearedWhilePausedWaits": {
			reason: "Clearing abort while paused keeps the canary at 0% (still Aborted, the restart noted) until paused is cleared.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseAborted, Reason: ReasonAborted, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: msgAborted}
				in.RouteAtWeight = routeOK
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhaseAborted, Reason: ReasonAborted, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour),
					CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "Aborted at 0% while paused; abort was cleared: the rollout restarts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Reason: ReasonAborted,
			},
		},
		"RefusalLiftedWhilePausedWaits": {
			reason: "A refusal lifted while paused keeps the canary at 0% until paused is cleared; the reason stays NotAllowedByPolicy, so the restart happens then.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Reason: ReasonNotAllowedByPolicy, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), PrimaryWeight: percent.Int(100), Message: "canary refused: x"}
				in.RouteAtWeight = routeOK
			}),
			want: Decision{
				Status: xr.RolloutStatus{
					Phase: xr.PhaseFailed, Reason: ReasonNotAllowedByPolicy, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour),
					CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
					Message: "Failed at 0% while paused; the canary is allowed again: the rollout restarts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Reason: ReasonNotAllowedByPolicy,
			},
		},
		"CanaryChangedWhilePausedHolds": {
			reason: "A changed canary while paused keeps the paused weight for the canary the previous run composed: the caller holds the previous composition, and the old digest stays for the restart once paused is cleared.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.CanaryDigest = "new"
				in.Previous = with(progressing(1, 0), func(s *xr.RolloutStatus) {
					s.Phase, s.Reason, s.NextStepAt, s.CanaryDigest, s.Message = xr.PhasePaused, ReasonPaused, nil, "old", "paused at step 1 (50%)"
				})
				in.Now = at(time.Hour)
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true, HoldPrevious: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), CanaryDigest: "old",
					Message: "paused at step 1 (50%); the changed canary starts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"NewRevisionWhileSucceededAndPaused": {
			reason: "A new revision while a Succeeded rollout is paused keeps 100% on the canary that succeeded (the previous composition), not on the new revision.",
			in: progIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Revision = "v3"
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0), CanaryWeight: percent.Int(100), Message: msgSucceeded}
			}),
			want: Decision{
				CanaryWeight: percent.Int(100), HoldPrevious: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0),
					Message: "revision v2 completed all its steps at 100%; paused; revision v3 starts at step 0 when paused is cleared",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"UnpausedAfterCanaryChangeRestarts": {
			reason: "Once paused is cleared, the canary changed while paused restarts the rollout at step 0 with an event saying why.",
			in: progIn(func(in *Input) {
				in.CanaryDigest = "new"
				in.Previous = &xr.RolloutStatus{Phase: xr.PhasePaused, Reason: ReasonPaused, Revision: "v2", Step: i32(1), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), CanaryDigest: "old"}
				in.RouteAtWeight = routeAt(50)
			}),
			want: with2(holdingAt(0, 0, "the route carries 50%, not 10%", HoldRequeue, evCanaryChanged), func(d *Decision) { d.Status.CanaryDigest = "new" }),
		},

		// A changed canary restarts.
		"CanaryChangedRestarts": {
			reason: "A change of the canary side (selector, backendRef, filters) without a new revision restarts at step 0: the current weight never goes to an untested backend.",
			in: progIn(func(in *Input) {
				in.CanaryDigest = "new"
				in.Previous = with(progressing(1, 0), func(s *xr.RolloutStatus) { s.CanaryDigest = "old" })
				in.Now = at(10 * time.Minute)
				in.RouteAtWeight = routeAt(50)
			}),
			want: with2(holdingAt(0, 10*time.Minute, "the route carries 50%, not 10%", HoldRequeue, evCanaryChanged), func(d *Decision) { d.Status.CanaryDigest = "new" }),
		},
		"CanaryChangedAfterSucceededRestarts": {
			reason: "A canary changed after Succeeded (at 100%) restarts at step 0 too.",
			in: progIn(func(in *Input) {
				in.CanaryDigest = "new"
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(-time.Hour), CanaryWeight: percent.Int(100), CanaryDigest: "old", Message: msgSucceeded}
				in.RouteAtWeight = routeAt(100)
			}),
			want: with2(holdingAt(0, 0, "the route carries 100%, not 10%", HoldRequeue, evCanaryChanged), func(d *Decision) { d.Status.CanaryDigest = "new" }),
		},
		"CanaryDigestAdopted": {
			reason: "A status written before canaryDigest existed adopts the current digest instead of restarting the rollout under way.",
			in: progIn(func(in *Input) {
				in.CanaryDigest = "new"
				in.Previous, in.Now = progressing(0, 0), at(20*time.Second)
				in.RouteAtWeight = routeAt(10)
			}),
			want: with2(holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", 40*time.Second, ""), func(d *Decision) { d.Status.CanaryDigest = "new" }),
		},

		// Canary-only rules end with the rollout.
		"HoldingAtHundredIsNotActive": {
			reason: "A step at 100% sends everything to the canary: A/B, session and mirror rules are off while it holds.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(2, 0), at(10*time.Second)
				in.RouteAtWeight = routeAt(50)
			}),
			want: holdingAt(2, 0, "the route carries 50%, not 100%", HoldRequeue, ""),
		},

		// The progress deadline.
		"ProgressDeadlineHolds": {
			reason: "A step held by the gateway for less than progressDeadline past its pause holds, and requeues in time for the deadline.",
			in: progIn(func(in *Input) {
				in.Traffic.ProgressDeadline = 2 * time.Minute
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute+30*time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, HoldRequeue, ""),
		},
		"ProgressDeadlineRequeuesForTheDeadline": {
			reason: "With 10s left before the deadline, the requeue is 11s: the run after the deadline comes soon after it.",
			in: progIn(func(in *Input) {
				in.Traffic.ProgressDeadline = 2 * time.Minute
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute+50*time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(0, 0, holdGatewayNoGo, 11*time.Second, ""),
		},
		"ProgressDeadlineExceededByRoute": {
			reason: "A gateway that never accepts the route fails the rollout once the step is held past its pause for longer than progressDeadline: weight 0, the message naming what held.",
			in: progIn(func(in *Input) {
				in.Traffic.ProgressDeadline = 2 * time.Minute
				in.Previous, in.Now = progressing(0, 0), at(3*time.Minute+time.Second)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: ended(xr.PhaseFailed, 0, 0,
				"step 0 was held for longer than the progress deadline 2m0s after its pause ended at 2026-12-02T10:01:00Z: "+holdGatewayNoGo,
				ReasonProgressDeadlineExceeded),
		},
		"ProgressDeadlineExceededByMissingGate": {
			reason: "A gate object that never appears fails the rollout at the deadline too.",
			in: progIn(func(in *Input) {
				in.Traffic.ProgressDeadline = time.Minute
				in.Previous, in.Now = progressing(0, 0), at(2*time.Minute+time.Second)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{{Gate: deploy}}
			}),
			want: ended(xr.PhaseFailed, 0, 0,
				"step 0 was held for longer than the progress deadline 1m0s after its pause ended at 2026-12-02T10:01:00Z: gate 0: Deployment podinfo-canary not found",
				ReasonProgressDeadlineExceeded),
		},
		"ProgressDeadlineIgnoresPause": {
			reason: "The step's own pause never counts: a 5m pause with a 1m deadline holds for its pause.",
			in: progIn(func(in *Input) {
				in.Traffic.ProgressDeadline = time.Minute
				in.Previous, in.Now = progressing(1, 0), at(4*time.Minute)
				in.RouteAtWeight = routeRefused(holdGatewayNoGo)
			}),
			want: holdingAt(1, 0, holdGatewayNoGo, HoldRequeue, ""),
		},
		"ProgressDeadlineFailureSticks": {
			reason: "A rollout failed by its deadline stays Failed for the revision, with its reason, like a gate failure.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseFailed, Reason: ReasonProgressDeadlineExceeded, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), PrimaryWeight: percent.Int(100), Message: "step 0 held"}
				in.Now = at(time.Hour)
				in.RouteAtWeight = routeOK
			}),
			want: ended(xr.PhaseFailed, 0, 0, "step 0 held", ReasonProgressDeadlineExceeded),
		},

		// Nonsense and drift.
		"StepsShrinkRelocates": {
			reason: "Steps removed under a running rollout: no step has the weight the route carries (80%), so the rollout continues from step 0 (never jumping to the last step's 100%), with an event saying why.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseProgressing, Revision: "v2", Step: i32(4), StepStartedAt: mt(0), CanaryWeight: percent.Int(80), PrimaryWeight: percent.Int(20)}
				in.Now = at(time.Minute)
				in.RouteAtWeight = routeAt(80)
			}),
			want: holdingAt(0, time.Minute, "the route carries 80%, not 10%", HoldRequeue, "steps of revision v2 changed: the rollout continues at step 0 (10%)"),
		},
		"StepsEditedFindsTheWeight": {
			reason: "Steps edited under a running rollout: the step that has the route's weight (50%, now step 0) is where the rollout continues, its pause starting now.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(50), Pause: 5 * time.Minute}, {Weight: percent.Int(100)}}
				in.Previous = progressing(1, 0)
				in.Now = at(time.Minute)
				in.RouteAtWeight = routeAt(50)
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonStepsChanged, Revision: "v2", Step: i32(0), StepStartedAt: mt(time.Minute), NextStepAt: mt(6 * time.Minute),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "holding step 0 (50%): pause until 2026-12-02T10:06:00Z",
				},
				Requeue: MaxRequeue, Events: evs("steps of revision v2 changed: the rollout continues at step 0 (50%)"), Healthy: true,
			},
		},
		"SucceededStepsEdited": {
			reason: "A Succeeded rollout whose last step no longer has its weight is Progressing again, from the step that has it (50%, step 1), and its message names the weight the route carries.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50), Pause: 5 * time.Minute}, {Weight: percent.Int(80), Pause: time.Minute}, {Weight: percent.Int(100)}}
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0), CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "revision v2 completed all 3 steps at 50%"}
				in.Now = at(time.Hour)
				in.RouteAtWeight = routeAt(50)
			}),
			want: Decision{
				CanaryWeight: percent.Int(50), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonStepsChanged, Revision: "v2", Step: i32(1), StepStartedAt: mt(time.Hour), NextStepAt: mt(time.Hour + 5*time.Minute),
					CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "holding step 1 (50%): pause until 2026-12-02T11:05:00Z",
				},
				Requeue: MaxRequeue, Events: evs("steps of revision v2 changed: the rollout continues at step 1 (50%)"), Healthy: true,
			},
		},
		"SucceededStepsAddedKeepsSucceeded": {
			reason: "Steps added before the last one leave a Succeeded rollout at the last step's weight Succeeded, and its message counts the steps there are now.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = append([]xr.Step{{Weight: percent.Int(5)}}, steps3()...)
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(2), StepStartedAt: mt(0), CanaryWeight: percent.Int(100), Message: msgSucceeded}
				in.Now = at(time.Hour)
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status: xr.RolloutStatus{
					Phase: xr.PhaseSucceeded, Reason: ReasonSucceeded, Revision: "v2", Step: i32(3), StepStartedAt: mt(0),
					CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0), Message: "revision v2 completed all 4 steps at 100%",
				},
				Requeue: MaxRequeue, Events: evs(""), Healthy: true,
			},
		},
		"StepsShrinkFindsTheWeight": {
			reason: "A step beyond a shortened list whose weight (100%) is a step's still: the rollout continues there, says the steps changed, and the next run, the route carrying 100%, succeeds.",
			in: progIn(func(in *Input) {
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseProgressing, Revision: "v2", Step: i32(7), StepStartedAt: mt(0), CanaryWeight: percent.Int(100)}
				in.Now = at(time.Minute)
				in.RouteAtWeight = routeAt(100)
			}),
			want: Decision{
				CanaryWeight: percent.Int(100),
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Reason: ReasonStepsChanged, Revision: "v2", Step: i32(2), StepStartedAt: mt(time.Minute), NextStepAt: mt(time.Minute),
					CanaryWeight: percent.Int(100), PrimaryWeight: percent.Int(0), Message: "holding step 2 (100%): " + holdDue,
				},
				Requeue: MinRequeue, Events: evs("steps of revision v2 changed: the rollout continues at step 2 (100%)"), Healthy: true,
			},
		},
		"NegativeStepRestarts": {
			reason: "A negative step (status edited by hand) is no step at all: the rollout restarts at step 0 instead of panicking.",
			in: progIn(func(in *Input) {
				in.Previous = with(progressing(1, -time.Hour), func(s *xr.RolloutStatus) { s.Step = i32(-1) })
			}),
			want: holdingAt(0, 0, holdNotObserved, HoldRequeue, evStarted),
		},
		"ClockSkewNeverAdvances": {
			reason: "A clock behind stepStartedAt (another replica's clock was ahead, by less than ClockSkew) keeps the step's start as written, and that run does not advance, even with everything else satisfied and a step without pause: the step waits until its start, and the next run, which agrees with the start, moves on.",
			in: progIn(func(in *Input) {
				in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10)}, {Weight: percent.Int(100)}}
				in.Previous = &xr.RolloutStatus{Phase: xr.PhaseProgressing, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), NextStepAt: mt(0), CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90)}
				in.Now = at(-2 * time.Minute)
				in.RouteAtWeight = routeOK
			}),
			want: Decision{
				CanaryWeight: percent.Int(10), Active: true,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseProgressing, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), NextStepAt: mt(0),
					CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90), Message: "holding step 0 (10%): pause until 2026-12-02T10:00:00Z",
				},
				Requeue: MaxRequeue, Healthy: true,
			},
		},
		"ClockSkewDoesNotFailGates": {
			reason: "A clock far behind the gate's transition (and the step's start, beyond ClockSkew) never counts the gate as failed: the step starts now by that clock, and the gate counts from its own transition, later still.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(-2*time.Hour)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(0)))}
			}),
			want: holdingAt(0, -2*time.Hour, "pause until 2026-12-02T08:01:00Z", MaxRequeue, ""),
		},
		"ClockSkewKeepsTheStartAndFailsNoGate": {
			reason: "A clock behind by ClockSkew, no more, keeps the step's start (a replica behind never moves it back) and counts no gate as failed: the step waits for its own pause.",
			in: progIn(func(in *Input) {
				in.Previous, in.Now = progressing(0, 0), at(-ClockSkew)
				in.RouteAtWeight = routeAt(10)
				in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(0)))}
			}),
			want: holdingAt(0, 0, "pause until 2026-12-02T10:01:00Z", MaxRequeue, ""),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Phase changes are said by events of their own, which
			// TestEvents pins.
			got := withoutTransitions(Decide(tc.in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// with2 returns a copy of d changed by f.
func with2(d Decision, f func(d *Decision)) Decision {
	f(&d)
	return d
}

// BenchmarkDecide is a progressive run with two gates that holds on a gate,
// the path every run of a gated rollout takes.
func BenchmarkDecide(b *testing.B) {
	in := progIn(func(in *Input) {
		in.Previous, in.Now = progressing(1, 0), at(6*time.Minute)
		in.RouteAtWeight = routeAt(50)
		in.Gates = []GateObservation{
			gateObs(gateDeployment("podinfo-canary"), metav1.ConditionTrue, "MinimumReplicasAvailable", tp(at(0))),
			gateObs(gateDeployment("podinfo-db"), metav1.ConditionFalse, reasonUnavailble, tp(at(5*time.Minute))),
		}
	})
	b.ReportAllocs()
	for b.Loop() {
		_ = Decide(in)
	}
}
