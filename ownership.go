package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	errNotOursFmt = "%s exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object %s=%s to hand it over)"
	errTakeover   = "cannot compose over objects that other owners manage"

	// labelComposite is the label Crossplane sets on every object an XR
	// composes, naming the XR.
	labelComposite = "crossplane.io/composite"
	// prefixExisting starts the name of the requirement that asks
	// Crossplane for an object the run is about to compose.
	prefixExisting = "existing-"
)

// A target is an object this run is about to compose.
type target struct {
	key        resource.Name
	apiVersion string
	kind       string
	namespace  string
	name       string
}

func (t target) String() string { return fmt.Sprintf("%s %s/%s", t.kind, t.namespace, t.name) }

// composeTargets lists the objects that the run composes from the spec: the
// route, the proxy Services and the ReferenceGrants. They depend on the spec
// alone, so the requirements they make come out identical on every call.
func composeTargets(cr *xr.CanaryRoute, p route.Params, grants grant.Result) []target {
	version := "v1"
	if p.Kind == xr.KindTLSRoute || p.Kind == xr.KindTCPRoute {
		version = string(p.Version)
	}
	targets := []target{{
		key:        routeKeyFor(cr.Spec.Kind),
		apiVersion: gwv1.GroupName + "/" + version,
		kind:       string(cr.Spec.Kind),
		namespace:  cr.RouteNamespace,
		name:       cr.RouteName,
	}}
	for _, s := range []struct {
		key  resource.Name
		role xr.Role
		side xr.Side
	}{{resourceServicePrimary, xr.RolePrimary, cr.Spec.Primary}, {resourceServiceCanary, xr.RoleCanary, cr.Spec.Canary}} {
		if s.side.ComposesService() {
			targets = append(targets, target{key: s.key, apiVersion: "v1", kind: "Service", namespace: cr.RouteNamespace, name: xr.ProxyServiceName(cr.RouteName, s.role)})
		}
	}
	for _, g := range grants.Grants {
		targets = append(targets, target{
			key:        resource.Name(prefixReferenceGrant + g.Namespace),
			apiVersion: g.APIVersion,
			kind:       g.Kind,
			namespace:  g.Namespace,
			name:       g.Name,
		})
	}
	return targets
}

// require asks Crossplane for each gate's object, by name, in the route
// namespace only, and for each object the run is about to compose, by name.
// Crossplane calls the function again until the requirements stop changing,
// so they depend on the spec alone.
func require(rsp *fnv1.RunFunctionResponse, cr *xr.CanaryRoute, targets []target) {
	if rsp.GetRequirements() == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = make(map[string]*fnv1.ResourceSelector, len(cr.Spec.Traffic.Gates)+len(targets))
	}
	for i, g := range cr.Spec.Traffic.Gates {
		rsp.Requirements.Resources[gateKey(i)] = &fnv1.ResourceSelector{
			ApiVersion: g.APIVersion,
			Kind:       g.Kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: g.Name},
			Namespace:  ptr.To(cr.RouteNamespace),
		}
	}
	for _, t := range targets {
		rsp.Requirements.Resources[prefixExisting+string(t.key)] = &fnv1.ResourceSelector{
			ApiVersion: t.apiVersion,
			Kind:       t.kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: t.name},
			Namespace:  ptr.To(t.namespace),
		}
	}
}

// checkOwnership refuses to compose over an object that this XR did not
// compose. Crossplane's server-side apply would adopt an existing object of
// the same name, rewrite it, and delete it with the XR: another team's
// route, Service or ReferenceGrant, taken over by naming it.
//
// On the first call of a reconcile Crossplane has fetched nothing yet; that
// call's response is never applied, since the requirements it makes send
// Crossplane back for the objects and a second call.
func checkOwnership(req *fnv1.RunFunctionRequest, oxr *resource.Composite, targets []target) error {
	xrName, xrUID := oxr.Resource.GetName(), string(oxr.Resource.GetUID())
	var problems []string
	for _, t := range targets {
		fetched, ok := req.GetRequiredResources()[prefixExisting+string(t.key)]
		if !ok {
			continue
		}
		for _, item := range fetched.GetItems() {
			meta := item.GetResource().GetFields()["metadata"].GetStructValue()
			if !sameObject(meta, t) || ownedBy(meta, xrName, xrUID) {
				continue
			}
			problems = append(problems, fmt.Sprintf(errNotOursFmt, t, labelComposite, xrName))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.Wrap(errors.New(strings.Join(problems, "; ")), errTakeover)
}

// sameObject guards against a requirement that Crossplane resolved to
// another object than the one asked for.
func sameObject(meta *structpb.Struct, t target) bool {
	f := meta.GetFields()
	return f["name"].GetStringValue() == t.name && f["namespace"].GetStringValue() == t.namespace
}

// ownedBy reports whether an object's metadata says this XR composed it:
// Crossplane labels what an XR composes with the XR's name, and makes the XR
// its controller. The controller's UID settles two XRs of the same name
// (a namespaced one and a cluster-scoped one).
func ownedBy(meta *structpb.Struct, xrName, xrUID string) bool {
	if meta.GetFields()["labels"].GetStructValue().GetFields()[labelComposite].GetStringValue() != xrName {
		return false
	}
	if xrUID == "" {
		return true
	}
	for _, v := range meta.GetFields()["ownerReferences"].GetListValue().GetValues() {
		ref := v.GetStructValue().GetFields()
		if ref["controller"].GetBoolValue() && ref["uid"].GetStringValue() != xrUID {
			return false
		}
	}
	return true
}
