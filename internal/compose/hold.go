package compose

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/crossplane-contrib/function-canary-route/internal/route"
)

// Decode reads an observed object of a kind the function composes (a
// route, a Service, a ReferenceGrant) into its Gateway API or core type,
// at the version it was observed at.
func Decode(obj map[string]any) (runtime.Object, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("cannot read the observed %s: %w", kind, err)
	}
	var into runtime.Object
	switch gvk := gv.WithKind(kind); gvk {
	case corev1.SchemeGroupVersion.WithKind("Service"):
		into = &corev1.Service{}
	case kindOf(gwv1.GroupVersion, "ReferenceGrant"):
		into = &gwv1.ReferenceGrant{}
	case kindOf(gwv1beta1.GroupVersion, "ReferenceGrant"):
		into = &gwv1beta1.ReferenceGrant{}
	default:
		return route.Decode(obj)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return nil, fmt.Errorf("cannot read the observed %s: %w", kind, err)
	}
	return into, nil
}

// AsComposed keeps an observed object as the function composes it: its
// identity and its spec, without what the API server or other controllers
// added (status, labels, owner references, a Service's cluster IPs), so that
// applying it again claims no field the function never wrote.
func AsComposed(obj runtime.Object) runtime.Object {
	identity := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}
	}
	switch o := obj.(type) {
	case *corev1.Service:
		return &corev1.Service{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: serviceSpecAsComposed(o.Spec)}
	case *gwv1.ReferenceGrant:
		return &gwv1.ReferenceGrant{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: o.Spec}
	case *gwv1beta1.ReferenceGrant:
		return &gwv1beta1.ReferenceGrant{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: o.Spec}
	default:
		return route.AsComposed(obj)
	}
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

// Hold is what a hold composes: the objects that the previous run composed,
// as observed, re-emitted unchanged (identity and spec). routeReady is the
// route's readiness; Services and grants are ready once they exist.
func Hold(observed map[Key]map[string]any, routeReady bool) ([]Object, error) {
	out := make([]Object, 0, len(observed))
	for _, k := range slices.Sorted(maps.Keys(observed)) {
		obj, err := Decode(observed[k])
		if err != nil {
			return nil, err
		}
		ready := true
		if k.IsRoute() {
			ready = routeReady
		}
		out = append(out, Object{Key: k, Object: AsComposed(obj), Ready: ready})
	}
	return out, nil
}

// kindOf is a kind of a Gateway API group version.
func kindOf(gv metav1.GroupVersion, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}
}
