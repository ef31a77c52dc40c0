package compose

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
)

// sharedPlan plans a CanaryRoute (the base XR, patched) with its versions
// chosen by choose (nil: the defaults), under an Input that lets it route in
// test and other.
func sharedPlan(t *testing.T, choose chooser, patches ...patch) *Plan {
	t.Helper()
	pol := inputPolicy(t, allowMonitoring+"allowedRouteNamespaces: [test, other]\n")
	p, err := newPlan(canaryRoute(t, pol, patches...), pol, testCompiler(t), choose)
	if err != nil {
		t.Fatalf("newPlan(...): %v", err)
	}
	return p
}

// builtBy is the route a run builds for a CanaryRoute at a weight, and the
// run's plan.
func builtBy(t *testing.T, choose chooser, weight int32, patches ...patch) (runtime.Object, *Plan) {
	t.Helper()
	p := sharedPlan(t, choose, patches...)
	obj, errs := p.BuildRoute(weight, weight > 0, nil)
	if len(errs) > 0 {
		t.Fatalf("BuildRoute(%d, ...): %v", weight, errs)
	}
	return obj, p
}

// alpha2 chooses v1alpha2 for the route.
func alpha2(n served.Need, o served.Overrides) (served.Versions, field.ErrorList) {
	v, errs := served.Choose(n, o, served.Schemas{})
	v.Route = v1beta1.RouteV1Alpha2
	return v, errs
}

// TestSharedBuilds runs two CanaryRoutes one after the other, as Crossplane
// does, and checks that the second shares the first one's route exactly
// when everything the route is built from is the same: the spec, the
// route's name and namespace, the version and the weight. A route shared
// wrongly would send one XR's traffic to another's Services.
func TestSharedBuilds(t *testing.T) {
	grpc := []patch{set("spec.kind", "GRPCRoute")}
	type run struct {
		choose  chooser
		weight  int32
		patches []patch
	}
	cases := map[string]struct {
		reason        string
		first, second run
		shared        bool
	}{
		"SameRoute": {
			reason: "A CanaryRoute run again with nothing changed sends the route it built before.",
			first:  run{weight: 20}, second: run{weight: 20},
			shared: true,
		},
		"AnotherXRSameSpec": {
			reason: "Another XR with the same spec names its route and proxy Service after itself.",
			first:  run{weight: 20}, second: run{weight: 20, patches: []patch{set("metadata.name", "other")}},
		},
		"RouteName": {
			reason: "spec.routeName names the route and the proxy Services.",
			first:  run{weight: 20}, second: run{weight: 20, patches: []patch{set("spec.routeName", "renamed")}},
		},
		"NamespacedXRs": {
			reason: "Namespaced XRs of one name and spec in two namespaces compose a route each.",
			first:  run{weight: 20, patches: namespaced},
			second: run{weight: 20, patches: []patch{set("metadata.namespace", "other"), del("spec.namespace")}},
		},
		"ClaimNamespace": {
			reason: "A claim's namespace is where its route lives, though the spec is the same.",
			first:  run{weight: 20, patches: []patch{del("spec.namespace"), set("spec.claimRef", "{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: podinfo, namespace: test}")}},
			second: run{weight: 20, patches: []patch{del("spec.namespace"), set("spec.claimRef", "{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: podinfo, namespace: other}")}},
		},
		"Weight": {
			reason: "The decided weight is in the route.",
			first:  run{weight: 20}, second: run{weight: 30},
		},
		"Version": {
			reason: "A GRPCRoute composed at v1alpha2 is another object than at v1.",
			first:  run{weight: 20, patches: grpc}, second: run{weight: 20, patches: grpc, choose: alpha2},
		},
		"Spec": {
			reason: "Another spec is another route.",
			first:  run{weight: 20}, second: run{weight: 20, patches: []patch{set("spec.hostnames", "[api.example.com]")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			first, _ := builtBy(t, tc.first.choose, tc.first.weight, tc.first.patches...)
			second, p := builtBy(t, tc.second.choose, tc.second.weight, tc.second.patches...)
			if got := first == second; got != tc.shared {
				t.Errorf("%s\nshared: want %t, got %t", tc.reason, tc.shared, got)
			}
			// Whatever is shared, each run's route is its own plan's.
			if diff := cmp.Diff(fresh(p.RouteFor(nil)).obj.GetObjectKind(), second.GetObjectKind()); diff != "" {
				t.Errorf("%s\nkind: -want, +got:\n%s", tc.reason, diff)
			}
			if p.WireOf(second) == nil {
				t.Errorf("%s\nWireOf(the built route): nil, want its wire form", tc.reason)
			}
			if got := p.WireOf(p.CutCanary(second)); got != nil {
				t.Errorf("%s\nWireOf(a copy of the built route): want nil, got a shared wire form", tc.reason)
			}
		})
	}
}

// TestVerifyShared checks that the tests' check of shared routes fails: on
// a route kept under a key that does not name all it is built from, and on
// a wire form changed after it was sent.
func TestVerifyShared(t *testing.T) {
	cases := map[string]struct {
		reason  string
		breakIt func(t *testing.T)
		want    string
	}{
		"KeyTooShort": {
			reason: "A route kept under another XR's key is not the route that XR's plan builds.",
			breakIt: func(t *testing.T) {
				t.Helper()
				_, wrong := builtBy(t, nil, 20, set("metadata.name", "wrong"))
				right := sharedPlan(t, nil, set("metadata.name", "right"))
				key, _ := right.sharedKey(buildKey{shape: -1, weight: 20, active: true})
				sharedBuilds.Add(key, wrong.build(nil, 20, true), 1)
				_, _ = right.BuildRoute(20, true, nil)
			},
			want: "is not the route built from its plan",
		},
		"WireChanged": {
			reason: "A wire form that a caller changed is not the route's encoding.",
			breakIt: func(t *testing.T) {
				t.Helper()
				obj, p := builtBy(t, nil, 20, set("metadata.name", "changed-wire"))
				encode := func(runtime.Object) (*structpb.Struct, error) {
					return structpb.NewStruct(map[string]any{"kind": "HTTPRoute"})
				}
				w := p.WireOf(obj)
				s, err := w.Encode(encode)
				if err != nil {
					t.Fatalf("Encode(...): %v", err)
				}
				s.Fields["kind"] = structpb.NewStringValue("Changed")
				_, _ = w.Encode(encode)
			},
			want: "is not its encoding",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg, _ = r.(string)
					}
				}()
				tc.breakIt(t)
				return ""
			}()
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s\npanic: want one containing %q, got %q", tc.reason, tc.want, got)
			}
		})
	}
}

// TestSharedBuildsRefused checks that a route the Gateway API would refuse
// is never kept for other runs: its errors are the run's own.
func TestSharedBuildsRefused(t *testing.T) {
	pol := inputPolicy(t, allowMonitoring)
	cr := canaryRoute(t, pol, set("metadata.name", "refused"))
	r, err := Resolve(cr, pol, testCompiler(t))
	if err != nil {
		t.Fatalf("Resolve(...): %v", err)
	}
	p, err := r.Plan(served.Versions{})
	if err != nil {
		t.Fatalf("Plan(...): %v", err)
	}
	// Too many hostnames for one route: refused by the CRD's rules.
	p.Route.Hostnames = nil
	for range 20 {
		p.Route.Hostnames = append(p.Route.Hostnames, p.CR.Spec.Hostnames...)
	}
	p.Route.Hostnames = append(p.Route.Hostnames, p.Route.Hostnames...)
	if _, errs := p.BuildRoute(20, true, nil); len(errs) == 0 {
		t.Fatal("BuildRoute(...) of 40 hostnames: no errors, want the CRD's limit of 16")
	}
	key, _ := p.sharedKey(buildKey{shape: -1, weight: 20, active: true})
	if _, kept := sharedBuilds.Get(key); kept {
		t.Errorf("sharedBuilds.Get(the refused route's key): kept, want not kept")
	}
}
