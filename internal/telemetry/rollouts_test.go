package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func TestRolloutOf(t *testing.T) {
	step := int32(1)
	cases := map[string]struct {
		reason string
		uid    string
		status *xr.RolloutStatus
		want   *Rollout
	}{
		"NoUID": {
			reason: "A CanaryRoute without a UID (crossplane render) has no series.",
			status: &xr.RolloutStatus{Phase: xr.PhaseProgressing},
		},
		"NoStatus": {
			reason: "A run without a rollout status has no series.",
			uid:    "u1",
		},
		"Progressing": {
			reason: "The series show the phase, the step, the weights and the latest number of each metric; a NoData measurement and a metric never measured have none.",
			uid:    "u1",
			status: &xr.RolloutStatus{
				Phase: xr.PhaseProgressing, Step: &step, PrimaryWeight: percent.Int(80), CanaryWeight: percent.Int(20),
				Metrics: []xr.MetricStatus{
					{Name: "errors", Measurements: []xr.Measurement{
						{Time: metav1.Unix(1, 0), Value: "0.5", Verdict: xr.VerdictFailed},
						{Time: metav1.Unix(2, 0), Value: "0.01", Verdict: xr.VerdictPassed},
					}},
					{Name: "latency", Measurements: []xr.Measurement{{Verdict: xr.VerdictNoData, Reason: "no series"}}},
					{Name: "never"},
				},
			},
			want: &Rollout{
				UID: "u1", Namespace: "team", Name: "web", Phase: xr.PhaseProgressing, Step: 1, Steps: 3,
				PrimaryWeight: percent.Int(80), CanaryWeight: percent.Int(20),
				Measurements: []RolloutMeasurement{{Metric: "errors", Verdict: xr.VerdictPassed, Value: 0.01}},
			},
		},
		"Forged": {
			reason: "A status anyone may write: a metric named twice keeps its first entry (two series alike fail the scrape), and label values are made valid UTF-8 and bounded.",
			uid:    "u1",
			status: &xr.RolloutStatus{
				Phase: xr.Phase("Progress\xffing"), PrimaryWeight: percent.Int(100),
				Metrics: []xr.MetricStatus{
					{Name: "errors", Measurements: []xr.Measurement{{Value: "1", Verdict: xr.VerdictPassed}}},
					{Name: "errors", Measurements: []xr.Measurement{{Value: "2", Verdict: xr.VerdictFailed}}},
					{Name: strings.Repeat("m", 200), Measurements: []xr.Measurement{{Value: "3", Verdict: "\xfe"}}},
				},
			},
			want: &Rollout{
				UID: "u1", Namespace: "team", Name: "web", Phase: xr.Phase("Progress\uFFFDing"), Step: -1, Steps: 3, PrimaryWeight: percent.Int(100),
				Measurements: []RolloutMeasurement{
					{Metric: "errors", Verdict: xr.VerdictPassed, Value: 1},
					{Metric: strings.Repeat("m", maxLabelValue), Verdict: "\uFFFD", Value: 3},
				},
			},
		},
		"NoStep": {
			reason: "A rollout without a step (a manual weight) shows step -1.",
			uid:    "u1",
			status: &xr.RolloutStatus{Phase: xr.PhaseStable, PrimaryWeight: percent.Int(100)},
			want:   &Rollout{UID: "u1", Namespace: "team", Name: "web", Phase: xr.PhaseStable, Step: -1, Steps: 3, PrimaryWeight: percent.Int(100)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := RolloutOf(tc.uid, "team", "web", 3, tc.status)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRolloutOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRolloutSeries(t *testing.T) {
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	web := Rollout{
		UID: "u1", Namespace: "team", Name: "web", Phase: xr.PhaseProgressing, Step: 0, Steps: 2, PrimaryWeight: percent.Int(90), CanaryWeight: percent.Int(10),
		Measurements: []RolloutMeasurement{{Metric: "errors", Verdict: xr.VerdictPassed, Value: 0.01}},
	}
	webLater := web
	webLater.Phase, webLater.Step, webLater.PrimaryWeight, webLater.CanaryWeight, webLater.Measurements = xr.PhaseSucceeded, 1, percent.Zero, percent.Max, nil
	api := Rollout{UID: "u2", Name: "api", Phase: xr.PhaseAborted, Step: -1, PrimaryWeight: percent.Int(100)}

	type set struct {
		after time.Duration
		r     Rollout
	}
	cases := map[string]struct {
		reason  string
		max     int
		sets    []set
		scrape  time.Duration
		want    string
		metrics []string
	}{
		"Newest": {
			reason: "Each CanaryRoute shows its newest run's phase, step, weights and measurements, by namespace and name.",
			max:    10,
			sets:   []set{{0, web}, {time.Second, webLater}, {2 * time.Second, api}},
			scrape: 3 * time.Second,
			want: `
# HELP function_canary_route_rollout_phase Where each CanaryRoute's rollout stands: 1 for its status.rollout.phase, from the newest run of it this replica answered (series last RolloutTTL, 10 minutes, after it).
# TYPE function_canary_route_rollout_phase gauge
function_canary_route_rollout_phase{name="api",namespace="",phase="Aborted"} 1
function_canary_route_rollout_phase{name="web",namespace="team",phase="Succeeded"} 1
# HELP function_canary_route_rollout_step Each CanaryRoute's status.rollout.step (0 is the first of traffic.steps; -1 without steps).
# TYPE function_canary_route_rollout_step gauge
function_canary_route_rollout_step{name="api",namespace=""} -1
function_canary_route_rollout_step{name="web",namespace="team"} 1
# HELP function_canary_route_rollout_weight_percent The weight each CanaryRoute's route gives each side, in percent, by side (primary, canary).
# TYPE function_canary_route_rollout_weight_percent gauge
function_canary_route_rollout_weight_percent{name="api",namespace="",side="canary"} 0
function_canary_route_rollout_weight_percent{name="api",namespace="",side="primary"} 100
function_canary_route_rollout_weight_percent{name="web",namespace="team",side="canary"} 100
function_canary_route_rollout_weight_percent{name="web",namespace="team",side="primary"} 0
`,
			metrics: []string{"function_canary_route_rollout_phase", "function_canary_route_rollout_step", "function_canary_route_rollout_weight_percent", "function_canary_route_rollout_measurement"},
		},
		"FineWeights": {
			reason: "A weight with decimals is the percent as written: 0.1 and 99.9.",
			max:    10,
			sets:   []set{{0, Rollout{UID: "u3", Name: "fine", Phase: xr.PhaseProgressing, Steps: 4, PrimaryWeight: percent.Hundredths(9990), CanaryWeight: percent.Hundredths(10)}}},
			want: `
# HELP function_canary_route_rollout_weight_percent The weight each CanaryRoute's route gives each side, in percent, by side (primary, canary).
# TYPE function_canary_route_rollout_weight_percent gauge
function_canary_route_rollout_weight_percent{name="fine",namespace="",side="canary"} 0.1
function_canary_route_rollout_weight_percent{name="fine",namespace="",side="primary"} 99.9
`,
			metrics: []string{"function_canary_route_rollout_weight_percent"},
		},
		"Measurements": {
			reason: "The latest number of each metric, with its verdict.",
			max:    10,
			sets:   []set{{0, web}},
			want: `
# HELP function_canary_route_rollout_measurement The latest measurement of each of a CanaryRoute's traffic.metrics, by metric and verdict (Passed, Failed); a measurement without a number (NoData) has no series.
# TYPE function_canary_route_rollout_measurement gauge
function_canary_route_rollout_measurement{metric="errors",name="web",namespace="team",verdict="Passed"} 0.01
# HELP function_canary_route_rollout_steps How many traffic.steps each CanaryRoute's rollout has.
# TYPE function_canary_route_rollout_steps gauge
function_canary_route_rollout_steps{name="web",namespace="team"} 2
`,
			metrics: []string{"function_canary_route_rollout_measurement", "function_canary_route_rollout_steps"},
		},
		"Expired": {
			reason: "A CanaryRoute not run for longer than RolloutTTL (deleted, or answered by another replica) has no series.",
			max:    10,
			sets:   []set{{0, web}, {RolloutTTL, api}},
			scrape: RolloutTTL + time.Second,
			want: `
# HELP function_canary_route_rollout_phase Where each CanaryRoute's rollout stands: 1 for its status.rollout.phase, from the newest run of it this replica answered (series last RolloutTTL, 10 minutes, after it).
# TYPE function_canary_route_rollout_phase gauge
function_canary_route_rollout_phase{name="api",namespace="",phase="Aborted"} 1
`,
			metrics: []string{"function_canary_route_rollout_phase"},
		},
		"Bounded": {
			reason: "At the bound, the CanaryRoute seen longest ago gives way to a new one.",
			max:    1,
			sets:   []set{{0, web}, {time.Second, api}},
			scrape: 2 * time.Second,
			want: `
# HELP function_canary_route_rollout_phase Where each CanaryRoute's rollout stands: 1 for its status.rollout.phase, from the newest run of it this replica answered (series last RolloutTTL, 10 minutes, after it).
# TYPE function_canary_route_rollout_phase gauge
function_canary_route_rollout_phase{name="api",namespace="",phase="Aborted"} 1
`,
			metrics: []string{"function_canary_route_rollout_phase"},
		},
		"Recreated": {
			reason: "A CanaryRoute deleted and created again under its name (a new UID) takes its predecessor's place: one series of each, and the scrape of every series still works.",
			max:    10,
			sets:   []set{{0, webLater}, {time.Second, func() Rollout { r := web; r.UID = "u3"; return r }()}},
			scrape: 2 * time.Second,
			want: `
# HELP function_canary_route_rollout_phase Where each CanaryRoute's rollout stands: 1 for its status.rollout.phase, from the newest run of it this replica answered (series last RolloutTTL, 10 minutes, after it).
# TYPE function_canary_route_rollout_phase gauge
function_canary_route_rollout_phase{name="web",namespace="team",phase="Progressing"} 1
# HELP function_canary_route_rollout_step Each CanaryRoute's status.rollout.step (0 is the first of traffic.steps; -1 without steps).
# TYPE function_canary_route_rollout_step gauge
function_canary_route_rollout_step{name="web",namespace="team"} 0
`,
			metrics: []string{"function_canary_route_rollout_phase", "function_canary_route_rollout_step"},
		},
		"Off": {
			reason:  "A bound of 0 exports no rollout.",
			sets:    []set{{0, web}},
			want:    "",
			metrics: []string{"function_canary_route_rollout_phase"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := start
			reg := prometheus.NewPedanticRegistry()
			m, err := NewRuns(reg, func() time.Time { return now }, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.sets {
				now = start.Add(s.after)
				m.Record(Outcome{Result: ResultComposed, Applied: true, Rollout: &s.r}, now)
			}
			now = start.Add(tc.scrape)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), tc.metrics...); err != nil {
				t.Errorf("%s\n%v", tc.reason, err)
			}
		})
	}
}

func TestRolloutSeriesOnlyFromDecisions(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	reg := prometheus.NewPedanticRegistry()
	m, err := NewRuns(reg, func() time.Time { return now }, 10)
	if err != nil {
		t.Fatal(err)
	}
	r := Rollout{UID: "u1", Namespace: "team", Name: "web", Phase: xr.PhaseProgressing}
	// A run Crossplane does not apply (it calls again until the
	// requirements settle) says nothing of the cluster yet.
	m.Record(Outcome{Result: ResultComposed, Rollout: &r}, now)
	if n := testutil.CollectAndCount(m.rollouts); n != 0 {
		t.Errorf("a run Crossplane does not apply exported %d rollout series, want 0", n)
	}
}
