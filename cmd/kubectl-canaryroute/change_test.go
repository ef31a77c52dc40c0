package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// progressing is a rollout of v2 at step 1 of [10, 50 approval, 100].
func progressing(with ...func(*rollout)) rollout {
	at := int64(1)
	r := rollout{
		name:           "CanaryRoute demo/web",
		steps:          []step{{}, {approval: true}, {}},
		canaryRevision: "v2",
		phase:          xr.PhaseProgressing,
		revision:       "v2",
		step:           &at,
	}
	for _, f := range with {
		f(&r)
	}
	return r
}

// atStep is a rollout at step i.
func atStep(i int64) func(*rollout) {
	return func(r *rollout) { r.step = &i }
}

// inPhase is a rollout in phase p.
func inPhase(p xr.Phase) func(*rollout) {
	return func(r *rollout) { r.phase = p }
}

// released is a rollout of a release: v1 stable, v0 before it.
func released(r *rollout) {
	r.release = true
	r.stable = "v1"
	r.history = []string{"v0", "v-1"}
	r.rollbackWindow = 1
}

var cmpChange = cmp.Options{cmp.AllowUnexported(change{}, fieldValue{}), cmpopts.EquateEmpty()}

func TestChanges(t *testing.T) {
	type want struct {
		change change
		err    string
	}
	cases := map[string]struct {
		reason string
		decide func() (change, error)
		want   want
	}{
		"Approve": {
			reason: "approve writes traffic.approval for the current revision and step.",
			decide: func() (change, error) { return approve(progressing(func(r *rollout) { r.awaitingApproval = true })) },
			want: want{change: change{verb: "approved", sets: []fieldValue{
				{path: []string{"traffic", "approval"}, value: map[string]any{"revision": "v2", "step": int64(1)}},
			}}},
		},
		"ApproveCoveredAlready": {
			reason: "An approval that covers the step already is left as it is, never lowered to the current step.",
			decide: func() (change, error) {
				return approve(progressing(func(r *rollout) { r.approval = &approval{revision: "v2", step: 2} }))
			},
			want: want{change: change{unchanged: "step 1 of v2 is approved already (spec.traffic.approval: {revision: v2, step: 2})"}},
		},
		"ApproveOtherRevisionsApproval": {
			reason: "An approval of another revision approves nothing: it is replaced.",
			decide: func() (change, error) {
				return approve(progressing(func(r *rollout) { r.approval = &approval{revision: "v1", step: 2} }))
			},
			want: want{change: change{verb: "approved", sets: []fieldValue{
				{path: []string{"traffic", "approval"}, value: map[string]any{"revision": "v2", "step": int64(1)}},
			}}},
		},
		"ApproveAStepWithoutApproval": {
			reason: "An approval covers the steps up to its own: one of a step that waits for none would change nothing, and is refused.",
			decide: func() (change, error) { return approve(progressing(atStep(0))) },
			want:   want{err: "nothing to approve: step 0 of v2 does not wait for an approval (no approval: true, nothing awaited)"},
		},
		"ApproveAStepOutside": {
			reason: "A status step outside the spec's steps (behind the spec, or forged) is refused, not indexed.",
			decide: func() (change, error) { return approve(progressing(atStep(-1))) },
			want:   want{err: "cannot approve: status.rollout.step -1 is outside spec.traffic.steps (3 steps); wait for the function to write the status again"},
		},
		"PromoteFullAStepOutside": {
			reason: "A status step past the last step (steps cut from 5 to 3 before the function ran) is refused, not sliced.",
			decide: func() (change, error) { return promote(progressing(atStep(5)), true) },
			want:   want{err: "cannot promote: status.rollout.step 5 is outside spec.traffic.steps (3 steps); wait for the function to write the status again"},
		},
		"ApproveManual": {
			reason: "A CanaryRoute without steps has nothing to approve.",
			decide: func() (change, error) { return approve(progressing(func(r *rollout) { r.steps = nil })) },
			want:   want{err: "cannot approve: CanaryRoute demo/web has no traffic.steps (approve acts on a progressive rollout)"},
		},
		"ApproveNotStarted": {
			reason: "Before the function wrote status.rollout, there is no current step to approve.",
			decide: func() (change, error) { return approve(progressing(func(r *rollout) { r.revision, r.step = "", nil })) },
			want:   want{err: "cannot approve: the rollout has not started (status.rollout has no revision and step yet)"},
		},
		"ApproveSucceeded": {
			reason: "A rollout that ended has nothing to approve.",
			decide: func() (change, error) { return approve(progressing(inPhase(xr.PhaseSucceeded))) },
			want:   want{err: "nothing to approve: the rollout is Succeeded"},
		},
		"Promote": {
			reason: "promote writes traffic.promote for the current revision; the last step's approval still waits, and the note says so.",
			decide: func() (change, error) {
				return promote(progressing(func(r *rollout) { r.steps[2].approval = true }), false)
			},
			want: want{change: change{verb: "promoted", sets: []fieldValue{
				{path: []string{"traffic", "promote"}, value: map[string]any{"revision": "v2"}},
			}, notes: []string{"step 2, the last, waits for its approval (promote --full approves it too)"}}},
		},
		"PromoteFull": {
			reason: "promote --full also approves every approval step up to the last.",
			decide: func() (change, error) { return promote(progressing(), true) },
			want: want{change: change{verb: "promoted", sets: []fieldValue{
				{path: []string{"traffic", "promote"}, value: map[string]any{"revision": "v2"}},
				{path: []string{"traffic", "approval"}, value: map[string]any{"revision": "v2", "step": int64(2)}},
			}}},
		},
		"PromoteFullNoApprovalSteps": {
			reason: "promote --full writes no approval when no approval step is left.",
			decide: func() (change, error) {
				return promote(progressing(func(r *rollout) { r.steps[1].approval = false }), true)
			},
			want: want{change: change{verb: "promoted", sets: []fieldValue{
				{path: []string{"traffic", "promote"}, value: map[string]any{"revision": "v2"}},
			}}},
		},
		"PromoteOnce": {
			reason: "A promote acts once per revision: one that status.rollout.promoted records would do nothing.",
			decide: func() (change, error) { return promote(progressing(func(r *rollout) { r.promoted = "v2" }), false) },
			want:   want{err: "cannot promote: revision v2 was promoted already (status.rollout.promoted); a promote acts once per revision"},
		},
		"PromoteAtLastStep": {
			reason: "At the last step there is nothing to skip to.",
			decide: func() (change, error) { return promote(progressing(atStep(2)), false) },
			want:   want{err: "nothing to promote: step 2 is the last step"},
		},
		"PromoteFullAtLastStep": {
			reason: "At an approval step that is the last, promote --full approves it.",
			decide: func() (change, error) {
				return promote(progressing(atStep(2), func(r *rollout) { r.steps[2].approval = true }), true)
			},
			want: want{change: change{verb: "promoted", sets: []fieldValue{
				{path: []string{"traffic", "approval"}, value: map[string]any{"revision": "v2", "step": int64(2)}},
			}}},
		},
		"PromotePaused": {
			reason: "A paused rollout takes the promote, which acts once resumed: the note says so.",
			decide: func() (change, error) { return promote(progressing(inPhase(xr.PhasePaused)), false) },
			want: want{change: change{verb: "promoted", sets: []fieldValue{
				{path: []string{"traffic", "promote"}, value: map[string]any{"revision": "v2"}},
			}, notes: []string{"the rollout is paused: the promote acts once it is resumed (kubectl canaryroute resume)"}}},
		},
		"PromoteFailed": {
			reason: "A failed rollout is not promoted: retry it.",
			decide: func() (change, error) { return promote(progressing(inPhase(xr.PhaseFailed)), false) },
			want:   want{err: "nothing to promote: the rollout is Failed"},
		},
		"Abort": {
			reason: "abort writes traffic.abort: true.",
			decide: func() (change, error) { return abort(progressing()) },
			want:   want{change: change{verb: "aborted", sets: []fieldValue{{path: []string{"traffic", "abort"}, value: true}}}},
		},
		"AbortAborted": {
			reason: "An abort already written is left as it is.",
			decide: func() (change, error) { return abort(progressing(func(r *rollout) { r.abort = true })) },
			want:   want{change: change{unchanged: "spec.traffic.abort is true already"}},
		},
		"RetryFailed": {
			reason: "retry writes a counter above every retry value the spec and the status hold.",
			decide: func() (change, error) {
				return retry(progressing(inPhase(xr.PhaseFailed), func(r *rollout) { r.retry, r.statusRetry = "2", "3" }))
			},
			want: want{change: change{verb: "retried", sets: []fieldValue{{path: []string{"traffic", "retry"}, value: "4"}}}},
		},
		"RetryAborted": {
			reason: "retry of an aborted rollout clears abort with it: an aborted revision restarts only once abort is cleared.",
			decide: func() (change, error) {
				return retry(progressing(inPhase(xr.PhaseAborted), func(r *rollout) { r.abort = true }))
			},
			want: want{change: change{verb: "retried", sets: []fieldValue{
				{path: []string{"traffic", "retry"}, value: "1"},
				{path: []string{"traffic", "abort"}, value: false},
			}}},
		},
		"RetryTimestampValue": {
			reason: "A retry value that is not a counter (a timestamp) still gets a value it never had.",
			decide: func() (change, error) {
				return retry(progressing(inPhase(xr.PhaseFailed), func(r *rollout) { r.retry, r.statusRetry = "1", "20261202T1000" }))
			},
			want: want{change: change{verb: "retried", sets: []fieldValue{{path: []string{"traffic", "retry"}, value: "2"}}}},
		},
		"RetryProgressing": {
			reason: "A rollout under way has nothing to retry: a retry value would only be recorded.",
			decide: func() (change, error) { return retry(progressing()) },
			want:   want{err: "nothing to retry: the rollout is Progressing (retry restarts a Failed or Aborted revision)"},
		},
		"Pause": {
			reason: "pause writes traffic.paused: true.",
			decide: func() (change, error) { return pause(progressing()) },
			want:   want{change: change{verb: "paused", sets: []fieldValue{{path: []string{"traffic", "paused"}, value: true}}}},
		},
		"Resume": {
			reason: "resume writes traffic.paused: false, whoever wrote true.",
			decide: func() (change, error) { return resume(progressing(func(r *rollout) { r.paused = true })) },
			want:   want{change: change{verb: "resumed", sets: []fieldValue{{path: []string{"traffic", "paused"}, value: false}}}},
		},
		"ResumeNotPaused": {
			reason: "Resuming a rollout that is not paused writes nothing.",
			decide: func() (change, error) { return resume(progressing()) },
			want:   want{change: change{unchanged: "the rollout is not paused (spec.traffic.paused is not true)"}},
		},
		"RollbackDuringARollout": {
			reason: "While another revision is the canary, rollback returns to the stable revision.",
			decide: func() (change, error) { return rollback(progressing(released), "") },
			want: want{change: change{
				verb: "rolled back to v1", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v1"}},
				notes: []string{"v1 is the stable revision: the canary goes to 0%, then its Service moves back to v1"},
			}},
		},
		"RollbackAfterAPromotion": {
			reason: "Once the canary is the stable revision, rollback goes to the one stable before it, in the window: straight to its promotion.",
			decide: func() (change, error) {
				return rollback(progressing(released, func(r *rollout) { r.canaryRevision = "v1" }), "")
			},
			want: want{change: change{
				verb: "rolled back to v0", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v0"}},
				notes: []string{"v0 is in the rollback window (1): it goes straight to its promotion, without steps, if unchanged since"},
			}},
		},
		"RollbackTo": {
			reason: "rollback --to names the revision; outside the window it rolls out through the steps.",
			decide: func() (change, error) {
				return rollback(progressing(released, func(r *rollout) { r.history = []string{"v0", "v-1"} }), "v-1")
			},
			want: want{change: change{
				verb: "rolled back to v-1", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v-1"}},
				notes: []string{"v-1 is outside the rollback window (1): it rolls out through the steps"},
			}},
		},
		"RollbackToTheStable": {
			reason: "rollback --to the stable revision returns to it.",
			decide: func() (change, error) { return rollback(progressing(released), "v1") },
			want: want{change: change{
				verb: "rolled back to v1", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v1"}},
				notes: []string{"v1 is the stable revision: the canary goes to 0%, then its Service moves back to v1"},
			}},
		},
		"RollbackToANewRevision": {
			reason: "A revision never released here is a new rollout, not a rollback: refused, naming set-revision.",
			decide: func() (change, error) { return rollback(progressing(released), "v9") },
			want:   want{err: "cannot roll back to v9: it is neither the stable revision nor in status.release.history; set-revision v9 rolls it out through the steps"},
		},
		"RollbackWithoutRelease": {
			reason: "Without a release, the sides are not revisions: there is nothing to roll back to.",
			decide: func() (change, error) { return rollback(progressing(), "") },
			want:   want{err: "cannot roll back: CanaryRoute demo/web has no spec.release; without a release, abort sends every request to the primary"},
		},
		"RollbackNoHistory": {
			reason: "A first release has nothing before it.",
			decide: func() (change, error) {
				return rollback(progressing(released, func(r *rollout) { r.canaryRevision, r.history = "v1", nil }), "")
			},
			want: want{err: "cannot roll back: status.release has no earlier revision to roll back to"},
		},
		"SetRevision": {
			reason: "set-revision writes canary.revision; a new revision of a release rolls out through the steps.",
			decide: func() (change, error) { return setRevision(progressing(released), "v3") },
			want: want{change: change{
				verb: "set to revision v3", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v3"}},
				notes: []string{"v3 rolls out through the steps"},
			}},
		},
		"SetRevisionSame": {
			reason: "The revision already written is left as it is.",
			decide: func() (change, error) { return setRevision(progressing(), "v2") },
			want:   want{change: change{unchanged: "spec.canary.revision is v2 already"}},
		},
		"SetRevisionWithoutRelease": {
			reason: "Without a release, a new revision restarts the rollout on the same sides: the operator is told the function deploys nothing.",
			decide: func() (change, error) { return setRevision(progressing(), "v3") },
			want: want{change: change{
				verb: "set to revision v3", sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v3"}},
				notes: []string{"CanaryRoute demo/web has no spec.release: the rollout of v3 restarts at step 0 on the same sides (spec.canary's backend and selector do not change); deploy v3 behind them yourself"},
			}},
		},
		"SetRevisionNotALabelValue": {
			reason: "A release's revision is its revision label's value: one the function would refuse (ending in '-') is refused before anything is sent.",
			decide: func() (change, error) { return setRevision(progressing(released), "v3-") },
			want:   want{err: `invalid revision "v3-": a release's revision is the value of its revision label: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		},
		"SetRevisionInvalid": {
			reason: "A revision the XRD's pattern refuses is refused before anything is sent.",
			decide: func() (change, error) { return setRevision(progressing(), "v3/../x") },
			want:   want{err: `invalid revision "v3/../x": 1 to 63 letters, digits, '.', '_' or '-'`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.decide()
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nerror: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.change, got, cmpChange); diff != "" {
				t.Errorf("%s\nchange: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// errText is an error's text, or "".
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestReadRollout(t *testing.T) {
	spec := map[string]any{
		"canary":  map[string]any{"revision": "v2"},
		"release": map[string]any{"selector": map[string]any{"app": "web"}},
		"traffic": map[string]any{
			"steps":          []any{map[string]any{"weight": int64(10)}, map[string]any{"weight": int64(50), "approval": true}},
			"approval":       map[string]any{"revision": "v2", "step": int64(1)},
			"promote":        map[string]any{"revision": "v2"},
			"retry":          "3",
			"abort":          true,
			"paused":         true,
			"rollbackWindow": int64(2),
		},
	}
	status := map[string]any{
		"rollout": map[string]any{"phase": "Paused", "revision": "v2", "step": int64(1), "awaitingApproval": true, "promoted": "v1", "retry": "2"},
		"release": map[string]any{"stable": map[string]any{"revision": "v1"}, "history": []any{map[string]any{"revision": "v0"}}},
	}
	at := int64(1)
	want := rollout{
		name: "CanaryRoute demo/web", steps: []step{{}, {approval: true}}, canaryRevision: "v2",
		approval: &approval{revision: "v2", step: 1}, promote: "v2", retry: "3", abort: true, paused: true, release: true, rollbackWindow: 2,
		phase: xr.PhasePaused, revision: "v2", step: &at, awaitingApproval: true, promoted: "v1", statusRetry: "2",
		stable: "v1", history: []string{"v0"},
	}
	got := readRollout("CanaryRoute demo/web", spec, status)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(rollout{}, step{}, approval{})); diff != "" {
		t.Errorf("readRollout() reads every field the commands decide on: -want, +got:\n%s", diff)
	}
}

func TestFlow(t *testing.T) {
	cases := map[string]struct {
		reason string
		v      any
		want   string
	}{
		"Map":         {reason: "Maps are written in flow style, keys sorted.", v: map[string]any{"step": int64(1), "revision": "v2"}, want: "{revision: v2, step: 1}"},
		"NumberLike":  {reason: "A string that reads as a number is quoted, as YAML needs it.", v: "3", want: `"3"`},
		"BoolLike":    {reason: "A string that reads as a bool is quoted.", v: "true", want: `"true"`},
		"Bool":        {reason: "A bool is written bare.", v: false, want: "false"},
		"PlainString": {reason: "Other strings are written bare.", v: "v2.1", want: "v2.1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, flow(tc.v)); diff != "" {
				t.Errorf("%s\nflow(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
