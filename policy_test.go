package main

// The Input's policy: where a CanaryRoute may route, which backends it may
// reach (namespaces, kinds, host names, mirrors included) and the grants it
// composes for them; and the takeover rule: never compose over an object
// another owner manages. Rules of their own pass the same policy
// (rules_test.go).

import (
	"strings"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	mirrorTo := func(ref string) string {
		return flaggerWith("  traffic:", `  rules:
    - filters:
        - type: RequestMirror
          requestMirror: {backendRef: `+ref+`}
  traffic:`)
	}
	testViews(t, map[string]viewCase{
		"CanaryNamespaceNotAllowed": {
			reason: "Without the canary's namespace in allowedBackendNamespaces there is no grant, the canary is held at 0 (Failed) and a Warning names the reference.",
			args:   runArgs{xr: flaggerXR, input: allowTest},
			want: flaggerView(withoutGrant, func(v *view) {
				v.Results = []string{
					`WARNING NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`,
					`WARNING RolloutFailed: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`,
				}
				v.Conditions[1] = `ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Service monitoring/canary-proxy:3456 is refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
				v.Conditions[2] = `RolloutHealthy=False NotAllowedByPolicy: canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
				v.Weights = [][]string{{"Service/podinfo-primary:9898=100", "Service/monitoring/canary-proxy:3456=0"}}
				v.Rollout["phase"], v.Rollout["reason"], v.Rollout["canaryWeight"], v.Rollout["primaryWeight"] = "Failed", "NotAllowedByPolicy", float64(0), float64(100)
				v.Rollout["message"] = `canary refused: namespace "monitoring" is not in the Input's allowedBackendNamespaces`
			}),
		},
		"NamespacedXRCannotComposeGrant": {
			reason: "A namespaced XR composes only into its namespace: no grant, a Warning and GrantNotComposable naming the grant to create; the canary keeps its weight.",
			args: runArgs{input: allowMonitoring, xr: namespacedXR(`
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}}
  traffic: {weight: 20}
`)},
			want: view{
				Results: []string{"WARNING GrantNotComposable: a namespaced CanaryRoute cannot compose into another namespace; the platform team must create ReferenceGrant httproute.podinfo.test in namespace monitoring from HTTPRoute in namespace test to Service canary-proxy"},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=False GrantNotComposable: a namespaced CanaryRoute cannot compose into another namespace; the platform team must create ReferenceGrant httproute.podinfo.test in namespace monitoring from HTTPRoute in namespace test to Service canary-proxy",
					"RolloutHealthy=True Stable: Stable: canary 20%, primary 80%",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo:9898=80", "Service/monitoring/canary-proxy:3456=20"}},
				Rollout: map[string]any{
					"phase": "Stable", "reason": "Manual", "canaryWeight": float64(20), "primaryWeight": float64(80),
					"canaryDigest": "set", "canaryBackends": canaryProxyBackends,
				},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		"SkipGrants": {
			reason: "referenceGrants: Skip composes no grant and warns of none.",
			args:   runArgs{xr: strings.Replace(flaggerXR, "  traffic:", "  referenceGrants: Skip\n  traffic:", 1), input: allowMonitoring},
			want: flaggerView(withoutGrant, func(v *view) {
				v.Conditions[1] = "ReferenceGrantsReady=True Skipped: spec.referenceGrants is Skip: grants are managed outside this CanaryRoute"
			}),
		},
		"ExternalNameNeedsInput": {
			reason: "An externalName side is refused unless the Input sets allowExternalNames.",
			args:   runArgs{input: allowTest, xr: strings.Replace(flaggerXR, "backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "externalName: canary.example.net", 1)},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"},
				TTL:     time.Minute,
			},
		},
		"RefusedPrimaryKindIsFatal": {
			reason: "A primary of a kind outside allowedBackendKinds is a Fatal naming the field: in the route's own namespace no gateway would refuse it.",
			args: runArgs{input: emptyInput + "allowedBackendKinds: [{group: \"\", kind: Service}]\n", xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {group: gateway.envoyproxy.io, kind: Backend, name: anywhere}}
  canary: {backendRef: {name: podinfo-canary, port: 80}}
`)},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.primary.backendRef.kind: Forbidden: backend kind Backend.gateway.envoyproxy.io is not in the function Input's allowedBackendKinds"},
				TTL:     time.Minute,
			},
		},
		"RefusedCanaryKindHeldAtZero": {
			reason: "A canary of a kind outside allowedBackendKinds is held at 0 (Failed), even in the route's namespace.",
			args: runArgs{input: emptyInput + "allowedBackendKinds: [{group: \"\", kind: Service}]\n", xr: namespacedXR(`
  parentRefs: [{name: gateway}]
  primary: {backendRef: {name: podinfo, port: 80}}
  canary: {backendRef: {group: gateway.envoyproxy.io, kind: Backend, name: anywhere}}
  traffic: {weight: 30}
`)},
			want: view{
				Results: []string{
					"WARNING NotAllowedByPolicy: the canary backend Backend.gateway.envoyproxy.io anywhere is refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"WARNING RolloutFailed: canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
				},
				Conditions: []string{
					"RouteAccepted=False Pending: the route has not been created yet",
					"ReferenceGrantsReady=False NotAllowedByPolicy: the canary backend Backend.gateway.envoyproxy.io anywhere is refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"RolloutHealthy=False NotAllowedByPolicy: canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
				},
				Resources: []string{"route-httproute"},
				Ready:     map[string]string{"route-httproute": "READY_FALSE"},
				Weights:   [][]string{{"Service/podinfo:80=100", "Backend/anywhere=0"}},
				Rollout: map[string]any{
					"phase": "Failed", "reason": "NotAllowedByPolicy", "canaryWeight": float64(0), "primaryWeight": float64(100),
					"message":      "canary refused: backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
					"canaryDigest": "set", "canaryBackends": []any{map[string]any{"group": "gateway.envoyproxy.io", "kind": "Backend", "namespace": "test", "name": "anywhere"}},
				},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo"},
			},
		},
		// Route namespaces.
		"RouteNamespaceNotAllowed": {
			reason: "A cluster-scoped CanaryRoute may only route in a namespace of allowedRouteNamespaces (default none): a Fatal names spec.namespace.",
			args:   runArgs{xr: flaggerXR, input: emptyInput + "allowedBackendNamespaces: [monitoring]\n"},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.namespace: Forbidden: namespace "test" is not in the function Input's allowedRouteNamespaces`},
				TTL:     time.Minute,
			},
		},
		"AnyRouteNamespace": {
			reason: `"*" allows every route namespace.`,
			args:   runArgs{xr: flaggerXR, input: emptyInput + "allowedRouteNamespaces: ['*']\nallowedBackendNamespaces: [monitoring]\n"},
			want:   flaggerView(),
		},

		// Every backend reference passes the policy.
		"MirrorToClusterLocalHostnameRefused": {
			reason: "A user's RequestMirror to an Istio Hostname that is cluster-local would reach another namespace around the policy: a Fatal names the filter.",
			args:   runArgs{input: allowMonitoring, xr: mirrorTo("{group: networking.istio.io, kind: Hostname, name: secrets.other.svc.cluster.local, port: 80}")},
			want: view{
				Results: []string{"FATAL: invalid CanaryRoute: spec.rules[0].filters[0].requestMirror.backendRef.name: Invalid value: \"secrets.other.svc.cluster.local\": must not be a cluster-local name (*.cluster.local): it would reach another namespace without a ReferenceGrant; use backendRef with a namespace instead"},
				TTL:     time.Minute,
			},
		},
		"MirrorKindRefused": {
			reason: "A mirror's kind passes allowedBackendKinds like a side's.",
			args:   runArgs{input: allowMonitoring + "allowedBackendKinds: [{group: '', kind: Service}]\n", xr: mirrorTo("{group: networking.istio.io, kind: Hostname, name: audit.example.com, port: 80}")},
			want: view{
				Results: []string{"FATAL: CanaryRoute not allowed by the function's Input: spec.rules[0].filters[0].requestMirror.backendRef: Forbidden: the mirror's backend Hostname.networking.istio.io audit.example.com:80 is refused: backend kind Hostname.networking.istio.io is not in the Input's allowedBackendKinds"},
				TTL:     time.Minute,
			},
		},
		"MirrorNamespaceRefused": {
			reason: "A mirror on a side to a namespace outside allowedBackendNamespaces is a Fatal naming the side's filter.",
			args: runArgs{input: allowMonitoring, xr: flaggerWith("          add: [{name: X-Route, value: primary}]", `          add: [{name: X-Route, value: primary}]
      - type: RequestMirror
        requestMirror: {backendRef: {name: vault, namespace: secrets, port: 8200}}`)},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.primary.filters[1].requestMirror.backendRef: Forbidden: the mirror's backend Service secrets/vault:8200 is refused: namespace "secrets" is not in the Input's allowedBackendNamespaces`},
				TTL:     time.Minute,
			},
		},
		"MirrorNamespaceGranted": {
			reason: "A mirror to an allowed namespace gets its grant, like a side: the grant in monitoring names both the canary and the mirror target.",
			args:   runArgs{input: allowMonitoring, xr: mirrorTo("{name: audit, namespace: monitoring, port: 80}")},
			want: flaggerView(func(v *view) {
				v.Grants = map[string][]string{"monitoring": {"from HTTPRoute test", "to Service audit", "to Service canary-proxy"}}
			}),
		},

		"DeniedExternalName": {
			reason: "An ExternalName under one of the Input's deniedExternalNames is a Fatal naming the field, even where ExternalNames are allowed.",
			args: runArgs{
				input: allowMonitoring + "allowExternalNames: true\ndeniedExternalNames: [corp.internal]\n",
				xr:    flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: billing.corp.internal"),
			},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: host "billing.corp.internal" is covered by "corp.internal" in the function Input's deniedExternalNames`},
				TTL:     time.Minute,
			},
		},
		"MetadataHostnameRefused": {
			reason: "An Istio Hostname backend naming a cloud's metadata endpoint is refused like a cluster-local one.",
			args: runArgs{
				input: allowMonitoring,
				xr:    flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    backendRef: {group: networking.istio.io, kind: Hostname, name: metadata.google.internal, port: 80}"),
			},
			want: view{
				Results: []string{`FATAL: invalid CanaryRoute: spec.canary.backendRef.name: Invalid value: "metadata.google.internal": must not name a metadata or host endpoint (metadata.google.internal): it would reach the node's credentials or the machine the gateway runs on`},
				TTL:     time.Minute,
			},
		},
	})
}

func TestTakeover(t *testing.T) {
	testViews(t, map[string]viewCase{
		"TakeoverRefused": {
			reason: "An HTTPRoute of the same name that this XR did not compose (no crossplane.io/composite label) is never composed over: a Fatal names it.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-route-httproute": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {team: other}}}`},
			}},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: HTTPRoute test/podinfo exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},
		"TakeoverOfServiceAndGrantRefused": {
			reason: "The proxy Service and the ReferenceGrant are protected the same way; another XR's label is no better than none.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-service-primary":           {`{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test}}`},
				"existing-referencegrant-monitoring": {`{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring, labels: {crossplane.io/composite: other}}}`},
			}},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: " +
					"Service test/podinfo-primary exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over); " +
					"ReferenceGrant monitoring/httproute.podinfo.test exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL: time.Minute,
			},
		},
		"OwnObjectsComposed": {
			reason: "Objects labelled with this XR's name are its own: composed as usual; objects not found are created.",
			args: runArgs{xr: flaggerXR, input: allowMonitoring, required: map[string][]string{
				"existing-route-httproute":           {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {crossplane.io/composite: podinfo}}}`},
				"existing-service-primary":           {},
				"existing-referencegrant-monitoring": {},
			}},
			want: flaggerView(),
		},
		"OtherControllerRefused": {
			reason: "A label naming this XR is not enough when another object controls it (a namespaced and a cluster-scoped XR of the same name): the controller's UID must be this XR's.",
			args: runArgs{
				xr: strings.Replace(flaggerXR, "  name: podinfo\n", "  name: podinfo\n  uid: 0000-aaaa\n", 1), input: allowMonitoring,
				required: map[string][]string{
					"existing-route-httproute": {`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {crossplane.io/composite: podinfo}, ownerReferences: [{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: podinfo, uid: 1111-bbbb, controller: true}]}}`},
				},
			},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: HTTPRoute test/podinfo exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},

		"BackendTLSPolicyOfAnotherOwner": {
			reason: "A BackendTLSPolicy of another owner with the proxy Service's name is never composed over.",
			args: runArgs{
				xr:    featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""),
				input: allowTest,
				required: map[string][]string{"existing-backendtlspolicy-primary": {
					`{apiVersion: gateway.networking.k8s.io/v1, kind: BackendTLSPolicy, metadata: {name: podinfo-primary, namespace: test, labels: {team: other}}, spec: {targetRefs: [{group: "", kind: Service, name: podinfo-primary}], validation: {hostname: other.example.com, wellKnownCACertificates: System}}}`,
				}},
			},
			want: view{
				Results: []string{"FATAL: cannot compose over objects that other owners manage: BackendTLSPolicy test/podinfo-primary exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"},
				TTL:     time.Minute,
			},
		},
	})
}
