package main

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Finding a CanaryRoute by name, whatever its kind: a namespaced XR, a claim,
// or a cluster XR; and, for a claim, its XR, which holds the status and the
// composed resources.

const (
	errFmtBadName   = "invalid name %q: NAME or KIND[.GROUP]/NAME, KIND one of canaryroute, canaryrouteclaim, xcanaryroute, GROUP %s (--api-group)"
	errFmtNotFound  = "no %s named %q in namespace %q (API group %s)"
	errFmtAmbiguous = "%q names %s: say which, as KIND/NAME"
	errFmtNoKinds   = "the cluster serves none of %s in API group %s: are the XRDs installed? (--api-group names another group)"
	errFmtGet       = "cannot get %s %s: %w"
	errFmtMapping   = "cannot map %s to a resource: %w"
)

// clients are what the commands talk to the cluster with.
type clients struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	// group is the CanaryRoute's API group.
	group string
	// namespace is -n, else the kubeconfig context's.
	namespace string
}

// A ref is an object found: its GVR, scope and the object.
type ref struct {
	mapping *meta.RESTMapping
	obj     *unstructured.Unstructured
}

// A target is a CanaryRoute as found by name.
type target struct {
	// named is the object the operator named.
	named ref
	// role is named's role.
	role role
	// xr is the composite: named itself, or a claim's XR (its obj is nil
	// while the claim is not bound yet).
	xr ref
	// claim is the claim: named, or a cluster XR's claimRef (its obj is nil
	// without one).
	claim ref
}

// writable is the object the commands write: the claim of a claimed XR
// (Crossplane copies the claim's spec to its XR, so an edit of the XR alone
// would be overwritten), else the XR.
func (t target) writable() ref {
	if t.claim.obj != nil {
		return t.claim
	}
	return t.xr
}

// status is the CanaryRoute's status: the XR's, where the function writes
// it, else the claim's copy.
func (t target) status() map[string]any {
	if t.xr.obj != nil {
		return object(t.xr.obj.Object, "status")
	}
	if t.claim.obj != nil {
		return object(t.claim.obj.Object, "status")
	}
	return nil
}

// resource is the dynamic client of a mapping in namespace (ignored for
// cluster-scoped kinds).
func (c *clients) resource(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	r := c.dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(namespace)
	}
	return r
}

// mapping maps a group and kind to its resource, or nil when the cluster
// does not serve it.
func (c *clients) mapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gk, versions...)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf(errFmtMapping, gk, err)
	}
	return m, nil
}

// get gets apiVersion/kind name in namespace; nil when it does not exist or
// its kind is not served.
func (c *clients) get(ctx context.Context, apiVersion, kind, namespace, name string) (ref, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ref{}, err
	}
	m, err := c.mapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil || m == nil {
		return ref{mapping: m}, err
	}
	obj, err := c.resource(m, namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ref{mapping: m}, nil
	}
	if err != nil {
		return ref{mapping: m}, fmt.Errorf(errFmtGet, kind, name, err)
	}
	return ref{mapping: m, obj: obj}, nil
}

// locate finds the CanaryRoute arg names (NAME or KIND/NAME).
func (c *clients) locate(ctx context.Context, arg string) (target, error) {
	kinds, name, ok := splitName(arg, c.group)
	if !ok {
		return target{}, fmt.Errorf(errFmtBadName, arg, c.group)
	}
	var found []target
	served := 0
	for _, k := range kinds {
		m, err := c.mapping(schema.GroupKind{Group: c.group, Kind: k.kind})
		if err != nil {
			return target{}, err
		}
		if m == nil {
			continue
		}
		served++
		obj, err := c.resource(m, c.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return target{}, fmt.Errorf(errFmtGet, k.kind, name, err)
		}
		t, err := c.complete(ctx, ref{mapping: m, obj: obj}, k.role)
		if err != nil {
			return target{}, err
		}
		if !samePair(found, t) {
			found = append(found, t)
		}
	}
	names := kindNames(kinds)
	switch {
	case served == 0:
		return target{}, fmt.Errorf(errFmtNoKinds, names, c.group)
	case len(found) == 0:
		return target{}, fmt.Errorf(errFmtNotFound, names, name, c.namespace, c.group)
	case len(found) > 1:
		all := make([]string, 0, len(found))
		for _, t := range found {
			all = append(all, describe(t.named.obj))
		}
		return target{}, fmt.Errorf(errFmtAmbiguous, arg, strings.Join(all, " and "))
	}
	return found[0], nil
}

// complete finds the other half of a claim and its XR.
func (c *clients) complete(ctx context.Context, named ref, r role) (target, error) {
	t := target{named: named, role: r}
	switch r {
	case roleXR:
		t.xr = named
	case roleClaim:
		t.claim = named
		if rr := object(named.obj.Object, "spec", "resourceRef"); rr != nil {
			xr, err := c.get(ctx, str(rr, "apiVersion"), str(rr, "kind"), "", str(rr, "name"))
			if err != nil {
				return target{}, err
			}
			t.xr = xr
		}
	case roleClusterXR:
		t.xr = named
		if cr := object(named.obj.Object, "spec", "claimRef"); cr != nil {
			claim, err := c.get(ctx, str(cr, "apiVersion"), str(cr, "kind"), str(cr, "namespace"), str(cr, "name"))
			if err != nil {
				return target{}, err
			}
			t.claim = claim
		}
	}
	return t, nil
}

// samePair says whether t is a claim and XR pair that found already holds
// (a claim and its XR of the same name).
func samePair(found []target, t target) bool {
	for _, f := range found {
		if f.xr.obj != nil && t.xr.obj != nil && identity(f.xr.obj) == identity(t.xr.obj) {
			return true
		}
	}
	return false
}

// identity is an object's UID, else its kind, namespace and name.
func identity(obj *unstructured.Unstructured) string {
	if uid := obj.GetUID(); uid != "" {
		return string(uid)
	}
	return obj.GetAPIVersion() + "/" + describe(obj)
}

// kindNames lists kinds for a message.
func kindNames(kinds []kindInfo) string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.kind)
	}
	return strings.Join(names, ", ")
}

// describe names an object for people: Kind namespace/name.
func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}
