package route

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// errNotARoute is the internal error of an object that is not a route of a
// kind the function composes.
var errNotARoute = errors.New("not a route of a kind the function composes")

// ZeroCanary sends nothing to the canary backends of a route: each canary
// backendRef gets weight 0, a rule whose every backend is a canary (an A/B
// or session rule) is removed, and so is every RequestMirror filter to a
// canary, on a rule or on a backend. A rule that the canary's weight leaves
// with only zero weights gives its other backends equal weights; a rule that
// sent nothing before (a drained rule of its own) keeps its weights.
// Backends are compared with Gateway API's defaults applied, as everywhere
// else. It changes the route in place and reports false when no rule would
// be left, or the object is not a route.
func ZeroCanary(obj runtime.Object, canary []xr.BackendID, routeNamespace string) bool {
	v := viewOf(obj)
	if v == nil {
		return false
	}
	isCanary := matcher(canary, routeNamespace)
	drop := make([]bool, v.len())
	for i := range v.len() {
		v.dropMirrors(i, isCanary)
		refs := v.backends(i)
		before := totalWeight(refs)
		others := make([]*gwv1.BackendRef, 0, len(refs))
		for _, ref := range refs {
			if isCanary(ref.BackendObjectReference) {
				ref.Weight = ptr.To[int32](0)
				continue
			}
			others = append(others, ref)
		}
		if len(refs) > 0 && len(others) == 0 {
			drop[i] = true // A canary-only rule: A/B or session.
			continue
		}
		if before > 0 && totalWeight(others) == 0 {
			for _, ref := range others {
				ref.Weight = ptr.To[int32](percentTotal)
			}
		}
	}
	v.keep(func(i int) bool { return !drop[i] })
	return v.len() > 0
}

// DropMirrors removes every RequestMirror filter, on a rule or on a
// backend, whose target is one of the backends given (with Gateway API's
// defaults applied), leaving the weights alone.
func DropMirrors(obj runtime.Object, targets []xr.BackendID, routeNamespace string) {
	v := viewOf(obj)
	if v == nil || len(targets) == 0 {
		return
	}
	is := matcher(targets, routeNamespace)
	for i := range v.len() {
		v.dropMirrors(i, is)
	}
}

// DropBackends removes the backendRefs of an HTTPRoute or a GRPCRoute that
// name one of the backends given (with Gateway API's defaults applied), and
// the mirrors to them: a rule left without a backend is removed, and one
// that the backends dropped leave with only zero weights gives the rest
// equal weights (a rule that sent nothing before keeps its weights). Unlike
// ZeroCanary it keeps no reference at weight 0: it is for the backends of
// rules of their own, which the rollout never weighs and which only
// HTTPRoutes and GRPCRoutes have. It reports false when no rule would be
// left.
func DropBackends(obj runtime.Object, ids []xr.BackendID, routeNamespace string) bool {
	v := viewOf(obj)
	if v == nil || !v.ownRules() || len(ids) == 0 {
		return true
	}
	is := matcher(ids, routeNamespace)
	drop := make([]bool, v.len())
	for i := range v.len() {
		v.dropMirrors(i, is)
		had := v.backends(i)
		before := totalWeight(had)
		v.dropBackends(i, is)
		left := v.backends(i)
		// A rule that answers by itself (a redirect) has no backend to
		// begin with, and stays.
		if len(had) > 0 && len(left) == 0 {
			drop[i] = true
			continue
		}
		if before > 0 && totalWeight(left) == 0 {
			for _, ref := range left {
				ref.Weight = ptr.To[int32](1)
			}
		}
	}
	v.keep(func(i int) bool { return !drop[i] })
	return v.len() > 0
}

// matcher reports whether a reference names one of the backends given,
// with Gateway API's defaults applied (see sameBackend).
func matcher(ids []xr.BackendID, routeNamespace string) func(gwv1.BackendObjectReference) bool {
	return func(ref gwv1.BackendObjectReference) bool {
		id := identify(ref, routeNamespace)
		return slices.ContainsFunc(ids, func(c xr.BackendID) bool { return sameBackend(c, id) })
	}
}

// totalWeight is the sum of the weights of backendRefs, with Gateway API's
// default weight 1 for one without.
func totalWeight(refs []*gwv1.BackendRef) int64 {
	var total int64
	for _, ref := range refs {
		total += int64(ptr.Deref(ref.Weight, 1))
	}
	return total
}

// identify is a backend reference with Gateway API's defaults applied: the
// core group, kind Service, the route's namespace.
func identify(ref gwv1.BackendObjectReference, routeNamespace string) xr.BackendID {
	gk := backend.GroupKindOf(ref)
	ns := routeNamespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return xr.BackendID{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: string(ref.Name), Port: ref.Port}
}

// sameBackend reports whether a recorded backend is the one a reference
// names: a recorded backend without a port is the object on any port.
func sameBackend(recorded, ref xr.BackendID) bool {
	if !sameObject(recorded, ref) {
		return false
	}
	return recorded.Port == nil || (ref.Port != nil && *ref.Port == *recorded.Port)
}

// sameObject reports whether two backends are one object, on any port.
func sameObject(a, b xr.BackendID) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// TrustedCanary is the recorded canary backends that the abort may zero:
// those that name none of the primary's backends (the same object, on any
// port). status.rollout.canaryBackends can be written by anyone who may
// write the XR's status; an entry naming the primary would send the primary
// to 0% and leave the canary at its weight. It returns the entries kept and
// the entries refused.
func TrustedCanary(recorded, primaries []xr.BackendID) (trusted, refused []xr.BackendID) {
	for _, c := range recorded {
		if slices.ContainsFunc(primaries, func(p xr.BackendID) bool { return sameObject(p, c) }) {
			refused = append(refused, c)
			continue
		}
		trusted = append(trusted, c)
	}
	return trusted, refused
}

// BesidePrimary splits recorded canary backends (already TrustedCanary) by
// whether the route shows them to be the canary: a rule of the rollout's
// (see RolloutRules: spec is what the spec, which may not parse, tells of
// its rules) holds one beside one of the primary's backends, and nothing
// else, which is the shape of every rule the function weighs (the primary,
// then the canary). A record that no such rule bears out says nothing this
// run can check: it may name the backend of a rule of its own (zeroing it
// would remove that rule and leave the canary at its weight), or the
// primary where the primary cannot be found. A rule of its own of the same
// shape, named or not, bears nothing out. primaries are compared without
// their ports.
func BesidePrimary(obj runtime.Object, canary, primaries []xr.BackendID, spec []SpecRule, routeNamespace string) (beside, not []xr.BackendID) {
	isPrimary := func(id xr.BackendID) bool {
		return slices.ContainsFunc(primaries, func(p xr.BackendID) bool { return sameObject(p, id) })
	}
	rollout := RolloutRules(obj, spec)
	backends := RuleBackends(obj, routeNamespace)
	borneOut := func(c xr.BackendID) bool {
		for i, rule := range backends {
			if len(rule) != 2 || !rollout[i] {
				continue
			}
			if (isPrimary(rule[0]) && sameBackend(c, rule[1])) || (isPrimary(rule[1]) && sameBackend(c, rule[0])) {
				return true
			}
		}
		return false
	}
	for _, c := range canary {
		if borneOut(c) {
			beside = append(beside, c)
		} else {
			not = append(not, c)
		}
	}
	return beside, not
}

// AnyPort is backends as objects: on whichever port a rule names them.
func AnyPort(ids []xr.BackendID) []xr.BackendID {
	out := make([]xr.BackendID, 0, len(ids))
	for _, id := range ids {
		id.Port = nil
		out = append(out, id)
	}
	return out
}

// RuleBackends lists the backends of each rule of a route, with Gateway
// API's defaults applied.
func RuleBackends(obj runtime.Object, routeNamespace string) [][]xr.BackendID {
	v := viewOf(obj)
	if v == nil {
		return nil
	}
	out := make([][]xr.BackendID, 0, v.len())
	for i := range v.len() {
		refs := v.backends(i)
		ids := make([]xr.BackendID, 0, len(refs))
		for _, ref := range refs {
			ids = append(ids, identify(ref.BackendObjectReference, routeNamespace))
		}
		out = append(out, ids)
	}
	return out
}

// A Reference is a backend that a route names: a weighted backend of a
// rule, or the target of a RequestMirror filter.
type Reference struct {
	ID     xr.BackendID
	Weight int32
	Mirror bool
}

// References lists the backends a route names, with Gateway API's defaults
// applied: rule by rule, its mirrors, then its backends.
func References(obj runtime.Object, routeNamespace string) []Reference {
	v := viewOf(obj)
	if v == nil {
		return nil
	}
	var out []Reference
	for i := range v.len() {
		for _, m := range v.mirrors(i) {
			out = append(out, Reference{ID: identify(m, routeNamespace), Mirror: true})
		}
		for _, b := range v.backends(i) {
			out = append(out, Reference{ID: identify(b.BackendObjectReference, routeNamespace), Weight: ptr.Deref(b.Weight, 1)})
		}
	}
	return out
}
