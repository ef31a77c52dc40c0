package rollout

import (
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestAttackFutureMeasurementSilencesEvent: API.md (Safety round 4) says a
// measurement dated after the run's time "is ignored everywhere". The
// events of a metric compare this run's verdict with the last recorded one
// (metricEvents' "before"), and that last one is read from the previous
// status without asking whether it was taken by now: a Failed dated an hour
// ahead (a replica whose clock runs ahead, a status written by hand)
// silences the MetricFailing warning of a real failure that follows a pass.
func TestAttackFutureMeasurementSilencesEvent(t *testing.T) {
	const reason = "Attack: a failure dated an hour ahead, last in the previous status, silences the MetricFailing event of this run's real failure after no data: the future measurement counts for the event."
	failingEvents := func(future bool) []Event {
		in := metricsIn(0, 0, func(in *Input) {
			in.Now = at(2 * time.Minute)
			list := []xr.Measurement{measured(0, time.Minute, xr.VerdictNoData, "no series")}
			if future {
				list = append(list, measured(0, time.Hour, xr.VerdictFailed, "0.9"))
			}
			in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: list}}
			in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictFailed, "0.5")}
		}, errorRate(func(m *xr.Metric) { m.FailureLimit = 2 }))
		d := Decide(in)
		if d.Status.Phase != xr.PhaseProgressing || len(d.Status.Metrics) != 1 || len(d.Status.Metrics[0].Measurements) != 2 {
			t.Fatalf("want Progressing with this run's failure recorded after the no data, got %s %+v", d.Status.Phase, d.Status.Metrics)
		}
		var out []Event
		for _, e := range d.Events {
			if e.Reason == EventMetricFailing {
				out = append(out, e)
			}
		}
		return out
	}
	if len(failingEvents(false)) != 1 {
		t.Fatalf("without a future measurement, want one MetricFailing event, got %+v", failingEvents(false))
	}
	if got := failingEvents(true); len(got) != 1 {
		t.Errorf("%s\nMetricFailing events with a future failure in the previous status: %+v (one without it)", reason, got)
	}
}

// TestAttackClockSkewErasesFailure: a measurement dated after the run's
// time counts for nothing; but carriedMetrics also drops it from the
// status it writes back, for good. With two replicas of the function a
// second apart (or a clock stepped back by NTP), the replica behind erases
// a real failure the other one just recorded, and a metric that failed
// failureLimit measurements in a row, each taken by the time of its run,
// does not fail the rollout.
func TestAttackClockSkewErasesFailure(t *testing.T) {
	const reason = "Attack: three failed measurements in a row at 1m, 2m and 3m with failureLimit 3; a run at 1m59s (a replica one second behind) between the second and the third erases the second from the status, and the rollout keeps going."
	in := metricsIn(0, 0, func(in *Input) {
		in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
			measured(0, time.Minute, xr.VerdictFailed, "0.5"),
		}}}
	}, errorRate(func(m *xr.Metric) { m.FailureLimit = 3 }))

	// Replica A at 2m measures the second failure.
	in.Now = at(2 * time.Minute)
	in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictFailed, "0.5")}
	d := Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || len(d.Status.Metrics[0].Measurements) != 2 {
		t.Fatalf("run at 2m: want Progressing with two failures, got %s %+v", d.Status.Phase, d.Status.Metrics)
	}

	// Replica B, one second behind, runs next: nothing is due for it.
	afterA := d.Status
	in.Previous, in.Now, in.Measured = &afterA, at(2*time.Minute-time.Second), nil
	if due := Due(in, nil); len(due) != 0 {
		t.Logf("run at 1m59s: due %v", due)
	}
	d = Decide(in)
	kept := 0
	if len(d.Status.Metrics) > 0 {
		kept = len(d.Status.Metrics[0].Measurements)
	}

	// Replica A at 3m measures the third failure.
	afterB := d.Status
	in.Previous, in.Now = &afterB, at(3*time.Minute)
	in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 3*time.Minute, xr.VerdictFailed, "0.5")}
	d = Decide(in)
	if d.Status.Phase != xr.PhaseFailed {
		t.Errorf("%s\nthe run at 1m59s wrote back %d of the 2 measurements; at 3m: %s %s: %s (measurements %+v)",
			reason, kept, d.Status.Phase, d.Status.Reason, d.Status.Message, d.Status.Metrics)
	}
}

// TestAttackLaggingReplicaMovesStepStartBack: a stepStartedAt after the
// run's time "counts as now" (stepStartedAt), and the run writes that now
// back. A replica whose clock is behind (by an hour here; by s seconds the
// same happens, shortened by s) thereby moves the step's start back by its
// skew for good: the next run of a replica on time finds the step's pause
// long over and its metric's first measurement long due, measures at once
// a window (1m) that lies mostly in the previous step's traffic, and
// advances. holds() says of this case "the step simply waits"; Due says a
// measurement's window lies within its step. Neither holds.
func TestAttackLaggingReplicaMovesStepStartBack(t *testing.T) {
	const reason = "Attack: step 1 (50%, pause 5m) entered at 10m; a run at 9m10s-1h (a replica an hour behind) rewrites its start, and a run on time at 10m20s measures at once and advances the rollout to 100% 20 s after it reached 50%."
	in := metricsIn(1, 10*time.Minute, func(in *Input) {}, errorRate())
	// The lagging replica: nothing is due for it, and it writes back its
	// own now as the step's start.
	in.Now = at(10*time.Minute + 10*time.Second - time.Hour)
	d := Decide(in)
	if *d.Status.Step != 1 {
		t.Fatalf("the lagging run moved the step: %s", d.Status.Message)
	}
	// The replica on time, 20 s after the step began.
	lagged := d.Status
	in.Previous, in.Now = &lagged, at(10*time.Minute+20*time.Second)
	due := Due(in, nil)
	in.Measured = nil
	for _, m := range due {
		in.Measured = map[string]xr.Measurement{m.Name: measured(1, 10*time.Minute+20*time.Second, xr.VerdictPassed, "0")}
	}
	d = Decide(in)
	if len(due) != 0 || *d.Status.Step != 1 {
		t.Errorf("%s\nstepStartedAt written back %s; at 10m20s due %d metrics, then step %d: %s",
			reason, in.Previous.StepStartedAt.UTC().Format(time.RFC3339), len(due), *d.Status.Step, d.Status.Message)
	}
}
