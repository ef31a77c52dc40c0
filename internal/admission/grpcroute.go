package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Messages of the GRPCRoute CRD's x-kubernetes-validations rules, verbatim.
const (
	msgGRPCServiceOrMethod = "One or both of 'service' or 'method' must be specified"
	msgGRPCServiceChars    = "service must only contain valid characters (matching ^(?i)\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$)"
	msgGRPCMethodChars     = "method must only contain valid characters (matching ^[A-Za-z_][A-Za-z_0-9]*$)"
)

var (
	enumGRPCFilterType = []string{
		string(gwv1.GRPCRouteFilterResponseHeaderModifier), string(gwv1.GRPCRouteFilterRequestHeaderModifier),
		string(gwv1.GRPCRouteFilterRequestMirror), string(gwv1.GRPCRouteFilterExtensionRef),
	}
	enumGRPCMethodMatchType = []string{string(gwv1.GRPCMethodMatchExact), string(gwv1.GRPCMethodMatchRegularExpression)}
	enumGRPCHeaderMatchType = []string{string(gwv1.GRPCHeaderMatchExact), string(gwv1.GRPCHeaderMatchRegularExpression)}
)

// GRPCRoute validates a GRPCRoute v1 as both Gateway API channels would.
func GRPCRoute(r *gwv1.GRPCRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, true)...)
	errs = append(errs, Hostnames(spec.Child("hostnames"), r.Spec.Hostnames)...)
	return append(errs, GRPCRouteRules(spec.Child("rules"), r.Spec.Rules)...)
}

// GRPCRouteRules validates the rules of a GRPCRoute: each rule, the total
// number of matches and the uniqueness of rule names.
func GRPCRouteRules(path *field.Path, rules []gwv1.GRPCRouteRule) field.ErrorList {
	if len(rules) > maxRules {
		return field.ErrorList{field.TooMany(path, len(rules), maxRules)}
	}
	var errs field.ErrorList
	total := 0
	names := make([]*gwv1.SectionName, 0, maxRules)
	for i := range rules {
		errs = append(errs, GRPCRouteRule(path.Index(i), &rules[i])...)
		total += len(rules[i].Matches) // No default: an empty list counts 0.
		names = append(names, rules[i].Name)
	}
	if total > maxTotalMatches {
		errs = append(errs, rule(path, typeArray, msgTotalMatches))
	}
	return append(errs, ruleNames(path, names)...)
}

// GRPCRouteRule validates one GRPCRoute rule.
func GRPCRouteRule(path *field.Path, r *gwv1.GRPCRouteRule) field.ErrorList {
	var errs field.ErrorList
	if r.Name != nil {
		errs = append(errs, strSectionName.check(path, "name", string(*r.Name))...)
	}
	errs = append(errs, GRPCRouteMatches(path.Child("matches"), r.Matches)...)
	errs = append(errs, GRPCRouteFilters(path.Child("filters"), r.Filters)...)
	if n := len(r.BackendRefs); n > maxBackendRefs {
		errs = append(errs, field.TooMany(path.Child("backendRefs"), n, maxBackendRefs))
	} else {
		p := path.Child("backendRefs")
		for i := range r.BackendRefs {
			bp := p.Index(i)
			errs = append(errs, BackendRef(bp, &r.BackendRefs[i].BackendRef)...)
			if len(r.BackendRefs[i].Filters) > 0 {
				errs = append(errs, GRPCRouteFilters(bp.Child("filters"), r.BackendRefs[i].Filters)...)
			}
		}
	}
	return append(errs, SessionPersistence(path.Child("sessionPersistence"), r.SessionPersistence)...)
}

// GRPCRouteMatches validates the matches of a GRPCRoute rule.
func GRPCRouteMatches(path *field.Path, matches []gwv1.GRPCRouteMatch) field.ErrorList {
	if len(matches) > maxMatches {
		return field.ErrorList{field.TooMany(path, len(matches), maxMatches)}
	}
	var errs field.ErrorList
	for i := range matches {
		mp := path.Index(i)
		m := &matches[i]
		if m.Method != nil {
			errs = append(errs, grpcMethodMatch(mp.Child("method"), m.Method)...)
		}
		if len(m.Headers) > maxHeaders {
			errs = append(errs, field.TooMany(mp.Child("headers"), len(m.Headers), maxHeaders))
			continue
		}
		if len(m.Headers) == 0 {
			continue
		}
		p := mp.Child("headers")
		for j := range m.Headers {
			h := &m.Headers[j]
			hp := p.Index(j)
			if h.Type != nil {
				errs = append(errs, enum(hp, "type", *h.Type, enumGRPCHeaderMatchType)...)
			}
			errs = append(errs, strHeaderName.check(hp, "name", string(h.Name))...)
			errs = append(errs, strGRPCValue.check(hp, "value", h.Value)...)
			errs = append(errs, duplicateKey(p, j, m.Headers, func(h gwv1.GRPCHeaderMatch) string { return string(h.Name) })...)
		}
	}
	return errs
}

func grpcMethodMatch(path *field.Path, m *gwv1.GRPCMethodMatch) field.ErrorList {
	var errs field.ErrorList
	if m.Type != nil {
		errs = append(errs, enum(path, "type", *m.Type, enumGRPCMethodMatchType)...)
	}
	if m.Service != nil {
		errs = append(errs, strGRPCName.check(path, "service", *m.Service)...)
	}
	if m.Method != nil {
		errs = append(errs, strGRPCName.check(path, "method", *m.Method)...)
	}
	// The type defaults to Exact before the CEL rules run, so has(self.type)
	// always holds.
	if m.Service == nil && m.Method == nil {
		errs = append(errs, rule(path, typeObject, msgGRPCServiceOrMethod))
	}
	if deref(m.Type, gwv1.GRPCMethodMatchExact) != gwv1.GRPCMethodMatchExact {
		return errs
	}
	if m.Service != nil && !reGRPCService.MatchString(jsonString(*m.Service)) {
		errs = append(errs, rule(path, typeObject, msgGRPCServiceChars))
	}
	if m.Method != nil && !reGRPCMethod.MatchString(jsonString(*m.Method)) {
		errs = append(errs, rule(path, typeObject, msgGRPCMethodChars))
	}
	return errs
}

// GRPCRouteFilters validates a list of GRPCRoute filters, of a rule or of a
// backendRef: each filter, and that header modifiers are not repeated.
func GRPCRouteFilters(path *field.Path, filters []gwv1.GRPCRouteFilter) field.ErrorList {
	if len(filters) > maxFilters {
		return field.ErrorList{field.TooMany(path, len(filters), maxFilters)}
	}
	var errs field.ErrorList
	var requestHeaders, responseHeaders int
	for i := range filters {
		f := &filters[i]
		p := path.Index(i)
		errs = append(errs, enum(p, "type", f.Type, enumGRPCFilterType)...)
		t := string(f.Type)
		errs = append(errs, filterField(p, f.RequestHeaderModifier != nil, t, filterRequestHeaderModifier, string(gwv1.GRPCRouteFilterRequestHeaderModifier))...)
		errs = append(errs, filterField(p, f.ResponseHeaderModifier != nil, t, filterResponseHeaderModifier, string(gwv1.GRPCRouteFilterResponseHeaderModifier))...)
		errs = append(errs, filterField(p, f.RequestMirror != nil, t, filterRequestMirror, string(gwv1.GRPCRouteFilterRequestMirror))...)
		errs = append(errs, filterField(p, f.ExtensionRef != nil, t, filterExtensionRef, string(gwv1.GRPCRouteFilterExtensionRef))...)
		if f.RequestHeaderModifier != nil {
			errs = append(errs, httpHeaderFilter(p.Child(filterRequestHeaderModifier), f.RequestHeaderModifier)...)
		}
		if f.ResponseHeaderModifier != nil {
			errs = append(errs, httpHeaderFilter(p.Child(filterResponseHeaderModifier), f.ResponseHeaderModifier)...)
		}
		if f.RequestMirror != nil {
			errs = append(errs, requestMirror(p.Child(filterRequestMirror), f.RequestMirror)...)
		}
		if f.ExtensionRef != nil {
			errs = append(errs, localObjectReference(p.Child(filterExtensionRef), f.ExtensionRef)...)
		}
		switch f.Type { //nolint:exhaustive // Only these two cannot be repeated.
		case gwv1.GRPCRouteFilterRequestHeaderModifier:
			requestHeaders++
		case gwv1.GRPCRouteFilterResponseHeaderModifier:
			responseHeaders++
		}
	}
	if requestHeaders > 1 {
		errs = append(errs, rule(path, typeArray, filterRepeated(string(gwv1.GRPCRouteFilterRequestHeaderModifier))))
	}
	if responseHeaders > 1 {
		errs = append(errs, rule(path, typeArray, filterRepeated(string(gwv1.GRPCRouteFilterResponseHeaderModifier))))
	}
	return errs
}
