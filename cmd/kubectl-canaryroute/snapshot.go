package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A snapshot is everything `get` shows of a CanaryRoute, read at once: the
// objects, never a summary of them, so that the tree is a pure function of
// the objects (tree.go) and its golden tests need no cluster.

const errFmtEvents = "cannot list the events of %s: %w"

// eventsGVR is core/v1 events, which Crossplane records the function's
// events as.
var eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// A snapshot is a CanaryRoute and what it composed, as read.
type snapshot struct {
	// named is the object the operator named; xr and claim as in target
	// (nil when there is none).
	named, xr, claim *unstructured.Unstructured
	// composed are the XR's composed resources that exist.
	composed []*unstructured.Unstructured
	// workloads are a release's workload objects that the XR does not
	// compose (another controller's).
	workloads []*unstructured.Unstructured
	// events are the XR's and the claim's events.
	events []*unstructured.Unstructured
	// unreadable are the objects the operator may not read (RBAC), by
	// objectRef.String(), with the API's reason: the tree draws them as
	// such and everything else it may read.
	unreadable map[string]string
}

// deniedReason is the reason an API error denies a read, or "" for any
// other error: a read the operator's RBAC forbids is drawn, not fatal.
func deniedReason(err error) string {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return string(apierrors.ReasonForError(err))
	default:
		return ""
	}
}

// deny records that r cannot be read.
func (s *snapshot) deny(r objectRef, reason string) {
	if s.unreadable == nil {
		s.unreadable = map[string]string{}
	}
	s.unreadable[r.String()] = reason
}

// An objectRef is a reference to a composed resource.
type objectRef struct {
	apiVersion, kind, namespace, name string
}

// String names a reference for people: Kind namespace/name.
func (r objectRef) String() string {
	if r.namespace == "" {
		return r.kind + " " + r.name
	}
	return r.kind + " " + r.namespace + "/" + r.name
}

// matches says whether obj is the object r refers to.
func (r objectRef) matches(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == r.kind && obj.GetName() == r.name && groupOf(obj.GetAPIVersion()) == groupOf(r.apiVersion) &&
		(r.namespace == "" || obj.GetNamespace() == "" || obj.GetNamespace() == r.namespace)
}

// groupOf is an apiVersion's group.
func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// resourceRefs are an XR's composed resources, as Crossplane v2 records them:
// spec.crossplane.resourceRefs of a namespaced XR (in the XR's namespace),
// spec.resourceRefs of a legacy cluster XR.
func resourceRefs(xr *unstructured.Unstructured) []objectRef {
	if xr == nil {
		return nil
	}
	refs := objects(xr.Object, "spec", "crossplane", "resourceRefs")
	if refs == nil {
		refs = objects(xr.Object, "spec", "resourceRefs")
	}
	out := make([]objectRef, 0, len(refs))
	for _, r := range refs {
		ns := str(r, "namespace")
		if ns == "" {
			ns = xr.GetNamespace()
		}
		out = append(out, objectRef{apiVersion: str(r, "apiVersion"), kind: str(r, "kind"), namespace: ns, name: str(r, "name")})
	}
	return out
}

// routeNamespace is where the CanaryRoute routes (API.md, "Scope and
// namespaces"): the namespaced XR's namespace, the claim's, else
// spec.namespace.
func routeNamespace(xr, claim *unstructured.Unstructured) string {
	switch {
	case claim != nil:
		return claim.GetNamespace()
	case xr == nil:
		return ""
	case xr.GetNamespace() != "":
		return xr.GetNamespace()
	case str(xr.Object, "spec", "claimRef", "namespace") != "":
		return str(xr.Object, "spec", "claimRef", "namespace")
	default:
		return str(xr.Object, "spec", "namespace")
	}
}

// workloadRefs are the release's workload objects of each revision in the
// release (stable, canary, retiring), when spec.release.workload names them.
func workloadRefs(xr, claim *unstructured.Unstructured) []objectRef {
	var out []objectRef
	for _, rev := range releaseRevisions(xr, claim) {
		if r, ok := workloadRef(xr, claim, rev.revision); ok {
			out = append(out, r)
		}
	}
	return out
}

// workloadRef is the workload object of a revision that
// spec.release.workload names, in the route's namespace.
func workloadRef(xr, claim *unstructured.Unstructured, rev string) (objectRef, bool) {
	w := object(specOf(xr, claim), "release", "workload")
	if w == nil || str(w, "name") == "" {
		return objectRef{}, false
	}
	apiVersion, kind := str(w, "apiVersion"), str(w, "kind")
	if apiVersion == "" {
		apiVersion = "apps/v1"
	}
	if kind == "" {
		kind = "Deployment"
	}
	name := strings.ReplaceAll(str(w, "name"), "{{revision}}", rev)
	return objectRef{apiVersion: apiVersion, kind: kind, namespace: routeNamespace(xr, claim), name: name}, true
}

// A releaseRevision is a revision of a release and what it is to it.
type releaseRevision struct {
	revision, role string
}

// releaseRevisions are the revisions a release runs: the stable, the canary
// (unless it is the stable), and the retiring one.
func releaseRevisions(xr, claim *unstructured.Unstructured) []releaseRevision {
	spec, status := specOf(xr, claim), statusOf(xr, claim)
	var out []releaseRevision
	add := func(rev, role string) {
		if rev != "" && !slices.ContainsFunc(out, func(r releaseRevision) bool { return r.revision == rev }) {
			out = append(out, releaseRevision{revision: rev, role: role})
		}
	}
	add(str(status, "release", "stable", "revision"), "stable")
	add(str(spec, "canary", "revision"), "canary")
	add(str(status, "release", "retiring", "revision"), "retiring")
	return out
}

// specOf is the CanaryRoute's spec: the claim's, which the operator edits,
// else the XR's.
func specOf(xr, claim *unstructured.Unstructured) map[string]any {
	if claim != nil {
		return object(claim.Object, "spec")
	}
	if xr != nil {
		return object(xr.Object, "spec")
	}
	return nil
}

// statusOf is the CanaryRoute's status: the XR's, else the claim's copy.
func statusOf(xr, claim *unstructured.Unstructured) map[string]any {
	if xr != nil {
		return object(xr.Object, "status")
	}
	if claim != nil {
		return object(claim.Object, "status")
	}
	return nil
}

// read takes a snapshot of t: its composed resources, the release's
// workloads and the events.
func (c *clients) read(ctx context.Context, t target) (snapshot, error) {
	s := snapshot{named: t.named.obj, xr: t.xr.obj, claim: t.claim.obj}
	for _, r := range resourceRefs(s.xr) {
		got, err := c.get(ctx, r.apiVersion, r.kind, r.namespace, r.name)
		if reason := deniedReason(err); reason != "" {
			s.deny(r, reason)
			continue
		}
		if err != nil {
			return snapshot{}, err
		}
		if got.obj != nil {
			s.composed = append(s.composed, got.obj)
		}
	}
	for _, r := range workloadRefs(s.xr, s.claim) {
		if slices.ContainsFunc(s.composed, r.matches) {
			continue
		}
		got, err := c.get(ctx, r.apiVersion, r.kind, r.namespace, r.name)
		if reason := deniedReason(err); reason != "" {
			s.deny(r, reason)
			continue
		}
		if err != nil {
			return snapshot{}, err
		}
		if got.obj != nil {
			s.workloads = append(s.workloads, got.obj)
		}
	}
	for _, o := range []ref{t.claim, t.xr} {
		if o.obj == nil {
			continue
		}
		events, err := c.events(ctx, o)
		if reason := deniedReason(err); reason != "" {
			s.deny(objectRef{kind: "Event", namespace: o.obj.GetNamespace(), name: "*"}, reason)
			continue
		}
		if err != nil {
			return snapshot{}, err
		}
		s.events = append(s.events, events...)
	}
	return s, nil
}

// events are an object's events: those of a cluster-scoped object are in
// the default namespace.
func (c *clients) events(ctx context.Context, o ref) ([]*unstructured.Unstructured, error) {
	ns := o.obj.GetNamespace()
	if o.mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = metav1.NamespaceDefault
	}
	sel := "involvedObject.name=" + o.obj.GetName()
	if uid := o.obj.GetUID(); uid != "" {
		sel = "involvedObject.uid=" + string(uid)
	}
	l, err := c.dynamic.Resource(eventsGVR).Namespace(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf(errFmtEvents, describe(o.obj), err)
	}
	var out []*unstructured.Unstructured
	for i := range l.Items {
		e := &l.Items[i]
		// The field selector again: not every server (nor the fake client)
		// filters by it.
		if eventOf(e, o.obj) {
			out = append(out, e)
		}
	}
	return out, nil
}

// eventOf says whether e is about obj.
func eventOf(e, obj *unstructured.Unstructured) bool {
	involved := object(e.Object, "involvedObject")
	if uid := str(involved, "uid"); uid != "" && obj.GetUID() != "" {
		return uid == string(obj.GetUID())
	}
	return str(involved, "kind") == obj.GetKind() && str(involved, "name") == obj.GetName()
}
