package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// Requests through the real gateway (controlplane.Environment.Gateway):
// Traefik, its HTTP entry point on loopback, the listener of the Gateway
// that every traffic test's route is attached to. Each test's route has a
// hostname of its own, and each backend answers with its name.

// batch is how many requests one measurement sends: a multiple of 100, so
// that Traefik's weighted round robin, which is deterministic, answers a
// split of w% with exactly w canary answers in every 100 requests that it
// serves from one configuration.
const batch = 100

// Backend names the tests serve.
const (
	primary = "primary"
	canary  = "canary"
)

// trafficClient sends requests through the gateway: never through a proxy
// from the environment, never following a redirect (a test checks them),
// reusing its connection.
var trafficClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, DisableCompression: true},
}

// hostname is a test's own hostname on the gateway.
func hostname(ns string) string { return ns + ".traffic.test" }

// A probe is what one measurement sends through the gateway.
type probe struct {
	host   string
	path   string
	query  url.Values
	header http.Header
}

func (p probe) String() string {
	var b strings.Builder
	b.WriteString(p.host + p.path)
	if len(p.query) > 0 {
		b.WriteString("?" + p.query.Encode())
	}
	for k, v := range p.header {
		fmt.Fprintf(&b, " (%s: %s)", k, strings.Join(v, ","))
	}
	return b.String()
}

// answer sends one request and returns who answered: the backend's name, or
// the status and Location of an answer of no backend (the gateway's
// redirect, 404, 5xx), or the error.
func (p probe) answer(ctx context.Context) string {
	who, _ := p.send(ctx)
	return who
}

// send sends one request and returns who answered (as answer says) and the
// response's headers.
func (p probe) send(ctx context.Context) (string, http.Header) {
	path := p.path
	if path == "" {
		path = "/"
	}
	u := url.URL{Scheme: "http", Host: env.cp.GatewayAddress, Path: path, RawQuery: p.query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	req.Host = p.host
	for k, v := range p.header {
		req.Header[k] = v
	}
	rsp, err := trafficClient.Do(req)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	defer rsp.Body.Close()
	_, _ = io.Copy(io.Discard, rsp.Body)
	if name := rsp.Header.Get(backends.Header); name != "" {
		return name, rsp.Header
	}
	if loc := rsp.Header.Get("Location"); loc != "" {
		// Gateway API wants the listener's port in a redirect's Location
		// when the filter names no scheme; Traefik v3.7 leaves it out.
		// The tests check what the function composes: the status, host
		// and path.
		if l, err := url.Parse(loc); err == nil {
			l.Host = l.Hostname()
			loc = l.String()
		}
		return fmt.Sprintf("%d %s", rsp.StatusCode, loc), rsp.Header
	}
	return strconv.Itoa(rsp.StatusCode), rsp.Header
}

// answers sends n requests one after another and counts who answered.
func (p probe) answers(ctx context.Context, n int) map[string]int {
	out := map[string]int{}
	for range n {
		out[p.answer(ctx)]++
	}
	return out
}

// split is what a batch of requests should get at a canary weight: the
// primary's share and the canary's, exactly.
func split(canaryWeight int) map[string]int {
	out := map[string]int{}
	if n := batch * (100 - canaryWeight) / 100; n > 0 {
		out[primary] = n
	}
	if n := batch * canaryWeight / 100; n > 0 {
		out[canary] = n
	}
	return out
}

// only is what a batch of requests should get when one backend answers all.
func only(name string) map[string]int { return map[string]int{name: batch} }

// answered checks that a batch of requests is answered exactly as want.
// Before a new configuration is applied, while the backends start, or when
// another test's change rebuilds the gateway's balancers within a batch,
// a batch may differ: a wait polls until one batch matches.
func (p probe) answered(want map[string]int) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		got := p.answers(ctx, batch)
		return cmp.Equal(want, got), fmt.Sprintf("%d requests for %s answered %s", batch, p, describeCounts(got))
	}
}

// awaitAnswers polls until a batch of requests is answered exactly as
// want.
func awaitAnswers(t *testing.T, what string, p probe, want map[string]int) {
	t.Helper()
	await(t, settle, fmt.Sprintf("%s: %d requests for %s answered %s", what, batch, p, describeCounts(want)), p.answered(want))
}

// mustAnswer sends n requests now, without polling: each must be answered
// by want.
func mustAnswer(t *testing.T, what string, p probe, n int, want string) {
	t.Helper()
	got := p.answers(t.Context(), n)
	if diff := cmp.Diff(map[string]int{want: n}, got); diff != "" {
		t.Errorf("%s: %d requests for %s: -want, +got answers:\n%s", what, n, p, diff)
	}
}

func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// freePort is a TCP port that no wildcard or loopback listener holds now:
// the port of a test's Services. Each Service has an address of its own, so
// tests may share a port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // A TCP listener.
}

// serviceAddress is the clusterIP and first port of a Service, once it
// has them.
func serviceAddress(t *testing.T, ns, svc string) string {
	t.Helper()
	var addr string
	await(t, settle, fmt.Sprintf("Service %s/%s with a clusterIP", ns, svc), func(ctx context.Context) (bool, string) {
		s, err := env.c.Kube.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			return false, fmt.Sprintf("clusterIP %q, ports %v", s.Spec.ClusterIP, s.Spec.Ports)
		}
		addr = net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(s.Spec.Ports[0].Port)))
		return true, ""
	})
	return addr
}

// serve starts a backend named name on a Service's clusterIP and first
// port, once the Service exists, and stops it when the test ends: the
// gateway sends there the requests it routes to the Service.
func serve(t *testing.T, ns, svc, name string, opts ...backends.Option) *backends.Server {
	t.Helper()
	addr := serviceAddress(t, ns, svc)
	b, err := backends.Start(addr, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// service creates a Service of the test's own (as a backendRef side or a
// rule's own backend names it), with an appProtocol if given.
func service(t *testing.T, ns, name string, port int, appProtocol string) {
	t.Helper()
	p := corev1.ServicePort{Name: "http", Port: int32(port), TargetPort: intstr.FromInt(port)}
	if appProtocol != "" {
		p.AppProtocol = &appProtocol
	}
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{p}},
	}
	if _, err := env.c.Kube.CoreV1().Services(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// trafficXR is a namespaced CanaryRoute "web" attached to the real
// gateway under the test's own hostname, with proxy Services for both sides
// (web-primary, web-canary) on port, revision v2, and this spec (YAML of
// spec's other fields, such as traffic).
func trafficXR(t *testing.T, ns string, port int, rest string) *unstructured.Unstructured {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(gvkCanaryRoute)
	xr.SetNamespace(ns)
	xr.SetName("web")
	s := spec(t, fmt.Sprintf(`
parentRefs: [{name: %s, namespace: %s, sectionName: %s}]
hostnames: [%s]
port: %d
primary: {service: {selector: {app: web, version: v1}}}
canary: {service: {selector: {app: web, version: v2}}, revision: v2}
`, controlplane.GatewayName, controlplane.GatewayNamespace, controlplane.GatewayListener, hostname(ns), port))
	for k, v := range spec(t, rest) {
		s[k] = v
	}
	set(t, xr, s, "spec")
	useComposition(t, xr, composition(t, "progressive", ns, nil))
	return xr
}

// acceptedByGateway checks that the real gateway, and nothing else,
// reports on the route: one parent status, Traefik's, Accepted for the
// route's generation, and ResolvedRefs as want (True, or False with a
// reason).
func acceptedByGateway(gvk schema.GroupVersionKind, ns, name, resolvedRefs, reason string) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvk, ns, name)
		if u == nil {
			return false, why
		}
		parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
		seen := fmt.Sprintf("generation %d, status.parents %v", u.GetGeneration(), parents)
		if len(parents) != 1 {
			return false, seen
		}
		p, _ := parents[0].(map[string]any)
		if p["controllerName"] != controlplane.GatewayControllerName {
			return false, seen
		}
		conds := map[string]map[string]any{}
		list, _ := p["conditions"].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			typ, _ := m["type"].(string)
			conds[typ] = m
		}
		acc, res := conds["Accepted"], conds["ResolvedRefs"]
		current := func(c map[string]any) bool { g, _ := c["observedGeneration"].(int64); return g == u.GetGeneration() }
		ok := acc != nil && res != nil && acc["status"] == "True" && current(acc) && current(res) &&
			res["status"] == resolvedRefs && (reason == "" || res["reason"] == reason)
		return ok, seen
	}
}

// xrAt checks the XR's rollout phase, step and canary weight.
func xrAt(gvk schema.GroupVersionKind, ns, name, phase string, step, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvk, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		return r.Phase == phase && r.Step != nil && *r.Step == step && r.CanaryWeight == weight, xrState(u)
	}
}
