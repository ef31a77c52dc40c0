package main

// Several routes, one rollout (spec.routes): every route composed with the
// same weights, a step waiting for all of them, an abort cutting the canary
// from all at once, each route's grants and preview, and bad input a Fatal
// naming the entry's field.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// routesXR is the namespaced CanaryRoute podinfo with spec.routes (YAML
// lines at the list's indentation, "    - ..."), service sides, the canary
// of revision v2, and the traffic given (YAML lines under traffic).
func routesXR(routes, traffic string) string {
	return namespacedXR(`
  port: 9898
  routes:
` + routes + `
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary: {service: {selector: {app: podinfo, version: v2}}, revision: v2}
  traffic:
` + traffic)
}

// webAndGRPC are an HTTPRoute and a GRPCRoute on gateways of their own, the
// GRPCRoute on port 9999.
const webAndGRPC = `    - {name: web, kind: HTTPRoute, parentRefs: [{name: public, namespace: infra}], hostnames: [www.example.com]}
    - {name: grpc, kind: GRPCRoute, parentRefs: [{name: internal, namespace: infra}], hostnames: [grpc.example.internal], port: 9999}`

// routeWeightsByKey are the weighted rules of every composed route (and
// preview route), by key.
func routeWeightsByKey(rsp *fnv1.RunFunctionResponse) map[string][][]string {
	out := map[string][][]string{}
	for name, r := range rsp.GetDesired().GetResources() {
		if strings.HasPrefix(name, "route-") {
			out[name] = routeWeights(r.GetResource().AsMap())
		}
	}
	return out
}

// observedRoute is a route of the XR podinfo as Crossplane observes it: a
// kind and name, its parent, and its one rule's backends at weights
// primary/canary on a port, accepted by its parent at its generation when
// accepted is set.
func observedRoute(kind, name, parent string, port, primary, canary int, accepted bool) string {
	status := ""
	if accepted {
		status = fmt.Sprintf(`
status:
  parents:
    - parentRef: {name: %s, namespace: infra}
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "True", reason: Accepted, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z"}
        - {type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z"}`, parent)
	}
	match := ""
	if kind == "HTTPRoute" {
		match = "\n      matches: [{path: {type: PathPrefix, value: /}}]"
	}
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: %s
metadata: {name: %s, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: %s, namespace: infra}]
  rules:
    - backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: %d, weight: %d}
        - {group: "", kind: Service, name: podinfo-canary, port: %d, weight: %d}%s%s
`, kind, name, parent, port, primary, port, canary, match, status)
}

func TestRoutesComposeEveryRoute(t *testing.T) {
	crds := gatewayAPICRDs(t)
	cases := map[string]struct {
		reason  string
		routes  string
		traffic string
		want    map[string][][]string
		ports   []string // the proxy Services' ports, name:port
	}{
		"WebAndGRPC": {
			reason:  "Each route is composed under its own key and name with the same weights, to the proxy Services' port of its own.",
			routes:  webAndGRPC,
			traffic: "    weight: 20",
			want: map[string][][]string{
				"route-httproute-web":  {{"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=20"}},
				"route-grpcroute-grpc": {{"Service/podinfo-primary:9999=80", "Service/podinfo-canary:9999=20"}},
			},
			ports: []string{"http-9898:9898", "grpc-9999:9999"},
		},
		"SamePort": {
			reason:  "Two routes on spec.port share the proxy Services' one port, named as a single route's.",
			routes:  "    - {name: a, parentRefs: [{name: public, namespace: infra}]}\n    - {name: b, parentRefs: [{name: internal, namespace: infra}]}",
			traffic: "    weight: 0.5",
			want: map[string][][]string{
				"route-httproute-a": {{"Service/podinfo-primary:9898=9950", "Service/podinfo-canary:9898=50"}},
				"route-httproute-b": {{"Service/podinfo-primary:9898=9950", "Service/podinfo-canary:9898=50"}},
			},
			ports: []string{"http:9898"},
		},
		"StreamBesideHTTP": {
			reason:  "A TCPRoute beside an HTTPRoute takes the weights but none of the HTTPRoute's matches: what its kind has no field for goes without.",
			routes:  "    - {name: web, parentRefs: [{name: public, namespace: infra}]}\n    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}",
			traffic: "    weight: 10\n    matches: [{headers: [{name: x-canary, value: \"1\"}]}]",
			want: map[string][][]string{
				"route-httproute-web": {{"Service/podinfo-canary:9898=1"}, {"Service/podinfo-primary:9898=90", "Service/podinfo-canary:9898=10"}},
				"route-tcproute-db":   {{"Service/podinfo-primary:5432=90", "Service/podinfo-canary:5432=10"}},
			},
			ports: []string{"http-9898:9898", "tcp-5432:5432"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := runFunction(t, routesXR(tc.routes, tc.traffic), emptyInput, nil, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			if diff := cmp.Diff(tc.want, routeWeightsByKey(rsp)); diff != "" {
				t.Errorf("%s\nroutes: -want, +got:\n%s", tc.reason, diff)
			}
			for _, key := range []string{"service-primary", "service-canary"} {
				svc := rsp.GetDesired().GetResources()[key].GetResource().AsMap()
				spec, _ := svc["spec"].(map[string]any)
				ports, _ := spec["ports"].([]any)
				var got []string
				for _, p := range ports {
					m, _ := p.(map[string]any)
					got = append(got, fmt.Sprintf("%v:%v", m["name"], m["port"]))
				}
				if diff := cmp.Diff(tc.ports, got); diff != "" {
					t.Errorf("%s\n%s ports: -want, +got:\n%s", tc.reason, key, diff)
				}
			}
			status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			if _, ok := status["route"]; ok {
				t.Errorf("%s\nstatus.route is set with spec.routes, want status.routes alone", tc.reason)
			}
			routes, _ := status["routes"].([]any)
			if len(routes) != len(tc.want) {
				t.Errorf("%s\nstatus.routes has %d entries, want %d", tc.reason, len(routes), len(tc.want))
			}
			assertXRDAccepts(t, req, rsp)
			crds.checkComposed(t, name, rsp)
		})
	}
}

func TestRoutesStepWaitsForEveryRoute(t *testing.T) {
	xrYAML := routesXR(webAndGRPC, `    steps: [{weight: 10, pause: 1m}, {weight: 100}]
status:
  rollout: {phase: Progressing, revision: v2, step: 0, stepStartedAt: "2026-12-02T09:00:00Z", canaryWeight: 10, primaryWeight: 90}`)
	cases := map[string]struct {
		reason   string
		observed map[string]string
		wantStep float64
		wantMsg  string
	}{
		"OneRouteBehind": {
			reason: "The HTTPRoute carries step 0 and is accepted; the GRPCRoute does not carry it yet: the step holds, its pause long over, and says which route it waits for.",
			observed: map[string]string{
				"route-httproute-web":  observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 90, 10, true),
				"route-grpcroute-grpc": observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 100, 0, true),
			},
			wantStep: 0,
			wantMsg:  "route podinfo-grpc",
		},
		"OneRouteNotAccepted": {
			reason: "Both routes carry step 0, but the GRPCRoute's parent has not accepted it: the step holds.",
			observed: map[string]string{
				"route-httproute-web":  observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 90, 10, true),
				"route-grpcroute-grpc": observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 90, 10, false),
			},
			wantStep: 0,
			wantMsg:  "route podinfo-grpc",
		},
		"EveryRouteAtTheStep": {
			reason: "Both routes carry step 0 and both parents accepted them: the rollout moves to step 1 on every route.",
			observed: map[string]string{
				"route-httproute-web":  observedRoute("HTTPRoute", "podinfo-web", "public", 9898, 90, 10, true),
				"route-grpcroute-grpc": observedRoute("GRPCRoute", "podinfo-grpc", "internal", 9999, 90, 10, true),
			},
			wantStep: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := runFunction(t, xrYAML, emptyInput, tc.observed, nil)
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("%s\nunexpected Fatal: %s", tc.reason, msg)
			}
			r := rolloutOf(rsp)
			if r["step"] != tc.wantStep {
				t.Errorf("%s\nstep %v, want %v (%v)", tc.reason, r["step"], tc.wantStep, r["message"])
			}
			if msg, _ := r["message"].(string); !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("%s\nmessage %q, want it to name %q", tc.reason, msg, tc.wantMsg)
			}
			// Whatever the step, every route carries the same weights.
			weights := routeWeightsByKey(rsp)
			canary := map[string]string{}
			for k, rules := range weights {
				last := rules[len(rules)-1]
				canary[k] = last[len(last)-1][strings.LastIndex(last[len(last)-1], "="):]
			}
			if vals := slices.Compact(slices.Sorted(maps.Values(canary))); len(vals) != 1 {
				t.Errorf("%s\nthe routes carry different canary weights: %v", tc.reason, canary)
			}
		})
	}
}

func TestRoutesAbortCutsEveryRoute(t *testing.T) {
	xrYAML := routesXR(webAndGRPC+"\n    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}", `    abort: true
    steps: [{weight: 30, pause: 1h}, {weight: 100}]
status:
  rollout: {phase: Progressing, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 30, primaryWeight: 70}`)
	_, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("unexpected Fatal: %s", msg)
	}
	want := map[string][][]string{
		"route-httproute-web":  {{"Service/podinfo-primary:9898=100", "Service/podinfo-canary:9898=0"}},
		"route-grpcroute-grpc": {{"Service/podinfo-primary:9999=100", "Service/podinfo-canary:9999=0"}},
		"route-tcproute-db":    {{"Service/podinfo-primary:5432=100", "Service/podinfo-canary:5432=0"}},
	}
	if diff := cmp.Diff(want, routeWeightsByKey(rsp)); diff != "" {
		t.Errorf("an abort sends the canary nothing on every route at once: -want, +got:\n%s", diff)
	}
	if p := rolloutOf(rsp)["phase"]; p != "Aborted" {
		t.Errorf("phase %v, want Aborted", p)
	}
}

func TestRoutesPreviewPerRoute(t *testing.T) {
	xrYAML := routesXR("    - {name: web, parentRefs: [{name: public, namespace: infra}], hostnames: [www.example.com]}\n    - {name: db, kind: TCPRoute, parentRefs: [{name: internal, namespace: infra}], port: 5432}", `    steps: [{weight: 0, approval: true}, {weight: 100}]
    preview: {hostnames: [preview.example.com]}
status:
  rollout: {phase: Paused, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 0, primaryWeight: 100}`)
	req, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("unexpected Fatal: %s", msg)
	}
	keys := make([]string, 0, len(rsp.GetDesired().GetResources()))
	for k := range rsp.GetDesired().GetResources() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"route-httproute-web", "route-httproute-web-preview", "route-tcproute-db", "service-canary", "service-primary"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("the HTTPRoute gets its preview route, the TCPRoute (no hostnames) none: -want, +got:\n%s", diff)
	}
	preview := rsp.GetDesired().GetResources()["route-httproute-web-preview"].GetResource().AsMap()
	meta, _ := preview["metadata"].(map[string]any)
	if meta["name"] != "podinfo-web-preview" {
		t.Errorf("the preview route is named %v, want podinfo-web-preview", meta["name"])
	}
	assertXRDAccepts(t, req, rsp)
}

func TestRoutesGrantsPerRoute(t *testing.T) {
	xrYAML := namespacedXR(`
  port: 9898
  routes:
` + webAndGRPC + `
  primary: {backendRef: {name: podinfo, namespace: apps, port: 9898}}
  canary: {backendRef: {name: podinfo-canary, namespace: apps, port: 9898}, revision: v2}
  traffic: {weight: 10}`)
	cluster := strings.Replace(xrYAML, "kind: CanaryRoute\nmetadata: {name: podinfo, namespace: test}\nspec:", "kind: XCanaryRoute\nmetadata: {name: podinfo}\nspec:\n  namespace: test", 1)
	_, rsp := runFunction(t, cluster, allowTest+"allowedBackendNamespaces: [apps]\n", nil, nil)
	if msg := fatalOf(rsp); msg != "" {
		t.Fatalf("unexpected Fatal: %s", msg)
	}
	got := map[string][]string{}
	for name, r := range rsp.GetDesired().GetResources() {
		if strings.HasPrefix(name, "referencegrant-") {
			got[name] = grantSummary(r.GetResource().AsMap())
		}
	}
	want := map[string][]string{
		"referencegrant-apps.web":  {"from HTTPRoute test", "to Service podinfo", "to Service podinfo-canary"},
		"referencegrant-apps.grpc": {"from GRPCRoute test", "to Service podinfo", "to Service podinfo-canary"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("each route has its own grant in the backends' namespace: -want, +got:\n%s", diff)
	}
	weights := routeWeightsByKey(rsp)
	if diff := cmp.Diff([][]string{{"Service/apps/podinfo:9999=90", "Service/apps/podinfo-canary:9999=10"}}, weights["route-grpcroute-grpc"]); diff != "" {
		t.Errorf("the GRPCRoute's port replaces the backendRefs' own: -want, +got:\n%s", diff)
	}
}

func TestRoutesRefusedWithTheirField(t *testing.T) {
	web := "    - {name: web, parentRefs: [{name: public, namespace: infra}]}"
	cases := map[string]struct {
		xr    string
		field string
	}{
		"BothForms":        {strings.Replace(routesXR(web, "    weight: 10"), "  port: 9898\n", "  port: 9898\n  parentRefs: [{name: gateway}]\n", 1), "spec.routes"},
		"KindBesideRoutes": {strings.Replace(routesXR(web, "    weight: 10"), "  port: 9898\n", "  port: 9898\n  kind: GRPCRoute\n", 1), "spec.routes"},
		"SameNameTwice":    {routesXR(web+"\n"+web, "    weight: 10"), "spec.routes[1].name"},
		"NamedPreview":     {routesXR("    - {name: preview}", "    weight: 10"), "spec.routes[0].name"},
		"EndsInPreview":    {routesXR("    - {name: web-preview}", "    weight: 10"), "spec.routes[0].name"},
		"NotALabel":        {routesXR("    - {name: Web.1}", "    weight: 10"), "spec.routes[0].name"},
		"NineRoutes":       {routesXR(strings.Repeat(web+"\n", 8)+"    - {name: ninth}", "    weight: 10"), "spec.routes"},
		"SecondRouteRule":  {routesXR(web+"\n    - {name: api, rules: [{matches: [{path: {type: Bogus, value: /}}]}]}", "    weight: 10"), "spec.routes[1].rules[0].matches[0].path.type"},
		"TLSWithoutHosts":  {routesXR(web+"\n    - {name: tls, kind: TLSRoute}", "    weight: 10"), "spec.routes[1].hostnames"},
		"BadRoutePort":     {routesXR("    - {name: web, port: 70000}", "    weight: 10"), "spec.routes[0].port"},
		"GRPCMatchOnPath":  {routesXR(webAndGRPC, "    weight: 10\n    matches: [{path: {type: PathPrefix, value: /beta}}]"), "spec.traffic.matches[0]"},
		"PreviewOnTCPOnly": {routesXR("    - {name: db, kind: TCPRoute, port: 5432}", "    steps: [{weight: 0, approval: true}, {weight: 100}]\n    preview: {hostnames: [preview.example.com]}"), "spec.traffic.preview"},
		"PreviewIsARouteHost": {
			routesXR("    - {name: web, hostnames: [www.example.com]}", "    steps: [{weight: 0, approval: true}, {weight: 100}]\n    preview: {hostnames: [www.example.com]}"),
			"spec.routes[0].hostnames[0]",
		},
		"NameTooLong": {strings.Replace(routesXR("    - {name: "+strings.Repeat("a", 63)+"}", "    weight: 10"), "  port: 9898\n", "  port: 9898\n  routeName: "+strings.Repeat("r", 190)+"\n", 1), "spec.routes[0].name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := runFunction(t, tc.xr, emptyInput+"defaultParentRefs: [{name: gateway, namespace: infra}]\n", nil, nil)
			if msg := fatalOf(rsp); !strings.Contains(msg, tc.field) {
				t.Errorf("want a Fatal naming %s, got %q", tc.field, msg)
			}
		})
	}
}
