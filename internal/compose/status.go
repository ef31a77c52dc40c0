package compose

import (
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// RouteStatus is status.route: the composed route and its parents' verdicts.
func RouteStatus(cr *xr.CanaryRoute, obs route.Observation) xr.RouteStatus {
	s := xr.RouteStatus{Kind: cr.Spec.Kind, Name: cr.RouteName, Namespace: cr.RouteNamespace}
	for _, v := range obs.Parents {
		p := xr.ParentStatus{
			Name:         string(v.Ref.Name),
			Namespace:    string(ptr.Deref(v.Ref.Namespace, "")),
			SectionName:  string(ptr.Deref(v.Ref.SectionName, "")),
			Port:         ptr.Deref(v.Ref.Port, 0),
			Accepted:     v.Accepted,
			ResolvedRefs: v.ResolvedRefs,
		}
		if !v.Ready() {
			p.Reason = v.Reason
		}
		s.Parents = append(s.Parents, p)
	}
	return s
}
