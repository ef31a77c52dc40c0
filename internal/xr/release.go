package xr

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// A Release makes the sides revisions of one workload (spec.release).
type Release struct {
	// Selector holds the labels every revision's pods share, and
	// RevisionLabel the label whose value is a pod's revision.
	Selector      map[string]string
	RevisionLabel string
	// Replicas is how many replicas a revision runs at full traffic.
	Replicas int32
	// Workload, when set, is the object that runs each revision.
	Workload *Workload
	// ScaleDownDelay is how long a retired revision keeps its replicas.
	ScaleDownDelay time.Duration
	TargetPort     *intstr.IntOrString
	AppProtocol    string
}

// A Workload names the object that runs each revision.
type Workload struct {
	APIVersion string
	Kind       string
	// Name is the name template: {{revision}} stands for the revision.
	Name string
}

// RevisionPlaceholder stands for the revision in a workload's name.
const RevisionPlaceholder = "{{revision}}"

// NameOf is the name of a revision's workload.
func (w Workload) NameOf(revision string) string {
	return strings.ReplaceAll(w.Name, RevisionPlaceholder, revision)
}

// Defaults of a release.
const (
	defaultReleaseReplicas = 1
	defaultScaleDownDelay  = 30 * time.Second
	maxScaleDownDelay      = 24 * time.Hour
	maxRollbackWindow      = 10
)

// parseRelease reads spec.release: a selector of labels, a revision label
// that is none of them (else one Service would select every revision), and
// a workload name that names each revision's own object.
func parseRelease(path *field.Path, raw *rawRelease, canary string) (*Release, field.ErrorList) {
	var errs field.ErrorList
	r := &Release{Selector: raw.Selector, RevisionLabel: raw.RevisionLabel, Replicas: defaultReleaseReplicas, ScaleDownDelay: defaultScaleDownDelay, TargetPort: raw.TargetPort}
	svc, svcErrs := parseService(path, &rawService{Selector: raw.Selector, TargetPort: raw.TargetPort, AppProtocol: raw.AppProtocol})
	errs = append(errs, svcErrs...)
	r.AppProtocol = svc.AppProtocol
	for _, msg := range validation.IsQualifiedName(raw.RevisionLabel) {
		errs = append(errs, field.Invalid(path.Child("revisionLabel"), raw.RevisionLabel, msg))
	}
	if _, ok := raw.Selector[raw.RevisionLabel]; ok {
		errs = append(errs, field.Invalid(path.Child("revisionLabel"), raw.RevisionLabel,
			"must not be one of selector's labels: each revision's Service selects the selector and this label at its revision"))
	}
	if canary != "" {
		for _, msg := range validation.IsValidLabelValue(canary) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "canary", "revision"), canary, "a release's revision is the value of its revision label: "+msg))
		}
	}
	if raw.Replicas != nil {
		r.Replicas = *raw.Replicas
		if r.Replicas < 1 || r.Replicas > 1000 {
			errs = append(errs, field.Invalid(path.Child("replicas"), r.Replicas, "must be between 1 and 1000"))
		}
	}
	if raw.ScaleDownDelay != nil {
		d, durErrs := duration(path.Child("scaleDownDelay"), *raw.ScaleDownDelay)
		errs = append(errs, durErrs...)
		if len(durErrs) == 0 && d > maxScaleDownDelay {
			errs = append(errs, field.Invalid(path.Child("scaleDownDelay"), *raw.ScaleDownDelay, "must be at most 24h"))
		}
		r.ScaleDownDelay = d.Truncate(time.Second)
	}
	if w := raw.Workload; w != nil {
		p := path.Child("workload")
		r.Workload = &Workload{APIVersion: w.APIVersion, Kind: w.Kind, Name: w.Name}
		if r.Workload.APIVersion == "" {
			r.Workload.APIVersion = "apps/v1"
		}
		if r.Workload.Kind == "" {
			r.Workload.Kind = "Deployment"
		}
		if !strings.Contains(w.Name, RevisionPlaceholder) {
			errs = append(errs, field.Invalid(p.Child("name"), w.Name, "must hold {{revision}}: each revision runs in an object of its own"))
		}
		// The name a revision of the longest label value gets.
		longest := validation.IsDNS1123Subdomain(r.Workload.NameOf(strings.Repeat("v", 63)))
		for _, msg := range longest {
			errs = append(errs, field.Invalid(p.Child("name"), w.Name, "with a revision of 63 characters, "+msg))
		}
		// A label value may hold what a name may not (V2, v_2): the
		// revision's own workload would never be found, and the pipeline's
		// next step would compose an object the API server refuses.
		if canary != "" && len(longest) == 0 {
			for _, msg := range validation.IsDNS1123Subdomain(r.Workload.NameOf(canary)) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "canary", "revision"), canary,
					fmt.Sprintf("names the workload %s of release.workload.name, which %s", fielderr.Quote(r.Workload.NameOf(canary)), msg)))
			}
		}
	}
	return r, errs
}

// releaseSides are the sides of a release: proxy Services that select the
// release's selector and its revision label, the primary's at the stable
// revision (the canary's before any is stable), the canary's at its
// revision. The canary keeps what else it wrote (filters, tls).
func releaseSides(s *Spec, stable *ReleaseStatus) {
	r := s.Release
	selector := func(revision string) map[string]string {
		out := maps.Clone(r.Selector)
		if out == nil {
			out = map[string]string{} // A release without selector is a Fatal; never a panic.
		}
		out[r.RevisionLabel] = revision
		return out
	}
	primary := s.Canary.Revision
	if stable != nil && stable.Stable != nil && stable.Stable.Revision != "" {
		primary = stable.Stable.Revision
	}
	s.Primary = Side{Service: &ServiceSource{Selector: selector(primary), TargetPort: r.TargetPort, AppProtocol: r.AppProtocol}}
	s.Canary.Service = &ServiceSource{Selector: selector(s.Canary.Revision), TargetPort: r.TargetPort, AppProtocol: r.AppProtocol}
}

// WithPrimaryRevision is the spec with the primary of a release selecting
// another revision: a promotion moves it before the route moves.
func (s Spec) WithPrimaryRevision(revision string) Spec {
	if s.Release == nil || s.Primary.Service == nil {
		return s
	}
	svc := *s.Primary.Service
	svc.Selector = maps.Clone(svc.Selector)
	svc.Selector[s.Release.RevisionLabel] = revision
	s.Primary.Service = &svc
	return s
}

// WithCanaryRevision is the spec with the canary of a release selecting
// another revision than its own; "" changes nothing.
func (s Spec) WithCanaryRevision(revision string) Spec {
	if s.Release == nil || s.Canary.Service == nil || revision == "" {
		return s
	}
	svc := *s.Canary.Service
	svc.Selector = maps.Clone(svc.Selector)
	svc.Selector[s.Release.RevisionLabel] = revision
	s.Canary.Service = &svc
	return s
}

// PrimaryRevision is the revision a release's primary selects; "" without
// a release.
func (s Spec) PrimaryRevision() string {
	if s.Release == nil || s.Primary.Service == nil {
		return ""
	}
	return s.Primary.Service.Selector[s.Release.RevisionLabel]
}

// rollbackWindow reads traffic.rollbackWindow.
func rollbackWindow(path *field.Path, raw *int32, release bool) (int32, field.ErrorList) {
	if raw == nil {
		return 0, nil
	}
	switch {
	case *raw < 0 || *raw > maxRollbackWindow:
		return 0, field.ErrorList{field.Invalid(path, *raw, fmt.Sprintf("must be between 0 and %d", maxRollbackWindow))}
	case !release:
		return 0, field.ErrorList{field.Forbidden(path, "rolls back to the release's earlier revisions: it needs spec.release")}
	}
	return *raw, nil
}

// Revisions are the revisions a release knows of, for messages: the stable
// one, then its history.
func (s *ReleaseStatus) Revisions() []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Stable != nil {
		out = append(out, s.Stable.Revision)
	}
	for _, h := range s.History {
		if !slices.Contains(out, h.Revision) {
			out = append(out, h.Revision)
		}
	}
	return out
}

// maxHistory is how many earlier stable revisions status.release keeps.
var maxHistory = limit("status.release.history")

// Bounded is the release status as the API server admits it: its times
// within what date-time admits, its history at most maxHistory entries.
func (s ReleaseStatus) Bounded() ReleaseStatus {
	if s.Stable != nil {
		st := *s.Stable
		st.Since = clampTimeValue(st.Since)
		s.Stable = &st
	}
	if s.Retiring != nil {
		r := *s.Retiring
		r.At = clampTimeValue(r.At)
		s.Retiring = &r
	}
	if s.CanaryMove != nil {
		m := *s.CanaryMove
		m.At = clampTimeValue(m.At)
		s.CanaryMove = &m
	}
	if len(s.History) > maxHistory {
		s.History = s.History[:maxHistory]
	}
	history := make([]ReleasedRevision, 0, len(s.History))
	for _, h := range s.History {
		h.SucceededAt = clampTimeValue(h.SucceededAt)
		history = append(history, h)
	}
	if s.History != nil {
		s.History = history
	}
	return s
}

// LenientScaleDownDelay is spec.release.scaleDownDelay as read from a spec
// that may not parse (an emergency abort's): the delay it gives when valid,
// else the default.
func LenientScaleDownDelay(raw string) time.Duration {
	d, errs := duration(nil, raw)
	if raw == "" || len(errs) > 0 || d > maxScaleDownDelay {
		return defaultScaleDownDelay
	}
	return d.Truncate(time.Second)
}
