package main

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	errInput          = "invalid function Input"
	errXR             = "invalid CanaryRoute"
	errPolicy         = "CanaryRoute not allowed by the function's Input"
	errObservedRoute  = "cannot read the observed route"
	errBuildRoute     = "the composed route would be rejected by the Gateway API"
	errSetDesired     = "cannot set the desired composed resources"
	errConvertFmt     = "cannot convert the composed %s"
	errSetStatusField = "cannot set the composite resource's status"
	errDeadline       = "the run ran out of time"
)

// Composed resource names, which Crossplane records in the annotation
// crossplane.io/composition-resource-name. The route's kind is part of its
// name, so that changing spec.kind deletes the old route instead of leaking
// it.
const (
	resourceServicePrimary = "service-primary"
	resourceServiceCanary  = "service-canary"
	prefixRoute            = "route-"
	prefixReferenceGrant   = "referencegrant-"
)

// A Clock tells the time. The function reads the time only through its
// clock, so that tests and `--now` can evaluate a rollout at any instant.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to a Clock.
type ClockFunc func() time.Time

// Now returns the time.
func (f ClockFunc) Now() time.Time { return f() }

// Function composes Gateway API routes from CanaryRoutes.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log   logging.Logger
	clock Clock
}

// RunFunction runs the Function: compose, or, for bad input, answer with a
// Fatal result (the cluster keeps its last good route), unless the user
// asked for an emergency abort, which bad input never blocks.
func (f *Function) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	oxr := observedComposite(req)
	log := f.log.WithValues("tag", req.GetMeta().GetTag(), "xr", oxr.Resource.GetName(), "namespace", oxr.Resource.GetNamespace())

	rsp, err := f.compose(ctx, log, req, oxr)
	if err == nil {
		return rsp, nil
	}
	// A failed run leaves nothing of what it composed: start over.
	rsp = newResponse(req)
	if rescueAbort(rsp, req, oxr, err) {
		log.Info("Emergency abort of a CanaryRoute that cannot be composed: the last composed route is kept with the canary at 0%", "error", err.Error())
		return rsp, nil
	}
	// Bad input must not turn the XR's conditions Unknown: Crossplane keeps
	// the last good route and status on a Fatal, and the conditions say so.
	// The log has the message, never the whole spec.
	log.Info("Fatal result", "error", err.Error())
	return fatal(rsp, oxr.Resource.Object, err), nil
}

// compose reads the policy and the CanaryRoute, resolves the backends,
// applies the policy, decides the weights and composes. An error is bad
// input, for a Fatal result; it names the CanaryRoute's or the Input's
// field.
func (f *Function) compose(ctx context.Context, log logging.Logger, req *fnv1.RunFunctionRequest, oxr *resource.Composite) (*fnv1.RunFunctionResponse, error) {
	rsp := newResponse(req)

	pol, cr, err := readSpec(req, oxr)
	if err != nil {
		return nil, err
	}
	primary, canary, mirrors, err := resolveBackends(cr, pol)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, errDeadline)
	}

	backends := []backend.Backend{primary, canary}
	for _, m := range mirrors {
		backends = append(backends, m.Backend)
	}
	grants := grant.Plan(grant.Request{
		RouteKind:      cr.Spec.Kind,
		RouteNamespace: cr.RouteNamespace,
		RouteName:      cr.RouteName,
		Scope:          cr.Scope,
		Mode:           cr.Spec.ReferenceGrants,
		Version:        pol.GrantVersion,
		Backends:       backends,
	}, pol)

	observed := observedComposed(req)
	routeKey := routeKeyFor(cr.Spec.Kind)
	var observedRoute map[string]any
	if o, ok := observed[routeKey]; ok {
		observedRoute = o.Resource.Object
	}
	obs, err := route.Observe(observedRoute, cr.RouteNamespace, cr.Spec.ParentRefs)
	if err != nil {
		return nil, errors.Wrap(err, errObservedRoute)
	}

	// Ask for the gate objects and for every object this run is about to
	// compose, and refuse to compose over one that this XR did not compose.
	params := routeParams(cr, pol, primary, canary)
	targets := composeTargets(cr, params, grants)
	require(rsp, cr, targets)
	if err := checkOwnership(req, oxr, targets); err != nil {
		return nil, err
	}
	gates := observeGates(req, cr)

	decision := rollout.Decide(rollout.Input{
		Traffic:             cr.Spec.Traffic,
		Revision:            cr.Spec.Canary.Revision,
		CanaryDigest:        backend.Digest(cr.Spec.Canary, canary),
		Previous:            cr.Status.Rollout,
		RouteAtWeight:       routeAtWeight(obs, params, cr.RouteNamespace),
		Gates:               gates,
		CanaryRefused:       grants.CanaryRefused(),
		CanaryRefusedReason: refusalReason(grants, xr.RoleCanary),
		Now:                 f.clock.Now(),
	})
	params.CanaryWeight, params.Active = decision.CanaryWeight, decision.Active

	// The route is built and checked even when the previous composition is
	// held: a spec that cannot be composed is a Fatal either way.
	composedRoute, errs := buildRoute(params)
	if len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(errs), errBuildRoute)
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, errDeadline)
	}

	// What the previous run composed stays as it was while a paused rollout
	// waits to restart with a new canary.
	status := decision.Status
	status.CanaryBackends = canaryBackends(params)
	if decision.HoldPrevious && obs.Exists {
		if err := holdPrevious(rsp.Desired.Resources, observed, obs); err != nil {
			return nil, errors.Wrap(err, errSetDesired)
		}
		status.CanaryBackends = nil
		if cr.Status.Rollout != nil {
			status.CanaryBackends = cr.Status.Rollout.CanaryBackends
		}
	} else if err := composeDesired(rsp.Desired.Resources, observed, routeKey, composedRoute, obs, cr, grants); err != nil {
		return nil, err
	}
	if err := setStatus(rsp, status, routeStatus(cr, obs)); err != nil {
		return nil, errors.Wrap(err, errSetStatusField)
	}

	setConditions(rsp, cr, obs, grants, decision)
	if decision.Event != "" {
		response.Normal(rsp, decision.Event).TargetCompositeAndClaim()
		log.Info(decision.Event)
	}
	rsp.GetMeta().Ttl = durationpb.New(decision.Requeue)

	log.Debug("Composed route", "kind", cr.Spec.Kind, "canaryWeight", decision.CanaryWeight, "phase", decision.Status.Phase)
	return rsp, nil
}

// readSpec reads the policy and the CanaryRoute, and refuses what the
// policy forbids outright.
func readSpec(req *fnv1.RunFunctionRequest, oxr *resource.Composite) (*policy.Policy, *xr.CanaryRoute, error) {
	pol, err := policy.Parse(req.GetInput().AsMap())
	if err != nil {
		return nil, nil, errors.Wrap(err, errInput)
	}
	cr, err := xr.Parse(oxr.Resource.Object, pol.DefaultParentRefs)
	if err != nil {
		return nil, nil, errors.Wrap(err, errXR)
	}
	if errs := checkPolicy(cr, pol); len(errs) > 0 {
		return nil, nil, errors.Wrap(fielderr.Summarize(errs), errPolicy)
	}
	return pol, cr, nil
}

// resolveBackends resolves the sides and the user's mirror targets, and
// applies the policy to the mirrors.
func resolveBackends(cr *xr.CanaryRoute, pol *policy.Policy) (primary, canary backend.Backend, mirrors []backend.Mirror, err error) {
	primary, primaryErrs := backend.Resolve(cr, xr.RolePrimary)
	canary, canaryErrs := backend.Resolve(cr, xr.RoleCanary)
	mirrors, mirrorErrs := backend.Mirrors(cr)
	if errs := slices.Concat(primaryErrs, canaryErrs, mirrorErrs); len(errs) > 0 {
		return primary, canary, nil, errors.Wrap(fielderr.Summarize(errs), errXR)
	}
	if errs := checkMirrors(cr, pol, mirrors); len(errs) > 0 {
		return primary, canary, nil, errors.Wrap(fielderr.Summarize(errs), errPolicy)
	}
	return primary, canary, mirrors, nil
}

// checkPolicy refuses what the Input forbids outright: features that no
// weight or grant can make safe.
func checkPolicy(cr *xr.CanaryRoute, pol *policy.Policy) field.ErrorList {
	var errs field.ErrorList
	// Anyone who may create a cluster-scoped CanaryRoute could otherwise put
	// a route, and proxy Services selecting any pods, in any namespace.
	if cr.Scope == xr.ScopeCluster && !pol.AllowsRouteNamespace(cr.RouteNamespace) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "namespace"),
			"namespace "+fielderr.Quote(cr.RouteNamespace)+" is not in the function Input's allowedRouteNamespaces"))
	}
	for _, s := range []struct {
		role xr.Role
		side xr.Side
	}{{xr.RolePrimary, cr.Spec.Primary}, {xr.RoleCanary, cr.Spec.Canary}} {
		if s.side.ExternalName != "" && !pol.AllowExternalNames {
			errs = append(errs, field.Forbidden(field.NewPath("spec", string(s.role), "externalName"),
				"the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"))
		}
	}
	// A refused canary is held at weight 0, but a primary cannot be: in the
	// route's own namespace no gateway would refuse a primary of a kind the
	// Input forbids, so leaving it in the route would ignore the policy.
	if ref := cr.Spec.Primary.BackendRef; ref != nil && !pol.AllowsKind(backend.GroupKindOf(*ref)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "primary", "backendRef", "kind"),
			"backend kind "+backend.KindString(backend.GroupKindOf(*ref))+" is not in the function Input's allowedBackendKinds"))
	}
	for i, g := range cr.Spec.Traffic.Gates {
		gvk := gateGVK(g)
		if !pol.AllowsGate(gvk) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "traffic", "gates").Index(i).Child("kind"),
				"gates on "+fielderr.Quote(g.Kind)+" ("+fielderr.Quote(g.APIVersion)+") are not in the function Input's allowedGateKinds"))
		}
	}
	return errs
}

// checkMirrors applies the policy to the backends of the RequestMirror
// filters written in the spec. A mirror cannot be held at weight 0 like a
// canary: it copies every request it sees, so one the policy refuses is a
// Fatal naming the filter.
func checkMirrors(cr *xr.CanaryRoute, pol *policy.Policy, mirrors []backend.Mirror) field.ErrorList {
	var errs field.ErrorList
	for _, m := range mirrors {
		if reason := grant.RefusalReason(m.Backend, cr.RouteNamespace, pol); reason != "" {
			errs = append(errs, field.Forbidden(m.Path, "the mirror's backend "+describeRef(m.Backend.Ref)+" is refused: "+reason))
		}
	}
	return errs
}

// routeParams are the route's shape; the weights come from the decision.
func routeParams(cr *xr.CanaryRoute, pol *policy.Policy, primary, canary backend.Backend) route.Params {
	p := route.Params{
		Kind:          cr.Spec.Kind,
		Name:          cr.RouteName,
		Namespace:     cr.RouteNamespace,
		ParentRefs:    cr.Spec.ParentRefs,
		Hostnames:     cr.Spec.Hostnames,
		Rules:         cr.Spec.Rules,
		Primary:       primary,
		Canary:        canary,
		ABHTTPMatches: cr.Spec.Traffic.HTTPMatches,
		ABGRPCMatches: cr.Spec.Traffic.GRPCMatches,
	}
	switch cr.Spec.Kind {
	case xr.KindTLSRoute:
		p.Version = pol.TLSRouteVersion
	case xr.KindTCPRoute:
		p.Version = pol.TCPRouteVersion
	default:
		// HTTPRoute and GRPCRoute are composed as v1 only.
	}
	if m := cr.Spec.Traffic.Mirror; m != nil {
		p.MirrorPercent = &m.Percent
	}
	if a := cr.Spec.Traffic.Affinity; a != nil {
		p.Affinity = &route.Affinity{
			CookieName: a.CookieName,
			Value:      route.CookieValue(cr.RouteNamespace, cr.RouteName, cr.Spec.Canary.Revision),
			MaxAge:     a.MaxAge,
		}
	}
	return p
}

// canaryBackends are the route's canary backends, for status: none when the
// primary and the canary are one backend, which then is the primary.
func canaryBackends(p route.Params) []xr.BackendID {
	if backend.Same(p.Primary, p.Canary) {
		return nil
	}
	return []xr.BackendID{p.Canary.ID()}
}

// routeAtWeight tells the engine whether the gateway accepted the route
// that the function composes at a weight. It compares backends and weights
// rule by rule, not the whole spec: Crossplane patches the XR's status even
// when applying the route failed, so the route itself is the evidence.
func routeAtWeight(obs route.Observation, p route.Params, routeNamespace string) func(int32) (bool, string) {
	return func(weight int32) (bool, string) {
		if !obs.Exists {
			return false, "the route has not been created yet"
		}
		p.CanaryWeight, p.Active = weight, weight < 100
		want, errs := route.Build(p)
		if len(errs) > 0 || !obs.Carries(want, routeNamespace) {
			return false, "the route does not carry the step's weights yet"
		}
		if v, held := obs.FirstHold(); held {
			return false, describeHold(v)
		}
		return true, ""
	}
}

// buildRoute builds the route, and checks the route it would be while the
// rollout is active too: A/B, session and mirror rules must not turn a valid
// spec into a rejected route halfway through a rollout.
func buildRoute(p route.Params) (runtime.Object, field.ErrorList) {
	built, errs := route.Build(p)
	errs = append(errs, route.Admit(p, built)...)
	if len(errs) > 0 {
		return nil, errs
	}
	full := p
	full.Active = true
	full.CanaryWeight = max(p.CanaryWeight, 1)
	fullRoute, errs := route.Build(full)
	errs = append(errs, route.Admit(full, fullRoute)...)
	return built, errs
}

func refusalReason(g grant.Result, role xr.Role) string {
	for _, r := range g.Refused {
		if r.Role == role {
			return r.Reason
		}
	}
	return ""
}
