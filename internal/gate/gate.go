// Package gate reads the objects that hold a rollout's steps: for each gate
// of the spec, the object Crossplane fetched for it, and the condition that
// must be True on it.
package gate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Observe reads each gate's object among those that Crossplane fetched for
// it (fetched(i) for gate i). On the first call of a reconcile Crossplane
// has fetched nothing yet: every gate is "not found", which holds the
// rollout.
func Observe(gates []xr.Gate, routeNamespace string, fetched func(i int) []*unstructured.Unstructured) []rollout.GateObservation {
	if len(gates) == 0 {
		return nil
	}
	out := make([]rollout.GateObservation, 0, len(gates))
	for i, g := range gates {
		o := rollout.GateObservation{Gate: g}
		for _, obj := range fetched(i) {
			// Crossplane fetched by name and namespace; the kind check
			// guards against a selector it resolved differently.
			if obj.GetName() != g.Name || obj.GetNamespace() != routeNamespace || obj.GroupVersionKind() != g.GroupVersionKind() {
				continue
			}
			o.Found = true
			o.Condition = Condition(obj.Object, g.ConditionType)
		}
		out = append(out, o)
	}
	return out
}

// Condition reads one condition from status.conditions, leniently: gate
// objects are of any kind, and a malformed condition is as good as none.
func Condition(obj map[string]any, typ string) *metav1.Condition {
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
