package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// marked is a CanaryRoute with these labels and annotations and managed
// fields.
func marked(labels, annotations map[string]string, managed ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := canaryRoute(map[string]any{"paused": false}, managed...)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestGitOpsOwners(t *testing.T) {
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		want   []gitOpsOwner
	}{
		"None": {
			reason: "An object applied by hand or by Crossplane has no GitOps owner.",
			obj:    marked(nil, nil, managedBy("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{}}`)),
		},
		"ArgoAnnotationTracking": {
			reason: "Argo CD's tracking annotation names the Application before its colon.",
			obj: marked(nil, map[string]string{argoTrackingID: "web:platform.example.org/CanaryRoute:demo/web"},
				managedBy("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{}}`)),
			want: []gitOpsOwner{{tool: toolArgoCD, source: "Application web", evidence: "annotation " + argoTrackingID, kind: "Application", name: "web", managers: []string{"argocd-controller"}}},
		},
		"ArgoLabelTracking": {
			reason: "Argo CD's label tracking is app.kubernetes.io/instance.",
			obj:    marked(map[string]string{argoInstanceLabel: "shop"}, nil),
			want:   []gitOpsOwner{{tool: toolArgoCD, source: "Application shop", evidence: "label " + argoInstanceLabel + ", Argo CD's label tracking", kind: "Application", name: "shop"}},
		},
		"HelmInstanceLabel": {
			reason: "The same label on an object Helm installed is Helm's, not Argo CD's.",
			obj:    marked(map[string]string{argoInstanceLabel: "shop", managedByLabel: "Helm"}, nil),
		},
		"KustomizeInstanceLabel": {
			reason: "The recommended label with another tool in managed-by (Kustomize's commonLabels) is not Argo CD's label tracking.",
			obj:    marked(map[string]string{argoInstanceLabel: "shop", managedByLabel: "kustomize"}, nil),
		},
		"ArgoAppInAnyNamespace": {
			reason: "An Application outside Argo CD's namespace is tracked as <namespace>_<name>, which its CLI names <namespace>/<name>.",
			obj:    marked(nil, map[string]string{argoTrackingID: "team-a_web:platform.example.org/CanaryRoute:demo/web"}),
			want:   []gitOpsOwner{{tool: toolArgoCD, source: "Application team-a/web", evidence: "annotation " + argoTrackingID, kind: "Application", name: "web", namespace: "team-a"}},
		},
		"FluxKustomization": {
			reason: "Flux's kustomize-controller labels name the Kustomization.",
			obj: marked(map[string]string{fluxKustomizeName: "apps", fluxKustomizeNS: "flux-system"}, nil,
				managedBy("kustomize-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{}}`)),
			want: []gitOpsOwner{{tool: toolFlux, source: "Kustomization flux-system/apps", evidence: "label " + fluxKustomizeName, kind: "Kustomization", name: "apps", namespace: "flux-system", managers: []string{"kustomize-controller"}}},
		},
		"FluxHelmRelease": {
			reason: "Flux's helm-controller labels name the HelmRelease.",
			obj:    marked(map[string]string{fluxHelmName: "web", fluxHelmNS: "demo"}, nil),
			want:   []gitOpsOwner{{tool: toolFlux, source: "HelmRelease demo/web", evidence: "label " + fluxHelmName, kind: "HelmRelease", name: "web", namespace: "demo"}},
		},
		"ManagerOnly": {
			reason: "A GitOps field manager alone says who applies the object, without naming the source.",
			obj:    marked(nil, nil, managedBy("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{}}`)),
			want:   []gitOpsOwner{{tool: toolArgoCD, evidence: "field manager argocd-controller", managers: []string{"argocd-controller"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gitOpsOwners(tc.obj), cmp.AllowUnexported(gitOpsOwner{})); diff != "" {
				t.Errorf("%s\ngitOpsOwners(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGitOpsWarning(t *testing.T) {
	pauseIt := change{sets: []fieldValue{{path: []string{"traffic", "paused"}, value: true}}}
	rev := change{sets: []fieldValue{{path: []string{"canary", "revision"}, value: "v3"}}}
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		change change
		want   string
	}{
		"ArgoSetsTheField": {
			reason: "A field Argo CD's server-side apply owns comes back at the next sync: the warning says so, what to commit, how to sync, and how to leave the field to the plugin.",
			obj: marked(nil, map[string]string{argoTrackingID: "web:platform.example.org/CanaryRoute:demo/web"},
				managedBy("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:canary":{"f:revision":{}}}}`)),
			change: rev,
			want: `Warning: Argo CD (Application web) applies CanaryRoute demo/web from Git (annotation argocd.argoproj.io/tracking-id).
  Git sets spec.canary.revision: the next sync reverts this edit.
  To make it in Git, set in the manifest:
    spec.canary.revision: v3
  then commit, push and run: argocd app sync web
  To leave these fields to kubectl canaryroute, remove them from the manifest and add to the Application's
  spec.ignoreDifferences the jsonPointers /spec/canary/revision, with the sync option RespectIgnoreDifferences=true.
`,
		},
		"ArgoClientSideApply": {
			reason: "Under Argo CD's client-side apply, the last applied configuration says what Git sets.",
			obj: marked(map[string]string{argoInstanceLabel: "web"}, map[string]string{lastApplied: `{"spec":{"traffic":{"paused":false}}}`},
				managedBy("argocd-application-controller", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{}}`)),
			change: pauseIt,
			want: `Warning: Argo CD (Application web) applies CanaryRoute demo/web from Git (label app.kubernetes.io/instance, Argo CD's label tracking).
  Git sets spec.traffic.paused: the next sync reverts this edit.
  To make it in Git, set in the manifest:
    spec.traffic.paused: true
  then commit, push and run: argocd app sync web
  To leave these fields to kubectl canaryroute, remove them from the manifest and add to the Application's
  spec.ignoreDifferences the jsonPointers /spec/traffic/paused, with the sync option RespectIgnoreDifferences=true.
`,
		},
		"FluxDoesNotSetTheField": {
			reason: "A field Flux's manager does not own stays until a commit sets it: the warning says that instead.",
			obj: marked(map[string]string{fluxKustomizeName: "apps", fluxKustomizeNS: "flux-system"}, nil,
				managedBy("kustomize-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:canary":{"f:revision":{}}}}`)),
			change: pauseIt,
			want: `Warning: Flux (Kustomization flux-system/apps) applies CanaryRoute demo/web from Git (label kustomize.toolkit.fluxcd.io/name).
  Git does not set spec.traffic.paused: a sync keeps this edit until a commit sets it.
  To make it in Git, set in the manifest:
    spec.traffic.paused: true
  then commit, push and run: flux reconcile kustomization apps -n flux-system --with-source
`,
		},
		"Unknown": {
			reason: "Without its field manager's record, the plugin cannot tell whether Git sets the field: the warning says when the edit is reverted.",
			obj:    marked(map[string]string{fluxHelmName: "web", fluxHelmNS: "demo"}, nil),
			change: rev,
			want: `Warning: Flux (HelmRelease demo/web) applies CanaryRoute demo/web from Git (label helm.toolkit.fluxcd.io/name).
  The next sync reverts this edit wherever Git sets spec.canary.revision.
  To make it in Git, set in the chart's values or templates:
    spec.canary.revision: v3
  then commit, push and run: flux reconcile helmrelease web -n demo --with-source
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			owners := gitOpsOwners(tc.obj)
			if len(owners) != 1 {
				t.Fatalf("%s\ngitOpsOwners(): %d owners, want 1", tc.reason, len(owners))
			}
			got := gitOpsWarning(tc.obj, owners[0], tc.change, describe(tc.obj))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ngitOpsWarning(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
