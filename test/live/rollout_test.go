package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// progressiveXR is the progressive example's CanaryRoute in a namespace,
// without its status and gates, with these steps (and gates, if any).
func progressiveXR(t *testing.T, ns, steps, gates string) *unstructured.Unstructured {
	t.Helper()
	xr := read(t, "progressive", "xr.yaml")
	xr.SetNamespace(ns)
	unstructured.RemoveNestedField(xr.Object, "status")
	traffic := spec(t, "steps: "+steps)
	if gates != "" {
		traffic["gates"] = spec(t, "g: "+gates)["g"]
	}
	set(t, xr, traffic, "spec", "traffic")
	useComposition(t, xr, composition(t, "progressive", ns, nil))
	return xr
}

// phase checks the XR's rollout phase and canary weight.
func phase(ns, name, want string, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		return r.Phase == want && r.CanaryWeight == weight, xrState(u)
	}
}

// TestProgressiveRollout lets a rollout run with nobody touching it: the
// TTLs the function returns bring Crossplane back when a pause ends, and
// each acceptance by the gateway lets it move one step.
func TestProgressiveRollout(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "prog")
	pauses := []time.Duration{5 * time.Second, 5 * time.Second, 0}
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 5s}, {weight: 50, pause: 5s}, {weight: 100}]", "")
	rec := record(t, gvkHTTPRoute, ns, "podinfo", "podinfo-canary")
	start := time.Now()
	apply(t, xr)

	await(t, 3*time.Minute, "the rollout Succeeded at 100%", phase(ns, "podinfo", "Succeeded", 100))
	await(t, settle, "the route at 100% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 100))
	await(t, settle, "the recorder at 100%", rec.reached(100))
	done := time.Now()

	steps := rec.history()
	if diff := cmp.Diff([]int64{10, 50, 100}, weightsOf(steps)); diff != "" {
		t.Fatalf("the route's canary weights, in order: -want, +got:\n%s\nas seen:\n%s", diff, describeSteps(steps))
	}
	t.Logf("rollout 10%% -> 50%% -> 100%% -> Succeeded in %s from the XR's creation", done.Sub(start).Round(100*time.Millisecond))
	for i, s := range steps {
		end := done
		if i+1 < len(steps) {
			end = steps[i+1].seen
		}
		acc := "never"
		if !s.accepted.IsZero() {
			acc = s.accepted.Sub(s.seen).Round(100*time.Millisecond).String() + " after it appeared"
		}
		t.Logf("step %d (%d%%): pause %s; the route carried it for %s; accepted %s",
			i, s.weight, pauses[i], end.Sub(s.seen).Round(100*time.Millisecond), acc)
		if i+1 == len(steps) {
			break
		}
		// One step per acceptance: the function moves on only from a
		// route that the gateway accepted at the step's weights.
		if s.accepted.IsZero() || s.accepted.After(steps[i+1].seen) {
			t.Errorf("step %d (%d%%): the route moved on before the gateway accepted it", i, s.weight)
		}
		// The pause counts from stepStartedAt, which the function sets
		// before Crossplane applies the route: counted from when the
		// route showed the step, it may end as much earlier as applying
		// took (a second or so under the suite's load), and status times
		// have second precision.
		if held := steps[i+1].seen.Sub(s.seen); held < pauses[i]-2*time.Second {
			t.Errorf("step %d (%d%%): held %s, shorter than its pause %s", i, s.weight, held, pauses[i])
		}
	}
}

// TestGateFailsRollout holds a step on a gate Deployment whose Available
// condition is False, then fails the rollout once it has been False longer
// than failAfter: the route goes back to the primary.
func TestGateFailsRollout(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "gate")
	failAfter := 10 * time.Second
	falseSince := gate(t, ns, "podinfo-v2", corev1.ConditionFalse)
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s}, {weight: 100}]",
		fmt.Sprintf("[{apiVersion: apps/v1, kind: Deployment, name: podinfo-v2, conditionType: Available, failAfter: %s}]", failAfter))
	rec := record(t, gvkHTTPRoute, ns, "podinfo", "podinfo-canary")
	apply(t, xr)

	await(t, settle, "the route at 10% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 10))
	// Crossplane reads the gate for the function (a required resource); a
	// False gate holds the step, then fails the rollout. The function looks
	// again every 30 s while a gate holds.
	await(t, 2*time.Minute, "the rollout Failed at 0%, RolloutHealthy False (GateFailed)", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		r, c := rollout(u), controlplane.Conditions(u)["RolloutHealthy"]
		return r.Phase == "Failed" && r.CanaryWeight == 0 && c.Status == "False" && c.Reason == "GateFailed", xrState(u)
	})
	failed := time.Now()
	await(t, settle, "the route at 0% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 0))
	await(t, settle, "the recorder at 0%", rec.reached(0))

	if diff := cmp.Diff([]int64{10, 0}, weightsOf(rec.history())); diff != "" {
		t.Errorf("the route's canary weights, in order (held at 10%%, then back to 0%%): -want, +got:\n%s", diff)
	}
	if d := failed.Sub(falseSince); d < failAfter {
		t.Errorf("the rollout failed %s after the gate turned False, before failAfter (%s)", d, failAfter)
	}
	t.Logf("the rollout failed %s after the gate turned False (failAfter %s)", failed.Sub(falseSince).Round(100*time.Millisecond), failAfter)
}

// gate creates a Deployment whose Available condition the test sets: no
// controller runs Deployments here. It returns the condition's transition
// time.
func gate(t *testing.T, ns, name string, status corev1.ConditionStatus) time.Time {
	t.Helper()
	labels := map[string]string{"app": "podinfo", "version": "v2"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "podinfo", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}},
			},
		},
	}
	ctx := t.Context()
	created, err := env.c.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	created.Status.Conditions = []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentAvailable, Status: status, Reason: "MinimumReplicasUnavailable",
		Message: "set by the test", LastUpdateTime: now, LastTransitionTime: now,
	}}
	if _, err := env.c.Kube.AppsV1().Deployments(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return now.Time
}
