package route

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
)

// The route kinds and versions the function composes, each registered once
// with what only its Go type knows: how to make an empty one, how to see
// its rules, and the Gateway API CRD's checks for it. Everything else in
// the package (zeroing the canary, reading its backends, telling rules of
// their own from the rollout's) works on that one view, whatever the kind.
var kinds = map[schema.GroupVersionKind]kind{}

func init() {
	for _, k := range []kind{
		register(schema.GroupVersion(gwv1.GroupVersion), "HTTPRoute", func(r *gwv1.HTTPRoute) rules { return httpRules(&r.Spec.Rules) }, admission.HTTPRoute),
		register(schema.GroupVersion(gwv1.GroupVersion), "GRPCRoute", func(r *gwv1.GRPCRoute) rules { return grpcRules(&r.Spec.Rules) }, admission.GRPCRoute),
		// The same schema as v1's, which older releases served as
		// v1alpha2: one Go type converts to the other.
		register(schema.GroupVersion(gwv1alpha2.GroupVersion), "GRPCRoute", func(r *gwv1alpha2.GRPCRoute) rules { return grpcRules(&r.Spec.Rules) },
			func(r *gwv1alpha2.GRPCRoute) field.ErrorList { return admission.GRPCRoute((*gwv1.GRPCRoute)(r)) }),
		register(schema.GroupVersion(gwv1.GroupVersion), "TLSRoute", func(r *gwv1.TLSRoute) rules { return streamFieldss(&r.Spec.Rules, tlsRule) }, admission.TLSRoute),
		register(schema.GroupVersion(gwv1.GroupVersion), "TCPRoute", func(r *gwv1.TCPRoute) rules { return streamFieldss(&r.Spec.Rules, tcpRule) }, admission.TCPRoute),
		register(schema.GroupVersion(gwv1.GroupVersion), "UDPRoute", func(r *gwv1.UDPRoute) rules { return streamFieldss(&r.Spec.Rules, udpRule) }, admission.UDPRoute),
		register(schema.GroupVersion(gwv1alpha2.GroupVersion), "TLSRoute", func(r *gwv1alpha2.TLSRoute) rules {
			return streamFieldss(&r.Spec.Rules, func(x *gwv1alpha2.TLSRouteRule) streamFields { return tlsRule((*gwv1.TLSRouteRule)(x)) })
		}, admission.TLSRouteV1Alpha2),
		register(schema.GroupVersion(gwv1alpha2.GroupVersion), "TCPRoute", func(r *gwv1alpha2.TCPRoute) rules {
			return streamFieldss(&r.Spec.Rules, func(x *gwv1alpha2.TCPRouteRule) streamFields { return tcpRule((*gwv1.TCPRouteRule)(x)) })
		}, admission.TCPRouteV1Alpha2),
		register(schema.GroupVersion(gwv1alpha2.GroupVersion), "UDPRoute", func(r *gwv1alpha2.UDPRoute) rules {
			return streamFieldss(&r.Spec.Rules, func(x *gwv1alpha2.UDPRouteRule) streamFields { return udpRule((*gwv1.UDPRouteRule)(x)) })
		}, admission.UDPRouteV1Alpha2),
	} {
		kinds[k.gvk] = k
	}
}

// A kind is a route kind at a version, as registered.
type kind struct {
	gvk schema.GroupVersionKind
	new func() runtime.Object
	// rules sees a route of this kind; nil for an object of another type.
	rules func(runtime.Object) rules
	admit func(runtime.Object) field.ErrorList
}

// register makes the kind of a Gateway API route type.
func register[T any, PT interface {
	*T
	runtime.Object
}](gv schema.GroupVersion, name string, view func(PT) rules, admit func(PT) field.ErrorList,
) kind {
	return kind{
		gvk: gv.WithKind(name),
		new: func() runtime.Object { return PT(new(T)) },
		rules: func(o runtime.Object) rules {
			if r, ok := o.(PT); ok && r != nil {
				return view(r)
			}
			return nil
		},
		admit: func(o runtime.Object) field.ErrorList {
			if r, ok := o.(PT); ok && r != nil {
				return admit(r)
			}
			return field.ErrorList{field.InternalError(nil, errNotARoute)}
		},
	}
}

// kindOfObject is the registered kind of a typed route, by its apiVersion
// and kind.
func kindOfObject(obj runtime.Object) (kind, bool) {
	if obj == nil {
		return kind{}, false
	}
	k, ok := kinds[obj.GetObjectKind().GroupVersionKind()]
	return k, ok
}

// viewOf is the view of a typed route's rules; nil when the object is not a
// route of a registered kind.
func viewOf(obj runtime.Object) rules {
	k, ok := kindOfObject(obj)
	if !ok {
		return nil
	}
	return k.rules(obj)
}

// rules is one view of the rules of a typed route, of any kind and version:
// the only code, beside the builders, that knows the Go types' shapes. It
// reads and changes the typed route in place.
type rules interface {
	// len is the number of rules.
	len() int
	// name is rule i's name, nil when it has none.
	name(i int) *gwv1.SectionName
	// backends are pointers to rule i's backendRefs, in order.
	backends(i int) []*gwv1.BackendRef
	// mirrors are the targets of rule i's RequestMirror filters, on the
	// rule, then on each backend in turn.
	mirrors(i int) []gwv1.BackendObjectReference
	// dropMirrors removes rule i's RequestMirror filters, on the rule and
	// on its backends, whose target drop names.
	dropMirrors(i int, drop func(gwv1.BackendObjectReference) bool)
	// dropBackends removes rule i's backendRefs that drop names.
	dropBackends(i int, drop func(gwv1.BackendObjectReference) bool)
	// keep keeps the rules that keep reports true for, in order.
	keep(keep func(i int) bool)
	// ownRules reports whether the kind has rules of their own beside the
	// rollout's (HTTPRoute, GRPCRoute); the stream kinds have a single
	// rule, the rollout's.
	ownRules() bool
}

// requestRules are the rules of an HTTPRoute or a GRPCRoute: R is the rule
// type, B its backendRef type, F its filter type.
type requestRules[R, B, F any] struct {
	list           *[]R
	ruleName       func(*R) *gwv1.SectionName
	ruleFilters    func(*R) *[]F
	ruleBackends   func(*R) *[]B
	backendRef     func(*B) *gwv1.BackendRef
	backendFilters func(*B) *[]F
	// mirrorOf is the target of a RequestMirror filter; nil for any other.
	mirrorOf func(*F) *gwv1.BackendObjectReference
}

//nolint:dupl // HTTPRoute's and GRPCRoute's rules are alike in shape, not in type.
func httpRules(list *[]gwv1.HTTPRouteRule) rules {
	return requestRules[gwv1.HTTPRouteRule, gwv1.HTTPBackendRef, gwv1.HTTPRouteFilter]{
		list:           list,
		ruleName:       func(r *gwv1.HTTPRouteRule) *gwv1.SectionName { return r.Name },
		ruleFilters:    func(r *gwv1.HTTPRouteRule) *[]gwv1.HTTPRouteFilter { return &r.Filters },
		ruleBackends:   func(r *gwv1.HTTPRouteRule) *[]gwv1.HTTPBackendRef { return &r.BackendRefs },
		backendRef:     func(b *gwv1.HTTPBackendRef) *gwv1.BackendRef { return &b.BackendRef },
		backendFilters: func(b *gwv1.HTTPBackendRef) *[]gwv1.HTTPRouteFilter { return &b.Filters },
		mirrorOf: func(f *gwv1.HTTPRouteFilter) *gwv1.BackendObjectReference {
			if f.Type != gwv1.HTTPRouteFilterRequestMirror || f.RequestMirror == nil {
				return nil
			}
			return &f.RequestMirror.BackendRef
		},
	}
}

//nolint:dupl // HTTPRoute's and GRPCRoute's rules are alike in shape, not in type.
func grpcRules(list *[]gwv1.GRPCRouteRule) rules {
	return requestRules[gwv1.GRPCRouteRule, gwv1.GRPCBackendRef, gwv1.GRPCRouteFilter]{
		list:           list,
		ruleName:       func(r *gwv1.GRPCRouteRule) *gwv1.SectionName { return r.Name },
		ruleFilters:    func(r *gwv1.GRPCRouteRule) *[]gwv1.GRPCRouteFilter { return &r.Filters },
		ruleBackends:   func(r *gwv1.GRPCRouteRule) *[]gwv1.GRPCBackendRef { return &r.BackendRefs },
		backendRef:     func(b *gwv1.GRPCBackendRef) *gwv1.BackendRef { return &b.BackendRef },
		backendFilters: func(b *gwv1.GRPCBackendRef) *[]gwv1.GRPCRouteFilter { return &b.Filters },
		mirrorOf: func(f *gwv1.GRPCRouteFilter) *gwv1.BackendObjectReference {
			if f.Type != gwv1.GRPCRouteFilterRequestMirror || f.RequestMirror == nil {
				return nil
			}
			return &f.RequestMirror.BackendRef
		},
	}
}

func (v requestRules[R, B, F]) len() int { return len(*v.list) }

func (v requestRules[R, B, F]) name(i int) *gwv1.SectionName { return v.ruleName(&(*v.list)[i]) }

func (v requestRules[R, B, F]) backends(i int) []*gwv1.BackendRef {
	bs := *v.ruleBackends(&(*v.list)[i])
	out := make([]*gwv1.BackendRef, 0, len(bs))
	for j := range bs {
		out = append(out, v.backendRef(&bs[j]))
	}
	return out
}

func (v requestRules[R, B, F]) mirrors(i int) []gwv1.BackendObjectReference {
	rule := &(*v.list)[i]
	var out []gwv1.BackendObjectReference
	add := func(fs []F) {
		for k := range fs {
			if m := v.mirrorOf(&fs[k]); m != nil {
				out = append(out, *m)
			}
		}
	}
	add(*v.ruleFilters(rule))
	bs := *v.ruleBackends(rule)
	for j := range bs {
		add(*v.backendFilters(&bs[j]))
	}
	return out
}

func (v requestRules[R, B, F]) dropMirrors(i int, drop func(gwv1.BackendObjectReference) bool) {
	without := func(fs *[]F) {
		*fs = slices.DeleteFunc(*fs, func(f F) bool {
			m := v.mirrorOf(&f)
			return m != nil && drop(*m)
		})
	}
	rule := &(*v.list)[i]
	without(v.ruleFilters(rule))
	bs := *v.ruleBackends(rule)
	for j := range bs {
		without(v.backendFilters(&bs[j]))
	}
}

func (v requestRules[R, B, F]) dropBackends(i int, drop func(gwv1.BackendObjectReference) bool) {
	bs := v.ruleBackends(&(*v.list)[i])
	*bs = slices.DeleteFunc(*bs, func(b B) bool { return drop(v.backendRef(&b).BackendObjectReference) })
}

func (v requestRules[R, B, F]) keep(keep func(i int) bool) { *v.list = keepRules(*v.list, keep) }

func (requestRules[R, B, F]) ownRules() bool { return true }

// A streamFields is a rule of a TLSRoute, a TCPRoute or a UDPRoute, of either
// version: a name and backendRefs.
type streamFields struct {
	name     *gwv1.SectionName
	backends *[]gwv1.BackendRef
}

func tlsRule(r *gwv1.TLSRouteRule) streamFields { return streamFields{r.Name, &r.BackendRefs} }
func tcpRule(r *gwv1.TCPRouteRule) streamFields { return streamFields{r.Name, &r.BackendRefs} }
func udpRule(r *gwv1.UDPRouteRule) streamFields { return streamFields{r.Name, &r.BackendRefs} }

// streamView is the rules of a TLSRoute, a TCPRoute or a UDPRoute.
type streamView[R any] struct {
	list *[]R
	rule func(*R) streamFields
}

func streamFieldss[R any](list *[]R, rule func(*R) streamFields) rules {
	return streamView[R]{list: list, rule: rule}
}

func (v streamView[R]) len() int                     { return len(*v.list) }
func (v streamView[R]) name(i int) *gwv1.SectionName { return v.rule(&(*v.list)[i]).name }
func (v streamView[R]) backends(i int) []*gwv1.BackendRef {
	return refsOf(*v.rule(&(*v.list)[i]).backends)
}
func (streamView[R]) mirrors(int) []gwv1.BackendObjectReference               { return nil }
func (streamView[R]) dropMirrors(int, func(gwv1.BackendObjectReference) bool) {}
func (v streamView[R]) dropBackends(i int, drop func(gwv1.BackendObjectReference) bool) {
	bs := v.rule(&(*v.list)[i]).backends
	*bs = slices.DeleteFunc(*bs, func(b gwv1.BackendRef) bool { return drop(b.BackendObjectReference) })
}
func (v streamView[R]) keep(keep func(i int) bool) { *v.list = keepRules(*v.list, keep) }
func (streamView[R]) ownRules() bool               { return false }

// keepRules keeps the rules that keep reports true for, in order.
func keepRules[R any](list []R, keep func(i int) bool) []R {
	out := make([]R, 0, len(list))
	for i := range list {
		if keep(i) {
			out = append(out, list[i])
		}
	}
	return out
}

func refsOf(refs []gwv1.BackendRef) []*gwv1.BackendRef {
	out := make([]*gwv1.BackendRef, 0, len(refs))
	for i := range refs {
		out = append(out, &refs[i])
	}
	return out
}
