package route

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// preview turns Params into the preview route's: its name and hostnames,
// the canary alone.
func preview(p *Params) {
	p.Name, p.Hostnames, p.CanaryOnly = "podinfo-preview", []gwv1.Hostname{"preview.example.com"}, true
}

func TestBuildCanaryOnly(t *testing.T) {
	static := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
		Name: "cdn-cache", Namespace: ptr.To(gwv1.Namespace("cdn")), Port: ptr.To[gwv1.PortNumber](80),
	}}}
	redirect := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{StatusCode: ptr.To(301)}}
	svc := gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}
	cases := map[string]struct {
		reason string
		params Params
		want   []string
	}{
		"DefaultRule": {
			reason: "The default rule sends every request to the canary, at 100.",
			params: params(preview),
			want:   []string{"-: canary-proxy=100"},
		},
		"WeightIgnored": {
			reason: "Whatever weight the rollout is at, the preview sends the canary everything.",
			params: params(preview, func(p *Params) { p.CanaryWeight, p.Active = percent.Int(0), false }),
			want:   []string{"-: canary-proxy=100"},
		},
		"NoShaping": {
			reason: "A/B matches, the mirror and affinity are the main route's: the preview has no companion rule, and every rule the canary alone.",
			params: params(preview, func(p *Params) {
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}}, {Name: ptr.To[gwv1.SectionName]("web")}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
				p.MirrorPercent = ptr.To[int32](50)
				p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
			}),
			want: []string{"api: canary-proxy=100", "web: canary-proxy=100"},
		},
		"RulesOfTheirOwn": {
			reason: "Rules of their own are composed as written, as in the main route: they are not the rollout's.",
			params: params(preview, func(p *Params) {
				p.Rules = []xr.Rule{
					{Name: ptr.To[gwv1.SectionName]("legacy"), HTTPMatches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/old")}}}, HTTPFilters: []gwv1.HTTPRouteFilter{redirect}},
					{Name: ptr.To[gwv1.SectionName]("static"), HTTPBackendRefs: []gwv1.HTTPBackendRef{static}},
					{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}},
				}
			}),
			want: []string{"legacy:", "static: cdn-cache=1", "api: canary-proxy=100"},
		},
		"SameBackend": {
			reason: "When both sides are one backend, the preview carries it, with the canary's filters.",
			params: params(preview, func(p *Params) {
				p.Canary = primary
				p.Canary.Role = xr.RoleCanary
			}),
			want: []string{"-: podinfo-primary=100"},
		},
		"GRPCRoute": {
			reason: "A GRPCRoute's preview keeps the rule's matches and sends them to the canary.",
			params: params(preview, func(p *Params) {
				p.Kind = xr.KindGRPCRoute
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("checkout"), GRPCMatches: []gwv1.GRPCRouteMatch{svc}}}
				p.ABGRPCMatches = []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Name: "x-beta", Value: "yes"}}}}
				p.MirrorPercent = ptr.To[int32](5)
			}),
			want: []string{"checkout: canary-proxy=100"},
		},
		"TLSRoute": {
			reason: "A TLSRoute's preview is one rule, the canary alone.",
			params: params(preview, func(p *Params) { p.Kind = xr.KindTLSRoute }),
			want:   []string{"-: canary-proxy=100"},
		},
		"TLSRouteV1Alpha2": {
			reason: "A TLSRoute at v1alpha2 has its preview at v1alpha2 too.",
			params: params(preview, func(p *Params) { p.Kind, p.Version = xr.KindTLSRoute, v1beta1.RouteV1Alpha2 }),
			want:   []string{"-: canary-proxy=100"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := weights(admitted(t, tc.params))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBuild(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBuildCanaryOnlyKeepsTheRule(t *testing.T) {
	rewrite := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To[gwv1.PreciseHostname]("internal.example.com")}}
	p := params(preview, func(p *Params) {
		p.Rules = []xr.Rule{{
			Name:        ptr.To[gwv1.SectionName]("api"),
			HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch},
			HTTPFilters: []gwv1.HTTPRouteFilter{rewrite},
			Timeouts:    &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("10s")},
		}}
		p.Primary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter}
		p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{userCookieFilter}
		p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
	})
	got := admitted(t, p).(*gwv1.HTTPRoute)
	want := &gwv1.HTTPRoute{
		TypeMeta:   got.TypeMeta,
		ObjectMeta: got.ObjectMeta,
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: p.ParentRefs},
			Hostnames:       []gwv1.Hostname{"preview.example.com"},
			Rules: []gwv1.HTTPRouteRule{{
				Name:     ptr.To[gwv1.SectionName]("api"),
				Matches:  []gwv1.HTTPRouteMatch{apiMatch},
				Filters:  []gwv1.HTTPRouteFilter{rewrite},
				Timeouts: &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("10s")},
				BackendRefs: []gwv1.HTTPBackendRef{{
					BackendRef: gwv1.BackendRef{BackendObjectReference: canary.Ref, Weight: ptr.To[int32](100)},
					// The canary's own filters, without the session cookie.
					Filters: []gwv1.HTTPRouteFilter{userCookieFilter},
				}},
			}},
		},
	}
	if got.Name != "podinfo-preview" || got.Namespace != "test" {
		t.Errorf("the preview route is test/podinfo-preview, got %s/%s", got.Namespace, got.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the preview keeps the rule's matches, filters and timeouts, and sends it to the canary with its filters: -want, +got:\n%s", diff)
	}
}

func TestExplainCanaryOnly(t *testing.T) {
	// Two RequestHeaderModifiers on the canary's backend: the Gateway API
	// refuses the route, and the error is the canary's filters', named so,
	// though the canary is the first backend of the preview's rule, where
	// the primary is in the main route's.
	p := params(preview, func(p *Params) {
		p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter, headerFilter}
	})
	obj, errs := Build(p)
	errs = append(errs, Admit(p, obj)...)
	if len(errs) == 0 {
		t.Fatal("two RequestHeaderModifiers on one backend: want an error, got none")
	}
	for _, e := range errs {
		if e.Field != "spec.canary.filters" {
			t.Errorf("want the error at spec.canary.filters, got %s", e)
		}
	}
}
