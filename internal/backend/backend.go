// Package backend resolves a CanaryRoute side (primary or canary) into the
// Gateway API backend reference that the route points at, applying the port
// and namespace rules of each backend kind.
package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Backend kinds with rules of their own (docs/reference.md's table). Any other
// group/kind is written as the user wrote it.
var (
	KindService       = schema.GroupKind{Group: "", Kind: "Service"}
	KindServiceImport = schema.GroupKind{Group: "multicluster.x-k8s.io", Kind: "ServiceImport"}
	KindIstioHostname = schema.GroupKind{Group: "networking.istio.io", Kind: "Hostname"}
	KindInferencePool = schema.GroupKind{Group: "inference.networking.k8s.io", Kind: "InferencePool"}
	KindEnvoyBackend  = schema.GroupKind{Group: "gateway.envoyproxy.io", Kind: "Backend"}
)

// portRule says what a backend kind does with a port.
type portRule int

const (
	// portAsWritten writes the port the user gave, or none.
	portAsWritten portRule = iota
	// portRequired needs a port, defaulting to spec.port.
	portRequired
	// portNone writes no port: the backend object carries its own.
	portNone
)

var portRules = map[schema.GroupKind]portRule{
	KindService:       portRequired,
	KindServiceImport: portRequired,
	KindIstioHostname: portRequired,
	KindInferencePool: portNone,
	KindEnvoyBackend:  portNone,
}

// Backend is one side of the rollout, resolved.
type Backend struct {
	// Role is the part the backend plays; it is how the function finds its
	// backends again, whatever their names.
	Role xr.Role
	// Ref is the reference as the route carries it.
	Ref gwv1.BackendObjectReference
	// Namespace is the backend's effective namespace: the route's when Ref
	// names none.
	Namespace string
	// FromBackendRef is true for a backendRef side, false for a composed
	// proxy Service.
	FromBackendRef bool
	HTTPFilters    []gwv1.HTTPRouteFilter
	GRPCFilters    []gwv1.GRPCRouteFilter
}

// GroupKind of the backend, with Gateway API's defaults applied.
func (b Backend) GroupKind() schema.GroupKind {
	return GroupKindOf(b.Ref)
}

// GroupKindOf is the group/kind of a reference, with Gateway API's defaults
// applied (core group, kind Service).
func GroupKindOf(ref gwv1.BackendObjectReference) schema.GroupKind {
	gk := schema.GroupKind{Kind: "Service"}
	if ref.Group != nil {
		gk.Group = string(*ref.Group)
	}
	if ref.Kind != nil {
		gk.Kind = string(*ref.Kind)
	}
	return gk
}

// Same reports whether two backends are the same object on the same port:
// then the route carries only one of them.
func Same(a, b Backend) bool {
	return a.GroupKind() == b.GroupKind() &&
		a.Namespace == b.Namespace &&
		a.Ref.Name == b.Ref.Name &&
		ptr.Deref(a.Ref.Port, 0) == ptr.Deref(b.Ref.Port, 0)
}

// routePort is a backendRef side's port on a route: an entry of
// spec.routes with a port of its own reaches the side there (the side's
// port is the other routes'), when the side's kind takes a port; port, as
// written, otherwise.
func routePort(cr *xr.CanaryRoute, gk schema.GroupKind, port *gwv1.PortNumber) *gwv1.PortNumber {
	if cr.Spec.RoutePort != 0 && portRules[gk] != portNone && (port != nil || portRules[gk] == portRequired) {
		return ptr.To(cr.Spec.RoutePort)
	}
	return port
}

// Resolve returns the backend of one side of the CanaryRoute.
func Resolve(cr *xr.CanaryRoute, role xr.Role) (Backend, field.ErrorList) {
	side := cr.Spec.Primary
	if role == xr.RoleCanary {
		side = cr.Spec.Canary
	}
	path := field.NewPath("spec", string(role))
	b := Backend{Role: role, Namespace: cr.RouteNamespace, HTTPFilters: side.HTTPFilters, GRPCFilters: side.GRPCFilters}

	if side.ComposesService() {
		if cr.Spec.Port == 0 {
			return b, field.ErrorList{field.Required(field.NewPath("spec", "port"),
				fmt.Sprintf("the %s proxy Service needs a port", role))}
		}
		b.Ref = gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")),
			Kind:  ptr.To(gwv1.Kind("Service")),
			Name:  gwv1.ObjectName(xr.ProxyServiceName(cr.RouteName, role)),
			Port:  ptr.To(cr.Spec.Port),
		}
		return b, nil
	}

	if side.BackendRef == nil {
		// xr.Parse never yields such a side; a hand-built one must not
		// panic the function.
		return b, field.ErrorList{field.Required(path, "set one of service, externalName or backendRef")}
	}
	b.FromBackendRef = true
	b.Ref = *side.BackendRef.DeepCopy()
	if b.Ref.Namespace != nil && *b.Ref.Namespace != "" {
		b.Namespace = string(*b.Ref.Namespace)
	}
	refPath := path.Child("backendRef")
	gk := b.GroupKind()

	var errs field.ErrorList
	b.Ref.Port = routePort(cr, gk, b.Ref.Port)
	switch portRules[gk] {
	case portRequired:
		if b.Ref.Port == nil {
			if cr.Spec.Port == 0 {
				errs = append(errs, field.Required(refPath.Child("port"),
					fmt.Sprintf("a %s backend needs a port: set it here or set spec.port", KindString(gk))))
			} else {
				b.Ref.Port = ptr.To(cr.Spec.Port)
			}
		}
	case portNone:
		if b.Ref.Port != nil {
			errs = append(errs, field.Forbidden(refPath.Child("port"),
				fmt.Sprintf("a %s backend takes no port: the %s object says where its endpoints listen", KindString(gk), gk.Kind)))
		}
	case portAsWritten:
	}
	if gk == KindIstioHostname {
		if b.Ref.Namespace != nil {
			errs = append(errs, field.Forbidden(refPath.Child("namespace"),
				"an Istio Hostname is not namespaced: leave namespace empty"))
		}
		// Istio resolves a Hostname against its whole registry, Kubernetes
		// Services of every namespace included, and no ReferenceGrant
		// applies: a cluster-local host would reach another namespace
		// around the Input's policy, as an ExternalName Service would.
		errs = append(errs, xr.ExternalName(refPath.Child("name"), string(b.Ref.Name))...)
	}

	check := b.Ref
	if len(errs) > 0 && check.Port == nil && portRules[gk] == portRequired {
		// The missing port is reported above, with the way to fix it; the
		// CRD's "Must have port for Service reference" would say it again.
		check.Port = ptr.To[gwv1.PortNumber](1)
	}
	errs = append(errs, admission.BackendObjectReference(refPath, &check)...)
	return b, errs
}

// KindString names a group/kind the way kubectl does: Kind.group, or Kind
// for the core group.
func KindString(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// A Reference is a backend written in the spec outside the sides: the
// backendRef of a RequestMirror filter (in a rule's filters, a side's, or
// a backendRef's of a rule of its own), or a backendRef of a rule of its
// own. It passes the same policy as the sides, wherever it is written.
type Reference struct {
	// Path is the backendRef in the CanaryRoute, for messages.
	Path    *field.Path
	Backend Backend
}

// Mirrors returns the backends of the RequestMirror filters in the spec, in
// the order they are written, and what is wrong with them regardless of the
// policy: an Istio Hostname is checked like a Hostname side.
func Mirrors(cr *xr.CanaryRoute) ([]Reference, field.ErrorList) {
	var mirrors []Reference
	collect := func(path *field.Path, http []gwv1.HTTPRouteFilter, grpc []gwv1.GRPCRouteFilter) {
		for i, f := range http {
			if f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
				mirrors = append(mirrors, reference(cr, xr.RoleMirror, path.Index(i).Child("requestMirror", "backendRef"), f.RequestMirror.BackendRef))
			}
		}
		for i, f := range grpc {
			if f.Type == gwv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil {
				mirrors = append(mirrors, reference(cr, xr.RoleMirror, path.Index(i).Child("requestMirror", "backendRef"), f.RequestMirror.BackendRef))
			}
		}
	}
	spec := field.NewPath("spec")
	for i, r := range cr.Spec.Rules {
		rule := spec.Child("rules").Index(i)
		collect(rule.Child("filters"), r.HTTPFilters, r.GRPCFilters)
		for j, b := range r.HTTPBackendRefs {
			collect(rule.Child("backendRefs").Index(j).Child("filters"), b.Filters, nil)
		}
		for j, b := range r.GRPCBackendRefs {
			collect(rule.Child("backendRefs").Index(j).Child("filters"), nil, b.Filters)
		}
	}
	collect(spec.Child("primary", "filters"), cr.Spec.Primary.HTTPFilters, cr.Spec.Primary.GRPCFilters)
	collect(spec.Child("canary", "filters"), cr.Spec.Canary.HTTPFilters, cr.Spec.Canary.GRPCFilters)
	return mirrors, hostnameErrors(mirrors)
}

// RuleBackends returns the backendRefs of the rules of their own, in the
// order they are written, and what is wrong with them regardless of the
// policy: an Istio Hostname is checked like a Hostname side.
func RuleBackends(cr *xr.CanaryRoute) ([]Reference, field.ErrorList) {
	var refs []Reference
	for i, r := range cr.Spec.Rules {
		path := field.NewPath("spec", "rules").Index(i).Child("backendRefs")
		for j, b := range r.HTTPBackendRefs {
			refs = append(refs, reference(cr, xr.RoleRule, path.Index(j), b.BackendObjectReference))
		}
		for j, b := range r.GRPCBackendRefs {
			refs = append(refs, reference(cr, xr.RoleRule, path.Index(j), b.BackendObjectReference))
		}
	}
	return refs, hostnameErrors(refs)
}

// reference is a backend written at a path of the spec, in its effective
// namespace.
func reference(cr *xr.CanaryRoute, role xr.Role, path *field.Path, ref gwv1.BackendObjectReference) Reference {
	b := Backend{Role: role, Ref: *ref.DeepCopy(), Namespace: cr.RouteNamespace, FromBackendRef: true}
	if ref.Namespace != nil && *ref.Namespace != "" {
		b.Namespace = string(*ref.Namespace)
	}
	return Reference{Path: path, Backend: b}
}

// hostnameErrors checks the Istio Hostnames among references as a Hostname
// side is checked: not namespaced, and never a cluster-local, local or
// metadata host.
func hostnameErrors(refs []Reference) field.ErrorList {
	var errs field.ErrorList
	for _, m := range refs {
		if m.Backend.GroupKind() != KindIstioHostname {
			continue
		}
		if m.Backend.Ref.Namespace != nil {
			errs = append(errs, field.Forbidden(m.Path.Child("namespace"), "an Istio Hostname is not namespaced: leave namespace empty"))
		}
		errs = append(errs, xr.ExternalName(m.Path.Child("name"), string(m.Backend.Ref.Name))...)
	}
	return errs
}

// ID identifies the backend the way the route carries it, with Gateway
// API's defaults applied, as status.rollout.canaryBackends records it.
func (b Backend) ID() xr.BackendID {
	gk := b.GroupKind()
	return xr.BackendID{Group: gk.Group, Kind: gk.Kind, Namespace: b.Namespace, Name: string(b.Ref.Name), Port: b.Ref.Port}
}

// Digest is a short, stable digest of a side: what the backend is (its
// source, resolved) and its filters. A change of it is a different canary,
// which a progressive rollout must not send its current weight to.
//
// It compares meaning, not spelling: Gateway API's defaults are applied
// before hashing (group "", kind Service, the route's namespace, the port
// that spec.port gives), so writing a default out never restarts a
// rollout. spec.port is left out for proxy Services: it moves both sides
// alike.
func Digest(side xr.Side, b Backend) string {
	type digested struct {
		Service      *xr.ServiceSource            `json:"service,omitempty"`
		ExternalName string                       `json:"externalName,omitempty"`
		BackendRef   *gwv1.BackendObjectReference `json:"backendRef,omitempty"`
		Namespace    string                       `json:"namespace,omitempty"`
		HTTPFilters  []gwv1.HTTPRouteFilter       `json:"httpFilters,omitempty"`
		GRPCFilters  []gwv1.GRPCRouteFilter       `json:"grpcFilters,omitempty"`
		// TLS is left out when unset, so the digests of canaries without
		// it stay what earlier releases wrote.
		TLS *gwv1.BackendTLSPolicyValidation `json:"tls,omitempty"`
	}
	d := digested{Service: side.Service, ExternalName: side.ExternalName, HTTPFilters: side.HTTPFilters, GRPCFilters: side.GRPCFilters, TLS: side.TLS}
	if s := side.Service; s != nil && s.TargetPort != nil && b.Ref.Port != nil &&
		s.TargetPort.Type == intstr.Int && s.TargetPort.IntVal == *b.Ref.Port {
		// A targetPort written out as spec.port is the default one.
		svc := *s
		svc.TargetPort = nil
		d.Service = &svc
	}
	if b.FromBackendRef {
		gk := b.GroupKind()
		ref := *b.Ref.DeepCopy()
		ref.Group, ref.Kind, ref.Namespace = ptr.To(gwv1.Group(gk.Group)), ptr.To(gwv1.Kind(gk.Kind)), nil
		d.BackendRef, d.Namespace = &ref, b.Namespace
	}
	// Marshalling typed values cannot fail; maps come out sorted, so the
	// bytes are stable.
	data, _ := json.Marshal(d) //nolint:errchkjson // See above.
	sum := sha256.Sum256(data)
	return digestVersion + hex.EncodeToString(sum[:8])
}

// digestVersion starts every digest: it names how the digest is made, so
// that a later way of making it can tell its own digests apart.
const digestVersion = "v2-"
