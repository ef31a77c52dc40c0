package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// gateKey is the name of a gate's resource requirement.
func gateKey(i int) string { return fmt.Sprintf("gate-%d", i) }

func gateGVK(g xr.Gate) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(g.APIVersion) // Validated by xr.Parse.
	return gv.WithKind(g.Kind)
}

// observeGates reads the gates' objects that Crossplane fetched. On the
// first call Crossplane has fetched nothing yet: every gate is "not found",
// which holds the rollout.
func observeGates(req *fnv1.RunFunctionRequest, cr *xr.CanaryRoute) []rollout.GateObservation {
	gates := cr.Spec.Traffic.Gates
	if len(gates) == 0 {
		return nil
	}
	out := make([]rollout.GateObservation, 0, len(gates))
	for i, g := range gates {
		o := rollout.GateObservation{Gate: g}
		for _, r := range req.GetRequiredResources()[gateKey(i)].GetItems() {
			// Read straight from the Struct: a gate object is any kind,
			// and only its identity and one condition matter.
			obj := unstructured.Unstructured{Object: r.GetResource().AsMap()}
			// Crossplane fetched by name and namespace; the kind check
			// guards against a selector it resolved differently.
			if obj.GetName() != g.Name || obj.GetNamespace() != cr.RouteNamespace || obj.GroupVersionKind() != gateGVK(g) {
				continue
			}
			o.Found = true
			o.Condition = findCondition(obj.Object, g.ConditionType)
		}
		out = append(out, o)
	}
	return out
}

// findCondition reads one condition from status.conditions, leniently:
// gate objects are any kind, and a malformed condition is as good as none.
func findCondition(obj map[string]any, typ string) *metav1.Condition {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); t != typ {
			continue
		}
		cond := &metav1.Condition{Type: typ}
		s, _ := m["status"].(string)
		cond.Status = metav1.ConditionStatus(s)
		cond.Reason, _ = m["reason"].(string)
		cond.Message, _ = m["message"].(string)
		if ts, ok := m["lastTransitionTime"].(string); ok {
			_ = cond.LastTransitionTime.UnmarshalQueryParameter(ts)
		}
		return cond
	}
	return nil
}
