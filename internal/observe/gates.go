package observe

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Programs finds the compiled expression of a text ("" gives nil).
type Programs func(text string) *expr.Program

// Gates reads each gate's object among those that Crossplane fetched for
// it (fetched(i) for gate i), and judges it. On the first call of a
// reconcile Crossplane has fetched nothing yet: every gate is "not found",
// which holds the rollout.
func Gates(ctx context.Context, budget *expr.Budget, gates []xr.Gate, routeNamespace string, fetched func(i int) []*unstructured.Unstructured, programs Programs) []rollout.GateObservation {
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
			if g.SuccessWhen != "" {
				o.Check = Judge(ctx, budget, programs(g.SuccessWhen), programs(g.FailWhen), obj.Object)
				continue
			}
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

// Judge evaluates an object's successWhen and failWhen within the run's
// budget. An evaluation error (a field not there yet, a value of another
// type, a spent budget) is no verdict: it holds, and says why. A failWhen
// that reads a field, key or list element the object does not have yet
// says only that the object has not failed; any other error of failWhen
// holds too, since a failure it would have found must never pass a step.
func Judge(ctx context.Context, budget *expr.Budget, successWhen, failWhen *expr.Program, object map[string]any) rollout.Check {
	var c rollout.Check
	if failWhen != nil {
		failed, err := failWhen.Eval(ctx, budget, object)
		switch {
		case err == nil && failed:
			c.Failed = true
			return c
		case err != nil && !expr.Missing(err):
			c.Err = "failWhen cannot be evaluated: " + err.Error()
			return c
		}
	}
	if successWhen == nil {
		c.Err = "no successWhen to judge by"
		return c
	}
	ok, err := successWhen.Eval(ctx, budget, object)
	if err != nil {
		c.Err = err.Error()
		return c
	}
	c.Success = ok
	return c
}

// Analysis judges the analysis objects Crossplane observed under
// their keys: which revision, canary, attempt and step each was composed for
// (its labels, as xr.LabelValue writes them), and what its template's
// expressions say of it. Objects of
// templates the spec no longer has are none of the rollout's business.
func Analysis(ctx context.Context, budget *expr.Budget, traffic xr.Traffic, routeName string, observed map[names.Key]map[string]any, programs Programs) []rollout.AnalysisObservation {
	var out []rollout.AnalysisObservation
	for _, a := range traffic.Analysis {
		obj, ok := observed[names.AnalysisKey(a.Name)]
		if !ok {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		labels := u.GetLabels()
		step, err := strconv.ParseInt(labels[names.LabelStep], 10, 32)
		if err != nil || labels[names.LabelRoute] != xr.LabelValue(routeName) {
			continue
		}
		// An object of another kind than the template's is an earlier
		// template's, which this one's expressions do not judge.
		if apiVersion, kind := templateKind(a); u.GetAPIVersion() != apiVersion || u.GetKind() != kind {
			continue
		}
		o := rollout.AnalysisObservation{
			Name:         a.Name,
			Revision:     labels[names.LabelRevision],
			CanaryDigest: labels[names.LabelCanary],
			Retry:        labels[names.LabelRetry],
			Step:         int32(step),
			Deleting:     u.GetDeletionTimestamp() != nil,
		}
		if !o.Deleting {
			o.Check = Judge(ctx, budget, programs(a.SuccessWhen), programs(a.FailWhen), obj)
		}
		out = append(out, o)
	}
	return out
}

// templateKind is the apiVersion and kind of an analysis template.
func templateKind(a xr.AnalysisTemplate) (string, string) {
	apiVersion, _ := a.Template["apiVersion"].(string)
	kind, _ := a.Template["kind"].(string)
	return apiVersion, kind
}
