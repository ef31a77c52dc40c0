package main

import (
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/proxy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// composeDesired adds the route, the proxy Services and the ReferenceGrants
// to the desired composed resources, each with its readiness. Anything the function
// composed on an earlier run and does not add now is deleted by Crossplane:
// that is how a revoked grant, a side that stopped composing a Service, or
// the route of a previous kind go away.
func composeDesired(desired map[string]*fnv1.Resource, observed map[resource.Name]resource.ObservedComposed,
	routeKey resource.Name, built runtime.Object, obs route.Observation, cr *xr.CanaryRoute, grants grant.Result,
) error {
	add := func(name resource.Name, obj runtime.Object, ready bool) error {
		s, err := composedStruct(obj)
		if err != nil {
			return errors.Wrapf(err, errConvertFmt, name)
		}
		desired[string(name)] = desiredResource(s, ready)
		return nil
	}

	// The route is ready once every parent accepted it with all references
	// resolved, or once it exists when the CanaryRoute does not wait for
	// the gateway (requireAcceptedRoute: false).
	ready := obs.AllReady()
	if !cr.Spec.Traffic.RequireAcceptedRoute {
		ready = obs.Exists
	}
	if err := add(routeKey, built, ready); err != nil {
		return err
	}
	// Services and grants are ready once they exist: nothing reports on
	// them.
	for _, s := range []struct {
		name resource.Name
		role xr.Role
	}{{resourceServicePrimary, xr.RolePrimary}, {resourceServiceCanary, xr.RoleCanary}} {
		if svc := proxy.Service(cr, s.role); svc != nil {
			_, exists := observed[s.name]
			if err := add(s.name, svc, exists); err != nil {
				return err
			}
		}
	}
	for _, g := range grants.Grants {
		name := resource.Name(prefixReferenceGrant + g.Namespace)
		_, exists := observed[name]
		if err := add(name, g, exists); err != nil {
			return err
		}
	}
	return nil
}

// composedStruct converts a typed object to the form Crossplane applies.
// Composed objects never carry status (the function has no opinion on it)
// nor a creation timestamp.
func composedStruct(obj runtime.Object) (*structpb.Struct, error) {
	s, err := structOf(obj)
	if err != nil {
		return nil, err
	}
	delete(s.GetFields(), "status")
	delete(s.GetFields()["metadata"].GetStructValue().GetFields(), "creationTimestamp")
	return s, nil
}

// routeKeyFor is the composed resource name of the route of a kind.
func routeKeyFor(kind xr.RouteKind) resource.Name {
	return resource.Name(prefixRoute + strings.ToLower(string(kind)))
}
