package compose

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func TestKeyNames(t *testing.T) {
	// Crossplane records these keys in the composition-resource-name
	// annotation of every object composed earlier: changing one would
	// delete and recreate the object.
	got := []names.Key{
		names.RouteKey(string(xr.KindHTTPRoute)), names.RouteKey(string(xr.KindGRPCRoute)), names.RouteKey(string(xr.KindTLSRoute)), names.RouteKey(string(xr.KindTCPRoute)), names.RouteKey(string(xr.KindUDPRoute)),
		names.GrantKey("monitoring"), names.KeyServicePrimary, names.KeyServiceCanary, serviceKey(xr.RolePrimary), serviceKey(xr.RoleCanary),
		tlsKey(xr.RolePrimary), tlsKey(xr.RoleCanary),
	}
	want := []names.Key{
		"route-httproute", "route-grpcroute", "route-tlsroute", "route-tcproute", "route-udproute",
		"referencegrant-monitoring", "service-primary", "service-canary", "service-primary", "service-canary",
		"backendtlspolicy-primary", "backendtlspolicy-canary",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the keys of composed resources are recorded in the cluster and must not change: -want, +got:\n%s", diff)
	}
}
