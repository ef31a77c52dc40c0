package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/gate"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	errInput         = "invalid function Input"
	errXR            = "invalid CanaryRoute"
	errRequest       = "cannot read the request"
	errObservedRoute = "cannot read the observed route"
	errBuildRoute    = "the composed route would be rejected by the Gateway API"
	errSetDesired    = "cannot set the desired composed resources"
	errSetStatus     = "cannot set the composite resource's status"
	errDeadline      = "the run ran out of time"
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
	// exprs compiles the CEL expressions of gates and analysis, and keeps
	// them across runs; nil uses a compiler shared by every Function.
	exprs *expr.Compiler
}

// sharedCompiler is the expression compiler of Functions without one.
var sharedCompiler = sync.OnceValues(func() (*expr.Compiler, error) { return expr.NewCompiler(0) })

// compiler is the Function's expression compiler.
func (f *Function) compiler() (*expr.Compiler, error) {
	if f.exprs != nil {
		return f.exprs, nil
	}
	return sharedCompiler()
}

// RunFunction runs the Function: compose, or, for bad input, answer with a
// Fatal result (the cluster keeps its last good route), unless the user
// asked for an emergency abort, which bad input never blocks.
func (f *Function) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	log := f.log.WithValues("tag", req.GetMeta().GetTag(), "xr", compositeName(req), "namespace", compositeNamespace(req))

	// The observed XR is converted once: for a spec near the gRPC limit
	// the conversion is most of a run, and a refused run reads it again.
	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		rsp := fatal(req, nil, errors.Wrap(err, errRequest))
		recordRequirements(rsp)
		return rsp, nil
	}
	rsp, err := f.compose(ctx, log, req, oxr)
	if err != nil {
		rsp = f.refuse(log, req, oxr, err)
	}
	recordRequirements(rsp)
	return rsp, nil
}

// refuse answers a run that cannot compose the CanaryRoute: an emergency
// abort if the user asked for one, else a Fatal result.
func (f *Function) refuse(log logging.Logger, req *fnv1.RunFunctionRequest, oxr *resource.Composite, err error) *fnv1.RunFunctionResponse {
	if rsp, ok := rescueAbort(req, oxr, err); ok {
		log.Info("Emergency abort of a CanaryRoute that cannot be composed: the last composed route is kept with the canary at 0%", "error", err.Error())
		return rsp
	}
	// The log has the message, never the whole spec.
	log.Info("Fatal result", "error", err.Error())
	return fatal(req, oxr, err)
}

// A run is what one pipeline run has read: the observed XR, the policy, the
// CanaryRoute, what Crossplane handed over, and the plan they make.
type run struct {
	oxr      *resource.Composite
	cr       *xr.CanaryRoute
	required map[string][]resource.Required
	observed map[resource.Name]resource.ObservedComposed
	self     ownership.Ref
	owner    ownership.Composite
	selfGVK  schema.GroupVersionKind
	plan     *compose.Plan
}

// compose reads the policy and the CanaryRoute, plans what it composes,
// reads what the cluster holds, decides the weights and answers. An error
// is bad input, for a Fatal result; it names the CanaryRoute's or the
// Input's field. Nothing is written to a response until everything is
// decided, so a run that fails leaves no trace.
func (f *Function) compose(ctx context.Context, log logging.Logger, req *fnv1.RunFunctionRequest, oxr *resource.Composite) (*fnv1.RunFunctionResponse, error) {
	r, err := f.read(ctx, req, oxr)
	if err != nil {
		return nil, err
	}
	cr, plan := r.cr, r.plan
	var observedRoute map[string]any
	if o, ok := r.observed[resource.Name(plan.RouteKey())]; ok {
		observedRoute = o.Resource.Object
	}
	obs, err := route.Observe(observedRoute, cr.RouteNamespace, cr.Spec.ParentRefs)
	if err != nil {
		return nil, errors.Wrap(err, errObservedRoute)
	}

	// Refuse to compose over an object that this XR did not compose, and
	// read the gates' objects.
	targets := plan.Targets()
	if err := ownership.Check(r.owner, targets, existing(r.required)); err != nil {
		return nil, err
	}
	// One budget bounds every expression this run evaluates.
	budget := &expr.Budget{}
	gates := gate.Observe(ctx, budget, cr.Spec.Traffic.Gates, cr.RouteNamespace, gateObjects(r.required), plan.Program)
	observedAnalysis := analysisObjects(r.observed)
	analysis := gate.ObserveAnalysis(ctx, budget, cr.Spec.Traffic, cr.RouteName, observedAnalysis, plan.Program)

	decision := rollout.Decide(rollout.Input{
		Traffic:             cr.Spec.Traffic,
		Revision:            cr.Spec.Canary.Revision,
		CanaryDigest:        plan.CanaryDigest(),
		Previous:            plan.Previous(),
		RouteAtStep:         plan.RouteAtStep(obs),
		RouteMissing:        !obs.Exists,
		Gates:               gates,
		Analysis:            analysis,
		CanaryRefused:       plan.Grants.CanaryRefused(),
		CanaryRefusedReason: plan.CanaryRefusal(),
		Now:                 f.clock.Now(),
	})

	// The route is built and checked even when the previous composition is
	// held: a spec that cannot be composed is a Fatal either way.
	built, errs := plan.BuildRoute(decision.CanaryWeight, decision.Active, decision.Status.Step)
	if len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(errs), errBuildRoute)
	}
	if p := decision.Status.Phase; p == xr.PhaseAborted || p == xr.PhaseFailed {
		plan.CutCanary(built)
	}
	// The current step's analysis objects, which depend on the decision:
	// never composed over an object another owner manages either.
	var analysisObjs []compose.Object
	if step := decision.Status.Step; step != nil && len(decision.Analysis) > 0 {
		analysisObjs = plan.AnalysisObjects(*step, decision.Analysis, decision.Status.Attempt, observedAnalysis)
	}
	analysisTargets := plan.AnalysisTargets(analysisObjs)
	if err := ownership.Check(r.owner, analysisTargets, existing(r.required)); err != nil {
		return nil, err
	}
	targets = append(targets, analysisTargets...)
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, errDeadline)
	}

	objects, canaryBackends, decision, err := r.objects(built, obs, decision)
	if err != nil {
		return nil, err
	}
	objects = append(objects, analysisObjs...)
	status := decision.Status
	status.CanaryBackends = canaryBackends

	rsp := newResponse(req, decision.Requeue)
	if !schemasPending(req, plan) {
		require(rsp, cr, r.self, targets)
	}
	requireSchemas(rsp, req, r.selfGVK, plan)
	if err := setDesired(rsp, objects); err != nil {
		return nil, errors.Wrap(err, errSetDesired)
	}
	routeStatus := compose.RouteStatus(cr, obs)
	routeStatus.Versions = plan.ServedVersions(f.clock.Now())
	if err := setStatus(rsp, req, status, &routeStatus); err != nil {
		return nil, errors.Wrap(err, errSetStatus)
	}
	setConditions(rsp, observedConditions(r.oxr.Resource.Object), cr, obs, plan.Grants, decision)
	for _, e := range decision.Events {
		if e.Warning {
			response.Warning(rsp, errors.New(e.Message)).WithReason(e.Reason).TargetCompositeAndClaim()
		} else {
			response.Normal(rsp, e.Message).WithReason(e.Reason).TargetCompositeAndClaim()
		}
		log.Info(e.Message, "reason", e.Reason)
	}
	log.Debug("Composed route", "kind", cr.Spec.Kind, "canaryWeight", decision.CanaryWeight, "phase", decision.Status.Phase)
	return rsp, nil
}

// read reads the request: the policy, the CanaryRoute from the observed XR,
// the required resources and the observed composed resources, and plans
// the run.
func (f *Function) read(ctx context.Context, req *fnv1.RunFunctionRequest, oxr *resource.Composite) (*run, error) {
	if err := checkCapabilities(req); err != nil {
		return nil, err
	}
	pol, err := policy.Parse(req.GetInput().AsMap())
	if err != nil {
		return nil, errors.Wrap(err, errInput)
	}
	cr, err := xr.Parse(oxr.Resource.Object, pol.DefaultParentRefs)
	if err != nil {
		return nil, errors.Wrap(err, errXR)
	}
	required, err := request.GetRequiredResources(req)
	if err != nil {
		return nil, errors.Wrap(err, errRequest)
	}
	r := &run{
		oxr:      oxr,
		cr:       cr,
		required: required,
		self:     ownership.Ref{APIVersion: oxr.Resource.GetAPIVersion(), Kind: oxr.Resource.GetKind(), Name: oxr.Resource.GetName()},
		owner:    ownership.Composite{Name: oxr.Resource.GetName(), UID: string(oxr.Resource.GetUID())},
		selfGVK:  oxr.Resource.GroupVersionKind(),
	}
	cr.ClaimProven = cr.Scope == xr.ScopeClaim && claimProven(required, cr, r.self)
	compiler, err := f.compiler()
	if err != nil {
		return nil, err
	}
	if r.observed, err = request.GetObservedComposedResources(req); err != nil {
		return nil, errors.Wrap(err, errRequest)
	}
	if r.plan, err = compose.New(cr, pol, compiler, chooseVersions(req, r.selfGVK, cr.Status.Route, r.observed, f.clock.Now())); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, errDeadline)
	}
	return r, nil
}

// objects are what the run composes besides the analysis objects, and the
// canary backends it records. What the previous run composed stays as it
// was while a paused rollout waits to restart with a new canary, but for
// what the Input no longer allows.
func (r *run) objects(built runtime.Object, obs route.Observation, decision rollout.Decision) ([]compose.Object, []xr.BackendID, rollout.Decision, error) {
	if !decision.HoldPrevious {
		objects := r.plan.Desired(built, obs, func(k compose.Key) bool { _, ok := r.observed[resource.Name(k)]; return ok })
		return objects, r.plan.CanaryBackends(), decision, nil
	}
	held, err := r.plan.Held(ours(r.observed), obs)
	if err != nil {
		return nil, nil, decision, errors.Wrap(err, errSetDesired)
	}
	if len(held.Zeroed) > 0 {
		decision = rollout.WithCanaryAtZero(decision, "the function's Input no longer allows "+describeBackends(held.Zeroed))
	}
	var canaryBackends []xr.BackendID
	if r.cr.Status.Rollout != nil {
		canaryBackends = r.cr.Status.Rollout.CanaryBackends
	}
	return held.Objects, canaryBackends, decision, nil
}
