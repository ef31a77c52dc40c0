package main

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"

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
func composeDesired(desired map[resource.Name]*resource.DesiredComposed, observed map[resource.Name]resource.ObservedComposed,
	routeKey resource.Name, built runtime.Object, obs route.Observation, cr *xr.CanaryRoute, grants grant.Result,
) error {
	add := func(name resource.Name, obj runtime.Object, ready bool) error {
		u, err := toComposed(obj)
		if err != nil {
			return errors.Wrapf(err, errConvertFmt, name)
		}
		d := &resource.DesiredComposed{Resource: u, Ready: resource.ReadyFalse}
		if ready {
			d.Ready = resource.ReadyTrue
		}
		desired[name] = d
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

// toComposed converts a typed object to the unstructured form Crossplane
// applies. Composed objects never carry status (the function has no opinion
// on it) nor a creation timestamp.
func toComposed(obj runtime.Object) (*composed.Unstructured, error) {
	m, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	u := composed.New()
	u.SetUnstructuredContent(m)
	return u, nil
}

// toMap converts a typed value to JSON-shaped data. The API machinery's
// converter follows the JSON tags (omitempty included) like encoding/json,
// without a round trip through bytes.
func toMap(v any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// routeKeyFor is the composed resource name of the route of a kind.
func routeKeyFor(kind xr.RouteKind) resource.Name {
	return resource.Name(prefixRoute + strings.ToLower(string(kind)))
}
