package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/metrics"
	"github.com/crossplane-contrib/function-canary-route/internal/reconcile"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// ownConditions are re-sent with a Fatal result, so they keep their last
// value instead of turning Unknown.
var ownConditions = []string{compose.ConditionRouteAccepted, compose.ConditionReferenceGrantsReady, compose.ConditionRolloutHealthy}

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
	setCondition(rsp, compose.Condition{Type: compose.ConditionComposed, Status: metav1.ConditionFalse, Reason: compose.ReasonRefused, Message: xr.CutRunes(why, xr.MaxStatusMessage)})
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
		setCondition(rsp, compose.Condition{Type: typ, Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message})
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

// setConditions sets the XR's conditions and emits the Warnings, on the
// XR and its claim.
func setConditions(rsp *fnv1.RunFunctionResponse, conditions []compose.Condition, warnings []compose.Warning) {
	for _, w := range warnings {
		event(rsp, true, w.Reason, w.Message)
	}
	for _, c := range conditions {
		setCondition(rsp, c)
	}
}

// setCondition sets one of the XR's conditions, on the XR and its claim.
func setCondition(rsp *fnv1.RunFunctionResponse, c compose.Condition) {
	var opt *response.ConditionOption
	switch c.Status {
	case metav1.ConditionTrue:
		opt = response.ConditionTrue(rsp, c.Type, c.Reason)
	case metav1.ConditionFalse:
		opt = response.ConditionFalse(rsp, c.Type, c.Reason)
	default:
		opt = response.ConditionUnknown(rsp, c.Type, c.Reason)
	}
	if c.Message != "" {
		opt = opt.WithMessage(c.Message)
	}
	opt.TargetCompositeAndClaim()
}

// event emits a result, Normal or Warning, which Crossplane turns into an
// event on the XR and its claim.
func event(rsp *fnv1.RunFunctionResponse, warning bool, reason, message string) {
	if warning {
		response.Warning(rsp, errors.New(message)).WithReason(reason).TargetCompositeAndClaim()
		return
	}
	response.Normal(rsp, message).WithReason(reason).TargetCompositeAndClaim()
}

// compositeName and compositeNamespace read the observed XR's name and
// namespace for the log, without converting the whole XR.
func compositeName(req *fnv1.RunFunctionRequest) string { return compositeMeta(req, "name") }

func compositeNamespace(req *fnv1.RunFunctionRequest) string { return compositeMeta(req, "namespace") }

func compositeMeta(req *fnv1.RunFunctionRequest, field string) string {
	return req.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields()[field].GetStringValue()
}

const (
	// reasonAbortNotApplied: the abort was asked for, but the canary could
	// not be told apart from the primary, so nothing was changed.
	reasonAbortNotApplied = "AbortNotApplied"

	msgCannotTellApartFmt = "spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names %s. Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand"
	msgRescueFmt          = "spec.traffic.abort is set: the canary is held at 0%% in the last composed route, although the CanaryRoute cannot be composed: %s"
)

// rescued answers an emergency abort of a CanaryRoute that cannot be
// composed (see compose.RescueAbort): what the previous run composed with
// the canary at 0%, or, when the canary cannot be told apart from the
// primary, the Fatal with a Warning that says why the abort was not
// applied. It reports false when the rescue cannot be written.
func rescued(req *fnv1.RunFunctionRequest, oxr *resource.Composite, r compose.Rescue, cause error) (*fnv1.RunFunctionResponse, metrics.Outcome, bool) {
	if r.NotApplied != "" {
		return cannotTellApart(req, oxr, cause, r.NotApplied), metrics.Outcome{Result: metrics.ResultFatal}, true
	}
	rsp := newResponse(req, rollout.MaxRequeue)
	// The requirements of the call before: Crossplane applies a response
	// once its requirements stop changing, and a rescue with none after a
	// call that made some would send it back for a call that composes
	// again, and so on until it gives up the reconcile.
	rsp.Requirements = reconcile.Own(reconcile.Previous(req))
	if setDesired(rsp, r.Objects) != nil || setStatus(rsp, req, r.Status, nil) != nil {
		return nil, metrics.Outcome{}, false
	}
	out := metrics.Outcome{Result: metrics.ResultAbortRescued}
	// Said once, on the run that rescues the abort: the runs after it
	// change nothing, and a Warning on each would spend the XR's event
	// budget.
	if r.Prior.Phase != xr.PhaseAborted || r.Prior.Reason != rollout.ReasonAbortRescued {
		event(rsp, true, rollout.EventAborted, fmt.Sprintf(msgRescueFmt, cause.Error()))
		out.Transitions = append(out.Transitions, rollout.EventAborted)
	}
	resendConditions(rsp, oxr, compose.ConditionRolloutHealthy)
	setCondition(rsp, compose.Condition{Type: compose.ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: rollout.ReasonAborted, Message: compose.MsgRescuedAbort})
	setRefused(rsp, cause.Error())
	return rsp, out, true
}

// cannotTellApart answers an abort whose recorded canary backends name the
// primary: the Fatal stands (Crossplane applies nothing, so nothing changes),
// and a Warning and RolloutHealthy say why the abort was not applied.
func cannotTellApart(req *fnv1.RunFunctionRequest, oxr *resource.Composite, cause error, what string) *fnv1.RunFunctionResponse {
	msg := fmt.Sprintf(msgCannotTellApartFmt, what)
	rsp := response.To(req, response.DefaultTTL)
	// A Fatal leaves the status alone, but not the conditions the function
	// re-sends: RolloutHealthy says whether an earlier run already warned.
	if c := priorCondition(oxr, compose.ConditionRolloutHealthy); c.Status != corev1.ConditionFalse || string(c.Reason) != reasonAbortNotApplied {
		event(rsp, true, reasonAbortNotApplied, msg)
	}
	response.Fatal(rsp, cause)
	resendConditions(rsp, oxr, compose.ConditionRolloutHealthy)
	setCondition(rsp, compose.Condition{Type: compose.ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: reasonAbortNotApplied, Message: msg})
	setRefused(rsp, cause.Error())
	return rsp
}
