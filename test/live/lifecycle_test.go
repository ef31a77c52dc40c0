package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// TestPolicyKindAndDeletion changes what a cluster-scoped CanaryRoute may
// do and what it is, and deletes it: Crossplane deletes what the function
// stops composing, and the garbage collector what the XR composed.
func TestPolicyKindAndDeletion(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns, mon := newNamespace(t, "life"), newNamespace(t, "mon")
	backend(t, mon, "canary-proxy", 3456)
	input := func(backends ...any) func(in map[string]any) {
		return func(in map[string]any) {
			in["allowedBackendNamespaces"] = backends
			in["allowedRouteNamespaces"] = []any{ns}
		}
	}
	comp := composition(t, "flagger", ns, input(mon))
	xr := read(t, "flagger", "xr.yaml")
	xr.SetName(ns)
	set(t, xr, ns, "spec", "namespace")
	set(t, xr, "podinfo", "spec", "routeName")
	set(t, xr, mon, "spec", "canary", "backendRef", "namespace")
	useComposition(t, xr, comp)
	dumpOnFailure(t, gvkXCanaryRoute, xr.GetName())
	apply(t, xr)

	grants := func(want int) controlplane.Check {
		return func(ctx context.Context) (bool, string) {
			items, err := env.c.List(ctx, gvkGrant, mon, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(items) == want, fmt.Sprintf("%d ReferenceGrants in %s", len(items), mon)
		}
	}
	await(t, settle, "a ReferenceGrant in "+mon, grants(1))
	await(t, settle, "the route at 20% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "canary-proxy", 20))

	// The platform team revokes the canary's namespace.
	c := read(t, "flagger", "composition.yaml")
	c.SetName(comp)
	setInput(t, c, input())
	if _, err := env.c.Apply(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "the grant in "+mon+" deleted once the Input no longer allows the namespace", grants(0))
	await(t, settle, "the canary held at 0%", routeAt(gvkHTTPRoute, ns, "podinfo", "canary-proxy", 0))
	await(t, settle, "the XR says why: Failed, ReferenceGrantsReady False (NotAllowedByPolicy)", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkXCanaryRoute, "", xr.GetName())
		if u == nil {
			return false, why
		}
		c := controlplane.Conditions(u)["ReferenceGrantsReady"]
		return rollout(u).Phase == "Failed" && c.Status == "False" && c.Reason == "NotAllowedByPolicy", xrState(u)
	})

	// A new kind: the route of the old kind goes, the new one comes.
	set(t, xr, "GRPCRoute", "spec", "kind")
	if _, err := env.c.Apply(t.Context(), xr); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "a GRPCRoute", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkGRPCRoute, ns, "podinfo")
		return u != nil, why
	})
	await(t, settle, "the HTTPRoute deleted after spec.kind changed", gone(gvkHTTPRoute, ns, "podinfo"))

	// Deleting the XR deletes what it composed.
	if err := env.c.Delete(t.Context(), gvkXCanaryRoute, "", xr.GetName()); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "the XR gone", gone(gvkXCanaryRoute, "", xr.GetName()))
	await(t, settle, "the GRPCRoute gone with its XR", gone(gvkGRPCRoute, ns, "podinfo"))
	await(t, settle, "the proxy Service gone with its XR", gone(gvkService, ns, "podinfo-primary"))
}

// TestFunctionRestart kills the function mid-rollout and starts it again:
// the rollout resumes from the XR's status, where its state lives, and does
// not start over. It runs alone: the other tests need the function.
func TestFunctionRestart(t *testing.T) {
	awaitEstablished(t)
	ns := newNamespace(t, "restart")
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s}, {weight: 50, pause: 6s}, {weight: 100}]", "")
	rec := record(t, gvkHTTPRoute, ns, "podinfo", "podinfo-canary")
	apply(t, xr)

	var before rolloutStatus
	await(t, 2*time.Minute, "step 1 (50%), the route at 50%", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		before = rollout(u)
		ok, seen := routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 50)(ctx)
		return ok && before.Step != nil && *before.Step == 1, xrState(u) + "; " + seen
	})

	env.cp.KillFunction()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = env.cp.RestartFunction(context.Background())
		}
	})
	// The runtime reports the function down, as a Deployment runtime would.
	await(t, settle, "the Function Healthy False while its process is down", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, controlplane.FunctionGVK, "", "function-canary-route")
		if u == nil {
			return false, why
		}
		return controlplane.Conditions(u)["Healthy"].Status == "False", controlplane.DescribeConditions(u)
	})
	// Crossplane cannot move the rollout without the function: the step's
	// pause runs out while it is down, and the route stays at 50%. (Crossplane
	// waits for the function to be ready, up to 2 minutes per call, so the
	// XR's Synced condition does not turn False meanwhile.)
	due, err := time.Parse(time.RFC3339, before.NextStepAt)
	if err != nil {
		t.Fatalf("the XR's status.rollout.nextStepAt: %v", err)
	}
	await(t, settle, "step 1's pause over (nextStepAt "+before.NextStepAt+") while the function is down", func(context.Context) (bool, string) {
		return time.Now().After(due.Add(time.Second)), "now " + time.Now().UTC().Format(time.RFC3339)
	})
	if ok, seen := routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 50)(t.Context()); !ok {
		t.Errorf("without the function the route should stay at 50%%, got %s", seen)
	}
	if err := env.cp.RestartFunction(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted = true

	await(t, 2*time.Minute, "the rollout Succeeded at 100% after the restart", phase(ns, "podinfo", "Succeeded", 100))
	await(t, settle, "the route at 100% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 100))
	await(t, settle, "the recorder at 100%", rec.reached(100))
	if diff := cmp.Diff([]int64{10, 50, 100}, weightsOf(rec.history())); diff != "" {
		t.Errorf("the route's canary weights, in order (never back to step 0): -want, +got:\n%s", diff)
	}
}

// TestInvalidEdit makes an edit the XRD admits but the function refuses:
// Crossplane applies nothing, so the route keeps its last good weights, and
// the XR's conditions say why.
func TestInvalidEdit(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "invalid")
	xr := read(t, "namespaced", "xr.yaml")
	xr.SetNamespace(ns)
	set(t, xr, int64(20), "spec", "traffic", "weight")
	useComposition(t, xr, composition(t, "namespaced", ns, nil))
	apply(t, xr)
	await(t, settle, "the XR Ready at 20%", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, xr.GetName())
		if u == nil {
			return false, why
		}
		return controlplane.IsTrue(u, "Ready") && rollout(u).CanaryWeight == 20, xrState(u)
	})
	route, why := get(t.Context(), gvkHTTPRoute, ns, "checkout")
	if route == nil {
		t.Fatal(why)
	}

	// A/B matches may not carry a path (the rule's path applies): the XRD
	// keeps matches open, the function refuses it, naming the field.
	bad := xr.DeepCopy()
	set(t, bad, spec(t, "{weight: 50, matches: [{path: {type: PathPrefix, value: /beta}}]}"), "spec", "traffic")
	if _, err := env.c.Apply(t.Context(), bad); err != nil {
		t.Fatalf("the XRD should admit the edit (the function refuses it): %v", err)
	}
	await(t, settle, "the XR Synced False, naming spec.traffic.matches[0].path", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, xr.GetName())
		if u == nil {
			return false, why
		}
		c := controlplane.Conditions(u)["Synced"]
		return c.Status == "False" && strings.Contains(c.Message, "spec.traffic.matches[0].path"), xrState(u)
	})

	u, why := get(t.Context(), gvkCanaryRoute, ns, xr.GetName())
	if u == nil {
		t.Fatal(why)
	}
	if r := rollout(u); r.CanaryWeight != 20 || r.Phase != "Stable" {
		t.Errorf("after the refused edit, the XR's rollout status should stay Stable at 20%%, got %s", r)
	}
	for _, typ := range []string{"RouteAccepted", "ReferenceGrantsReady", "RolloutHealthy"} {
		if c := controlplane.Conditions(u)[typ]; c.Status != "True" {
			t.Errorf("after the refused edit, %s should keep its last value (True), got %+v", typ, c)
		}
	}
	after, why := get(t.Context(), gvkHTTPRoute, ns, "checkout")
	if after == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(weights(route), weights(after)); diff != "" {
		t.Errorf("the route's weights changed after a refused edit: -before, +after:\n%s", diff)
	}
	if route.GetGeneration() != after.GetGeneration() {
		t.Errorf("the route's generation moved from %d to %d after a refused edit", route.GetGeneration(), after.GetGeneration())
	}
}
