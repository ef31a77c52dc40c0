package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// errorRate is the contract's metric: one measurement a minute, passing
// at 1% of errors or less.
func errorRate(mutate ...func(*xr.Metric)) xr.Metric {
	m := xr.Metric{
		Name: "error-rate", Provider: "prometheus", Query: "q", Interval: time.Minute,
		SuccessWhen: "result <= 0.01", FailureLimit: 1, NoData: xr.NoDataHold,
	}
	for _, f := range mutate {
		f(&m)
	}
	return m
}

// measured is a measurement of a verdict at step i, at t0 plus d.
func measured(i int32, d time.Duration, verdict, value string) xr.Measurement {
	ms := xr.Measurement{Time: metav1.Time{Time: at(d)}, Step: i, Verdict: verdict, Value: value}
	if verdict == xr.VerdictNoData {
		ms.Value, ms.Reason = "", value
	}
	return ms
}

// metricsIn is revision v2 of steps3 at step i (started at start), judged
// by metrics, its route accepted at every weight, then changed by f.
func metricsIn(i int32, start time.Duration, f func(in *Input), metrics ...xr.Metric) Input {
	in := Input{
		Traffic: xr.Traffic{
			Steps: steps3(), RequireAcceptedRoute: true, Metrics: metrics,
		},
		Revision:      "v2",
		Previous:      progressing(i, start),
		RouteAtWeight: routeOK,
	}
	f(&in)
	return in
}

func TestDecideMetrics(t *testing.T) {
	type want struct {
		phase   xr.Phase
		reason  string
		step    int32
		weight  percent.Percent
		message string
		metrics []xr.MetricStatus
		events  []string
		bake    *metav1.Time
	}
	passed := measured(0, 2*time.Minute, xr.VerdictPassed, "0.002")
	failed := measured(0, 2*time.Minute, xr.VerdictFailed, "0.3")
	cases := map[string]struct {
		reason string
		in     Input
		want   want
	}{
		"NoMeasurementYetHolds": {
			reason: "A step whose metric has no measurement yet holds after its pause, and says when the first is due: an interval after the step started.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(2 * time.Minute) }, errorRate(func(m *xr.Metric) { m.Interval = 3 * time.Minute })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:03:00Z`,
			},
		},
		"NoMeasurementDueNow": {
			reason: "A first measurement due an interval after the step started, a time already past (a preview, which never measures), is due now: the message never names a due time already past.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(2 * time.Minute) }, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z`,
			},
		},
		"PassingMeasurementAdvances": {
			reason: "A passing measurement taken this run, after the pause, advances the step; it is recorded, and its verdict said once.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": passed}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message: "holding step 1 (50%): pause until 2026-12-02T10:07:00Z",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{passed}}},
				events:  []string{EventMetricPassed, ReasonAdvanced},
			},
		},
		"PassBeforeTheWindowDoesNotCount": {
			reason: "A passing measurement recorded less than an interval after the step started (or before it: a status written by hand) measured another step's traffic: it does not advance the step.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
					measured(0, -time.Minute, xr.VerdictPassed, "0"), measured(0, 30*time.Second, xr.VerdictPassed, "0"),
				}}}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no passing measurement yet, the last passed: result 0 meets successWhen result <= 0.01`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{
					measured(0, -time.Minute, xr.VerdictPassed, "0"), measured(0, 30*time.Second, xr.VerdictPassed, "0"),
				}}},
			},
		},
		"ForgedFutureMeasurementDropped": {
			reason: "A measurement dated further after now than ClockSkew was never taken: it is dropped, and holds nothing up; the first is due now.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, 2*time.Hour, xr.VerdictPassed, "0")}}}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z`,
			},
		},
		"FutureMeasurementWithinSkewKept": {
			reason: "A measurement dated after now by less than ClockSkew is another replica's: kept in the status (a replica behind must not erase it), it holds nothing up and counts for nothing until its time; the first is due now.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Hour, xr.VerdictPassed, "0")}}}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no measurement yet, the first is due at 2026-12-02T10:02:00Z`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Hour, xr.VerdictPassed, "0")}}},
			},
		},
		"FailureFailsAtTheLimit": {
			reason: "A failed measurement fails the rollout at failureLimit 1: weight 0, reason MetricFailed, the message naming the metric, the value and the expression.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": failed}
			}, errorRate()),
			want: want{
				phase: xr.PhaseFailed, reason: ReasonMetricFailed, weight: percent.Int(0),
				message: `metric error-rate failed 1 measurements in a row (failureLimit 1), the last at 2026-12-02T10:02:00Z: failed: result 0.3 does not meet successWhen result <= 0.01`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed}}},
				events:  []string{EventMetricFailing, EventFailed},
			},
		},
		"FailureBelowTheLimitHolds": {
			reason: "A failure below failureLimit holds: noise is tolerated, and says so once.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": failed}
			}, errorRate(func(m *xr.Metric) { m.FailureLimit = 2 })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no passing measurement yet, the last failed: result 0.3 does not meet successWhen result <= 0.01`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed}}},
				events:  []string{EventMetricFailing},
			},
		},
		"ConsecutiveFailuresAcrossRuns": {
			reason: "The second failure in a row reaches failureLimit 2; the verdict did not change, so no second MetricFailing.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(3 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed}}}
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 3*time.Minute, xr.VerdictFailed, "0.4")}
			}, errorRate(func(m *xr.Metric) { m.FailureLimit = 2 })),
			want: want{
				phase: xr.PhaseFailed, reason: ReasonMetricFailed, weight: percent.Int(0),
				message: `metric error-rate failed 2 measurements in a row (failureLimit 2), the last at 2026-12-02T10:03:00Z: failed: result 0.4 does not meet successWhen result <= 0.01`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed, measured(0, 3*time.Minute, xr.VerdictFailed, "0.4")}}},
				events:  []string{EventFailed},
			},
		},
		"PassBreaksTheRun": {
			reason: "A pass between two failures starts the count over: failures must be consecutive.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(4 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed, measured(0, 3*time.Minute, xr.VerdictPassed, "0")}}}
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 4*time.Minute, xr.VerdictFailed, "0.4")}
				in.RouteAtWeight = routeAt(10)
				in.Traffic.Steps[0].Pause = 10 * time.Minute
			}, errorRate(func(m *xr.Metric) { m.FailureLimit = 2 })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: "holding step 0 (10%): pause until 2026-12-02T10:10:00Z",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed, measured(0, 3*time.Minute, xr.VerdictPassed, "0"), measured(0, 4*time.Minute, xr.VerdictFailed, "0.4")}}},
				events:  []string{EventMetricFailing},
			},
		},
		"NoDataHolds": {
			reason: "An answer without a number holds the step (noData Hold, the default), and never fails the rollout: a provider outage is not the canary's.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictNoData, "prometheus: no series")}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, weight: percent.Int(10),
				message: `holding step 0 (10%): metric error-rate: no passing measurement yet, the last had no data: prometheus: no series`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, 2*time.Minute, xr.VerdictNoData, "prometheus: no series")}}},
				events:  []string{EventMetricNoData},
			},
		},
		"NoDataPass": {
			reason: "noData Pass counts an answer without a number as a pass.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictNoData, "no series")}
			}, errorRate(func(m *xr.Metric) { m.NoData = xr.NoDataPass })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message: "holding step 1 (50%): pause until 2026-12-02T10:07:00Z",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, 2*time.Minute, xr.VerdictNoData, "no series")}}},
				events:  []string{EventMetricNoData, ReasonAdvanced},
			},
		},
		"NoDataFail": {
			reason: "noData Fail counts an answer without a number as a failure.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictNoData, "no series")}
			}, errorRate(func(m *xr.Metric) { m.NoData = xr.NoDataFail })),
			want: want{
				phase: xr.PhaseFailed, reason: ReasonMetricFailed, weight: percent.Int(0),
				message: `metric error-rate failed 1 measurements in a row (failureLimit 1), the last at 2026-12-02T10:02:00Z: had no data: no series`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, 2*time.Minute, xr.VerdictNoData, "no series")}}},
				events:  []string{EventMetricNoData, EventFailed},
			},
		},
		"DryRunOnlyRecords": {
			reason: "A dry run is measured, recorded and announced, and neither holds nor fails the step.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Measured = map[string]xr.Measurement{"error-rate": failed}
			}, errorRate(func(m *xr.Metric) { m.DryRun = true })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message: "holding step 1 (50%): pause until 2026-12-02T10:07:00Z",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{failed}}},
				events:  []string{EventMetricFailing, ReasonAdvanced},
			},
		},
		"OtherStepsOnly": {
			reason: "A metric counts only in its steps: step 0 advances without it.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(2 * time.Minute) }, errorRate(func(m *xr.Metric) { m.Steps = []int32{1} })),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonAdvanced, step: 1, weight: percent.Int(50),
				message: "holding step 1 (50%): pause until 2026-12-02T10:07:00Z",
				events:  []string{ReasonAdvanced},
			},
		},
		"NewRevisionForgetsMeasurements": {
			reason: "A new revision starts with no measurements: the last revision's say nothing of this canary.",
			in: metricsIn(1, 0, func(in *Input) {
				in.Now, in.Revision = at(10*time.Minute), "v3"
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{passed}}}
				in.Measured = map[string]xr.Measurement{"error-rate": measured(1, 10*time.Minute, xr.VerdictPassed, "0")}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonStarted, weight: percent.Int(10),
				message: "holding step 0 (10%): pause until 2026-12-02T10:11:00Z",
				events:  []string{ReasonStarted},
			},
		},
		"BakeStarts": {
			reason: "With bake, the last step that passed holds, Progressing with reason Baking, while its metrics keep being measured: said once.",
			in: metricsIn(2, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Traffic.Bake = 10 * time.Minute
				in.Measured = map[string]xr.Measurement{"error-rate": measured(2, 2*time.Minute, xr.VerdictPassed, "0")}
			}, errorRate()),
			want: want{
				phase: xr.PhaseProgressing, reason: ReasonBaking, step: 2, weight: percent.Int(100),
				message: "holding step 2 (100%): baking until 2026-12-02T10:12:00Z; measuring meanwhile: error-rate",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(2, 2*time.Minute, xr.VerdictPassed, "0")}}},
				events:  []string{EventMetricPassed, ReasonBaking},
				bake:    mt(2 * time.Minute),
			},
		},
		"BakeFails": {
			reason: "A metric that fails while the last step bakes fails the rollout.",
			in: metricsIn(2, 0, func(in *Input) {
				in.Now = at(5 * time.Minute)
				in.Traffic.Bake = 10 * time.Minute
				in.Previous.Reason, in.Previous.BakeStartedAt = ReasonBaking, mt(2*time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(2, 2*time.Minute, xr.VerdictPassed, "0")}}}
				in.Measured = map[string]xr.Measurement{"error-rate": measured(2, 5*time.Minute, xr.VerdictFailed, "0.5")}
			}, errorRate()),
			want: want{
				phase: xr.PhaseFailed, reason: ReasonMetricFailed, step: 2, weight: percent.Int(0),
				message: `metric error-rate failed 1 measurements in a row (failureLimit 1), the last at 2026-12-02T10:05:00Z: failed: result 0.5 does not meet successWhen result <= 0.01`,
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(2, 2*time.Minute, xr.VerdictPassed, "0"), measured(2, 5*time.Minute, xr.VerdictFailed, "0.5")}}},
				events:  []string{EventMetricFailing, EventFailed},
				bake:    mt(2 * time.Minute),
			},
		},
		"BakeEnds": {
			reason: "Once bake has run its length, the rollout Succeeds.",
			in: metricsIn(2, 0, func(in *Input) {
				in.Now = at(12 * time.Minute)
				in.Traffic.Bake = 10 * time.Minute
				in.Previous.Reason, in.Previous.BakeStartedAt = ReasonBaking, mt(2*time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(2, 2*time.Minute, xr.VerdictPassed, "0")}}}
			}, errorRate()),
			want: want{
				phase: xr.PhaseSucceeded, reason: ReasonSucceeded, step: 2, weight: percent.Int(100),
				message: "revision v2 completed all 3 steps at 100%",
				metrics: []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(2, 2*time.Minute, xr.VerdictPassed, "0")}}},
				events:  []string{ReasonSucceeded},
				bake:    mt(2 * time.Minute),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			s := d.Status
			got := want{phase: s.Phase, reason: s.Reason, weight: d.CanaryWeight, message: s.Message, metrics: s.Metrics, bake: s.BakeStartedAt}
			if s.Step != nil {
				got.step = *s.Step
			}
			for _, e := range d.Events {
				got.events = append(got.events, e.Reason)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
			for _, v := range violations(tc.in, d) {
				t.Errorf("%s\ninvariant: %s", tc.reason, v)
			}
		})
	}
}

func TestDue(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     Input
		taken  map[string]xr.Measurement
		want   []string
	}{
		"TooEarly": {
			reason: "Nothing is due less than an interval after the step started: its window would measure the step before.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(59 * time.Second) }, errorRate()),
		},
		"First": {
			reason: "The first measurement is due an interval after the step started.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(time.Minute) }, errorRate()),
			want:   []string{"error-rate"},
		},
		"OncePerInterval": {
			reason: "A metric measured less than an interval ago is not due, however often the function runs.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(100 * time.Second)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Minute, xr.VerdictPassed, "0")}}}
			}, errorRate()),
		},
		"AgainAfterAnInterval": {
			reason: "An interval after the last measurement, the next is due.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Metrics = []xr.MetricStatus{{Name: "error-rate", Measurements: []xr.Measurement{measured(0, time.Minute, xr.VerdictPassed, "0")}}}
			}, errorRate()),
			want: []string{"error-rate"},
		},
		"TakenThisReconcile": {
			reason: "A measurement an earlier call of the same reconcile took counts: Crossplane calls the function several times a reconcile, and each must not query again.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(2 * time.Minute) }, errorRate()),
			taken:  map[string]xr.Measurement{"error-rate": measured(0, 2*time.Minute, xr.VerdictPassed, "0")},
		},
		"NotInItsStep": {
			reason: "A metric that does not count in the current step is not measured.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now = at(2 * time.Minute) }, errorRate(func(m *xr.Metric) { m.Steps = []int32{2} })),
		},
		"Paused": {
			reason: "A paused rollout measures nothing: nothing moves.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now, in.Traffic.Paused = at(2*time.Minute), true }, errorRate()),
		},
		"Restart": {
			reason: "A run that restarts the rollout (a new revision) measures nothing: the step it measured is over.",
			in:     metricsIn(0, 0, func(in *Input) { in.Now, in.Revision = at(2*time.Minute), "v3" }, errorRate()),
		},
		"Failed": {
			reason: "A failed rollout measures nothing.",
			in: metricsIn(0, 0, func(in *Input) {
				in.Now = at(2 * time.Minute)
				in.Previous.Phase = xr.PhaseFailed
			}, errorRate()),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, m := range Due(tc.in, tc.taken) {
				got = append(got, m.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDue(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
