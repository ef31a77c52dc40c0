package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// route is a parsed CanaryRoute podinfo in namespace test, spec.port 9898.
func route(kind xr.RouteKind, primary, canary xr.Side) *xr.CanaryRoute {
	return &xr.CanaryRoute{
		Name:           "podinfo-x7k2p",
		Scope:          xr.ScopeCluster,
		RouteNamespace: "test",
		RouteName:      "podinfo",
		Spec:           xr.Spec{Kind: kind, Port: 9898, Primary: primary, Canary: canary},
	}
}

func selecting(appProtocol string, targetPort *intstr.IntOrString) xr.Side {
	return xr.Side{Service: &xr.ServiceSource{
		Selector:    map[string]string{"app.kubernetes.io/name": "podinfo", "track": "stable"},
		TargetPort:  targetPort,
		AppProtocol: appProtocol,
	}}
}

func backendRef() xr.Side {
	return xr.Side{BackendRef: &gwv1.BackendObjectReference{Name: "canary-proxy", Port: ptr.To[gwv1.PortNumber](3456)}}
}

// clusterIP is the expected ClusterIP Service of a side.
func clusterIP(name string, port corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app.kubernetes.io/name": "podinfo", "track": "stable"},
			Ports:    []corev1.ServicePort{port},
		},
	}
}

// servicePort is a TCP port 9898 with a name, target and appProtocol.
func servicePort(name string, target intstr.IntOrString, appProtocol string) corev1.ServicePort {
	p := corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: 9898, TargetPort: target}
	if appProtocol != "" {
		p.AppProtocol = ptr.To(appProtocol)
	}
	return p
}

// validateService checks a Service with the API server's rules that
// apimachinery exposes: names, ports, selector and externalName.
func validateService(t *testing.T, svc *corev1.Service) {
	t.Helper()
	var problems []string
	check := func(what string, msgs []string) {
		for _, m := range msgs {
			problems = append(problems, what+": "+m)
		}
	}
	check("name", validation.IsDNS1035Label(svc.Name))
	check("namespace", validation.IsDNS1123Label(svc.Namespace))
	for k, v := range svc.Spec.Selector {
		check("selector key", validation.IsQualifiedName(k))
		check("selector value", validation.IsValidLabelValue(v))
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP:
		if len(svc.Spec.Selector) == 0 {
			problems = append(problems, "a ClusterIP proxy without a selector")
		}
		if svc.Spec.ExternalName != "" {
			problems = append(problems, "a ClusterIP Service with an externalName")
		}
	case corev1.ServiceTypeExternalName:
		check("externalName", validation.IsDNS1123Subdomain(strings.TrimSuffix(svc.Spec.ExternalName, ".")))
		if len(svc.Spec.Selector) > 0 {
			problems = append(problems, "an ExternalName Service with a selector")
		}
	default:
		problems = append(problems, "type "+string(svc.Spec.Type))
	}
	if len(svc.Spec.Ports) == 0 {
		problems = append(problems, "want a port")
	}
	for _, p := range svc.Spec.Ports {
		check("port name", validation.IsValidPortName(p.Name))
		check("port", validation.IsValidPortNum(int(p.Port)))
		if p.Protocol != corev1.ProtocolTCP && p.Protocol != corev1.ProtocolUDP {
			problems = append(problems, "protocol "+string(p.Protocol))
		}
		switch {
		case svc.Spec.Type == corev1.ServiceTypeExternalName:
		case p.TargetPort.Type == intstr.Int:
			check("targetPort", validation.IsValidPortNum(p.TargetPort.IntValue()))
		default:
			check("targetPort", validation.IsValidPortName(p.TargetPort.StrVal))
		}
		if p.AppProtocol != nil {
			check("appProtocol", validation.IsQualifiedName(*p.AppProtocol))
		}
	}
	if len(problems) > 0 {
		t.Errorf("invalid Service %s: %s", svc.Name, strings.Join(problems, "; "))
	}
}

func TestService(t *testing.T) {
	target := intstr.FromInt32(9898)
	type args struct {
		cr   *xr.CanaryRoute
		role xr.Role
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *corev1.Service
	}{
		"ClusterIP": {
			reason: "A service side composes a ClusterIP Service <routeName>-primary that selects the pods, one TCP port named http, targetPort spec.port.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("http", target, "")),
		},
		"Canary": {
			reason: "The canary's proxy is <routeName>-canary.",
			args:   args{cr: route(xr.KindHTTPRoute, backendRef(), selecting("", nil)), role: xr.RoleCanary},
			want:   clusterIP("podinfo-canary", servicePort("http", target, "")),
		},
		"StreamPortWithoutAppProtocol": {
			reason: "Attack: with spec.routes, the side's appProtocol goes on the HTTPRoute's port, not on a TCPRoute's port of its own: a gateway refuses a backend whose appProtocol its route cannot speak.",
			args: args{cr: withEntries(route(xr.KindHTTPRoute, selecting("kubernetes.io/h2c", nil), backendRef()),
				xr.Entry{Name: "web", Kind: xr.KindHTTPRoute, Port: 9898}, xr.Entry{Name: "db", Kind: xr.KindTCPRoute, Port: 5432, PortSet: true}), role: xr.RolePrimary},
			want: func() *corev1.Service {
				svc := clusterIP("podinfo-primary", servicePort("http-9898", target, "kubernetes.io/h2c"))
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "tcp-5432", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)})
				return svc
			}(),
		},
		"UDP": {
			reason: "A UDPRoute's proxy Service has a UDP port named udp.",
			args:   args{cr: route(xr.KindUDPRoute, selecting("", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", corev1.ServicePort{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 9898, TargetPort: target}),
		},
		"RouteName": {
			reason: "The proxy is named after the route, not the XR.",
			args: args{cr: func() *xr.CanaryRoute {
				cr := route(xr.KindHTTPRoute, selecting("", nil), backendRef())
				cr.RouteName = "storefront"
				return cr
			}(), role: xr.RolePrimary},
			want: clusterIP("storefront-primary", servicePort("http", target, "")),
		},
		"TargetPortNumber": {
			reason: "targetPort as a number is kept.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("", ptr.To(intstr.FromInt32(8080))), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("http", intstr.FromInt32(8080), "")),
		},
		"TargetPortName": {
			reason: "targetPort as a name is kept.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("", ptr.To(intstr.FromString("http-alt"))), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("http", intstr.FromString("http-alt"), "")),
		},
		"AppProtocolH2C": {
			reason: "kubernetes.io/h2c names the port h2c and is set as the port's appProtocol.",
			args:   args{cr: route(xr.KindHTTPRoute, backendRef(), selecting("kubernetes.io/h2c", nil)), role: xr.RoleCanary},
			want:   clusterIP("podinfo-canary", servicePort("h2c", target, "kubernetes.io/h2c")),
		},
		"AppProtocolCustom": {
			reason: "An unknown protocol names the port after its last path segment when that is a valid port name.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("example.com/thrift", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("thrift", target, "example.com/thrift")),
		},
		"AppProtocolInvalidPortName": {
			reason: "A protocol whose last segment is no valid port name falls back to the kind's default name.",
			args:   args{cr: route(xr.KindGRPCRoute, selecting("example.com/my_proto", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("grpc", target, "example.com/my_proto")),
		},
		"GRPCRoute": {
			reason: "A GRPCRoute's proxy port is named grpc by default.",
			args:   args{cr: route(xr.KindGRPCRoute, selecting("", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("grpc", target, "")),
		},
		"TLSRoute": {
			reason: "A TLSRoute's proxy port is named tls by default.",
			args:   args{cr: route(xr.KindTLSRoute, selecting("", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("tls", target, "")),
		},
		"TCPRoute": {
			reason: "A TCPRoute's proxy port is named tcp by default.",
			args:   args{cr: route(xr.KindTCPRoute, selecting("", nil), backendRef()), role: xr.RolePrimary},
			want:   clusterIP("podinfo-primary", servicePort("tcp", target, "")),
		},
		"ExternalName": {
			reason: "An externalName side composes an ExternalName Service with the host written fully qualified (a trailing dot: no search domain is ever tried) and spec.port, without a selector or target.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("", nil), xr.Side{ExternalName: "canary.example.com"}), role: xr.RoleCanary},
			want: &corev1.Service{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-canary", Namespace: "test"},
				Spec: corev1.ServiceSpec{
					Type:         corev1.ServiceTypeExternalName,
					ExternalName: "canary.example.com.",
					Ports:        []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 9898, TargetPort: intstr.FromInt32(9898)}},
				},
			},
		},
		"ExternalNameTCP": {
			reason: "An ExternalName proxy of a TCPRoute names its port tcp; a host already written fully qualified keeps its one trailing dot; the targetPort is the port, as the API server would default it.",
			args:   args{cr: route(xr.KindTCPRoute, xr.Side{ExternalName: "db.example.com."}, backendRef()), role: xr.RolePrimary},
			want: &corev1.Service{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary", Namespace: "test"},
				Spec: corev1.ServiceSpec{
					Type:         corev1.ServiceTypeExternalName,
					ExternalName: "db.example.com.",
					Ports:        []corev1.ServicePort{{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: 9898, TargetPort: intstr.FromInt32(9898)}},
				},
			},
		},
		"BackendRef": {
			reason: "A backendRef side composes no Service.",
			args:   args{cr: route(xr.KindHTTPRoute, selecting("", nil), backendRef()), role: xr.RoleCanary},
			want:   nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Service(tc.args.cr, tc.args.role)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nService(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got != nil {
				validateService(t, got)
			}
		})
	}
}

func TestPortName(t *testing.T) {
	type args struct{ appProtocol, fallback string }
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"HTTP":        {reason: "http is http.", args: args{"http", "grpc"}, want: "http"},
		"HTTPUpper":   {reason: "Protocols are matched without regard to case.", args: args{"HTTP", "grpc"}, want: "http"},
		"HTTPS":       {reason: "https is https.", args: args{"https", "http"}, want: "https"},
		"H2C":         {reason: "kubernetes.io/h2c is h2c.", args: args{"kubernetes.io/h2c", "http"}, want: "h2c"},
		"H2CShort":    {reason: "h2c is h2c.", args: args{"h2c", "http"}, want: "h2c"},
		"GRPC":        {reason: "grpc is grpc.", args: args{"grpc", "http"}, want: "grpc"},
		"WS":          {reason: "kubernetes.io/ws is ws.", args: args{"kubernetes.io/ws", "http"}, want: "ws"},
		"WSS":         {reason: "kubernetes.io/wss is wss.", args: args{"kubernetes.io/wss", "http"}, want: "wss"},
		"TCP":         {reason: "tcp is tcp.", args: args{"tcp", "http"}, want: "tcp"},
		"TLS":         {reason: "tls is tls.", args: args{"tls", "http"}, want: "tls"},
		"LastSegment": {reason: "An unknown protocol's last path segment, lowercased, when it is a port name.", args: args{"istio.io/Mongo", "tcp"}, want: "mongo"},
		"Plain":       {reason: "An unknown protocol without a path is its own name when valid.", args: args{"redis", "tcp"}, want: "redis"},
		"TooLong":     {reason: "A segment longer than 15 characters is no port name: fallback.", args: args{"example.com/averyveryverylongname", "http"}, want: "http"},
		"NoLetter":    {reason: "A segment without a letter is no port name: fallback.", args: args{"example.com/123", "tcp"}, want: "tcp"},
		"Underscore":  {reason: "A segment with '_' is no port name: fallback.", args: args{"my_proto", "grpc"}, want: "grpc"},
		"DoubleDash":  {reason: "A segment with '--' is no port name: fallback.", args: args{"example.com/a--b", "tls"}, want: "tls"},
		"TrailingSep": {reason: "An empty last segment falls back.", args: args{"example.com/", "http"}, want: "http"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PortName(tc.args.appProtocol, tc.args.fallback)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPortName(%q, %q): -want, +got:\n%s", tc.reason, tc.args.appProtocol, tc.args.fallback, diff)
			}
			if msgs := validation.IsValidPortName(got); len(msgs) > 0 {
				t.Errorf("%s\nPortName(...) = %q is no valid port name: %v", tc.reason, got, msgs)
			}
		})
	}
}

func TestBackendTLSPolicy(t *testing.T) {
	system := &gwv1.BackendTLSPolicyValidation{Hostname: "podinfo.internal", WellKnownCACertificates: ptr.To(gwv1.WellKnownCACertificatesSystem)}
	withTLS := func(side xr.Side, v *gwv1.BackendTLSPolicyValidation) xr.Side {
		side.TLS = v
		return side
	}
	cases := map[string]struct {
		reason string
		cr     *xr.CanaryRoute
		role   xr.Role
		want   *gwv1.BackendTLSPolicy
	}{
		"ServiceSide": {
			reason: "A service side with tls gets a BackendTLSPolicy of its proxy Service's name that targets that Service, with the side's validation.",
			cr:     route(xr.KindHTTPRoute, withTLS(selecting("https", nil), system), backendRef()),
			role:   xr.RolePrimary,
			want: &gwv1.BackendTLSPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "BackendTLSPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary", Namespace: "test"},
				Spec: gwv1.BackendTLSPolicySpec{
					TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: "podinfo-primary"}}},
					Validation: *system,
				},
			},
		},
		"ExternalNameSide": {
			reason: "An externalName side's proxy Service gets one too.",
			cr:     route(xr.KindHTTPRoute, selecting("", nil), withTLS(xr.Side{ExternalName: "canary.example.net"}, system)),
			role:   xr.RoleCanary,
			want: &gwv1.BackendTLSPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "BackendTLSPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-canary", Namespace: "test"},
				Spec: gwv1.BackendTLSPolicySpec{
					TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: "podinfo-canary"}}},
					Validation: *system,
				},
			},
		},
		"StreamRoutePort": {
			reason: "Attack: with spec.routes, a TCPRoute on a port of its own beside an HTTPRoute: the policy targets the HTTPRoute's port by name, never the whole Service, whose TCPRoute port carries a stream the gateway must not wrap in TLS.",
			cr: withEntries(route(xr.KindHTTPRoute, withTLS(selecting("", nil), system), backendRef()),
				xr.Entry{Name: "web", Kind: xr.KindHTTPRoute, Port: 9898}, xr.Entry{Name: "db", Kind: xr.KindTCPRoute, Port: 5432, PortSet: true}),
			role: xr.RolePrimary,
			want: &gwv1.BackendTLSPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "BackendTLSPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary", Namespace: "test"},
				Spec: gwv1.BackendTLSPolicySpec{
					TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: "podinfo-primary"}, SectionName: ptr.To[gwv1.SectionName]("http-9898")}},
					Validation: *system,
				},
			},
		},
		"HTTPAndGRPCPorts": {
			reason: "With spec.routes whose every port is an HTTPRoute's or a GRPCRoute's, the policy targets the whole Service.",
			cr: withEntries(route(xr.KindHTTPRoute, withTLS(selecting("", nil), system), backendRef()),
				xr.Entry{Name: "web", Kind: xr.KindHTTPRoute, Port: 9898}, xr.Entry{Name: "grpc", Kind: xr.KindGRPCRoute, Port: 9999, PortSet: true}),
			role: xr.RolePrimary,
			want: &gwv1.BackendTLSPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "BackendTLSPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary", Namespace: "test"},
				Spec: gwv1.BackendTLSPolicySpec{
					TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "", Kind: "Service", Name: "podinfo-primary"}}},
					Validation: *system,
				},
			},
		},
		"NoTLS": {
			reason: "A side without tls gets none.",
			cr:     route(xr.KindHTTPRoute, selecting("", nil), backendRef()),
			role:   xr.RolePrimary,
		},
		"BackendRefSide": {
			reason: "A backendRef side composes no proxy Service, so no policy either (xr.Parse refuses tls there).",
			cr:     route(xr.KindHTTPRoute, selecting("", nil), withTLS(backendRef(), system)),
			role:   xr.RoleCanary,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BackendTLSPolicy(tc.cr, tc.role, "v1")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBackendTLSPolicy(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got == nil {
				return
			}
			if errs := admission.BackendTLSPolicy(got); len(errs) > 0 {
				t.Errorf("%s\nthe function's checks reject the policy: %v", tc.reason, errs)
			}
			for _, c := range []crdschema.Channel{crdschema.Standard, crdschema.Experimental} {
				if errs := crdschema.GatewayAPI(t, c).Validate(got); len(errs) > 0 {
					t.Errorf("%s\nthe %s Gateway API CRDs reject the policy: %v", tc.reason, c, errs)
				}
			}
		})
	}
}

// withEntries is a CanaryRoute written with spec.routes: the entries given.
func withEntries(cr *xr.CanaryRoute, entries ...xr.Entry) *xr.CanaryRoute {
	cr.Spec.Entries = entries
	return cr
}
