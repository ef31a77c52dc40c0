package admission

import (
	"math/rand/v2"
	"strings"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
)

// gen mutates valid baselines with values drawn from sets that sit on the
// edges of the CRDs' rules, so that the corpus holds both accepted and
// refused objects.
type gen struct {
	r *rand.Rand
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// n returns a number in [0, k), or 0 if k <= 0.
func (g *gen) n(k int) int {
	if k <= 0 {
		return 0
	}
	return g.r.IntN(k)
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// Interesting strings, by what they should be.
var (
	long = func(n int) string { return strings.Repeat("a", n) }
	// Valid DNS labels and subdomains, and things that are almost one.
	dnsish = []string{
		"a", "gateway", "podinfo-canary", "a.b", "a-b.c-d", long(63), long(64), long(253), long(254),
		"", "A", "Upper", "a_b", "-a", "a-", "a..b", ".a", "a.", "1.2.3.4", "*", "*.a", "ü", "a b", "0", "9a",
	}
	hostnames = []string{
		"www.example.com", "*.example.com", "example", "a.b.c", long(63) + ".com", strings.Repeat(long(62)+".", 4) + "com",
		"", "*", "*.", "a.*.com", "*.*.com", "foo*", "Example.com", "1.2.3.4", "01.2.3.4", "::1", "256.1.1.1", "a_b.com",
		"-a.com", "a-.com", "a..com", "*.1.2.3", "1.2.3.4.5", "127.0.0.1",
	}
	kinds   = []string{"Service", "Gateway", "ListenerSet", "ServiceImport", "Backend", "", "service", "1Service", "a-b", long(63), long(64), "A_B"}
	groups  = []string{"", "gateway.networking.k8s.io", "multicluster.x-k8s.io", "example.org", "Example.org", "a_b", long(253), long(254), "-a"}
	headers = []string{
		"x-canary", "X-Canary", "Content-Type", "x_y", "a", "*", "!#$%&'*+-.^_`|~", "", "x canary", "x:y", "é", long(256), long(257), "x/y",
	}
	headerValues = []string{
		"always", "a b", "a\tb", "a  b", " lead", "trail ", "", "v=1;x", "é", "a\x00b", "\t", long(4096), long(4097), "\"quoted\"",
	}
	paths = []string{
		"/", "/api", "/api/v1", "/a-b_c.~d", "/%20", "/%41/b", "", "api", "//", "/a//b", "/./", "/a/./b", "/../", "/a/../b",
		"/a%2fb", "/a%2Fb", "/a#b", "/a/..", "/a/.", "/.", "/..", "/a b", "/a?b", "/%zz", "/é", "/a;b=c", "/@:", long(1024), "/" + long(1024),
		"^/re(g)ex$", "/[a-z]+",
	}
	durations = []string{"1s", "10s", "500ms", "1h", "1h30m", "0s", "99999h", "1h1m1s1ms", "1h1m1s1ms1s", "100000s", "1d", "", "1.5s", "-1s", "10", "s"}
	names     = []string{"podinfo", "podinfo-primary", "canary-proxy", "a", "", long(253), long(254), "Upper_Case", "a.b", "é", "1"}
	origins   = []string{"*", "https://example.com", "http://*.example.com", "https://example.com:8443", "https://*", "ftp://example.com", "example.com", "", "https://", "http://a:123456"}
)

func (g *gen) str(pool []string) string { return pool[g.r.IntN(len(pool))] }

// strp returns a pointer to a string of pool, or nil.
func strp[T ~string](g *gen, pool []string) *T {
	if g.chance(0.2) {
		return nil
	}
	v := T(g.str(pool))
	return &v
}

func i32p(g *gen, pool ...int32) *int32 {
	if g.chance(0.2) {
		return nil
	}
	v := pick(g, pool...)
	return &v
}

func (g *gen) port() *gwv1.PortNumber {
	return i32p(g, 1, 80, 9898, 65535, 0, -1, 65536)
}

func (g *gen) parentRef() gwv1.ParentReference {
	return gwv1.ParentReference{
		Group:       strp[gwv1.Group](g, groups),
		Kind:        strp[gwv1.Kind](g, kinds),
		Namespace:   strp[gwv1.Namespace](g, dnsish),
		Name:        gwv1.ObjectName(g.str(names)),
		SectionName: strp[gwv1.SectionName](g, dnsish),
		Port:        g.port(),
	}
}

func (g *gen) mutateParentRefs(refs []gwv1.ParentReference) []gwv1.ParentReference {
	switch g.n(8) {
	case 0:
		return append(refs, g.parentRef())
	case 1: // The same parent twice, with or without sectionName or port.
		r := refs[0]
		r.SectionName = pick(g, nil, r.SectionName, ptr.To[gwv1.SectionName]("other"))
		r.Port = pick(g, nil, ptr.To[gwv1.PortNumber](80), ptr.To[gwv1.PortNumber](443))
		return append(refs, r)
	case 2:
		for i := range refs {
			refs[i].SectionName = nil
		}
		if g.chance(0.5) {
			refs[0].Port = ptr.To[gwv1.PortNumber](80)
			refs[1].Port = ptr.To[gwv1.PortNumber](pick(g, int32(80), 443))
		}
		return refs
	case 3: // The default group and kind, spelt out or not.
		refs[0].Group = ptr.To[gwv1.Group](gwv1.GroupName)
		refs[1].Kind = ptr.To[gwv1.Kind]("Gateway")
		refs[1].SectionName = refs[0].SectionName
		return refs
	case 4:
		for range 32 + g.n(2) {
			refs = append(refs, gwv1.ParentReference{Name: "gateway", SectionName: ptr.To(gwv1.SectionName(long(1 + len(refs))))})
		}
		return refs
	case 5: // Namespace absent on one, present on the other.
		refs[1].Namespace = pick(g, nil, ptr.To[gwv1.Namespace](""), refs[0].Namespace)
		refs[1].SectionName = pick(g, nil, refs[0].SectionName)
		return refs
	default:
		refs[g.n(len(refs))] = g.parentRef()
		return refs
	}
}

func (g *gen) hostnames(h []gwv1.Hostname, limit int) []gwv1.Hostname {
	switch g.n(4) {
	case 0:
		return nil
	case 1:
		for range limit - len(h) + g.n(2) {
			h = append(h, gwv1.Hostname(g.str(hostnames[:6])))
		}
		return h
	default:
		if len(h) == 0 {
			return []gwv1.Hostname{gwv1.Hostname(g.str(hostnames))}
		}
		h[g.n(len(h))] = gwv1.Hostname(g.str(hostnames))
		return h
	}
}

func (g *gen) backendObjectRef() gwv1.BackendObjectReference {
	r := gwv1.BackendObjectReference{
		Group:     strp[gwv1.Group](g, groups),
		Kind:      strp[gwv1.Kind](g, kinds),
		Name:      gwv1.ObjectName(g.str(names)),
		Namespace: strp[gwv1.Namespace](g, dnsish),
		Port:      g.port(),
	}
	if g.chance(0.5) { // Mostly valid.
		r.Group, r.Kind, r.Namespace = nil, nil, nil
		r.Name = "podinfo"
	}
	return r
}

func (g *gen) backendRef() gwv1.BackendRef {
	return gwv1.BackendRef{BackendObjectReference: g.backendObjectRef(), Weight: i32p(g, 0, 1, 50, 1000000, -1, 1000001)}
}

func (g *gen) httpHeaders() []gwv1.HTTPHeader {
	n := pick(g, 0, 1, 2, 3, 17)
	hs := make([]gwv1.HTTPHeader, 0, n)
	for range n {
		h := gwv1.HTTPHeader{Name: "x-a", Value: "v"}
		if g.chance(0.5) {
			h = gwv1.HTTPHeader{Name: gwv1.HTTPHeaderName(g.str(headers)), Value: g.str(headerValues)}
		}
		if len(hs) > 0 && g.chance(0.5) {
			h.Name = gwv1.HTTPHeaderName(long(len(hs)))
		}
		hs = append(hs, h)
	}
	return hs
}

func (g *gen) headerFilter() *gwv1.HTTPHeaderFilter {
	f := &gwv1.HTTPHeaderFilter{Set: g.httpHeaders(), Add: g.httpHeaders()}
	for range pick(g, 0, 1, 2, 17) {
		f.Remove = append(f.Remove, pick(g, "x-a", "x-b", "", long(300)))
	}
	return f
}

func (g *gen) pathModifier() *gwv1.HTTPPathModifier {
	if g.chance(0.2) {
		return nil
	}
	return &gwv1.HTTPPathModifier{
		Type:               gwv1.HTTPPathModifierType(pick(g, "ReplaceFullPath", "ReplacePrefixMatch", "ReplacePrefixMatch", "", "Other")),
		ReplaceFullPath:    strp[string](g, paths),
		ReplacePrefixMatch: strp[string](g, paths),
	}
}

func (g *gen) mirror() *gwv1.HTTPRequestMirrorFilter {
	m := &gwv1.HTTPRequestMirrorFilter{BackendRef: g.backendObjectRef(), Percent: i32p(g, 0, 10, 100, -1, 101)}
	if g.chance(0.5) {
		m.Percent = nil
		m.Fraction = &gwv1.Fraction{Numerator: pick(g, int32(0), 1, 50, 100, 101, -1), Denominator: i32p(g, 1, 100, 1000, 0, -1)}
	}
	return m
}

func (g *gen) cors() *gwv1.HTTPCORSFilter {
	c := &gwv1.HTTPCORSFilter{MaxAge: pick(g, int32(0), 1, 5, 3600, -1)}
	for range pick(g, 0, 1, 2, 65) {
		c.AllowOrigins = append(c.AllowOrigins, gwv1.CORSOrigin(g.str(origins)))
	}
	for range pick(g, 0, 1, 2, 10) {
		c.AllowMethods = append(c.AllowMethods, gwv1.HTTPMethodWithWildcard(pick(g, "GET", "POST", "*", "get", "FOO")))
	}
	for range pick(g, 0, 1, 2, 65) {
		c.AllowHeaders = append(c.AllowHeaders, gwv1.HTTPHeaderName(g.str(headers)))
	}
	for range pick(g, 0, 1, 2) {
		c.ExposeHeaders = append(c.ExposeHeaders, gwv1.HTTPHeaderName(g.str(headers)))
	}
	if g.chance(0.3) {
		c.AllowCredentials = ptr.To(true)
	}
	return c
}

func (g *gen) externalAuth() *gwv1.HTTPExternalAuthFilter {
	a := &gwv1.HTTPExternalAuthFilter{
		ExternalAuthProtocol: gwv1.HTTPRouteExternalAuthProtocol(pick(g, "HTTP", "GRPC", "", "TCP")),
		BackendRef:           g.backendObjectRef(),
	}
	if g.chance(0.5) {
		a.HTTPAuthConfig = &gwv1.HTTPAuthConfig{Path: pick(g, "", "/auth", "a b"), AllowedRequestHeaders: pick(g, []string(nil), []string{"a", "a"})}
	}
	if g.chance(0.5) {
		a.GRPCAuthConfig = &gwv1.GRPCAuthConfig{AllowedRequestHeaders: pick(g, []string(nil), []string{"a", "b"})}
	}
	return a
}

var httpFilterTypes = []gwv1.HTTPRouteFilterType{
	gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier, gwv1.HTTPRouteFilterRequestMirror,
	gwv1.HTTPRouteFilterRequestRedirect, gwv1.HTTPRouteFilterURLRewrite, gwv1.HTTPRouteFilterExtensionRef, gwv1.HTTPRouteFilterCORS,
	gwv1.HTTPRouteFilterExternalAuth, "", "Other",
}

// httpFilter returns a filter whose type and field mostly agree.
func (g *gen) httpFilter() gwv1.HTTPRouteFilter {
	t := pick(g, httpFilterTypes...)
	f := gwv1.HTTPRouteFilter{Type: t}
	fieldOf := t
	if g.chance(0.1) {
		fieldOf = pick(g, httpFilterTypes...)
	}
	switch fieldOf {
	case gwv1.HTTPRouteFilterRequestHeaderModifier:
		f.RequestHeaderModifier = g.headerFilter()
	case gwv1.HTTPRouteFilterResponseHeaderModifier:
		f.ResponseHeaderModifier = g.headerFilter()
	case gwv1.HTTPRouteFilterRequestMirror:
		f.RequestMirror = g.mirror()
	case gwv1.HTTPRouteFilterRequestRedirect:
		f.RequestRedirect = &gwv1.HTTPRequestRedirectFilter{
			Scheme:     strp[string](g, []string{"http", "https", "ftp", ""}),
			Hostname:   strp[gwv1.PreciseHostname](g, hostnames),
			Path:       g.pathModifier(),
			Port:       g.port(),
			StatusCode: pick(g, nil, ptr.To(301), ptr.To(302), ptr.To(308), ptr.To(200), ptr.To(304)),
		}
	case gwv1.HTTPRouteFilterURLRewrite:
		f.URLRewrite = &gwv1.HTTPURLRewriteFilter{Hostname: strp[gwv1.PreciseHostname](g, hostnames), Path: g.pathModifier()}
	case gwv1.HTTPRouteFilterExtensionRef:
		f.ExtensionRef = &gwv1.LocalObjectReference{Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(g.str(kinds)), Name: gwv1.ObjectName(g.str(names))}
	case gwv1.HTTPRouteFilterCORS:
		f.CORS = g.cors()
	case gwv1.HTTPRouteFilterExternalAuth:
		f.ExternalAuth = g.externalAuth()
	}
	return f
}

func (g *gen) httpFilters(fs []gwv1.HTTPRouteFilter) []gwv1.HTTPRouteFilter {
	switch g.n(5) {
	case 0:
		return nil
	case 1: // Repeat a filter.
		return append(fs, fs...)
	case 2:
		for range 17 {
			fs = append(fs, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwv1.LocalObjectReference{Kind: "K", Name: "n"}})
		}
		return fs
	default:
		return append(fs, g.httpFilter())
	}
}

func (g *gen) httpMatch() gwv1.HTTPRouteMatch {
	m := gwv1.HTTPRouteMatch{}
	if g.chance(0.8) {
		m.Path = &gwv1.HTTPPathMatch{
			Type:  strp[gwv1.PathMatchType](g, []string{"Exact", "PathPrefix", "PathPrefix", "RegularExpression", "", "Prefix"}),
			Value: strp[string](g, paths),
		}
	}
	for range pick(g, 0, 0, 1, 2, 17) {
		h := gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(g.str(headers)), Value: g.str(headerValues)}
		h.Type = strp[gwv1.HeaderMatchType](g, []string{"Exact", "RegularExpression", "Prefix"})
		m.Headers = append(m.Headers, h)
	}
	for range pick(g, 0, 0, 1, 2) {
		m.QueryParams = append(m.QueryParams, gwv1.HTTPQueryParamMatch{
			Name: gwv1.HTTPHeaderName(g.str(headers)), Value: pick(g, "v", "", long(1025)),
			Type: strp[gwv1.QueryParamMatchType](g, []string{"Exact", "RegularExpression", "Bad"}),
		})
	}
	m.Method = strp[gwv1.HTTPMethod](g, []string{"GET", "POST", "PATCH", "get", "*", ""})
	return m
}

func (g *gen) httpMatches(ms []gwv1.HTTPRouteMatch) []gwv1.HTTPRouteMatch {
	switch g.n(6) {
	case 0:
		return nil
	case 1:
		for range pick(g, 63, 64, 65) - len(ms) {
			ms = append(ms, gwv1.HTTPRouteMatch{})
		}
		return ms
	case 2:
		return []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/v1")}}}
	default:
		return append(ms, g.httpMatch())
	}
}

func (g *gen) duration() *gwv1.Duration { return strp[gwv1.Duration](g, durations) }

func (g *gen) sessionPersistence() *gwv1.SessionPersistence {
	if g.chance(0.05) {
		return &gwv1.SessionPersistence{}
	}
	s := &gwv1.SessionPersistence{
		SessionName:     strp[string](g, []string{"s", "", "session-id", long(128), long(129), strings.Repeat("é", 128), strings.Repeat("é", 129)}),
		AbsoluteTimeout: g.duration(),
		Type:            strp[gwv1.SessionPersistenceType](g, []string{"Cookie", "Cookie", "Header", "Other", "", "cookie"}),
	}
	if g.chance(0.6) {
		s.CookieConfig = &gwv1.CookieConfig{LifetimeType: strp[gwv1.CookieLifetimeType](g, []string{"Permanent", "Permanent", "Session", "Forever", ""})}
	}
	if g.chance(0.3) { // A permanent cookie, with or without its timeout.
		s.Type = pick(g, nil, ptr.To(gwv1.CookieBasedSessionPersistence))
		s.CookieConfig = &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)}
		s.AbsoluteTimeout = pick(g, nil, ptr.To[gwv1.Duration]("1h"))
	}
	return s
}

// retryCodePool sits on the edges of 400 to 599, with repeats likely.
var retryCodePool = []gwv1.HTTPRouteRetryStatusCode{400, 404, 500, 502, 503, 503, 599, 399, 600, 0, -1, 1 << 40}

func (g *gen) retry() *gwv1.HTTPRouteRetry {
	if g.chance(0.1) {
		return &gwv1.HTTPRouteRetry{}
	}
	r := &gwv1.HTTPRouteRetry{
		Attempts: pick(g, nil, ptr.To(0), ptr.To(1), ptr.To(2), ptr.To(-1), ptr.To(1<<40)),
		Backoff:  g.duration(),
	}
	switch g.n(4) {
	case 0: // Every valid code (a set has no maxItems), maybe one twice.
		for c := gwv1.HTTPRouteRetryStatusCode(minRetryCode); c <= maxRetryCode; c++ {
			r.Codes = append(r.Codes, c)
		}
		if g.chance(0.5) {
			r.Codes = append(r.Codes, pick(g, retryCodePool...))
		}
	default:
		for range pick(g, 0, 1, 2, 3, 5) {
			r.Codes = append(r.Codes, pick(g, retryCodePool...))
		}
	}
	return r
}

func (g *gen) mutateHTTPRule(r *gwv1.HTTPRouteRule) {
	switch g.n(12) {
	case 0:
		r.Name = strp[gwv1.SectionName](g, dnsish)
	case 1, 2:
		r.Matches = g.httpMatches(r.Matches)
	case 3, 4:
		r.Filters = g.httpFilters(r.Filters)
	case 5:
		if len(r.BackendRefs) > 0 {
			b := &r.BackendRefs[g.n(len(r.BackendRefs))]
			b.Filters = g.httpFilters(b.Filters)
		}
	case 6:
		if len(r.BackendRefs) > 0 {
			r.BackendRefs[g.n(len(r.BackendRefs))].BackendRef = g.backendRef()
		}
	case 7:
		switch g.n(3) {
		case 0:
			r.BackendRefs = nil
		case 1:
			for range 17 - len(r.BackendRefs) {
				r.BackendRefs = append(r.BackendRefs, gwv1.HTTPBackendRef{BackendRef: backend("b", 1)})
			}
		default:
			r.BackendRefs = append(r.BackendRefs, gwv1.HTTPBackendRef{BackendRef: g.backendRef()})
		}
	case 8:
		r.Timeouts = &gwv1.HTTPRouteTimeouts{Request: g.duration(), BackendRequest: g.duration()}
	case 9:
		r.Retry = g.retry()
	case 10:
		r.SessionPersistence = g.sessionPersistence()
	default: // Prefix rewrites and redirects, with or without one PathPrefix match.
		t := pick(g, gwv1.HTTPRouteFilterURLRewrite, gwv1.HTTPRouteFilterRequestRedirect)
		f := gwv1.HTTPRouteFilter{Type: t}
		p := &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/v2")}
		if t == gwv1.HTTPRouteFilterURLRewrite {
			f.URLRewrite = &gwv1.HTTPURLRewriteFilter{Path: p}
		} else {
			f.RequestRedirect = &gwv1.HTTPRequestRedirectFilter{Path: p}
		}
		if g.chance(0.5) {
			r.Filters = []gwv1.HTTPRouteFilter{f}
			if t == gwv1.HTTPRouteFilterRequestRedirect && g.chance(0.7) {
				r.BackendRefs = nil
			}
		} else {
			for i := range min(pick(g, 1, 2), len(r.BackendRefs)) {
				r.BackendRefs[i].Filters = []gwv1.HTTPRouteFilter{f}
			}
		}
		r.Matches = pick(g, nil, r.Matches, r.Matches[:min(1, len(r.Matches))], append(r.Matches, r.Matches...))
	}
}

func genHTTPRoute(g *gen) any {
	r := httpRoute()
	for range 1 + g.n(2) {
		if len(r.Spec.Rules) < 3 {
			r.Spec.Rules = httpRoute().Spec.Rules
		}
		switch g.n(10) {
		case 0:
			r.Name = pick(g, "podinfo", "", "Podinfo", "a.b", long(253), long(254), "-a")
			r.Namespace = pick(g, "test", "", "a.b", long(63), long(64))
		case 1:
			r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
		case 2:
			r.Spec.Hostnames = g.hostnames(r.Spec.Hostnames, maxHostnames)
		case 3:
			switch g.n(4) {
			case 0:
				r.Spec.Rules = nil
			case 1: // Up to 17 rules, named or not, with many matches.
				for len(r.Spec.Rules) < pick(g, 16, 17) {
					rule := *httpRoute().Spec.Rules[g.n(3)].DeepCopy()
					rule.Matches = make([]gwv1.HTTPRouteMatch, pick(g, 0, 8, 9))
					r.Spec.Rules = append(r.Spec.Rules, rule)
				}
			case 2:
				r.Spec.Rules[1].Name = r.Spec.Rules[0].Name
			default:
				r.Spec.Rules = append(r.Spec.Rules, *r.Spec.Rules[2].DeepCopy())
			}
		case 4:
			r.Spec.UseDefaultGateways = gwv1.GatewayDefaultScope(pick(g, "All", "None", "Some"))
		default:
			g.mutateHTTPRule(&r.Spec.Rules[g.n(len(r.Spec.Rules))])
		}
	}
	return r
}

var grpcFilterTypes = []gwv1.GRPCRouteFilterType{
	gwv1.GRPCRouteFilterRequestHeaderModifier, gwv1.GRPCRouteFilterResponseHeaderModifier, gwv1.GRPCRouteFilterRequestMirror,
	gwv1.GRPCRouteFilterExtensionRef, "URLRewrite", "",
}

func (g *gen) grpcFilter() gwv1.GRPCRouteFilter {
	t := pick(g, grpcFilterTypes...)
	f := gwv1.GRPCRouteFilter{Type: t}
	fieldOf := t
	if g.chance(0.1) {
		fieldOf = pick(g, grpcFilterTypes...)
	}
	switch fieldOf {
	case gwv1.GRPCRouteFilterRequestHeaderModifier:
		f.RequestHeaderModifier = g.headerFilter()
	case gwv1.GRPCRouteFilterResponseHeaderModifier:
		f.ResponseHeaderModifier = g.headerFilter()
	case gwv1.GRPCRouteFilterRequestMirror:
		f.RequestMirror = g.mirror()
	case gwv1.GRPCRouteFilterExtensionRef:
		f.ExtensionRef = &gwv1.LocalObjectReference{Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(g.str(kinds)), Name: gwv1.ObjectName(g.str(names))}
	}
	return f
}

func (g *gen) grpcFilters(fs []gwv1.GRPCRouteFilter) []gwv1.GRPCRouteFilter {
	switch g.n(4) {
	case 0:
		return append(fs, fs...)
	case 1:
		return nil
	default:
		return append(fs, g.grpcFilter())
	}
}

var grpcNames = []string{"grpc.health.v1.Health", "Check", ".a.b", "_x", "a1", "", "1a", "a..b", "a-b", "a/b", ".", "A.B", long(1024), long(1025), "a.*"}

func (g *gen) grpcMatch() gwv1.GRPCRouteMatch {
	m := gwv1.GRPCRouteMatch{}
	if g.chance(0.8) {
		m.Method = &gwv1.GRPCMethodMatch{
			Type:    strp[gwv1.GRPCMethodMatchType](g, []string{"Exact", "Exact", "RegularExpression", "Prefix"}),
			Service: strp[string](g, grpcNames),
			Method:  strp[string](g, grpcNames),
		}
	}
	for range pick(g, 0, 1, 2, 17) {
		m.Headers = append(m.Headers, gwv1.GRPCHeaderMatch{
			Name: gwv1.GRPCHeaderName(g.str(headers)), Value: g.str(headerValues),
			Type: strp[gwv1.GRPCHeaderMatchType](g, []string{"Exact", "RegularExpression", "Bad"}),
		})
	}
	return m
}

func genGRPCRoute(g *gen) any {
	r := grpcRoute()
	for range 1 + g.n(2) {
		if len(r.Spec.Rules) < 2 {
			r.Spec.Rules = grpcRoute().Spec.Rules
		}
		rule := &r.Spec.Rules[g.n(len(r.Spec.Rules))]
		switch g.n(11) {
		case 0:
			r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
		case 1:
			r.Spec.Hostnames = g.hostnames(r.Spec.Hostnames, maxHostnames)
		case 2:
			switch g.n(4) {
			case 0:
				r.Spec.Rules = nil
			case 1:
				for len(r.Spec.Rules) < pick(g, 16, 17) {
					r.Spec.Rules = append(r.Spec.Rules, gwv1.GRPCRouteRule{Matches: make([]gwv1.GRPCRouteMatch, pick(g, 0, 8, 9)), BackendRefs: grpcBackends()})
				}
				for i := range r.Spec.Rules {
					for j := range r.Spec.Rules[i].Matches {
						r.Spec.Rules[i].Matches[j].Method = &gwv1.GRPCMethodMatch{Service: ptr.To("a")}
					}
				}
			case 2:
				r.Spec.Rules[1].Name = r.Spec.Rules[0].Name
			default:
				r.Spec.Rules[1].Name = strp[gwv1.SectionName](g, dnsish)
			}
		case 3, 4:
			rule.Matches = append(rule.Matches, g.grpcMatch())
		case 5:
			rule.Matches = append(rule.Matches, make([]gwv1.GRPCRouteMatch, pick(g, 63, 64))...)
		case 6, 7:
			rule.Filters = g.grpcFilters(rule.Filters)
		case 8:
			b := &rule.BackendRefs[g.n(len(rule.BackendRefs))]
			b.Filters = g.grpcFilters(b.Filters)
		case 9:
			rule.BackendRefs[g.n(len(rule.BackendRefs))].BackendRef = g.backendRef()
		default:
			rule.SessionPersistence = g.sessionPersistence()
		}
	}
	return r
}

func (g *gen) mutateL4Rules(names []*gwv1.SectionName, refs [][]gwv1.BackendRef) {
	i := g.n(len(names))
	switch g.n(5) {
	case 0:
		names[i] = strp[gwv1.SectionName](g, dnsish)
	case 1:
		refs[i] = nil
	case 2:
		for range 17 - len(refs[i]) {
			refs[i] = append(refs[i], backend("b", 1))
		}
	default:
		if len(refs[i]) > 0 {
			refs[i][g.n(len(refs[i]))] = g.backendRef()
		}
	}
}

func genTLSRoute(g *gen) any {
	r := tlsRoute()
	switch g.n(5) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1, 2:
		r.Spec.Hostnames = g.hostnames(r.Spec.Hostnames, maxTLSHostnames)
	case 3:
		r.Spec.Rules = pick(g, nil, append(r.Spec.Rules, r.Spec.Rules[0]))
	default:
		names, refs := []*gwv1.SectionName{r.Spec.Rules[0].Name}, [][]gwv1.BackendRef{r.Spec.Rules[0].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[0].Name, r.Spec.Rules[0].BackendRefs = names[0], refs[0]
	}
	return r
}

func genTCPRoute(g *gen) any {
	r := tcpRoute()
	switch g.n(3) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1:
		r.Spec.Rules = pick(g, nil, append(r.Spec.Rules, r.Spec.Rules[0]))
	default:
		names, refs := []*gwv1.SectionName{r.Spec.Rules[0].Name}, [][]gwv1.BackendRef{r.Spec.Rules[0].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[0].Name, r.Spec.Rules[0].BackendRefs = names[0], refs[0]
	}
	return r
}

func genTLSRouteV1Alpha2(g *gen) any {
	r := tlsRouteV1Alpha2()
	switch g.n(5) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1:
		r.Spec.Hostnames = g.hostnames(r.Spec.Hostnames, maxTLSHostnames)
	case 2:
		r.Spec.Rules = pick(g, nil, []gwv1alpha2.TLSRouteRule{}, r.Spec.Rules[:1])
	case 3:
		r.Spec.Rules[1].Name = pick(g, nil, r.Spec.Rules[0].Name, ptr.To[gwv1.SectionName]("Bad"))
	default:
		i := g.n(2)
		names, refs := []*gwv1.SectionName{r.Spec.Rules[i].Name}, [][]gwv1.BackendRef{r.Spec.Rules[i].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs = names[0], refs[0]
	}
	return r
}

func genTCPRouteV1Alpha2(g *gen) any {
	r := tcpRouteV1Alpha2()
	switch g.n(4) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1:
		for range pick(g, 0, 1, 16, 17) {
			r.Spec.Rules = append(r.Spec.Rules, gwv1alpha2.TCPRouteRule{Name: strp[gwv1.SectionName](g, []string{"a", "b"}), BackendRefs: []gwv1.BackendRef{backend("b", 1)}})
		}
	case 2:
		r.Spec.Rules = pick(g, nil, []gwv1alpha2.TCPRouteRule{})
	default:
		names, refs := []*gwv1.SectionName{r.Spec.Rules[0].Name}, [][]gwv1.BackendRef{r.Spec.Rules[0].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[0].Name, r.Spec.Rules[0].BackendRefs = names[0], refs[0]
	}
	return r
}

func genUDPRoute(g *gen) any {
	r := udpRoute()
	switch g.n(4) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1:
		r.Spec.Rules = pick(g, nil, []gwv1.UDPRouteRule{}, append(r.Spec.Rules, r.Spec.Rules[0]))
	case 2:
		r.Spec.UseDefaultGateways = gwv1.GatewayDefaultScope(pick(g, "All", "None", "Some"))
	default:
		names, refs := []*gwv1.SectionName{r.Spec.Rules[0].Name}, [][]gwv1.BackendRef{r.Spec.Rules[0].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[0].Name, r.Spec.Rules[0].BackendRefs = names[0], refs[0]
	}
	return r
}

func genUDPRouteV1Alpha2(g *gen) any {
	r := udpRouteV1Alpha2()
	switch g.n(5) {
	case 0:
		r.Spec.ParentRefs = g.mutateParentRefs(r.Spec.ParentRefs)
	case 1:
		for range pick(g, 0, 1, 14, 15) {
			r.Spec.Rules = append(r.Spec.Rules, gwv1alpha2.UDPRouteRule{Name: strp[gwv1.SectionName](g, []string{"a", "b", "c"}), BackendRefs: []gwv1.BackendRef{backend("b", 1)}})
		}
	case 2: // Unlike TCPRoute v1alpha2's, rules is sent as null when nil.
		r.Spec.Rules = pick(g, nil, []gwv1alpha2.UDPRouteRule{}, r.Spec.Rules[:1])
	case 3:
		r.Spec.Rules[1].Name = pick(g, nil, r.Spec.Rules[0].Name, ptr.To[gwv1.SectionName]("Bad"), ptr.To[gwv1.SectionName](""))
	default:
		i := g.n(2)
		names, refs := []*gwv1.SectionName{r.Spec.Rules[i].Name}, [][]gwv1.BackendRef{r.Spec.Rules[i].BackendRefs}
		g.mutateL4Rules(names, refs)
		r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs = names[0], refs[0]
	}
	return r
}

// BackendTLSPolicy values on the edges of the CRD's patterns and lengths.
var (
	wellKnownCAs = []string{
		"System", "example.com/bundle", "a/b", "a/" + long(63), "a/" + long(64), "a.b/C_d.E-f", "a/b_", "a/_b", "a/-b", "a/b-",
		"system", "", "System ", "SYSTEM", "example.com/", "/b", "Example.com/b", "a..b/c", "a/b/c",
		strings.Repeat(long(62)+".", 3) + long(62) + "/b", strings.Repeat(long(62)+".", 3) + long(62) + "/bc",
	}
	uris = []string{
		"spiffe://cluster.local/ns/test/sa/podinfo", "https://example.com", "http://a", "a://", "x:///path", "https://a?b#c",
		"https://" + long(245), "https://" + long(246), "urn:a", "a:b", "x", "", "://a", "a b://c", "HTTPS://A", "a/b://c", "é://a",
	}
	targetKinds = []string{"Service", "Service", "ServiceImport", "", "service", "1Service", long(63), long(64)}
)

func (g *gen) targetRef() gwv1.LocalPolicyTargetReferenceWithSectionName {
	r := gwv1.LocalPolicyTargetReferenceWithSectionName{
		LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{
			Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(g.str(targetKinds)), Name: gwv1.ObjectName(g.str(names)),
		},
		SectionName: strp[gwv1.SectionName](g, dnsish),
	}
	if g.chance(0.5) { // Mostly valid.
		r.Group, r.Kind, r.Name = "", "Service", gwv1.ObjectName(pick(g, "podinfo-proxy", "podinfo-primary-proxy", "a"))
		r.SectionName = pick(g, nil, ptr.To[gwv1.SectionName]("https"), ptr.To[gwv1.SectionName](""))
	}
	return r
}

func (g *gen) mutateTargetRefs(refs []gwv1.LocalPolicyTargetReferenceWithSectionName) []gwv1.LocalPolicyTargetReferenceWithSectionName {
	switch g.n(8) {
	case 0:
		return pick(g, nil, []gwv1.LocalPolicyTargetReferenceWithSectionName{})
	case 1:
		return append(refs, g.targetRef())
	case 2: // The same target twice, with or without a sectionName.
		r := refs[0]
		r.SectionName = pick(g, nil, ptr.To[gwv1.SectionName](""), r.SectionName, ptr.To[gwv1.SectionName]("other"))
		return append(refs, r)
	case 3: // Up to 16, or one more.
		for i := len(refs); i < pick(g, 16, 17); i++ {
			refs = append(refs, serviceTarget(long(1+i), nil))
		}
		return refs
	case 4: // Every reference to one target.
		for i := range refs {
			refs[i].Name = "podinfo-proxy"
			refs[i].SectionName = pick(g, nil, ptr.To[gwv1.SectionName](""), ptr.To[gwv1.SectionName]("a"), ptr.To[gwv1.SectionName]("b"))
		}
		return refs
	case 5: // Two targets that differ only in group or kind.
		r := refs[0]
		if g.chance(0.5) {
			r.Group = gwv1.Group(pick(g, "", "core", "multicluster.x-k8s.io"))
		} else {
			r.Kind = gwv1.Kind(pick(g, "Service", "ServiceImport"))
		}
		return append(refs, r)
	default:
		refs[g.n(len(refs))] = g.targetRef()
		return refs
	}
}

func (g *gen) subjectAltName() gwv1.SubjectAltName {
	s := gwv1.SubjectAltName{Type: gwv1.SubjectAltNameType(pick(g, "Hostname", "URI", "Hostname", "URI", "", "DNS", "hostname"))}
	switch {
	case g.chance(0.15):
		s.Hostname, s.URI = gwv1.Hostname(pick(g, "", g.str(hostnames))), gwv1.AbsoluteURI(pick(g, "", g.str(uris)))
	case s.Type == gwv1.HostnameSubjectAltNameType:
		s.Hostname = gwv1.Hostname(g.str(hostnames))
	case s.Type == gwv1.URISubjectAltNameType:
		s.URI = gwv1.AbsoluteURI(g.str(uris))
	}
	return s
}

func (g *gen) tlsOptions() map[gwv1.AnnotationKey]gwv1.AnnotationValue {
	switch g.n(5) {
	case 0:
		return pick(g, nil, map[gwv1.AnnotationKey]gwv1.AnnotationValue{})
	case 1:
		m := map[gwv1.AnnotationKey]gwv1.AnnotationValue{}
		for i := range pick(g, 15, 16, 17) {
			m[gwv1.AnnotationKey("example.com/"+long(1+i))] = "v"
		}
		return m
	case 2: // Keys that the AnnotationKey type's markers forbid and the CRD does not.
		return map[gwv1.AnnotationKey]gwv1.AnnotationValue{
			gwv1.AnnotationKey(pick(g, "", "Bad Key!", "a.b/c", long(300), "x[0]", "é")): "v",
		}
	default:
		return map[gwv1.AnnotationKey]gwv1.AnnotationValue{
			"example.com/min-version": gwv1.AnnotationValue(pick(g, "", "1.3", long(4096), long(4097), strings.Repeat("é", 4096), strings.Repeat("é", 4097), "a\nb")),
			"example.com/ciphers":     gwv1.AnnotationValue(pick(g, "", "TLS_AES_128_GCM_SHA256", long(4097))),
		}
	}
}

func genBackendTLSPolicy(g *gen) any {
	p := pick(g, backendTLSPolicy, backendTLSPolicySystem)()
	for range 1 + g.n(2) {
		v := &p.Spec.Validation
		switch g.n(13) {
		case 0:
			p.Name = pick(g, "podinfo", "", "Podinfo", "a.b", long(253), long(254), "-a")
			p.Namespace = pick(g, "test", "", "a.b", long(63), long(64))
		case 1, 2:
			if len(p.Spec.TargetRefs) == 0 {
				p.Spec.TargetRefs = backendTLSPolicy().Spec.TargetRefs
			}
			p.Spec.TargetRefs = g.mutateTargetRefs(p.Spec.TargetRefs)
		case 3: // Either, both or neither source of CA certificates.
			switch g.n(4) {
			case 0:
				v.CACertificateRefs = pick(g, nil, []gwv1.LocalObjectReference{})
			case 1:
				for len(v.CACertificateRefs) < pick(g, 8, 9) {
					v.CACertificateRefs = append(v.CACertificateRefs, gwv1.LocalObjectReference{Kind: "ConfigMap", Name: gwv1.ObjectName(long(1 + len(v.CACertificateRefs)))})
				}
			default:
				v.CACertificateRefs = append(v.CACertificateRefs, gwv1.LocalObjectReference{
					Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(pick(g, "ConfigMap", "Secret", g.str(kinds))), Name: gwv1.ObjectName(g.str(names)),
				})
			}
		case 4:
			v.WellKnownCACertificates = strp[gwv1.WellKnownCACertificatesType](g, wellKnownCAs)
		case 5:
			v.WellKnownCACertificates = ptr.To(gwv1.WellKnownCACertificatesSystem)
			v.CACertificateRefs = pick(g, nil, []gwv1.LocalObjectReference{}, backendTLSPolicy().Spec.Validation.CACertificateRefs)
		case 6:
			v.Hostname = gwv1.PreciseHostname(pick(g, g.str(hostnames), g.str(dnsish)))
		case 7, 8:
			switch g.n(4) {
			case 0:
				v.SubjectAltNames = pick(g, nil, []gwv1.SubjectAltName{})
			case 1:
				for len(v.SubjectAltNames) < pick(g, 5, 6) {
					v.SubjectAltNames = append(v.SubjectAltNames, gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "https://a"})
				}
			default:
				v.SubjectAltNames = append(v.SubjectAltNames, g.subjectAltName())
			}
		case 9, 10:
			p.Spec.Options = g.tlsOptions()
		case 11: // A zero spec is not sent; a nearly zero one is.
			p.Spec = gwv1.BackendTLSPolicySpec{}
			switch g.n(4) {
			case 0:
				p.Spec.TargetRefs = []gwv1.LocalPolicyTargetReferenceWithSectionName{}
			case 1:
				p.Spec.Options = map[gwv1.AnnotationKey]gwv1.AnnotationValue{}
			case 2:
				p.Spec.Validation.SubjectAltNames = []gwv1.SubjectAltName{}
			}
		default:
			p.Spec.Validation = gwv1.BackendTLSPolicyValidation{Hostname: gwv1.PreciseHostname(g.str(hostnames))}
		}
	}
	if g.chance(0.25) {
		return backendTLSPolicyV1Alpha3(p)
	}
	return p
}

func genReferenceGrant(g *gen) any {
	rg := referenceGrant()
	switch g.n(6) {
	case 0:
		rg.Spec.From = pick(g, nil, []gwv1.ReferenceGrantFrom{}, append(rg.Spec.From, make([]gwv1.ReferenceGrantFrom, 16)...))
	case 1:
		rg.Spec.To = pick(g, nil, []gwv1.ReferenceGrantTo{}, append(rg.Spec.To, make([]gwv1.ReferenceGrantTo, 16)...))
	case 2:
		rg.Spec.From[0] = gwv1.ReferenceGrantFrom{Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(g.str(kinds)), Namespace: gwv1.Namespace(g.str(dnsish))}
	case 3:
		rg.Spec.To[0] = gwv1.ReferenceGrantTo{Group: gwv1.Group(g.str(groups)), Kind: gwv1.Kind(g.str(kinds)), Name: strp[gwv1.ObjectName](g, names)}
	case 4:
		rg.Namespace = g.str(dnsish)
	default:
		rg.Name = g.str(dnsish)
	}
	if g.chance(0.3) {
		return referenceGrantV1Beta1FromV1(rg)
	}
	return rg
}

func referenceGrantV1Beta1FromV1(rg *gwv1.ReferenceGrant) any {
	b := referenceGrantV1Beta1()
	b.ObjectMeta, b.Spec = rg.ObjectMeta, rg.Spec
	return b
}

// generators make one object of each kind from the baselines.
func generators() map[string]func(*gen) any {
	return map[string]func(*gen) any{
		"HTTPRoute":        genHTTPRoute,
		"GRPCRoute":        genGRPCRoute,
		"TLSRoute":         genTLSRoute,
		"TCPRoute":         genTCPRoute,
		"TLSRouteV1Alpha2": genTLSRouteV1Alpha2,
		"TCPRouteV1Alpha2": genTCPRouteV1Alpha2,
		"UDPRoute":         genUDPRoute,
		"UDPRouteV1Alpha2": genUDPRouteV1Alpha2,
		"ReferenceGrant":   genReferenceGrant,
		"BackendTLSPolicy": genBackendTLSPolicy,
	}
}
