package main

// The analysis of a step, and gates judged by expressions: each step,
// revision, attempt and canary judged on an object of its own, never on one
// another step left behind; the objects composed under the takeover rule
// and the Input's policy; CEL bounded in cost.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestAnalysisOfEachStepIsJudgedOnItsOwnObject: a step's analysis object
// is composed while the step is current, as
// <routeName>-<revision>-<step>-<name>, and deleted once the step has
// passed. Its key, analysis-<name>, is the same for every step, and
// Crossplane keeps the name of an object it observed under a key: composing
// step 1's object over step 0's would relabel step 0's Job, and step 1 would
// pass on step 0's result. The function leaves the key out for a run, so
// Crossplane deletes step 0's Job, then composes step 1's (which fails here).
func TestAnalysisOfEachStepIsJudgedOnItsOwnObject(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 50, analysis: [smoke]}, {weight: 100}]`, ""), emptyInput)
	// The first Job passes; any later one fails: step 1 must fail.
	s.jobStatus = func(n int, _ map[string]any) map[string]any {
		if n == 0 {
			return map[string]any{"succeeded": float64(1)}
		}
		return map[string]any{"failed": float64(1)}
	}
	for range 20 {
		r := s.run(0)
		if p := r.out["phase"]; p == "Succeeded" || p == "Failed" {
			break
		}
	}
	t.Log("\n" + s.describe())
	last := s.runs[len(s.runs)-1]
	if len(s.created) < 2 {
		t.Errorf("one analysis object was created for two steps that each name smoke: step 1 was judged on step 0's Job (created: %v)", s.created)
	}
	if last.out["phase"] == "Succeeded" {
		t.Errorf("the rollout succeeded although the only Job that ran for step 1 would have failed")
	}
	for _, id := range slices.Collect(maps.Values(s.keys)) {
		if strings.Contains(id, "-0-smoke") && last.out["step"] != float64(0) {
			t.Errorf("step 0's analysis object %s survives after step 0 passed", id)
		}
	}
}

// TestAnalysisOfANewRevisionIsJudgedOnItsOwnObject: the same key across
// revisions. Revision v2's step 0 analysis passed and the step waits for its
// approval; the team ships v3 instead. v3 restarts at step 0 with a Job of
// its own, never v2's relabelled.
func TestAnalysisOfANewRevisionIsJudgedOnItsOwnObject(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, analysis: [smoke], approval: true}, {weight: 100}]`, ""), emptyInput)
	s.jobStatus = jobPasses
	for range 10 {
		r := s.run(0)
		if r.out["awaitingApproval"] == true {
			break
		}
	}
	if n := len(s.created); n != 1 {
		t.Fatalf("setup: want one Job for v2, got %v\n%s", s.created, s.describe())
	}
	// v3, whose Jobs all fail.
	s.setSpec("canary.revision", "v3")
	s.jobStatus = func(int, map[string]any) map[string]any { return map[string]any{"failed": float64(1)} }
	for range 8 {
		r := s.run(0)
		if r.out["awaitingApproval"] == true || r.out["phase"] == "Failed" {
			break
		}
	}
	t.Log("\n" + s.describe())
	last := s.runs[len(s.runs)-1]
	if len(s.created) < 2 {
		t.Errorf("no analysis object was created for revision v3: it reused v2's Job (created: %v)", s.created)
	}
	if last.out["revision"] == "v3" && last.out["awaitingApproval"] == true {
		t.Errorf("revision v3's analysis passed on revision v2's Job: %v", last.out["analysis"])
	}
}

// TestPromotedLastStepRunsItsOwnAnalysis: promote moves to the last step,
// whose own pause, gates, analysis and approval still apply. A last step
// naming the same template as the current one gets a Job of its own.
func TestPromotedLastStepRunsItsOwnAnalysis(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, analysis: [smoke], approval: true}, {weight: 50}, {weight: 100, analysis: [smoke], approval: true}]`, ""), emptyInput)
	s.jobStatus = func(n int, _ map[string]any) map[string]any {
		if n == 0 {
			return map[string]any{"succeeded": float64(1)}
		}
		return map[string]any{"failed": float64(1)}
	}
	for range 10 {
		if r := s.run(0); r.out["awaitingApproval"] == true {
			break
		}
	}
	s.setSpec("traffic.promote", map[string]any{"revision": "v2"})
	for range 10 {
		r := s.run(0)
		if r.out["phase"] == "Failed" || (r.out["step"] == float64(2) && r.out["awaitingApproval"] == true) {
			break
		}
	}
	t.Log("\n" + s.describe())
	last := s.runs[len(s.runs)-1]
	if last.out["phase"] != "Failed" {
		t.Errorf("the last step's analysis passed on step 0's Job after the promote; created: %v; rollout %v", s.created, last.out)
	}
}

// TestChangedCanaryRunsItsOwnAnalysis: a changed canary restarts the
// rollout, and nothing goes to a backend nobody tested. Step 0's analysis
// passed for canary A and the step sits in its pause; the team swaps the
// canary for B (same revision). The restart composes a Job of its own for B
// (the canary's digest is one of the object's labels), never A's.
func TestChangedCanaryRunsItsOwnAnalysis(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 5m, analysis: [smoke]}, {weight: 100}]`, ""), emptyInput)
	s.jobStatus = func(n int, _ map[string]any) map[string]any {
		if n == 0 {
			return map[string]any{"succeeded": float64(1)}
		}
		return map[string]any{"failed": float64(1)} // any Job testing B fails
	}
	for range 4 {
		s.run(0)
	}
	if v, _ := s.runs[len(s.runs)-1].out["analysis"].([]any); len(v) != 1 {
		t.Fatalf("setup: step 0's analysis should have passed for canary A\n%s", s.describe())
	}
	s.setSpec("canary.backendRef", map[string]any{"name": "podinfo-canary-b"})
	for range 12 {
		if r := s.run(0); r.out["phase"] == "Succeeded" || r.out["phase"] == "Failed" {
			break
		}
	}
	t.Log("\n" + s.describe())
	last := s.runs[len(s.runs)-1]
	if last.out["phase"] != "Failed" {
		t.Errorf("the changed canary's analysis was judged on the Job that tested the old canary (objects created: %v); rollout ended %v with %v",
			s.created, last.out["phase"], last.out["analysis"])
	}
}

// TestCostlyMatchHoldsTheGate: CEL's cost model charges matches() by the
// string's length only, and Go's regexp cannot be interrupted, so a long
// pattern over a 200 KB annotation of the tenant's own gate Deployment
// would run for seconds, once per gate and per run. The function's
// matches() refuses such a call: an evaluation error, which holds the gate
// and says why (BenchmarkRunFunction measures what such a run costs).
func TestCostlyMatchHoldsTheGate(t *testing.T) {
	pattern := strings.Repeat("(a|b)?", 60) + "c"
	expression := "object.metadata.annotations.blob.matches('" + pattern + "')"
	xrYAML := analysisXR(`[{weight: 10}, {weight: 100}]`,
		fmt.Sprintf("    requireAcceptedRoute: false\n    gates:\n      - {apiVersion: apps/v1, kind: Deployment, name: gate, successWhen: %q}\n", expression))
	blob := strings.Repeat("ab", 100_000)
	required := map[string][]string{"gate-0": {fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: gate, namespace: test, annotations: {blob: %q}}}`, blob)}}
	_, rsp := runFunction(t, xrYAML, emptyInput, nil, required)
	msg, _ := viewOf(t, rsp).Rollout["message"].(string)
	if !strings.Contains(msg, "too costly to evaluate") {
		t.Errorf("status.rollout.message: %q, want the gate held by a matches() too costly to evaluate", msg)
	}
}

// TestAnalysisNeverTakesOverAnotherOwnersObject: an existing object that
// does not carry the label crossplane.io/composite of this XR is never
// composed over. Another team's Job has the name the analysis of step 1
// would get.
func TestAnalysisNeverTakesOverAnotherOwnersObject(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10}, {weight: 50, analysis: [smoke]}, {weight: 100}]`, ""), emptyInput)
	foreign := s.add(`{apiVersion: batch/v1, kind: Job, metadata: {name: podinfo-v2-1-smoke, namespace: test, labels: {team: other}}, spec: {x: 1}}`)
	want := deepCopyMap(foreign)
	var refused simRun
	for range 8 {
		if r := s.run(0); r.fatal != "" {
			refused = r
			break
		}
	}
	if !strings.Contains(refused.fatal, "Job test/podinfo-v2-1-smoke exists and was not composed by this CanaryRoute: refusing to take it over") {
		t.Errorf("reaching step 1, whose analysis object another owner's Job already names: want a Fatal that refuses to take it over, got %q\n%s", refused.fatal, s.describe())
	}
	if diff := cmp.Diff(want, s.objects[objID(foreign)]); diff != "" {
		t.Errorf("the foreign Job was composed over: -want, +got:\n%s", diff)
	}
}

// TestAnalysisTemplateCannotForgeItsVerdict: attack: a template that
// carries its own status, or the labels by which the function knows its
// step and revision, must not pass its analysis without the Job ever
// running.
func TestAnalysisTemplateCannotForgeItsVerdict(t *testing.T) {
	withTemplate := func(fields string) string {
		return strings.Replace(analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 100}]`, ""),
			"          spec: {template:", fields+"\n          spec: {template:", 1)
	}
	t.Run("Status", func(t *testing.T) {
		// Composed objects never carry status.
		r := newSim(t, withTemplate("          status: {succeeded: 1}"), emptyInput).run(0)
		if r.fatal != "" {
			t.Fatalf("a template with a status is refused: %s", r.fatal)
		}
		d := r.rsp.GetDesired().GetResources()["analysis-smoke"].GetResource().AsMap()
		if _, ok := d["status"]; ok {
			t.Errorf("the composed analysis object carries the template's status: %v", d["status"])
		}
	})
	t.Run("Labels", func(t *testing.T) {
		// The function's own labels are its own: a template that writes
		// one is refused with a Fatal naming it, never composed and then
		// not recognised (Safety round 3).
		r := newSim(t, withTemplate(`          metadata: {labels: {canaryroute.fn.crossplane.io/step: "7", canaryroute.fn.crossplane.io/revision: other}}`), emptyInput).run(0)
		if !strings.Contains(r.fatal, "spec.traffic.analysis[smoke].template.metadata.labels[canaryroute.fn.crossplane.io/") {
			t.Errorf("a template writing the function's labels must be a Fatal naming them, got %q", r.fatal)
		}
		if _, ok := r.rsp.GetDesired().GetResources()["analysis-smoke"]; ok {
			t.Error("a refused template is composed")
		}
	})
}

// TestAnalysisKindOutsidePolicyIsFatal: "Kinds come from the Input's
// allowedAnalysisKinds (default: batch/v1 Job); any other is a Fatal."
// Spellings that a careless comparison might let through.
func TestAnalysisKindOutsidePolicyIsFatal(t *testing.T) {
	for name, tmpl := range map[string]string{
		"Service":        `{apiVersion: v1, kind: Service, spec: {type: ExternalName, externalName: kubernetes.default.svc}}`,
		"HTTPRoute":      `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, spec: {}}`,
		"JobOtherGroup":  `{apiVersion: batch.evil.io/v1, kind: Job, spec: {}}`,
		"JobV1beta1":     `{apiVersion: batch/v1beta1, kind: Job, spec: {}}`,
		"LowercaseJob":   `{apiVersion: batch/v1, kind: job, spec: {}}`,
		"CronJob":        `{apiVersion: batch/v1, kind: CronJob, spec: {}}`,
		"RoleBinding":    `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}, subjects: [{kind: Group, name: "system:authenticated"}]}`,
		"NoKindNoAPIVer": `{spec: {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			xrYAML := analysisXR(`[{weight: 10, analysis: [x]}, {weight: 100}]`, "      x: {template: "+tmpl+", successWhen: \"true\"}\n")
			_, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
			if msg := fatalOf(rsp); !strings.Contains(msg, "spec.traffic.analysis[x].template") {
				t.Errorf("a template %s under the default policy: want a Fatal naming spec.traffic.analysis[x].template, got %q (composed %v)", tmpl, msg, viewOf(t, rsp).Resources)
			}
		})
	}
}

// TestAnalysisObjectIsReadyOnceItExists: an analysis object is ready once
// it exists, like the proxy Services and the grants: its verdict is the
// rollout's business, in status.rollout.analysis, and the XR (and its
// claim) stays Ready through a long analysis or approval step.
func TestAnalysisObjectIsReadyOnceItExists(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 10m, analysis: [smoke]}, {weight: 100}]`, ""), emptyInput)
	s.jobStatus = jobPasses
	for range 4 {
		s.run(0)
	}
	r := s.runs[len(s.runs)-1]
	if _, ok := s.keys["analysis-smoke"]; !ok {
		t.Fatalf("setup: no analysis object\n%s", s.describe())
	}
	if got := r.rsp.GetDesired().GetResources()["analysis-smoke"].GetReady(); got != fnv1.Ready_READY_TRUE {
		t.Errorf("the analysis object exists (and passed: %v) but is composed %s", r.out["analysis"], got)
	}
}
