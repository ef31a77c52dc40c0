package rollout

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// hookWorld plays the webhooks of a rollout under test: each hook answers
// as its script says for its n-th call (from 0), and every call is kept.
// Its decide does what package run does: decide, call what the decision
// asks about, decide again with the answers, then tell.
type hookWorld struct {
	script map[string]func(n int) HookAnswer
	calls  []string
}

func ok(int) HookAnswer     { return HookAnswer{OK: true, Status: 200} }
func refuse(int) HookAnswer { return HookAnswer{Status: 503, Reason: "answered 503: not yet"} }

// okFrom answers 503 to the first n calls, then 200.
func okFrom(n int) func(int) HookAnswer {
	return func(i int) HookAnswer {
		if i < n {
			return refuse(i)
		}
		return ok(i)
	}
}

func (w *hookWorld) count(name string) int {
	n := 0
	for _, c := range w.calls {
		if len(c) > len(name) && c[:len(name)+1] == name+" " {
			n++
		}
	}
	return n
}

func (w *hookWorld) decide(in Input) Decision {
	records := maps.Clone(xr.HookRecords(in.Previous))
	if records == nil {
		records = map[string]xr.HookStatus{}
	}
	called := map[string]bool{}
	call := func(cs []HookCall) bool {
		made := false
		for _, c := range cs {
			if called[c.Hook.Name] && c.Event == nil {
				continue
			}
			what := c.Transition
			if c.Event != nil {
				what += " " + c.Event.Reason
			}
			a := w.script[c.Hook.Name](w.count(c.Hook.Name))
			w.calls = append(w.calls, c.Hook.Name+" "+what)
			records[c.Hook.Name] = Record(records[c.Hook.Name], c, a, in.Now)
			called[c.Hook.Name], made = true, true
		}
		return made
	}
	in.Hooks = records
	d := Decide(in)
	if d.Restarted {
		// The rollout starts over: the status's records are the rollout
		// before's.
		records = map[string]xr.HookStatus{}
		in.Hooks = records
		d = Decide(in)
	}
	for round := 0; round < 3 && call(d.Asks); round++ {
		d = Decide(in)
	}
	call(Tells(in, d))
	d.Status.Hooks = HookStatuses(in.Traffic.Hooks, records)
	return d
}

// hooked is a progressive input over steps3 for revision v2 whose route
// the gateway carries at whatever weight is asked, with hooks.
func hooked(hs ...xr.Hook) Input {
	return Input{Traffic: xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true, Hooks: hs}, Revision: "v2", RouteAtWeight: routeOK}
}

func hook(name string, t hooks.Type) xr.Hook {
	return xr.Hook{Name: name, Webhook: "wh", Type: t, Interval: time.Minute, FailureLimit: 1}
}

// play runs the rollout from no status, once every `every` from t0 for
// n runs, and returns each run's status line (time, phase, reason,
// step, weight) and the calls.
func play(t *testing.T, w *hookWorld, in Input, every time.Duration, n int, edit func(i int, in *Input)) []string {
	t.Helper()
	lines := make([]string, 0, n)
	var prev *xr.RolloutStatus
	for i := range n {
		in := in
		in.Now = at(time.Duration(i) * every)
		in.Previous = prev
		if edit != nil {
			edit(i, &in)
		}
		d := w.decide(in)
		step := int32(-1)
		if d.Status.Step != nil {
			step = *d.Status.Step
		}
		lines = append(lines, fmt.Sprintf("%s %s %s step %d at %s%%", in.Now.Sub(t0), d.Status.Phase, d.Status.Reason, step, d.CanaryWeight))
		s := d.Status
		prev = &s
	}
	return lines
}

func TestHooksConfirmRollout(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"go": okFrom(1)}}
	lines := play(t, w, hooked(hook("go", hooks.ConfirmRollout)), 30*time.Second, 5, nil)
	want := []string{
		"0s Progressing AwaitingConfirmation step 0 at 0%",
		"30s Progressing AwaitingConfirmation step 0 at 0%", // asked again only after its interval
		"1m0s Progressing StepAdvanced step 0 at 10%",       // 2xx: enters step 0, its pause starts
		"1m30s Progressing StepAdvanced step 0 at 10%",
		"2m0s Progressing StepAdvanced step 1 at 50%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"go v2/start@2026-12-02T10:00:00Z", "go v2/start@2026-12-02T10:00:00Z"}, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

func TestHooksPreRolloutFailureLimit(t *testing.T) {
	pre := hook("pre", hooks.PreRollout)
	pre.FailureLimit = 2
	pre.Interval = 10 * time.Second
	w := &hookWorld{script: map[string]func(int) HookAnswer{"pre": refuse}}
	lines := play(t, w, hooked(pre), 10*time.Second, 4, nil)
	want := []string{
		"0s Progressing AwaitingHook step 0 at 0%",
		"10s Failed HookFailed step 0 at 0%",
		"20s Failed HookFailed step 0 at 0%",
		"30s Failed HookFailed step 0 at 0%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if got := len(w.calls); got != 2 {
		t.Errorf("a pre-rollout hook that gave up is called no more: %d calls, want 2: %v", got, w.calls)
	}
}

// TestHooksConfirmThenPre: a confirm-rollout's 2xx lets the pre-rollout
// hook be asked in the same run, and its 2xx the first step.
func TestHooksConfirmThenPre(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"go": ok, "pre": ok}}
	lines := play(t, w, hooked(hook("go", hooks.ConfirmRollout), hook("pre", hooks.PreRollout)), 30*time.Second, 1, nil)
	if diff := cmp.Diff([]string{"0s Progressing RolloutStarted step 0 at 10%"}, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"go v2/start@2026-12-02T10:00:00Z", "pre v2/start@2026-12-02T10:00:00Z"}, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

func TestHooksRolloutOncePerStep(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"load": ok}}
	lines := play(t, w, hooked(hook("load", hooks.Rollout)), 30*time.Second, 16, nil)
	if got := lines[len(lines)-1]; got != "7m30s Succeeded RolloutSucceeded step 2 at 100%" {
		t.Errorf("last run: %s", got)
	}
	// Each step's moment is named by when the step started.
	want := []string{"load v2/step-0@2026-12-02T10:00:00Z", "load v2/step-1@2026-12-02T10:01:00Z", "load v2/step-2@2026-12-02T10:06:00Z"}
	if diff := cmp.Diff(want, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

func TestHooksRolloutFailureHoldsThenFails(t *testing.T) {
	load := hook("load", hooks.Rollout)
	load.FailureLimit = 2
	w := &hookWorld{script: map[string]func(int) HookAnswer{"load": refuse}}
	lines := play(t, w, hooked(load), 30*time.Second, 6, nil)
	want := []string{
		"0s Progressing RolloutStarted step 0 at 10%",
		"30s Progressing RolloutStarted step 0 at 10%",  // first failure: held
		"1m0s Progressing RolloutStarted step 0 at 10%", // past its pause, still held
		"1m30s Failed HookFailed step 0 at 0%",          // second failure: its failureLimit
		"2m0s Failed HookFailed step 0 at 0%",
		"2m30s Failed HookFailed step 0 at 0%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

func TestHooksConfirmTrafficIncreaseAndPromotion(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"more": okFrom(1), "promote": okFrom(1)}}
	in := hooked(hook("more", hooks.ConfirmTrafficIncrease), hook("promote", hooks.ConfirmPromotion))
	in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50), Pause: time.Minute}}
	lines := play(t, w, in, 30*time.Second, 10, nil)
	want := []string{
		"0s Progressing RolloutStarted step 0 at 10%",
		"30s Progressing RolloutStarted step 0 at 10%",
		"1m0s Progressing AwaitingConfirmation step 0 at 10%", // 503: held at 10%
		"1m30s Progressing AwaitingConfirmation step 0 at 10%",
		"2m0s Progressing StepAdvanced step 1 at 50%", // 200 a minute later
		"2m30s Progressing StepAdvanced step 1 at 50%",
		"3m0s Progressing AwaitingConfirmation step 1 at 50%",
		"3m30s Progressing AwaitingConfirmation step 1 at 50%",
		"4m0s Succeeded RolloutSucceeded step 1 at 50%",
		"4m30s Succeeded RolloutSucceeded step 1 at 50%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	// A confirmation names the move (the step and its weight) and when
	// the step the rollout is at started.
	wantCalls := []string{"more v2/step-1-at-50@2026-12-02T10:00:00Z", "more v2/step-1-at-50@2026-12-02T10:00:00Z", "promote v2/promotion-at-50@2026-12-02T10:02:00Z", "promote v2/promotion-at-50@2026-12-02T10:02:00Z"}
	if diff := cmp.Diff(wantCalls, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

func TestHooksRollback(t *testing.T) {
	// The third call answers 200, the others 503.
	third := func(i int) HookAnswer {
		if i == 2 {
			return ok(i)
		}
		return refuse(i)
	}
	w := &hookWorld{script: map[string]func(int) HookAnswer{"rb": third}}
	in := hooked(hook("rb", hooks.Rollback))
	lines := play(t, w, in, time.Minute, 8, func(i int, in *Input) {
		switch i {
		case 4:
			in.Traffic.Paused = true
		case 6:
			in.Traffic.Retry = "r1"
		}
	})
	want := []string{
		"0s Progressing RolloutStarted step 0 at 10%",
		"1m0s Progressing StepAdvanced step 1 at 50%", // asked: 503, no rollback
		"2m0s Progressing StepAdvanced step 1 at 50%", // asked: 503
		"3m0s Aborted RollbackRequested step 1 at 0%", // asked: 200
		"4m0s Aborted RollbackRequested step 1 at 0%", // paused: stays aborted
		"5m0s Aborted RollbackRequested step 1 at 0%", // unpaused: stays aborted, not restarted
		"6m0s Progressing RolloutRetried step 0 at 10%",
		"7m0s Progressing StepAdvanced step 1 at 50%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	wantCalls := []string{"rb v2/rollback", "rb v2/rollback", "rb v2/rollback", "rb v2@r1/rollback"}
	if diff := cmp.Diff(wantCalls, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

// TestHooksEventOncePerTransition: an event hook is told each event once,
// and a decision made again (another call of the same reconcile, which
// reads the same status) tells nothing again.
func TestHooksEventOncePerTransition(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"chat": ok, "post": ok}}
	in := hooked(hook("chat", hooks.Event), hook("post", hooks.PostRollout))
	lines := play(t, w, in, 30*time.Second, 16, nil)
	if got := lines[len(lines)-1]; got != "7m30s Succeeded RolloutSucceeded step 2 at 100%" {
		t.Errorf("last run: %s", got)
	}
	want := []string{
		"chat v2/RolloutStarted#", "chat v2/StepAdvanced#", "chat v2/StepAdvanced#", "chat v2/RolloutSucceeded#",
		"post v2/Succeeded@2026-12-02T10:06:00Z",
	}
	got := make([]string, 0, len(w.calls))
	for _, c := range w.calls {
		if j := strings.Index(c, "#"); j > 0 {
			c = c[:j+1]
		}
		got = append(got, c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}

	// The same reconcile calls again: its status is the one before, its
	// records the calls just made.
	w2 := &hookWorld{script: w.script}
	first := hooked(hook("chat", hooks.Event))
	first.Now = at(0)
	d := w2.decide(first)
	again := first
	again.Hooks = map[string]xr.HookStatus{"chat": d.Status.Hooks[0]}
	if tells := Tells(again, Decide(again)); len(tells) != 0 {
		t.Errorf("the same transition told again: %v", tells)
	}
}

// TestHooksForgedRecords: records of the status the XRD would refuse, of
// another transition, or dated beyond the clock skew are no answer.
func TestHooksForgedRecords(t *testing.T) {
	cases := map[string]xr.HookStatus{
		"bad result":        {Name: "go", Transition: "v2/start", Result: "Yes", Time: *mt(0)},
		"other transition":  {Name: "go", Transition: "v1/start", Result: xr.HookSucceeded, Time: *mt(0)},
		"far in the future": {Name: "go", Transition: "v2/start", Result: xr.HookSucceeded, Time: *mt(48 * time.Hour)},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			in := hooked(hook("go", hooks.ConfirmRollout))
			in.Now = at(time.Minute)
			in.Previous = &xr.RolloutStatus{Phase: xr.PhaseProgressing, Reason: ReasonAwaitingConfirmation, Revision: "v2", Step: i32(0), StepStartedAt: mt(0), Hooks: []xr.HookStatus{rec}}
			in.Hooks = xr.HookRecords(in.Previous)
			d := Decide(in)
			if d.Status.Reason != ReasonAwaitingConfirmation || len(d.Asks) != 1 {
				t.Errorf("forged record counted: %s, asks %v", d.Status.Reason, d.Asks)
			}
		})
	}
}

// TestHooksAskedAgainOnEachEntry: a rollout that enters a step again (abort
// cleared restarts it at step 0; resume restarts the step's pause) asks
// its start and rollout hooks again: each entry is a moment of its own.
func TestHooksAskedAgainOnEachEntry(t *testing.T) {
	w := &hookWorld{script: map[string]func(int) HookAnswer{"go": ok, "load": ok}}
	in := hooked(hook("go", hooks.ConfirmRollout), hook("load", hooks.Rollout))
	in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10), Pause: 10 * time.Minute}, {Weight: percent.Int(100)}}
	lines := play(t, w, in, time.Minute, 8, func(i int, in *Input) {
		switch i {
		case 2:
			in.Traffic.Abort = true
		case 5:
			in.Traffic.Paused = true
		}
	})
	want := []string{
		"0s Progressing RolloutStarted step 0 at 10%",
		"1m0s Progressing RolloutStarted step 0 at 10%",
		"2m0s Aborted Aborted step 0 at 0%",
		"3m0s Progressing RolloutRestarted step 0 at 10%", // abort cleared: confirmed again, at once
		"4m0s Progressing RolloutRestarted step 0 at 10%",
		"5m0s Paused Paused step 0 at 10%",
		"6m0s Progressing RolloutResumed step 0 at 10%",
		"7m0s Progressing RolloutResumed step 0 at 10%",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	wantCalls := []string{
		"go v2/start@2026-12-02T10:00:00Z",
		"load v2/step-0@2026-12-02T10:00:00Z",
		"go v2/start@2026-12-02T10:03:00Z",
		"load v2/step-0@2026-12-02T10:03:00Z",
		"load v2/step-0@2026-12-02T10:06:00Z", // resumed: the step's load again
	}
	if diff := cmp.Diff(wantCalls, w.calls); diff != "" {
		t.Errorf("calls: -want +got:\n%s", diff)
	}
}

// TestHooksPostRolloutNeedsARollout: a first run that goes straight to an
// end (a release's first revision) tells no post-rollout hook.
func TestHooksPostRolloutNeedsARollout(t *testing.T) {
	in := hooked(hook("post", hooks.PostRollout))
	in.Now = at(0)
	d := Decision{Status: xr.RolloutStatus{Phase: xr.PhaseSucceeded, Revision: "v2", StepStartedAt: mt(0)}}
	if tells := Tells(in, d); len(tells) != 0 {
		t.Errorf("post-rollout told on a first run: %v", tells)
	}
	in.Previous = progressing(2, 0)
	if tells := Tells(in, d); len(tells) != 1 {
		t.Errorf("post-rollout not told once a rollout Succeeded: %v", tells)
	}
}

// TestHooksRollbackAskedEachInterval: a progressing rollout holding a long
// pause comes back when its rollback hook is due again, not at the end of
// the pause (found live: a 5s rollback interval was asked once a minute).
func TestHooksRollbackAskedEachInterval(t *testing.T) {
	rb := hook("rb", hooks.Rollback)
	rb.Interval = 5 * time.Second
	in := hooked(rb)
	in.Traffic.Steps = []xr.Step{{Weight: percent.Int(10), Pause: 10 * time.Minute}, {Weight: percent.Int(100)}}
	in.Now = at(2 * time.Minute)
	prev := *progressing(0, 0)
	prev.Hooks = []xr.HookStatus{{Name: "rb", Transition: "v2/rollback", Time: *mt(2*time.Minute - 2*time.Second), Result: xr.HookFailed, Status: 503}}
	in.Previous = &prev
	in.Hooks = xr.HookRecords(in.Previous)
	d := Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || d.Requeue != MinRequeue {
		t.Errorf("%s, requeue %s: want Progressing, back in %s when the hook is due (3s, at least the minimum)", d.Status.Phase, d.Requeue, MinRequeue)
	}
	prev.Hooks[0].Time = *mt(2 * time.Minute)
	in.Hooks = xr.HookRecords(in.Previous)
	if d := Decide(in); d.Requeue != 5*time.Second {
		t.Errorf("requeue %s, want the rollback interval 5s", d.Requeue)
	}
}
