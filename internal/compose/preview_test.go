package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

// blueGreen turns the base XR into a blue/green rollout with a preview: a
// step at 0% that waits for an approval, then the switch.
var blueGreen = []patch{
	set("spec.canary.revision", "v2"),
	set("spec.traffic", `{steps: [{weight: 0, approval: true}, {weight: 100}], preview: {hostnames: [preview.example.com]}}`),
}

// decision is an engine's decision at a phase and weight; active as the
// engine says it.
func decision(phase xr.Phase, weight int32, active bool) rollout.Decision {
	w := percent.Int(weight)
	return rollout.Decision{CanaryWeight: w, Active: active, Status: xr.RolloutStatus{Phase: phase, Step: ptr.To[int32](0), CanaryWeight: w, PrimaryWeight: w.Rest()}}
}

// ruleSummary summarises a route's rules: name, then name=weight per
// backend.
func ruleSummary(obj runtime.Object) []string {
	var out []string
	add := func(name *gwv1.SectionName, refs []gwv1.BackendRef) {
		var s strings.Builder
		s.WriteString(string(ptr.Deref(name, "-")) + ":")
		for _, r := range refs {
			fmt.Fprintf(&s, " %s=%d", r.Name, ptr.Deref(r.Weight, 1))
		}
		out = append(out, s.String())
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			refs := make([]gwv1.BackendRef, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			add(rule.Name, refs)
		}
	case *gwv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			refs := make([]gwv1.BackendRef, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			add(rule.Name, refs)
		}
	case *gwv1.TLSRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	}
	return out
}

// validRoute fails the test unless both channels' Gateway API CRDs accept
// a composed route.
func validRoute(t *testing.T, obj runtime.Object) {
	t.Helper()
	for _, c := range []crdschema.Channel{crdschema.Standard, crdschema.Experimental} {
		if errs := crdschema.GatewayAPI(t, c).Validate(obj); len(errs) > 0 {
			t.Errorf("the %s Gateway API CRDs reject the composed %T: %v", c, obj, errs)
		}
	}
}

// TestPreviewObjects pins when a run composes the preview route, and what:
// while the rollout is active, the route's rules with every request to the
// canary, on the route's parents, with the preview's hostnames.
func TestPreviewObjects(t *testing.T) {
	type want struct {
		keys    []names.Key
		preview []string
		ready   bool
	}
	cases := map[string]struct {
		reason   string
		patches  []patch
		decision rollout.Decision
		state    func(t *testing.T, p *Plan) PreviewState
		want     want
	}{
		"ProgressingAtZero": {
			reason:   "Blue/green's first step: the canary at 0% in a step under way; the preview sends it every request of its hostnames.",
			decision: decision(xr.PhaseProgressing, 0, true),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"ProgressingAtAWeight": {
			reason:   "A step with weight: the preview still sends the canary every request.",
			decision: decision(xr.PhaseProgressing, 50, true),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"ProgressingAtFull": {
			reason:   "The switch at 100%, before the rollout succeeds: still active, the preview stays.",
			decision: decision(xr.PhaseProgressing, 100, false),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"Paused": {
			reason:   "Pausing never changes who sees the canary: the preview stays.",
			decision: decision(xr.PhasePaused, 0, true),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"Promoting": {
			reason:   "A release's promotion: the route sends the canary everything while the primary Service moves; the preview stays until it ends.",
			decision: decision(xr.PhasePromoting, 100, false),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"Succeeded": {
			reason:   "The rollout ended: the preview is not composed, so Crossplane deletes it.",
			decision: decision(xr.PhaseSucceeded, 100, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"Aborted": {
			reason:   "An abort ends the preview: the canary gets no request from it either.",
			decision: decision(xr.PhaseAborted, 0, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"Failed": {
			reason:   "A failure ends the preview, as an abort does.",
			decision: decision(xr.PhaseFailed, 0, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"Stable": {
			reason:   "A manual phase is no rollout.",
			decision: decision(xr.PhaseStable, 0, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"HeldAtZero": {
			reason:   "Paused with the canary held at 0% (a changed canary nobody tested, with no route to hold; a canary the Input now refuses): no preview either.",
			decision: decision(xr.PhasePaused, 0, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"AwaitingEntry": {
			reason:   "A rollout waiting at 0% to enter its first step is not under way yet: no preview.",
			decision: decision(xr.PhaseProgressing, 0, false),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"CanaryMoving": {
			reason:   "A release's canary Service that moves to the revision gets no request until it is observed selecting it: no preview yet.",
			decision: decision(xr.PhaseProgressing, 0, true),
			state:    func(*testing.T, *Plan) PreviewState { return PreviewState{CanaryMoving: true} },
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"NoPreview": {
			reason:   "Without traffic.preview nothing more is composed, whatever the phase.",
			patches:  []patch{del("spec.traffic.preview")},
			decision: decision(xr.PhaseProgressing, 0, true),
			want:     want{keys: []names.Key{"route-httproute", "service-primary", "referencegrant-monitoring"}},
		},
		"Accepted": {
			reason:   "The preview is ready once every parent accepted it, as the route is.",
			decision: decision(xr.PhaseProgressing, 0, true),
			state: func(t *testing.T, p *Plan) PreviewState {
				b := p.preview()
				return PreviewState{Observed: observe(t, p, toYAML(t, b.obj)+parentStatus("True", "True"))}
			},
			want: want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}, ready: true},
		},
		"NotAccepted": {
			reason:   "A preview its parents do not accept is not ready (its acceptance gates no step: see the function's tests).",
			decision: decision(xr.PhaseProgressing, 0, true),
			state: func(t *testing.T, p *Plan) PreviewState {
				b := p.preview()
				return PreviewState{Observed: observe(t, p, toYAML(t, b.obj)+parentStatus("False", "True"))}
			},
			want: want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"ReadyOnceItExists": {
			reason:   "A CanaryRoute that does not wait for its gateway has its preview ready once it exists.",
			patches:  []patch{set("spec.traffic.requireAcceptedRoute", "false")},
			decision: decision(xr.PhaseProgressing, 0, true),
			state: func(t *testing.T, p *Plan) PreviewState {
				return PreviewState{Observed: observe(t, p, toYAML(t, p.preview().obj))}
			},
			want: want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}, ready: true},
		},
		"RulesAndShaping": {
			reason: "The route's rules and matches, the canary alone in each; the A/B matches, the mirror and the session affinity stay the main route's.",
			patches: []patch{
				set("spec.rules", `[{name: api, matches: [{path: {type: PathPrefix, value: /api}}]}, {name: web}]`),
				set("spec.traffic.matches", `[{headers: [{name: x-beta, value: "yes"}]}]`),
				set("spec.traffic.mirror", `{percent: 10}`),
				set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 24h}`),
			},
			decision: decision(xr.PhaseProgressing, 0, true),
			want: want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{
				"api: canary-proxy=100", "web: canary-proxy=100",
			}},
		},
		"StepMatches": {
			reason: "A step's own matches and mirror are the main route's too.",
			patches: []patch{
				set("spec.traffic.steps", `[{weight: 0, matches: [{headers: [{name: x-tester, value: "1"}]}], mirror: {percent: 100}}, {weight: 100}]`),
			},
			decision: decision(xr.PhaseProgressing, 0, true),
			want:     want{keys: []names.Key{"route-httproute", "route-httproute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
		"GRPCRoute": {
			reason:   "A GRPCRoute's preview is a GRPCRoute, under its kind's key.",
			patches:  []patch{set("spec.kind", "GRPCRoute"), set("spec.rules", `[{name: checkout, matches: [{method: {service: shop.Checkout}}]}]`)},
			decision: decision(xr.PhaseProgressing, 0, true),
			want:     want{keys: []names.Key{"route-grpcroute", "route-grpcroute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"checkout: canary-proxy=100"}},
		},
		"TLSRoute": {
			reason:   "A TLSRoute's preview routes its own SNI hostnames to the canary.",
			patches:  []patch{set("spec.kind", "TLSRoute")},
			decision: decision(xr.PhaseProgressing, 0, true),
			want:     want{keys: []names.Key{"route-tlsroute", "route-tlsroute-preview", "service-primary", "referencegrant-monitoring"}, preview: []string{"-: canary-proxy=100"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, append(append([]patch{}, blueGreen...), tc.patches...)...)
			var st PreviewState
			if tc.state != nil {
				st = tc.state(t, p)
			}
			d := tc.decision
			built, errs := p.BuildRoute(d.CanaryWeight, d.Active, d.Status.Step)
			if len(errs) > 0 {
				t.Fatalf("BuildRoute(...): %v", errs)
			}
			objects, _, _, err := p.Objects(built, observe(t, p, routeAt(t, p, d.CanaryWeight.Hundredths()/percent.Scale, "")), d, nil, st)
			if err != nil {
				t.Fatalf("%s\nObjects(...): %v", tc.reason, err)
			}
			var got want
			for _, o := range objects {
				got.keys = append(got.keys, o.Key)
				if !o.Key.IsPreview() {
					continue
				}
				got.preview, got.ready = ruleSummary(o.Object), o.Ready
				validRoute(t, o.Object)
				checkPreviewRoute(t, p, o.Object)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nObjects(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// checkPreviewRoute checks the preview route's identity: the route's kind
// and namespace, named <routeName>-preview, on the route's parents, with
// the preview's hostnames.
func checkPreviewRoute(t *testing.T, p *Plan, obj runtime.Object) {
	t.Helper()
	var meta struct {
		kind, name, namespace string
		parents               []gwv1.ParentReference
		hostnames             []gwv1.Hostname
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		meta.kind, meta.name, meta.namespace, meta.parents, meta.hostnames = r.Kind, r.Name, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames
	case *gwv1.GRPCRoute:
		meta.kind, meta.name, meta.namespace, meta.parents, meta.hostnames = r.Kind, r.Name, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames
	case *gwv1.TLSRoute:
		meta.kind, meta.name, meta.namespace, meta.parents, meta.hostnames = r.Kind, r.Name, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames
	default:
		t.Fatalf("the preview is a %T", obj)
	}
	if meta.kind != string(p.CR.Spec.Kind) || meta.name != "podinfo-preview" || meta.namespace != "test" {
		t.Errorf("the preview route is %s test/podinfo-preview, got %s %s/%s", p.CR.Spec.Kind, meta.kind, meta.namespace, meta.name)
	}
	if diff := cmp.Diff(p.CR.Spec.ParentRefs, meta.parents); diff != "" {
		t.Errorf("the preview route has the route's parents: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]gwv1.Hostname{"preview.example.com"}, meta.hostnames); diff != "" {
		t.Errorf("the preview route has the preview's hostnames: -want, +got:\n%s", diff)
	}
}

// TestPreviewTargets pins that the preview route is a target of a spec
// that has one, whatever the phase: the takeover rule holds for it from the
// first run.
func TestPreviewTargets(t *testing.T) {
	p := plan(t, allowMonitoring, blueGreen...)
	want := names.Target{Key: "route-httproute-preview", APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Namespace: "test", Name: "podinfo-preview"}
	var got []names.Target
	for _, tg := range p.Targets() {
		if tg.Key.IsPreview() {
			got = append(got, tg)
		}
	}
	if diff := cmp.Diff([]names.Target{want}, got); diff != "" {
		t.Errorf("Targets(): the preview target, -want, +got:\n%s", diff)
	}
	for _, tg := range plan(t, allowMonitoring).Targets() {
		if tg.Key.IsPreview() {
			t.Errorf("Targets(): a spec without preview names %s", tg)
		}
	}
}

// TestPreviewChecked pins that a preview route the Gateway API would refuse
// is refused with the plan, naming the preview's field, before any rollout
// reaches it.
func TestPreviewChecked(t *testing.T) {
	pol := inputPolicy(t, allowMonitoring)
	parsed := canaryRoute(t, pol, blueGreen...)
	// What xr.Parse refuses, forced past it in a CanaryRoute built by hand
	// (no spec that runs share): the plan's own check of the route it
	// builds.
	cr := &xr.CanaryRoute{Name: parsed.Name, Scope: parsed.Scope, RouteNamespace: parsed.RouteNamespace, RouteName: parsed.RouteName, Spec: parsed.Spec}
	cr.Spec.Traffic.Preview = &xr.Preview{Hostnames: []gwv1.Hostname{"preview.example.com", "Bad_Host"}}
	_, err := newPlan(cr, pol, testCompiler(t), nil)
	want := []xrtest.FieldErr{xrtest.Invalid("spec.traffic.preview.hostnames[1]", "in the preview route: ")}
	if diff := xrtest.Diff(want, xrtest.FieldErrors(t, err)); diff != "" {
		t.Errorf("newPlan(...): -want errors, +got errors:\n%s", diff)
	}
}

// TestPreviewHeld pins what a hold makes of the preview route it re-emits:
// it is held as it was, with its own readiness; a canary the Input now
// refuses takes it away, while the main route holds that canary at 0%.
func TestPreviewHeld(t *testing.T) {
	// Paused at step 0 of v1 (the canary podinfo-v1 at 0%); the spec
	// starts v2, so the run holds the previous composition.
	paused := []patch{
		set("spec.canary", `{backendRef: {name: podinfo-v2, port: 9898}, revision: v2}`),
		set("spec.traffic", `{steps: [{weight: 0, approval: true}, {weight: 100}], paused: true, preview: {hostnames: [preview.example.com]}}`),
		set("status.rollout", `{phase: Paused, reason: Paused, revision: v1, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 0, primaryWeight: 100, canaryBackends: [{group: "", kind: Service, namespace: legacy, name: podinfo-v1, port: 9898}]}`),
	}
	const mainRoute = `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, generation: 1}, spec: {parentRefs: [{name: gateway, namespace: istio-ingress}], rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 100}, {group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 0}]}]}}`
	const previewRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo-preview, namespace: test, generation: 1}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  hostnames: [preview.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 100}]}]
`
	type want struct {
		keys  []names.Key
		rules map[names.Key][]string
		ready bool
	}
	cases := map[string]struct {
		reason string
		input  string
		status string
		want   want
	}{
		"HeldAsItWas": {
			reason: "Paused means nothing moves: the preview of the previous canary stays as it was, ready as its parents say.",
			input:  "allowedRouteNamespaces: [test]\nallowedBackendNamespaces: [legacy]\n",
			status: parentStatus("True", "True"),
			want: want{
				keys:  []names.Key{"route-httproute", "route-httproute-preview"},
				rules: map[names.Key][]string{"route-httproute": {"-: podinfo-primary=100 podinfo-v1=0"}, "route-httproute-preview": {"-: podinfo-v1=100"}},
				ready: true,
			},
		},
		"RefusedCanary": {
			reason: "The Input no longer allows the previous canary's namespace: the main route keeps it at 0%, and the preview, which would send it every request, goes.",
			input:  "allowedRouteNamespaces: [test]\n",
			want: want{
				keys:  []names.Key{"route-httproute"},
				rules: map[names.Key][]string{"route-httproute": {"-: podinfo-primary=100 podinfo-v1=0"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, tc.input, paused...)
			d := rollout.Decision{HoldPrevious: true, Status: xr.RolloutStatus{Phase: xr.PhasePaused, Step: ptr.To[int32](0)}}
			// The held objects are as the newest decision composed them,
			// without a status; the preview's readiness is the gateway's,
			// as observed.
			observed := map[names.Key]map[string]any{"route-httproute": object(t, mainRoute), "route-httproute-preview": object(t, previewRoute)}
			st := PreviewState{Observed: observe(t, p, previewRoute+tc.status)}
			objects, _, _, err := p.Objects(nil, observe(t, p, mainRoute), d, observed, st)
			if err != nil {
				t.Fatalf("%s\nObjects(...): %v", tc.reason, err)
			}
			got := want{rules: map[names.Key][]string{}}
			for _, o := range objects {
				got.keys = append(got.keys, o.Key)
				got.rules[o.Key] = ruleSummary(o.Object)
				if o.Key.IsPreview() {
					got.ready = o.Ready
				}
				validRoute(t, o.Object)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nObjects(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPreviewRouteWithoutCanary pins that the release loop does not move
// the canary's Service while a preview route is observed: it sends the
// canary every request of its hostnames.
func TestPreviewRouteWithoutCanary(t *testing.T) {
	p := plan(t, allowMonitoring, blueGreen...)
	main := observe(t, p, routeAt(t, p, 0, parentStatus("True", "True")))
	cases := map[string]struct {
		reason  string
		preview route.Observation
		want    bool
		why     string
	}{
		"NoPreview": {
			reason: "No preview observed, and the route at 0%, accepted: the canary gets nothing.",
			want:   true,
		},
		"PreviewObserved": {
			reason:  "A preview route observed still sends the canary requests, whatever the main route carries.",
			preview: observe(t, p, toYAML(t, p.preview().obj)),
			why:     "the preview route still exists",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok, why := p.RouteWithoutCanary(main, tc.preview)()
			if ok != tc.want || why != tc.why {
				t.Errorf("%s\nRouteWithoutCanary(...)(): got %t %q, want %t %q", tc.reason, ok, why, tc.want, tc.why)
			}
		})
	}
}
