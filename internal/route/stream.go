package route

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TLSRoute, TCPRoute and UDPRoute route connections or datagrams, not
// requests: one rule with the weighted backends and nothing else. The spec's
// parser already refused the features these kinds cannot carry.

func streamRule(p Params) (name *gwv1.SectionName, refs []gwv1.BackendRef) {
	if len(p.Rules) > 0 {
		name = p.Rules[0].Name
	}
	for _, b := range weighted(p) {
		refs = append(refs, b.ref)
	}
	return name, refs
}

func buildTLSRoute(p Params) (runtime.Object, field.ErrorList) {
	name, refs := streamRule(p)
	route := &gwv1.TLSRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: string(xr.KindTLSRoute)},
		ObjectMeta: objectMeta(p),
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: commonSpec(p),
			Hostnames:       append([]gwv1.Hostname(nil), p.Hostnames...),
			Rules:           []gwv1.TLSRouteRule{{Name: name, BackendRefs: refs}},
		},
	}
	if p.Version != v1beta1.RouteV1Alpha2 {
		return route, nil
	}
	old := &gwv1alpha2.TLSRoute{}
	return old, toV1Alpha2(route, old)
}

func buildTCPRoute(p Params) (runtime.Object, field.ErrorList) {
	name, refs := streamRule(p)
	route := &gwv1.TCPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: string(xr.KindTCPRoute)},
		ObjectMeta: objectMeta(p),
		Spec: gwv1.TCPRouteSpec{
			CommonRouteSpec: commonSpec(p),
			Rules:           []gwv1.TCPRouteRule{{Name: name, BackendRefs: refs}},
		},
	}
	if p.Version != v1beta1.RouteV1Alpha2 {
		return route, nil
	}
	old := &gwv1alpha2.TCPRoute{}
	return old, toV1Alpha2(route, old)
}

func buildUDPRoute(p Params) (runtime.Object, field.ErrorList) {
	name, refs := streamRule(p)
	route := &gwv1.UDPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: string(xr.KindUDPRoute)},
		ObjectMeta: objectMeta(p),
		Spec: gwv1.UDPRouteSpec{
			CommonRouteSpec: commonSpec(p),
			Rules:           []gwv1.UDPRouteRule{{Name: name, BackendRefs: refs}},
		},
	}
	if p.Version != v1beta1.RouteV1Alpha2 {
		return route, nil
	}
	old := &gwv1alpha2.UDPRoute{}
	return old, toV1Alpha2(route, old)
}

// toV1Alpha2 copies a v1 route into its v1alpha2 twin: the two versions
// share their shape, which is how the API server converts them too.
func toV1Alpha2(from, to runtime.Object) field.ErrorList {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u, to)
	}
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("apiVersion"), err)}
	}
	gv := schema.GroupVersion{Group: gwv1alpha2.GroupVersion.Group, Version: gwv1alpha2.GroupVersion.Version}
	to.GetObjectKind().SetGroupVersionKind(gv.WithKind(from.GetObjectKind().GroupVersionKind().Kind))
	return nil
}
