package xr

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDigestView pins the view the canary's digest is taken on with
// spec.routes: never the first route's as such, so that the routes' order
// and their own ports say nothing of the canary.
func TestDigestView(t *testing.T) {
	type view struct {
		Kind RouteKind
		Port int32
	}
	cases := map[string]struct {
		reason string
		routes string
		want   view
	}{
		"HTTPRouteFirst": {
			reason: "The first HTTPRoute's view at spec.port.",
			routes: `[{name: web}, {name: grpc, kind: GRPCRoute, port: 9999}]`,
			want:   view{KindHTTPRoute, 9898},
		},
		"HTTPRouteSecond": {
			reason: "Attack: reordered, still the HTTPRoute's view: the digest was the first route's, a GRPCRoute's (its filters parsed as GRPCRoute filters).",
			routes: `[{name: grpc, kind: GRPCRoute, port: 9999}, {name: web}]`,
			want:   view{KindHTTPRoute, 9898},
		},
		"OwnPort": {
			reason: "Attack: a route's own port is not the canary's: spec.port, which another route reaches the sides on.",
			routes: `[{name: web, port: 8080}, {name: api}]`,
			want:   view{KindHTTPRoute, 9898},
		},
		"GRPCBesideStream": {
			reason: "Without an HTTPRoute, the first GRPCRoute's view, wherever it is.",
			routes: `[{name: db, kind: TCPRoute, port: 5432}, {name: grpc, kind: GRPCRoute}]`,
			want:   view{KindGRPCRoute, 9898},
		},
		"EveryPortItsOwn": {
			reason: "Every route on a port of its own: no route reaches the sides on spec.port, so the view has none.",
			routes: `[{name: web, port: 8080}, {name: api, port: 8081}]`,
			want:   view{KindHTTPRoute, 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr, err := Parse(xrWith(t, del("spec.parentRefs"), del("spec.hostnames"), set("spec.routes", tc.routes)), defaultParents)
			if err != nil {
				t.Fatalf("%s\nParse(...): %v", tc.reason, err)
			}
			v := cr.DigestView()
			got := view{v.Spec.Kind, v.Spec.Port}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDigestView(): -want, +got:\n%s", tc.reason, diff)
			}
			if v.Spec.RoutePort != 0 {
				t.Errorf("%s\nDigestView() has a route's own port %d", tc.reason, v.Spec.RoutePort)
			}
		})
	}
}
