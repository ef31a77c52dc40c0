package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	fnv1beta1 "github.com/crossplane/function-sdk-go/proto/v1beta1"
)

// loadRequests is how many requests TestServeLoad sends: the load goal is
// at least 20,000. That sends each of the ~40 distinct requests ~500 times,
// interleaved differently on every connection, and makes a per-request leak
// stand out: 20,000 retained responses of a few KB each are tens of MB
// against a bound of a few MB. 64 clients send 320 requests each.
const loadRequests = 20_480

// loadClients is how many clients send at once, each on its own connection:
// the goal's 64, well beyond the handful of Crossplane replicas and
// reconcile workers that call one function.
const loadClients = 64

// loadHeapSlack is how far the heap may stay above its baseline once the
// load is over and the connections are closed. The heap is measured after
// a GC, so what remains is live data: a few MB of slack covers gRPC's and the
// runtime's pools, while a leak of even 1 KB per request (20 MB) exceeds it.
const loadHeapSlack = 8 << 20

// largeRequest and largeEvery: a request larger than largeRequest bytes is
// sent once every largeEvery rounds, the others in every round. The large
// ones (thousands of labels, 100 KB values) cost tens of times a CanaryRoute
// as people write them; sent as often, they would be most of the load and of
// the test's time, and -race would take minutes.
const (
	largeRequest = 32 << 10
	largeEvery   = 16
)

// loadCallTimeout bounds one call so that a stuck server fails the test
// instead of hanging it. It is far above any run's time even under -race:
// the function answers with its result, never because the deadline is near.
const loadCallTimeout = 2 * time.Minute

// A loadCase is a request and the response an in-process run gives it.
type loadCase struct {
	name     string
	req      *fnv1.RunFunctionRequest
	want     *fnv1.RunFunctionResponse
	reqBeta  *fnv1beta1.RunFunctionRequest
	wantBeta *fnv1beta1.RunFunctionResponse
}

// TestServeLoad starts the function as its command line says, on loopback,
// and sends loadRequests requests, valid and invalid, from loadClients
// concurrent clients. Every call must succeed and get exactly the response
// an in-process run gives, and after the load the goroutines and the heap
// must be back at their baseline.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the load test sends 20,480 requests over gRPC: it runs without -short, and in CI under -race")
	}
	cases := loadCases(t)
	schedule := loadSchedule(cases)

	addr, err := startCLI(t, "--insecure", "--now="+cliNow)
	if err != nil {
		t.Fatalf("the function did not start: %v", err)
	}
	goroutines := runtime.NumGoroutine()

	// One call of each request first: what the server and the runtime
	// build once (pools, caches, gRPC's per-method state) belongs to the
	// baseline, not to the load.
	warm := newLoadClient(t, addr, false)
	for _, c := range cases {
		if err := warm.check(t.Context(), c); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	warm.close()
	waitGoroutines(t, goroutines, "the warm-up connection closed")
	baseline := heapAlloc()

	var (
		next     atomic.Int64
		mu       sync.Mutex
		failures = map[string][]error{}
		wg       sync.WaitGroup
	)
	clients := make([]*loadClient, loadClients)
	for i := range clients {
		// One client in 8 speaks v1beta1, as Crossplane 1.16 and earlier
		// do: the SDK converts each call through the wire format, twice
		// the decoding of a v1 call, so more would mostly add time.
		clients[i] = newLoadClient(t, addr, i%8 == 7)
	}
	for _, client := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= loadRequests {
					return
				}
				c := schedule[i%len(schedule)]
				if err := client.check(context.Background(), c); err != nil {
					mu.Lock()
					failures[c.name] = append(failures[c.name], err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, client := range clients {
		client.close()
	}

	names := make([]string, 0, len(failures))
	for name := range failures {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		errs := failures[name]
		t.Errorf("request %s: %d of its calls failed, the first: %v", name, len(errs), errs[0])
	}

	waitGoroutines(t, goroutines, "every client connection closed")
	after := heapAlloc()
	t.Logf("%d requests (%d distinct, %d in a round of the schedule) from %d clients; heap after a GC: %.1f MB before the load, %.1f MB after",
		loadRequests, len(cases), len(schedule), loadClients, float64(baseline)/(1<<20), float64(after)/(1<<20))
	if after > baseline+loadHeapSlack {
		t.Errorf("the heap did not return to its baseline after the load: %.1f MB, was %.1f MB (slack %d MB)",
			float64(after)/(1<<20), float64(baseline)/(1<<20), loadHeapSlack>>20)
	}
}

// loadSchedule is the order in which the clients send the cases: largeEvery
// rounds of every case, the large ones in the first round only.
func loadSchedule(cases []loadCase) []loadCase {
	var schedule []loadCase
	for round := range largeEvery {
		for _, c := range cases {
			if round == 0 || proto.Size(c.req) <= largeRequest {
				schedule = append(schedule, c)
			}
		}
	}
	return schedule
}

// A loadClient calls the function on a connection of its own, in v1 or in
// v1beta1.
type loadClient struct {
	conn *grpc.ClientConn
	v1   fnv1.FunctionRunnerServiceClient
	beta fnv1beta1.FunctionRunnerServiceClient
}

func newLoadClient(t *testing.T, addr string, beta bool) *loadClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c := &loadClient{conn: conn}
	if beta {
		c.beta = fnv1beta1.NewFunctionRunnerServiceClient(conn)
	} else {
		c.v1 = fnv1.NewFunctionRunnerServiceClient(conn)
	}
	return c
}

func (c *loadClient) close() { _ = c.conn.Close() }

// check sends one request and compares the response with the expected one.
func (c *loadClient) check(ctx context.Context, lc loadCase) error {
	ctx, cancel := context.WithTimeout(ctx, loadCallTimeout)
	defer cancel()
	var got, want proto.Message
	var err error
	if c.beta != nil {
		got, err = c.beta.RunFunction(ctx, lc.reqBeta)
		want = lc.wantBeta
	} else {
		got, err = c.v1.RunFunction(ctx, lc.req)
		want = lc.want
	}
	if err != nil {
		return fmt.Errorf("transport error: %w", err)
	}
	if !proto.Equal(want, got) {
		return fmt.Errorf("wrong response: -want (in process), +got (served):\n%s", cmp.Diff(want, got, protocmp.Transform()))
	}
	return nil
}

// waitGoroutines waits until no more than n goroutines run: the server's
// per-connection and per-request goroutines have ended.
func waitGoroutines(t *testing.T, n int, after string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			var dump bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Fatalf("%d goroutines still run a minute after %s, %d before:\n%s", runtime.NumGoroutine(), after, n, dump.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heapAlloc is the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// loadCases is every example's request, valid, and invalid variants of
// them, each with the response of an in-process run.
func loadCases(t *testing.T) []loadCase {
	t.Helper()
	reqs := exampleRequests(t)
	for name, req := range invalidRequests(t, reqs) {
		reqs[name] = req
	}
	names := make([]string, 0, len(reqs))
	for name := range reqs {
		names = append(names, name)
	}
	slices.Sort(names)

	cases := make([]loadCase, 0, len(reqs))
	for _, name := range names {
		req := reqs[name]
		if req.Meta == nil {
			req.Meta = &fnv1.RequestMeta{}
		}
		// The tag comes back in the response: a response sent to the
		// wrong call shows as a wrong tag.
		req.Meta.Tag = name
		c := loadCase{name: name, req: req, want: runInProcess(t, req)}
		// The conversion encodes the expected response as the server
		// will: a message that is not UTF-8 fails here, by name.
		c.reqBeta, c.wantBeta = &fnv1beta1.RunFunctionRequest{}, &fnv1beta1.RunFunctionResponse{}
		convert(t, name, req, c.reqBeta)
		convert(t, name, c.want, c.wantBeta)
		cases = append(cases, c)
	}
	return cases
}

// convert converts between v1 and v1beta1 through the wire format, as the
// SDK does: their protos are identical.
func convert(t *testing.T, name string, from, to proto.Message) {
	t.Helper()
	b, err := proto.Marshal(from)
	if err != nil {
		t.Fatalf("request %s: cannot encode the %T: %v", name, from, err)
	}
	if err := proto.Unmarshal(b, to); err != nil {
		t.Fatalf("request %s: cannot decode the %T: %v", name, to, err)
	}
}

// invalidRequests are variants of the examples that the function must
// refuse, or accept with a warning, each in its own way: bad weights,
// unknown fields, wrong types, both weight and steps, huge selectors,
// malformed Inputs and states, and a valid one whose desired state an
// earlier pipeline step filled.
func invalidRequests(t *testing.T, examples map[string]*fnv1.RunFunctionRequest) map[string]*fnv1.RunFunctionRequest {
	t.Helper()
	base := examples["example/flagger"]
	namespaced := examples["example/namespaced"]
	progressive := examples["example/progressive"]
	if base == nil || namespaced == nil || progressive == nil {
		t.Fatal("the flagger, namespaced and progressive examples are missing")
	}

	// spec changes the XR's spec of a copy of from.
	spec := func(from *fnv1.RunFunctionRequest, change func(spec map[string]any)) *fnv1.RunFunctionRequest {
		req := proto.Clone(from).(*fnv1.RunFunctionRequest)
		xr := req.GetObserved().GetComposite().GetResource().AsMap()
		s, _ := xr["spec"].(map[string]any)
		change(s)
		req.Observed.Composite.Resource = mustStruct(t, xr)
		return req
	}
	// input replaces the Input of a copy of base.
	input := func(y string) *fnv1.RunFunctionRequest {
		req := proto.Clone(base).(*fnv1.RunFunctionRequest)
		req.Input = nil
		if y != "" {
			req.Input = toStruct(t, y)
		}
		return req
	}
	selector := func(n int, label func(i int) (string, string)) func(map[string]any) {
		return func(s map[string]any) {
			sel := map[string]any{}
			for i := range n {
				k, v := label(i)
				sel[k] = v
			}
			s["primary"] = map[string]any{"service": map[string]any{"selector": sel}}
		}
	}

	reqs := map[string]*fnv1.RunFunctionRequest{
		"invalid/weight-over-100": spec(base, func(s map[string]any) { s["traffic"] = map[string]any{"weight": 150} }),
		"invalid/weight-negative": spec(base, func(s map[string]any) { s["traffic"] = map[string]any{"weight": -1} }),
		"invalid/weight-fraction": spec(base, func(s map[string]any) { s["traffic"] = map[string]any{"weight": 12.5} }),
		"invalid/steps-decreasing": spec(base, func(s map[string]any) {
			s["traffic"] = map[string]any{"steps": []any{map[string]any{"weight": 50}, map[string]any{"weight": 10}}}
		}),
		"invalid/weight-and-steps": spec(base, func(s map[string]any) {
			s["traffic"] = map[string]any{"weight": 20, "steps": []any{map[string]any{"weight": 10}}}
		}),
		// Valid: the function leaves unknown top-level spec fields to
		// Crossplane (compositionRef, resourceRefs, ...) and the XRD.
		"valid/unknown-spec-field":     spec(base, func(s map[string]any) { s["colour"] = "blue" }),
		"invalid/unknown-nested-field": spec(namespaced, func(s map[string]any) { s["canary"].(map[string]any)["replicas"] = 3 }),
		"invalid/port-string":          spec(base, func(s map[string]any) { s["port"] = "http" }),
		"invalid/parentRefs-string":    spec(base, func(s map[string]any) { s["parentRefs"] = "gateway" }),
		"invalid/hostname-number":      spec(base, func(s map[string]any) { s["hostnames"] = []any{"www.example.com", 7} }),
		"invalid/spec-missing":         spec(base, func(s map[string]any) { clear(s) }),
		"invalid/gate-not-allowed": spec(progressive, func(s map[string]any) {
			s["traffic"].(map[string]any)["gates"] = []any{map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "db", "conditionType": "Ready"}}
		}),
		// A few thousand invalid labels (the quadratic error
		// aggregation), in multi-byte characters so that a cap by bytes
		// that cuts a rune in two would fail the response's encoding.
		"invalid/huge-selector": spec(base, selector(2000, func(i int) (string, string) {
			return fmt.Sprintf("label-%04d/é", i), strings.Repeat("ü", 40)
		})),
		"invalid/huge-label-values": spec(base, selector(4, func(i int) (string, string) {
			return fmt.Sprintf("app%d", i), strings.Repeat("日本", 8000)
		})),
		// Labels that Kubernetes accepts, more than the function may.
		"invalid/selector-1000-labels": spec(base, selector(1000, func(i int) (string, string) {
			return fmt.Sprintf("example.com/label-%04d", i), fmt.Sprintf("value-%d", i)
		})),
		// Long multi-byte values that error messages quote.
		"invalid/label-value-multibyte": spec(base, selector(1, func(int) (string, string) {
			return "app", strings.Repeat("ü", 1000)
		})),
		"invalid/hostname-multibyte":  spec(base, func(s map[string]any) { s["hostnames"] = []any{strings.Repeat("é", 1000) + ".example.com"} }),
		"invalid/input-unknown-field": input(`{apiVersion: canaryroute.fn.crossplane.io/v1beta1, kind: Input, allowedBackendNamespace: [monitoring]}`),
		"invalid/input-wrong-type":    input(`{apiVersion: canaryroute.fn.crossplane.io/v1beta1, kind: Input, allowedBackendNamespaces: monitoring}`),
		"invalid/input-wrong-kind":    input(`{apiVersion: canaryroute.fn.crossplane.io/v1beta1, kind: Composition}`),
		"invalid/input-missing":       input(""),
		"invalid/status-rollout": func() *fnv1.RunFunctionRequest {
			req := proto.Clone(progressive).(*fnv1.RunFunctionRequest)
			xr := req.GetObserved().GetComposite().GetResource().AsMap()
			xr["status"] = map[string]any{"rollout": map[string]any{"phase": 7, "step": "one", "stepStartedAt": "yesterday"}}
			req.Observed.Composite.Resource = mustStruct(t, xr)
			return req
		}(),
		"invalid/no-observed-composite": func() *fnv1.RunFunctionRequest {
			req := proto.Clone(base).(*fnv1.RunFunctionRequest)
			req.Observed = nil
			return req
		}(),
		// Valid: an earlier pipeline step set a status field and composed
		// a resource of its own, which the function must keep.
		"valid/desired-from-earlier-step": func() *fnv1.RunFunctionRequest {
			req := proto.Clone(namespaced).(*fnv1.RunFunctionRequest)
			req.Desired = &fnv1.State{
				Composite: &fnv1.Resource{Resource: toStruct(t, `{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, status: {owner: team-a}}`)},
				Resources: map[string]*fnv1.Resource{"dashboard": {Resource: toStruct(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: checkout-dashboard, namespace: shop}}`)}},
			}
			return req
		}(),
	}
	return reqs
}
