package rollout

import (
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

var messageTimes = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// runEvery10s runs the rollout every 10 s from start for d, feeding a passing
// measurement whenever one is due, and reports what goes wrong: a step
// that moves back, a Failed phase, a message naming a due time already
// past, a step advanced without a measurement of its own.
func runEvery10s(t *testing.T, in Input, d time.Duration, verdict string) {
	t.Helper()
	startStep := *in.Previous.Step
	for now := in.Now; now.Before(in.Now.Add(d)); now = now.Add(10 * time.Second) {
		in.Now = now
		in.Measured = nil
		if due := Due(in, nil); len(due) > 0 {
			in.Measured = map[string]xr.Measurement{}
			for _, m := range due {
				in.Measured[m.Name] = xr.Measurement{Time: metav1.Time{Time: now.Truncate(time.Second)}, Step: *in.Previous.Step, Verdict: verdict, Value: "0"}
			}
		}
		dec := Decide(in)
		s := dec.Status
		if s.Phase == xr.PhaseFailed {
			t.Errorf("at %s: Failed %s: %s", now.Sub(t0), s.Reason, s.Message)
			return
		}
		if s.Step != nil && *s.Step < startStep {
			t.Errorf("at %s: step moved back to %d", now.Sub(t0), *s.Step)
		}
		if s.Step != nil && *s.Step > *in.Previous.Step {
			// It advanced: a measurement of the step it left must be in
			// its status, taken by now.
			ok := false
			for _, m := range s.Metrics {
				for _, ms := range m.Measurements {
					if ms.Step == *in.Previous.Step && ms.Verdict == xr.VerdictPassed && !ms.Time.After(now) && !ms.Time.Time.Before(in.Previous.StepStartedAt.Time) {
						ok = true
					}
				}
			}
			if !ok {
				t.Errorf("at %s: step %d advanced without a passing measurement of its own: %+v", now.Sub(t0), *in.Previous.Step, s.Metrics)
			}
			return
		}
		for _, ts := range messageTimes.FindAllString(s.Message, -1) {
			tm, _ := time.Parse(time.RFC3339, ts)
			if tm.Before(now.Truncate(time.Second)) && namesADueTime(s.Message) {
				t.Errorf("at %s: message names %s, past: %s", now.Sub(t0), ts, s.Message)
			}
		}
		next := s
		in.Previous = &next
	}
	t.Errorf("step %d held for %s: %s", startStep, d, in.Previous.Message)
}

func namesADueTime(msg string) bool {
	return regexp.MustCompile(`due at|until`).MatchString(msg)
}

func TestClockSkewMeasurements(t *testing.T) {
	now := 10 * time.Minute
	for name, off := range map[string]time.Duration{
		"AtSkew":         time.Hour,
		"JustBeyondSkew": time.Hour + time.Nanosecond,
		"BeyondSkewSec":  time.Hour + time.Second,
		"HalfSkew":       30 * time.Minute,
		"FarFuture":      100 * 365 * 24 * time.Hour,
	} {
		for _, v := range []string{xr.VerdictFailed, xr.VerdictPassed, xr.VerdictNoData} {
			t.Run(name+"/"+v, func(t *testing.T) {
				in := metricsIn(1, 0, func(in *Input) {
					in.Now = at(now)
					in.Traffic.ProgressDeadline = 10 * time.Minute
					in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
						measured(1, now+off, v, "0.5"),
					}}}
				}, errorRate(func(m *xr.Metric) { m.Interval = 2 * time.Minute }))
				runEvery10s(t, in, 30*time.Minute, xr.VerdictPassed)
			})
		}
	}
}

func TestClockSkewStepStart(t *testing.T) {
	now := 10 * time.Minute
	for name, off := range map[string]time.Duration{
		"AtSkew":         time.Hour,
		"JustBeyondSkew": time.Hour + time.Nanosecond,
		"BeyondSkewSec":  time.Hour + time.Second,
		"FarFuture":      100 * 365 * 24 * time.Hour,
	} {
		t.Run(name, func(t *testing.T) {
			in := metricsIn(1, now+off, func(in *Input) {
				in.Now = at(now)
				in.Traffic.ProgressDeadline = 10 * time.Minute
			}, errorRate())
			runEvery10s(t, in, 2*time.Hour, xr.VerdictPassed)
		})
	}
}

func TestClockSkewBake(t *testing.T) {
	now := 10 * time.Minute
	for name, off := range map[string]time.Duration{
		"AtSkew":         time.Hour,
		"JustBeyondSkew": time.Hour + time.Nanosecond,
		"FarFuture":      100 * 365 * 24 * time.Hour,
	} {
		t.Run(name, func(t *testing.T) {
			in := metricsIn(2, 0, func(in *Input) {
				in.Now = at(now)
				in.Traffic.Bake = 10 * time.Minute
				in.Traffic.ProgressDeadline = 10 * time.Minute
				in.Previous.BakeStartedAt = mt(now + off)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
					measured(2, now+off, xr.VerdictFailed, "0.5"),
				}}}
			}, errorRate())
			for end := in.Now.Add(3 * time.Hour); in.Now.Before(end); in.Now = in.Now.Add(10 * time.Second) {
				in.Measured = nil
				if due := Due(in, nil); len(due) > 0 {
					in.Measured = map[string]xr.Measurement{"error-rate": {Time: metav1.Time{Time: in.Now}, Step: 2, Verdict: xr.VerdictPassed, Value: "0"}}
				}
				d := Decide(in)
				if d.Status.Phase != xr.PhaseProgressing {
					t.Logf("at %s: %s %s: %s", in.Now.Sub(t0), d.Status.Phase, d.Status.Reason, d.Status.Message)
					if d.Status.Phase == xr.PhaseFailed {
						t.Errorf("failed")
					}
					return
				}
				for _, ts := range messageTimes.FindAllString(d.Status.Message, -1) {
					tm, _ := time.Parse(time.RFC3339, ts)
					if tm.Before(in.Now.Truncate(time.Second)) && namesADueTime(d.Status.Message) && !regexp.MustCompile(`baked until`).MatchString(d.Status.Message) {
						t.Errorf("at %s: past time: %s", in.Now.Sub(t0), d.Status.Message)
					}
				}
				s := d.Status
				in.Previous = &s
			}
			t.Errorf("held: %s", in.Previous.Message)
		})
	}
}
