package live

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// TestRulesOfTheirOwnAndServedVersions runs example/redirect-and-static
// through the real Crossplane, whose API server serves the Gateway API's
// standard channel (v1.6: ReferenceGrant v1 and v1beta1, HTTPRoute v1
// without retries). The function asks Crossplane for the CRD schemas and
// reads what the cluster serves from them:
//
//   - the example's retry is of the experimental channel, which this
//     cluster's HTTPRoute has no field for (the API server would drop it):
//     a Fatal naming spec.rules[2].retry, and nothing composed;
//   - without it, the rules of their own are composed as written (the
//     redirect, the static rule to a Service in another namespace, which
//     gets its ReferenceGrant), the api rule is weighted, and the grant is
//     written at v1, the newest version the cluster serves, with no Input
//     switch.
func TestRulesOfTheirOwnAndServedVersions(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "own")
	cdn := newNamespace(t, "cdn")
	backend(t, cdn, "cdn-cache", 80)
	xr := read(t, "redirect-and-static", "xr.yaml")
	xr.SetName(ns)
	set(t, xr, ns, "spec", "namespace")
	rules, _, _ := unstructured.NestedSlice(xr.Object, "spec", "rules")
	static := rules[1].(map[string]any)                                  //nolint:forcetypeassert // A JSON object.
	static["backendRefs"].([]any)[0].(map[string]any)["namespace"] = cdn //nolint:forcetypeassert // A JSON object.
	if err := unstructured.SetNestedSlice(xr.Object, rules, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	useComposition(t, xr, composition(t, "redirect-and-static", ns, func(in map[string]any) {
		in["allowedBackendNamespaces"] = []any{cdn}
		in["allowedRouteNamespaces"] = []any{ns}
	}))
	dumpOnFailure(t, gvkXCanaryRoute, ns)
	apply(t, xr)

	await(t, settle, "a Fatal naming the retry the cluster's HTTPRoute cannot hold", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkXCanaryRoute, "", ns)
		if u == nil {
			return false, why
		}
		c := controlplane.Conditions(u)["Synced"]
		return c.Status == "False" && strings.Contains(c.Message, "spec.rules[2].retry") && strings.Contains(c.Message, "standard channel"),
			controlplane.DescribeConditions(u)
	})
	if u, _ := get(t.Context(), gvkHTTPRoute, ns, ns); u != nil {
		t.Error("a route was composed although the spec holds a field the cluster would drop")
	}

	unstructured.RemoveNestedField(rules[2].(map[string]any), "retry") //nolint:forcetypeassert // A JSON object.
	if err := unstructured.SetNestedSlice(xr.Object, rules, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	apply(t, xr)

	await(t, settle, "the route with the redirect and the static rule as written, and the api rule at 80/20", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkHTTPRoute, ns, ns)
		if u == nil {
			return false, why
		}
		got, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		var shape []string
		for _, r := range got {
			m, _ := r.(map[string]any)
			name, _ := m["name"].(string)
			refs, _ := m["backendRefs"].([]any)
			filters, _ := m["filters"].([]any)
			var s strings.Builder
			fmt.Fprintf(&s, "%s: %d backends, %d filters", name, len(refs), len(filters))
			for _, ref := range refs {
				b, _ := ref.(map[string]any)
				fmt.Fprintf(&s, " %v/%v=%v", b["namespace"], b["name"], b["weight"])
			}
			shape = append(shape, s.String())
		}
		want := []string{
			"legacy: 0 backends, 1 filters",
			"static: 1 backends, 0 filters " + cdn + "/cdn-cache=1", // The API server's default weight.
			"api: 2 backends, 0 filters <nil>/" + ns + "-primary=80 <nil>/" + ns + "-canary=20",
		}
		return fmt.Sprint(shape) == fmt.Sprint(want), fmt.Sprintf("rules %v", shape)
	})
	await(t, settle, "a v1 ReferenceGrant in "+cdn+" naming the static rule's backend", func(ctx context.Context) (bool, string) {
		items, err := env.c.List(ctx, gvkGrant, cdn, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, i := range items {
			to, _, _ := unstructured.NestedSlice(i.Object, "spec", "to")
			if len(to) != 1 || to[0].(map[string]any)["name"] != "cdn-cache" { //nolint:forcetypeassert // A JSON object.
				continue
			}
			// The version Crossplane applied the grant at, as the API
			// server recorded it for its field manager.
			for _, mf := range i.GetManagedFields() {
				if strings.HasPrefix(mf.Manager, "apiextensions.crossplane.io") && mf.APIVersion == "gateway.networking.k8s.io/v1" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("the grant's field managers: %v", managers(i))
		}
		return false, fmt.Sprintf("%d grants there", len(items))
	})
	await(t, settle, "the XR Ready with every parent accepting the route", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkXCanaryRoute, "", ns)
		if u == nil {
			return false, why
		}
		return controlplane.IsTrue(u, "Ready") && controlplane.IsTrue(u, "ReferenceGrantsReady"), xrState(u)
	})
}

// managers lists an object's field managers with their API versions.
func managers(u unstructured.Unstructured) []string {
	out := make([]string, 0, len(u.GetManagedFields()))
	for _, mf := range u.GetManagedFields() {
		out = append(out, mf.Manager+"@"+mf.APIVersion)
	}
	return out
}
