package main

// Attacks on spec.routes at its seams with the single-route contract: the
// versions each route records and reuses, hostile statuses, holds, the
// rescue, grants and warnings, the XRD's limits. Each test's reason says
// what it attacks ("Attack: ...").

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

var _ = cmp.Diff
var _ = strings.Contains

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
