package admission

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

type httpRouteCase struct {
	reason string
	mutate func(r *gwv1.HTTPRoute)
	want   field.ErrorList
}

func rewritePrefixFilter() gwv1.HTTPRouteFilter {
	return gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
		Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/v2")},
	}}
}

func redirectFilter() gwv1.HTTPRouteFilter {
	return gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
		Scheme: ptr.To("https"), StatusCode: ptr.To(301),
	}}
}

func mirrorFilter(m *gwv1.HTTPRequestMirrorFilter) gwv1.HTTPRouteFilter {
	if m.BackendRef.Name == "" {
		m.BackendRef = gwv1.BackendObjectReference{Name: "mirror", Port: ptr.To[gwv1.PortNumber](80)}
	}
	return gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: m}
}

func pathMatch(t gwv1.PathMatchType, v string) []gwv1.HTTPRouteMatch {
	return []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(t), Value: ptr.To(v)}}}
}

//nolint:maintidx // A table of cases.
func httpRouteCases() map[string]httpRouteCase {
	return map[string]httpRouteCase{
		"Valid": {
			reason: "The typical route is accepted.",
			mutate: func(*gwv1.HTTPRoute) {},
		},
		"EmptySpec": {
			reason: "An empty spec is valid: rules default to one PathPrefix / rule.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec = gwv1.HTTPRouteSpec{} },
		},
		"NoNameNoNamespace": {
			reason: "Crossplane names composed resources and sets their namespace.",
			mutate: func(r *gwv1.HTTPRoute) { r.Name, r.Namespace = "", "" },
		},
		"BadName": {
			reason: "metadata.name must be a DNS-1123 subdomain.",
			mutate: func(r *gwv1.HTTPRoute) { r.Name = "Podinfo" },
			want:   errs(field.Invalid(path("metadata.name"), nil, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")),
		},
		"ServiceWithoutPort": {
			reason: "A backendRef to a Service (the default kind) must have a port.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[1].Port = nil },
			want:   errs(celErr("spec.rules[0].backendRefs[1]", msgServicePort)),
		},
		"ExplicitServiceWithoutPort": {
			reason: "The rule applies to an explicit core Service too.",
			mutate: func(r *gwv1.HTTPRoute) {
				b := &r.Spec.Rules[0].BackendRefs[0]
				b.Group, b.Kind, b.Port = ptr.To[gwv1.Group](""), ptr.To[gwv1.Kind]("Service"), nil
			},
			want: errs(celErr("spec.rules[0].backendRefs[0]", msgServicePort)),
		},
		"OtherKindWithoutPort": {
			reason: "Backends of other kinds need no port.",
			mutate: func(r *gwv1.HTTPRoute) {
				b := &r.Spec.Rules[0].BackendRefs[0]
				b.Group, b.Kind, b.Port = ptr.To[gwv1.Group]("multicluster.x-k8s.io"), ptr.To[gwv1.Kind]("ServiceImport"), nil
			},
		},
		"MirrorWithoutPort": {
			reason: "A RequestMirror backendRef to a Service must have a port.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Percent: ptr.To[int32](10)})
				f.RequestMirror.BackendRef.Port = ptr.To[gwv1.PortNumber](80)
				f.RequestMirror.BackendRef = gwv1.BackendObjectReference{Name: "mirror"}
				r.Spec.Rules[1].Filters = append(r.Spec.Rules[1].Filters, f)
			},
			want: errs(celErr("spec.rules[1].filters[1].requestMirror.backendRef", msgServicePort)),
		},
		"PortOutOfRange": {
			reason: "Ports are 1 to 65535.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Port = ptr.To[gwv1.PortNumber](65536)
				r.Spec.ParentRefs[0].Port = ptr.To[gwv1.PortNumber](0)
			},
			want: errs(below("spec.parentRefs[0].port", 1), above("spec.rules[0].backendRefs[0].port", maxPort)),
		},
		"WeightOutOfRange": {
			reason: "Weights are 0 to 1000000.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Weight = ptr.To[int32](-1)
				r.Spec.Rules[0].BackendRefs[1].Weight = ptr.To[int32](1000001)
			},
			want: errs(below("spec.rules[0].backendRefs[0].weight", 0), above("spec.rules[0].backendRefs[1].weight", maxWeight)),
		},
		"RepeatedRequestHeaderModifier": {
			reason: "A RequestHeaderModifier filter cannot be repeated.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, r.Spec.Rules[0].Filters[0])
			},
			want: errs(celListErr("spec.rules[0].filters", "RequestHeaderModifier filter cannot be repeated")),
		},
		"RepeatedBackendFilter": {
			reason: "The same holds for a backendRef's filters.",
			mutate: func(r *gwv1.HTTPRoute) {
				b := &r.Spec.Rules[2].BackendRefs[1]
				b.Filters = append(b.Filters, b.Filters[0])
			},
			want: errs(celListErr("spec.rules[2].backendRefs[1].filters", "ResponseHeaderModifier filter cannot be repeated")),
		},
		"RedirectAndRewrite": {
			reason: "RequestRedirect and URLRewrite exclude each other.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].BackendRefs = nil
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{redirectFilter(), {Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To[gwv1.PreciseHostname]("a.example.com")}}}
			},
			want: errs(celListErr("spec.rules[2].filters", msgRedirectOrRewrite)),
		},
		"RedirectWithBackendRefs": {
			reason: "A rule with a RequestRedirect filter has no backendRefs.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{redirectFilter()} },
			want:   errs(celErr("spec.rules[2]", msgRedirectWithBackends)),
		},
		"Redirect": {
			reason: "A rule with only a RequestRedirect filter is valid.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{redirectFilter()}
				r.Spec.Rules[2].BackendRefs = nil
			},
		},
		"RedirectBadValues": {
			reason: "A RequestRedirect's scheme, status code, hostname and port are checked.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := redirectFilter()
				f.RequestRedirect.Scheme, f.RequestRedirect.StatusCode = ptr.To("ftp"), ptr.To(200)
				f.RequestRedirect.Hostname, f.RequestRedirect.Port = ptr.To[gwv1.PreciseHostname]("*.example.com"), ptr.To[gwv1.PortNumber](0)
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{f}
				r.Spec.Rules[2].BackendRefs = nil
			},
			want: errs(
				notSupported("spec.rules[2].filters[0].requestRedirect.scheme", enumScheme),
				mismatch("spec.rules[2].filters[0].requestRedirect.hostname", patSubdomain),
				below("spec.rules[2].filters[0].requestRedirect.port", 1),
				notSupported("spec.rules[2].filters[0].requestRedirect.statusCode", enumRedirectStatusText),
			),
		},
		"ReplacePrefixMatchWithTwoMatches": {
			reason: "A ReplacePrefixMatch rewrite needs exactly one PathPrefix match.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()} },
			want:   errs(celErr("spec.rules[1]", msgRewritePrefixMatch)),
		},
		"ReplacePrefixMatchWithExactMatch": {
			reason: "The one match must be a PathPrefix.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Matches = pathMatch(gwv1.PathMatchExact, "/v1")
				r.Spec.Rules[1].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
			},
			want: errs(celErr("spec.rules[1]", msgRewritePrefixMatch)),
		},
		"ReplacePrefixMatchWithDefaultMatch": {
			reason: "A rule without matches gets the default PathPrefix / match before the rule runs.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Matches = nil
				r.Spec.Rules[1].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
			},
		},
		"ReplacePrefixMatchWithDefaultPathType": {
			reason: "A path match without type is a PathPrefix.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Matches = []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Value: ptr.To("/v1")}}}
				r.Spec.Rules[1].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
			},
		},
		"BackendReplacePrefixMatch": {
			reason: "The rule also holds when one backendRef has the rewrite.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
			},
			want: errs(celErr("spec.rules[1]", msgBackendRewritePrefix)),
		},
		"TwoBackendsReplacePrefixMatch": {
			reason: "The CRD counts backends with exists_one: with two such backends the rule holds.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
				r.Spec.Rules[1].BackendRefs[1].Filters = []gwv1.HTTPRouteFilter{rewritePrefixFilter()}
			},
		},
		"PathModifierMismatch": {
			reason: "A path modifier's type and value go together.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := rewritePrefixFilter()
				f.URLRewrite.Path.Type = gwv1.FullPathHTTPPathModifier
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{f}
			},
			want: errs(
				celErr("spec.rules[2].filters[0].urlRewrite.path", msgFullPathSpecified),
				celErr("spec.rules[2].filters[0].urlRewrite.path", msgPrefixMatchType),
			),
		},
		"FilterTypeMismatch": {
			reason: "A filter carries the field of its type and no other.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := &r.Spec.Rules[0].Filters[0]
				f.ResponseHeaderModifier, f.RequestHeaderModifier = f.RequestHeaderModifier, nil
			},
			want: errs(
				celErr("spec.rules[0].filters[0]", "filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type"),
				celErr("spec.rules[0].filters[0]", "filter.responseHeaderModifier must be nil if the filter.type is not ResponseHeaderModifier"),
			),
		},
		"ExternalAuth": {
			reason: "The standard channel does not know the ExternalAuth filter type, even with a valid configuration.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExternalAuth, ExternalAuth: &gwv1.HTTPExternalAuthFilter{
					ExternalAuthProtocol: gwv1.HTTPRouteExternalAuthHTTPProtocol,
					BackendRef:           gwv1.BackendObjectReference{Name: "auth", Port: ptr.To[gwv1.PortNumber](80)},
					HTTPAuthConfig:       &gwv1.HTTPAuthConfig{Path: "/auth"},
				}}}
			},
			want: errs(notSupported("spec.rules[2].filters[0].type", enumHTTPFilterType)),
		},
		"ExternalAuthBadConfig": {
			reason: "An ExternalAuth configuration is checked with the experimental rules.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExternalAuth, ExternalAuth: &gwv1.HTTPExternalAuthFilter{
					ExternalAuthProtocol: gwv1.HTTPRouteExternalAuthGRPCProtocol,
					BackendRef:           gwv1.BackendObjectReference{Name: "auth"},
					HTTPAuthConfig:       &gwv1.HTTPAuthConfig{Path: "/a b"},
				}}}
			},
			want: errs(
				notSupported("spec.rules[2].filters[0].type", enumHTTPFilterType),
				celErr("spec.rules[2].filters[0].externalAuth.backendRef", msgServicePort),
				mismatch("spec.rules[2].filters[0].externalAuth.http.path", patPath),
				celErr("spec.rules[2].filters[0].externalAuth", msgAuthGRPCSpecified),
				celErr("spec.rules[2].filters[0].externalAuth", msgAuthHTTPProtocol),
			),
		},
		"Hostnames": {
			reason: "Hostnames are lower case DNS names with an optional leading wildcard label.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Hostnames = []gwv1.Hostname{"Example.com", "a.*.example.com", "", "1.2.3.4"}
			},
			want: errs(
				mismatch("spec.hostnames[0]", patHostname),
				mismatch("spec.hostnames[1]", patHostname),
				tooShort("spec.hostnames[2]", 1),
				mismatch("spec.hostnames[2]", patHostname),
			),
		},
		"TooManyHostnames": {
			reason: "At most 16 hostnames.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Hostnames = slices.Repeat([]gwv1.Hostname{"a.example.com"}, 17) },
			want:   errs(tooMany("spec.hostnames", 17, maxHostnames)),
		},
		"HostnameTooLong": {
			reason: "Hostnames have at most 253 characters.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com")}
			},
			want: errs(tooLong("spec.hostnames[0]", 253)),
		},
		"DuplicateHeaderMatch": {
			reason: "Header matches are a list map keyed by name.",
			mutate: func(r *gwv1.HTTPRoute) {
				m := &r.Spec.Rules[0].Matches[0]
				m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: "x-canary", Value: "never"})
			},
			want: errs(duplicate("spec.rules[0].matches[0].headers[1]")),
		},
		"HeaderMatchNamesDifferInCase": {
			reason: "List-map keys are compared as written.",
			mutate: func(r *gwv1.HTTPRoute) {
				m := &r.Spec.Rules[0].Matches[0]
				m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: "X-Canary", Value: "never"})
			},
		},
		"DuplicateSetHeader": {
			reason: "Header modifier set and add are list maps keyed by name.",
			mutate: func(r *gwv1.HTTPRoute) {
				h := r.Spec.Rules[0].Filters[0].RequestHeaderModifier
				h.Set = append(h.Set, h.Set[0])
			},
			want: errs(duplicate("spec.rules[0].filters[0].requestHeaderModifier.set[1]")),
		},
		"DuplicateRemove": {
			reason: "Header modifier remove is a list set.",
			mutate: func(r *gwv1.HTTPRoute) {
				h := r.Spec.Rules[0].Filters[0].RequestHeaderModifier
				h.Remove = append(h.Remove, h.Remove[0])
			},
			want: errs(duplicate("spec.rules[0].filters[0].requestHeaderModifier.remove[1]")),
		},
		"HeaderValueSpaces": {
			reason: "The experimental channel refuses leading and trailing blanks in header values.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches[0].Headers[0].Value = " always"
				r.Spec.Rules[0].Filters[0].RequestHeaderModifier.Set[0].Value = "a  b"
			},
			want: errs(
				mismatch("spec.rules[0].matches[0].headers[0].value", patHeaderValue),
				mismatch("spec.rules[0].filters[0].requestHeaderModifier.set[0].value", patHeaderValue),
			),
		},
		"HeaderValueInnerSpace": {
			reason: "Single inner blanks are fine.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Headers[0].Value = "a b\tc" },
		},
		"HeaderName": {
			reason: "Header names are RFC 7230 tokens.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Headers[0].Name = "x canary" },
			want:   errs(mismatch("spec.rules[0].matches[0].headers[0].name", patHeaderName)),
		},
		"HeaderMatchType": {
			reason: "Header match types are Exact or RegularExpression.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches[0].Headers[0].Type = ptr.To[gwv1.HeaderMatchType]("Prefix")
			},
			want: errs(notSupported("spec.rules[0].matches[0].headers[0].type", enumHeaderMatchType)),
		},
		"TooManyHeaderMatches": {
			reason: "At most 16 header matches.",
			mutate: func(r *gwv1.HTTPRoute) {
				m := &r.Spec.Rules[0].Matches[0]
				for i := range 16 {
					m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(strings.Repeat("h", i+1)), Value: "v"})
				}
			},
			want: errs(tooMany("spec.rules[0].matches[0].headers", 17, maxHeaders)),
		},
		"QueryParamValueTooLong": {
			reason: "Query param values have at most 1024 characters.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Matches[1].QueryParams[0].Value = strings.Repeat("v", 1025) },
			want:   errs(tooLong("spec.rules[1].matches[1].queryParams[0].value", 1024)),
		},
		"Method": {
			reason: "Methods are upper case.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Matches[0].Method = ptr.To[gwv1.HTTPMethod]("get") },
			want:   errs(notSupported("spec.rules[1].matches[0].method", enumHTTPMethod)),
		},
		"PathDoubleSlash": {
			reason: "Exact and PathPrefix paths must not contain //.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/api//v1") },
			want:   errs(celErr("spec.rules[1].matches[0].path", msgPathDoubleSlash)),
		},
		"PathEncodedSlash": {
			reason: "Exact and PathPrefix paths must not contain %2f or %2F.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Matches[1].Path.Value = ptr.To("/a%2fb%2F") },
			want: errs(
				celErr("spec.rules[1].matches[1].path", msgPathEncodedSlashLower),
				celErr("spec.rules[1].matches[1].path", msgPathEncodedSlashUpper),
			),
		},
		"PathNotAbsolute": {
			reason: "Exact and PathPrefix paths start with /.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Path.Value = ptr.To("api") },
			want:   errs(celErr("spec.rules[0].matches[0].path", msgPathAbsolute)),
		},
		"PathDotSegments": {
			reason: "Exact and PathPrefix paths have no dot segments nor fragment.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Path.Value = ptr.To("/a/./b/../c#d/..") },
			want: errs(
				celErr("spec.rules[0].matches[0].path", msgPathDotSegment),
				celErr("spec.rules[0].matches[0].path", msgPathDotDotSegment),
				celErr("spec.rules[0].matches[0].path", msgPathFragment),
				celErr("spec.rules[0].matches[0].path", msgPathEndsDotDot),
				celErr("spec.rules[0].matches[0].path", msgPathChars),
			),
		},
		"PathEmpty": {
			reason: "An empty Exact path is not absolute.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Path.Value = ptr.To("") },
			want: errs(
				celErr("spec.rules[0].matches[0].path", msgPathAbsolute),
				celErr("spec.rules[0].matches[0].path", msgPathChars),
			),
		},
		"PathSpace": {
			reason: "Paths contain only URI path characters.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches[0].Path.Value = ptr.To("/a b") },
			want:   errs(celErr("spec.rules[0].matches[0].path", msgPathChars)),
		},
		"PathRegularExpression": {
			reason: "A RegularExpression path escapes the path rules.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = pathMatch(gwv1.PathMatchRegularExpression, "^/a//b[0-9]+#$")
			},
		},
		"PathType": {
			reason: "Path types are Exact, PathPrefix or RegularExpression.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[0].Matches = pathMatch("Prefix", "/") },
			want: errs(
				notSupported("spec.rules[0].matches[0].path.type", enumPathMatchType),
				celErr("spec.rules[0].matches[0].path", msgPathType),
			),
		},
		"PathTooLong": {
			reason: "Paths have at most 1024 characters.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = pathMatch(gwv1.PathMatchPathPrefix, "/"+strings.Repeat("a", 1024))
			},
			want: errs(tooLong("spec.rules[0].matches[0].path.value", 1024)),
		},
		"FractionAboveDenominator": {
			reason: "A mirror fraction's numerator is at most its denominator, which defaults to 100.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Filters = append(r.Spec.Rules[1].Filters, mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Fraction: &gwv1.Fraction{Numerator: 101}}))
			},
			want: errs(celErr("spec.rules[1].filters[1].requestMirror.fraction", msgFractionNumerator)),
		},
		"Fraction": {
			reason: "A numerator below the denominator is fine.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Filters = append(r.Spec.Rules[1].Filters, mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Fraction: &gwv1.Fraction{Numerator: 101, Denominator: ptr.To[int32](1000)}}))
			},
		},
		"PercentAndFraction": {
			reason: "A mirror has a percent or a fraction, not both.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Filters = append(r.Spec.Rules[1].Filters, mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Percent: ptr.To[int32](101), Fraction: &gwv1.Fraction{Numerator: 1}}))
			},
			want: errs(
				above("spec.rules[1].filters[1].requestMirror.percent", maxPercent),
				celErr("spec.rules[1].filters[1].requestMirror", msgMirrorPercentFraction),
			),
		},
		"TooManyRules": {
			reason: "At most 16 rules.",
			mutate: func(r *gwv1.HTTPRoute) {
				for len(r.Spec.Rules) < 17 {
					r.Spec.Rules = append(r.Spec.Rules, *r.Spec.Rules[2].DeepCopy())
				}
			},
			want: errs(tooMany("spec.rules", 17, maxRules)),
		},
		"TooManyMatches": {
			reason: "At most 64 matches in a rule.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[2].Matches = make([]gwv1.HTTPRouteMatch, 65) },
			want:   errs(tooMany("spec.rules[2].matches", 65, maxMatches)),
		},
		"TooManyTotalMatches": {
			reason: "At most 128 matches across rules; a rule without matches counts one.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = make([]gwv1.HTTPRouteMatch, 64)
				r.Spec.Rules[1].Matches = make([]gwv1.HTTPRouteMatch, 64)
				r.Spec.Rules[2].Matches = nil
			},
			want: errs(celListErr("spec.rules", msgTotalMatches)),
		},
		"TotalMatches": {
			reason: "128 matches are fine.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = make([]gwv1.HTTPRouteMatch, 64)
				r.Spec.Rules[1].Matches = make([]gwv1.HTTPRouteMatch, 63)
				r.Spec.Rules[2].Matches = nil
			},
		},
		"DuplicateRuleName": {
			reason: "The experimental channel requires rule names to be unique.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[2].Name = r.Spec.Rules[0].Name },
			want:   errs(celListErr("spec.rules", MsgRuleNameUnique)),
		},
		"BadRuleName": {
			reason: "Rule names are DNS subdomains.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[2].Name = ptr.To[gwv1.SectionName]("Default") },
			want:   errs(mismatch("spec.rules[2].name", patSubdomain)),
		},
		"SameParentWithoutSectionName": {
			reason: "Two references to the same parent need a sectionName (standard) or a sectionName or port (experimental).",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.ParentRefs[1].SectionName = nil },
			want: errs(
				celListErr("spec.parentRefs", msgSectionSpecified),
				celListErr("spec.parentRefs", msgSectionPortSpecified),
			),
		},
		"SameParentSameSectionName": {
			reason: "The sectionNames of the same parent are unique.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.ParentRefs[1].SectionName = r.Spec.ParentRefs[0].SectionName },
			want: errs(
				celListErr("spec.parentRefs", msgSectionUnique),
				celListErr("spec.parentRefs", msgSectionPortUnique),
			),
		},
		"SameParentDifferentPorts": {
			reason: "Ports tell references apart only in the experimental channel.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.ParentRefs[0].SectionName, r.Spec.ParentRefs[1].SectionName = nil, nil
				r.Spec.ParentRefs[0].Port, r.Spec.ParentRefs[1].Port = ptr.To[gwv1.PortNumber](80), ptr.To[gwv1.PortNumber](443)
			},
			want: errs(celListErr("spec.parentRefs", msgSectionUnique)),
		},
		"SameParentDefaultGroup": {
			reason: "A parentRef's group and kind default before the rules compare them.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.ParentRefs[0].Group, r.Spec.ParentRefs[0].Kind = ptr.To[gwv1.Group](gwv1.GroupName), ptr.To[gwv1.Kind]("Gateway")
				r.Spec.ParentRefs[1].SectionName = r.Spec.ParentRefs[0].SectionName
			},
			want: errs(
				celListErr("spec.parentRefs", msgSectionUnique),
				celListErr("spec.parentRefs", msgSectionPortUnique),
			),
		},
		"DifferentParents": {
			reason: "References to different parents need no sectionName.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.ParentRefs[0].SectionName, r.Spec.ParentRefs[1].SectionName = nil, nil
				r.Spec.ParentRefs[1].Namespace = nil
			},
		},
		"TooManyParentRefs": {
			reason: "At most 32 parentRefs.",
			mutate: func(r *gwv1.HTTPRoute) {
				for i := range 31 {
					r.Spec.ParentRefs = append(r.Spec.ParentRefs, gwv1.ParentReference{Name: gwv1.ObjectName(strings.Repeat("g", i+1))})
				}
			},
			want: errs(tooMany("spec.parentRefs", 33, maxParentRefs)),
		},
		"ParentRefFields": {
			reason: "A parentRef's group, kind, namespace, name and sectionName have patterns and lengths.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.ParentRefs[0] = gwv1.ParentReference{
					Group: ptr.To[gwv1.Group]("Gateway.Networking"), Kind: ptr.To[gwv1.Kind](""), Namespace: ptr.To[gwv1.Namespace]("a.b"),
					Name: "", SectionName: ptr.To[gwv1.SectionName]("HTTP"),
				}
			},
			want: errs(
				mismatch("spec.parentRefs[0].group", patGroup),
				tooShort("spec.parentRefs[0].kind", 1),
				mismatch("spec.parentRefs[0].kind", patKind),
				mismatch("spec.parentRefs[0].namespace", patNamespace),
				tooShort("spec.parentRefs[0].name", 1),
				mismatch("spec.parentRefs[0].sectionName", patSubdomain),
			),
		},
		"BackendRefFields": {
			reason: "A backendRef's group, kind, name and namespace have patterns and lengths.",
			mutate: func(r *gwv1.HTTPRoute) {
				b := &r.Spec.Rules[0].BackendRefs[0]
				b.Group, b.Kind, b.Namespace = ptr.To[gwv1.Group]("-x"), ptr.To(gwv1.Kind(strings.Repeat("K", 64))), ptr.To[gwv1.Namespace]("")
				b.Name = gwv1.ObjectName(strings.Repeat("n", 254))
			},
			want: errs(
				mismatch("spec.rules[0].backendRefs[0].group", patGroup),
				tooLong("spec.rules[0].backendRefs[0].kind", 63),
				tooLong("spec.rules[0].backendRefs[0].name", 253),
				tooShort("spec.rules[0].backendRefs[0].namespace", 1),
				mismatch("spec.rules[0].backendRefs[0].namespace", patNamespace),
			),
		},
		"TooManyBackendRefs": {
			reason: "At most 16 backendRefs.",
			mutate: func(r *gwv1.HTTPRoute) {
				for len(r.Spec.Rules[2].BackendRefs) < 17 {
					r.Spec.Rules[2].BackendRefs = append(r.Spec.Rules[2].BackendRefs, gwv1.HTTPBackendRef{BackendRef: backend("b", 1)})
				}
			},
			want: errs(tooMany("spec.rules[2].backendRefs", 17, maxBackendRefs)),
		},
		"TooManyFilters": {
			reason: "At most 16 filters.",
			mutate: func(r *gwv1.HTTPRoute) {
				for len(r.Spec.Rules[2].Filters) < 17 {
					r.Spec.Rules[2].Filters = append(r.Spec.Rules[2].Filters, gwv1.HTTPRouteFilter{
						Type: gwv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwv1.LocalObjectReference{Kind: "Filter", Name: "f"},
					})
				}
			},
			want: errs(tooMany("spec.rules[2].filters", 17, maxFilters)),
		},
		"ExtensionRef": {
			reason: "An ExtensionRef needs a kind and a name.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwv1.LocalObjectReference{}}}
			},
			want: errs(
				tooShort("spec.rules[2].filters[0].extensionRef.kind", 1),
				mismatch("spec.rules[2].filters[0].extensionRef.kind", patKind),
				tooShort("spec.rules[2].filters[0].extensionRef.name", 1),
			),
		},
		"CORS": {
			reason: "A CORS filter's wildcards stand alone, origins match their pattern and maxAge is positive.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterCORS, CORS: &gwv1.HTTPCORSFilter{
					AllowOrigins: []gwv1.CORSOrigin{"*", "ftp://example.com"},
					AllowMethods: []gwv1.HTTPMethodWithWildcard{"GET", "GET"},
					AllowHeaders: []gwv1.HTTPHeaderName{"*", "x-a"},
					MaxAge:       -1,
				}}}
			},
			want: errs(
				mismatch("spec.rules[2].filters[0].cors.allowOrigins[1]", patCORSOrigin),
				celListErr("spec.rules[2].filters[0].cors.allowOrigins", msgCORSOriginsWildcard),
				duplicate("spec.rules[2].filters[0].cors.allowMethods[1]"),
				celListErr("spec.rules[2].filters[0].cors.allowHeaders", msgCORSHeadersWildcard),
				below("spec.rules[2].filters[0].cors.maxAge", 1),
			),
		},
		"ValidCORS": {
			reason: "A typical CORS filter is valid.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterCORS, CORS: &gwv1.HTTPCORSFilter{
					AllowOrigins:     []gwv1.CORSOrigin{"https://*.example.com", "http://example.com:8080"},
					AllowMethods:     []gwv1.HTTPMethodWithWildcard{"*"},
					AllowHeaders:     []gwv1.HTTPHeaderName{"x-a", "x-b"},
					AllowCredentials: ptr.To(true),
				}}}
			},
		},
		"Timeouts": {
			reason: "The backend timeout is at most the request timeout.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Timeouts.BackendRequest = ptr.To[gwv1.Duration]("1m") },
			want:   errs(celErr("spec.rules[1].timeouts", msgBackendRequestTimeout)),
		},
		"ZeroRequestTimeout": {
			reason: "A zero request timeout means none, so any backend timeout fits.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("0s"), BackendRequest: ptr.To[gwv1.Duration]("1h")}
			},
		},
		"BadDuration": {
			reason: "Durations follow GEP-2257: no days, no fractions.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.Rules[1].Timeouts.Request = ptr.To[gwv1.Duration]("1d") },
			want:   errs(mismatch("spec.rules[1].timeouts.request", patDuration)),
		},
		"Retry": {
			reason: "Retry (experimental) codes are 400 to 599 and unique, attempts at least 1.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Retry = &gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{503, 503, 600}, Attempts: ptr.To(0), Backoff: ptr.To[gwv1.Duration]("100ms")}
			},
			want: errs(
				duplicate("spec.rules[1].retry.codes[1]"),
				above("spec.rules[1].retry.codes[2]", maxRetryCode),
				below("spec.rules[1].retry.attempts", 1),
			),
		},
		"ValidRetry": {
			reason: "A typical retry (experimental) is accepted; an empty one too.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].Retry = &gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{500, 502, 503}, Attempts: ptr.To(2), Backoff: ptr.To[gwv1.Duration]("100ms")}
				r.Spec.Rules[1].Retry = &gwv1.HTTPRouteRetry{}
			},
		},
		"RetryEveryCode": {
			reason: "codes has no maxItems: every code from 400 to 599 at once is fine, and attempts has no maximum.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Retry = &gwv1.HTTPRouteRetry{Attempts: ptr.To(1 << 40)}
				for c := gwv1.HTTPRouteRetryStatusCode(minRetryCode); c <= maxRetryCode; c++ {
					r.Spec.Rules[1].Retry.Codes = append(r.Spec.Rules[1].Retry.Codes, c)
				}
			},
		},
		"RetryRepeatedCodes": {
			reason: "The API server reports the second item of each repeated code, out of range or not, and not the third.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Retry = &gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{503, 503, 503, 600, 600, 600, 399}}
			},
			want: errs(
				duplicate("spec.rules[1].retry.codes[1]"),
				above("spec.rules[1].retry.codes[3]", maxRetryCode),
				above("spec.rules[1].retry.codes[4]", maxRetryCode),
				duplicate("spec.rules[1].retry.codes[4]"),
				above("spec.rules[1].retry.codes[5]", maxRetryCode),
				below("spec.rules[1].retry.codes[6]", minRetryCode),
			),
		},
		"RetryBackoff": {
			reason: "A retry's backoff is a GEP-2257 duration; attempts is at least 1.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].Retry = &gwv1.HTTPRouteRetry{Attempts: ptr.To(-1), Backoff: ptr.To[gwv1.Duration]("0.5s")}
			},
			want: errs(below("spec.rules[1].retry.attempts", 1), mismatch("spec.rules[1].retry.backoff", patDuration)),
		},
		"ValidSessionPersistence": {
			reason: "A permanent cookie with its timeout, and a header-based session, are accepted; sessionName counts characters.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].SessionPersistence = &gwv1.SessionPersistence{
					SessionName:     ptr.To(strings.Repeat("é", 128)),
					AbsoluteTimeout: ptr.To[gwv1.Duration]("24h"),
					Type:            ptr.To(gwv1.CookieBasedSessionPersistence),
					CookieConfig:    &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
				}
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{Type: ptr.To(gwv1.HeaderBasedSessionPersistence), SessionName: ptr.To("")}
				r.Spec.Rules[2].SessionPersistence = &gwv1.SessionPersistence{}
			},
		},
		"SessionPersistenceDefaults": {
			reason: "type defaults to Cookie and lifetimeType to Session: a cookie config alone needs no timeout.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{CookieConfig: &gwv1.CookieConfig{}}
			},
		},
		"PermanentCookieDefaultType": {
			reason: "A permanent cookie of the default type needs an absolute timeout.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{CookieConfig: &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)}}
			},
			want: errs(celErr("spec.rules[1].sessionPersistence", msgAbsoluteTimeout)),
		},
		"SessionPersistenceValues": {
			reason: "sessionName has at most 128 characters, absoluteTimeout is a duration, type and lifetimeType are enums.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{
					SessionName:     ptr.To(strings.Repeat("é", 129)),
					AbsoluteTimeout: ptr.To[gwv1.Duration]("1d"),
					Type:            ptr.To[gwv1.SessionPersistenceType](""),
					CookieConfig:    &gwv1.CookieConfig{LifetimeType: ptr.To[gwv1.CookieLifetimeType]("Forever")},
				}
			},
			want: errs(
				tooLong("spec.rules[1].sessionPersistence.sessionName", 128),
				mismatch("spec.rules[1].sessionPersistence.absoluteTimeout", patDuration),
				notSupported("spec.rules[1].sessionPersistence.type", enumSessionType),
				notSupported("spec.rules[1].sessionPersistence.cookieConfig.lifetimeType", enumLifetimeType),
				celErr("spec.rules[1].sessionPersistence", msgCookieConfigType),
			),
		},
		"ThreeEqualHeaders": {
			reason: "The API server reports the second item of a repeated list-map key or set item, not the third.",
			mutate: func(r *gwv1.HTTPRoute) {
				m := &r.Spec.Rules[0].Matches[0]
				m.Headers = slices.Repeat(m.Headers, 3)
				f := r.Spec.Rules[0].Filters[0].RequestHeaderModifier
				f.Remove = []string{"a", "a", "a", "b", "b"}
			},
			want: errs(
				duplicate("spec.rules[0].matches[0].headers[1]"),
				duplicate("spec.rules[0].filters[0].requestHeaderModifier.remove[1]"),
				duplicate("spec.rules[0].filters[0].requestHeaderModifier.remove[4]"),
			),
		},
		"SessionPersistence": {
			reason: "A permanent cookie (experimental) needs an absolute timeout; a cookie config needs the Cookie type.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{
					Type:         ptr.To(gwv1.HeaderBasedSessionPersistence),
					CookieConfig: &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
				}
			},
			want: errs(
				celErr("spec.rules[1].sessionPersistence", msgAbsoluteTimeout),
				celErr("spec.rules[1].sessionPersistence", msgCookieConfigType),
			),
		},
		"LengthInCharacters": {
			reason: "Lengths count characters, not bytes: 1024 two-byte characters fit in 1024.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := rewritePrefixFilter()
				f.URLRewrite.Path = &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(strings.Repeat("é", 1024))}
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{f}
			},
		},
		"TooManyCharacters": {
			reason: "Lengths count characters, not bytes: 1025 two-byte characters do not fit.",
			mutate: func(r *gwv1.HTTPRoute) {
				f := rewritePrefixFilter()
				f.URLRewrite.Path = &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(strings.Repeat("é", 1025))}
				r.Spec.Rules[2].Filters = []gwv1.HTTPRouteFilter{f}
			},
			want: errs(tooLong("spec.rules[2].filters[0].urlRewrite.path.replaceFullPath", 1024)),
		},
		"InvalidUTF8": {
			reason: "JSON encoding turns each invalid byte into one U+FFFD character: 253 of them make a valid name.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Name = gwv1.ObjectName(strings.Repeat("\xff", 253))
			},
		},
		"InvalidUTF8TooLong": {
			reason: "JSON encoding turns each invalid byte into one U+FFFD character: 254 of them are too many.",
			mutate: func(r *gwv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Name = gwv1.ObjectName(strings.Repeat("\xff", 254))
			},
			want: errs(tooLong("spec.rules[0].backendRefs[0].name", 253)),
		},
		maximal: {
			reason: "A route at every limit at once stays within the API server's CEL cost budget.",
			mutate: func(r *gwv1.HTTPRoute) {
				long := "/" + strings.Repeat("a/", 511)
				for len(r.Spec.ParentRefs) < maxParentRefs {
					r.Spec.ParentRefs = append(r.Spec.ParentRefs, gwv1.ParentReference{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress"), SectionName: ptr.To(gwv1.SectionName(strings.Repeat("s", len(r.Spec.ParentRefs))))})
				}
				r.Spec.Rules = nil
				for i := range maxRules {
					rule := gwv1.HTTPRouteRule{Name: ptr.To(gwv1.SectionName(strings.Repeat("r", i+1)))}
					for range maxTotalMatches / maxRules {
						rule.Matches = append(rule.Matches, pathMatch(gwv1.PathMatchPathPrefix, long)...)
					}
					for range maxFilters {
						rule.Filters = append(rule.Filters, mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Fraction: &gwv1.Fraction{Numerator: 1}}))
					}
					for range maxBackendRefs {
						b := gwv1.HTTPBackendRef{BackendRef: backend("podinfo", 1)}
						for range maxFilters {
							b.Filters = append(b.Filters, mirrorFilter(&gwv1.HTTPRequestMirrorFilter{Percent: ptr.To[int32](1)}))
						}
						rule.BackendRefs = append(rule.BackendRefs, b)
					}
					r.Spec.Rules = append(r.Spec.Rules, rule)
				}
			},
		},
		"UseDefaultGateways": {
			reason: "useDefaultGateways (experimental) is All or None.",
			mutate: func(r *gwv1.HTTPRoute) { r.Spec.UseDefaultGateways = "Some" },
			want:   errs(notSupported("spec.useDefaultGateways", enumGatewayDefaultScope)),
		},
	}
}

func TestHTTPRoute(t *testing.T) {
	for name, tc := range httpRouteCases() {
		t.Run(name, func(t *testing.T) {
			r := httpRoute()
			tc.mutate(r)
			if d := diff(tc.want, HTTPRoute(r)); d != "" {
				t.Errorf("\n%s\nHTTPRoute(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestFragmentPaths(t *testing.T) {
	type args struct {
		check func() field.ErrorList
	}
	cases := map[string]struct {
		reason string
		args   args
		want   field.ErrorList
	}{
		"HTTPRouteFilters": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				f := headerFilter(gwv1.HTTPRouteFilterRequestHeaderModifier, "x", "y")
				return HTTPRouteFilters(path("spec.rules[1].filters"), []gwv1.HTTPRouteFilter{f, f})
			}},
			want: errs(celListErr("spec.rules[1].filters", "RequestHeaderModifier filter cannot be repeated")),
		},
		"HTTPRouteMatches": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return HTTPRouteMatches(path("spec.traffic.matches"), pathMatch(gwv1.PathMatchExact, "//"))
			}},
			want: errs(celErr("spec.traffic.matches[0].path", msgPathDoubleSlash)),
		},
		"BackendObjectReference": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return BackendObjectReference(path("spec.canary.backendRef"), &gwv1.BackendObjectReference{Name: "x"})
			}},
			want: errs(celErr("spec.canary.backendRef", msgServicePort)),
		},
		"ParentReferences": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return ParentReferences(path("spec.parentRefs"), []gwv1.ParentReference{{Name: "g"}, {Name: "g"}})
			}},
			want: errs(celListErr("spec.parentRefs", msgSectionUnique), celListErr("spec.parentRefs", msgSectionPortUnique)),
		},
		"SectionName": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return SectionName(path("spec.rules[0].name"), "API")
			}},
			want: errs(mismatch("spec.rules[0].name", patSubdomain)),
		},
		"Duration": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return Duration(path("spec.traffic.steps[0].pause"), "1d")
			}},
			want: errs(mismatch("spec.traffic.steps[0].pause", patDuration)),
		},
		"HTTPRouteTimeouts": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return HTTPRouteTimeouts(path("spec.rules[0].timeouts"), &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("1s"), BackendRequest: ptr.To[gwv1.Duration]("2s")})
			}},
			want: errs(celErr("spec.rules[0].timeouts", msgBackendRequestTimeout)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := diff(tc.want, tc.args.check()); d != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func BenchmarkHTTPRoute(b *testing.B) {
	r := httpRoute()
	b.ReportAllocs()
	for b.Loop() {
		if errs := HTTPRoute(r); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkCRDValidatorHTTPRoute validates the same route with the CRD
// validator of one channel, for comparison with BenchmarkHTTPRoute.
func BenchmarkCRDValidatorHTTPRoute(b *testing.B) {
	s := crdschema.GatewayAPI(b, crdschema.Standard)
	r := httpRoute()
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(r); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
