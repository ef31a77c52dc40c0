package ownership

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
func ClaimProven(claim *unstructured.Unstructured, name, namespace string, xr Ref) bool {
	if claim == nil || claim.GetName() != name || claim.GetNamespace() != namespace {
		return false
	}
	str := func(field string) string {
		v, _, _ := unstructured.NestedString(claim.Object, "spec", "resourceRef", field)
		return v
	}
	return xr.Name != "" && str("name") == xr.Name && str("apiVersion") == xr.APIVersion && str("kind") == xr.Kind
}
