package main

// Claims: a claim reference is proven, not believed. A claim that
// Crossplane bound to the XR lets the route (and its analysis) live in the
// claim's namespace; a claimRef written by hand proves nothing, and the XR
// is a cluster-scoped one like any under the Input's policy.

import (
	"strings"
	"testing"
	"time"
)

func TestClaims(t *testing.T) {
	good := claimObject("kube-system", "podinfo-x7k2p")
	refused := fatalView(`CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`)
	testViews(t, map[string]viewCase{
		// A claim reference is proven, not believed.
		"ForgedClaimRefRefused": {
			reason: "A cluster-scoped XR whose hand-written claimRef names kube-system, with no such claim referencing it, is a cluster-scoped XR like any: its namespace must be in allowedRouteNamespaces, or a Fatal names spec.claimRef.",
			args: runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{
				"claim": {},
			}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimOfAnotherXRRefused": {
			reason: "A claim that exists but is bound to another XR proves nothing for this one.",
			args: runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{
				"claim": {claimObject("kube-system", "podinfo-other")},
			}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimOfAnotherGroupNotAsked": {
			reason: "A claim is of its XR's own API group: a claimRef naming another group (a Secret in kube-system) is never asked of Crossplane, which would read it, and proves nothing.",
			args:   runArgs{xr: strings.Replace(claimedXR("kube-system"), "apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim", "apiVersion: v1, kind: Secret", 1), input: allowMonitoring},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no Secret kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ProvenClaimRoutesInItsNamespace": {
			reason: "A claim that Crossplane bound to this XR (its resourceRef names the XR) lets the route live in the claim's namespace without allowedRouteNamespaces; the claim is required back on every run.",
			args: runArgs{xr: claimedXR("team-a"), input: emptyInput, required: map[string][]string{
				"claim": {claimObject("team-a", "podinfo-x7k2p")},
			}},
			want: claimedView(),
		},
		"ClaimNotFetchedYet": {
			reason: "On the first call Crossplane has fetched nothing: the run asks for the claim, and its answer is never applied (the requirement sends Crossplane back for a second call), so it proceeds as if proven.",
			args:   runArgs{xr: claimedXR("team-a"), input: emptyInput},
			want:   claimedView(),
		},

		// Attacks: required answers of every shape, for a claimRef in
		// kube-system, which the Input does not allow.
		"ClaimOfAnotherKind": {
			reason: "Attack: an object of another kind named like the claim, bound to this XR, proves nothing.",
			args: runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"claim": {
				strings.Replace(good, "kind: CanaryRouteClaim", "kind: ConfigMap", 1),
			}}},
			want: refused,
		},
		"ClaimInAnotherNamespace": {
			reason: "Attack: a claim bound to this XR, but in another namespace than the claimRef's, proves nothing for kube-system.",
			args:   runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"claim": {claimObject("team-a", "podinfo-x7k2p")}}},
			want:   refused,
		},
		"ClaimBoundToAnotherXRKind": {
			reason: "Attack: a claim whose resourceRef names another kind of XR of the same name proves nothing.",
			args: runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"claim": {
				strings.Replace(good, "kind: XCanaryRoute", "kind: XOther", 1),
			}}},
			want: refused,
		},
		"ClaimResourceRefWithoutAPIVersion": {
			reason: "Attack: a resourceRef without its apiVersion proves nothing.",
			args: runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"claim": {
				strings.Replace(good, "apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute", "kind: XCanaryRoute", 1),
			}}},
			want: refused,
		},
		"ClaimRefWithoutKind": {
			reason: "Attack: a claimRef without a kind names no claim, whatever Crossplane answers.",
			args:   runArgs{xr: strings.Replace(claimedXR("kube-system"), "kind: CanaryRouteClaim, ", "", 1), input: allowMonitoring, required: map[string][]string{"claim": {good}}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no  kube-system/podinfo references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimRefWithoutName": {
			reason: "Attack: a claimRef without a name names no claim either.",
			args:   runArgs{xr: strings.Replace(claimedXR("kube-system"), "name: podinfo, ", "", 1), input: allowMonitoring, required: map[string][]string{"claim": {good}}},
			want: view{
				Results: []string{`FATAL: CanaryRoute not allowed by the function's Input: spec.claimRef: Forbidden: no CanaryRouteClaim kube-system/ references this CanaryRoute, so its namespace "kube-system" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute`},
				TTL:     time.Minute,
			},
		},
		"ClaimRefBesideSpecNamespace": {
			reason: "Attack: spec.namespace beside an unproven claimRef does not route there either.",
			args: runArgs{
				xr:       strings.Replace(claimedXR("kube-system"), "  port: 9898", "  namespace: kube-system\n  port: 9898", 1),
				input:    allowMonitoring,
				required: map[string][]string{"claim": {}},
			},
			want: refused,
		},
		"XRWithoutName": {
			reason: "Attack: an XR without a name, and a claim bound to an XR without one, prove nothing.",
			args: runArgs{
				xr:       strings.Replace(claimedXR("kube-system"), "metadata: {name: podinfo-x7k2p}", "metadata: {}", 1),
				input:    allowMonitoring,
				required: map[string][]string{"claim": {strings.Replace(good, "name: podinfo-x7k2p", `name: ""`, 1)}},
			},
			want: refused,
		},
		"OneOfTwoClaimsBound": {
			reason: "Of two claims answered, the one bound to this XR proves the claim: the route lives in kube-system.",
			args:   runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"claim": {claimObject("kube-system", "other"), good}}},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: the route has not been created yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Stable: Stable: canary 10%, primary 90%"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo:9898=90", "Service/podinfo-canary:9898=10"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "kube-system", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(10), "phase": "Stable", "primaryWeight": float64(90), "reason": "Manual"},
				TTL:          time.Minute,
				Requirements: []string{"claim: platform.example.org/v1alpha1 CanaryRouteClaim kube-system/podinfo", "existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute kube-system/podinfo"},
			},
		},
		"ClaimNotAnsweredOnALaterCall": {
			reason: "By design: a call whose claim requirement Crossplane has not answered (other requirements answered) proceeds as if proven, like the first call: its answer is never applied, since its requirements differ from the call before's.",
			args:   runArgs{xr: claimedXR("kube-system"), input: allowMonitoring, required: map[string][]string{"existing-route-httproute": {}}},
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: the route has not been created yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Stable: Stable: canary 10%, primary 90%"},
				Resources:    []string{"route-httproute"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo:9898=90", "Service/podinfo-canary:9898=10"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "kube-system", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(10), "phase": "Stable", "primaryWeight": float64(90), "reason": "Manual"},
				TTL:          time.Minute,
				Requirements: []string{"claim: platform.example.org/v1alpha1 CanaryRouteClaim kube-system/podinfo", "existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute kube-system/podinfo"},
			},
		},
	})
}

// claimedXR is a cluster-scoped CanaryRoute podinfo-x7k2p whose claimRef
// names the claim podinfo in a namespace.
func claimedXR(namespace string) string {
	return `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata: {name: podinfo-x7k2p}
spec:
  claimRef: {apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim, name: podinfo, namespace: ` + namespace + `}
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic: {weight: 10}
`
}

// claimObject is the claim podinfo in a namespace, bound to an XR.
func claimObject(namespace, xrName string) string {
	return `{apiVersion: platform.example.org/v1alpha1, kind: CanaryRouteClaim, metadata: {name: podinfo, namespace: ` + namespace +
		`}, spec: {resourceRef: {apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute, name: ` + xrName + `}}}`
}

// claimedView is what a run of claimedXR("team-a") gives.
func claimedView() view {
	return view{
		Conditions: []string{
			"RouteAccepted=False Pending: the route has not been created yet",
			"ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant",
			"RolloutHealthy=True Stable: Stable: canary 10%, primary 90%",
		},
		Resources: []string{"route-httproute"},
		Ready:     map[string]string{"route-httproute": "READY_FALSE"},
		Weights:   [][]string{{"Service/podinfo:9898=90", "Service/podinfo-canary:9898=10"}},
		Rollout: map[string]any{
			"phase": "Stable", "reason": "Manual", "canaryWeight": float64(10), "primaryWeight": float64(90), "canaryDigest": "set",
			"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "namespace": "team-a", "name": "podinfo-canary", "port": float64(9898)}},
		},
		TTL: time.Minute,
		Requirements: []string{
			"claim: platform.example.org/v1alpha1 CanaryRouteClaim team-a/podinfo",
			"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute team-a/podinfo",
		},
	}
}

// TestClaimAnalysisIsComposedInTheClaimsNamespace: a claim-bound XR composes its analysis
// in the claim's namespace (the route namespace), and one whose claim is
// not proven composes none anywhere.
func TestClaimAnalysisIsComposedInTheClaimsNamespace(t *testing.T) {
	x := strings.Replace(claimedXR("team-a"), "  traffic: {weight: 10}\n", `  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: [{weight: 10, analysis: [smoke]}, {weight: 100}]
    analysis:
      smoke: {template: {apiVersion: batch/v1, kind: Job, spec: {}}, successWhen: "true"}
`, 1)
	x = strings.Replace(x, "  canary: {backendRef: {name: podinfo-canary}}\n", "", 1)
	_, rsp := runFunction(t, x, emptyInput, nil, map[string][]string{"claim": {claimObject("team-a", "podinfo-x7k2p")}})
	if isFatal(rsp) {
		t.Fatalf("setup: %v", viewOf(t, rsp).Results)
	}
	a := rsp.GetDesired().GetResources()["analysis-smoke"].GetResource().AsMap()
	if ns := a["metadata"].(map[string]any)["namespace"]; ns != "team-a" {
		t.Errorf("the analysis of a claim in team-a is composed in %v", ns)
	}
	// The claim is not there: allowedRouteNamespaces applies (none).
	_, rsp = runFunction(t, x, emptyInput, nil, map[string][]string{"claim": {}})
	if !isFatal(rsp) {
		t.Errorf("an unproven claim composes: %v", viewOf(t, rsp).Resources)
	}
}
