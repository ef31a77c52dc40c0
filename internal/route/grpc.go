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
		path := field.NewPath("spec", "rules").Index(i)
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
		if p.abCompanion() {
			ab, abErrs := combineGRPCMatches(path.Child("matches"), r.GRPCMatches, p.ABGRPCMatches, p.abPath())
			errs = append(errs, abErrs...)
			out = append(out, gwv1.GRPCRouteRule{
				Name:        companionName(r.Name, companionABSuffix),
				Matches:     ab,
				Filters:     deepCopy(r.GRPCFilters),
				BackendRefs: backends(canaryOnly(p)),
			})
		}

		if p.mirrorCompanion() {
			mirrored, mirrorErrs := combineGRPCMatches(path.Child("matches"), r.GRPCMatches, p.MirrorGRPCMatches, p.mirrorPath())
			errs = append(errs, mirrorErrs...)
			out = append(out, gwv1.GRPCRouteRule{
				Name:    companionName(r.Name, companionMirror),
				Matches: mirrored,
				Filters: append(deepCopy(r.GRPCFilters), gwv1.GRPCRouteFilter{
					Type:          gwv1.GRPCRouteFilterRequestMirror,
					RequestMirror: mirrorFilter(p),
				}),
				BackendRefs: backends(weighted(p)),
			})
		}

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

// combineGRPCMatches adds the A/B header and method conditions to each of
// the rule's matches. A rule without matches matches every request, so its
// companion matches the A/B matches alone.
func combineGRPCMatches(path *field.Path, rule, ab []gwv1.GRPCRouteMatch, abPath *field.Path) ([]gwv1.GRPCRouteMatch, field.ErrorList) {
	if len(rule) == 0 {
		return deepCopy(ab), nil
	}
	return combine(path, rule, ab, func(i, j int, m *gwv1.GRPCRouteMatch, a gwv1.GRPCRouteMatch) field.ErrorList {
		var errs field.ErrorList
		m.Headers, errs = appendConditions(m.Headers, a.Headers, func(h gwv1.GRPCHeaderMatch) string { return string(h.Name) }, true,
			abPath.Index(j).Child("headers"), path.Index(i).Child("headers"))
		if a.Method != nil {
			if m.Method != nil && !equalGRPCMethod(*m.Method, *a.Method) {
				errs = append(errs, field.Invalid(abPath.Index(j).Child("method"), a.Method,
					fmt.Sprintf("contradicts the method match of %s: the companion rule would match nothing", path.Index(i))))
			}
			m.Method = a.Method.DeepCopy()
		}
		return errs
	})
}

func equalGRPCMethod(a, b gwv1.GRPCMethodMatch) bool {
	return ptr.Deref(a.Type, gwv1.GRPCMethodMatchExact) == ptr.Deref(b.Type, gwv1.GRPCMethodMatchExact) &&
		ptr.Deref(a.Service, "") == ptr.Deref(b.Service, "") &&
		ptr.Deref(a.Method, "") == ptr.Deref(b.Method, "")
}
