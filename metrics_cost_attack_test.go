package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// regexMetricsXR is a CanaryRoute the XRD admits and the function accepts:
// 10 metrics, each a query of 4,096 characters at most with one regular
// expression matcher of 50 counted repetitions (.{1000}), which the shape
// bound of internal/metric does not see (no operator, no parenthesis).
// Queries differ from one metric to the next and from one tag to another.
func regexMetricsXR(tag string) string {
	var b strings.Builder
	b.WriteString("    metrics:\n")
	for i := range 10 {
		query := fmt.Sprintf(`sum(x%s_%d{b="{{service}}",a=~"%s"})`, tag, i, strings.Repeat(".{1000}", 50))
		fmt.Fprintf(&b, "      - {name: m%d, provider: prometheus, successWhen: \"result <= 0.01\", query: '%s'}\n", i, query)
	}
	return steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, b.String())
}

// runCost is what one run of a request costs: the bytes it allocates
// (asserted) and its time (shown only).
func runCost(t *testing.T, f *Function, xr string) (uint64, time.Duration) {
	t.Helper()
	req := testRequest(t, xr, metricsInput, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	rsp, err := f.RunFunction(context.Background(), req)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil || isFatal(rsp) {
		t.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
	}
	return after.TotalAlloc - before.TotalAlloc, took
}

// TestAttackRegexMetricsFirstRun: API.md (Safety round 4) wants no spec the
// XRD admits to make a run take over 50 ms on 2 cores; BenchmarkHostileMetrics
// calls hostileMetricsXR "the worst CanaryRoute the function accepts"
// (1.2 MB, 5 ms a first run). Ten short regular expressions of counted
// repetitions are accepted and cost Prometheus's parser (which compiles
// every =~ matcher) about a hundred times that on a spec's first run:
// after every restart of the function, and for every new spec.
func TestAttackRegexMetricsFirstRun(t *testing.T) {
	const reason = "Attack: ten accepted metrics whose queries each hold one regex matcher of 50 counted repetitions (.{1000}) make a spec's first run allocate ~100 times what the documented worst accepted spec does, and take far over 50 ms: the shape bound does not see regular expressions."
	f := functionAt(testNow)
	baseline, baseTook := runCost(t, f, hostileMetricsXR("regexbase"))
	got, took := runCost(t, f, regexMetricsXR("regex"))
	if got > 10*baseline {
		t.Errorf("%s\nthe first run allocated %d bytes in %v; the first run of hostileMetricsXR %d bytes in %v", reason, got, took, baseline, baseTook)
	}
}
