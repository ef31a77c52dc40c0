package main

// Attacks on the routes that runs share (compose.sharedBuilds, compose.Wire):
// every response must be exactly what it was without the cache, for any
// sequence of requests across XRs, namespaces, claims, Inputs, rollouts and
// releases. The responses "without the cache" are computed by a process of
// their own (the test binary run again on one request), whose caches start
// empty: no hook into the caches, and nothing the process kept can leak in.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
)

// sharedRoutesEnv names the file of a request that TestSharedRoutesChild
// runs.
const sharedRoutesEnv = "SHARED_ROUTES_REQUEST"

// A corpusRun is a request and the instant it runs at.
type corpusRun struct {
	name string
	at   time.Time
	req  *fnv1.RunFunctionRequest
}

// corpusStepped is a progressive rollout whose steps have matches and a
// mirror of their own, with traffic matches and a session cookie: every
// shape of the route that a step can take.
var corpusStepped = steppedXR(`
      - {weight: 0, pause: 1m, mirror: {percent: 100, matches: [{method: GET}]}}
      - {weight: 0, pause: 1m, matches: [{headers: [{name: x-canary, value: "1"}]}]}
      - {weight: 10, pause: 1m}
      - {weight: 50, pause: 1m, mirror: {percent: 20}}
      - {weight: 100}`, `    matches: [{headers: [{name: x-ab, value: "1"}]}]
    sessionAffinity: {cookieName: canary, maxAge: 1h}
`)

// corpusStatic are requests that share a spec, or all of a route's key
// but one part: another XR, scope, claim, Input, version, status.
func corpusStatic(t *testing.T) []corpusRun {
	t.Helper()
	noParents := strings.Replace(flaggerXR, "  parentRefs:\n    - name: gateway\n      namespace: istio-ingress\n", "", 1)
	withStatus := func(x, st string) string { return x + st }
	namespacedFlagger := strings.Replace(strings.Replace(flaggerXR, "kind: XCanaryRoute", "kind: CanaryRoute", 1), "  name: podinfo\n", "  name: podinfo\n  namespace: test\n", 1)
	claimed := func(name, ns string) string {
		return strings.Replace(strings.Replace(flaggerXR, "  name: podinfo\n", "  name: podinfo-x7k2p\n", 1),
			"  namespace: test\n", "  namespace: "+ns+"\n  claimRef: {apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: "+name+", namespace: "+ns+"}\n", 1)
	}
	grpc := featureXR("GRPCRoute", "", "", "", "")
	stepStatus := func(step, weight int, phase string) string {
		return fmt.Sprintf(`
status:
  rollout: {phase: %s, revision: v2, step: %d, stepStartedAt: "2026-12-02T10:06:30Z", canaryWeight: %d, primaryWeight: %d, canaryDigest: v2-00000000000000ff}
`, phase, step, weight, 100-weight)
	}
	observedAt := map[string]string{"route-httproute": routeAt(`{name: podinfo, weight: 90}`, `{name: podinfo-canary, weight: 10}`)}
	allowBoth := allowMonitoring + "allowedRouteNamespaces: [test, other]\n"
	allowBoth = strings.Replace(allowBoth, "allowedRouteNamespaces: [test]\n", "", 1)
	type run struct {
		name, xr, input string
		observed        map[string]string
	}
	runs := []run{ //nolint:prealloc // A table, then the stepped runs once.
		{"Flagger", flaggerXR, allowMonitoring, nil},
		{"FlaggerObserved", flaggerXR, allowMonitoring, observedFlagger},
		{"FlaggerOtherName", strings.Replace(flaggerXR, "name: podinfo\n", "name: podinfo2\n", 1), allowMonitoring, nil},
		{"FlaggerRouteName", strings.Replace(flaggerXR, "  namespace: test\n", "  namespace: test\n  routeName: podinfo2\n", 1), allowMonitoring, nil},
		{"FlaggerOtherNamespace", strings.Replace(flaggerXR, "  namespace: test\n", "  namespace: other\n", 1), allowBoth, nil},
		{"NamespacedSameSpec", namespacedFlagger, allowMonitoring, nil},
		{"NamespacedOtherNamespace", strings.Replace(namespacedFlagger, "namespace: test", "namespace: other", 2), allowBoth, nil},
		{"ClaimSameRoute", claimed("podinfo", "test"), allowMonitoring, nil},
		{"ClaimOtherName", claimed("podinfo3", "test"), allowMonitoring, nil},
		{"ClaimOtherNamespace", claimed("podinfo", "other"), allowBoth, nil},
		{"DefaultParentsA", noParents, allowMonitoring + "defaultParentRefs: [{name: gw-a, namespace: istio-ingress}]\n", nil},
		{"DefaultParentsB", noParents, allowMonitoring + "defaultParentRefs: [{name: gw-b, namespace: istio-ingress}]\n", nil},
		{"DefaultParentsSection", noParents, allowMonitoring + "defaultParentRefs: [{name: gw-a, namespace: istio-ingress, sectionName: https}]\n", nil},
		{"CanaryRefused", flaggerXR, allowTest, nil},
		{"CanaryRefusedObserved", withStatus(flaggerXR, recordedCanary), allowTest, observedFlagger},
		{"GRPC", grpc, allowTest, nil},
		{"GRPCAlpha2", grpc, allowTest + "grpcRouteVersion: v1alpha2\n", nil},
		{"GRPCV1Chosen", grpc, allowTest + "grpcRouteVersion: v1\n", nil},
		{"TLS", featureXR("TLSRoute", "", "", "", ""), allowTest, nil},
		{"TLSAlpha2", featureXR("TLSRoute", "", "", "", ""), allowTest + "tlsRouteVersion: v1alpha2\n", nil},
		{"AbortRescued", withStatus(abortedFlagger, recordedCanary), allowMonitoring, observedFlagger},
		{"AbortComposable", withStatus(strings.Replace(flaggerXR, "    weight: 20", "    weight: 20\n    abort: true", 1), recordedCanary), allowMonitoring, observedFlagger},
		{"HoldPrevious", pausedFlagger("{name: canary-proxy, namespace: monitoring, port: 3456}", ""), allowMonitoring, observedFlagger},
		{"HoldPreviousRefused", pausedFlagger("{name: canary-proxy, namespace: monitoring, port: 3456}", ""), allowTest, observedFlagger},
	}
	statuses := []string{
		stepStatus(0, 0, "Progressing"), stepStatus(1, 0, "Progressing"), stepStatus(2, 10, "Progressing"), stepStatus(3, 50, "Progressing"), stepStatus(4, 100, "Progressing"),
		stepStatus(3, 50, "Paused"), stepStatus(1, 0, "Failed"), stepStatus(3, 50, "Aborted"),
		// Forged: a step past the steps, a negative one, weights that do
		// not add up, a weight past 100.
		stepStatus(9, 50, "Progressing"), stepStatus(-1, 10, "Progressing"), stepStatus(0, 70, "Progressing"), stepStatus(3, 150, "Progressing"),
	}
	stepped := make([]run, 0, 2*len(statuses))
	for i, st := range statuses {
		stepped = append(stepped,
			run{fmt.Sprintf("Stepped%d", i), corpusStepped + st, emptyInput, observedAt},
			run{fmt.Sprintf("SteppedAbort%d", i), strings.Replace(corpusStepped, "  traffic:\n", "  traffic:\n    abort: true\n", 1) + st, emptyInput, observedAt})
	}
	runs = append(runs, stepped...)
	out := make([]corpusRun, 0, len(runs))
	for _, r := range runs {
		out = append(out, corpusRun{name: r.name, at: testNow, req: testRequest(t, r.xr, r.input, r.observed)})
	}
	return out
}

// corpusSimulated are the requests of simulated Crossplanes driving a
// rollout with steps of their own shapes through to an abort, and a
// release through a promotion: requests whose status the function wrote.
func corpusSimulated(t *testing.T) []corpusRun {
	t.Helper()
	var out []corpusRun
	add := func(prefix string, s *xpSim) {
		for i, r := range s.runs {
			out = append(out, corpusRun{name: fmt.Sprintf("%s%02d", prefix, i), at: r.at, req: proto.CloneOf(r.req)})
		}
	}
	stepped := newSim(t, corpusStepped, emptyInput)
	for range 8 {
		stepped.run(30 * time.Second)
	}
	stepped.setSpec("traffic.abort", true)
	for range 3 {
		stepped.run(30 * time.Second)
	}
	// A spec that cannot be composed, aborted: the rescue.
	stepped.setSpec("hostnames", []any{"NOT A HOST"})
	for range 2 {
		stepped.run(30 * time.Second)
	}
	add("SimStepped", stepped)

	rel := newSim(t, releaseXR("v1"), emptyInput)
	rel.run(0)
	rel.setSpec("canary.revision", "v2")
	for range 12 {
		rel.run(30 * time.Second)
	}
	rel.setSpec("canary.revision", "v3")
	for range 3 {
		rel.run(30 * time.Second)
	}
	rel.setSpec("traffic.abort", true)
	for range 2 {
		rel.run(30 * time.Second)
	}
	add("SimRelease", rel)
	return out
}

// marshalDeterministic is a response's bytes, deterministic: two responses
// with the same bytes are the same response.
func marshalDeterministic(t testing.TB, rsp *fnv1.RunFunctionResponse) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
	if err != nil {
		t.Fatalf("cannot marshal a response: %v", err)
	}
	return b
}

// TestSharedRoutesChild runs one request in a process of its own, whose
// caches are empty, and writes its response: the response without the
// cache. It runs only when TestSharedRoutesResponsesAsWithoutCache starts
// it.
func TestSharedRoutesChild(t *testing.T) {
	file := os.Getenv(sharedRoutesEnv)
	if file == "" {
		t.Skip("run by TestSharedRoutesResponsesAsWithoutCache in a process of its own")
	}
	compose.VerifyShared = false
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(b, env); err != nil {
		t.Fatal(err)
	}
	// The instant travels as the request's meta tag.
	at, err := time.Parse(time.RFC3339Nano, env.GetMeta().GetTag())
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := functionAt(at).RunFunction(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".rsp", marshalDeterministic(t, rsp), 0o600); err != nil {
		t.Fatal(err)
	}
}

// freshResponses is each request's response from a process of its own.
func freshResponses(t *testing.T, runs []corpusRun) [][]byte {
	t.Helper()
	dir := t.TempDir()
	out := make([][]byte, len(runs))
	for i, r := range runs {
		file := filepath.Join(dir, fmt.Sprintf("%03d.req", i))
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.req)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedRoutesChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), sharedRoutesEnv+"="+file)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: the process of its own failed: %v\n%s", r.name, err, msg)
		}
		if out[i], err = os.ReadFile(file + ".rsp"); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// taggedRequest is a copy of a run's request that carries its instant in
// its tag, as TestSharedRoutesChild reads it: the function copies the tag
// into the response, so the in-process runs carry it too.
func taggedRequest(r corpusRun) *fnv1.RunFunctionRequest {
	req := proto.CloneOf(r.req)
	if req.Meta == nil {
		req.Meta = &fnv1.RequestMeta{}
	}
	req.Meta.Tag = r.at.Format(time.RFC3339Nano)
	return req
}

// TestSharedRoutesResponsesAsWithoutCache runs the corpus in process in
// several orders, twice each, and concurrently, as a function serving many
// XRs does (compose.VerifyShared off, as served), and compares every response,
// byte for byte, with the response of the same request in a process of its
// own. Then it compares the responses of the first pass again: a shared
// Struct that a later run changed would show there.
func TestSharedRoutesResponsesAsWithoutCache(t *testing.T) {
	runs := append(corpusStatic(t), corpusSimulated(t)...)
	for i := range runs {
		runs[i].req = taggedRequest(runs[i])
	}
	want := freshResponses(t, runs)
	corpusSummary(t, runs, want)

	verify := compose.VerifyShared
	compose.VerifyShared = false
	t.Cleanup(func() { compose.VerifyShared = verify })

	run := func(i int) *fnv1.RunFunctionResponse {
		rsp, err := functionAt(runs[i].at).RunFunction(context.Background(), proto.CloneOf(runs[i].req))
		if err != nil {
			t.Errorf("%s: RunFunction(...): %v", runs[i].name, err)
		}
		return rsp
	}
	check := func(pass string, i int, rsp *fnv1.RunFunctionResponse) {
		t.Helper()
		if rsp == nil {
			return
		}
		got := marshalDeterministic(t, rsp)
		if bytes.Equal(got, want[i]) {
			return
		}
		fresh := &fnv1.RunFunctionResponse{}
		if err := proto.Unmarshal(want[i], fresh); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s, %s: the response differs from the one without the cache: -without, +with:\n%s", pass, runs[i].name,
			cmp.Diff(fresh, rsp, protocmp.Transform()))
	}

	n := len(runs)
	orders := map[string][]int{"forward": {}, "reverse": {}, "twice": {}, "shuffled": {}}
	rng := rand.New(rand.NewPCG(12, 12))
	for i := range n {
		orders["forward"] = append(orders["forward"], i)
		orders["reverse"] = append(orders["reverse"], n-1-i)
		orders["twice"] = append(orders["twice"], i, i)
	}
	orders["shuffled"] = rng.Perm(n)
	first := make([]*fnv1.RunFunctionResponse, n)
	for _, pass := range []string{"forward", "reverse", "twice", "shuffled"} {
		for _, i := range orders[pass] {
			rsp := run(i)
			check(pass, i, rsp)
			if first[i] == nil {
				first[i] = rsp
			}
		}
	}

	// Concurrently, as gRPC serves: each response is marshalled, as the
	// server does, while other runs share its Structs.
	var wg sync.WaitGroup
	got := make([][]*fnv1.RunFunctionResponse, 4)
	for g := range got {
		perm := rand.New(rand.NewPCG(uint64(g), 7)).Perm(n)
		got[g] = make([]*fnv1.RunFunctionResponse, n)
		wg.Go(func() {
			for _, i := range perm {
				rsp := run(i)
				_, _ = proto.Marshal(rsp)
				got[g][i] = rsp
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i, rsp := range got[g] {
			check(fmt.Sprintf("concurrent %d", g), i, rsp)
		}
	}
	for i, rsp := range first {
		check("the first pass, compared again at the end", i, rsp)
	}
}

// TestSharedRoutesStructsAreReadOnly pins what sharing a Struct between
// responses asks of everything that handles a response: two runs of one
// route share its Struct by pointer, so a change made to one response
// (by anything in process: a caller, a test's simulated Crossplane) is a
// change to every later response that composes that route. The function
// itself never changes a response it returned; this test shows the
// sharing, and that the verification of the tests (compose.VerifyShared)
// catches a change, so that a caller that starts changing responses is
// caught by the tests.
func TestSharedRoutesStructsAreReadOnly(t *testing.T) {
	xrYAML := strings.Replace(flaggerXR, "name: podinfo\n", "name: attack12-readonly\n", 1)
	_, first := runFunction(t, xrYAML, allowMonitoring, nil, nil)
	_, second := runFunction(t, xrYAML, allowMonitoring, nil, nil)
	a := first.GetDesired().GetResources()["route-httproute"].GetResource()
	b := second.GetDesired().GetResources()["route-httproute"].GetResource()
	if a == nil || a != b {
		t.Fatalf("two runs of one route: want one shared Struct, got %p and %p", a, b)
	}
	// Other objects are encoded by each run.
	if sa, sb := first.GetDesired().GetResources()["service-primary"].GetResource(), second.GetDesired().GetResources()["service-primary"].GetResource(); sa == nil || sa == sb {
		t.Errorf("two runs' primary Service: want a Struct each, got %p and %p", sa, sb)
	}
	// A change to the first response is a change to the second's: the
	// tests' verification panics on the next run that sends it.
	// (The XR's name is this test's own: no other test shares its route.)
	a.Fields["metadata"].GetStructValue().Fields["name"] = structpb.NewStringValue("changed")
	panicked := func() (msg any) {
		defer func() { msg = recover() }()
		runFunction(t, xrYAML, allowMonitoring, nil, nil)
		return nil
	}()
	if !compose.VerifyShared {
		t.Fatal("compose.VerifyShared is off in package main's tests")
	}
	if s, _ := panicked.(string); !strings.Contains(s, "is not its encoding") {
		t.Errorf("a run after a response's shared Struct was changed: want the tests' verification to panic, got %v", panicked)
	}
}

// corpusSummary says what each run of the corpus came to, for -v.
func corpusSummary(t *testing.T, runs []corpusRun, rsps [][]byte) {
	t.Helper()
	for i, r := range runs {
		rsp := &fnv1.RunFunctionResponse{}
		if err := proto.Unmarshal(rsps[i], rsp); err != nil {
			t.Fatal(err)
		}
		t.Logf("%-24s fatal=%-5t desired=%d %.100s", r.name, isFatal(rsp), len(rsp.GetDesired().GetResources()), fatalOf(rsp))
	}
}
