package live

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
)

// The live proof of metric analysis (docs/metrics.md): the function judges
// each step by the canary's own requests through the real gateway, as a
// real Prometheus scraped them, while a load generator sends 25 requests a
// second. Each test has its own namespace, hostname, Composition and
// provider name; they share the gateway and Prometheus, and run side by
// side.

// TestMetricsFailingCanaryFails: a canary answering 500 to every request
// fails its error-ratio metric twice in a row (failureLimit 2) at step 0,
// which fails the rollout (MetricFailed, an event naming the metric), and
// from then on the canary gets no request.
func TestMetricsFailingCanaryFails(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	r := startMetricsRollout(t, "metfail", `[{name: error-rate, interval: 5s, successWhen: "result <= 0.05", failureLimit: 2}]`,
		nil, []backends.Option{backends.WithStatus(http.StatusInternalServerError)})
	ns, steps, rec, start, can, p := r.ns, r.steps, r.rec, r.start, r.canary, r.p

	await(t, metricWait, "the rollout Failed at 0% (MetricFailed)", rolloutEnded(ns, "web", "Failed", "MetricFailed", 0))
	took := time.Since(start)
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}
	ms := measurements(u)["error-rate"]
	t.Logf("error-rate measurements: %v", ms)
	// The last failureLimit measurements failed, on the canary's ratio of
	// 500s, 1; nothing passed, so the rollout never left step 0.
	run := 0
	for i := len(ms) - 1; i >= 0 && ms[i].Verdict == "Failed"; i-- {
		run++
		if ms[i].Value != "1" {
			t.Errorf("failed measurement %s: want the value 1, every canary answer a 500", ms[i])
		}
	}
	if run < 2 {
		t.Errorf("the rollout failed after %d failed measurements in a row, want failureLimit (2): %v", run, ms)
	}
	for _, m := range ms {
		if m.Step != 0 || m.Verdict == "Passed" {
			t.Errorf("measurement %s: want none passed, all at step 0", m)
		}
	}
	checkSpacing(t, steps, "error-rate", ms)

	await(t, settle, "the event RolloutFailed naming the metric, its value and its expression", func(ctx context.Context) (bool, string) {
		msgs, sent, err := eventsOf(ctx, ns, "web", "RolloutFailed")
		if err != nil {
			return false, err.Error()
		}
		ok := sent == 1 && len(msgs) == 1 && strings.Contains(msgs[0], "metric error-rate failed") &&
			strings.Contains(msgs[0], "failureLimit 2") && strings.Contains(msgs[0], "result 1 does not meet successWhen result <= 0.05")
		return ok, fmt.Sprintf("%d RolloutFailed events %q", sent, msgs)
	})

	awaitAnswers(t, "failed", p, only(primary))
	before := can.Requests()
	mustAnswer(t, "failed, the canary gets no request", p, 3*batch, primary)
	if n := can.Requests() - before; n != 0 {
		t.Errorf("the canary backend answered %d requests after the rollout failed, want none (the load generator's included)", n)
	}
	if diff := cmp.Diff([]int64{20, 0}, weightsOf(rec.history())); diff != "" {
		t.Errorf("the route's canary weights, in order (held at 20%%, then 0%%): -want, +got:\n%s", diff)
	}
	checkQueries(t, ns, len(ms))
	t.Logf("the rollout failed %s after the XR was created, on %d measurements: %v", took.Round(100*time.Millisecond), len(ms), ms)
}

// TestMetricsHealthyCanaryPromoted: a canary answering 200 passes its
// error-ratio metric in each of its three steps, one passing measurement
// taken in each an interval or more after it started, and is promoted to
// 100%.
func TestMetricsHealthyCanaryPromoted(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	r := startMetricsRollout(t, "metok", `[{name: error-rate, interval: 5s, successWhen: "result <= 0.05", failureLimit: 2}]`, nil, nil)
	ns, steps, rec, start, p := r.ns, r.steps, r.rec, r.start, r.p

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	took := time.Since(start)
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}
	ms := measurements(u)["error-rate"]
	t.Logf("error-rate measurements: %v", ms)
	byStep := verdicts(ms)
	for step := range int32(3) {
		if byStep[step]["Passed"] == 0 {
			t.Errorf("step %d: no passing measurement, want one in each step with a weight above 0: %v", step, ms)
		}
	}
	for _, m := range ms {
		if m.Verdict == "Failed" || (m.Verdict == "Passed" && m.Value != "0") {
			t.Errorf("measurement %s: want the value 0 when it has one, no canary answer a 5xx", m)
		}
	}
	checkSpacing(t, steps, "error-rate", ms)
	if diff := cmp.Diff([]int64{20, 50, 100}, weightsOf(rec.history())); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s", diff)
	}
	awaitAnswers(t, "succeeded", p, only(canary))
	checkQueries(t, ns, len(ms))
	checkDashboardSeries(t, ns)
	t.Logf("the rollout succeeded %s after the XR was created, on %d measurements: %v", took.Round(100*time.Millisecond), len(ms), ms)
}

// TestMetricsDryRunOnlyRecords: a canary answering 500, judged by a dry
// run metric, is measured, recorded and announced (MetricFailing, once: the
// verdict never changes), and promoted to 100% as the steps' pauses say.
func TestMetricsDryRunOnlyRecords(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	r := startMetricsRollout(t, "metdry", `[{name: error-rate, interval: 5s, successWhen: "result <= 0.05", dryRun: true}]`,
		nil, []backends.Option{backends.WithStatus(http.StatusInternalServerError)})
	ns, steps, start, p := r.ns, r.steps, r.start, r.p

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	took := time.Since(start)
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}
	ms := measurements(u)["error-rate"]
	t.Logf("error-rate measurements: %v", ms)
	// Steps 0 and 1 last their 10 s pauses: a measurement is due 5 s into
	// each. The last step has no pause, and a dry run holds nothing: the
	// rollout succeeds on entering it. Step 0's first window may hold no
	// canary request yet (no data); step 1's holds many, all 500s.
	byStep := verdicts(ms)
	if len(byStep[0]) == 0 || byStep[1]["Failed"] == 0 {
		t.Errorf("want a measurement at step 0 and a failed one at step 1, the canary's 500s measured: %v", ms)
	}
	for _, m := range ms {
		if m.Verdict == "Passed" || (m.Verdict == "Failed" && m.Value != "1") {
			t.Errorf("measurement %s: want the value 1 when it has one, every canary answer a 500", m)
		}
	}
	checkSpacing(t, steps, "error-rate", ms)

	// Each verdict change is said once; a NoData first (a window the
	// gateway had not served yet) would say MetricNoData before.
	await(t, settle, "the event MetricFailing, once, saying it is a dry run", func(ctx context.Context) (bool, string) {
		msgs, sent, err := eventsOf(ctx, ns, "web", "MetricFailing")
		if err != nil {
			return false, err.Error()
		}
		return sent == 1 && len(msgs) == 1 && strings.Contains(msgs[0], "dry run"), fmt.Sprintf("%d MetricFailing events %q", sent, msgs)
	})
	if msgs, sent, err := eventsOf(t.Context(), ns, "web", "RolloutFailed"); err != nil || sent != 0 {
		t.Errorf("RolloutFailed events: %d %q (%v), want none", sent, msgs, err)
	}
	awaitAnswers(t, "succeeded", p, only(canary))
	checkQueries(t, ns, len(ms))
	t.Logf("the rollout succeeded %s after the XR was created, a dry run recording %d measurements: %v", took.Round(100*time.Millisecond), len(ms), ms)
}

// TestMetricsCompareToPrimary: both sides fail one request in ten. Judged
// against the primary (result <= baseline * 1.5), the canary passes steps
// 0 and 1 and is promoted; a dry run metric with an absolute threshold
// (result <= 0.05), measured at the same times, records that it would have
// failed. One in ten rather than the rarer errors of production: at 25
// requests a second, every 5 s window of step 1 holds about 60 requests of
// each side, 6 of them 500s, so both ratios are about 0.1. The first window
// of step 0 may hold fewer than ten canary requests, none a 500 (the route
// is served a moment after the step starts): step 0 is judged, but its
// values are not checked.
func TestMetricsCompareToPrimary(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	everyTenth := []backends.Option{backends.WithErrorsEvery(10)}
	r := startMetricsRollout(t, "metcmp", `
- {name: error-rate, interval: 5s, successWhen: "result <= baseline * 1.5", compareTo: primary, failureLimit: 3, steps: [0, 1]}
- {name: error-rate-absolute, interval: 5s, successWhen: "result <= 0.05", dryRun: true, steps: [0, 1]}`, everyTenth, everyTenth)
	ns, steps, start := r.ns, r.steps, r.start

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	took := time.Since(start)
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}
	all := measurements(u)
	relative, absolute := all["error-rate"], all["error-rate-absolute"]
	t.Logf("error-rate measurements: %v", relative)
	t.Logf("error-rate-absolute measurements: %v", absolute)
	byStep := verdicts(relative)
	for step := range int32(2) {
		if byStep[step]["Passed"] == 0 {
			t.Errorf("step %d: no passing measurement of error-rate, want one in each of its steps: %v", step, relative)
		}
	}
	for _, m := range relative {
		if m.Verdict != "NoData" && m.Baseline == "" {
			t.Errorf("measurement %s: want the primary's baseline beside the canary's value", m)
		}
	}
	// At step 1, each pass against the primary is a failure of the
	// absolute threshold, measured at the same time on the same value.
	failedAt := map[string]string{}
	for _, m := range absolute {
		if m.Verdict == "Failed" {
			failedAt[m.Time.UTC().Format(time.RFC3339)] = m.Value
		}
	}
	passed := 0
	for _, m := range relative {
		if m.Step != 1 || m.Verdict != "Passed" {
			continue
		}
		passed++
		if v, err := strconv.ParseFloat(m.Value, 64); err != nil || v <= 0.05 {
			t.Errorf("measurement %s: want the canary's ratio above 0.05 (about 0.1)", m)
		}
		if got, ok := failedAt[m.Time.UTC().Format(time.RFC3339)]; !ok || got != m.Value {
			t.Errorf("measurement %s passed against the primary: want error-rate-absolute failed at the same time on the same value, got %v", m, absolute)
		}
	}
	if passed == 0 {
		t.Errorf("no passing measurement of error-rate at step 1: %v", relative)
	}
	checkSpacing(t, steps, "error-rate", relative)
	checkSpacing(t, steps, "error-rate-absolute", absolute)
	checkQueries(t, ns, 2*len(relative)+len(absolute))
	t.Logf("the rollout succeeded %s after the XR was created", took.Round(100*time.Millisecond))
}

// TestMetricsCompareToPrimaryAtFullWeight: a metric compared to the
// primary, with its default steps. At the last step (100%) the primary gets
// no request, so its ratio is 0/0, NaN: the metric does not count there,
// and the rollout succeeds rather than holding until its deadline.
func TestMetricsCompareToPrimaryAtFullWeight(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	everyTenth := []backends.Option{backends.WithErrorsEvery(10)}
	r := startMetricsRollout(t, "metfull", `
- {name: error-rate, interval: 5s, successWhen: "result <= 0.2 || result <= baseline * 1.5", compareTo: primary, failureLimit: 3}`, everyTenth, everyTenth)
	ns := r.ns

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
}
