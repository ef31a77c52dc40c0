package compose

// Attacks on the routes that runs share (sharedBuilds, Wire): their key,
// their bounds, and their use by concurrent runs.

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
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
)

// attack12Encode encodes a composed object as package main's asComposed
// does.
func attack12Encode(obj k8sruntime.Object) (*structpb.Struct, error) {
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	return structpb.NewStruct(m)
}

// attack12Plan plans the base XR with the patches under a policy.
func attack12Plan(t testing.TB, pol *policy.Policy, patches ...patch) *Plan {
	t.Helper()
	p, err := newPlan(canaryRoute(t, pol, patches...), pol, testCompiler(t), nil)
	if err != nil {
		t.Fatalf("newPlan(...): %v", err)
	}
	return p
}

// TestAttack12SpecUnderTwoInputsShares runs one spec, which names no
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
func TestAttack12SpecUnderTwoInputsShares(t *testing.T) {
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
			p := attack12Plan(t, pol, patches...)
			obj, errs := p.BuildRoute(20, true, nil)
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

// attack12Filters is a side's filters at the most the Gateway API admits
// of small header entries: three lists of 16 headers in each of the two
// header modifiers.
func attack12Filters(prefix string) string {
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

// TestAttack12SharedBytesBound measures what an entry of sharedBuilds
// keeps (the route and its wire form) against what the cache counts for it
// (sharedBytes), for a spec made to be small against its route: 16 rules of
// one path each, and sides whose header filters every rule's backendRefs
// repeat. The cache's byte bound is a bound on memory only while an entry
// keeps at most what it counts.
func TestAttack12SharedBytesBound(t *testing.T) {
	rules := make([]string, 0, 16)
	for i := range 16 {
		rules = append(rules, fmt.Sprintf("{matches: [{path: {type: PathPrefix, value: /r%d}}]}", i))
	}
	pol := inputPolicy(t, allowMonitoring)
	const n = 6
	patches := make([]patch, 0, 5)
	patches = append(patches,
		set("spec.rules", "["+strings.Join(rules, ", ")+"]"),
		set("spec.primary.filters", attack12Filters("x-p")),
		set("spec.canary.filters", attack12Filters("x-c")),
		set("spec.hostnames", "[bytes.attack12.example.com]"))
	// The plans first, kept: what they hold beside the cache is not
	// measured.
	plans := make([]*Plan, n)
	for i := range plans {
		plans[i] = attack12Plan(t, pol, slices.Concat(patches, []patch{set("metadata.name", fmt.Sprintf("attack12-bytes-%d", i))})...)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Each plan's route at a weight no other test builds, encoded.
	for _, p := range plans {
		obj, errs := p.BuildRoute(37, true, nil)
		if len(errs) > 0 {
			t.Fatalf("BuildRoute(...): %v", errs)
		}
		if _, err := p.WireOf(obj).Encode(attack12Encode); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(plans)
	for _, p := range plans {
		if key, _ := p.sharedKey(buildKey{shape: -1, weight: 37, active: true}); !sharedKept(key) {
			t.Fatalf("setup: the route of %s was not kept: an entry is too large for sharedBuilds, or was evicted", p.CR.Name)
		}
	}
	kept := (after.HeapAlloc - before.HeapAlloc) / n
	// What memo.Of estimates of the route's own wire form, for a bound
	// that counts the route rather than its spec.
	obj, _ := plans[0].BuildRoute(37, true, nil)
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	_, routeEstimate, _ := memo.Of(m)
	key, _ := plans[0].sharedKey(buildKey{shape: -1, weight: 37, active: true})
	counted, _ := sharedBytes(key, obj)
	t.Logf("an entry keeps about %d bytes (a route and its wire form, without its parsed spec); the cache counts %d (its spec's estimate: %d; the route's wire form's: %d)", kept, counted, plans[0].CR.SpecID().Bytes()/4, routeEstimate)
	if kept > counted {
		t.Errorf("an entry of sharedBuilds keeps about %d bytes and is counted %d: the cache's 16 MiB keeps about %.1f times as much (%d MiB) of such routes", kept, counted, float64(kept)/float64(counted), 16*kept/counted)
	}
}

// TestAttack12ConcurrentRuns builds and encodes, from many goroutines at
// once, the routes of XRs that share a spec and of XRs that do not, at
// every weight of a stepped rollout, while marshalling the shared wire
// forms as gRPC does; run it with -race. Each route must be its plan's own
// (as a fresh build makes it), and each wire form its route's encoding.
func TestAttack12ConcurrentRuns(t *testing.T) {
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
					obj, errs := p.BuildRoute(weight, weight < 100, ptr.To(step))
					if len(errs) > 0 {
						continue
					}
					params := p.RouteFor(ptr.To(step))
					params.CanaryWeight, params.Active = weight, weight < 100
					want := fresh(params).obj
					var s *structpb.Struct
					if w := p.WireOf(obj); w != nil {
						s, err = w.Encode(attack12Encode)
					} else {
						s, err = attack12Encode(obj)
					}
					wantS, _ := attack12Encode(want)
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
