package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// atEntryWait is a status a previous run left while a release's canary
// could not carry step 0 yet: at step 0, at 0%, reason AwaitingCapacity.
func atEntryWait() *xr.RolloutStatus {
	return &xr.RolloutStatus{
		Phase: xr.PhaseProgressing, Reason: ReasonAwaitingCapacity, Revision: "v2",
		Step: i32(0), StepStartedAt: mt(0), NextStepAt: mt(time.Minute),
		CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
		Message: "waiting at 0% to enter step 0: the canary cannot carry its weight yet",
	}
}

// TestNotMeasuredWhileAwaitingEntry: while a rollout waits at 0% to enter
// its first step, its canary gets no traffic and is not measured; a
// measurement of that window handed over is not recorded as the step's.
func TestNotMeasuredWhileAwaitingEntry(t *testing.T) {
	in := Input{
		Traffic:       xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true, Metrics: []xr.Metric{errorRate()}},
		Revision:      "v2",
		Previous:      atEntryWait(),
		RouteAtWeight: routeOK,
		Capacity:      func(percent.Percent) (bool, string) { return false, "0 ready replicas" },
		Now:           at(5 * time.Minute),
	}
	due := Due(in, nil)
	got := make([]string, 0, len(due))
	for _, m := range due {
		got = append(got, m.Name)
	}
	if diff := cmp.Diff([]string{}, got); diff != "" {
		t.Errorf("Due(awaiting entry at 0%%): a canary that gets no traffic yet is not measured: -want, +got:\n%s", diff)
	}
	// And the measurement of that 0% window (no data: NaN, no traffic) is
	// recorded on the run that enters the step, as if it were the step's:
	// with noData: Fail the rollout fails the moment it enters step 0.
	in.Capacity = func(percent.Percent) (bool, string) { return true, "" }
	in.Traffic.Metrics = []xr.Metric{errorRate(func(m *xr.Metric) { m.NoData = xr.NoDataFail })}
	in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 5*time.Minute, xr.VerdictNoData, "provider \"prometheus\": the value is NaN, not a number")}
	d := Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || *d.Status.Step != 0 || len(d.Status.Metrics) != 0 {
		t.Errorf("Decide(entering step 0 with a measurement of the 0%% window): want Progressing at step 0 with no measurement recorded, got %s %s step %d metrics %v: %s",
			d.Status.Phase, d.Status.Reason, *d.Status.Step, d.Status.Metrics, d.Status.Message)
	}
}

// TestRelocatedStepNotJudgedOnOldWeight: the steps were edited so that
// step 0 has another weight, and the rollout continues at step 0 with a new
// start: nothing is measured on the old weight's traffic, and a measurement
// of it handed over does not count.
func TestRelocatedStepNotJudgedOnOldWeight(t *testing.T) {
	steps := []xr.Step{{Weight: percent.Int(20), Pause: time.Minute}, {Weight: percent.Int(50), Pause: 5 * time.Minute}, {Weight: percent.Int(100)}}
	in := Input{
		Traffic:       xr.Traffic{Steps: steps, RequireAcceptedRoute: true, Metrics: []xr.Metric{errorRate()}},
		Revision:      "v2",
		Previous:      progressing(0, 0), // at 10%, which no step has now
		RouteAtWeight: routeOK,
		Now:           at(5 * time.Minute),
	}
	if due := Due(in, nil); len(due) != 0 {
		t.Errorf("Due: a step found again at another weight is not measured on the old weight's traffic, got %v", due)
	}
	// A measurement of the old weight handed over (an earlier call of the
	// reconcile) does not count either.
	in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 5*time.Minute, xr.VerdictFailed, "0.5")}
	d := Decide(in)
	if d.Status.Phase == xr.PhaseFailed {
		t.Errorf("Decide(steps edited, step 0 restarts at 20%%): a measurement of the 10%% window taken at the new step's start fails the new step: %s: %s", d.Status.Reason, d.Status.Message)
	}
}

// TestBakeRestartsAtNewLastStep: a rollout baking its last step (50%) gets
// a step appended (100%): the new last step bakes for itself.
func TestBakeRestartsAtNewLastStep(t *testing.T) {
	two := []xr.Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50)}}
	three := append(append([]xr.Step(nil), two...), xr.Step{Weight: percent.Int(100)})
	prev := progressing(1, time.Minute)
	prev.Reason = ReasonBaking
	prev.BakeStartedAt = mt(time.Minute)
	in := Input{
		Traffic:       xr.Traffic{Steps: three, RequireAcceptedRoute: true, Bake: 10 * time.Minute},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeOK,
		Now:           at(5 * time.Minute),
	}
	d := Decide(in)
	if *d.Status.Step != 2 {
		t.Fatalf("want the appended step 2 entered, got step %d: %s", *d.Status.Step, d.Status.Message)
	}
	in.Previous = &d.Status
	in.Now = at(20 * time.Minute)
	d = Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || d.Status.Reason != ReasonBaking {
		t.Errorf("the new last step (100%%) bakes for 10m once it passes; got %s %s (bakeStartedAt %v): %s",
			d.Status.Phase, d.Status.Reason, d.Status.BakeStartedAt, d.Status.Message)
	}
}

// TestPausedTimeNotBaked: a bake is observation time, like a step's pause:
// a bake paused and resumed starts over.
func TestPausedTimeNotBaked(t *testing.T) {
	prev := progressing(2, 0)
	prev.Reason = ReasonBaking
	prev.BakeStartedAt = mt(0)
	in := Input{
		Traffic:       xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true, Bake: 10 * time.Minute, Paused: true},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeOK,
		Now:           at(time.Minute),
	}
	d := Decide(in) // paused at 1m
	if d.Status.Phase != xr.PhasePaused {
		t.Fatalf("want Paused, got %s", d.Status.Phase)
	}
	in.Previous, in.Traffic.Paused, in.Now = &d.Status, false, at(30*time.Minute)
	d = Decide(in) // resumed at 30m
	in.Previous, in.Now = &d.Status, at(30*time.Minute+5*time.Second)
	d = Decide(in)
	if d.Status.Phase != xr.PhaseProgressing || d.Status.Reason != ReasonBaking {
		t.Errorf("a bake of 10m that ran 1m before a pause still has 9m to run after the resume; got %s %s: %s",
			d.Status.Phase, d.Status.Reason, d.Status.Message)
	}
}

// TestBakeEndsOnAPass: a bake ends, like a step, on a passing measurement
// of each metric taken in the bake: a provider down for the whole bake
// holds it.
func TestBakeEndsOnAPass(t *testing.T) {
	pass := measured(2, time.Minute, xr.VerdictPassed, "0.001")
	var list []xr.Measurement
	list = append(list, pass)
	for m := 2; m <= 5; m++ {
		list = append(list, measured(2, time.Duration(m)*time.Minute, xr.VerdictNoData, "provider \"prometheus\": cannot be reached: connection refused"))
	}
	prev := progressing(2, 0)
	prev.Reason = ReasonBaking
	prev.BakeStartedAt = mt(time.Minute)
	prev.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: list}}
	in := Input{
		Traffic:       xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true, Bake: 5 * time.Minute, Metrics: []xr.Metric{errorRate()}},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeOK,
		Now:           at(6 * time.Minute),
		Measured:      map[string]xr.Measurement{"error-rate": measured(2, 6*time.Minute, xr.VerdictNoData, "provider \"prometheus\": cannot be reached: connection refused")},
	}
	d := Decide(in)
	if d.Status.Phase == xr.PhaseSucceeded {
		t.Errorf("a bake whose every measurement had no data is not a passed bake; got Succeeded: %s", d.Status.Message)
	}
}

// TestMeasurementsWithinXRD: measurements handed over in the pipeline
// context, or carried in a status, with a value, a baseline or a verdict
// the XRD would refuse, never reach the status.
func TestMeasurementsWithinXRD(t *testing.T) {
	ms := measured(0, 2*time.Minute, xr.VerdictFailed, "0.123456789012345678901234567890123456789")
	ms.Baseline = "1.123456789012345678901234567890123456789"
	in := metricsIn(0, 0, func(in *Input) {
		in.Now = at(2 * time.Minute)
		in.Measured = map[string]xr.Measurement{"error-rate": ms}
	}, errorRate(func(m *xr.Metric) { m.FailureLimit = 3 }))
	d := Decide(in)
	for _, m := range d.Status.Metrics {
		for _, got := range m.Measurements {
			if len(got.Value) > 32 || len(got.Baseline) > 32 {
				t.Errorf("status.rollout.metrics[%s] holds a value of %d and a baseline of %d characters; the XRD admits 32", m.Name, len(got.Value), len(got.Baseline))
			}
		}
	}
	bogus := measured(0, 2*time.Minute, "Bogus", "1")
	in.Measured = map[string]xr.Measurement{"error-rate": bogus}
	checkVerdicts(t, "a verdict from the context", Decide(in).Status)
	// The same from a status an older XRD (or none) admitted: the analysis
	// verdicts are filtered (verdictsOf), the metrics' are carried.
	in.Measured = nil
	in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Minute, "passed", "0")}}}
	checkVerdicts(t, "a verdict from the previous status", Decide(in).Status)
}

func checkVerdicts(t *testing.T, what string, s xr.RolloutStatus) {
	t.Helper()
	for _, m := range s.Metrics {
		for _, got := range m.Measurements {
			switch got.Verdict {
			case xr.VerdictPassed, xr.VerdictFailed, xr.VerdictNoData:
			default:
				t.Errorf("%s: status.rollout.metrics[%s] holds verdict %q, outside the XRD's enum", what, m.Name, got.Verdict)
			}
		}
	}
}

// TestStepPassKeptThroughLongWait: a step that passed its metric and waits
// for approval keeps measuring; ten measurements without data do not push
// the step's pass out of the status, which would hold the step and fail it
// on the deadline for a provider outage.
func TestStepPassKeptThroughLongWait(t *testing.T) {
	steps := []xr.Step{{Weight: percent.Int(10), Approval: true}, {Weight: percent.Int(100)}}
	// The pass, then nine measurements without data: the run's tenth
	// would push the pass out of the ten kept.
	list := []xr.Measurement{measured(0, time.Minute, xr.VerdictPassed, "0.001")}
	for m := 52; m <= 60; m++ {
		list = append(list, measured(0, time.Duration(m)*time.Minute, xr.VerdictNoData, "provider \"prometheus\": timed out after 2s"))
	}
	prev := progressing(0, 0)
	prev.Reason, prev.AwaitingApproval = ReasonAwaitingApproval, true
	prev.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: list}}
	in := Input{
		Traffic: xr.Traffic{
			Steps: steps, RequireAcceptedRoute: true, ProgressDeadline: 10 * time.Minute,
			Metrics: []xr.Metric{errorRate()},
		},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeOK,
		Now:           at(61 * time.Minute),
		Measured:      map[string]xr.Measurement{"error-rate": measured(0, 61*time.Minute, xr.VerdictNoData, "provider \"prometheus\": timed out after 2s")},
	}
	d := Decide(in)
	if d.Status.Phase == xr.PhaseFailed {
		t.Errorf("a step that passed its metric and waits for approval does not fail on a provider blip: got %s %s: %s", d.Status.Phase, d.Status.Reason, d.Status.Message)
	}
}

// TestNotMeasuredBeforeRouteCarriesStep: a step's metric is not measured
// while the gateway does not carry the step's route: the window would
// measure the previous weight's traffic.
func TestNotMeasuredBeforeRouteCarriesStep(t *testing.T) {
	steps := []xr.Step{{Weight: percent.Int(10)}, {Weight: percent.Int(50)}, {Weight: percent.Int(100)}}
	prev := progressing(1, 0)
	in := Input{
		Traffic:       xr.Traffic{Steps: steps, RequireAcceptedRoute: true, Metrics: []xr.Metric{errorRate()}},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeAt(10), // the gateway still carries step 0's 10%
		Now:           at(2 * time.Minute),
	}
	if len(Due(in, nil)) == 0 {
		t.Skip("not measured before the route is accepted: fine")
	}
	in.Measured = map[string]xr.Measurement{"error-rate": measured(1, 2*time.Minute, xr.VerdictPassed, "0")}
	d := Decide(in)
	in.Previous, in.Measured, in.RouteAtWeight, in.Now = &d.Status, nil, routeOK, at(2*time.Minute+5*time.Second)
	d = Decide(in)
	if *d.Status.Step != 1 {
		t.Errorf("the 50%% step advanced to step %d on a pass measured while the route carried 10%%: %s", *d.Status.Step, d.Status.Message)
	}
}

// TestNoDataDoesNotResetFailureCount: failureLimit counts failures in a
// row that only a pass starts over: no data in between (noData: Hold) is
// neither.
func TestNoDataDoesNotResetFailureCount(t *testing.T) {
	nd := func(m time.Duration) xr.Measurement {
		return measured(0, m, xr.VerdictNoData, "provider \"prometheus\": timed out after 2s")
	}
	prev := progressing(0, 0)
	prev.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
		measured(0, time.Minute, xr.VerdictFailed, "0.5"), nd(2 * time.Minute),
	}}}
	in := metricsIn(0, 0, func(in *Input) {
		in.Previous = prev
		in.Now = at(3 * time.Minute)
		in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 3*time.Minute, xr.VerdictFailed, "0.5")}
	}, errorRate(func(m *xr.Metric) { m.FailureLimit = 2 }))
	d := Decide(in)
	if d.Status.Phase != xr.PhaseFailed {
		t.Errorf("two failed measurements with only no data between them reach failureLimit 2; got %s %s: %s", d.Status.Phase, d.Status.Reason, d.Status.Message)
	}
}

// TestFutureMeasurementsCountForNothing: a measurement dated after the
// run's time (a status written by hand, a replica whose clock runs ahead,
// or one that took a measurement earlier in the same reconcile) counts for
// nothing: not for the verdict, not toward failureLimit, not for when the
// next one is due; and no message names a due time already past.
func TestFutureMeasurementsCountForNothing(t *testing.T) {
	type want struct {
		due     []string
		phase   xr.Phase
		step    int32
		message string
		requeue time.Duration
	}
	inAnHour := func(verdict, value string) []xr.MetricStatus {
		return []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Hour, verdict, value)}}}
	}
	// baked is the last step passed at 1m, baked from 2m for 5m, with a
	// pass recorded an hour ahead.
	baked := func(in *Input) {
		in.Previous.Reason, in.Previous.BakeStartedAt = ReasonBaking, mt(2*time.Minute)
		in.Traffic.Bake = 5 * time.Minute
		in.Now = at(10 * time.Minute)
		in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
			measured(2, time.Minute, xr.VerdictPassed, "0"), measured(2, time.Hour, xr.VerdictPassed, "0"),
		}}}
	}
	cases := map[string]struct {
		reason string
		in     Input
		taken  map[string]xr.Measurement
		want   want
	}{
		"FuturePassSchedulesNothing": {
			reason: "A pass recorded an hour ahead neither passes the step nor puts its first measurement off by an hour: it is due now, the message names now, and the function calls again soon.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now, in.Previous.Metrics = at(2*time.Minute), inAnHour(xr.VerdictPassed, "0") }, errorRate()),
			want: want{
				due: []string{"error-rate"}, phase: xr.PhaseProgressing,
				message: "holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z",
				requeue: MinRequeue,
			},
		},
		"FutureFailureFailsNothing": {
			reason: "A failure recorded an hour ahead does not count toward failureLimit: the rollout holds for a measurement of its own.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now, in.Previous.Metrics = at(2*time.Minute), inAnHour(xr.VerdictFailed, "0.9") }, errorRate()),
			want: want{
				due: []string{"error-rate"}, phase: xr.PhaseProgressing,
				message: "holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z",
				requeue: MinRequeue,
			},
		},
		"FutureTakenIsNotTaken": {
			reason: "A failure an earlier call of the reconcile handed over, dated an hour ahead (a replica whose clock runs ahead), is neither recorded nor counted, and the metric is measured again.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, time.Hour, xr.VerdictFailed, "0.9")}
			}, errorRate()),
			taken: map[string]xr.Measurement{"error-rate": measured(0, time.Hour, xr.VerdictFailed, "0.9")},
			want: want{
				due: []string{"error-rate"}, phase: xr.PhaseProgressing,
				message: "holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z",
				requeue: MinRequeue,
			},
		},
		"PastMeasurementStillSchedules": {
			reason: "Beside one from the future, a measurement taken by now schedules the next an interval later, as before.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
					measured(0, 90*time.Second, xr.VerdictNoData, "no series"), measured(0, time.Hour, xr.VerdictPassed, "0"),
				}}}
			}, errorRate()),
			want: want{
				phase:   xr.PhaseProgressing,
				message: `holding step 0 (10%): metric error-rate: no passing measurement yet, the last had no data: no series`,
				requeue: 30 * time.Second,
			},
		},
		"FutureBakeMeasurementSchedulesNothing": {
			reason: "A pass recorded ahead in a bake that is over neither ends the bake nor puts its next measurement off: it is due now, and the message names now.",
			in:     metricsIn(2, 0, baked, errorRate()),
			want: want{
				due: []string{"error-rate"}, phase: xr.PhaseProgressing, step: 2,
				message: "holding step 2 (100%): baked until 2026-12-02T10:07:00Z; metric error-rate: no measurement in the bake yet, the next is due at 2026-12-02T10:10:00Z",
				requeue: MinRequeue,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			for _, m := range Due(tc.in, tc.taken) {
				got.due = append(got.due, m.Name)
			}
			d := Decide(tc.in)
			got.phase, got.step, got.message, got.requeue = d.Status.Phase, *d.Status.Step, d.Status.Message, d.Requeue
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFutureMeasurementHoldsNoStep: a status that carries a pass dated an
// hour ahead on every run (a replica whose clock runs ahead writes it back)
// does not stop the step's own measurements: the step is measured and
// advances well within its progressDeadline.
func TestFutureMeasurementHoldsNoStep(t *testing.T) {
	ahead := measured(0, time.Hour, xr.VerdictPassed, "0")
	in := metricsIn(0, 0, func(in *Input) { in.Traffic.ProgressDeadline = 5 * time.Minute }, errorRate())
	for run := range 20 {
		in.Now = at(time.Duration(run) * 30 * time.Second)
		in.Previous.Metrics = append(in.Previous.Metrics, xr.MetricStatus{Name: "error-rate", Measurements: []xr.Measurement{ahead}})
		in.Measured = nil
		for _, m := range Due(in, nil) {
			in.Measured = map[string]xr.Measurement{m.Name: {Time: metav1.Time{Time: in.Now}, Step: *in.Previous.Step, Verdict: xr.VerdictPassed, Value: "0"}}
		}
		d := Decide(in)
		if d.Status.Phase != xr.PhaseProgressing {
			t.Fatalf("run %d at %s: want the step measured and passed, got %s %s: %s", run, in.Now.Format(time.RFC3339), d.Status.Phase, d.Status.Reason, d.Status.Message)
		}
		if *d.Status.Step > 0 {
			return
		}
		in.Previous = &d.Status
	}
	t.Errorf("after 10 minutes the step has not advanced: %s", in.Previous.Message)
}

// TestLaggingReplicaKeepsBakeStart: a bake's start, like a step's, is kept
// by a replica whose clock is behind (within ClockSkew): it never writes its
// own, earlier, now, which would end the bake early for the replicas on
// time.
func TestLaggingReplicaKeepsBakeStart(t *testing.T) {
	prev := progressing(2, 5*time.Minute)
	prev.Reason, prev.BakeStartedAt = ReasonBaking, mt(10*time.Minute)
	in := Input{
		Traffic:       xr.Traffic{Steps: steps3(), RequireAcceptedRoute: true, Bake: 5 * time.Minute},
		Revision:      "v2",
		Previous:      prev,
		RouteAtWeight: routeOK,
		Now:           at(9 * time.Minute), // a replica a minute behind the one that started the bake
	}
	d := Decide(in)
	if diff := cmp.Diff(mt(10*time.Minute), d.Status.BakeStartedAt); diff != "" {
		t.Errorf("the lagging run rewrote the bake's start: -want, +got:\n%s", diff)
	}
	// A replica on time, four and a half minutes into the bake of five.
	in.Previous, in.Now = &d.Status, at(14*time.Minute+30*time.Second)
	if d = Decide(in); d.Status.Phase != xr.PhaseProgressing || d.Status.Reason != ReasonBaking {
		t.Errorf("four and a half minutes into a bake of five, after a lagging run: got %s %s: %s", d.Status.Phase, d.Status.Reason, d.Status.Message)
	}
}

// TestFutureMeasurementSilencesNoEvent: API.md (Safety round 4) says a
// measurement dated after the run's time "is ignored everywhere". The
// events of a metric compare this run's verdict with the last recorded one
// (metricEvents' "before"), which must be the last taken by now: a Failed
// dated an hour ahead (a replica whose clock runs ahead, a status written
// by hand) silenced the MetricFailing warning of a real failure that
// follows a pass. This run's failure replaces the one dated after it.
func TestFutureMeasurementSilencesNoEvent(t *testing.T) {
	const reason = "Attack: a failure dated an hour ahead, last in the previous status, silenced the MetricFailing event of this run's real failure after no data: the future measurement counted for the event."
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

// TestLaggingReplicaKeepsMeasurements: a measurement dated after the run's
// time counts for nothing; but carriedMetrics dropped it from the status it
// writes back, for good. With two replicas of the function a second apart
// (or a clock stepped back by NTP), the replica behind erased a real
// failure the other one just recorded, and a metric that failed
// failureLimit measurements in a row, each taken by the time of its run,
// did not fail the rollout. One up to ClockSkew ahead is kept.
func TestLaggingReplicaKeepsMeasurements(t *testing.T) {
	const reason = "Attack: three failed measurements in a row at 1m, 2m and 3m with failureLimit 3; a run at 1m59s (a replica one second behind) between the second and the third erased the second from the status, and the rollout kept going."
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

// TestLaggingReplicaKeepsStepStart: a stepStartedAt after the run's time
// "counted as now" (stepStartedAt), and the run wrote that now back. A
// replica whose clock is behind (by an hour here; by s seconds the same
// happened, shortened by s) thereby moved the step's start back by its skew
// for good: the next run of a replica on time found the step's pause long
// over and its metric's first measurement long due, measured at once a
// window (1m) that lies mostly in the previous step's traffic, and
// advanced. A start up to ClockSkew ahead is kept: the step waits, and a
// measurement's window lies within its step.
func TestLaggingReplicaKeepsStepStart(t *testing.T) {
	const reason = "Attack: step 1 (50%, pause 5m) entered at 10m; a run at 9m10s-1h (a replica an hour behind) rewrote its start, and a run on time at 10m20s measured at once and advanced the rollout to 100% 20 s after it reached 50%."
	in := metricsIn(1, 10*time.Minute, func(*Input) {}, errorRate())
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
