package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// XR condition types that the function owns.
const (
	conditionRouteAccepted        = "RouteAccepted"
	conditionReferenceGrantsReady = "ReferenceGrantsReady"
	conditionRolloutHealthy       = "RolloutHealthy"
	// conditionComposed says whether the function composes the
	// CanaryRoute or refuses it (a Fatal). Crossplane's Synced says so on
	// the XR only; a claim carries this one too.
	conditionComposed = "Composed"
)

// Condition reasons of the function's own, beside the gateway's and the
// grant package's.
const (
	reasonAccepted = "Accepted"
	reasonReady    = "Ready"
	reasonSkipped  = "Skipped"
	reasonComposed = "Composed"
	reasonRefused  = "Refused"
)

// ownConditions are re-sent with a Fatal result, so they keep their last
// value instead of turning Unknown.
var ownConditions = []string{conditionRouteAccepted, conditionReferenceGrantsReady, conditionRolloutHealthy}

// newResponse is response.To with a desired state of the response's own:
// response.To shares the request's, and the function never writes into the
// request it was given.
func newResponse(req *fnv1.RunFunctionRequest, ttl time.Duration) *fnv1.RunFunctionResponse {
	rsp := response.To(req, ttl)
	rsp.Desired = &fnv1.State{Composite: req.GetDesired().GetComposite(), Resources: maps.Clone(req.GetDesired().GetResources())}
	return rsp
}

// setDesired adds composed objects to the response's desired composed
// resources, each with its readiness.
func setDesired(rsp *fnv1.RunFunctionResponse, objects []compose.Object) error {
	desired := make(map[resource.Name]*resource.DesiredComposed, len(objects))
	for _, o := range objects {
		u, err := asComposed(o.Object)
		if err != nil {
			return fmt.Errorf("cannot convert the composed %s: %w", o.Key, err)
		}
		d := &resource.DesiredComposed{Resource: u, Ready: resource.ReadyFalse}
		if o.Ready {
			d.Ready = resource.ReadyTrue
		}
		desired[resource.Name(o.Key)] = d
	}
	return response.SetDesiredComposedResources(rsp, desired)
}

// asComposed converts a typed object to a composed resource. Composed
// objects never carry status (the function has no opinion on it) nor a
// creation timestamp. The API machinery's converter honours the types' JSON
// tags, omitempty included, as encoding/json does.
func asComposed(obj runtime.Object) (*composed.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	return &composed.Unstructured{Unstructured: unstructured.Unstructured{Object: m}}, nil
}

// setStatus writes the status fields that the function owns onto the
// desired XR, leaving whatever earlier functions in the pipeline set.
func setStatus(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, rs xr.RolloutStatus, rts *xr.RouteStatus) error {
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return err
	}
	// Bounded: a status the API server refuses would never be written.
	rs = rs.Bounded()
	if err := setTyped(dxr.Resource.Object, &rs, "status", "rollout"); err != nil {
		return err
	}
	if rts != nil {
		bounded := rts.Bounded()
		if err := setTyped(dxr.Resource.Object, &bounded, "status", "route"); err != nil {
			return err
		}
	}
	return response.SetDesiredCompositeResource(rsp, dxr)
}

// setTyped writes a typed value into an object at a path, converted by the
// API machinery as it honours the type's JSON tags. It does what the SDK's
// SetValue does without a trip through JSON text, which cost a tenth of a
// run (docs/performance.md).
func setTyped(obj map[string]any, v any, path ...string) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		return err
	}
	return unstructured.SetNestedField(obj, m, path...)
}

// fatal answers with a Fatal result: Crossplane then applies nothing, so the
// route keeps its last good weights. The function's conditions are re-sent
// as the XR last had them, so that bad input never turns them Unknown.
//
// oxr is the observed XR, converted once by the run; nil converts it here
// (a panic recovered), if it converts at all.
func fatal(req *fnv1.RunFunctionRequest, oxr *resource.Composite, err error) *fnv1.RunFunctionResponse {
	rsp := response.To(req, response.DefaultTTL)
	response.Fatal(rsp, err)
	if oxr == nil {
		oxr, _ = request.GetObservedCompositeResource(req)
	}
	resendConditions(rsp, oxr)
	setRefused(rsp, err.Error())
	return rsp
}

// setRefused sets the Composed condition False with why the function
// refuses the CanaryRoute, bounded like every status it writes.
func setRefused(rsp *fnv1.RunFunctionResponse, why string) {
	response.ConditionFalse(rsp, conditionComposed, reasonRefused).
		WithMessage(xr.CutRunes(why, xr.MaxStatusMessage)).TargetCompositeAndClaim()
}

// priorCondition is one of the function's conditions as the observed XR
// has it; empty when it has none.
func priorCondition(oxr *resource.Composite, typ string) xpv2.Condition {
	if oxr == nil {
		return xpv2.Condition{}
	}
	return observedConditions(oxr.Resource.Object)[xpv2.ConditionType(typ)]
}

// resendConditions sets the function's conditions as the observed XR has
// them, but for those in skip, so that they keep their value instead of
// turning Unknown in a run that does not compute them.
func resendConditions(rsp *fnv1.RunFunctionResponse, oxr *resource.Composite, skip ...string) {
	if oxr == nil {
		return
	}
	observed := observedConditions(oxr.Resource.Object)
	for _, typ := range ownConditions {
		c := observed[xpv2.ConditionType(typ)]
		// A condition the XR does not carry comes back Unknown without a
		// reason; the function always gives one.
		if c.Reason == "" || slices.Contains(skip, typ) {
			continue
		}
		var opt *response.ConditionOption
		switch c.Status {
		case "True":
			opt = response.ConditionTrue(rsp, typ, string(c.Reason))
		case "False":
			opt = response.ConditionFalse(rsp, typ, string(c.Reason))
		default:
			opt = response.ConditionUnknown(rsp, typ, string(c.Reason))
		}
		if c.Message != "" {
			opt = opt.WithMessage(c.Message)
		}
		opt.TargetCompositeAndClaim()
	}
}

// observedConditions reads the XR's conditions one by one, the first of
// each type: a condition that does not decode (written by another writer
// with a time the API machinery does not read back) is skipped, and keeps
// none of the others from being re-sent.
func observedConditions(obj map[string]any) map[xpv2.ConditionType]xpv2.Condition {
	items, _, _ := unstructured.NestedFieldNoCopy(obj, "status", "conditions")
	list, _ := items.([]any)
	out := make(map[xpv2.ConditionType]xpv2.Condition, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var c xpv2.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			continue
		}
		if _, seen := out[c.Type]; !seen {
			out[c.Type] = c
		}
	}
	return out
}

// setConditions sets the function's XR conditions, and a Warning for every
// reference the policy refused or grant the XR cannot compose.
// prior are the XR's conditions as observed.
func setConditions(rsp *fnv1.RunFunctionResponse, prior map[xpv2.ConditionType]xpv2.Condition, cr *xr.CanaryRoute, obs route.Observation, grants grant.Result, d rollout.Decision) {
	if v, held := obs.FirstHold(); held || !obs.Exists {
		reason, msg := route.ReasonPending, "the route has not been created yet"
		if obs.Exists {
			// The gateway's own reason and message, bounded like any
			// status the function writes.
			reason, msg = xr.CutRunes(v.Reason, xr.MaxStatusValue), xr.CutRunes(explainHold(v), xr.MaxStatusMessage)
		}
		response.ConditionFalse(rsp, conditionRouteAccepted, reason).WithMessage(msg).TargetCompositeAndClaim()
	} else {
		response.ConditionTrue(rsp, conditionRouteAccepted, reasonAccepted).
			WithMessage("every parent accepted the route and resolved its references").TargetCompositeAndClaim()
	}

	problems := make([]string, 0, len(grants.Refused)+len(grants.NotComposable))
	type warning struct{ reason, msg string }
	var warnings []warning
	reason := ""
	for _, r := range grants.Refused {
		msg := fmt.Sprintf("the %s backend %s is refused: %s", r.Role, compose.DescribeRef(r.Ref), r.Reason)
		problems = append(problems, msg)
		reason = grant.ReasonNotAllowedByPolicy
		if cr.Spec.ReferenceGrants != xr.GrantsSkip {
			warnings = append(warnings, warning{grant.ReasonNotAllowedByPolicy, msg})
		}
	}
	for _, g := range grants.NotComposable {
		msg := "a namespaced CanaryRoute cannot compose into another namespace; the platform team must create " + grant.Describe(g)
		problems = append(problems, msg)
		if reason == "" {
			reason = grant.ReasonGrantNotComposable
		}
		warnings = append(warnings, warning{grant.ReasonGrantNotComposable, msg})
	}
	// Bounded like every status the function writes, and every Fatal.
	problemsMsg := xr.CutRunes(fielderr.List(problems, "; "), xr.MaxStatusMessage)
	// A refusal that persists is said once, when it starts: the XR's
	// condition already says it, and a Warning on every reconcile would use
	// up the XR's event budget, hiding the rollout's transitions.
	if prior := prior[conditionReferenceGrantsReady]; prior.Status != "False" || string(prior.Reason) != reason ||
		prior.Message != problemsMsg {
		for i, w := range warnings {
			if i == fielderr.MaxErrors {
				response.Warning(rsp, fmt.Errorf("and %d more references refused or grants not composable: see the ReferenceGrantsReady condition", len(warnings)-i)).
					WithReason(w.reason).TargetCompositeAndClaim()
				break
			}
			response.Warning(rsp, errors.New(w.msg)).WithReason(w.reason).TargetCompositeAndClaim()
		}
	}
	switch {
	case cr.Spec.ReferenceGrants == xr.GrantsSkip:
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonSkipped).
			WithMessage("spec.referenceGrants is Skip: grants are managed outside this CanaryRoute").TargetCompositeAndClaim()
	case len(problems) > 0:
		response.ConditionFalse(rsp, conditionReferenceGrantsReady, reason).
			WithMessage(problemsMsg).TargetCompositeAndClaim()
	case len(grants.Grants) == 0:
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonReady).
			WithMessage("no backend in another namespace needs a ReferenceGrant").TargetCompositeAndClaim()
	default:
		namespaces := make([]string, 0, len(grants.Grants))
		for _, g := range grants.Grants {
			namespaces = append(namespaces, g.Namespace)
		}
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonReady).
			WithMessage(xr.CutRunes("ReferenceGrants composed in namespaces: "+fielderr.List(namespaces, ", "), xr.MaxStatusMessage)).TargetCompositeAndClaim()
	}

	response.ConditionTrue(rsp, conditionComposed, reasonComposed).TargetCompositeAndClaim()
	if d.Healthy {
		response.ConditionTrue(rsp, conditionRolloutHealthy, string(d.Status.Phase)).
			WithMessage(rolloutMessage(d.Status)).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, conditionRolloutHealthy, d.Reason).
			WithMessage(rolloutMessage(d.Status)).TargetCompositeAndClaim()
	}
}

func rolloutMessage(s xr.RolloutStatus) string {
	if s.Message != "" {
		return s.Message
	}
	return fmt.Sprintf("%s: canary %d%%, primary %d%%", s.Phase, s.CanaryWeight, s.PrimaryWeight)
}

// explainHold says why a parent does not accept the route, with the
// parent's own message, for the RouteAccepted condition.
func explainHold(v route.ParentVerdict) string {
	if v.Message == "" {
		return compose.DescribeHold(v)
	}
	return compose.DescribeHold(v) + ": " + v.Message
}

// compositeName and compositeNamespace read the observed XR's name and
// namespace for the log, without converting the whole XR.
func compositeName(req *fnv1.RunFunctionRequest) string { return compositeMeta(req, "name") }

func compositeNamespace(req *fnv1.RunFunctionRequest) string { return compositeMeta(req, "namespace") }

func compositeMeta(req *fnv1.RunFunctionRequest, field string) string {
	return req.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields()[field].GetStringValue()
}
