package compose

// Attacks on the routes that runs share (sharedBuilds): a second run whose
// XR, status or Input differs from the first's in what the route is not
// built from must share the first run's route, and one whose route differs
// must not; either way the route it composes, and the wire form it sends,
// are those a run with nothing kept builds.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// attack14Release makes the base XR a release of revision 2.0 of podinfo.
var attack14Release = []patch{
	del("spec.primary"), set("spec.canary", `{revision: "2.0"}`),
	set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, replicas: 2}`),
	set("spec.traffic", `{steps: [{weight: 23}, {weight: 100}]}`),
}

// TestAttack14SecondRunIsCold runs a CanaryRoute twice, the second time
// with one input changed that a run reads besides the spec (the XR's
// metadata and status, the Input, the claim), at the same weight, and
// checks the second run's route and wire form against a build with nothing
// kept, and whether it shares the first's.
func TestAttack14SecondRunIsCold(t *testing.T) {
	type run struct {
		input   string
		patches []patch
	}
	base := func(name string, p ...patch) []patch {
		return append([]patch{set("metadata.name", "attack14-"+name), set("spec.hostnames", "[attack14.example.com]")}, p...)
	}
	cases := map[string]struct {
		reason        string
		first, second run
		shared        bool
	}{
		"Metadata": {
			reason: "The XR's labels, annotations and uid are in no route.",
			first:  run{patches: base("metadata")},
			second: run{patches: base("metadata", set("metadata.labels", "{crossplane.io/claim-namespace: other, team: b}"), set("metadata.annotations", "{a: b}"), set("metadata.uid", "u-2"))},
			shared: true,
		},
		"RolloutStatus": {
			reason: "status.rollout (an aborted rollout, its recorded backends) is the engine's; the route at a weight is the same.",
			first:  run{patches: base("status")},
			second: run{patches: base("status", set("status.rollout", `{phase: Aborted, revision: "x", canaryWeight: 3, canaryBackends: [{kind: Service, namespace: monitoring, name: other}]}`))},
			shared: true,
		},
		"ReleaseStable": {
			reason: "A release's stable revision moves the primary proxy Service's selector, which is in no route.",
			first:  run{patches: base("release", attack14Release...)},
			second: run{patches: base("release", append(attack14Release, set("status.release", `{stable: {revision: "1.0"}}`))...)},
			shared: true,
		},
		"CanaryRevisionAffinity": {
			reason: "The canary's revision names the affinity cookie's value.",
			first:  run{patches: base("revision", set("spec.canary.revision", `"2.0"`), set("spec.traffic.sessionAffinity", "{cookieName: c, maxAge: 1h}"))},
			second: run{patches: base("revision", set("spec.canary.revision", `"3.0"`), set("spec.traffic.sessionAffinity", "{cookieName: c, maxAge: 1h}"))},
		},
		"InputPolicy": {
			reason: "An Input that allows more changes what is refused, not the route of a spec it allows.",
			first:  run{patches: base("policy")},
			second: run{input: "allowedBackendNamespaces: [monitoring, other]\nallowExternalNames: true\n", patches: base("policy")},
			shared: true,
		},
		"InputDefaultParents": {
			reason: "The Input's default parents are the route's parents when the spec names none.",
			first:  run{input: "defaultParentRefs: [{name: gw-a, namespace: istio-ingress}]\n", patches: base("parents", del("spec.parentRefs"))},
			second: run{input: "defaultParentRefs: [{name: gw-a, namespace: istio-ingress, sectionName: https}]\n", patches: base("parents", del("spec.parentRefs"))},
		},
		"ClaimAndCluster": {
			reason: "A claimed XR and a cluster-scoped one that route under one name in one namespace compose one route, but their specs differ (claimRef, namespace): kept apart.",
			first:  run{patches: base("claim", set("metadata.name", "attack14-claimed-xyz"), del("spec.namespace"), set("spec.claimRef", "{apiVersion: platform.example.org/v1alpha1, kind: CanaryRoute, name: attack14-claim, namespace: test}"))},
			second: run{patches: base("claim", set("metadata.name", "attack14-claim"))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			build := func(r run) (k8sruntime.Object, *Plan) {
				t.Helper()
				pol := inputPolicy(t, allowMonitoring+r.input)
				p, err := newPlan(canaryRoute(t, pol, r.patches...), pol, testCompiler(t), nil)
				if err != nil {
					t.Fatalf("newPlan(...): %v", err)
				}
				obj, errs := p.BuildRoute(23, true, nil)
				if len(errs) > 0 {
					t.Fatalf("BuildRoute(...): %v", errs)
				}
				return obj, p
			}
			first, _ := build(tc.first)
			if _, err := attack12Encode(first); err != nil {
				t.Fatal(err)
			}
			second, p := build(tc.second)
			params := p.RouteFor(nil)
			params.CanaryWeight, params.Active = 23, true
			cold := fresh(params).obj
			if diff := cmp.Diff(cold, second); diff != "" {
				t.Errorf("%s\nthe second run's route: -cold, +got:\n%s", tc.reason, diff)
			}
			wire, err := p.WireOf(second).Encode(attack12Encode)
			if err != nil {
				t.Fatal(err)
			}
			coldWire, _ := attack12Encode(cold)
			if !proto.Equal(wire, coldWire) {
				t.Errorf("%s\nthe second run's wire form is not the cold route's", tc.reason)
			}
			if got := first == second; got != tc.shared {
				t.Errorf("%s\nshared: want %t, got %t", tc.reason, tc.shared, got)
			}
		})
	}
}
