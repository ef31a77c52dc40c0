package main

import (
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/metric"
)

// TestAwaitingCapacityQueriesNothing: a release whose canary waits at 0%
// to enter its first step is not measured, however often Crossplane calls:
// no query, no measurement.
func TestAwaitingCapacityQueriesNothing(t *testing.T) {
	xrYAML := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 2, workload: {name: "podinfo-{{revision}}"}}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 100}]
    metrics:
      - name: error-rate
        provider: prometheus
        query: 'sum(rate(http_requests_total{namespace="{{namespace}}", service="{{service}}", code=~"5.."}[{{interval}}]))'
        interval: 30s
        successWhen: "result <= 0.01"
`)
	p := &fakeProvider{answer: func(string, time.Time) metric.Result {
		return metric.Result{NoData: `provider "prometheus": the value is NaN, not a number`, Outcome: metric.OutcomeNoData}
	}}
	s := newSim(t, xrYAML, metricsInput)
	s.querier = p
	s.run(0) // v1 is released: stable at once.
	s.setSpec("canary.revision", "v2")
	var last simRun
	for range 12 {
		last = s.run(5 * time.Second) // a busy controller: a reconcile every 5s
	}
	if got := str(last.out["reason"]); got != "AwaitingCapacity" {
		t.Fatalf("want the rollout waiting at 0%% for capacity, got reason %q: %s\n%s", got, str(last.out["message"]), s.describe())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) > 2 {
		at := make([]string, 0, len(p.got))
		for _, c := range p.got {
			at = append(at, c.at.Format(time.TimeOnly))
		}
		t.Errorf("a canary waiting at 0%% was queried %d times in a minute (at %s); want none, and never more than once an interval (30s)", len(p.got), strings.Join(at, ", "))
	}
}
