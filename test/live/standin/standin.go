// Package standin is a stand-in for a Gateway API implementation, the only
// fake of the live tests: it writes route status as a gateway does, so the
// function sees its routes accepted, or refused, by their parents.
//
// For every parentRef of every route (HTTPRoute, GRPCRoute, TLSRoute,
// TCPRoute) it reports, with the route's observedGeneration:
//
//   - Accepted True: it accepts any parent, Gateway or not, existing or not;
//   - ResolvedRefs True, or False with reason RefNotPermitted when a backend
//     (or a RequestMirror filter's backend) in another namespace has no
//     ReferenceGrant there that allows it, or BackendNotFound when a Service
//     backend does not exist. Other backend kinds count as resolved.
//
// It only writes what changed, under its own controllerName, and leaves the
// reports of other controllers alone. A parent that is a Gateway of a real
// implementation (its GatewayClass's controllerName is in RealControllers)
// is that implementation's to report on: the stand-in writes nothing for it.
package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// ControllerName is the controllerName of the stand-in's reports.
const ControllerName = "canary-route.example.org/gateway-stand-in"

// Condition types and reasons of Gateway API route status.
const (
	TypeAccepted          = "Accepted"
	TypeResolvedRefs      = "ResolvedRefs"
	ReasonAccepted        = "Accepted"
	ReasonResolvedRefs    = "ResolvedRefs"
	ReasonRefNotPermitted = "RefNotPermitted"
	ReasonBackendNotFound = "BackendNotFound"

	groupGateway  = "gateway.networking.k8s.io"
	kindService   = "Service"
	statusTrue    = "True"
	statusFalse   = "False"
	defaultPeriod = 250 * time.Millisecond
)

// RouteKinds are the route kinds the stand-in reports on.
var RouteKinds = []schema.GroupVersionKind{
	{Group: groupGateway, Version: "v1", Kind: "HTTPRoute"},
	{Group: groupGateway, Version: "v1", Kind: "GRPCRoute"},
	{Group: groupGateway, Version: "v1", Kind: "TLSRoute"},
	{Group: groupGateway, Version: "v1", Kind: "TCPRoute"},
}

// ReferenceGrantGVK is the served version the stand-in reads grants with;
// v1 and v1beta1 are one stored object.
var ReferenceGrantGVK = schema.GroupVersionKind{Group: groupGateway, Version: "v1beta1", Kind: "ReferenceGrant"}

// A StandIn reports on routes until its context ends.
type StandIn struct {
	Client *controlplane.Client
	// Period between two passes over every route. Default 250ms.
	Period time.Duration
	// Errorf reports errors of a pass (the next pass retries). Optional.
	Errorf func(format string, args ...any)
	// RealControllers are the controllerNames of GatewayClasses that a real
	// Gateway API implementation serves: the stand-in leaves the parents
	// that are their Gateways to it.
	RealControllers []string
}

var (
	gvkGatewayClass = schema.GroupVersionKind{Group: groupGateway, Version: "v1", Kind: "GatewayClass"}
	gvkGateway      = schema.GroupVersionKind{Group: groupGateway, Version: "v1", Kind: "Gateway"}
)

// Run reports on every route, every Period, until ctx ends.
func (s *StandIn) Run(ctx context.Context) {
	period := s.Period
	if period == 0 {
		period = defaultPeriod
	}
	for {
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil && s.Errorf != nil {
			s.Errorf("gateway stand-in: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

// Pass reports once on every route.
func (s *StandIn) Pass(ctx context.Context) error {
	grants, err := s.Client.List(ctx, ReferenceGrantGVK, "", metav1.ListOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot list ReferenceGrants")
	}
	served, err := s.realGateways(ctx)
	if err != nil {
		return err
	}
	for _, gvk := range RouteKinds {
		routes, err := s.Client.List(ctx, gvk, "", metav1.ListOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot list %ss", gvk.Kind)
		}
		for i := range routes {
			if err := s.report(ctx, &routes[i], grants, served); err != nil {
				return err
			}
		}
	}
	return nil
}

// route is the part of any route kind that the stand-in reads.
type route struct {
	ParentRefs []json.RawMessage `json:"parentRefs"`
	Rules      []struct {
		Filters     []filter `json:"filters"`
		BackendRefs []struct {
			gwv1.BackendObjectReference `json:",inline"`
			Filters                     []filter `json:"filters"`
		} `json:"backendRefs"`
	} `json:"rules"`
}

type filter struct {
	RequestMirror *struct {
		BackendRef gwv1.BackendObjectReference `json:"backendRef"`
	} `json:"requestMirror"`
}

// realGateways returns the Gateways (namespace/name) of the GatewayClasses
// of RealControllers.
func (s *StandIn) realGateways(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	if len(s.RealControllers) == 0 {
		return out, nil
	}
	classes, err := s.Client.List(ctx, gvkGatewayClass, "", metav1.ListOptions{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot list GatewayClasses")
	}
	served := map[string]bool{}
	for _, c := range classes {
		name, _, _ := unstructured.NestedString(c.Object, "spec", "controllerName")
		if slices.Contains(s.RealControllers, name) {
			served[c.GetName()] = true
		}
	}
	if len(served) == 0 {
		return out, nil
	}
	gateways, err := s.Client.List(ctx, gvkGateway, "", metav1.ListOptions{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot list Gateways")
	}
	for _, g := range gateways {
		class, _, _ := unstructured.NestedString(g.Object, "spec", "gatewayClassName")
		if served[class] {
			out[g.GetNamespace()+"/"+g.GetName()] = true
		}
	}
	return out, nil
}

// isReal reports whether a parentRef of a route in ns is one of the real
// Gateways.
func isReal(ref map[string]any, ns string, served map[string]bool) bool {
	// Omitted, group and kind default to a Gateway; an empty group written
	// out is the core group.
	if g, ok := ref["group"]; ok && g != groupGateway {
		return false
	}
	if k, ok := ref["kind"]; ok && k != "Gateway" {
		return false
	}
	name, _ := ref["name"].(string)
	if n, _ := ref["namespace"].(string); n != "" {
		ns = n
	}
	return served[ns+"/"+name]
}

func (s *StandIn) report(ctx context.Context, u *unstructured.Unstructured, grants []unstructured.Unstructured, served map[string]bool) error {
	var r route
	if err := fromMap(u.Object["spec"], &r); err != nil {
		return errors.Wrapf(err, "cannot read %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	resolved, reason, msg := s.resolve(ctx, u, r, grants)

	old, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	parents := make([]any, 0, len(old)+len(r.ParentRefs))
	mine := map[string]map[string]any{}
	for _, p := range old {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if m["controllerName"] != ControllerName {
			parents = append(parents, m)
			continue
		}
		ref, _ := json.Marshal(m["parentRef"])
		mine[string(ref)] = m
	}
	gen := u.GetGeneration()
	for _, raw := range r.ParentRefs {
		var ref map[string]any
		if err := json.Unmarshal(raw, &ref); err != nil {
			return errors.Wrap(err, "cannot read a parentRef")
		}
		if isReal(ref, u.GetNamespace(), served) {
			continue
		}
		key, _ := json.Marshal(ref)
		prev := mine[string(key)]
		rs, rr := statusTrue, ReasonResolvedRefs
		rm := "every reference is resolved"
		if !resolved {
			rs, rr, rm = statusFalse, reason, msg
		}
		parents = append(parents, map[string]any{
			"parentRef":      ref,
			"controllerName": ControllerName,
			"conditions": []any{
				condition(prev, TypeAccepted, statusTrue, ReasonAccepted, "accepted by the gateway stand-in", gen),
				condition(prev, TypeResolvedRefs, rs, rr, rm, gen),
			},
		})
	}
	if reflect.DeepEqual(normalize(old), normalize(parents)) {
		return nil
	}
	if err := unstructured.SetNestedSlice(u.Object, parents, "status", "parents"); err != nil {
		return err
	}
	res, err := s.Client.Resource(ctx, u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return err
	}
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "gateway-stand-in"})
	if kerrors.IsConflict(err) || kerrors.IsNotFound(err) {
		// Changed or gone since the list: the next pass sees it anew.
		return nil
	}
	return errors.Wrapf(err, "cannot write the status of %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// resolve checks every backend of a route as a gateway does.
func (s *StandIn) resolve(ctx context.Context, u *unstructured.Unstructured, r route, grants []unstructured.Unstructured) (bool, string, string) {
	var refs []gwv1.BackendObjectReference
	mirrors := func(fs []filter) {
		for _, f := range fs {
			if f.RequestMirror != nil {
				refs = append(refs, f.RequestMirror.BackendRef)
			}
		}
	}
	for _, rule := range r.Rules {
		mirrors(rule.Filters)
		for _, b := range rule.BackendRefs {
			refs = append(refs, b.BackendObjectReference)
			mirrors(b.Filters)
		}
	}
	for _, ref := range refs {
		group, kind := string(ptr.Deref(ref.Group, "")), string(ptr.Deref(ref.Kind, kindService))
		ns := string(ptr.Deref(ref.Namespace, gwv1.Namespace(u.GetNamespace())))
		what := fmt.Sprintf("%s %s/%s", kind, ns, ref.Name)
		if ns != u.GetNamespace() && !permitted(grants, u.GetKind(), u.GetNamespace(), group, kind, ns, string(ref.Name)) {
			return false, ReasonRefNotPermitted, "no ReferenceGrant in " + ns + " allows a reference to " + what
		}
		if group == "" && kind == kindService {
			_, err := s.Client.Kube.CoreV1().Services(ns).Get(ctx, string(ref.Name), metav1.GetOptions{})
			if kerrors.IsNotFound(err) {
				return false, ReasonBackendNotFound, what + " does not exist"
			}
		}
	}
	return true, "", ""
}

// permitted reports whether a ReferenceGrant in the target's namespace
// allows a route of this kind in routeNS to reference the target.
func permitted(grants []unstructured.Unstructured, routeKind, routeNS, group, kind, ns, name string) bool {
	for _, g := range grants {
		if g.GetNamespace() != ns {
			continue
		}
		var spec struct {
			From []struct{ Group, Kind, Namespace string } `json:"from"`
			To   []struct {
				Group, Kind string
				Name        *string
			} `json:"to"`
		}
		if fromMap(g.Object["spec"], &spec) != nil {
			continue
		}
		from, to := false, false
		for _, f := range spec.From {
			from = from || (f.Group == groupGateway && f.Kind == routeKind && f.Namespace == routeNS)
		}
		for _, t := range spec.To {
			to = to || (t.Group == group && t.Kind == kind && (t.Name == nil || *t.Name == name))
		}
		if from && to {
			return true
		}
	}
	return false
}

// condition builds a route condition, keeping the last transition time of
// the previous report when the status did not change.
func condition(prev map[string]any, typ, status, reason, msg string, gen int64) map[string]any {
	ltt := time.Now().UTC().Format(time.RFC3339)
	if prev != nil {
		conds, _ := prev["conditions"].([]any)
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if ok && m["type"] == typ && m["status"] == status {
				if t, ok := m["lastTransitionTime"].(string); ok {
					ltt = t
				}
			}
		}
	}
	return map[string]any{
		"type":               typ,
		"status":             status,
		"reason":             reason,
		"message":            msg,
		"observedGeneration": gen,
		"lastTransitionTime": ltt,
	}
}

// normalize makes a status comparable whatever the numbers' Go types.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func fromMap(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
