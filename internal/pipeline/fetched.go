package pipeline

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/release"
)

// Fetched are the objects Crossplane fetched for the function's
// requirements, by requirement name.
type Fetched map[string][]resource.Required

// Required are the objects Crossplane fetched for a requirement, and
// whether it answered it at all.
func (f Fetched) Required(name string) ([]*unstructured.Unstructured, bool) {
	items, answered := f[name]
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, i := range items {
		out = append(out, i.Resource)
	}
	return out, answered
}

// Existing returns the objects Crossplane fetched for a target.
func (f Fetched) Existing(k names.Key) []metav1.Object {
	items := f[Existing(string(k))]
	out := make([]metav1.Object, 0, len(items))
	for _, r := range items {
		out = append(out, r.Resource)
	}
	return out
}

// GateObjects returns the objects Crossplane fetched for the i-th gate.
func (f Fetched) GateObjects(i int) []*unstructured.Unstructured {
	objects, _ := f.Required(Gate(i))
	return objects
}

// CanaryWorkload is the content of the canary's workload that Crossplane
// fetched; nil for none.
func (f Fetched) CanaryWorkload(string) map[string]any {
	objects, _ := f.Required(Workload)
	if len(objects) == 0 {
		return nil
	}
	return objects[0].Object
}

// DropForeignCanary takes the canary's revision out of a release's record
// when the canary's workload that Crossplane fetched was not composed by
// the XR (owner), or when what it fetched cannot be read (unread): the
// pipeline's next step composes what the record names, another team's
// Deployment too. A rescued abort needs it: it refuses no takeover.
func (f Fetched) DropForeignCanary(rec *release.Record, owner ownership.Composite, unread bool) {
	if rec == nil || rec.Canary == "" {
		return
	}
	objects, _ := f.Required(Workload)
	foreign := slices.ContainsFunc(objects, func(w *unstructured.Unstructured) bool { return !ownership.OwnedBy(w, owner) })
	if unread || foreign {
		delete(rec.Replicas, rec.Canary)
	}
}

// Observed are the observed composed resources as their unstructured
// content, by key.
func Observed(observed map[resource.Name]resource.ObservedComposed) map[names.Key]map[string]any {
	out := make(map[names.Key]map[string]any, len(observed))
	for name, o := range observed {
		out[names.Key(name)] = o.Resource.Object
	}
	return out
}
