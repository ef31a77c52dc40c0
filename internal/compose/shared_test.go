package compose

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
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
func builtBy(t *testing.T, choose chooser, weight int32, patches ...patch) (k8sruntime.Object, *Plan) {
	t.Helper()
	p := sharedPlan(t, choose, patches...)
	obj, errs := p.BuildRoute(percent.Int(weight), weight > 0, nil)
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
				key, _ := right.sharedKey(buildKey{shape: -1, weight: percent.Int(20), total: percent.WholeTotal, active: true})
				sharedBuilds.Add(key, wrong.build(nil, percent.Int(20), true), 1)
				_, _ = right.BuildRoute(percent.Int(20), true, nil)
			},
			want: "is not the route built from its plan",
		},
		"WireChanged": {
			reason: "A wire form that a caller changed is not the route's encoding.",
			breakIt: func(t *testing.T) {
				t.Helper()
				obj, p := builtBy(t, nil, 20, set("metadata.name", "changed-wire"))
				encode := func(k8sruntime.Object) (*structpb.Struct, error) {
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
	if _, errs := p.BuildRoute(percent.Int(20), true, nil); len(errs) == 0 {
		t.Fatal("BuildRoute(...) of 40 hostnames: no errors, want the CRD's limit of 16")
	}
	key, _ := p.sharedKey(buildKey{shape: -1, weight: percent.Int(20), total: percent.WholeTotal, active: true})
	if _, kept := sharedBuilds.Get(key); kept {
		t.Errorf("sharedBuilds.Get(the refused route's key): kept, want not kept")
	}
}

// ---------------------------------------------------------------------------
// Attacks on the routes that runs share (sharedBuilds, Wire): their key (a
// second run whose XR, status or Input differs from the first's in what
// the route is not built from must share the first run's route, and one
// whose route differs must not; either way the route it composes, and the
// wire form it sends, are those a run with nothing kept builds), their
// bounds, and their use by concurrent runs.

// encodeComposed encodes a composed object as package main's asComposed
// does.
func encodeComposed(obj k8sruntime.Object) (*structpb.Struct, error) {
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	return structpb.NewStruct(m)
}

// planUnder plans the base XR with the patches under a policy.
func planUnder(t testing.TB, pol *policy.Policy, patches ...patch) *Plan {
	t.Helper()
	p, err := newPlan(canaryRoute(t, pol, patches...), pol, testCompiler(t), nil)
	if err != nil {
		t.Fatalf("newPlan(...): %v", err)
	}
	return p
}

// podinfoRelease makes the base XR a release of revision 2.0 of podinfo.
var podinfoRelease = []patch{
	del("spec.primary"), set("spec.canary", `{revision: "2.0"}`),
	set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, replicas: 2}`),
	set("spec.traffic", `{steps: [{weight: 23}, {weight: 100}]}`),
}

// TestSharedBuildsSecondRunIsCold runs a CanaryRoute twice, the second time
// with one input changed that a run reads besides the spec (the XR's
// metadata and status, the Input, the claim), at the same weight, and
// checks the second run's route and wire form against a build with nothing
// kept, and whether it shares the first's.
func TestSharedBuildsSecondRunIsCold(t *testing.T) {
	type run struct {
		input   string
		patches []patch
	}
	base := func(name string, p ...patch) []patch {
		return append([]patch{set("metadata.name", "attack14-"+name), set("spec.hostnames", "[attack14.example.com]")}, p...)
	}
	cases := map[string]struct {
		reason        string
		first, second run
		shared        bool
	}{
		"Metadata": {
			reason: "The XR's labels, annotations and uid are in no route.",
			first:  run{patches: base("metadata")},
			second: run{patches: base("metadata", set("metadata.labels", "{crossplane.io/claim-namespace: other, team: b}"), set("metadata.annotations", "{a: b}"), set("metadata.uid", "u-2"))},
			shared: true,
		},
		"RolloutStatus": {
			reason: "status.rollout (an aborted rollout, its recorded backends) is the engine's; the route at a weight is the same.",
			first:  run{patches: base("status")},
			second: run{patches: base("status", set("status.rollout", `{phase: Aborted, revision: "x", canaryWeight: 3, canaryBackends: [{kind: Service, namespace: monitoring, name: other}]}`))},
			shared: true,
		},
		"ReleaseStable": {
			reason: "A release's stable revision moves the primary proxy Service's selector, which is in no route.",
			first:  run{patches: base("release", podinfoRelease...)},
			second: run{patches: base("release", append(podinfoRelease, set("status.release", `{stable: {revision: "1.0"}}`))...)},
			shared: true,
		},
		"CanaryRevisionAffinity": {
			reason: "The canary's revision names the affinity cookie's value.",
			first:  run{patches: base("revision", set("spec.canary.revision", `"2.0"`), set("spec.traffic.sessionAffinity", "{cookieName: c, maxAge: 1h}"))},
			second: run{patches: base("revision", set("spec.canary.revision", `"3.0"`), set("spec.traffic.sessionAffinity", "{cookieName: c, maxAge: 1h}"))},
		},
		"InputPolicy": {
			reason: "An Input that allows more changes what is refused, not the route of a spec it allows.",
			first:  run{patches: base("policy")},
			second: run{input: "allowedBackendNamespaces: [monitoring, other]\nallowExternalNames: true\n", patches: base("policy")},
			shared: true,
		},
		"InputDefaultParents": {
			reason: "The Input's default parents are the route's parents when the spec names none.",
			first:  run{input: "defaultParentRefs: [{name: gw-a, namespace: istio-ingress}]\n", patches: base("parents", del("spec.parentRefs"))},
			second: run{input: "defaultParentRefs: [{name: gw-a, namespace: istio-ingress, sectionName: https}]\n", patches: base("parents", del("spec.parentRefs"))},
		},
		"ClaimAndCluster": {
			reason: "A claimed XR and a cluster-scoped one that route under one name in one namespace compose one route, but their specs differ (claimRef, namespace): kept apart.",
			first:  run{patches: base("claim", set("metadata.name", "attack14-claimed-xyz"), del("spec.namespace"), set("spec.claimRef", "{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: attack14-claim, namespace: test}"))},
			second: run{patches: base("claim", set("metadata.name", "attack14-claim"))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			build := func(r run) (k8sruntime.Object, *Plan) {
				t.Helper()
				pol := inputPolicy(t, allowMonitoring+r.input)
				p, err := newPlan(canaryRoute(t, pol, r.patches...), pol, testCompiler(t), nil)
				if err != nil {
					t.Fatalf("newPlan(...): %v", err)
				}
				obj, errs := p.BuildRoute(percent.Int(23), true, nil)
				if len(errs) > 0 {
					t.Fatalf("BuildRoute(...): %v", errs)
				}
				return obj, p
			}
			first, _ := build(tc.first)
			if _, err := encodeComposed(first); err != nil {
				t.Fatal(err)
			}
			second, p := build(tc.second)
			params := p.RouteFor(nil)
			params.CanaryWeight, params.Active = percent.Int(23), true
			cold := fresh(params).obj
			if diff := cmp.Diff(cold, second); diff != "" {
				t.Errorf("%s\nthe second run's route: -cold, +got:\n%s", tc.reason, diff)
			}
			wire, err := p.WireOf(second).Encode(encodeComposed)
			if err != nil {
				t.Fatal(err)
			}
			coldWire, _ := encodeComposed(cold)
			if !proto.Equal(wire, coldWire) {
				t.Errorf("%s\nthe second run's wire form is not the cold route's", tc.reason)
			}
			if got := first == second; got != tc.shared {
				t.Errorf("%s\nshared: want %t, got %t", tc.reason, tc.shared, got)
			}
		})
	}
}

// TestSharedBuildsSpecUnderTwoInputs runs one spec, which names no
// parents, under two Inputs whose defaultParentRefs differ, one run after
// the other, as two compositions of one spec do. The parsed specs are kept
// by the spec's content alone (xr.parsedSpecs): the second Input's runs
// find the first's parsed spec, cannot use it, parse the spec again and
// cannot keep it (the key is taken), yet name it with a SpecID of its own:
// each of their runs keys its routes by a parsed spec no later run will
// find. The responses are right, but each such run builds, checks and
// encodes its route again and adds an entry to sharedBuilds that no run
// will ever use, pushing out the routes of other XRs (and keeping its
// parsed spec alive until then).
func TestSharedBuildsSpecUnderTwoInputs(t *testing.T) {
	polA := inputPolicy(t, allowMonitoring+"defaultParentRefs: [{name: gw-a, namespace: istio-ingress}]\n")
	polB := inputPolicy(t, allowMonitoring+"defaultParentRefs: [{name: gw-b, namespace: istio-ingress}]\n")
	patches := []patch{del("spec.parentRefs"), set("metadata.name", "attack12-two-inputs"), set("spec.hostnames", "[two-inputs.attack12.example.com]")}
	type run struct {
		route   k8sruntime.Object
		entries int
	}
	runs := map[string][]run{}
	for range 4 {
		for _, in := range []struct {
			name string
			pol  *policy.Policy
		}{{"A", polA}, {"B", polB}} {
			name, pol := in.name, in.pol
			p := planUnder(t, pol, patches...)
			obj, errs := p.BuildRoute(percent.Int(20), true, nil)
			if len(errs) > 0 {
				t.Fatalf("BuildRoute(...): %v", errs)
			}
			n, _ := sharedBuilds.Len()
			runs[name] = append(runs[name], run{route: obj, entries: n})
		}
	}
	for _, name := range []string{"A", "B"} {
		rs := runs[name]
		for i := 1; i < len(rs); i++ {
			if rs[i].route != rs[0].route {
				t.Errorf("Input %s, run %d: the route was built again, want the route its first run built and kept (the spec and its Input are the same)", name, i)
			}
		}
	}
	// Every run under B added an entry that no run finds.
	if first, last := runs["B"][0].entries, runs["B"][len(runs["B"])-1].entries; last != first {
		t.Errorf("sharedBuilds entries: %d after the first run under each Input, %d after three more runs of each, want no more: runs that change nothing add entries no run will find", first, last)
	}
}

// maxHeaderFilters is a side's filters at the most the Gateway API admits
// of small header entries: three lists of 16 headers in each of the two
// header modifiers.
func maxHeaderFilters(prefix string) string {
	headers := func(value bool) string {
		hs := make([]string, 0, 16)
		for i := range 16 {
			if value {
				hs = append(hs, fmt.Sprintf("{name: %s-%d, value: v}", prefix, i))
			} else {
				hs = append(hs, fmt.Sprintf("%s-r%d", prefix, i))
			}
		}
		return "[" + strings.Join(hs, ", ") + "]"
	}
	modifier := fmt.Sprintf("{set: %s, add: %s, remove: %s}", headers(true), strings.ReplaceAll(headers(true), prefix+"-", prefix+"-a"), headers(false))
	return fmt.Sprintf("[{type: RequestHeaderModifier, requestHeaderModifier: %s}, {type: ResponseHeaderModifier, responseHeaderModifier: %s}]", modifier, modifier)
}

// TestSharedBuildsBytesBound measures what an entry of sharedBuilds
// keeps (the route and its wire form) against what the cache counts for it
// (sharedBytes), for a spec made to be small against its route: 16 rules of
// one path each, and sides whose header filters every rule's backendRefs
// repeat. The cache's byte bound is a bound on memory only while an entry
// keeps at most what it counts.
func TestSharedBuildsBytesBound(t *testing.T) {
	rules := make([]string, 0, 16)
	for i := range 16 {
		rules = append(rules, fmt.Sprintf("{matches: [{path: {type: PathPrefix, value: /r%d}}]}", i))
	}
	pol := inputPolicy(t, allowMonitoring)
	const n = 6
	patches := make([]patch, 0, 5)
	patches = append(patches,
		set("spec.rules", "["+strings.Join(rules, ", ")+"]"),
		set("spec.primary.filters", maxHeaderFilters("x-p")),
		set("spec.canary.filters", maxHeaderFilters("x-c")),
		set("spec.hostnames", "[bytes.attack12.example.com]"))
	// The plans first, kept: what they hold beside the cache is not
	// measured.
	plans := make([]*Plan, n)
	for i := range plans {
		plans[i] = planUnder(t, pol, slices.Concat(patches, []patch{set("metadata.name", fmt.Sprintf("attack12-bytes-%d", i))})...)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Each plan's route at a weight no other test builds, encoded.
	for _, p := range plans {
		obj, errs := p.BuildRoute(percent.Int(37), true, nil)
		if len(errs) > 0 {
			t.Fatalf("BuildRoute(...): %v", errs)
		}
		if _, err := p.WireOf(obj).Encode(encodeComposed); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(plans)
	for _, p := range plans {
		if key, _ := p.sharedKey(buildKey{shape: -1, weight: percent.Int(37), total: percent.WholeTotal, active: true}); !sharedKept(key) {
			t.Fatalf("setup: the route of %s was not kept: an entry is too large for sharedBuilds, or was evicted", p.CR.Name)
		}
	}
	kept := (after.HeapAlloc - before.HeapAlloc) / n
	// What memo.Of estimates of the route's own wire form, for a bound
	// that counts the route rather than its spec.
	obj, _ := plans[0].BuildRoute(percent.Int(37), true, nil)
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	_, routeEstimate, _ := memo.Of(m)
	key, _ := plans[0].sharedKey(buildKey{shape: -1, weight: percent.Int(37), total: percent.WholeTotal, active: true})
	counted, _ := sharedBytes(key, obj)
	t.Logf("an entry keeps about %d bytes (a route and its wire form, without its parsed spec); the cache counts %d (its spec's estimate: %d; the route's wire form's: %d)", kept, counted, plans[0].CR.SpecID().Bytes()/4, routeEstimate)
	if kept > counted {
		t.Errorf("an entry of sharedBuilds keeps about %d bytes and is counted %d: the cache's 16 MiB keeps about %.1f times as much (%d MiB) of such routes", kept, counted, float64(kept)/float64(counted), 16*kept/counted)
	}
}

// TestSharedBuildsConcurrentRuns builds and encodes, from many goroutines at
// once, the routes of XRs that share a spec and of XRs that do not, at
// every weight of a stepped rollout, while marshalling the shared wire
// forms as gRPC does; run it with -race. Each route must be its plan's own
// (as a fresh build makes it), and each wire form its route's encoding.
func TestSharedBuildsConcurrentRuns(t *testing.T) {
	pol := inputPolicy(t, allowMonitoring+"allowedRouteNamespaces: [test, other]\n")
	steps := set("spec.traffic", `{steps: [{weight: 0, pause: 1m, mirror: {percent: 100, matches: [{method: GET}]}}, {weight: 0, pause: 1m, matches: [{headers: [{name: x-canary, value: "1"}]}]}, {weight: 10, pause: 1m}, {weight: 100}], matches: [{headers: [{name: x-ab, value: "1"}]}], sessionAffinity: {cookieName: canary, maxAge: 1h}}`)
	xrs := [][]patch{
		{steps, set("spec.canary.revision", "v2"), set("metadata.name", "attack12-c1")},
		{steps, set("spec.canary.revision", "v2"), set("metadata.name", "attack12-c2")},
		{steps, set("spec.canary.revision", "v2"), set("metadata.name", "attack12-c1"), set("spec.namespace", "other")},
		{steps, set("spec.canary.revision", "v3"), set("metadata.name", "attack12-c1")},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for g := range 8 {
		wg.Go(func() {
			for i := range 12 {
				patches := xrs[(g+i)%len(xrs)]
				p, err := newPlan(canaryRoute(t, pol, patches...), pol, testCompiler(t), nil)
				if err != nil {
					mu.Lock()
					problems = append(problems, err.Error())
					mu.Unlock()
					return
				}
				for step := range int32(4) {
					weight := []int32{0, 0, 10, 100}[step]
					obj, errs := p.BuildRoute(percent.Int(weight), weight < 100, ptr.To(step))
					if len(errs) > 0 {
						continue
					}
					params := p.RouteFor(ptr.To(step))
					params.CanaryWeight, params.Active = percent.Int(weight), weight < 100
					want := fresh(params).obj
					var s *structpb.Struct
					if w := p.WireOf(obj); w != nil {
						s, err = w.Encode(encodeComposed)
					} else {
						s, err = encodeComposed(obj)
					}
					wantS, _ := encodeComposed(want)
					_, merr := proto.Marshal(s)
					mu.Lock()
					if diff := cmp.Diff(want, obj); diff != "" {
						problems = append(problems, fmt.Sprintf("%v step %d: the route is not its plan's: -fresh, +shared:\n%s", patches, step, diff))
					}
					if err != nil || merr != nil || !proto.Equal(s, wantS) {
						problems = append(problems, fmt.Sprintf("%v step %d: the wire form is not the route's encoding (%v, %v)", patches, step, err, merr))
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
}

// sharedKept reports whether sharedBuilds keeps a route.
func sharedKept(key sharedKey) bool {
	_, ok := sharedBuilds.Get(key)
	return ok
}
