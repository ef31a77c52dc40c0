package main

// The simulated Crossplane: Crossplane, the API server, the gateway and the
// Job controller played around the function across many runs, for what a
// single run cannot show (an analysis object that outlives its step, an
// event said twice, requirements that never settle).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

// xpSim fakes Crossplane, the API server, the gateway and the Job
// controller around the function, as faithfully as matters here:
//
//   - requirements are answered and the function called again until they
//     stop changing, at most six calls (Crossplane v2.2's
//     FetchingFunctionRunner, internal/xfn/required_resources.go);
//   - a desired composed resource whose key was observed keeps the observed
//     object's name and namespace (crossplane v2.2.0,
//     internal/controller/apiextensions/composite/composition_functions.go:
//     "If this desired resource state pertains to an existing composed
//     resource we want to maintain its name and namespace");
//   - an object that exists is updated (its status kept), otherwise created;
//   - keys observed but not desired are deleted (garbage collection by key);
//   - the XR's status and conditions are written back as the function
//     desired them; after a Fatal, the conditions only;
//   - the gateway reports on every route at its current generation
//     (accepting it, unless gateway says otherwise);
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
	// gateway is the gateway's verdict on every route at a time: the
	// status and reason of Accepted; nil accepts every route.
	gateway func(now time.Time) (status, reason string)
	// gatewayOf, when set, is the gateway's verdict on the route of a
	// composed resource key, in place of gateway.
	gatewayOf func(key string, now time.Time) (status, reason string)
	// served, when set, makes the sim Crossplane v2.2 on a cluster that
	// serves what it says: every capability advertised, schema
	// requirements answered, and a reconcile that requires an object of a
	// kind and version the cluster does not serve failed, as the client's
	// "no matches for kind" does. Unset, the sim advertises no
	// capabilities, as Crossplane before v2.0.
	served servedCluster
	// tick moves the clock between the calls of one reconcile.
	tick time.Duration
	// metrics, when set, counts the runs: the function is served as
	// main.go serves it, with the metrics around the panic recovery.
	metrics *telemetry.Runs
	// querier, when set, answers the metrics' queries; unset, the function
	// queries nothing, as a preview.
	querier promql.Querier
	// caller, when set, calls the hooks' webhooks; unset, the function
	// calls none, as a preview.
	caller hooks.Caller
	// credentials are the pipeline step's credentials, which Crossplane
	// sends with every call.
	credentials map[string]*fnv1.Credentials
	// log, when set, is the function's log; unset, it logs nothing.
	log logging.Logger
	// fn, when set, is the one function process every call goes to, with
	// its memory of the decisions it answered (see internal/freshness);
	// unset, each call goes to a new process, which remembers nothing.
	fn *Function
	// log of each run.
	runs []simRun
	seen map[string]int
}

// A simRun is what one reconcile of the sim did.
type simRun struct {
	at        time.Time
	in, out   map[string]any // status.rollout before and after
	events    []string       // "SEVERITY Reason: message"
	fatal     string
	analysis  []string // names of the analysis objects desired
	req       *fnv1.RunFunctionRequest
	rsp       *fnv1.RunFunctionResponse
	condsIn   []any
	condsOut  []any
	resources []string
}

// newSim is a sim of an XR written in YAML (its status, if any, as the XR
// has it) under an Input, at 10:00.
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

// objID identifies an object in the cluster.
func objID(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v|%v|%v|%v", o["apiVersion"], o["kind"], md["namespace"], md["name"])
}

// add puts an object written in YAML into the cluster, as another owner
// would create it.
func (s *xpSim) add(y string) map[string]any {
	o := toStruct(s.t, y).AsMap()
	s.objects[objID(o)] = o
	return o
}

// setSpec replaces a field of the XR's spec (dotted path); nil deletes it.
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

// request is the request of a call: the XR with its status, the observed
// composed resources (routes with the gateway's report), and the objects
// the requirements name (nil: none answered).
func (s *xpSim) request(required map[string]*fnv1.ResourceSelector) *fnv1.RunFunctionRequest {
	t := s.t
	x := deepCopyMap(s.xr)
	if s.status != nil {
		x["status"] = deepCopyMap(s.status)
	}
	req := &fnv1.RunFunctionRequest{
		Input:       toStruct(t, s.input),
		Observed:    &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, x)}, Resources: map[string]*fnv1.Resource{}},
		Credentials: s.credentials,
	}
	if s.served != nil {
		req.Meta = allCapabilities
	}
	accepted, reason := "True", "Accepted"
	if s.gateway != nil {
		accepted, reason = s.gateway(s.now)
	}
	for key, id := range s.keys {
		o := deepCopyMap(s.objects[id])
		if strings.HasPrefix(key, "route-") {
			accepted, reason := accepted, reason
			if s.gatewayOf != nil {
				accepted, reason = s.gatewayOf(key, s.now)
			}
			g := s.gen[id]
			o["metadata"].(map[string]any)["generation"] = g
			cond := func(typ, status, reason string) map[string]any {
				return map[string]any{"type": typ, "status": status, "reason": reason, "observedGeneration": g, "lastTransitionTime": "2026-12-02T09:00:00Z", "message": ""}
			}
			spec, _ := o["spec"].(map[string]any)
			refs, _ := spec["parentRefs"].([]any)
			parents := make([]any, 0, len(refs))
			for _, r := range refs {
				parents = append(parents, map[string]any{
					"parentRef": r, "controllerName": "example.com/gw",
					"conditions": []any{cond("Accepted", accepted, reason), cond("ResolvedRefs", "True", "ResolvedRefs")},
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

// maxRequirementsCalls is how often Crossplane calls a function in one
// reconcile at most (MaxRequirementsIterations + 1).
const maxRequirementsCalls = 6

// A reconciled is what one reconcile came to: the response Crossplane
// applies and the request of its call, at the call's clock, after calls
// calls; or the error Crossplane fails the reconcile with.
type reconciled struct {
	rsp   *fnv1.RunFunctionResponse
	req   *fnv1.RunFunctionRequest
	at    time.Time
	calls int
	err   error
}

// reconcile calls the function as Crossplane's FetchingFunctionRunner does:
// until a Fatal, or until the requirements (resources and schemas) equal
// the previous call's (none before the first), with the objects and
// schemas they name and the context of the last response; at most
// maxRequirementsCalls calls, else the reconcile fails. It applies nothing.
func (s *xpSim) reconcile() reconciled {
	t := s.t
	t.Helper()
	var requirements *fnv1.Requirements
	req := s.request(nil)
	now := s.now
	for call := 1; call <= maxRequirementsCalls; call++ {
		at := now
		log := s.log
		if log == nil {
			log = logging.NewNopLogger()
		}
		process := &Function{log: log, metrics: s.metrics, querier: s.querier, caller: s.caller}
		if s.fn != nil {
			process = s.fn
		}
		process.clock = ClockFunc(func() time.Time { return at })
		f := withRecover(process, log, s.metrics)
		rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			return reconciled{calls: call, err: err}
		}
		if isFatal(rsp) || proto.Equal(rsp.GetRequirements(), requirements) {
			return reconciled{rsp: rsp, req: req, at: at, calls: call}
		}
		requirements = rsp.GetRequirements()
		resources := requirements.GetResources()
		if resources == nil {
			resources = map[string]*fnv1.ResourceSelector{}
		}
		for name, sel := range resources {
			if s.served != nil && !s.served.serves(sel.GetApiVersion(), sel.GetKind()) {
				return reconciled{calls: call, err: fmt.Errorf("fetching resources for %s: cannot get required resource by name: no matches for kind %q in version %q", name, sel.GetKind(), sel.GetApiVersion())}
			}
		}
		req = s.request(resources)
		req.Context = rsp.GetContext()
		if s.served != nil {
			req.RequiredSchemas = map[string]*fnv1.Schema{}
			for name, sel := range requirements.GetSchemas() {
				req.RequiredSchemas[name] = &fnv1.Schema{OpenapiV3: s.served.schemaOf(t, sel.GetApiVersion(), sel.GetKind())}
			}
		}
		now = now.Add(s.tick)
	}
	return reconciled{calls: maxRequirementsCalls, err: errors.New("requirements didn't stabilize after the maximum number of iterations (5)")}
}

// run reconciles as Crossplane would at s.now, applies the answer, lets the
// controllers act, and moves the clock by the TTL (or by step when step is
// not zero). A reconcile that fails fails the test.
func (s *xpSim) run(step time.Duration) simRun {
	t := s.t
	t.Helper()
	rc := s.reconcile()
	if rc.err != nil {
		t.Fatalf("at %s: Crossplane fails the reconcile after %d calls: %v", s.now.Format(time.RFC3339), rc.calls, rc.err)
	}
	rsp := rc.rsp
	r := simRun{at: s.now, req: rc.req, rsp: rsp}
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
	s.apply(rsp)
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

// apply applies a response as Crossplane does: the conditions always; the
// status and the composed resources unless it is a Fatal. Then the Job
// controller acts.
func (s *xpSim) apply(rsp *fnv1.RunFunctionResponse) {
	if isFatal(rsp) {
		s.applyConditions(rsp)
		return
	}
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

// describe tells the sim's runs, a line each, for a failure message.
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

// apiServerDefaults writes into the sim's routes what the API server's
// defaulting does to a composed HTTPRoute's backendRefs: weight 1, group
// "", kind Service.
func apiServerDefaults(s *xpSim) {
	for key, id := range s.keys {
		if !strings.HasPrefix(key, "route-") {
			continue
		}
		spec, _ := s.objects[id]["spec"].(map[string]any)
		rules, _ := spec["rules"].([]any)
		for _, r := range rules {
			refs, _ := r.(map[string]any)["backendRefs"].([]any)
			for _, b := range refs {
				ref := b.(map[string]any)
				for k, v := range map[string]any{"weight": float64(1), "group": "", "kind": "Service"} {
					if _, ok := ref[k]; !ok {
						ref[k] = v
					}
				}
			}
		}
	}
}

// allCapabilities is what Crossplane v2.2 advertises.
var allCapabilities = &fnv1.RequestMeta{Capabilities: []fnv1.Capability{
	fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES,
	fnv1.Capability_CAPABILITY_CONDITIONS, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS,
}}

// servedCluster is what a cluster serves: "group/version/Kind" to the rule
// fields its route schema holds (nil for kinds other than routes). The XR's
// own kind is always served.
type servedCluster map[string][]string

// schemaOf is the flattened OpenAPI schema Crossplane hands for a kind and
// version, or nil when the cluster does not serve it (Crossplane then hands
// an empty Schema, crossplane v2.2.0 internal/xfn/required_schemas.go).
func (c servedCluster) schemaOf(t *testing.T, apiVersion, kind string) *structpb.Struct {
	t.Helper()
	if apiVersion == "platform.example.org/v1alpha1" {
		return mustStruct(t, map[string]any{"type": "object"})
	}
	fields, ok := c[apiVersion+"/"+kind]
	if !ok {
		return nil
	}
	rule := map[string]any{}
	for _, f := range fields {
		rule[f] = map[string]any{"type": "object"}
	}
	return mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{"spec": map[string]any{
		"type": "object", "properties": map[string]any{"rules": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": rule}}},
	}}})
}

// serves reports whether the cluster serves a kind at a version (core kinds
// and the XR's own always).
func (c servedCluster) serves(apiVersion, kind string) bool {
	if !strings.HasPrefix(apiVersion, "gateway.networking.k8s.io/") {
		return true
	}
	_, ok := c[apiVersion+"/"+kind]
	return ok
}
