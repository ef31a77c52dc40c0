package compose

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/proxy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// A Target is an object that a run is about to compose, by identity.
type Target struct {
	Key        Key
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (t Target) String() string { return fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name) }

// Targets lists the objects that the run composes from the spec: the route,
// the proxy Services and the ReferenceGrants. They depend on the spec alone,
// so the requirements made of them come out identical on every call.
func (p *Plan) Targets() []Target {
	cr := p.CR
	version := string(p.Route.Version)
	if version == "" {
		version = gwv1.GroupVersion.Version
	}
	targets := []Target{{
		Key:        p.RouteKey(),
		APIVersion: gwv1.GroupName + "/" + version,
		Kind:       string(cr.Spec.Kind),
		Namespace:  cr.RouteNamespace,
		Name:       cr.RouteName,
	}}
	for _, s := range []struct {
		role xr.Role
		side xr.Side
	}{{xr.RolePrimary, cr.Spec.Primary}, {xr.RoleCanary, cr.Spec.Canary}} {
		if s.side.ComposesService() {
			targets = append(targets, Target{
				Key: serviceKey(s.role), APIVersion: "v1", Kind: "Service",
				Namespace: cr.RouteNamespace, Name: xr.ProxyServiceName(cr.RouteName, s.role),
			})
		}
		if tls := proxy.BackendTLSPolicy(cr, s.role, p.Versions.TLS); tls != nil {
			targets = append(targets, Target{
				Key: tlsKey(s.role), APIVersion: tls.APIVersion, Kind: tls.Kind,
				Namespace: tls.Namespace, Name: tls.Name,
			})
		}
	}
	for _, g := range p.Grants.Grants {
		targets = append(targets, Target{
			Key:        GrantKey(g.Namespace),
			APIVersion: g.APIVersion,
			Kind:       g.Kind,
			Namespace:  g.Namespace,
			Name:       g.Name,
		})
	}
	return targets
}

// RouteAtStep tells the rollout engine whether the gateway accepted the
// route that the plan composes at a step and weight (a step's own matches
// and mirror shape its route). It compares backends and weights rule by
// rule, not the whole spec: Crossplane patches the XR's status even when
// applying the route failed, so the route itself is the evidence.
func (p *Plan) RouteAtStep(obs route.Observation) func(step, weight int32) (bool, string) {
	return func(step, weight int32) (bool, string) {
		if !obs.Exists {
			return false, "the route has not been created yet"
		}
		params := p.RouteFor(&step)
		params.CanaryWeight, params.Active = weight, weight < 100
		want, errs := route.Build(params)
		if len(errs) > 0 || !obs.Carries(want, p.CR.RouteNamespace) {
			return false, "the route does not carry the step's weights yet"
		}
		if v, held := obs.FirstHold(); held {
			return false, DescribeHold(v)
		}
		return true, ""
	}
}

// BuildRoute builds the route at a weight, and checks the route it would be
// while the rollout is active too: A/B, session and mirror rules must not
// turn a valid spec into a rejected route halfway through a rollout. The
// errors name the CanaryRoute's fields.
func (p *Plan) BuildRoute(weight int32, active bool, step *int32) (runtime.Object, field.ErrorList) {
	params := p.RouteFor(step)
	params.CanaryWeight, params.Active = weight, active
	built, errs := route.Build(params)
	errs = append(errs, route.Admit(params, built)...)
	if len(errs) > 0 {
		return nil, errs
	}
	full := params
	full.Active = true
	full.CanaryWeight = max(params.CanaryWeight, 1)
	fullRoute, errs := route.Build(full)
	errs = append(errs, route.Admit(full, fullRoute)...)
	return built, errs
}

// CutCanary sends the canary nothing in a route built for an aborted or
// failed rollout (at weight 0): every canary backendRef, on any port, goes
// to weight 0 and every rule that sends only to the canary is removed, the
// rules of their own too, which BuildRoute composes as written. It is what
// an abort rescued from a broken spec does to the last composed route, so
// the two aborts compose the same route.
func (p *Plan) CutCanary(built runtime.Object) {
	if ids := p.CanaryBackends(); len(ids) > 0 {
		route.ZeroCanary(built, route.AnyPort(ids), p.CR.RouteNamespace)
	}
}

// An Object is a composed object, typed, under its key, with its readiness.
type Object struct {
	Key    Key
	Object runtime.Object
	Ready  bool
}

// Desired is what the run composes: the route, the proxy Services and the
// ReferenceGrants, each with its readiness. observed says which keys exist
// already. Anything the function composed on an earlier run and does not
// compose now is deleted by Crossplane: that is how a revoked grant, a side
// that stopped composing a Service, or the route of a previous kind go away.
func (p *Plan) Desired(built runtime.Object, obs route.Observation, observed func(Key) bool) []Object {
	cr := p.CR
	out := []Object{{Key: p.RouteKey(), Object: built, Ready: RouteReady(cr, obs)}}
	// Services and grants are ready once they exist: nothing reports on
	// them.
	for _, role := range []xr.Role{xr.RolePrimary, xr.RoleCanary} {
		if svc := proxy.Service(cr, role); svc != nil {
			out = append(out, Object{Key: serviceKey(role), Object: svc, Ready: observed(serviceKey(role))})
		}
		// A BackendTLSPolicy is ready once it exists, like its Service:
		// whether the gateway takes it shows in the route's ResolvedRefs.
		if tls := proxy.BackendTLSPolicy(cr, role, p.Versions.TLS); tls != nil {
			out = append(out, Object{Key: tlsKey(role), Object: tls, Ready: observed(tlsKey(role))})
		}
	}
	for _, g := range p.Grants.Grants {
		out = append(out, Object{Key: GrantKey(g.Namespace), Object: g, Ready: observed(GrantKey(g.Namespace))})
	}
	return out
}

// RouteReady says whether the route is ready: once every parent accepted it
// with all references resolved, or once it exists when the CanaryRoute does
// not wait for the gateway (requireAcceptedRoute: false).
func RouteReady(cr *xr.CanaryRoute, obs route.Observation) bool {
	if !cr.Spec.Traffic.RequireAcceptedRoute {
		return obs.Exists
	}
	return obs.AllReady()
}

// DescribeHold says in a few words why a parent does not accept the route,
// as the rollout message shows it.
func DescribeHold(v route.ParentVerdict) string {
	what := "has not accepted the route"
	if v.Accepted {
		what = "has not resolved the route's references"
	}
	return fmt.Sprintf("%s %s (%s)", v.Describe(), what, v.Reason)
}
