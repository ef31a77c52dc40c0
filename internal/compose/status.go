package compose

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// RouteStatus is status.route: the composed route and its parents' verdicts.
func RouteStatus(cr *xr.CanaryRoute, obs route.Observation) xr.RouteStatus {
	s := xr.RouteStatus{Kind: cr.Spec.Kind, Name: cr.ComposedRouteName(), Namespace: cr.RouteNamespace}
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

// ServedVersions are the versions the plan composes, as status.route
// records them for the runs after it: read from the schemas now, or as an
// earlier run read them; nil when no schemas told them, or when the
// Input's overrides chose them (a record would outlive the override).
func (p *Plan) ServedVersions(now time.Time) *xr.ServedVersions {
	v := p.Versions
	if v.Overridden {
		return nil
	}
	var checked time.Time
	switch v.Source {
	case served.SourceSchemas:
		checked = now
	case served.SourceStatus:
		checked = v.CheckedAt
	default:
		return nil
	}
	out := &xr.ServedVersions{Route: string(v.Route), CheckedAt: metav1.Time{Time: checked.UTC().Truncate(time.Second)}}
	if p.Need.Grants {
		out.ReferenceGrant = string(v.Grant)
	}
	if p.Need.BackendTLS != nil {
		out.BackendTLSPolicy = v.TLS
	}
	return out
}

// RecordedStatus is the status of this plan's route as an earlier run
// recorded it: status.route, or its entry of status.routes (by kind and
// name); nil for none.
func (r *Resolved) RecordedStatus() *xr.RouteStatus {
	cr := r.CR
	if cr.Entry == "" {
		return cr.Status.Route
	}
	for i, s := range cr.Status.Routes {
		if s.Kind == cr.Spec.Kind && s.Name == cr.ComposedRouteName() {
			return &cr.Status.Routes[i]
		}
	}
	return nil
}

// Recorded are the versions status.route records, as an earlier run read
// them from the cluster's schemas; nil for none.
func Recorded(prev *xr.RouteStatus) *served.Recorded {
	if prev == nil || prev.Versions == nil {
		return nil
	}
	v := prev.Versions
	return &served.Recorded{Kind: string(prev.Kind), Route: v.Route, Grant: v.ReferenceGrant, TLS: v.BackendTLSPolicy, CheckedAt: v.CheckedAt.Time}
}

// ObservedVersions are the apiVersions at which the objects that a run
// composes are observed, by their keys: the route of the spec's kind, the
// grants and the BackendTLSPolicies.
func (r *Resolved) ObservedVersions(apiVersions map[names.Key]string) served.Observed {
	var o served.Observed
	for _, k := range slices.Sorted(maps.Keys(apiVersions)) {
		switch {
		case k == r.RouteKey():
			o.Route = apiVersions[k]
		case k.IsGrant():
			o.Grants = append(o.Grants, apiVersions[k])
		case k.IsBackendTLSPolicy():
			o.TLS = append(o.TLS, apiVersions[k])
		}
	}
	return o
}
