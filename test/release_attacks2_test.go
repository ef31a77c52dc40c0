package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReleaseAttacks2 attacks the release loop's fixes at their seams with
// the rescued abort: the rescue composes a release record of its own,
// outside the checks of a composing run.
func TestReleaseAttacks2(t *testing.T) {
	canaryBackends := []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": int64(9898)}}
	// Two promotions 10 s apart: 6.5.0 -> 6.6.0 at 10:06:40, 6.6.0 ->
	// 6.7.0 at 10:06:50, scaleDownDelay 30s. At 10:07 (NOW) 6.5.0 keeps its
	// replicas until 10:07:10 (history dates it), 6.6.0 until 10:07:20.
	twoPromotions := func(xr *unstructured.Unstructured) {
		mustSet(xr.Object, map[string]any{
			"stable": map[string]any{"revision": "6.7.0", "digest": "v2-895b4639d9f00794", "since": "2026-12-02T10:06:50Z"},
			"history": []any{
				map[string]any{"revision": "6.6.0", "digest": "v2-999db937c91b6bfb", "succeededAt": "2026-12-02T10:06:40Z"},
				map[string]any{"revision": "6.5.0", "digest": "v2-0000000000000000", "succeededAt": "2026-12-02T09:00:00Z"},
			},
			"retiring": map[string]any{"revision": "6.6.0", "at": "2026-12-02T10:07:20Z"},
		}, "status", "release")
	}
	rescue := func(xr *unstructured.Unstructured) {
		mustSet(xr.Object, true, "spec", "traffic", "abort")
		mustSet(xr.Object, canaryBackends, "status", "rollout", "canaryBackends")
	}
	type change struct {
		xr       func(xr *unstructured.Unstructured)
		observed func(objs []*unstructured.Unstructured)
		required func(objs []*unstructured.Unstructured)
	}
	cases := map[string]struct {
		reason string
		change change
		want   releaseOutcome
	}{
		"SecondRetireeKeepsItsReplicas": {
			reason: "Control: on a composing run, the revision the promotion before the last retired (6.5.0, dated by history) keeps its replicas until its scaleDownDelay has passed.",
			change: change{xr: twoPromotions},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 2},
				Phase: "Progressing", Reason: "AwaitingCapacity", Stable: "6.7.0",
			},
		},
		"RescueKeepsTheSecondRetiree": {
			reason: "A rescue retires nothing early (docs/rollout.md, compose.rescuedRecord): the second retiree 6.5.0 keeps its replicas until 10:07:10, as on a composing run, instead of leaving the record (its Deployment deleted 10 s early while the gateway may still drain to it).",
			change: change{xr: func(xr *unstructured.Unstructured) {
				twoPromotions(xr)
				rescue(xr)
				mustSet(xr.Object, "StatefulSet", "spec", "release", "workload", "kind")
			}},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 0},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
		"RescueNeverComposesAForeignWorkload": {
			reason: "Attack: a canary workload of another owner is a Fatal naming spec.release.workload, but with spec.traffic.abort set that Fatal is rescued, and the rescue's record still lists the canary's revision (at 0): the template then composes the other team's Deployment podinfo-6.7.1 at 0 replicas, which Crossplane adopts (scaling it to 0) and deletes once the revision leaves the record. The takeover refusal must hold through a rescue: nothing is composed for 6.7.1.",
			change: change{
				xr: rescue,
				required: func(objs []*unstructured.Unstructured) {
					objs[0].SetLabels(map[string]string{"app": "payments", "team": "payments"})
				},
			},
			// The rescue may stand (the route cut) or the Fatal may: either
			// way 6.7.1 gets no Deployment. This is the rescue's outcome
			// without one.
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
		"ForeignWorkloadWithAnotherControllerStays": {
			reason: "Control: a workload labelled crossplane.io/composite=podinfo whose controller is another object (UID) is not this XR's: the Fatal names spec.release.workload.",
			change: change{
				xr: func(xr *unstructured.Unstructured) { xr.SetUID("11111111-1111-1111-1111-111111111111") },
				required: func(objs []*unstructured.Unstructured) {
					mustSet(objs[0].Object, []any{map[string]any{
						"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute", "name": "podinfo",
						"uid": "22222222-2222-2222-2222-222222222222", "controller": true,
					}}, "metadata", "ownerReferences")
				},
			},
			want: releaseOutcome{Fatal: "spec.release.workload"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := renderRelease(t, tc.change.xr, tc.change.observed, tc.change.required)
			if tc.want.Fatal != "" && strings.Contains(got.Fatal, tc.want.Fatal) {
				got.Fatal = tc.want.Fatal
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncrossplane render: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
