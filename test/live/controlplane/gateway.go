package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The real gateway: Traefik's Kubernetes Gateway API provider and proxy,
// built by hack/tool.sh gateway (hack/tools/traefik/gateway), run against
// the control plane with a GatewayClass for its controller and one Gateway
// whose listener is its HTTP entry point. Routes attached to that Gateway
// carry real requests, and get their status from Traefik.
const (
	// GatewayControllerName is Traefik's controllerName.
	GatewayControllerName = "traefik.io/gateway-controller"
	// GatewayClassName is the GatewayClass of GatewayControllerName.
	GatewayClassName = "traefik"
	// GatewayNamespace and GatewayName name the Gateway. Its listener
	// admits routes from every namespace.
	GatewayNamespace = "gateway-system"
	GatewayName      = "traefik"
	// GatewayListener is the name of the Gateway's HTTP listener and of
	// Traefik's entry point on the same port.
	GatewayListener = "web"

	// gatewayThrottle is the least time between two configurations that
	// Traefik applies: short, so that a test sees a new route's weights
	// within a second, and long enough that a burst of changes (every test
	// shares the gateway) is one rebuild.
	gatewayThrottle = 500 * time.Millisecond

	errFmtGatewayObject = "cannot apply the gateway's %s"
)

// gvkGateway is the kind of the Gateway whose status the harness reads.
var gvkGateway = schema.GroupVersionKind{Group: gwv1.GroupName, Version: "v1", Kind: "Gateway"}

// startGateway starts Traefik on fresh loopback ports (its entry point and
// its metrics), then creates the GatewayClass and the Gateway, and waits
// until Traefik reports the Gateway Programmed.
func (e *Environment) startGateway(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	entry, metrics := hostPort(ports[0]), hostPort(ports[1])
	p, err := startProcess("gateway", e.logs, nil, e.GatewayBinary, withArgs(e.GatewayArgs,
		"-kubeconfig="+e.Kubeconfig,
		"-entry-point="+GatewayListener+"="+entry,
		"-metrics="+metrics,
		"-throttle="+gatewayThrottle.String(),
		"-status-ip="+loopback,
	)...)
	if err != nil {
		return err
	}
	e.keep(&e.gateway, p, func(ctx context.Context, p *process) error { return e.gatewayServes(ctx, p, metrics, entry) })
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := p.waitReady(ctx, func(ctx context.Context) error {
		return getOK(ctx, hc, "http://"+metrics+"/metrics")
	}); err != nil {
		return err
	}
	e.GatewayAddress, e.GatewayMetrics = entry, metrics

	if _, err := e.client.Kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: GatewayNamespace}}, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the gateway's namespace")
	}
	class := &gwv1.GatewayClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "GatewayClass"},
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName},
		Spec:       gwv1.GatewayClassSpec{ControllerName: GatewayControllerName},
	}
	all := gwv1.NamespacesFromAll
	gw := &gwv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: GatewayNamespace},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: GatewayClassName,
			Listeners: []gwv1.Listener{{
				Name: GatewayListener,
				// Traefik binds a listener to the entry point of its port.
				Port:          gwv1.PortNumber(ports[0]), //nolint:gosec // A TCP port.
				Protocol:      gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}},
			}},
		},
	}
	for _, o := range []runtime.Object{class, gw} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		if _, err := e.client.Apply(ctx, u); err != nil {
			return errors.Wrapf(err, errFmtGatewayObject, u.GetKind())
		}
	}
	return Await(ctx, time.Minute, 200*time.Millisecond, fmt.Sprintf("Gateway %s/%s Programmed by Traefik (log: %s)", GatewayNamespace, GatewayName, p.log), func(ctx context.Context) (bool, string) {
		if err := p.exited(); err != nil {
			return false, err.Error()
		}
		u, err := e.client.Get(ctx, gvkGateway, GatewayNamespace, GatewayName)
		if err != nil {
			return false, err.Error()
		}
		c := Conditions(u)["Programmed"]
		return c.Status == "True" && c.ObservedGeneration == u.GetGeneration(), DescribeConditions(u)
	})
}

// prometheusScrape is Prometheus's configuration: the gateway's metrics
// every second. Traefik's handler may answer without a Content-Type, which
// Prometheus 3 refuses unless told which format to assume.
const prometheusScrape = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gateway
    scrape_interval: 1s
    scrape_timeout: 1s
    fallback_scrape_protocol: PrometheusText0.0.4
    static_configs:
      - targets: [%q]
`

// StartPrometheus starts Prometheus (hack/tool.sh prometheus, or the binary
// in $PROMETHEUS or Prometheus) scraping the gateway's metrics every
// second, with its data under Dir, listening on a fresh loopback port, and
// returns its URL. Later calls return the same one; Stop stops it. The
// Environment must run the gateway.
func (e *Environment) StartPrometheus(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prometheusURL != "" {
		return e.prometheusURL, nil
	}
	if e.GatewayMetrics == "" {
		return "", errors.New("Prometheus scrapes the gateway: start the Environment with Gateway set")
	}
	bin := e.Prometheus
	if bin == "" {
		bin = os.Getenv(EnvPrometheus)
	}
	if bin == "" {
		var err error
		if bin, err = Tool(ctx, e.Root, "prometheus"); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(e.Dir, "prometheus")
	if err := ensureDir(filepath.Join(dir, "data")); err != nil {
		return "", err
	}
	config := filepath.Join(dir, "prometheus.yaml")
	if err := writeFile(config, fmt.Appendf(nil, prometheusScrape, e.GatewayMetrics)); err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	p, err := startProcess("prometheus", e.logs, nil, bin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+hostPort(port),
		"--log.level=warn",
	)
	if err != nil {
		return "", err
	}
	e.procs = append(e.procs, p)
	url := "http://" + hostPort(port)
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := p.waitReady(ctx, func(ctx context.Context) error { return getOK(ctx, hc, url+"/-/ready") }); err != nil {
		return "", err
	}
	e.prometheusURL = url
	e.logf("Prometheus at %s, scraping the gateway's metrics at %s every second", url, e.GatewayMetrics)
	return url, nil
}
