package atonce

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDo(t *testing.T) {
	// Each call answers after its own delay, or waits for its context.
	type args struct {
		delays   []time.Duration // < 0: waits until its context ends
		timeout  time.Duration
		deadline time.Duration // 0: none
		cancel   bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"InOrder": {
			reason: "Results come in the order of the calls, whoever answers first.",
			args:   args{delays: []time.Duration{30 * time.Millisecond, 0, 10 * time.Millisecond}, timeout: time.Second},
			want:   []string{"0", "1", "2"},
		},
		"AtOnce": {
			reason: "Calls run at once: three calls of 300 ms each answer within a timeout of 400 ms, which one after the other would overstay.",
			args:   args{delays: []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}, timeout: 400 * time.Millisecond},
			want:   []string{"0", "1", "2"},
		},
		"LeftBehind": {
			reason: "A call that overstays its timeout and the grace is left behind with the reason; the others' results stand.",
			args:   args{delays: []time.Duration{-1, 0}, timeout: 50 * time.Millisecond},
			want:   []string{"late 0: " + WhyNoAnswer, "1"},
		},
		"RunDeadline": {
			reason: "A call cut by the run's deadline says so.",
			args:   args{delays: []time.Duration{-1}, timeout: time.Hour, deadline: 50 * time.Millisecond},
			want:   []string{"late 0: " + WhyRunDeadline},
		},
		"RunCanceled": {
			reason: "A call cut by the run's cancellation says so.",
			args:   args{delays: []time.Duration{-1}, timeout: time.Hour, cancel: true},
			want:   []string{"late 0: " + WhyRunCanceled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if tc.args.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.args.deadline)
				defer cancel()
			}
			if tc.args.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			release := make(chan struct{})
			defer close(release)
			got := Do(ctx, len(tc.args.delays),
				func(int) time.Duration { return tc.args.timeout },
				func(_ context.Context, i int) string {
					if d := tc.args.delays[i]; d >= 0 {
						time.Sleep(d)
						return string(rune('0' + i))
					}
					<-release // A call that ignores its context.
					return "released"
				},
				func(i int, why string) string { return "late " + string(rune('0'+i)) + ": " + why })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDo(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
