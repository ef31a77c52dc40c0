package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

// route is a parsed CanaryRoute podinfo in namespace test with the given
// sides and spec.port.
func route(primary, canary xr.Side, port int32) *xr.CanaryRoute {
	return &xr.CanaryRoute{
		Name:           "podinfo-x7k2p",
		Scope:          xr.ScopeCluster,
		RouteNamespace: "test",
		RouteName:      "podinfo",
		Spec:           xr.Spec{Kind: xr.KindHTTPRoute, Port: port, Primary: primary, Canary: canary},
	}
}

func service() xr.Side {
	return xr.Side{Service: &xr.ServiceSource{Selector: map[string]string{"app": "podinfo"}}}
}

// ref is a backendRef side.
func ref(group, kind, name, namespace string, port int32) xr.Side {
	r := &gwv1.BackendObjectReference{Name: gwv1.ObjectName(name)}
	if group != "-" {
		r.Group = ptr.To(gwv1.Group(group))
	}
	if kind != "" {
		r.Kind = ptr.To(gwv1.Kind(kind))
	}
	if namespace != "" {
		r.Namespace = ptr.To(gwv1.Namespace(namespace))
	}
	if port != 0 {
		r.Port = ptr.To(port)
	}
	return xr.Side{BackendRef: r}
}

// objRef is the expected reference.
func objRef(group, kind *string, name, namespace string, port int32) gwv1.BackendObjectReference {
	r := gwv1.BackendObjectReference{Name: gwv1.ObjectName(name)}
	if group != nil {
		r.Group = ptr.To(gwv1.Group(*group))
	}
	if kind != nil {
		r.Kind = ptr.To(gwv1.Kind(*kind))
	}
	if namespace != "" {
		r.Namespace = ptr.To(gwv1.Namespace(namespace))
	}
	if port != 0 {
		r.Port = ptr.To(port)
	}
	return r
}

func TestResolve(t *testing.T) {
	filters := []gwv1.HTTPRouteFilter{{
		Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Canary", Value: "true"}}},
	}}
	grpcFilters := []gwv1.GRPCRouteFilter{{
		Type:                  gwv1.GRPCRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-canary", Value: "true"}}},
	}}
	core, svcKind := "", "Service"
	str := func(s string) *string { return &s }

	type args struct {
		cr   *xr.CanaryRoute
		role xr.Role
	}
	type want struct {
		b    Backend
		errs []xrtest.FieldErr
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ProxyService": {
			reason: "A service side points at its proxy Service <routeName>-primary, group \"\", kind Service, port spec.port, in the route namespace.",
			args:   args{cr: route(service(), service(), 9898), role: xr.RolePrimary},
			want: want{b: Backend{
				Role: xr.RolePrimary, Ref: objRef(&core, &svcKind, "podinfo-primary", "", 9898), Namespace: "test",
			}},
		},
		"ProxyExternalName": {
			reason: "An externalName side points at its ExternalName proxy Service <routeName>-canary.",
			args:   args{cr: route(service(), xr.Side{ExternalName: "canary.example.com"}, 8443), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(&core, &svcKind, "podinfo-canary", "", 8443), Namespace: "test",
			}},
		},
		"ProxyUsesRouteName": {
			reason: "The proxy Service is named after the route name, not the XR's name.",
			args: args{cr: func() *xr.CanaryRoute {
				cr := route(service(), service(), 80)
				cr.RouteName = "storefront"
				return cr
			}(), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(&core, &svcKind, "storefront-canary", "", 80), Namespace: "test",
			}},
		},
		"ProxyFilters": {
			reason: "A side's filters travel with its backend.",
			args: args{cr: func() *xr.CanaryRoute {
				s := service()
				s.HTTPFilters, s.GRPCFilters = filters, grpcFilters
				return route(service(), s, 80)
			}(), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(&core, &svcKind, "podinfo-canary", "", 80), Namespace: "test",
				HTTPFilters: filters, GRPCFilters: grpcFilters,
			}},
		},
		"ProxyNeedsPort": {
			reason: "A proxy Service needs spec.port.",
			args:   args{cr: route(service(), service(), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Namespace: "test"},
				errs: []xrtest.FieldErr{xrtest.Required("spec.port", "canary proxy Service needs a port")},
			},
		},
		"ServiceAsWritten": {
			reason: "A Service backendRef with a port is kept as written, in its own namespace.",
			args:   args{cr: route(service(), ref("-", "", "canary-proxy", "monitoring", 3456), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(nil, nil, "canary-proxy", "monitoring", 3456), Namespace: "monitoring", FromBackendRef: true,
			}},
		},
		"ServicePortDefault": {
			reason: "A Service backendRef without a port gets spec.port; the namespace defaults to the route's.",
			args:   args{cr: route(ref("-", "", "podinfo-v1", "", 0), service(), 9898), role: xr.RolePrimary},
			want: want{b: Backend{
				Role: xr.RolePrimary, Ref: objRef(nil, nil, "podinfo-v1", "", 9898), Namespace: "test", FromBackendRef: true,
			}},
		},
		"ServiceExplicitCoreGroup": {
			reason: "group \"\" and kind Service written out follow the Service rules too.",
			args:   args{cr: route(ref("", "Service", "podinfo-v1", "", 0), service(), 80), role: xr.RolePrimary},
			want: want{b: Backend{
				Role: xr.RolePrimary, Ref: objRef(&core, &svcKind, "podinfo-v1", "", 80), Namespace: "test", FromBackendRef: true,
			}},
		},
		"ServiceNoPort": {
			reason: "A Service backendRef without a port and without spec.port is one error naming spec.<side>.backendRef.port, not a second one from the CRD's rule.",
			args:   args{cr: route(service(), ref("-", "", "canary-proxy", "monitoring", 0), 0), role: xr.RoleCanary},
			want: want{
				b: Backend{Role: xr.RoleCanary, Ref: objRef(nil, nil, "canary-proxy", "monitoring", 0), Namespace: "monitoring", FromBackendRef: true},
				errs: []xrtest.FieldErr{
					xrtest.Required("spec.canary.backendRef.port", "a Service backend needs a port: set it here or set spec.port"),
				},
			},
		},
		"ServiceImportPortDefault": {
			reason: "A ServiceImport without a port gets spec.port.",
			args:   args{cr: route(service(), ref("multicluster.x-k8s.io", "ServiceImport", "podinfo", "", 0), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("multicluster.x-k8s.io"), str("ServiceImport"), "podinfo", "", 9898), Namespace: "test", FromBackendRef: true,
			}},
		},
		"ServiceImportPortAsWritten": {
			reason: "A ServiceImport's own port wins over spec.port.",
			args:   args{cr: route(service(), ref("multicluster.x-k8s.io", "ServiceImport", "podinfo", "east", 8080), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("multicluster.x-k8s.io"), str("ServiceImport"), "podinfo", "east", 8080), Namespace: "east", FromBackendRef: true,
			}},
		},
		"ServiceImportNoPort": {
			reason: "A ServiceImport needs a port, from the reference or spec.port.",
			args:   args{cr: route(service(), ref("multicluster.x-k8s.io", "ServiceImport", "podinfo", "", 0), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("multicluster.x-k8s.io"), str("ServiceImport"), "podinfo", "", 0), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Required("spec.canary.backendRef.port", "ServiceImport.multicluster.x-k8s.io backend needs a port")},
			},
		},
		"IstioHostnamePortDefault": {
			reason: "An Istio Hostname without a port gets spec.port; it is not namespaced, so its namespace is the route's (no grant).",
			args:   args{cr: route(ref("-", "", "reviews-v1", "", 0), ref("networking.istio.io", "Hostname", "reviews.eu-west.global", "", 0), 9080), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("networking.istio.io"), str("Hostname"), "reviews.eu-west.global", "", 9080), Namespace: "test", FromBackendRef: true,
			}},
		},
		"IstioHostnameNoPort": {
			reason: "An Istio Hostname needs a port.",
			args:   args{cr: route(service(), ref("networking.istio.io", "Hostname", "reviews.global", "", 0), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("networking.istio.io"), str("Hostname"), "reviews.global", "", 0), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Required("spec.canary.backendRef.port", "Hostname.networking.istio.io backend needs a port")},
			},
		},
		"IstioHostnameNamespace": {
			reason: "An Istio Hostname is not namespaced: a namespace is Forbidden.",
			args:   args{cr: route(service(), ref("networking.istio.io", "Hostname", "reviews.global", "istio-system", 9080), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("networking.istio.io"), str("Hostname"), "reviews.global", "istio-system", 9080), Namespace: "istio-system", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Forbidden("spec.canary.backendRef.namespace", "leave namespace empty")},
			},
		},
		"IstioHostnameClusterLocal": {
			reason: "Istio resolves a Hostname against every namespace's Services with no ReferenceGrant: a cluster-local host is refused, naming the field.",
			args:   args{cr: route(service(), ref("networking.istio.io", "Hostname", "vault.secrets.svc.cluster.local", "", 8200), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("networking.istio.io"), str("Hostname"), "vault.secrets.svc.cluster.local", "", 8200), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Invalid("spec.canary.backendRef.name", "must not be a cluster-local name")},
			},
		},
		"IstioHostnameSingleLabel": {
			reason: "A single-label Hostname resolves through the search domains to a cluster-local Service: refused.",
			args:   args{cr: route(service(), ref("networking.istio.io", "Hostname", "vault", "", 8200), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("networking.istio.io"), str("Hostname"), "vault", "", 8200), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Invalid("spec.canary.backendRef.name", "fully qualified DNS name")},
			},
		},
		"InferencePoolNoPort": {
			reason: "An InferencePool gets no port, even with spec.port set: the pool names its own.",
			args:   args{cr: route(ref("inference.networking.k8s.io", "InferencePool", "llama3-8b", "", 0), service(), 8000), role: xr.RolePrimary},
			want: want{b: Backend{
				Role: xr.RolePrimary, Ref: objRef(str("inference.networking.k8s.io"), str("InferencePool"), "llama3-8b", "", 0), Namespace: "test", FromBackendRef: true,
			}},
		},
		"InferencePoolPortForbidden": {
			reason: "A port on an InferencePool is Forbidden.",
			args:   args{cr: route(ref("inference.networking.k8s.io", "InferencePool", "llama3-8b", "", 8000), service(), 0), role: xr.RolePrimary},
			want: want{
				b:    Backend{Role: xr.RolePrimary, Ref: objRef(str("inference.networking.k8s.io"), str("InferencePool"), "llama3-8b", "", 8000), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Forbidden("spec.primary.backendRef.port", "takes no port")},
			},
		},
		"EnvoyBackendNoPort": {
			reason: "An Envoy Gateway Backend gets no port, even with spec.port set.",
			args:   args{cr: route(service(), ref("gateway.envoyproxy.io", "Backend", "payments-edge-canary", "", 0), 8443), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("gateway.envoyproxy.io"), str("Backend"), "payments-edge-canary", "", 0), Namespace: "test", FromBackendRef: true,
			}},
		},
		"EnvoyBackendPortForbidden": {
			reason: "A port on an Envoy Gateway Backend is Forbidden.",
			args:   args{cr: route(service(), ref("gateway.envoyproxy.io", "Backend", "edge", "", 443), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(str("gateway.envoyproxy.io"), str("Backend"), "edge", "", 443), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Forbidden("spec.canary.backendRef.port", "takes no port")},
			},
		},
		"OtherKindWithoutPort": {
			reason: "Any other kind is written as is: no port stays no port, spec.port notwithstanding.",
			args:   args{cr: route(service(), ref("example.com", "Proxy", "edge", "", 0), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("example.com"), str("Proxy"), "edge", "", 0), Namespace: "test", FromBackendRef: true,
			}},
		},
		"OtherKindWithPort": {
			reason: "Any other kind is written as is: its port stays.",
			args:   args{cr: route(service(), ref("example.com", "Proxy", "edge", "edge-system", 7000), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(str("example.com"), str("Proxy"), "edge", "edge-system", 7000), Namespace: "edge-system", FromBackendRef: true,
			}},
		},
		"OtherCoreKind": {
			reason: "A core kind other than Service (group \"\") has no port rule of its own.",
			args:   args{cr: route(service(), ref("", "ConfigMap", "edge", "", 0), 9898), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(&core, str("ConfigMap"), "edge", "", 0), Namespace: "test", FromBackendRef: true,
			}},
		},
		"BackendRefFilters": {
			reason: "A backendRef side's filters travel with its backend.",
			args: args{cr: func() *xr.CanaryRoute {
				s := ref("-", "", "canary-proxy", "", 80)
				s.HTTPFilters = filters
				return route(service(), s, 0)
			}(), role: xr.RoleCanary},
			want: want{b: Backend{
				Role: xr.RoleCanary, Ref: objRef(nil, nil, "canary-proxy", "", 80), Namespace: "test", FromBackendRef: true, HTTPFilters: filters,
			}},
		},
		"BackendRefPortZero": {
			reason: "A backendRef port is checked with Gateway API's limits.",
			args: args{cr: func() *xr.CanaryRoute {
				s := ref("-", "", "canary-proxy", "", 0)
				s.BackendRef.Port = ptr.To[gwv1.PortNumber](0)
				return route(service(), s, 0)
			}(), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: gwv1.BackendObjectReference{Name: "canary-proxy", Port: ptr.To[gwv1.PortNumber](0)}, Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Invalid("spec.canary.backendRef.port", "greater than or equal to 1")},
			},
		},
		"BackendRefInvalidNamespace": {
			reason: "A backendRef namespace is checked with Gateway API's pattern.",
			args:   args{cr: route(service(), ref("-", "", "canary-proxy", "Monitoring", 80), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(nil, nil, "canary-proxy", "Monitoring", 80), Namespace: "Monitoring", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Invalid("spec.canary.backendRef.namespace", "Monitoring")},
			},
		},
		"BackendRefNoName": {
			reason: "A backendRef names its object.",
			args:   args{cr: route(service(), ref("-", "", "", "", 80), 0), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Ref: objRef(nil, nil, "", "", 80), Namespace: "test", FromBackendRef: true},
				errs: []xrtest.FieldErr{xrtest.Invalid("spec.canary.backendRef.name", "at least 1 chars long")},
			},
		},
		"NoSource": {
			reason: "A side without any source (never out of xr.Parse) is an error, not a panic.",
			args:   args{cr: route(service(), xr.Side{}, 80), role: xr.RoleCanary},
			want: want{
				b:    Backend{Role: xr.RoleCanary, Namespace: "test"},
				errs: []xrtest.FieldErr{xrtest.Required("spec.canary", "one of service, externalName or backendRef")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, errs := Resolve(tc.args.cr, tc.args.role)
			if diff := cmp.Diff(tc.want.b, b); diff != "" {
				t.Errorf("%s\nResolve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := xrtest.Diff(tc.want.errs, errs); diff != "" {
				t.Errorf("%s\nResolve(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestResolveKeepsSpec pins that Resolve works on a copy: defaulting a port
// must not write into the parsed spec, which later steps read again.
func TestResolveKeepsSpec(t *testing.T) {
	cr := route(ref("-", "", "podinfo-v1", "", 0), ref("networking.istio.io", "Hostname", "reviews.global", "", 0), 9898)
	want := []*gwv1.BackendObjectReference{cr.Spec.Primary.BackendRef.DeepCopy(), cr.Spec.Canary.BackendRef.DeepCopy()}
	for _, role := range []xr.Role{xr.RolePrimary, xr.RoleCanary} {
		if _, errs := Resolve(cr, role); len(errs) > 0 {
			t.Fatalf("Resolve(%s): %v", role, errs)
		}
	}
	if diff := cmp.Diff(want, []*gwv1.BackendObjectReference{cr.Spec.Primary.BackendRef, cr.Spec.Canary.BackendRef}); diff != "" {
		t.Errorf("Resolve changed the spec: -before, +after:\n%s", diff)
	}
}

func TestSame(t *testing.T) {
	svc := func(name, ns string, port int32) Backend {
		return Backend{Ref: objRef(nil, nil, name, "", port), Namespace: ns}
	}
	pool := func(name string) Backend {
		g, k := "inference.networking.k8s.io", "InferencePool"
		return Backend{Ref: objRef(&g, &k, name, "", 0), Namespace: "test"}
	}
	type args struct{ a, b Backend }
	cases := map[string]struct {
		reason string
		args   args
		want   bool
	}{
		"Identical": {
			reason: "The same Service on the same port is one backend.",
			args:   args{svc("podinfo", "test", 80), svc("podinfo", "test", 80)},
			want:   true,
		},
		"DefaultsSpelledOut": {
			reason: "Gateway API's defaults (core group, kind Service) make an explicit and an implicit Service the same.",
			args: args{svc("podinfo", "test", 80), func() Backend {
				b := svc("podinfo", "test", 80)
				b.Ref.Group, b.Ref.Kind = ptr.To[gwv1.Group](""), ptr.To[gwv1.Kind]("Service")
				return b
			}()},
			want: true,
		},
		"RolesAndFiltersIgnored": {
			reason: "Role and filters are not part of the object: primary and canary on one object are the same backend.",
			args: args{func() Backend {
				b := svc("podinfo", "test", 80)
				b.Role = xr.RolePrimary
				return b
			}(), func() Backend {
				b := svc("podinfo", "test", 80)
				b.Role, b.HTTPFilters = xr.RoleCanary, []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier}}
				return b
			}()},
			want: true,
		},
		"OtherName": {
			reason: "Different names are different backends.",
			args:   args{svc("podinfo-primary", "test", 80), svc("podinfo-canary", "test", 80)},
			want:   false,
		},
		"OtherNamespace": {
			reason: "The same name in another namespace is another backend (effective namespaces compared).",
			args:   args{svc("podinfo", "test", 80), svc("podinfo", "monitoring", 80)},
			want:   false,
		},
		"OtherPort": {
			reason: "The same Service on another port is another backend.",
			args:   args{svc("podinfo", "test", 80), svc("podinfo", "test", 8080)},
			want:   false,
		},
		"OtherKind": {
			reason: "A Service and an InferencePool of the same name differ.",
			args:   args{svc("llama", "test", 0), pool("llama")},
			want:   false,
		},
		"PortlessKinds": {
			reason: "Two references to one InferencePool, without ports, are the same.",
			args:   args{pool("llama"), pool("llama")},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Same(tc.args.a, tc.args.b)); diff != "" {
				t.Errorf("%s\nSame(a, b): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, Same(tc.args.b, tc.args.a)); diff != "" {
				t.Errorf("%s\nSame(b, a): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGroupKindOf(t *testing.T) {
	cases := map[string]struct {
		reason string
		ref    gwv1.BackendObjectReference
		want   schema.GroupKind
	}{
		"Defaults": {
			reason: "No group and no kind is a core Service.",
			ref:    gwv1.BackendObjectReference{Name: "a"},
			want:   KindService,
		},
		"KindOnly": {
			reason: "A kind without a group is in the core group.",
			ref:    gwv1.BackendObjectReference{Name: "a", Kind: ptr.To[gwv1.Kind]("ConfigMap")},
			want:   schema.GroupKind{Kind: "ConfigMap"},
		},
		"GroupOnly": {
			reason: "A group without a kind keeps the default kind Service.",
			ref:    gwv1.BackendObjectReference{Name: "a", Group: ptr.To[gwv1.Group]("multicluster.x-k8s.io")},
			want:   schema.GroupKind{Group: "multicluster.x-k8s.io", Kind: "Service"},
		},
		"Both": {
			reason: "Group and kind as written.",
			ref:    gwv1.BackendObjectReference{Name: "a", Group: ptr.To[gwv1.Group]("gateway.envoyproxy.io"), Kind: ptr.To[gwv1.Kind]("Backend")},
			want:   KindEnvoyBackend,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, GroupKindOf(tc.ref)); diff != "" {
				t.Errorf("%s\nGroupKindOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	withTargetPort := func(s xr.Side, p int32) xr.Side {
		svc := *s.Service
		svc.TargetPort = ptr.To(intstr.FromInt32(p))
		s.Service = &svc
		return s
	}
	withFilter := func(s xr.Side, name string) xr.Side {
		s.HTTPFilters = []gwv1.HTTPRouteFilter{{
			Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(name), Value: "1"}}},
		}}
		return s
	}
	cases := map[string]struct {
		reason string
		a, b   xr.Side
		same   bool
	}{
		"GroupAndKindSpelledOut": {
			reason: "group \"\" and kind Service written out are Gateway API's defaults: the same backend, the same digest.",
			a:      ref("-", "", "canary", "", 0), b: ref("", "Service", "canary", "", 0), same: true,
		},
		"NamespaceSpelledOut": {
			reason: "The route's own namespace written out is the namespace left out.",
			a:      ref("-", "", "canary", "", 0), b: ref("-", "", "canary", "test", 0), same: true,
		},
		"PortFromSpec": {
			reason: "A Service backend's port defaults to spec.port: written out, it is the same port.",
			a:      ref("-", "", "canary", "", 0), b: ref("-", "", "canary", "", 9898), same: true,
		},
		"TargetPortSpelledOut": {
			reason: "A proxy Service's targetPort defaults to spec.port: written out, the same pods and port.",
			a:      service(), b: withTargetPort(service(), 9898), same: true,
		},
		"OtherTargetPort": {
			reason: "Another targetPort reaches other containers: another canary.",
			a:      service(), b: withTargetPort(service(), 8080),
		},
		"OtherName": {
			reason: "Another object is another canary.",
			a:      ref("-", "", "canary", "", 0), b: ref("-", "", "canary-v3", "", 0),
		},
		"OtherNamespace": {
			reason: "The same name in another namespace is another object.",
			a:      ref("-", "", "canary", "", 0), b: ref("-", "", "canary", "monitoring", 0),
		},
		"OtherKind": {
			reason: "A ServiceImport of the same name is another backend.",
			a:      ref("-", "", "canary", "", 0), b: ref("multicluster.x-k8s.io", "ServiceImport", "canary", "", 0),
		},
		"OtherFilter": {
			reason: "The canary's filters are part of what is tested.",
			a:      withFilter(ref("-", "", "canary", "", 0), "X-A"), b: withFilter(ref("-", "", "canary", "", 0), "X-B"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			digest := func(s xr.Side) string {
				cr := route(service(), s, 9898)
				b, errs := Resolve(cr, xr.RoleCanary)
				if len(errs) > 0 {
					t.Fatalf("Resolve(...): %v", errs)
				}
				return Digest(cr.Spec.Canary, b)
			}
			a, b := digest(tc.a), digest(tc.b)
			if (a == b) != tc.same {
				t.Errorf("%s\nDigest(a) = %s, Digest(b) = %s: same %t, want %t", tc.reason, a, b, a == b, tc.same)
			}
			if again := digest(tc.a); again != a {
				t.Errorf("%s\nDigest is not stable: %s, then %s", tc.reason, a, again)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	cdn := gwv1.BackendObjectReference{Name: "cdn-cache", Namespace: ptr.To(gwv1.Namespace("cdn")), Port: ptr.To[gwv1.PortNumber](80)}
	shadow := gwv1.BackendObjectReference{Name: "shadow", Port: ptr.To[gwv1.PortNumber](80)}
	mirror := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{BackendRef: shadow}}
	hostname := gwv1.BackendObjectReference{Group: ptr.To(gwv1.Group("networking.istio.io")), Kind: ptr.To(gwv1.Kind("Hostname")), Name: "api.default.svc", Port: ptr.To[gwv1.PortNumber](80)}
	cr := route(service(), service(), 9898)
	cr.Spec.Rules = []xr.Rule{
		{HTTPBackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: cdn}, Filters: []gwv1.HTTPRouteFilter{mirror}}}},
		{HTTPBackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: hostname}}}},
		{},
	}
	rules, ruleErrs := RuleBackends(cr)
	wantRules := []Reference{
		{Path: field.NewPath("spec", "rules").Index(0).Child("backendRefs").Index(0), Backend: Backend{Role: xr.RoleRule, Ref: cdn, Namespace: "cdn", FromBackendRef: true}},
		{Path: field.NewPath("spec", "rules").Index(1).Child("backendRefs").Index(0), Backend: Backend{Role: xr.RoleRule, Ref: hostname, Namespace: "test", FromBackendRef: true}},
	}
	paths := cmp.Comparer(func(a, b *field.Path) bool { return a.String() == b.String() })
	if diff := cmp.Diff(wantRules, rules, paths); diff != "" {
		t.Errorf("RuleBackends(...): every backendRef of the rules of their own, in its namespace: -want, +got:\n%s", diff)
	}
	if diff := xrtest.Diff([]xrtest.FieldErr{xrtest.Invalid("spec.rules[1].backendRefs[0].name", "cluster-local")}, ruleErrs); diff != "" {
		t.Errorf("RuleBackends(...): an Istio Hostname is checked like a side's: -want, +got:\n%s", diff)
	}
	mirrors, _ := Mirrors(cr)
	wantMirrors := []Reference{{
		Path:    field.NewPath("spec", "rules").Index(0).Child("backendRefs").Index(0).Child("filters").Index(0).Child("requestMirror", "backendRef"),
		Backend: Backend{Role: xr.RoleMirror, Ref: shadow, Namespace: "test", FromBackendRef: true},
	}}
	if diff := cmp.Diff(wantMirrors, mirrors, paths); diff != "" {
		t.Errorf("Mirrors(...): a mirror on a rule's own backendRef is one too: -want, +got:\n%s", diff)
	}
}
