// Package live runs the function as platform teams do: installed from its
// own package into a real Crossplane (v2.2.0, out of cluster, External
// package runtime) against a real API server (kube-apiserver, etcd,
// kube-controller-manager, all built from pinned modules by hack/tool.sh),
// with the real Gateway API CRDs, and a real gateway: Traefik's Gateway API
// implementation (hack/tool.sh gateway) carries real requests to backends
// that the tests serve (test/live/backends) on their Services' clusterIPs,
// inside loopback. Routes attached to other parents get their status from
// a stand-in (test/live/standin), which leaves the real gateway's routes to
// it.
//
// One control plane serves every test; each test works in namespaces of its
// own. On failure, the logs of every process are kept and their paths
// printed.
package live

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
	"github.com/crossplane-contrib/function-canary-route/test/live/standin"
)

// EnvPackage names a prebuilt .xpkg of the function, instead of the one
// hack/release.sh builds.
const EnvPackage = "CANARY_ROUTE_XPKG"

// functionGoTemplating is the Function that the release example's
// Composition names for its second step.
const functionGoTemplating = "function-go-templating"

// env is the control plane that TestMain starts for every test.
var env struct {
	root string
	cp   *controlplane.Environment
	c    *controlplane.Client
	// functionMetrics is the host:port of the function's own metrics
	// (--metrics-address, on loopback), which the metric analysis tests
	// read.
	functionMetrics string
}

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests mostly wait for the control plane: run them all at once,
	// not GOMAXPROCS at a time (2 on CI), unless -parallel says otherwise.
	parallel := false
	flag.Visit(func(f *flag.Flag) { parallel = parallel || f.Name == "test.parallel" })
	if !parallel {
		_ = flag.Set("test.parallel", "16")
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "live setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return 0, err
	}
	env.root = root
	ctx := context.Background()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

	tmp, err := os.MkdirTemp("", "canary-route-live-release-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	started := time.Now()
	xpkg := os.Getenv(EnvPackage)
	if xpkg == "" {
		if xpkg, err = controlplane.ReleasePackage(ctx, root, tmp); err != nil {
			return 0, err
		}
		logf("live: released the function's package in %s: %s", time.Since(started).Round(time.Second), xpkg)
	}

	// function-go-templating, the release example's second step, from a
	// package built the same way (controlplane.GoTemplatingPackage).
	goTemplating, err := controlplane.GoTemplatingPackage(ctx, root, tmp)
	if err != nil {
		return 0, err
	}

	crds, err := controlplane.GatewayAPICRDs(ctx, root, "standard")
	if err != nil {
		return 0, err
	}
	fnMetrics, err := loopbackAddress()
	if err != nil {
		return 0, err
	}
	env.functionMetrics = fnMetrics
	cp := &controlplane.Environment{
		Root:              root,
		Package:           xpkg,
		CRDDirectoryPaths: []string{crds},
		// The last --metrics-address wins over the harness's, which turns
		// the metrics server off.
		FunctionArgs: []string{"--debug", "--metrics-address=" + fnMetrics},
		Functions:    []controlplane.Function{{Name: functionGoTemplating, Package: goTemplating, Args: []string{"--debug"}}},
		Gateway:      true,
		Logf:         logf,
	}
	env.cp = cp
	keep := false
	defer func() {
		cp.KeepDir = keep
		_ = cp.Stop()
	}()
	if err := cp.Start(ctx); err != nil {
		keep = true
		return 0, fmt.Errorf("%w\nlogs (kept):\n%s%s", err, cp.DescribeLogs(), tails(cp))
	}
	env.c = cp.Client()

	// The CanaryRoute XRDs, as the README installs them; TestXRDs checks
	// that they become Established.
	files, err := filepath.Glob(filepath.Join(root, "example", "definitions", "*.yaml"))
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		objs, err := controlplane.ReadObjects(f)
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			if _, err := env.c.Apply(ctx, o); err != nil {
				return 0, err
			}
		}
	}

	gctx, stop := context.WithCancel(ctx)
	defer stop()
	gw := &standin.StandIn{Client: env.c, Errorf: logf, RealControllers: []string{controlplane.GatewayControllerName}}
	go gw.Run(gctx)

	code := m.Run()
	if code != 0 {
		keep = true
		logf("live: logs of every process (kept):\n%s%s", cp.DescribeLogs(), tails(cp))
	}
	return code, nil
}

// loopbackAddress is a loopback host:port that nothing listens on now.
func loopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tails returns the end of Crossplane's, the function's and the gateway's
// logs, which CI shows even when the files are gone.
func tails(cp *controlplane.Environment) string {
	var b strings.Builder
	logs := cp.Logs()
	for _, name := range []string{"crossplane", "function", "gateway"} {
		p, ok := logs[name]
		if !ok {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- last lines of %s:\n%s\n", p, strings.Join(lines, "\n"))
	}
	return b.String()
}
