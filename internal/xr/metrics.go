package xr

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of the metrics, as the XRDs write them.
const (
	minMetricInterval = 5 * time.Second
	maxMetricInterval = time.Hour
	maxBake           = 24 * time.Hour
	maxFailureLimit   = 10
)

// parseMetrics reads traffic.metrics and traffic.bake. The query's PromQL,
// its placeholders and the provider are checked where the function's Input
// and the PromQL parser are known (package compose).
func parseMetrics(path *field.Path, t Traffic, raw *rawTraffic) (Traffic, field.ErrorList) {
	var errs field.ErrorList
	if raw.Bake != nil {
		p := path.Child("bake")
		d, durErrs := duration(p, *raw.Bake)
		errs = append(errs, durErrs...)
		switch {
		case len(durErrs) > 0:
		case d > maxBake:
			errs = append(errs, field.Invalid(p, *raw.Bake, "must be at most 24h"))
		case len(t.Steps) == 0:
			errs = append(errs, field.Forbidden(p, "bake keeps measuring after the last step: it needs traffic.steps"))
		default:
			t.Bake = d.Truncate(time.Second)
		}
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
		m := Metric{
			Name: rm.Name, Provider: rm.Provider, Query: rm.Query, SuccessWhen: rm.SuccessWhen,
			Interval: DefaultMetricInterval, FailureLimit: 1, NoData: NoDataHold, Steps: rm.Steps, DryRun: rm.DryRun,
		}
		for _, msg := range validation.IsDNS1123Label(rm.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), rm.Name, "a metric name "+msg))
		}
		if len(rm.Name) > maxMetricName {
			errs = append(errs, field.TooLong(p.Child("name"), rm.Name, maxMetricName))
		}
		if seen[rm.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), rm.Name))
		}
		seen[rm.Name] = true
		for _, msg := range validation.IsDNS1123Label(rm.Provider) {
			errs = append(errs, field.Invalid(p.Child("provider"), rm.Provider, "a provider name "+msg))
		}
		if rm.Query == "" {
			errs = append(errs, field.Required(p.Child("query"), "a metric measures the answer of a PromQL query"))
		}
		if rm.SuccessWhen == "" {
			errs = append(errs, field.Required(p.Child("successWhen"), "a measurement passes when this expression over result (and baseline) is true, such as result <= 0.01"))
		}
		if rm.Interval != nil {
			d, durErrs := duration(p.Child("interval"), *rm.Interval)
			errs = append(errs, durErrs...)
			if len(durErrs) == 0 && (d < minMetricInterval || d > maxMetricInterval) {
				errs = append(errs, field.Invalid(p.Child("interval"), *rm.Interval, "must be between 5s and 1h"))
			}
			m.Interval = d.Truncate(time.Second)
		}
		if c := rm.CompareTo; c != nil {
			if *c != "primary" {
				errs = append(errs, field.NotSupported(p.Child("compareTo"), *c, []string{"primary"}))
			}
			m.CompareToPrimary = true
		}
		if f := rm.FailureLimit; f != nil {
			if *f < 1 || *f > maxFailureLimit {
				errs = append(errs, field.Invalid(p.Child("failureLimit"), *f, fmt.Sprintf("must be between 1 and %d", maxFailureLimit)))
			}
			m.FailureLimit = *f
		}
		if n := rm.NoData; n != nil {
			switch NoData(*n) {
			case NoDataHold, NoDataPass, NoDataFail:
				m.NoData = NoData(*n)
			default:
				errs = append(errs, field.NotSupported(p.Child("noData"), *n, []string{string(NoDataHold), string(NoDataPass), string(NoDataFail)}))
			}
		}
		if rm.Steps != nil && len(rm.Steps) == 0 {
			errs = append(errs, field.Required(p.Child("steps"), "a metric counts in at least one step: name them, or leave steps out for every step with a weight above 0"))
		}
		for j, s := range rm.Steps {
			switch {
			case slices.Contains(rm.Steps[:j], s):
				errs = append(errs, field.Duplicate(p.Child("steps").Index(j), s))
			case s < 0 || int(s) >= len(t.Steps):
				errs = append(errs, field.Invalid(p.Child("steps").Index(j), s, fmt.Sprintf("must be the index of one of traffic.steps (0 to %d)", len(t.Steps)-1)))
			case m.CompareToPrimary && t.Steps[s].Weight >= percentMax:
				errs = append(errs, field.Invalid(p.Child("steps").Index(j), s,
					fmt.Sprintf("step %d sends the primary no traffic: compareTo: primary has no baseline there; judge it with a metric of its own without compareTo", s)))
			}
		}
		t.Metrics = append(t.Metrics, m)
	}
	return t, errs
}
