package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
	"github.com/crossplane-contrib/function-canary-route/test/live/standin"
)

// serviceRange is the ClusterIP range of the scale run's API server: two
// proxy Services a CanaryRoute outgrow the harness's /24 (253 addresses)
// at 127 CanaryRoutes. Its first address is the harness's, 10.0.0.1.
const serviceRange = "--service-cluster-ip-range=10.0.0.0/16"

// defaultGatewayWorkers is how many stand-ins write route status at once.
const defaultGatewayWorkers = 8

// standInPeriod is the pause between two passes of the stand-in, its
// default.
const standInPeriod = 250 * time.Millisecond

// Setup is how to start a control plane for the scenario.
type Setup struct {
	// Root is the repository.
	Root string
	// Package is the function's .xpkg (controlplane.ReleasePackage).
	Package string
	// CrossplaneArgs are more flags for crossplane core start (such as
	// --max-reconcile-rate=200), after the metrics port the run chooses.
	CrossplaneArgs []string
	// FunctionArgs are more flags for the function (such as --debug),
	// after the metrics address the run chooses.
	FunctionArgs []string
	// GatewayWorkers is how many stand-ins write route status side by side,
	// each over a shard of the routes, reading from watch caches (see
	// gateway). Default 8.
	GatewayWorkers int
	// PlainStandIn runs one stand-in as test/live does instead: it lists
	// every route and gets every backend Service on every pass.
	PlainStandIn bool
	// Profiling serves Crossplane's and the API server's pprof endpoints
	// (see Profile).
	Profiling bool
	// KeepDir keeps the control plane's folder, with every log.
	KeepDir bool
	// Logf reports progress. Optional.
	Logf func(format string, args ...any)
}

// A ControlPlane is the project's control plane as test/live starts it
// (test/live/controlplane: the function from its own package, the Gateway
// API CRDs of the standard channel, Crossplane v2.2.0 out of cluster), with
// the CanaryRoute XRDs applied and the gateway stand-in running, and its
// processes' metrics on ports of its own.
type ControlPlane struct {
	Env *controlplane.Environment
	// Client is the admin's, for setup.
	Client *controlplane.Client
	// Metrics are the Prometheus endpoints of the function, Crossplane and
	// the API server.
	Metrics map[string]Endpoint
	// CrossplaneArgs are the flags given to crossplane core start on top of
	// the harness's.
	CrossplaneArgs []string
	// StandIn times the stand-in's passes over every route.
	StandIn *Passes

	stopStandIn       context.CancelFunc
	standInDone       sync.WaitGroup
	crossplaneProfile string
	apiserver         *http.Client
}

// Start starts a control plane. On error, what started is stopped.
func Start(ctx context.Context, s Setup) (cp *ControlPlane, err error) {
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	crds, err := controlplane.GatewayAPICRDs(ctx, s.Root, "standard")
	if err != nil {
		return nil, err
	}
	// Both metrics servers on ports of the run's own: the function's on
	// loopback (the harness turns it off; the last --metrics-address wins),
	// Crossplane's on every interface (its flag takes a port).
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	fnMetrics := fmt.Sprintf("127.0.0.1:%d", ports[0])
	xpArgs := []string{fmt.Sprintf("--metrics-port=%d", ports[1])}
	apiArgs := []string{serviceRange}
	var xpProfile string
	if s.Profiling {
		xpProfile = fmt.Sprintf("127.0.0.1:%d", ports[2])
		xpArgs = append(xpArgs, "--profile="+xpProfile)
		apiArgs = append(apiArgs, "--profiling=true")
	}
	xpArgs = append(xpArgs, s.CrossplaneArgs...)
	cp = &ControlPlane{
		Env: &controlplane.Environment{
			Root:              s.Root,
			Package:           s.Package,
			CRDDirectoryPaths: []string{crds},
			APIServerArgs:     apiArgs,
			FunctionArgs:      append([]string{"--metrics-address=" + fnMetrics}, s.FunctionArgs...),
			CrossplaneArgs:    xpArgs,
			KeepDir:           s.KeepDir,
			Logf:              logf,
		},
		Metrics: map[string]Endpoint{
			"function":   {URL: "http://" + fnMetrics + "/metrics"},
			"crossplane": {URL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])},
		},
		crossplaneProfile: xpProfile,
		CrossplaneArgs:    xpArgs,
		StandIn:           &Passes{},
		stopStandIn:       func() {},
	}
	defer func() {
		if err != nil {
			cp.Env.KeepDir = true
			err = fmt.Errorf("%w\nlogs (kept):\n%s", err, cp.Env.DescribeLogs())
			_ = cp.Stop()
			cp = nil
		}
	}()
	if err := cp.Env.Start(ctx); err != nil {
		return cp, err
	}
	cp.Client = cp.Env.Client()
	if cp.apiserver, err = rest.HTTPClientFor(cp.Env.Config); err != nil {
		return cp, err
	}
	cp.Metrics["kube-apiserver"] = Endpoint{URL: cp.Env.Config.Host + "/metrics", Client: cp.apiserver}

	files, err := filepath.Glob(filepath.Join(s.Root, "example", "definitions", "*.yaml"))
	if err != nil {
		return cp, err
	}
	for _, f := range files {
		objs, err := controlplane.ReadObjects(f)
		if err != nil {
			return cp, err
		}
		for _, o := range objs {
			if _, err := cp.Client.Apply(ctx, o); err != nil {
				return cp, err
			}
		}
	}
	if err := controlplane.Await(ctx, 2*time.Minute, 250*time.Millisecond, "the CanaryRoute kind served", func(ctx context.Context) (bool, string) {
		_, err := cp.Client.Resource(ctx, CanaryRouteGVK, "default")
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return cp, err
	}

	gctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	cp.stopStandIn = stop
	if s.PlainStandIn {
		// As test/live runs it: one stand-in that lists and gets on every
		// pass, with a client of its own (the harness's 100 requests a
		// second).
		gc, err := controlplane.NewClient(cp.Env.Config)
		if err != nil {
			return cp, err
		}
		gw := &standin.StandIn{Client: gc}
		cp.standInDone.Go(func() { cp.StandIn.run(gctx, gw, logf) })
		return cp, nil
	}
	workers := s.GatewayWorkers
	if workers == 0 {
		workers = defaultGatewayWorkers
	}
	cp.StandIn.workers = workers
	if err := startGateway(gctx, cp.Env.Config, workers, cp.StandIn, logf, &cp.standInDone); err != nil {
		return cp, err
	}
	return cp, nil
}

// Prepare creates a namespace and a Composition for a run of n
// CanaryRoutes, and returns its Options: a client of the run's own, the
// processes and metrics of the control plane.
func (cp *ControlPlane) Prepare(ctx context.Context, ns string, n int) (Options, error) {
	if _, err := cp.Client.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return Options{}, err
	}
	comp, err := Composition(cp.Env.Root, "scale-"+ns)
	if err != nil {
		return Options{}, err
	}
	if _, err := cp.Client.Apply(ctx, comp); err != nil {
		return Options{}, err
	}
	c, err := controlplane.NewClient(cp.Env.Config)
	if err != nil {
		return Options{}, err
	}
	return Options{
		Client:      c,
		Root:        cp.Env.Root,
		Namespace:   ns,
		Composition: comp.GetName(),
		N:           n,
		PIDs:        cp.pids,
		Metrics:     cp.Metrics,
		Logf:        cp.Env.Logf,
	}, nil
}

// pids are the control plane's processes, and this one, which runs the
// stand-in and watches the CanaryRoutes: the harness.
func (cp *ControlPlane) pids() map[string]int {
	p := cp.Env.PIDs()
	p["harness (stand-in, watch)"] = os.Getpid()
	return p
}

// Profile takes CPU profiles of the API server and Crossplane (with
// Setup.Profiling) and of this process, for a while, into dir:
// kube-apiserver.pprof, crossplane.pprof, harness.pprof.
func (cp *ControlPlane) Profile(ctx context.Context, dir string, d time.Duration) error {
	if cp.crossplaneProfile == "" {
		return errors.New("the control plane was started without Setup.Profiling")
	}
	secs := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for name, ep := range map[string]Endpoint{
		"kube-apiserver": {URL: cp.Env.Config.Host + secs, Client: cp.apiserver},
		"crossplane":     {URL: "http://" + cp.crossplaneProfile + secs},
	} {
		wg.Go(func() { errs <- fetch(ctx, ep, filepath.Join(dir, name+".pprof"), d) })
	}
	wg.Go(func() {
		f, err := os.Create(filepath.Join(dir, "harness.pprof"))
		if err != nil {
			errs <- err
			return
		}
		defer f.Close() //nolint:errcheck // Closed after the profile is written.
		if err := pprof.StartCPUProfile(f); err != nil {
			errs <- err
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		pprof.StopCPUProfile()
	})
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		if err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

func fetch(ctx context.Context, ep Endpoint, path string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL, http.NoBody)
	if err != nil {
		return err
	}
	hc := ep.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	rsp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", ep.URL, rsp.Status)
	}
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// StopStandIn stops the stand-in, so that its passes are all counted.
func (cp *ControlPlane) StopStandIn() {
	cp.stopStandIn()
	cp.standInDone.Wait()
}

// Stop stops the stand-in and the control plane.
func (cp *ControlPlane) Stop() error {
	cp.StopStandIn()
	if cp.Env.KeepDir && cp.Env.Logf != nil {
		cp.Env.Logf("scale: the control plane's logs (kept):\n%s", cp.Env.DescribeLogs())
	}
	return cp.Env.Stop()
}

// Passes times the stand-in's passes over every route.
type Passes struct {
	workers int
	mu      sync.Mutex
	d       []time.Duration
	errors  int
}

func (p *Passes) run(ctx context.Context, gw *standin.StandIn, logf func(string, ...any)) {
	for ctx.Err() == nil {
		start := time.Now()
		err := gw.Pass(ctx)
		d := time.Since(start)
		p.mu.Lock()
		switch {
		case err == nil:
			p.d = append(p.d, d)
		case ctx.Err() == nil:
			p.errors++
			if p.errors <= 3 {
				logf("gateway stand-in: %v", err)
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(standInPeriod):
		}
	}
}

// String sums the passes up.
func (p *Passes) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := slices.Clone(p.d)
	slices.Sort(d)
	how := "one stand-in listing every route and getting every Service on each pass"
	if p.workers > 0 {
		how = fmt.Sprintf("%d stand-ins, each over a shard of the routes, reading from watch caches", p.workers)
	}
	return fmt.Sprintf("%s; %d passes (%s after the last), each p50 %s, p90 %s, max %s; %d failed",
		how, len(d), standInPeriod, Quantile(d, 0.5).Round(time.Millisecond), Quantile(d, 0.9).Round(time.Millisecond),
		Quantile(d, 1).Round(time.Millisecond), p.errors)
}

// Flags describes the Crossplane flags a run added to the harness's.
func (cp *ControlPlane) Flags() string {
	var out []string
	for _, f := range cp.CrossplaneArgs {
		if !strings.HasPrefix(f, "--metrics-port=") && !strings.HasPrefix(f, "--profile=") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "the harness's (--debug, --enable-realtime-compositions; defaults --max-reconcile-rate=100, --poll-interval=1m)"
	}
	return "the harness's and " + strings.Join(out, " ")
}

// freePorts returns ports on loopback that nothing listens on now.
func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port) //nolint:forcetypeassert // A TCP listener.
	}
	return out, nil
}
