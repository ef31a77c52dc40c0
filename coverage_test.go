package main

// The route features of rules of their own, stickiness on both sides,
// retries, backend TLS, UDPRoute and served versions, at their seams with the
// earlier rounds: the policy, the abort and its rescue, holds, the rollout,
// the takeover check, status written back and forged, and Crossplane's
// requirements loop. Most cases come from a hostile review.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// ---------------------------------------------------------------------------
// A simulated Crossplane v2.2 that answers schema requirements too.

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

var experimentalCluster = servedCluster{
	"gateway.networking.k8s.io/v1/HTTPRoute":           {"matches", "backendRefs", "retry", "sessionPersistence"},
	"gateway.networking.k8s.io/v1/GRPCRoute":           {"matches", "backendRefs", "sessionPersistence"},
	"gateway.networking.k8s.io/v1/ReferenceGrant":      nil,
	"gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
	"gateway.networking.k8s.io/v1/BackendTLSPolicy":    nil,
}

// reconcile is one reconcile of the XR as Crossplane v2.2's
// FetchingFunctionRunner does it (internal/xfn/required_resources.go): call,
// stop at a Fatal or once the requirements (resources and schemas) equal the
// previous call's, else fetch them and call again, at most
// MaxRequirementsIterations+1 = 6 calls. A required resource of a kind the
// cluster does not serve fails the reconcile, as the client's "no matches
// for kind" does. tick moves the clock between calls.
type reconcileResult struct {
	rsp   *fnv1.RunFunctionResponse
	req   *fnv1.RunFunctionRequest
	at    time.Time // the clock of the last call
	calls int
	err   error
}

func reconcileVersions(t *testing.T, s *xpSim, c servedCluster, tick time.Duration) reconcileResult {
	t.Helper()
	var requirements *fnv1.Requirements
	req := s.request(nil)
	req.Meta = allCapabilities
	now := s.now
	for i := range 6 {
		at := now
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return at })}
		rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			return reconcileResult{err: err, calls: i + 1}
		}
		if isFatal(rsp) || proto.Equal(rsp.GetRequirements(), requirements) {
			return reconcileResult{rsp: rsp, req: req, at: at, calls: i + 1}
		}
		requirements = rsp.GetRequirements()
		for name, sel := range requirements.GetResources() {
			if !c.serves(sel.GetApiVersion(), sel.GetKind()) {
				return reconcileResult{calls: i + 1, err: fmt.Errorf("fetching resources for %s: cannot get required resource by name: no matches for kind %q in version %q", name, sel.GetKind(), sel.GetApiVersion())}
			}
		}
		resources := requirements.GetResources()
		if resources == nil {
			resources = map[string]*fnv1.ResourceSelector{}
		}
		pipelineContext := rsp.GetContext()
		req = s.request(resources)
		req.Meta = allCapabilities
		req.Context = pipelineContext
		req.RequiredSchemas = map[string]*fnv1.Schema{}
		for name, sel := range requirements.GetSchemas() {
			req.RequiredSchemas[name] = &fnv1.Schema{OpenapiV3: c.schemaOf(t, sel.GetApiVersion(), sel.GetKind())}
		}
		now = now.Add(tick)
	}
	return reconcileResult{calls: 6, err: errors.New("requirements didn't stabilize after the maximum number of iterations (5)")}
}

// composedVersions lists the apiVersion of each composed object, by key.
func composedVersions(rsp *fnv1.RunFunctionResponse) map[string]string {
	out := map[string]string{}
	for k, r := range rsp.GetDesired().GetResources() {
		out[k], _ = r.GetResource().AsMap()["apiVersion"].(string)
	}
	return out
}

// recordedVersions is status.route.versions as the response desires it.
func recordedVersions(rsp *fnv1.RunFunctionResponse) map[string]any {
	st, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	route, _ := st["route"].(map[string]any)
	v, _ := route["versions"].(map[string]any)
	return v
}

// tlsFlaggerXR is the Flagger scenario (a grant in monitoring) with a
// BackendTLSPolicy on the primary's proxy Service.
var tlsFlaggerXR = strings.Replace(flaggerXR, "      selector: {app: podinfo}", "      selector: {app: podinfo}\n    tls: {hostname: podinfo.internal, wellKnownCACertificates: System}", 1)

// TestServedVersionsLoopSettles runs reconciles of a CanaryRoute that
// composes a route, a grant and a BackendTLSPolicy through the simulated
// Crossplane: each must settle within Crossplane's five iterations, give a
// byte-identical answer for the identical final request, compose only
// versions the cluster serves, and write a status.route.versions the XRD
// admits; across the ten-minute boundary (the clock moving between calls)
// too.
func TestServedVersionsLoopSettles(t *testing.T) {
	for name, tick := range map[string]time.Duration{"StillClock": 0, "MovingClock": 20 * time.Second} {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tlsFlaggerXR, allowMonitoring)
			xrds := crdschema.XRDs(t, "example/definitions/canaryroute-namespaced.yaml", "example/definitions/canaryroute-cluster.yaml")
			for i, step := range []time.Duration{time.Minute, 4 * time.Minute, 4*time.Minute + 50*time.Second, 9 * time.Second, 31 * time.Second, 10 * time.Minute, 0} {
				r := reconcileVersions(t, s, experimentalCluster, tick)
				if r.err != nil {
					t.Fatalf("reconcile %d at %s: %v", i, s.now.Format(time.TimeOnly), r.err)
				}
				if r.calls > 6 {
					t.Errorf("reconcile %d took %d calls", i, r.calls)
				}
				if isFatal(r.rsp) {
					t.Fatalf("reconcile %d is Fatal: %v", i, r.rsp.GetResults())
				}
				// The identical request gives the identical answer.
				f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return r.at })}
				a, _ := f.RunFunction(context.Background(), proto.Clone(r.req).(*fnv1.RunFunctionRequest))
				ab, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a)
				rb, _ := proto.MarshalOptions{Deterministic: true}.Marshal(r.rsp)
				if !bytes.Equal(ab, rb) {
					t.Errorf("reconcile %d: the identical final request gives a different answer", i)
				}
				for k, v := range composedVersions(r.rsp) {
					kind, _ := r.rsp.GetDesired().GetResources()[k].GetResource().AsMap()["kind"].(string)
					if !experimentalCluster.serves(v, kind) {
						t.Errorf("reconcile %d composes %s %s, which the cluster does not serve", i, v, kind)
					}
				}
				x := r.req.GetObserved().GetComposite().GetResource().AsMap()
				if st, ok := r.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]; ok {
					x["status"] = st
					if errs := xrds.Validate(x); len(errs) > 0 {
						t.Errorf("reconcile %d: the XRD refuses the status: %v", i, errs)
					}
				}
				t.Logf("reconcile %d at %s: %d calls, versions %v, recorded %v", i, s.now.Format(time.TimeOnly), r.calls, composedVersions(r.rsp), recordedVersions(r.rsp))
				s.apply(r.rsp)
				s.now = s.now.Add(step)
			}
		})
	}
}

// candidateVersions are the versions the docs say the function composes
// ("Versions as the cluster serves them").
var candidateVersions = map[string][]string{
	"HTTPRoute": {"v1"}, "GRPCRoute": {"v1", "v1alpha2"}, "TLSRoute": {"v1", "v1alpha2"}, "TCPRoute": {"v1", "v1alpha2"},
	"UDPRoute": {"v1", "v1alpha2"}, "ReferenceGrant": {"v1", "v1beta1"}, "BackendTLSPolicy": {"v1"},
}

// outsideCandidates lists the Gateway API objects a response composes or
// asks for at a version the function never composes.
func outsideCandidates(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	check := func(what, apiVersion, kind string) {
		v, ok := strings.CutPrefix(apiVersion, "gateway.networking.k8s.io/")
		if ok && !slices.Contains(candidateVersions[kind], v) {
			out = append(out, fmt.Sprintf("%s: %s %s", what, apiVersion, kind))
		}
	}
	for k, r := range rsp.GetDesired().GetResources() {
		m := r.GetResource().AsMap()
		a, _ := m["apiVersion"].(string)
		kd, _ := m["kind"].(string)
		check("composed "+k, a, kd)
	}
	for k, sel := range rsp.GetRequirements().GetResources() {
		check("required "+k, sel.GetApiVersion(), sel.GetKind())
	}
	slices.Sort(out)
	return out
}

// TestForgedRecordedVersionsAreNotReused: status.route.versions is status,
// which anyone who may write the XR's status can forge within the XRD's
// limits (any string of up to 16 characters). Reused as it is, {route: v9,
// referenceGrant: v7} would compose a ReferenceGrant
// gateway.networking.k8s.io/v7 and ask Crossplane for the HTTPRoute at v9,
// whose fetch fails the whole reconcile. A recorded version that the
// function never composes for its kind is not reused: nothing outside the
// candidates is composed or asked for, and the reconcile settles.
func TestForgedRecordedVersionsAreNotReused(t *testing.T) {
	forged := map[string]string{
		"UnknownVersions":     `{route: v9, referenceGrant: v7, backendTLSPolicy: v1, checkedAt: "2026-12-02T10:05:00Z"}`,
		"HTTPRouteV1Alpha2":   `{route: v1alpha2, referenceGrant: v1, backendTLSPolicy: v1, checkedAt: "2026-12-02T10:05:00Z"}`,
		"BackendTLSPolicyOld": `{route: v1, referenceGrant: v1, backendTLSPolicy: v1alpha3, checkedAt: "2026-12-02T10:05:00Z"}`,
	}
	for name, versions := range forged {
		t.Run(name, func(t *testing.T) {
			x := tlsFlaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: " + versions + "}\n"
			req := testRequest(t, x, allowMonitoring, nil)
			req.Meta = allCapabilities
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if bad := outsideCandidates(rsp); len(bad) > 0 {
				t.Errorf("forged status.route.versions %s are reused as they are: the run composes or asks for versions the function never composes:\n  %s\nrecorded again: %v",
					versions, strings.Join(bad, "\n  "), recordedVersions(rsp))
			}
			// Through Crossplane: the reconcile must not fail.
			s := newSim(t, x, allowMonitoring)
			s.now = testNow
			if r := reconcileVersions(t, s, experimentalCluster, 0); r.err != nil {
				t.Errorf("with forged status.route.versions %s the reconcile fails: %v", versions, r.err)
			}
		})
	}
}

// TestOverriddenVersionsAreNotRecorded: a platform team that pinned
// grpcRouteVersion: v1alpha2 removes the pin on a cluster that serves
// GRPCRoute v1 and v1alpha2: the next reconcile composes v1, which the
// function chooses from the schemas, not the v1alpha2 of the override
// (versions an override chose are never recorded for reuse).
func TestOverriddenVersionsAreNotRecorded(t *testing.T) {
	grpcXR := strings.Replace(flaggerWith("  port: 9898", "  port: 9898\n  kind: GRPCRoute"), "    filters:\n      - type: RequestHeaderModifier\n        requestHeaderModifier:\n          add: [{name: X-Route, value: primary}]\n", "", 1)
	cluster := servedCluster{
		"gateway.networking.k8s.io/v1/GRPCRoute":           {"matches", "backendRefs"},
		"gateway.networking.k8s.io/v1alpha2/GRPCRoute":     {"matches", "backendRefs"},
		"gateway.networking.k8s.io/v1/ReferenceGrant":      nil,
		"gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
	}
	s := newSim(t, grpcXR, allowMonitoring+"grpcRouteVersion: v1alpha2\n")
	r := reconcileVersions(t, s, cluster, 0)
	if r.err != nil || isFatal(r.rsp) {
		t.Fatalf("setup: %v %v", r.err, r.rsp.GetResults())
	}
	if v := composedVersions(r.rsp)["route-grpcroute"]; v != "gateway.networking.k8s.io/v1alpha2" {
		t.Fatalf("setup: the override composes %s", v)
	}
	s.apply(r.rsp)
	s.now = s.now.Add(time.Minute)
	s.input = allowMonitoring // the pin removed
	r = reconcileVersions(t, s, cluster, 0)
	if r.err != nil || isFatal(r.rsp) {
		t.Fatalf("%v %v", r.err, r.rsp.GetResults())
	}
	if v := composedVersions(r.rsp)["route-grpcroute"]; v != "gateway.networking.k8s.io/v1" {
		t.Errorf("with grpcRouteVersion removed from the Input, the run composes GRPCRoute %s as status.route.versions recorded it under the override (%v), not v1, which the function chooses from the schemas", v, recordedVersions(r.rsp))
	}
}

// ---------------------------------------------------------------------------
// Rules of their own x the abort.

// ownRulesXR is a cluster-scoped CanaryRoute whose first rule is one of its
// own (rule, YAML at the rules' indentation), whose canary is the Service
// podinfo-canary, at 20%, with abort and whatever else traffic holds.
func ownRulesXR(rule, traffic string) string {
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  rules:
` + rule + `
    - name: api
  primary: {service: {selector: {app: podinfo}}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 20, abort: true` + traffic + `}
`
}

// recordedPodinfoCanary is a status whose canaryBackends name the given
// backends, as a good run at 20% recorded them.
func recordedCanaryStatus(backends ...string) string {
	return `status:
  rollout:
    phase: Stable
    reason: Manual
    canaryWeight: 20
    primaryWeight: 80
    canaryBackends: [` + strings.Join(backends, ", ") + `]
`
}

const podinfoCanaryID = `{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`

// observedOwnRoute is the route a good run at 20% composed: the rule of its
// own first (its backendRefs as the API server returns them), then the
// weighted rule.
func observedOwnRoute(ruleName, path string, refs ...string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - name: ` + ruleName + `
      matches: [{path: {type: PathPrefix, value: ` + path + `}}]
      backendRefs: [` + strings.Join(refs, ", ") + `]
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}, {group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 20}]
`
}

// canaryShares sums, rule by rule, the share of each rule's requests that
// the backend named goes to (weights as the API server defaults them).
func canaryShares(t *testing.T, rsp *fnv1.RunFunctionResponse, key, name string) []float64 {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		return nil
	}
	spec, _ := r.GetResource().AsMap()["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	var out []float64
	for _, ru := range rules {
		rule, _ := ru.(map[string]any)
		refs, _ := rule["backendRefs"].([]any)
		var total, mine float64
		for _, b := range refs {
			ref, _ := b.(map[string]any)
			w := 1.0
			if x, ok := ref["weight"].(float64); ok {
				w = x
			}
			total += w
			if ref["name"] == name {
				mine += w
			}
		}
		if total > 0 {
			out = append(out, mine/total)
		} else {
			out = append(out, 0)
		}
	}
	return out
}

// TestRescuedAbortZeroesCanaryInRuleOfItsOwn: "An emergency abort is never
// blocked". A rule of its own that splits /beta between the canary and a
// legacy Service does not stop the rescue of a broken spec: the canary,
// trusted because the weighted rule holds it beside the primary, gets
// nothing in either rule, and the legacy Service all of /beta.
func TestRescuedAbortZeroesCanaryInRuleOfItsOwn(t *testing.T) {
	rule := `    - name: beta
      matches: [{path: {type: PathPrefix, value: /beta}}]
      backendRefs: [{name: podinfo-canary, port: 9898, weight: 50}, {name: legacy, port: 80, weight: 50}]`
	x := ownRulesXR(rule, ", wieght: 3") + recordedCanaryStatus(podinfoCanaryID)
	observed := map[string]string{
		"route-httproute": observedOwnRoute("beta", "/beta", `{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`, `{group: "", kind: Service, name: legacy, port: 80, weight: 50}`),
		"service-primary": observedPrimary,
	}
	req, rsp := attackRun(t, x, allowTest, observed, nil)
	v := viewOf(t, rsp)
	assertXRDAccepts(t, req, rsp)
	if isFatal(rsp) {
		t.Errorf("the abort of a broken spec is not applied because a rule of its own sends to the canary beside another backend: %v", v.Results)
		return
	}
	for i, s := range canaryShares(t, rsp, "route-httproute", "podinfo-canary") {
		if s > 0 {
			t.Errorf("rule %d still sends %.0f%% to the canary after the rescued abort", i, s*100)
		}
	}
}

// TestAbortCutsCanaryFromRulesOfTheirOwn: with traffic.abort, a rule of its
// own that sends /preview to the canary's Service is left out, so that
// "aborted: all traffic goes to the primary" holds; the same whether the
// spec can be composed (the normal abort) or not (the rescue).
func TestAbortCutsCanaryFromRulesOfTheirOwn(t *testing.T) {
	rule := `    - name: preview
      matches: [{path: {type: PathPrefix, value: /preview}}]
      backendRefs: [{name: podinfo-canary, port: 9898}]`
	observed := map[string]string{
		"route-httproute": observedOwnRoute("preview", "/preview", `{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 1}`),
		"service-primary": observedPrimary,
	}
	for name, broken := range map[string]string{"ValidSpec": "", "BrokenSpec": ", wieght: 3"} {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, ownRulesXR(rule, broken)+recordedCanaryStatus(podinfoCanaryID), allowTest, observed, nil)
			v := viewOf(t, rsp)
			assertXRDAccepts(t, req, rsp)
			for i, s := range canaryShares(t, rsp, "route-httproute", "podinfo-canary") {
				if s > 0 {
					t.Errorf("aborted (status: %v %q), yet composed rule %d sends %.0f%% of its requests to the canary", v.Rollout["phase"], v.Rollout["message"], i, s*100)
				}
			}
		})
	}
}

// TestAbortLeavesDrainedRuleOfItsOwn: docs/reference.md, "An abort, or a
// Failed rollout, leaves these rules alone unless they send traffic to the
// canary". A drained rule of its own (every weight 0: the gateway answers
// 500 there) never sent to the canary: the abort leaves it drained, instead
// of giving its backend all of /drain; the same whether the spec can be
// composed (the normal abort) or not (the rescue).
func TestAbortLeavesDrainedRuleOfItsOwn(t *testing.T) {
	rule := `    - name: drain
      matches: [{path: {type: PathPrefix, value: /drain}}]
      backendRefs: [{name: legacy, port: 80, weight: 0}]`
	observed := map[string]string{
		"route-httproute": observedOwnRoute("drain", "/drain", `{group: "", kind: Service, name: legacy, port: 80, weight: 0}`),
		"service-primary": observedPrimary,
	}
	standard := crdschema.GatewayAPI(t, crdschema.Standard)
	experimental := crdschema.GatewayAPI(t, crdschema.Experimental)
	cases := map[string]struct {
		reason string
		broken string
		want   [][]string
	}{
		"ValidSpec": {
			reason: "The abort composes the drained rule as written, and the weighted rule with the canary at 0.",
			want:   [][]string{{"Service/legacy:80=0"}, {"Service/podinfo-primary:9898=100", "Service/podinfo-canary:9898=0"}},
		},
		"BrokenSpec": {
			reason: "The rescue keeps the route as last observed, the canary at 0 and the drained rule as it was.",
			broken: ", wieght: 3",
			want:   [][]string{{"Service/legacy:80=0"}, {"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, ownRulesXR(rule, tc.broken)+recordedCanaryStatus(podinfoCanaryID), allowTest, observed, nil)
			v := viewOf(t, rsp)
			if isFatal(rsp) {
				t.Fatalf("%s\nthe abort is not applied: %v", tc.reason, v.Results)
			}
			checkComposed(t, name, rsp, standard, experimental)
			assertXRDAccepts(t, req, rsp)
			if diff := cmp.Diff(tc.want, v.Weights); diff != "" {
				t.Errorf("%s\naborted (%v): -want, +got:\n%s", tc.reason, v.Rollout["phase"], diff)
			}
		})
	}
}

// TestRescuedAbortDistrustsRecordNamingRuleOfItsOwnBackend: "the abort
// trusts a canary record only where the primary (as the spec
// resolves it or as observed) stands beside it". A forged canaryBackends
// naming the CDN Service of the /assets rule of its own is borne out by no
// rule weighing it against the primary: the abort is not applied (and says
// so), rather than deleting /assets, leaving the real canary at 20% and
// writing "all traffic goes to the primary".
func TestRescuedAbortDistrustsRecordNamingRuleOfItsOwnBackend(t *testing.T) {
	cdn := `{group: "", kind: Service, namespace: test, name: cdn-cache, port: 80}`
	cases := map[string]struct {
		rule, observedRefs string
		// observed, when set, is the observed route.
		observed string
	}{
		"SingleBackend": {
			rule: `    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: cdn-cache, port: 80}]`,
			observedRefs: `{group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`,
		},
		"BesideThePrimary": {
			// The shape of a weighted rule, but a rule of its own by
			// name: it bears nothing out.
			rule: `    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]`,
			observedRefs: `{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 1}, {group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`,
		},
		"UnnamedBesideThePrimary": {
			// A rule of its own needs no name: where the spec puts it
			// says it is no weighted rule.
			rule: `    - matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]`,
			observed: strings.Replace(observedOwnRoute("static", "/assets",
				`{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 1}, {group: "", kind: Service, name: cdn-cache, port: 80, weight: 1}`),
				"    - name: static\n      matches", "    - matches", 1),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := ownRulesXR(tc.rule, ", wieght: 3") + recordedCanaryStatus(cdn)
			route := tc.observed
			if route == "" {
				route = observedOwnRoute("static", "/assets", tc.observedRefs)
			}
			observed := map[string]string{
				"route-httproute": route,
				"service-primary": observedPrimary,
			}
			_, rsp := attackRun(t, x, allowTest, observed, nil)
			v := viewOf(t, rsp)
			want := "status.rollout.canaryBackends names Service test/cdn-cache, which no rule of the route holds beside the primary's backend"
			if !isFatal(rsp) || !slices.ContainsFunc(v.Results, func(r string) bool { return strings.Contains(r, want) }) {
				t.Errorf("a forged record naming a rule of its own's backend: want the abort not applied (%q), got %v, canary shares by rule %v, status %v",
					want, v.Results, canaryShares(t, rsp, "route-httproute", "podinfo-canary"), v.Rollout)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rules of their own x holds and the policy.

// TestHoldDropsRefusedBackendOfRuleOfItsOwn: "A hold never
// re-opens what the policy closed: holding the previous route ... re-emits
// neither a ReferenceGrant nor a backend reference that the current Input
// no longer allows". Paused at step 1 with revision v3 pending (a hold),
// the platform stops allowing Envoy Gateway Backends; the tenant drops the
// rule of its own that used one. The held route no longer sends that rule's
// requests to the Backend (in the route's own namespace no gateway would
// refuse it), even where the rule split them with the canary (a rule of its
// own is no weighted rule, so the Backend is no primary); it keeps the
// weighted rule as held, and a drained rule of its own (weight 0) as it was:
// a hold keeps the weights the previous run composed.
func TestHoldDropsRefusedBackendOfRuleOfItsOwn(t *testing.T) {
	x := `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
    - name: api
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
` + pausedStatus(`{group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9898}`)
	weighted := []string{"Service/podinfo:9898=50", "Service/podinfo-v2:9898=50"}
	cases := map[string]struct {
		reason string
		rules  string // the previous route's rules before the weighted one
		want   [][]string
	}{
		"RuleOfItsOwn": {
			reason: "The /assets rule, whose only backend is the Backend, goes.",
			rules: `
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]`,
			want: [][]string{weighted},
		},
		"SplitWithTheCanary": {
			reason: "The /beta rule split its requests between the Backend and the canary: the Backend goes, the canary keeps /beta.",
			rules: `
    - name: beta
      matches: [{path: {type: PathPrefix, value: /beta}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: beta-backend, weight: 1}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 1}]`,
			want: [][]string{{"Service/podinfo-v2:9898=1"}, weighted},
		},
		"DrainedRuleKept": {
			reason: "A drained rule of its own (every weight 0: the gateway answers 500 there) that the hold does not change stays drained.",
			rules: `
    - name: drain
      matches: [{path: {type: PathPrefix, value: /drain}}]
      backendRefs: [{group: "", kind: Service, name: legacy, port: 80, weight: 0}]
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]`,
			want: [][]string{{"Service/legacy:80=0"}, weighted},
		},
	}
	standard := crdschema.GatewayAPI(t, crdschema.Standard)
	experimental := crdschema.GatewayAPI(t, crdschema.Experimental)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := map[string]string{"route-httproute": `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway}]
  rules:` + tc.rules + `
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}]
`}
			req, rsp := attackRun(t, x, allowTest+"allowedBackendKinds: [{group: \"\", kind: Service}]\n", observed, nil)
			v := viewOf(t, rsp)
			if isFatal(rsp) {
				t.Fatalf("%s\nthe hold is refused: %v", tc.reason, v.Results)
			}
			checkComposed(t, name, rsp, standard, experimental)
			assertXRDAccepts(t, req, rsp)
			if diff := cmp.Diff(tc.want, v.Weights); diff != "" {
				t.Errorf("%s\nthe held route (rollout %v %q): -want, +got:\n%s", tc.reason, v.Rollout["phase"], v.Rollout["message"], diff)
			}
		})
	}
}

// TestRulesOfTheirOwnPassThePolicy: every backend a rule of its own names,
// and every mirror on its backendRefs, passes the Input's policy like a
// side's, and a refusal is a Fatal naming spec.rules[i].backendRefs[j]
// (docs/reference.md, "Rules of their own"); allowed cross-namespace ones
// get a grant naming exactly them, and a namespaced XR gets
// GrantNotComposable. Held, as far as tried.
func TestRulesOfTheirOwnPassThePolicy(t *testing.T) {
	xr := func(backendRefs string) string {
		return strings.Replace(ownRulesXR(`    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: `+backendRefs, ""), ", abort: true", "", 1)
	}
	input := allowTest + "allowedBackendNamespaces: [cdn]\nallowedBackendKinds: [{group: \"\", kind: Service}, {group: networking.istio.io, kind: Hostname}]\n"
	cases := map[string]struct {
		refs  string
		fatal string // a part of the Fatal; "" for none
		grant []string
	}{
		"NamespaceRefused":   {refs: `[{name: x, port: 80}, {name: cdn-cache, namespace: kube-system, port: 80}]`, fatal: `spec.rules[0].backendRefs[1]: Forbidden`},
		"KindRefused":        {refs: `[{group: gateway.envoyproxy.io, kind: Backend, name: cdn}]`, fatal: `spec.rules[0].backendRefs[0]: Forbidden`},
		"MetadataHostname":   {refs: `[{group: networking.istio.io, kind: Hostname, name: metadata.google.internal, port: 80}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"LocalhostHostname":  {refs: `[{group: networking.istio.io, kind: Hostname, name: api.localhost, port: 80}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"ClusterHostname":    {refs: `[{group: networking.istio.io, kind: Hostname, name: kubernetes.default.svc.cluster.local, port: 443}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"MirrorRefused":      {refs: `[{name: cdn-cache, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: x, namespace: kube-system, port: 80}}}]}]`, fatal: `spec.rules[0].backendRefs[0].filters[0].requestMirror.backendRef`},
		"DefaultsWrittenOut": {refs: `[{group: "", kind: Service, name: cdn-cache, namespace: cdn, port: 80}]`, grant: []string{"from HTTPRoute test", "to Service cdn-cache"}},
		"TwoInOneGrant":      {refs: `[{name: a, namespace: cdn, port: 80}, {name: b, namespace: cdn, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: c, namespace: cdn, port: 80}}}]}]`, grant: []string{"from HTTPRoute test", "to Service a", "to Service b", "to Service c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, xr(tc.refs), input, nil, nil)
			v := viewOf(t, rsp)
			if tc.fatal != "" {
				if !isFatal(rsp) || !strings.Contains(strings.Join(v.Results, "\n"), tc.fatal) {
					t.Errorf("want a Fatal naming %s, got %v (weights %v)", tc.fatal, v.Results, v.Weights)
				}
				return
			}
			assertXRDAccepts(t, req, rsp)
			if got := v.Grants["cdn"]; !slices.Equal(got, tc.grant) {
				t.Errorf("grant in cdn: got %v, want %v (results %v)", got, tc.grant, v.Results)
			}
		})
	}
	t.Run("GrantGoesWithTheRule", func(t *testing.T) {
		s := newSim(t, xr(`[{name: cdn-cache, namespace: cdn, port: 80}]`), input)
		r := s.run(0)
		if !slices.Contains(r.resources, "referencegrant-cdn") {
			t.Fatalf("setup: no grant: %v %v", r.resources, r.events)
		}
		spec := s.xr["spec"].(map[string]any)
		spec["rules"] = spec["rules"].([]any)[1:]
		r = s.run(0)
		if slices.Contains(r.resources, "referencegrant-cdn") || r.fatal != "" {
			t.Errorf("the rule of its own is gone, yet its grant is still composed: %v %v", r.resources, r.fatal)
		}
	})
	t.Run("NamespacedXR", func(t *testing.T) {
		x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
    - {name: static, matches: [{path: {type: PathPrefix, value: /assets}}], backendRefs: [{name: cdn-cache, namespace: cdn, port: 80}]}
    - {name: api}
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}}
  traffic: {weight: 10}`)
		_, rsp := attackRun(t, x, input, nil, nil)
		v := viewOf(t, rsp)
		if !slices.ContainsFunc(v.Conditions, func(c string) bool {
			return strings.HasPrefix(c, "ReferenceGrantsReady=False GrantNotComposable") && strings.Contains(c, "in namespace cdn") && strings.Contains(c, "to Service cdn-cache")
		}) {
			t.Errorf("a namespaced XR with a cross-namespace rule backend: want ReferenceGrantsReady False GrantNotComposable naming the grant, got %v", v.Conditions)
		}
	})
}

// ---------------------------------------------------------------------------
// Rules of their own x the rollout.

// apiServerDefaults writes into the sim's route what the API server's
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

// TestRulesOfTheirOwnDoNotStopOrJoinTheRollout: a progressive rollout with
// A/B matches, a mirror and two-sided stickiness, beside a redirect-only
// rule and a static rule of their own, through the simulated Crossplane
// (the API server defaulting the backendRefs): it must reach Succeeded, the
// rules of their own must stay exactly as written on every run (no
// companion, cookie or mirror), and the canary-only rules must end with it.
func TestRulesOfTheirOwnDoNotStopOrJoinTheRollout(t *testing.T) {
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
    - name: legacy
      matches: [{path: {type: PathPrefix, value: /old}}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}, statusCode: 301}}]
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: cdn-cache, port: 80}]
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    matches: [{headers: [{name: x-canary, value: "1"}]}]
    mirror: {percent: 10}
    sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`)
	s := newSim(t, x, emptyInput)
	want := []string{"f:RequestRedirect", "b:cdn-cache=<nil>"}
	var last simRun
	for i := range 16 {
		last = s.run(0)
		apiServerDefaults(s)
		if last.fatal != "" {
			t.Fatalf("run %d is Fatal: %s", i, last.fatal)
		}
		shape := routeShape(last)
		if len(shape) < 3 || shape[0] != want[0] || shape[1] != want[1] {
			t.Errorf("run %d (%v step %v): the rules of their own are not as written: %v", i, last.out["phase"], last.out["step"], shape)
		}
		if last.out["phase"] == "Succeeded" {
			break
		}
	}
	t.Log("\n" + s.describe())
	if last.out["phase"] != "Succeeded" {
		t.Fatalf("the rollout never succeeds beside rules of their own: %v %q", last.out["phase"], last.out["message"])
	}
	if shape := routeShape(last); len(shape) != 3 {
		t.Errorf("once Succeeded the route has %d rules, want the 2 of their own and the weighted one: %v", len(shape), shape)
	}
}

// TestRuleLimitCountsRulesOfTheirOwn: "at most 16 rules after companion
// rules (rules of their own count)". 10 rules of their own and 3 weighted
// rules with A/B matches and session affinity (3 companions each while
// active) make 22 rules: a Fatal from the start, naming spec.rules, never a
// route the API server refuses halfway through the rollout.
func TestRuleLimitCountsRulesOfTheirOwn(t *testing.T) {
	var rules strings.Builder
	for i := range 10 {
		fmt.Fprintf(&rules, "    - {name: own%d, matches: [{path: {type: PathPrefix, value: /own%d}}], backendRefs: [{name: cdn, port: 80}]}\n", i, i)
	}
	for i := range 3 {
		fmt.Fprintf(&rules, "    - {name: w%d, matches: [{path: {type: PathPrefix, value: /w%d}}]}\n", i, i)
	}
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
` + rules.String() + `  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic:
    weight: 0
    matches: [{headers: [{name: x-canary, value: "1"}]}]
    sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`)
	_, rsp := attackRun(t, x, emptyInput, nil, nil)
	v := viewOf(t, rsp)
	if !isFatal(rsp) || !strings.Contains(strings.Join(v.Results, ""), "spec.rules") {
		t.Errorf("want a Fatal naming spec.rules for 22 rules while active, got %v, %d rules", v.Results, len(v.Weights))
	}
}

// ---------------------------------------------------------------------------
// Stickiness, retries, backend TLS and UDPRoute: what the function accepts
// the CRDs accept, and what it refuses is a Fatal naming the field.

// coverageXR is a cluster-scoped CanaryRoute of a kind, with the rule,
// the sides' extras and the traffic given.
func coverageXR(kind, rule, primaryExtra, canaryExtra, traffic string) string {
	hostnames := ""
	if kind == "TLSRoute" {
		hostnames = "  hostnames: [www.example.com]\n"
	}
	rules := ""
	if rule != "" {
		rules = "  rules:\n    - " + rule + "\n"
	}
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  kind: ` + kind + `
` + hostnames + `  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
` + rules + `  primary: {service: {selector: {app: podinfo}}` + primaryExtra + `}
  canary: {service: {selector: {app: podinfo-canary}}` + canaryExtra + `, revision: v2}
  traffic: {weight: 20` + traffic + `}
`
}

func TestCoverageFieldsRefusedWithTheirField(t *testing.T) {
	cases := map[string]struct {
		xr    string
		field string // the field the Fatal must name
	}{
		"SameCookieNames":           {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, primaryCookieName: canary, maxAge: 1h}`), "spec.traffic.sessionAffinity.primaryCookieName"},
		"SetCookieOnPrimary":        {coverageXR("HTTPRoute", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: SET-COOKIE, value: a=1}]}}]`, "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`), "spec.primary.filters[0].responseHeaderModifier.add[0].name"},
		"CanaryRemovesSetCookie":    {coverageXR("HTTPRoute", "", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [set-cookie]}}]`, `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.canary.filters[0].responseHeaderModifier.remove[0]"},
		"PrimaryRemovesSetCookie":   {coverageXR("HTTPRoute", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [Set-Cookie]}}]`, "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`), "spec.primary.filters[0].responseHeaderModifier.remove[0]"},
		"RuleSetsSetCookie":         {coverageXR("HTTPRoute", `{name: api, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: Set-Cookie, value: "x=1"}]}}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].filters[0].responseHeaderModifier.set[0].name"},
		"RuleRemovesSetCookie":      {coverageXR("HTTPRoute", `{name: api, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [Set-Cookie]}}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].filters[0].responseHeaderModifier.remove[0]"},
		"MirrorMatchOnCookie":       {coverageXR("HTTPRoute", "", "", "", `, mirror: {matches: [{headers: [{name: Cookie, value: a}]}]}, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.traffic.mirror.matches[0].headers[0].name"},
		"ABAndMirrorOnOneHeader":    {coverageXR("HTTPRoute", "", "", "", `, matches: [{headers: [{name: x-canary, type: RegularExpression, value: "1|2"}]}], mirror: {matches: [{method: GET, headers: [{name: x-canary, value: "2"}]}]}`), "spec.traffic.mirror.matches[0]"},
		"CookieMatchOnRule":         {coverageXR("HTTPRoute", `{name: api, matches: [{path: {type: PathPrefix, value: /}, headers: [{name: cookie, value: a}]}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].matches[0].headers[0].name"},
		"PathCRLF":                  {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {path: "/a\r\nSet-Cookie: x=1"}}`), "spec.traffic.sessionAffinity.attributes.path"},
		"PathSemicolon":             {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {path: "/; Domain=evil.example"}}`), "spec.traffic.sessionAffinity.attributes.path"},
		"DomainInjection":           {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {domain: "example.com; SameSite=None"}}`), "spec.traffic.sessionAffinity.attributes.domain"},
		"SameSiteNoneInsecure":      {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {sameSite: None}}`), "spec.traffic.sessionAffinity.attributes.sameSite"},
		"PersistenceWithPrimary":    {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h, mode: SessionPersistence}`), "spec.traffic.sessionAffinity.primaryCookieName"},
		"PersistenceWithAttrs":      {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, mode: SessionPersistence, attributes: {secure: true}}`), "spec.traffic.sessionAffinity.attributes"},
		"PersistenceOnTCPRoute":     {coverageXR("TCPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, mode: SessionPersistence}`), "spec.traffic.sessionAffinity"},
		"CookieOnGRPCRoute":         {coverageXR("GRPCRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.traffic.sessionAffinity"},
		"MaxAgeTooLong":             {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 100000h}`), "spec.traffic.sessionAffinity.maxAge"},
		"MaxAgeUnderASecond":        {coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 999ms}`), "spec.traffic.sessionAffinity.maxAge"},
		"RetryCodeLow":              {coverageXR("HTTPRoute", `{name: api, retry: {codes: [399]}}`, "", "", ""), "spec.rules[0].retry.codes[0]"},
		"RetryCodeHigh":             {coverageXR("HTTPRoute", `{name: api, retry: {codes: [600]}}`, "", "", ""), "spec.rules[0].retry.codes[0]"},
		"RetryCodeTwice":            {coverageXR("HTTPRoute", `{name: api, retry: {codes: [503, 503]}}`, "", "", ""), "spec.rules[0].retry.codes[1]"},
		"RetryNoAttempts":           {coverageXR("HTTPRoute", `{name: api, retry: {attempts: 0}}`, "", "", ""), "spec.rules[0].retry.attempts"},
		"RetryBadBackoff":           {coverageXR("HTTPRoute", `{name: api, retry: {backoff: 1d}}`, "", "", ""), "spec.rules[0].retry.backoff"},
		"RetryOnGRPCRoute":          {coverageXR("GRPCRoute", `{name: api, retry: {attempts: 2}}`, "", "", ""), "spec.rules[0].retry"},
		"RetryOnTCPRoute":           {coverageXR("TCPRoute", `{name: api, retry: {attempts: 2}}`, "", "", ""), "spec.rules[0].retry"},
		"TLSOnBackendRef":           {strings.Replace(coverageXR("HTTPRoute", "", "", "", ""), "canary: {service: {selector: {app: podinfo-canary}}", "canary: {backendRef: {name: c}, tls: {hostname: c.example.com, wellKnownCACertificates: System}", 1), "spec.canary.tls"},
		"TLSOnTLSRoute":             {coverageXR("TLSRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), "spec.primary.tls"},
		"TLSOnUDPRoute":             {coverageXR("UDPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), "spec.primary.tls"},
		"TLSWildcard":               {coverageXR("HTTPRoute", "", `, tls: {hostname: "*.example.com", wellKnownCACertificates: System}`, "", ""), "spec.primary.tls.hostname"},
		"TLSBothCAKinds":            {coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`, "", ""), "spec.primary.tls"},
		"TLSNoCA":                   {coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com}`, "", ""), "spec.primary.tls"},
		"TLSExternalNameNotAllowed": {strings.Replace(coverageXR("HTTPRoute", "", "", "", ""), "primary: {service: {selector: {app: podinfo}}", "primary: {externalName: p.example.com, tls: {hostname: p.example.com, wellKnownCACertificates: System}", 1), "spec.primary.externalName"},
		"UDPHostnames":              {strings.Replace(coverageXR("UDPRoute", "", "", "", ""), "  port: 9898", "  hostnames: [a.example.com]\n  port: 9898", 1), "spec.hostnames"},
		"UDPFilters":                {coverageXR("UDPRoute", "", `, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: a, value: b}]}}]`, "", ""), "spec.primary.filters"},
		"UDPMatches":                {coverageXR("UDPRoute", `{name: x, matches: [{path: {type: PathPrefix, value: /}}]}`, "", "", ""), "spec.rules[0].matches"},
		"UDPRuleOfItsOwn":           {coverageXR("UDPRoute", `{name: x, backendRefs: [{name: a, port: 53}]}`, "", "", ""), "spec.rules[0].backendRefs"},
		"UDPABMatches":              {coverageXR("UDPRoute", "", "", "", `, matches: [{headers: [{name: a, value: b}]}]`), "spec.traffic.matches"},
		"EveryRuleOfItsOwn":         {coverageXR("HTTPRoute", `{name: a, backendRefs: [{name: a, port: 80}]}`, "", "", ""), "spec.rules"},
		"RedirectBesideBackends":    {coverageXR("HTTPRoute", `{name: a, filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}], backendRefs: [{name: a, port: 80}]}`+"\n    - {name: b}", "", "", ""), "spec.rules[0].filters[0]"},
		"RuleBackendWithoutPort":    {coverageXR("HTTPRoute", `{name: a, matches: [{path: {type: PathPrefix, value: /a}}], backendRefs: [{name: a}]}`+"\n    - {name: b}", "", "", ""), "spec.rules[0].backendRefs[0]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			input := allowTest
			_, rsp := attackRun(t, tc.xr, input, nil, nil)
			v := viewOf(t, rsp)
			if !isFatal(rsp) {
				t.Errorf("accepted; want a Fatal naming %s (weights %v)", tc.field, v.Weights)
				return
			}
			if msg := strings.Join(v.Results, "\n"); !strings.Contains(msg, tc.field) {
				t.Errorf("the Fatal does not name %s: %s", tc.field, msg)
			}
		})
	}
}

// TestBackendTLSHostnameRefusesIPAddresses: tls.hostname is "a DNS name
// (no IP, no wildcard)". The BackendTLSPolicy CRD's PreciseHostname pattern
// admits 10.0.0.1, but SNI cannot carry an IP address (RFC 6066), so
// gateways send none or verify inconsistently: a Fatal naming the field.
func TestBackendTLSHostnameRefusesIPAddresses(t *testing.T) {
	for _, host := range []string{"10.0.0.1", "169.254.169.254", "127.0.0.1", "::1", "fd00::1"} {
		t.Run(host, func(t *testing.T) {
			_, rsp := attackRun(t, coverageXR("HTTPRoute", "", `, tls: {hostname: "`+host+`", wellKnownCACertificates: System}`, "", ""), allowTest, nil, nil)
			if msg := strings.Join(viewOf(t, rsp).Results, ""); !isFatal(rsp) || !strings.Contains(msg, "spec.primary.tls.hostname") {
				t.Errorf("tls.hostname %s: want a Fatal naming spec.primary.tls.hostname, got %s (composed %v)", host, msg, viewOf(t, rsp).Resources)
			}
		})
	}
}

// TestBackendTLSCACertificateRefsPassedAsWritten: docs/reference.md,
// "Backend TLS", decision: ConfigMaps are core support, other kinds (a
// Secret, Envoy Gateway's ClusterTrustBundle) implementation-specific, and
// the function passes what the CRD admits as written, for the gateway to
// judge in ResolvedRefs.
func TestBackendTLSCACertificateRefsPassedAsWritten(t *testing.T) {
	for name, ref := range map[string]map[string]any{
		"ConfigMap":          {"group": "", "kind": "ConfigMap", "name": "ca"},
		"Secret":             {"group": "", "kind": "Secret", "name": "ca"},
		"ClusterTrustBundle": {"group": "certificates.k8s.io", "kind": "ClusterTrustBundle", "name": "ca"},
	} {
		t.Run(name, func(t *testing.T) {
			flow := fmt.Sprintf("{group: %q, kind: %s, name: %s}", ref["group"], ref["kind"], ref["name"])
			req, rsp := attackRun(t, coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, caCertificateRefs: [`+flow+`]}`, "", ""), allowTest, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("caCertificateRefs %s refused: %v", flow, viewOf(t, rsp).Results)
			}
			assertXRDAccepts(t, req, rsp)
			policy := rsp.GetDesired().GetResources()["backendtlspolicy-primary"].GetResource().AsMap()
			validation, _ := policy["spec"].(map[string]any)["validation"].(map[string]any)
			if diff := cmp.Diff([]any{ref}, validation["caCertificateRefs"]); diff != "" {
				t.Errorf("caCertificateRefs not composed as written: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestCoverageOutputsPassTheCRDs: specs at the edges of the new fields
// that the function accepts compose routes, grants and BackendTLSPolicies
// that the Gateway API CRDs (standard and experimental) accept, Services
// the core API accepts as far as checked, and a status the XRD admits.
// Held, as far as tried.
func TestCoverageOutputsPassTheCRDs(t *testing.T) {
	standard := crdschema.GatewayAPI(t, crdschema.Standard)
	experimental := crdschema.GatewayAPI(t, crdschema.Experimental)
	cases := map[string]string{
		"CookieMaxAgeLongest":   coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, primaryCookieName: p, maxAge: 99999h, attributes: {path: "/a b%20", domain: example.com, secure: true, sameSite: None}}`),
		"CookieMaxAgeFraction":  coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 1.999s}`),
		"PersistenceLongest":    coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 99999h, mode: SessionPersistence}`),
		"PersistenceOdd":        coverageXR("GRPCRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 90061.5s, mode: SessionPersistence}`),
		"RetryOnOwnAndWeighted": coverageXR("HTTPRoute", `{name: api, retry: {codes: [500, 599, 400], attempts: 1, backoff: 1ms}}`+"\n    - {name: s, matches: [{path: {type: PathPrefix, value: /s}}], backendRefs: [{name: cdn, port: 80}], retry: {attempts: 3}}", "", "", `, matches: [{headers: [{name: x, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h}`),
		"TLSBothSides":          coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System, subjectAltNames: [{type: Hostname, hostname: "*.example.com"}, {type: URI, uri: "spiffe://cluster.local/ns/test/sa/p"}]}`, `, tls: {hostname: c.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`, ""),
		"UDP":                   strings.Replace(coverageXR("UDPRoute", "", "", "", ""), "canary: {service: {selector: {app: podinfo-canary}}", "canary: {backendRef: {name: dns, namespace: monitoring, port: 53}", 1),
		"GRPCOwnRule":           coverageXR("GRPCRoute", `{name: legacy, matches: [{method: {service: legacy.v1.Svc}}], backendRefs: [{name: legacy, port: 9000, weight: 3}]}`+"\n    - {name: api}", "", "", ""),
	}
	for name, x := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, x, allowMonitoring, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("refused: %v", viewOf(t, rsp).Results)
			}
			checkComposed(t, name, rsp, standard, experimental)
			assertXRDAccepts(t, req, rsp)
			if name == "UDP" {
				d := rsp.GetDesired().GetResources()
				port := d["service-primary"].GetResource().AsMap()["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)
				if port["protocol"] != "UDP" || port["name"] != "udp" {
					t.Errorf("UDPRoute proxy Service port: %v", port)
				}
				g := d["referencegrant-monitoring"].GetResource().AsMap()["spec"].(map[string]any)["from"].([]any)[0].(map[string]any)
				if g["kind"] != "UDPRoute" {
					t.Errorf("UDPRoute grant from: %v", g)
				}
			}
		})
	}
}

// TestBackendTLSPolicyTakeoverAndDigest: a BackendTLSPolicy of another
// owner with the proxy Service's name is never composed over (a Fatal names
// it); a changed canary tls restarts a progressive rollout at step 0, a
// changed primary tls does not, and an unchanged canary keeps its digest
// across runs. Held, as far as tried.
func TestBackendTLSPolicyTakeoverAndDigest(t *testing.T) {
	t.Run("Takeover", func(t *testing.T) {
		x := coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", "")
		theirs := `{apiVersion: gateway.networking.k8s.io/v1, kind: BackendTLSPolicy, metadata: {name: podinfo-primary, namespace: test, labels: {team: other}}, spec: {targetRefs: [{group: "", kind: Service, name: podinfo-primary}], validation: {hostname: other.example.com, wellKnownCACertificates: System}}}`
		_, rsp := attackRun(t, x, allowTest, nil, map[string][]string{"existing-backendtlspolicy-primary": {theirs}})
		v := viewOf(t, rsp)
		if !isFatal(rsp) || !strings.Contains(strings.Join(v.Results, ""), "BackendTLSPolicy test/podinfo-primary") {
			t.Errorf("another owner's BackendTLSPolicy with the proxy Service's name: want a Fatal naming it, got %v", v.Results)
		}
	})
	t.Run("Digest", func(t *testing.T) {
		x := strings.Replace(coverageXR("HTTPRoute", "", "", "", ""), "  traffic: {weight: 20}", "  traffic: {steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 10m}, {weight: 100}]}", 1)
		s := newSim(t, x, allowTest)
		var r simRun
		for range 6 {
			if r = s.run(0); r.out["step"] == float64(1) {
				break
			}
		}
		if r.out["step"] != float64(1) {
			t.Fatalf("setup: %s", s.describe())
		}
		digest := r.out["canaryDigest"]
		r = s.run(0)
		if r.out["canaryDigest"] != digest || r.out["step"] != float64(1) {
			t.Errorf("an unchanged canary changes its digest or step: %v -> %v", digest, r.out)
		}
		s.setSpec("primary.tls", map[string]any{"hostname": "p.example.com", "wellKnownCACertificates": "System"})
		r = s.run(0)
		if r.out["step"] != float64(1) || r.fatal != "" {
			t.Errorf("tls on the primary restarts the rollout or fails: %v %s", r.out, r.fatal)
		}
		s.setSpec("canary.tls", map[string]any{"hostname": "c.example.com", "wellKnownCACertificates": "System"})
		r = s.run(0)
		if r.out["step"] != float64(0) || r.out["reason"] == nil {
			t.Errorf("tls added to the canary does not restart the rollout: %v", r.out)
		}
	})
}

// TestBackendTLSNeedsSchemas: under a caller that advertises its
// capabilities but hands no CRD schemas (Crossplane v2.0 and v2.1), tls is a
// Fatal naming the field: the run would ask for a BackendTLSPolicy v1, and
// on a cluster that does not serve it Crossplane fails every reconcile on
// that request, an emergency abort's too. The abort of such a spec is
// rescued like any other.
func TestBackendTLSNeedsSchemas(t *testing.T) {
	v21 := &fnv1.RequestMeta{Capabilities: []fnv1.Capability{
		fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES, fnv1.Capability_CAPABILITY_CONDITIONS,
	}}
	run := func(t *testing.T, xrYAML string, observed map[string]string) *fnv1.RunFunctionResponse {
		t.Helper()
		req := testRequest(t, xrYAML, allowTest, observed)
		req.Meta = v21
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return rsp
	}
	withTLS := coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", "")
	rsp := run(t, withTLS, nil)
	if msg := strings.Join(viewOf(t, rsp).Results, ""); !isFatal(rsp) || !strings.Contains(msg, "spec.primary.tls: Forbidden: a BackendTLSPolicy needs a caller that hands the function CRD schemas") {
		t.Errorf("tls under Crossplane v2.1: want a Fatal naming spec.primary.tls, got %s", msg)
	}
	if got := rsp.GetRequirements().GetResources(); len(got) > 0 {
		t.Errorf("the Fatal asks for %d objects, the BackendTLSPolicy among them: %v", len(got), got)
	}
	if rsp := run(t, coverageXR("HTTPRoute", "", "", "", ""), nil); isFatal(rsp) {
		t.Errorf("without tls the same caller is refused: %v", viewOf(t, rsp).Results)
	}
}

// TestServedVersionsReachedOnClustersThatNeedThem: docs/reference.md,
// "Versions as the cluster serves them": on a cluster that serves TCPRoute
// v1alpha2 only (Gateway API before v1.6, example/served-versions) the
// function composes v1alpha2 with no Input switch; a cluster that serves no
// BackendTLSPolicy, no ReferenceGrant or no Gateway API at all gets a
// Fatal naming spec.<side>.tls, spec.referenceGrants or spec.kind.
// Crossplane fetches required resources before schemas, and a kind the
// cluster does not serve at that version fails the reconcile ("no matches
// for kind", crossplane v2.2.0 internal/xfn/required_resources.go): the
// first call, which has no schemas yet, asks for the schemas alone, never
// for objects at the default versions. crossplane render would hide it: its
// fetcher only filters the files it is given.
func TestServedVersionsReachedOnClustersThatNeedThem(t *testing.T) {
	tcpXR := coverageXR("TCPRoute", "", "", "", "")
	cases := map[string]struct {
		xr      string
		cluster servedCluster
		want    string // the composed route's apiVersion, or a part of the Fatal
	}{
		"TCPRouteV1Alpha2Only": {tcpXR, servedCluster{
			"gateway.networking.k8s.io/v1alpha2/TCPRoute": {"backendRefs"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "gateway.networking.k8s.io/v1alpha2"},
		"GRPCRouteV1Alpha2Only": {coverageXR("GRPCRoute", "", "", "", ""), servedCluster{
			"gateway.networking.k8s.io/v1alpha2/GRPCRoute": {"matches"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "gateway.networking.k8s.io/v1alpha2"},
		"NoBackendTLSPolicy": {coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), servedCluster{
			"gateway.networking.k8s.io/v1/HTTPRoute": {"matches"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "spec.primary.tls"},
		"NoReferenceGrant": {flaggerXR, servedCluster{
			"gateway.networking.k8s.io/v1/HTTPRoute": {"matches"},
		}, "spec.referenceGrants"},
		"NoGatewayAPI": {flaggerXR, servedCluster{}, "spec.kind"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tc.xr, allowMonitoring)
			r := reconcileVersions(t, s, tc.cluster, 0)
			if r.err != nil {
				t.Fatalf("the reconcile fails after %d call(s) instead of %s: %v", r.calls, tc.want, r.err)
			}
			if strings.HasPrefix(tc.want, "spec.") {
				if !isFatal(r.rsp) || !strings.Contains(fmt.Sprint(r.rsp.GetResults()), tc.want) {
					t.Errorf("want a Fatal naming %s, got %v", tc.want, r.rsp.GetResults())
				}
				return
			}
			for k, v := range composedVersions(r.rsp) {
				if strings.HasPrefix(k, "route-") && v != tc.want {
					t.Errorf("%s composed at %s, want %s", k, v, tc.want)
				}
			}
		})
	}
}

// TestCompanionNameCollisionExplained: a Fatal
// "says when the function's own additions (the session cookie, companion
// rules) are what broke a limit". A rule of its own named
// api-canary-session beside a weighted rule api collides with the session
// companion the function names so: the Fatal names the rule's name and the
// companion, not only "Rule name must be unique within the route". Without
// session affinity there is no companion, and the name is the user's.
func TestCompanionNameCollisionExplained(t *testing.T) {
	rule := `    - name: api-canary-session
      matches: [{path: {type: PathPrefix, value: /x}}]
      backendRefs: [{name: cdn, port: 80}]`
	x := strings.Replace(ownRulesXR(rule, ", sessionAffinity: {cookieName: c, maxAge: 1h}"), ", abort: true", "", 1)
	_, rsp := attackRun(t, x, allowTest, nil, nil)
	want := `spec.rules[0].name: Invalid value: "api-canary-session": the function names the session companion rule of spec.rules[1] so: rename this rule`
	if msg := strings.Join(viewOf(t, rsp).Results, ""); !isFatal(rsp) || !strings.Contains(msg, want) || strings.Contains(msg, "must be unique") {
		t.Errorf("want a Fatal saying only %q, got %s", want, msg)
	}
	x = strings.Replace(ownRulesXR(rule, ""), ", abort: true", "", 1)
	if _, rsp := attackRun(t, x, allowTest, nil, nil); isFatal(rsp) {
		t.Errorf("without session affinity the rule name collides with nothing, yet: %v", viewOf(t, rsp).Results)
	}
}

// TestCopiedErrorsReportedOnceForTheUsersRule: a rule's own retry out of
// range (codes [399]) with session affinity: the function copies retry into
// the session companion, and the Fatal reports the user's error once, at
// the user's field, never "in the session companion rule" as if the
// function's addition were wrong.
func TestCopiedErrorsReportedOnceForTheUsersRule(t *testing.T) {
	x := coverageXR("HTTPRoute", `{name: api, retry: {codes: [399]}}`, "", "", `, sessionAffinity: {cookieName: c, maxAge: 1h}`)
	_, rsp := attackRun(t, x, allowTest, nil, nil)
	msg := strings.Join(viewOf(t, rsp).Results, "")
	if !strings.Contains(msg, "spec.rules[0].retry.codes[0]") || strings.Contains(msg, "companion rule") || strings.Count(msg, "spec.rules[0].retry.codes[0]") > 1 {
		t.Errorf("the user's own retry error is blamed on, or repeated for, the function's companion rule: %s", msg)
	}
}

// TestCoverageFatalsAreBounded: every Fatal lists at most 20 problems,
// then how many more, and quotes at most 256 characters of any value, the
// route features' fields included (a refused backend of a rule of its own
// with a name of 3,000 characters was quoted whole).
func TestCoverageFatalsAreBounded(t *testing.T) {
	long := strings.Repeat("a", 3000)
	var rules strings.Builder
	for i := range 15 {
		fmt.Fprintf(&rules, "{name: own%d, matches: [{path: {type: PathPrefix, value: /o%d}}], backendRefs: [%s]}\n    - ", i, i, refusedRefs(16))
	}
	cases := map[string]string{
		"ManyRefusedRuleBackends": coverageXR("HTTPRoute", rules.String()+"{name: api}", "", "", ""),
		"LongCookiePath":          coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 1h, attributes: {path: "/`+long+`;"}}`),
		"LongCookieDomain":        coverageXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 1h, attributes: {domain: "`+long+`"}}`),
		"LongTLSHostname":         coverageXR("HTTPRoute", "", `, tls: {hostname: "`+long+`", wellKnownCACertificates: System}`, "", ""),
		"LongRetryBackoff":        coverageXR("HTTPRoute", `{name: api, retry: {backoff: "`+long+`"}}`, "", "", ""),
		"LongRuleBackendName":     coverageXR("HTTPRoute", `{name: s, matches: [{path: {type: PathPrefix, value: /s}}], backendRefs: [{name: "`+long+`", namespace: kube-system, port: 80}]}`+"\n    - {name: api}", "", "", ""),
		"LongHostnameRuleBackend": coverageXR("HTTPRoute", `{name: s, matches: [{path: {type: PathPrefix, value: /s}}], backendRefs: [{group: networking.istio.io, kind: Hostname, name: "`+long+`.metadata", port: 80}]}`+"\n    - {name: api}", "", "", ""),
		"LongSessionName":         coverageXR("GRPCRoute", "", "", "", `, sessionAffinity: {cookieName: "`+long+`", maxAge: 1h, mode: SessionPersistence}`),
	}
	for name, x := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := attackRun(t, x, allowTest, nil, nil)
			if !isFatal(rsp) {
				t.Fatalf("accepted: %v", viewOf(t, rsp).Results)
			}
			for _, r := range rsp.GetResults() {
				msg := r.GetMessage()
				if strings.Contains(msg, strings.Repeat("a", 257)) {
					t.Errorf("a %s result quotes more than 256 characters of a value (%d characters in all)", r.GetSeverity(), len(msg))
				}
				if n := strings.Count(msg, "spec."); n > 21 {
					t.Errorf("a %s result lists %d problems: %.300s", r.GetSeverity(), n, msg)
				}
			}
		})
	}
}

func refusedRefs(n int) string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, fmt.Sprintf(`{name: b%d, namespace: kube-system, port: 80}`, i))
	}
	return strings.Join(out, ", ")
}

// TestGrantConditionsAreBounded: a namespaced CanaryRoute with 240 backends
// in other namespaces cannot compose their grants: the ReferenceGrantsReady
// condition names at most 20 (it was 55,778 characters, past what the XR's
// status may hold), and at most 21 Warnings say so.
func TestGrantConditionsAreBounded(t *testing.T) {
	var rules strings.Builder
	for i := range 15 {
		refs := make([]string, 0, 16)
		for j := range 16 {
			refs = append(refs, fmt.Sprintf(`{name: backend-with-a-longish-name-%d-%d, namespace: team-%d-%d, port: 80}`, i, j, i, j))
		}
		fmt.Fprintf(&rules, "    - {name: own%d, matches: [{path: {type: PathPrefix, value: /o%d}}], backendRefs: [%s]}\n", i, i, strings.Join(refs, ", "))
	}
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
` + rules.String() + `    - {name: api}
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}}
  traffic: {weight: 10}`)
	req, rsp := attackRun(t, x, emptyInput+"allowedBackendNamespaces: [\"*\"]\n", nil, nil)
	if isFatal(rsp) {
		t.Fatalf("refused: %v", viewOf(t, rsp).Results)
	}
	assertXRDAccepts(t, req, rsp)
	if n := len(rsp.GetResults()); n > 21 {
		t.Errorf("%d results: at most 20 Warnings and one that says how many more", n)
	}
	for _, r := range rsp.GetResults() {
		if n := len(r.GetMessage()); n > 1024 {
			t.Errorf("a %s result (%s) is %d characters long", r.GetSeverity(), r.GetReason(), n)
		}
	}
	for _, c := range rsp.GetConditions() {
		if n := len([]rune(c.GetMessage())); n > 1024 {
			t.Errorf("condition %s's message is %d characters long, more than a status message may be", c.GetType(), n)
		}
	}
}

// TestBackendTLSHostnameNoIP: tls.hostname is a DNS name, never an IP
// address (SNI cannot carry one), the short and numeric IPv4 forms that
// resolvers accept (10.1, 2130706433, 0x7f.1) included, as for an
// externalName.
func TestBackendTLSHostnameNoIP(t *testing.T) {
	for _, host := range []string{"10.1", "2130706433", "0x7f.1", "127.1", "10.0.1"} {
		t.Run(host, func(t *testing.T) {
			_, rsp := attackRun(t, coverageXR("HTTPRoute", "", `, tls: {hostname: "`+host+`", wellKnownCACertificates: System}`, "", ""), allowTest, nil, nil)
			if !isFatal(rsp) {
				t.Errorf("tls.hostname %q, an IPv4 address in a short form, is composed into a BackendTLSPolicy", host)
			}
		})
	}
	t.Run("CARefWithNamespace", func(t *testing.T) {
		_, rsp := attackRun(t, coverageXR("HTTPRoute", "", `, tls: {hostname: p.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca, namespace: kube-system}]}`, "", ""), allowTest, nil, nil)
		if msg := strings.Join(viewOf(t, rsp).Results, ""); !isFatal(rsp) || !strings.Contains(msg, "caCertificateRefs[0]") {
			t.Errorf("a caCertificateRef naming another namespace: want a Fatal naming it, got %s", msg)
		}
	})
}

// TestCompanionRulesThroughTheFunction: traffic.mirror.matches and a step's
// mirror matches reach the route beside A/B matches and session affinity,
// as companion rules in the order of their intents (docs/traffic.md,
// "Companion rules and precedence"), and every route passes the Gateway
// API CRDs of both channels, with a status the XRD admits.
func TestCompanionRulesThroughTheFunction(t *testing.T) {
	standard := crdschema.GatewayAPI(t, crdschema.Standard)
	experimental := crdschema.GatewayAPI(t, crdschema.Experimental)
	step := func(x, mirror string) string {
		return strings.Replace(x, "traffic: {weight: 20", "traffic: {steps: [{weight: 20, pause: 1h, mirror: "+mirror+"}, {weight: 100}]", 1)
	}
	cases := map[string]struct {
		reason string
		xr     string
		key    string
		want   []string
	}{
		"StepMirrorEverything": {
			reason: "A/B on a query parameter, both cookies and a step's mirror limited to GETs or a header: the A/B and session companions carry what could outrank them, a companion of the primary's cookie mirrors.",
			xr: step(coverageXR("HTTPRoute", `{name: api, matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: x-tenant, value: a}]}]}`, "", "",
				`, matches: [{queryParams: [{name: canary, value: "1"}]}], sessionAffinity: {cookieName: c, primaryCookieName: p, maxAge: 1h}`),
				`{percent: 10, matches: [{method: GET}, {headers: [{name: x-mirror, value: "1"}]}]}`),
			key: "route-httproute",
			want: []string{
				"api-canary-match: 1 backends, 6 matches",
				"api-canary-session: 1 backends, 3 matches",
				"api-primary-session-mirror: 1 backends, 2 matches, mirror",
				"api-primary-session: 1 backends, 1 matches",
				"api-canary-mirror: 2 backends, 2 matches, mirror",
				"api: 2 backends, 1 matches",
			},
		},
		"TrafficMirrorPersistence": {
			reason: "traffic.mirror.matches in manual mode with SessionPersistence: the mirror companion weighs the sides with the gateway's session persistence too.",
			xr: coverageXR("HTTPRoute", "", "", "",
				`, mirror: {percent: 50, matches: [{method: GET}]}, matches: [{headers: [{name: x-canary, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h, mode: SessionPersistence}`),
			key: "route-httproute",
			want: []string{
				"<nil>: 1 backends, 2 matches",
				"<nil>: 2 backends, 1 matches, mirror, persistence",
				"<nil>: 2 backends, 1 matches, persistence",
			},
		},
		"GRPCTrafficMirrorPersistence": {
			reason: "The same on a GRPCRoute: a method of the mirror's outranks the A/B header, so the A/B companion carries both.",
			xr: coverageXR("GRPCRoute", `{name: api, matches: [{method: {service: shop.Checkout}}]}`, "", "",
				`, mirror: {percent: 50, matches: [{method: {method: Get}}]}, matches: [{headers: [{name: x-canary, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h, mode: SessionPersistence}`),
			key: "route-grpcroute",
			want: []string{
				"api-canary-match: 1 backends, 2 matches",
				"api-canary-mirror: 2 backends, 1 matches, mirror, persistence",
				"api: 2 backends, 1 matches, persistence",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := attackRun(t, tc.xr, allowTest, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("refused: %v", viewOf(t, rsp).Results)
			}
			checkComposed(t, name, rsp, standard, experimental)
			assertXRDAccepts(t, req, rsp)
			var got []string
			for _, r := range composedRules(t, rsp, tc.key) {
				refs, _ := r["backendRefs"].([]any)
				ms, _ := r["matches"].([]any)
				fs, _ := r["filters"].([]any)
				mirror := slices.ContainsFunc(fs, func(f any) bool { return f.(map[string]any)["type"] == "RequestMirror" })
				s := fmt.Sprintf("%v: %d backends, %d matches", r["name"], len(refs), len(ms))
				if mirror {
					s += ", mirror"
				}
				if r["sessionPersistence"] != nil {
					s += ", persistence"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncomposed rules: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// composedRules are the rules of the composed route under a key, as maps.
func composedRules(t *testing.T, rsp *fnv1.RunFunctionResponse, key string) []map[string]any {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		t.Fatalf("no %s composed: %v", key, viewOf(t, rsp).Results)
	}
	spec, _ := r.GetResource().AsMap()["spec"].(map[string]any)
	raw, _ := spec["rules"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		out = append(out, x.(map[string]any))
	}
	return out
}
