package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// stepsControls are 10% for 1m with the smoke analysis, 50% with an
// approval, then 100%.
func stepsControls() []xr.Step {
	return []xr.Step{
		{Weight: percent.Int(10), Pause: time.Minute, Analysis: []string{"smoke"}},
		{Weight: percent.Int(50), Approval: true},
		{Weight: percent.Int(100)},
	}
}

// controlsIn is a progressive input over stepsControls for revision v2,
// with the smoke template.
func controlsIn(f func(in *Input)) Input {
	in := Input{Traffic: xr.Traffic{
		Steps:                stepsControls(),
		RequireAcceptedRoute: true,
		Analysis:             []xr.AnalysisTemplate{{Name: "smoke", SuccessWhen: "object.status.succeeded > 0", FailWhen: "object.status.failed > 0"}},
	}, Revision: "v2", Now: at(0)}
	if f != nil {
		f(&in)
	}
	return in
}

// at0 is status.rollout holding step i of stepsControls since t0.
func at0(i int32, f func(s *xr.RolloutStatus)) *xr.RolloutStatus {
	w := stepsControls()[i].Weight
	s := &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: ReasonAdvanced, Revision: "v2", Step: i32(i), StepStartedAt: mt(0),
		NextStepAt: mt(stepsControls()[i].Pause), CanaryWeight: w, PrimaryWeight: w.Rest(),
	}
	if f != nil {
		f(s)
	}
	return s
}

func smoke(step int32, c Check) AnalysisObservation {
	return AnalysisObservation{Name: "smoke", Revision: "v2", Step: step, Check: c}
}

// TestDecideControls pins analysis, approval, promote and retry: what holds,
// what passes, what is recorded, and the events.
func TestDecideControls(t *testing.T) {
	type want struct {
		phase    xr.Phase
		reason   string
		step     int32
		weight   percent.Percent
		message  string
		awaiting bool
		analysis []xr.AnalysisVerdict
		compose  []string
		promoted string
		retry    string
		attempt  string
		events   []Event
	}
	cases := map[string]struct {
		reason string
		in     Input
		want   want
	}{
		"AnalysisComposedWhileCurrent": {
			reason: "A step's analysis is composed from the start of the step; its object not created yet holds the step once its pause is over.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: `holding step 0 (10%): analysis smoke has not been created yet`,
			},
		},
		"AnalysisRunning": {
			reason: "An analysis whose successWhen is not true yet holds the step, saying so.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
				in.Analysis = []AnalysisObservation{smoke(0, Check{})}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: `holding step 0 (10%): analysis smoke does not match successWhen object.status.succeeded > 0 yet`,
			},
		},
		"AnalysisNotJudgeable": {
			reason: "An analysis whose expression cannot be evaluated yet (a missing field) holds with the error.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
				in.Analysis = []AnalysisObservation{smoke(0, Check{Err: "no such key: succeeded"})}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: `holding step 0 (10%): analysis smoke cannot be judged yet: no such key: succeeded`,
			},
		},
		"AnalysisPassedAdvances": {
			reason: "An analysis that passes is recorded with its step and time, and the step advances on the same run: the object is no longer composed (Crossplane deletes it), the verdict stays.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
				in.Analysis = []AnalysisObservation{smoke(0, Check{Success: true})}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message:  "holding step 1 (50%): the route carries 10%, not 50%",
				analysis: []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictPassed, Time: metav1.Time{Time: at(2 * time.Minute)}}},
				events: []Event{
					{Reason: EventAnalysisPassed, Message: "analysis smoke of revision v2 passed"},
					{Reason: ReasonAdvanced, Message: "rollout of revision v2 advanced to step 1 (50%)"},
				},
			},
		},
		"AnalysisOfAnotherStepIgnored": {
			reason: "An object left by another step (or another revision, canary or attempt) says nothing of this one, and neither does one being deleted.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
				in.CanaryDigest = "v2-aaaa"
				in.Analysis = []AnalysisObservation{
					smoke(1, Check{Success: true}),
					{Name: "smoke", Revision: "v1", CanaryDigest: "v2-aaaa", Step: 0, Check: Check{Success: true}},
					{Name: "smoke", Revision: "v2", CanaryDigest: "v2-aaaa", Retry: "1", Step: 0, Check: Check{Success: true}},
					{Name: "smoke", Revision: "v2", CanaryDigest: "v2-bbbb", Step: 0, Check: Check{Success: true}},
					{Name: "smoke", Revision: "v2", CanaryDigest: "v2-aaaa", Step: 0, Deleting: true},
				}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: `holding step 0 (10%): analysis smoke has not been created yet`,
			},
		},
		"AnalysisFailed": {
			reason: "An analysis whose failWhen is true fails the rollout at once, even during the step's pause: weight 0, reason AnalysisFailed, the verdict recorded, a Warning.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(30*time.Second), routeAt(10)
				in.Analysis = []AnalysisObservation{smoke(0, Check{Failed: true})}
			}),
			want: want{
				phase: xr.PhaseFailed, reason: ReasonAnalysisFailed, weight: percent.Int(0),
				message:  "analysis smoke of step 0 failed at 2026-12-02T10:00:30Z",
				analysis: []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictFailed, Time: metav1.Time{Time: at(30 * time.Second)}}},
				events:   []Event{{Reason: EventFailed, Message: "analysis smoke of step 0 failed at 2026-12-02T10:00:30Z", Warning: true}},
			},
		},
		"PassedVerdictKept": {
			reason: "A verdict recorded earlier is not judged again: the object may be gone.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(0, func(s *xr.RolloutStatus) {
					s.Analysis = []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictPassed, Time: metav1.Time{Time: at(time.Minute)}}}
				})
				in.Now, in.RouteAtWeight = at(30*time.Second), routeAt(10)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message:  "holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
				analysis: []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictPassed, Time: metav1.Time{Time: at(time.Minute)}}},
			},
		},
		"AwaitingApproval": {
			reason: "An approval step holds, after its pause, gates and analysis, until traffic.approval approves it: phase Progressing, reason AwaitingApproval, awaitingApproval true, and one event when the wait starts.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(1, nil), at(time.Minute), routeAt(50)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAwaitingApproval, step: 1, weight: percent.Int(50), awaiting: true,
				message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}",
				events:  []Event{{Reason: ReasonAwaitingApproval, Message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}"}},
			},
		},
		"StillAwaitingApprovalSaysNothing": {
			reason: "A run that still waits for the approval changes nothing and says nothing.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(1, func(s *xr.RolloutStatus) {
					s.Reason, s.AwaitingApproval = ReasonAwaitingApproval, true
					s.Message = "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}"
				})
				in.Now, in.RouteAtWeight = at(time.Hour), routeAt(50)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAwaitingApproval, step: 1, weight: percent.Int(50), awaiting: true,
				message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}",
			},
		},
		"ApprovalOfAnotherRevision": {
			reason: "An approval for another revision approves nothing.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(1, nil), at(time.Minute), routeAt(50)
				in.Traffic.Approval = &xr.Approval{Revision: "v1", Step: 5}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAwaitingApproval, step: 1, weight: percent.Int(50), awaiting: true,
				message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}",
				events:  []Event{{Reason: ReasonAwaitingApproval, Message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}"}},
			},
		},
		"ApprovalOfAnEarlierStep": {
			reason: "An approval of an earlier step does not approve a later one.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(1, nil), at(time.Minute), routeAt(50)
				in.Traffic.Approval = &xr.Approval{Revision: "v2", Step: 0}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAwaitingApproval, step: 1, weight: percent.Int(50), awaiting: true,
				message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}",
				events:  []Event{{Reason: ReasonAwaitingApproval, Message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}"}},
			},
		},
		"Approved": {
			reason: "An approval naming the revision and this step or a later one releases the step: it advances, with the event RolloutApproved.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(1, func(s *xr.RolloutStatus) { s.Reason, s.AwaitingApproval = ReasonAwaitingApproval, true })
				in.Now, in.RouteAtWeight = at(time.Hour), routeAt(50)
				in.Traffic.Approval = &xr.Approval{Revision: "v2", Step: 2}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonApproved, step: 2, weight: percent.Int(100),
				message: "holding step 2 (100%): the route carries 50%, not 100%",
				events:  []Event{{Reason: ReasonApproved, Message: "step 1 of revision v2 approved: the rollout advanced to step 2 (100%)"}},
			},
		},
		"PausedWhileAwaitingApproval": {
			reason: "A paused rollout waits for paused to be cleared, not for an approval: awaitingApproval is false while Paused.",
			in: controlsIn(func(in *Input) {
				in.Traffic.Paused = true
				in.Previous = at0(1, func(s *xr.RolloutStatus) {
					s.Reason, s.AwaitingApproval, s.NextStepAt = ReasonAwaitingApproval, true, nil
					s.Message = "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}"
				})
				in.Now, in.RouteAtWeight = at(time.Minute), routeAt(50)
			}),
			want: want{
				phase: xr.PhasePaused, reason: ReasonPaused, step: 1, weight: percent.Int(50), message: "paused at step 1 (50%)",
				events: []Event{{Reason: EventPaused, Message: "paused at step 1 (50%)"}},
			},
		},
		"ApprovalWaitsForThePause": {
			reason: "The approval is asked for only once the step's pause, gates and analysis are through: an early approval just lets the step go when they are.",
			in: controlsIn(func(in *Input) {
				in.Traffic.Steps[1].Pause = time.Hour
				in.Previous, in.Now, in.RouteAtWeight = at0(1, nil), at(time.Minute), routeAt(50)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message: "holding step 1 (50%): pause until 2026-12-02T11:00:00Z",
			},
		},
		"ProgressDeadlineIgnoresApproval": {
			reason: "Waiting for a person is not a stuck step: the progress deadline never fails an approval wait.",
			in: controlsIn(func(in *Input) {
				in.Traffic.ProgressDeadline = time.Minute
				in.Previous = at0(1, func(s *xr.RolloutStatus) { s.Reason, s.AwaitingApproval = ReasonAwaitingApproval, true })
				in.Now, in.RouteAtWeight = at(24*time.Hour), routeAt(50)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAwaitingApproval, step: 1, weight: percent.Int(50), awaiting: true,
				message: "holding step 1 (50%): awaiting approval: set traffic.approval to {revision: v2, step: 1}",
			},
		},
		"Promote": {
			reason: "promote naming the revision moves it to the last step once the current step's route is accepted, skipping the pauses, gates, analysis and approvals between; recorded, with the event RolloutPromoted.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(10*time.Second), routeAt(10)
				in.Traffic.Promote = &xr.Promote{Revision: "v2"}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonPromoted, step: 2, weight: percent.Int(100), promoted: "v2",
				message: "holding step 2 (100%): the route carries 10%, not 100%",
				events:  []Event{{Reason: ReasonPromoted, Message: "revision v2 promoted from step 0 to its last step 2 (100%)"}},
			},
		},
		"PromoteWaitsForTheRoute": {
			reason: "promote waits until the gateway accepted the current step's route: the weights never jump past what the gateway took.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(10*time.Second), routeRefused(holdGatewayNoGo)
				in.Traffic.Promote = &xr.Promote{Revision: "v2"}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: "holding step 0 (10%): " + holdGatewayNoGo,
			},
		},
		"PromoteOfAnotherRevision": {
			reason: "promote naming another revision does nothing.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(10*time.Second), routeAt(10)
				in.Traffic.Promote = &xr.Promote{Revision: "v1"}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"},
				message: "holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
			},
		},
		"PromoteActsOnce": {
			reason: "A promote already recorded is never applied again (after a retry, say).",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(0, func(s *xr.RolloutStatus) { s.Promoted = "v2" })
				in.Now, in.RouteAtWeight = at(10*time.Second), routeAt(10)
				in.Traffic.Promote = &xr.Promote{Revision: "v2"}
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), compose: []string{"smoke"}, promoted: "v2",
				message: "holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
			},
		},
		"Retry": {
			reason: "A retry value not recorded yet restarts a Failed revision at step 0, records the value, and says so.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(0, func(s *xr.RolloutStatus) {
					s.Phase, s.Reason, s.CanaryWeight, s.PrimaryWeight, s.NextStepAt = xr.PhaseFailed, ReasonAnalysisFailed, percent.Zero, percent.Max, nil
					s.Analysis = []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictFailed, Time: metav1.Time{Time: at(30 * time.Second)}}}
				})
				in.Now, in.RouteAtWeight = at(time.Hour), routeAt(0)
				in.Traffic.Retry = "2"
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonRetried, weight: percent.Int(10), retry: "2", attempt: "2", compose: []string{"smoke"},
				message: "holding step 0 (10%): the route carries 0%, not 10%",
				events:  []Event{{Reason: ReasonRetried, Message: "retry 2: the rollout of revision v2 restarted at step 0 (10%)"}},
			},
		},
		"RetryActsOnce": {
			reason: "A retry value already recorded never restarts a failure again.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(0, func(s *xr.RolloutStatus) {
					s.Phase, s.Reason, s.CanaryWeight, s.PrimaryWeight, s.NextStepAt, s.Retry = xr.PhaseFailed, ReasonAnalysisFailed, percent.Zero, percent.Max, nil, "2"
					s.Message = "analysis smoke of step 0 failed"
				})
				in.Now, in.RouteAtWeight = at(time.Hour), routeAt(0)
				in.Traffic.Retry = "2"
			}),
			want: want{phase: xr.PhaseFailed, reason: ReasonAnalysisFailed, weight: percent.Int(0), retry: "2", message: "analysis smoke of step 0 failed"},
		},
		"RetryRecordedWithNothingToRetry": {
			reason: "A retry value seen while nothing failed is recorded, so that it never restarts a later failure by itself; the attempt stays, so the running analysis is kept.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, func(s *xr.RolloutStatus) { s.Retry, s.Attempt = "2", "2" }), at(10*time.Second), routeAt(10)
				in.Traffic.Retry = "3"
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10), retry: "3", attempt: "2", compose: []string{"smoke"},
				message: "holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
			},
		},
		"RetryWrittenWhileAnalysisRuns": {
			reason: "A retry written while a step's analysis runs judges the running object (labelled with the attempt), which passes the step: nothing restarts.",
			in: controlsIn(func(in *Input) {
				in.Previous, in.Now, in.RouteAtWeight = at0(0, nil), at(2*time.Minute), routeAt(10)
				in.Analysis = []AnalysisObservation{smoke(0, Check{Success: true})}
				in.Traffic.Retry = "3"
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50), retry: "3",
				analysis: []xr.AnalysisVerdict{{Name: "smoke", Step: 0, Verdict: xr.VerdictPassed, Time: metav1.Time{Time: at(2 * time.Minute)}}},
				message:  "holding step 1 (50%): the route carries 10%, not 50%",
				events: []Event{
					{Reason: EventAnalysisPassed, Message: "analysis smoke of revision v2 passed"},
					{Reason: ReasonAdvanced, Message: "rollout of revision v2 advanced to step 1 (50%)"},
				},
			},
		},
		"NewRevisionFirstAttempt": {
			reason: "A new revision starts its first attempt, whatever retried the last one.",
			in: controlsIn(func(in *Input) {
				in.Previous = at0(2, func(s *xr.RolloutStatus) { s.Revision, s.Retry, s.Attempt, s.Phase = "v1", "2", "2", xr.PhaseSucceeded })
				in.Now, in.RouteAtWeight = at(time.Hour), routeAt(100)
			}),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonStarted, weight: percent.Int(10), retry: "2", compose: []string{"smoke"},
				message: "holding step 0 (10%): the route carries 100%, not 10%",
				events:  []Event{{Reason: ReasonStarted, Message: "rollout of revision v2 started at step 0 (10%)"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			s := d.Status
			got := want{
				phase: s.Phase, reason: s.Reason, weight: d.CanaryWeight, message: s.Message, awaiting: s.AwaitingApproval,
				analysis: s.Analysis, compose: d.Analysis, promoted: s.Promoted, retry: s.Retry, attempt: s.Attempt, events: d.Events,
			}
			if s.Step != nil {
				got.step = *s.Step
			}
			if d.Status.Phase == xr.PhaseFailed {
				got.compose = nil // Nothing is composed for a failed rollout: checked below.
				if len(d.Analysis) > 0 {
					t.Errorf("%s\na failed rollout composes analysis %v", tc.reason, d.Analysis)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
			for _, v := range violations(tc.in, d) {
				t.Errorf("%s\ninvariant: %s", tc.reason, v)
			}
		})
	}
}

// xrdMaxVerdicts is maxItems of status.rollout.analysis in the XRDs.
var xrdMaxVerdicts = xr.MaxVerdicts

// TestVerdictsStayWithinTheXRD: every status field stays within the XRD's
// limits, whatever the status held. With 128 verdicts admitted already, the
// current step's new one makes room by dropping the oldest: the API server
// accepts the status, and the next run keeps the new verdict instead of
// judging it, and saying AnalysisPassed, again.
func TestVerdictsStayWithinTheXRD(t *testing.T) {
	prev := at0(0, func(s *xr.RolloutStatus) {
		for i := range xrdMaxVerdicts {
			// Verdicts of templates the spec had before they were renamed
			// (or written by anyone who may write the status): admitted.
			s.Analysis = append(s.Analysis, xr.AnalysisVerdict{Name: fmt.Sprintf("old%d", i), Step: int32(i % 2), Verdict: xr.VerdictPassed, Time: metav1.Time{Time: at(0)}})
		}
	})
	in := controlsIn(func(in *Input) {
		in.Previous, in.Now, in.RouteAtWeight = prev, at(30*time.Second), routeAt(10)
		in.Analysis = []AnalysisObservation{smoke(0, Check{Success: true})}
	})
	d := Decide(in)
	if n := len(d.Status.Analysis); n > xrdMaxVerdicts {
		t.Errorf("status.rollout.analysis has %d verdicts, the XRD admits at most %d: the API server refuses the status", n, xrdMaxVerdicts)
	}
	// Feed the status back: the same run again must say nothing new.
	in2 := in
	st := d.Status
	in2.Previous, in2.Now = &st, at(60*time.Second)
	d2 := Decide(in2)
	for _, e := range d2.Events {
		if e.Reason == EventAnalysisPassed {
			t.Errorf("the next run says %q again: the verdict recorded by the previous run was dropped and judged again", e.Message)
		}
	}
}

// TestPromoteOfARevertedRevisionActsAgain pins a decision of
// docs/rollout.md: a promote acts once for the rollout it names, which
// status.rollout.promoted records. Once v3 was promoted, a spec reverted to
// v2 with its old promote {v2} (a Git revert) is a new rollout of v2, and
// the promote it carries acts on it: the revert asked for it.
func TestPromoteOfARevertedRevisionActsAgain(t *testing.T) {
	steps := []xr.Step{{Weight: percent.Int(10), Pause: time.Hour}, {Weight: percent.Int(50), Approval: true}, {Weight: percent.Int(100)}}
	run := func(prev *xr.RolloutStatus, rev string, now time.Duration) Decision {
		return Decide(Input{
			Traffic:  xr.Traffic{Steps: steps, RequireAcceptedRoute: false, Promote: &xr.Promote{Revision: rev}},
			Revision: rev, Previous: prev, Now: at(now), RouteAtWeight: routeOK,
		})
	}
	// v2 is promoted once.
	d := run(nil, "v2", 0)
	s := d.Status
	d = run(&s, "v2", 10*time.Second)
	s = d.Status
	if s.Promoted != "v2" || *s.Step != 2 {
		t.Fatalf("setup: v2 not promoted: %+v", s)
	}
	// v3, promoted too.
	for i := range 3 {
		d = run(&s, "v3", time.Duration(20+10*i)*time.Second)
		s = d.Status
	}
	if s.Promoted != "v3" {
		t.Fatalf("setup: v3 not promoted: %+v", s)
	}
	// The spec is reverted to v2, promote {v2} and all.
	d = run(&s, "v2", time.Minute)
	s = d.Status
	d = run(&s, "v2", time.Minute+10*time.Second)
	promoted := slices.ContainsFunc(d.Events, func(e Event) bool { return e.Reason == ReasonPromoted })
	if !promoted || d.Status.Promoted != "v2" {
		t.Errorf("the reverted v2 with promote {revision: v2}: events %v, promoted %q; want it promoted once more", d.Events, d.Status.Promoted)
	}
	// And only once.
	s = d.Status
	d = run(&s, "v2", time.Minute+20*time.Second)
	if slices.ContainsFunc(d.Events, func(e Event) bool { return e.Reason == ReasonPromoted }) {
		t.Errorf("the run after the promote promotes again: %v", d.Events)
	}
}

// TestRetryActsOnAValueOtherThanTheLastOne pins a decision of
// docs/rollout.md: status.rollout.retry records the last value acted on, and
// any other value retries once. Retry "1" restarted a failed v2, then retry
// "2"; a spec reverted to retry "1" while v2 has failed again restarts it:
// use a counter or a timestamp, and a revert brings the older value back.
func TestRetryActsOnAValueOtherThanTheLastOne(t *testing.T) {
	steps := []xr.Step{{Weight: percent.Int(10), Pause: time.Hour}, {Weight: percent.Int(100)}}
	failed := func(retry string) *xr.RolloutStatus {
		return &xr.RolloutStatus{Phase: xr.PhaseFailed, Reason: ReasonGateFailed, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), Retry: retry, Message: "failed"}
	}
	run := func(prev *xr.RolloutStatus, retry string) Decision {
		return Decide(Input{
			Traffic:  xr.Traffic{Steps: steps, RequireAcceptedRoute: false, Retry: retry},
			Revision: "v2", Previous: prev, Now: at(time.Minute), RouteAtWeight: routeOK,
		})
	}
	// "1" acted on, then "2": status records "2". The revision fails again
	// and the spec goes back to retry "1".
	d := run(failed("2"), "1")
	if d.Status.Phase != xr.PhaseProgressing || d.Status.Retry != "1" {
		t.Errorf("retry %q after %q: phase %s, retry %q, events %v; want the revision restarted and %q recorded", "1", "2", d.Status.Phase, d.Status.Retry, d.Events, "1")
	}
	// The value recorded, the same value does nothing more.
	if d := run(failed("1"), "1"); d.Status.Phase != xr.PhaseFailed {
		t.Errorf("retry %q, already acted on: phase %s, want Failed", "1", d.Status.Phase)
	}
}

// TestRestartThatFailsAtOnceSaysSo: a retry, a new revision or a changed
// canary restarts a Failed rollout, and a failWhen gate that is still true
// fails it again on the same run. That is two transitions: the restart and
// a new failure, each an event, so the failure's Warning (and the failures
// metric, which counts it) is not lost behind "the previous phase was
// Failed too".
func TestRestartThatFailsAtOnceSaysSo(t *testing.T) {
	broken := xr.Gate{APIVersion: "example.org/v1", Kind: "Check", Name: "canary", SuccessWhen: "object.status.ready", FailWhen: "object.status.broken", FailAfter: time.Minute}
	failedV2 := func(s *xr.RolloutStatus) {
		s.Phase, s.Reason, s.CanaryWeight, s.PrimaryWeight, s.NextStepAt = xr.PhaseFailed, ReasonGateFailed, percent.Zero, percent.Max, nil
		s.CanaryDigest, s.Message = "v2-aaaa", "gate 0 failed: object.status.broken"
	}
	const failedAgain = "gate 0 failed: Check canary matches failWhen object.status.broken"
	cases := map[string]struct {
		reason string
		change func(in *Input)
		want   []Event
	}{
		"Retry": {
			reason: "A retry restarts the failed revision, which fails again at once.",
			change: func(in *Input) { in.Traffic.Retry = "1" },
			want: []Event{
				{Reason: ReasonRetried, Message: "retry 1: the rollout of revision v2 restarted at step 0 (10%)"},
				{Reason: EventFailed, Message: failedAgain, Warning: true},
			},
		},
		"NewRevision": {
			reason: "A new revision starts at step 0 and fails at once.",
			change: func(in *Input) { in.Revision = "v3" },
			want: []Event{
				{Reason: ReasonStarted, Message: "rollout of revision v3 started at step 0 (10%)"},
				{Reason: EventFailed, Message: failedAgain, Warning: true},
			},
		},
		"ChangedCanary": {
			reason: "A changed canary restarts the revision, which fails at once.",
			change: func(in *Input) { in.CanaryDigest = "v2-bbbb" },
			want: []Event{
				{Reason: ReasonCanaryChanged, Message: "the canary of revision v2 changed: the rollout restarted at step 0 (10%)"},
				{Reason: EventFailed, Message: failedAgain, Warning: true},
			},
		},
		"NoChange": {
			reason: "A failed rollout that nothing restarts stays Failed without a word.",
			change: func(*Input) {},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := controlsIn(func(in *Input) {
				in.Traffic.Analysis, in.Traffic.Steps[0].Analysis = nil, nil
				in.Traffic.Gates = []xr.Gate{broken}
				in.Previous, in.Now, in.RouteAtWeight = at0(0, failedV2), at(time.Hour), routeAt(0)
				in.CanaryDigest = "v2-aaaa"
				in.Gates = []GateObservation{{Gate: broken, Found: true, Check: Check{Failed: true}}}
			})
			tc.change(&in)
			d := Decide(in)
			if d.Status.Phase != xr.PhaseFailed {
				t.Fatalf("%s\nphase %s (%s), want Failed", tc.reason, d.Status.Phase, d.Status.Message)
			}
			if diff := cmp.Diff(tc.want, d.Events); diff != "" {
				t.Errorf("%s\nevents: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
