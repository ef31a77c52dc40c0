package proxy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// BackendTLSPolicy builds the BackendTLSPolicy of a side with tls, or
// returns nil for a side without: it targets the side's proxy Service, so
// TLS towards the backend survives the proxy (a policy that targets the
// original Service would not apply to the proxy's traffic). It has the
// proxy Service's name, in the route's namespace.
func BackendTLSPolicy(cr *xr.CanaryRoute, role xr.Role, version string) *gwv1.BackendTLSPolicy {
	side := cr.Spec.Primary
	if role == xr.RoleCanary {
		side = cr.Spec.Canary
	}
	if side.TLS == nil || !side.ComposesService() {
		return nil
	}
	if version == "" {
		version = gwv1.GroupVersion.Version
	}
	name := xr.ProxyServiceName(cr.RouteName, role)
	target := gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: gwv1.ObjectName(name)}
	refs := []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: target}}
	// With spec.routes, the ports of HTTPRoutes and GRPCRoutes alone,
	// whose traffic the gateway encrypts towards the backend, when a stream
	// route has a port of its own (see httpPorts): a TCPRoute's or a
	// TLSRoute's stream (already TLS) must not be wrapped in TLS.
	if ports := httpPorts(cr); ports != nil {
		refs = make([]gwv1.LocalPolicyTargetReferenceWithSectionName, 0, len(ports))
		for _, p := range ports {
			refs = append(refs, gwv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: target, SectionName: ptr.To(gwv1.SectionName(p))})
		}
	}
	return &gwv1.BackendTLSPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupName + "/" + version, Kind: "BackendTLSPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cr.RouteNamespace},
		Spec: gwv1.BackendTLSPolicySpec{
			TargetRefs: refs,
			Validation: *side.TLS.DeepCopy(),
		},
	}
}
