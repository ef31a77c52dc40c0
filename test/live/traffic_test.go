package live

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// The traffic tests send real requests through a real gateway (Traefik)
// to backends they serve on the composed Services' clusterIPs, and count
// who answered. The route's status, and so the XR's RouteAccepted and
// every step's acceptance, come from the gateway itself.

// TestTrafficRollout lets Crossplane drive a rollout through three steps,
// and counts the requests at each: exactly the step's share goes to the
// canary, on a route that the real gateway accepted. The pauses leave time
// to measure on a loaded machine: a step's pause counts from when the
// function chose it, before Crossplane applies the route and the gateway
// serves it.
func TestTrafficRollout(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "traffic")
	xr := trafficXR(t, ns, freePort(t), "traffic: {steps: [{weight: 10, pause: 30s}, {weight: 50, pause: 30s}, {weight: 100}]}")
	rec := record(t, gvkHTTPRoute, ns, "web", "web-canary")
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)

	p := probe{host: hostname(ns)}
	for i, w := range []int64{10, 50, 100} {
		await(t, settle, fmt.Sprintf("the route at step %d (%d%%)", i, w), routeAt(gvkHTTPRoute, ns, "web", "web-canary", w))
		seen := time.Now()
		awaitAnswers(t, fmt.Sprintf("step %d (%d%%)", i, w), p, split(int(w)))
		t.Logf("step %d (%d%%): the gateway served the step's split %s after the route carried it", i, w, time.Since(seen).Round(10*time.Millisecond))
	}
	await(t, settle, "the rollout Succeeded at 100%", phase(ns, "web", "Succeeded", 100))
	await(t, settle, "the route accepted by the real gateway alone", acceptedByGateway(gvkHTTPRoute, ns, "web", "True", ""))
	await(t, settle, "the XR's RouteAccepted True, from the gateway's status", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "web")
		if u == nil {
			return false, why
		}
		return controlplane.IsTrue(u, "RouteAccepted"), xrState(u)
	})
	mustAnswer(t, "after the rollout", p, 2*batch, canary)

	// One step per acceptance, by the real gateway.
	steps := rec.history()
	if diff := cmp.Diff([]int64{10, 50, 100}, weightsOf(steps)); diff != "" {
		t.Errorf("the route's canary weights, in order: -want, +got:\n%s\nas seen:\n%s", diff, describeSteps(steps))
	}
	for i, s := range steps[:len(steps)-1] {
		if s.accepted.IsZero() || s.accepted.After(steps[i+1].seen) {
			t.Errorf("step %d (%d%%): the route moved on before the gateway accepted it", i, s.weight)
		}
	}
}

// TestTrafficAbort aborts a rollout at 50%: from then on, the canary gets
// no request.
func TestTrafficAbort(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "abort")
	xr := trafficXR(t, ns, freePort(t), "traffic: {steps: [{weight: 50, pause: 10m}, {weight: 100}]}")
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	p := probe{host: hostname(ns)}

	awaitAnswers(t, "step 0 (50%)", p, split(50))
	patchTraffic(t, ns, "web", `{"abort":true}`)
	await(t, settle, "the rollout Aborted at 0%", phase(ns, "web", "Aborted", 0))
	awaitAnswers(t, "aborted", p, only(primary))
	mustAnswer(t, "aborted, the canary gets no request", p, 3*batch, primary)
}

// TestTrafficGateFails holds step 0 (20%) on a gate, then fails the rollout
// once the gate has been False for longer than failAfter: from then on, the
// canary gets no request.
func TestTrafficGateFails(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "gatefail")
	// The gate does not exist yet: it holds the step for as long as the
	// test measures, whatever the machine's load.
	xr := trafficXR(t, ns, freePort(t), `traffic:
  steps: [{weight: 20, pause: 1s}, {weight: 100}]
  gates: [{apiVersion: apps/v1, kind: Deployment, name: web-v2, conditionType: Available, failAfter: 10s}]`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	p := probe{host: hostname(ns)}

	awaitAnswers(t, "step 0 (20%), held by its gate", p, split(20))
	// The gate appears, False: the function, which looks again every 30 s
	// while a gate holds, fails the rollout 10 s later at the earliest.
	gate(t, ns, "web-v2", corev1.ConditionFalse)
	await(t, 2*time.Minute, "the rollout Failed at 0%", phase(ns, "web", "Failed", 0))
	awaitAnswers(t, "failed", p, only(primary))
	mustAnswer(t, "failed, the canary gets no request", p, 3*batch, primary)
}

// TestTrafficMatches sends testers to the canary by header and by query
// parameter, while everyone else gets the weighted split.
func TestTrafficMatches(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "matches")
	xr := trafficXR(t, ns, freePort(t), `traffic:
  weight: 10
  matches:
    - headers: [{name: X-Canary, value: always}]
    - queryParams: [{name: canary, value: "true"}]`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	host := hostname(ns)

	awaitAnswers(t, "everyone at 10%", probe{host: host}, split(10))
	awaitAnswers(t, "testers by header", probe{host: host, header: http.Header{"X-Canary": {"always"}}}, only(canary))
	awaitAnswers(t, "testers by query", probe{host: host, path: "/cart", query: url.Values{"canary": {"true"}}}, only(canary))
	awaitAnswers(t, "another header value", probe{host: host, header: http.Header{"X-Canary": {"never"}}}, split(10))
}

// TestTrafficStepMatches gives each step matches of its own: step 0 (0%)
// lets testers in by header only, step 1 (20%) by query only.
func TestTrafficStepMatches(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "stepmatch")
	xr := trafficXR(t, ns, freePort(t), `traffic:
  steps:
    - {weight: 0, approval: true, matches: [{headers: [{name: X-Tester, value: "yes"}]}]}
    - {weight: 20, approval: true, matches: [{queryParams: [{name: tester, value: "yes"}]}]}
    - {weight: 100}`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	host := hostname(ns)
	everyone := probe{host: host}
	byHeader := probe{host: host, header: http.Header{"X-Tester": {"yes"}}}
	byQuery := probe{host: host, query: url.Values{"tester": {"yes"}}}

	await(t, settle, "step 0 awaiting approval", xrAt(gvkCanaryRoute, ns, "web", "Progressing", 0, 0))
	awaitAnswers(t, "step 0: everyone", everyone, only(primary))
	awaitAnswers(t, "step 0: testers by header", byHeader, only(canary))
	awaitAnswers(t, "step 0: not by query", byQuery, only(primary))

	patchTraffic(t, ns, "web", `{"approval":{"revision":"v2","step":0}}`)
	await(t, settle, "step 1", xrAt(gvkCanaryRoute, ns, "web", "Progressing", 1, 20))
	awaitAnswers(t, "step 1: everyone", everyone, split(20))
	awaitAnswers(t, "step 1: testers by query", byQuery, only(canary))
	awaitAnswers(t, "step 1: the header no longer matches", byHeader, split(20))

	patchTraffic(t, ns, "web", `{"approval":{"revision":"v2","step":1}}`)
	await(t, settle, "the rollout Succeeded at 100%", phase(ns, "web", "Succeeded", 100))
	awaitAnswers(t, "succeeded: everyone", everyone, only(canary))
}

// TestTrafficCrossNamespace sends half the requests to a canary in another
// namespace, which the gateway serves only while the ReferenceGrant that
// the function composes there exists: revoking the namespace in the Input
// deletes the grant, the gateway refuses the reference, and the canary gets
// no request; allowing it again brings both back.
func TestTrafficCrossNamespace(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns, other := newNamespace(t, "xns"), newNamespace(t, "xnsmon")
	port := freePort(t)
	service(t, other, "canary-proxy", port, "")
	serve(t, other, "canary-proxy", canary)
	input := func(backends ...any) func(in map[string]any) {
		return func(in map[string]any) {
			in["allowedBackendNamespaces"] = backends
			in["allowedRouteNamespaces"] = []any{ns}
		}
	}
	comp := composition(t, "flagger", ns, input(other))
	xr := read(t, "flagger", "xr.yaml")
	xr.SetName(ns)
	set(t, xr, spec(t, fmt.Sprintf(`
namespace: %s
routeName: web
parentRefs: [{name: %s, namespace: %s, sectionName: %s}]
hostnames: [%s]
port: %d
primary: {service: {selector: {app: web}}}
canary: {backendRef: {name: canary-proxy, namespace: %s, port: %d}}
traffic: {weight: 50}
`, ns, controlplane.GatewayName, controlplane.GatewayNamespace, controlplane.GatewayListener, hostname(ns), port, other, port)), "spec")
	useComposition(t, xr, comp)
	dumpOnFailure(t, gvkXCanaryRoute, xr.GetName())
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	p := probe{host: hostname(ns)}

	grants := func(want int) controlplane.Check {
		return func(ctx context.Context) (bool, string) {
			items, err := env.c.List(ctx, gvkGrant, other, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(items) == want, fmt.Sprintf("%d ReferenceGrants in %s", len(items), other)
		}
	}
	await(t, settle, "the ReferenceGrant in "+other, grants(1))
	awaitAnswers(t, "the canary in "+other+" at 50%", p, split(50))
	await(t, settle, "the gateway resolves the reference", acceptedByGateway(gvkHTTPRoute, ns, "web", "True", ""))

	setComposition := func(in func(map[string]any)) {
		c := read(t, "flagger", "composition.yaml")
		c.SetName(comp)
		setInput(t, c, in)
		if _, err := env.c.Apply(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	setComposition(input())
	await(t, settle, "the grant deleted once the Input no longer allows "+other, grants(0))
	await(t, settle, "the gateway refuses the reference without its grant (ResolvedRefs False, RefNotPermitted)",
		acceptedByGateway(gvkHTTPRoute, ns, "web", "False", "RefNotPermitted"))
	awaitAnswers(t, "revoked", p, only(primary))
	mustAnswer(t, "revoked, the canary gets no request", p, 3*batch, primary)

	setComposition(input(other))
	await(t, settle, "the grant composed again", grants(1))
	awaitAnswers(t, "allowed again: the canary at 50%", p, split(50))
}

// TestTrafficRulesOfTheirOwn keeps a redirect rule and a static rule beside
// the weighted one: the gateway redirects the old path itself, serves the
// static path from its own backend, and splits the rest.
func TestTrafficRulesOfTheirOwn(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "ownrules")
	port := freePort(t)
	service(t, ns, "static", port, "")
	static := serve(t, ns, "static", "static")
	xr := trafficXR(t, ns, port, fmt.Sprintf(`
rules:
  - name: legacy
    matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}, statusCode: 301}}]
  - name: static
    matches: [{path: {type: PathPrefix, value: /assets}}]
    backendRefs: [{name: static, port: %d}]
  - name: app
    matches: [{path: {type: PathPrefix, value: /}}]
traffic: {weight: 30}`, port))
	apply(t, xr)
	pri := serve(t, ns, "web-primary", primary)
	can := serve(t, ns, "web-canary", canary)
	host := hostname(ns)

	awaitAnswers(t, "the weighted rule at 30%", probe{host: host, path: "/shop"}, split(30))
	awaitAnswers(t, "the static rule", probe{host: host, path: "/assets/logo.svg"}, only("static"))
	before := pri.Requests() + can.Requests() + static.Requests()
	awaitAnswers(t, "the redirect rule, answered by the gateway", probe{host: host, path: "/old/cart"}, only("301 http://"+host+"/new/cart"))
	if after := pri.Requests() + can.Requests() + static.Requests(); after != before {
		t.Errorf("the backends answered %d requests for /old, want none: the gateway redirects them itself", after-before)
	}
}

// TestTrafficSessionAffinity keeps users on the side they first met: at
// 30%, the canary's answers set its cookie and the primary's set its own,
// and a request with either cookie goes to that side alone, whatever the
// weights.
func TestTrafficSessionAffinity(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "sticky")
	xr := trafficXR(t, ns, freePort(t), `traffic:
  weight: 30
  sessionAffinity: {cookieName: web-canary, primaryCookieName: web-stable, maxAge: 1h}`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	host := hostname(ns)

	awaitAnswers(t, "new users at 30%", probe{host: host}, split(30))
	for side, name := range map[string]string{canary: "web-canary", primary: "web-stable"} {
		c := sessionCookie(t, probe{host: host}, side, name)
		awaitAnswers(t, "users with the cookie "+c, probe{host: host, path: "/cart", header: http.Header{"Cookie": {"theme=dark; " + c}}}, only(side))
	}
}

// sessionCookie sends requests until the side answers one, and returns the
// name=value of the cookie it set.
func sessionCookie(t *testing.T, p probe, side, name string) string {
	t.Helper()
	var cookie string
	await(t, settle, fmt.Sprintf("an answer of the %s setting the cookie %s", side, name), func(ctx context.Context) (bool, string) {
		who, header := p.send(ctx)
		for _, c := range (&http.Response{Header: header}).Cookies() {
			if who == side && c.Name == name && c.Value != "" {
				cookie = c.Name + "=" + c.Value
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s answered, Set-Cookie %q", who, header.Values("Set-Cookie"))
	})
	return cookie
}

// TestTrafficGRPC splits gRPC calls over h2c: a GRPCRoute's weights, to
// proxy Services whose appProtocol is kubernetes.io/h2c.
func TestTrafficGRPC(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "grpc")
	xr := trafficXR(t, ns, freePort(t), `
kind: GRPCRoute
primary: {service: {selector: {app: web, version: v1}, appProtocol: kubernetes.io/h2c}}
canary: {service: {selector: {app: web, version: v2}, appProtocol: kubernetes.io/h2c}, revision: v2}
traffic: {weight: 25}`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)

	api := grpcProbe(t, hostname(ns))
	want := split(25)
	await(t, settle, fmt.Sprintf("%d gRPC health checks through the gateway answered %s", batch, describeCounts(want)), api.answered(want))
	await(t, settle, "the GRPCRoute accepted by the real gateway alone", acceptedByGateway(gvkGRPCRoute, ns, "web", "True", ""))
}
