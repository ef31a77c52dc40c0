// Command gateway is the real Gateway API implementation of the live tests
// and of hack/cluster.sh: Traefik's Kubernetes Gateway API provider and its
// HTTP/TCP server, run as a library, out of cluster, against the API server
// that a kubeconfig names. hack/tool.sh gateway builds it.
//
//	gateway -kubeconfig kubeconfig -entry-point web=127.0.0.1:8000 -metrics 127.0.0.1:9100
//
// Traefik binds a Gateway's listener to the entry point whose port is the
// listener's, for GatewayClasses whose controllerName is
// traefik.io/gateway-controller. It writes the status of those GatewayClasses,
// Gateways and routes, as in a cluster.
//
// No kubelet, DNS or kube-proxy runs beside it: it sends each request to the
// backend Service's clusterIP and port (Traefik's native load balancing, on
// by default here), instead of the endpoints of pods. A control plane whose
// Service range is inside loopback (127.77.0.0/16) gives every Service an
// address that a test can listen on.
//
// Beside the gateway provider runs Traefik's internal provider, which
// provides the default servers transport (default@internal) that every
// service of the gateway provider names. With -metrics, Traefik's Prometheus
// metrics (per entry point, router and service) are served on an address of
// their own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/rs/zerolog/log"
	ptypes "github.com/traefik/paerser/types"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/config/runtime"
	"github.com/traefik/traefik/v3/pkg/config/static"
	"github.com/traefik/traefik/v3/pkg/observability/metrics"
	otypes "github.com/traefik/traefik/v3/pkg/observability/types"
	"github.com/traefik/traefik/v3/pkg/plugins"
	"github.com/traefik/traefik/v3/pkg/provider/aggregator"
	"github.com/traefik/traefik/v3/pkg/provider/kubernetes/gateway"
	"github.com/traefik/traefik/v3/pkg/provider/traefik"
	"github.com/traefik/traefik/v3/pkg/proxy/httputil"
	"github.com/traefik/traefik/v3/pkg/safe"
	"github.com/traefik/traefik/v3/pkg/server"
	"github.com/traefik/traefik/v3/pkg/server/middleware"
	"github.com/traefik/traefik/v3/pkg/server/service"
	"github.com/traefik/traefik/v3/pkg/tcp"
	traefiktls "github.com/traefik/traefik/v3/pkg/tls"
	"github.com/traefik/traefik/v3/pkg/version"
)

// internalProvider is the name of Traefik's internal provider: the
// configuration watcher applies nothing before it has reported.
const internalProvider = "internal"

// entryPoints is the repeatable -entry-point flag: name=host:port.
type entryPoints map[string]string

func (e entryPoints) String() string {
	out := make([]string, 0, len(e))
	for n, a := range e {
		out = append(out, n+"="+a)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func (e entryPoints) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || name == "" || addr == "" {
		return fmt.Errorf("want name=host:port, got %q", v)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("entry point %s: %w", name, err)
	}
	e[name] = addr
	return nil
}

// options are the command's flags.
type options struct {
	kubeconfig  string
	entryPoints entryPoints
	metrics     string
	throttle    time.Duration
	nativeLB    bool
	statusIP    string
	logLevel    string
}

func main() {
	o := options{entryPoints: entryPoints{}}
	// A flag set of its own: dependencies register flags of theirs on the
	// default one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig of the API server to watch (required)")
	fs.Var(o.entryPoints, "entry-point", "an HTTP entry point, name=host:port (repeatable; at least one)")
	fs.StringVar(&o.metrics, "metrics", "", "serve Traefik's Prometheus metrics on this host:port (/metrics); empty: no metrics")
	fs.DurationVar(&o.throttle, "throttle", 2*time.Second, "the least time between two configurations applied (Traefik's providersThrottleDuration)")
	fs.BoolVar(&o.nativeLB, "native-lb", true, "send to a Service's clusterIP and port instead of its endpoints (nativeLBByDefault)")
	fs.StringVar(&o.statusIP, "status-ip", "", "the address Gateways report in their status; empty: none")
	fs.StringVar(&o.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on an error.
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.kubeconfig == "" {
		return errors.New("-kubeconfig is required")
	}
	if len(o.entryPoints) == 0 {
		return errors.New("at least one -entry-point is required")
	}
	level, err := zerolog.ParseLevel(o.logLevel)
	if err != nil {
		return err
	}
	zerolog.SetGlobalLevel(level)
	log.Logger = zerolog.New(os.Stderr).With().Timestamp().Logger()

	// The provider picks its client from the environment: in cluster when
	// KUBERNETES_SERVICE_HOST is set (as in any pod, a CI runner's
	// included), which would watch another API server than this one.
	_ = os.Unsetenv("KUBERNETES_SERVICE_HOST")
	_ = os.Unsetenv("KUBERNETES_SERVICE_PORT")
	if err := os.Setenv("KUBECONFIG", o.kubeconfig); err != nil {
		return err
	}

	cfg := staticConfiguration(o)
	cfg.SetEffectiveConfiguration()
	if err := cfg.ValidateConfiguration(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	srv, metricsServer, err := setup(cfg)
	if err != nil {
		return err
	}
	if metricsServer != nil {
		l, err := net.Listen("tcp", o.metrics)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		go func() { _ = metricsServer.Serve(l) }()
		defer metricsServer.Close() //nolint:errcheck // Stopping.
	}
	srv.Start(ctx)
	defer srv.Close()
	log.Info().Str("traefik", version.Version).Str("entryPoints", o.entryPoints.String()).Str("metrics", o.metrics).Msg("gateway started")
	srv.Wait()
	return nil
}

// staticConfiguration is Traefik's static configuration for the flags:
// the entry points, the Kubernetes Gateway provider, and Prometheus metrics
// served by this program rather than on an entry point.
func staticConfiguration(o options) *static.Configuration {
	cfg := &static.Configuration{
		Global:      &static.Global{},
		EntryPoints: static.EntryPoints{},
		Providers:   &static.Providers{ProvidersThrottleDuration: ptypes.Duration(o.throttle)},
		// Traefik's defaults (cmd.NewTraefikConfiguration): the internal
		// provider makes default@internal of these.
		ServersTransport: &static.ServersTransport{MaxIdleConnsPerHost: 200},
		TCPServersTransport: &static.TCPServersTransport{
			DialTimeout:   ptypes.Duration(30 * time.Second),
			DialKeepAlive: ptypes.Duration(15 * time.Second),
		},
	}
	for name, addr := range o.entryPoints {
		ep := &static.EntryPoint{}
		ep.SetDefaults()
		ep.Address = addr
		cfg.EntryPoints[name] = ep
	}
	gw := &gateway.Provider{}
	gw.SetDefaults()
	gw.NativeLBByDefault = o.nativeLB
	if o.statusIP != "" {
		gw.StatusAddress = &gateway.StatusAddress{IP: o.statusIP}
	}
	cfg.Providers.KubernetesGateway = gw
	if o.metrics != "" {
		p := &otypes.Prometheus{}
		p.SetDefaults()
		p.AddRoutersLabels = true
		// Served by this program on its own address: no router on an
		// entry point, so no route of the tests can shadow it.
		p.ManualRouting = true
		cfg.Metrics = &otypes.Metrics{Prometheus: p}
	}
	return cfg
}

// setup wires Traefik's parts as its own command does (cmd/traefik), for
// what this program runs: no ACME, Tailscale, plugins, tracing or access
// log. It returns the server, and the metrics server when -metrics is set.
func setup(cfg *static.Configuration) (*server.Server, *http.Server, error) {
	ctx := context.Background()
	pool := safe.NewPool(ctx)

	providers := aggregator.NewProviderAggregator(static.Providers{ProvidersThrottleDuration: cfg.Providers.ProvidersThrottleDuration})
	if err := providers.AddProvider(cfg.Providers.KubernetesGateway); err != nil {
		return nil, nil, fmt.Errorf("the Kubernetes Gateway provider: %w", err)
	}
	// Without it no service has its servers transport: every route fails
	// with "servers transport not found default@internal".
	if err := providers.AddProvider(traefik.New(*cfg)); err != nil {
		return nil, nil, fmt.Errorf("the internal provider: %w", err)
	}

	tlsManager := traefiktls.NewManager(nil)
	pool.GoCtx(tlsManager.Run)

	var registries []metrics.Registry
	var metricsServer *http.Server
	if cfg.Metrics != nil && cfg.Metrics.Prometheus != nil {
		if r := metrics.RegisterPrometheus(ctx, cfg.Metrics.Prometheus); r != nil {
			registries = append(registries, r)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.PrometheusHandler())
		metricsServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	registry := metrics.NewMultiRegistry(registries)
	observability := middleware.NewObservabilityMgr(*cfg, registry, nil, nil, nil, nil)

	tcpEntryPoints, err := server.NewTCPEntryPoints(cfg.EntryPoints, nil, registry)
	if err != nil {
		return nil, nil, err
	}
	udpEntryPoints, err := server.NewUDPEntryPoints(cfg.EntryPoints)
	if err != nil {
		return nil, nil, err
	}

	transports := service.NewTransportManager(nil)
	proxies := httputil.NewProxyBuilder(transports, nil)
	dialers := tcp.NewDialerManager(nil)
	managers := service.NewManagerFactory(*cfg, pool, observability, transports, proxies, nil, tlsManager)
	noPlugins, err := plugins.NewBuilder(nil, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	routers, err := server.NewRouterFactory(*cfg, managers, tlsManager, observability, noPlugins, dialers)
	if err != nil {
		return nil, nil, err
	}

	names := make([]string, 0, len(cfg.EntryPoints))
	for n := range cfg.EntryPoints {
		names = append(names, n)
	}
	slices.Sort(names)
	watcher := server.NewConfigurationWatcher(pool, providers, names, internalProvider, false)
	watcher.AddListener(func(conf dynamic.Configuration) {
		tlsManager.UpdateConfigs(ctx, conf.TLS.Stores, conf.TLS.Options, conf.TLS.Certificates)
	})
	watcher.AddListener(func(conf dynamic.Configuration) {
		transports.Update(conf.HTTP.ServersTransports)
		proxies.Update(conf.HTTP.ServersTransports)
		dialers.Update(conf.TCP.ServersTransports)
	})
	watcher.AddListener(func(conf dynamic.Configuration) {
		tcpRouters, udpRouters := routers.CreateRouters(runtime.NewConfig(conf))
		tcpEntryPoints.Switch(tcpRouters)
		udpEntryPoints.Switch(udpRouters)
		log.Info().Int("routers", len(conf.HTTP.Routers)).Int("services", len(conf.HTTP.Services)).Msg("configuration applied")
	})
	if metricsServer != nil {
		// Traefik's Prometheus state learns each configuration's routers
		// and services here, and drops the series of those gone.
		watcher.AddListener(func(conf dynamic.Configuration) { metrics.OnConfigurationUpdate(conf, names) })
	}
	return server.NewServer(pool, tcpEntryPoints, udpEntryPoints, watcher, observability), metricsServer, nil
}
