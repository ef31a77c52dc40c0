package main

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// setDesired adds composed objects to the response's desired composed
// resources, each encoded as a composed resource (pipeline.AsComposed),
// with its readiness; a route that runs share is encoded once (see
// compose.Wire).
func setDesired(rsp *fnv1.RunFunctionResponse, objects []compose.Object) error {
	desired := make([]pipeline.Desired, 0, len(objects))
	for _, o := range objects {
		s, err := o.Encode(pipeline.AsComposed)
		if err != nil {
			return errors.Wrapf(err, "cannot convert the composed %s", o.Key)
		}
		desired = append(desired, pipeline.Desired{Key: o.Key, Resource: s, Ready: o.Ready})
	}
	pipeline.SetDesired(rsp, desired)
	return nil
}

// fatal answers with a Fatal result: Crossplane then applies nothing, so the
// route keeps its last good weights. The function's conditions are re-sent
// as the XR last had them, so that bad input never turns them Unknown.
//
// oxr is the observed XR, converted once by the run; nil converts it here
// (a panic recovered), if it converts at all.
func fatal(req *fnv1.RunFunctionRequest, oxr *resource.Composite, err error) *fnv1.RunFunctionResponse {
	if oxr == nil {
		oxr, _ = request.GetObservedCompositeResource(req)
	}
	var conditions []xr.Condition
	if oxr != nil {
		conditions = compose.Kept(compose.ObservedConditions(oxr.Resource.Object))
	}
	return pipeline.Fatal(req, err, append(conditions, compose.Refused(err.Error()))...)
}

// rescued answers an emergency abort of a CanaryRoute that cannot be
// composed (see compose.RescueAbort): what the previous run composed with
// the canary at 0%, or, when the canary cannot be told apart from the
// primary, the Fatal with a Warning that says why the abort was not
// applied. It reports false when the rescue cannot be written.
func rescued(req *fnv1.RunFunctionRequest, oxr *resource.Composite, r compose.Rescue, cause error) (*fnv1.RunFunctionResponse, telemetry.Outcome, bool) {
	rsp, out := response.To(req, response.DefaultTTL), telemetry.Outcome{Result: telemetry.ResultFatal}
	if r.Applied {
		rsp, out = pipeline.NewResponse(req, rollout.MaxRequeue), telemetry.Outcome{Result: telemetry.ResultAbortRescued}
		// The requirements of the call before: Crossplane applies a
		// response once its requirements stop changing, and a rescue with
		// none after a call that made some would send it back for a call
		// that composes again, and so on until it gives up the reconcile.
		rsp.Requirements = pipeline.Own(pipeline.Previous(req))
		if setDesired(rsp, r.Objects) != nil || pipeline.SetStatus(rsp, req, xr.Status{Rollout: &r.Status, Release: r.Release}) != nil {
			return nil, telemetry.Outcome{}, false
		}
		if r.Record != nil && pipeline.SetRelease(rsp, r.Record) != nil {
			return nil, telemetry.Outcome{}, false
		}
	}
	if w := r.Warning; w != nil {
		pipeline.Event(rsp, true, w.Reason, w.Message)
		out.Transitions = append(out.Transitions, w.Reason)
	}
	if !r.Applied {
		response.Fatal(rsp, cause)
	}
	kept := compose.Kept(compose.ObservedConditions(oxr.Resource.Object), compose.ConditionRolloutHealthy)
	pipeline.SetConditions(rsp, append(kept, r.Healthy, compose.Refused(cause.Error()))...)
	return rsp, out, true
}
