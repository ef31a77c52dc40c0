package route

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// recordedCanary is the canary as status.rollout.canaryBackends records it:
// with Gateway API's defaults applied.
var recordedCanary = xr.BackendID{Group: "", Kind: "Service", Namespace: "monitoring", Name: "canary-proxy", Port: ptr.To[int32](3456)}

// httpRoute is an HTTPRoute in namespace test with the given rules.
func httpRoute(rules string) string {
	return "{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}, spec: {parentRefs: [{name: gateway, namespace: istio-ingress}], rules: " + rules + "}}"
}

func TestZeroCanary(t *testing.T) {
	type args struct {
		route  string
		canary []xr.BackendID
	}
	type want struct {
		ok bool
		// route is the route after ZeroCanary; checked when ok.
		route string
	}
	const (
		mirrorToCanary = `{type: RequestMirror, requestMirror: {backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}, percent: 10}}`
		mirrorToShadow = `{type: RequestMirror, requestMirror: {backendRef: {name: shadow, port: 80}}}`
		setHeader      = `{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Canary, value: "true"}]}}`
	)
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"CanaryToZero": {
			reason: "The recorded canary goes to weight 0; the primary keeps its weight, since the gateway splits by the ratio of weights.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}, {group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}, {group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"GroupAndKindDefaults": {
			reason: "A canary recorded with group \"\" and kind Service is the reference that omits group and kind, as Gateway API defaults them.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"NoWeightIsDefaultWeight": {
			reason: "A canary without a weight (Gateway API's default 1) gets an explicit 0.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 3456}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"NamespaceDefaultsToTheRoutes": {
			reason: "A reference without a namespace is in the route's namespace: it is a canary recorded there.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 50}, {name: podinfo-canary, port: 9898, weight: 50}]}]`),
				canary: []xr.BackendID{{Kind: "Service", Namespace: "test", Name: "podinfo-canary", Port: ptr.To[int32](9898)}},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 50}, {name: podinfo-canary, port: 9898, weight: 0}]}]`)},
		},
		"OtherNamespaceIsAnotherBackend": {
			reason: "A reference without a namespace is in the route's namespace, so it is not a canary of the same name recorded in another namespace.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, port: 3456, weight: 20}]}]`)},
		},
		"RecordedWithoutPortMatchesAnyPort": {
			reason: "A canary recorded without a port (a kind that takes none) is the object on any port.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 4000, weight: 20}]}]`),
				canary: []xr.BackendID{{Kind: "Service", Namespace: "monitoring", Name: "canary-proxy"}},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 4000, weight: 0}]}]`)},
		},
		"RecordedPortMustMatch": {
			reason: "A canary recorded with a port is not the same object on another port: that backend keeps its weight.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 4000, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 4000, weight: 20}]}]`)},
		},
		"RecordedPortRefWithout": {
			reason: "A canary recorded with a port is not a reference that names none.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {group: inference.networking.k8s.io, kind: InferencePool, name: pool, namespace: monitoring, weight: 20}]}]`),
				canary: []xr.BackendID{{Group: "inference.networking.k8s.io", Kind: "InferencePool", Namespace: "monitoring", Name: "pool", Port: ptr.To[int32](80)}},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {group: inference.networking.k8s.io, kind: InferencePool, name: pool, namespace: monitoring, weight: 20}]}]`)},
		},
		"OtherKindIsAnotherBackend": {
			reason: "A ServiceImport of the canary's name is not the canary Service.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {group: multicluster.x-k8s.io, kind: ServiceImport, name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {group: multicluster.x-k8s.io, kind: ServiceImport, name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`)},
		},
		"CanaryOnlyRulesRemoved": {
			reason: "The A/B and session companion rules, whose every backend is the canary, are removed; the weighted rule stays with the canary at 0.",
			args: args{
				route: httpRoute(`[
  {name: api-canary-match, matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: X-Beta, value: "yes"}]}], backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]},
  {name: api-canary-session, matches: [{path: {type: PathPrefix, value: /api}, headers: [{type: RegularExpression, name: Cookie, value: "(^|.*; ?)canary=abc(;.*|$)"}]}], backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]},
  {name: api, matches: [{path: {type: PathPrefix, value: /api}}], backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[
  {name: api, matches: [{path: {type: PathPrefix, value: /api}}], backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"MirrorsToTheCanaryRemoved": {
			reason: "A RequestMirror to the canary is removed from the rule's filters and from every backend's filters; other filters, and a mirror to another backend, stay.",
			args: args{
				route: httpRoute(`[{filters: [` + setHeader + `, ` + mirrorToCanary + `, ` + mirrorToShadow + `], backendRefs: [
  {name: podinfo-primary, port: 9898, weight: 100, filters: [` + mirrorToCanary + `, ` + setHeader + `]},
  {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0, filters: [` + mirrorToCanary + `]}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{filters: [` + setHeader + `, ` + mirrorToShadow + `], backendRefs: [
  {name: podinfo-primary, port: 9898, weight: 100, filters: [` + setHeader + `]},
  {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"MirrorMatchedWithDefaults": {
			reason: "A mirror's backendRef is compared with the same defaults: written out in full, or with the route's namespace left implicit.",
			args: args{
				route: httpRoute(`[{filters: [{type: RequestMirror, requestMirror: {backendRef: {group: "", kind: Service, name: podinfo-canary, namespace: test, port: 9898}}}, {type: RequestMirror, requestMirror: {backendRef: {name: podinfo-canary, port: 9898}}}],
  backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
				canary: []xr.BackendID{{Kind: "Service", Namespace: "test", Name: "podinfo-canary", Port: ptr.To[int32](9898)}},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}]}]`)},
		},
		"OnlyZeroWeightsLeft": {
			reason: "A rule whose other backends are all at weight 0 (the rollout had finished, canary at 100) gives them weight 100, else it would send traffic nowhere.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 0}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 100}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 100}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"SeveralZeroWeightsLeft": {
			reason: "Several other backends at 0 get equal weights.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: a, port: 80, weight: 0}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 100}, {name: b, port: 80, weight: 0}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: a, port: 80, weight: 100}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}, {name: b, port: 80, weight: 100}]}]`)},
		},
		"DrainedRuleOfItsOwnKept": {
			reason: "A rule that sent nothing before (a drained rule of its own, every weight 0) is no rule the canary's weight left empty: it keeps its weights, and the gateway still answers 500 there.",
			args: args{
				route:  httpRoute(`[{name: drain, backendRefs: [{name: legacy, port: 80, weight: 0}]}, {name: api, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{name: drain, backendRefs: [{name: legacy, port: 80, weight: 0}]}, {name: api, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`)},
		},
		"DrainedRuleWithTheCanaryAtZeroKept": {
			reason: "A drained rule that also names the canary at weight 0 sent nothing before either: zeroing the canary changes nothing, and the others stay at 0.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: legacy, port: 80, weight: 0}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}, {backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: legacy, port: 80, weight: 0}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}, {backendRefs: [{name: podinfo-primary, port: 9898}]}]`)},
		},
		"SeveralCanaries": {
			reason: "Every recorded canary goes to 0.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 60}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}, {name: canary-b, port: 80, weight: 20}]}]`),
				canary: []xr.BackendID{recordedCanary, {Kind: "Service", Namespace: "test", Name: "canary-b"}},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 60}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}, {name: canary-b, port: 80, weight: 0}]}]`)},
		},
		"RuleWithoutBackendsKept": {
			reason: "A rule without backendRefs is no canary-only rule: it stays as it is.",
			args: args{
				route:  httpRoute(`[{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}, {backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}, {backendRefs: [{name: podinfo-primary, port: 9898}]}]`)},
		},
		"NothingRecordedMatches": {
			reason: "No recorded canary in the route: the route stays as it is.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 100}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 100}]}]`)},
		},
		"NoRuleLeft": {
			reason: "A route whose every rule sends to the canary only would be left without rules: false, so the caller keeps its Fatal.",
			args: args{
				route:  httpRoute(`[{backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]}]`),
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: false},
		},
		"NoRules": {
			reason: "A route without rules has none left either.",
			args:   args{route: httpRoute(`[]`), canary: []xr.BackendID{recordedCanary}},
			want:   want{ok: false},
		},
		"GRPCRoute": {
			reason: "A GRPCRoute is zeroed alike: its A/B companion removed, the canary at 0, the mirrors to the canary removed from rule and backend filters.",
			args: args{
				route: `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [
  {matches: [{headers: [{name: x-beta, value: "yes"}]}], backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]},
  {filters: [` + mirrorToCanary + `, {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-route, value: a}]}}],
   backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20, filters: [` + mirrorToCanary + `]}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [
  {filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-route, value: a}]}}],
   backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]}}`},
		},
		"GRPCRouteNoRuleLeft": {
			reason: "A GRPCRoute of canary-only rules reports false.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: false},
		},
		"TCPRouteV1": {
			reason: "A TCPRoute's canary goes to 0.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 0}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 100}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: `{apiVersion: gateway.networking.k8s.io/v1, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 100}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]}}`},
		},
		"TCPRouteV1Alpha2": {
			reason: "A v1alpha2 TCPRoute too.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: `{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]}}`},
		},
		"TCPRouteNoRuleLeft": {
			reason: "A TCPRoute whose only rule is the canary's reports false.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: false},
		},
		"TLSRouteV1": {
			reason: "A TLSRoute's canary goes to 0.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1, kind: TLSRoute, metadata: {name: podinfo, namespace: test}, spec: {hostnames: [www.example.com], rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: `{apiVersion: gateway.networking.k8s.io/v1, kind: TLSRoute, metadata: {name: podinfo, namespace: test}, spec: {hostnames: [www.example.com], rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]}}`},
		},
		"TLSRouteV1Alpha2": {
			reason: "A v1alpha2 TLSRoute too.",
			args: args{
				route:  `{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: TLSRoute, metadata: {name: podinfo, namespace: test}, spec: {hostnames: [www.example.com], rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}}`,
				canary: []xr.BackendID{recordedCanary},
			},
			want: want{ok: true, route: `{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: TLSRoute, metadata: {name: podinfo, namespace: test}, spec: {hostnames: [www.example.com], rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]}}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := decoded(t, tc.args.route)
			ok := ZeroCanary(obj, tc.args.canary, "test")
			if ok != tc.want.ok {
				t.Fatalf("%s\nZeroCanary(...): got %v, want %v", tc.reason, ok, tc.want.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(decoded(t, tc.want.route), obj, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nZeroCanary(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestZeroCanaryNotARoute(t *testing.T) {
	cases := map[string]struct {
		reason string
		obj    runtime.Object
	}{
		"Service": {reason: "A Service is no route: false.", obj: &corev1.Service{}},
		"Nil":     {reason: "No object: false, never a panic.", obj: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if ZeroCanary(tc.obj, []xr.BackendID{recordedCanary}, "test") {
				t.Errorf("%s\nZeroCanary(...): got true, want false", tc.reason)
			}
		})
	}
}

func TestZeroCanaryOnABuiltRoute(t *testing.T) {
	// The route the function composed while a rollout was active, with A/B
	// and session companions and the mirror: zeroed with the canary's
	// recorded ID, only the weighted rule is left, the canary at 0 and no
	// mirror, and the Gateway API CRDs still admit it.
	p := params(func(p *Params) {
		p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
		p.MirrorPercent = ptr.To[int32](10)
		p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
	})
	obj := admitted(t, p)
	if diff := cmp.Diff([]string{"-: canary-proxy=1", "-: canary-proxy=1", "-: podinfo-primary=80 canary-proxy=20"}, weights(obj)); diff != "" {
		t.Fatalf("the built route must carry both companions, or this test pins nothing: -want, +got:\n%s", diff)
	}
	if !ZeroCanary(obj, []xr.BackendID{p.Canary.ID()}, p.Namespace) {
		t.Fatal("ZeroCanary(...): got false, want true")
	}
	if diff := cmp.Diff([]string{"-: podinfo-primary=80 canary-proxy=0"}, weights(obj)); diff != "" {
		t.Errorf("ZeroCanary(...): the companions go, the canary is at 0: -want, +got:\n%s", diff)
	}
	for _, rule := range obj.(*gwv1.HTTPRoute).Spec.Rules {
		for _, f := range rule.Filters {
			if f.Type == gwv1.HTTPRouteFilterRequestMirror {
				t.Errorf("ZeroCanary(...): the mirror to the canary must go, got %+v", f)
			}
		}
	}
	for _, c := range []crdschema.Channel{crdschema.Standard, crdschema.Experimental} {
		if errs := crdschema.GatewayAPI(t, c).Validate(obj); len(errs) > 0 {
			t.Errorf("the %s Gateway API CRDs reject the zeroed route: %v", c, errs)
		}
	}
}

func TestBesidePrimary(t *testing.T) {
	primary := xr.BackendID{Group: "", Kind: "Service", Namespace: "test", Name: "podinfo-primary"}
	cdn := xr.BackendID{Group: "", Kind: "Service", Namespace: "test", Name: "cdn-cache", Port: ptr.To[int32](80)}
	const weighted = `{name: api, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}`
	api := SpecRule{Name: ptr.To[gwv1.SectionName]("api")}
	type want struct {
		beside, not []xr.BackendID
	}
	cases := map[string]struct {
		reason string
		route  string
		canary []xr.BackendID
		spec   []SpecRule
		want   want
	}{
		"WeightedRule": {
			reason: "The weighted rule holds the recorded canary beside the primary: borne out.",
			route:  httpRoute(`[` + weighted + `]`),
			canary: []xr.BackendID{recordedCanary},
			spec:   []SpecRule{api},
			want:   want{beside: []xr.BackendID{recordedCanary}},
		},
		"CanaryAtZero": {
			reason: "A canary already at weight 0 (a rescued abort observed again) is still beside the primary.",
			route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`),
			canary: []xr.BackendID{recordedCanary},
			want:   want{beside: []xr.BackendID{recordedCanary}},
		},
		"RuleOfItsOwnAlone": {
			reason: "A backend that only a single-backend rule holds (a rule of its own, a companion) is no proof.",
			route:  httpRoute(`[{name: static, backendRefs: [{name: cdn-cache, port: 80}]}, ` + weighted + `]`),
			canary: []xr.BackendID{cdn},
			spec:   []SpecRule{{Name: ptr.To[gwv1.SectionName]("static"), Own: true}, api},
			want:   want{not: []xr.BackendID{cdn}},
		},
		"RuleOfItsOwnBesideThePrimary": {
			reason: "A rule of its own of the weighted rule's shape bears nothing out, by its name.",
			route:  httpRoute(`[{name: static, backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]}, ` + weighted + `]`),
			canary: []xr.BackendID{cdn},
			spec:   []SpecRule{{Name: ptr.To[gwv1.SectionName]("static"), Own: true}, api},
			want:   want{not: []xr.BackendID{cdn}},
		},
		"UnnamedRuleOfItsOwnBesideThePrimary": {
			reason: "An unnamed rule of its own of the weighted rule's shape bears nothing out either: the spec's rules say where it is.",
			route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]}, ` + weighted + `]`),
			canary: []xr.BackendID{cdn, recordedCanary},
			spec:   []SpecRule{{Own: true}, api},
			want:   want{beside: []xr.BackendID{recordedCanary}, not: []xr.BackendID{cdn}},
		},
		"UnnamedRulesTheSpecNoLongerMatches": {
			reason: "Unnamed rules that the spec's rules no longer match bear nothing out: any of them could be a rule of its own.",
			route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]}, {backendRefs: [{name: podinfo-primary, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 3456}]}]`),
			canary: []xr.BackendID{cdn, recordedCanary},
			spec:   []SpecRule{api},
			want:   want{not: []xr.BackendID{cdn, recordedCanary}},
		},
		"ThreeBackends": {
			reason: "A rule of three backends is not the function's weighted rule.",
			route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}, {name: other, port: 80}]}]`),
			canary: []xr.BackendID{cdn},
			want:   want{not: []xr.BackendID{cdn}},
		},
		"PrimaryUnknown": {
			reason: "Without the primary's backend, nothing is borne out.",
			route:  httpRoute(`[{backendRefs: [{name: somebody, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 3456}]}]`),
			canary: []xr.BackendID{recordedCanary},
			want:   want{not: []xr.BackendID{recordedCanary}},
		},
		"OtherPort": {
			reason: "A record is compared with its port: the canary on another port is not the one recorded.",
			route:  httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 9999}]}]`),
			canary: []xr.BackendID{recordedCanary},
			want:   want{not: []xr.BackendID{recordedCanary}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			beside, not := BesidePrimary(decoded(t, tc.route), tc.canary, []xr.BackendID{primary}, tc.spec, "test")
			if diff := cmp.Diff(tc.want, want{beside: beside, not: not}, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nBesidePrimary(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDropBackends(t *testing.T) {
	backend := xr.BackendID{Group: "gateway.envoyproxy.io", Kind: "Backend", Namespace: "test", Name: "cdn"}
	const weighted = `{name: api, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: podinfo-canary, port: 9898, weight: 20}]}`
	cases := map[string]struct {
		reason string
		route  string
		want   string // "" when DropBackends reports false
	}{
		"RuleGoes": {
			reason: "A rule whose only backend is dropped goes with it; the weighted rule stays as it was.",
			route:  httpRoute(`[{name: static, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]}, ` + weighted + `]`),
			want:   httpRoute(`[` + weighted + `]`),
		},
		"OthersStay": {
			reason: "The rule's other backends stay; left with only zero weights, they get equal ones.",
			route:  httpRoute(`[{name: static, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 5}, {name: origin, port: 80, weight: 0}]}, ` + weighted + `]`),
			want:   httpRoute(`[{name: static, backendRefs: [{name: origin, port: 80, weight: 1}]}, ` + weighted + `]`),
		},
		"DrainedRuleKept": {
			reason: "A rule the drop does not touch keeps its weights, a drained one (every weight 0) included.",
			route:  httpRoute(`[{name: drain, backendRefs: [{name: legacy, port: 80, weight: 0}]}, {name: static, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]}, ` + weighted + `]`),
			want:   httpRoute(`[{name: drain, backendRefs: [{name: legacy, port: 80, weight: 0}]}, ` + weighted + `]`),
		},
		"DrainedRuleLosesABackend": {
			reason: "A rule that sent nothing before the drop (the dropped backend at 0 too) keeps the rest at 0: the drop took no traffic away from it.",
			route:  httpRoute(`[{name: drain, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 0}, {name: legacy, port: 80, weight: 0}]}, ` + weighted + `]`),
			want:   httpRoute(`[{name: drain, backendRefs: [{name: legacy, port: 80, weight: 0}]}, ` + weighted + `]`),
		},
		"MirrorGoes": {
			reason: "A mirror to a dropped backend goes too; a redirect rule, which has no backend, stays.",
			route:  httpRoute(`[{name: old, filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}]}, {name: api, filters: [{type: RequestMirror, requestMirror: {backendRef: {group: gateway.envoyproxy.io, kind: Backend, name: cdn}}}], backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
			want:   httpRoute(`[{name: old, filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}]}, {name: api, backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
		},
		"NothingLeft": {
			reason: "A route of nothing but dropped backends reports false.",
			route:  httpRoute(`[{backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn}]}]`),
		},
		"GRPCRoute": {
			reason: "A GRPCRoute's rules of their own likewise.",
			route:  `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{name: legacy, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn}]}, ` + weighted + `]}}`,
			want:   `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [` + weighted + `]}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := decoded(t, tc.route)
			ok := DropBackends(obj, []xr.BackendID{backend}, "test")
			if ok != (tc.want != "") {
				t.Fatalf("%s\nDropBackends(...): got %v, want %v", tc.reason, ok, tc.want != "")
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(decoded(t, tc.want), obj, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDropBackends(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
