package route

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// ZeroCanary sends nothing to the canary backends of a route that the
// function composed earlier, for an emergency abort: each canary backendRef
// gets weight 0, a rule whose every backend is a canary (an A/B or session
// rule) is removed, and so is every RequestMirror filter to a canary, on a
// rule or on a backend. A rule that the canary's weight leaves with only
// zero weights gives its other backends equal weights; a rule that sent
// nothing before (a drained rule of its own) keeps its weights. Backends are
// compared with Gateway API's defaults applied, as everywhere else. It
// changes the route in place and reports false when no rule would be left,
// or the object is not a route.
func ZeroCanary(obj runtime.Object, canary []xr.BackendID, routeNamespace string) bool {
	obj = asV1(obj)
	isCanary := func(ref gwv1.BackendObjectReference) bool {
		id := identify(ref, routeNamespace)
		return slices.ContainsFunc(canary, func(c xr.BackendID) bool { return sameBackend(c, id) })
	}
	withoutHTTPMirrors := func(filters []gwv1.HTTPRouteFilter) []gwv1.HTTPRouteFilter {
		return slices.DeleteFunc(filters, func(f gwv1.HTTPRouteFilter) bool {
			return f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil && isCanary(f.RequestMirror.BackendRef)
		})
	}
	withoutGRPCMirrors := func(filters []gwv1.GRPCRouteFilter) []gwv1.GRPCRouteFilter {
		return slices.DeleteFunc(filters, func(f gwv1.GRPCRouteFilter) bool {
			return f.Type == gwv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil && isCanary(f.RequestMirror.BackendRef)
		})
	}
	var ok bool
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1.HTTPRouteRule) []*gwv1.BackendRef {
			rule.Filters = withoutHTTPMirrors(rule.Filters)
			refs := make([]*gwv1.BackendRef, 0, len(rule.BackendRefs))
			for i := range rule.BackendRefs {
				rule.BackendRefs[i].Filters = withoutHTTPMirrors(rule.BackendRefs[i].Filters)
				refs = append(refs, &rule.BackendRefs[i].BackendRef)
			}
			return refs
		})
	case *gwv1.GRPCRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1.GRPCRouteRule) []*gwv1.BackendRef {
			rule.Filters = withoutGRPCMirrors(rule.Filters)
			refs := make([]*gwv1.BackendRef, 0, len(rule.BackendRefs))
			for i := range rule.BackendRefs {
				rule.BackendRefs[i].Filters = withoutGRPCMirrors(rule.BackendRefs[i].Filters)
				refs = append(refs, &rule.BackendRefs[i].BackendRef)
			}
			return refs
		})
	case *gwv1.TLSRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1.TLSRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	case *gwv1.TCPRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1.TCPRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	case *gwv1alpha2.TLSRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1alpha2.TLSRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	case *gwv1alpha2.TCPRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1alpha2.TCPRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	case *gwv1.UDPRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1.UDPRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	case *gwv1alpha2.UDPRoute:
		r.Spec.Rules, ok = zeroRules(r.Spec.Rules, isCanary, func(rule *gwv1alpha2.UDPRouteRule) []*gwv1.BackendRef {
			return refsOf(rule.BackendRefs)
		})
	}
	return ok
}

// asV1 is a GRPCRoute v1alpha2 as the v1 GRPCRoute it shares its memory
// and its schema with, so that one piece of code reads and changes both;
// any other route as it is.
func asV1(obj runtime.Object) runtime.Object {
	if r, ok := obj.(*gwv1alpha2.GRPCRoute); ok {
		return (*gwv1.GRPCRoute)(r)
	}
	return obj
}

// DropMirrors removes every RequestMirror filter, on a rule or on a
// backend, whose target is one of the backends given (with Gateway API's
// defaults applied), leaving the weights alone.
func DropMirrors(obj runtime.Object, targets []xr.BackendID, routeNamespace string) {
	obj = asV1(obj)
	if len(targets) == 0 {
		return
	}
	is := func(ref gwv1.BackendObjectReference) bool {
		id := identify(ref, routeNamespace)
		return slices.ContainsFunc(targets, func(c xr.BackendID) bool { return sameBackend(c, id) })
	}
	http := func(fs []gwv1.HTTPRouteFilter) []gwv1.HTTPRouteFilter {
		return slices.DeleteFunc(fs, func(f gwv1.HTTPRouteFilter) bool {
			return f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil && is(f.RequestMirror.BackendRef)
		})
	}
	grpc := func(fs []gwv1.GRPCRouteFilter) []gwv1.GRPCRouteFilter {
		return slices.DeleteFunc(fs, func(f gwv1.GRPCRouteFilter) bool {
			return f.Type == gwv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil && is(f.RequestMirror.BackendRef)
		})
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for i := range r.Spec.Rules {
			r.Spec.Rules[i].Filters = http(r.Spec.Rules[i].Filters)
			for j := range r.Spec.Rules[i].BackendRefs {
				r.Spec.Rules[i].BackendRefs[j].Filters = http(r.Spec.Rules[i].BackendRefs[j].Filters)
			}
		}
	case *gwv1.GRPCRoute:
		for i := range r.Spec.Rules {
			r.Spec.Rules[i].Filters = grpc(r.Spec.Rules[i].Filters)
			for j := range r.Spec.Rules[i].BackendRefs {
				r.Spec.Rules[i].BackendRefs[j].Filters = grpc(r.Spec.Rules[i].BackendRefs[j].Filters)
			}
		}
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
	obj = asV1(obj)
	if len(ids) == 0 {
		return true
	}
	is := func(ref gwv1.BackendObjectReference) bool {
		id := identify(ref, routeNamespace)
		return slices.ContainsFunc(ids, func(c xr.BackendID) bool { return sameBackend(c, id) })
	}
	DropMirrors(obj, ids, routeNamespace)
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		r.Spec.Rules = dropFromRules(r.Spec.Rules, func(rule *gwv1.HTTPRouteRule) []*gwv1.BackendRef {
			refs := make([]*gwv1.BackendRef, 0, len(rule.BackendRefs))
			for i := range rule.BackendRefs {
				refs = append(refs, &rule.BackendRefs[i].BackendRef)
			}
			return refs
		}, func(rule *gwv1.HTTPRouteRule) {
			rule.BackendRefs = slices.DeleteFunc(rule.BackendRefs, func(b gwv1.HTTPBackendRef) bool { return is(b.BackendObjectReference) })
		})
		return len(r.Spec.Rules) > 0
	case *gwv1.GRPCRoute:
		r.Spec.Rules = dropFromRules(r.Spec.Rules, func(rule *gwv1.GRPCRouteRule) []*gwv1.BackendRef {
			refs := make([]*gwv1.BackendRef, 0, len(rule.BackendRefs))
			for i := range rule.BackendRefs {
				refs = append(refs, &rule.BackendRefs[i].BackendRef)
			}
			return refs
		}, func(rule *gwv1.GRPCRouteRule) {
			rule.BackendRefs = slices.DeleteFunc(rule.BackendRefs, func(b gwv1.GRPCBackendRef) bool { return is(b.BackendObjectReference) })
		})
		return len(r.Spec.Rules) > 0
	}
	return true
}

// dropFromRules removes backends from each rule: refs returns a rule's
// backendRefs, drop removes the ones to go. A rule that had backends and has
// none left is removed; a rule that answers by itself (a redirect) has none
// to begin with and stays. A rule whose backends left have only zero
// weights gives them weight 1, but only when the backends dropped carried
// its traffic: a rule that sent nothing before (a drained rule, every
// weight 0) keeps its weights.
func dropFromRules[R any](rules []R, refs func(*R) []*gwv1.BackendRef, drop func(*R)) []R {
	kept := make([]R, 0, len(rules))
	for i := range rules {
		had := refs(&rules[i])
		before := totalWeight(had)
		drop(&rules[i])
		left := refs(&rules[i])
		if len(had) > 0 && len(left) == 0 {
			continue
		}
		if before > 0 && totalWeight(left) == 0 {
			for _, ref := range left {
				ref.Weight = ptr.To[int32](1)
			}
		}
		kept = append(kept, rules[i])
	}
	return kept
}

// zeroRules zeroes the canary in each rule; backends returns a rule's
// backendRefs, after dropping its mirrors to the canary. A rule whose other
// backends are left with only zero weights gives them equal weights, so
// that it still sends somewhere, but only when zeroing the canary is what
// took its traffic away: a rule that sent nothing before (a drained rule of
// its own, every weight 0) is left as it was.
func zeroRules[R any](rules []R, isCanary func(gwv1.BackendObjectReference) bool, backends func(*R) []*gwv1.BackendRef) ([]R, bool) {
	kept := make([]R, 0, len(rules))
	for i := range rules {
		rule := &rules[i]
		refs := backends(rule)
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
			continue // A canary-only rule: A/B or session.
		}
		if before > 0 && totalWeight(others) == 0 {
			for _, ref := range others {
				ref.Weight = ptr.To[int32](percentTotal)
			}
		}
		kept = append(kept, *rule)
	}
	return kept, len(kept) > 0
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

func refsOf(refs []gwv1.BackendRef) []*gwv1.BackendRef {
	out := make([]*gwv1.BackendRef, 0, len(refs))
	for i := range refs {
		out = append(out, &refs[i])
	}
	return out
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
	if recorded.Group != ref.Group || recorded.Kind != ref.Kind || recorded.Namespace != ref.Namespace || recorded.Name != ref.Name {
		return false
	}
	return recorded.Port == nil || (ref.Port != nil && *ref.Port == *recorded.Port)
}

// TrustedCanary is the recorded canary backends that the abort may zero:
// those that name none of the primary's backends (the same object, on any
// port). status.rollout.canaryBackends can be written by anyone who may
// write the XR's status; an entry naming the primary would send the primary
// to 0% and leave the canary at its weight. It returns the entries kept and
// the entries refused.
func TrustedCanary(recorded, primaries []xr.BackendID) (trusted, refused []xr.BackendID) {
	for _, c := range recorded {
		if slices.ContainsFunc(primaries, func(p xr.BackendID) bool {
			return p.Group == c.Group && p.Kind == c.Kind && p.Namespace == c.Namespace && p.Name == c.Name
		}) {
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
		return slices.ContainsFunc(primaries, func(p xr.BackendID) bool {
			return p.Group == id.Group && p.Kind == id.Kind && p.Namespace == id.Namespace && p.Name == id.Name
		})
	}
	rollout := RolloutRules(obj, spec)
	borneOut := func(c xr.BackendID) bool {
		for i, rule := range ruleShapes(obj) {
			if len(rule.refs) != 2 || !rollout[i] {
				continue
			}
			first, second := identify(rule.refs[0], routeNamespace), identify(rule.refs[1], routeNamespace)
			if (isPrimary(first) && sameBackend(c, second)) || (isPrimary(second) && sameBackend(c, first)) {
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
	shapes := ruleShapes(obj)
	out := make([][]xr.BackendID, 0, len(shapes))
	for _, rule := range shapes {
		ids := make([]xr.BackendID, 0, len(rule.refs))
		for _, ref := range rule.refs {
			ids = append(ids, identify(ref, routeNamespace))
		}
		out = append(out, ids)
	}
	return out
}

// A ruleShape is a rule's name and its weighted backends.
type ruleShape struct {
	name string
	refs []gwv1.BackendObjectReference
}

// ruleShapes lists the name and the backends of each rule of a route of
// any kind.
func ruleShapes(obj runtime.Object) []ruleShape {
	obj = asV1(obj)
	var out []ruleShape
	add := func(name *gwv1.SectionName, refs []gwv1.BackendObjectReference) {
		out = append(out, ruleShape{name: string(ptr.Deref(name, "")), refs: refs})
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			refs := make([]gwv1.BackendObjectReference, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
			}
			add(rule.Name, refs)
		}
	case *gwv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			refs := make([]gwv1.BackendObjectReference, 0, len(rule.BackendRefs))
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendObjectReference)
			}
			add(rule.Name, refs)
		}
	default:
		// TLSRoutes, TCPRoutes and UDPRoutes have a single rule, the
		// rollout's: no rule of its own to tell apart by name.
		for _, refs := range ruleBackendRefs(obj) {
			plain := make([]gwv1.BackendObjectReference, 0, len(refs))
			for _, b := range refs {
				plain = append(plain, b.BackendObjectReference)
			}
			add(nil, plain)
		}
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
// applied, in the order the route names them.
func References(obj runtime.Object, routeNamespace string) []Reference {
	obj = asV1(obj)
	var out []Reference
	weighted := func(r gwv1.BackendRef) {
		out = append(out, Reference{ID: identify(r.BackendObjectReference, routeNamespace), Weight: ptr.Deref(r.Weight, 1)})
	}
	mirror := func(r gwv1.BackendObjectReference) {
		out = append(out, Reference{ID: identify(r, routeNamespace), Mirror: true})
	}
	httpMirrors := func(fs []gwv1.HTTPRouteFilter) {
		for _, f := range fs {
			if f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
				mirror(f.RequestMirror.BackendRef)
			}
		}
	}
	grpcMirrors := func(fs []gwv1.GRPCRouteFilter) {
		for _, f := range fs {
			if f.Type == gwv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil {
				mirror(f.RequestMirror.BackendRef)
			}
		}
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			httpMirrors(rule.Filters)
			for _, b := range rule.BackendRefs {
				weighted(b.BackendRef)
				httpMirrors(b.Filters)
			}
		}
	case *gwv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			grpcMirrors(rule.Filters)
			for _, b := range rule.BackendRefs {
				weighted(b.BackendRef)
				grpcMirrors(b.Filters)
			}
		}
	default:
		for _, refs := range ruleBackendRefs(obj) {
			for _, b := range refs {
				weighted(b)
			}
		}
	}
	return out
}

// ruleBackendRefs lists the backendRefs of each rule of a TLSRoute, a
// TCPRoute or a UDPRoute, of either version.
func ruleBackendRefs(obj runtime.Object) [][]gwv1.BackendRef {
	var out [][]gwv1.BackendRef
	switch r := obj.(type) {
	case *gwv1.TLSRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	case *gwv1.TCPRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	case *gwv1alpha2.TLSRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	case *gwv1alpha2.TCPRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	case *gwv1.UDPRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	case *gwv1alpha2.UDPRoute:
		for _, rule := range r.Spec.Rules {
			out = append(out, rule.BackendRefs)
		}
	}
	return out
}
