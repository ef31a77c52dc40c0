package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
)

// Results of a run, as the runs metric labels them.
const (
	resultComposed     = "composed"
	resultFatal        = "fatal"
	resultAbortRescued = "abort_rescued"
	resultPanic        = "panic"
)

// runMetrics are the function's own Prometheus metrics, beside the gRPC
// server's that the SDK serves on the same registry.
type runMetrics struct {
	runs        *prometheus.CounterVec
	transitions *prometheus.CounterVec
	failures    *prometheus.CounterVec
	duration    prometheus.Histogram
	// now reads the clock for durations: main.go's wiring gives it
	// time.Now, tests a clock of their own.
	now func() time.Time
}

// newRunMetrics registers the function's metrics.
func newRunMetrics(reg prometheus.Registerer, now func() time.Time) (*runMetrics, error) {
	m := &runMetrics{
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
			Help: "Rollouts that failed, by the reason status.rollout gives (GateFailed, AnalysisFailed, ProgressDeadlineExceeded, NotAllowedByPolicy), counted with their RolloutFailed transition.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "function_canary_route_run_duration_seconds",
			Help:    "How long a run takes in the function, from request to response.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		now: now,
	}
	for _, c := range []prometheus.Collector{m.runs, m.transitions, m.failures, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series from the start, so that rate() and alerts see a 0
	// before the first of each.
	for _, r := range []string{resultComposed, resultFatal, resultAbortRescued, resultPanic} {
		m.runs.WithLabelValues(r)
	}
	for _, r := range rollout.EventReasons {
		m.transitions.WithLabelValues(r)
	}
	for _, r := range rollout.FailureReasons {
		m.failures.WithLabelValues(r)
	}
	return m, nil
}

// metered counts the runs of the function it wraps.
type metered struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	wrapped fnv1.FunctionRunnerServiceServer
	m       *runMetrics
}

// withMetrics wraps fn so that its runs are counted and timed; nil metrics
// count nothing.
func withMetrics(fn fnv1.FunctionRunnerServiceServer, m *runMetrics) fnv1.FunctionRunnerServiceServer {
	if m == nil {
		return fn
	}
	return &metered{wrapped: fn, m: m}
}

// RunFunction runs the wrapped function and records the run.
func (w *metered) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	start := w.m.now()
	rsp, err := w.wrapped.RunFunction(ctx, req)
	w.m.duration.Observe(w.m.now().Sub(start).Seconds())
	if err != nil {
		return rsp, err
	}
	w.m.runs.WithLabelValues(result(rsp)).Inc()
	// Crossplane calls again, and applies only the last response, until
	// the requirements settle: a transition counts on that run.
	if settled(req, rsp) {
		for _, r := range rsp.GetResults() {
			if slices.Contains(rollout.EventReasons, r.GetReason()) {
				w.m.transitions.WithLabelValues(r.GetReason()).Inc()
			}
			if r.GetReason() == rollout.EventFailed {
				if why := rolloutReason(rsp); slices.Contains(rollout.FailureReasons, why) {
					w.m.failures.WithLabelValues(why).Inc()
				}
			}
		}
	}
	return rsp, nil
}

// result says how a run ended, from its response.
func result(rsp *fnv1.RunFunctionResponse) string {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() != fnv1.Severity_SEVERITY_FATAL {
			continue
		}
		if strings.HasPrefix(r.GetMessage(), panicPrefix) {
			return resultPanic
		}
		return resultFatal
	}
	if rolloutReason(rsp) == rollout.ReasonAbortRescued {
		return resultAbortRescued
	}
	return resultComposed
}

// rolloutReason is status.rollout.reason as the response writes it.
func rolloutReason(rsp *fnv1.RunFunctionResponse) string {
	return rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().
		GetFields()["rollout"].GetStructValue().GetFields()["reason"].GetStringValue()
}

// panicPrefix starts the Fatal of a run that panicked.
var panicPrefix, _, _ = strings.Cut(errPanicFmt, "%")
