// Package served decides the API versions a run composes: the Input's
// overrides, else the versions the cluster serves, which Crossplane tells
// through the CRD schemas it hands the function (required schemas, v2.2 and
// later), else defaults that work on the widest range of clusters. It also
// refuses what the cluster's schemas cannot hold: a field that only the
// experimental channel's CRDs have, on a cluster that serves the standard
// channel, would be pruned by the API server without a word.
//
// It works on typed values: package main converts the request's schemas.
package served

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
)

// ErrNotServed says, before the field errors of Choose, that the cluster
// does not serve what a CanaryRoute composes.
const ErrNotServed = "the cluster cannot hold what the CanaryRoute composes"

// Group is the Gateway API's group.
const Group = "gateway.networking.k8s.io"

// Kinds whose versions the function chooses, beside the route kinds.
const (
	KindReferenceGrant   = "ReferenceGrant"
	KindBackendTLSPolicy = "BackendTLSPolicy"
)

// candidates are the versions the function composes of each kind, the one
// it prefers first. The first is also the default without schemas, but for
// ReferenceGrant, whose v1 only Gateway API v1.5 and later serve.
var candidates = map[string][]string{
	"HTTPRoute":          {"v1"},
	"GRPCRoute":          {"v1", "v1alpha2"},
	"TLSRoute":           {"v1", "v1alpha2"},
	"TCPRoute":           {"v1", "v1alpha2"},
	"UDPRoute":           {"v1", "v1alpha2"},
	KindReferenceGrant:   {"v1", "v1beta1"},
	KindBackendTLSPolicy: {"v1"},
}

// defaults are the versions composed without schemas.
var defaults = map[string]string{
	"HTTPRoute":          "v1",
	"GRPCRoute":          "v1",
	"TLSRoute":           "v1",
	"TCPRoute":           "v1",
	"UDPRoute":           "v1",
	KindReferenceGrant:   "v1beta1",
	KindBackendTLSPolicy: "v1",
}

// A Need is what a run composes, for the versions to choose.
type Need struct {
	// RouteKind is the kind of the route.
	RouteKind string
	// Grants is true when the run composes ReferenceGrants.
	Grants bool
	// BackendTLS is the path of the first side whose tls composes a
	// BackendTLSPolicy; nil for none.
	BackendTLS *field.Path
	// RuleFields are the fields of the route's rules that the run writes
	// and that only some channels' CRDs have, such as retry.
	RuleFields []RuleField
}

// A RuleField is a field of a route's rules, and where the CanaryRoute asks
// for it, for messages.
type RuleField struct {
	Name string
	Path *field.Path
}

// Overrides are the Input's versions, "" where it leaves the choice.
type Overrides struct {
	Route     v1beta1.RouteVersion
	RoutePath *field.Path
	Grant     v1beta1.ReferenceGrantVersion
}

// Versions are the versions a run composes.
type Versions struct {
	Route  v1beta1.RouteVersion
	Grant  v1beta1.ReferenceGrantVersion
	TLS    string
	Source Source
	// CheckedAt is when an earlier run read the versions from the schemas
	// (SourceStatus only).
	CheckedAt time.Time
	// Overridden is true when the Input chose a version. Such versions are
	// not recorded for later runs: the record would outlive the override.
	Overridden bool
}

// Source says where the versions come from.
type Source string

// Sources of the versions.
const (
	// SourceSchemas: the cluster's schemas (and the Input's overrides).
	SourceSchemas Source = "schemas"
	// SourceDefaults: no schemas were handed; the Input's overrides, else
	// the defaults.
	SourceDefaults Source = "defaults"
	// SourceStatus: the versions an earlier run read from the schemas, as
	// the XR's status records them.
	SourceStatus Source = "status"
)

// RecheckAfter is how long versions read from the schemas are reused: a
// cluster seldom changes the versions it serves, and Crossplane parses a
// whole API group's OpenAPI document (close to a megabyte for
// gateway.networking.k8s.io/v1) for every schema it hands over, on every
// reconcile that asks.
const RecheckAfter = 10 * time.Minute

// Recorded are the versions an earlier run read from the schemas, and the
// route kind they were read for.
type Recorded struct {
	Kind      string
	Route     string
	Grant     string
	TLS       string
	CheckedAt time.Time
}

// Reuse returns the recorded versions when they still answer for the
// need: read less than RecheckAfter ago, for the same route kind, with a
// grant version if the run composes grants and a BackendTLSPolicy version
// if it composes one, the Input's overrides the same, and no rule field to
// check (which fields the schema holds is not recorded).
func Reuse(need Need, o Overrides, r *Recorded, now time.Time) (Versions, bool) {
	if !r.answers(need, o, now) {
		return Versions{}, false
	}
	v := Versions{
		Route:     v1beta1.RouteVersion(r.Route),
		Grant:     v1beta1.ReferenceGrantVersion(defaults[KindReferenceGrant]),
		TLS:       defaults[KindBackendTLSPolicy],
		Source:    SourceStatus,
		CheckedAt: r.CheckedAt,
	}
	if r.Grant != "" {
		v.Grant = v1beta1.ReferenceGrantVersion(r.Grant)
	}
	if r.TLS != "" {
		v.TLS = r.TLS
	}
	return v, true
}

// answers reports whether the record answers for the need: see Reuse.
func (r *Recorded) answers(need Need, o Overrides, now time.Time) bool {
	if r == nil || r.Kind != need.RouteKind || r.Route == "" || len(need.RuleFields) > 0 {
		return false
	}
	if age := now.Sub(r.CheckedAt); age < 0 || age >= RecheckAfter {
		return false
	}
	if (need.Grants && r.Grant == "") || (need.BackendTLS != nil && r.TLS == "") {
		return false
	}
	// Status is anyone's to write who may write the XR's status: a version
	// the function never composes is no record of a run's.
	if !candidate(need.RouteKind, r.Route) || !candidate(KindReferenceGrant, r.Grant) || !candidate(KindBackendTLSPolicy, r.TLS) {
		return false
	}
	return (o.Route == "" || string(o.Route) == r.Route) && (!need.Grants || o.Grant == "" || string(o.Grant) == r.Grant)
}

// candidate reports whether the function composes a kind at a version;
// true for "", a version not recorded.
func candidate(kind, version string) bool {
	return version == "" || slices.Contains(candidates[kind], version)
}

// Schemas are the OpenAPI schemas Crossplane handed the function, by kind
// and version: nil for a kind and version it asked for that the cluster does
// not serve.
type Schemas struct {
	handed bool
	byGVK  map[schema.GroupVersionKind]map[string]any
}

// NewSchemas reads what Crossplane handed for the requirements of
// Requirements: got(name) returns a schema (nil when the cluster serves no
// such kind and version) and whether Crossplane answered that requirement
// at all. The XR's own kind is always served where the XR runs: when its
// schema is missing, the caller hands no schemas (the first call of a
// reconcile, or crossplane render without --required-schemas), and nothing
// can be concluded from the others.
func NewSchemas(self schema.GroupVersionKind, need Need, got func(name string) (map[string]any, bool)) Schemas {
	s := Schemas{byGVK: map[schema.GroupVersionKind]map[string]any{}}
	if obj, ok := got(SelfKey); !ok || obj == nil {
		return s
	}
	s.handed = true
	for name, gvk := range Requirements(self, need) {
		if name == SelfKey {
			continue
		}
		obj, ok := got(name)
		if !ok {
			// Not answered: as good as no schemas.
			return Schemas{}
		}
		s.byGVK[gvk] = obj
	}
	return s
}

// Handed reports whether the caller handed schemas this run can read.
func (s Schemas) Handed() bool { return s.handed }

// SelfKey is the name of the requirement of the XR's own schema: a
// request that holds it, even empty, has had the schemas answered.
const SelfKey = SchemaPrefix + "self"

// SchemaPrefix starts the name of every schema requirement.
const SchemaPrefix = "schema-"

// Key is the name of the schema requirement of a kind and version.
func Key(kind, version string) string {
	return SchemaPrefix + strings.ToLower(kind) + "-" + version
}

// Requirements are the schemas a run asks for: the XR's own, and every
// candidate version of each kind it composes. They depend on the spec
// alone, so they come out identical on every call of a reconcile.
func Requirements(self schema.GroupVersionKind, need Need) map[string]schema.GroupVersionKind {
	out := map[string]schema.GroupVersionKind{SelfKey: self}
	add := func(kind string) {
		for _, v := range candidates[kind] {
			out[Key(kind, v)] = schema.GroupVersionKind{Group: Group, Version: v, Kind: kind}
		}
	}
	add(need.RouteKind)
	if need.Grants {
		add(KindReferenceGrant)
	}
	if need.BackendTLS != nil {
		add(KindBackendTLSPolicy)
	}
	return out
}

// Choose picks the versions a run composes. The errors are a Fatal's: a
// version the Input asks for that the cluster does not serve, a kind it
// serves in no version the function composes, a field the served schema
// does not hold.
func Choose(need Need, o Overrides, s Schemas) (Versions, field.ErrorList) {
	v := Versions{
		Route:  v1beta1.RouteVersion(defaults[need.RouteKind]),
		Grant:  v1beta1.ReferenceGrantVersion(defaults[KindReferenceGrant]),
		TLS:    defaults[KindBackendTLSPolicy],
		Source: SourceDefaults,
	}
	if o.Route != "" {
		v.Route = o.Route
		v.Overridden = true
	}
	if need.Grants && o.Grant != "" {
		v.Grant = o.Grant
		v.Overridden = true
	}
	if !s.handed {
		return v, nil
	}
	v.Source = SourceSchemas

	var errs field.ErrorList
	route, routeErrs := s.pick(need.RouteKind, string(o.Route), field.NewPath("spec", "kind"), o.RoutePath)
	errs = append(errs, routeErrs...)
	v.Route = v1beta1.RouteVersion(route)
	if need.Grants {
		grant, grantErrs := s.pick(KindReferenceGrant, string(o.Grant), field.NewPath("spec", "referenceGrants"), field.NewPath("referenceGrantVersion"))
		errs = append(errs, grantErrs...)
		v.Grant = v1beta1.ReferenceGrantVersion(grant)
	}
	if need.BackendTLS != nil {
		tls, tlsErrs := s.pick(KindBackendTLSPolicy, "", need.BackendTLS, nil)
		errs = append(errs, tlsErrs...)
		v.TLS = tls
	}
	if len(routeErrs) == 0 {
		errs = append(errs, s.ruleFields(need, route)...)
	}
	return v, errs
}

// pick is the version of a kind to compose: the override, when the cluster
// serves it, else the first candidate it serves.
func (s Schemas) pick(kind, override string, specPath, overridePath *field.Path) (string, field.ErrorList) {
	var served []string
	for _, v := range candidates[kind] {
		if s.byGVK[schema.GroupVersionKind{Group: Group, Version: v, Kind: kind}] != nil {
			served = append(served, v)
		}
	}
	if override != "" {
		if slices.Contains(served, override) {
			return override, nil
		}
		msg := fmt.Sprintf("the cluster does not serve %s %s/%s", kind, Group, override)
		if len(served) > 0 {
			msg += fmt.Sprintf(" (it serves %s): leave this field empty for the function to choose", strings.Join(served, ", "))
		}
		return override, field.ErrorList{field.Invalid(overridePath, override, msg)}
	}
	if len(served) == 0 {
		return defaults[kind], field.ErrorList{field.Invalid(specPath, kind, fmt.Sprintf(
			"the cluster serves no %s version the function composes (%s %s): install the Gateway API CRDs that have it",
			kind, Group, strings.Join(candidates[kind], " or ")))}
	}
	return served[0], nil
}

// ruleFields refuses the rule fields that the served route schema does not
// hold: the API server would prune them, silently.
func (s Schemas) ruleFields(need Need, version string) field.ErrorList {
	obj := s.byGVK[schema.GroupVersionKind{Group: Group, Version: version, Kind: need.RouteKind}]
	rule := lookup(obj, "properties", "spec", "properties", "rules", "items", "properties")
	var errs field.ErrorList
	for _, f := range need.RuleFields {
		if _, ok := rule[f.Name]; ok {
			continue
		}
		errs = append(errs, field.Forbidden(f.Path, fmt.Sprintf(
			"the cluster's %s %s/%s has no rules[].%s: its CRDs are of Gateway API's standard channel, which would drop the field; install the experimental channel's CRDs, or remove the field",
			need.RouteKind, Group, version, f.Name)))
	}
	return errs
}

// lookup follows keys through nested objects; nil where one is missing.
func lookup(obj map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := obj[k].(map[string]any)
		if next == nil {
			return nil
		}
		obj = next
	}
	return obj
}

// errTLSWithoutSchemas refuses tls to a caller that hands no CRD schemas.
const errTLSWithoutSchemas = "a BackendTLSPolicy needs a caller that hands the function CRD schemas (CAPABILITY_REQUIRED_SCHEMAS, Crossplane v2.2 or later), so that it composes one only where the cluster serves BackendTLSPolicy v1 (Gateway API v1.4 or later); under an older Crossplane, remove tls and create the BackendTLSPolicy for the proxy Service yourself"

// Sources are what a run can choose the versions from.
type Sources struct {
	// HandsSchemas: the caller offers CRD schemas (Crossplane v2.2 and
	// later); Schemas are those it handed on this call.
	HandsSchemas bool
	Schemas      Schemas
	// AdvertisesCapabilities: the caller says what it can do (Crossplane
	// v2.0 and later).
	AdvertisesCapabilities bool
	// Recorded are the versions an earlier run read (status.route), nil
	// for none; Observed are the versions the composed objects are
	// observed at, which bear the record out or not.
	Recorded *Recorded
	Observed Observed
	Now      time.Time
}

// Observed are the apiVersions of the objects a run composes as observed:
// "" for a kind none of which is observed.
type Observed struct {
	Route  string
	Grants []string
	TLS    []string
}

// ForRun chooses the versions a run composes: from the schemas the caller
// handed, where it offers them; else, while they are fresh, as an earlier
// run read them (so that Crossplane need not fetch and parse the schemas on
// every reconcile), if the composed objects as observed bear them out; else
// the Input's overrides and the defaults, and the run asks for the schemas.
func ForRun(need Need, o Overrides, s Sources) (Versions, field.ErrorList) {
	if !s.HandsSchemas {
		if need.BackendTLS != nil && s.AdvertisesCapabilities {
			// Crossplane v2.0 and v2.1. The run would ask for the
			// BackendTLSPolicy it is about to compose; on a cluster that
			// does not serve its version, Crossplane fails every reconcile
			// on that request, an emergency abort's too, and no Input
			// setting can say another version. (A caller that advertises
			// nothing predates capabilities, and is not refused.)
			return Versions{}, field.ErrorList{field.Forbidden(need.BackendTLS, errTLSWithoutSchemas)}
		}
		return Choose(need, o, Schemas{})
	}
	if s.Schemas.Handed() {
		return Choose(need, o, s.Schemas)
	}
	if v, ok := Reuse(need, o, s.Recorded, s.Now); ok && s.Observed.bearOut(v, need) {
		return v, nil
	}
	return Choose(need, o, s.Schemas)
}

// bearOut reports whether the composed objects as observed bear out the
// versions a status records: the route exists at the recorded version, and
// so does every grant and BackendTLSPolicy observed, at least one of each
// where the run composes them. Status is anyone's to write who may write
// the XR's status, and a version it names that the cluster does not serve
// would make Crossplane fail every reconcile on the requirement for the
// object at that version, an emergency abort's too, for ten minutes; a
// kind not composed yet has the schemas read.
func (o Observed) bearOut(v Versions, need Need) bool {
	at := func(version string) string { return Group + "/" + version }
	all := func(observed []string, version string) bool {
		return !slices.ContainsFunc(observed, func(apiVersion string) bool { return apiVersion != at(version) })
	}
	return o.Route == at(string(v.Route)) &&
		all(o.Grants, string(v.Grant)) && (len(o.Grants) > 0 || !need.Grants) &&
		all(o.TLS, v.TLS) && (len(o.TLS) > 0 || need.BackendTLS == nil)
}
