package route

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/internal/decode"
)

// Decode reads an observed route into its Gateway API type, at the version
// it was observed at: a route the function composed on an earlier run, of
// any kind and version it composes. A value that does not fit its typed
// field (a weight beyond int32) is refused, never wrapped: what the function
// re-emits of an observed route must be what was observed.
func Decode(obj map[string]any) (runtime.Object, error) {
	return decode.Typed(obj, New)
}

// New is an empty route of a kind and version the function composes; nil
// for any other.
func New(gvk schema.GroupVersionKind) runtime.Object {
	switch gvk {
	case kindOf(gwv1.GroupVersion, "HTTPRoute"):
		return &gwv1.HTTPRoute{}
	case kindOf(gwv1.GroupVersion, "GRPCRoute"):
		return &gwv1.GRPCRoute{}
	case kindOf(gwv1.GroupVersion, "TLSRoute"):
		return &gwv1.TLSRoute{}
	case kindOf(gwv1.GroupVersion, "TCPRoute"):
		return &gwv1.TCPRoute{}
	case kindOf(gwv1.GroupVersion, "UDPRoute"):
		return &gwv1.UDPRoute{}
	case kindOf(gwv1alpha2.GroupVersion, "GRPCRoute"):
		return &gwv1alpha2.GRPCRoute{}
	case kindOf(gwv1alpha2.GroupVersion, "UDPRoute"):
		return &gwv1alpha2.UDPRoute{}
	case kindOf(gwv1alpha2.GroupVersion, "TLSRoute"):
		return &gwv1alpha2.TLSRoute{}
	case kindOf(gwv1alpha2.GroupVersion, "TCPRoute"):
		return &gwv1alpha2.TCPRoute{}
	default:
		return nil
	}
}

// AsComposed keeps a route as the function composes it: its identity and
// its spec, without its status or the metadata that Crossplane, the API
// server and other controllers own.
func AsComposed(obj runtime.Object) runtime.Object {
	identity := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	}
	switch r := obj.(type) {
	case *gwv1.HTTPRoute:
		return &gwv1.HTTPRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1.GRPCRoute:
		return &gwv1.GRPCRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1.TLSRoute:
		return &gwv1.TLSRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1.TCPRoute:
		return &gwv1.TCPRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1.UDPRoute:
		return &gwv1.UDPRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1alpha2.GRPCRoute:
		return &gwv1alpha2.GRPCRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1alpha2.UDPRoute:
		return &gwv1alpha2.UDPRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1alpha2.TLSRoute:
		return &gwv1alpha2.TLSRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	case *gwv1alpha2.TCPRoute:
		return &gwv1alpha2.TCPRoute{TypeMeta: r.TypeMeta, ObjectMeta: identity(r.ObjectMeta), Spec: r.Spec}
	default:
		return obj
	}
}

// kindOf is a kind of a Gateway API group version.
func kindOf(gv metav1.GroupVersion, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}
}
