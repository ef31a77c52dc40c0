package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestHooksRollbackSurvivesPauseAndAbort: a rollback a hook asked for stays
// until a new revision or a retry, whatever else the spec toggles
// meanwhile: paused and abort set together, then both cleared, must not
// restart the revision (abort set alone already keeps it).
func TestHooksRollbackSurvivesPauseAndAbort(t *testing.T) {
	cases := map[string]struct {
		edit func(i int, in *Input)
	}{
		"abort alone": {edit: func(i int, in *Input) {
			in.Traffic.Abort = i == 2
		}},
		"paused alone": {edit: func(i int, in *Input) {
			in.Traffic.Paused = i == 2
		}},
		"paused and abort together": {edit: func(i int, in *Input) {
			in.Traffic.Paused, in.Traffic.Abort = i == 2, i == 2
		}},
		"paused, then abort, then both cleared": {edit: func(i int, in *Input) {
			in.Traffic.Paused, in.Traffic.Abort = i == 2 || i == 3, i == 3
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &hookWorld{script: map[string]func(int) HookAnswer{"rb": ok}}
			lines := play(t, w, hooked(hook("rb", hooks.Rollback)), time.Minute, 6, tc.edit)
			// Every run after the rollback (at 1m) keeps the canary at 0%,
			// and says why: the rollback, not an abort the spec cleared.
			for i, line := range lines[2:] {
				want := (time.Duration(i+2) * time.Minute).String() + " Aborted RollbackRequested step 0 at 0%"
				if diff := cmp.Diff(want, line); diff != "" {
					t.Errorf("the rollback was lost: -want +got:\n%s\nall runs: %v", diff, lines)
				}
			}
		})
	}
}

// TestHooksRecordsOfAnEarlierRollout: a revision rolled out again (v2, then
// v3, then v2 once more) is a new rollout whose hooks are asked anew: the
// records its hooks kept from the earlier rollout of v2 (a rollback hook's
// 2xx, a confirm-promotion's 2xx, a load test's) are no answer for it, or
// the new rollout is aborted, or promoted, by an answer given to another.
func TestHooksRecordsOfAnEarlierRollout(t *testing.T) {
	// firstOnly answers 200 to the first call, 503 to the others.
	firstOnly := func(i int) HookAnswer {
		if i == 0 {
			return ok(i)
		}
		return refuse(i)
	}
	twoSteps := []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(100)}}
	cases := map[string]struct {
		hook   xr.Hook
		answer func(int) HookAnswer
		steps  []xr.Step
		// at is the run that switches to v3 (aborted), then back to v2.
		at    int
		runs  int
		calls int
	}{
		"rollback": {
			hook: hook("rb", hooks.Rollback), answer: firstOnly, steps: steps3(),
			// 0: v2 at 10%; 1: rb 200, RollbackRequested; 2: v3 aborted;
			// 3: v2 at 10%; 4: rb asked again (503).
			at: 2, runs: 5, calls: 2,
		},
		"confirm-promotion": {
			hook: hook("promote", hooks.ConfirmPromotion), answer: ok, steps: twoSteps,
			// 0: 10%; 1: 100%; 2: promote 200, Succeeded; 3: v3 aborted;
			// 4: v2 at 10%; 5: 100%; 6: promote asked again.
			at: 3, runs: 7, calls: 2,
		},
		"rollout": {
			hook: hook("load", hooks.Rollout), answer: ok, steps: twoSteps,
			// 0: 10%; 1: load step-0; 2: v3 aborted; 3: v2 at 10%; 4:
			// load step-0 again.
			at: 2, runs: 5, calls: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &hookWorld{script: map[string]func(int) HookAnswer{tc.hook.Name: tc.answer}}
			in := hooked(tc.hook)
			in.Traffic.Steps = tc.steps
			lines := play(t, w, in, time.Minute, tc.runs, func(i int, in *Input) {
				if i == tc.at {
					in.Revision, in.Traffic.Abort = "v3", true
				}
			})
			if got := w.count(tc.hook.Name); got != tc.calls {
				t.Errorf("%s hook called %d time(s), want %d: an answer of the earlier rollout of v2 stood for the new one\ncalls: %v\nruns: %v",
					tc.hook.Name, got, tc.calls, w.calls, lines)
			}
		})
	}
}

// TestHooksTransitionWithinTheXRD: a transition is at most 256 characters,
// as the XRD admits it, for the longest revision and retry (63 each) and a
// decision of many events (ten metrics passing as the step advances); and
// two decisions' events are told apart however it is cut. A transition cut
// by fielderr.Cut kept 256 bytes and then added "...(N characters)".
func TestHooksTransitionWithinTheXRD(t *testing.T) {
	in := hooked(hook("chat", hooks.Event))
	in.Revision = strings.Repeat("r", 63)
	ten, eleven := make([]Event, 0, 11), make([]Event, 0, 12)
	for i := range 11 {
		e := Event{Reason: EventMetricPassed, Message: fmt.Sprintf("metric m%d passed", i)}
		if i < 10 {
			ten = append(ten, e)
		}
		eleven = append(eleven, e)
	}
	ten = append(ten, Event{Reason: ReasonAdvanced, Message: "advanced"})
	eleven = append(eleven, Event{Reason: ReasonAdvanced, Message: "advanced"})
	seen := map[string]bool{}
	for _, events := range [][]Event{ten, eleven} {
		d := Decision{Events: events, Status: xr.RolloutStatus{Phase: xr.PhaseProgressing, Attempt: strings.Repeat("a", 63)}}
		tells := Tells(in, d)
		if len(tells) == 0 {
			t.Fatal("nothing told")
		}
		tr := tells[0].Transition
		if n := utf8.RuneCountInString(tr); n > 256 {
			t.Errorf("a transition of %d characters, the XRD admits 256: %q", n, tr)
		}
		rec := Record(xr.HookStatus{}, tells[0], HookAnswer{OK: true, Status: 200}, at(0))
		if rec.Bounded() != rec {
			t.Errorf("the record is not within its bounds: %q", rec.Transition)
		}
		if seen[tr] {
			t.Errorf("two decisions' events have one transition %q: the second is never told", tr)
		}
		seen[tr] = true
	}
}

// TestHooksConfirmationOfAnEditedStep: a confirm-traffic-increase or
// confirm-promotion hook's 2xx confirms a move to a weight; the steps
// edited meanwhile (the rollout relocated, or a Succeeded one Progressing
// again) make the next move one to another weight, which its 2xx for the
// old one must not confirm.
func TestHooksConfirmationOfAnEditedStep(t *testing.T) {
	cases := map[string]struct {
		hook  xr.Hook
		steps []xr.Step
		// edited are the steps from run 2 on.
		edited []xr.Step
		runs   int
	}{
		"confirm-traffic-increase": {
			hook: hook("more", hooks.ConfirmTrafficIncrease),
			// 0: 10%; 1: more 200 for 50%, at 50%; 2: 50% is no step any
			// more: back to 10%; 3: the move to 60% asks again.
			steps:  []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50), Pause: time.Minute}, {Weight: percent.Int(100)}},
			edited: []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(60), Pause: time.Minute}, {Weight: percent.Int(100)}},
			runs:   4,
		},
		"confirm-promotion": {
			hook: hook("promote", hooks.ConfirmPromotion),
			// 0: 10%; 1: 50%, the last step; 2: promote 200, Succeeded at
			// 50%; a step of 100% added: 3: Progressing at 50%; 4: 100%;
			// 5: the promotion at 100% asks again.
			steps:  []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50)}},
			edited: []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50)}, {Weight: percent.Int(100)}},
			runs:   7,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &hookWorld{script: map[string]func(int) HookAnswer{tc.hook.Name: ok}}
			in := hooked(tc.hook)
			in.Traffic.Steps = tc.steps
			lines := play(t, w, in, time.Minute, tc.runs, func(i int, in *Input) {
				if i >= 3 || name == "confirm-traffic-increase" && i >= 2 {
					in.Traffic.Steps = tc.edited
				}
			})
			if got := w.count(tc.hook.Name); got != 2 {
				t.Errorf("%s hook called %d time(s), want 2: its 2xx for one weight confirmed a move to another\ncalls: %v\nruns: %v",
					tc.hook.Name, got, w.calls, lines)
			}
		})
	}
}

// TestHooksAskedAnewOnARestart: a rollout started over within its revision
// and attempt (abort cleared, a changed canary) asks its hooks anew: a
// post-rollout hook is told once per end (aborted, restarted, aborted
// again: two ends), a changed canary gets its own load test and
// confirmation. The records of the rollout before (their transitions
// "v2/Aborted", "v2/step-0", "v2/start") stood for the new one.
func TestHooksAskedAnewOnARestart(t *testing.T) {
	twoSteps := []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(100)}}
	changedAt := func(n int) func(i int, in *Input) {
		return func(i int, in *Input) {
			in.CanaryDigest = "d1"
			if i >= n {
				in.CanaryDigest = "d2"
			}
		}
	}
	cases := map[string]struct {
		hook xr.Hook
		edit func(i int, in *Input)
		runs int
	}{
		// 0: 10%; 1: aborted; 2: restarted; 3: aborted again.
		"post-rollout, aborted twice": {hook: hook("post", hooks.PostRollout), edit: func(i int, in *Input) { in.Traffic.Abort = i == 1 || i == 3 }, runs: 5},
		// 0: 10%; 1: 100%; 2: Succeeded; 3: the canary changed: 10%;
		// 4: 100%; 5: Succeeded again.
		"post-rollout, succeeded twice": {hook: hook("post", hooks.PostRollout), edit: changedAt(3), runs: 7},
		// 0: 10%; 1: load step-0; 2: the canary changed: 10%; 3: its
		// load test.
		"rollout, the canary changed": {hook: hook("load", hooks.Rollout), edit: changedAt(2), runs: 4},
		// 0: confirmed, 10%; 1: aborted; 2: abort cleared: confirmed
		// again before 10%.
		"confirm-rollout, abort cleared": {hook: hook("go", hooks.ConfirmRollout), edit: func(i int, in *Input) { in.Traffic.Abort = i == 1 }, runs: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &hookWorld{script: map[string]func(int) HookAnswer{tc.hook.Name: ok}}
			in := hooked(tc.hook)
			in.Traffic.Steps = twoSteps
			lines := play(t, w, in, time.Minute, tc.runs, tc.edit)
			if got := w.count(tc.hook.Name); got != 2 {
				t.Errorf("%s hook called %d time(s), want 2 (once per rollout)\ncalls: %v\nruns: %v", tc.hook.Name, got, w.calls, lines)
			}
		})
	}
}

// TestHooksConfirmAfterADarkStep: a first step at 0% (a dark launch, or
// testers only) whose move to the next step waits for a
// confirm-traffic-increase hook waits there: AwaitingConfirmation at step
// 0 at 0% is not a rollout short of its first step (waiting for its start
// hooks), which the run after would "enter" again, restarting the step's
// start and saying StepAdvanced, every other run.
func TestHooksConfirmAfterADarkStep(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"more": refuse}}
	in := hooked(hook("more", hooks.ConfirmTrafficIncrease))
	in.Traffic.Steps = []xr.Step{{Weight: percent.Zero, Pause: time.Minute}, {Weight: percent.Int(50)}}
	var prev *xr.RolloutStatus
	reasons := make([]string, 0, 2)
	for i := range 6 {
		run := in
		run.Now = at(time.Duration(i) * time.Minute)
		run.Previous = prev
		d := w.decide(run)
		for _, e := range d.Events {
			reasons = append(reasons, e.Reason)
		}
		if i >= 2 && (d.Status.StepStartedAt == nil || !d.Status.StepStartedAt.Equal(mt(0))) {
			t.Errorf("run %d: step 0 started at %v, want at 0s: waiting for a confirmation restarted it", i, d.Status.StepStartedAt)
		}
		s := d.Status
		prev = &s
	}
	want := []string{ReasonStarted, ReasonAwaitingConfirmation}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("events: -want +got:\n%s", diff)
	}
}

// TestHooksFutureFailureIsNoFailure: a rollout hook's record dated beyond
// the clock skew (written by hand) is no call, as ask reads it: it must not
// fail the rollout either (failedHook read it as failures spent).
func TestHooksFutureFailureIsNoFailure(t *testing.T) {
	in := hooked(hook("load", hooks.Rollout))
	in.Now = at(2 * time.Minute)
	in.Previous = &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: ReasonAdvanced, Revision: "v2", Step: i32(0), StepStartedAt: mt(0),
		CanaryWeight: percent.Int(10), PrimaryWeight: percent.Int(90),
		Hooks: []xr.HookStatus{{Name: "load", Transition: "v2/step-0", Result: xr.HookFailed, Failures: 5, Status: 500, Time: *mt(48 * time.Hour)}},
	}
	in.Hooks = xr.HookRecords(in.Previous)
	d := Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || len(d.Asks) != 1 {
		t.Errorf("a record from the future counted: %s %s (%s), asks %v", d.Status.Phase, d.Status.Reason, d.Status.Message, d.Asks)
	}
}
