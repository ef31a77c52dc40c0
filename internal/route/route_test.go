package route

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

var (
	primary = backend.Backend{Role: xr.RolePrimary, Namespace: "test", Ref: gwv1.BackendObjectReference{
		Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")), Name: "podinfo-primary", Port: ptr.To[gwv1.PortNumber](9898),
	}}
	canary = backend.Backend{Role: xr.RoleCanary, Namespace: "monitoring", FromBackendRef: true, Ref: gwv1.BackendObjectReference{
		Name: "canary-proxy", Namespace: ptr.To(gwv1.Namespace("monitoring")), Port: ptr.To[gwv1.PortNumber](3456),
	}}

	headerFilter = gwv1.HTTPRouteFilter{
		Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Canary", Value: "true"}}},
	}
	userCookieFilter = gwv1.HTTPRouteFilter{
		Type:                   gwv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "X-Served-By", Value: "canary"}}},
	}
	apiMatch = gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")}}
	abMatch  = gwv1.HTTPRouteMatch{Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Beta", Value: "yes"}}}
)

func params(mutate ...func(*Params)) Params {
	p := Params{
		Kind:         xr.KindHTTPRoute,
		Name:         "podinfo",
		Namespace:    "test",
		ParentRefs:   []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To(gwv1.Namespace("istio-ingress"))}},
		Hostnames:    []gwv1.Hostname{"www.example.com"},
		Primary:      primary,
		Canary:       canary,
		CanaryWeight: percent.Int(20),
		Active:       true,
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

// admitted builds a route and checks that both the function's own checks
// and the Gateway API CRDs (both channels where they serve the version)
// accept it.
func admitted(t *testing.T, p Params) runtime.Object {
	t.Helper()
	obj, errs := Build(p)
	if len(errs) > 0 {
		t.Fatalf("Build(...): unexpected errors: %v", errs)
	}
	if errs := Admit(p, obj); len(errs) > 0 {
		t.Fatalf("Admit(...): the function's checks reject the route: %v", errs)
	}
	channels := []crdschema.Channel{crdschema.Standard, crdschema.Experimental}
	switch r := obj.(type) {
	case *gwv1alpha2.TLSRoute, *gwv1alpha2.TCPRoute, *gwv1alpha2.UDPRoute:
		channels = channels[1:]
	case *gwv1alpha2.GRPCRoute:
		// Gateway API v1.6 no longer ships GRPCRoute v1alpha2, whose schema
		// was v1's: the v1 CRDs check it.
		v1 := gwv1.GRPCRoute(*r.DeepCopy())
		v1.APIVersion = gwv1.GroupVersion.String()
		obj = &v1
	}
	if experimentalFields(obj) {
		channels = channels[1:]
	}
	for _, c := range channels {
		if errs := crdschema.GatewayAPI(t, c).Validate(obj); len(errs) > 0 {
			t.Fatalf("the %s Gateway API CRDs reject the composed route: %v", c, errs)
		}
	}
	return obj
}

// experimentalFields reports whether a route holds fields of the
// experimental channel only: retries and session persistence.
func experimentalFields(obj runtime.Object) bool {
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			if rule.Retry != nil || rule.SessionPersistence != nil {
				return true
			}
		}
	case *gwv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			if rule.SessionPersistence != nil {
				return true
			}
		}
	}
	return false
}

// weights summarises a route's rules: name, then role=weight per backend.
func weights(obj runtime.Object) []string {
	var out []string
	add := func(name *gwv1.SectionName, refs []gwv1.BackendRef) {
		var s strings.Builder
		s.WriteString(string(ptr.Deref(name, "-")) + ":")
		for _, r := range refs {
			s.WriteString(" " + string(r.Name) + "=" + strconv.Itoa(int(ptr.Deref(r.Weight, 1))))
		}
		out = append(out, s.String())
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			var refs []gwv1.BackendRef
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			add(rule.Name, refs)
		}
	case *gwv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			var refs []gwv1.BackendRef
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			add(rule.Name, refs)
		}
	case *gwv1.TLSRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1.TCPRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1alpha2.TLSRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1alpha2.TCPRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1.UDPRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1alpha2.UDPRoute:
		for _, rule := range r.Spec.Rules {
			add(rule.Name, rule.BackendRefs)
		}
	case *gwv1alpha2.GRPCRoute:
		return weights((*gwv1.GRPCRoute)(r))
	}
	return out
}

func TestBuildWeights(t *testing.T) {
	cases := map[string]struct {
		reason string
		params Params
		want   []string
	}{
		"DefaultRule": {
			reason: "Without rules the route has one rule, primary at 100-w and canary at w.",
			params: params(),
			want:   []string{"-: podinfo-primary=80 canary-proxy=20"},
		},
		"CanaryAtZeroStays": {
			reason: "A canary at weight 0 stays in the rule, so that moving traffic only changes weights.",
			params: params(func(p *Params) { p.CanaryWeight, p.Active = percent.Int(0), false }),
			want:   []string{"-: podinfo-primary=100 canary-proxy=0"},
		},
		"EveryRuleWeighted": {
			reason: "Each rule of the spec gets both backends with the same weights.",
			params: params(func(p *Params) {
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}}, {Name: ptr.To[gwv1.SectionName]("web")}}
			}),
			want: []string{"api: podinfo-primary=80 canary-proxy=20", "web: podinfo-primary=80 canary-proxy=20"},
		},
		"SameBackendOnce": {
			reason: "When both sides resolve to one backend the rule carries it once, at 100, and shaping stops (no mirror to itself).",
			params: params(func(p *Params) {
				p.Canary = primary
				p.Canary.Role = xr.RoleCanary
				p.MirrorPercent = ptr.To[int32](50)
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			}),
			want: []string{"-: podinfo-primary=100"},
		},
		"FullCanary": {
			reason: "At 100 the primary stays at weight 0.",
			params: params(func(p *Params) { p.CanaryWeight = percent.Int(100) }),
			want:   []string{"-: podinfo-primary=0 canary-proxy=100"},
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

func TestBuildKeepsUserFilters(t *testing.T) {
	p := params(func(p *Params) {
		p.Rules = []xr.Rule{{
			Name:        ptr.To[gwv1.SectionName]("api"),
			HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch},
			HTTPFilters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To[gwv1.PreciseHostname]("internal.example.com")}}},
			Timeouts:    &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("10s")},
		}}
		p.Primary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter}
		p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{userCookieFilter}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	rule := route.Spec.Rules[0]
	if diff := cmp.Diff(p.Rules[0].HTTPMatches, rule.Matches); diff != "" {
		t.Errorf("rule matches must survive unchanged: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.Rules[0].HTTPFilters, rule.Filters); diff != "" {
		t.Errorf("rule filters must stay on the rule unchanged: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.Rules[0].Timeouts, rule.Timeouts); diff != "" {
		t.Errorf("rule timeouts must survive unchanged: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.Primary.HTTPFilters, rule.BackendRefs[0].Filters); diff != "" {
		t.Errorf("the primary's filters belong to its backendRef: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.Canary.HTTPFilters, rule.BackendRefs[1].Filters); diff != "" {
		t.Errorf("the canary's filters belong to its backendRef: -want, +got:\n%s", diff)
	}
	// The builder must not alias the spec: a later change to the route
	// would otherwise change the spec the next build reads.
	rule.BackendRefs[0].Filters[0].RequestHeaderModifier.Set[0].Value = "changed"
	if p.Primary.HTTPFilters[0].RequestHeaderModifier.Set[0].Value != "true" {
		t.Error("the composed route shares memory with the spec's filters")
	}
}

func TestBuildShaping(t *testing.T) {
	type want struct {
		weights []string
		matches map[string]int
		mirror  map[string]bool
	}
	cases := map[string]struct {
		reason string
		params Params
		want   want
	}{
		"ABCompanionBeforeItsRule": {
			reason: "With A/B matches each rule gets a companion, named after it, that sends matching requests to the canary only; it comes first.",
			params: params(func(p *Params) {
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch, {QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "beta", Value: "1"}}}}
			}),
			want: want{
				weights: []string{"api-canary-match: canary-proxy=1", "api: podinfo-primary=80 canary-proxy=20"},
				matches: map[string]int{"api-canary-match": 2, "api": 1},
				mirror:  map[string]bool{"api-canary-match": false, "api": false},
			},
		},
		"ABOnlyWhileActive": {
			reason: "A stable route (no rollout under way) has no companion rules.",
			params: params(func(p *Params) {
				p.CanaryWeight, p.Active = percent.Int(0), false
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			}),
			want: want{weights: []string{"-: podinfo-primary=100 canary-proxy=0"}, matches: map[string]int{"-": 1}, mirror: map[string]bool{"-": false}},
		},
		"MirrorOnWeightedRulesOnly": {
			reason: "The mirror filter goes on each weighted rule, never on companion rules.",
			params: params(func(p *Params) {
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api")}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
				p.MirrorPercent = ptr.To[int32](10)
			}),
			want: want{
				weights: []string{"api-canary-match: canary-proxy=1", "api: podinfo-primary=80 canary-proxy=20"},
				matches: map[string]int{"api-canary-match": 1, "api": 1},
				mirror:  map[string]bool{"api-canary-match": false, "api": true},
			},
		},
		"SessionCompanion": {
			reason: "With affinity and a canary above 0, a companion rule keeps sessions that carry the cookie on the canary.",
			params: params(func(p *Params) {
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: 24 * time.Hour}
			}),
			want: want{
				weights: []string{"-: canary-proxy=1", "-: podinfo-primary=80 canary-proxy=20"},
				matches: map[string]int{"-": 1},
				mirror:  map[string]bool{"-": false},
			},
		},
		"NoSessionAtZero": {
			reason: "A rollout under way at 0% sets no cookie and has no session rule.",
			params: params(func(p *Params) {
				p.CanaryWeight = percent.Int(0)
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
			}),
			want: want{weights: []string{"-: podinfo-primary=100 canary-proxy=0"}, matches: map[string]int{"-": 1}, mirror: map[string]bool{"-": false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			route := admitted(t, tc.params).(*gwv1.HTTPRoute)
			got := want{weights: weights(route), matches: map[string]int{}, mirror: map[string]bool{}}
			for _, r := range route.Spec.Rules {
				n := string(ptr.Deref(r.Name, "-"))
				got.matches[n] = len(r.Matches)
				for _, f := range r.Filters {
					if f.Type == gwv1.HTTPRouteFilterRequestMirror {
						got.mirror[n] = true
					}
				}
				if _, ok := got.mirror[n]; !ok {
					got.mirror[n] = false
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nBuild(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestABMatchesCombine(t *testing.T) {
	p := params(func(p *Params) {
		p.Rules = []xr.Rule{{HTTPMatches: []gwv1.HTTPRouteMatch{
			apiMatch,
			{Path: apiMatch.Path, Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Tenant", Value: "a"}}},
		}}}
		p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch, {Method: ptr.To(gwv1.HTTPMethodGet)}}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	want := []gwv1.HTTPRouteMatch{
		{Path: apiMatch.Path, Headers: abMatch.Headers},
		{Path: apiMatch.Path, Method: ptr.To(gwv1.HTTPMethodGet)},
		{Path: apiMatch.Path, Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Tenant", Value: "a"}, {Name: "X-Beta", Value: "yes"}}},
		{Path: apiMatch.Path, Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Tenant", Value: "a"}}},
	}
	if diff := cmp.Diff(want, route.Spec.Rules[0].Matches); diff != "" {
		t.Errorf("each A/B match adds its conditions to each of the rule's matches: -want, +got:\n%s", diff)
	}
}

func TestAffinityFilters(t *testing.T) {
	a := &Affinity{CookieName: "canary", Value: CookieValue("test", "podinfo", "v2"), MaxAge: 24 * time.Hour}
	p := params(func(p *Params) {
		p.Affinity = a
		p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter, userCookieFilter}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	weighted := route.Spec.Rules[1]
	var modifiers []*gwv1.HTTPHeaderFilter
	for _, f := range weighted.BackendRefs[1].Filters {
		if f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier {
			modifiers = append(modifiers, f.ResponseHeaderModifier)
		}
	}
	want := []*gwv1.HTTPHeaderFilter{{Add: []gwv1.HTTPHeader{
		{Name: "X-Served-By", Value: "canary"},
		{Name: "Set-Cookie", Value: "canary=" + a.Value + "; Max-Age=86400; Path=/; HttpOnly"},
	}}}
	if diff := cmp.Diff(want, modifiers); diff != "" {
		t.Errorf("the cookie joins the canary's own ResponseHeaderModifier, never a second one: -want, +got:\n%s", diff)
	}
	for _, f := range weighted.BackendRefs[0].Filters {
		if f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier {
			t.Error("the primary must not set the canary's cookie")
		}
	}

	session := route.Spec.Rules[0]
	wantMatch := gwv1.HTTPHeaderMatch{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "Cookie", Value: `^(?:.*;\s*)?canary=` + a.Value + `(?:;.*)?$`}
	if diff := cmp.Diff([]gwv1.HTTPHeaderMatch{wantMatch}, session.Matches[0].Headers); diff != "" {
		t.Errorf("the session rule matches the cookie with an anchored regular expression: -want, +got:\n%s", diff)
	}
}

func TestCookieValue(t *testing.T) {
	v := CookieValue("test", "podinfo", "v2")
	if v != CookieValue("test", "podinfo", "v2") {
		t.Error("the cookie value must be stable across runs")
	}
	if v == CookieValue("test", "podinfo", "v3") {
		t.Error("a new revision must change the cookie value, dropping old sessions")
	}
	if v == CookieValue("other", "podinfo", "v2") {
		t.Error("routes in different namespaces must not share a cookie value")
	}
	for _, c := range v {
		if !strings.ContainsRune("0123456789abcdef", c) {
			t.Fatalf("cookie value %q must be plain hex, valid in any cookie", v)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	affinity := &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
	manyRules := make([]xr.Rule, 6)
	cases := map[string]struct {
		reason string
		params Params
		want   []string
	}{
		"UserSetCookieCollides": {
			reason: "A user Set-Cookie on the canary collides with the affinity cookie: the error names the user's header, even at weight 0.",
			params: params(func(p *Params) {
				p.CanaryWeight, p.Active = percent.Int(0), false
				p.Affinity = affinity
				p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "set-cookie", Value: "a=b"}}}}}
			}),
			want: []string{"spec.canary.filters[0].responseHeaderModifier.set[0].name", "spec.traffic.sessionAffinity"},
		},
		"CanaryRemovesSetCookie": {
			reason: "A remove of Set-Cookie (any case) in the canary's ResponseHeaderModifier would drop the cookie merged into that very filter.",
			params: params(func(p *Params) {
				p.Affinity = affinity
				p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x-a", "set-cookie"}}}}
			}),
			want: []string{"spec.canary.filters[0].responseHeaderModifier.remove[1]", "spec.traffic.sessionAffinity", "canary"},
		},
		"PrimaryRemovesItsSetCookie": {
			reason: "With primaryCookieName the primary sets a cookie too: its remove of Set-Cookie is refused, even at weight 0.",
			params: params(func(p *Params) {
				p.CanaryWeight, p.Active = percent.Int(0), false
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
				p.Primary.HTTPFilters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"Set-Cookie"}}}}
			}),
			want: []string{"spec.primary.filters[0].responseHeaderModifier.remove[0]", "spec.traffic.sessionAffinity", "primary"},
		},
		"RuleSetsSetCookie": {
			reason: "A rule-level set of Set-Cookie applies to every backend's responses, after the side's, and would replace the session cookie.",
			params: params(func(p *Params) {
				p.Affinity = affinity
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPFilters: []gwv1.HTTPRouteFilter{headerFilter, {Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "SET-COOKIE", Value: "x=1"}}}}}}}
			}),
			want: []string{"spec.rules[0].filters[1].responseHeaderModifier.set[0].name", "spec.traffic.sessionAffinity"},
		},
		"RuleRemovesSetCookie": {
			reason: "A rule-level remove of Set-Cookie would drop the session cookie, even at weight 0.",
			params: params(func(p *Params) {
				p.CanaryWeight, p.Active = percent.Int(0), false
				p.Affinity = affinity
				p.Rules = []xr.Rule{{HTTPFilters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"set-cookie"}}}}}}
			}),
			want: []string{"spec.rules[0].filters[0].responseHeaderModifier.remove[0]", "spec.traffic.sessionAffinity"},
		},
		"RuleAddsCookieOfTheSameName": {
			reason: "A rule-level add of a cookie named like a session cookie would replace it in the client.",
			params: params(func(p *Params) {
				p.Affinity = affinity
				p.Rules = []xr.Rule{{HTTPFilters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "Set-Cookie", Value: "canary=1; Path=/"}}}}}}}
			}),
			want: []string{"spec.rules[0].filters[0].responseHeaderModifier.add[0].value", "spec.traffic.sessionAffinity"},
		},
		"MirrorMatchOnCookie": {
			reason: "A mirror match on the Cookie header would repeat the session companions' key in their crossed matches.",
			params: params(func(p *Params) {
				p.Affinity = affinity
				p.MirrorPercent = ptr.To[int32](10)
				p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "cookie", Value: "x"}}}}
			}),
			want: []string{"spec.traffic.mirror.matches[0].headers[0].name", "spec.traffic.sessionAffinity"},
		},
		"ABAndMirrorOnOneHeader": {
			reason: "A request may meet a regular expression of the A/B matches and a mirror match on the same header, which outranks it (a method): one match cannot say both, so it is refused, naming both.",
			params: params(func(p *Params) {
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "x-canary", Value: "1|2"}}}}
				p.MirrorPercent = ptr.To[int32](10)
				p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Canary", Value: "2"}}}}
				p.MirrorPath = field.NewPath("spec", "traffic", "steps").Index(1).Child("mirror", "matches")
			}),
			want: []string{"spec.traffic.steps[1].mirror.matches[0]", "spec.traffic.matches[0]", `header "x-canary"`},
		},
		"TooManyCrossedMatches": {
			reason: "The A/B companion carries the A/B matches crossed with the mirror's: they count toward the 64 matches of a rule.",
			params: params(func(p *Params) {
				p.ABHTTPMatches = make([]gwv1.HTTPRouteMatch, 8)
				p.MirrorHTTPMatches = make([]gwv1.HTTPRouteMatch, 8)
				for i := range 8 {
					p.ABHTTPMatches[i] = gwv1.HTTPRouteMatch{QueryParams: []gwv1.HTTPQueryParamMatch{{Name: gwv1.HTTPHeaderName("ab" + strconv.Itoa(i)), Value: "1"}}}
					p.MirrorHTTPMatches[i] = gwv1.HTTPRouteMatch{Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{{Name: gwv1.HTTPHeaderName("m" + strconv.Itoa(i)), Value: "1"}}}
				}
				p.MirrorPercent = ptr.To[int32](10)
			}),
			want: []string{"spec.rules.matches", "72 matches in a rule's A/B companion, 8 more than the Gateway API allows (64)"},
		},
		"GRPCABServiceContradicts": {
			reason: "An A/B method match of another service than the rule's would match nothing.",
			params: params(func(p *Params) {
				p.Kind = xr.KindGRPCRoute
				p.Rules = []xr.Rule{{GRPCMatches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}}}}
				p.ABGRPCMatches = []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Cart"), Method: ptr.To("Add")}}}
			}),
			want: []string{"spec.traffic.matches[0].method", "contradicts the method match of spec.rules[0].matches[0]"},
		},
		"GRPCMirrorRegexMethod": {
			reason: "A regular expression method and another method match cannot be joined in one match: refused, naming both.",
			params: params(func(p *Params) {
				p.Kind = xr.KindGRPCRoute
				p.Rules = []xr.Rule{{GRPCMatches: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}}}}
				p.MirrorPercent = ptr.To[int32](10)
				p.MirrorGRPCMatches = []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Type: ptr.To(gwv1.GRPCMethodMatchRegularExpression), Method: ptr.To("Get.*")}}}
			}),
			want: []string{"spec.traffic.mirror.matches[0].method", "spec.rules[0].matches[0]", "regular expression"},
		},
		"UserCookieMatchCollides": {
			reason: "A user match on the Cookie header collides with the session rule's match.",
			params: params(func(p *Params) {
				p.Affinity = affinity
				p.Rules = []xr.Rule{{HTTPMatches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "Cookie", Value: "x"}}}}}}
			}),
			want: []string{"spec.rules[0].matches[0].headers[0].name", "spec.traffic.sessionAffinity"},
		},
		"ABHeaderRepeatsRuleHeader": {
			reason: "An A/B header that the rule already matches would make a duplicate key: the error names both.",
			params: params(func(p *Params) {
				p.Rules = []xr.Rule{{HTTPMatches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "x-beta", Value: "no"}}}}}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			}),
			want: []string{"spec.traffic.matches[0].headers[0].name", "spec.rules[0].matches[0].headers[0]"},
		},
		"ABMethodContradicts": {
			reason: "An A/B method that contradicts the rule's would match nothing.",
			params: params(func(p *Params) {
				p.Rules = []xr.Rule{{HTTPMatches: []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodPost)}}}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
			}),
			want: []string{"spec.traffic.matches[0].method", "contradicts"},
		},
		"TooManyRulesWithCompanions": {
			reason: "Six rules with A/B and session companions make 18 rules: the error says the limit and by how much.",
			params: params(func(p *Params) {
				p.Rules = manyRules
				p.Affinity = affinity
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			}),
			want: []string{"spec.rules", "18 rules, 2 more than the Gateway API allows (16)", "companion"},
		},
		"TooManyMatchesInCompanion": {
			reason: "A rule's matches times the A/B matches must fit the 64 matches of a rule.",
			params: params(func(p *Params) {
				ms := make([]gwv1.HTTPRouteMatch, 9)
				for i := range ms {
					ms[i] = apiMatch
				}
				p.Rules = []xr.Rule{{HTTPMatches: ms}}
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch, abMatch, abMatch, abMatch, abMatch, abMatch, abMatch, abMatch}
			}),
			want: []string{"spec.rules[0].matches", "72 matches in a rule's A/B companion, 8 more"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := Build(tc.params)
			got := errs.ToAggregate()
			if got == nil {
				t.Fatalf("%s\nBuild(...): want an error, got none", tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("%s\nBuild(...): error %q does not mention %q", tc.reason, got, w)
				}
			}
		})
	}
}

func TestBuildGRPCRoute(t *testing.T) {
	svc := gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}
	p := params(func(p *Params) {
		p.Kind = xr.KindGRPCRoute
		p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("checkout"), GRPCMatches: []gwv1.GRPCRouteMatch{svc}}}
		p.ABGRPCMatches = []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Name: "x-beta", Value: "yes"}}}}
		p.MirrorPercent = ptr.To[int32](5)
		p.Canary.GRPCFilters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-canary", Value: "1"}}}}}
	})
	route := admitted(t, p).(*gwv1.GRPCRoute)
	if diff := cmp.Diff([]string{"checkout-canary-match: canary-proxy=1", "checkout: podinfo-primary=80 canary-proxy=20"}, weights(route)); diff != "" {
		t.Errorf("GRPCRoute weights: -want, +got:\n%s", diff)
	}
	wantAB := []gwv1.GRPCRouteMatch{{Method: svc.Method, Headers: p.ABGRPCMatches[0].Headers}}
	if diff := cmp.Diff(wantAB, route.Spec.Rules[0].Matches); diff != "" {
		t.Errorf("GRPCRoute A/B companion matches: -want, +got:\n%s", diff)
	}
	if f := route.Spec.Rules[1].Filters; len(f) != 1 || f[0].Type != gwv1.GRPCRouteFilterRequestMirror || *f[0].RequestMirror.Percent != 5 {
		t.Errorf("the weighted GRPCRoute rule mirrors 5%% to the canary, got filters %+v", f)
	}
	if diff := cmp.Diff(p.Canary.GRPCFilters, route.Spec.Rules[1].BackendRefs[1].Filters); diff != "" {
		t.Errorf("the canary's GRPCRoute filters belong to its backendRef: -want, +got:\n%s", diff)
	}
}

func TestBuildStreamRoutes(t *testing.T) {
	cases := map[string]struct {
		reason     string
		kind       xr.RouteKind
		version    v1beta1.RouteVersion
		apiVersion string
	}{
		"TLSRouteV1":       {reason: "A TLSRoute carries one rule of weighted backends.", kind: xr.KindTLSRoute, version: v1beta1.RouteV1, apiVersion: "gateway.networking.k8s.io/v1"},
		"TLSRouteV1Alpha2": {reason: "Older clusters get the v1alpha2 TLSRoute the Input asks for.", kind: xr.KindTLSRoute, version: v1beta1.RouteV1Alpha2, apiVersion: "gateway.networking.k8s.io/v1alpha2"},
		"TCPRouteV1":       {reason: "A TCPRoute carries one rule of weighted backends.", kind: xr.KindTCPRoute, version: v1beta1.RouteV1, apiVersion: "gateway.networking.k8s.io/v1"},
		"TCPRouteV1Alpha2": {reason: "Older clusters get the v1alpha2 TCPRoute the Input asks for.", kind: xr.KindTCPRoute, version: v1beta1.RouteV1Alpha2, apiVersion: "gateway.networking.k8s.io/v1alpha2"},
		"UDPRouteV1":       {reason: "A UDPRoute carries one rule of weighted backends.", kind: xr.KindUDPRoute, version: v1beta1.RouteV1, apiVersion: "gateway.networking.k8s.io/v1"},
		"UDPRouteV1Alpha2": {reason: "Older clusters get a v1alpha2 UDPRoute.", kind: xr.KindUDPRoute, version: v1beta1.RouteV1Alpha2, apiVersion: "gateway.networking.k8s.io/v1alpha2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := params(func(p *Params) {
				p.Kind, p.Version = tc.kind, tc.version
				p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("tls")}}
				if tc.kind != xr.KindTLSRoute {
					p.Hostnames = nil
				}
			})
			obj := admitted(t, p)
			if got := obj.GetObjectKind().GroupVersionKind(); got.GroupVersion().String() != tc.apiVersion || got.Kind != string(tc.kind) {
				t.Errorf("%s\nBuild(...): got %s, want %s %s", tc.reason, got, tc.apiVersion, tc.kind)
			}
			if diff := cmp.Diff([]string{"tls: podinfo-primary=80 canary-proxy=20"}, weights(obj)); diff != "" {
				t.Errorf("%s\nBuild(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBuildDoesNotAliasABMatches(t *testing.T) {
	p := params(func(p *Params) {
		p.ABHTTPMatches = []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Type: ptr.To(gwv1.HeaderMatchExact), Name: "X-Beta", Value: "yes"}}}}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	*route.Spec.Rules[0].Matches[0].Headers[0].Type = gwv1.HeaderMatchRegularExpression
	if got := *p.ABHTTPMatches[0].Headers[0].Type; got != gwv1.HeaderMatchExact {
		t.Errorf("the companion rule shares memory with the spec's A/B matches: the spec now says %s", got)
	}
}

func TestAdmitNamesSpecRules(t *testing.T) {
	sixteen := make([]gwv1.HTTPHeaderMatch, 16)
	for i := range sixteen {
		sixteen[i] = gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName("X-H" + strconv.Itoa(i)), Value: "v"}
	}
	p := params(func(p *Params) {
		p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("a")}, {Name: ptr.To[gwv1.SectionName]("b"), HTTPMatches: []gwv1.HTTPRouteMatch{{Headers: sixteen}}}}
		p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
	})
	obj, _ := Build(p)
	got := Admit(p, obj).ToAggregate()
	// Only the session companion of spec.rules[1] (the composed rules[2])
	// has a 17th header, the cookie match.
	want := "spec.rules[1].matches[0].headers: Too many: 17: in the session companion rule: must have at most 16 items"
	if got == nil || got.Error() != want {
		t.Errorf("Admit(...): the error must name the spec's rule and its companion\nwant: %s\ngot:  %v", want, got)
	}
}

func TestExplain(t *testing.T) {
	composed := func(i int) *field.Path { return field.NewPath("spec", "rules").Index(i).Child("filters") }
	cases := map[string]struct {
		reason string
		params Params
		err    *field.Error
		want   string
	}{
		"WeightedRule": {
			reason: "The weighted rule of spec.rules[1] is the composed rules[3] when each rule has an A/B companion.",
			params: params(func(p *Params) { p.Rules = make([]xr.Rule, 2); p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} }),
			err:    field.Invalid(composed(3), "x", "bad"),
			want:   `spec.rules[1].filters: Invalid value: "x": bad`,
		},
		"Companion": {
			reason: "The A/B companion of spec.rules[1] is the composed rules[2].",
			params: params(func(p *Params) { p.Rules = make([]xr.Rule, 2); p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} }),
			err:    field.Invalid(composed(2), "x", "bad"),
			want:   `spec.rules[1].filters: Invalid value: "x": in the A/B companion rule: bad`,
		},
		"DefaultRule": {
			reason: "Without spec.rules the errors are in the default rule.",
			params: params(),
			err:    field.Invalid(composed(0), "x", "bad"),
			want:   `spec.rules.filters: Invalid value: "x": in the default rule: bad`,
		},
		"DefaultRuleCompanion": {
			reason: "... or in one of its companions.",
			params: params(func(p *Params) { p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} }),
			err:    field.Invalid(composed(0), "x", "bad"),
			want:   `spec.rules.filters: Invalid value: "x": in the A/B companion rule of the default rule: bad`,
		},
		"PrimaryFilter": {
			reason: "A backend filter of the weighted rule's first backend is the primary's own: named after spec.primary.filters, without a rule (every rule carries it).",
			params: params(),
			err:    field.Invalid(field.NewPath("spec", "rules").Index(0).Child("backendRefs").Index(0).Child("filters").Index(1).Child("type"), "x", "bad"),
			want:   `spec.primary.filters[1].type: Invalid value: "x": bad`,
		},
		"CanaryFilterInCompanion": {
			reason: "The only backend of a companion rule is the canary: its filter is named after spec.canary.filters.",
			params: params(func(p *Params) { p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} }),
			err:    field.Invalid(field.NewPath("spec", "rules").Index(0).Child("backendRefs").Index(0).Child("filters").Index(0), "x", "bad"),
			want:   `spec.canary.filters[0]: Invalid value: "x": bad`,
		},
		"SessionCookiePushesOverTheLimit": {
			reason: "When the canary's ResponseHeaderModifier carries the session cookie, an error in it says that the cookie counts.",
			params: params(func(p *Params) {
				p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter, userCookieFilter}
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
			}),
			err:  field.TooMany(field.NewPath("spec", "rules").Index(1).Child("backendRefs").Index(1).Child("filters").Index(1).Child("responseHeaderModifier", "add"), 17, 16),
			want: "spec.canary.filters[1].responseHeaderModifier.add: Too many: 17: must have at most 16 items (the session cookie's Set-Cookie header, which spec.traffic.sessionAffinity adds to this ResponseHeaderModifier, counts here)",
		},
		"SessionCookieFilterOverTheLimit": {
			reason: "The ResponseHeaderModifier that the function appends for the cookie is named after spec.traffic.sessionAffinity.",
			params: params(func(p *Params) {
				p.Canary.HTTPFilters = []gwv1.HTTPRouteFilter{headerFilter}
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
			}),
			err:  field.Invalid(field.NewPath("spec", "rules").Index(1).Child("backendRefs").Index(1).Child("filters").Index(1), "x", "bad"),
			want: `spec.traffic.sessionAffinity: Invalid value: "x": the session cookie's ResponseHeaderModifier, added to the canary's filters: bad`,
		},
		"MirrorFilterCounts": {
			reason: "Too many filters on a weighted rule that carries the function's mirror filter say that it counts.",
			params: params(func(p *Params) { p.MirrorPercent = ptr.To[int32](10) }),
			err:    field.TooMany(composed(0), 17, 16),
			want:   "spec.rules.filters: Too many: 17: in the default rule (the RequestMirror filter that spec.traffic.mirror adds to each weighted rule counts here): must have at most 16 items",
		},
		"PrimaryFilterInPrimaryMirrorCompanion": {
			reason: "The only backend of the primary's session companion that mirrors is the primary: its filter is named after spec.primary.filters.",
			params: params(func(p *Params) {
				p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
				p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
			}),
			err:  field.Invalid(field.NewPath("spec", "rules").Index(1).Child("backendRefs").Index(0).Child("filters").Index(0), "x", "bad"),
			want: `spec.primary.filters[0]: Invalid value: "x": bad`,
		},
		"MirrorFilterCountsInCompanion": {
			reason: "Too many filters on a mirror companion say that the mirror filter the function adds to it counts, naming the step's mirror.",
			params: params(func(p *Params) {
				p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
				p.MirrorPath = field.NewPath("spec", "traffic", "steps").Index(2).Child("mirror", "matches")
			}),
			err:  field.TooMany(composed(0), 17, 16),
			want: "spec.rules.filters: Too many: 17: in the mirror companion rule of the default rule (the RequestMirror filter that spec.traffic.steps[2].mirror adds to this companion rule counts here): must have at most 16 items",
		},
		"NotARule": {
			reason: "Errors outside the rules keep their path.",
			params: params(),
			err:    field.Invalid(field.NewPath("spec", "hostnames").Index(0), "x", "bad"),
			want:   `spec.hostnames[0]: Invalid value: "x": bad`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := explain(tc.params, field.ErrorList{tc.err}).ToAggregate().Error()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nexplain(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBuildRulesOfTheirOwn(t *testing.T) {
	static := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
		Name: "cdn-cache", Namespace: ptr.To(gwv1.Namespace("cdn")), Port: ptr.To[gwv1.PortNumber](80),
	}}}
	redirect := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{StatusCode: ptr.To(301)}}
	retry := &gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{503}, Attempts: ptr.To(2), Backoff: ptr.To[gwv1.Duration]("100ms")}
	rules := []xr.Rule{
		{Name: ptr.To[gwv1.SectionName]("legacy"), HTTPMatches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/old")}}}, HTTPFilters: []gwv1.HTTPRouteFilter{redirect}},
		{Name: ptr.To[gwv1.SectionName]("static"), HTTPBackendRefs: []gwv1.HTTPBackendRef{static}},
		{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}, Retry: retry},
	}
	p := params(func(p *Params) {
		p.Rules = rules
		p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
		p.MirrorPercent = ptr.To[int32](10)
		p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", MaxAge: time.Hour}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	want := []string{
		"legacy:",
		"static: cdn-cache=1",
		"api-canary-match: canary-proxy=1",
		"api-canary-session: canary-proxy=1",
		"api: podinfo-primary=80 canary-proxy=20",
	}
	if diff := cmp.Diff(want, weights(route)); diff != "" {
		t.Errorf("rules of their own are composed as written, without companions, beside the weighted one: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]gwv1.HTTPRouteFilter{redirect}, route.Spec.Rules[0].Filters); diff != "" {
		t.Errorf("the redirect rule keeps its filters, and gains no mirror: -want, +got:\n%s", diff)
	}
	if len(route.Spec.Rules[1].Filters) != 0 || route.Spec.Rules[1].Matches != nil {
		t.Errorf("the static rule is as written: no mirror, no default match added; got %+v", route.Spec.Rules[1])
	}
	for _, i := range []int{2, 3, 4} {
		if diff := cmp.Diff(retry, route.Spec.Rules[i].Retry); diff != "" {
			t.Errorf("rule %d: the weighted rule's retry goes on its companions too: -want, +got:\n%s", i, diff)
		}
	}
}

func TestAffinityBothSides(t *testing.T) {
	a := &Affinity{
		CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: 24 * time.Hour,
		Attributes: xr.CookieAttributes{Path: "/shop", Domain: "example.com", Secure: true, SameSite: "Lax"},
	}
	cookie := func(name, value string) string {
		return name + "=" + value + "; Max-Age=86400; Path=/shop; Domain=example.com; Secure; HttpOnly; SameSite=Lax"
	}
	p := params(func(p *Params) {
		p.Affinity = a
		p.Primary.HTTPFilters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "X-Served-By", Value: "primary"}}}}}
	})
	route := admitted(t, p).(*gwv1.HTTPRoute)
	if diff := cmp.Diff([]string{"-: canary-proxy=1", "-: podinfo-primary=1", "-: podinfo-primary=80 canary-proxy=20"}, weights(route)); diff != "" {
		t.Errorf("the canary's session rule, then the primary's, then the weighted rule: -want, +got:\n%s", diff)
	}
	setCookie := func(r gwv1.HTTPBackendRef) []gwv1.HTTPHeader {
		for _, f := range r.Filters {
			if f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier {
				return f.ResponseHeaderModifier.Add
			}
		}
		return nil
	}
	weighted := route.Spec.Rules[2]
	if diff := cmp.Diff([]gwv1.HTTPHeader{{Name: "X-Served-By", Value: "primary"}, {Name: "Set-Cookie", Value: cookie("stable", a.PrimaryValue)}}, setCookie(weighted.BackendRefs[0])); diff != "" {
		t.Errorf("the primary sets its own cookie, in its own ResponseHeaderModifier: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]gwv1.HTTPHeader{{Name: "Set-Cookie", Value: cookie("canary", a.Value)}}, setCookie(weighted.BackendRefs[1])); diff != "" {
		t.Errorf("the canary sets its cookie with the attributes: -want, +got:\n%s", diff)
	}
	wantMatch := gwv1.HTTPHeaderMatch{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "Cookie", Value: `^(?:.*;\s*)?stable=` + a.PrimaryValue + `(?:;.*)?$`}
	if diff := cmp.Diff([]gwv1.HTTPHeaderMatch{wantMatch}, route.Spec.Rules[1].Matches[0].Headers); diff != "" {
		t.Errorf("the primary's session rule matches its cookie: -want, +got:\n%s", diff)
	}

	// At 0% nobody is sent to the canary, so neither side pins anybody.
	p.CanaryWeight = percent.Int(0)
	stable := admitted(t, p).(*gwv1.HTTPRoute)
	if diff := cmp.Diff([]string{"-: podinfo-primary=100 canary-proxy=0"}, weights(stable)); diff != "" {
		t.Errorf("at 0%% there are no session rules: -want, +got:\n%s", diff)
	}
	if got := setCookie(stable.Spec.Rules[0].BackendRefs[0]); len(got) != 1 {
		t.Errorf("at 0%% the primary sets no cookie: %v", got)
	}
}

func TestSessionPersistence(t *testing.T) {
	a := &Affinity{CookieName: "session", MaxAge: 90 * time.Minute, Persistence: true}
	want := &gwv1.SessionPersistence{
		SessionName:     ptr.To("session"),
		AbsoluteTimeout: ptr.To[gwv1.Duration]("1h30m"),
		Type:            ptr.To(gwv1.CookieBasedSessionPersistence),
		CookieConfig:    &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
	}
	cases := map[string]struct {
		reason string
		params Params
		want   *gwv1.SessionPersistence
	}{
		"HTTPRoute": {
			reason: "The weighted rule carries sessionPersistence instead of cookie filters and companion rules.",
			params: params(func(p *Params) { p.Affinity = a }),
			want:   want,
		},
		"GRPCRoute": {
			reason: "A GRPCRoute gets affinity the same way.",
			params: params(func(p *Params) { p.Kind, p.Affinity = xr.KindGRPCRoute, a }),
			want:   want,
		},
		"GRPCRouteV1Alpha2": {
			reason: "So does a v1alpha2 GRPCRoute.",
			params: params(func(p *Params) { p.Kind, p.Version, p.Affinity = xr.KindGRPCRoute, v1beta1.RouteV1Alpha2, a }),
			want:   want,
		},
		"AtZero": {
			reason: "At 0% there is no session to keep.",
			params: params(func(p *Params) { p.Affinity, p.CanaryWeight = a, percent.Zero }),
		},
		"Succeeded": {
			reason: "Once the rollout is over, affinity ends with it.",
			params: params(func(p *Params) { p.Affinity, p.CanaryWeight, p.Active = a, percent.Max, false }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got *gwv1.SessionPersistence
			var rules int
			switch r := admitted(t, tc.params).(type) {
			case *gwv1.HTTPRoute:
				got, rules = r.Spec.Rules[len(r.Spec.Rules)-1].SessionPersistence, len(r.Spec.Rules)
				for _, b := range r.Spec.Rules[0].BackendRefs {
					if len(b.Filters) > 0 {
						t.Errorf("%s\nno cookie filter of the function's with SessionPersistence: %+v", tc.reason, b.Filters)
					}
				}
			case *gwv1.GRPCRoute:
				got, rules = r.Spec.Rules[0].SessionPersistence, len(r.Spec.Rules)
			case *gwv1alpha2.GRPCRoute:
				got, rules = r.Spec.Rules[0].SessionPersistence, len(r.Spec.Rules)
			}
			if rules != 1 {
				t.Errorf("%s\n%d rules: no companion rule with SessionPersistence", tc.reason, rules)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nsessionPersistence: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGatewayDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 24 * time.Hour: "24h", 25*time.Hour + 61*time.Second: "25h1m1s", 99999 * time.Hour: "99999h",
	} {
		if got := gatewayDuration(d); got != want {
			t.Errorf("gatewayDuration(%s) = %q, want %q (Gateway API's Duration pattern)", d, got, want)
		}
	}
}
