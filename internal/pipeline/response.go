package pipeline

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

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// NewResponse is response.To with a desired state of the response's own:
// response.To shares the request's, and the function never writes into the
// request it was given.
func NewResponse(req *fnv1.RunFunctionRequest, ttl time.Duration) *fnv1.RunFunctionResponse {
	rsp := response.To(req, ttl)
	rsp.Desired = &fnv1.State{Composite: req.GetDesired().GetComposite(), Resources: maps.Clone(req.GetDesired().GetResources())}
	return rsp
}

// A Desired is a composed resource as the response carries it.
type Desired struct {
	Key      names.Key
	Resource *structpb.Struct
	Ready    bool
}

// SetDesired adds composed resources to the response's desired composed
// resources, with their readiness.
func SetDesired(rsp *fnv1.RunFunctionResponse, desired []Desired) {
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = make(map[string]*fnv1.Resource, len(desired))
	}
	for _, d := range desired {
		r := &fnv1.Resource{Resource: d.Resource, Ready: fnv1.Ready_READY_FALSE}
		if d.Ready {
			r.Ready = fnv1.Ready_READY_TRUE
		}
		rsp.Desired.Resources[string(d.Key)] = r
	}
}

// AsComposed is a typed object's wire form as a composed resource, as
// response.SetDesiredComposedResources encodes one. Composed objects never
// carry status (the function has no opinion on it) nor a creation
// timestamp. The API machinery's converter honours the types' JSON tags,
// omitempty included, as encoding/json does.
func AsComposed(obj runtime.Object) (*structpb.Struct, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	return resource.AsStruct(&composed.Unstructured{Unstructured: unstructured.Unstructured{Object: m}})
}

// SetStatus writes the status fields that the function owns onto the
// desired XR, leaving whatever earlier functions in the pipeline set, each
// bounded: a status the API server refuses would never be written.
func SetStatus(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, st xr.Status) error {
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return err
	}
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
	if len(st.Routes) > 0 {
		routes := make([]any, len(st.Routes))
		for i := range st.Routes {
			bounded := st.Routes[i].Bounded()
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&bounded)
			if err != nil {
				return err
			}
			routes[i] = m
		}
		if err := unstructured.SetNestedField(dxr.Resource.Object, routes, "status", "routes"); err != nil {
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

// ContextRelease is the pipeline context key under which every run of a
// release tells the pipeline's next step what to run: see release.Record.
const ContextRelease = "canaryroute.fn.crossplane.io/release"

// SetRelease writes a release's record into the response's context, as an
// object the next step's templates index.
func SetRelease(rsp *fnv1.RunFunctionResponse, rec any) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rec)
	if err != nil {
		return err
	}
	v, err := structpb.NewValue(m)
	if err != nil {
		return err
	}
	setContext(rsp, map[string]*structpb.Value{ContextRelease: v})
	return nil
}

// setContext writes keys into the response's pipeline context (a nil value
// removes its key), in a copy: response.To shares the request's, and the
// function never writes into the request it was given.
func setContext(rsp *fnv1.RunFunctionResponse, values map[string]*structpb.Value) {
	c := proto.CloneOf(rsp.GetContext())
	if c == nil {
		c = &structpb.Struct{}
	}
	if c.Fields == nil {
		c.Fields = map[string]*structpb.Value{}
	}
	for k, v := range values {
		if v == nil {
			delete(c.Fields, k)
			continue
		}
		c.Fields[k] = v
	}
	rsp.Context = c
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

// Fatal answers with a Fatal result: Crossplane then applies nothing, so the
// route keeps its last good weights; the conditions given are set with it
// (the function's, as the XR last had them, so that bad input never turns
// them Unknown, and why it refused).
func Fatal(req *fnv1.RunFunctionRequest, err error, conditions ...xr.Condition) *fnv1.RunFunctionResponse {
	rsp := response.To(req, response.DefaultTTL)
	response.Fatal(rsp, err)
	SetConditions(rsp, conditions...)
	return rsp
}

// SetConditions sets conditions of the XR, on the XR and its claim.
func SetConditions(rsp *fnv1.RunFunctionResponse, conditions ...xr.Condition) {
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

// Event emits a result, Normal or Warning, which Crossplane turns into an
// event on the XR and its claim.
func Event(rsp *fnv1.RunFunctionResponse, warning bool, reason, message string) {
	if warning {
		response.Warning(rsp, errors.New(message)).WithReason(reason).TargetCompositeAndClaim()
		return
	}
	response.Normal(rsp, message).WithReason(reason).TargetCompositeAndClaim()
}

// CompositeMeta reads a field of the observed XR's metadata (its name, its
// namespace) for the log, without converting the whole XR.
func CompositeMeta(req *fnv1.RunFunctionRequest, field string) string {
	return req.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields()[field].GetStringValue()
}
