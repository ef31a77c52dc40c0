package pipeline

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
)

// Status fields the function writes, which a stale read is answered with
// and a newer spec decided on (see internal/freshness).
var ownStatus = []string{"rollout", "route", "release"}

// ReadOf reads what orders a request's read of its composite (see
// internal/freshness), from the request's own encoding of the observed XR:
// nothing is converted.
func ReadOf(req *fnv1.RunFunctionRequest) freshness.Read {
	obj := req.GetObserved().GetComposite().GetResource().GetFields()
	md := obj["metadata"].GetStructValue().GetFields()
	r := freshness.Read{
		UID:        md["uid"].GetStringValue(),
		Identity:   obj["apiVersion"].GetStringValue() + "/" + obj["kind"].GetStringValue() + "/" + md["namespace"].GetStringValue() + "/" + md["name"].GetStringValue(),
		Generation: freshness.Counter(md["generation"]),
	}
	r.Sequence, r.Status = freshness.StatusOf(obj["status"])
	return r
}

// StampAnswer writes the sequence of the answer's decision into the
// status.rollout it desires (see freshness.StampStatus); ok is false for an
// answer that records no decision.
func StampAnswer(rsp *fnv1.RunFunctionResponse, r freshness.Read) (freshness.Stamp, bool) {
	return freshness.StampStatus(rsp.GetDesired().GetComposite().GetResource().GetFields()["status"], r)
}

// An Answer is what the function answered a request, as it answers a
// stale read again: its own composed resources, status, conditions,
// requirements and records in the pipeline context, and its TTL. It is
// read only: every response built from it shares its values.
type Answer struct {
	resources    map[string]*fnv1.Resource
	status       map[string]*structpb.Value
	conditions   []*fnv1.Condition
	requirements *fnv1.Requirements
	context      map[string]*structpb.Value
	ttl          *durationpb.Duration
	// Bytes estimates what the answer holds (see memo.Bytes).
	Bytes uint64
}

// Capture is the answer a response gives a request: the function's own
// composed resources are those the response desires that the request did
// not (earlier steps' pass through by pointer); its own context keys are
// named.
func Capture(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, contextKeys ...string) Answer {
	a := Answer{
		resources: map[string]*fnv1.Resource{}, status: map[string]*structpb.Value{},
		conditions: rsp.GetConditions(), requirements: rsp.GetRequirements(), ttl: rsp.GetMeta().GetTtl(),
	}
	// What an answer holds is counted as memo.Bytes estimates it: in
	// memory, not encoded (proto.Size allocates for every map entry, a
	// tenth of a 16-rule run). A route that runs share (compose.Wire) is
	// counted in full, though the cache of routes holds it too.
	passed := req.GetDesired().GetResources()
	for k, v := range rsp.GetDesired().GetResources() {
		if passed[k] != v {
			a.resources[k] = v
			a.Bytes += 128 + uint64(len(k)) + memo.Bytes(v.GetResource())
		}
	}
	status := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().GetFields()
	for _, k := range ownStatus {
		if v, ok := status[k]; ok {
			a.status[k] = v
			a.Bytes += 64 + memo.Bytes(v.GetStructValue())
		}
	}
	for _, k := range contextKeys {
		if v, ok := rsp.GetContext().GetFields()[k]; ok {
			if a.context == nil {
				a.context = map[string]*structpb.Value{}
			}
			a.context[k] = v
			a.Bytes += 64 + memo.Bytes(v.GetStructValue())
		}
	}
	// Conditions and requirements: a few hundred bytes each.
	a.Bytes += 512 + 512*uint64(len(a.conditions)+len(a.requirements.GetResources())+len(a.requirements.GetSchemas()))
	return a
}

// Respond is the answer as the answer to a request: what the request's
// pipeline desired so far (earlier steps' resources and status), and the
// function's own composed resources, status, conditions, context records
// and requirements as they were answered. No result: a stale read says
// nothing new.
func (a Answer) Respond(req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	desired := req.GetDesired()
	composite := proto.CloneOf(desired.GetComposite())
	if composite == nil {
		composite = &fnv1.Resource{}
	}
	if composite.Resource == nil {
		composite.Resource = &structpb.Struct{}
	}
	if composite.Resource.Fields == nil {
		composite.Resource.Fields = map[string]*structpb.Value{}
	}
	status := composite.Resource.Fields["status"].GetStructValue()
	if status == nil {
		status = &structpb.Struct{}
		composite.Resource.Fields["status"] = structpb.NewStructValue(status)
	}
	if status.Fields == nil {
		status.Fields = map[string]*structpb.Value{}
	}
	for k, v := range a.status {
		status.Fields[k] = v
	}
	rsp := &fnv1.RunFunctionResponse{
		Meta:         &fnv1.ResponseMeta{Tag: req.GetMeta().GetTag(), Ttl: a.ttl},
		Desired:      &fnv1.State{Composite: composite, Resources: make(map[string]*fnv1.Resource, len(desired.GetResources())+len(a.resources))},
		Conditions:   a.conditions,
		Requirements: a.requirements,
		Context:      req.GetContext(),
	}
	for k, v := range desired.GetResources() {
		rsp.Desired.Resources[k] = v
	}
	for k, v := range a.resources {
		rsp.Desired.Resources[k] = v
	}
	if len(a.context) > 0 {
		setContext(rsp, a.context)
	}
	return rsp
}

// Substitute writes the answer's status into an observed XR's (the run's
// own decoded copy of the request's), for a run that decides on it: a newer
// spec over an older status, or a status the XRD pruned.
func (a Answer) Substitute(obj map[string]any) {
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj["status"] = status
	}
	for _, k := range ownStatus {
		if v, ok := a.status[k]; ok {
			status[k] = v.AsInterface()
		} else {
			delete(status, k)
		}
	}
	// The function's conditions too, as the answer set them: a run that
	// keeps the XR's conditions (a Fatal re-sends them, a hold keeps
	// RouteAccepted) would otherwise keep those of the older status.
	list, _ := status["conditions"].([]any)
	for _, c := range a.conditions {
		set := map[string]any{"type": c.GetType(), "status": conditionStatus(c.GetStatus()), "reason": c.GetReason()}
		if c.GetMessage() != "" {
			set["message"] = c.GetMessage()
		}
		replaced := false
		for i, item := range list {
			if m, ok := item.(map[string]any); ok && m["type"] == c.GetType() {
				if m["status"] == set["status"] && m["lastTransitionTime"] != nil {
					set["lastTransitionTime"] = m["lastTransitionTime"]
				}
				list[i], replaced = set, true
				break
			}
		}
		if !replaced {
			list = append(list, set)
		}
	}
	if len(list) > 0 {
		status["conditions"] = list
	}
}

// conditionStatus is a condition's status as the API writes it.
func conditionStatus(s fnv1.Status) string {
	switch s {
	case fnv1.Status_STATUS_CONDITION_TRUE:
		return "True"
	case fnv1.Status_STATUS_CONDITION_FALSE:
		return "False"
	default:
		return "Unknown"
	}
}

// Requirements are the requirements the answer made: the objects it
// composes among them.
func (a Answer) Requirements() *fnv1.Requirements { return a.requirements }

// Object is an object the answer composed, by composed resource name,
// converted when asked for (a hold being rare); nil for none. The map is
// the caller's.
func (a Answer) Object(name string) map[string]any {
	r, ok := a.resources[name]
	if !ok {
		return nil
	}
	return r.GetResource().AsMap()
}

// All are every object the answer composed, by name.
func (a Answer) All() map[string]map[string]any {
	out := make(map[string]map[string]any, len(a.resources))
	for k, v := range a.resources {
		out[k] = v.GetResource().AsMap()
	}
	return out
}
