package compose

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func TestRouteStatus(t *testing.T) {
	type args struct {
		patches []patch
		route   string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   xr.RouteStatus
	}{
		"NotCreated": {
			reason: "Before the route exists, status.route names it and its parents, none of them accepting, with reason Pending.",
			args:   args{},
			want: xr.RouteStatus{Kind: xr.KindHTTPRoute, Name: "podinfo", Namespace: "test", Parents: []xr.ParentStatus{
				{Name: "gateway", Namespace: "istio-ingress", Reason: "Pending"},
			}},
		},
		"Accepted": {
			reason: "A parent that accepted the route and resolved its references shows no reason.",
			args: args{route: `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 1}
` + parentStatus("True", "True")},
			want: xr.RouteStatus{Kind: xr.KindHTTPRoute, Name: "podinfo", Namespace: "test", Parents: []xr.ParentStatus{
				{Name: "gateway", Namespace: "istio-ingress", Accepted: true, ResolvedRefs: true},
			}},
		},
		"Refused": {
			reason: "A parent that refuses the route shows the reason of its first condition that is not True.",
			args: args{route: `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 1}
` + parentStatus("True", "False")},
			want: xr.RouteStatus{Kind: xr.KindHTTPRoute, Name: "podinfo", Namespace: "test", Parents: []xr.ParentStatus{
				{Name: "gateway", Namespace: "istio-ingress", Accepted: true, Reason: "RefNotPermitted"},
			}},
		},
		"ParentDefaultsAndListeners": {
			reason: "Each parent in the order of spec.parentRefs: one without a namespace is in the route's; its sectionName and port are shown.",
			args: args{patches: []patch{
				set("spec.kind", "GRPCRoute"), set("spec.routeName", "shop"),
				set("spec.parentRefs", `[{name: internal, sectionName: grpc, port: 8443}, {name: gateway, namespace: istio-ingress}]`),
			}},
			want: xr.RouteStatus{Kind: xr.KindGRPCRoute, Name: "shop", Namespace: "test", Parents: []xr.ParentStatus{
				{Name: "internal", Namespace: "test", SectionName: "grpc", Port: 8443, Reason: "Pending"},
				{Name: "gateway", Namespace: "istio-ingress", Reason: "Pending"},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, tc.args.patches...)
			got := RouteStatus(p.CR, observe(t, p, tc.args.route))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRouteStatus(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
