package route

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// The Gateway API's precedence of matches, written from the text of
// HTTPRouteRule.Matches and GRPCRouteRule.Matches (sigs.k8s.io/gateway-api
// v1.6.3 apis/v1): the gateway picks the match that ranks first, and on a
// tie the first rule in list order. The tests below route representative
// requests through the composed rules with it and check each request's
// fate against the intents of the CanaryRoute.

// request is an HTTP or gRPC request, as far as matches see it.
type request struct {
	path, method string
	// service is the gRPC service; method is then the gRPC method.
	service string
	headers map[string]string
	query   map[string]string
}

func (r request) String() string {
	var parts []string
	if r.service != "" {
		parts = append(parts, r.service+"/"+r.method)
	} else {
		parts = append(parts, r.method+" "+r.path)
	}
	keys := make([]string, 0, len(r.headers))
	for k := range r.headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+": "+r.headers[k])
	}
	qs := make([]string, 0, len(r.query))
	for k := range r.query {
		qs = append(qs, k)
	}
	sort.Strings(qs)
	for _, k := range qs {
		parts = append(parts, "?"+k+"="+r.query[k])
	}
	return strings.Join(parts, " ")
}

// fullMatch matches a value against a Gateway API regular expression, as
// Envoy does: the whole value.
func fullMatch(pattern, value string) bool {
	re, ok := patterns[pattern]
	if !ok {
		re, _ = regexp.Compile(`^(?:` + pattern + `)$`)
		patterns[pattern] = re
	}
	return re != nil && re.MatchString(value)
}

// patterns are the regular expressions compiled so far: the tests route
// thousands of requests through the same few.
var patterns = map[string]*regexp.Regexp{}

// header looks a header up by its case-insensitive name.
func (r request) header(name string) (string, bool) {
	v, ok := r.headers[strings.ToLower(name)]
	return v, ok
}

// httpRankOf is the rank of an HTTPRouteMatch that the request meets:
// "Exact" path match; "Prefix" path match with largest number of
// characters; method match; largest number of header matches; largest
// number of query param matches. ok is false when the request does not
// meet it.
func httpRankOf(m gwv1.HTTPRouteMatch, r request) (rank [5]int, ok bool) {
	typ, value := gwv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		typ, value = ptr.Deref(m.Path.Type, gwv1.PathMatchPathPrefix), ptr.Deref(m.Path.Value, "/")
	}
	switch typ {
	case gwv1.PathMatchExact:
		if r.path != value {
			return rank, false
		}
		rank[0] = 1
	case gwv1.PathMatchPathPrefix:
		// Element-wise: /api matches /api and /api/x, not /apix.
		prefix := strings.TrimSuffix(value, "/")
		if r.path != prefix && !strings.HasPrefix(r.path, prefix+"/") {
			return rank, false
		}
		rank[1] = len(value)
	default:
		return rank, false
	}
	if m.Method != nil {
		if string(*m.Method) != r.method {
			return rank, false
		}
		rank[2] = 1
	}
	for _, h := range m.Headers {
		v, present := r.header(string(h.Name))
		if !present {
			return rank, false
		}
		if ptr.Deref(h.Type, gwv1.HeaderMatchExact) == gwv1.HeaderMatchRegularExpression {
			if !fullMatch(h.Value, v) {
				return rank, false
			}
		} else if v != h.Value {
			return rank, false
		}
	}
	rank[3] = len(m.Headers)
	for _, q := range m.QueryParams {
		v, present := r.query[string(q.Name)]
		if !present {
			return rank, false
		}
		if ptr.Deref(q.Type, gwv1.QueryParamMatchExact) == gwv1.QueryParamMatchRegularExpression {
			if !fullMatch(q.Value, v) {
				return rank, false
			}
		} else if v != q.Value {
			return rank, false
		}
	}
	rank[4] = len(m.QueryParams)
	return rank, true
}

// grpcRankOf is the rank of a GRPCRouteMatch that the request meets (the
// hostname is the route's, the same for every rule): characters in a
// matching service; characters in a matching method; header matches.
func grpcRankOf(m gwv1.GRPCRouteMatch, r request) (rank [5]int, ok bool) {
	if mm := m.Method; mm != nil {
		service, method := ptr.Deref(mm.Service, ""), ptr.Deref(mm.Method, "")
		if ptr.Deref(mm.Type, gwv1.GRPCMethodMatchExact) == gwv1.GRPCMethodMatchRegularExpression {
			if (service != "" && !fullMatch(service, r.service)) || (method != "" && !fullMatch(method, r.method)) {
				return rank, false
			}
		} else if (service != "" && service != r.service) || (method != "" && method != r.method) {
			return rank, false
		}
		rank[0], rank[1] = len(service), len(method)
	}
	for _, h := range m.Headers {
		v, present := r.header(string(h.Name))
		if !present {
			return rank, false
		}
		if ptr.Deref(h.Type, gwv1.GRPCHeaderMatchExact) == gwv1.GRPCHeaderMatchRegularExpression {
			if !fullMatch(h.Value, v) {
				return rank, false
			}
		} else if v != h.Value {
			return rank, false
		}
	}
	rank[2] = len(m.Headers)
	return rank, true
}

// pick is the index of the rule that the gateway sends the request to: the
// first rule holding the match that ranks first; -1 for none.
func pick[M any](matches [][]M, r request, rankOf func(M, request) ([5]int, bool)) int {
	best, bestRank := -1, [5]int{}
	for i, ms := range matches {
		for _, m := range ms {
			rank, ok := rankOf(m, r)
			if ok && (best < 0 || greater(rank, bestRank)) {
				best, bestRank = i, rank
			}
		}
	}
	return best
}

func greater(a, b [5]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// fate is what becomes of a request: where it goes, whether the canary
// gets a copy, whether the gateway keeps its session.
type fate struct {
	To       string // canary, primary, weighted, or none (no rule: 404)
	Mirrored bool
	Sticky   bool // a weighted rule with sessionPersistence
}

func (f fate) String() string {
	s := f.To
	if f.Mirrored {
		s += "+mirror"
	}
	if f.Sticky {
		s += "+sticky"
	}
	return s
}

// fateOf reads a request's fate from the rule it reaches.
func fateOf(refs []gwv1.BackendRef, mirrored, persistence bool) fate {
	f := fate{Mirrored: mirrored, Sticky: persistence}
	switch {
	case len(refs) == 2:
		f.To = "weighted"
	case len(refs) == 1 && refs[0].Name == canary.Ref.Name:
		f.To = "canary"
	case len(refs) == 1:
		f.To = "primary"
	}
	return f
}

// routed is where each request goes in a composed route.
func routed(t *testing.T, p Params, requests []request) []fate {
	t.Helper()
	obj := admitted(t, p)
	out := make([]fate, 0, len(requests))
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		matches := make([][]gwv1.HTTPRouteMatch, 0, len(r.Spec.Rules))
		for _, rule := range r.Spec.Rules {
			matches = append(matches, rule.Matches)
		}
		for _, req := range requests {
			i := pick(matches, req, httpRankOf)
			if i < 0 {
				out = append(out, fate{To: "none"})
				continue
			}
			rule := r.Spec.Rules[i]
			refs := make([]gwv1.BackendRef, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			mirrored := false
			for _, f := range rule.Filters {
				mirrored = mirrored || f.Type == gwv1.HTTPRouteFilterRequestMirror
			}
			out = append(out, fateOf(refs, mirrored, rule.SessionPersistence != nil))
		}
	case *gwv1.GRPCRoute:
		matches := make([][]gwv1.GRPCRouteMatch, 0, len(r.Spec.Rules))
		for _, rule := range r.Spec.Rules {
			ms := rule.Matches
			if len(ms) == 0 {
				ms = []gwv1.GRPCRouteMatch{{}} // No matches: every request.
			}
			matches = append(matches, ms)
		}
		for _, req := range requests {
			i := pick(matches, req, grpcRankOf)
			if i < 0 {
				out = append(out, fate{To: "none"})
				continue
			}
			rule := r.Spec.Rules[i]
			refs := make([]gwv1.BackendRef, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			mirrored := false
			for _, f := range rule.Filters {
				mirrored = mirrored || f.Type == gwv1.GRPCRouteFilterRequestMirror
			}
			out = append(out, fateOf(refs, mirrored, rule.SessionPersistence != nil))
		}
	default:
		t.Fatalf("not an HTTPRoute or a GRPCRoute: %T", obj)
	}
	return out
}

// intended is a request's fate as the CanaryRoute means it: the A/B
// matches and the canary's cookie send it to the canary alone, else the
// primary's cookie to the primary alone, else the weights decide (with the
// gateway's session persistence in that mode); the mirror copies it to the
// canary when it meets the mirror's matches (or the mirror has none),
// unless the canary alone serves it. meets says whether it meets a list of
// matches (the rule's, the A/B matches, the mirror's).
func intended(p Params, r request, meets func(which string) bool) fate {
	if !meets("rule") {
		return fate{To: "none"}
	}
	cookie := func(name, value string) bool {
		c, ok := r.header("Cookie")
		if !ok || name == "" {
			return false
		}
		for _, kv := range strings.Split(c, ";") {
			if strings.TrimSpace(kv) == name+"="+value {
				return true
			}
		}
		return false
	}
	a := p.Affinity
	cookies := a != nil && !a.Persistence
	f := fate{To: "weighted", Sticky: a != nil && a.Persistence}
	switch {
	case meets("ab"), cookies && cookie(a.CookieName, a.Value):
		return fate{To: "canary"}
	case cookies && cookie(a.PrimaryCookieName, a.PrimaryValue):
		f.To = "primary"
	}
	f.Mirrored = p.MirrorPercent != nil && meets("mirror")
	return f
}

// TestCompanionPrecedence routes representative requests (methods,
// headers, query parameters, each side's session cookie, both, another
// cookie) through the route composed for each combination of a rule's
// matches, A/B matches, a mirror (without matches, or limited by them) and
// session affinity (cookies of one or both sides, or the gateway's session
// persistence), with the Gateway API's precedence, and checks every
// request's fate against the CanaryRoute's intents: A/B matches always
// reach the canary, a session stays on its side, the mirror copies what it
// matches and nothing the canary alone serves, and every weighted rule
// keeps the gateway's session persistence. Every route passes the CRDs of
// both channels and fits the Gateway API's 16 rules.
func TestCompanionPrecedence(t *testing.T) {
	const cookieValue, primaryValue = "0123456789abcdef", "fedcba9876543210"
	api := ptr.To("/api")
	header := func(name, value string) gwv1.HTTPHeaderMatch {
		return gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(name), Value: value}
	}
	query := func(name, value string) gwv1.HTTPQueryParamMatch {
		return gwv1.HTTPQueryParamMatch{Name: gwv1.HTTPHeaderName(name), Value: value}
	}
	rules := map[string][]xr.Rule{
		"DefaultRule": nil,
		"MethodGET": {{HTTPMatches: []gwv1.HTTPRouteMatch{
			{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: api}, Method: ptr.To(gwv1.HTTPMethodGet)},
		}}},
		"PathAndHeader": {{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{
			{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: api}, Headers: []gwv1.HTTPHeaderMatch{header("x-tenant", "a")}},
		}}},
		"TwoMatches": {{HTTPMatches: []gwv1.HTTPRouteMatch{
			{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: api}},
			{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/api/x")}, Method: ptr.To(gwv1.HTTPMethodGet)},
		}}},
	}
	abs := map[string][]gwv1.HTTPRouteMatch{
		"NoAB":        nil,
		"ABHeader":    {{Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "1")}}},
		"ABQuery":     {{QueryParams: []gwv1.HTTPQueryParamMatch{query("canary", "1")}}},
		"ABMethod":    {{Method: ptr.To(gwv1.HTTPMethodPost)}},
		"ABTwo":       {{Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "1")}}, {QueryParams: []gwv1.HTTPQueryParamMatch{query("canary", "1")}}},
		"ABMethodGet": {{Method: ptr.To(gwv1.HTTPMethodGet), QueryParams: []gwv1.HTTPQueryParamMatch{query("canary", "1")}}},
	}
	type mirror struct {
		on      bool
		matches []gwv1.HTTPRouteMatch
	}
	mirrors := map[string]mirror{
		"NoMirror":          {},
		"MirrorAll":         {on: true},
		"MirrorGET":         {on: true, matches: []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}},
		"MirrorHeader":      {on: true, matches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{header("x-mirror", "1")}}}},
		"MirrorQuery":       {on: true, matches: []gwv1.HTTPRouteMatch{{QueryParams: []gwv1.HTTPQueryParamMatch{query("mirror", "1")}}}},
		"MirrorSameHeader":  {on: true, matches: []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "1")}}}},
		"MirrorOtherValue":  {on: true, matches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "2"), header("x-mirror", "1")}}}},
		"MirrorGETOrHeader": {on: true, matches: []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}, {Headers: []gwv1.HTTPHeaderMatch{header("x-mirror", "1")}}}},
	}
	affinities := map[string]*Affinity{
		"NoAffinity":         nil,
		"CanaryCookie":       {CookieName: "canary", Value: cookieValue, MaxAge: time.Hour},
		"BothCookies":        {CookieName: "canary", Value: cookieValue, PrimaryCookieName: "stable", PrimaryValue: primaryValue, MaxAge: time.Hour},
		"SessionPersistence": {CookieName: "canary", MaxAge: time.Hour, Persistence: true},
	}

	requests := make([]request, 0, 960)
	for _, path := range []string{"/api/x", "/other"} {
		for _, method := range []string{"GET", "POST"} {
			for _, xCanary := range []string{"", "1", "2"} {
				for _, xMirror := range []string{"", "1"} {
					for _, tenant := range []string{"", "a"} {
						for _, cookie := range []string{"", "a=b", "canary=" + cookieValue, "a=b; stable=" + primaryValue, "stable=" + primaryValue + "; canary=" + cookieValue} {
							for _, q := range []map[string]string{{}, {"canary": "1"}, {"mirror": "1"}, {"canary": "1", "mirror": "1"}} {
								h := map[string]string{}
								for k, v := range map[string]string{"x-canary": xCanary, "x-mirror": xMirror, "x-tenant": tenant, "cookie": cookie} {
									if v != "" {
										h[k] = v
									}
								}
								requests = append(requests, request{path: path, method: method, headers: h, query: q})
							}
						}
					}
				}
			}
		}
	}

	meetsAny := func(ms []gwv1.HTTPRouteMatch, r request) bool {
		for _, m := range ms {
			if _, ok := httpRankOf(m, r); ok {
				return true
			}
		}
		return false
	}
	for ruleName, rs := range rules {
		for abName, ab := range abs {
			for mirrorName, mir := range mirrors {
				for affName, aff := range affinities {
					name := strings.Join([]string{ruleName, abName, mirrorName, affName}, "/")
					t.Run(name, func(t *testing.T) {
						p := params(func(p *Params) {
							p.Rules, p.ABHTTPMatches, p.MirrorHTTPMatches, p.Affinity = rs, ab, mir.matches, aff
							if mir.on {
								p.MirrorPercent = ptr.To[int32](10)
							}
						})
						ruleMatches := []gwv1.HTTPRouteMatch{{}}
						if len(rs) > 0 {
							ruleMatches = rs[0].HTTPMatches
						}
						if contradicts(ruleMatches, ab) {
							// A method of the rule's and another of the
							// A/B matches: a companion match for no
							// request, refused.
							if _, errs := Build(p); !strings.Contains(errs.ToAggregate().Error(), "spec.traffic.matches[0].method") {
								t.Fatalf("Build(...): want an error naming the A/B method that contradicts the rule's, got %v", errs)
							}
							return
						}
						got := routed(t, p, requests)
						var diffs []string
						for i, r := range requests {
							want := intended(p, r, func(which string) bool {
								switch which {
								case "rule":
									return meetsAny(ruleMatches, r)
								case "ab":
									return meetsAny(ab, r)
								default:
									return mir.matches == nil || meetsAny(mir.matches, r)
								}
							})
							if want != got[i] {
								diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", r, want, got[i]))
							}
						}
						if len(diffs) > 0 {
							t.Errorf("%d of %d requests meet another fate than the CanaryRoute means, for example:\n%s", len(diffs), len(requests), strings.Join(diffs[:min(len(diffs), 8)], "\n"))
						}
					})
				}
			}
		}
	}
}

// contradicts reports whether a rule's match and an A/B match name two
// methods.
func contradicts(rule, ab []gwv1.HTTPRouteMatch) bool {
	for _, m := range rule {
		for _, a := range ab {
			if m.Method != nil && a.Method != nil && *m.Method != *a.Method {
				return true
			}
		}
	}
	return false
}

// TestCompanionPrecedenceGRPC is TestCompanionPrecedence for GRPCRoutes:
// A/B and mirror matches on headers and methods, and the gateway's session
// persistence, the only affinity of a GRPCRoute.
func TestCompanionPrecedenceGRPC(t *testing.T) {
	header := func(name, value string) gwv1.GRPCHeaderMatch {
		return gwv1.GRPCHeaderMatch{Name: gwv1.GRPCHeaderName(name), Value: value}
	}
	method := func(service, method string) *gwv1.GRPCMethodMatch {
		m := &gwv1.GRPCMethodMatch{}
		if service != "" {
			m.Service = ptr.To(service)
		}
		if method != "" {
			m.Method = ptr.To(method)
		}
		return m
	}
	rules := map[string][]xr.Rule{
		"NoMatches": nil,
		"Service":   {{Name: ptr.To[gwv1.SectionName]("checkout"), GRPCMatches: []gwv1.GRPCRouteMatch{{Method: method("shop.Checkout", "")}}}},
	}
	abs := map[string][]gwv1.GRPCRouteMatch{
		"NoAB":     nil,
		"ABHeader": {{Headers: []gwv1.GRPCHeaderMatch{header("x-canary", "1")}}},
		"ABMethod": {{Method: method("shop.Checkout", "Pay")}},
		"ABTwo":    {{Headers: []gwv1.GRPCHeaderMatch{header("x-canary", "1")}}, {Method: method("", "Pay")}},
	}
	mirrors := map[string]*[]gwv1.GRPCRouteMatch{
		"NoMirror":     nil,
		"MirrorAll":    {},
		"MirrorHeader": {{Headers: []gwv1.GRPCHeaderMatch{header("x-mirror", "1")}}},
		"MirrorMethod": {{Method: method("shop.Checkout", "Get")}},
		"MirrorLong":   {{Method: method("shop.Checkout", "")}, {Headers: []gwv1.GRPCHeaderMatch{header("x-canary", "1"), header("x-mirror", "1")}}},
	}
	affinities := map[string]*Affinity{
		"NoAffinity":         nil,
		"SessionPersistence": {CookieName: "canary", MaxAge: time.Hour, Persistence: true},
	}
	requests := make([]request, 0, 16)
	for _, service := range []string{"shop.Checkout", "shop.Other"} {
		for _, m := range []string{"Pay", "Get"} {
			for _, xCanary := range []string{"", "1"} {
				for _, xMirror := range []string{"", "1"} {
					h := map[string]string{}
					if xCanary != "" {
						h["x-canary"] = xCanary
					}
					if xMirror != "" {
						h["x-mirror"] = xMirror
					}
					requests = append(requests, request{service: service, method: m, headers: h})
				}
			}
		}
	}
	meetsAny := func(ms []gwv1.GRPCRouteMatch, r request) bool {
		if len(ms) == 0 {
			return true
		}
		for _, m := range ms {
			if _, ok := grpcRankOf(m, r); ok {
				return true
			}
		}
		return false
	}
	for ruleName, rs := range rules {
		for abName, ab := range abs {
			for mirrorName, mir := range mirrors {
				for affName, aff := range affinities {
					t.Run(strings.Join([]string{ruleName, abName, mirrorName, affName}, "/"), func(t *testing.T) {
						p := params(func(p *Params) {
							p.Kind, p.Rules, p.ABGRPCMatches, p.Affinity = xr.KindGRPCRoute, rs, ab, aff
							if mir != nil {
								p.MirrorPercent, p.MirrorGRPCMatches = ptr.To[int32](10), *mir
							}
						})
						var ruleMatches []gwv1.GRPCRouteMatch
						if len(rs) > 0 {
							ruleMatches = rs[0].GRPCMatches
						}
						got := routed(t, p, requests)
						var diffs []string
						for i, r := range requests {
							want := intended(p, r, func(which string) bool {
								switch which {
								case "rule":
									return meetsAny(ruleMatches, r)
								case "ab":
									return len(ab) > 0 && meetsAny(ab, r)
								default:
									return mir != nil && meetsAny(*mir, r)
								}
							})
							if want != got[i] {
								diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", r, want, got[i]))
							}
						}
						if len(diffs) > 0 {
							t.Errorf("%d of %d requests meet another fate than the CanaryRoute means, for example:\n%s", len(diffs), len(requests), strings.Join(diffs[:min(len(diffs), 8)], "\n"))
						}
					})
				}
			}
		}
	}
}

// TestCompanionRules pins the companion rules that each combination
// composes, in their order: name, backends, number of matches, whether the
// rule mirrors to the canary and keeps the gateway's session persistence.
func TestCompanionRules(t *testing.T) {
	both := &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
	get := []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
	query := []gwv1.HTTPRouteMatch{{QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "canary", Value: "1"}}}}
	api := func(p *Params) {
		p.Rules = []xr.Rule{{Name: ptr.To[gwv1.SectionName]("api"), HTTPMatches: []gwv1.HTTPRouteMatch{apiMatch}}}
	}
	cases := map[string]struct {
		reason string
		params Params
		want   []string
	}{
		"MirrorMatchesOnly": {
			reason: "A mirror limited to GETs: a mirror companion with the weighted backends and the mirror; the weighted rule mirrors nothing.",
			params: params(api, func(p *Params) { p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), get }),
			want: []string{
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"MirrorMatchesWithPersistence": {
			reason: "In SessionPersistence mode the mirror companion is a weighted rule too: it keeps the gateway's session persistence.",
			params: params(api, func(p *Params) {
				p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), get
				p.Affinity = &Affinity{CookieName: "s", MaxAge: time.Hour, Persistence: true}
			}),
			want: []string{
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror, persistence",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches, persistence",
			},
		},
		"MirrorGETWithBothCookies": {
			reason: "A mirror limited to GETs ranks above the cookies (a method above a header): the canary's session companion carries cookie and GET too, and a companion of the primary's cookie and GET mirrors what the primary's users send.",
			params: params(api, func(p *Params) { p.MirrorPercent, p.MirrorHTTPMatches, p.Affinity = ptr.To[int32](10), get, both }),
			want: []string{
				"api-canary-session: canary-proxy=1, 2 matches",
				"api-primary-session-mirror: podinfo-primary=1, 1 matches, mirror",
				"api-primary-session: podinfo-primary=1, 1 matches",
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"MirrorAllWithBothCookies": {
			reason: "A mirror without matches copies what the primary serves: the weighted rule's requests and the primary's users'; never what the canary alone serves.",
			params: params(api, func(p *Params) { p.MirrorPercent, p.Affinity = ptr.To[int32](10), both }),
			want: []string{
				"api-canary-session: canary-proxy=1, 1 matches",
				"api-primary-session: podinfo-primary=1, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
			},
		},
		"QueryABWithPrimaryCookie": {
			reason: "An A/B match on a query parameter ranks below the primary's cookie (a header): the A/B companion carries A/B and cookie too.",
			params: params(api, func(p *Params) { p.ABHTTPMatches, p.Affinity = query, both }),
			want: []string{
				"api-canary-match: canary-proxy=1, 2 matches",
				"api-canary-session: canary-proxy=1, 1 matches",
				"api-primary-session: podinfo-primary=1, 1 matches",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"HeaderABWithPrimaryCookie": {
			reason: "An A/B match on a header ties with the primary's cookie and comes first: nothing to add, the route of earlier releases.",
			params: params(api, func(p *Params) { p.ABHTTPMatches, p.Affinity = []gwv1.HTTPRouteMatch{abMatch}, both }),
			want: []string{
				"api-canary-match: canary-proxy=1, 1 matches",
				"api-canary-session: canary-proxy=1, 1 matches",
				"api-primary-session: podinfo-primary=1, 1 matches",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"HeaderABWithMirrorGET": {
			reason: "A mirror limited to GETs outranks an A/B header: the A/B companion carries A/B and GET too.",
			params: params(api, func(p *Params) {
				p.ABHTTPMatches, p.MirrorPercent, p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}, ptr.To[int32](10), get
			}),
			want: []string{
				"api-canary-match: canary-proxy=1, 2 matches",
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"Everything": {
			reason: "A/B on a query parameter, both cookies, a mirror limited to GETs: six rules, the A/B companion with every combination that could outrank it.",
			params: params(api, func(p *Params) {
				p.ABHTTPMatches, p.MirrorPercent, p.MirrorHTTPMatches, p.Affinity = query, ptr.To[int32](10), get, both
			}),
			want: []string{
				"api-canary-match: canary-proxy=1, 4 matches",
				"api-canary-session: canary-proxy=1, 2 matches",
				"api-primary-session-mirror: podinfo-primary=1, 1 matches, mirror",
				"api-primary-session: podinfo-primary=1, 1 matches",
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"RegexABBesideMirrorOfOneHeader": {
			reason: "A regular expression of the A/B matches and a mirror match on the same header cannot be joined, but need not be: the A/B match ties with the mirror's and comes first.",
			params: params(api, func(p *Params) {
				p.ABHTTPMatches = []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "x-canary", Value: "1|2"}}}}
				p.MirrorPercent, p.MirrorHTTPMatches = ptr.To[int32](10), []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "X-Canary", Value: "2"}}}}
			}),
			want: []string{
				"api-canary-match: canary-proxy=1, 1 matches",
				"api-canary-mirror: podinfo-primary=80 canary-proxy=20, 1 matches, mirror",
				"api: podinfo-primary=80 canary-proxy=20, 1 matches",
			},
		},
		"GRPCHeaderABWithMirrorMethod": {
			reason: "On a GRPCRoute a method outranks a header too: the A/B companion carries both.",
			params: params(func(p *Params) {
				p.Kind = xr.KindGRPCRoute
				p.ABGRPCMatches = []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Name: "x-canary", Value: "1"}}}}
				p.MirrorPercent = ptr.To[int32](10)
				p.MirrorGRPCMatches = []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("shop.Checkout")}}}
				p.Affinity = &Affinity{CookieName: "s", MaxAge: time.Hour, Persistence: true}
			}),
			want: []string{
				"-: canary-proxy=1, 2 matches",
				"-: podinfo-primary=80 canary-proxy=20, 1 matches, mirror, persistence",
				"-: podinfo-primary=80 canary-proxy=20, 0 matches, persistence",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := admitted(t, tc.params)
			summary := func(w string, matches int, mirror bool, persistence bool) string {
				s := fmt.Sprintf("%s, %d matches", w, matches)
				if mirror {
					s += ", mirror"
				}
				if persistence {
					s += ", persistence"
				}
				return s
			}
			var got []string
			w := weights(obj)
			switch r := obj.(type) {
			case *gwv1.HTTPRoute:
				for i, rule := range r.Spec.Rules {
					mirror := slices.ContainsFunc(rule.Filters, func(f gwv1.HTTPRouteFilter) bool { return f.Type == gwv1.HTTPRouteFilterRequestMirror })
					got = append(got, summary(w[i], len(rule.Matches), mirror, rule.SessionPersistence != nil))
				}
			case *gwv1.GRPCRoute:
				for i, rule := range r.Spec.Rules {
					mirror := slices.ContainsFunc(rule.Filters, func(f gwv1.GRPCRouteFilter) bool { return f.Type == gwv1.GRPCRouteFilterRequestMirror })
					got = append(got, summary(w[i], len(rule.Matches), mirror, rule.SessionPersistence != nil))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBuild(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
