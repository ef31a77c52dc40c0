package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Valid baselines: every test case mutates a fresh one.

func meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "podinfo", Namespace: "test", Labels: map[string]string{"app": "podinfo"}}
}

func typeMeta(gv, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv, Kind: kind}
}

func backend(name string, weight int32) gwv1.BackendRef {
	return gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To[gwv1.PortNumber](9898)},
		Weight:                 ptr.To(weight),
	}
}

func parentRefs() []gwv1.ParentReference {
	return []gwv1.ParentReference{
		{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress"), SectionName: ptr.To[gwv1.SectionName]("http")},
		{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress"), SectionName: ptr.To[gwv1.SectionName]("https")},
	}
}

func headerFilter(t gwv1.HTTPRouteFilterType, name, value string) gwv1.HTTPRouteFilter {
	f := gwv1.HTTPRouteFilter{Type: t}
	h := &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(name), Value: value}}, Remove: []string{"x-debug"}}
	if t == gwv1.HTTPRouteFilterRequestHeaderModifier {
		f.RequestHeaderModifier = h
	} else {
		f.ResponseHeaderModifier = h
	}
	return f
}

func httpBackends() []gwv1.HTTPBackendRef {
	return []gwv1.HTTPBackendRef{
		{BackendRef: backend("podinfo-primary", 90), Filters: []gwv1.HTTPRouteFilter{headerFilter(gwv1.HTTPRouteFilterResponseHeaderModifier, "x-side", "primary")}},
		{BackendRef: backend("podinfo-canary", 10), Filters: []gwv1.HTTPRouteFilter{headerFilter(gwv1.HTTPRouteFilterResponseHeaderModifier, "x-side", "canary")}},
	}
}

// httpRoute is the typical route the function composes: 2 parentRefs, 2
// hostnames, 3 rules with matches and header filters, 2 weighted backendRefs
// each with a filter.
func httpRoute() *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "HTTPRoute"),
		ObjectMeta: meta(),
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Hostnames:       []gwv1.Hostname{"www.example.com", "*.example.org"},
			Rules: []gwv1.HTTPRouteRule{
				{
					Name: ptr.To[gwv1.SectionName]("ab"),
					Matches: []gwv1.HTTPRouteMatch{{
						Path:    &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")},
						Headers: []gwv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}},
					}},
					Filters:     []gwv1.HTTPRouteFilter{headerFilter(gwv1.HTTPRouteFilterRequestHeaderModifier, "x-route", "ab")},
					BackendRefs: httpBackends(),
				},
				{
					Name: ptr.To[gwv1.SectionName]("api"),
					Matches: []gwv1.HTTPRouteMatch{
						{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")}, Method: ptr.To(gwv1.HTTPMethodGet)},
						{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/healthz")}, QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "v", Value: "2"}}},
					},
					Filters:     []gwv1.HTTPRouteFilter{headerFilter(gwv1.HTTPRouteFilterRequestHeaderModifier, "x-route", "api")},
					BackendRefs: httpBackends(),
					Timeouts:    &gwv1.HTTPRouteTimeouts{Request: ptr.To[gwv1.Duration]("10s"), BackendRequest: ptr.To[gwv1.Duration]("5s")},
				},
				{
					Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
					Filters:     []gwv1.HTTPRouteFilter{headerFilter(gwv1.HTTPRouteFilterRequestHeaderModifier, "x-route", "default")},
					BackendRefs: httpBackends(),
				},
			},
		},
	}
}

func grpcBackends() []gwv1.GRPCBackendRef {
	return []gwv1.GRPCBackendRef{
		{BackendRef: backend("podinfo-primary", 90), Filters: []gwv1.GRPCRouteFilter{{
			Type:                   gwv1.GRPCRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-side", Value: "primary"}}},
		}}},
		{BackendRef: backend("podinfo-canary", 10)},
	}
}

func grpcRoute() *gwv1.GRPCRoute {
	return &gwv1.GRPCRoute{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "GRPCRoute"),
		ObjectMeta: meta(),
		Spec: gwv1.GRPCRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Hostnames:       []gwv1.Hostname{"grpc.example.com"},
			Rules: []gwv1.GRPCRouteRule{
				{
					Name: ptr.To[gwv1.SectionName]("echo"),
					Matches: []gwv1.GRPCRouteMatch{{
						Method:  &gwv1.GRPCMethodMatch{Service: ptr.To("grpc.health.v1.Health"), Method: ptr.To("Check")},
						Headers: []gwv1.GRPCHeaderMatch{{Name: "x-canary", Value: "always"}},
					}},
					Filters: []gwv1.GRPCRouteFilter{{
						Type:                  gwv1.GRPCRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "x-route", Value: "echo"}}},
					}},
					BackendRefs: grpcBackends(),
				},
				{BackendRefs: grpcBackends()},
			},
		},
	}
}

func tlsRoute() *gwv1.TLSRoute {
	return &gwv1.TLSRoute{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "TLSRoute"),
		ObjectMeta: meta(),
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Hostnames:       []gwv1.Hostname{"tls.example.com", "*.example.net"},
			Rules:           []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}}},
		},
	}
}

func tcpRoute() *gwv1.TCPRoute {
	return &gwv1.TCPRoute{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "TCPRoute"),
		ObjectMeta: meta(),
		Spec: gwv1.TCPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Rules:           []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}}},
		},
	}
}

func tlsRouteV1Alpha2() *gwv1alpha2.TLSRoute {
	return &gwv1alpha2.TLSRoute{
		TypeMeta:   typeMeta(gwv1alpha2.GroupVersion.String(), "TLSRoute"),
		ObjectMeta: meta(),
		Spec: gwv1alpha2.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Hostnames:       []gwv1.Hostname{"tls.example.com"},
			Rules: []gwv1alpha2.TLSRouteRule{
				{Name: ptr.To[gwv1.SectionName]("a"), BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}},
				{Name: ptr.To[gwv1.SectionName]("b"), BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 1)}},
			},
		},
	}
}

func tcpRouteV1Alpha2() *gwv1alpha2.TCPRoute {
	return &gwv1alpha2.TCPRoute{
		TypeMeta:   typeMeta(gwv1alpha2.GroupVersion.String(), "TCPRoute"),
		ObjectMeta: meta(),
		Spec: gwv1alpha2.TCPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Rules: []gwv1alpha2.TCPRouteRule{
				{BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}},
			},
		},
	}
}

func udpRoute() *gwv1.UDPRoute {
	return &gwv1.UDPRoute{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "UDPRoute"),
		ObjectMeta: meta(),
		Spec: gwv1.UDPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Rules:           []gwv1.UDPRouteRule{{BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}}},
		},
	}
}

func udpRouteV1Alpha2() *gwv1alpha2.UDPRoute {
	return &gwv1alpha2.UDPRoute{
		TypeMeta:   typeMeta(gwv1alpha2.GroupVersion.String(), "UDPRoute"),
		ObjectMeta: meta(),
		Spec: gwv1alpha2.UDPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRefs()},
			Rules: []gwv1alpha2.UDPRouteRule{
				{Name: ptr.To[gwv1.SectionName]("a"), BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 90), backend("podinfo-canary", 10)}},
				{BackendRefs: []gwv1.BackendRef{backend("podinfo-primary", 1)}},
			},
		},
	}
}

func serviceTarget(name string, section *gwv1.SectionName) gwv1.LocalPolicyTargetReferenceWithSectionName {
	return gwv1.LocalPolicyTargetReferenceWithSectionName{
		LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: gwv1.ObjectName(name)},
		SectionName:                section,
	}
}

// backendTLSPolicy is the policy the function composes for its proxy
// Services: CA certificates from a ConfigMap and the backend's hostname.
func backendTLSPolicy() *gwv1.BackendTLSPolicy {
	return &gwv1.BackendTLSPolicy{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "BackendTLSPolicy"),
		ObjectMeta: meta(),
		Spec: gwv1.BackendTLSPolicySpec{
			TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{
				serviceTarget("podinfo-primary-proxy", nil),
				serviceTarget("podinfo-canary-proxy", ptr.To[gwv1.SectionName]("https")),
			},
			Validation: gwv1.BackendTLSPolicyValidation{
				CACertificateRefs: []gwv1.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: "podinfo-ca"}},
				Hostname:          "podinfo.internal",
			},
		},
	}
}

// backendTLSPolicySystem is the other form: the system's CA certificates,
// and subject alternative names.
func backendTLSPolicySystem() *gwv1.BackendTLSPolicy {
	p := backendTLSPolicy()
	p.Spec.Validation = gwv1.BackendTLSPolicyValidation{
		WellKnownCACertificates: ptr.To(gwv1.WellKnownCACertificatesSystem),
		Hostname:                "podinfo.example.com",
		SubjectAltNames: []gwv1.SubjectAltName{
			{Type: gwv1.HostnameSubjectAltNameType, Hostname: "*.example.com"},
			{Type: gwv1.URISubjectAltNameType, URI: "spiffe://cluster.local/ns/test/sa/podinfo"},
		},
	}
	return p
}

func backendTLSPolicyV1Alpha3(p *gwv1.BackendTLSPolicy) *gwv1alpha3.BackendTLSPolicy {
	a := gwv1alpha3.BackendTLSPolicy(*p)
	a.TypeMeta = typeMeta(gwv1alpha3.GroupVersion.String(), "BackendTLSPolicy")
	return &a
}

func referenceGrant() *gwv1.ReferenceGrant {
	return &gwv1.ReferenceGrant{
		TypeMeta:   typeMeta(gwv1.GroupVersion.String(), "ReferenceGrant"),
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-from-test", Namespace: "monitoring"},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: "test"}},
			To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: "Service", Name: ptr.To[gwv1.ObjectName]("canary-proxy")}},
		},
	}
}

func referenceGrantV1Beta1() *gwv1beta1.ReferenceGrant {
	g := gwv1beta1.ReferenceGrant(*referenceGrant())
	g.TypeMeta = typeMeta(gwv1beta1.GroupVersion.String(), "ReferenceGrant")
	return &g
}
