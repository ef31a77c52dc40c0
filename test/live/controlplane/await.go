package controlplane

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const errFmtAwait = "%s: not within %s; last observed: %s"

// A Check looks once at the control plane: it says whether what is awaited
// holds, and what it saw, for the message when the wait runs out.
type Check func(ctx context.Context) (ok bool, observed string)

// Await polls check every interval until it holds or timeout passes. The
// error names what was awaited and what was last observed.
func Await(ctx context.Context, timeout, interval time.Duration, what string, check Check) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	observed := "nothing yet"
	for {
		ok, seen := check(ctx)
		if ok {
			return nil
		}
		if seen != "" {
			observed = seen
		}
		select {
		case <-ctx.Done():
			return errors.Errorf(errFmtAwait, what, timeout, observed)
		case <-time.After(interval):
		}
	}
}

// A Condition of an object's status.conditions.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// Conditions returns an object's status.conditions by type.
func Conditions(u *unstructured.Unstructured) map[string]Condition {
	out := map[string]Condition{}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		cond := Condition{Type: s("type"), Status: s("status"), Reason: s("reason"), Message: s("message")}
		if g, ok := m["observedGeneration"].(int64); ok {
			cond.ObservedGeneration = g
		}
		out[cond.Type] = cond
	}
	return out
}

// IsTrue reports whether an object has a condition with status True.
func IsTrue(u *unstructured.Unstructured, typ string) bool {
	return Conditions(u)[typ].Status == "True"
}
