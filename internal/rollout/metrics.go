package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Reasons of the metrics: a phase's, and the events of a metric whose
// verdict changed.
const (
	// ReasonMetricFailed: a metric failed failureLimit measurements in a
	// row.
	ReasonMetricFailed = "MetricFailed"
	// ReasonBaking: the last step passed, and its metrics are measured for
	// traffic.bake before the rollout Succeeds.
	ReasonBaking = "Baking"
	// EventMetricPassed: a metric's measurement passed, after none or
	// another verdict.
	EventMetricPassed = "MetricPassed"
	// EventMetricFailing: a metric's measurement failed, after none or
	// another verdict (a Warning); the rollout fails once failureLimit
	// measurements in a row have.
	EventMetricFailing = "MetricFailing"
	// EventMetricNoData: a metric's query gave no number, after none or
	// another verdict (a Warning).
	EventMetricNoData = "MetricNoData"
)

// Due are the metrics that this run measures: those that count in the
// current step of a rollout under way (or in the last step while it
// bakes), whose last measurement in this step is an interval old, and whose
// step started an interval ago, so that a measurement's window lies within
// its step. A run that restarts, pauses, aborts or has failed or succeeded
// measures nothing: a measurement is of the canary a step is testing.
// taken are measurements this reconcile already took (an earlier call of
// the same reconcile), which count as the last. A measurement dated after
// now, recorded or taken, schedules nothing (see takenBy).
func Due(in Input, taken map[string]xr.Measurement) []xr.Metric {
	prev := in.Previous
	if !in.Traffic.Progressive() || len(in.Traffic.Metrics) == 0 || in.Traffic.Abort || in.Traffic.Paused || in.CanaryRefused ||
		restartOf(in) != noRestart || prev.Phase != xr.PhaseProgressing || prev.StepStartedAt == nil {
		return nil
	}
	now := in.Now.Truncate(time.Second)
	step := *prev.Step
	if int(step) >= len(in.Traffic.Steps) {
		return nil
	}
	// Only a canary at its step's weight, which the gateway carries: one
	// waiting to enter its first step, or whose step was just found again
	// at another weight, would be measured on another weight's traffic.
	w := in.Traffic.Steps[step].Weight
	if !prev.CanaryWeight.Equal(w) {
		return nil
	}
	if ok, _ := routeOfStep(in, step, w); !ok && in.Traffic.RequireAcceptedRoute {
		return nil
	}
	var out []xr.Metric
	for _, m := range in.Traffic.Metrics {
		if !m.CountsIn(in.Traffic.Steps, step) {
			continue
		}
		if ms, ok := taken[m.Name]; ok && takenBy(ms, in.Now) {
			continue
		}
		if now.Before(nextDue(m, prev, step, in.Now)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// nextDue is when the next measurement of a metric is due at a step: an
// interval after the step started, and after its last measurement at that
// step taken by now. It may be before now: a measurement already due.
func nextDue(m xr.Metric, s *xr.RolloutStatus, step int32, now time.Time) time.Time {
	due := s.StepStartedAt.Add(m.Interval)
	for _, ms := range measurementsOf(s.Metrics, m.Name) {
		if ms.Step == step && !ms.Time.Time.Before(s.StepStartedAt.Time) && takenBy(ms, now) {
			due = latest(due, ms.Time.Add(m.Interval))
		}
	}
	return due
}

// takenBy reports whether a measurement was taken by now. One dated after
// the run's time (a status written by hand, or a replica whose clock runs
// ahead) counts for nothing: not for a verdict, not toward failureLimit,
// and not for when the next is due, which would put every later
// measurement of the step off until that date while the verdicts, ignoring
// it, wait for one.
func takenBy(ms xr.Measurement, now time.Time) bool { return !ms.Time.After(now) }

// dueText is when a measurement due at due is due, as a message says it:
// never a time already past, since one already due is due now.
func dueText(due, now time.Time) string {
	return latest(due, now).UTC().Format(time.RFC3339)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// measurementsOf are the recorded measurements of a metric, oldest first.
func measurementsOf(metrics []xr.MetricStatus, name string) []xr.Measurement {
	for _, m := range metrics {
		if m.Name == name {
			return m.Measurements
		}
	}
	return nil
}

// carriedMetrics are the measurements a status carries that still mean
// something: of the spec's metrics, in its order, none dated more than
// ClockSkew after now (written by hand; one less far ahead is another
// replica's, which a replica behind must not erase: it counts once its
// time comes), with a verdict the XRD admits, at most xr.MaxMeasurements
// each.
func carriedMetrics(in Input, metrics []xr.MetricStatus, step int32) []xr.MetricStatus {
	var out []xr.MetricStatus
	for _, m := range in.Traffic.Metrics {
		var kept []xr.Measurement
		for _, ms := range measurementsOf(metrics, m.Name) {
			if !beyondSkew(ms.Time.Time, in.Now) && ms.Step >= 0 && int(ms.Step) < len(in.Traffic.Steps) && validVerdict(ms.Verdict) {
				kept = append(kept, ms)
			}
		}
		if len(kept) > 0 {
			out = append(out, xr.MetricStatus{Name: m.Name, Measurements: trimmed(kept, step)})
		}
	}
	return out
}

// validVerdict reports whether a measurement's verdict is one the XRD
// admits: a status written by hand, or a context record of another step
// of the pipeline, may hold anything.
func validVerdict(v string) bool {
	return v == xr.VerdictPassed || v == xr.VerdictFailed || v == xr.VerdictNoData
}

// trimmed keeps the latest xr.MaxMeasurements measurements, and the newest
// pass at step among them: a step held long after its metrics passed (an
// approval, a gate) must not forget that they did.
func trimmed(list []xr.Measurement, step int32) []xr.Measurement {
	if len(list) <= xr.MaxMeasurements {
		return list
	}
	pass := -1
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Step == step && list[i].Verdict == xr.VerdictPassed {
			pass = i
			break
		}
	}
	cut := len(list) - xr.MaxMeasurements
	if pass < 0 || pass >= cut {
		return list[cut:]
	}
	return append([]xr.Measurement{list[pass]}, list[cut+1:]...)
}

// withMeasured adds this run's measurements to the status, each to its
// metric's, when they were taken at the current step of the attempt they
// were taken for: a run that restarts or relocates the rollout drops them.
// A measurement added replaces those dated after it (by a replica whose
// clock runs ahead, which measured about the same window): one window
// counts once toward failureLimit, and the list stays in time order.
func withMeasured(in Input, cur xr.RolloutStatus) xr.RolloutStatus {
	if len(in.Measured) == 0 || cur.Step == nil {
		return cur
	}
	var metrics []xr.MetricStatus
	for _, m := range in.Traffic.Metrics {
		old := measurementsOf(cur.Metrics, m.Name)
		list := slices.Clone(old)
		if ms, ok := in.Measured[m.Name]; ok && fresh(m, ms, old, cur, in.Now) {
			list = slices.DeleteFunc(list, func(x xr.Measurement) bool { return x.Time.After(ms.Time.Time) })
			list = append(list, ms)
		}
		if len(list) > 0 {
			metrics = append(metrics, xr.MetricStatus{Name: m.Name, Measurements: trimmed(list, *cur.Step)})
		}
	}
	cur.Metrics = metrics
	return cur
}

// fresh reports whether a measurement belongs to the current step, its
// window within the step (an interval after it started), taken by now, with
// a verdict the XRD admits, and is newer than the last one recorded taken
// by now (one dated after now counts for nothing). A run that sees its own
// decision again (the same measurement fed back) must not count it twice;
// a run that restarts its step (relocated to another weight) took it on
// the old weight's traffic.
func fresh(m xr.Metric, ms xr.Measurement, old []xr.Measurement, cur xr.RolloutStatus, now time.Time) bool {
	if ms.Step != *cur.Step || ms.Time.Time.Before(cur.StepStartedAt.Add(m.Interval)) || !takenBy(ms, now) || !validVerdict(ms.Verdict) ||
		len(ms.Value) > xr.MaxMeasurementValue || len(ms.Baseline) > xr.MaxMeasurementValue {
		// Not of this step, or not one the function took: a record
		// handed over by another step of the pipeline may hold anything.
		return false
	}
	for i := len(old) - 1; i >= 0; i-- {
		if takenBy(old[i], now) {
			return ms.Time.After(old[i].Time.Time)
		}
	}
	return true
}

// counts is what a measurement counts as under a metric's noData.
func counts(m xr.Metric, ms xr.Measurement) string {
	if ms.Verdict != xr.VerdictNoData {
		return ms.Verdict
	}
	switch m.NoData {
	case xr.NoDataPass:
		return xr.VerdictPassed
	case xr.NoDataFail:
		return xr.VerdictFailed
	default:
		return xr.VerdictNoData
	}
}

// failedMetric finds a metric that counts in the current step and failed
// its failureLimit of measurements in a row: the latest ones of the attempt,
// whatever the step they were taken at, by now. A dry run never fails.
func failedMetric(in Input, cur xr.RolloutStatus) (bool, string) {
	for _, m := range in.Traffic.Metrics {
		if m.DryRun || !m.CountsIn(in.Traffic.Steps, *cur.Step) {
			continue
		}
		list := measurementsOf(cur.Metrics, m.Name)
		// Failures in a row: only a pass starts the count over; no data
		// (noData: Hold) is neither, so a provider that flaps between
		// failures never hides them.
		run, last := 0, -1
		for i := len(list) - 1; i >= 0; i-- {
			if !takenBy(list[i], in.Now) {
				continue
			}
			v := counts(m, list[i])
			if v == xr.VerdictPassed {
				break
			}
			if v == xr.VerdictFailed {
				run++
				if last < 0 {
					last = i
				}
			}
		}
		if run >= int(m.FailureLimit) && last >= 0 {
			last := list[last]
			return true, fmt.Sprintf("metric %s failed %d measurements in a row (failureLimit %d), the last at %s: %s",
				quote(m.Name), run, m.FailureLimit, last.Time.UTC().Format(time.RFC3339), describeMeasurement(m, last))
		}
	}
	return false, ""
}

// heldMetric names the first metric of the current step without a
// passing measurement taken in this step, an interval after it started,
// and says when its next measurement is due.
func heldMetric(in Input, cur xr.RolloutStatus) (string, time.Time) {
	i := *cur.Step
	for _, m := range in.Traffic.Metrics {
		if m.DryRun || !m.CountsIn(in.Traffic.Steps, i) {
			continue
		}
		list := measurementsOf(cur.Metrics, m.Name)
		passed := slices.ContainsFunc(list, func(ms xr.Measurement) bool {
			return ms.Step == i && !ms.Time.Time.Before(cur.StepStartedAt.Add(m.Interval)) && takenBy(ms, in.Now) && counts(m, ms) == xr.VerdictPassed
		})
		if passed {
			continue
		}
		due := nextDue(m, &cur, i, in.Now)
		var last *xr.Measurement
		for j := len(list) - 1; j >= 0; j-- {
			if list[j].Step == i && takenBy(list[j], in.Now) {
				last = &list[j]
				break
			}
		}
		if last == nil {
			return fmt.Sprintf("metric %s: no measurement yet, the first is due at %s", quote(m.Name), dueText(due, in.Now)), due
		}
		return fmt.Sprintf("metric %s: no passing measurement yet, the last %s", quote(m.Name), describeMeasurement(m, *last)), due
	}
	return "", time.Time{}
}

// describeMeasurement says what a measurement found, for messages.
func describeMeasurement(m xr.Metric, ms xr.Measurement) string {
	switch ms.Verdict {
	case xr.VerdictNoData:
		if ms.Reason == "" {
			return "had no data"
		}
		return "had no data: " + quote(ms.Reason)
	case xr.VerdictPassed:
		return fmt.Sprintf("passed: result %s%s meets successWhen %s", quote(ms.Value), baselineNote(ms), quote(m.SuccessWhen))
	default:
		return fmt.Sprintf("failed: result %s%s does not meet successWhen %s", quote(ms.Value), baselineNote(ms), quote(m.SuccessWhen))
	}
}

func baselineNote(ms xr.Measurement) string {
	if ms.Baseline == "" {
		return ""
	}
	return ", baseline " + quote(ms.Baseline)
}

// metricEvents says, for each metric measured this run, its verdict when it
// differs from the metric's last one: once per change, never on every
// measurement.
func metricEvents(in Input, d Decision) []Event {
	var events []Event
	for _, m := range in.Traffic.Metrics {
		ms, ok := in.Measured[m.Name]
		if !ok || !slices.ContainsFunc(measurementsOf(d.Status.Metrics, m.Name), func(x xr.Measurement) bool { return x == ms }) {
			continue
		}
		// The verdict before is the last one taken by now: one dated
		// after now counts for nothing, here as everywhere.
		var before string
		if p := in.Previous; p != nil {
			list := measurementsOf(p.Metrics, m.Name)
			for i := len(list) - 1; i >= 0; i-- {
				if takenBy(list[i], in.Now) {
					before = list[i].Verdict
					break
				}
			}
		}
		if before == ms.Verdict {
			continue
		}
		dry := ""
		if m.DryRun {
			dry = " (dry run: it never holds or fails the rollout)"
		}
		msg := fmt.Sprintf("metric %s of revision %s at step %d %s%s", m.Name, in.Revision, ms.Step, describeMeasurement(m, ms), dry)
		switch ms.Verdict {
		case xr.VerdictPassed:
			events = append(events, Event{Reason: EventMetricPassed, Message: msg})
		case xr.VerdictFailed:
			events = append(events, Event{Reason: EventMetricFailing, Message: msg, Warning: true})
		default:
			events = append(events, Event{Reason: EventMetricNoData, Message: msg, Warning: true})
		}
	}
	return events
}

// metricRequeue is how long until the next measurement of a metric of the
// current step is due; MaxRequeue when none is.
func metricRequeue(in Input, cur xr.RolloutStatus) time.Duration {
	requeue := MaxRequeue
	for _, m := range in.Traffic.Metrics {
		if m.CountsIn(in.Traffic.Steps, *cur.Step) {
			requeue = min(requeue, clamp(nextDue(m, &cur, *cur.Step, in.Now).Sub(in.Now)))
		}
	}
	return requeue
}

// baking holds the last step, once everything else passed, for
// traffic.bake: its metrics are measured meanwhile. It reports false once
// the bake is over, or without one.
func baking(in Input, cur xr.RolloutStatus) (xr.RolloutStatus, hold, bool) {
	if in.Traffic.Bake <= 0 {
		return cur, hold{}, false
	}
	// A bake starts with its step: one dated before the step started was
	// another step's (steps were appended), or ran before a pause (paused
	// time never counts as observation time).
	// One beyond ClockSkew ahead was written by hand; one within it is
	// another replica's, kept as a step's start is.
	if cur.BakeStartedAt == nil || beyondSkew(cur.BakeStartedAt.Time, in.Now) || cur.BakeStartedAt.Before(cur.StepStartedAt) {
		cur.BakeStartedAt = &metav1.Time{Time: in.Now}
	}
	end := cur.BakeStartedAt.Add(in.Traffic.Bake)
	if in.Now.Before(end) {
		requeue := min(clamp(end.Sub(in.Now)), metricRequeue(in, cur))
		return cur, hold{why: "baking until " + end.UTC().Format(time.RFC3339) + "; measuring meanwhile: " + strings.Join(bakingMetrics(in, cur), ", "), requeue: requeue}, true
	}
	// The bake is over: it ends on a passing measurement of each metric,
	// taken in the bake, as a step does. A provider down for the whole
	// bake holds it, as no data holds a step.
	if why := unbaked(in, cur); why != "" {
		return cur, hold{why: "baked until " + end.UTC().Format(time.RFC3339) + "; " + why, requeue: metricRequeue(in, cur)}, true
	}
	return cur, hold{}, false
}

// unbaked names the first metric of the last step whose latest
// measurement in the bake does not count as a pass; "" when each has one.
func unbaked(in Input, cur xr.RolloutStatus) string {
	for _, m := range in.Traffic.Metrics {
		if m.DryRun || !m.CountsIn(in.Traffic.Steps, *cur.Step) {
			continue
		}
		var last *xr.Measurement
		for _, ms := range measurementsOf(cur.Metrics, m.Name) {
			if ms.Step == *cur.Step && !ms.Time.Before(cur.BakeStartedAt) && takenBy(ms, in.Now) {
				last = &ms
			}
		}
		switch {
		case last == nil:
			return fmt.Sprintf("metric %s: no measurement in the bake yet, the next is due at %s", quote(m.Name), dueText(nextDue(m, &cur, *cur.Step, in.Now), in.Now))
		case counts(m, *last) != xr.VerdictPassed:
			return fmt.Sprintf("metric %s: the last measurement of the bake %s", quote(m.Name), describeMeasurement(m, *last))
		}
	}
	return ""
}

// bakingMetrics names the metrics measured while the last step bakes.
func bakingMetrics(in Input, cur xr.RolloutStatus) []string {
	var names []string
	for _, m := range in.Traffic.Metrics {
		if m.CountsIn(in.Traffic.Steps, *cur.Step) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return []string{"no metrics"}
	}
	return names
}
