package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
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
