package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/release"
)

func TestDropForeignCanary(t *testing.T) {
	owner := ownership.Composite{Name: "podinfo"}
	workload := func(labels map[string]string) []resource.Required {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
		u.SetName("podinfo-6.7.1")
		u.SetLabels(labels)
		return []resource.Required{{Resource: u}}
	}
	cases := map[string]struct {
		reason  string
		fetched Fetched
		unread  bool
		want    map[string]int32
	}{
		"Ours": {
			reason:  "A canary workload this XR composed stays in the record.",
			fetched: Fetched{Workload: workload(map[string]string{ownership.LabelComposite: "podinfo"})},
			want:    map[string]int32{"6.7.0": 4, "6.7.1": 0},
		},
		"NotFetched": {
			reason:  "No workload fetched: nothing to compose over, the canary stays.",
			fetched: Fetched{},
			want:    map[string]int32{"6.7.0": 4, "6.7.1": 0},
		},
		"AnotherOwners": {
			reason:  "A canary workload without this XR's label leaves the record: the next step would compose over it.",
			fetched: Fetched{Workload: workload(map[string]string{"team": "payments"})},
			want:    map[string]int32{"6.7.0": 4},
		},
		"Unread": {
			reason: "What Crossplane fetched cannot be read: the canary leaves the record, as if foreign.",
			unread: true,
			want:   map[string]int32{"6.7.0": 4},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &release.Record{Stable: "6.7.0", Canary: "6.7.1", Replicas: map[string]int32{"6.7.0": 4, "6.7.1": 0}}
			tc.fetched.DropForeignCanary(rec, owner, tc.unread)
			if diff := cmp.Diff(tc.want, rec.Replicas); diff != "" {
				t.Errorf("%s\nDropForeignCanary(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
