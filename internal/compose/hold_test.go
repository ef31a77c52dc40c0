package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Objects as the API server returns them: with what it, Crossplane and
// other controllers added beside what the function wrote.
const (
	observedService = `
apiVersion: v1
kind: Service
metadata:
  name: podinfo-primary
  namespace: test
  uid: 6a1c7e0e-1b2f-4c55-9a7e-0c1d2e3f4a5b
  resourceVersion: "42"
  generation: 1
  labels: {crossplane.io/composite: podinfo}
  annotations: {crossplane.io/composition-resource-name: service-primary}
  ownerReferences: [{apiVersion: platform.example.org/v1alpha1, kind: XCanaryRoute, name: podinfo, uid: 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0, controller: true}]
spec:
  type: ClusterIP
  clusterIP: 10.0.0.7
  clusterIPs: [10.0.0.7]
  ipFamilies: [IPv4]
  ipFamilyPolicy: SingleStack
  internalTrafficPolicy: Cluster
  sessionAffinity: None
  selector: {app: podinfo}
  ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP, appProtocol: http, nodePort: 30080}]
status: {loadBalancer: {}}
`
	observedExternalName = `
apiVersion: v1
kind: Service
metadata: {name: podinfo-canary, namespace: test, labels: {crossplane.io/composite: podinfo}}
spec: {type: ExternalName, externalName: canary.example.net., sessionAffinity: None, ports: [{name: http, port: 9898, protocol: TCP}]}
`
	observedGrantV1Beta1 = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: httproute.podinfo.test, namespace: monitoring, uid: 9b8a7c6d-0000-4000-8000-000000000001, resourceVersion: "7", labels: {crossplane.io/composite: podinfo}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}]
  to: [{group: "", kind: Service, name: canary-proxy}]
`
	observedGrantV1 = `
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: httproute.podinfo.test, namespace: monitoring, labels: {crossplane.io/composite: podinfo}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}]
  to: [{group: "", kind: Service, name: canary-proxy}]
`
	observedHTTPRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 3, labels: {crossplane.io/composite: podinfo}, annotations: {a: b}}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 80}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: example.com/gateway
      conditions: [{type: Accepted, status: "True", reason: Accepted, observedGeneration: 3, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}]
`
	observedTLSRoute = `
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: podinfo, namespace: test, uid: 9b8a7c6d-0000-4000-8000-000000000002}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  hostnames: [www.example.com]
  rules: [{backendRefs: [{name: podinfo-primary, port: 9898, weight: 100}]}]
status: {parents: []}
`
)

var (
	composedService = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary", Namespace: "test"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": "podinfo"},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 9898, TargetPort: intstr.FromInt32(9898), AppProtocol: ptr.To("http"),
			}},
		},
	}
	composedExternalName = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-canary", Namespace: "test"},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "canary.example.net.",
			Ports:        []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 9898}},
		},
	}
	grantSpec = gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: "test"}},
		To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: "Service", Name: ptr.To[gwv1.ObjectName]("canary-proxy")}},
	}
	composedGrantV1Beta1 = &gwv1beta1.ReferenceGrant{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1beta1", Kind: "ReferenceGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: "httproute.podinfo.test", Namespace: "monitoring"},
		Spec:       grantSpec,
	}
	composedGrantV1 = &gwv1.ReferenceGrant{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "ReferenceGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: "httproute.podinfo.test", Namespace: "monitoring"},
		Spec:       grantSpec,
	}
	composedHTTPRoute = &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "test"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{
				{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "podinfo-primary", Port: ptr.To[gwv1.PortNumber](9898)}, Weight: ptr.To[int32](80)}},
				{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "canary-proxy", Namespace: ptr.To[gwv1.Namespace]("monitoring"), Port: ptr.To[gwv1.PortNumber](3456)}, Weight: ptr.To[int32](20)}},
			}}},
		},
	}
	composedTLSRoute = &gwv1alpha2.TLSRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1alpha2", Kind: "TLSRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "test"},
		Spec: gwv1alpha2.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}}},
			Hostnames:       []gwv1.Hostname{"www.example.com"},
			Rules: []gwv1alpha2.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{
				{BackendObjectReference: gwv1.BackendObjectReference{Name: "podinfo-primary", Port: ptr.To[gwv1.PortNumber](9898)}, Weight: ptr.To[int32](100)},
			}}},
		},
	}
)

func TestDecodeAsComposed(t *testing.T) {
	type want struct {
		obj runtime.Object
		err bool
	}
	cases := map[string]struct {
		reason   string
		observed string
		want     want
	}{
		"Service": {
			reason:   "An observed ClusterIP Service comes back with its identity and the spec fields the proxy writes only: no cluster IPs, IP families, session affinity or node ports, no status, labels, annotations, owner references, uid or resourceVersion, so that applying it again claims nothing the function never wrote.",
			observed: observedService,
			want:     want{obj: composedService},
		},
		"ExternalNameService": {
			reason:   "An ExternalName Service keeps its type, externalName and ports.",
			observed: observedExternalName,
			want:     want{obj: composedExternalName},
		},
		"GrantV1Beta1": {
			reason:   "A v1beta1 ReferenceGrant stays a v1beta1 ReferenceGrant: re-emitting it at v1 would ask the API server for a version an older cluster does not serve.",
			observed: observedGrantV1Beta1,
			want:     want{obj: composedGrantV1Beta1},
		},
		"GrantV1": {
			reason:   "A v1 ReferenceGrant comes back as v1, with identity and spec.",
			observed: observedGrantV1,
			want:     want{obj: composedGrantV1},
		},
		"HTTPRoute": {
			reason:   "A route is decoded by package route: identity and spec, no status, labels, annotations or generation.",
			observed: observedHTTPRoute,
			want:     want{obj: composedHTTPRoute},
		},
		"TLSRouteV1Alpha2": {
			reason:   "A route keeps the version it was observed at.",
			observed: observedTLSRoute,
			want:     want{obj: composedTLSRoute},
		},
		"UnknownKind": {
			reason:   "An object of a kind the function never composes is an error, not a guess.",
			observed: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo, namespace: test}}`,
			want:     want{err: true},
		},
		"ServiceAtAnotherVersion": {
			reason:   "A Service is core v1 only.",
			observed: `{apiVersion: v2, kind: Service, metadata: {name: podinfo, namespace: test}}`,
			want:     want{err: true},
		},
		"BadAPIVersion": {
			reason:   "An apiVersion that does not parse is an error.",
			observed: `{apiVersion: a/b/c, kind: Service, metadata: {name: podinfo, namespace: test}}`,
			want:     want{err: true},
		},
		"MalformedService": {
			reason:   "A Service whose spec is not a Service's is an error, never a panic.",
			observed: `{apiVersion: v1, kind: Service, metadata: {name: podinfo, namespace: test}, spec: {ports: http}}`,
			want:     want{err: true},
		},
		"MalformedGrant": {
			reason:   "A grant whose spec is not a grant's is an error.",
			observed: `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: g, namespace: monitoring}, spec: {from: 3}}`,
			want:     want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := Decode(object(t, tc.observed))
			var got want
			if err != nil {
				got.err = true
			} else {
				got.obj = obj
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecode(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestHold(t *testing.T) {
	type args struct {
		observed   map[names.Key]string
		routeReady bool
	}
	type want struct {
		objects []Object
		err     bool
	}
	all := map[names.Key]string{
		"service-primary":           observedService,
		"service-canary":            observedExternalName,
		"route-httproute":           observedHTTPRoute,
		"referencegrant-monitoring": observedGrantV1Beta1,
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"RouteNotReady": {
			reason: "A hold re-emits every object as composed, sorted by key; the route with the readiness given, the Services and grants ready since they exist.",
			args:   args{observed: all, routeReady: false},
			want: want{objects: []Object{
				{Key: "referencegrant-monitoring", Object: composedGrantV1Beta1, Ready: true},
				{Key: "route-httproute", Object: composedHTTPRoute, Ready: false},
				{Key: "service-canary", Object: composedExternalName, Ready: true},
				{Key: "service-primary", Object: composedService, Ready: true},
			}},
		},
		"RouteReady": {
			reason: "A ready route is re-emitted ready.",
			args:   args{observed: map[names.Key]string{"route-tlsroute": observedTLSRoute, "service-primary": observedService}, routeReady: true},
			want: want{objects: []Object{
				{Key: "route-tlsroute", Object: composedTLSRoute, Ready: true},
				{Key: "service-primary", Object: composedService, Ready: true},
			}},
		},
		"Nothing": {
			reason: "Nothing observed, nothing held.",
			args:   args{observed: map[names.Key]string{}},
			want:   want{objects: []Object{}},
		},
		"UndecodableObject": {
			reason: "An object that does not decode fails the hold: re-emitting a guess could rewrite it.",
			args:   args{observed: map[names.Key]string{"service-primary": observedService, "route-httproute": `{apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}`}},
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := make(map[names.Key]map[string]any, len(tc.args.observed))
			for k, y := range tc.args.observed {
				observed[k] = object(t, y)
			}
			objects, err := Hold(observed, tc.args.routeReady)
			got := want{objects: objects, err: err != nil}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nHold(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestHeld pins what a hold re-emits under the current Input: never a grant
// or a backend reference the Input no longer allows.
func TestHeld(t *testing.T) {
	// The previous composition: the Flagger route at 50/50 with a mirror to
	// an audit Service in monitoring, and the grant in monitoring naming the
	// canary proxy, the audit Service and a ServiceImport.
	previousRoute := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 3}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /}}]
      filters:
        - type: RequestMirror
          requestMirror: {backendRef: {name: audit, namespace: monitoring, port: 80}}
      backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 50}
        - {group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 50}
`
	previousGrant := `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: httproute.podinfo.test, namespace: monitoring}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}]
  to:
    - {group: "", kind: Service, name: audit}
    - {group: "", kind: Service, name: canary-proxy}
    - {group: multicluster.x-k8s.io, kind: ServiceImport, name: canary-proxy}
`
	recorded := set("status.rollout", `{phase: Paused, revision: v1, step: 1, canaryWeight: 50, primaryWeight: 50, canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]}`)
	routeOf := func(t *testing.T, held Held) *gwv1.HTTPRoute {
		t.Helper()
		for _, o := range held.Objects {
			if r, ok := o.Object.(*gwv1.HTTPRoute); ok {
				return r
			}
		}
		t.Fatal("no route held")
		return nil
	}
	type want struct {
		keys    []names.Key
		weights []int32
		mirrors int
		grantTo int
		zeroed  []xr.BackendID
		ready   bool
	}
	cases := map[string]struct {
		reason  string
		input   string
		patches []patch
		status  string
		want    want
	}{
		"AllowedHeldUnchanged": {
			reason: "Under an Input that still allows everything, the hold re-emits the previous composition as it is.",
			input:  allowMonitoring,
			want:   want{keys: []names.Key{"referencegrant-monitoring", "route-httproute", "service-primary"}, weights: []int32{50, 50}, mirrors: 1, grantTo: 3},
		},
		"RevokedNamespace": {
			reason: "With monitoring revoked, the grant there is not re-emitted (so Crossplane deletes it), the recorded canary in monitoring goes to 0% and the mirror to monitoring is removed: a hold never re-opens what the policy closed.",
			input:  "allowedRouteNamespaces: [test]",
			want: want{
				keys: []names.Key{"route-httproute", "service-primary"}, weights: []int32{50, 0}, mirrors: 0,
				zeroed: []xr.BackendID{{Kind: "Service", Namespace: "monitoring", Name: "canary-proxy", Port: ptr.To[int32](3456)}},
			},
		},
		"RevokedKind": {
			reason: "A grant entry of a kind the Input no longer allows is dropped; the grant keeps the entries it still allows.",
			input:  allowMonitoring + "allowedBackendKinds: [{group: '', kind: Service}]\n",
			want:   want{keys: []names.Key{"referencegrant-monitoring", "route-httproute", "service-primary"}, weights: []int32{50, 50}, mirrors: 1, grantTo: 2},
		},
		"ReadyOnceItExists": {
			reason:  "A held route honours requireAcceptedRoute: false like any other: ready once it exists, accepted or not.",
			input:   allowMonitoring,
			patches: []patch{set("spec.traffic", `{weight: 20, requireAcceptedRoute: false}`)},
			want:    want{keys: []names.Key{"referencegrant-monitoring", "route-httproute", "service-primary"}, weights: []int32{50, 50}, mirrors: 1, grantTo: 3, ready: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, tc.input, append([]patch{recorded}, tc.patches...)...)
			observed := map[names.Key]map[string]any{
				"route-httproute":           object(t, previousRoute),
				"referencegrant-monitoring": object(t, previousGrant),
				"service-primary":           object(t, observedService),
			}
			held, err := p.Held(observed, observe(t, p, previousRoute))
			if err != nil {
				t.Fatalf("%s\nHeld(...): %v", tc.reason, err)
			}
			got := want{zeroed: held.Zeroed}
			for _, o := range held.Objects {
				got.keys = append(got.keys, o.Key)
				switch obj := o.Object.(type) {
				case *gwv1.HTTPRoute:
					got.ready = o.Ready
					for _, b := range obj.Spec.Rules[0].BackendRefs {
						got.weights = append(got.weights, ptr.Deref(b.Weight, 1))
					}
					got.mirrors = len(obj.Spec.Rules[0].Filters)
				case *gwv1beta1.ReferenceGrant:
					got.grantTo = len(obj.Spec.To)
				}
			}
			_ = routeOf(t, held)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nHeld(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestHeldRulesOfTheirOwn pins what a hold makes of the rules of their own
// of the previous route under an Input that refuses some of their backends:
// a refused backend of a rule of its own goes, even where the rule splits
// its requests with the canary, the previous primary of a weighted rule
// stays, and a rule the hold does not change keeps its weights, a drained
// one (every weight 0) included. Every held route passes the Gateway API
// CRDs.
func TestHeldRulesOfTheirOwn(t *testing.T) {
	// Paused at 50% with revision v2 (canary podinfo-v2); the spec starts
	// revision v3, so the run holds the previous route.
	paused := []patch{
		set("spec.rules", `[{name: api}]`),
		set("spec.primary", `{backendRef: {name: podinfo}}`),
		set("spec.canary", `{backendRef: {name: podinfo-v3}, revision: v3}`),
		set("spec.traffic", `{steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}], paused: true}`),
		set("status.rollout", `{phase: Paused, reason: Paused, revision: v2, step: 1, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 50, primaryWeight: 50, canaryBackends: [{group: "", kind: Service, namespace: test, name: podinfo-v2, port: 9898}]}`),
	}
	const (
		onlyServices = "allowedRouteNamespaces: [test]\nallowedBackendKinds: [{group: '', kind: Service}]\n"
		api          = `{name: api, matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: podinfo, port: 9898, weight: 50}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}]}`
	)
	routeWith := func(rules string) string {
		return `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, generation: 2}, spec: {parentRefs: [{name: gateway, namespace: istio-ingress}], rules: [` + rules + `]}}`
	}
	cases := map[string]struct {
		reason  string
		input   string
		patches []patch
		route   string
		want    []string
		err     string
	}{
		"RefusedBackendSplitWithTheCanary": {
			reason: "A rule of its own (dropped from the spec) that split /beta between an Envoy Gateway Backend and the canary is no weighted rule: the Backend, a kind the Input refuses now, goes; it is no primary.",
			input:  onlyServices,
			route:  routeWith(`{name: beta, matches: [{path: {type: PathPrefix, value: /beta}}], backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: beta-backend, weight: 1}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 1}]}, ` + api),
			want:   []string{"beta: podinfo-v2=1", "api: podinfo=50 podinfo-v2=50"},
		},
		"DrainedRuleKeepsItsWeights": {
			reason: "Dropping a refused backend from one rule leaves a drained rule of its own (weight 0, the gateway answers 500) as it was: the hold keeps the weights the previous run composed.",
			input:  onlyServices,
			route: routeWith(`{name: drain, matches: [{path: {type: PathPrefix, value: /drain}}], backendRefs: [{group: "", kind: Service, name: legacy, port: 80, weight: 0}]}, ` +
				`{name: static, matches: [{path: {type: PathPrefix, value: /assets}}], backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn, weight: 1}]}, ` + api),
			want: []string{"drain: legacy=0", "api: podinfo=50 podinfo-v2=50"},
		},
		"PreviousPrimaryStays": {
			reason: "The weighted rule's previous primary, which the spec no longer names and the Input refuses now, stays where it was, at its weight: without its grant, the gateway refuses it.",
			input:  "allowedRouteNamespaces: [test]\n",
			route:  routeWith(`{name: api, matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 50}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}]}`),
			want:   []string{"api: podinfo-v1=50 podinfo-v2=50"},
		},
		"PreviousPrimaryOfAnUnnamedRule": {
			reason:  "The same with the spec's default rule, unnamed.",
			input:   "allowedRouteNamespaces: [test]\n",
			patches: []patch{del("spec.rules")},
			route:   routeWith(`{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: podinfo-v1, namespace: legacy, port: 9898, weight: 50}, {group: "", kind: Service, name: podinfo-v2, port: 9898, weight: 50}]}`),
			want:    []string{"-: podinfo-v1=50 podinfo-v2=50"},
		},
		"WeightBeyondInt32": {
			reason: "A weight that does not fit Gateway API's int32 (2^32+80, which only a forged observation carries) is refused, naming the field, never held as the weight it wraps to (80).",
			input:  "allowedRouteNamespaces: [test]\n",
			route:  routeWith(strings.Replace(api, "weight: 50}, {", "weight: 4294967376}, {", 1)),
			err:    "cannot read the observed HTTPRoute: spec.rules[0].backendRefs[0].weight: 4294967376 does not fit its type, int32",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, tc.input, append(append([]patch{}, paused...), tc.patches...)...)
			held, err := p.Held(map[names.Key]map[string]any{"route-httproute": object(t, tc.route)}, observe(t, p, tc.route))
			if tc.err != "" || err != nil {
				if diff := cmp.Diff(tc.err, fmt.Sprint(err)); diff != "" {
					t.Errorf("%s\nHeld(...): error -want, +got:\n%s", tc.reason, diff)
				}
				return
			}
			var got []string
			for _, o := range held.Objects {
				r, ok := o.Object.(*gwv1.HTTPRoute)
				if !ok {
					continue
				}
				for _, c := range []crdschema.Channel{crdschema.Standard, crdschema.Experimental} {
					if errs := crdschema.GatewayAPI(t, c).Validate(r); len(errs) > 0 {
						t.Errorf("the %s Gateway API CRDs reject the held route: %v", c, errs)
					}
				}
				for _, rule := range r.Spec.Rules {
					var s strings.Builder
					s.WriteString(string(ptr.Deref(rule.Name, "-")) + ":")
					for _, b := range rule.BackendRefs {
						fmt.Fprintf(&s, " %s=%d", b.Name, ptr.Deref(b.Weight, 1))
					}
					got = append(got, s.String())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHeld(...): the held route's rules, -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
