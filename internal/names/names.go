// Package names holds the names the function's packages share: the keys
// of the composed resources in Crossplane's pipeline, the objects a run is
// about to compose, and the labels the function writes on what it
// composes. It imports nothing of the function's, so that every package can
// use it without reaching into the planner.
package names

import (
	"fmt"
	"strings"
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
	suffixPreview        = "-preview"
)

// AnalysisKey is the key of the analysis object of a template.
func AnalysisKey(name string) Key {
	return Key(prefixAnalysis + name)
}

// IsAnalysis reports whether a key is an analysis object's.
func (k Key) IsAnalysis() bool { return strings.HasPrefix(string(k), prefixAnalysis) }

// AnalysisTemplate is the template name of an analysis key.
func (k Key) AnalysisTemplate() string { return strings.TrimPrefix(string(k), prefixAnalysis) }

// RouteKey is the key of the route of a kind (HTTPRoute, GRPCRoute, ...).
func RouteKey(kind string) Key {
	return Key(prefixRoute + strings.ToLower(kind))
}

// EntryRouteKey is the key of the route of an entry of spec.routes:
// route-<kind>-<name>; RouteKey for the shorthand's route (entry "").
func EntryRouteKey(kind, entry string) Key {
	if entry == "" {
		return RouteKey(kind)
	}
	return RouteKey(kind) + Key("-"+entry)
}

// PreviewKey is the key of the preview route of a kind: the route's key
// and -preview (route-httproute-preview). The kind is in it as in the
// route's, so that changing spec.kind deletes the old preview too.
func PreviewKey(kind string) Key {
	return RouteKey(kind) + suffixPreview
}

// EntryPreviewKey is the key of the preview route of an entry of
// spec.routes: its route's key and -preview (route-httproute-web-preview).
// No entry's name ends in -preview, so no route's key is a preview's.
func EntryPreviewKey(kind, entry string) Key {
	return EntryRouteKey(kind, entry) + suffixPreview
}

// IsPreview reports whether a key is a preview route's:
// route-<kind>[-<entry>]-preview, the kind without a dash.
func (k Key) IsPreview() bool {
	rest, ok := strings.CutPrefix(string(k), prefixRoute)
	if !ok {
		return false
	}
	kind, name, ok := strings.Cut(rest, "-")
	return ok && kind != "" && strings.HasSuffix("-"+name, suffixPreview)
}

// GrantKey is the key of the ReferenceGrant in a namespace.
func GrantKey(namespace string) Key {
	return Key(prefixReferenceGrant + namespace)
}

// EntryGrantKey is the key of the ReferenceGrant of an entry of
// spec.routes in a namespace: referencegrant-<namespace>.<name> (a
// namespace holds no dot); GrantKey for the shorthand's route.
func EntryGrantKey(namespace, entry string) Key {
	if entry == "" {
		return GrantKey(namespace)
	}
	return GrantKey(namespace) + Key("."+entry)
}

// IsRoute reports whether a key is a route's: the route's, or its preview
// route's (see IsPreview).
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

// A Target is an object that a run is about to compose, by identity.
type Target struct {
	Key        Key
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (t Target) String() string { return fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name) }

// OwnKeyPrefix is the prefix of the labels and annotations that are the
// function's own.
const OwnKeyPrefix = "canaryroute.fn.crossplane.io/"

// Labels of the analysis objects the function composes: the route, the
// revision, the step, the retry and the canary's digest they were composed
// for.
const (
	LabelRoute    = OwnKeyPrefix + "route"
	LabelRevision = OwnKeyPrefix + "revision"
	LabelStep     = OwnKeyPrefix + "step"
	LabelRetry    = OwnKeyPrefix + "retry"
	LabelCanary   = OwnKeyPrefix + "canary-digest"
)
