package observe

import (
	"context"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// maxValue is the most characters a measured number is written with, as
// the XRD admits it.
const maxValue = 32

// MetricsIn is what a run measures, and with what.
type MetricsIn struct {
	// Metrics are the metrics due (see rollout.Due).
	Metrics []xr.Metric
	// Providers are the Input's metric providers, by name.
	Providers map[string]policy.MetricProvider
	// Credentials are the pipeline step's credentials of a name, as
	// Crossplane hands them to the function.
	Credentials func(name string) (map[string][]byte, error)
	// Querier sends the queries; nil measures nothing (a preview).
	Querier promql.Querier
	// Program is the compiled successWhen of a metric's text.
	Program func(text string) *expr.Program
	Budget  *expr.Budget
	// Canary and Primary are what the placeholders stand for on each side,
	// but for the interval, which is each metric's.
	Canary, Primary promql.Values
	// Step is the step the measurements are taken at.
	Step int32
	Now  time.Time
	// Observe counts each query, for the function's own metrics; nil
	// counts nothing.
	Observe func(provider, outcome string, took time.Duration)
}

// Metrics measures the metrics, all their queries at once, and returns a
// measurement of each, by name. A preview (no Querier) measures nothing.
func Metrics(ctx context.Context, in MetricsIn) map[string]xr.Measurement {
	if in.Querier == nil || len(in.Metrics) == 0 {
		return nil
	}
	now := in.Now.Truncate(time.Second)
	out := make(map[string]xr.Measurement, len(in.Metrics))
	type sent struct {
		metric           xr.Metric
		canary, baseline int // indexes into reqs; -1 for none
	}
	var reqs []promql.Request
	var pending []sent
	for _, m := range in.Metrics {
		p, why := in.provider(m.Provider)
		if why != "" {
			out[m.Name] = noData(in.Step, now, why)
			continue
		}
		// The provider's kind expands the query (and a web provider's
		// URL) for the side, and takes the metric's interval as its
		// window where it has one (Datadog).
		s := sent{metric: m, canary: len(reqs), baseline: -1}
		canary := in.Canary
		canary.Interval = m.Interval
		reqs = append(reqs, p.Request(m.Query, canary))
		if m.CompareToPrimary {
			primary := in.Primary
			primary.Interval = m.Interval
			s.baseline = len(reqs)
			reqs = append(reqs, p.Request(m.Query, primary))
		}
		pending = append(pending, s)
	}
	results := promql.Measure(ctx, in.Querier, now, reqs, in.Observe)
	for _, s := range pending {
		out[s.metric.Name] = in.judge(ctx, s.metric, results[s.canary], s.baseline, results, now)
	}
	return out
}

// provider resolves a metric's provider, with its credentials, or says why
// it cannot.
func (in MetricsIn) provider(name string) (promql.Provider, string) {
	pp, ok := in.Providers[name]
	if !ok {
		// The spec's checks refuse a metric of a provider the Input does
		// not list: this only happens if the Input changed under a run.
		return promql.Provider{}, "provider " + fielderr.Quote(name) + " is not in the function Input's metricProviders"
	}
	p := pp.Provider
	if pp.Credentials == "" {
		return p, ""
	}
	if in.Credentials == nil {
		return p, "provider " + pp.Name + ": the pipeline step hands no credentials " + fielderr.Quote(pp.Credentials)
	}
	data, err := in.Credentials(pp.Credentials)
	if err != nil {
		return p, "provider " + pp.Name + ": " + fielderr.Cut(err.Error(), fielderr.MaxValue)
	}
	if p.Auth, err = p.AuthFrom(data); err != nil {
		return p, "provider " + pp.Name + ": credentials " + fielderr.Quote(pp.Credentials) + ": " + fielderr.Cut(err.Error(), fielderr.MaxValue)
	}
	return p, ""
}

// judge turns the answers of a metric into its measurement.
func (in MetricsIn) judge(ctx context.Context, m xr.Metric, canary promql.Result, baseline int, results []promql.Result, now time.Time) xr.Measurement {
	ms := xr.Measurement{Time: metav1Time(now), Step: in.Step}
	if canary.NoData != "" {
		return noData(in.Step, now, canary.NoData)
	}
	ms.Value = format(canary.Value)
	var base float64
	if baseline >= 0 {
		b := results[baseline]
		if b.NoData != "" {
			ms.Verdict, ms.Reason = xr.VerdictNoData, "baseline: "+b.NoData
			return ms
		}
		base = b.Value
		ms.Baseline = format(base)
	}
	prg := in.Program(m.SuccessWhen)
	if prg == nil {
		ms.Verdict, ms.Reason = xr.VerdictNoData, "successWhen is not compiled"
		return ms
	}
	ok, err := prg.EvalMetric(ctx, in.Budget, canary.Value, base)
	switch {
	case err != nil:
		ms.Verdict, ms.Reason = xr.VerdictNoData, "successWhen cannot be judged: "+fielderr.Cut(err.Error(), fielderr.MaxValue)
	case ok:
		ms.Verdict = xr.VerdictPassed
	default:
		ms.Verdict = xr.VerdictFailed
	}
	return ms
}

// noData is a measurement without a number.
func noData(step int32, now time.Time, why string) xr.Measurement {
	return xr.Measurement{Time: metav1Time(now), Step: step, Verdict: xr.VerdictNoData, Reason: why}
}

// format writes a number as short as it reads back exactly, within the
// XRD's limit.
func format(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if len(s) > maxValue {
		s = strconv.FormatFloat(v, 'g', 16, 64)
	}
	return s
}

func metav1Time(t time.Time) metav1.Time { return metav1.Time{Time: t} }
