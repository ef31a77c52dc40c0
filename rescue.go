package main

import (
	"encoding/json"
	"maps"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/jsonvalue"
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
// guess by name.
//
// It reports false, and changes nothing, when it cannot do that: no abort
// asked for, no canary backends recorded, or no route composed yet (then
// nothing sends traffic to the canary, and a Fatal keeps it so).
func rescueAbort(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, oxr *resource.Composite, cause error) bool {
	obj := oxr.Resource.Object
	if !abortRequested(obj) {
		return false
	}
	prev := lenientRollout(obj)
	if len(prev.CanaryBackends) == 0 {
		return false
	}
	observed := observedComposed(req)
	desired := make(map[string]*fnv1.Resource, len(observed))
	routes := 0
	for name, o := range observed {
		kept := reemit(o.Resource.Object)
		ready := true // Services and grants are ready once they exist.
		if strings.HasPrefix(string(name), prefixRoute) {
			ns := o.Resource.GetNamespace()
			if !zeroCanary(kept, prev.CanaryBackends, ns) {
				return false
			}
			obs, err := route.ObserveAsComposed(o.Resource.Object, ns)
			ready = err == nil && obs.AllReady()
			routes++
		}
		s, err := structpb.NewStruct(kept)
		if err != nil {
			return false
		}
		desired[string(name)] = desiredResource(s, ready)
	}
	if routes == 0 {
		return false
	}

	status := prev
	status.Phase, status.Reason, status.NextStepAt = xr.PhaseAborted, rollout.ReasonAborted, nil
	status.CanaryWeight, status.PrimaryWeight = 0, 100
	status.Message = msgRescuedAbort
	if setRollout(rsp, status) != nil {
		return false
	}
	maps.Copy(rsp.Desired.Resources, desired)

	response.Warning(rsp, errors.Errorf(msgRescueFmt, cause.Error())).WithReason(rollout.ReasonAborted).TargetCompositeAndClaim()
	resendConditions(rsp, obj, conditionRolloutHealthy)
	response.ConditionFalse(rsp, conditionRolloutHealthy, rollout.ReasonAborted).WithMessage(msgRescuedAbort).TargetCompositeAndClaim()
	rsp.GetMeta().Ttl = durationpb.New(rollout.MaxRequeue)
	return true
}

// holdPrevious composes what the previous run composed, unchanged: a paused
// rollout keeps its canary while a new revision or a changed canary waits
// for paused to be cleared.
func holdPrevious(desired map[string]*fnv1.Resource, observed map[resource.Name]resource.ObservedComposed, obs route.Observation) error {
	for name, o := range observed {
		ready := true
		if strings.HasPrefix(string(name), prefixRoute) {
			ready = obs.AllReady()
		}
		s, err := structpb.NewStruct(reemit(o.Resource.Object))
		if err != nil {
			return err
		}
		desired[string(name)] = desiredResource(s, ready)
	}
	return nil
}

// composedByUs reports whether a composed resource name is one the function
// composes.
func composedByUs(name resource.Name) bool {
	return name == resourceServicePrimary || name == resourceServiceCanary ||
		strings.HasPrefix(string(name), prefixRoute) || strings.HasPrefix(string(name), prefixReferenceGrant)
}

// abortRequested reads spec.traffic.abort leniently, from a spec that may
// not parse.
func abortRequested(obj map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	traffic, _ := spec["traffic"].(map[string]any)
	abort, _ := traffic["abort"].(bool)
	return abort
}

// lenientRollout reads status.rollout as well as it can: the whole of it
// when it decodes, else only its canaryBackends.
func lenientRollout(obj map[string]any) xr.RolloutStatus {
	status, _ := obj["status"].(map[string]any)
	raw, _ := status["rollout"].(map[string]any)
	var s xr.RolloutStatus
	if decodeInto(raw, &s) == nil {
		return s
	}
	s = xr.RolloutStatus{}
	_ = decodeInto(raw["canaryBackends"], &s.CanaryBackends)
	return s
}

func decodeInto(v, into any) error {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// reemit keeps an observed object as the function composed it: its identity
// and its spec, without what the API server or other controllers added
// (status, metadata, a Service's cluster IPs), so that applying it again
// claims no field the function never wrote.
func reemit(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	out := map[string]any{
		"apiVersion": obj["apiVersion"],
		"kind":       obj["kind"],
		"metadata":   map[string]any{"name": meta["name"], "namespace": meta["namespace"]},
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return out
	}
	spec, _ = runtime.DeepCopyJSONValue(spec).(map[string]any)
	if obj["kind"] == "Service" && obj["apiVersion"] == "v1" {
		spec = serviceSpecAsComposed(spec)
	}
	out["spec"] = spec
	return out
}

// serviceSpecAsComposed keeps the fields of a Service's spec that
// internal/proxy writes.
func serviceSpecAsComposed(spec map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"type", "selector", "externalName"} {
		if v, ok := spec[k]; ok {
			out[k] = v
		}
	}
	ports, _ := spec["ports"].([]any)
	kept := make([]any, 0, len(ports))
	for _, p := range ports {
		port, _ := p.(map[string]any)
		k := map[string]any{}
		for _, f := range []string{"name", "protocol", "port", "targetPort", "appProtocol"} {
			if v, ok := port[f]; ok {
				k[f] = v
			}
		}
		kept = append(kept, k)
	}
	if len(kept) > 0 {
		out["ports"] = kept
	}
	return out
}

// zeroCanary sends nothing to the canary backends in an observed route: each
// canary backendRef gets weight 0, a rule whose every backend is a canary
// (an A/B or session rule) is removed, and so is a RequestMirror filter to a
// canary. A rule left with only zero weights gives its other backends equal
// weights. It reports false when no rule would be left.
func zeroCanary(obj map[string]any, canary []xr.BackendID, routeNamespace string) bool {
	spec, _ := obj["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	kept := make([]any, 0, len(rules))
	for _, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			continue
		}
		refs, _ := rule["backendRefs"].([]any)
		var others []map[string]any
		total := 0.0
		for _, b := range refs {
			ref, _ := b.(map[string]any)
			if isCanary(ref, canary, routeNamespace) {
				ref["weight"] = 0
				continue
			}
			others = append(others, ref)
			total += weightOf(ref)
		}
		if len(refs) > 0 && len(others) == 0 {
			continue
		}
		if total == 0 {
			for _, ref := range others {
				ref["weight"] = 100
			}
		}
		if filters, ok := rule["filters"].([]any); ok {
			rule["filters"] = withoutCanaryMirrors(filters, canary, routeNamespace)
		}
		kept = append(kept, rule)
	}
	if len(kept) == 0 {
		return false
	}
	spec["rules"] = kept
	return true
}

func withoutCanaryMirrors(filters []any, canary []xr.BackendID, routeNamespace string) []any {
	out := make([]any, 0, len(filters))
	for _, f := range filters {
		filter, _ := f.(map[string]any)
		mirror, _ := filter["requestMirror"].(map[string]any)
		ref, _ := mirror["backendRef"].(map[string]any)
		if filter["type"] == "RequestMirror" && isCanary(ref, canary, routeNamespace) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// isCanary reports whether a backendRef of an observed route is one of the
// canary backends, with Gateway API's defaults applied.
func isCanary(ref map[string]any, canary []xr.BackendID, routeNamespace string) bool {
	if ref == nil {
		return false
	}
	str := func(k, def string) string {
		if v, ok := ref[k].(string); ok && v != "" {
			return v
		}
		return def
	}
	group, kind, ns, name := str("group", ""), str("kind", "Service"), str("namespace", routeNamespace), str("name", "")
	port, hasPort := ref["port"].(float64)
	for _, c := range canary {
		if c.Group != group || c.Kind != kind || c.Namespace != ns || c.Name != name {
			continue
		}
		if c.Port != nil && (!hasPort || int32(port) != *c.Port) {
			continue
		}
		return true
	}
	return false
}

func weightOf(ref map[string]any) float64 {
	switch w := ref["weight"].(type) {
	case float64:
		return w
	case int:
		return float64(w)
	default:
		return 1 // Gateway API's default weight.
	}
}
