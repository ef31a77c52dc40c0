package telemetry

import (
	"strconv"
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
	for _, m := range s.Metrics {
		if len(m.Measurements) == 0 {
			continue
		}
		last := m.Measurements[len(m.Measurements)-1]
		v, err := strconv.ParseFloat(last.Value, 64)
		if err != nil {
			continue
		}
		r.Measurements = append(r.Measurements, RolloutMeasurement{Metric: m.Name, Verdict: last.Verdict, Value: v})
	}
	return r
}

// rollouts holds the newest series of each CanaryRoute the function
// answered, bounded by number and by age, and exports them at each scrape.
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
	if _, ok := c.entries[r.UID]; !ok && len(c.entries) >= c.max {
		oldest, at := "", now
		for uid, e := range c.entries {
			if !e.seen.After(at) {
				oldest, at = uid, e.seen
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[r.UID] = rolloutEntry{r: *r, seen: now}
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
	for uid, e := range c.entries {
		if now.Sub(e.seen) > RolloutTTL {
			delete(c.entries, uid)
			continue
		}
		r := e.r
		ch <- prometheus.MustNewConstMetric(c.phase, prometheus.GaugeValue, 1, r.Namespace, r.Name, string(r.Phase))
		ch <- prometheus.MustNewConstMetric(c.step, prometheus.GaugeValue, float64(r.Step), r.Namespace, r.Name)
		ch <- prometheus.MustNewConstMetric(c.steps, prometheus.GaugeValue, float64(r.Steps), r.Namespace, r.Name)
		ch <- prometheus.MustNewConstMetric(c.weight, prometheus.GaugeValue, r.PrimaryWeight.Float(), r.Namespace, r.Name, "primary")
		ch <- prometheus.MustNewConstMetric(c.weight, prometheus.GaugeValue, r.CanaryWeight.Float(), r.Namespace, r.Name, "canary")
		for _, m := range r.Measurements {
			ch <- prometheus.MustNewConstMetric(c.measurement, prometheus.GaugeValue, m.Value, r.Namespace, r.Name, m.Metric, m.Verdict)
		}
	}
}
