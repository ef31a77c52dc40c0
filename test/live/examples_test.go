package live

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// composed is what an example should compose, and how the XR reports it.
type composed struct {
	// created is what the user creates: an XR, or a claim.
	created *unstructured.Unstructured
	// xr finds the XR (for a claim, the one Crossplane created).
	xr func(ctx context.Context) (*unstructured.Unstructured, string)

	routeNS, routeName string
	canary             string
	weights            map[string]int64
	services           []string // proxy Services in the route's namespace
	grants             []string // namespaces of the composed ReferenceGrants
}

// TestExamples runs the namespaced, claim and Flagger examples through the
// real Crossplane: the route, grants and Services reach the API server
// (admitted by the Gateway API CRDs, CEL included), the XR turns Ready once
// the gateway stand-in accepts the route, and its status and conditions say
// what docs/reference.md says.
func TestExamples(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, ns string) composed
	}{
		"Namespaced": {
			reason: "A namespaced CanaryRoute composes its route and two proxy Services in its own namespace.",
			setup: func(t *testing.T, ns string) composed {
				xr := read(t, "namespaced", "xr.yaml")
				xr.SetNamespace(ns)
				useComposition(t, xr, composition(t, "namespaced", ns, nil))
				return composed{
					created: xr,
					xr: func(ctx context.Context) (*unstructured.Unstructured, string) {
						return get(ctx, gvkCanaryRoute, ns, xr.GetName())
					},
					routeNS: ns, routeName: "checkout", canary: "checkout-canary",
					weights:  map[string]int64{"checkout-primary": 90, "checkout-canary": 10},
					services: []string{"checkout-primary", "checkout-canary"},
				}
			},
		},
		"Claim": {
			reason: "A claim's route lives in the claim's namespace, is named after the claim, and attaches to the Input's defaultParentRefs.",
			setup: func(t *testing.T, ns string) composed {
				xr := read(t, "claim", "xr.yaml")
				claim := &unstructured.Unstructured{Object: map[string]any{"spec": xr.Object["spec"]}}
				claim.SetGroupVersionKind(gvkClaim)
				claim.SetName("storefront")
				claim.SetNamespace(ns)
				unstructured.RemoveNestedField(claim.Object, "spec", "claimRef")
				useComposition(t, claim, composition(t, "claim", ns, func(in map[string]any) {
					// A claim may always use its own namespace; listing it
					// too keeps the scenario true whatever the default.
					in["allowedRouteNamespaces"] = []any{ns}
				}))
				return composed{
					created: claim,
					xr: func(ctx context.Context) (*unstructured.Unstructured, string) {
						c, why := get(ctx, gvkClaim, ns, "storefront")
						if c == nil {
							return nil, why
						}
						name, _, _ := unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
						if name == "" {
							return nil, "the claim has no XR yet"
						}
						return get(ctx, gvkXCanaryRoute, "", name)
					},
					routeNS: ns, routeName: "storefront", canary: "storefront-canary",
					weights:  map[string]int64{"storefront-primary": 70, "storefront-canary": 30},
					services: []string{"storefront-primary", "storefront-canary"},
				}
			},
		},
		"Flagger": {
			reason: "A cluster-scoped CanaryRoute reaches a canary proxy in another namespace through a ReferenceGrant it composes there.",
			setup: func(t *testing.T, ns string) composed {
				mon := newNamespace(t, "mon")
				backend(t, mon, "canary-proxy", 3456)
				xr := read(t, "flagger", "xr.yaml")
				xr.SetName(ns)
				set(t, xr, ns, "spec", "namespace")
				set(t, xr, mon, "spec", "canary", "backendRef", "namespace")
				useComposition(t, xr, composition(t, "flagger", ns, func(in map[string]any) {
					in["allowedBackendNamespaces"] = []any{mon}
					in["allowedRouteNamespaces"] = []any{ns}
				}))
				dumpOnFailure(t, gvkXCanaryRoute, ns)
				return composed{
					created: xr,
					xr: func(ctx context.Context) (*unstructured.Unstructured, string) {
						return get(ctx, gvkXCanaryRoute, "", ns)
					},
					routeNS: ns, routeName: ns, canary: "canary-proxy",
					weights:  map[string]int64{ns + "-primary": 80, "canary-proxy": 20},
					services: []string{ns + "-primary"},
					grants:   []string{mon},
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "ex")
			want := tc.setup(t, ns)
			apply(t, want.created)

			await(t, settle, fmt.Sprintf("%s\nthe HTTPRoute %s/%s at %v", tc.reason, want.routeNS, want.routeName, want.weights),
				func(ctx context.Context) (bool, string) {
					u, why := get(ctx, gvkHTTPRoute, want.routeNS, want.routeName)
					if u == nil {
						return false, why
					}
					got := weights(u)
					return cmp.Diff(want.weights, got) == "", fmt.Sprintf("weights %v", got)
				})
			for _, s := range want.services {
				await(t, settle, "the proxy Service "+s, func(ctx context.Context) (bool, string) {
					u, why := get(ctx, gvkService, want.routeNS, s)
					return u != nil, why
				})
			}
			for _, g := range want.grants {
				await(t, settle, "a ReferenceGrant in "+g+" from the route to its canary", func(ctx context.Context) (bool, string) {
					items, err := env.c.List(ctx, gvkGrant, g, metav1.ListOptions{})
					if err != nil {
						return false, err.Error()
					}
					for _, i := range items {
						to, _, _ := unstructured.NestedSlice(i.Object, "spec", "to")
						from, _, _ := unstructured.NestedSlice(i.Object, "spec", "from")
						if len(to) == 1 && len(from) == 1 && to[0].(map[string]any)["name"] == want.canary && from[0].(map[string]any)["namespace"] == want.routeNS {
							return true, ""
						}
					}
					return false, fmt.Sprintf("%d grants there", len(items))
				})
			}

			// Ready once the stand-in accepted the route; the status says
			// what the function decided and what the gateway reported.
			wantCanary := want.weights[want.canary]
			await(t, settle, tc.reason+"\nthe XR Ready, Stable at "+strconv.FormatInt(wantCanary, 10)+"%, route accepted", func(ctx context.Context) (bool, string) {
				u, why := want.xr(ctx)
				if u == nil {
					return false, why
				}
				r := rollout(u)
				route, _, _ := unstructured.NestedMap(u.Object, "status", "route")
				parents, _, _ := unstructured.NestedSlice(u.Object, "status", "route", "parents")
				ok := controlplane.IsTrue(u, "Ready") && controlplane.IsTrue(u, "Synced") &&
					controlplane.IsTrue(u, "RouteAccepted") && controlplane.IsTrue(u, "ReferenceGrantsReady") && controlplane.IsTrue(u, "RolloutHealthy") &&
					r.Phase == "Stable" && r.CanaryWeight == wantCanary && r.PrimaryWeight == 100-wantCanary &&
					route["kind"] == "HTTPRoute" && route["name"] == want.routeName && route["namespace"] == want.routeNS &&
					len(parents) > 0 && allParents(parents, "accepted", "resolvedRefs")
				return ok, xrState(u) + fmt.Sprintf("; status.route %v", route)
			})
			if want.created.GroupVersionKind() == gvkClaim {
				await(t, settle, "the claim Ready, with the function's conditions", func(ctx context.Context) (bool, string) {
					u, why := get(ctx, gvkClaim, ns, want.created.GetName())
					if u == nil {
						return false, why
					}
					return controlplane.IsTrue(u, "Ready") && controlplane.IsTrue(u, "RouteAccepted") && controlplane.IsTrue(u, "RolloutHealthy"),
						controlplane.DescribeConditions(u)
				})
			}
		})
	}
}

// allParents reports whether every parent has the fields set to true.
func allParents(parents []any, fields ...string) bool {
	for _, p := range parents {
		m, _ := p.(map[string]any)
		for _, f := range fields {
			if m[f] != true {
				return false
			}
		}
	}
	return true
}

// backend creates a Service that a route names but the function does not
// compose, as the cluster would hold it.
func backend(t *testing.T, ns, name string, port int32) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
	if _, err := env.c.Kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
