package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The apply patch of a command. Server-side apply treats a field manager's
// apply as the whole of what it wants: a field it applied before and leaves
// out is removed. So every command applies, beside its own fields, the
// fields the plugin's manager already owns, at their current values (the
// "extract, modify, apply" of server-side apply): an approve after an
// abort keeps the abort.

// fieldManager is the plugin's field manager: its writes are its own in
// metadata.managedFields, apart from Git's, kubectl's and Crossplane's.
const fieldManager = "kubectl-canaryroute"

const (
	errFmtManagedFields = "cannot read the fields %s owns in %s: %w"
	errFmtSetField      = "cannot set spec.%v: %w"
)

// managedSet is the set of fields that manager owns by the operation op
// ("" for any), on the main resource (not a subresource such as status).
func managedSet(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) (*fieldpath.Set, bool, error) {
	set := &fieldpath.Set{}
	found := false
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Subresource != "" || (op != "" && e.Operation != op) || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, false, err
		}
		set = set.Union(s)
		found = true
	}
	return set, found, nil
}

// owned are the fields of obj that manager applied, at their current values:
// what an apply by manager must repeat to keep them.
func owned(obj *unstructured.Unstructured, manager string) (map[string]any, error) {
	set, found, err := managedSet(obj, manager, metav1.ManagedFieldsOperationApply)
	if err != nil || !found {
		return nil, err
	}
	tv, err := typed.DeducedParseableType.FromUnstructured(obj.Object)
	if err != nil {
		return nil, err
	}
	m, _ := tv.ExtractItems(set.Leaves()).AsValue().Unstructured().(map[string]any)
	return m, nil
}

// applyPatch is the object a command applies to obj: its kind and name, the
// spec fields the plugin's manager owns, and the change's fields.
func applyPatch(obj *unstructured.Unstructured, c change) (*unstructured.Unstructured, error) {
	prev, err := owned(obj, fieldManager)
	if err != nil {
		return nil, fmt.Errorf(errFmtManagedFields, fieldManager, obj.GetName(), err)
	}
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	patch.SetAPIVersion(obj.GetAPIVersion())
	patch.SetKind(obj.GetKind())
	patch.SetName(obj.GetName())
	if ns := obj.GetNamespace(); ns != "" {
		patch.SetNamespace(ns)
	}
	if spec, ok := prev["spec"].(map[string]any); ok {
		patch.Object["spec"] = spec
	}
	for _, s := range c.sets {
		if err := unstructured.SetNestedField(patch.Object, s.value, append([]string{"spec"}, s.path...)...); err != nil {
			return nil, fmt.Errorf(errFmtSetField, s.path, err)
		}
	}
	return patch, nil
}
