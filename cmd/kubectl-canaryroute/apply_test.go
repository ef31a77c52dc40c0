package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// canaryRoute is a CanaryRoute demo/web with spec.traffic as given and the
// managed fields given.
func canaryRoute(traffic map[string]any, managed ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.example.org/v1alpha1",
		"kind":       "CanaryRoute",
		"metadata":   map[string]any{"name": "web", "namespace": "demo"},
		"spec": map[string]any{
			"canary":  map[string]any{"revision": "v2", "service": map[string]any{"selector": map[string]any{"app": "web"}}},
			"traffic": traffic,
		},
	}}
	u.SetManagedFields(managed)
	return u
}

// managedBy is a managed-fields entry of manager by op, owning fields (FieldsV1 JSON).
func managedBy(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: op, APIVersion: "platform.example.org/v1alpha1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields),
	}
}

func TestApplyPatch(t *testing.T) {
	approveV2 := change{sets: []fieldValue{{path: []string{"traffic", "approval"}, value: map[string]any{"revision": "v2", "step": int64(1)}}}}
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		change change
		want   map[string]any
	}{
		"OnlyItsFields": {
			reason: "On an object the plugin never wrote, the patch holds the object's kind and name and the change's fields: nothing of what Git or Crossplane wrote.",
			obj: canaryRoute(map[string]any{"paused": false, "steps": []any{map[string]any{"weight": int64(50)}}},
				managedBy("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:traffic":{"f:paused":{},"f:steps":{}}}}`)),
			change: approveV2,
			want: map[string]any{
				"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
				"metadata": map[string]any{"name": "web", "namespace": "demo"},
				"spec":     map[string]any{"traffic": map[string]any{"approval": map[string]any{"revision": "v2", "step": int64(1)}}},
			},
		},
		"KeepsWhatItApplied": {
			reason: "A field the plugin applied before (an abort) is applied again at its current value: server-side apply would remove a field its manager leaves out.",
			obj: canaryRoute(map[string]any{"abort": true, "paused": false},
				managedBy(fieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:traffic":{"f:abort":{}}}}`),
				managedBy("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:traffic":{"f:paused":{}}}}`)),
			change: approveV2,
			want: map[string]any{
				"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
				"metadata": map[string]any{"name": "web", "namespace": "demo"},
				"spec": map[string]any{"traffic": map[string]any{
					"abort":    true,
					"approval": map[string]any{"revision": "v2", "step": int64(1)},
				}},
			},
		},
		"ChangesWhatItApplied": {
			reason: "A field the plugin applied before and the change sets again takes the change's value.",
			obj: canaryRoute(map[string]any{"paused": true},
				managedBy(fieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:traffic":{"f:paused":{}}}}`)),
			change: change{sets: []fieldValue{{path: []string{"traffic", "paused"}, value: false}}},
			want: map[string]any{
				"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
				"metadata": map[string]any{"name": "web", "namespace": "demo"},
				"spec":     map[string]any{"traffic": map[string]any{"paused": false}},
			},
		},
		"NotAnUpdateOfItsName": {
			reason: "Only the plugin's applies count: an update under the same manager name owns nothing an apply must repeat.",
			obj: canaryRoute(map[string]any{"abort": true},
				managedBy(fieldManager, metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:traffic":{"f:abort":{}}}}`)),
			change: approveV2,
			want: map[string]any{
				"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
				"metadata": map[string]any{"name": "web", "namespace": "demo"},
				"spec":     map[string]any{"traffic": map[string]any{"approval": map[string]any{"revision": "v2", "step": int64(1)}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := applyPatch(tc.obj, tc.change)
			if err != nil {
				t.Fatalf("%s\napplyPatch(): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got.Object); diff != "" {
				t.Errorf("%s\napplyPatch(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
