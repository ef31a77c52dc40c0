package main

import (
	"maps"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/metrics"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// newResponse is response.To with a desired state of the response's own:
// response.To shares the request's, and the function never writes into the
// request it was given.
func newResponse(req *fnv1.RunFunctionRequest, ttl time.Duration) *fnv1.RunFunctionResponse {
	rsp := response.To(req, ttl)
	rsp.Desired = &fnv1.State{Composite: req.GetDesired().GetComposite(), Resources: maps.Clone(req.GetDesired().GetResources())}
	return rsp
}

// setDesired adds composed objects to the response's desired composed
// resources, each encoded as response.SetDesiredComposedResources encodes
// one, with its readiness; a route that runs share is encoded once (see
// compose.Wire).
func setDesired(rsp *fnv1.RunFunctionResponse, objects []compose.Object) error {
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = make(map[string]*fnv1.Resource, len(objects))
	}
	for _, o := range objects {
		s, err := o.Encode(asComposed)
		if err != nil {
			return errors.Wrapf(err, "cannot convert the composed %s", o.Key)
		}
		r := &fnv1.Resource{Resource: s, Ready: fnv1.Ready_READY_FALSE}
		if o.Ready {
			r.Ready = fnv1.Ready_READY_TRUE
		}
		rsp.Desired.Resources[string(o.Key)] = r
	}
	return nil
}

// asComposed is a typed object's wire form as a composed resource. Composed
// objects never carry status (the function has no opinion on it) nor a
// creation timestamp. The API machinery's converter honours the types' JSON
// tags, omitempty included, as encoding/json does.
func asComposed(obj runtime.Object) (*structpb.Struct, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	return resource.AsStruct(&composed.Unstructured{Unstructured: unstructured.Unstructured{Object: m}})
}

// setStatus writes the status fields that the function owns onto the
// desired XR, leaving whatever earlier functions in the pipeline set.
func setStatus(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, st xr.Status) error {
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return err
	}
	// Bounded: a status the API server refuses would never be written.
	if st.Rollout != nil {
		rs := st.Rollout.Bounded()
		if err := setTyped(dxr.Resource.Object, &rs, "status", "rollout"); err != nil {
			return err
		}
	}
	if st.Route != nil {
		bounded := st.Route.Bounded()
		if err := setTyped(dxr.Resource.Object, &bounded, "status", "route"); err != nil {
			return err
		}
	}
	if st.Release != nil {
		bounded := st.Release.Bounded()
		if err := setTyped(dxr.Resource.Object, &bounded, "status", "release"); err != nil {
			return err
		}
	}
	return response.SetDesiredCompositeResource(rsp, dxr)
}

// contextRelease is the pipeline context key under which every run of a
// release tells the pipeline's next step what to run: see release.Record.
const contextRelease = "canaryroute.fn.crossplane.io/release"

// setRecord writes a release's record into the response's context, which
// it copies first (response.To shares the request's, and the function never
// writes into the request it was given), as an object the next step's
// templates index.
func setRecord(rsp *fnv1.RunFunctionResponse, rec any) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rec)
	if err != nil {
		return err
	}
	v, err := structpb.NewValue(m)
	if err != nil {
		return err
	}
	if rsp.GetContext() != nil {
		rsp.Context = proto.CloneOf(rsp.GetContext())
	}
	response.SetContextKey(rsp, contextRelease, v)
	return nil
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
	if oxr != nil {
		setConditions(rsp, compose.Kept(compose.ObservedConditions(oxr.Resource.Object))...)
	}
	setConditions(rsp, compose.Refused(err.Error()))
	return rsp
}

// setConditions sets conditions of the XR, on the XR and its claim.
func setConditions(rsp *fnv1.RunFunctionResponse, conditions ...xr.Condition) {
	for _, c := range conditions {
		set := response.ConditionUnknown
		switch c.Status {
		case metav1.ConditionTrue:
			set = response.ConditionTrue
		case metav1.ConditionFalse:
			set = response.ConditionFalse
		case metav1.ConditionUnknown:
		}
		opt := set(rsp, c.Type, c.Reason)
		if c.Message != "" {
			opt = opt.WithMessage(c.Message)
		}
		opt.TargetCompositeAndClaim()
	}
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

// compositeMeta reads a field of the observed XR's metadata (its name,
// its namespace) for the log, without converting the whole XR.
func compositeMeta(req *fnv1.RunFunctionRequest, field string) string {
	return req.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields()[field].GetStringValue()
}

// rescued answers an emergency abort of a CanaryRoute that cannot be
// composed (see compose.RescueAbort): what the previous run composed with
// the canary at 0%, or, when the canary cannot be told apart from the
// primary, the Fatal with a Warning that says why the abort was not
// applied. It reports false when the rescue cannot be written.
func rescued(req *fnv1.RunFunctionRequest, oxr *resource.Composite, r compose.Rescue, cause error) (*fnv1.RunFunctionResponse, metrics.Outcome, bool) {
	rsp, out := response.To(req, response.DefaultTTL), metrics.Outcome{Result: metrics.ResultFatal}
	if r.Applied {
		rsp, out = newResponse(req, rollout.MaxRequeue), metrics.Outcome{Result: metrics.ResultAbortRescued}
		// The requirements of the call before: Crossplane applies a
		// response once its requirements stop changing, and a rescue with
		// none after a call that made some would send it back for a call
		// that composes again, and so on until it gives up the reconcile.
		rsp.Requirements = pipeline.Own(pipeline.Previous(req))
		if setDesired(rsp, r.Objects) != nil || setStatus(rsp, req, xr.Status{Rollout: &r.Status, Release: r.Release}) != nil {
			return nil, metrics.Outcome{}, false
		}
		if r.Record != nil && setRecord(rsp, r.Record) != nil {
			return nil, metrics.Outcome{}, false
		}
	}
	if w := r.Warning; w != nil {
		event(rsp, true, w.Reason, w.Message)
		out.Transitions = append(out.Transitions, w.Reason)
	}
	if !r.Applied {
		response.Fatal(rsp, cause)
	}
	kept := compose.Kept(compose.ObservedConditions(oxr.Resource.Object), compose.ConditionRolloutHealthy)
	setConditions(rsp, append(kept, r.Healthy, compose.Refused(cause.Error()))...)
	return rsp, out, true
}
