package route

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func buildHTTPRoute(p Params) (*gwv1.HTTPRoute, field.ErrorList) {
	var errs field.ErrorList
	rules := p.Rules
	if len(rules) == 0 {
		rules = []xr.Rule{{}}
	}

	canaryFilters, filterErrs := sideHTTPFilters(p, xr.RoleCanary)
	errs = append(errs, filterErrs...)
	primaryFilters, filterErrs := sideHTTPFilters(p, xr.RolePrimary)
	errs = append(errs, filterErrs...)
	filtersOf := map[xr.Role][]gwv1.HTTPRouteFilter{
		xr.RolePrimary: primaryFilters,
		xr.RoleCanary:  canaryFilters,
	}
	backends := func(bs []weightedBackend) []gwv1.HTTPBackendRef {
		out := make([]gwv1.HTTPBackendRef, 0, len(bs))
		for _, b := range bs {
			out = append(out, gwv1.HTTPBackendRef{BackendRef: b.ref, Filters: deepCopy(filtersOf[b.role])})
		}
		return out
	}

	cookies := p.Affinity != nil && !p.Affinity.Persistence
	if cookies {
		errs = append(errs, cookieMatchCollisions(p.abPath(), p.ABHTTPMatches)...)
		errs = append(errs, cookieMatchCollisions(p.mirrorPath(), p.MirrorHTTPMatches)...)
	}

	out := make([]gwv1.HTTPRouteRule, 0, len(rules))
	for i, r := range rules {
		path := field.NewPath("spec", "rules")
		if len(p.Rules) > 0 {
			path = path.Index(i)
		}
		if r.Own() {
			// A rule of its own is composed as written: the rollout never
			// weighs it, and no companion rule or mirror joins it.
			out = append(out, gwv1.HTTPRouteRule{
				Name:        r.Name,
				Matches:     deepCopy(r.HTTPMatches),
				Filters:     deepCopy(r.HTTPFilters),
				BackendRefs: deepCopy(r.HTTPBackendRefs),
				Timeouts:    r.Timeouts.DeepCopy(),
				Retry:       r.Retry.DeepCopy(),
			})
			continue
		}
		matches := r.HTTPMatches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{
				Type:  ptr.To(gwv1.PathMatchPathPrefix),
				Value: ptr.To(defaultPathPrefix),
			}}}
		}
		if cookies {
			errs = append(errs, cookieMatchCollisions(path.Child("matches"), matches)...)
			errs = append(errs, ruleSetCookieCollisions(path.Child("filters"), r.HTTPFilters, p.Affinity)...)
		}

		// Companion rules come before their weighted rule: they are more
		// specific anyway, and on a tie Gateway API picks the first rule.
		companions, companionErrs := httpCompanions(p, r, path, matches, backends)
		out = append(out, companions...)
		errs = append(errs, companionErrs...)

		filters := deepCopy(r.HTTPFilters)
		if p.mirrorAdded() {
			filters = append(filters, gwv1.HTTPRouteFilter{
				Type:          gwv1.HTTPRouteFilterRequestMirror,
				RequestMirror: mirrorFilter(p),
			})
		}
		out = append(out, gwv1.HTTPRouteRule{
			Name:               r.Name,
			Matches:            deepCopy(matches),
			Filters:            filters,
			BackendRefs:        backends(weighted(p)),
			Timeouts:           r.Timeouts.DeepCopy(),
			Retry:              r.Retry.DeepCopy(),
			SessionPersistence: sessionPersistence(p),
		})
	}
	errs = append(errs, ruleLimits(len(rules), len(out), matchCount(out, func(r gwv1.HTTPRouteRule) int { return len(r.Matches) }))...)

	return &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: string(xr.KindHTTPRoute)},
		ObjectMeta: objectMeta(p),
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: commonSpec(p),
			Hostnames:       append([]gwv1.Hostname(nil), p.Hostnames...),
			Rules:           out,
		},
	}, errs
}

// httpCompanions are the companion rules of an HTTPRoute's weighted rule,
// in the order of their intents (see companion.go); matches are the rule's,
// defaulted, and backends makes the backendRefs of a list of backends.
func httpCompanions(p Params, r xr.Rule, path *field.Path, matches []gwv1.HTTPRouteMatch, backends func([]weightedBackend) []gwv1.HTTPBackendRef) ([]gwv1.HTTPRouteRule, field.ErrorList) {
	var errs field.ErrorList
	var ab, mirrored []gwv1.HTTPRouteMatch
	if p.abCompanion() {
		var e field.ErrorList
		ab, e = combineHTTPMatches(path.Child("matches"), matches, p.ABHTTPMatches, p.abPath())
		errs = append(errs, e...)
	}
	if p.mirrorCompanion() {
		var e field.ErrorList
		mirrored, e = combineHTTPMatches(path.Child("matches"), matches, p.MirrorHTTPMatches, p.mirrorPath())
		errs = append(errs, e...)
	}
	var crossing crossed[gwv1.HTTPRouteMatch]
	if len(errs) == 0 {
		crossing, errs = cross(httpOps, p.httpCrossInput(matches, ab, mirrored))
	}
	companion := func(suffix, what string, ms []gwv1.HTTPRouteMatch, bs []weightedBackend, mirror bool) gwv1.HTTPRouteRule {
		beyond := 0
		if suffix == companionABSuffix {
			beyond = crossing.abBeyond
		}
		ms, e := capMatches(path.Child("matches"), what, ms, beyond)
		if e != nil {
			errs = append(errs, e)
		}
		filters := deepCopy(r.HTTPFilters)
		if mirror {
			filters = append(filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: mirrorFilter(p)})
		}
		return gwv1.HTTPRouteRule{
			Name:        companionName(r.Name, suffix),
			Matches:     ms,
			Filters:     filters,
			BackendRefs: backends(bs),
			Timeouts:    r.Timeouts.DeepCopy(),
			Retry:       r.Retry.DeepCopy(),
		}
	}
	var out []gwv1.HTTPRouteRule
	if p.abCompanion() {
		out = append(out, companion(companionABSuffix, "A/B", append(ab, crossing.ab...), canaryOnly(p), false))
	}
	if p.sessionCompanion() {
		ms := append(withCookieMatch(matches, p.Affinity.CookieName, p.Affinity.Value), crossing.session...)
		out = append(out, companion(companionStickiness, "session", ms, canaryOnly(p), false))
	}
	if p.primaryCompanion() && p.mirrorCompanion() {
		out = append(out, companion(companionPrimaryMirror, "primary session mirror", crossing.primaryMirror, primaryOnly(p), true))
	}
	if p.primaryCompanion() {
		ms := withCookieMatch(matches, p.Affinity.PrimaryCookieName, p.Affinity.PrimaryValue)
		out = append(out, companion(companionPrimary, "primary session", ms, primaryOnly(p), p.mirrorAdded()))
	}
	if p.mirrorCompanion() {
		rule := companion(companionMirror, "mirror", mirrored, weighted(p), true)
		rule.SessionPersistence = sessionPersistence(p)
		out = append(out, rule)
	}
	return out, errs
}

// httpCrossInput is what the crossed matches of an HTTPRoute rule's
// companions are made of.
func (p Params) httpCrossInput(matches, ab, mirrored []gwv1.HTTPRouteMatch) crossInput[gwv1.HTTPRouteMatch] {
	in := crossInput[gwv1.HTTPRouteMatch]{
		base: matches, ab: ab, nAB: len(p.ABHTTPMatches), abPath: p.abPath(), mirrorTo: p.mirrorPath(),
	}
	if mirrored != nil {
		in.mirror, in.nMirror = mirrored, len(p.MirrorHTTPMatches)
	}
	if p.sessionCompanion() {
		in.canaryCookie = func(m gwv1.HTTPRouteMatch) gwv1.HTTPRouteMatch {
			return withCookieMatch([]gwv1.HTTPRouteMatch{m}, p.Affinity.CookieName, p.Affinity.Value)[0]
		}
	}
	if p.primaryCompanion() {
		in.primaryCookie = func(m gwv1.HTTPRouteMatch) gwv1.HTTPRouteMatch {
			return withCookieMatch([]gwv1.HTTPRouteMatch{m}, p.Affinity.PrimaryCookieName, p.Affinity.PrimaryValue)[0]
		}
	}
	return in
}

// capMatches keeps a companion rule within the Gateway API's matches per
// rule, saying why it has so many: the crossed matches count.
func capMatches[M any](path *field.Path, what string, ms []M, beyond int) ([]M, *field.Error) {
	if len(ms)+beyond <= maxMatchesPerRule {
		return ms, nil
	}
	return ms[:min(len(ms), maxMatchesPerRule)], tooMany(path, "matches in a rule's "+what+" companion", len(ms)+beyond, maxMatchesPerRule,
		": the rule's matches combined with its conditions, and the matches it carries for the requests that meet the conditions of another companion rule too")
}

// canaryOnly is the single backend of a companion rule.
func canaryOnly(p Params) []weightedBackend {
	return []weightedBackend{{role: xr.RoleCanary, ref: backendRef(p.Canary, 1)}}
}

// primaryOnly is the single backend of the primary's session companion.
func primaryOnly(p Params) []weightedBackend {
	return []weightedBackend{{role: xr.RolePrimary, ref: backendRef(p.Primary, 1)}}
}

func mirrorFilter(p Params) *gwv1.HTTPRequestMirrorFilter {
	return &gwv1.HTTPRequestMirrorFilter{
		BackendRef: *p.Canary.Ref.DeepCopy(),
		Percent:    ptr.To(*p.MirrorPercent),
	}
}

// sideHTTPFilters returns a side's own filters, with its session cookie
// merged into its ResponseHeaderModifier while affinity applies: the
// canary's cookie, or with primaryCookieName the primary's. Gateway API
// allows one ResponseHeaderModifier per backendRef, so the cookie joins the
// user's filter instead of adding a second one. The collision check runs
// whenever the side has a cookie configured, so a spec that is valid at
// weight 0 stays valid when the rollout starts.
func sideHTTPFilters(p Params, role xr.Role) ([]gwv1.HTTPRouteFilter, field.ErrorList) {
	side, name, value, active := p.Canary, "", "", p.sessionCompanion()
	if a := p.Affinity; a != nil && !a.Persistence {
		name, value = a.CookieName, a.Value
	}
	if role == xr.RolePrimary {
		side, name, value, active = p.Primary, "", "", p.primaryCompanion()
		if a := p.Affinity; a != nil && !a.Persistence {
			name, value = a.PrimaryCookieName, a.PrimaryValue
		}
	}
	filters := deepCopy(side.HTTPFilters)
	if name == "" {
		return filters, nil
	}
	path := field.NewPath("spec", string(role), "filters")
	var modifier *gwv1.HTTPHeaderFilter
	var errs field.ErrorList
	for i := range filters {
		f := &filters[i]
		if f.Type != gwv1.HTTPRouteFilterResponseHeaderModifier || f.ResponseHeaderModifier == nil {
			continue
		}
		modifier = f.ResponseHeaderModifier
		errs = append(errs, setCookieCollisions(path.Index(i).Child("responseHeaderModifier"), role, modifier)...)
	}
	if len(errs) > 0 || !active {
		return filters, errs
	}

	cookie := gwv1.HTTPHeader{Name: setCookieHeader, Value: p.Affinity.setCookie(name, value)}
	if modifier != nil {
		modifier.Add = append(modifier.Add, cookie)
		return filters, nil
	}
	return append(filters, gwv1.HTTPRouteFilter{
		Type:                   gwv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{cookie}},
	}), nil
}

// combineHTTPMatches adds each A/B (or mirror) match's header, query and
// method conditions to each of the rule's matches; abPath is where those
// matches come from.
func combineHTTPMatches(path *field.Path, rule, ab []gwv1.HTTPRouteMatch, abPath *field.Path) ([]gwv1.HTTPRouteMatch, field.ErrorList) {
	return combine(path, rule, ab, func(i, j int, m *gwv1.HTTPRouteMatch, a gwv1.HTTPRouteMatch) field.ErrorList {
		var errs, e field.ErrorList
		m.Headers, e = appendConditions(m.Headers, a.Headers, func(h gwv1.HTTPHeaderMatch) string { return string(h.Name) }, true,
			abPath.Index(j).Child("headers"), path.Index(i).Child("headers"))
		errs = append(errs, e...)
		m.QueryParams, e = appendConditions(m.QueryParams, a.QueryParams, func(q gwv1.HTTPQueryParamMatch) string { return string(q.Name) }, false,
			abPath.Index(j).Child("queryParams"), path.Index(i).Child("queryParams"))
		errs = append(errs, e...)
		if a.Method != nil {
			if m.Method != nil && *m.Method != *a.Method {
				errs = append(errs, field.Invalid(abPath.Index(j).Child("method"), *a.Method,
					fmt.Sprintf("contradicts method %s of %s: the companion rule would match nothing", *m.Method, path.Index(i))))
			}
			m.Method = ptr.To(*a.Method)
		}
		return errs
	})
}

// ruleLimits checks the route-wide limits, saying where the extra rules come
// from when companion rules pushed the route over.
func ruleLimits(userRules, rules, matches int) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "rules")
	why := ""
	if rules > userRules {
		why = fmt.Sprintf(": the %d rules of the spec gain %d A/B, session or mirror companion rules while the rollout is active", userRules, rules-userRules)
	}
	if rules > maxRules {
		errs = append(errs, tooMany(path, "rules", rules, maxRules, why))
	}
	if matches > maxMatchesInRoute {
		errs = append(errs, tooMany(path, "matches across its rules", matches, maxMatchesInRoute, why))
	}
	return errs
}
