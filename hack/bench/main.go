// Command bench measures function-canary-route where Crossplane meets it:
// over gRPC on loopback, against the floor every function pays. It builds and
// starts the function and an echo function (hack/bench/echo: the same SDK and
// server, answering with the request's desired state) and a replay (the echo
// answering with the function's own response, read once: the floor for a
// response that size), then sends all three the same request, first from one
// caller (latency: p50, p99) and then from 16 callers at once (throughput:
// runs per second), alternating between them in rounds so that a change of
// the machine's load hits all alike. With -baseline it also builds the function
// at a git revision and measures it as a fourth target in the same rounds, so
// that a change's cost is read side by side rather than across two runs that
// met different loads.
//
//	go run ./hack/bench                       # the Flagger scenario
//	go run ./hack/bench -scenario rules16     # 16 rules, 32 parents, 16 hostnames
//	go run ./hack/bench -baseline HEAD        # the working tree beside its last commit
//	go run ./hack/bench -live 200             # 200 CanaryRoutes rolled out on a live control plane (live.go)
//
// docs/performance.md records its output and the machine it came from.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/hack/bench/scale"
)

// now is the instant the function evaluates rollouts at, as in the tests.
const now = "2026-12-02T10:07:00Z"

type options struct {
	scenario   string
	sequential int
	rounds     int
	callers    int
	duration   time.Duration
	baseline   string
}

func main() {
	var o options
	flag.StringVar(&o.scenario, "scenario", "flagger", "flagger (one rule, one grant, one proxy Service) or rules16 (16 rules of 4 header matches, 32 parentRefs, 16 hostnames)")
	flag.IntVar(&o.sequential, "requests", 2000, "requests per round from one caller")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds per target, alternating between the targets")
	flag.IntVar(&o.callers, "callers", 16, "concurrent callers for the throughput rounds")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each throughput round")
	flag.StringVar(&o.baseline, "baseline", "", "a git revision (e.g. HEAD, HEAD~3, c30ab4c) of the function to build and measure beside the working tree's, in the same rounds")
	var lo liveOptions
	flag.IntVar(&lo.n, "live", 0, "instead: the live scale run (hack/bench/live.go) with this many CanaryRoutes on a control plane of its own (200 is the documented run)")
	flag.StringVar(&lo.crossplane, "live-crossplane-flags", "", "with -live: more flags for crossplane core start, space-separated, such as --max-reconcile-rate=10; none runs Crossplane with its defaults (see docs/performance.md)")
	flag.IntVar(&lo.abortEvery, "live-abort-every", scale.DefaultAbortEvery, "with -live: abort every n-th CanaryRoute in the middle of its rollout of v2 (-1: none)")
	flag.StringVar(&lo.xpkg, "live-xpkg", "", "with -live: a prebuilt .xpkg of the function (default $CANARY_ROUTE_XPKG, else hack/release.sh builds one)")
	flag.DurationVar(&lo.timeout, "live-timeout", 5*time.Minute, "with -live: the longest each phase may take")
	flag.BoolVar(&lo.keep, "live-keep", false, "with -live: keep the control plane's folder (logs) and print where")
	flag.StringVar(&lo.pprof, "live-pprof", "", "with -live: a folder for 30 s CPU profiles of kube-apiserver, crossplane and the harness, taken 20 s after the bump")
	flag.StringVar(&lo.trace, "live-trace", "", "with -live: log every write of this CanaryRoute (e.g. scale-0000) with the fields it changed")
	flag.Parse()
	if lo.n > 0 {
		if err := runLive(lo); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// target is a function under load.
type target struct {
	name   string
	client fnv1.FunctionRunnerServiceClient
	lat    []time.Duration
	runs   int64
	spent  time.Duration
}

func run(o options) error {
	req, err := request(o.scenario)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "canary-route-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // A temporary folder.

	// The baseline first: a revision git does not know fails the run before
	// the other builds are spent.
	var base, commit string
	if o.baseline != "" {
		base = filepath.Join(dir, "baseline")
		if commit, err = buildRevision(o.baseline, filepath.Join(dir, "baseline-src"), base); err != nil {
			return err
		}
	}
	fn, echo := filepath.Join(dir, "function"), filepath.Join(dir, "echo")
	for _, b := range [][2]string{{fn, "."}, {echo, "./hack/bench/echo"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("cannot build %s: %w: %s", b[1], err, out)
		}
	}
	ctx := context.Background()
	// The servers are killed and waited for before run returns: a context
	// that kills them on cancel races with the process's exit, and a server
	// left behind keeps the caller's pipe open.
	var servers []*exec.Cmd
	defer stop(&servers)
	echoTarget, err := start(&servers, "echo", echo)
	if err != nil {
		return err
	}
	fnTarget, err := start(&servers, "function-canary-route", fn, "--insecure", "--metrics-address=", "--now="+now)
	if err != nil {
		return err
	}
	// The replay answers with the function's own response: the floor for a
	// response of that size.
	rsp, err := fnTarget.client.RunFunction(ctx, req)
	if err != nil {
		return err
	}
	b, err := proto.Marshal(rsp)
	if err != nil {
		return err
	}
	replayFile := filepath.Join(dir, "response.pb")
	if err := os.WriteFile(replayFile, b, 0o600); err != nil {
		return err
	}
	replayTarget, err := start(&servers, "replay of the function's response", echo, "-replay="+replayFile)
	if err != nil {
		return err
	}
	targets := []*target{echoTarget, replayTarget, fnTarget}
	if base != "" {
		// The same flags as the function under test: old revisions accept
		// them, and the same --now keeps their rollouts at the same instant.
		baseTarget, err := start(&servers, "function-canary-route@"+o.baseline, base, "--insecure", "--metrics-address=", "--now="+now)
		if err != nil {
			return err
		}
		targets = append(targets, baseTarget)
	}

	fmt.Printf("scenario %s: request of %d bytes, response of %d bytes (echo: %d)\n",
		o.scenario, proto.Size(req), proto.Size(rsp), responseSize(echoTarget, req))
	if base != "" {
		// A baseline that answers differently does different work: its size
		// says so before its figures are compared.
		fmt.Printf("baseline %s is commit %s: response of %d bytes\n", o.baseline, commit, responseSize(targets[3], req))
	}
	if err := measure(targets, req, o); err != nil {
		return err
	}
	report(targets, o)
	return nil
}

// measure warms every target, then measures them in rounds, alternating
// between them so that a change in the machine's load hits all alike:
// latency from one caller, then throughput from many.
func measure(targets []*target, req *fnv1.RunFunctionRequest, o options) error {
	for _, t := range targets {
		if err := warm(t, req); err != nil {
			return err
		}
	}
	for range o.rounds {
		for _, t := range targets {
			if err := sequential(t, req, o.sequential); err != nil {
				return err
			}
		}
	}
	for range o.rounds {
		for _, t := range targets {
			if err := concurrent(t, req, o.callers, o.duration); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildRevision builds the function at a git revision into bin, from a
// detached worktree at src that it removes again: the working tree, and
// whatever others are editing in it, stays as it is.
func buildRevision(rev, src, bin string) (commit string, err error) {
	out, err := exec.Command("git", "rev-parse", "--short", rev+"^{commit}").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cannot resolve baseline %s: %w: %s", rev, err, out)
	}
	commit = strings.TrimSpace(string(out))
	if out, err := exec.Command("git", "worktree", "add", "--detach", src, commit).CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot check out baseline %s: %w: %s", rev, err, out)
	}
	// Removed before the temporary folder is: a worktree deleted under git
	// leaves its record in .git/worktrees until a prune.
	defer func() {
		if out, rerr := exec.Command("git", "worktree", "remove", "--force", src).CombinedOutput(); rerr != nil && err == nil {
			err = fmt.Errorf("cannot remove the baseline's worktree %s: %w: %s", src, rerr, out)
		}
	}()
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build baseline %s: %w: %s", rev, err, out)
	}
	return commit, nil
}

// start runs a function binary on a free loopback port and connects to it.
func start(servers *[]*exec.Cmd, name, bin string, args ...string) (*target, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, append(args, "--address="+addr)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	*servers = append(*servers, cmd)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s does not listen on %s: %w", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &target{name: name, client: fnv1.NewFunctionRunnerServiceClient(conn)}, nil
}

// stop kills the servers and waits for them to exit.
func stop(servers *[]*exec.Cmd) {
	for _, cmd := range *servers {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // Killed: its error says so.
	}
}

func responseSize(t *target, req *fnv1.RunFunctionRequest) int {
	rsp, err := t.client.RunFunction(context.Background(), req)
	if err != nil {
		return -1
	}
	return proto.Size(rsp)
}

func warm(t *target, req *fnv1.RunFunctionRequest) error {
	for range 300 {
		if _, err := t.client.RunFunction(context.Background(), req); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}

func sequential(t *target, req *fnv1.RunFunctionRequest, n int) error {
	for range n {
		start := time.Now()
		if _, err := t.client.RunFunction(context.Background(), req); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		t.lat = append(t.lat, time.Since(start))
	}
	return nil
}

func concurrent(t *target, req *fnv1.RunFunctionRequest, callers int, d time.Duration) error {
	var runs atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for time.Since(start) < d {
				if _, err := t.client.RunFunction(context.Background(), req); err != nil {
					failed.Store(err)
					return
				}
				runs.Add(1)
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.runs += runs.Load()
	t.spent += time.Since(start)
	return nil
}

func report(targets []*target, o options) {
	type result struct{ p50, p99, rps float64 }
	results := make([]result, len(targets))
	fmt.Printf("\n| target | p50, one caller | p99, one caller | runs/s, %d callers |\n|---|---|---|---|\n", o.callers)
	for i, t := range targets {
		slices.Sort(t.lat)
		r := result{
			p50: float64(t.lat[len(t.lat)/2].Microseconds()),
			p99: float64(t.lat[len(t.lat)*99/100].Microseconds()),
			rps: float64(t.runs) / t.spent.Seconds(),
		}
		results[i] = r
		fmt.Printf("| %s | %.0f us | %.0f us | %.0f |\n", t.name, r.p50, r.p99, r.rps)
	}
	floor, replay, fn := results[0], results[1], results[2]
	fmt.Printf("\np50 %.2fx the echo floor (goal at most 1.3x); throughput %.2f of the floor (goal at least 0.7)\n",
		fn.p50/floor.p50, fn.rps/floor.rps)
	fmt.Printf("p50 %.2fx the replay of its own response; throughput %.2f of it\n", fn.p50/replay.p50, fn.rps/replay.rps)
	if len(results) > 3 {
		base := results[3]
		fmt.Printf("p50 %.2fx the baseline (%s), p99 %.2fx; throughput %.2fx the baseline\n",
			fn.p50/base.p50, targets[3].name, fn.p99/base.p99, fn.rps/base.rps)
	}
}

// request is the scenario's RunFunctionRequest, as Crossplane sends it on a
// CanaryRoute's first reconcile: the XR and the Composition step's Input.
func request(scenario string) (*fnv1.RunFunctionRequest, error) {
	xr, input, err := example("example/flagger")
	if err != nil {
		return nil, err
	}
	switch scenario {
	case "flagger":
	case "rules16":
		spec := xr["spec"].(map[string]any) //nolint:forcetypeassert // The example's spec is an object.
		parents := make([]any, 32)
		for i := range parents {
			parents[i] = map[string]any{"name": "gateway", "namespace": "istio-ingress", "sectionName": fmt.Sprintf("listener-%d", i)}
		}
		hostnames := make([]any, 16)
		for i := range hostnames {
			hostnames[i] = fmt.Sprintf("www%d.example.com", i)
		}
		rules := make([]any, 16)
		for i := range rules {
			headers := make([]any, 4)
			for j := range headers {
				headers[j] = map[string]any{"name": fmt.Sprintf("X-Header-%d", j), "value": fmt.Sprintf("value-%d-%d", i, j)}
			}
			rules[i] = map[string]any{
				"name":    fmt.Sprintf("rule-%d", i),
				"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": fmt.Sprintf("/api/%d", i)}, "headers": headers}},
			}
		}
		spec["parentRefs"], spec["hostnames"], spec["rules"] = parents, hostnames, rules
	default:
		return nil, fmt.Errorf("unknown scenario %q", scenario)
	}
	composite, err := structpb.NewStruct(xr)
	if err != nil {
		return nil, err
	}
	// Crossplane's first step gets a desired XR with its identity only.
	desired, err := structpb.NewStruct(map[string]any{"apiVersion": xr["apiVersion"], "kind": xr["kind"], "metadata": map[string]any{"name": "podinfo"}})
	if err != nil {
		return nil, err
	}
	in, err := structpb.NewStruct(input)
	if err != nil {
		return nil, err
	}
	return &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "bench"},
		Input:    in,
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: composite}},
		Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: desired}},
	}, nil
}

// example reads an example's XR and its Composition's Input.
func example(dir string) (xr, input map[string]any, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "xr.yaml"))
	if err != nil {
		return nil, nil, err
	}
	if err := yaml.Unmarshal(b, &xr); err != nil {
		return nil, nil, err
	}
	b, err = os.ReadFile(filepath.Join(dir, "composition.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var comp struct {
		Spec struct {
			Pipeline []struct {
				Input map[string]any `json:"input"`
			} `json:"pipeline"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &comp); err != nil {
		return nil, nil, err
	}
	if len(comp.Spec.Pipeline) == 0 {
		return nil, nil, fmt.Errorf("%s: no pipeline step", dir)
	}
	return xr, comp.Spec.Pipeline[0].Input, nil
}
