package ownership

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// A Ref names an object by apiVersion, kind and name.
type Ref struct {
	APIVersion string
	Kind       string
	Name       string
}

// ClaimProven reports whether a claim that Crossplane fetched is the one a
// cluster-scoped XR says it is bound to (spec.claimRef), and references
// that XR back (spec.resourceRef). Anyone who may write the XR can write a
// claimRef naming any namespace; only Crossplane binds a claim to an XR, so
// only the claim's own reference proves the binding.
func ClaimProven(claim *unstructured.Unstructured, name, namespace string, composite Ref) bool {
	if claim == nil || claim.GetName() != name || claim.GetNamespace() != namespace {
		return false
	}
	str := func(field string) string {
		v, _, _ := unstructured.NestedString(claim.Object, "spec", "resourceRef", field)
		return v
	}
	return composite.Name != "" && str("name") == composite.Name && str("apiVersion") == composite.APIVersion && str("kind") == composite.Kind
}

// Claimed reports whether the claim that a cluster-scoped XR says it is
// bound to (claim, its spec.claimRef) exists and references the XR back,
// among the objects Crossplane fetched for it. On the first call of a
// reconcile Crossplane has fetched nothing yet (answered is false): that
// call's response is never applied, since the requirement it makes sends
// Crossplane back for the claim and a second call, so it proceeds as if
// proven.
func Claimed(claim *xr.ClaimRef, self Ref, fetched []*unstructured.Unstructured, answered bool) bool {
	if !ClaimAskable(claim, self) {
		return false
	}
	if !answered {
		return true
	}
	for _, f := range fetched {
		if f.GetAPIVersion() == claim.APIVersion && f.GetKind() == claim.Kind && ClaimProven(f, claim.Name, claim.Namespace, self) {
			return true
		}
	}
	return false
}

// ClaimAskable reports whether the function asks Crossplane for the claim
// a claimRef names: a claim is of the XR's own API group (an XRD defines
// both in one group), so a hand-written claimRef cannot make Crossplane read
// a Secret, or fail its reconcile on a kind that does not exist.
func ClaimAskable(c *xr.ClaimRef, self Ref) bool {
	if c == nil || c.Kind == "" || c.Name == "" {
		return false
	}
	claim, err := schema.ParseGroupVersion(c.APIVersion)
	if err != nil || claim.Version == "" {
		return false
	}
	composite, err := schema.ParseGroupVersion(self.APIVersion)
	return err == nil && claim.Group == composite.Group && claim.Group != ""
}
