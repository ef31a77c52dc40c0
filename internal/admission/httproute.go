package admission

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Messages of the HTTPRoute CRD's x-kubernetes-validations rules, verbatim.
const (
	msgRedirectWithBackends      = "RequestRedirect filter must not be used together with backendRefs"
	msgRedirectPrefixMatch       = "When using RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified"
	msgRewritePrefixMatch        = "When using URLRewrite filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified"
	msgBackendRedirectPrefix     = "Within backendRefs, when using RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified"
	msgBackendRewritePrefix      = "Within backendRefs, When using URLRewrite filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified"
	msgRedirectOrRewrite         = "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both"
	msgFmtFilterRepeated         = "%s filter cannot be repeated"
	msgFmtFilterMustBeNil        = "filter.%s must be nil if the filter.type is not %s"
	msgFmtFilterMustBeSet        = "filter.%s must be specified for %s filter.type"
	msgBackendRequestTimeout     = "backendRequest timeout cannot be longer than request timeout"
	msgPathAbsolute              = "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"
	msgPathDoubleSlash           = "must not contain '//' when type one of ['Exact', 'PathPrefix']"
	msgPathDotSegment            = "must not contain '/./' when type one of ['Exact', 'PathPrefix']"
	msgPathDotDotSegment         = "must not contain '/../' when type one of ['Exact', 'PathPrefix']"
	msgPathEncodedSlashLower     = "must not contain '%2f' when type one of ['Exact', 'PathPrefix']"
	msgPathEncodedSlashUpper     = "must not contain '%2F' when type one of ['Exact', 'PathPrefix']"
	msgPathFragment              = "must not contain '#' when type one of ['Exact', 'PathPrefix']"
	msgPathEndsDotDot            = "must not end with '/..' when type one of ['Exact', 'PathPrefix']"
	msgPathEndsDot               = "must not end with '/.' when type one of ['Exact', 'PathPrefix']"
	msgPathType                  = "type must be one of ['Exact', 'PathPrefix', 'RegularExpression']"
	msgPathChars                 = "must only contain valid characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) for types ['Exact', 'PathPrefix']"
	msgFullPathSpecified         = "replaceFullPath must be specified when type is set to 'ReplaceFullPath'"
	msgFullPathType              = "type must be 'ReplaceFullPath' when replaceFullPath is set"
	msgPrefixMatchSpecified      = "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'"
	msgPrefixMatchType           = "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set"
	msgCORSOriginsWildcard       = "AllowOrigins cannot contain '*' alongside other origins"
	msgCORSMethodsWildcard       = "AllowMethods cannot contain '*' alongside other methods"
	msgCORSHeadersWildcard       = "AllowHeaders cannot contain '*' alongside other methods"
	msgAuthGRPCSpecified         = "grpc must be specified when protocol is set to 'GRPC'"
	msgAuthGRPCProtocol          = "protocol must be 'GRPC' when grpc is set"
	msgAuthHTTPSpecified         = "http must be specified when protocol is set to 'HTTP'"
	msgAuthHTTPProtocol          = "protocol must be 'HTTP' when http is set"
	wildcard                     = "*"
	defaultPathValue             = "/"
	defaultPathType              = gwv1.PathMatchPathPrefix
	filterCORS                   = "cors"
	filterRequestHeaderModifier  = "requestHeaderModifier"
	filterResponseHeaderModifier = "responseHeaderModifier"
	filterRequestMirror          = "requestMirror"
	filterRequestRedirect        = "requestRedirect"
	filterURLRewrite             = "urlRewrite"
	filterExtensionRef           = "extensionRef"
	filterExternalAuth           = "externalAuth"
)

var (
	// The standard channel's enum: ExternalAuth is experimental only, so a
	// filter of that type cannot pass both channels.
	enumHTTPFilterType = []string{
		string(gwv1.HTTPRouteFilterRequestHeaderModifier), string(gwv1.HTTPRouteFilterResponseHeaderModifier),
		string(gwv1.HTTPRouteFilterRequestMirror), string(gwv1.HTTPRouteFilterRequestRedirect),
		string(gwv1.HTTPRouteFilterURLRewrite), string(gwv1.HTTPRouteFilterExtensionRef), string(gwv1.HTTPRouteFilterCORS),
	}
	enumPathMatchType   = []string{string(gwv1.PathMatchExact), string(gwv1.PathMatchPathPrefix), string(gwv1.PathMatchRegularExpression)}
	enumHeaderMatchType = []string{string(gwv1.HeaderMatchExact), string(gwv1.HeaderMatchRegularExpression)}
	enumQueryMatchType  = []string{string(gwv1.QueryParamMatchExact), string(gwv1.QueryParamMatchRegularExpression)}
	enumHTTPMethod      = []string{
		string(gwv1.HTTPMethodGet), string(gwv1.HTTPMethodHead), string(gwv1.HTTPMethodPost), string(gwv1.HTTPMethodPut),
		string(gwv1.HTTPMethodDelete), string(gwv1.HTTPMethodConnect), string(gwv1.HTTPMethodOptions),
		string(gwv1.HTTPMethodTrace), string(gwv1.HTTPMethodPatch),
	}
	enumCORSMethod         = append(append([]string{}, enumHTTPMethod...), wildcard)
	enumPathModifier       = []string{string(gwv1.FullPathHTTPPathModifier), string(gwv1.PrefixMatchHTTPPathModifier)}
	enumScheme             = []string{"http", "https"}
	enumRedirectStatus     = []int{301, 302, 303, 307, 308}
	enumRedirectStatusText = []string{"301", "302", "303", "307", "308"}
	enumAuthProtocol       = []string{string(gwv1.HTTPRouteExternalAuthHTTPProtocol), string(gwv1.HTTPRouteExternalAuthGRPCProtocol)}
	// Filter types that cannot be repeated in a list, in the CRD's order.
	unrepeatableHTTPFilters = []gwv1.HTTPRouteFilterType{
		gwv1.HTTPRouteFilterCORS, gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier,
		gwv1.HTTPRouteFilterRequestRedirect, gwv1.HTTPRouteFilterURLRewrite,
	}
)

// HTTPRoute validates an HTTPRoute v1 as both Gateway API channels would.
func HTTPRoute(r *gwv1.HTTPRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, true)...)
	errs = append(errs, Hostnames(spec.Child("hostnames"), r.Spec.Hostnames)...)
	return append(errs, HTTPRouteRules(spec.Child("rules"), r.Spec.Rules)...)
}

// HTTPRouteRules validates the rules of an HTTPRoute: each rule, the total
// number of matches and the uniqueness of rule names.
func HTTPRouteRules(path *field.Path, rules []gwv1.HTTPRouteRule) field.ErrorList {
	if len(rules) > maxRules {
		return field.ErrorList{field.TooMany(path, len(rules), maxRules)}
	}
	var errs field.ErrorList
	total := 0
	names := make([]*gwv1.SectionName, 0, maxRules)
	for i := range rules {
		errs = append(errs, HTTPRouteRule(path.Index(i), &rules[i])...)
		// An empty matches is omitted, then defaulted to one match.
		total += max(len(rules[i].Matches), 1)
		names = append(names, rules[i].Name)
	}
	if total > maxTotalMatches {
		errs = append(errs, rule(path, typeArray, msgTotalMatches))
	}
	return append(errs, ruleNames(path, names)...)
}

// HTTPRouteRule validates one HTTPRoute rule, including the rules that tie
// its filters to its matches and backendRefs.
func HTTPRouteRule(path *field.Path, r *gwv1.HTTPRouteRule) field.ErrorList {
	var errs field.ErrorList
	if r.Name != nil {
		errs = append(errs, strSectionName.check(path, "name", string(*r.Name))...)
	}
	if len(r.Matches) > 0 {
		errs = append(errs, HTTPRouteMatches(path.Child("matches"), r.Matches)...)
	}
	if len(r.Filters) > 0 {
		errs = append(errs, HTTPRouteFilters(path.Child("filters"), r.Filters)...)
	}
	if len(r.BackendRefs) > 0 {
		errs = append(errs, httpBackendRefs(path.Child("backendRefs"), r.BackendRefs)...)
	}
	if r.Timeouts != nil {
		errs = append(errs, HTTPRouteTimeouts(path.Child("timeouts"), r.Timeouts)...)
	}
	if r.Retry != nil {
		errs = append(errs, httpRouteRetry(path.Child("retry"), r.Retry)...)
	}
	if r.SessionPersistence != nil {
		errs = append(errs, SessionPersistence(path.Child("sessionPersistence"), r.SessionPersistence)...)
	}
	return append(errs, httpRouteRuleRules(path, r)...)
}

// httpRouteRuleRules mirrors the CEL rules on an HTTPRoute rule.
func httpRouteRuleRules(path *field.Path, r *gwv1.HTTPRouteRule) field.ErrorList {
	var errs field.ErrorList
	if len(r.BackendRefs) > 0 {
		for i := range r.Filters {
			if r.Filters[i].RequestRedirect != nil {
				errs = append(errs, rule(path, typeObject, msgRedirectWithBackends))
				break
			}
		}
	}
	onePrefix := onePathPrefixMatch(r.Matches)
	if !onePrefix && countPrefixFilters(r.Filters, redirectPrefix) == 1 {
		errs = append(errs, rule(path, typeObject, msgRedirectPrefixMatch))
	}
	if !onePrefix && countPrefixFilters(r.Filters, rewritePrefix) == 1 {
		errs = append(errs, rule(path, typeObject, msgRewritePrefixMatch))
	}
	if !onePrefix {
		var redirects, rewrites int
		for i := range r.BackendRefs {
			if countPrefixFilters(r.BackendRefs[i].Filters, redirectPrefix) == 1 {
				redirects++
			}
			if countPrefixFilters(r.BackendRefs[i].Filters, rewritePrefix) == 1 {
				rewrites++
			}
		}
		// The CRD counts with exists_one: the rule holds when two backends
		// have such a filter.
		if redirects == 1 {
			errs = append(errs, rule(path, typeObject, msgBackendRedirectPrefix))
		}
		if rewrites == 1 {
			errs = append(errs, rule(path, typeObject, msgBackendRewritePrefix))
		}
	}
	return errs
}

// onePathPrefixMatch tells whether matches, after defaulting, is exactly one
// match on a path prefix.
func onePathPrefixMatch(matches []gwv1.HTTPRouteMatch) bool {
	switch len(matches) {
	case 0:
		return true // Defaulted to one PathPrefix "/" match.
	case 1:
		p := matches[0].Path
		return p == nil || deref(p.Type, defaultPathType) == gwv1.PathMatchPathPrefix
	default:
		return false
	}
}

func redirectPrefix(f *gwv1.HTTPRouteFilter) bool {
	return f.RequestRedirect != nil && replacesPrefix(f.RequestRedirect.Path)
}

func rewritePrefix(f *gwv1.HTTPRouteFilter) bool {
	return f.URLRewrite != nil && replacesPrefix(f.URLRewrite.Path)
}

func replacesPrefix(p *gwv1.HTTPPathModifier) bool {
	return p != nil && p.Type == gwv1.PrefixMatchHTTPPathModifier && p.ReplacePrefixMatch != nil
}

func countPrefixFilters(filters []gwv1.HTTPRouteFilter, is func(*gwv1.HTTPRouteFilter) bool) int {
	n := 0
	for i := range filters {
		if is(&filters[i]) {
			n++
		}
	}
	return n
}

// HTTPRouteMatches validates the matches of an HTTPRoute rule.
func HTTPRouteMatches(path *field.Path, matches []gwv1.HTTPRouteMatch) field.ErrorList {
	if len(matches) > maxMatches {
		return field.ErrorList{field.TooMany(path, len(matches), maxMatches)}
	}
	var errs field.ErrorList
	for i := range matches {
		errs = append(errs, httpRouteMatch(path.Index(i), &matches[i])...)
	}
	return errs
}

func httpRouteMatch(path *field.Path, m *gwv1.HTTPRouteMatch) field.ErrorList {
	var errs field.ErrorList
	if m.Path != nil {
		errs = append(errs, httpPathMatch(path.Child("path"), m.Path)...)
	}
	if len(m.Headers) > maxHeaders {
		errs = append(errs, field.TooMany(path.Child("headers"), len(m.Headers), maxHeaders))
	} else if len(m.Headers) > 0 {
		p := path.Child("headers")
		for i := range m.Headers {
			h := &m.Headers[i]
			hp := p.Index(i)
			if h.Type != nil {
				errs = append(errs, enum(hp, "type", *h.Type, enumHeaderMatchType)...)
			}
			errs = append(errs, strHeaderName.check(hp, "name", string(h.Name))...)
			errs = append(errs, strHeaderValue.check(hp, "value", h.Value)...)
			errs = append(errs, duplicateKey(p, i, m.Headers, func(h gwv1.HTTPHeaderMatch) string { return string(h.Name) })...)
		}
	}
	if len(m.QueryParams) > maxHeaders {
		errs = append(errs, field.TooMany(path.Child("queryParams"), len(m.QueryParams), maxHeaders))
	} else if len(m.QueryParams) > 0 {
		p := path.Child("queryParams")
		for i := range m.QueryParams {
			q := &m.QueryParams[i]
			qp := p.Index(i)
			if q.Type != nil {
				errs = append(errs, enum(qp, "type", *q.Type, enumQueryMatchType)...)
			}
			errs = append(errs, strHeaderName.check(qp, "name", string(q.Name))...)
			errs = append(errs, strQueryValue.check(qp, "value", q.Value)...)
			errs = append(errs, duplicateKey(p, i, m.QueryParams, func(q gwv1.HTTPQueryParamMatch) string { return string(q.Name) })...)
		}
	}
	if m.Method != nil {
		errs = append(errs, enum(path, "method", *m.Method, enumHTTPMethod)...)
	}
	return errs
}

// duplicateKey reports item i of an x-kubernetes-list-type map if exactly
// one earlier item has the same key: the API server's list-map check reports
// the second item of each key, not the third or later.
func duplicateKey[T any](path *field.Path, i int, list []T, key func(T) string) field.ErrorList {
	k := jsonString(key(list[i]))
	n := 0
	for j := range i {
		if jsonString(key(list[j])) == k {
			n++
		}
	}
	if n == 1 {
		return field.ErrorList{field.Duplicate(path.Index(i), map[string]any{"name": k})}
	}
	return nil
}

func httpPathMatch(path *field.Path, m *gwv1.HTTPPathMatch) field.ErrorList {
	var errs field.ErrorList
	if m.Type != nil {
		errs = append(errs, enum(path, "type", *m.Type, enumPathMatchType)...)
	}
	if m.Value != nil {
		errs = append(errs, strPathValue.check(path, "value", *m.Value)...)
	}
	t, v := deref(m.Type, defaultPathType), jsonString(deref(m.Value, defaultPathValue))
	if t != gwv1.PathMatchExact && t != gwv1.PathMatchPathPrefix {
		if t != gwv1.PathMatchRegularExpression {
			errs = append(errs, rule(path, typeObject, msgPathType))
		}
		return errs
	}
	for _, c := range pathChecks {
		if c.bad(v) {
			errs = append(errs, rule(path, typeObject, c.msg))
		}
	}
	return errs
}

// pathChecks are the CEL rules on an Exact or PathPrefix path match.
var pathChecks = []struct {
	bad func(string) bool
	msg string
}{
	{func(v string) bool { return !strings.HasPrefix(v, "/") }, msgPathAbsolute},
	{func(v string) bool { return strings.Contains(v, "//") }, msgPathDoubleSlash},
	{func(v string) bool { return strings.Contains(v, "/./") }, msgPathDotSegment},
	{func(v string) bool { return strings.Contains(v, "/../") }, msgPathDotDotSegment},
	{func(v string) bool { return strings.Contains(v, "%2f") }, msgPathEncodedSlashLower},
	{func(v string) bool { return strings.Contains(v, "%2F") }, msgPathEncodedSlashUpper},
	{func(v string) bool { return strings.Contains(v, "#") }, msgPathFragment},
	{func(v string) bool { return strings.HasSuffix(v, "/..") }, msgPathEndsDotDot},
	{func(v string) bool { return strings.HasSuffix(v, "/.") }, msgPathEndsDot},
	{func(v string) bool { return !rePath.MatchString(v) }, msgPathChars},
}

// HTTPRouteFilters validates a list of HTTPRoute filters, of a rule or of a
// backendRef: each filter, and the rules that a filter type is not repeated
// and that RequestRedirect and URLRewrite exclude each other.
func HTTPRouteFilters(path *field.Path, filters []gwv1.HTTPRouteFilter) field.ErrorList {
	if len(filters) > maxFilters {
		return field.ErrorList{field.TooMany(path, len(filters), maxFilters)}
	}
	var errs field.ErrorList
	for i := range filters {
		errs = append(errs, httpRouteFilter(path.Index(i), &filters[i])...)
	}
	if len(filters) < 2 {
		return errs
	}
	var counts [5]int // One per unrepeatableHTTPFilters.
	for i := range filters {
		for j, t := range unrepeatableHTTPFilters {
			if filters[i].Type == t {
				counts[j]++
			}
		}
	}
	// Indexes into unrepeatableHTTPFilters.
	const redirect, rewrite = 3, 4
	if counts[redirect] > 0 && counts[rewrite] > 0 {
		errs = append(errs, rule(path, typeArray, msgRedirectOrRewrite))
	}
	for j, t := range unrepeatableHTTPFilters {
		if counts[j] > 1 {
			errs = append(errs, rule(path, typeArray, filterRepeated(string(t))))
		}
	}
	return errs
}

func filterRepeated(t string) string { return strings.Replace(msgFmtFilterRepeated, "%s", t, 1) }

func filterMustBeNil(f, t string) string {
	return strings.Replace(strings.Replace(msgFmtFilterMustBeNil, "%s", f, 1), "%s", t, 1)
}

func filterMustBeSet(f, t string) string {
	return strings.Replace(strings.Replace(msgFmtFilterMustBeSet, "%s", f, 1), "%s", t, 1)
}

// filterField mirrors the pair of CEL rules that tie a filter's type to the
// one field of that type.
func filterField(path *field.Path, set bool, filterType, name, wantType string) field.ErrorList {
	if set && filterType != wantType {
		return field.ErrorList{rule(path, typeObject, filterMustBeNil(name, wantType))}
	}
	if !set && filterType == wantType {
		return field.ErrorList{rule(path, typeObject, filterMustBeSet(name, wantType))}
	}
	return nil
}

func httpRouteFilter(path *field.Path, f *gwv1.HTTPRouteFilter) field.ErrorList {
	errs := enum(path, "type", f.Type, enumHTTPFilterType)
	t := string(f.Type)
	errs = append(errs, filterField(path, f.CORS != nil, t, filterCORS, string(gwv1.HTTPRouteFilterCORS))...)
	errs = append(errs, filterField(path, f.RequestHeaderModifier != nil, t, filterRequestHeaderModifier, string(gwv1.HTTPRouteFilterRequestHeaderModifier))...)
	errs = append(errs, filterField(path, f.ResponseHeaderModifier != nil, t, filterResponseHeaderModifier, string(gwv1.HTTPRouteFilterResponseHeaderModifier))...)
	errs = append(errs, filterField(path, f.RequestMirror != nil, t, filterRequestMirror, string(gwv1.HTTPRouteFilterRequestMirror))...)
	errs = append(errs, filterField(path, f.RequestRedirect != nil, t, filterRequestRedirect, string(gwv1.HTTPRouteFilterRequestRedirect))...)
	errs = append(errs, filterField(path, f.URLRewrite != nil, t, filterURLRewrite, string(gwv1.HTTPRouteFilterURLRewrite))...)
	errs = append(errs, filterField(path, f.ExtensionRef != nil, t, filterExtensionRef, string(gwv1.HTTPRouteFilterExtensionRef))...)
	errs = append(errs, filterField(path, f.ExternalAuth != nil, t, filterExternalAuth, string(gwv1.HTTPRouteFilterExternalAuth))...)

	// Child paths only for the fields that are set: valid objects are the
	// common case, and a path costs an allocation.
	if f.RequestHeaderModifier != nil {
		errs = append(errs, httpHeaderFilter(path.Child(filterRequestHeaderModifier), f.RequestHeaderModifier)...)
	}
	if f.ResponseHeaderModifier != nil {
		errs = append(errs, httpHeaderFilter(path.Child(filterResponseHeaderModifier), f.ResponseHeaderModifier)...)
	}
	if f.RequestMirror != nil {
		errs = append(errs, requestMirror(path.Child(filterRequestMirror), f.RequestMirror)...)
	}
	if r := f.RequestRedirect; r != nil {
		errs = append(errs, requestRedirect(path.Child(filterRequestRedirect), r)...)
	}
	if r := f.URLRewrite; r != nil {
		p := path.Child(filterURLRewrite)
		if r.Hostname != nil {
			errs = append(errs, strPreciseHostname.check(p, "hostname", string(*r.Hostname))...)
		}
		errs = append(errs, pathModifier(p, r.Path)...)
	}
	if f.CORS != nil {
		errs = append(errs, cors(path.Child(filterCORS), f.CORS)...)
	}
	if f.ExtensionRef != nil {
		errs = append(errs, localObjectReference(path.Child(filterExtensionRef), f.ExtensionRef)...)
	}
	if f.ExternalAuth != nil {
		errs = append(errs, externalAuth(path.Child(filterExternalAuth), f.ExternalAuth)...)
	}
	return errs
}

func httpHeaderFilter(path *field.Path, f *gwv1.HTTPHeaderFilter) field.ErrorList {
	if f == nil {
		return nil
	}
	errs := httpHeaders(path, "set", f.Set)
	errs = append(errs, httpHeaders(path, "add", f.Add)...)
	if len(f.Remove) > maxHeaders {
		errs = append(errs, field.TooMany(path.Child("remove"), len(f.Remove), maxHeaders))
	} else {
		errs = append(errs, uniqueStrings(path.Child("remove"), f.Remove)...)
	}
	return errs
}

func httpHeaders(parent *field.Path, name string, headers []gwv1.HTTPHeader) field.ErrorList {
	if len(headers) == 0 {
		return nil
	}
	path := parent.Child(name)
	if len(headers) > maxHeaders {
		return field.ErrorList{field.TooMany(path, len(headers), maxHeaders)}
	}
	var errs field.ErrorList
	for i := range headers {
		h := &headers[i]
		hp := path.Index(i)
		errs = append(errs, strHeaderName.check(hp, "name", string(h.Name))...)
		errs = append(errs, strHeaderValue.check(hp, "value", h.Value)...)
		errs = append(errs, duplicateKey(path, i, headers, func(h gwv1.HTTPHeader) string { return string(h.Name) })...)
	}
	return errs
}

func requestMirror(path *field.Path, m *gwv1.HTTPRequestMirrorFilter) field.ErrorList {
	if m == nil {
		return nil
	}
	errs := BackendObjectReference(path.Child("backendRef"), &m.BackendRef)
	if m.Percent != nil {
		errs = append(errs, intRange(path, "percent", int64(*m.Percent), 0, maxPercent)...)
	}
	if f := m.Fraction; f != nil {
		p := path.Child("fraction")
		errs = append(errs, intMin(p, "numerator", int64(f.Numerator), 0)...)
		if f.Denominator != nil {
			errs = append(errs, intMin(p, "denominator", int64(*f.Denominator), 1)...)
		}
		if f.Numerator > deref(f.Denominator, defaultFractionD) {
			errs = append(errs, rule(p, typeObject, msgFractionNumerator))
		}
	}
	if m.Percent != nil && m.Fraction != nil {
		errs = append(errs, rule(path, typeObject, msgMirrorPercentFraction))
	}
	return errs
}

func requestRedirect(path *field.Path, r *gwv1.HTTPRequestRedirectFilter) field.ErrorList {
	var errs field.ErrorList
	if r.Scheme != nil {
		errs = append(errs, enum(path, "scheme", *r.Scheme, enumScheme)...)
	}
	if r.Hostname != nil {
		errs = append(errs, strPreciseHostname.check(path, "hostname", string(*r.Hostname))...)
	}
	errs = append(errs, pathModifier(path, r.Path)...)
	if r.Port != nil {
		errs = append(errs, intRange(path, "port", int64(*r.Port), 1, maxPort)...)
	}
	if r.StatusCode != nil {
		ok := false
		for _, c := range enumRedirectStatus {
			ok = ok || *r.StatusCode == c
		}
		if !ok {
			errs = append(errs, field.NotSupported(path.Child("statusCode"), *r.StatusCode, enumRedirectStatusText))
		}
	}
	return errs
}

func pathModifier(parent *field.Path, m *gwv1.HTTPPathModifier) field.ErrorList {
	if m == nil {
		return nil
	}
	path := parent.Child("path")
	errs := enum(path, "type", m.Type, enumPathModifier)
	if m.ReplaceFullPath != nil {
		errs = append(errs, strPathModifier.check(path, "replaceFullPath", *m.ReplaceFullPath)...)
	}
	if m.ReplacePrefixMatch != nil {
		errs = append(errs, strPathModifier.check(path, "replacePrefixMatch", *m.ReplacePrefixMatch)...)
	}
	full, prefix := m.Type == gwv1.FullPathHTTPPathModifier, m.Type == gwv1.PrefixMatchHTTPPathModifier
	if full && m.ReplaceFullPath == nil {
		errs = append(errs, rule(path, typeObject, msgFullPathSpecified))
	}
	if !full && m.ReplaceFullPath != nil {
		errs = append(errs, rule(path, typeObject, msgFullPathType))
	}
	if prefix && m.ReplacePrefixMatch == nil {
		errs = append(errs, rule(path, typeObject, msgPrefixMatchSpecified))
	}
	if !prefix && m.ReplacePrefixMatch != nil {
		errs = append(errs, rule(path, typeObject, msgPrefixMatchType))
	}
	return errs
}

func cors(path *field.Path, c *gwv1.HTTPCORSFilter) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if n := len(c.AllowOrigins); n > maxCORSItems {
		errs = append(errs, field.TooMany(path.Child("allowOrigins"), n, maxCORSItems))
	} else if n > 0 {
		p := path.Child("allowOrigins")
		for i, o := range c.AllowOrigins {
			errs = append(errs, strCORSOrigin.checkIndex(p, i, string(o))...)
		}
		errs = append(errs, uniqueStrings(p, c.AllowOrigins)...)
		if n > 1 && contains(c.AllowOrigins, wildcard) {
			errs = append(errs, rule(p, typeArray, msgCORSOriginsWildcard))
		}
	}
	if n := len(c.AllowMethods); n > maxCORSMethods {
		errs = append(errs, field.TooMany(path.Child("allowMethods"), n, maxCORSMethods))
	} else if n > 0 {
		p := path.Child("allowMethods")
		for i, m := range c.AllowMethods {
			errs = append(errs, enumIndex(p, i, m, enumCORSMethod)...)
		}
		errs = append(errs, uniqueStrings(p, c.AllowMethods)...)
		if n > 1 && contains(c.AllowMethods, wildcard) {
			errs = append(errs, rule(p, typeArray, msgCORSMethodsWildcard))
		}
	}
	errs = append(errs, corsHeaders(path, "allowHeaders", c.AllowHeaders, true)...)
	errs = append(errs, corsHeaders(path, "exposeHeaders", c.ExposeHeaders, false)...)
	if c.MaxAge != 0 { // Omitted when zero, then defaulted.
		errs = append(errs, intMin(path, "maxAge", int64(c.MaxAge), 1)...)
	}
	return errs
}

func corsHeaders(parent *field.Path, name string, headers []gwv1.HTTPHeaderName, wildcardAlone bool) field.ErrorList {
	n := len(headers)
	if n == 0 {
		return nil
	}
	p := parent.Child(name)
	if n > maxCORSItems {
		return field.ErrorList{field.TooMany(p, n, maxCORSItems)}
	}
	var errs field.ErrorList
	for i, h := range headers {
		errs = append(errs, strHeaderName.checkIndex(p, i, string(h))...)
	}
	errs = append(errs, uniqueStrings(p, headers)...)
	if wildcardAlone && n > 1 && contains(headers, wildcard) {
		errs = append(errs, rule(p, typeArray, msgCORSHeadersWildcard))
	}
	return errs
}

func contains[T ~string](list []T, v string) bool {
	for _, x := range list {
		if string(x) == v {
			return true
		}
	}
	return false
}

// localObjectReference validates a reference to an object in the same
// namespace, such as a filter's extensionRef or a BackendTLSPolicy's
// caCertificateRefs.
func localObjectReference(path *field.Path, r *gwv1.LocalObjectReference) field.ErrorList {
	if r == nil {
		return nil
	}
	errs := strGroup.check(path, "group", string(r.Group))
	errs = append(errs, strKind.check(path, "kind", string(r.Kind))...)
	return append(errs, strObjectName.check(path, "name", string(r.Name))...)
}

// externalAuth validates an ExternalAuth filter with the experimental
// channel's rules. (The standard channel refuses the filter type.)
func externalAuth(path *field.Path, a *gwv1.HTTPExternalAuthFilter) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if a.ExternalAuthProtocol == "" {
		errs = append(errs, field.Required(path.Child("protocol"), ""))
	} else {
		errs = append(errs, enum(path, "protocol", a.ExternalAuthProtocol, enumAuthProtocol)...)
	}
	errs = append(errs, BackendObjectReference(path.Child("backendRef"), &a.BackendRef)...)
	if g := a.GRPCAuthConfig; g != nil {
		errs = append(errs, authHeaders(path.Child("grpc"), "allowedHeaders", g.AllowedRequestHeaders)...)
	}
	if h := a.HTTPAuthConfig; h != nil {
		p := path.Child("http")
		if h.Path != "" {
			errs = append(errs, strAuthPath.check(p, "path", h.Path)...)
		}
		errs = append(errs, authHeaders(p, "allowedHeaders", h.AllowedRequestHeaders)...)
		errs = append(errs, authHeaders(p, "allowedResponseHeaders", h.AllowedResponseHeaders)...)
	}
	grpc, http := a.ExternalAuthProtocol == gwv1.HTTPRouteExternalAuthGRPCProtocol, a.ExternalAuthProtocol == gwv1.HTTPRouteExternalAuthHTTPProtocol
	if grpc && a.GRPCAuthConfig == nil {
		errs = append(errs, rule(path, typeObject, msgAuthGRPCSpecified))
	}
	if !grpc && a.GRPCAuthConfig != nil {
		errs = append(errs, rule(path, typeObject, msgAuthGRPCProtocol))
	}
	if http && a.HTTPAuthConfig == nil {
		errs = append(errs, rule(path, typeObject, msgAuthHTTPSpecified))
	}
	if !http && a.HTTPAuthConfig != nil {
		errs = append(errs, rule(path, typeObject, msgAuthHTTPProtocol))
	}
	return errs
}

func authHeaders(parent *field.Path, name string, headers []string) field.ErrorList {
	if len(headers) > maxAuthHeaders {
		return field.ErrorList{field.TooMany(parent.Child(name), len(headers), maxAuthHeaders)}
	}
	return uniqueStrings(parent.Child(name), headers)
}

func httpBackendRefs(path *field.Path, refs []gwv1.HTTPBackendRef) field.ErrorList {
	if len(refs) > maxBackendRefs {
		return field.ErrorList{field.TooMany(path, len(refs), maxBackendRefs)}
	}
	var errs field.ErrorList
	for i := range refs {
		p := path.Index(i)
		errs = append(errs, BackendRef(p, &refs[i].BackendRef)...)
		if len(refs[i].Filters) > 0 {
			errs = append(errs, HTTPRouteFilters(p.Child("filters"), refs[i].Filters)...)
		}
	}
	return errs
}

// HTTPRouteTimeouts validates the timeouts of an HTTPRoute rule.
func HTTPRouteTimeouts(path *field.Path, t *gwv1.HTTPRouteTimeouts) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	if t.Request != nil {
		errs = append(errs, strDuration.check(path, "request", string(*t.Request))...)
	}
	if t.BackendRequest != nil {
		errs = append(errs, strDuration.check(path, "backendRequest", string(*t.BackendRequest))...)
	}
	if t.Request == nil || t.BackendRequest == nil || len(errs) > 0 {
		// A malformed duration already fails; CEL's duration() would too.
		return errs
	}
	req, err1 := time.ParseDuration(string(*t.Request))
	backend, err2 := time.ParseDuration(string(*t.BackendRequest))
	if err1 == nil && err2 == nil && req != 0 && backend > req {
		errs = append(errs, rule(path, typeObject, msgBackendRequestTimeout))
	}
	return errs
}

// httpRouteRetry validates a rule's retry, a field of the experimental
// channel only.
func httpRouteRetry(path *field.Path, r *gwv1.HTTPRouteRetry) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if len(r.Codes) > 0 {
		errs = append(errs, retryCodes(path.Child("codes"), r.Codes)...)
	}
	if r.Attempts != nil {
		errs = append(errs, intMin(path, "attempts", int64(*r.Attempts), 1)...)
	}
	if r.Backoff != nil {
		errs = append(errs, strDuration.check(path, "backoff", string(*r.Backoff))...)
	}
	return errs
}

// retryCodes validates a retry's codes, a set without maxItems: each code is
// 400 to 599, and the API server reports the second item of each value, out
// of range or not, as a duplicate. Counts of the valid codes in an array,
// and of the others in a map made only if needed, keep it linear.
func retryCodes(path *field.Path, codes []gwv1.HTTPRouteRetryStatusCode) field.ErrorList {
	var (
		errs  field.ErrorList
		seen  [maxRetryCode - minRetryCode + 1]uint8
		other map[gwv1.HTTPRouteRetryStatusCode]uint8
	)
	for i, c := range codes {
		var n uint8
		if c >= minRetryCode && c <= maxRetryCode {
			n = seen[c-minRetryCode]
			seen[c-minRetryCode] = min(n+1, 2)
		} else {
			errs = append(errs, intRangeIndex(path, i, int64(c), minRetryCode, maxRetryCode)...)
			if other == nil {
				other = map[gwv1.HTTPRouteRetryStatusCode]uint8{}
			}
			n = other[c]
			other[c] = min(n+1, 2)
		}
		if n == 1 {
			errs = append(errs, field.Duplicate(path.Index(i), int(c)))
		}
	}
	return errs
}
