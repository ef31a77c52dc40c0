package compose

import (
	"strings"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// A Key names a composed resource in the pipeline: Crossplane records it in
// the annotation crossplane.io/composition-resource-name. It is not the
// object's metadata.name.
type Key string

// Keys of the composed resources. The route's kind is part of its key, so
// that changing spec.kind deletes the old route instead of leaking it.
const (
	KeyServicePrimary Key = "service-primary"
	KeyServiceCanary  Key = "service-canary"
	KeyTLSPrimary     Key = "backendtlspolicy-primary"
	KeyTLSCanary      Key = "backendtlspolicy-canary"

	prefixRoute          = "route-"
	prefixReferenceGrant = "referencegrant-"
	prefixAnalysis       = "analysis-"
)

// AnalysisKey is the key of the analysis object of a template.
func AnalysisKey(name string) Key {
	return Key(prefixAnalysis + name)
}

// IsAnalysis reports whether a key is an analysis object's.
func (k Key) IsAnalysis() bool { return strings.HasPrefix(string(k), prefixAnalysis) }

// AnalysisTemplate is the template name of an analysis key.
func (k Key) AnalysisTemplate() string { return strings.TrimPrefix(string(k), prefixAnalysis) }

// RouteKey is the key of the route of a kind.
func RouteKey(kind xr.RouteKind) Key {
	return Key(prefixRoute + strings.ToLower(string(kind)))
}

// GrantKey is the key of the ReferenceGrant in a namespace.
func GrantKey(namespace string) Key {
	return Key(prefixReferenceGrant + namespace)
}

// serviceKey is the key of a side's proxy Service.
func serviceKey(role xr.Role) Key {
	if role == xr.RoleCanary {
		return KeyServiceCanary
	}
	return KeyServicePrimary
}

// tlsKey is the key of a side's BackendTLSPolicy.
func tlsKey(role xr.Role) Key {
	if role == xr.RoleCanary {
		return KeyTLSCanary
	}
	return KeyTLSPrimary
}

// IsRoute reports whether a key is a route's.
func (k Key) IsRoute() bool { return strings.HasPrefix(string(k), prefixRoute) }

// IsBackendTLSPolicy reports whether a key is a BackendTLSPolicy's.
func (k Key) IsBackendTLSPolicy() bool { return k == KeyTLSPrimary || k == KeyTLSCanary }

// IsGrant reports whether a key is a ReferenceGrant's.
func (k Key) IsGrant() bool { return strings.HasPrefix(string(k), prefixReferenceGrant) }

// Ours reports whether a key is one the function composes and a hold
// re-emits (routes, proxy Services, their BackendTLSPolicies, grants); other
// keys are other functions' in the pipeline, and none of its business, or
// analysis objects, which are composed for their step only.
func (k Key) Ours() bool {
	return k == KeyServicePrimary || k == KeyServiceCanary || k == KeyTLSPrimary || k == KeyTLSCanary || k.IsRoute() || k.IsGrant()
}

// kindService is the kind of the proxy Services, and of a Service backend.
const kindService = "Service"
