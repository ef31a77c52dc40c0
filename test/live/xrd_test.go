package live

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// TestXRDs checks that both XRDs of example/definitions become Established,
// and the claim-bound one Offered: Crossplane turned each into CRDs that the
// API server accepted, CEL rules included.
func TestXRDs(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason  string
		xrd     string
		offered bool
	}{
		"Namespaced": {
			reason: "The namespaced CanaryRoute XRD (apiextensions.crossplane.io/v2) is served.",
			xrd:    "canaryroutes.platform.example.org",
		},
		"LegacyClusterWithClaim": {
			reason:  "The cluster-scoped XCanaryRoute XRD (apiextensions.crossplane.io/v1, LegacyCluster) is served, and so is its claim.",
			xrd:     "xcanaryroutes.platform.example.org",
			offered: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			await(t, settle, tc.reason, func(ctx context.Context) (bool, string) {
				u, why := get(ctx, gvkXRD, "", tc.xrd)
				if u == nil {
					return false, why
				}
				ok := controlplane.IsTrue(u, "Established") && (!tc.offered || controlplane.IsTrue(u, "Offered"))
				return ok, controlplane.DescribeConditions(u)
			})
		})
	}
}

// TestXRDRulesInTheAPIServer checks that the XRDs' CEL rules run in the real
// API server: a spec that breaks one is refused, and the cluster-scoped XR's
// namespace, whose rule the API server once refused for its cost, cannot
// change.
func TestXRDRulesInTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "rules")
	ctx := t.Context()
	awaitEstablished(t)

	both := read(t, "namespaced", "xr.yaml")
	both.SetNamespace(ns)
	set(t, both, spec(t, "{weight: 10, steps: [{weight: 10}]}"), "spec", "traffic")
	_, err := env.c.DryRun(ctx, both)
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("a CanaryRoute with both traffic.weight and traffic.steps: want refused by the XRD's rule, got %v", err)
	}

	xr := read(t, "flagger", "xr.yaml")
	xr.SetName(ns + "-immutable")
	set(t, xr, ns, "spec", "namespace")
	useComposition(t, xr, "none") // Never composed: only admission matters.
	apply(t, xr)
	moved := xr.DeepCopy()
	set(t, moved, ns+"-elsewhere", "spec", "namespace")
	_, err = env.c.Apply(ctx, moved)
	if err == nil || !strings.Contains(err.Error(), "namespace is immutable") {
		t.Errorf("changing spec.namespace of an XCanaryRoute: want refused by the XRD's transition rule, got %v", err)
	}
}

// TestExamplesAdmitted sends every example's XR, Composition, Functions and
// Input to the API server (server-side dry run): Crossplane's own CRDs, the
// XRDs and the Input CRD that the function's package ships must admit them.
func TestExamplesAdmitted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "admit")
	awaitEstablished(t)
	// Crossplane never installs the CRDs of a function package (the xpkg
	// spec says so), so the Input's CRD that the package ships
	// (package/input) is installed here to check the Inputs against it.
	crds, err := filepath.Glob(filepath.Join(env.root, "package", "input", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no Input CRD in package/input: %v", err)
	}
	// And the Input CRD of function-go-templating, the release example's
	// second step, from the package folder of the module hack/tools pins.
	mod, err := controlplane.ModuleDir(t.Context(), env.root, "go-templating", controlplane.GoTemplatingModulePath)
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join(mod, "package", "input", "*.yaml"))
	if err != nil || len(more) == 0 {
		t.Fatalf("no Input CRD in %s/package/input: %v", mod, err)
	}
	crds = append(crds, more...)
	for _, f := range crds {
		objs, err := controlplane.ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if _, err := env.c.Apply(t.Context(), o); err != nil {
				t.Fatal(err)
			}
			await(t, settle, "the CRD "+o.GetName()+" Established", func(ctx context.Context) (bool, string) {
				u, why := get(ctx, controlplane.CRDGVK, "", o.GetName())
				if u == nil {
					return false, why
				}
				return controlplane.IsTrue(u, "Established"), controlplane.DescribeConditions(u)
			})
		}
	}

	dirs, err := filepath.Glob(filepath.Join(env.root, "example", "*", "composition.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range dirs {
		example := filepath.Base(filepath.Dir(f))
		t.Run(example, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			for _, file := range []string{"composition.yaml", "functions.yaml", "xr.yaml"} {
				o, err := controlplane.ReadObjects(filepath.Join(env.root, "example", example, file))
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, o...)
			}
			for _, o := range objs {
				switch o.GetKind() {
				case "Composition":
					// The Input of each step, as an object of its own kind.
					steps, _, _ := unstructured.NestedSlice(o.Object, "spec", "pipeline")
					for i, s := range steps {
						in, ok := s.(map[string]any)["input"].(map[string]any)
						if !ok {
							continue
						}
						input := &unstructured.Unstructured{Object: in}
						input = input.DeepCopy()
						input.SetName(fmt.Sprintf("%s-%d", example, i))
						input.SetNamespace(ns)
						objs = append(objs, input)
					}
				case "CanaryRoute":
					o.SetNamespace(ns)
				}
			}
			for _, o := range objs {
				if _, err := env.c.DryRun(t.Context(), o); err != nil {
					t.Errorf("%s %s of example/%s: want admitted, got %v", o.GetKind(), o.GetName(), example, err)
				}
			}
		})
	}
	install, err := controlplane.ReadObjects(filepath.Join(env.root, "example", "install", "function.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range install {
		if _, err := env.c.DryRun(t.Context(), o); err != nil {
			t.Errorf("example/install/function.yaml: want admitted, got %v", err)
		}
	}
}

// awaitEstablished waits for both XRDs, for tests that create XRs.
func awaitEstablished(t *testing.T) {
	t.Helper()
	for _, kind := range []string{"CanaryRoute", "XCanaryRoute", "CanaryRouteClaim"} {
		err := controlplane.Await(t.Context(), settle, poll, "the "+kind+" kind served", func(ctx context.Context) (bool, string) {
			_, err := env.c.Resource(ctx, gvkCanaryRoute.GroupVersion().WithKind(kind), "default")
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
