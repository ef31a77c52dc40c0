package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/run"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// An XRD that prunes status.rollout.sequence, said once for a CanaryRoute.
const (
	reasonXRDOutdated = "XRDOutdated"
	msgXRDOutdated    = "the CanaryRoute's XRD prunes status.rollout.sequence (it is older than the function): apply the XRDs of the function's release. Until then the function orders Crossplane's reads by what the status says, while it remembers this CanaryRoute"
)

const (
	errInput      = "invalid function Input"
	errXR         = "invalid CanaryRoute"
	errRequest    = "cannot read the request"
	errSetDesired = "cannot set the desired composed resources"
	errSetStatus  = "cannot set the composite resource's status"
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
	// metrics counts the runs; nil counts nothing.
	metrics *telemetry.Runs
	// querier queries the providers of traffic.metrics; nil queries
	// nothing, as previews (--now, crossplane render) do.
	querier promql.Querier
	// caller calls the webhooks of traffic.hooks; nil calls nothing, as
	// previews do.
	caller hooks.Caller
	// memory remembers the newest decision answered per composite, which
	// orders Crossplane's reads; nil remembers nothing, as previews do.
	memory *freshness.Memory[pipeline.Answer]
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
	start := f.metrics.Start()
	log := f.log.WithValues("tag", req.GetMeta().GetTag(), "xr", pipeline.CompositeMeta(req, "name"), "namespace", pipeline.CompositeMeta(req, "namespace"))

	var rsp *fnv1.RunFunctionResponse
	var out telemetry.Outcome
	// A read older than a decision answered gets that decision, unchanged:
	// answering it afresh would move the rollout back.
	read, verdict, newest := f.memory.Order(pipeline.ReadOf(req))
	if verdict.Answered() {
		rsp, out = f.remembered(req, read, newest)
	} else if oxr, err := request.GetObservedCompositeResource(req); err != nil {
		// The observed XR is converted once: for a spec near the gRPC
		// limit the conversion is most of a run, and a refused run reads
		// it again.
		rsp, out = fatal(req, nil, errors.Wrap(err, errRequest)), telemetry.Outcome{Result: telemetry.ResultFatal}
	} else {
		if verdict == freshness.StatusBehind || read.Restore {
			newest.Answer.Substitute(oxr.Resource.Object)
			read = newest.Restored(read)
		}
		var composed run.Composition
		if newest.Current(read) {
			composed = newest.Answer
		}
		if rsp, out, err = f.answer(ctx, log, req, oxr, composed); err != nil {
			rsp, out = f.refuse(log, req, oxr, composed, err)
		}
	}
	// The remembered answer keeps its own sequence; a decision gets one.
	var stamp freshness.Stamp
	decided := false
	if !verdict.Answered() {
		stamp, decided = pipeline.StampAnswer(rsp, read)
	}
	pipeline.Record(rsp)
	out.Applied = pipeline.Settled(req, rsp)
	if verdict != freshness.Fresh {
		out.Stale = verdict.String()
	}
	if decided && out.Applied {
		if newest.FirstPruned(read) {
			pipeline.Event(rsp, true, reasonXRDOutdated, msgXRDOutdated)
		}
		answer := pipeline.Capture(req, rsp, pipeline.ContextRelease)
		f.memory.Remember(read, stamp, answer, answer.Bytes)
	}
	f.metrics.Record(out, start)
	return rsp, nil
}

// remembered answers a stale read with the newest decision the function
// answered, unless an object that decision composes is now another
// owner's (created since, by another team): the takeover rule holds for
// a remembered answer too, which would otherwise compose over it.
func (f *Function) remembered(req *fnv1.RunFunctionRequest, read freshness.Read, newest *freshness.Decision[pipeline.Answer]) (*fnv1.RunFunctionResponse, telemetry.Outcome) {
	fetched, err := request.GetRequiredResources(req)
	if err != nil {
		return fatal(req, nil, errors.Wrap(err, errRequest)), telemetry.Outcome{Result: telemetry.ResultFatal}
	}
	owner := ownership.Composite{Name: pipeline.CompositeMeta(req, "name"), UID: read.UID}
	if err := ownership.Check(owner, pipeline.Targets(newest.Answer.Requirements()), pipeline.Fetched(fetched).Existing); err != nil {
		return fatal(req, nil, err), telemetry.Outcome{Result: telemetry.ResultFatal}
	}
	return newest.Answer.Respond(req), telemetry.Outcome{Result: telemetry.ResultStale}
}

// refuse answers a run that cannot compose the CanaryRoute: an emergency
// abort if the user asked for one, else a Fatal result.
func (f *Function) refuse(log logging.Logger, req *fnv1.RunFunctionRequest, oxr *resource.Composite, composed run.Composition, err error) (*fnv1.RunFunctionResponse, telemetry.Outcome) {
	observed, _ := request.GetObservedComposedResources(req)
	var held map[names.Key]map[string]any
	if composed != nil {
		held = map[names.Key]map[string]any{}
		for k, o := range composed.All() {
			held[names.Key(k)] = o
		}
	}
	if rescue, ok := compose.RescueAbortComposed(oxr.Resource.Object, pipeline.Observed(observed), held, err, f.clock.Now()); ok {
		// The rescue refuses no takeover (its cause may be that very
		// refusal): the record must not name another owner's workload.
		fetched, ferr := request.GetRequiredResources(req)
		pipeline.Fetched(fetched).DropForeignCanary(rescue.Record, ownership.Composite{Name: oxr.Resource.GetName(), UID: string(oxr.Resource.GetUID())}, ferr != nil)
		if rsp, out, ok := rescued(req, oxr, rescue, err); ok {
			log.Info("Emergency abort of a CanaryRoute that cannot be composed: the last composed route is kept with the canary at 0%", "error", err.Error())
			return rsp, out
		}
	}
	// The log has the message, never the whole spec.
	log.Info("Fatal result", "error", err.Error())
	return fatal(req, oxr, err), telemetry.Outcome{Result: telemetry.ResultFatal}
}

// answer reads the policy and the CanaryRoute, plans what it composes,
// composes it from what the cluster holds, and answers. An error is bad
// input, for a Fatal result; it names the CanaryRoute's or the Input's
// field. Nothing is written to a response until everything is decided, so a
// run that fails leaves no trace.
//
// composed are the objects the newest decision answered composed, when the
// run decides on its status: what a hold re-emits (see run.In).
func (f *Function) answer(ctx context.Context, log logging.Logger, req *fnv1.RunFunctionRequest, oxr *resource.Composite, composed run.Composition) (*fnv1.RunFunctionResponse, telemetry.Outcome, error) {
	r, err := f.read(req, oxr)
	if err != nil {
		return nil, telemetry.Outcome{}, err
	}
	out, err := run.Run(ctx, run.In{
		Plan:       r.plan,
		Observed:   r.observed,
		Composed:   composed,
		Existing:   r.required.Existing,
		Gate:       r.required.GateObjects,
		Owner:      r.owner,
		Conditions: compose.ObservedConditions(oxr.Resource.Object),
		Now:        f.clock.Now(),
		Querier:    f.querier,
		Credentials: func(name string) (map[string][]byte, error) {
			c, err := request.GetCredentials(req, name)
			return c.Data, err
		},
		Taken:        pipeline.Measurements(req),
		ObserveQuery: f.metrics.Query,
		Workload:     r.required.CanaryWorkload,
		Caller:       callerFor(f.caller, oxr),
		ObserveHook:  f.metrics.HookCall,
		HookCalls:    pipeline.HookCalls(req),
	})
	if err != nil {
		return nil, telemetry.Outcome{}, err
	}

	rsp := pipeline.NewResponse(req, out.Requeue)
	pending := false
	for _, p := range r.plan.Routes() {
		pending = pending || pipeline.SchemasPending(req, p.Versions.Source)
	}
	if !pending {
		rsp.Requirements = &fnv1.Requirements{Resources: pipeline.Resources(r.cr, r.self, out.Targets)}
	}
	for _, p := range r.plan.Routes() {
		pipeline.RequireSchemas(rsp, req, r.selfGVK, p.Need, p.Versions.Source)
	}
	// Crossplane applies this answer (its requirements are the call
	// before's): the hooks are told what it does.
	if pipeline.Settled(req, rsp) {
		out = out.Told()
	}
	if err := setDesired(rsp, out.Objects); err != nil {
		return nil, telemetry.Outcome{}, errors.Wrap(err, errSetDesired)
	}
	status := xr.Status{Rollout: &out.Rollout, Routes: out.Routes, Release: out.Release}
	if out.Routes == nil {
		status.Route = &out.Route
	}
	if err := pipeline.SetStatus(rsp, req, status); err != nil {
		return nil, telemetry.Outcome{}, errors.Wrap(err, errSetStatus)
	}
	if out.Record != nil {
		if err := pipeline.SetRelease(rsp, out.Record); err != nil {
			return nil, telemetry.Outcome{}, errors.Wrap(err, errSetStatus)
		}
	}
	pipeline.RecordMeasurements(rsp, out.Measured)
	pipeline.RecordHookCalls(rsp, out.HookCalls)
	for _, w := range out.Warnings {
		pipeline.Event(rsp, true, w.Reason, w.Message)
	}
	pipeline.SetConditions(rsp, out.Conditions...)
	outcome := telemetry.Outcome{
		Result: telemetry.ResultComposed, FailureReason: out.Rollout.Reason,
		Rollout: telemetry.RolloutOf(string(oxr.Resource.GetUID()), oxr.Resource.GetNamespace(), oxr.Resource.GetName(), len(r.cr.Spec.Traffic.Steps), &out.Rollout),
	}
	for _, e := range out.Events {
		pipeline.Event(rsp, e.Warning, e.Reason, e.Message)
		log.Info(e.Message, "reason", e.Reason)
		outcome.Transitions = append(outcome.Transitions, e.Reason)
	}
	log.Debug("Composed route", "kind", r.cr.Spec.Kind, "canaryWeight", out.Decision.CanaryWeight, "phase", out.Rollout.Phase)
	return rsp, outcome, nil
}

// facts are what one pipeline run has read: the CanaryRoute, what Crossplane
// handed over (the required resources, the observed composed resources by
// key), who composes, and the plan they make.
type facts struct {
	cr       *xr.CanaryRoute
	required pipeline.Fetched
	observed map[names.Key]map[string]any
	self     ownership.Ref
	owner    ownership.Composite
	selfGVK  schema.GroupVersionKind
	plan     *compose.Plan
}

// read reads the request: the policy, the CanaryRoute from the observed XR,
// the required resources and the observed composed resources; then it
// resolves the CanaryRoute under the policy, chooses the versions it
// composes from what the cluster serves, and plans it.
func (f *Function) read(req *fnv1.RunFunctionRequest, oxr *resource.Composite) (*facts, error) {
	if err := pipeline.CheckCapabilities(req); err != nil {
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
	r := &facts{
		cr:      cr,
		self:    ownership.Ref{APIVersion: oxr.Resource.GetAPIVersion(), Kind: oxr.Resource.GetKind(), Name: oxr.Resource.GetName()},
		owner:   ownership.Composite{Name: oxr.Resource.GetName(), UID: string(oxr.Resource.GetUID())},
		selfGVK: oxr.Resource.GroupVersionKind(),
	}
	if r.required, err = request.GetRequiredResources(req); err != nil {
		return nil, errors.Wrap(err, errRequest)
	}
	if cr.Scope == xr.ScopeClaim {
		claims, answered := r.required.Required(pipeline.Claim)
		cr.ClaimProven = ownership.Claimed(cr.Claim, r.self, claims, answered)
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		return nil, errors.Wrap(err, errRequest)
	}
	r.observed = pipeline.Observed(observed)
	compiler, err := f.compiler()
	if err != nil {
		return nil, err
	}
	if !cr.Spec.MultiRoute() {
		r.plan, err = f.plan(req, r, cr, pol, compiler)
		return r, err
	}
	// One plan per route (spec.routes), each chosen its versions as a
	// single route's would be; together they are the run's plan.
	views := cr.Views()
	plans := make([]*compose.Plan, len(views))
	for i, view := range views {
		if plans[i], err = f.plan(req, r, view, pol, compiler); err != nil {
			return nil, err
		}
	}
	r.plan = compose.Together(plans)
	return r, nil
}

// plan resolves a CanaryRoute (or the view of one of its routes) under the
// policy, chooses the versions it composes from what the cluster serves,
// and plans it.
func (f *Function) plan(req *fnv1.RunFunctionRequest, r *facts, cr *xr.CanaryRoute, pol *policy.Policy, compiler *expr.Compiler) (*compose.Plan, error) {
	resolved, err := compose.Resolve(cr, pol, compiler)
	if err != nil {
		return nil, err
	}
	versions, errs := served.ForRun(resolved.Need, resolved.Overrides(), versionSources(req, r.selfGVK, resolved, r.observed, f.clock.Now()))
	if len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), served.ErrNotServed)
	}
	return resolved.Plan(versions)
}

// callerFor is the caller of a run's webhooks: none for an XR without a
// UID, which no API server hands over (it gives every object one) and
// crossplane render does, whatever the function's flags: a render, like a
// preview, calls no webhook.
func callerFor(c hooks.Caller, oxr *resource.Composite) hooks.Caller {
	if oxr.Resource.GetUID() == "" {
		return nil
	}
	return c
}
