package main

// The release loop through the simulated Crossplane: leaving a promotion
// and rescuing an abort route no request to a Service whose selector is
// changing, nor to a revision scaled away; the baseline of a release's
// metric is the stable revision's.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// releaseXR is a namespaced release of podinfo at revision v1, four
// replicas, two steps, without a workload (no capacity gate).
func releaseXR(revision string) string {
	return namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: ` + revision + `}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 100}]`)
}

// releaseRecord is the record the response tells the pipeline's next
// step; nil for none.
func releaseRecord(t *testing.T, rsp *fnv1.RunFunctionResponse) map[string]any {
	t.Helper()
	v, ok := rsp.GetContext().GetFields()["canaryroute.fn.crossplane.io/release"]
	if !ok {
		return nil
	}
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// selectorOf is the version a desired or observed Service selects.
func desiredSelector(rsp *fnv1.RunFunctionResponse, key string) any {
	svc := rsp.GetDesired().GetResources()[key].GetResource().AsMap()
	spec, _ := svc["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	return sel["version"]
}

// promotingWithPrimaryMoved drives a release from v1 to v2 until its
// promotion moved the primary Service to v2 (as the cluster has it) while
// the route sends every request to the canary.
func promotingWithPrimaryMoved(t *testing.T) *xpSim {
	t.Helper()
	s := newSim(t, releaseXR("v1"), emptyInput)
	s.run(0)
	s.setSpec("canary.revision", "v2")
	for range 20 {
		r := s.run(30 * time.Second)
		if r.out["phase"] == "Promoting" && desiredSelector(r.rsp, "service-primary") == "v2" {
			return s
		}
	}
	t.Fatalf("setup: the promotion never moved the primary Service:\n%s", s.describe())
	return nil
}

// TestRescuedAbortDuringPromotionKeepsServedReplicas: a promotion moved
// the primary Service to v2, then the spec breaks and the user aborts. The
// rescue keeps the composition as observed, the primary Service selecting
// v2 with every request: the record keeps v2's replicas.
func TestRescuedAbortDuringPromotionKeepsServedReplicas(t *testing.T) {
	s := promotingWithPrimaryMoved(t)
	s.setSpec("hostnames", []any{"NOT A HOST"})
	s.setSpec("traffic.abort", true)
	r := s.run(30 * time.Second)
	if r.fatal != "" || r.out["reason"] != "AbortRescued" {
		t.Fatalf("setup: the abort was not rescued (%s):\n%s", r.fatal, s.describe())
	}
	served := desiredSelector(r.rsp, "service-primary")
	rec := releaseRecord(t, r.rsp)
	replicas, _ := rec["replicas"].(map[string]any)
	if n, _ := replicas[served.(string)].(float64); n < 4 {
		t.Errorf("the rescued route sends every request to the primary Service, which selects %v; the record gives %v %v replicas (record %v)", served, served, replicas[served.(string)], rec)
	}
}

// TestAbortDuringPromotionMovesPrimaryBackFirst is the abort of the same
// promotion with a spec that composes: the primary Service moves back to v1
// while every request stays on the canary (v2), and v2 keeps its replicas
// until no Service sends it requests.
func TestAbortDuringPromotionMovesPrimaryBackFirst(t *testing.T) {
	s := promotingWithPrimaryMoved(t)
	s.setSpec("traffic.abort", true)
	r := s.run(30 * time.Second)
	observed := "v2" // as the sim's cluster holds it before this run's apply
	moved := desiredSelector(r.rsp, "service-primary") != observed
	if w, _ := r.out["canaryWeight"].(float64); w < 100 && moved {
		t.Errorf("abort during the promotion: the canary gets %v%%, the primary the rest while its selector moves %s -> %v; record %v",
			w, observed, desiredSelector(r.rsp, "service-primary"), releaseRecord(t, r.rsp))
	}
}

// TestRescuedRecordReadsReplicas: the record of a rescued abort reads
// spec.release.replicas from the request's XR, whose numbers are float64:
// the stable revision keeps its 4 replicas.
func TestRescuedRecordReadsReplicas(t *testing.T) {
	s := newSim(t, releaseXR("v1"), emptyInput)
	s.run(0)
	s.setSpec("canary.revision", "v2")
	s.run(30 * time.Second)
	s.setSpec("hostnames", []any{"NOT A HOST"})
	s.setSpec("traffic.abort", true)
	r := s.run(30 * time.Second)
	if r.fatal != "" || r.out["reason"] != "AbortRescued" {
		t.Fatalf("setup: the abort was not rescued (%s):\n%s", r.fatal, s.describe())
	}
	rec := releaseRecord(t, r.rsp)
	replicas, _ := rec["replicas"].(map[string]any)
	if replicas["v1"] != float64(4) {
		t.Errorf("the rescued abort's record gives the stable revision v1 %v replicas, spec.release.replicas is 4 (record %v)", replicas["v1"], rec)
	}
}

// TestReleaseBaselineQueriesStableRevision: with a release the primary's
// revision is the stable one: a compareTo: primary metric's baseline query
// gets it as {{revision}}.
func TestReleaseBaselineQueriesStableRevision(t *testing.T) {
	xrYAML := releaseXR("v1") + `
    metrics:
      - name: error-rate
        provider: prometheus
        query: 'sum(rate(http_requests_total{namespace="{{namespace}}", version="{{revision}}", code=~"5.."}[{{interval}}]))'
        interval: 30s
        successWhen: "result <= baseline * 1.5"
        compareTo: primary
`
	q := &fakeProvider{answer: value(0, 0)}
	s := newSim(t, xrYAML, metricsInput)
	s.querier = q
	s.run(0)
	s.setSpec("canary.revision", "v2")
	for range 4 {
		if r := s.run(30 * time.Second); r.fatal != "" {
			t.Fatalf("setup: %s", r.fatal)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var canary, primary int
	for _, c := range q.got {
		switch {
		case strings.Contains(c.query, `version="v2"`):
			canary++
		case strings.Contains(c.query, `version="v1"`):
			primary++
		}
	}
	if canary == 0 || primary == 0 {
		got := make([]string, 0, len(q.got))
		for _, c := range q.got {
			got = append(got, c.query)
		}
		t.Errorf("queries of the canary v2: %d, of the stable v1 (the baseline): %d; the queries sent:\n%s", canary, primary, strings.Join(got, "\n"))
	}
}

// TestCanaryServiceSelectorMovesWithoutTraffic: v2 at 50%, then the
// canary's revision changes in the middle of the step (to v3, back to the
// stable v1): across the runs, the canary Service's selector changes only
// on a run whose observed route, accepted, sends the canary nothing, and
// whose composed route sends it nothing either.
func TestCanaryServiceSelectorMovesWithoutTraffic(t *testing.T) {
	for _, to := range []string{"v3", "v1"} {
		t.Run("to "+to, func(t *testing.T) {
			s := newSim(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 10m}, {weight: 100}]`), emptyInput)
			s.run(0)
			s.setSpec("canary.revision", "v2")
			for range 20 {
				if r := s.run(30 * time.Second); r.out["canaryWeight"] == float64(50) {
					break
				}
			}
			s.setSpec("canary.revision", to)
			moved := false
			for range 20 {
				before := s.observedCanaryWeight()
				observed := s.observedSelector("service-canary")
				r := s.run(5 * time.Second)
				desired := desiredSelector(r.rsp, "service-canary")
				if desired == observed {
					continue
				}
				moved = true
				if before != 0 || canaryWeightOf(r.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()) != 0 {
					t.Fatalf("the canary Service moved %v -> %v on a run whose observed route gave the canary %d%%:\n%s", observed, desired, before, s.describe())
				}
				if desired != to {
					t.Fatalf("the canary Service moved to %v, want %s", desired, to)
				}
			}
			if !moved {
				t.Fatalf("the canary Service never moved to %s:\n%s", to, s.describe())
			}
		})
	}
}

// observedCanaryWeight is the weight the cluster's route gives the canary
// proxy Service, podinfo-canary (-1: no route).
func (s *xpSim) observedCanaryWeight() int64 {
	id, ok := s.keys["route-httproute"]
	if !ok {
		return -1
	}
	return canaryWeightOf(s.objects[id])
}

// observedSelector is the revision a Service the cluster holds selects.
func (s *xpSim) observedSelector(key string) any {
	id, ok := s.keys[key]
	if !ok {
		return nil
	}
	spec, _ := s.objects[id]["spec"].(map[string]any)
	selector, _ := spec["selector"].(map[string]any)
	return selector["version"]
}
