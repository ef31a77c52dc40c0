// Package run composes one run of the function on typed values: from the
// plan of a CanaryRoute and what Crossplane handed over (the observed
// composed resources, the objects fetched for the requirements, the XR's
// conditions) and the clock, to what the run composes and says: the
// objects, status.rollout and status.route, the conditions, the Warnings
// and the rollout's events. Package main reads the request into an In and
// writes an Out into the response.
package run

import (
	"context"
	"fmt"
	"maps"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/observe"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/release"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	errObservedRoute   = "cannot read the observed route"
	errObservedPreview = "cannot read the observed preview route"
	errBuildRoute      = "the composed route would be rejected by the Gateway API"
	errCompose         = "cannot set the desired composed resources"
	errDeadline        = "the run ran out of time"
)

// In is what a run composes from.
type In struct {
	Plan *compose.Plan
	// Observed are the observed composed resources, by key.
	Observed map[names.Key]map[string]any
	// Composed is what the newest decision the function answered for the
	// XR composed, when the run decides on that decision's status; nil
	// otherwise. A hold re-emits it rather than the observed objects, and
	// a release's canary Service keeps the revision it was composed to
	// select: Crossplane's caches lag, and holding what was observed
	// seconds ago would move a route's weights, or a Service, back.
	Composed Composition
	// Existing are the objects Crossplane fetched for a target (an object
	// the run is about to compose), and Gate those it fetched for the i-th
	// gate.
	Existing func(names.Key) []metav1.Object
	Gate     func(i int) []*unstructured.Unstructured
	// Owner is the XR that composes.
	Owner ownership.Composite
	// Conditions are the XR's conditions, as observed.
	Conditions map[xpv2.ConditionType]xpv2.Condition
	Now        time.Time

	// Querier sends the metrics' queries; nil queries nothing (a
	// preview, which says a measurement is due instead).
	Querier promql.Querier
	// Credentials are the pipeline step's credentials of a name.
	Credentials func(name string) (map[string][]byte, error)
	// Taken are the measurements that an earlier call of this reconcile
	// took: Crossplane calls the function several times a reconcile, and a
	// metric is measured once an interval.
	Taken map[string]xr.Measurement
	// ObserveQuery counts each query; nil counts nothing.
	ObserveQuery func(provider, outcome string, took time.Duration)
	// Workload is the object Crossplane fetched for a release's revision
	// (see pipeline.Workload); nil for none.
	Workload func(revision string) map[string]any
	// Caller calls the hooks' webhooks; nil calls nothing (a preview,
	// whose decision says which hooks it waits for).
	Caller hooks.Caller
	// HookCalls are the records of the hooks' calls that earlier calls of
	// this reconcile made: a hook is called once per transition however
	// often Crossplane calls.
	HookCalls map[string]xr.HookStatus
	// ObserveHook counts each call of a hook's webhook; nil counts
	// nothing.
	ObserveHook func(hookType, result string, took time.Duration)
}

// A Composition is what a decision composed, by composed resource key.
type Composition interface {
	// Object is the object composed under a key; nil for none.
	Object(key string) map[string]any
	// All are every object composed.
	All() map[string]map[string]any
}

// Out is what a run composes and says.
type Out struct {
	// Objects are the composed objects, the current step's analysis
	// objects last.
	Objects []compose.Object
	// Targets are the objects the run is about to compose, by identity:
	// the requirements it makes of them keep them from being composed over
	// another owner's.
	Targets []names.Target
	// Rollout and Route are status.rollout and status.route; Routes is
	// status.routes instead of Route with spec.routes (Route is then its
	// zero value, and not written).
	Rollout xr.RolloutStatus
	Route   xr.RouteStatus
	Routes  []xr.RouteStatus
	// Conditions and Warnings are the XR's conditions and the Warnings
	// about references and grants; Events the rollout's transitions.
	Conditions []xr.Condition
	Warnings   []compose.Warning
	Events     []rollout.Event
	// Requeue is when Crossplane should call again.
	Requeue time.Duration
	// Decision is the rollout engine's.
	Decision rollout.Decision
	// Measured are the measurements of this reconcile, the earlier calls'
	// included, for the calls after this one.
	Measured map[string]xr.Measurement
	// HookCalls are the records of this reconcile's hook calls, the
	// earlier calls' included, for the calls after this one.
	HookCalls map[string]xr.HookStatus
	// hooks and hookSpec tell the event and post-rollout hooks (Told).
	hooks    *hookRun
	hookSpec []xr.Hook
	// Release is status.release, and Record what the pipeline's next step
	// reads of the release: nil without a release.
	Release *xr.ReleaseStatus
	Record  *release.Record
}

// Run reads what the cluster holds, decides the weights and composes.
// An error is bad input, for a Fatal result; it names the CanaryRoute's or
// the Input's field.
func Run(ctx context.Context, in In) (Out, error) {
	plan, cr := in.Plan, in.Plan.CR
	// Every route of the rollout (one, or spec.routes'), and its preview
	// route, observed whether the spec still has one: while it exists, it
	// sends the canary requests.
	routes := plan.Routes()
	observations := make([]route.Observation, 2*len(routes))
	obs, previewObs := observations[:len(routes)], observations[len(routes):]
	for i, q := range routes {
		var err error
		if obs[i], err = route.Observe(in.Observed[q.RouteKey()], q.CR.RouteNamespace, q.CR.Spec.ParentRefs); err != nil {
			return Out{}, errors.Wrap(err, errObservedRoute)
		}
		if previewObs[i], err = route.Observe(in.Observed[q.PreviewKey()], q.CR.RouteNamespace, q.CR.Spec.ParentRefs); err != nil {
			return Out{}, errors.Wrap(err, errObservedPreview)
		}
	}
	// Never compose over an object that this XR did not compose.
	targets := plan.Targets()
	for _, q := range routes[1:] {
		targets = append(targets, q.Targets()...)
	}
	if err := ownership.Check(in.Owner, targets, in.Existing); err != nil {
		return Out{}, err
	}
	if err := workloadOwned(cr, in); err != nil {
		return Out{}, err
	}
	grants := plan.AllGrants()
	// One budget bounds every expression this run evaluates.
	budget := &expr.Budget{}
	ri := rollout.Input{
		Traffic:             cr.Spec.Traffic,
		Revision:            cr.Spec.Canary.Revision,
		CanaryDigest:        plan.CanaryDigest(),
		Previous:            cr.Status.Rollout,
		RouteAtStep:         plan.RoutesAtStep(obs),
		RouteMissing:        compose.NoneObserved(obs),
		Gates:               observe.Gates(ctx, budget, cr.Spec.Traffic.Gates, cr.RouteNamespace, in.Gate, plan.Program),
		Analysis:            observe.Analysis(ctx, budget, cr.Spec.Traffic, cr.RouteName, in.Observed, plan.Program),
		CanaryRefused:       grants.CanaryRefused(),
		CanaryRefusedReason: plan.CanaryRefusalOfAll(),
		Now:                 in.Now,
	}
	ri.Measured = measured(ctx, in, ri, budget)
	// The hooks the decision asks about are called, and it decides again
	// with their answers.
	hr := newHookRun(ctx, in, cr.Status.Rollout)
	d, rel, err := decide(in, plan, ri, hr, plan.RoutesWithoutCanary(obs, previewObs))
	if err != nil {
		return Out{}, err
	}
	if rel != nil {
		// A promotion moves the primary Service before the route; leaving
		// one keeps the canary Service on the promoted revision meanwhile:
		// the run composes the plan with the revisions its Services select.
		plan = plan.WithRevisions(rel.PrimaryRevision, rel.CanaryRevision)
		cr = plan.CR
	}

	// The route is built and checked even when the previous composition is
	// held: a spec that cannot be composed is a Fatal either way.
	built, errs := plan.BuildRoutes(d.CanaryWeight, d.Active, d.Status.Step)
	if len(errs) > 0 {
		return Out{}, errors.Wrap(fielderr.Summarize(errs), errBuildRoute)
	}
	// The current step's analysis objects, which depend on the decision:
	// never composed over an object another owner manages either.
	var analysis []compose.Object
	if step := d.Status.Step; step != nil && len(d.Analysis) > 0 {
		analysis = plan.AnalysisObjects(*step, d.Analysis, d.Status.Attempt, in.Observed)
	}
	analysisTargets := plan.AnalysisTargets(analysis)
	if err := ownership.Check(in.Owner, analysisTargets, in.Existing); err != nil {
		return Out{}, err
	}
	if err := ctx.Err(); err != nil {
		return Out{}, errors.Wrap(err, errDeadline)
	}
	held := heldObjects(in, d)
	moving := canaryMoving(cr, in.Observed[names.KeyServiceCanary])
	previews := make([]compose.PreviewState, len(routes))
	for i := range routes {
		previews[i] = compose.PreviewState{Observed: previewObs[i], CanaryMoving: moving}
	}
	objects, canaryBackends, d, err := plan.RoutesObjects(built, obs, d, held, previews)
	if err != nil {
		return Out{}, errors.Wrap(err, errCompose)
	}
	// The event and post-rollout hooks are told once the caller knows
	// Crossplane applies the answer (Out.Told).
	d.Status.Hooks = rollout.HookStatuses(cr.Spec.Traffic.Hooks, hr.records)
	out := Out{
		Objects:   append(objects, analysis...),
		Targets:   append(targets, analysisTargets...),
		Rollout:   d.Status,
		Events:    d.Events,
		Requeue:   d.Requeue,
		Decision:  d,
		Measured:  ri.Measured,
		HookCalls: hr.carried(),
		hooks:     hr,
		hookSpec:  cr.Spec.Traffic.Hooks,
	}
	out.Rollout.CanaryBackends = canaryBackends
	if cr.Spec.MultiRoute() {
		out.Routes = plan.RoutesStatus(obs, func(q *compose.Plan) *xr.ServedVersions { return q.ServedVersions(in.Now) })
	} else {
		out.Route = compose.RouteStatus(cr, obs[0])
		out.Route.Versions = plan.ServedVersions(in.Now)
	}
	if rel != nil {
		out.Release, out.Record = &rel.Status, &rel.Record
	}
	out.Conditions, out.Warnings = plan.RoutesConditions(in.Conditions, obs, grants, d)
	return out, nil
}

// heldObjects are the objects a run holds: what the newest decision
// composed, when the decision holds it and it is known; else what was
// observed.
func heldObjects(in In, d rollout.Decision) map[names.Key]map[string]any {
	if !d.HoldPrevious || in.Composed == nil {
		return in.Observed
	}
	held := map[names.Key]map[string]any{}
	for k, o := range in.Composed.All() {
		held[names.Key(k)] = o
	}
	return held
}

// decide is the decision of the run, and a release's: the engine's (with
// a release, release.Decide's around it), with the hooks it asks about
// called. None is called for a spec that cannot be composed, a Fatal
// whatever they answer. routeWithoutCanary is plan.RoutesWithoutCanary of
// the observed routes.
func decide(in In, plan *compose.Plan, ri rollout.Input, hr *hookRun, routeWithoutCanary func() (bool, string)) (rollout.Decision, *release.Decision, error) {
	composable := func(d rollout.Decision) error {
		if _, errs := plan.BuildRoutes(d.CanaryWeight, d.Active, d.Status.Step); len(errs) > 0 {
			return errors.Wrap(fielderr.Summarize(errs), errBuildRoute)
		}
		return nil
	}
	cr := plan.CR
	r := cr.Spec.Release
	if r == nil {
		d, err := hr.decide(ri, composable, rollout.Decide)
		return d, nil, err
	}
	var rd release.Decision
	d, err := hr.decide(ri, composable, func(ri rollout.Input) rollout.Decision {
		rd = release.Decide(release.Input{
			Rollout: ri, Release: r, Status: cr.Status.Release,
			ObservedPrimary:    observedRevision(in.Observed[names.KeyServicePrimary], r.RevisionLabel),
			ObservedCanary:     observedRevision(in.Observed[names.KeyServiceCanary], r.RevisionLabel),
			ComposedPrimary:    composedRevision(in.Composed, names.KeyServicePrimary, r.RevisionLabel),
			ComposedCanary:     composedRevision(in.Composed, names.KeyServiceCanary, r.RevisionLabel),
			Ready:              readiness(r, in.Workload),
			RouteWithoutCanary: routeWithoutCanary,
		})
		return rd.Rollout
	})
	return d, &rd, err
}

// measured are the measurements of this run: those an earlier call of the
// reconcile took, and those due now, taken all at once.
func measured(ctx context.Context, in In, ri rollout.Input, budget *expr.Budget) map[string]xr.Measurement {
	due := rollout.Due(ri, in.Taken)
	if len(due) == 0 {
		return in.Taken
	}
	plan, cr := in.Plan, in.Plan.CR
	side := func(b backend.Backend, revision string) promql.Values {
		return promql.Values{Namespace: b.Namespace, Route: cr.RouteName, Service: string(b.Ref.Name), Revision: revision}
	}
	taken := observe.Metrics(ctx, observe.MetricsIn{
		Metrics:     due,
		Providers:   plan.Policy.MetricProviders,
		Credentials: in.Credentials,
		Querier:     in.Querier,
		Program:     plan.MetricProgram,
		Budget:      budget,
		Canary:      side(plan.Canary, cr.Spec.Canary.Revision),
		Primary:     side(plan.Primary, cr.Spec.PrimaryRevision()),
		Step:        *cr.Status.Rollout.Step,
		Now:         in.Now,
		Observe:     in.ObserveQuery,
	})
	out := maps.Clone(in.Taken)
	if out == nil {
		out = map[string]xr.Measurement{}
	}
	maps.Copy(out, taken)
	return out
}

// observedRevision is the revision an observed proxy Service selects; ""
// for none.
func observedRevision(svc map[string]any, label string) string {
	selector, _, _ := unstructured.NestedStringMap(svc, "spec", "selector")
	return selector[label]
}

// canaryMoving reports whether a release's canary Service, as observed,
// does not select the revision this run composes it to select: it moves
// on this run, or its last move has not been observed yet (or it was
// never observed). The preview route waits for it.
func canaryMoving(cr *xr.CanaryRoute, observed map[string]any) bool {
	r := cr.Spec.Release
	if r == nil || cr.Spec.Canary.Service == nil {
		return false
	}
	return observedRevision(observed, r.RevisionLabel) != cr.Spec.Canary.Service.Selector[r.RevisionLabel]
}

// composedRevision is the revision a Service the newest decision composed
// selects; "" for none, or when no decision is known.
func composedRevision(c Composition, key names.Key, label string) string {
	if c == nil {
		return ""
	}
	return observedRevision(c.Object(string(key)), label)
}

// workloadOwned refuses a release whose canary workload exists and was not
// composed by this XR. The pipeline's next step composes the workloads by
// the name spec.release.workload gives, and the revision is the author's to
// choose: a name that lands on another team's Deployment would have
// Crossplane adopt it (server-side apply takes it over) and delete it once
// the revision leaves the record. The takeover rule of the objects the
// function composes itself holds for the ones it makes the next step
// compose.
func workloadOwned(cr *xr.CanaryRoute, in In) error {
	r := cr.Spec.Release
	if r == nil || r.Workload == nil || in.Workload == nil {
		return nil
	}
	revision := cr.Spec.Canary.Revision
	obj := in.Workload(revision)
	if obj == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetName() != r.Workload.NameOf(revision) || ownership.OwnedBy(u, in.Owner) {
		return nil
	}
	return field.Forbidden(field.NewPath("spec", "release", "workload"), fmt.Sprintf(
		"%s %s/%s exists and was not composed by this CanaryRoute: refusing to take it over (choose another workload name, or label it %s=%s to hand it over)",
		fielderr.Quote(u.GetKind()), u.GetNamespace(), fielderr.Quote(u.GetName()), ownership.LabelComposite, in.Owner.Name))
}

// readiness reads a release's workloads for their ready replicas; nil
// when the release names no workload.
func readiness(r *xr.Release, workload func(revision string) map[string]any) func(string) (int32, bool) {
	if r.Workload == nil || workload == nil {
		return nil
	}
	return func(revision string) (int32, bool) {
		obj := workload(revision)
		if name, _, _ := unstructured.NestedString(obj, "metadata", "name"); obj == nil || name != r.Workload.NameOf(revision) {
			return 0, false
		}
		// Numbers come as float64 from the request, int64 from elsewhere.
		v, _, _ := unstructured.NestedFieldNoCopy(obj, "status", "readyReplicas")
		var ready float64
		switch n := v.(type) {
		case float64:
			ready = n
		case int64:
			ready = float64(n)
		}
		return int32(min(max(ready, 0), 1<<30)), true
	}
}
