package compose

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/proxy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// errNoRuleLeft: cutting the canary would leave the route without a rule.
const errNoRuleLeft = "no rule would be left once the canary gets nothing"

// Targets lists the objects that the run composes from the spec: the route,
// the proxy Services and the ReferenceGrants. They depend on the spec alone,
// so the requirements made of them come out identical on every call.
func (p *Plan) Targets() []names.Target {
	cr := p.CR
	version := string(p.Route.Version)
	if version == "" {
		version = gwv1.GroupVersion.Version
	}
	targets := []names.Target{{
		Key:        p.RouteKey(),
		APIVersion: gwv1.GroupName + "/" + version,
		Kind:       string(cr.Spec.Kind),
		Namespace:  cr.RouteNamespace,
		Name:       cr.ComposedRouteName(),
	}}
	for _, s := range []struct {
		role xr.Role
		side xr.Side
	}{{xr.RolePrimary, cr.Spec.Primary}, {xr.RoleCanary, cr.Spec.Canary}} {
		if p.routeOnly {
			break // The first route's plan composes them.
		}
		if s.side.ComposesService() {
			targets = append(targets, names.Target{
				Key: serviceKey(s.role), APIVersion: "v1", Kind: kindService,
				Namespace: cr.RouteNamespace, Name: xr.ProxyServiceName(cr.RouteName, s.role),
			})
		}
		if tls := proxy.BackendTLSPolicy(cr, s.role, p.Versions.TLS); tls != nil {
			targets = append(targets, names.Target{
				Key: tlsKey(s.role), APIVersion: tls.APIVersion, Kind: tls.Kind,
				Namespace: tls.Namespace, Name: tls.Name,
			})
		}
	}
	if cr.Spec.Traffic.Preview != nil {
		// Named whether the rollout is active or not: the requirements
		// depend on the spec alone, and a preview route another owner
		// manages is refused before a rollout would compose over it.
		targets = append(targets, names.Target{
			Key:        p.PreviewKey(),
			APIVersion: gwv1.GroupName + "/" + version,
			Kind:       string(cr.Spec.Kind),
			Namespace:  cr.RouteNamespace,
			Name:       xr.PreviewRouteName(cr.ComposedRouteName()),
		})
	}
	for _, g := range p.Grants.Grants {
		targets = append(targets, names.Target{
			Key:        p.GrantKey(g.Namespace),
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
func (p *Plan) RouteAtStep(obs route.Observation) func(step int32, weight percent.Percent) (bool, string) {
	return func(step int32, weight percent.Percent) (bool, string) {
		if !obs.Exists {
			return false, "the route has not been created yet"
		}
		b := p.build(&step, weight, weight.Less(percent.Max))
		if len(b.buildErrs) > 0 || !obs.Carries(b.obj, p.CR.RouteNamespace) {
			return false, "the route does not carry the step's weights yet"
		}
		if v, held := obs.FirstHold(); held {
			return false, DescribeHold(v)
		}
		return true, ""
	}
}

// RouteWithoutCanary tells the release loop whether the observed route
// sends the canary nothing: it carries the route that the plan composes
// with the canary at 0% and no canary-only rule (A/B, session, mirror),
// and, unless the CanaryRoute does not wait for its gateway, every parent
// accepted that generation; and no preview route is observed (it sends
// the canary every request of its hostnames). Before then, a request may
// still reach the canary's Service, whose selector must not change.
func (p *Plan) RouteWithoutCanary(obs, preview route.Observation) func() (bool, string) {
	return func() (bool, string) {
		if !obs.Exists {
			return false, "the route has not been created yet"
		}
		if preview.Exists {
			return false, "the preview route still exists"
		}
		b := p.build(nil, percent.Zero, false)
		if len(b.buildErrs) > 0 || !obs.Carries(b.obj, p.CR.RouteNamespace) {
			return false, "the route does not send the canary nothing yet"
		}
		if v, held := obs.FirstHold(); held && p.CR.Spec.Traffic.RequireAcceptedRoute {
			return false, DescribeHold(v)
		}
		return true, ""
	}
}

// BuildRoute builds the route at a weight, and checks the route it would be
// while the rollout is active too: A/B, session and mirror rules must not
// turn a valid spec into a rejected route halfway through a rollout. The
// errors name the CanaryRoute's fields.
func (p *Plan) BuildRoute(weight percent.Percent, active bool, step *int32) (runtime.Object, field.ErrorList) {
	b := p.build(step, weight, active)
	if errs := b.errs(); len(errs) > 0 {
		return nil, errs
	}
	full := weight
	if full.IsZero() {
		full = percent.Int(1)
	}
	if active && weight.Equal(full) {
		return b.obj, nil // The route is the fully active one.
	}
	return b.obj, p.build(step, full, true).errs()
}

// buildKey names a route that a plan builds: its shape (the step whose
// own matches and mirror shape it, or -1 for the traffic's), the canary's
// weight and the total of the route's weights (100 or 10,000), and whether
// the rollout is active; or the preview route, which is the same at every
// step and weight.
type buildKey struct {
	shape   int32
	weight  percent.Percent
	total   int32
	active  bool
	preview bool
}

// A build is a route built, and what the Gateway API CRDs would say of it.
type build struct {
	obj       runtime.Object
	buildErrs field.ErrorList
	admitErrs field.ErrorList
	// wire is the route's wire form, for a route that runs share.
	wire *Wire
}

func (b build) errs() field.ErrorList { return append(slices.Clip(b.buildErrs), b.admitErrs...) }

// build builds the route of a step at a weight and checks it, once a run:
// the checks of the steps, the engine's look at the observed route and the
// route the run composes ask for the same routes. The route it returns is
// shared, by the runs that build the same route too (see sharedBuilds):
// whoever changes it changes a copy.
func (p *Plan) build(step *int32, weight percent.Percent, active bool) build {
	total := p.CR.Spec.Traffic.RouteTotal(weight)
	key := buildKey{shape: p.shape(step), weight: weight, total: total, active: active}
	return p.buildOnce(key, func() route.Params {
		params := p.RouteFor(step)
		params.CanaryWeight, params.Total, params.Active = weight, total, active
		return params
	})
}

// preview builds the preview route and checks it, once a run, shared like
// the route (see build).
func (p *Plan) preview() build {
	return p.buildOnce(buildKey{shape: -1, weight: percent.Max, total: percent.WholeTotal, preview: true}, p.previewParams)
}

// buildOnce builds the route of a key from the Params paramsOf gives, or
// finds it built by this run or kept by another.
func (p *Plan) buildOnce(key buildKey, paramsOf func() route.Params) build {
	if b, ok := p.builds[key]; ok {
		return b
	}
	params := paramsOf()
	sk, shareable := p.sharedKey(key)
	if shareable {
		if b, ok := sharedBuilds.Get(sk); ok {
			if VerifyShared {
				verify(sk, b, fresh(params))
			}
			p.builds[key] = b
			return b
		}
	}
	b := fresh(params)
	if shareable && len(b.buildErrs)+len(b.admitErrs) == 0 {
		if bytes, ok := sharedBytes(sk, b.obj); ok {
			b.wire = &Wire{object: b.obj}
			// A run that built the same route at once kept it first:
			// send its wire form, encoded once for both.
			b = sharedBuilds.Keep(sk, b, bytes)
		}
	}
	p.builds[key] = b
	return b
}

// WireOf is the wire form of a route this plan built and runs share, or
// nil for any other object (a copy with the canary cut, a held route).
func (p *Plan) WireOf(obj runtime.Object) *Wire {
	for _, b := range p.builds {
		if b.wire != nil && b.obj == obj {
			return b.wire
		}
	}
	return nil
}

// shape is the step whose own matches and mirror shape its route, or -1
// when the step takes the traffic's.
func (p *Plan) shape(step *int32) int32 {
	steps := p.CR.Spec.Traffic.Steps
	if step == nil || *step < 0 || int(*step) >= len(steps) {
		return -1
	}
	if s := steps[*step]; s.Matches == nil && s.Mirror == nil {
		return -1
	}
	return *step
}

// CutCanary sends the canary nothing in a route built for an aborted or
// failed rollout (at weight 0): every canary backendRef, on any port, goes
// to weight 0 and every rule that sends only to the canary is removed, the
// rules of their own too, which BuildRoute composes as written. It is what
// an abort rescued from a broken spec does to the last composed route, so
// the two aborts compose the same route. It returns a changed copy.
func (p *Plan) CutCanary(built runtime.Object) runtime.Object {
	ids := p.CanaryBackends()
	if len(ids) == 0 {
		return built
	}
	cut := built.DeepCopyObject()
	// A route built from the spec keeps a rule: its primary's.
	_ = cutCanary(cut, ids, p.CR.RouteNamespace)
	return cut
}

// cutCanary is how the function sends the canary nothing in a route, built
// or observed, whoever asks: an aborted or failed rollout, a hold under an
// Input that now refuses the canary, an abort rescued from a broken spec.
// Every backendRef of a canary backend, on any port, goes to weight 0, and
// every rule that sends only to the canary, and every mirror to it, goes
// (see route.ZeroCanary). It changes the route in place, and fails when no
// rule would be left.
func cutCanary(obj runtime.Object, canary []xr.BackendID, routeNamespace string) error {
	if !route.ZeroCanary(obj, route.AnyPort(canary), routeNamespace) {
		return errors.New(errNoRuleLeft)
	}
	return nil
}

// An Object is a composed object, typed, under its key, with its readiness.
type Object struct {
	Key    names.Key
	Object runtime.Object
	Ready  bool
	// Wire, when set, is the object's wire form that runs share: the
	// response sends it instead of encoding the object again.
	Wire *Wire
}

// Desired is what the run composes: the route, the proxy Services and the
// ReferenceGrants, each with its readiness. observed says which keys exist
// already. Anything the function composed on an earlier run and does not
// compose now is deleted by Crossplane: that is how a revoked grant, a side
// that stopped composing a Service, or the route of a previous kind go away.
func (p *Plan) Desired(built runtime.Object, obs route.Observation, observed func(names.Key) bool) []Object {
	cr := p.CR
	out := []Object{{Key: p.RouteKey(), Object: built, Ready: RouteReady(cr, obs), Wire: p.WireOf(built)}}
	// Services and grants are ready once they exist: nothing reports on
	// them.
	for _, role := range []xr.Role{xr.RolePrimary, xr.RoleCanary} {
		if p.routeOnly {
			break // The first route's plan composes them.
		}
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
		out = append(out, Object{Key: p.GrantKey(g.Namespace), Object: g, Ready: observed(p.GrantKey(g.Namespace))})
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
