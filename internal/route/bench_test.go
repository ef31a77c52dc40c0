package route

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// BenchmarkBuild measures what building a route costs, for each kind that
// has companion rules: a weighted rule alone, and a rule with every
// companion its kind composes, crossed (for an HTTPRoute A/B, both session
// cookies and a mirror limited to GETs, six rules; for a GRPCRoute A/B
// and a mirror limited to a method, with the gateway's session persistence,
// three rules). A run builds its route once, and compose keeps it for the
// runs that build the same one.
func BenchmarkBuild(b *testing.B) {
	grpcMethod := func(service, method string) *gwv1.GRPCMethodMatch {
		return &gwv1.GRPCMethodMatch{Service: ptr.To(service), Method: ptr.To(method)}
	}
	cases := []struct {
		name  string
		p     Params
		rules int
	}{
		{name: "HTTPRoute/Weighted", p: params(), rules: 1},
		{name: "HTTPRoute/Companions", rules: 6, p: params(func(p *Params) {
			p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}}}
			p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
			p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
		})},
		{name: "GRPCRoute/Weighted", rules: 1, p: params(func(p *Params) { p.Kind = xr.KindGRPCRoute })},
		{name: "GRPCRoute/Companions", rules: 3, p: params(func(p *Params) {
			p.Kind = xr.KindGRPCRoute
			p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("checkout"), GRPCMatches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}}}}
			p.ABGRPCMatches = []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Name: "x-canary", Value: "1"}}}}
			p.MirrorPercent, p.MirrorGRPCMatches = ptr.To[int32](10), []gwv1.GRPCRouteMatch{{Method: grpcMethod("shop.Checkout", "Get")}}
			p.Affinity = &Affinity{CookieName: "canary", MaxAge: time.Hour, Persistence: true}
		})},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			obj, errs := Build(tc.p)
			if len(errs) != 0 {
				b.Fatal(errs)
			}
			if n := ruleCount(obj); n != tc.rules {
				b.Fatalf("Build(...) composed %d rules, want %d", n, tc.rules)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, errs := Build(tc.p); len(errs) != 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// ruleCount is how many rules a built HTTPRoute or GRPCRoute has.
func ruleCount(obj runtime.Object) int {
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		return len(r.Spec.Rules)
	case *gwv1.GRPCRoute:
		return len(r.Spec.Rules)
	default:
		return -1
	}
}
