package xr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

var defaultParents = []gwv1.ParentReference{{Name: "shared", Namespace: ptr.To[gwv1.Namespace]("gateways")}}

// parseArgs are the inputs of a TestParse case.
type parseArgs struct {
	xr       map[string]any
	defaults []gwv1.ParentReference
}

// parseWant is what a TestParse case expects.
type parseWant struct {
	cr   *CanaryRoute
	errs []fieldErr
}

type parseCase struct {
	reason string
	args   parseArgs
	want   parseWant
}

// parseCases are the cases of TestParse, and seeds of FuzzParse.
func parseCases(t testing.TB) map[string]parseCase {
	type args = parseArgs
	type want = parseWant
	stepStarted := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	nextStep := metav1.NewTime(time.Date(2026, 12, 2, 10, 5, 0, 0, time.UTC))

	return map[string]parseCase{
		"Flagger": {
			reason: "The base XR: a proxy Service primary, a cross-namespace backendRef canary, manual weight; defaults: kind HTTPRoute, grants Compose, requireAcceptedRoute true.",
			args:   args{xr: xrWith(t)},
			want: want{cr: &CanaryRoute{
				Name:           "podinfo",
				Scope:          ScopeCluster,
				RouteNamespace: "test",
				RouteName:      "podinfo",
				Spec: Spec{
					Namespace:  "test",
					Kind:       KindHTTPRoute,
					ParentRefs: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}},
					Hostnames:  []gwv1.Hostname{"www.example.com"},
					Port:       9898,
					Rules:      []Rule{},
					Primary:    Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}}},
					Canary: Side{BackendRef: &gwv1.BackendObjectReference{
						Name: "canary-proxy", Namespace: ptr.To[gwv1.Namespace]("monitoring"), Port: ptr.To[gwv1.PortNumber](3456),
					}},
					Traffic:         Traffic{Weight: ptr.To(percent.Int(20)), Steps: []Step{}, Gates: []Gate{}, RequireAcceptedRoute: true},
					ReferenceGrants: GrantsCompose,
				},
			}},
		},
		"EveryField": {
			reason: "Every spec field of the reference and the status the function wrote decode into their typed fields: kind-specific fragments as HTTPRoute types, durations parsed, mirror percent and gate failAfter as written.",
			args: args{xr: xrWith(t,
				set("spec.routeName", "podinfo-route"),
				set("spec.rules", `
- name: api
  matches: [{path: {type: PathPrefix, value: /api}}]
  filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Rule, value: api}]}}]
  timeouts: {request: 10s}`),
				set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: http, appProtocol: kubernetes.io/h2c}, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-Route, value: primary}]}}]}`),
				set("spec.canary", `{externalName: canary.example.com, revision: v2}`),
				set("spec.traffic", `
steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1h30m}, {weight: 100}]
paused: true
abort: true
matches: [{headers: [{name: X-Canary, value: always}]}]
mirror: {percent: 10}
sessionAffinity: {cookieName: canary, maxAge: 24h}
gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available, failAfter: 10m}]
requireAcceptedRoute: false`),
				set("spec.referenceGrants", "Skip"),
				set("status", `
conditions: [{type: Ready, status: "True"}]
rollout: {phase: Progressing, revision: v2, step: 1, stepStartedAt: "2026-12-02T10:00:00Z", nextStepAt: "2026-12-02T10:05:00Z", canaryWeight: 50, primaryWeight: 50, message: holding}
route: {kind: HTTPRoute, name: podinfo-route, namespace: test, parents: [{name: gateway, namespace: istio-ingress, accepted: true, resolvedRefs: false, reason: RefNotPermitted}]}`),
			)},
			want: want{cr: &CanaryRoute{
				Name:           "podinfo",
				Scope:          ScopeCluster,
				RouteNamespace: "test",
				RouteName:      "podinfo-route",
				Spec: Spec{
					Namespace:  "test",
					RouteName:  "podinfo-route",
					Kind:       KindHTTPRoute,
					ParentRefs: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}},
					Hostnames:  []gwv1.Hostname{"www.example.com"},
					Port:       9898,
					Rules: []Rule{{
						Name:        ptr.To[gwv1.SectionName]("api"),
						HTTPMatches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")}}},
						HTTPFilters: []gwv1.HTTPRouteFilter{{
							Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
							RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Rule", Value: "api"}}},
						}},
						Timeouts: &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("10s")},
					}},
					Primary: Side{
						Service: &ServiceSource{
							Selector:    map[string]string{"app": "podinfo"},
							TargetPort:  ptr.To(intstr.FromString("http")),
							AppProtocol: "kubernetes.io/h2c",
						},
						HTTPFilters: []gwv1.HTTPRouteFilter{{
							Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
							RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "X-Route", Value: "primary"}}},
						}},
					},
					Canary: Side{ExternalName: "canary.example.com", Revision: "v2"},
					Traffic: Traffic{
						Steps:       []Step{{Weight: percent.Int(10), Pause: time.Minute}, {Weight: percent.Int(50), Pause: 90 * time.Minute}, {Weight: percent.Int(100)}},
						Paused:      true,
						Abort:       true,
						HTTPMatches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Canary", Value: "always"}}}},
						Mirror:      &Mirror{Percent: 10},
						Affinity:    &SessionAffinity{CookieName: "canary", MaxAge: 24 * time.Hour, Attributes: CookieAttributes{Path: "/"}, Mode: AffinityCookie},
						Gates: []Gate{{
							APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo-canary", ConditionType: "Available", FailAfter: 10 * time.Minute,
						}},
						RequireAcceptedRoute: false,
					},
					ReferenceGrants: GrantsSkip,
				},
				Status: Status{
					Rollout: &RolloutStatus{
						Phase: PhaseProgressing, Revision: "v2", Step: ptr.To[int32](1),
						StepStartedAt: &stepStarted, NextStepAt: &nextStep,
						CanaryWeight: percent.Int(50), PrimaryWeight: percent.Int(50), Message: "holding",
					},
					Route: &RouteStatus{Kind: KindHTTPRoute, Name: "podinfo-route", Namespace: "test", Parents: []ParentStatus{{
						Name: "gateway", Namespace: "istio-ingress", Accepted: true, ResolvedRefs: false, Reason: "RefNotPermitted",
					}}},
				},
			}},
		},
		"GRPCFragments": {
			reason: "For a GRPCRoute, rule matches and filters, side filters and A/B matches decode as GRPCRoute types, and the HTTP fields stay empty.",
			args: args{xr: xrWith(t,
				set("spec.kind", "GRPCRoute"),
				set("spec.rules", `[{matches: [{method: {service: podinfo.v1.Echo}}], filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-rule, value: grpc}]}}]}]`),
				set("spec.canary.filters", `[{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [x-debug]}}]`),
				set("spec.traffic.matches", `[{headers: [{name: x-canary, value: always}]}]`),
			)},
			want: want{cr: &CanaryRoute{
				Name:           "podinfo",
				Scope:          ScopeCluster,
				RouteNamespace: "test",
				RouteName:      "podinfo",
				Spec: Spec{
					Namespace:  "test",
					Kind:       KindGRPCRoute,
					ParentRefs: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}},
					Hostnames:  []gwv1.Hostname{"www.example.com"},
					Port:       9898,
					Rules: []Rule{{
						GRPCMatches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("podinfo.v1.Echo")}}},
						GRPCFilters: []gwv1.GRPCRouteFilter{{
							Type:                  gwv1.GRPCRouteFilterRequestHeaderModifier,
							RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-rule", Value: "grpc"}}},
						}},
					}},
					Primary: Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}}},
					Canary: Side{
						BackendRef: &gwv1.BackendObjectReference{
							Name: "canary-proxy", Namespace: ptr.To[gwv1.Namespace]("monitoring"), Port: ptr.To[gwv1.PortNumber](3456),
						},
						GRPCFilters: []gwv1.GRPCRouteFilter{{
							Type:                   gwv1.GRPCRouteFilterResponseHeaderModifier,
							ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x-debug"}},
						}},
					},
					Traffic: Traffic{
						Weight: ptr.To(percent.Int(20)), Steps: []Step{}, Gates: []Gate{}, RequireAcceptedRoute: true,
						GRPCMatches: []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Name: "x-canary", Value: "always"}}}},
					},
					ReferenceGrants: GrantsCompose,
				},
			}},
		},
		"DefaultParentRefs": {
			reason: "An XR that names no parents attaches to the Input's defaultParentRefs.",
			args: args{
				xr:       xrWith(t, del("spec.parentRefs"), del("spec.traffic")),
				defaults: defaultParents,
			},
			want: want{cr: &CanaryRoute{
				Name:           "podinfo",
				Scope:          ScopeCluster,
				RouteNamespace: "test",
				RouteName:      "podinfo",
				Spec: Spec{
					Namespace:  "test",
					Kind:       KindHTTPRoute,
					ParentRefs: defaultParents,
					Hostnames:  []gwv1.Hostname{"www.example.com"},
					Port:       9898,
					Rules:      []Rule{},
					Primary:    Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}}},
					Canary: Side{BackendRef: &gwv1.BackendObjectReference{
						Name: "canary-proxy", Namespace: ptr.To[gwv1.Namespace]("monitoring"), Port: ptr.To[gwv1.PortNumber](3456),
					}},
					Traffic:         Traffic{RequireAcceptedRoute: true},
					ReferenceGrants: GrantsCompose,
				},
			}},
		},
		"NoSpec": {
			reason: "An XR without a spec is refused at spec.",
			args:   args{xr: map[string]any{"metadata": map[string]any{"name": "podinfo"}}},
			want:   want{errs: []fieldErr{required("spec", "needs a spec")}},
		},
		"SpecNotAnObject": {
			reason: "A spec that is not an object is refused at spec, without a panic.",
			args:   args{xr: map[string]any{"spec": []any{"a"}}},
			want:   want{errs: []fieldErr{invalid("spec", "must be an object")}},
		},
		"GoTypes": {
			reason: "Values of Go types that JSON decoding never yields (int, []string) are read like their JSON equivalents instead of panicking in a deep copy.",
			args: args{xr: map[string]any{
				"metadata": map[string]any{"name": "podinfo", "namespace": "test"},
				"spec": map[string]any{
					"parentRefs": []map[string]string{{"name": "gateway"}},
					"port":       8080,
					"primary":    map[string]any{"backendRef": map[string]any{"name": "a"}},
					"canary":     map[string]any{"backendRef": map[string]any{"name": "b"}},
				},
			}},
			want: want{cr: &CanaryRoute{
				Name:           "podinfo",
				Scope:          ScopeNamespaced,
				RouteNamespace: "test",
				RouteName:      "podinfo",
				Spec: Spec{
					Kind:            KindHTTPRoute,
					ParentRefs:      []gwv1.ParentReference{{Name: "gateway"}},
					Port:            8080,
					Rules:           []Rule{},
					Primary:         Side{BackendRef: &gwv1.BackendObjectReference{Name: "a"}},
					Canary:          Side{BackendRef: &gwv1.BackendObjectReference{Name: "b"}},
					Traffic:         Traffic{RequireAcceptedRoute: true},
					ReferenceGrants: GrantsCompose,
				},
			}},
		},
	}
}

// TestParse pins the complete result of valid XRs: every field of spec and
// status lands where the rest of the function reads it, with the reference's
// defaults applied.
func TestParse(t *testing.T) {
	for name, tc := range parseCases(t) {
		t.Run(name, func(t *testing.T) {
			cr, err := Parse(tc.args.xr, tc.args.defaults)
			if diff := cmp.Diff(tc.want.cr, cr, cmpopts.IgnoreUnexported(CanaryRoute{})); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := diffErrs(t, tc.want.errs, fieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nParse(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}

// scopeWant is what a TestParseScope case expects.
type scopeWant struct {
	scope     Scope
	namespace string
	routeName string
	errs      []fieldErr
}

type scopeCase struct {
	reason  string
	patches []patch
	want    scopeWant
}

// scopeCases are the cases of TestParseScope, and seeds of FuzzParse.
func scopeCases() map[string]scopeCase {
	type want = scopeWant
	long := func(n int) string { return "r" + strings.Repeat("x", n-1) }
	claim := set("spec.claimRef", `{apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim, name: storefront, namespace: team-a}`)
	namespaced := set("metadata.namespace", "shop")
	bothBackendRefs := set("spec.primary", `{backendRef: {name: podinfo-v1, port: 80}}`)

	return map[string]scopeCase{
		"Cluster": {
			reason:  "A cluster-scoped XR without a claim routes in spec.namespace, under the XR's name.",
			patches: nil,
			want:    want{scope: ScopeCluster, namespace: "test", routeName: "podinfo"},
		},
		"ClusterWithoutNamespace": {
			reason:  "A cluster-scoped XR without a claim must name the route's namespace.",
			patches: []patch{del("spec.namespace")},
			want:    want{errs: []fieldErr{required("spec.namespace", "cluster-scoped")}},
		},
		"ClusterInvalidNamespace": {
			reason:  "spec.namespace must be a namespace name (a DNS-1123 label).",
			patches: []patch{set("spec.namespace", "Test_NS")},
			want:    want{errs: []fieldErr{invalid("spec.namespace", "RFC 1123 label")}},
		},
		"NamespacedInvalidNamespace": {
			reason:  "A namespace that no API server would hand out is refused at metadata.namespace, never composed into.",
			patches: []patch{set("metadata.namespace", "Shop"), del("spec.namespace")},
			want:    want{errs: []fieldErr{invalid("metadata.namespace", "RFC 1123 label")}},
		},
		"ClaimInvalidNamespace": {
			reason:  "A claim namespace that is no namespace name is refused at spec.claimRef.namespace.",
			patches: []patch{set("spec.claimRef", `{name: storefront, namespace: Team_A}`), del("spec.namespace")},
			want:    want{errs: []fieldErr{invalid("spec.claimRef.namespace", "RFC 1123 label")}},
		},
		"Namespaced": {
			reason:  "A namespaced XR routes in its own namespace; spec.namespace may be left out.",
			patches: []patch{namespaced, del("spec.namespace")},
			want:    want{scope: ScopeNamespaced, namespace: "shop", routeName: "podinfo"},
		},
		"NamespacedSameSpecNamespace": {
			reason:  "A namespaced XR may repeat its own namespace in spec.namespace.",
			patches: []patch{namespaced, set("spec.namespace", "shop")},
			want:    want{scope: ScopeNamespaced, namespace: "shop", routeName: "podinfo"},
		},
		"NamespacedOtherSpecNamespace": {
			reason:  "A namespaced XR cannot route in another namespace: Crossplane composes only into the XR's.",
			patches: []patch{namespaced, set("spec.namespace", "test")},
			want:    want{errs: []fieldErr{invalid("spec.namespace", `routes in its own namespace "shop"`)}},
		},
		"Claim": {
			reason:  "A claim-bound legacy XR routes in the claim's namespace under the claim's name.",
			patches: []patch{claim, del("spec.namespace")},
			want:    want{scope: ScopeClaim, namespace: "team-a", routeName: "storefront"},
		},
		"ClaimSameSpecNamespace": {
			reason:  "A claim-bound XR may repeat the claim's namespace in spec.namespace.",
			patches: []patch{claim, set("spec.namespace", "team-a")},
			want:    want{scope: ScopeClaim, namespace: "team-a", routeName: "storefront"},
		},
		"ClaimOtherSpecNamespace": {
			reason:  "A claim-bound XR always routes in the claim's namespace: a differing spec.namespace is refused.",
			patches: []patch{claim, set("spec.namespace", "test")},
			want:    want{errs: []fieldErr{invalid("spec.namespace", `claim's namespace "team-a"`)}},
		},
		"ClaimRouteName": {
			reason:  "spec.routeName wins over the claim's name.",
			patches: []patch{claim, del("spec.namespace"), set("spec.routeName", "store")},
			want:    want{scope: ScopeClaim, namespace: "team-a", routeName: "store"},
		},
		"ClaimRefWithoutNamespace": {
			reason:  "A claimRef without a namespace binds no claim: the XR is cluster-scoped, and the claim's name still names the route.",
			patches: []patch{set("spec.claimRef", `{name: storefront}`)},
			want:    want{scope: ScopeCluster, namespace: "test", routeName: "storefront"},
		},
		"ClaimRefNotAnObject": {
			reason:  "A claimRef of the wrong type is none of the function's business: it is ignored.",
			patches: []patch{set("spec.claimRef", `storefront`)},
			want:    want{scope: ScopeCluster, namespace: "test", routeName: "podinfo"},
		},
		"RouteName": {
			reason:  "spec.routeName wins over the XR's name.",
			patches: []patch{set("spec.routeName", "www")},
			want:    want{scope: ScopeCluster, namespace: "test", routeName: "www"},
		},
		"InvalidRouteName": {
			reason:  "The route name must be an object name (a DNS-1123 subdomain).",
			patches: []patch{set("spec.routeName", "Pod_Info"), bothBackendRefs},
			want:    want{errs: []fieldErr{invalid("spec.routeName", "RFC 1123 subdomain")}},
		},
		"InvalidXRName": {
			reason:  "The XR's own name, when it names the route, is checked as the route name too.",
			patches: []patch{set("metadata.name", "Pod_Info"), bothBackendRefs},
			want:    want{errs: []fieldErr{invalid("spec.routeName", "RFC 1123 subdomain")}},
		},
		"ProxyNameTooLong": {
			reason:  "A 56-character route name makes <name>-primary 64 characters, one too many for a Service; <name>-canary (63) fits.",
			patches: []patch{set("spec.routeName", long(56)), set("spec.canary", `{service: {selector: {app: podinfo}}}`)},
			want:    want{errs: []fieldErr{invalid("spec.routeName", "primary proxy Service would be named")}},
		},
		"ProxyNamesFit": {
			reason:  "A 55-character route name gives proxy Service names of 63 characters at most.",
			patches: []patch{set("spec.routeName", long(55)), set("spec.canary", `{service: {selector: {app: podinfo}}}`)},
			want:    want{scope: ScopeCluster, namespace: "test", routeName: long(55)},
		},
		"ProxyNameTooLongCanary": {
			reason:  "The canary's proxy name is checked too: 57 characters give a 64-character <name>-canary.",
			patches: []patch{set("spec.routeName", long(57)), bothBackendRefs, set("spec.canary", `{service: {selector: {app: podinfo}}}`)},
			want:    want{errs: []fieldErr{invalid("spec.routeName", "canary proxy Service would be named")}},
		},
		"LongNameWithoutProxies": {
			reason:  "Proxy names are checked only for sides that compose a Service: two backendRefs allow any route name.",
			patches: []patch{set("spec.routeName", long(200)), bothBackendRefs},
			want:    want{scope: ScopeCluster, namespace: "test", routeName: long(200)},
		},
		"ProxyNameNotDNS1035": {
			reason:  "A route name that is a valid DNS-1123 subdomain but starts with a digit gives Service names that are no DNS-1035 label.",
			patches: []patch{set("spec.routeName", `"1podinfo"`), bothBackendRefs, set("spec.canary", `{service: {selector: {app: podinfo}}}`)},
			want:    want{errs: []fieldErr{invalid("spec.routeName", "DNS-1035 label")}},
		},
		"DottedRouteNameWithProxy": {
			reason:  "A dotted route name is a fine route name but no Service name.",
			patches: []patch{set("spec.routeName", "pod.info")},
			want:    want{errs: []fieldErr{invalid("spec.routeName", `primary proxy Service would be named "pod.info-primary"`)}},
		},
	}
}

// TestParseScope pins where the route lives and what it is called, per XR
// scope (docs/reference.md's table), and the proxy Service name limits.
func TestParseScope(t *testing.T) {
	for name, tc := range scopeCases() {
		t.Run(name, func(t *testing.T) {
			cr, err := Parse(xrWith(t, tc.patches...), nil)
			if diff := diffErrs(t, tc.want.errs, fieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nParse(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			got := scopeWant{scope: cr.Scope, namespace: cr.RouteNamespace, routeName: cr.RouteName}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(scopeWant{})); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestParseExamples parses the example XRs that the project ships: they are
// the first thing a user copies.
func TestParseExamples(t *testing.T) {
	paths, err := filepath.Glob("../../example/*/xr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no example XRs found")
	}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			obj, _ := fromYAML(t, string(b)).(map[string]any)
			if _, err := Parse(obj, defaultParents); err != nil {
				t.Errorf("Parse(%s): %v", p, err)
			}
		})
	}
}
