// Package grant decides which ReferenceGrants a route needs, applies the
// platform team's policy to each cross-namespace reference, and builds the
// grants: one per target namespace, naming exactly the referenced objects.
package grant

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Reasons for the ReferenceGrantsReady condition.
const (
	ReasonNotAllowedByPolicy = "NotAllowedByPolicy"
	ReasonGrantNotComposable = "GrantNotComposable"
)

// Request is what Plan needs to know about the route.
type Request struct {
	RouteKind      xr.RouteKind
	RouteNamespace string
	RouteName      string
	Scope          xr.Scope
	Mode           xr.GrantMode
	// Backends are every backend the route may reference, mirror targets
	// included.
	Backends []backend.Backend
}

// Refusal is a reference that the policy does not allow.
type Refusal struct {
	Role   xr.Role
	Ref    gwv1.BackendObjectReference
	Reason string
}

// Result is the outcome of Plan.
type Result struct {
	// Grants to compose, sorted by namespace.
	Grants []*gwv1.ReferenceGrant
	// Refused references, in the order of the request's backends.
	Refused []Refusal
	// NotComposable are the grants a namespaced XR needs but cannot
	// compose: the platform team must create them.
	NotComposable []*gwv1.ReferenceGrant
}

// CanaryRefused reports whether the policy refused the canary.
func (r Result) CanaryRefused() bool {
	return slices.ContainsFunc(r.Refused, func(f Refusal) bool { return f.Role == xr.RoleCanary })
}

// Plan applies the policy to every backend of the route and builds the
// grants that the allowed cross-namespace references need, at
// ReferenceGrant v1beta1 (see AtVersion).
func Plan(req Request, p *policy.Policy) Result {
	var res Result
	targets := map[string][]gwv1.ReferenceGrantTo{}
	for _, b := range req.Backends {
		if reason := RefusalReason(b, req.RouteNamespace, p); reason != "" {
			res.Refused = appendRefusal(res.Refused, b, reason)
			continue
		}
		if b.Namespace == req.RouteNamespace || b.Ref.Name == "" {
			// A grant without a name would open every object of the
			// kind; backend.Resolve refuses a nameless reference anyway.
			continue
		}
		gk := b.GroupKind()
		targets[b.Namespace] = append(targets[b.Namespace], gwv1.ReferenceGrantTo{
			Group: gwv1.Group(gk.Group),
			Kind:  gwv1.Kind(gk.Kind),
			Name:  ptr.To(b.Ref.Name),
		})
	}

	if req.Mode == xr.GrantsSkip {
		// The user's grants are managed elsewhere: nothing to compose and
		// nothing to warn of. The platform's policy still holds a refused
		// canary, so Skip never widens what the Input allows.
		return Result{Refused: res.Refused}
	}

	for _, ns := range slices.Sorted(maps.Keys(targets)) {
		g := build(req, ns, targets[ns])
		if req.Scope == xr.ScopeNamespaced {
			res.NotComposable = append(res.NotComposable, g)
			continue
		}
		res.Grants = append(res.Grants, g)
	}
	return res
}

// AtVersion is the result with its grants at a version of ReferenceGrant:
// the version changes the grants' apiVersion only, so the plan is made once,
// before the versions are chosen from what it composes. The result itself is
// not changed.
func (r Result) AtVersion(v v1beta1.ReferenceGrantVersion) Result {
	at := func(grants []*gwv1.ReferenceGrant) []*gwv1.ReferenceGrant {
		if grants == nil {
			return nil
		}
		out := make([]*gwv1.ReferenceGrant, 0, len(grants))
		for _, g := range grants {
			c := *g
			c.APIVersion = gwv1.GroupName + "/" + string(v)
			out = append(out, &c)
		}
		return out
	}
	r.Grants, r.NotComposable = at(r.Grants), at(r.NotComposable)
	return r
}

// RefusalReason says why the policy refuses a backend, or "" when it allows it:
// a backendRef's kind must be in allowedBackendKinds, and a backend in
// another namespace than the route's must be in allowedBackendNamespaces.
func RefusalReason(b backend.Backend, routeNamespace string, p *policy.Policy) string {
	if b.FromBackendRef && !p.AllowsKind(b.GroupKind()) {
		return fmt.Sprintf("backend kind %s is not in the Input's allowedBackendKinds", backend.KindString(b.GroupKind()))
	}
	if b.Namespace != routeNamespace && b.Ref.Name != "" && !p.AllowsNamespace(b.Namespace) {
		return fmt.Sprintf("namespace %q is not in the Input's allowedBackendNamespaces", b.Namespace)
	}
	return ""
}

// appendRefusal records a refusal once per role: the same backend can be
// listed more than once (as a backend and as a mirror target).
func appendRefusal(refused []Refusal, b backend.Backend, reason string) []Refusal {
	for _, r := range refused {
		if r.Role == b.Role {
			return refused
		}
	}
	return append(refused, Refusal{Role: b.Role, Ref: b.Ref, Reason: reason})
}

func build(req Request, ns string, to []gwv1.ReferenceGrantTo) *gwv1.ReferenceGrant {
	// Exactly the referenced objects, once each, in a stable order.
	slices.SortFunc(to, func(a, b gwv1.ReferenceGrantTo) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(*a.Name, *b.Name))
	})
	to = slices.CompactFunc(to, func(a, b gwv1.ReferenceGrantTo) bool {
		return a.Group == b.Group && a.Kind == b.Kind && *a.Name == *b.Name
	})
	return &gwv1.ReferenceGrant{
		TypeMeta: metav1.TypeMeta{
			APIVersion: gwv1.GroupName + "/" + string(v1beta1.ReferenceGrantV1Beta1),
			Kind:       "ReferenceGrant",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(req.RouteKind, req.RouteNamespace, req.RouteName),
			Namespace: ns,
		},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{
				Group:     gwv1.GroupName,
				Kind:      gwv1.Kind(req.RouteKind),
				Namespace: gwv1.Namespace(req.RouteNamespace),
			}},
			To: to,
		},
	}
}

// Name of the grant of a route: <kind>.<route name>.<route namespace>, such
// as httproute.podinfo.test, so a reader sees whose grant it is. The grants of
// two routes never collide in the target namespace: routes of different kinds
// may share a name, and the kind (a fixed word) and the namespace (a label
// without dots) frame the route name, which may hold dots.
func Name(routeKind xr.RouteKind, routeNamespace, routeName string) string {
	name := strings.ToLower(string(routeKind)) + "." + routeName + "." + routeNamespace
	if len(name) <= maxNameLength {
		return name
	}
	// Too long for an object name: keep a readable prefix and make it
	// unique with a hash of the whole.
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	prefix := strings.TrimRight(name[:maxNameLength-len(suffix)], ".-")
	return prefix + suffix
}

// maxNameLength is the longest object name (a DNS-1123 subdomain).
const maxNameLength = 253

// Describe says what a grant allows, for messages.
func Describe(g *gwv1.ReferenceGrant) string {
	to := make([]string, 0, len(g.Spec.To))
	for _, t := range g.Spec.To {
		kind := backend.KindString(schema.GroupKind{Group: string(t.Group), Kind: string(t.Kind)})
		to = append(to, kind+" "+string(ptr.Deref(t.Name, "")))
	}
	from := g.Spec.From[0]
	return fmt.Sprintf("ReferenceGrant %s in namespace %s from %s in namespace %s to %s",
		g.Name, g.Namespace, from.Kind, from.Namespace, strings.Join(to, ", "))
}
