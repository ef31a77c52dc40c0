package xr

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// Bounds of the metrics, as the XRDs write them.
const (
	// minInterval and maxInterval bound a metric's and a hook's interval.
	minInterval     = 5 * time.Second
	maxInterval     = time.Hour
	maxBake         = 24 * time.Hour
	maxFailureLimit = 10
)

// parseMetrics reads traffic.metrics and traffic.bake. The query's PromQL,
// its placeholders and the provider are checked where the function's Input
// and the PromQL parser are known (package compose).
func parseMetrics(path *field.Path, t Traffic, raw *rawTraffic) (Traffic, field.ErrorList) {
	var errs field.ErrorList
	if raw.Bake != nil {
		var bakeErrs field.ErrorList
		t.Bake, bakeErrs = parseBake(path.Child("bake"), *raw.Bake, len(t.Steps))
		errs = append(errs, bakeErrs...)
	}
	if len(raw.Metrics) == 0 {
		return t, errs
	}
	if len(t.Steps) == 0 {
		errs = append(errs, field.Forbidden(path.Child("metrics"), "metrics judge the steps of a progressive rollout: they need traffic.steps"))
	}
	if len(raw.Metrics) > MaxMetrics {
		return t, append(errs, field.TooMany(path.Child("metrics"), len(raw.Metrics), MaxMetrics))
	}
	seen := map[string]bool{}
	for i, rm := range raw.Metrics {
		p := path.Child("metrics").Index(i)
		if seen[rm.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), rm.Name))
		}
		seen[rm.Name] = true
		m, metricErrs := parseMetric(p, rm, t.Steps)
		errs = append(errs, metricErrs...)
		t.Metrics = append(t.Metrics, m)
	}
	return t, errs
}

// parseBake reads traffic.bake.
func parseBake(p *field.Path, raw string, steps int) (time.Duration, field.ErrorList) {
	d, errs := duration(p, raw)
	switch {
	case len(errs) > 0:
		return 0, errs
	case d > maxBake:
		return 0, field.ErrorList{field.Invalid(p, raw, "must be at most 24h")}
	case steps == 0:
		return 0, field.ErrorList{field.Forbidden(p, "bake keeps measuring after the last step: it needs traffic.steps")}
	}
	return d.Truncate(time.Second), nil
}

// parseMetric reads one of traffic.metrics, with its defaults.
func parseMetric(p *field.Path, rm rawMetric, steps []Step) (Metric, field.ErrorList) {
	var errs field.ErrorList
	m := Metric{
		Name: rm.Name, Provider: rm.Provider, Query: rm.Query, SuccessWhen: rm.SuccessWhen,
		NoData: NoDataHold, Steps: rm.Steps, DryRun: rm.DryRun,
	}
	for _, msg := range validation.IsDNS1123Label(rm.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), rm.Name, "must be a DNS label: "+msg))
	}
	if len(rm.Name) > maxMetricName {
		errs = append(errs, field.TooLong(p.Child("name"), rm.Name, maxMetricName))
	}
	for _, msg := range validation.IsDNS1123Label(rm.Provider) {
		errs = append(errs, field.Invalid(p.Child("provider"), rm.Provider, "must name a provider, a DNS label: "+msg))
	}
	if rm.Query == "" {
		errs = append(errs, field.Required(p.Child("query"), "a metric measures the answer of a PromQL query"))
	}
	if rm.SuccessWhen == "" {
		errs = append(errs, field.Required(p.Child("successWhen"), "a measurement passes when this expression over result (and baseline) is true, such as result <= 0.01"))
	}
	var intervalErrs, limitErrs field.ErrorList
	m.Interval, intervalErrs = parseInterval(p.Child("interval"), rm.Interval, DefaultMetricInterval)
	errs = append(errs, intervalErrs...)
	if c := rm.CompareTo; c != nil {
		if *c != "primary" {
			errs = append(errs, field.NotSupported(p.Child("compareTo"), *c, []string{"primary"}))
		}
		m.CompareToPrimary = true
	}
	m.FailureLimit, limitErrs = parseFailureLimit(p.Child("failureLimit"), rm.FailureLimit)
	errs = append(errs, limitErrs...)
	if n := rm.NoData; n != nil {
		switch NoData(*n) {
		case NoDataHold, NoDataPass, NoDataFail:
			m.NoData = NoData(*n)
		default:
			errs = append(errs, field.NotSupported(p.Child("noData"), *n, []string{string(NoDataHold), string(NoDataPass), string(NoDataFail)}))
		}
	}
	return m, append(errs, metricSteps(p.Child("steps"), m, steps)...)
}

// parseInterval reads the interval of a metric or a hook: 5s to 1h, in
// whole seconds; def when none is written.
func parseInterval(p *field.Path, raw *string, def time.Duration) (time.Duration, field.ErrorList) {
	if raw == nil {
		return def, nil
	}
	d, errs := duration(p, *raw)
	if len(errs) == 0 && (d < minInterval || d > maxInterval) {
		errs = append(errs, field.Invalid(p, *raw, "must be between 5s and 1h"))
	}
	return d.Truncate(time.Second), errs
}

// parseFailureLimit reads the failureLimit of a metric or a hook: 1 to
// 10; 1 when none is written.
func parseFailureLimit(p *field.Path, raw *int32) (int32, field.ErrorList) {
	if raw == nil {
		return 1, nil
	}
	if *raw < 1 || *raw > maxFailureLimit {
		return *raw, field.ErrorList{field.Invalid(p, *raw, fmt.Sprintf("must be between 1 and %d", maxFailureLimit))}
	}
	return *raw, nil
}

// metricSteps checks the steps a metric names: a set of at least one
// index of traffic.steps, none where the primary gets no traffic for a
// metric compared with it.
func metricSteps(p *field.Path, m Metric, steps []Step) field.ErrorList {
	var errs field.ErrorList
	if m.Steps != nil && len(m.Steps) == 0 {
		errs = append(errs, field.Required(p, "a metric counts in at least one step: name them, or leave steps out for every step with a weight above 0"))
	}
	for j, s := range m.Steps {
		switch {
		case slices.Contains(m.Steps[:j], s):
			errs = append(errs, field.Duplicate(p.Index(j), s))
		case s < 0 || int(s) >= len(steps):
			errs = append(errs, field.Invalid(p.Index(j), s, fmt.Sprintf("must be the index of one of traffic.steps (0 to %d)", len(steps)-1)))
		case m.CompareToPrimary && steps[s].Weight.Equal(percent.Max):
			errs = append(errs, field.Invalid(p.Index(j), s,
				fmt.Sprintf("step %d sends the primary no traffic: compareTo: primary has no baseline there; judge it with a metric of its own without compareTo", s)))
		}
	}
	return errs
}
