package main

// Events and the metrics of transitions: each transition of a rollout is
// one event, said on the run that makes it and never again by runs that
// change nothing (a Warning on each run would spend the XR's event budget),
// and counted once, on the response Crossplane applies, by reason, so that
// a user can alert on it as on Flagger's.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

// quietRuns reports the runs that changed nothing (status.rollout and the
// conditions as they were) but still sent an event (a Normal or Warning
// result), skipping the first n runs.
func quietRuns(s *xpSim, skip int) []string {
	var out []string
	for i, r := range s.runs {
		if i < skip || r.in == nil || r.fatal != "" {
			continue
		}
		if !cmp.Equal(r.in, r.out) || !cmp.Equal(r.condsIn, r.condsOut) {
			continue
		}
		if len(r.events) > 0 {
			out = append(out, fmt.Sprintf("%s %v", r.at.Format(time.TimeOnly), r.events))
		}
	}
	return out
}

// TestEventsAreSaidOnce drives scripted rollouts through the controls
// (analysis passing and failing, approval, promote, retry, pause, abort, a
// refused canary): a run whose status.rollout and conditions come out as
// they went in sends no event.
func TestEventsAreSaidOnce(t *testing.T) {
	type move struct {
		at   int // run index before which the change is made
		path string
		v    any
	}
	cases := map[string]struct {
		xr    string
		input string
		jobs  func(int, map[string]any) map[string]any
		moves []move
		runs  int
	}{
		"ApprovalPausePromote": {
			xr:   analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 30, approval: true}, {weight: 60, pause: 2m}, {weight: 100}]`, ""),
			jobs: jobPasses,
			moves: []move{
				{6, "traffic.paused", true},
				{9, "traffic.paused", nil},
				{12, "traffic.approval", map[string]any{"revision": "v2", "step": float64(1)}},
				{14, "traffic.paused", true},
				{16, "traffic.promote", map[string]any{"revision": "v2"}},
				{18, "traffic.paused", nil},
			},
			runs: 30,
		},
		"AnalysisFailsRetryAbort": {
			xr: analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 100}]`, ""),
			jobs: func(n int, _ map[string]any) map[string]any {
				if n == 0 {
					return map[string]any{"failed": float64(1)}
				}
				return map[string]any{"succeeded": float64(1)}
			},
			moves: []move{
				{6, "traffic.paused", true},
				{7, "traffic.retry", "1"},
				{9, "traffic.paused", nil},
				{14, "traffic.abort", true},
				{17, "traffic.retry", "2"},
				{19, "traffic.abort", nil},
			},
			runs: 26,
		},
		"RefusedCanary": {
			xr: strings.Replace(analysisXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, ""), "canary: {backendRef: {name: podinfo-canary}", "canary: {backendRef: {name: podinfo-canary, namespace: elsewhere}", 1),
			moves: []move{
				{4, "traffic.paused", true}, {6, "traffic.paused", nil},
			},
			runs: 10,
		},
		"ExpressionGateError": {
			xr: analysisXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, `    gates: [{apiVersion: apps/v1, kind: Deployment, name: nope, successWhen: "object.status.nope == 1"}]
    progressDeadline: 2m
`),
			runs: 12,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			input := tc.input
			if input == "" {
				input = emptyInput
			}
			s := newSim(t, tc.xr, input)
			s.jobStatus = tc.jobs
			for i := range tc.runs {
				for _, m := range tc.moves {
					if m.at == i {
						s.setSpec(m.path, m.v)
					}
				}
				s.run(0)
			}
			t.Log("\n" + s.describe())
			if q := quietRuns(s, 0); len(q) > 0 {
				t.Errorf("runs that changed nothing sent events:\n%s", strings.Join(q, "\n"))
			}
		})
	}
}

// TestTransitionsCountedOnce: Crossplane calls the function again until
// its requirements are answered, and applies only the last response, so a
// transition counts on that run only.
//
// The rollout's series (function_canary_route_rollout_*) are likewise set
// by the applied run only.
func TestTransitionsCountedOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewRuns(reg, time.Now, 10)
	if err != nil {
		t.Fatal(err)
	}
	fn := functionAt(testNow)
	fn.metrics = m
	// A progressive rollout's first run: it starts (RolloutStarted), and
	// asks for the gate object and the objects it composes.
	spec, _, _ := strings.Cut(progressiveXR, "\nstatus:")
	spec = strings.Replace(spec, "  name: podinfo\n", "  name: podinfo\n  uid: 0c1d7a52-podinfo\n", 1)
	req := testRequest(t, spec, allowMonitoring, nil)
	first, err := fn.RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "function_canary_route_rollout_transitions_total", "reason", "RolloutStarted"); got != 0 {
		t.Errorf("the first call, whose requirements Crossplane has not answered, counted %v transitions", got)
	}
	if got := seriesValue(t, reg, "function_canary_route_rollout_phase", map[string]string{"name": "podinfo", "phase": "Progressing"}); got != nil {
		t.Errorf("the first call, whose requirements Crossplane has not answered, set the rollout's phase series to %v", *got)
	}
	// Crossplane answers every requirement (nothing exists yet) and calls
	// again: this response is applied.
	req.RequiredResources = map[string]*fnv1.Resources{}
	for name := range first.GetRequirements().GetResources() {
		req.RequiredResources[name] = &fnv1.Resources{}
	}
	req.Context = first.GetContext()
	if _, err := fn.RunFunction(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "function_canary_route_rollout_transitions_total", "reason", "RolloutStarted"); got != 1 {
		t.Errorf("the call whose response Crossplane applies counted %v RolloutStarted, want 1", got)
	}
	if got := counterValue(t, reg, "function_canary_route_runs_total", "result", telemetry.ResultComposed); got != 2 {
		t.Errorf("runs_total{result=composed} = %v, want 2: every call is a run", got)
	}
	if got := seriesValue(t, reg, "function_canary_route_rollout_phase", map[string]string{"name": "podinfo", "phase": "Progressing"}); got == nil || *got != 1 {
		t.Errorf("the applied call's rollout phase series is %v, want 1 for Progressing", got)
	}
	if got := seriesValue(t, reg, "function_canary_route_rollout_steps", map[string]string{"name": "podinfo"}); got == nil || *got != 3 {
		t.Errorf("the applied call's rollout steps series is %v, want 3", got)
	}
}

// counterValue reads the counter of a name with a label's value from a
// registry, as a scrape would; 0 when there is none.
func counterValue(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	if v := seriesValue(t, reg, name, map[string]string{label: value}); v != nil {
		return *v
	}
	return 0
}

// seriesValue reads the counter or gauge of a name whose labels include
// labels, as a scrape would; nil when there is none.
func seriesValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			found := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					found++
				}
			}
			if found != len(labels) {
				continue
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			return &v
		}
	}
	return nil
}

// TestTransitionsCountedWhereApplied: a step's analysis and a gate, through
// Crossplane's requirements loop. The call that first sees the gate object
// advances the step and asks for the next step's analysis object, so
// Crossplane calls once more and applies that call's response: each
// transition counts once, on the response Crossplane applies, never on the
// call it discards.
func TestTransitionsCountedWhereApplied(t *testing.T) {
	xr := analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 50, analysis: [smoke]}, {weight: 100}]`,
		`    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]
    requireAcceptedRoute: false`)
	s := newSim(t, xr, emptyInput)
	s.jobStatus = jobPasses
	s.objects["apps/v1|Deployment|test|podinfo-canary"] = map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo-canary", "namespace": "test"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-12-02T09:00:00Z",
		}}},
	}
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewRuns(reg, time.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = m
	applied := map[string]int{}
	for range 12 {
		r := s.run(30 * time.Second)
		for _, e := range r.events {
			// "SEVERITY REASON: message"
			if _, rest, ok := strings.Cut(e, " "); ok {
				reason, _, _ := strings.Cut(rest, ":")
				applied[reason]++
			}
		}
		if r.out["phase"] == "Succeeded" {
			break
		}
	}
	if applied["StepAdvanced"] == 0 || applied["AnalysisPassed"] == 0 || applied["RolloutSucceeded"] != 1 {
		t.Fatalf("setup: the rollout did not pass its analysis to the end: %v", applied)
	}
	for _, reason := range []string{"RolloutStarted", "StepAdvanced", "RolloutSucceeded", "AnalysisPassed"} {
		if got := counterValue(t, reg, "function_canary_route_rollout_transitions_total", "reason", reason); got != float64(applied[reason]) {
			t.Errorf("transitions_total{reason=%q} = %v, but the responses Crossplane applied carry %d", reason, got, applied[reason])
		}
	}
}

// TestFailuresCountedByReason: a step held past its progress deadline (a
// gate whose object never appears) fails the rollout once: one
// RolloutFailed transition, and one failure of reason
// ProgressDeadlineExceeded, which an alert can tell from the others.
func TestFailuresCountedByReason(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, `    gates: [{apiVersion: apps/v1, kind: Deployment, name: nope, conditionType: Available}]
    progressDeadline: 2m
`), emptyInput)
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewRuns(reg, time.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = m
	for range 12 {
		s.run(30 * time.Second)
	}
	if r := s.runs[len(s.runs)-1]; r.out["phase"] != "Failed" || r.out["reason"] != "ProgressDeadlineExceeded" {
		t.Fatalf("setup: the rollout is %v/%v, want Failed/ProgressDeadlineExceeded", r.out["phase"], r.out["reason"])
	}
	for reason, want := range map[string]float64{"ProgressDeadlineExceeded": 1, "GateFailed": 0, "AnalysisFailed": 0, "NotAllowedByPolicy": 0} {
		if got := counterValue(t, reg, "function_canary_route_rollout_failures_total", "reason", reason); got != want {
			t.Errorf("rollout_failures_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if got := counterValue(t, reg, "function_canary_route_rollout_transitions_total", "reason", "RolloutFailed"); got != 1 {
		t.Errorf("rollout_transitions_total{reason=RolloutFailed} = %v, want 1", got)
	}
}
