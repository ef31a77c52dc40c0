package compose

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// maxObjectName is the longest analysis object name: a Job's name becomes
// a label value on its Pods, which is at most 63 characters.
const maxObjectName = 63

// AnalysisName is the name of an analysis object:
// <routeName>-<revision>-<step>-<name>, lowercased, and cut with a hash of
// the whole when it is too long or the revision is retried, so that every
// attempt gets an object of its own.
func AnalysisName(routeName, revision string, step int32, name, retry string) string {
	base := strings.ToLower(routeName + "-" + revision + "-" + strconv.Itoa(int(step)) + "-" + name)
	base = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		return '-'
	}, base)
	if len(base) <= maxObjectName && retry == "" {
		return base
	}
	sum := sha256.Sum256([]byte(routeName + "/" + revision + "/" + strconv.Itoa(int(step)) + "/" + name + "/" + retry))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(base[:min(len(base), maxObjectName-len(suffix))], "-.") + suffix
}

// AnalysisObjects are the analysis objects of a step, composed while it is
// current: each template, named, in the route's namespace, labelled with
// the route, the revision, the canary's digest, the attempt and the step.
//
// An analysis keeps its composed-resource key (analysis-<name>) from step
// to step, and Crossplane keeps the name of an object it observed under a
// key: composing the next step's object over the last one would relabel the
// old object, whose status (a Job's succeeded count) would then pass a step
// it never tested. So an object observed under the key for another step,
// revision, canary or attempt, or being deleted, is not composed over: this
// run leaves the key out, Crossplane deletes the old object, and a later run
// composes the new one.
func (p *Plan) AnalysisObjects(step int32, templates []string, retry string, observed map[names.Key]map[string]any) []Object {
	cr := p.CR
	out := make([]Object, 0, len(templates))
	for _, name := range templates {
		tmpl, ok := cr.Spec.Traffic.Template(name)
		if !ok {
			continue // xr.Parse refuses a step naming no template.
		}
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(tmpl.Template)}
		u.SetName(AnalysisName(cr.RouteName, cr.Spec.Canary.Revision, step, name, retry))
		u.SetNamespace(cr.RouteNamespace)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[names.LabelRoute] = xr.LabelValue(cr.RouteName)
		labels[names.LabelRevision] = xr.LabelValue(cr.Spec.Canary.Revision)
		labels[names.LabelCanary] = p.CanaryDigest()
		labels[names.LabelStep] = strconv.Itoa(int(step))
		if retry != "" {
			labels[names.LabelRetry] = xr.LabelValue(retry)
		}
		u.SetLabels(labels)
		key := names.AnalysisKey(name)
		if old, seen := observed[key]; seen && !sameAnalysis(old, u) {
			continue
		}
		// Analysis objects are ready once they exist: their verdict is the
		// rollout's business, in status.rollout.analysis.
		_, seen := observed[key]
		out = append(out, Object{Key: key, Object: u, Ready: seen})
	}
	return out
}

// sameAnalysis reports whether an observed analysis object is the one
// composed now: the same kind, name and namespace, the same labels of the
// function's, and not being deleted. A template whose kind changed keeps
// its key: the old object is left out for a run, so Crossplane deletes it
// instead of leaving it behind while the new one is composed.
func sameAnalysis(observed map[string]any, want *unstructured.Unstructured) bool {
	o := unstructured.Unstructured{Object: observed}
	if o.GetDeletionTimestamp() != nil || o.GetName() != want.GetName() || o.GetNamespace() != want.GetNamespace() ||
		o.GetAPIVersion() != want.GetAPIVersion() || o.GetKind() != want.GetKind() {
		return false
	}
	have, wantLabels := o.GetLabels(), want.GetLabels()
	for _, l := range []string{names.LabelRoute, names.LabelRevision, names.LabelCanary, names.LabelStep, names.LabelRetry} {
		if have[l] != wantLabels[l] {
			return false
		}
	}
	return true
}

// AnalysisTargets are the analysis objects of a step, by identity.
func (p *Plan) AnalysisTargets(objects []Object) []names.Target {
	out := make([]names.Target, 0, len(objects))
	for _, o := range objects {
		u, ok := o.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		out = append(out, names.Target{Key: o.Key, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	return out
}

// checkAnalysisKinds refuses analysis templates of kinds the Input does not
// allow: Crossplane would compose them with its own, wide, rights.
func checkAnalysisKinds(cr *xr.CanaryRoute, allows func(apiVersion, kind string) bool) field.ErrorList {
	var errs field.ErrorList
	for _, a := range cr.Spec.Traffic.Analysis {
		apiVersion, _ := a.Template["apiVersion"].(string)
		kind, _ := a.Template["kind"].(string)
		if !allows(apiVersion, kind) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "traffic", "analysis").Key(a.Name).Child("template", "kind"),
				"analysis objects of kind "+fielderr.Quote(kind)+" ("+fielderr.Quote(apiVersion)+") are not in the function Input's allowedAnalysisKinds"))
		}
	}
	return errs
}
