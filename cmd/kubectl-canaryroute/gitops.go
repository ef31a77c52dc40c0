package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// GitOps: an object that Argo CD or Flux applies from Git gets Git's values
// back at the next sync, for every field that Git sets. The commands still
// write (an operator may need an abort now), and say so, with the edit to
// make in Git instead.

// The marks Argo CD and Flux leave on what they apply.
const (
	argoTrackingID    = "argocd.argoproj.io/tracking-id"
	argoInstanceLabel = "app.kubernetes.io/instance"
	managedByLabel    = "app.kubernetes.io/managed-by"
	fluxKustomizeName = "kustomize.toolkit.fluxcd.io/name"
	fluxKustomizeNS   = "kustomize.toolkit.fluxcd.io/namespace"
	fluxHelmName      = "helm.toolkit.fluxcd.io/name"
	fluxHelmNS        = "helm.toolkit.fluxcd.io/namespace"
	lastApplied       = "kubectl.kubernetes.io/last-applied-configuration"
)

// The GitOps tools.
const (
	toolArgoCD = "Argo CD"
	toolFlux   = "Flux"
)

// gitOpsManagers are the field managers Argo CD and Flux write with.
var gitOpsManagers = map[string]string{
	"argocd-controller":             toolArgoCD, // server-side apply syncs
	"argocd-application-controller": toolArgoCD, // client-side apply syncs
	"kustomize-controller":          toolFlux,
	"helm-controller":               toolFlux,
}

// A gitOpsOwner is a GitOps tool that applies an object from Git.
type gitOpsOwner struct {
	tool string
	// source is what applies it: "Application web", "Kustomization
	// flux-system/apps"; "" when only a field manager says so.
	source string
	// evidence says how the plugin knows.
	evidence string
	// kind, name and namespace name the source, for the command that
	// brings a commit in.
	kind, name, namespace string
	// managers are its field managers in managedFields.
	managers []string
}

// appRef is an Argo CD Application as its CLI names it: <namespace>/<name>
// outside Argo CD's own namespace.
func (o gitOpsOwner) appRef() string {
	if o.namespace != "" {
		return o.namespace + "/" + o.name
	}
	return o.name
}

// gitOpsOwners are the GitOps tools that apply obj, by their labels,
// annotations and field managers.
func gitOpsOwners(obj *unstructured.Unstructured) []gitOpsOwner {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	var argo, flux *gitOpsOwner
	switch {
	case annotations[argoTrackingID] != "":
		app, _, _ := strings.Cut(annotations[argoTrackingID], ":")
		argo = &gitOpsOwner{tool: toolArgoCD, kind: "Application", name: app, evidence: "annotation " + argoTrackingID}
		// An Application outside Argo CD's own namespace is tracked as
		// <namespace>_<name>; its CLI names it <namespace>/<name>.
		if ns, name, ok := strings.Cut(app, "_"); ok && ns != "" && name != "" {
			argo.namespace, argo.name = ns, name
		}
	case labels[argoInstanceLabel] != "" && labels[managedByLabel] == "":
		// The recommended label is also set by Helm, Kustomize's
		// commonLabels and others, which then say so in managed-by: only
		// without it is it read as Argo CD's label tracking.
		argo = &gitOpsOwner{tool: toolArgoCD, kind: "Application", name: labels[argoInstanceLabel], evidence: "label " + argoInstanceLabel + ", Argo CD's label tracking"}
	}
	switch {
	case labels[fluxKustomizeName] != "":
		flux = &gitOpsOwner{tool: toolFlux, kind: "Kustomization", name: labels[fluxKustomizeName], namespace: labels[fluxKustomizeNS], evidence: "label " + fluxKustomizeName}
	case labels[fluxHelmName] != "":
		flux = &gitOpsOwner{tool: toolFlux, kind: "HelmRelease", name: labels[fluxHelmName], namespace: labels[fluxHelmNS], evidence: "label " + fluxHelmName}
	}
	for _, e := range obj.GetManagedFields() {
		tool, ok := gitOpsManagers[e.Manager]
		if !ok {
			continue
		}
		o := &argo
		if tool == toolFlux {
			o = &flux
		}
		if *o == nil {
			*o = &gitOpsOwner{tool: tool, evidence: "field manager " + e.Manager}
		}
		if !slices.Contains((*o).managers, e.Manager) {
			(*o).managers = append((*o).managers, e.Manager)
		}
	}
	var out []gitOpsOwner
	for _, o := range []*gitOpsOwner{argo, flux} {
		if o == nil {
			continue
		}
		// Names from labels and annotations are anyone's text, printed to
		// a terminal: made printable as the tree's are.
		o.name, o.namespace = printableText(o.name), printableText(o.namespace)
		if o.name != "" {
			o.source = o.kind + " " + o.name
			if o.namespace != "" {
				o.source = o.kind + " " + o.namespace + "/" + o.name
			}
		}
		out = append(out, *o)
	}
	return out
}

// inGit says, for each field path (spec.a.b), whether Git sets it: true when
// a GitOps field manager owns it or the last applied configuration holds
// it, false when they are known and do not, and absent when unknown.
func inGit(obj *unstructured.Unstructured, o gitOpsOwner, paths []string) map[string]bool {
	known := false
	set := &fieldpath.Set{}
	for _, m := range o.managers {
		s, found, err := managedSet(obj, m, "")
		if err != nil || !found {
			continue
		}
		set = set.Union(s)
		known = true
	}
	var applied map[string]any
	if a := obj.GetAnnotations()[lastApplied]; a != "" && json.Unmarshal([]byte(a), &applied) == nil && o.tool == toolArgoCD {
		known = true
	}
	out := map[string]bool{}
	if !known {
		return out
	}
	for _, p := range paths {
		out[p] = owns(set, p) || hasPath(applied, p)
	}
	return out
}

// owns says whether set holds the field path p (spec.a.b) or a field under
// it.
func owns(set *fieldpath.Set, p string) bool {
	found := false
	set.Iterate(func(fp fieldpath.Path) {
		var names []string
		for _, pe := range fp {
			if pe.FieldName == nil {
				break
			}
			names = append(names, *pe.FieldName)
		}
		s := strings.Join(names, ".")
		if s == p || strings.HasPrefix(s, p+".") {
			found = true
		}
	})
	return found
}

// hasPath says whether the field path p (spec.a.b) is in o.
func hasPath(o map[string]any, p string) bool {
	if o == nil {
		return false
	}
	_, ok, _ := unstructured.NestedFieldNoCopy(o, strings.Split(p, ".")...)
	return ok
}

// gitOpsWarning is what the operator is told before a command edits obj,
// which o applies from Git: which fields the next sync reverts, and how to
// make the edit in Git. desc names obj (CanaryRoute demo/web).
func gitOpsWarning(obj *unstructured.Unstructured, o gitOpsOwner, c change, desc string) string {
	var b strings.Builder
	by := o.tool
	if o.source != "" {
		by += " (" + o.source + ")"
	}
	fmt.Fprintf(&b, "Warning: %s applies %s from Git (%s).\n", by, desc, o.evidence)
	paths := c.paths()
	git := inGit(obj, o, paths)
	var reverted, kept, unknown []string
	for _, p := range paths {
		set, ok := git[p]
		switch {
		case !ok:
			unknown = append(unknown, p)
		case set:
			reverted = append(reverted, p)
		default:
			kept = append(kept, p)
		}
	}
	if len(reverted) > 0 {
		fmt.Fprintf(&b, "  Git sets %s: the next sync reverts this edit.\n", strings.Join(reverted, ", "))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&b, "  The next sync reverts this edit wherever Git sets %s.\n", strings.Join(unknown, ", "))
	}
	if len(kept) > 0 {
		fmt.Fprintf(&b, "  Git does not set %s: a sync keeps this edit until a commit sets it.\n", strings.Join(kept, ", "))
	}
	where := "the manifest"
	if o.kind == "HelmRelease" {
		where = "the chart's values or templates"
	}
	fmt.Fprintf(&b, "  To make it in Git, set in %s:\n", where)
	for _, s := range c.sets {
		fmt.Fprintf(&b, "    spec.%s: %s\n", strings.Join(s.path, "."), flow(s.value))
	}
	b.WriteString("  " + syncAdvice(o, paths) + "\n")
	return b.String()
}

// syncAdvice is how to bring a commit in at once, and how to leave the
// fields to the plugin instead.
func syncAdvice(o gitOpsOwner, paths []string) string {
	pointers := make([]string, 0, len(paths))
	for _, p := range paths {
		pointers = append(pointers, "/"+strings.ReplaceAll(p, ".", "/"))
	}
	switch {
	case o.tool == toolArgoCD && o.name != "":
		return fmt.Sprintf("then commit, push and run: argocd app sync %s\n"+
			"  To leave these fields to kubectl canaryroute, remove them from the manifest and add to the Application's\n"+
			"  spec.ignoreDifferences the jsonPointers %s, with the sync option RespectIgnoreDifferences=true.",
			o.appRef(), strings.Join(pointers, ", "))
	case o.tool == toolArgoCD:
		return "then commit, push and sync the Argo CD Application."
	case o.kind == "HelmRelease":
		return fmt.Sprintf("then commit, push and run: flux reconcile helmrelease %s -n %s --with-source", o.name, o.namespace)
	case o.name != "":
		return fmt.Sprintf("then commit, push and run: flux reconcile kustomization %s -n %s --with-source", o.name, o.namespace)
	default:
		return "then commit, push and reconcile the Flux Kustomization or HelmRelease that applies it."
	}
}
