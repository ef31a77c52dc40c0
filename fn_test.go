package main

// The function's behaviour on one run: what it composes, what it says, what
// it asks Crossplane for, and that the same request always gets the same
// answer. The subjects with more to them have files of their own.

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

func TestRunFunction(t *testing.T) {
	testViews(t, map[string]viewCase{
		"ObservedResourcesAreReady": {
			reason: "A Service and a grant are ready once they exist; the route once every parent accepted it with its references resolved, at its current generation.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-httproute":           acceptedRoute(3, 3),
				"service-primary":           `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test}}`,
				"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: podinfo.test, namespace: monitoring}}`,
			}},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=True Accepted: every parent accepted the route and resolved its references"
				v.Ready = map[string]string{"referencegrant-monitoring": "READY_TRUE", "route-httproute": "READY_TRUE", "service-primary": "READY_TRUE"}
			}),
		},
		"StaleAcceptanceIsNotReady": {
			reason: "A parent's verdict on an older generation of the route says nothing about the current one.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-httproute": acceptedRoute(4, 3),
			}},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=False Stale: istio-ingress/gateway has not accepted the route (Stale): Accepted was reported for generation 3, the route is at generation 4"
			}),
		},
		"RouteReadyOnceItExists": {
			reason: "With requireAcceptedRoute false the route is ready once it exists, even if no gateway reports on it.",
			args: runArgs{
				input: allowMonitoring, xr: flaggerWith("    weight: 20", "    weight: 20\n    requireAcceptedRoute: false"),
				observed: map[string]string{"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`},
			},
			want: flaggerView(func(v *view) {
				v.Conditions[0] = "RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet"
				v.Ready["route-httproute"] = "READY_TRUE"
			}),
		},
		"KindChangeDropsOldRoute": {
			reason: "The route's kind is in its resource name: after a change of kind the old route is not desired any more, so Crossplane deletes it.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, observed: map[string]string{
				"route-grpcroute": `{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: podinfo, namespace: test}}`,
			}},
			want: flaggerView(),
		},
		"SameBackendOnce": {
			reason: "When primary and canary resolve to one backend (a promotion), the rule carries it once, at 100.",
			args: runArgs{input: emptyInput, xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v2}}
  canary: {backendRef: {name: podinfo-v2, port: 9898}}
  traffic: {weight: 40}
`)},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
					"RolloutHealthy=True Stable: Stable: canary 40%, primary 60%",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-v2:9898=100"}},
				// One backend is the primary: no canary backend is recorded,
				// so an emergency abort never zeroes the only backend.
				Rollout:      map[string]any{"phase": "Stable", "reason": "Manual", "canaryWeight": float64(40), "primaryWeight": float64(60), "canaryDigest": "set"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"GatesAreRequired": {
			reason: "Each gate's object is required from Crossplane by name, in the route namespace only; the first run, without them, holds the rollout.",
			args: runArgs{input: allowMonitoring, xr: strings.Replace(strings.Replace(flaggerXR, "weight: 20", `steps: [{weight: 10, pause: 1m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]`, 1),
				"namespace: monitoring, port: 3456}", "namespace: monitoring, port: 3456}\n    revision: v2", 1)},
			want: view{
				Results: []string{"NORMAL RolloutStarted: rollout of revision v2 started at step 0 (10%)"},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Progressing: holding step 0 (10%): the route has not been created yet",
				},
				Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
				Ready:     map[string]string{"referencegrant-monitoring": "READY_FALSE", "route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=90", "Service/monitoring/canary-proxy:3456=10"}},
				Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-proxy"}},
				Rollout: map[string]any{
					"phase": "Progressing", "reason": "RolloutStarted", "revision": "v2", "step": float64(0), "canaryWeight": float64(10), "primaryWeight": float64(90),
					"stepStartedAt": "2026-12-02T10:07:00Z", "nextStepAt": "2026-12-02T10:08:00Z",
					"message":      "holding step 0 (10%): the route has not been created yet",
					"canaryDigest": "set", "canaryBackends": canaryProxyBackends,
				},
				TTL: 30 * time.Second,
				Requirements: []string{
					"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
					"gate-0: apps/v1 Deployment test/podinfo-canary",
				},
			},
		},
		"BadInputIsFatal": {
			reason: "An invalid Input is a Fatal result naming the Input's field.",
			args:   runArgs{xr: flaggerXR, input: allowMonitoring + "referenceGrantVersion: v2\n"},
			want:   fatalView(`invalid function Input: referenceGrantVersion: Unsupported value: "v2": supported values: "v1beta1", "v1"`),
		},
		"MissingPortIsFatal": {
			reason: "A Service backend needs a port: with neither the reference's nor spec.port the Fatal names the field (the CRD's 'Must have port for Service reference').",
			args: runArgs{input: emptyInput, xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary, port: 80}}
`)},
			want: fatalView("invalid CanaryRoute: spec.primary.backendRef.port: Required value: a Service backend needs a port: set it here or set spec.port"),
		},
		"DeadlineHonoured": {
			reason: "A run whose deadline has passed stops and says so, instead of composing for a caller that gave up.",
			args: runArgs{input: allowMonitoring, xr: flaggerXR, ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			}},
			want: fatalView("the run ran out of time: context canceled"),
		},
	})
}

// TestRunFunctionResponse compares whole responses, for the runs where every
// part of the answer is the point: what Crossplane applies, the XR's status,
// the conditions, the requirements and the TTL.
func TestRunFunctionResponse(t *testing.T) {
	conditions := `
status:
  conditions:
    - {type: RouteAccepted, status: "True", reason: Accepted, message: "every parent accepted the route and resolved its references"}
    - {type: Synced, status: "True", reason: ReconcileSuccess}
`
	cases := map[string]struct {
		reason string
		args   runArgs
		want   string
	}{
		"FlaggerScenario": {
			reason: "A canary behind a proxy in another namespace gets 20% through the HTTPRoute (the primary with its own header filter), a ReferenceGrant in its namespace names exactly the canary proxy, the primary gets a proxy Service; nothing exists yet, so nothing is ready; every object to compose is required back by name.",
			args:   runArgs{xr: flaggerXR, input: allowMonitoring},
			want: `
meta: {ttl: 60s}
desired:
  composite:
    resource:
      status:
        rollout:
          phase: Stable
          reason: Manual
          canaryWeight: 20
          primaryWeight: 80
          canaryDigest: v2-0c9b3348d78394dd
          canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
        route:
          kind: HTTPRoute
          name: podinfo
          namespace: test
          parents: [{name: gateway, namespace: istio-ingress, accepted: false, resolvedRefs: false, reason: Pending}]
  resources:
    route-httproute:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1
        kind: HTTPRoute
        metadata: {name: podinfo, namespace: test}
        spec:
          hostnames: [www.example.com]
          parentRefs: [{name: gateway, namespace: istio-ingress}]
          rules:
            - matches: [{path: {type: PathPrefix, value: /}}]
              backendRefs:
                - group: ""
                  kind: Service
                  name: podinfo-primary
                  port: 9898
                  weight: 80
                  filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-Route, value: primary}]}}]
                - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}
    referencegrant-monitoring:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1beta1
        kind: ReferenceGrant
        metadata: {name: httproute.podinfo.test, namespace: monitoring}
        spec:
          from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}]
          to: [{group: "", kind: Service, name: canary-proxy}]
    service-primary:
      ready: READY_FALSE
      resource:
        apiVersion: v1
        kind: Service
        metadata: {name: podinfo-primary, namespace: test}
        spec:
          type: ClusterIP
          selector: {app: podinfo}
          ports: [{name: http, port: 9898, protocol: TCP, targetPort: 9898}]
conditions:
  - {type: RouteAccepted, status: STATUS_CONDITION_FALSE, reason: Pending, message: the route has not been created yet, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: "ReferenceGrants composed in namespaces: monitoring", target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_TRUE, reason: Composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: RolloutHealthy, status: STATUS_CONDITION_TRUE, reason: Stable, message: "Stable: canary 20%, primary 80%", target: TARGET_COMPOSITE_AND_CLAIM}
requirements:
  resources:
    existing-route-httproute: {apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, matchName: podinfo, namespace: test}
    existing-service-primary: {apiVersion: v1, kind: Service, matchName: podinfo-primary, namespace: test}
    existing-referencegrant-monitoring: {apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, matchName: httproute.podinfo.test, namespace: monitoring}
`,
		},
		"BadSpecIsFatal": {
			reason: "A spec the function refuses is a Fatal naming the field: nothing to apply, so the cluster keeps its last good route, and the function's own conditions are re-sent as the XR has them (Crossplane's are not the function's to send).",
			args:   runArgs{xr: flaggerWith("weight: 20", "weight: 120") + conditions, input: allowMonitoring},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent from 0 to 100 with at most two decimals"
conditions:
  - {type: RouteAccepted, status: STATUS_CONDITION_TRUE, reason: Accepted, message: every parent accepted the route and resolved its references, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: Composed, status: STATUS_CONDITION_FALSE, reason: Refused, message: "invalid CanaryRoute: spec.traffic.weight: Invalid value: 120: must be a percent from 0 to 100 with at most two decimals", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := testRequest(t, tc.args.xr, tc.args.input, nil)
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(withRequirementsInContext(t, responseYAML(t, tc.want)), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// TestDeterministic: the same request gets the same response, byte for
// byte, run after run, for the paths that iterate over maps: composing,
// the rescue of an abort (one route or two, a record of many forged
// entries), and a hold that drops a revoked grant.
func TestDeterministic(t *testing.T) {
	route := ownRoute("crossplane.io/composite: podinfo", 80, 20)
	rescued := func(status string, routes map[string]string) *fnv1.RunFunctionRequest {
		observed := map[string]string{"service-primary": observedPrimary, "referencegrant-monitoring": observedGrant}
		maps.Copy(observed, routes)
		return testRequest(t, abortedFlagger+status, allowMonitoring, observed)
	}
	reqs := map[string]*fnv1.RunFunctionRequest{
		"Flagger": testRequest(t, flaggerXR, allowMonitoring, nil),
		"Rescue":  rescued(recordedCanary, map[string]string{"route-httproute": route}),
		"RescueTwoRoutes": rescued(recordedCanary, map[string]string{
			"route-httproute": route,
			"route-grpcroute": strings.Replace(strings.Replace(route, "HTTPRoute", "GRPCRoute", 1), "matches: [{path: {type: PathPrefix, value: /}}]", "matches: [{method: {service: a}}]", 1),
		}),
		"RescueForgedMany": rescued(forgedCanaryBackends(
			`{group: "", kind: Service, namespace: monitoring, name: canary-proxy}`, `{group: "", kind: Service, namespace: test, name: podinfo-primary}`,
			`{kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`, `{}`), map[string]string{"route-httproute": route}),
		"Hold": testRequest(t, pausedFlagger("{name: canary-v3, port: 3456}", ""), allowTest, map[string]string{
			"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 50, 50),
			"service-primary":           observedPrimary,
			"referencegrant-monitoring": observedGrant,
			"referencegrant-keda":       strings.Replace(observedGrant, "namespace: monitoring", "namespace: keda", 1),
		}),
	}
	f := functionAt(testNow)
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			var first []byte
			for i := range 50 {
				rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
				if err != nil {
					t.Fatal(err)
				}
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = b
					continue
				}
				if !bytes.Equal(b, first) {
					t.Fatalf("run %d differs from run 0", i)
				}
			}
		})
	}
}

// TestParsedInputsShared runs every example, and every way its requests
// can be refused, three times: the first run parses the spec and the Input,
// the later ones find them parsed (internal/memo). A run that modified what
// it found would make a later response differ from the first.
func TestParsedInputsShared(t *testing.T) {
	reqs := exampleRequests(t)
	for name, req := range invalidRequests(t, reqs) {
		reqs[name] = req
	}
	for name, req := range reqs {
		first := runInProcess(t, req)
		for i := 2; i <= 3; i++ {
			if diff := cmp.Diff(first, runInProcess(t, req), protocmp.Transform()); diff != "" {
				t.Errorf("%s: run %d differs from the first (-first +run):\n%s", name, i, diff)
			}
		}
	}
}
