package route

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// buildGRPCRoute composes a GRPCRoute: the HTTPRoute's shape without
// timeouts, retries or cookies of the function's (gRPC clients rarely keep
// cookies; the gateway's own session persistence works), with
// GRPCRouteMatch and the GRPCRoute filter types. Older releases served
// GRPCRoute as v1alpha2, of the same schema.
func buildGRPCRoute(p Params) (runtime.Object, field.ErrorList) {
	var errs field.ErrorList
	rules := p.Rules
	if len(rules) == 0 {
		rules = []xr.Rule{{}}
	}

	filtersOf := map[xr.Role][]gwv1.GRPCRouteFilter{
		xr.RolePrimary: p.Primary.GRPCFilters,
		xr.RoleCanary:  p.Canary.GRPCFilters,
	}
	backends := func(bs []weightedBackend) []gwv1.GRPCBackendRef {
		out := make([]gwv1.GRPCBackendRef, 0, len(bs))
		for _, b := range bs {
			out = append(out, gwv1.GRPCBackendRef{BackendRef: b.ref, Filters: deepCopy(filtersOf[b.role])})
		}
		return out
	}

	out := make([]gwv1.GRPCRouteRule, 0, len(rules))
	for i, r := range rules {
		path := field.NewPath("spec", "rules")
		if len(p.Rules) > 0 {
			path = path.Index(i)
		}
		if r.Own() {
			// A rule of its own is composed as written.
			out = append(out, gwv1.GRPCRouteRule{
				Name:        r.Name,
				Matches:     deepCopy(r.GRPCMatches),
				Filters:     deepCopy(r.GRPCFilters),
				BackendRefs: deepCopy(r.GRPCBackendRefs),
			})
			continue
		}
		// Companion rules come before their weighted rule, as an
		// HTTPRoute's do.
		companions, companionErrs := grpcCompanions(p, r, path, backends)
		out = append(out, companions...)
		errs = append(errs, companionErrs...)

		filters := deepCopy(r.GRPCFilters)
		if p.mirrorAdded() {
			filters = append(filters, gwv1.GRPCRouteFilter{
				Type:          gwv1.GRPCRouteFilterRequestMirror,
				RequestMirror: mirrorFilter(p),
			})
		}
		out = append(out, gwv1.GRPCRouteRule{
			Name:               r.Name,
			Matches:            deepCopy(r.GRPCMatches),
			Filters:            filters,
			BackendRefs:        backends(weighted(p)),
			SessionPersistence: sessionPersistence(p),
		})
	}
	errs = append(errs, ruleLimits(len(rules), len(out), matchCount(out, func(r gwv1.GRPCRouteRule) int { return len(r.Matches) }))...)

	route := &gwv1.GRPCRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: string(xr.KindGRPCRoute)},
		ObjectMeta: objectMeta(p),
		Spec: gwv1.GRPCRouteSpec{
			CommonRouteSpec: commonSpec(p),
			Hostnames:       append([]gwv1.Hostname(nil), p.Hostnames...),
			Rules:           out,
		},
	}
	if p.Version != v1beta1.RouteV1Alpha2 {
		return route, errs
	}
	old := gwv1alpha2.GRPCRoute(*route)
	old.APIVersion = gwv1alpha2.GroupVersion.String()
	return &old, errs
}

// grpcCompanions are the companion rules of a GRPCRoute's weighted rule,
// in the order of their intents (see companion.go): the A/B and the mirror
// companions, as a GRPCRoute has no cookies of the function's. backends
// makes the backendRefs of a list of backends.
func grpcCompanions(p Params, r xr.Rule, path *field.Path, backends func([]weightedBackend) []gwv1.GRPCBackendRef) ([]gwv1.GRPCRouteRule, field.ErrorList) {
	var errs field.ErrorList
	var ab, mirrored []gwv1.GRPCRouteMatch
	if p.abCompanion() {
		var e field.ErrorList
		ab, e = combineGRPCMatches(path.Child("matches"), r.GRPCMatches, p.ABGRPCMatches, p.abPath())
		errs = append(errs, e...)
	}
	if p.mirrorCompanion() {
		var e field.ErrorList
		mirrored, e = combineGRPCMatches(path.Child("matches"), r.GRPCMatches, p.MirrorGRPCMatches, p.mirrorPath())
		errs = append(errs, e...)
	}
	// Without cookies of the function's, only an A/B and a mirror companion
	// together have matches to cross.
	var crossing crossed[gwv1.GRPCRouteMatch]
	if len(errs) == 0 && ab != nil && mirrored != nil {
		crossing, errs = cross(grpcOps, p.grpcCrossInput(r.GRPCMatches, ab, mirrored))
	}
	companion := func(suffix, what string, ms []gwv1.GRPCRouteMatch, bs []weightedBackend, mirror bool) gwv1.GRPCRouteRule {
		beyond := 0
		if suffix == companionABSuffix {
			beyond = crossing.abBeyond
		}
		ms, e := capMatches(path.Child("matches"), what, ms, beyond)
		if e != nil {
			errs = append(errs, e)
		}
		filters := deepCopy(r.GRPCFilters)
		if mirror {
			filters = append(filters, gwv1.GRPCRouteFilter{Type: gwv1.GRPCRouteFilterRequestMirror, RequestMirror: mirrorFilter(p)})
		}
		return gwv1.GRPCRouteRule{
			Name:        companionName(r.Name, suffix),
			Matches:     ms,
			Filters:     filters,
			BackendRefs: backends(bs),
		}
	}
	var out []gwv1.GRPCRouteRule
	if p.abCompanion() {
		out = append(out, companion(companionABSuffix, "A/B", append(ab, crossing.ab...), canaryOnly(p), false))
	}
	if p.mirrorCompanion() {
		rule := companion(companionMirror, "mirror", mirrored, weighted(p), true)
		rule.SessionPersistence = sessionPersistence(p)
		out = append(out, rule)
	}
	return out, errs
}

// grpcCrossInput is what the crossed matches of a GRPCRoute rule's
// companions are made of. A rule without matches takes every request: one
// match without conditions.
func (p Params) grpcCrossInput(matches, ab, mirrored []gwv1.GRPCRouteMatch) crossInput[gwv1.GRPCRouteMatch] {
	if len(matches) == 0 {
		matches = []gwv1.GRPCRouteMatch{{}}
	}
	in := crossInput[gwv1.GRPCRouteMatch]{
		base: matches, ab: ab, nAB: len(p.ABGRPCMatches), abPath: p.abPath(), mirrorTo: p.mirrorPath(),
	}
	if mirrored != nil {
		in.mirror, in.nMirror = mirrored, len(p.MirrorGRPCMatches)
	}
	return in
}

// combineGRPCMatches adds the A/B header and method conditions to each of
// the rule's matches; an exact method match narrows the rule's (a service
// and a method of it). A rule without matches matches every request, so its
// companion matches the A/B matches alone.
func combineGRPCMatches(path *field.Path, rule, ab []gwv1.GRPCRouteMatch, abPath *field.Path) ([]gwv1.GRPCRouteMatch, field.ErrorList) {
	if len(rule) == 0 {
		return deepCopy(ab), nil
	}
	return combine(path, rule, ab, func(i, j int, m *gwv1.GRPCRouteMatch, a gwv1.GRPCRouteMatch) field.ErrorList {
		var errs field.ErrorList
		m.Headers, errs = appendConditions(m.Headers, a.Headers, func(h gwv1.GRPCHeaderMatch) string { return string(h.Name) }, true,
			abPath.Index(j).Child("headers"), path.Index(i).Child("headers"))
		switch {
		case a.Method == nil:
		case m.Method == nil:
			m.Method = a.Method.DeepCopy()
		default:
			// Exact matches narrow each other: a rule's service and an A/B
			// match's method make one match of both.
			method, ok, why := bothGRPCMethods(*m.Method, *a.Method)
			switch {
			case why != "":
				errs = append(errs, field.Invalid(abPath.Index(j).Child("method"), a.Method,
					fmt.Sprintf("cannot be joined with the method match of %s: %s", path.Index(i), why)))
			case !ok:
				errs = append(errs, field.Invalid(abPath.Index(j).Child("method"), a.Method,
					fmt.Sprintf("contradicts the method match of %s: the companion rule would match nothing", path.Index(i))))
			default:
				m.Method = method
			}
		}
		return errs
	})
}

func equalGRPCMethod(a, b gwv1.GRPCMethodMatch) bool {
	return ptr.Deref(a.Type, gwv1.GRPCMethodMatchExact) == ptr.Deref(b.Type, gwv1.GRPCMethodMatchExact) &&
		ptr.Deref(a.Service, "") == ptr.Deref(b.Service, "") &&
		ptr.Deref(a.Method, "") == ptr.Deref(b.Method, "")
}
