package ownership

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
)

func TestClaimProven(t *testing.T) {
	xr := Ref{APIVersion: "platform.example.org/v1alpha1", Kind: "XCanaryRoute", Name: "storefront-x7k2p"}
	claim := func(name, namespace string, resourceRef map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRouteClaim",
			"metadata": map[string]any{"name": name, "namespace": namespace},
		}}
		if resourceRef != nil {
			u.Object["spec"] = map[string]any{"resourceRef": resourceRef}
		}
		return u
	}
	bound := map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": "XCanaryRoute", "name": "storefront-x7k2p"}
	cases := map[string]struct {
		reason string
		claim  *unstructured.Unstructured
		want   bool
	}{
		"Bound": {
			reason: "A claim of the name and namespace in claimRef whose resourceRef is this XR proves the binding.",
			claim:  claim("storefront", "team-a", bound),
			want:   true,
		},
		"NotFound": {
			reason: "No claim at all (a hand-written claimRef) proves nothing.",
		},
		"AnotherXR": {
			reason: "A claim bound to another XR proves nothing for this one.",
			claim:  claim("storefront", "team-a", map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": "XCanaryRoute", "name": "storefront-other"}),
		},
		"AnotherKind": {
			reason: "A claim bound to an XR of another kind with the same name proves nothing.",
			claim:  claim("storefront", "team-a", map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": "XDatabase", "name": "storefront-x7k2p"}),
		},
		"Unbound": {
			reason: "A claim without a resourceRef is bound to nothing yet.",
			claim:  claim("storefront", "team-a", nil),
		},
		"OtherNamespace": {
			reason: "A claim that Crossplane returned from another namespace than claimRef names is not the one asked for.",
			claim:  claim("storefront", "kube-system", bound),
		},
		"MalformedResourceRef": {
			reason: "A resourceRef that is not an object proves nothing and never panics.",
			claim: func() *unstructured.Unstructured {
				u := claim("storefront", "team-a", nil)
				u.Object["spec"] = map[string]any{"resourceRef": "storefront-x7k2p"}
				return u
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ClaimProven(tc.claim, "storefront", "team-a", xr); got != tc.want {
				t.Errorf("%s\nClaimProven(...) = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

func TestCheckIsBounded(t *testing.T) {
	targets := make([]names.Target, 0, 30)
	for i := range 30 {
		ns := fmt.Sprintf("ns%02d", i)
		targets = append(targets, names.Target{Key: names.GrantKey(ns), APIVersion: "gateway.networking.k8s.io/v1beta1", Kind: "ReferenceGrant", Namespace: ns, Name: "httproute.podinfo.test"})
	}
	existing := func(k names.Key) []metav1.Object {
		ns := strings.TrimPrefix(string(k), "referencegrant-")
		return []metav1.Object{&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "httproute.podinfo.test", "namespace": ns}}}}
	}
	err := Check(Composite{Name: "podinfo"}, targets, existing)
	if err == nil {
		t.Fatal("Check(...): no error for 30 objects of other owners")
	}
	msg := err.Error()
	if got := strings.Count(msg, "exists and was not composed"); got != fielderr.MaxErrors {
		t.Errorf("Check(...) names %d objects, want at most %d (a takeover Fatal is bounded like every Fatal)", got, fielderr.MaxErrors)
	}
	if !strings.HasSuffix(msg, "(and 10 more objects)") {
		t.Errorf("Check(...) does not say how many more objects there were: ...%s", msg[max(0, len(msg)-80):])
	}
}
