package main

// The rollout controls (analysis, approval, promote, retry, per-step
// actions, events) across many runs, with Crossplane, the API server, the
// gateway and the Job controller played by xpSim: what a single run cannot
// show, such as an analysis object that outlives its step, or an event said
// twice.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/crossplane-contrib/function-canary-route/internal/metrics"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// xpSim fakes Crossplane, the API server, the gateway and the Job
// controller around the function, as faithfully as matters here:
//
//   - requirements are answered and the function called again until they
//     stop changing (Crossplane's loop);
//   - a desired composed resource whose key was observed keeps the observed
//     object's name and namespace (crossplane v2.2.0,
//     internal/controller/apiextensions/composite/composition_functions.go:
//     "If this desired resource state pertains to an existing composed
//     resource we want to maintain its name and namespace");
//   - an object that exists is updated (its status kept), otherwise created;
//   - keys observed but not desired are deleted (garbage collection by key);
//   - the XR's status and conditions are written back as the function
//     desired them;
//   - the gateway accepts every route at its current generation;
//   - the Job controller gives every analysis object a status one run after
//     it was created.
type xpSim struct {
	t       *testing.T
	xr      map[string]any // the XR without status
	status  map[string]any
	input   string
	now     time.Time
	objects map[string]map[string]any // id -> object as the cluster has it
	keys    map[string]string         // composed resource key -> id
	gen     map[string]int64
	// created lists the ids of the analysis objects created, in order.
	created []string
	// jobStatus is the status the Job controller gives the n-th analysis
	// object created (0-based); nil leaves it without status.
	jobStatus func(n int, obj map[string]any) map[string]any
	// metrics, when set, counts the runs: the function is served as
	// main.go serves it, with the metrics around the panic recovery.
	metrics *metrics.Runs
	// log of each run.
	runs []simRun
	seen map[string]int
}

type simRun struct {
	at        time.Time
	in, out   map[string]any // status.rollout before and after
	events    []string       // "Normal Reason: message"
	fatal     string
	analysis  []string // names of the analysis objects desired
	rsp       *fnv1.RunFunctionResponse
	condsIn   []any
	condsOut  []any
	resources []string
}

func newSim(t *testing.T, xrYAML, input string) *xpSim {
	t.Helper()
	x := toStruct(t, xrYAML).AsMap()
	s := &xpSim{
		t: t, input: input, now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		objects: map[string]map[string]any{}, keys: map[string]string{}, gen: map[string]int64{},
	}
	if st, ok := x["status"].(map[string]any); ok {
		s.status = st
	}
	delete(x, "status")
	s.xr = x
	return s
}

func objID(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v|%v|%v|%v", o["apiVersion"], o["kind"], md["namespace"], md["name"])
}

// setSpec replaces a field of the XR's spec (dotted path).
func (s *xpSim) setSpec(path string, v any) {
	m := s.xr["spec"].(map[string]any)
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		n, ok := m[p].(map[string]any)
		if !ok {
			n = map[string]any{}
			m[p] = n
		}
		m = n
	}
	if v == nil {
		delete(m, parts[len(parts)-1])
		return
	}
	m[parts[len(parts)-1]] = v
}

func (s *xpSim) request(required map[string]*fnv1.ResourceSelector) *fnv1.RunFunctionRequest {
	t := s.t
	x := deepCopyMap(s.xr)
	if s.status != nil {
		x["status"] = deepCopyMap(s.status)
	}
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(t, s.input),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, x)}, Resources: map[string]*fnv1.Resource{}},
	}
	for key, id := range s.keys {
		o := deepCopyMap(s.objects[id])
		if strings.HasPrefix(key, "route-") {
			g := s.gen[id]
			o["metadata"].(map[string]any)["generation"] = g
			cond := func(typ string) map[string]any {
				return map[string]any{"type": typ, "status": "True", "reason": typ, "observedGeneration": g, "lastTransitionTime": "2026-12-02T09:00:00Z", "message": ""}
			}
			var parents []any
			spec, _ := o["spec"].(map[string]any)
			refs, _ := spec["parentRefs"].([]any)
			for _, r := range refs {
				parents = append(parents, map[string]any{
					"parentRef": r, "controllerName": "example.com/gw",
					"conditions": []any{cond("Accepted"), cond("ResolvedRefs")},
				})
			}
			o["status"] = map[string]any{"parents": parents}
		}
		req.Observed.Resources[key] = &fnv1.Resource{Resource: mustStruct(t, o)}
	}
	if required != nil {
		req.RequiredResources = map[string]*fnv1.Resources{}
		for name, sel := range required {
			rs := &fnv1.Resources{}
			for _, o := range s.objects {
				md, _ := o["metadata"].(map[string]any)
				if o["apiVersion"] == sel.GetApiVersion() && o["kind"] == sel.GetKind() && md["name"] == sel.GetMatchName() &&
					(sel.Namespace == nil || md["namespace"] == sel.GetNamespace()) {
					rs.Items = append(rs.Items, &fnv1.Resource{Resource: mustStruct(s.t, deepCopyMap(o))})
				}
			}
			req.RequiredResources[name] = rs
		}
	}
	return req
}

// run runs the function as Crossplane would at s.now, applies its answer,
// lets the controllers act, and moves the clock by the TTL (or by step when
// step is not zero).
func (s *xpSim) run(step time.Duration) simRun {
	t := s.t
	t.Helper()
	// As Crossplane's FetchingFunctionRunner: call until a Fatal, or until
	// the requirements equal the previous call's (none before the first),
	// with the objects they name and the context of the last response; at
	// most six calls, else the reconcile fails.
	var requirements *fnv1.Requirements
	var rsp *fnv1.RunFunctionResponse
	req := s.request(nil)
	for call := 1; ; call++ {
		if call > maxRequirementsCalls {
			t.Fatalf("at %s: the requirements did not settle in %d calls: Crossplane fails the reconcile", s.now.Format(time.RFC3339), maxRequirementsCalls)
		}
		now := s.now
		f := withRecover(&Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return now }), metrics: s.metrics}, logging.NewNopLogger(), s.metrics)
		var err error
		rsp, err = f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction: %v", err)
		}
		if isFatal(rsp) || proto.Equal(rsp.GetRequirements(), requirements) {
			break
		}
		requirements = rsp.GetRequirements()
		required := requirements.GetResources()
		if required == nil {
			required = map[string]*fnv1.ResourceSelector{}
		}
		req = s.request(required)
		req.Context = rsp.GetContext()
	}
	r := simRun{at: s.now, rsp: rsp}
	if st := s.status; st != nil {
		r.in, _ = deepCopyMap(st)["rollout"].(map[string]any)
		r.condsIn, _ = deepCopyMap(st)["conditions"].([]any)
	}
	for _, res := range rsp.GetResults() {
		sev := strings.TrimPrefix(res.GetSeverity().String(), "SEVERITY_")
		if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			r.fatal = res.GetMessage()
		}
		r.events = append(r.events, fmt.Sprintf("%s %s: %s", sev, res.GetReason(), res.GetMessage()))
	}
	if r.fatal == "" {
		s.apply(rsp)
	} else {
		s.applyConditions(rsp)
	}
	if st := s.status; st != nil {
		r.out, _ = deepCopyMap(st)["rollout"].(map[string]any)
		r.condsOut, _ = deepCopyMap(st)["conditions"].([]any)
	}
	for k, d := range rsp.GetDesired().GetResources() {
		r.resources = append(r.resources, k)
		if strings.HasPrefix(k, "analysis-") {
			md, _ := d.GetResource().AsMap()["metadata"].(map[string]any)
			r.analysis = append(r.analysis, fmt.Sprint(md["name"]))
		}
	}
	sort.Strings(r.resources)
	sort.Strings(r.analysis)
	s.runs = append(s.runs, r)
	if step == 0 {
		step = rsp.GetMeta().GetTtl().AsDuration()
	}
	s.now = s.now.Add(step)
	return r
}

// maxRequirementsCalls is how often Crossplane calls a function in one
// reconcile at most (MaxRequirementsIterations + 1).
const maxRequirementsCalls = 6

// applyConditions sets the response's conditions on the XR, as Crossplane
// does, by type, for a Fatal response too (its status and composed
// resources are not applied).
func (s *xpSim) applyConditions(rsp *fnv1.RunFunctionResponse) {
	cs := rsp.GetConditions()
	if len(cs) == 0 {
		return
	}
	if s.status == nil {
		s.status = map[string]any{}
	}
	out, _ := s.status["conditions"].([]any)
	for _, c := range cs {
		st := map[fnv1.Status]string{fnv1.Status_STATUS_CONDITION_TRUE: "True", fnv1.Status_STATUS_CONDITION_FALSE: "False"}[c.GetStatus()]
		if st == "" {
			st = "Unknown"
		}
		cond := map[string]any{
			"type": c.GetType(), "status": st, "reason": c.GetReason(), "message": c.GetMessage(),
			"lastTransitionTime": "2026-12-02T09:00:00Z",
		}
		i := slices.IndexFunc(out, func(o any) bool { m, _ := o.(map[string]any); return m["type"] == c.GetType() })
		if i < 0 {
			out = append(out, cond)
		} else {
			out[i] = cond
		}
	}
	s.status["conditions"] = out
}

func (s *xpSim) apply(rsp *fnv1.RunFunctionResponse) {
	desired := rsp.GetDesired()
	if st, ok := desired.GetComposite().GetResource().AsMap()["status"].(map[string]any); ok {
		if s.status == nil {
			s.status = map[string]any{}
		}
		for k, v := range st {
			s.status[k] = v
		}
	}
	s.applyConditions(rsp)
	xrName := s.xr["metadata"].(map[string]any)["name"]
	xrNS, _ := s.xr["metadata"].(map[string]any)["namespace"].(string)
	newKeys := map[string]string{}
	for key, d := range desired.GetResources() {
		o := d.GetResource().AsMap()
		md, _ := o["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			o["metadata"] = md
		}
		if id, ok := s.keys[key]; ok {
			old := s.objects[id]["metadata"].(map[string]any)
			md["name"], md["namespace"] = old["name"], old["namespace"]
		}
		if xrNS != "" {
			md["namespace"] = xrNS
		}
		labels, _ := md["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels["crossplane.io/composite"] = xrName
		md["labels"] = labels
		id := objID(o)
		if old, ok := s.objects[id]; ok {
			if st, ok := old["status"]; ok {
				o["status"] = st
			}
			if !cmp.Equal(old["spec"], o["spec"]) {
				s.gen[id]++
			}
		} else {
			s.gen[id] = 1
			if strings.HasPrefix(key, "analysis-") {
				s.created = append(s.created, id)
			}
		}
		s.objects[id] = o
		newKeys[key] = id
	}
	for key, id := range s.keys {
		if _, ok := newKeys[key]; !ok {
			delete(s.objects, id)
		}
	}
	s.keys = newKeys
	// The Job controller: an analysis object gets its status one run after
	// its creation.
	for i, id := range s.created {
		o, ok := s.objects[id]
		// Only the latest creation of a name is the object that exists.
		if !ok || o["status"] != nil || s.jobStatus == nil || slices.Contains(s.created[i+1:], id) {
			continue
		}
		if s.seen == nil {
			s.seen = map[string]int{}
		}
		instance := fmt.Sprintf("%s#%d", id, i)
		s.seen[instance]++
		if s.seen[instance] < 2 {
			continue
		}
		if st := s.jobStatus(i, o); st != nil {
			o["status"] = st
		}
	}
}

func (s *xpSim) describe() string {
	var b strings.Builder
	for _, r := range s.runs {
		fmt.Fprintf(&b, "%s %v step %v %v%% %v | analysis %v | %v\n", r.at.Format(time.TimeOnly), r.out["phase"], r.out["step"], r.out["canaryWeight"], r.out["message"], r.analysis, r.events)
	}
	b.WriteString("analysis objects created: " + strings.Join(s.created, ", ") + "\n")
	return b.String()
}

// jobPasses is a Job controller under which every analysis Job succeeds.
func jobPasses(int, map[string]any) map[string]any { return map[string]any{"succeeded": float64(1)} }

// analysisXR is a namespaced CanaryRoute whose steps are given, with the
// smoke analysis template.
func analysisXR(steps, extra string) string {
	return namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: ` + steps + `
    analysis:
      smoke:
        template:
          apiVersion: batch/v1
          kind: Job
          spec: {template: {spec: {restartPolicy: Never, containers: [{name: t, image: curlimages/curl}]}}}
        successWhen: "has(object.status.succeeded) && object.status.succeeded > 0"
        failWhen: "has(object.status.failed) && object.status.failed > 0"
` + extra)
}

// ---------------------------------------------------------------------------
// 1. Analysis objects under one key for every step, revision and attempt.

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

// ---------------------------------------------------------------------------
// 2. Events: one per transition, never repeated by runs that change nothing.

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

// TestRescuedAbortWarnsOnce: each transition is one event, emitted on the
// run that makes it, never repeated by runs that change nothing. An
// emergency abort of a CanaryRoute that cannot be composed warns once, on
// the run that rescues it.
func TestRescuedAbortWarnsOnce(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
	for range 3 {
		s.run(0)
	}
	// The spec breaks (a host name the Gateway API refuses) and the user
	// aborts.
	s.setSpec("hostnames", []any{"NOT A HOST"})
	s.setSpec("traffic.abort", true)
	for range 4 {
		s.run(0)
	}
	t.Log("\n" + s.describe())
	n := 0
	for _, r := range s.runs[3:] {
		for _, e := range r.events {
			if strings.HasPrefix(e, "WARNING") {
				n++
			}
		}
	}
	if q := quietRuns(s, 4); len(q) > 0 || n > 1 {
		t.Errorf("the rescued abort sends %d Warnings over 4 runs; runs that changed nothing but still sent one: %v", n, q)
	}
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

// ---------------------------------------------------------------------------
// 3. Per-step matches and mirror.

// routeShape summarises the desired route: per rule, its matches' header
// names, whether it mirrors, and its backends.
func routeShape(r simRun) []string {
	d := r.rsp.GetDesired().GetResources()["route-httproute"]
	if d == nil {
		return nil
	}
	spec, _ := d.GetResource().AsMap()["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	var out []string
	for _, ru := range rules {
		rule := ru.(map[string]any)
		var parts []string
		ms, _ := rule["matches"].([]any)
		for _, m := range ms {
			mm := m.(map[string]any)
			hs, _ := mm["headers"].([]any)
			for _, h := range hs {
				parts = append(parts, "h:"+fmt.Sprint(h.(map[string]any)["name"]))
			}
			if mt, ok := mm["method"]; ok {
				parts = append(parts, "m:"+fmt.Sprint(mt))
			}
		}
		fs, _ := rule["filters"].([]any)
		for _, f := range fs {
			parts = append(parts, "f:"+fmt.Sprint(f.(map[string]any)["type"]))
		}
		bs, _ := rule["backendRefs"].([]any)
		for _, b := range bs {
			bm := b.(map[string]any)
			parts = append(parts, fmt.Sprintf("b:%v=%v", bm["name"], bm["weight"]))
		}
		out = append(out, strings.Join(parts, ","))
	}
	return out
}

// TestStepActionsEndWithTheirStep: a step's matches replace traffic.matches
// while it is current, and its mirror replaces traffic.mirror; canary-only
// rules end with the rollout (none at weight 100 or once Succeeded), and a
// failed or aborted rollout sends nothing to the canary. It walks a dark
// launch, a testers-only step, a weighted step, then 100%, and abort and
// fail paths, and looks for canary-only rules and mirrors where they do not
// belong.
func TestStepActionsEndWithTheirStep(t *testing.T) {
	xrYAML := analysisXR(`
      - {weight: 0, pause: 1m, mirror: {percent: 100, matches: [{method: GET}]}}
      - {weight: 0, pause: 1m, matches: [{headers: [{name: x-canary, value: "1"}]}]}
      - {weight: 10, pause: 1m}
      - {weight: 100}`, `    matches: [{headers: [{name: x-ab, value: "1"}]}]
`)
	s := newSim(t, xrYAML, emptyInput)
	for range 14 {
		s.run(0)
	}
	var problems []string
	for _, r := range s.runs {
		shape := routeShape(r)
		joined := strings.Join(shape, " | ")
		step, phase := r.out["step"], r.out["phase"]
		line := fmt.Sprintf("%s %v step %v: %s", r.at.Format(time.TimeOnly), phase, step, joined)
		t.Log(line)
		switch {
		case phase == "Succeeded" || phase == "Failed" || phase == "Aborted":
			if len(shape) != 1 || strings.Contains(joined, "RequestMirror") {
				problems = append(problems, "canary-only rules or a mirror after the rollout ended: "+line)
			}
		case step == float64(0):
			// Step 0 has no matches of its own: traffic.matches apply.
			if strings.Contains(joined, "h:x-canary") {
				problems = append(problems, "step 1's matches in step 0: "+line)
			}
		case step == float64(1):
			if strings.Contains(joined, "RequestMirror") || strings.Contains(joined, "h:x-ab") {
				problems = append(problems, "step 0's mirror or traffic.matches in step 1, whose own matches replace them: "+line)
			}
		case step == float64(2):
			if strings.Contains(joined, "h:x-canary") || strings.Contains(joined, "RequestMirror") {
				problems = append(problems, "an earlier step's action leaks into step 2: "+line)
			}
		}
	}
	if s.runs[len(s.runs)-1].out["phase"] != "Succeeded" {
		t.Fatalf("setup: the rollout did not succeed\n%s", s.describe())
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestStepThatBreaksARuleLimitIsRefusedUpFront: every limit (16 rules,
// filters) counts the companion rules, and a step that would break one is a
// Fatal naming the step before any rollout reaches it. Here step 1 (10%)
// adds the session-affinity companions to the A/B ones: 6 rules + 6 A/B + 6
// session = 18, while step 0 (0%) fits.
func TestStepThatBreaksARuleLimitIsRefusedUpFront(t *testing.T) {
	var rules strings.Builder
	for i := range 6 {
		fmt.Fprintf(&rules, "    - matches: [{path: {type: PathPrefix, value: /p%d}}]\n", i)
	}
	xrYAML := strings.Replace(analysisXR(`[{weight: 0, pause: 1m}, {weight: 10, pause: 1m}, {weight: 100}]`,
		`    matches: [{headers: [{name: x-ab, value: "1"}]}]
    sessionAffinity: {cookieName: canary, maxAge: 1h}
`), "  port: 9898\n", "  port: 9898\n  rules:\n"+rules.String(), 1)
	s := newSim(t, xrYAML, emptyInput)
	first := s.run(0)
	if first.fatal != "" {
		t.Logf("refused up front (holds): %s", first.fatal)
		return
	}
	for range 6 {
		if r := s.run(0); r.fatal != "" {
			t.Log("\n" + s.describe())
			msg := r.fatal
			t.Errorf("admitted at step 0, then a Fatal once the rollout reached step %v (the route stays at the last step's weights, the rollout stalls); names a step: %v: %.300s",
				s.runs[len(s.runs)-2].out["step"], strings.Contains(msg, "steps["), msg)
			return
		}
	}
}

// ---------------------------------------------------------------------------
// 4. CEL: cost and time.

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
	_, rsp := attackRun(t, xrYAML, emptyInput, nil, required)
	msg, _ := viewOf(t, rsp).Rollout["message"].(string)
	if !strings.Contains(msg, "too costly to evaluate") {
		t.Errorf("status.rollout.message: %q, want the gate held by a matches() too costly to evaluate", msg)
	}
}

// ---------------------------------------------------------------------------
// 5. Analysis objects and the takeover rule, the template, the policy.

// TestAnalysisNeverTakesOverAnotherOwnersObject: an existing object that
// does not carry the label crossplane.io/composite of this XR is never
// composed over. Another team's Job has the name the analysis of step 1
// would get.
func TestAnalysisNeverTakesOverAnotherOwnersObject(t *testing.T) {
	s := newSim(t, analysisXR(`[{weight: 10}, {weight: 50, analysis: [smoke]}, {weight: 100}]`, ""), emptyInput)
	foreign := toStruct(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: podinfo-v2-1-smoke, namespace: test, labels: {team: other}}, spec: {x: 1}}`).AsMap()
	s.objects[objID(foreign)] = foreign
	for range 8 {
		if r := s.run(0); r.fatal != "" {
			t.Logf("refused: %.200s", r.fatal)
			break
		}
	}
	t.Log("\n" + s.describe())
	got := s.objects[objID(foreign)]
	if md := got["metadata"].(map[string]any); md["labels"].(map[string]any)["crossplane.io/composite"] != nil {
		t.Errorf("the foreign Job was composed over: %v", md)
	}
}

// TestAnalysisTemplateCannotForgeItsVerdict: a template that carries its
// own status (or metadata the function owns) must not pass its analysis
// without the Job ever running: composed objects never carry status.
func TestAnalysisTemplateCannotForgeItsVerdict(t *testing.T) {
	xrYAML := strings.Replace(analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 100}]`, ""),
		"          spec: {template:", `          metadata: {labels: {canaryroute.fn.crossplane.io/step: "7", canaryroute.fn.crossplane.io/revision: other}}
          status: {succeeded: 1}
          spec: {template:`, 1)
	s := newSim(t, xrYAML, emptyInput)
	r := s.run(0)
	if r.fatal != "" {
		t.Logf("refused: %s", r.fatal)
		return
	}
	d := r.rsp.GetDesired().GetResources()["analysis-smoke"].GetResource().AsMap()
	if _, ok := d["status"]; ok {
		t.Errorf("the composed analysis object carries the template's status: %v", d["status"])
	}
	labels := d["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["canaryroute.fn.crossplane.io/step"] != "0" || labels["canaryroute.fn.crossplane.io/revision"] != "v2" {
		t.Errorf("the template's labels override the function's: %v", labels)
	}
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
			_, rsp := attackRun(t, xrYAML, emptyInput, nil, nil)
			if !isFatal(rsp) {
				t.Errorf("a template of kind %s is composed under the default policy: %v", tmpl, viewOf(t, rsp).Resources)
			}
		})
	}
}

// TestExpressionCompileErrorIsBounded: a Fatal quotes at most 256
// characters of any value. cel-go's compile errors repeat the source line,
// which the function drops.
func TestExpressionCompileErrorIsBounded(t *testing.T) {
	long := strings.Repeat("object.a == 1 && ", 59) + "object.b =="
	var gates strings.Builder
	for i := range 16 {
		fmt.Fprintf(&gates, "      - {apiVersion: apps/v1, kind: Deployment, name: g%d, successWhen: %q, failWhen: %q}\n", i, long, long+" ?")
	}
	xrYAML := analysisXR(`[{weight: 10}, {weight: 100}]`, "    gates:\n"+gates.String())
	_, rsp := attackRun(t, xrYAML, emptyInput, nil, nil)
	if !isFatal(rsp) {
		t.Fatalf("not a Fatal: %v", viewOf(t, rsp).Results)
	}
	msg := ""
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			msg = r.GetMessage()
		}
	}
	t.Logf("Fatal of %d characters: %.600s", len(msg), msg)
	// The longest run of the expression's text quoted in the message.
	worst := 0
	for _, chunk := range []string{long[:300], long[300:600], long[600:900]} {
		worst += strings.Count(msg, chunk)
	}
	if worst > 0 {
		t.Errorf("the Fatal quotes more than 256 characters of an expression (%d 300-character chunks found, message of %d characters)", worst, len(msg))
	}
}

// TestClaimAnalysisIsComposedInTheClaimsNamespace: a claim-bound XR composes its analysis
// in the claim's namespace (the route namespace), and one whose claim is
// not proven composes none anywhere.
func TestClaimAnalysisIsComposedInTheClaimsNamespace(t *testing.T) {
	x := strings.Replace(claimedXR("team-a"), "  traffic: {weight: 10}\n", `  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: [{weight: 10, analysis: [smoke]}, {weight: 100}]
    analysis:
      smoke: {template: {apiVersion: batch/v1, kind: Job, spec: {}}, successWhen: "true"}
`, 1)
	x = strings.Replace(x, "  canary: {backendRef: {name: podinfo-canary}}\n", "", 1)
	_, rsp := attackRun(t, x, emptyInput, nil, map[string][]string{"claim": {claimObject("team-a", "podinfo-x7k2p")}})
	if isFatal(rsp) {
		t.Fatalf("setup: %v", viewOf(t, rsp).Results)
	}
	a := rsp.GetDesired().GetResources()["analysis-smoke"].GetResource().AsMap()
	if ns := a["metadata"].(map[string]any)["namespace"]; ns != "team-a" {
		t.Errorf("the analysis of a claim in team-a is composed in %v", ns)
	}
	// The claim is not there: allowedRouteNamespaces applies (none).
	_, rsp = attackRun(t, x, emptyInput, nil, map[string][]string{"claim": {}})
	if !isFatal(rsp) {
		t.Errorf("an unproven claim composes: %v", viewOf(t, rsp).Resources)
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
