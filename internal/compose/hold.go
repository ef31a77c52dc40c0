package compose

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/decode"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Decode reads an observed object of a kind the function composes (a
// route, a Service, a ReferenceGrant, a BackendTLSPolicy) into its Gateway
// API or core type, at the version it was observed at, as the function
// composes it: its identity and its spec, without what the API server or
// other controllers added (status, labels, owner references, a Service's
// cluster IPs), so that applying it again claims no field the function
// never wrote. A value that does not fit its typed field is refused, never
// wrapped: a hold or a rescue re-emits what was observed, or nothing.
func Decode(obj map[string]any) (runtime.Object, error) {
	typed, err := decode.Typed(decode.AsComposed(obj), func(gvk schema.GroupVersionKind) runtime.Object {
		if newObject, ok := composedKinds[gvk]; ok {
			return newObject()
		}
		return route.New(gvk)
	})
	if svc, ok := typed.(*corev1.Service); ok {
		svc.Spec = serviceSpecAsComposed(svc.Spec)
	}
	return typed, err
}

// composedKinds are the kinds beside the routes that the function composes
// and a hold re-emits.
var composedKinds = map[schema.GroupVersionKind]func() runtime.Object{
	corev1.SchemeGroupVersion.WithKind(kindService):                              func() runtime.Object { return &corev1.Service{} },
	schema.GroupVersion(gwv1.GroupVersion).WithKind("ReferenceGrant"):            func() runtime.Object { return &gwv1.ReferenceGrant{} },
	schema.GroupVersion(gwv1beta1.GroupVersion).WithKind("ReferenceGrant"):       func() runtime.Object { return &gwv1beta1.ReferenceGrant{} },
	schema.GroupVersion(gwv1.GroupVersion).WithKind(served.KindBackendTLSPolicy): func() runtime.Object { return &gwv1.BackendTLSPolicy{} },
}

// serviceSpecAsComposed keeps the fields of a Service's spec that package
// proxy writes.
func serviceSpecAsComposed(spec corev1.ServiceSpec) corev1.ServiceSpec {
	out := corev1.ServiceSpec{Type: spec.Type, Selector: spec.Selector, ExternalName: spec.ExternalName}
	for _, p := range spec.Ports {
		out.Ports = append(out.Ports, corev1.ServicePort{
			Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort, AppProtocol: p.AppProtocol,
		})
	}
	return out
}

// Hold is what a hold composes: the objects that the previous run composed
// (of the keys observed, those the function composes on every run; see
// names.Key.Ours), as observed, re-emitted unchanged (identity and spec).
// routeReady is the route's readiness; Services and grants are ready once
// they exist.
func Hold(observed map[names.Key]map[string]any, routeReady bool) ([]Object, error) {
	out := make([]Object, 0, len(observed))
	for _, k := range slices.Sorted(maps.Keys(observed)) {
		if !k.Ours() {
			continue
		}
		obj, err := Decode(observed[k])
		if err != nil {
			return nil, err
		}
		ready := true
		if k.IsRoute() {
			ready = routeReady
		}
		out = append(out, Object{Key: k, Object: obj, Ready: ready})
	}
	return out, nil
}

// Held is what a hold composes.
type Held struct {
	Objects []Object
	// Zeroed are the backends that carried traffic in the previous
	// composition and that the current Input refuses: the hold sends them
	// nothing.
	Zeroed []xr.BackendID
}

// Held is what a hold composes under the current Input: the objects the
// previous run composed, as observed (see Hold), but never a grant, or a
// backend reference, that the Input no longer allows. A ReferenceGrant in a
// namespace the Input no longer allows is not re-emitted (so Crossplane
// deletes it), nor a grant's entry of a kind it no longer allows; in the
// route, a canary backend (as the previous run recorded it) that the Input
// refuses goes to weight 0, as an abort would, and so does a canary
// ExternalName proxy Service or Istio Hostname whose host the Input now
// refuses (that proxy Service is not re-emitted); a refused backend of a
// rule of its own is removed from its rule (the rule too, when nothing is
// left of it), and so is a mirror to any refused backend. The primary (the
// spec's, or one the spec no longer names) stays, as it would in any run:
// without its grant, the gateway itself refuses it. A preview route is
// held as it was, but for the same refusals, and not at all when it would
// send requests to a canary the Input refuses (see heldPreview). The
// route's readiness honours requireAcceptedRoute.
func (p *Plan) Held(observed map[names.Key]map[string]any, obs route.Observation) (Held, error) {
	objects, err := Hold(observed, RouteReady(p.CR, obs))
	if err != nil {
		return Held{}, err
	}
	var recorded []xr.BackendID
	if r := p.CR.Status.Rollout; r != nil {
		recorded = r.CanaryBackends
	}
	// Proxy Services the function composed: its own, whatever the Input
	// says of backendRef kinds; an ExternalName one is refused when the
	// Input now refuses its host.
	proxies, refusedProxies := map[string]bool{}, map[string]bool{}
	for _, o := range objects {
		if svc, ok := o.Object.(*corev1.Service); ok {
			proxies[svc.Name] = true
			if svc.Spec.Type == corev1.ServiceTypeExternalName && p.refusesExternalName(svc.Spec.ExternalName) {
				refusedProxies[svc.Name] = true
			}
		}
	}
	var held Held
	for _, o := range objects {
		switch obj := o.Object.(type) {
		case *gwv1.ReferenceGrant:
			if obj.Spec.To = p.allowedGrantTargets(obj.Namespace, obj.Spec.To); len(obj.Spec.To) == 0 {
				continue
			}
		case *gwv1beta1.ReferenceGrant:
			if obj.Spec.To = p.allowedGrantTargets(obj.Namespace, obj.Spec.To); len(obj.Spec.To) == 0 {
				continue
			}
		case *corev1.Service:
			id := xr.BackendID{Kind: kindService, Namespace: obj.Namespace, Name: obj.Name}
			if refusedProxies[obj.Name] && recordedAs(recorded, id) {
				continue
			}
		case *gwv1.BackendTLSPolicy:
			// It goes with its proxy Service, which has its name.
			id := xr.BackendID{Kind: kindService, Namespace: obj.Namespace, Name: obj.Name}
			if refusedProxies[obj.Name] && recordedAs(recorded, id) {
				continue
			}
		default:
			keep, zeroed, err := p.heldRoute(o, recorded, proxies, refusedProxies)
			if err != nil {
				return Held{}, err
			}
			if !keep {
				continue
			}
			held.Zeroed = append(held.Zeroed, zeroed...)
		}
		held.Objects = append(held.Objects, o)
	}
	return held, nil
}

// heldRoute is what a hold makes of a held route, in place, under the
// current Input: the preview route kept or not (see heldPreview), the
// route's refused canary backends zeroed, which it returns; any other
// object is kept as it is.
func (p *Plan) heldRoute(o Object, recorded []xr.BackendID, proxies, refusedProxies map[string]bool) (bool, []xr.BackendID, error) {
	// Each route's own rules tell its primaries (see heldPrimaries).
	p = p.planFor(o.Key)
	switch {
	case o.Key.IsPreview():
		return p.heldPreview(o.Object, p.refusedOf(o.Object, recorded, proxies, refusedProxies)), nil, nil
	case o.Key.IsRoute():
		zeroed, err := p.zeroRefused(o.Object, p.refusedOf(o.Object, recorded, proxies, refusedProxies))
		return err == nil, zeroed, err
	default:
		return true, nil, nil
	}
}

// Objects are what a run composes for the engine's decision, but for the
// analysis objects, and the canary backends it records: the route built at
// the decided weight (the canary cut from it when the rollout is aborted or
// failed), the proxy Services, their BackendTLSPolicies and the grants.
// While the decision holds the previous composition (a paused rollout
// waiting to restart), it is what the previous run composed, as observed,
// but for what the Input no longer allows, and the decision says so.
// observed are the composed resources Crossplane observed, by key. The
// preview route, of a spec that has one, is composed while the decision
// keeps the rollout active (see previewOn), and held with the rest.
func (p *Plan) Objects(built runtime.Object, obs route.Observation, d rollout.Decision, observed map[names.Key]map[string]any, preview PreviewState) ([]Object, []xr.BackendID, rollout.Decision, error) {
	if !d.HoldPrevious {
		if ph := d.Status.Phase; ph == xr.PhaseAborted || ph == xr.PhaseFailed {
			built = p.CutCanary(built)
		}
		exists := func(k names.Key) bool { _, ok := observed[k]; return ok }
		out := p.Desired(built, obs, exists)
		if p.previewOn(d, preview) {
			out = slices.Insert(out, 1, p.previewObject(preview))
		}
		return out, p.CanaryBackends(), d, nil
	}
	held, err := p.Held(observed, obs)
	if err != nil {
		return nil, nil, d, err
	}
	if len(held.Zeroed) > 0 {
		d = rollout.WithCanaryAtZero(d, "the function's Input no longer allows "+DescribeBackends(held.Zeroed))
	}
	for i, o := range held.Objects {
		if o.Key.IsPreview() {
			// Its own readiness, as the gateway reports it.
			held.Objects[i].Ready = RouteReady(p.CR, preview.Observed)
		}
	}
	var canaryBackends []xr.BackendID
	if r := p.CR.Status.Rollout; r != nil {
		canaryBackends = r.CanaryBackends
	}
	return held.Objects, canaryBackends, d, nil
}

// recordedAs reports whether a backend is among the recorded ones, on any
// port.
func recordedAs(recorded []xr.BackendID, id xr.BackendID) bool {
	return slices.ContainsFunc(recorded, func(r xr.BackendID) bool {
		return r.Group == id.Group && r.Kind == id.Kind && r.Namespace == id.Namespace && r.Name == id.Name
	})
}

// refusesExternalName reports whether the Input refuses an ExternalName
// proxy's host now.
func (p *Plan) refusesExternalName(host string) bool {
	return !p.Policy.AllowExternalNames || p.refusesHost(host)
}

// refusesHost reports whether a host is refused as an ExternalName or an
// Istio Hostname: cluster-local, local, a metadata or host alias, or under
// the Input's deniedExternalNames.
func (p *Plan) refusesHost(host string) bool {
	return len(xr.ExternalName(field.NewPath("host"), host)) > 0 || p.Policy.DeniedExternalName(host) != ""
}

// allowedGrantTargets are the entries of a held grant that the Input still
// allows: none in a namespace it no longer allows.
func (p *Plan) allowedGrantTargets(namespace string, to []gwv1.ReferenceGrantTo) []gwv1.ReferenceGrantTo {
	if !p.Policy.AllowsNamespace(namespace) {
		return nil
	}
	return slices.DeleteFunc(to, func(t gwv1.ReferenceGrantTo) bool {
		return !p.Policy.AllowsKind(schema.GroupKind{Group: string(t.Group), Kind: string(t.Kind)})
	})
}

// refusedRefs are the references of a held route that the Input refuses:
// the recorded canary backends (zero; zeroed those of them that carried
// traffic), the targets of mirrors, and the backends of rules of their own
// (dropped). ns is the route's namespace.
type refusedRefs struct {
	ns                             string
	zero, mirrors, zeroed, dropped []xr.BackendID
}

// refusedOf finds the references of a held route that the Input refuses.
func (p *Plan) refusedOf(obj runtime.Object, recorded []xr.BackendID, proxies, refusedProxies map[string]bool) refusedRefs {
	r := refusedRefs{ns: p.CR.RouteNamespace}
	if m, ok := obj.(metav1.Object); ok {
		r.ns = m.GetNamespace()
	}
	primaries := p.heldPrimaries(obj, recorded, r.ns)
	for _, ref := range route.References(obj, r.ns) {
		id := ref.ID
		proxy := id.Group == "" && id.Kind == kindService && id.Namespace == r.ns && proxies[id.Name]
		b := backend.Backend{
			Ref:       gwv1.BackendObjectReference{Group: ptr.To(gwv1.Group(id.Group)), Kind: ptr.To(gwv1.Kind(id.Kind)), Name: gwv1.ObjectName(id.Name)},
			Namespace: id.Namespace, FromBackendRef: !proxy,
		}
		refused := grant.RefusalReason(b, r.ns, p.Policy) != "" ||
			(proxy && refusedProxies[id.Name]) ||
			(id.Group == backend.KindIstioHostname.Group && id.Kind == backend.KindIstioHostname.Kind && p.refusesHost(id.Name))
		switch {
		case !refused:
		case ref.Mirror:
			r.mirrors = append(r.mirrors, id)
		case recordedAs(recorded, id):
			r.zero = append(r.zero, id)
			if ref.Weight > 0 && !slices.ContainsFunc(r.zeroed, func(z xr.BackendID) bool { return reflect.DeepEqual(z, id) }) {
				r.zeroed = append(r.zeroed, id)
			}
		case !recordedAs(primaries, id):
			// The backend of a rule of its own: the rollout never weighs
			// it, so nothing falls back to it, and the rule goes.
			r.dropped = append(r.dropped, id)
		}
	}
	return r
}

// zeroRefused sends nothing to the recorded canary backends of a held route
// that the Input refuses, and removes the mirrors to any refused backend; it
// returns the canary backends that carried traffic.
func (p *Plan) zeroRefused(obj runtime.Object, r refusedRefs) ([]xr.BackendID, error) {
	if len(r.zero) > 0 {
		if err := cutCanary(obj, r.zero, r.ns); err != nil {
			return nil, errors.Wrap(err, "cannot hold the previous route")
		}
	}
	if !route.DropBackends(obj, r.dropped, r.ns) {
		return nil, errors.New("cannot hold the previous route: no rule would be left without the backends the function's Input no longer allows")
	}
	route.DropMirrors(obj, r.mirrors, r.ns)
	return r.zeroed, nil
}

// heldPrimaries are the primary's backends in a held route: the spec's
// primary, and every backend that a weighted rule weighs against a recorded
// canary backend (the previous composition's primary, which the spec may no
// longer name). A weighted rule is one of the rollout's (route.RolloutRules,
// as the spec's rules tell them) with the shape the function composes: two
// backends, the primary then the canary. Any other backend is a rule of its
// own's, even one that splits its requests with the canary.
func (p *Plan) heldPrimaries(obj runtime.Object, recorded []xr.BackendID, ns string) []xr.BackendID {
	out := []xr.BackendID{p.Primary.ID()}
	weighted := route.RolloutRules(obj, route.SpecRules(p.CR.Spec.Rules))
	for i, rule := range route.RuleBackends(obj, ns) {
		if weighted[i] && len(rule) == 2 && recordedAs(recorded, rule[1]) && !recordedAs(recorded, rule[0]) {
			out = append(out, rule[0])
		}
	}
	return out
}
