package main

// Attacks on spec.routes at its seams with the single-route contract: the
// versions each route records and reuses, hostile statuses, holds, the
// rescue, grants and warnings, the XRD's limits. Each test's reason says
// what it attacks ("Attack: ...").

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// TestRoutesReuseRecordedVersions: Attack: status.routes[].versions is
// written on every run so that the runs after it reuse each route's
// versions for ten minutes, as status.route's are; a run that never reads
// status.routes back asks Crossplane for every schema on every reconcile.
func TestRoutesReuseRecordedVersions(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     string
	}{
		"Shorthand": {
			reason: "The shorthand's status.route.versions is reused: no schema is asked for on the second reconcile.",
			xr: namespacedXR(`
  parentRefs: [{name: public, namespace: infra}]
  port: 9898
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary: {service: {selector: {app: podinfo, version: v2}}, revision: v2}
  traffic: {weight: 10}`),
		},
		"Routes": {
			reason: "Each route's status.routes[].versions is reused as status.route's is: no schema is asked for on the second reconcile.",
			xr:     routesXR(webAndGRPC, "    weight: 10"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tc.xr, emptyInput)
			s.served = experimentalCluster
			r := s.reconcile()
			if r.err != nil || isFatal(r.rsp) {
				t.Fatalf("setup: %v %v", r.err, r.rsp.GetResults())
			}
			s.apply(r.rsp)
			s.now = s.now.Add(time.Minute)
			r = s.reconcile()
			if r.err != nil || isFatal(r.rsp) {
				t.Fatalf("%v %v", r.err, r.rsp.GetResults())
			}
			// The shorthand's second reconcile: the call that asks for the
			// composed objects, and the one that reads them; no schema.
			if r.calls != 2 || len(r.req.GetRequiredSchemas()) > 0 {
				t.Errorf("%s\nthe second reconcile took %d calls and %d schemas, want 2 calls and none", tc.reason, r.calls, len(r.req.GetRequiredSchemas()))
			}
		})
	}
}

// TestRoutesRescueCutsEveryRoute: Attack: the emergency abort of a
// CanaryRoute with spec.routes that cannot be composed (a bad rule in its
// second route): every route observed at 70/30 gets the canary at 0, and
// the preview routes go.
func TestRoutesRescueCutsEveryRoute(t *testing.T) {
	bad := webAndGRPC + "\n    - {name: api, rules: [{matches: [{path: {type: Bogus, value: /}}]}]}"
	xrYAML := routesXR(bad, `    abort: true
    steps: [{weight: 30, pause: 1h}, {weight: 100}]
status:
  rollout:
    phase: Progressing
    revision: v2
    step: 0
    canaryWeight: 30
    primaryWeight: 70
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}, {group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9999}]`)
	observed := map[string]string{
		"route-httproute-web":  observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 70, 30, true),
		"route-grpcroute-grpc": observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 70, 30, true),
	}
	_, rsp := runFunction(t, xrYAML, emptyInput, observed, nil)
	want := map[string][][]string{
		"route-httproute-web":  {{"Service/podinfo-primary:9898=70", "Service/podinfo-canary:9898=0"}},
		"route-grpcroute-grpc": {{"Service/podinfo-primary:9999=70", "Service/podinfo-canary:9999=0"}},
	}
	if diff := cmp.Diff(want, routeWeightsByKey(rsp)); diff != "" {
		t.Errorf("the rescued abort cuts the canary from every route: -want, +got:\n%s\nresults: %v", diff, rsp.GetResults())
	}
	if p := rolloutOf(rsp)["phase"]; p != "Aborted" {
		t.Errorf("phase %v, want Aborted; results %v", p, rsp.GetResults())
	}
}

// TestRoutesNotComposableWarnedOnce: Attack: a namespaced CanaryRoute whose
// routes (of one kind) reference backends in another namespace needs one
// grant there that it cannot compose: the Warning and the condition say so
// once per grant to create, never once per route with the same words.
func TestRoutesNotComposableWarnedOnce(t *testing.T) {
	xrYAML := namespacedXR(`
  port: 9898
  routes:
    - {name: a, parentRefs: [{name: public, namespace: infra}]}
    - {name: b, parentRefs: [{name: internal, namespace: infra}]}
  primary: {backendRef: {name: podinfo, namespace: apps, port: 9898}}
  canary: {backendRef: {name: podinfo-canary, namespace: apps, port: 9898}, revision: v2}
  traffic: {weight: 10}`)
	_, rsp := runFunction(t, xrYAML, allowTest+"allowedBackendNamespaces: [apps]\n", nil, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("unexpected Fatal: %s", msg)
	}
	v := viewOf(t, rsp)
	want := []string{"WARNING GrantNotComposable: a namespaced CanaryRoute cannot compose into another namespace; the platform team must create ReferenceGrant httproute.podinfo-a.test in namespace apps from HTTPRoute in namespace test to Service podinfo, Service podinfo-canary"}
	if diff := cmp.Diff(want, v.Results); diff != "" {
		t.Errorf("one grant in apps serves both HTTPRoutes: it is asked for once: -want, +got:\n%s", diff)
	}
	for _, c := range v.Conditions {
		if strings.HasPrefix(c, "ReferenceGrantsReady=") && strings.Count(c, "must create") != 1 {
			t.Errorf("ReferenceGrantsReady asks for the grant %d times, want once: %s", strings.Count(c, "must create"), c)
		}
	}
}

// heldRouteYAML is a route of the XR podinfo as observed: a kind and
// name on a parent, its one rule's backends (YAML flow maps), accepted by
// its parent when accepted is set.
func heldRouteYAML(kind, name, parent string, accepted bool, backends ...string) string {
	r := observedRoute(kind, name, parent, 1, 1, 1, accepted)
	start, end := strings.Index(r, "    - backendRefs:\n"), strings.Index(r, "        - {group: \"\", kind: Service, name: podinfo-canary")
	end += strings.Index(r[end:], "\n") + 1
	var b strings.Builder
	b.WriteString("    - backendRefs:\n")
	for _, be := range backends {
		b.WriteString("        - " + be + "\n")
	}
	return r[:start] + b.String() + r[end:]
}

// TestRoutesPausedHold: Attack: a paused rollout whose canary changed
// holds the previous composition of every route, each ready as its own
// parents say, with its preview route; a canary the Input has since
// refused goes to 0% on every route.
func TestRoutesPausedHold(t *testing.T) {
	xrYAML := func(canaryNS string) string {
		return namespacedXR(`
  port: 9898
  referenceGrants: Skip
  routes:
` + webAndGRPC + `
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3, namespace: ` + canaryNS + `}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
    preview: {hostnames: [preview.example.com]}` + pausedStatus(`{group: "", kind: Service, namespace: apps, name: podinfo-v2, port: 9898}, {group: "", kind: Service, namespace: apps, name: podinfo-v2, port: 9999}`))
	}
	observed := map[string]string{
		"route-httproute-web": heldRouteYAML("HTTPRoute", "podinfo-web", "public", true,
			`{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}`, `{group: "", kind: Service, namespace: apps, name: podinfo-v2, port: 9898, weight: 50}`),
		"route-grpcroute-grpc": heldRouteYAML("GRPCRoute", "podinfo-grpc", "internal", false,
			`{group: "", kind: Service, name: podinfo, port: 9999, weight: 50}`, `{group: "", kind: Service, namespace: apps, name: podinfo-v2, port: 9999, weight: 50}`),
		"route-httproute-web-preview": heldRouteYAML("HTTPRoute", "podinfo-web-preview", "public", true,
			`{group: "", kind: Service, namespace: apps, name: podinfo-v2, port: 9898}`),
	}
	cases := map[string]struct {
		reason  string
		input   string
		weights map[string][][]string
		ready   map[string]string
	}{
		"Held": {
			reason: "Every route is held at 50/50 and the preview route with them; each route is ready as its parents say (web accepted, grpc not).",
			input:  allowTest + "allowedBackendNamespaces: [apps]\n",
			weights: map[string][][]string{
				"route-httproute-web":         {{"Service/podinfo:9898=50", "Service/apps/podinfo-v2:9898=50"}},
				"route-grpcroute-grpc":        {{"Service/podinfo:9999=50", "Service/apps/podinfo-v2:9999=50"}},
				"route-httproute-web-preview": {{"Service/apps/podinfo-v2:9898=<nil>"}},
			},
			ready: map[string]string{"route-httproute-web": "READY_TRUE", "route-grpcroute-grpc": "READY_FALSE", "route-httproute-web-preview": "READY_TRUE"},
		},
		"CanaryRevoked": {
			reason: "The Input no longer allows apps: the held canary goes to 0% on every route, and the preview route, which would send it every request, goes.",
			input:  allowTest + "allowedBackendNamespaces: [other]\n",
			weights: map[string][][]string{
				"route-httproute-web":  {{"Service/podinfo:9898=50", "Service/apps/podinfo-v2:9898=0"}},
				"route-grpcroute-grpc": {{"Service/podinfo:9999=50", "Service/apps/podinfo-v2:9999=0"}},
			},
			ready: map[string]string{"route-httproute-web": "READY_TRUE", "route-grpcroute-grpc": "READY_FALSE"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := xrYAML("apps")
			if name == "CanaryRevoked" {
				x = xrYAML("other")
			}
			_, rsp := runFunction(t, x, tc.input, observed, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			if diff := cmp.Diff(tc.weights, routeWeightsByKey(rsp)); diff != "" {
				t.Errorf("%s\nheld routes: -want, +got:\n%s", tc.reason, diff)
			}
			ready := map[string]string{}
			for k, r := range rsp.GetDesired().GetResources() {
				if strings.HasPrefix(k, "route-") {
					ready[k] = r.GetReady().String()
				}
			}
			if diff := cmp.Diff(tc.ready, ready); diff != "" {
				t.Errorf("%s\nreadiness: -want, +got:\n%s\nstatus: %v", tc.reason, diff, rolloutOf(rsp))
			}
		})
	}
}

// maxRoutesYAML are eight routes with every list at the XRD's most:
// 32 parents, 16 hostnames, 16 rules each (HTTPRoutes, so that every
// rule has a match of its own).
func maxRoutesYAML() string {
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "    - name: route-%d\n      parentRefs:\n", i)
		for j := range 32 {
			fmt.Fprintf(&b, "        - {name: gateway-%d, namespace: infra, sectionName: listener-%d}\n", j, j)
		}
		b.WriteString("      hostnames:\n")
		for j := range 16 {
			fmt.Fprintf(&b, "        - host-%d.route-%d.example.com\n", j, i)
		}
		b.WriteString("      rules:\n")
		for j := range 16 {
			fmt.Fprintf(&b, "        - {name: rule-%d, matches: [{path: {type: PathPrefix, value: /r%d}}]}\n", j, j)
		}
	}
	return b.String()
}

// TestRoutesAtTheXRDsLimits: Attack: eight routes, every list of each at
// its maxItems, with a preview of 16 hostnames: the XRD admits the XR, the
// function composes every route and preview route, the API server would
// admit each, and the status it writes is one the XRD admits.
func TestRoutesAtTheXRDsLimits(t *testing.T) {
	var preview strings.Builder
	for j := range 16 {
		fmt.Fprintf(&preview, "preview-%d.example.com, ", j)
	}
	xrYAML := routesXR(maxRoutesYAML(), `    steps: [{weight: 0.01, pause: 1m}, {weight: 33.33, pause: 1m}, {weight: 100}]
    preview: {hostnames: [`+strings.TrimSuffix(preview.String(), ", ")+`]}
status:
  rollout: {phase: Progressing, revision: v2, step: 1, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 33.33, primaryWeight: 66.67}`)
	xrds := crdschema.XRDs(t, xrdFiles...)
	if errs := xrds.Validate(toStruct(t, xrYAML).AsMap()); len(errs) > 0 {
		t.Fatalf("the XRD refuses eight routes at its limits: %v", errs)
	}
	req, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("eight routes at the XRD's limits are a Fatal: %s", msg)
	}
	routes, previews := 0, 0
	for k, r := range rsp.GetDesired().GetResources() {
		switch {
		case strings.HasSuffix(k, "-preview"):
			previews++
		case strings.HasPrefix(k, "route-"):
			routes++
			rules := routeWeights(r.GetResource().AsMap())
			if got := rules[len(rules)-1]; !cmp.Equal(got, []string{"Service/podinfo-primary:9898=6667", "Service/podinfo-canary:9898=3333"}) {
				t.Errorf("%s weighs %v, want 6667/3333 out of 10,000", k, got)
			}
		}
	}
	if routes != 8 || previews != 8 {
		t.Errorf("composed %d routes and %d preview routes, want 8 and 8", routes, previews)
	}
	assertXRDAccepts(t, req, rsp)
	gatewayAPICRDs(t).checkComposed(t, "AtTheXRDsLimits", rsp)
}

// TestRoutesVersionsPerKind: Attack: a cluster serves HTTPRoute at v1 and
// TLSRoute and TCPRoute at v1alpha2 only: each route is composed at the
// version its kind is served at, status.routes records each, and the next
// reconcile reuses them (asking no schema) and composes the same.
func TestRoutesVersionsPerKind(t *testing.T) {
	cluster := servedCluster{
		"gateway.networking.k8s.io/v1/HTTPRoute":           {"matches", "backendRefs"},
		"gateway.networking.k8s.io/v1alpha2/TLSRoute":      {"backendRefs"},
		"gateway.networking.k8s.io/v1alpha2/TCPRoute":      {"backendRefs"},
		"gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
	}
	xrYAML := routesXR(`    - {name: web, parentRefs: [{name: public, namespace: infra}]}
    - {name: tls, kind: TLSRoute, parentRefs: [{name: public, namespace: infra}], hostnames: [tls.example.com], port: 8443}
    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}`, "    weight: 10")
	want := map[string]string{
		"route-httproute-web": "gateway.networking.k8s.io/v1",
		"route-tlsroute-tls":  "gateway.networking.k8s.io/v1alpha2",
		"route-tcproute-db":   "gateway.networking.k8s.io/v1alpha2",
		"service-primary":     "v1",
		"service-canary":      "v1",
	}
	s := newSim(t, xrYAML, emptyInput)
	s.served = cluster
	for i := range 2 {
		r := s.reconcile()
		if r.err != nil || isFatal(r.rsp) {
			t.Fatalf("reconcile %d: %v %v", i, r.err, r.rsp.GetResults())
		}
		if diff := cmp.Diff(want, composedVersions(r.rsp)); diff != "" {
			t.Errorf("reconcile %d: versions: -want, +got:\n%s", i, diff)
		}
		st, _ := r.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
		routes, _ := st["routes"].([]any)
		recorded := make([]string, 0, len(routes))
		for _, rs := range routes {
			m, _ := rs.(map[string]any)
			v, _ := m["versions"].(map[string]any)
			recorded = append(recorded, fmt.Sprintf("%v %v", m["kind"], v["route"]))
		}
		if diff := cmp.Diff([]string{"HTTPRoute v1", "TLSRoute v1alpha2", "TCPRoute v1alpha2"}, recorded); diff != "" {
			t.Errorf("reconcile %d: status.routes[].versions.route: -want, +got:\n%s", i, diff)
		}
		if i == 1 && len(r.req.GetRequiredSchemas()) > 0 {
			t.Errorf("reconcile %d asks for %d schemas, want the recorded versions reused", i, len(r.req.GetRequiredSchemas()))
		}
		s.apply(r.rsp)
		s.now = s.now.Add(time.Minute)
	}
}

// TestRoutesNameCollisions: Attack: route names are <routeName>-<name>, so
// routeName a-b with a route c and routeName a with a route b-c name the
// same HTTPRoute a-b-c; an entry named primary names an HTTPRoute like
// the proxy Service podinfo-primary. The takeover rule sees each route's
// name: another XR's route of that name is never composed over, whatever
// key it goes by; a Service of the route's name is another kind.
func TestRoutesNameCollisions(t *testing.T) {
	withRouteName := func(routeName, routes string) string {
		return strings.Replace(routesXR(routes, "    weight: 10"), "  port: 9898\n", "  port: 9898\n  routeName: "+routeName+"\n", 1)
	}
	cases := map[string]struct {
		reason   string
		xr       string
		required map[string][]string
		fatal    string
	}{
		"AnotherXRsRoute": {
			reason: "routeName a with a route b-c names HTTPRoute a-b-c, which XR other composed (routeName a-b, route c): a Fatal names it.",
			xr:     withRouteName("a", "    - {name: b-c, parentRefs: [{name: public, namespace: infra}]}"),
			required: map[string][]string{
				"existing-route-httproute-b-c": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: a-b-c, namespace: test, labels: {crossplane.io/composite: other}}}`},
			},
			fatal: "HTTPRoute test/a-b-c exists and was not composed by this CanaryRoute",
		},
		"SecondRouteTakenOver": {
			reason: "The takeover rule holds for every route, not the first alone.",
			xr:     withRouteName("a", "    - {name: web, parentRefs: [{name: public, namespace: infra}]}\n    - {name: b-c, parentRefs: [{name: public, namespace: infra}]}"),
			required: map[string][]string{
				"existing-route-httproute-b-c": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: a-b-c, namespace: test, labels: {team: other}}}`},
			},
			fatal: "HTTPRoute test/a-b-c exists and was not composed by this CanaryRoute",
		},
		"EntryNamedPrimary": {
			reason: "A route named primary is the HTTPRoute podinfo-primary beside the proxy Service podinfo-primary: different kinds, both composed.",
			xr:     routesXR("    - {name: primary, parentRefs: [{name: public, namespace: infra}]}\n    - {name: canary, parentRefs: [{name: public, namespace: infra}]}", "    weight: 10"),
			required: map[string][]string{
				"existing-service-primary": {`{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, labels: {crossplane.io/composite: podinfo}}}`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := runFunction(t, tc.xr, emptyInput, nil, tc.required)
			msg := fatalOf(rsp)
			if tc.fatal == "" {
				if msg != "" {
					t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
				}
				if n := len(routeWeightsByKey(rsp)); n != 2 {
					t.Errorf("%s\ncomposed %d routes, want 2", tc.reason, n)
				}
				return
			}
			if !strings.Contains(msg, tc.fatal) {
				t.Errorf("%s\nwant a Fatal naming %q, got %q", tc.reason, tc.fatal, msg)
			}
		})
	}
}

// TestRoutesForgedStatus: Attack: status.routes is status, which anyone who
// may write the XR's status can forge within the XRD's limits: versions
// the function never composes, an entry of another kind under a route's
// name, names of another XR's routes, as many entries as the XRD admits.
// None is reused as it is: nothing outside the candidates is composed or
// asked for, and the reconcile settles.
func TestRoutesForgedStatus(t *testing.T) {
	const checked = `checkedAt: "2026-12-02T10:05:00Z"`
	forged := map[string]string{
		"UnknownVersions": `[{kind: HTTPRoute, name: podinfo-web, namespace: test, versions: {route: v9, referenceGrant: v7, ` + checked + `}}, {kind: GRPCRoute, name: podinfo-grpc, namespace: test, versions: {route: v3, ` + checked + `}}]`,
		"WrongKind":       `[{kind: GRPCRoute, name: podinfo-web, namespace: test, versions: {route: v1alpha2, ` + checked + `}}, {kind: TCPRoute, name: podinfo-grpc, namespace: test, versions: {route: v1alpha2, ` + checked + `}}]`,
		"AnotherXRs":      `[{kind: HTTPRoute, name: other-web, namespace: test, versions: {route: v1alpha2, ` + checked + `}}]`,
		"EightEntries":    "[" + strings.Repeat(`{kind: GRPCRoute, name: podinfo-grpc, namespace: test, versions: {route: v1alpha2, `+checked+`}}, `, 7) + `{kind: HTTPRoute, name: podinfo-web, versions: {route: v1beta1, ` + checked + `}}]`,
	}
	xrds := crdschema.XRDs(t, xrdFiles...)
	for name, routes := range forged {
		t.Run(name, func(t *testing.T) {
			x := routesXR(webAndGRPC, "    weight: 10\nstatus:\n  routes: "+routes)
			if errs := xrds.Validate(toStruct(t, x).AsMap()); len(errs) > 0 {
				t.Fatalf("setup: the XRD refuses the forged status: %v", errs)
			}
			req := testRequest(t, x, emptyInput, nil)
			req.Meta = allCapabilities
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("a forged status.routes is a Fatal: %s", msg)
			}
			if bad := outsideCandidates(rsp); len(bad) > 0 {
				t.Errorf("forged status.routes %s reused: the run composes or asks for versions the function never composes:\n  %s", routes, strings.Join(bad, "\n  "))
			}
			s := newSim(t, x, emptyInput)
			s.now, s.served = testNow, experimentalCluster
			r := s.reconcile()
			if r.err != nil || isFatal(r.rsp) {
				t.Fatalf("with forged status.routes the reconcile fails: %v %v", r.err, r.rsp.GetResults())
			}
			want := map[string]string{"route-httproute-web": "gateway.networking.k8s.io/v1", "route-grpcroute-grpc": "gateway.networking.k8s.io/v1", "service-primary": "v1", "service-canary": "v1"}
			if diff := cmp.Diff(want, composedVersions(r.rsp)); diff != "" {
				t.Errorf("versions: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestRoutesReleaseMovesCanaryWithoutTraffic: Attack: a release over two
// routes whose second route's gateway lags: the canary Service's selector
// changes only on a run where every observed route sends the canary
// nothing and every composed route sends it nothing either; the record
// the pipeline's next step reads is the shorthand's, whatever the number
// of routes.
func TestRoutesReleaseMovesCanaryWithoutTraffic(t *testing.T) {
	spec := func(routes string) string {
		return namespacedXR(`
  port: 9898` + routes + `
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 10m}, {weight: 100}]`)
	}
	shorthand := newSim(t, spec("\n  parentRefs: [{name: public, namespace: infra}]"), emptyInput)
	s := newSim(t, spec("\n  routes:\n"+webAndGRPC), emptyInput)
	var lagged time.Time
	s.gatewayOf = func(key string, now time.Time) (string, string) {
		if key == "route-grpcroute-grpc" && now.Before(lagged) {
			return "Unknown", "Pending"
		}
		return "True", "Accepted"
	}
	keys := []string{"route-httproute-web", "route-grpcroute-grpc"}
	observedCanary := func() int64 {
		var most int64 = -1
		for _, k := range keys {
			if id, ok := s.keys[k]; ok {
				most = max(most, canaryWeightOf(s.objects[id]))
			}
		}
		return most
	}
	for _, sim := range []*xpSim{shorthand, s} {
		sim.run(0)
		sim.setSpec("canary.revision", "v2")
	}
	for range 20 {
		shorthand.run(30 * time.Second)
		if r := s.run(30 * time.Second); r.out["canaryWeight"] == float64(50) {
			break
		}
	}
	if diff := cmp.Diff(releaseRecord(t, shorthand.runs[len(shorthand.runs)-1].rsp), releaseRecord(t, s.runs[len(s.runs)-1].rsp)); diff != "" {
		t.Errorf("the release record at 50%% differs with two routes: -shorthand, +routes:\n%s", diff)
	}
	s.setSpec("canary.revision", "v3")
	// The GRPCRoute's gateway is silent for the 20 s after the change.
	lagged = s.now.Add(20 * time.Second)
	moved := false
	for range 30 {
		before := observedCanary()
		observed := s.observedSelector("service-canary")
		r := s.run(5 * time.Second)
		desired := desiredSelector(r.rsp, "service-canary")
		if desired == observed {
			continue
		}
		moved = true
		for _, k := range keys {
			if w := canaryWeightOf(r.rsp.GetDesired().GetResources()[k].GetResource().AsMap()); before != 0 || w != 0 {
				t.Fatalf("the canary Service moved %v -> %v on a run whose observed routes gave the canary up to %d and whose %s gives it %d:\n%s", observed, desired, before, k, w, s.describe())
			}
		}
		if desired != "v3" {
			t.Fatalf("the canary Service moved to %v, want v3", desired)
		}
	}
	if !moved {
		t.Fatalf("the canary Service never moved to v3:\n%s", s.describe())
	}
}

// TestRoutesPolicyOnEveryRoute: Attack: the Input's policy holds on every
// route, not the first alone: a rule of its own in the second route whose
// backend the Input refuses is a Fatal naming that route's field; a canary
// of a kind the Input refuses is held at 0% on every route.
func TestRoutesPolicyOnEveryRoute(t *testing.T) {
	t.Run("RuleBackendOfSecondRoute", func(t *testing.T) {
		x := routesXR("    - {name: web, parentRefs: [{name: public, namespace: infra}]}\n    - {name: api, parentRefs: [{name: public, namespace: infra}], rules: [{matches: [{path: {type: PathPrefix, value: /legacy}}], backendRefs: [{name: legacy, namespace: forbidden, port: 80}]}, {}]}", "    weight: 10")
		_, rsp := runFunction(t, x, allowTest, nil, nil)
		if msg := fatalOf(rsp); !strings.Contains(msg, "spec.routes[1].rules[0].backendRefs[0]") {
			t.Errorf("want a Fatal naming spec.routes[1].rules[0].backendRefs[0], got %q", msg)
		}
	})
	t.Run("CanaryKindRefused", func(t *testing.T) {
		x := namespacedXR(`
  port: 9898
  routes:
` + webAndGRPC + `
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {group: example.com, kind: Backend, name: podinfo-canary}, revision: v2}
  traffic: {weight: 10}`)
		_, rsp := runFunction(t, x, allowTest+"allowedBackendKinds: [{group: \"\", kind: Service}]\n", nil, nil)
		if msg := fatalOf(rsp); msg != "" {
			t.Fatalf("unexpected Fatal: %s", msg)
		}
		want := map[string][][]string{
			"route-httproute-web":  {{"Service/podinfo:9898=100", "Backend/podinfo-canary=0"}},
			"route-grpcroute-grpc": {{"Service/podinfo:9999=100", "Backend/podinfo-canary=0"}},
		}
		if diff := cmp.Diff(want, routeWeightsByKey(rsp)); diff != "" {
			t.Errorf("a refused canary is held at 0%% on every route: -want, +got:\n%s", diff)
		}
	})
}

// TestRoutesPausedHoldWithNewRoute: Attack: paused at 50%, the author
// changes the canary and adds a route in one edit. The routes observed can
// be held, so paused means nothing moves: they keep their weights and
// canary, and the new route waits for the pause to end. Before, one route
// not yet observed read as "nothing composed can be held" and every route
// moved the old canary's 50% to the primary while paused.
func TestRoutesPausedHoldWithNewRoute(t *testing.T) {
	x := namespacedXR(`
  port: 9898
  referenceGrants: Skip
  routes:
` + webAndGRPC + `
    - {name: api, parentRefs: [{name: public, namespace: infra}], hostnames: [api.example.com]}
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true` + pausedStatus(`{group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9898}, {group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9999}`))
	observed := map[string]string{
		"route-httproute-web": heldRouteYAML("HTTPRoute", "podinfo-web", "public", true,
			`{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}`, `{group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}`),
		"route-grpcroute-grpc": heldRouteYAML("GRPCRoute", "podinfo-grpc", "internal", true,
			`{group: "", kind: Service, name: podinfo, port: 9999, weight: 50}`, `{group: "", kind: Service, name: podinfo-v2, port: 9999, weight: 50}`),
	}
	_, rsp := runFunction(t, x, allowTest, observed, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("unexpected Fatal: %s", msg)
	}
	want := map[string][][]string{
		"route-httproute-web":  {{"Service/podinfo:9898=50", "Service/podinfo-v2:9898=50"}},
		"route-grpcroute-grpc": {{"Service/podinfo:9999=50", "Service/podinfo-v2:9999=50"}},
	}
	if diff := cmp.Diff(want, routeWeightsByKey(rsp)); diff != "" {
		t.Errorf("paused, the routes observed are held as they are and the new route waits: -want, +got:\n%s\nstatus: %v", diff, rolloutOf(rsp))
	}
	if w := rolloutOf(rsp)["canaryWeight"]; w != float64(50) {
		t.Errorf("status.rollout.canaryWeight %v, want 50 (held): %v", w, rolloutOf(rsp)["message"])
	}
}

// TestRoutesBackendTLSOnlyOnHTTPPorts: Attack: tls on a side encrypts
// what the gateway sends the backend over HTTPRoutes and GRPCRoutes (the
// shorthand refuses it on the other kinds). Beside them, a TCPRoute or a
// TLSRoute reaches the same proxy Service on a port of its own: a
// BackendTLSPolicy on the whole Service would have the gateway wrap that
// stream (already TLS, for a TLSRoute) in TLS too. The policy targets the
// ports of the HTTPRoutes and GRPCRoutes alone, by name; the whole Service
// while every port is theirs.
func TestRoutesBackendTLSOnlyOnHTTPPorts(t *testing.T) {
	crds := gatewayAPICRDs(t)
	cases := map[string]struct {
		reason string
		routes string
		want   []string
	}{
		"StreamPorts": {
			reason: "The HTTPRoute's and the GRPCRoute's ports are targeted by name; the TCPRoute's and the TLSRoute's are not.",
			routes: webAndGRPC + `
    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}
    - {name: tls, kind: TLSRoute, parentRefs: [{name: public, namespace: infra}], hostnames: [tls.example.com], port: 8443}`,
			want: []string{"Service/podinfo-primary#http-9898", "Service/podinfo-primary#grpc-9999"},
		},
		"EveryPortHTTP": {
			reason: "Every port carries an HTTPRoute or a GRPCRoute: the policy targets the whole Service, as a single route's does.",
			routes: webAndGRPC,
			want:   []string{"Service/podinfo-primary"},
		},
		"SharedPort": {
			reason: "A TCPRoute on the HTTPRoute's port: the port is the HTTPRoute's too, and one port cannot be split: the whole Service.",
			routes: "    - {name: web, parentRefs: [{name: public, namespace: infra}]}\n    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}]}",
			want:   []string{"Service/podinfo-primary"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := strings.Replace(routesXR(tc.routes, "    weight: 10"), "primary: {service: {selector: {app: podinfo, version: v1}}}",
				"primary: {service: {selector: {app: podinfo, version: v1}}, tls: {hostname: podinfo.internal, wellKnownCACertificates: System}}", 1)
			req, rsp := runFunction(t, x, emptyInput, nil, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			policy := rsp.GetDesired().GetResources()["backendtlspolicy-primary"].GetResource().AsMap()
			spec, _ := policy["spec"].(map[string]any)
			refs, _ := spec["targetRefs"].([]any)
			var got []string
			for _, r := range refs {
				m, _ := r.(map[string]any)
				s := fmt.Sprintf("%v/%v", m["kind"], m["name"])
				if sn, ok := m["sectionName"]; ok {
					s += fmt.Sprintf("#%v", sn)
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBackendTLSPolicy targetRefs: -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
			crds.checkComposed(t, name, rsp)
		})
	}
}

// TestRoutesPreviewsGoTogether: Attack: every preview route goes at once
// when the rollout stops being active: on an abort (the canary cut from
// every route too) and on a rollout that ends; while paused they stay.
func TestRoutesPreviewsGoTogether(t *testing.T) {
	observed := map[string]string{
		"route-httproute-web":          observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 70, 30, true),
		"route-grpcroute-grpc":         observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 70, 30, true),
		"route-httproute-web-preview":  observedRoute("HTTPRoute", "podinfo-web-preview", "public", 9898, 0, 100, true),
		"route-grpcroute-grpc-preview": observedRoute("GRPCRoute", "podinfo-grpc-preview", "internal", 9999, 0, 100, true),
	}
	cases := map[string]struct {
		reason   string
		traffic  string
		previews int
	}{
		"Paused": {
			reason:   "Paused, the rollout is active: both preview routes stay.",
			traffic:  "    paused: true\n",
			previews: 2,
		},
		"Aborted": {
			reason:   "An abort ends the preview of every route at once.",
			traffic:  "    abort: true\n",
			previews: 0,
		},
		"Succeeded": {
			reason:   "A rollout that ended: no preview route on any route.",
			traffic:  "",
			previews: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status := `{phase: Progressing, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 30, primaryWeight: 70}`
			if name == "Succeeded" {
				status = `{phase: Succeeded, revision: v2, step: 1, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 100, primaryWeight: 0}`
			}
			x := routesXR(webAndGRPC, tc.traffic+"    steps: [{weight: 30, pause: 1h}, {weight: 100}]\n    preview: {hostnames: [preview.example.com]}\nstatus:\n  rollout: "+status)
			req, rsp := runFunction(t, x, emptyInput, observed, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			previews := 0
			for k := range rsp.GetDesired().GetResources() {
				if strings.HasSuffix(k, "-preview") {
					previews++
				}
			}
			if previews != tc.previews {
				t.Errorf("%s\n%d preview routes composed, want %d (%v)", tc.reason, previews, tc.previews, rolloutOf(rsp)["message"])
			}
			if name == "Aborted" {
				for k, rules := range routeWeightsByKey(rsp) {
					if last := rules[len(rules)-1]; !strings.HasSuffix(last[len(last)-1], "=0") {
						t.Errorf("%s\n%s still sends the canary %v", tc.reason, k, last)
					}
				}
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// TestRoutesClaims: Attack: a claimed XCanaryRoute with spec.routes puts
// every route in its claim's namespace once the claim is proven, named
// after the claim (<routeName>-<name>); a forged claimRef is refused once,
// not once per route.
func TestRoutesClaims(t *testing.T) {
	routes := func(namespace string) string {
		return strings.Replace(claimedXR(namespace), "  parentRefs: [{name: gateway, namespace: istio-ingress}]\n",
			"  routes:\n    - {name: web, parentRefs: [{name: gateway, namespace: istio-ingress}]}\n    - {name: grpc, kind: GRPCRoute, parentRefs: [{name: gateway, namespace: istio-ingress}], port: 9999}\n", 1)
	}
	t.Run("Proven", func(t *testing.T) {
		_, rsp := runFunction(t, routes("team-a"), emptyInput, nil, map[string][]string{"claim": {claimObject("team-a", "podinfo-x7k2p")}})
		if msg := fatalOf(rsp); msg != "" {
			t.Fatalf("unexpected Fatal: %s", msg)
		}
		got := map[string]string{}
		for k, r := range rsp.GetDesired().GetResources() {
			md, _ := r.GetResource().AsMap()["metadata"].(map[string]any)
			got[k] = fmt.Sprintf("%v/%v", md["namespace"], md["name"])
		}
		want := map[string]string{"route-httproute-web": "team-a/podinfo-web", "route-grpcroute-grpc": "team-a/podinfo-grpc"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("every route in the claim's namespace, named after the claim: -want, +got:\n%s", diff)
		}
	})
	t.Run("Forged", func(t *testing.T) {
		_, rsp := runFunction(t, routes("kube-system"), allowMonitoring, nil, map[string][]string{"claim": {}})
		if msg := fatalOf(rsp); strings.Count(msg, "spec.claimRef") != 1 {
			t.Errorf("want a Fatal naming spec.claimRef once, got %q", msg)
		}
	})
}

// TestRoutesFreshStateLaggingCaches: Attack: the lagging-cache schedules
// of TestFreshStateLaggingCaches over spec.routes (an HTTPRoute and a
// GRPCRoute): a stale read answered with the remembered decision composes
// every route; no route's share moves back, and v3 ends at 100%.
func TestRoutesFreshStateLaggingCaches(t *testing.T) {
	xrYAML := strings.Replace(steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, ""), "  parentRefs: [{name: gateway}]\n",
		"  routes:\n    - {name: web, parentRefs: [{name: gateway}]}\n    - {name: grpc, kind: GRPCRoute, parentRefs: [{name: gateway}], port: 9999}\n", 1)
	for seed := range seeds() / 2 {
		for _, key := range []string{"route-httproute-web", "route-grpcroute-grpc"} {
			t.Run(fmt.Sprint(key, " seed ", seed), func(t *testing.T) {
				s := newLaggingSim(t, xrYAML, seed, 4, true)
				s.routeKey = key
				var wrong []string
				for i := range 120 {
					switch i {
					case 12:
						s.edit("traffic.abort", true)
					case 30:
						s.edit("traffic.abort", nil)
					case 60:
						s.edit("canary.revision", "v3")
					case 100:
						s.maxLag = 0
					}
					wrong = append(wrong, s.reconcileLagging()...)
					s.now = s.now.Add(10 * time.Second)
				}
				if len(wrong) > 0 {
					t.Errorf("under caches that lag, %s must never move back:\n%s\nhistory:\n%s", key, strings.Join(wrong, "\n"), describeHistory(s.history))
				}
				if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 10000 {
					t.Errorf("v3 must end Succeeded at 100%% on %s once the caches catch up; it ended at %s\nhistory:\n%s", key, last, describeHistory(s.history))
				}
			})
		}
	}
}

// TestRoutesCanaryDigestIgnoresRouteOrder: Attack: the canary's digest
// (a change of it restarts a progressive rollout) was taken on the first
// route's view: reordering spec.routes, a no-op, restarted a rollout at
// 50% from its first step when the canary had filters (parsed as the first
// route's kind has them) or a backendRef port (replaced by the first
// route's own port). The digest is the canary's as written, whatever the
// routes' order and ports, and the shorthand's for the same canary.
func TestRoutesCanaryDigestIgnoresRouteOrder(t *testing.T) {
	canaries := map[string]string{
		"ServiceSide":    "{service: {selector: {app: podinfo, version: v2}}, revision: v2}",
		"BackendRefPort": "{backendRef: {name: podinfo-canary, port: 9898}, revision: v2}",
		"Filters":        `{service: {selector: {app: podinfo, version: v2}}, revision: v2, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-canary, value: "1"}]}}]}`,
	}
	for name, canary := range canaries {
		t.Run(name, func(t *testing.T) {
			x := strings.Replace(routesXR(webAndGRPC, "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 10m}, {weight: 100}]"),
				"canary: {service: {selector: {app: podinfo, version: v2}}, revision: v2}", "canary: "+canary, 1)
			s := newSim(t, x, emptyInput)
			for range 10 {
				if r := s.run(30 * time.Second); r.out["canaryWeight"] == float64(50) {
					break
				}
			}
			before := s.runs[len(s.runs)-1].out
			if before["canaryWeight"] != float64(50) {
				t.Fatalf("setup: the rollout never reached 50%%:\n%s", s.describe())
			}
			routes := s.xr["spec"].(map[string]any)["routes"].([]any)
			s.setSpec("routes", []any{routes[1], routes[0]})
			after := s.run(10 * time.Second).out
			if after["step"] != before["step"] || after["canaryWeight"] != before["canaryWeight"] || after["canaryDigest"] != before["canaryDigest"] {
				t.Errorf("reordering spec.routes moved the rollout: step %v at %v%% (digest %v) became step %v at %v%% (digest %v): %v",
					before["step"], before["canaryWeight"], before["canaryDigest"], after["step"], after["canaryWeight"], after["canaryDigest"], after["message"])
			}
			// The shorthand's digest of the same canary on its HTTPRoute.
			short := strings.Replace(x, "  routes:\n"+webAndGRPC+"\n", "  parentRefs: [{name: public, namespace: infra}]\n", 1)
			_, rsp := runFunction(t, short, emptyInput, nil, nil)
			if d := rolloutOf(rsp)["canaryDigest"]; d != before["canaryDigest"] {
				t.Errorf("the shorthand's digest of the same canary is %v, spec.routes' %v: switching between them restarts the rollout", d, before["canaryDigest"])
			}
		})
	}
}

// TestRoutesRescueWithRulesOfTheirOwn: Attack: the emergency abort of a
// CanaryRoute with spec.routes that cannot be composed, whose routes have
// named rules and rules of their own: the rescue reads which rules are
// weighted from each route's own rules (spec.routes[i].rules), not from
// spec.rules, which spec.routes leaves unset; the canary is cut from
// every route and the rules of their own keep their backends.
func TestRoutesRescueWithRulesOfTheirOwn(t *testing.T) {
	routes := `    - name: web
      parentRefs: [{name: public, namespace: infra}]
      rules:
        - {name: legacy, matches: [{path: {type: PathPrefix, value: /legacy}}], backendRefs: [{name: legacy, port: 80}]}
        - {name: api, matches: [{path: {type: PathPrefix, value: /}}]}
    - {name: grpc, kind: GRPCRoute, parentRefs: [{name: internal, namespace: infra}], port: 9999, rules: [{name: rpc}]}
    - {name: bad, rules: [{matches: [{path: {type: Bogus, value: /}}]}]}`
	x := routesXR(routes, `    abort: true
    steps: [{weight: 30, pause: 1h}, {weight: 100}]
status:
  rollout:
    phase: Progressing
    revision: v2
    step: 0
    canaryWeight: 30
    primaryWeight: 70
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}, {group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9999}]`)
	web := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo-web, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: public, namespace: infra}]
  rules:
    - name: legacy
      matches: [{path: {type: PathPrefix, value: /legacy}}]
      backendRefs: [{group: "", kind: Service, name: legacy, port: 80, weight: 1}]
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 70}
        - {group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 30}
`
	grpc := strings.Replace(observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 70, 30, true), "    - backendRefs:", "    - name: rpc\n      backendRefs:", 1)
	_, rsp := runFunction(t, x, emptyInput, map[string]string{"route-httproute-web": web, "route-grpcroute-grpc": grpc}, nil)
	want := map[string][][]string{
		"route-httproute-web":  {{"Service/legacy:80=1"}, {"Service/podinfo-primary:9898=70", "Service/podinfo-canary:9898=0"}},
		"route-grpcroute-grpc": {{"Service/podinfo-primary:9999=70", "Service/podinfo-canary:9999=0"}},
	}
	if diff := cmp.Diff(want, routeWeightsByKey(rsp)); diff != "" {
		t.Errorf("the rescued abort cuts the canary from every route and keeps the rules of their own: -want, +got:\n%s\nresults: %v\nstatus: %v", diff, rsp.GetResults(), rolloutOf(rsp))
	}
}

// TestRoutesConditionsNameTheRoute: Attack: the XR's conditions over
// several routes: RouteAccepted said "the route has not been created yet"
// or "infra/internal has not accepted the route" without saying which
// route, and ReferenceGrantsReady listed a namespace once per route's
// grant ("apps, apps").
func TestRoutesConditionsNameTheRoute(t *testing.T) {
	accepted := observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 90, 10, true)
	cases := map[string]struct {
		reason   string
		observed map[string]string
		want     string
	}{
		"OneMissing": {
			reason:   "The GRPCRoute is not created yet: the condition names it.",
			observed: map[string]string{"route-httproute-web": accepted},
			want:     "RouteAccepted=False Pending: route podinfo-grpc: the route has not been created yet",
		},
		"OneNotAccepted": {
			reason: "The GRPCRoute's parent has not accepted it: the condition names the route and the parent.",
			observed: map[string]string{
				"route-httproute-web":  accepted,
				"route-grpcroute-grpc": observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 90, 10, false),
			},
			want: "RouteAccepted=False Pending: route podinfo-grpc: infra/internal has not accepted the route (Pending): the parent has not reported on the route yet",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := runFunction(t, routesXR(webAndGRPC, "    weight: 10"), emptyInput, tc.observed, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("unexpected Fatal: %s", msg)
			}
			got := ""
			for _, c := range viewOf(t, rsp).Conditions {
				if strings.HasPrefix(c, "RouteAccepted=") {
					got = c
				}
			}
			if got != tc.want {
				t.Errorf("%s\ngot  %q\nwant %q", tc.reason, got, tc.want)
			}
		})
	}
	t.Run("GrantNamespacesOnce", func(t *testing.T) {
		x := strings.Replace(namespacedXR(`
  port: 9898
  routes:
`+webAndGRPC+`
  primary: {backendRef: {name: podinfo, namespace: apps, port: 9898}}
  canary: {backendRef: {name: podinfo-canary, namespace: apps, port: 9898}, revision: v2}
  traffic: {weight: 10}`), "kind: CanaryRoute\nmetadata: {name: podinfo, namespace: test}\nspec:", "kind: XCanaryRoute\nmetadata: {name: podinfo}\nspec:\n  namespace: test", 1)
		_, rsp := runFunction(t, x, allowTest+"allowedBackendNamespaces: [apps]\n", nil, nil)
		for _, c := range viewOf(t, rsp).Conditions {
			if strings.HasPrefix(c, "ReferenceGrantsReady=") && c != "ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: apps" {
				t.Errorf("each namespace once: got %q", c)
			}
		}
	})
}

// TestRoutesAppProtocolOnlyOnHTTPPorts: Attack: a side's appProtocol (h2c,
// written for the HTTPRoute and the GRPCRoute) went on every port of the
// proxy Service, a TCPRoute's own port too: Gateway API has a gateway honour
// a port's appProtocol and refuse a backend its route cannot speak it to
// (ResolvedRefs False, UnsupportedProtocol), so the TCPRoute lost its
// backends. The ports of stream routes go without it while an HTTPRoute or
// a GRPCRoute has a port of its own; every port keeps it otherwise.
func TestRoutesAppProtocolOnlyOnHTTPPorts(t *testing.T) {
	cases := map[string]struct {
		reason string
		routes string
		want   []string
	}{
		"StreamPort": {
			reason: "The TCPRoute's port has no appProtocol; the HTTPRoute's and GRPCRoute's have it.",
			routes: webAndGRPC + "\n    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}",
			want:   []string{"http-9898:kubernetes.io/h2c", "grpc-9999:kubernetes.io/h2c", "tcp-5432:"},
		},
		"EveryPortHTTP": {
			reason: "Every port an HTTPRoute's or a GRPCRoute's: every port has it.",
			routes: webAndGRPC,
			want:   []string{"http-9898:kubernetes.io/h2c", "grpc-9999:kubernetes.io/h2c"},
		},
		"OnlyStreams": {
			reason: "Stream routes alone: the appProtocol is theirs, as a single TCPRoute's is.",
			routes: "    - {name: a, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}]}\n    - {name: b, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}",
			want:   []string{"tcp-9898:kubernetes.io/h2c", "tcp-5432:kubernetes.io/h2c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := strings.Replace(routesXR(tc.routes, "    weight: 10"), "primary: {service: {selector: {app: podinfo, version: v1}}}",
				"primary: {service: {selector: {app: podinfo, version: v1}, appProtocol: kubernetes.io/h2c}}", 1)
			req, rsp := runFunction(t, x, emptyInput, nil, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			svc := rsp.GetDesired().GetResources()["service-primary"].GetResource().AsMap()
			spec, _ := svc["spec"].(map[string]any)
			ports, _ := spec["ports"].([]any)
			got := make([]string, 0, len(ports))
			for _, p := range ports {
				m, _ := p.(map[string]any)
				ap, _ := m["appProtocol"].(string)
				got = append(got, fmt.Sprintf("%v:%s", m["name"], ap))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nports: -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}
