package main

// Paused means nothing moves, in every case: a new revision or a changed
// canary while paused holds the composition of the previous run (a hold).
// A hold never re-opens what the policy has closed since: it re-emits
// neither a grant nor a backend reference that the current Input no longer
// allows, and the status says what the route carries. internal/compose
// tests what a hold re-emits object by object; these run the function.

import (
	"strings"
	"testing"
	"time"
)

func TestHold(t *testing.T) {
	// pausedXR is a cluster-scoped CanaryRoute routing in test, paused at
	// step 1 of revision v2 (status as recorded, canary the backend given),
	// its spec the primary and canary given (YAML at two spaces), on a kind.
	pausedXR := func(kind, primary, canary, recorded string) string {
		hostnames := ""
		if kind == "TLSRoute" {
			hostnames = "  hostnames: [www.example.com]\n"
		}
		return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo}
spec:
  namespace: test
  kind: ` + kind + `
` + hostnames + `  parentRefs: [{name: gateway}]
  port: 9898
  ` + primary + `
  ` + canary + `
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
` + pausedStatus(recorded)
	}
	progressive := strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}\n    revision: v2"),
		"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1)
	manual := strings.Replace(flaggerXR, "    weight: 20", "    weight: 20\n    paused: true", 1)
	at5050 := map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)}
	const canaryV2 = `{group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9898}`
	const proxyCanary = `{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`
	// heldRoute is the previous route: the rules given (YAML at the rules'
	// indentation, "" for none), then the weighted rule at 50/50 between
	// podinfo and podinfo-v2.
	heldRoute := func(rules string) map[string]string {
		return map[string]string{"route-httproute": `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway}]
  rules:` + rules + `
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}]
`}
	}
	withAPIRule := func(x string) string {
		return strings.Replace(x, "  port: 9898\n", "  port: 9898\n  rules:\n    - name: api\n", 1)
	}
	servicesOnly := allowTest + "allowedBackendKinds: [{group: \"\", kind: Service}]\n"
	testViews(t, map[string]viewCase{
		"PausedNewRevisionHoldsPreviousComposition": {
			reason: "A new revision while paused keeps the previous composition as it is: the route's weights and the canary it had; the status keeps the previous revision for the restart.",
			args: runArgs{
				input: allowMonitoring,
				xr: strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {name: canary-v3, namespace: monitoring, port: 3456}\n    revision: v3"),
					"    weight: 20", "    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]\n    paused: true", 1) + `
status:
  rollout:
    phase: Progressing
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T10:00:00Z"
    canaryWeight: 50
    primaryWeight: 50
    canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
`,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
			},
			want: view{
				Results: []string{"NORMAL RolloutPaused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/monitoring/canary-proxy:3456=1"}, {"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=50"}},
				Rollout:      pausedToCanaryProxy(),
				TTL:          time.Minute,
				Requirements: monitoringRequirements(),
			},
		},

		"PausedHoldReopensNothing": {
			reason: "A paused rollout holding its previous route for a new revision re-emits neither the grant nor the weight of a canary whose namespace the Input has since revoked: the grant is not composed (Crossplane deletes it), the old canary goes to 0% with its A/B rule and mirror, and the status says what the route carries.",
			args: runArgs{
				input: allowTest,
				xr:    pausedFlagger("{name: canary-v3, port: 3456}", ""),
				observed: map[string]string{
					"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 50, 50),
					"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`,
				},
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
					"RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=0"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(0), "primaryWeight": float64(100), "canaryBackends": canaryProxyBackends,
					"message": "paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy",
				},
				TTL: time.Minute,
				Requirements: []string{
					"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
					"existing-service-primary: v1 Service test/podinfo-primary",
				},
			},
		},
		"PausedNewRevisionWithoutRoute": {
			reason: "Paused with a new revision on a new backend while the route is not observed (deleted, or spec.kind changed in the same edit): nothing composed can be held, so the new, untested canary is composed at 0% without canary-only rules, never at the frozen weight.",
			args: runArgs{
				input: allowMonitoring,
				xr:    pausedFlagger("{name: canary-v3, namespace: monitoring, port: 3456}", "\n    matches: [{headers: [{name: X-Beta, value: 'yes'}]}]"),
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused with the canary at 0%: the route was not observed, so nothing composed can be held; revision v3 starts at step 0 when paused is cleared",
				},
				Resources: []string{"referencegrant-monitoring", "route-httproute", "service-primary"},
				Ready:     map[string]string{"referencegrant-monitoring": "READY_FALSE", "route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-v3:3456=0"}},
				Grants:    map[string][]string{"monitoring": {"from HTTPRoute test", "to Service canary-v3"}},
				Rollout: map[string]any{
					"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
					"canaryWeight": float64(0), "primaryWeight": float64(100),
					"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "namespace": "monitoring", "name": "canary-v3", "port": float64(3456)}},
					"message":        "paused with the canary at 0%: the route was not observed, so nothing composed can be held; revision v3 starts at step 0 when paused is cleared",
				},
				TTL:          time.Minute,
				Requirements: monitoringRequirements(),
			},
		},
		"HeldRouteReadyOnceItExists": {
			reason: "A held route honours requireAcceptedRoute: false like any other: ready once it exists.",
			args: runArgs{
				input:    allowMonitoring,
				xr:       pausedFlagger("{name: canary-v3, namespace: monitoring, port: 3456}", "\n    requireAcceptedRoute: false"),
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 50, 50)},
			},
			want: view{
				Conditions: []string{
					"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet",
					"ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring",
					"RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
				},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_TRUE"},
				Weights:      [][]string{{"Service/monitoring/canary-proxy:3456=1"}, {"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=50"}},
				Rollout:      pausedToCanaryProxy(),
				TTL:          time.Minute,
				Requirements: monitoringRequirements(),
			},
		},

		"HeldPrimaryOfARevokedNamespace": {
			reason: "Attack: paused at 50% with revision v2, the platform moves spec.primary to a new backend and starts revision v3 in one edit (a hold), while the Input no longer allows the old primary's namespace. Zeroing the old primary would give the old canary every request: the primary stays, as it would in any run (without its grant, the gateway itself refuses it), and the canary keeps the 50% the status reports.",
			args: runArgs{
				xr:    pausedXR("HTTPRoute", "primary: {backendRef: {name: podinfo-v2}}", "canary: {backendRef: {name: canary-proxy-v3, namespace: monitoring, port: 3456}, revision: v3}", proxyCanary),
				input: allowMonitoring,
				observed: map[string]string{"route-httproute": routeAt(
					`{group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 50}`,
					`{group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 50}`)},
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: monitoring", "RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/legacy/podinfo-v1:9898=50", "Service/monitoring/canary-proxy:3456=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test", "existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"HeldPrimaryOfARevokedKind": {
			reason: "Attack, the natural path to the same break: the platform stops allowing ServiceImport backends, the tenant moves the primary from a ServiceImport to a Service while a new revision is pending (a hold). The old ServiceImport primary stays, so the old canary never gets every request.",
			args: runArgs{
				xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v1}}
  canary: {backendRef: {name: podinfo-v3}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
`) + pausedStatus(canaryV2),
				input: emptyInput + "allowedBackendKinds: [{group: \"\", kind: Service}]\n",
				observed: map[string]string{"route-httproute": routeAt(
					`{group: multicluster.x-k8s.io, kind: ServiceImport, name: podinfo, port: 9898, weight: 50}`,
					`{group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}`)},
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"ServiceImport/podinfo:9898=50", "Service/podinfo-v2:9898=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-v2", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"HeldExternalNameNowDenied": {
			reason: "Attack: paused at 50% with a canary ExternalName proxy Service to evil.example.com; the Input now denies evil.example.com, and the canary is changed to another host (a hold). The hold must not re-emit the ExternalName Service to the denied host with traffic on it.",
			args: runArgs{
				xr:       pausedXR("HTTPRoute", "primary: {service: {selector: {app: podinfo}}}", "canary: {externalName: good.example.net, revision: v2}", `{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`),
				input:    allowTest + "allowExternalNames: true\ndeniedExternalNames: [evil.example.com]\n",
				observed: heldExternalName,
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service test/podinfo-canary"},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=50", "Service/podinfo-canary:9898=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "paused with the canary at 0%: the function's Input no longer allows Service test/podinfo-canary", "phase": "Paused", "primaryWeight": float64(100), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-canary: v1 Service test/podinfo-canary", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"HeldExternalNamesRevoked": {
			reason: "Attack: the same after the Input stopped allowing ExternalNames at all, the canary moved to a Service of revision v3.",
			args: runArgs{
				xr:       pausedXR("HTTPRoute", "primary: {service: {selector: {app: podinfo}}}", "canary: {backendRef: {name: podinfo-v3, port: 9898}, revision: v3}", `{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`),
				input:    allowTest,
				observed: heldExternalName,
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service test/podinfo-canary"},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_TRUE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=50", "Service/podinfo-canary:9898=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "paused with the canary at 0%: the function's Input no longer allows Service test/podinfo-canary", "phase": "Paused", "primaryWeight": float64(100), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"HeldHostnameNowDenied": {
			reason: "Attack: the same hold with an Istio Hostname canary whose host the Input now denies: the hold re-checks host names too, not only kinds and namespaces.",
			args: runArgs{
				xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 443
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {group: networking.istio.io, kind: Hostname, name: api.good.example.net}, revision: v3}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    paused: true
`) + pausedStatus(`{group: networking.istio.io, kind: Hostname, namespace: test, name: api.evil.example.com, port: 443}`),
				input: emptyInput + "deniedExternalNames: [evil.example.com]\n",
				observed: map[string]string{"route-httproute": routeAt(
					`{group: "", kind: Service, name: podinfo, port: 443, weight: 50}`,
					`{group: networking.istio.io, kind: Hostname, name: api.evil.example.com, port: 443, weight: 50}`)},
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Hostname.networking.istio.io test/api.evil.example.com"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo:443=50", "Hostname/api.evil.example.com:443=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "networking.istio.io", "kind": "Hostname", "name": "api.evil.example.com", "namespace": "test", "port": float64(443)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "paused with the canary at 0%: the function's Input no longer allows Hostname.networking.istio.io test/api.evil.example.com", "phase": "Paused", "primaryWeight": float64(100), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"HeldTLSRouteV1Alpha2": {
			reason: "Paused with a new revision, the previous composition a TLSRoute v1alpha2 whose canary's namespace was revoked, with a v1 grant holding an allowed and a revoked entry: the grant in the revoked namespace goes, the revoked canary gets nothing, and the allowed grant keeps only its allowed entry.",
			args: runArgs{
				xr:       pausedXR("TLSRoute", "primary: {backendRef: {name: podinfo, namespace: keda}}", "canary: {backendRef: {name: canary-v3, namespace: keda}, revision: v3}", proxyCanary),
				input:    heldOtherKindsInput,
				observed: heldOtherKind("TLSRoute"),
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: keda", "RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy"},
				Resources:    []string{"referencegrant-keda", "route-tlsroute"},
				Ready:        map[string]string{"referencegrant-keda": "READY_TRUE", "route-tlsroute": "READY_FALSE"},
				Weights:      [][]string{{"Service/keda/podinfo:9898=50", "Service/monitoring/canary-proxy:3456=0"}},
				Grants:       map[string][]string{"keda": {"from TLSRoute test", "to Service podinfo"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy", "phase": "Paused", "primaryWeight": float64(100), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-referencegrant-keda: gateway.networking.k8s.io/v1beta1 ReferenceGrant keda/tlsroute.podinfo.test", "existing-route-tlsroute: gateway.networking.k8s.io/v1alpha2 TLSRoute test/podinfo"},
			},
		},
		"HeldTCPRouteV1Alpha2": {
			reason: "The same on a TCPRoute v1alpha2.",
			args: runArgs{
				xr:       pausedXR("TCPRoute", "primary: {backendRef: {name: podinfo, namespace: keda}}", "canary: {backendRef: {name: canary-v3, namespace: keda}, revision: v3}", proxyCanary),
				input:    heldOtherKindsInput,
				observed: heldOtherKind("TCPRoute"),
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: ReferenceGrants composed in namespaces: keda", "RolloutHealthy=True Paused: paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy"},
				Resources:    []string{"referencegrant-keda", "route-tcproute"},
				Ready:        map[string]string{"referencegrant-keda": "READY_TRUE", "route-tcproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/keda/podinfo:9898=50", "Service/monitoring/canary-proxy:3456=0"}},
				Grants:       map[string][]string{"keda": {"from TCPRoute test", "to Service podinfo"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": "paused with the canary at 0%: the function's Input no longer allows Service monitoring/canary-proxy", "phase": "Paused", "primaryWeight": float64(100), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-referencegrant-keda: gateway.networking.k8s.io/v1beta1 ReferenceGrant keda/tcproute.podinfo.test", "existing-route-tcproute: gateway.networking.k8s.io/v1alpha2 TCPRoute test/podinfo"},
			},
		},
		"PausedCanaryNamespaceRevoked": {
			reason: "Paused (no new revision) while the Input revokes the canary's namespace: the canary is refused as in any run, the rollout Failed with it at 0%, its A/B rule and mirror gone.",
			args:   runArgs{xr: progressive + pausedAtStep1, input: allowTest, observed: at5050},
			want: view{
				Results:      []string{`WARNING NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, `WARNING RolloutFailed: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`},
				Conditions:   []string{"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet", `ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, `RolloutHealthy=False NotAllowedByPolicy: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-proxy:3456=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": `canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, "phase": "Failed", "primaryWeight": float64(100), "reason": "NotAllowedByPolicy", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"PausedManualCanaryNamespaceRevoked": {
			reason: "The same in manual mode.",
			args:   runArgs{xr: manual + pausedAtStep1, input: allowTest, observed: at5050},
			want: view{
				Results:      []string{`WARNING NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, `WARNING RolloutFailed: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`},
				Conditions:   []string{"RouteAccepted=False Pending: istio-ingress/gateway has not accepted the route (Pending): the parent has not reported on the route yet", `ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, `RolloutHealthy=False NotAllowedByPolicy: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`},
				Resources:    []string{"route-httproute", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-proxy:3456=0"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryDigest": "set", "canaryWeight": float64(0), "message": `canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`, "phase": "Failed", "primaryWeight": float64(100), "reason": "NotAllowedByPolicy"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"PausedRouteNamespaceRevoked": {
			reason: "Paused while the Input revokes the route's own namespace: a Fatal naming spec.namespace; Crossplane applies nothing.",
			args:   runArgs{xr: progressive + pausedAtStep1, input: emptyInput + "allowedBackendNamespaces: [monitoring]\n", observed: at5050},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.namespace: Forbidden: namespace "test" is not in the function Input's allowedRouteNamespaces`},
				TTL:     time.Minute,
			},
		},
		"PausedAbortWithEverythingRevoked": {
			reason: "Paused and aborted under an Input that allows nothing: the spec cannot be composed, and the abort is rescued all the same, the canary at 0%.",
			args:   runArgs{xr: strings.Replace(progressive, "paused: true", "paused: true\n    abort: true", 1) + pausedAtStep1, input: emptyInput, observed: at5050},
			want: view{
				Results:    []string{`WARNING RolloutAborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: CanaryRoute not allowed by the function's Input: spec.namespace: Forbidden: namespace "test" is not in the function Input's allowedRouteNamespaces`},
				Conditions: []string{"RolloutHealthy=False Aborted: aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"},
				Resources:  []string{"route-httproute"},
				Ready:      map[string]string{"route-httproute": "READY_FALSE"},
				Weights:    [][]string{{"Service/podinfo-primary:9898=50", "Service/monitoring/canary-proxy:3456=0"}},
				Rollout:    map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "canary-proxy", "namespace": "monitoring", "port": float64(3456)}}, "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed", "phase": "Aborted", "primaryWeight": float64(100), "reason": "AbortRescued", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:        time.Minute,
			},
		},
		"PausedManualChangedCanary": {
			reason: "Attack: manual mode, paused at 50% with canary podinfo-canary; the canary is changed to podinfo-untested. Paused keeps the weight the previous run composed, and never gives the untested canary any traffic at once.",
			args: runArgs{
				xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-untested}}
  traffic: {weight: 50, paused: true}
`) + `
status:
  rollout:
    phase: Stable
    reason: Manual
    canaryWeight: 50
    primaryWeight: 50
    canaryDigest: ` + digestOf(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 50}
`)) + `
    canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}]
`,
				input: emptyInput,
				observed: map[string]string{"route-httproute": routeAt(
					`{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}`,
					`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`)},
			},
			want: view{
				Results:      []string{"NORMAL RolloutPaused: paused at 50%; the changed canary gets traffic.weight when paused is cleared"},
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused at 50%; the changed canary gets traffic.weight when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo:9898=50", "Service/podinfo-canary:9898=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at 50%; the changed canary gets traffic.weight when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},

		// Rules of their own under a hold: the platform stops allowing
		// Envoy Gateway Backends; the tenant drops the rule of its own
		// that used one. A rule of its own is no weighted rule, so the
		// Backend is no primary; a hold keeps the weights the previous run
		// composed.
		"HeldRuleOfItsOwnWithARevokedBackend": {
			reason: "The /assets rule, whose only backend is the Backend, goes; the weighted rule is held.",
			args: runArgs{
				xr:    withAPIRule(pausedXR("HTTPRoute", "primary: {backendRef: {name: podinfo}}", "canary: {backendRef: {name: podinfo-v3}, revision: v3}", canaryV2)),
				input: servicesOnly,
				observed: heldRoute(`
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]`),
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo:9898=50", "Service/podinfo-v2:9898=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-v2", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"HeldRuleOfItsOwnSplitWithTheCanary": {
			reason: "The /beta rule split its requests between the Backend and the canary: the Backend goes, the canary keeps /beta.",
			args: runArgs{
				xr:    withAPIRule(pausedXR("HTTPRoute", "primary: {backendRef: {name: podinfo}}", "canary: {backendRef: {name: podinfo-v3}, revision: v3}", canaryV2)),
				input: servicesOnly,
				observed: heldRoute(`
    - name: beta
      matches: [{path: {type: PathPrefix, value: /beta}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: beta-backend, weight: 1}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 1}]`),
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo-v2:9898=1"}, {"Service/podinfo:9898=50", "Service/podinfo-v2:9898=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-v2", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"HeldDrainedRuleOfItsOwn": {
			reason: "A drained rule of its own (every weight 0: the gateway answers 500 there) that the hold does not change stays drained.",
			args: runArgs{
				xr:    withAPIRule(pausedXR("HTTPRoute", "primary: {backendRef: {name: podinfo}}", "canary: {backendRef: {name: podinfo-v3}, revision: v3}", canaryV2)),
				input: servicesOnly,
				observed: heldRoute(`
    - name: drain
      matches: [{path: {type: PathPrefix, value: /drain}}]
      backendRefs: [{group: "", kind: Service, name: legacy, port: 80, weight: 0}]
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]`),
			},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: test/gateway has not accepted the route (Pending): the parent has not reported on the route yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Paused: paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/legacy:80=0"}, {"Service/podinfo:9898=50", "Service/podinfo-v2:9898=50"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-v2", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(50), "message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared", "phase": "Paused", "primaryWeight": float64(50), "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
	})
}

// pausedToCanaryProxy is status.rollout of the Flagger scenario paused at
// step 1 (50%) with revision v3 waiting, its canary the proxy Service in
// monitoring.
func pausedToCanaryProxy() map[string]any {
	return map[string]any{
		"phase": "Paused", "reason": "Paused", "revision": "v2", "step": float64(1), "stepStartedAt": "2026-12-02T10:00:00Z",
		"canaryWeight": float64(50), "primaryWeight": float64(50), "canaryBackends": canaryProxyBackends,
		"message": "paused at step 1 (50%); revision v3 starts at step 0 when paused is cleared",
	}
}

// monitoringRequirements are the takeover check's requirements of the
// Flagger scenario: the grant in monitoring, the route and the primary's
// proxy Service.
func monitoringRequirements() []string {
	return []string{
		"existing-referencegrant-monitoring: gateway.networking.k8s.io/v1beta1 ReferenceGrant monitoring/httproute.podinfo.test",
		"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo",
		"existing-service-primary: v1 Service test/podinfo-primary",
	}
}

// heldExternalName is a previous composition at 50/50 whose canary is an
// ExternalName proxy Service to evil.example.com.
var heldExternalName = map[string]string{
	"route-httproute": routeAt(
		`{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 50}`,
		`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 50}`),
	"service-primary": `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, labels: {crossplane.io/composite: podinfo}}, spec: {type: ClusterIP, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}}`,
	"service-canary":  `{apiVersion: v1, kind: Service, metadata: {name: podinfo-canary, namespace: test, labels: {crossplane.io/composite: podinfo}}, spec: {type: ExternalName, externalName: evil.example.com., ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}}`,
}

// heldOtherKindsInput allows the keda namespace and Services, and pins the
// TLSRoute and TCPRoute versions to v1alpha2.
const heldOtherKindsInput = allowTest + "allowedBackendNamespaces: [keda]\nallowedBackendKinds: [{group: \"\", kind: Service}]\ntcpRouteVersion: v1alpha2\ntlsRouteVersion: v1alpha2\n"

// heldOtherKind is a previous composition of a kind at v1alpha2, 50/50
// between podinfo in keda and the canary proxy in monitoring, with a v1
// grant in each namespace, keda's with an entry of another kind.
func heldOtherKind(kind string) map[string]string {
	hostnames := ""
	if kind == "TLSRoute" {
		hostnames = "  hostnames: [www.example.com]\n"
	}
	return map[string]string{
		"route-" + strings.ToLower(kind): `
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: ` + kind + `
metadata: {name: podinfo, namespace: test, generation: 2}
spec:
` + hostnames + `  parentRefs: [{name: gateway}]
  rules:
    - backendRefs:
        - {name: podinfo, namespace: keda, port: 9898, weight: 50}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 50}
`,
		"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/v1, kind: ReferenceGrant, metadata: {name: x, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: ` + kind + `, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`,
		"referencegrant-keda":       `{apiVersion: gateway.networking.k8s.io/v1, kind: ReferenceGrant, metadata: {name: x, namespace: keda}, spec: {from: [{group: gateway.networking.k8s.io, kind: ` + kind + `, namespace: test}], to: [{group: "", kind: Service, name: podinfo}, {group: example.com, kind: Other, name: o}]}}`,
	}
}

// digestOf is the canaryDigest that a run of a CanaryRoute records.
func digestOf(t *testing.T, xrYAML string) string {
	t.Helper()
	_, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
	d, _ := rolloutOf(rsp)["canaryDigest"].(string)
	if d == "" {
		t.Fatalf("setup: the run records no canaryDigest: %v", viewOf(t, rsp).Results)
	}
	return d
}
