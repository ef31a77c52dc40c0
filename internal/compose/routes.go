package compose

import (
	"reflect"
	"slices"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Several routes, one rollout (spec.routes): each route has a plan of its
// own, made from its view of the CanaryRoute (xr.CanaryRoute.Views) as a
// single route's is. Together makes them one: the first plan answers for
// the rollout (the release, the analysis, the metrics) and composes what
// the routes share (the proxy Services, with a port per route port, and
// their BackendTLSPolicies); each plan composes its route, its preview
// route and its ReferenceGrants. The rollout moves every route together:
// a step is at its weights once every route carries them, and the canary
// leaves the routes all at once (a decision is one weight for all).

// Together makes the plans of a CanaryRoute's routes, in spec.routes'
// order, one plan: the first, which lists the others (see Routes). One
// plan is itself.
func Together(plans []*Plan) *Plan {
	if len(plans) == 1 {
		return plans[0]
	}
	for i, p := range plans {
		p.set, p.routeOnly = plans, i > 0
	}
	return plans[0]
}

// Routes are the plans of the CanaryRoute's routes, this one first: this
// plan alone for a single route.
func (p *Plan) Routes() []*Plan {
	if p.set == nil {
		return []*Plan{p} // A plan made by hand.
	}
	return p.set
}

// planFor is the plan that composes the route or preview route of a key:
// the plan itself when no other does.
func (p *Plan) planFor(k names.Key) *Plan {
	for _, q := range p.Routes() {
		if q.RouteKey() == k || q.PreviewKey() == k {
			return q
		}
	}
	return p
}

// describe says which route a message is about, with several routes.
func (p *Plan) describe(msg string) string {
	if len(p.set) < 2 {
		return msg
	}
	return "route " + p.CR.ComposedRouteName() + ": " + msg
}

// RoutesAtStep tells the rollout engine whether every route carries a
// step's weights and every parent of every route accepted it (see
// RouteAtStep); obs are the routes' observations, in Routes' order.
func (p *Plan) RoutesAtStep(obs []route.Observation) func(step int32, weight percent.Percent) (bool, string) {
	routes := p.Routes()
	if len(routes) == 1 {
		return p.RouteAtStep(obs[0])
	}
	at := make([]func(int32, percent.Percent) (bool, string), len(routes))
	for i, q := range routes {
		at[i] = q.RouteAtStep(obs[i])
	}
	return func(step int32, weight percent.Percent) (bool, string) {
		for i, f := range at {
			if ok, why := f(step, weight); !ok {
				return false, routes[i].describe(why)
			}
		}
		return true, ""
	}
}

// RoutesWithoutCanary tells the release loop whether no route, and no
// preview route, sends the canary anything (see RouteWithoutCanary).
func (p *Plan) RoutesWithoutCanary(obs, previews []route.Observation) func() (bool, string) {
	routes := p.Routes()
	if len(routes) == 1 {
		return p.RouteWithoutCanary(obs[0], previews[0])
	}
	without := make([]func() (bool, string), len(routes))
	for i, q := range routes {
		without[i] = q.RouteWithoutCanary(obs[i], previews[i])
	}
	return func() (bool, string) {
		for i, f := range without {
			if ok, why := f(); !ok {
				return false, routes[i].describe(why)
			}
		}
		return true, ""
	}
}

// AnyMissing reports whether a route has not been created yet.
func AnyMissing(obs []route.Observation) bool {
	return slices.ContainsFunc(obs, func(o route.Observation) bool { return !o.Exists })
}

// NoneObserved reports whether no route of the rollout is observed: then a
// paused rollout has nothing composed to hold (rollout.Input.RouteMissing).
// While any is, the hold re-emits what was composed, and a route added in
// the same edit waits for the pause to end: paused, nothing moves.
func NoneObserved(obs []route.Observation) bool {
	return !slices.ContainsFunc(obs, func(o route.Observation) bool { return o.Exists })
}

// BuildRoutes builds every route at a weight (see BuildRoute); the errors
// name the CanaryRoute's fields, an entry of spec.routes by its index.
func (p *Plan) BuildRoutes(weight percent.Percent, active bool, step *int32) ([]runtime.Object, field.ErrorList) {
	routes := p.Routes()
	built := make([]runtime.Object, len(routes))
	errs := make(field.ErrorList, 0, len(routes))
	for i, q := range routes {
		obj, buildErrs := q.BuildRoute(weight, active, step)
		built[i] = obj
		errs = append(errs, q.CR.RepathErrors(buildErrs)...)
	}
	return built, errs
}

// RoutesObjects are what a run composes for the engine's decision over
// every route (see Objects), and the canary backends it records: each
// route's objects, the shared ones with the first. A hold re-emits what
// was observed of every route at once, each route ready as its own
// parents say.
func (p *Plan) RoutesObjects(built []runtime.Object, obs []route.Observation, d rollout.Decision, observed map[names.Key]map[string]any, previews []PreviewState) ([]Object, []xr.BackendID, rollout.Decision, error) {
	routes := p.Routes()
	if len(routes) == 1 {
		return p.Objects(built[0], obs[0], d, observed, previews[0])
	}
	if d.HoldPrevious {
		out, canary, d, err := p.Objects(built[0], obs[0], d, observed, previews[0])
		if err != nil {
			return nil, nil, d, err
		}
		for i, q := range routes {
			for j := range out {
				if k := out[j].Key; k == q.RouteKey() {
					out[j].Ready = RouteReady(q.CR, obs[i])
				} else if k == q.PreviewKey() {
					out[j].Ready = RouteReady(q.CR, previews[i].Observed)
				}
			}
		}
		return out, canary, d, nil
	}
	var out []Object
	var canary []xr.BackendID
	for i, q := range routes {
		objects, backends, _, err := q.Objects(built[i], obs[i], d, observed, previews[i])
		if err != nil {
			return nil, nil, d, err
		}
		out = append(out, objects...)
		for _, b := range backends {
			if !slices.ContainsFunc(canary, func(c xr.BackendID) bool { return reflect.DeepEqual(c, b) }) {
				canary = append(canary, b)
			}
		}
	}
	return out, canary, d, nil
}

// AllGrants are the grants of every route, and the references the policy
// refused on any: a canary refused on one route is held at 0% on all.
func (p *Plan) AllGrants() grant.Result {
	routes := p.Routes()
	if len(routes) == 1 {
		return p.Grants
	}
	var all grant.Result
	for _, q := range routes {
		all.Grants = append(all.Grants, q.Grants.Grants...)
		// A grant lets every route of its kind in the namespace in: the
		// one the platform team must create for the first route serves
		// the others of that kind with the same backends, and is asked
		// for once.
		for _, g := range q.Grants.NotComposable {
			if !slices.ContainsFunc(all.NotComposable, func(h *gwv1.ReferenceGrant) bool {
				return h.Namespace == g.Namespace && reflect.DeepEqual(h.Spec, g.Spec)
			}) {
				all.NotComposable = append(all.NotComposable, g)
			}
		}
		for _, r := range q.Grants.Refused {
			if !slices.ContainsFunc(all.Refused, func(f grant.Refusal) bool { return f.Role == r.Role }) {
				all.Refused = append(all.Refused, r)
			}
		}
	}
	return all
}

// CanaryRefusalOfAll is why the policy refused the canary on any route,
// or "".
func (p *Plan) CanaryRefusalOfAll() string {
	for _, f := range p.AllGrants().Refused {
		if f.Role == xr.RoleCanary {
			return f.Reason
		}
	}
	return ""
}

// TogetherObserved is what the routes' observations say together, for the XR's
// conditions: every route exists, and the parents of every route, in
// Routes' order.
func TogetherObserved(obs []route.Observation) route.Observation {
	if len(obs) == 1 {
		return obs[0]
	}
	all := route.Observation{Exists: !AnyMissing(obs)}
	for _, o := range obs {
		all.Parents = append(all.Parents, o.Parents...)
	}
	return all
}

// RoutesConditions are the XR's conditions over every route (see
// Conditions): with several routes, RouteAccepted names the first route
// that is not created yet or that a parent does not accept.
func (p *Plan) RoutesConditions(prior map[xpv2.ConditionType]xpv2.Condition, obs []route.Observation, grants grant.Result, d rollout.Decision) ([]xr.Condition, []Warning) {
	conditions, warnings := Conditions(prior, p.CR, TogetherObserved(obs), grants, d)
	routes := p.Routes()
	if len(routes) < 2 {
		return conditions, warnings
	}
	i := slices.IndexFunc(obs, func(o route.Observation) bool {
		_, held := o.FirstHold()
		return !o.Exists || held
	})
	if i < 0 {
		return conditions, warnings
	}
	for j, c := range conditions {
		if c.Type == ConditionRouteAccepted && c.Status == metav1.ConditionFalse {
			conditions[j].Message = fielderr.Truncate(routes[i].describe(c.Message), xr.MaxStatusMessage, fielderr.Characters, nil)
		}
	}
	return conditions, warnings
}

// RoutesStatus is status.routes: each route and its parents' verdicts,
// with the versions its plan composes.
func (p *Plan) RoutesStatus(obs []route.Observation, now func(q *Plan) *xr.ServedVersions) []xr.RouteStatus {
	routes := p.Routes()
	out := make([]xr.RouteStatus, len(routes))
	for i, q := range routes {
		out[i] = RouteStatus(q.CR, obs[i])
		out[i].Versions = now(q)
	}
	return out
}
