package telemetry

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// RolloutTTL is how long a rollout's series stay after the last run of its
// CanaryRoute that Crossplane applied. Crossplane runs every composite at
// least once a poll interval (one minute by default), so a CanaryRoute that
// is still there is seen well within it; one deleted, or now answered by
// another replica, is dropped after it.
const RolloutTTL = 10 * time.Minute

// A Rollout is where one CanaryRoute's rollout stands after a run, as its
// series show it: the dashboard's view of every rollout, from the function
// that decides them (see docs/metrics.md, "Dashboard").
type Rollout struct {
	// UID identifies the CanaryRoute; "" (crossplane render) is never
	// recorded.
	UID string
	// Namespace and Name are the composite's ("" namespace for a
	// cluster-scoped XR).
	Namespace, Name string
	Phase           xr.Phase
	// Step is status.rollout.step; -1 without one (no steps, manual
	// weight).
	Step int32
	// Steps is the number of traffic.steps.
	Steps int
	// PrimaryWeight and CanaryWeight are the route's, in percent with at
	// most two decimals (the series shows 0.1 as 0.1).
	PrimaryWeight, CanaryWeight percent.Percent
	// Measurements are the latest measurement of each metric.
	Measurements []RolloutMeasurement
}

// A RolloutMeasurement is the latest measurement of one metric.
type RolloutMeasurement struct {
	Metric  string
	Verdict string
	// Value is the measured number (a measurement without one, NoData,
	// has no series).
	Value float64
}

// RolloutOf is the series of a CanaryRoute's status after a run.
func RolloutOf(uid, namespace, name string, steps int, s *xr.RolloutStatus) *Rollout {
	if uid == "" || s == nil {
		return nil
	}
	r := &Rollout{
		UID: uid, Namespace: namespace, Name: name, Phase: s.Phase, Step: -1, Steps: steps,
		PrimaryWeight: s.PrimaryWeight, CanaryWeight: s.CanaryWeight,
	}
	if s.Step != nil {
		r.Step = *s.Step
	}
	// The status is read back from the cluster, where anyone who may write
	// it can forge it: a metric named twice keeps its first entry (two
	// series alike would fail the whole scrape), and label values are
	// made valid UTF-8 (the exposition refuses others).
	r.Phase = xr.Phase(labelValue(string(s.Phase)))
	seen := map[string]bool{}
	for _, m := range s.Metrics {
		name := labelValue(m.Name)
		first := !seen[name]
		seen[name] = true
		if len(m.Measurements) == 0 || !first {
			continue
		}
		last := m.Measurements[len(m.Measurements)-1]
		v, err := strconv.ParseFloat(last.Value, 64)
		if err != nil {
			continue
		}
		r.Measurements = append(r.Measurements, RolloutMeasurement{Metric: name, Verdict: labelValue(last.Verdict), Value: v})
	}
	return r
}

// labelValue is a status string as a label value: valid UTF-8, at most
// maxLabelValue bytes.
func labelValue(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if len(v) > maxLabelValue {
		v = strings.ToValidUTF8(v[:maxLabelValue], "")
	}
	return v
}

// maxLabelValue bounds a label value taken from a status: the XRD bounds
// names and phases far below it, a forged status may not.
const maxLabelValue = 128

// rollouts holds the newest series of each CanaryRoute the function
// answered, bounded by number and by age, and exports them at each scrape.
// Entries are keyed by namespace and name, the series' labels: a
// CanaryRoute deleted and created again under its name (a new UID) takes
// its predecessor's place, since two entries of one name would export the
// same series twice and fail the whole scrape.
// The series are a view for people (a dashboard, an alert on a phase);
// the status is the record, and nothing reads these back.
type rollouts struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]rolloutEntry

	phase, step, steps, weight, measurement *prometheus.Desc
}

type rolloutEntry struct {
	r    Rollout
	seen time.Time
}

var rolloutLabels = []string{"namespace", "name"}

func newRollouts(bound int, now func() time.Time) *rollouts {
	return &rollouts{
		max: bound, now: now, entries: map[string]rolloutEntry{},
		phase: prometheus.NewDesc("function_canary_route_rollout_phase",
			"Where each CanaryRoute's rollout stands: 1 for its status.rollout.phase, from the newest run of it this replica answered (series last RolloutTTL, 10 minutes, after it).",
			append(rolloutLabels, "phase"), nil),
		step: prometheus.NewDesc("function_canary_route_rollout_step",
			"Each CanaryRoute's status.rollout.step (0 is the first of traffic.steps; -1 without steps).",
			rolloutLabels, nil),
		steps: prometheus.NewDesc("function_canary_route_rollout_steps",
			"How many traffic.steps each CanaryRoute's rollout has.",
			rolloutLabels, nil),
		weight: prometheus.NewDesc("function_canary_route_rollout_weight_percent",
			"The weight each CanaryRoute's route gives each side, in percent, by side (primary, canary).",
			append(rolloutLabels, "side"), nil),
		measurement: prometheus.NewDesc("function_canary_route_rollout_measurement",
			"The latest measurement of each of a CanaryRoute's traffic.metrics, by metric and verdict (Passed, Failed); a measurement without a number (NoData) has no series.",
			append(rolloutLabels, "metric", "verdict"), nil),
	}
}

// set records a CanaryRoute's series. At the bound, the entry seen longest
// ago gives way: the bound is the memory's (--remember-entries), so a
// busy function never keeps more series than CanaryRoutes it remembers.
func (c *rollouts) set(r *Rollout) {
	if r == nil || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	key := r.Namespace + "/" + r.Name
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		oldest, at := "", now
		for k, e := range c.entries {
			if !e.seen.After(at) {
				oldest, at = k, e.seen
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[key] = rolloutEntry{r: *r, seen: now}
}

// Describe implements prometheus.Collector.
func (c *rollouts) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.phase, c.step, c.steps, c.weight, c.measurement} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the series of every CanaryRoute
// seen within RolloutTTL; older ones are dropped.
func (c *rollouts) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	// A series that cannot be made (RolloutOf makes its labels valid) is
	// left out rather than failing the scrape of every other series.
	send := func(d *prometheus.Desc, v float64, labels ...string) {
		if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- m
		}
	}
	for k, e := range c.entries {
		if now.Sub(e.seen) > RolloutTTL {
			delete(c.entries, k)
			continue
		}
		r := e.r
		send(c.phase, 1, r.Namespace, r.Name, string(r.Phase))
		send(c.step, float64(r.Step), r.Namespace, r.Name)
		send(c.steps, float64(r.Steps), r.Namespace, r.Name)
		send(c.weight, r.PrimaryWeight.Float(), r.Namespace, r.Name, "primary")
		send(c.weight, r.CanaryWeight.Float(), r.Namespace, r.Name, "canary")
		for _, m := range r.Measurements {
			send(c.measurement, m.Value, r.Namespace, r.Name, m.Metric, m.Verdict)
		}
	}
}
