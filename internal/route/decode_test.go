package route

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
)

// decoded decodes an observed route written in YAML; the test fails when it
// does not decode.
func decoded(t *testing.T, y string) runtime.Object {
	t.Helper()
	obj, err := Decode(observedRoute(t, y))
	if err != nil {
		t.Fatalf("Decode(...): the test's route does not decode: %v", err)
	}
	return obj
}

// routeYAML is a route of a kind at an apiVersion, with what the API server
// and other controllers add (extra metadata, a status) when observed is
// true.
func routeYAML(apiVersion, kind, spec string, observed bool) string {
	meta := `{name: podinfo, namespace: test}`
	status := ""
	if observed {
		meta = `{name: podinfo, namespace: test, uid: 6a1c7e0e-1b2f-4c55-9a7e-0c1d2e3f4a5b, generation: 4, resourceVersion: "42", labels: {crossplane.io/composite: podinfo}, annotations: {crossplane.io/composition-resource-name: route}, ownerReferences: [{apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute, name: podinfo, uid: 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0, controller: true}]}`
		status = `
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: example.com/gateway
      conditions: [{type: Accepted, status: "True", reason: Accepted, observedGeneration: 4, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}]`
	}
	return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: %s\nspec: %s%s\n", apiVersion, kind, meta, spec, status)
}

const (
	httpSpec = `{parentRefs: [{name: gateway, namespace: istio-ingress}], hostnames: [www.example.com], rules: [{name: api, matches: [{path: {type: PathPrefix, value: /api}}], backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}`
	grpcSpec = `{parentRefs: [{name: gateway, namespace: istio-ingress}], rules: [{matches: [{method: {service: shop.Checkout}}], backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}`
	tlsSpec  = `{parentRefs: [{name: gateway, namespace: istio-ingress}], hostnames: [www.example.com], rules: [{name: tls, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}`
	tcpSpec  = `{parentRefs: [{name: gateway, namespace: istio-ingress}], rules: [{name: tls, backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}]}]}`
)

func TestDecode(t *testing.T) {
	const gw = "gateway.networking.k8s.io/"
	type want struct {
		typ     string
		weights []string
		err     bool
	}
	cases := map[string]struct {
		reason string
		route  string
		want   want
	}{
		"HTTPRouteV1": {
			reason: "An HTTPRoute decodes into the v1 type, with its rules.",
			route:  routeYAML(gw+"v1", "HTTPRoute", httpSpec, true),
			want:   want{typ: "*v1.HTTPRoute", weights: []string{"api: podinfo-primary=80 canary-proxy=20"}},
		},
		"GRPCRouteV1": {
			reason: "A GRPCRoute decodes into the v1 type.",
			route:  routeYAML(gw+"v1", "GRPCRoute", grpcSpec, true),
			want:   want{typ: "*v1.GRPCRoute", weights: []string{"-: podinfo-primary=80 canary-proxy=20"}},
		},
		"TLSRouteV1": {
			reason: "A v1 TLSRoute decodes into the v1 type.",
			route:  routeYAML(gw+"v1", "TLSRoute", tlsSpec, true),
			want:   want{typ: "*v1.TLSRoute", weights: []string{"tls: podinfo-primary=80 canary-proxy=20"}},
		},
		"TLSRouteV1Alpha2": {
			reason: "A v1alpha2 TLSRoute, composed for an older cluster, decodes into the v1alpha2 type: re-emitting it at v1 would ask for a version the cluster may not serve.",
			route:  routeYAML(gw+"v1alpha2", "TLSRoute", tlsSpec, true),
			want:   want{typ: "*v1alpha2.TLSRoute", weights: []string{"tls: podinfo-primary=80 canary-proxy=20"}},
		},
		"TCPRouteV1": {
			reason: "A v1 TCPRoute decodes into the v1 type.",
			route:  routeYAML(gw+"v1", "TCPRoute", tcpSpec, true),
			want:   want{typ: "*v1.TCPRoute", weights: []string{"tls: podinfo-primary=80 canary-proxy=20"}},
		},
		"TCPRouteV1Alpha2": {
			reason: "A v1alpha2 TCPRoute decodes into the v1alpha2 type.",
			route:  routeYAML(gw+"v1alpha2", "TCPRoute", tcpSpec, true),
			want:   want{typ: "*v1alpha2.TCPRoute", weights: []string{"tls: podinfo-primary=80 canary-proxy=20"}},
		},
		"HTTPRouteV1Beta1": {
			reason: "The function composes HTTPRoutes as v1 only: a v1beta1 HTTPRoute is no route of its own.",
			route:  routeYAML(gw+"v1beta1", "HTTPRoute", httpSpec, true),
			want:   want{err: true},
		},
		"HTTPRouteV1Alpha2": {
			reason: "Only TLSRoute and TCPRoute are composed at v1alpha2.",
			route:  routeYAML(gw+"v1alpha2", "HTTPRoute", httpSpec, false),
			want:   want{err: true},
		},
		"OtherGroup": {
			reason: "An HTTPRoute of another API group is not a Gateway API route.",
			route:  routeYAML("example.com/v1", "HTTPRoute", httpSpec, false),
			want:   want{err: true},
		},
		"Gateway": {
			reason: "A Gateway is not a route the function composes.",
			route:  routeYAML(gw+"v1", "Gateway", `{gatewayClassName: istio}`, false),
			want:   want{err: true},
		},
		"Service": {
			reason: "Package route decodes routes only: a Service is an error here.",
			route:  `{apiVersion: v1, kind: Service, metadata: {name: podinfo, namespace: test}}`,
			want:   want{err: true},
		},
		"NoTypeMeta": {
			reason: "An object without apiVersion and kind is an error.",
			route:  `{metadata: {name: podinfo}}`,
			want:   want{err: true},
		},
		"APIVersionNotAString": {
			reason: "An apiVersion that is not a string is an error, never a panic.",
			route:  `{apiVersion: 1, kind: HTTPRoute}`,
			want:   want{err: true},
		},
		"BadAPIVersion": {
			reason: "An apiVersion that does not parse is an error.",
			route:  `{apiVersion: a/b/c, kind: HTTPRoute}`,
			want:   want{err: true},
		},
		"MalformedSpec": {
			reason: "A route whose spec is not a route's is an error.",
			route:  routeYAML(gw+"v1", "HTTPRoute", `{rules: [{backendRefs: {name: x}}]}`, false),
			want:   want{err: true},
		},
		"WeightNotANumber": {
			reason: "A weight that is not a number is an error.",
			route:  routeYAML(gw+"v1", "TCPRoute", `{rules: [{backendRefs: [{name: x, weight: heavy}]}]}`, false),
			want:   want{err: true},
		},
		"WeightBeyondInt32": {
			reason: "A weight that does not fit the field's int32 (2^32+80) is an error, never wrapped to 80: what is re-emitted of an observed route must be what was observed.",
			route:  routeYAML(gw+"v1", "HTTPRoute", `{rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 4294967376}, {name: canary-proxy, port: 3456, weight: 20}]}]}`, false),
			want:   want{err: true},
		},
		"PortBeyondInt32": {
			reason: "The same for any integer field: a port of 2^32+80.",
			route:  routeYAML(gw+"v1alpha2", "TCPRoute", `{rules: [{backendRefs: [{name: podinfo-primary, port: 4294967376}]}]}`, false),
			want:   want{err: true},
		},
		"WeightFraction": {
			reason: "A fraction is no integer weight.",
			route:  routeYAML(gw+"v1", "UDPRoute", `{rules: [{backendRefs: [{name: podinfo-primary, port: 53, weight: 80.5}]}]}`, false),
			want:   want{err: true},
		},
		"LargestWeight": {
			reason: "The largest int32 fits.",
			route:  routeYAML(gw+"v1", "HTTPRoute", `{rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 2147483647}]}]}`, false),
			want:   want{typ: "*v1.HTTPRoute", weights: []string{"-: podinfo-primary=2147483647"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := Decode(observedRoute(t, tc.route))
			var got want
			if err != nil {
				got.err = true
			} else {
				got.typ, got.weights = fmt.Sprintf("%T", obj), weights(obj)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nDecode(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDecodeAsComposed(t *testing.T) {
	const gw = "gateway.networking.k8s.io/"
	cases := map[string]struct {
		reason     string
		apiVersion string
		kind       string
		spec       string
	}{
		"HTTPRouteV1":      {reason: "An HTTPRoute keeps its identity and its spec.", apiVersion: gw + "v1", kind: "HTTPRoute", spec: httpSpec},
		"GRPCRouteV1":      {reason: "A GRPCRoute keeps its identity and its spec.", apiVersion: gw + "v1", kind: "GRPCRoute", spec: grpcSpec},
		"TLSRouteV1":       {reason: "A v1 TLSRoute keeps its identity and its spec.", apiVersion: gw + "v1", kind: "TLSRoute", spec: tlsSpec},
		"TLSRouteV1Alpha2": {reason: "A v1alpha2 TLSRoute keeps its version.", apiVersion: gw + "v1alpha2", kind: "TLSRoute", spec: tlsSpec},
		"TCPRouteV1":       {reason: "A v1 TCPRoute keeps its identity and its spec.", apiVersion: gw + "v1", kind: "TCPRoute", spec: tcpSpec},
		"TCPRouteV1Alpha2": {reason: "A v1alpha2 TCPRoute keeps its version.", apiVersion: gw + "v1alpha2", kind: "TCPRoute", spec: tcpSpec},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			composed := observedRoute(t, routeYAML(tc.apiVersion, tc.kind, tc.spec, false))
			observed := observedRoute(t, routeYAML(tc.apiVersion, tc.kind, tc.spec, true))
			if cmp.Equal(composed, observed) {
				t.Fatal("the observed route must differ from the composed one, or this test pins nothing")
			}
			// The route as the function composed it: identity and spec,
			// decoded into its type.
			want := decoded(t, routeYAML(tc.apiVersion, tc.kind, tc.spec, false))
			got := decoded(t, routeYAML(tc.apiVersion, tc.kind, tc.spec, true))
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecode(...): the route keeps its identity and spec only, without status, labels, annotations, owner references, uid, generation or resourceVersion: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
