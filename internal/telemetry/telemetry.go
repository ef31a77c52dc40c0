// Package telemetry holds the function's own Prometheus metrics, beside the
// gRPC server's that function-sdk-go serves on the same registry: runs by
// how they ended, the rollout transitions and failures they made, and how
// long they took. A run hands its outcome over; nothing is read back from
// its response.
package telemetry

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/release"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
)

// Results of a run, as the runs metric labels them.
const (
	ResultComposed     = "composed"
	ResultFatal        = "fatal"
	ResultAbortRescued = "abort_rescued"
	ResultPanic        = "panic"
	// ResultStale: a stale read, answered with the newest decision the
	// function holds for its composite (see internal/freshness).
	ResultStale = "stale"
)

// An Outcome is how a run ended.
type Outcome struct {
	// Result is one of the Result constants.
	Result string
	// Applied reports whether Crossplane applies the run's response: it
	// calls again, and applies only the last response, until the
	// requirements settle. Transitions count on that run only.
	Applied bool
	// Transitions are the reasons of the rollout events the run emits.
	Transitions []string
	// FailureReason is status.rollout.reason of a run that fails the
	// rollout (a RolloutFailed transition).
	FailureReason string
	// Stale is what was stale in the read the run answered (the label of
	// a freshness.Verdict); "" for a fresh read.
	Stale string
	// Rollout is where the CanaryRoute's rollout stands after a run that
	// decided it; nil keeps the series as they were (a stale read's
	// answer is the decision they already show, a Fatal keeps the route).
	Rollout *Rollout
}

// transitionReasons are the reasons of the transitions counted: the
// rollout's and the release's.
var transitionReasons = slices.Concat(rollout.EventReasons, release.EventReasons)

// Runs are the metrics of the function's runs. A nil *Runs counts nothing.
type Runs struct {
	runs        *prometheus.CounterVec
	transitions *prometheus.CounterVec
	failures    *prometheus.CounterVec
	staleReads  *prometheus.CounterVec
	duration    prometheus.Histogram
	// queries and queryDuration count and time the queries of
	// traffic.metrics.
	queries       *prometheus.CounterVec
	queryDuration *prometheus.HistogramVec
	// hookCalls and hookDuration count and time the calls of
	// traffic.hooks' webhooks.
	hookCalls    *prometheus.CounterVec
	hookDuration *prometheus.HistogramVec
	// rollouts are the series of each CanaryRoute's rollout.
	rollouts *rollouts
	// now reads the clock for durations: main.go's wiring gives it
	// time.Now, tests a clock of their own. Never the function's own
	// clock, which --now may fix.
	now func() time.Time
}

// NewRuns registers the metrics of the function's runs, with the series of
// at most rollouts CanaryRoutes' rollouts (0 exports none).
func NewRuns(reg prometheus.Registerer, now func() time.Time, rollouts int) (*Runs, error) {
	m := &Runs{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_runs_total",
			Help: "Runs of the function, by result: composed, fatal (bad input; the cluster keeps its last good route), abort_rescued (an emergency abort of a CanaryRoute that cannot be composed) or panic (a bug).",
		}, []string{"result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_rollout_transitions_total",
			Help: "Rollout transitions (step advanced, succeeded, failed, aborted, ...), by the reason of their event, counted on the run whose response Crossplane applies.",
		}, []string{"reason"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_rollout_failures_total",
			Help: "Rollouts that failed, by the reason status.rollout gives (GateFailed, AnalysisFailed, MetricFailed, ProgressDeadlineExceeded, NotAllowedByPolicy, HookFailed), counted with their RolloutFailed transition.",
		}, []string{"reason"}),
		staleReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_stale_reads_total",
			Help: "Reads of a CanaryRoute older than a decision the function already answered for it, counted once a reconcile, by what was old: spec (an older spec) and status (an older status of the same spec), both answered with the newest decision the function holds; status_under_newer_spec (a newer spec over an older status), decided on the newest status it holds.",
		}, []string{"read"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "function_canary_route_run_duration_seconds",
			Help:    "How long a run takes in the function, from request to response.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_metric_queries_total",
			Help: "Queries of the CanaryRoutes' metrics, by provider and result: ok (one number), no_data (a valid answer without one number), error (no valid answer: unreachable, timed out, an error, too large).",
		}, []string{"provider", "result"}),
		queryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "function_canary_route_metric_query_duration_seconds",
			Help:    "How long a query of a CanaryRoute's metric takes, by provider.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"provider"}),
		hookCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "function_canary_route_hook_calls_total",
			Help: "Calls of the CanaryRoutes' hooks' webhooks, by hook type and result: succeeded (2xx), refused (another status), error (no answer: unreachable, timed out, redirected, too large, no URL).",
		}, []string{"type", "result"}),
		hookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "function_canary_route_hook_call_duration_seconds",
			Help:    "How long a call of a hook's webhook takes, by hook type.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"type"}),
		rollouts: newRollouts(rollouts, now),
		now:      now,
	}
	for _, c := range []prometheus.Collector{m.runs, m.transitions, m.failures, m.staleReads, m.duration, m.queries, m.queryDuration, m.hookCalls, m.hookDuration, m.rollouts} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series from the start, so that rate() and alerts see a 0
	// before the first of each.
	for _, r := range []string{ResultComposed, ResultFatal, ResultAbortRescued, ResultPanic, ResultStale} {
		m.runs.WithLabelValues(r)
	}
	for _, r := range StaleReads {
		m.staleReads.WithLabelValues(r)
	}
	for _, r := range transitionReasons {
		m.transitions.WithLabelValues(r)
	}
	for _, r := range rollout.FailureReasons {
		m.failures.WithLabelValues(r)
	}
	for _, t := range hooks.Types {
		for _, r := range []string{HookSucceeded, HookRefused, HookError} {
			m.hookCalls.WithLabelValues(string(t), r)
		}
	}
	return m, nil
}

// StaleReads are the labels of the stale reads counted (see
// freshness.Verdict).
var StaleReads = []string{freshness.StaleSpec.String(), freshness.StaleStatus.String(), freshness.StatusBehind.String()}

// RegisterMemory registers gauges of what the function remembers of the
// composites it answered (see freshness.Memory): len reports the
// composites and the bytes counted for them.
func RegisterMemory(reg prometheus.Registerer, length func() (int, uint64)) error {
	entries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "function_canary_route_decisions_remembered",
		Help: "CanaryRoutes whose newest decision the function remembers, to answer stale reads with it.",
	}, func() float64 { n, _ := length(); return float64(n) })
	bytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "function_canary_route_decisions_remembered_bytes",
		Help: "The encoded size of the decisions the function remembers (bounded; the least recently used CanaryRoute is forgotten first).",
	}, func() float64 { _, b := length(); return float64(b) })
	for _, c := range []prometheus.Collector{entries, bytes} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Start is when a run starts; zero without metrics.
func (m *Runs) Start() time.Time {
	if m == nil {
		return time.Time{}
	}
	return m.now()
}

// Record counts a run that started at start (see Start).
func (m *Runs) Record(o Outcome, start time.Time) {
	if m == nil {
		return
	}
	m.duration.Observe(m.now().Sub(start).Seconds())
	m.runs.WithLabelValues(o.Result).Inc()
	if !o.Applied {
		return
	}
	if o.Stale != "" {
		m.staleReads.WithLabelValues(o.Stale).Inc()
	}
	m.rollouts.set(o.Rollout)
	for _, r := range o.Transitions {
		if !slices.Contains(transitionReasons, r) {
			continue
		}
		m.transitions.WithLabelValues(r).Inc()
		if r == rollout.EventFailed && slices.Contains(rollout.FailureReasons, o.FailureReason) {
			m.failures.WithLabelValues(o.FailureReason).Inc()
		}
	}
}

// Query counts a query of a metric's provider, which took took and ended
// with result (ok, no_data or error).
func (m *Runs) Query(provider, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.queries.WithLabelValues(provider, result).Inc()
	m.queryDuration.WithLabelValues(provider).Observe(took.Seconds())
}

// Results of a hook's call, as HookCall counts them.
const (
	HookSucceeded = "succeeded"
	HookRefused   = "refused"
	HookError     = "error"
)

// HookCall counts a call of a hook's webhook of a type, which took took
// and ended with result (HookSucceeded, HookRefused or HookError).
func (m *Runs) HookCall(hookType, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.hookCalls.WithLabelValues(hookType, result).Inc()
	m.hookDuration.WithLabelValues(hookType).Observe(took.Seconds())
}
