// Package controlplane starts a control plane on loopback, in the shape of
// controller-runtime's envtest: etcd, kube-apiserver and
// kube-controller-manager built from pinned modules (hack/tool.sh), Crossplane
// core out of cluster with the External package runtime, a registry holding
// the function's package, and the function itself, served with mTLS as an
// external runtime would serve it; with Gateway, a real Gateway API
// implementation (Traefik, see gateway.go) with its GatewayClass and
// Gateway, and on demand Prometheus scraping it. The live tests (test/live)
// and hack/cluster.sh share it.
//
//	env := &controlplane.Environment{Root: root, Package: xpkg, CRDDirectoryPaths: []string{gatewayCRDs}}
//	if err := env.Start(ctx); err != nil { ... }
//	defer env.Stop()
//
// Every process listens on loopback on fresh ports, except what Crossplane's
// flags cannot bind there (its metrics and health probes take a port only).
// The Service range (ServiceCIDR) is inside loopback too, so that a test can
// serve a Service's backend on its clusterIP. Every file, logs included, is
// under Dir.
package controlplane

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Environment variables that name the binaries, as CROSSPLANE and EGCTL do
// for the end-to-end tests. Unset, hack/tool.sh builds them.
const (
	EnvEtcd                  = "ETCD"
	EnvKubeAPIServer         = "KUBE_APISERVER"
	EnvKubeControllerManager = "KUBE_CONTROLLER_MANAGER"
	EnvCrossplane            = "CROSSPLANE_CORE"
	EnvGateway               = "GATEWAY"
	EnvPrometheus            = "PROMETHEUS"
)

const (
	errFmtTool = "cannot build %s with hack/tool.sh: %v: %s"
	errTempDir = "cannot create the control plane's directory"
)

// An Environment is one control plane. Set the fields, then Start it.
type Environment struct {
	// Root is the repository: hack/tool.sh builds missing binaries, and
	// example/install/function.yaml is the Function manifest.
	Root string
	// Dir holds every file of the control plane. Empty: a new temporary
	// directory, which Stop removes unless KeepDir is set.
	Dir     string
	KeepDir bool

	// Paths of the binaries. Empty: the environment variable (EnvEtcd, ...),
	// else hack/tool.sh builds it.
	Etcd, KubeAPIServer, KubeControllerManager, Crossplane string
	// CrossplaneCRDs is the folder of Crossplane's CRDs. Empty:
	// cluster/crds of the module that hack/tools/crossplane pins.
	CrossplaneCRDs string

	// CRDDirectoryPaths are folders of CRDs (other YAML documents are
	// skipped) installed before Crossplane starts, such as the Gateway API.
	CRDDirectoryPaths []string

	// Package is the function's .xpkg. Empty: no function is installed.
	Package string
	// FunctionManifest is the Function to apply, with its package replaced
	// by the one in the harness's registry. Empty:
	// example/install/function.yaml.
	FunctionManifest string
	// FunctionArgs are more flags for the function, such as --debug.
	FunctionArgs []string
	// Functions are other functions to install beside it, from their own
	// packages in the same way, such as the second step of a pipeline.
	Functions []Function
	// APIServerArgs are more flags for kube-apiserver, such as
	// --service-cluster-ip-range=10.0.0.0/16 instead of ServiceCIDR; a
	// flag given twice takes its last value.
	APIServerArgs []string
	// CrossplaneArgs are more flags for crossplane core start, such as
	// --max-reconcile-rate=200 or --poll-interval=30s; a flag given twice
	// takes its last value.
	CrossplaneArgs []string

	// Gateway runs a real Gateway API implementation against the control
	// plane (see gateway.go): Traefik, with the GatewayClass
	// GatewayClassName and the Gateway GatewayNamespace/GatewayName. It
	// needs the Gateway API CRDs in CRDDirectoryPaths.
	Gateway bool
	// GatewayBinary is its program. Empty: $GATEWAY, else hack/tool.sh
	// gateway builds it.
	GatewayBinary string
	// GatewayArgs are more flags for it, such as -log-level=debug.
	GatewayArgs []string
	// Prometheus is the binary that StartPrometheus runs. Empty:
	// $PROMETHEUS, else hack/tool.sh prometheus builds it.
	Prometheus string

	// Logf reports progress. Empty: nothing is reported.
	Logf func(format string, args ...any)

	// Set by Start.
	Config     *rest.Config
	Kubeconfig string
	// Registry is the host:port of the registry, PackageRef the function's
	// package in it.
	Registry   string
	PackageRef string
	// GatewayAddress is the host:port of the gateway's HTTP entry point
	// (the Gateway's listener), GatewayMetrics of its Prometheus metrics.
	GatewayAddress string
	GatewayMetrics string

	logs         string
	ca           *CA
	crossplaneCA *CA
	client       *Client
	procs        []*process
	registry     *httptest.Server
	function     *functionRuntime
	functions    []*functionRuntime
	closers      []func() error
	createdDir   bool
	started      time.Time

	mu            sync.Mutex
	prometheusURL string
	// crossplane and gateway are the processes that a test may stop and
	// start again (restart.go).
	crossplane, gateway restartable
}

// Start starts the control plane and returns once the function is
// installed and Healthy (or Crossplane is ready, without a Package). On
// error, call Stop to clean up what did start.
func (e *Environment) Start(ctx context.Context) error {
	e.started = time.Now()
	if e.Dir == "" {
		d, err := os.MkdirTemp("", "canary-route-live-")
		if err != nil {
			return errors.Wrap(err, errTempDir)
		}
		e.Dir, e.createdDir = d, true
	}
	e.logs = filepath.Join(e.Dir, "logs")
	for _, d := range []string{e.logs, filepath.Join(e.Dir, "pki"), filepath.Join(e.Dir, "crossplane")} {
		if err := ensureDir(d); err != nil {
			return err
		}
	}
	if err := e.findBinaries(ctx); err != nil {
		return err
	}
	var err error
	if e.ca, err = NewCA("canary-route-live"); err != nil {
		return err
	}

	e.logf("starting etcd")
	etcd, err := e.startEtcd(ctx)
	if err != nil {
		return err
	}
	e.logf("starting kube-apiserver")
	if err := e.startAPIServer(ctx, etcd); err != nil {
		return err
	}
	if e.client, err = NewClient(e.Config); err != nil {
		return err
	}
	e.logf("starting kube-controller-manager")
	if err := e.startControllerManager(ctx); err != nil {
		return err
	}
	if len(e.CRDDirectoryPaths) > 0 {
		e.logf("installing CRDs from %s", strings.Join(e.CRDDirectoryPaths, ", "))
		if err := e.installCRDs(ctx); err != nil {
			return err
		}
	}
	if e.Gateway {
		e.logf("starting the gateway")
		if err := e.startGateway(ctx); err != nil {
			return err
		}
	}
	e.logf("starting Crossplane")
	if err := e.startCrossplane(ctx); err != nil {
		return err
	}
	if e.Package != "" {
		e.logf("installing the function from %s", e.Package)
		if err := e.installFunction(ctx); err != nil {
			return err
		}
	}
	if len(e.Functions) > 0 {
		e.logf("installing %d more functions", len(e.Functions))
		if err := e.installFunctions(ctx); err != nil {
			return err
		}
	}
	e.logf("control plane ready in %s (kubeconfig %s)", time.Since(e.started).Round(time.Second), e.Kubeconfig)
	return nil
}

// Stop stops everything Start started, in reverse order, and removes Dir
// if Start created it and KeepDir is not set.
func (e *Environment) Stop() error {
	if e.function != nil {
		e.function.stop()
	}
	for _, f := range e.functions {
		f.stop()
	}
	for i := len(e.closers) - 1; i >= 0; i-- {
		_ = e.closers[i]()
	}
	if e.registry != nil {
		e.registry.Close()
	}
	e.mu.Lock()
	procs := e.procs
	e.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
	if e.createdDir && !e.KeepDir {
		return errors.Wrap(os.RemoveAll(e.Dir), "cannot remove the control plane's directory")
	}
	return nil
}

// Client returns a client with the admin's credentials.
func (e *Environment) Client() *Client { return e.client }

// KillFunction kills the function's process with SIGKILL, like a crash.
// Its runtime then reports the revision RuntimeHealthy False, until
// RestartFunction.
func (e *Environment) KillFunction() { e.function.Kill() }

// RestartFunction starts the function again, on the same address with the
// same certificates.
func (e *Environment) RestartFunction(ctx context.Context) error { return e.function.Start(ctx) }

// Logs returns the log file of each process, by process name.
func (e *Environment) Logs() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(e.logs)
	for _, d := range entries {
		out[strings.TrimSuffix(d.Name(), ".log")] = filepath.Join(e.logs, d.Name())
	}
	return out
}

// DescribeLogs lists the log files, one a line, for a failure message.
func (e *Environment) DescribeLogs() string {
	logs := e.Logs()
	names := make([]string, 0, len(logs))
	for n := range logs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-24s %s\n", n, logs[n])
	}
	return b.String()
}

func (e *Environment) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf("controlplane: "+format+" (%s)", append(args, time.Since(e.started).Round(time.Second))...)
	}
}

// binary is a binary of the control plane: its field, environment variable
// and tool.
type binary struct {
	path *string
	env  string
	tool string
}

// findBinaries fills in the binaries from the environment or hack/tool.sh.
func (e *Environment) findBinaries(ctx context.Context) error {
	binaries := []binary{
		{&e.Etcd, EnvEtcd, "etcd"},
		{&e.KubeAPIServer, EnvKubeAPIServer, "kube-apiserver"},
		{&e.KubeControllerManager, EnvKubeControllerManager, "kube-controller-manager"},
		{&e.Crossplane, EnvCrossplane, "crossplane-core"},
	}
	if e.Gateway {
		binaries = append(binaries, binary{&e.GatewayBinary, EnvGateway, "gateway"})
	}
	for _, b := range binaries {
		if *b.path != "" {
			continue
		}
		if *b.path = os.Getenv(b.env); *b.path != "" {
			continue
		}
		p, err := Tool(ctx, e.Root, b.tool)
		if err != nil {
			return err
		}
		*b.path = p
	}
	return nil
}

// Tool returns the path of a pinned tool, which hack/tool.sh builds once
// into its cache (XP_CACHE, default bin/).
func Tool(ctx context.Context, root, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "tool.sh"), name) //nolint:gosec // The repository's own tool script, with a tool's name.
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Errorf(errFmtTool, name, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
