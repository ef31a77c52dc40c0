package main

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The CanaryRoute's kinds, as the XRDs of example/definitions publish them:
// a namespaced XR (Crossplane v2), and a legacy cluster XR with its claim.
// The group is the XRDs' unless --api-group names a platform team's own
// (the function never reads the group or the kind).
const defaultGroup = "platform.example.org"

// role is what a kind of CanaryRoute is to Crossplane.
type role int

const (
	// roleXR is a namespaced XR: it holds its spec, its status and its
	// composed resources (spec.crossplane.resourceRefs).
	roleXR role = iota
	// roleClaim is a claim: the operator edits its spec, which Crossplane
	// copies to its cluster XR (spec.resourceRef), and reads its XR's
	// status back.
	roleClaim
	// roleClusterXR is a legacy cluster XR (spec.resourceRefs), bound to a
	// claim (spec.claimRef) or not.
	roleClusterXR
)

// kindInfo is one kind of CanaryRoute and the names an operator may prefix
// a name with (kind/name), as kubectl takes them.
type kindInfo struct {
	kind  string
	role  role
	names []string
}

// canaryRouteKinds in the order a bare name is looked up: the namespaced XR
// and the claim in the namespace, then the cluster XR by name.
var canaryRouteKinds = []kindInfo{
	{kind: "CanaryRoute", role: roleXR, names: []string{"canaryroute", "canaryroutes"}},
	{kind: "CanaryRouteClaim", role: roleClaim, names: []string{"canaryrouteclaim", "canaryrouteclaims", "claim"}},
	{kind: "XCanaryRoute", role: roleClusterXR, names: []string{"xcanaryroute", "xcanaryroutes", "xr"}},
}

// kindOf is the kindInfo of a CanaryRoute's kind, or false.
func kindOf(kind string) (kindInfo, bool) {
	for _, k := range canaryRouteKinds {
		if k.kind == kind {
			return k, true
		}
	}
	return kindInfo{}, false
}

// splitName reads NAME or KIND/NAME (KIND as kubectl takes it: the kind, its
// plural, case-insensitive, optionally with .group). It returns the kinds to
// look in, in lookup order.
// versionPattern is a Kubernetes API version (v1, v1alpha1, v2beta3).
var versionPattern = regexp.MustCompile(`^v\d+((alpha|beta)\d+)?$`)

func splitName(arg, group string) ([]kindInfo, string, bool) {
	prefix, name, ok := strings.Cut(arg, "/")
	if !ok {
		return canaryRouteKinds, arg, arg != ""
	}
	prefix = strings.ToLower(prefix)
	prefix, g, grouped := strings.Cut(prefix, ".")
	// KIND.VERSION.GROUP, as kubectl takes it too.
	if v, rest, ok := strings.Cut(g, "."); ok && versionPattern.MatchString(v) {
		g = rest
	}
	// KIND.GROUP names the group too: another group than the plugin's
	// (--api-group) is not one of its kinds.
	if grouped && !strings.EqualFold(g, group) {
		return nil, name, false
	}
	for _, k := range canaryRouteKinds {
		if strings.EqualFold(prefix, k.kind) {
			return []kindInfo{k}, name, name != ""
		}
		for _, n := range k.names {
			if prefix == n {
				return []kindInfo{k}, name, name != ""
			}
		}
	}
	return nil, name, false
}

// str is the string at path, or "".
func str(o map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(o, path...)
	return s
}

// boolean is the bool at path, or false.
func boolean(o map[string]any, path ...string) bool {
	b, _, _ := unstructured.NestedBool(o, path...)
	return b
}

// object is the map at path, or nil.
func object(o map[string]any, path ...string) map[string]any {
	v, ok, _ := unstructured.NestedFieldNoCopy(o, path...)
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// objects are the maps of the list at path; other items are skipped.
func objects(o map[string]any, path ...string) []map[string]any {
	v, ok, _ := unstructured.NestedFieldNoCopy(o, path...)
	if !ok {
		return nil
	}
	l, _ := v.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, i := range l {
		if m, ok := i.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// number is the number at path (JSON decodes to int64 or float64), or
// false.
func number(o map[string]any, path ...string) (float64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(o, path...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	default:
		return 0, false
	}
}

// integer is the whole number at path, or false.
func integer(o map[string]any, path ...string) (int64, bool) {
	n, ok := number(o, path...)
	if !ok || n != float64(int64(n)) {
		return 0, false
	}
	return int64(n), true
}
