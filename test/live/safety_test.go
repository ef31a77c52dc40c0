package live

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// TestClaimRefProven puts a real claim beside a cluster-scoped XR whose
// spec.claimRef is written by hand, under an Input that allows no route
// namespace: the claim's XR routes in the claim's namespace, since
// Crossplane bound the claim to it; the forged one is refused, naming
// spec.claimRef, and composes nothing in the namespace it names.
func TestClaimRefProven(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns, victim := newNamespace(t, "claim"), newNamespace(t, "victim")
	comp := composition(t, "claim", ns, func(in map[string]any) { delete(in, "allowedRouteNamespaces") })

	xr := read(t, "claim", "xr.yaml")
	claim := &unstructured.Unstructured{Object: map[string]any{"spec": xr.Object["spec"]}}
	claim.SetGroupVersionKind(gvkClaim)
	claim.SetName("storefront")
	claim.SetNamespace(ns)
	unstructured.RemoveNestedField(claim.Object, "spec", "claimRef")
	useComposition(t, claim, comp)
	apply(t, claim)

	forged := read(t, "claim", "xr.yaml")
	forged.SetName(ns + "-forged")
	set(t, forged, map[string]any{"apiVersion": gvkClaim.GroupVersion().String(), "kind": gvkClaim.Kind, "name": "storefront", "namespace": victim}, "spec", "claimRef")
	useComposition(t, forged, comp)
	dumpOnFailure(t, gvkXCanaryRoute, forged.GetName())
	apply(t, forged)

	await(t, settle, "the claim's route at 30% in "+ns, routeAt(gvkHTTPRoute, ns, "storefront", "storefront-canary", 30))
	await(t, settle, "the forged XR refused, naming spec.claimRef", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkXCanaryRoute, "", forged.GetName())
		if u == nil {
			return false, why
		}
		c := controlplane.Conditions(u)["Synced"]
		return c.Status == "False" && strings.Contains(c.Message, "spec.claimRef: Forbidden: no CanaryRouteClaim "+victim+"/storefront references this CanaryRoute"), xrState(u)
	})
	routes, err := env.c.List(t.Context(), gvkHTTPRoute, victim, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	services, err := env.c.List(t.Context(), gvkService, victim, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) > 0 || len(services) > 0 {
		t.Errorf("the forged claimRef composed %d routes and %d Services in %s", len(routes), len(services), victim)
	}
}

// TestStatusWithinXRDLimits holds a step on a gate whose reason is 5,000
// characters long: the API server accepts the status the function writes
// (its message cut to 1,024 characters), the XR stays Synced, and once the
// gate recovers the rollout moves on, instead of staying stuck on a status
// that no run can write.
func TestStatusWithinXRDLimits(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "limits")
	long := strings.Repeat("Unavailable", 455)[:5000]
	gate(t, ns, "podinfo-v2", corev1.ConditionFalse)
	setGateReason(t, ns, "podinfo-v2", corev1.ConditionFalse, long)
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s}, {weight: 100}]",
		"[{apiVersion: apps/v1, kind: Deployment, name: podinfo-v2, conditionType: Available, failAfter: 1h}]")
	dumpOnFailure(t, gvkCanaryRoute, ns)
	apply(t, xr)

	await(t, 2*time.Minute, "step 0 held by the gate, its 5,000-character reason cut in a status the API server accepted", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		r, synced := rollout(u), controlplane.Conditions(u)["Synced"]
		n := utf8.RuneCountInString(r.Message)
		return synced.Status == "True" && strings.Contains(r.Message, "(5000 characters)") && n <= 1024, xrState(u)
	})
	setGateReason(t, ns, "podinfo-v2", corev1.ConditionTrue, "MinimumReplicasAvailable")
	await(t, 3*time.Minute, "the rollout Succeeded once the gate recovered", phase(ns, "podinfo", "Succeeded", 100))
}

// setGateReason sets the gate Deployment's Available condition, as the
// Deployment controller would.
func setGateReason(t *testing.T, ns, name string, status corev1.ConditionStatus, reason string) {
	t.Helper()
	ctx := t.Context()
	d, err := env.c.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	d.Status.Conditions = []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentAvailable, Status: status, Reason: reason,
		Message: "set by the test", LastUpdateTime: now, LastTransitionTime: now,
	}}
	if _, err := env.c.Kube.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
