package compose

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

// baseXR is the Flagger scenario: a cluster-scoped CanaryRoute without a
// claim, routing in namespace test, whose primary is a proxy Service and
// whose canary sits behind a proxy in namespace monitoring. Each case patches
// a fresh copy.
const baseXR = `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata:
  name: podinfo
spec:
  namespace: test
  parentRefs:
    - name: gateway
      namespace: istio-ingress
  hostnames: [www.example.com]
  port: 9898
  primary:
    service:
      selector: {app: podinfo}
  canary:
    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}
  traffic:
    weight: 20
`

// allowMonitoring lets the base XR route in test and reach monitoring.
const allowMonitoring = `
allowedRouteNamespaces: [test]
allowedBackendNamespaces: [monitoring]
`

// fromYAML decodes YAML into the JSON types that Crossplane hands the
// function.
var fromYAML = xrtest.FromYAML

// object decodes a YAML object.
func object(t testing.TB, s string) map[string]any {
	t.Helper()
	m, ok := fromYAML(t, s).(map[string]any)
	if !ok {
		t.Fatalf("test YAML %q is not an object", s)
	}
	return m
}

// A patch changes the XR under test: set sets a field at a dotted path to
// a YAML value, del deletes one.
type patch = xrtest.Patch

var (
	set = xrtest.Set
	del = xrtest.Del
)

// namespaced makes the base XR a Crossplane v2 namespaced XR in test.
var namespaced = []patch{set("metadata.namespace", "test"), del("spec.namespace")}

// canaryRoute parses the base XR with the patches applied; the test fails
// when it does not parse, since these tests are about what comes after.
func canaryRoute(t testing.TB, pol *policy.Policy, patches ...patch) *xr.CanaryRoute {
	t.Helper()
	obj := object(t, baseXR)
	for _, p := range patches {
		p(t, obj)
	}
	cr, err := xr.Parse(obj, pol.DefaultParentRefs)
	if err != nil {
		t.Fatalf("xr.Parse(...): the test's XR does not parse: %v", err)
	}
	return cr
}

// inputPolicy parses a function Input written in YAML.
func inputPolicy(t testing.TB, input string) *policy.Policy {
	t.Helper()
	in := map[string]any{}
	if strings.TrimSpace(input) != "" {
		in = object(t, input)
	}
	pol, err := policy.Parse(in)
	if err != nil {
		t.Fatalf("policy.Parse(...): the test's Input does not parse: %v", err)
	}
	return pol
}

// plan plans the base XR with the patches under a policy; the test fails
// when New refuses it.
func plan(t testing.TB, input string, patches ...patch) *Plan {
	t.Helper()
	pol := inputPolicy(t, input)
	p, err := newPlan(canaryRoute(t, pol, patches...), pol, testCompiler(t), nil)
	if err != nil {
		t.Fatalf("newPlan(...): %v", err)
	}
	return p
}

// A chooser picks the versions of a resolved CanaryRoute, as package main
// does from what Crossplane hands it.
type chooser func(served.Need, served.Overrides) (served.Versions, field.ErrorList)

// newPlan resolves a CanaryRoute under a policy, chooses its versions with
// choose (nil: no schemas, the Input's overrides or the defaults), and
// plans it, as a run does.
func newPlan(cr *xr.CanaryRoute, pol *policy.Policy, compiler *expr.Compiler, choose chooser) (*Plan, error) {
	r, err := Resolve(cr, pol, compiler)
	if err != nil {
		return nil, err
	}
	if choose == nil {
		choose = func(n served.Need, o served.Overrides) (served.Versions, field.ErrorList) {
			return served.Choose(n, o, served.Schemas{})
		}
	}
	v, errs := choose(r.Need, r.Overrides())
	if len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(errs), served.ErrNotServed)
	}
	return r.Plan(v)
}

// observe reads an observed route written in YAML ("" for none) against the
// plan's parents.
func observe(t testing.TB, p *Plan, routeYAML string) route.Observation {
	t.Helper()
	var obj map[string]any
	if routeYAML != "" {
		obj = object(t, routeYAML)
	}
	obs, err := route.Observe(obj, p.CR.RouteNamespace, p.CR.Spec.ParentRefs)
	if err != nil {
		t.Fatalf("route.Observe(...): %v", err)
	}
	return obs
}

// parentStatus is a route status in which the gateway reports Accepted and
// ResolvedRefs with the given statuses at generation 1.
func parentStatus(accepted, resolved string) string {
	return `
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "` + accepted + `", reason: ` + map[string]string{"True": "Accepted", "False": "NotAllowedByListeners"}[accepted] + `, observedGeneration: 1, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
        - {type: ResolvedRefs, status: "` + resolved + `", reason: ` + map[string]string{"True": "ResolvedRefs", "False": "RefNotPermitted"}[resolved] + `, observedGeneration: 1, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
`
}

// routeAt is the route that the plan composes at a weight, as the API server
// returns it with a status (status "" for none): what a later run observes.
func routeAt(t testing.TB, p *Plan, weight int32, status string) string {
	t.Helper()
	built, errs := p.BuildRoute(percent.Int(weight), weight < 100, nil)
	if len(errs) > 0 {
		t.Fatalf("BuildRoute(%d): %v", weight, errs)
	}
	return toYAML(t, built) + status
}

// toYAML is a composed object as the API server returns it, at generation 1.
func toYAML(t testing.TB, obj runtime.Object) string {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := u["metadata"].(map[string]any)
	meta["generation"] = int64(1)
	b, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testCompiler is an expression compiler for a test.
func testCompiler(t testing.TB) *expr.Compiler {
	t.Helper()
	c, err := expr.NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// See VerifyShared.
func init() { VerifyShared = true }
