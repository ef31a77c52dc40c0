package live

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/hack/bench/scale"
)

// EnvScale sets how many CanaryRoutes TestScale rolls out (default
// DefaultScale; 0 skips it). `go run ./hack/bench -live 200` runs the same
// scenario without the test suite, and prints the same figures.
const EnvScale = "CANARY_ROUTE_SCALE"

// DefaultScale is the documented run's size.
const DefaultScale = 200

// EnvScaleCrossplaneFlags are more flags for crossplane core start in
// TestScale, space-separated (default DefaultScaleCrossplaneFlags).
const EnvScaleCrossplaneFlags = "CANARY_ROUTE_SCALE_CROSSPLANE_FLAGS"

// EnvScaleFunctionFlags are more flags for the function in TestScale,
// space-separated (such as --remember-entries=0, to measure it without its
// memory of decisions).
const EnvScaleFunctionFlags = "CANARY_ROUTE_SCALE_FUNCTION_FLAGS"

// DefaultScaleCrossplaneFlags are none: Crossplane's defaults
// (--max-reconcile-rate=100), under which its caches lag and the function
// keeps every rollout monotonic itself.
const DefaultScaleCrossplaneFlags = ""

// TestScale rolls out N CanaryRoutes at once (hack/bench/scale), under
// Crossplane's default flags: each composed and Ready, its rollout of v1
// Succeeded through three steps ([{weight: 10, pause: 10s}, {weight: 50,
// pause: 10s}, {weight: 100}]), then v2 written to all of them, a tenth
// aborted in the middle of that rollout, and every other rollout Succeeded
// again at 100%. A watch of every route write, apart from the function's
// own view, and of every status write checks that no rollout moved back
// and that no aborted canary got weight again. It fails on a Fatal, a
// Synced False, a failed rollout, a move back or a route not at its weight
// at the end, and logs the figures: time to all Ready, the spread of
// completions after the bump, the CPU time and resident set of the
// function, Crossplane and the API server, the stale reads the function
// answered, and the goal of docs/performance.md.
//
// It takes a few minutes and loads the machine, so it is skipped under
// -short, and runs on a control plane of its own: 200 CanaryRoutes compose
// 400 ClusterIP Services, more than the shared control plane's Service range
// holds, and its load would slow every other test's waits. It is not
// parallel, so the other tests wait for it, and its figures are its own.
//
//	go test ./test/live -run TestScale -v -timeout 40m
//	CANARY_ROUTE_SCALE=500 CANARY_ROUTE_SCALE_CROSSPLANE_FLAGS=--max-reconcile-rate=10 go test ./test/live -run TestScale -v -timeout 40m
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("the live scale run takes minutes")
	}
	n := DefaultScale
	if v := os.Getenv(EnvScale); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			t.Fatalf("%s=%q: want a number of CanaryRoutes", EnvScale, v)
		}
	}
	if n == 0 {
		t.Skipf("%s=0", EnvScale)
	}
	flags := DefaultScaleCrossplaneFlags
	if v, ok := os.LookupEnv(EnvScaleCrossplaneFlags); ok {
		flags = v
	}
	fnFlags := strings.Fields(os.Getenv(EnvScaleFunctionFlags))

	ctx := t.Context()
	cp, err := scale.Start(ctx, scale.Setup{
		Root:           env.root,
		Package:        env.cp.Package,
		CrossplaneArgs: strings.Fields(flags),
		FunctionArgs:   fnFlags,
		Logf:           t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.Env.KeepDir = t.Failed()
		_ = cp.Stop()
	})
	o, err := cp.Prepare(ctx, "scale", n)
	if err != nil {
		t.Fatal(err)
	}
	// Each phase took about a minute at 200 on the 2-core machine with the
	// default flags; the rest is room for a machine busy with other tests.
	o.Timeout = 3*time.Minute + time.Duration(n)*1500*time.Millisecond
	t.Logf("%d CanaryRoutes; Crossplane flags: %s; the function's: %v", n, cp.Flags(), fnFlags)
	res, err := scale.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	cp.StopStandIn()

	// The failures come before the figures: a log cut to its head and tail
	// (CI's) keeps them.
	if res.Fatal > 0 {
		t.Errorf("the function returned %d Fatal results", res.Fatal)
	}
	for _, e := range res.Errors() {
		t.Errorf("%s", e)
	}
	var b strings.Builder
	res.Report(&b)
	t.Logf("figures:\n%s\ngateway stand-in: %s", b.String(), cp.StandIn)
	_, goal := res.Goal()
	t.Log(goal)
}
