package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	msgRescuedAbort = "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"
	msgRescueFmt    = "spec.traffic.abort is set: the canary is held at 0%% in the last composed route, although the CanaryRoute cannot be composed: %s"
)

// rescueAbort answers a run that cannot compose the CanaryRoute (bad spec,
// bad Input, a malformed status, a policy refusal) while the user asks for an
// emergency abort: an abort must never be blocked by an unrelated mistake.
// It composes what the previous run composed, unchanged but for the route,
// where every canary backend goes to weight 0 and every canary-only rule (A/B,
// session) and mirror to the canary is removed. The canary backends are the
// ones the last good run recorded in status.rollout.canaryBackends, never a
// guess by name. Every object is decoded into its type, changed there, and
// converted once.
//
// It reports false, and answers nothing, when it cannot do that: no abort
// asked for, no canary backends recorded, or no route composed yet (then
// nothing sends traffic to the canary, and a Fatal keeps it so).
func rescueAbort(req *fnv1.RunFunctionRequest, cause error) (*fnv1.RunFunctionResponse, bool) {
	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		return nil, false
	}
	if abort, _ := oxr.Resource.GetBool("spec.traffic.abort"); !abort {
		return nil, false
	}
	prev := lenientRollout(oxr.Resource.GetValueInto)
	if len(prev.CanaryBackends) == 0 {
		return nil, false
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		return nil, false
	}
	objects, routes := []compose.Object(nil), 0
	for k, o := range ours(observed) {
		obj, err := compose.Decode(o)
		if err != nil {
			return nil, false
		}
		obj = compose.AsComposed(obj)
		ready := true // Services and grants are ready once they exist.
		if k.IsRoute() {
			ns := ""
			if m, ok := obj.(metav1.Object); ok {
				ns = m.GetNamespace()
			}
			if !route.ZeroCanary(obj, prev.CanaryBackends, ns) {
				return nil, false
			}
			obs, err := route.ObserveAsComposed(o, ns)
			ready = err == nil && obs.AllReady()
			routes++
		}
		objects = append(objects, compose.Object{Key: k, Object: obj, Ready: ready})
	}
	if routes == 0 {
		return nil, false
	}

	status := prev
	status.Phase, status.Reason, status.NextStepAt = xr.PhaseAborted, rollout.ReasonAborted, nil
	status.CanaryWeight, status.PrimaryWeight = 0, 100
	status.Message = msgRescuedAbort
	rsp := newResponse(req, rollout.MaxRequeue)
	if setDesired(rsp, objects) != nil || setStatus(rsp, req, status, nil) != nil {
		return nil, false
	}
	response.Warning(rsp, errors.Errorf(msgRescueFmt, cause.Error())).WithReason(rollout.ReasonAborted).TargetCompositeAndClaim()
	resendConditions(rsp, req, conditionRolloutHealthy)
	response.ConditionFalse(rsp, conditionRolloutHealthy, rollout.ReasonAborted).WithMessage(msgRescuedAbort).TargetCompositeAndClaim()
	return rsp, true
}

// lenientRollout reads status.rollout as well as it can, from a status that
// may not parse: the whole of it when it decodes, else only its
// canaryBackends.
func lenientRollout(getValueInto func(path string, into any) error) xr.RolloutStatus {
	var s xr.RolloutStatus
	if getValueInto("status.rollout", &s) == nil {
		return s
	}
	s = xr.RolloutStatus{}
	_ = getValueInto("status.rollout.canaryBackends", &s.CanaryBackends)
	return s
}
