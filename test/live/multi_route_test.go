package live

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// TestMultiRoute rolls one revision out over two routes of one CanaryRoute
// (spec.routes): an HTTPRoute for the web on spec.port and a GRPCRoute on
// a port of its own, both on the real gateway under hostnames of their
// own, and counts the requests of both at every step: each route carries
// the step's weights, through the proxy Services' port of its own. The
// steps wait for approvals, so that each is counted while it holds; once
// the last is approved, the rollout Succeeds and both routes send every
// request to the canary.
func TestMultiRoute(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "routes")
	webPort, grpcPort := freePort(t), freePort(t)
	grpcHost := "grpc." + hostname(ns)
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(gvkCanaryRoute)
	xr.SetNamespace(ns)
	xr.SetName("web")
	parent := fmt.Sprintf("{name: %s, namespace: %s, sectionName: %s}", controlplane.GatewayName, controlplane.GatewayNamespace, controlplane.GatewayListener)
	set(t, xr, spec(t, fmt.Sprintf(`
port: %d
routes:
  - {name: site, kind: HTTPRoute, parentRefs: [%s], hostnames: [%s]}
  - {name: api, kind: GRPCRoute, parentRefs: [%s], hostnames: [%s], port: %d}
primary: {service: {selector: {app: web, version: v1}}}
canary: {service: {selector: {app: web, version: v2}}, revision: v2}
traffic:
  steps: [{weight: 20, approval: true}, {weight: 50, approval: true}, {weight: 100}]
`, webPort, parent, hostname(ns), parent, grpcHost, grpcPort)), "spec")
	useComposition(t, xr, composition(t, "progressive", ns, nil))
	apply(t, xr)
	for _, side := range []struct{ svc, name string }{{"web-primary", primary}, {"web-canary", canary}} {
		for _, port := range []int{webPort, grpcPort} {
			serveOn(t, ns, side.svc, port, side.name)
		}
	}
	www := probe{host: hostname(ns)}
	api := grpcProbe(t, grpcHost)

	await(t, settle, "the HTTPRoute web-site accepted by the real gateway", acceptedByGateway(gvkHTTPRoute, ns, "web-site", "True", ""))
	await(t, settle, "the GRPCRoute web-api accepted by the real gateway", acceptedByGateway(gvkGRPCRoute, ns, "web-api", "True", ""))
	for step, weight := range []int{20, 50} {
		at := fmt.Sprintf("step %d (%d%%)", step, weight)
		await(t, settle, at+" awaiting its approval", xrAt(gvkCanaryRoute, ns, "web", "Progressing", int64(step), int64(weight)))
		await(t, settle, at+": the HTTPRoute at its weight", routeAt(gvkHTTPRoute, ns, "web-site", "web-canary", int64(weight)))
		await(t, settle, at+": the GRPCRoute at its weight", routeAt(gvkGRPCRoute, ns, "web-api", "web-canary", int64(weight)))
		awaitAnswers(t, at+": the web", www, split(weight))
		await(t, settle, fmt.Sprintf("%s: %d gRPC calls answered %s", at, batch, describeCounts(split(weight))), api.answered(split(weight)))
		patchTraffic(t, ns, "web", fmt.Sprintf(`{"approval":{"revision":"v2","step":%d}}`, step))
	}
	await(t, settle, "the rollout Succeeded at 100%", phase(ns, "web", "Succeeded", 100))
	awaitAnswers(t, "succeeded: the web", www, only(canary))
	await(t, settle, fmt.Sprintf("succeeded: %d gRPC calls answered by the canary", batch), api.answered(only(canary)))
	mustAnswer(t, "succeeded: the web", www, batch, canary)
}

// serveOn starts a backend named name on a Service's clusterIP and one of
// its ports (see serve).
func serveOn(t *testing.T, ns, svc string, port int, name string) {
	t.Helper()
	var addr string
	await(t, settle, fmt.Sprintf("Service %s/%s with a clusterIP and port %d", ns, svc, port), func(ctx context.Context) (bool, string) {
		s, err := env.c.Kube.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
			return false, fmt.Sprintf("clusterIP %q", s.Spec.ClusterIP)
		}
		for _, p := range s.Spec.Ports {
			if int(p.Port) == port {
				addr = net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(port))
				return true, ""
			}
		}
		return false, fmt.Sprintf("ports %v", s.Spec.Ports)
	})
	b, err := backends.Start(addr, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
}

// gRPCProbe sends gRPC health checks through the gateway to a hostname,
// and counts which backend answered each.
type gRPCProbe struct {
	host   string
	health grpc_health_v1.HealthClient
}

func grpcProbe(t *testing.T, host string) gRPCProbe {
	t.Helper()
	conn, err := grpc.NewClient(env.cp.GatewayAddress,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return gRPCProbe{host: host, health: grpc_health_v1.NewHealthClient(conn)}
}

// calls sends a batch of health checks and counts who answered.
func (p gRPCProbe) calls(ctx context.Context) map[string]int {
	out := map[string]int{}
	for range batch {
		var md metadata.MD
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := p.health.Check(ctx, &grpc_health_v1.HealthCheckRequest{}, grpc.Header(&md))
		cancel()
		switch names := md.Get(strings.ToLower(backends.Header)); {
		case err != nil:
			out["error: "+err.Error()]++
		case len(names) == 1:
			out[names[0]]++
		default:
			out[fmt.Sprintf("no backend named: %v", md)]++
		}
	}
	return out
}

// answered checks that a batch of calls is answered exactly as want,
// polled as every count of the live tests is.
func (p gRPCProbe) answered(want map[string]int) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		got := p.calls(ctx)
		return cmp.Equal(want, got), fmt.Sprintf("gRPC calls for %s answered %s", p.host, describeCounts(got))
	}
}
