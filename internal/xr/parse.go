package xr

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/bounds"
	"github.com/crossplane-contrib/function-canary-route/internal/decode"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
)

// percentMax is the most a weight or a mirror's percent is.
const percentMax = 100

// DefaultFailAfter is how long a gate may stay False before the rollout
// fails, when the gate does not say.
const DefaultFailAfter = 5 * time.Minute

// specBounds checks the sizes of the spec fields the function reads; a
// spec may hold any number of other fields, which are none of its business.
func specBounds(specPath *field.Path, spec map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedSpecKeys {
		if v, ok := spec[k]; ok {
			errs = append(errs, bounds.Check(specPath.Child(k), v, specLimits)...)
		}
	}
	return errs
}

// statusKeys are the fields of the status the function reads back.
var statusKeys = []string{"rollout", "route", "routes", "release"}

// statusBounds checks the sizes of the status the function reads back.
func statusBounds(status any) field.ErrorList {
	var errs field.ErrorList
	if st, ok := status.(map[string]any); ok {
		for _, k := range statusKeys {
			errs = append(errs, bounds.Check(field.NewPath("status", k), st[k], statusLimits)...)
		}
	}
	return errs
}

// Parse reads a CanaryRoute XR from its unstructured content. The error
// names every invalid field and says why; it is meant for a Fatal result.
//
// defaultParentRefs are the Input's parents, used when the XR names none.
func Parse(obj map[string]any, defaultParentRefs []gwv1.ParentReference) (*CanaryRoute, error) {
	u := unstructured.Unstructured{Object: obj}
	specPath := field.NewPath("spec")

	// Not unstructured.NestedMap: its deep copy panics on values that are
	// not JSON types, and bad input must never panic the function.
	v, found := obj["spec"]
	if !found || v == nil {
		return nil, fielderr.Summarize(field.ErrorList{field.Required(specPath, "a CanaryRoute needs a spec")})
	}
	spec, ok := v.(map[string]any)
	if !ok {
		return nil, fielderr.Summarize(field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, "must be an object")})
	}

	// Nothing oversized reaches the decoder: see package bounds.
	p, kept := parsedSpecOf(spec, defaultParentRefs)
	if errs := append(slices.Clone(p.boundsErrs), statusBounds(obj["status"])...); len(errs) > 0 {
		return nil, fielderr.Summarize(errs)
	}
	if len(p.decodeErrs) > 0 {
		// Decoding errors make the rest of the checks noise.
		return nil, fielderr.Summarize(p.decodeErrs)
	}

	cr := &CanaryRoute{Name: u.GetName()}
	if kept {
		cr.specID = SpecID{parsed: p}
	}
	var errs field.ErrorList
	cr.Scope, cr.RouteNamespace, errs = routeNamespace(u, spec, p.raw.Namespace)
	cr.RouteName = routeName(u, spec, p.raw.RouteName)
	if cr.Scope == ScopeClaim {
		cr.Claim = claimRef(spec)
	}

	s := p.spec
	cr.Spec = s
	errs = append(errs, p.specErrs...)
	for _, msg := range validation.IsDNS1123Subdomain(cr.RouteName) {
		errs = append(errs, field.Invalid(specPath.Child("routeName"), cr.RouteName, "the route name "+msg))
	}
	errs = append(errs, proxyNames(specPath, cr.RouteName, s)...)
	errs = append(errs, previewName(specPath, cr.RouteName, s)...)
	errs = append(errs, routeNames(specPath, cr.RouteName, s)...)

	status, statusErrs := parseStatus(obj)
	cr.Status = status
	errs = append(errs, statusErrs...)
	if cr.Spec.Release != nil {
		releaseSides(&cr.Spec, cr.Status.Release)
	}

	if len(errs) > 0 {
		return nil, fielderr.Summarize(errs)
	}
	return cr, nil
}

// parsedSpec is what a spec decodes and parses to, whatever the XR that
// holds it: shared by every run that reads the same spec, and never
// modified.
type parsedSpec struct {
	raw                              *rawSpec
	spec                             Spec
	boundsErrs, decodeErrs, specErrs field.ErrorList
	defaultParentRefs                []gwv1.ParentReference
	// bytes is the estimate of the spec's bytes it is kept at.
	bytes uint64
}

// parsedSpecs keeps the specs parsed last. Decoding a spec strictly (each
// field through JSON, then its matches and filters again) is a third of a
// run, and Crossplane sends the same spec run after run.
var parsedSpecs = memo.New[memo.Key, *parsedSpec](512, 64<<20)

// parsedSpecOf decodes and parses a spec, or finds it parsed by an earlier
// run with the same Input's default parents. A parsed spec is kept at four
// times the spec's own estimate: the raw and the parsed forms, and their
// headers. kept is false for a spec parsed for this run alone.
func parsedSpecOf(spec map[string]any, defaultParentRefs []gwv1.ParentReference) (p *parsedSpec, kept bool) {
	// Only the fields the function reads: Crossplane's own (resourceRefs,
	// the composition's revision) change without changing the route.
	read := make(map[string]any, len(sortedSpecKeys))
	for _, k := range sortedSpecKeys {
		if v, ok := spec[k]; ok {
			read[k] = v
		}
	}
	// The default parents are part of the key: a spec run under two
	// Inputs is kept twice, found again under each.
	key, bytes, cacheable := memo.Of(map[string]any{"spec": read, "defaultParentRefs": parentsValue(defaultParentRefs)})
	if cacheable {
		if p, ok := parsedSpecs.Get(key); ok && equality.Semantic.DeepEqual(p.defaultParentRefs, defaultParentRefs) {
			return p, true
		}
	}
	specPath := field.NewPath("spec")
	p = &parsedSpec{defaultParentRefs: defaultParentRefs, bytes: 4 * bytes}
	p.boundsErrs = specBounds(specPath, spec)
	if len(p.boundsErrs) > 0 {
		// Nothing oversized reaches the decoder.
		return p, false
	}
	p.raw, p.decodeErrs = decodeSpec(specPath, spec)
	if len(p.decodeErrs) == 0 {
		p.spec, p.specErrs = parseSpec(specPath, p.raw, defaultParentRefs)
	}
	if cacheable {
		// Two runs that parse a new spec at once keep one parse: both
		// use it, so the routes each builds on it are found again.
		if kept := parsedSpecs.Keep(key, p, p.bytes); equality.Semantic.DeepEqual(kept.defaultParentRefs, defaultParentRefs) {
			p = kept
		}
	}
	return p, cacheable
}

// parentsValue is the default parents as JSON values, for their key: a
// field not set is nil, apart from one set empty.
func parentsValue(refs []gwv1.ParentReference) []any {
	out := make([]any, 0, len(refs))
	for _, r := range refs {
		var port any
		if r.Port != nil {
			port = int64(*r.Port)
		}
		out = append(out, []any{optional(r.Group), optional(r.Kind), optional(r.Namespace), string(r.Name), optional(r.SectionName), port})
	}
	return out
}

// optional is a pointer to a string's value as JSON: nil when not set.
func optional[S ~string](v *S) any {
	if v == nil {
		return nil
	}
	return string(*v)
}

// routeNamespace decides where the route lives, per the XR's scope.
func routeNamespace(u unstructured.Unstructured, spec map[string]any, specNamespace string) (Scope, string, field.ErrorList) {
	nsPath := field.NewPath("spec", "namespace")
	if ns := u.GetNamespace(); ns != "" {
		// Crossplane forces everything a namespaced XR composes into the
		// XR's namespace, so any other namespace would be a lie.
		if specNamespace != "" && specNamespace != ns {
			return ScopeNamespaced, ns, field.ErrorList{field.Invalid(nsPath, specNamespace,
				fmt.Sprintf("a namespaced CanaryRoute routes in its own namespace %q; leave spec.namespace empty or set it to %q", ns, ns))}
		}
		// The API server only hands out valid namespaces; a hand-made
		// object must not yield composed objects that it would refuse.
		return ScopeNamespaced, ns, namespaceName(field.NewPath("metadata", "namespace"), ns)
	}

	var claimNamespace string
	if ref, ok := spec["claimRef"].(map[string]any); ok {
		claimNamespace, _ = ref["namespace"].(string)
	}
	if claimNamespace != "" {
		if specNamespace != "" && specNamespace != claimNamespace {
			return ScopeClaim, claimNamespace, field.ErrorList{field.Invalid(nsPath, specNamespace,
				fmt.Sprintf("a claimed CanaryRoute routes in its claim's namespace %q; leave spec.namespace empty or set it to %q", claimNamespace, claimNamespace))}
		}
		return ScopeClaim, claimNamespace, namespaceName(field.NewPath("spec", "claimRef", "namespace"), claimNamespace)
	}

	if specNamespace == "" {
		return ScopeCluster, "", field.ErrorList{field.Required(nsPath, "a cluster-scoped CanaryRoute without a claim names the route's namespace")}
	}
	return ScopeCluster, specNamespace, namespaceName(nsPath, specNamespace)
}

// namespaceName checks the route's namespace: a DNS-1123 label.
func namespaceName(path *field.Path, ns string) field.ErrorList {
	msgs := validation.IsDNS1123Label(ns)
	errs := make(field.ErrorList, 0, len(msgs))
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, ns, msg))
	}
	return errs
}

// claimRef reads spec.claimRef, which Crossplane writes, leniently.
func claimRef(spec map[string]any) *ClaimRef {
	ref, _ := spec["claimRef"].(map[string]any)
	str := func(k string) string { v, _ := ref[k].(string); return v }
	return &ClaimRef{APIVersion: str("apiVersion"), Kind: str("kind"), Name: str("name"), Namespace: str("namespace")}
}

// RouteNameOf is the route's name as Parse names it, read leniently from
// an XR that may not parse: for an emergency abort of one that cannot be
// composed.
func RouteNameOf(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	name, _ := spec["routeName"].(string)
	return routeName(unstructured.Unstructured{Object: obj}, spec, name)
}

// routeName is spec.routeName, else the claim's name, else the XR's name.
func routeName(u unstructured.Unstructured, spec map[string]any, specRouteName string) string {
	if specRouteName != "" {
		return specRouteName
	}
	if ref, ok := spec["claimRef"].(map[string]any); ok {
		if name, _ := ref["name"].(string); name != "" {
			return name
		}
	}
	return u.GetName()
}

func parseSpec(path *field.Path, raw *rawSpec, defaultParentRefs []gwv1.ParentReference) (Spec, field.ErrorList) {
	if len(raw.Routes) > 0 {
		return parseRoutes(path, raw, defaultParentRefs)
	}
	return parseOne(path, raw, defaultParentRefs)
}

// parseOne parses a spec written with the single-route shorthand.
func parseOne(path *field.Path, raw *rawSpec, defaultParentRefs []gwv1.ParentReference) (Spec, field.ErrorList) {
	var errs field.ErrorList
	s := Spec{
		Namespace:       raw.Namespace,
		RouteName:       raw.RouteName,
		Kind:            raw.Kind,
		ParentRefs:      parentRefs(raw.ParentRefs),
		Hostnames:       raw.Hostnames,
		ReferenceGrants: raw.ReferenceGrants,
	}

	if s.Kind == "" {
		s.Kind = KindHTTPRoute
	}
	if !slices.Contains(RouteKinds, s.Kind) {
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, RouteKinds))
		// Every kind-specific check below would mislead.
		return s, errs
	}

	if s.ReferenceGrants == "" {
		s.ReferenceGrants = GrantsCompose
	}
	if s.ReferenceGrants != GrantsCompose && s.ReferenceGrants != GrantsSkip {
		errs = append(errs, field.NotSupported(path.Child("referenceGrants"), s.ReferenceGrants, []GrantMode{GrantsCompose, GrantsSkip}))
	}

	errs = append(errs, parseParentRefs(path.Child("parentRefs"), &s, defaultParentRefs)...)
	errs = append(errs, validateHostnames(path.Child("hostnames"), s.Kind, s.Hostnames)...)

	if raw.Port != nil {
		s.Port = *raw.Port
		if s.Port < 1 || s.Port > 65535 {
			errs = append(errs, field.Invalid(path.Child("port"), s.Port, "must be a port number between 1 and 65535"))
		}
	}

	var ruleErrs field.ErrorList
	s.Rules, ruleErrs = parseRules(path.Child("rules"), s.Kind, raw.Rules)
	errs = append(errs, ruleErrs...)

	var sideErrs field.ErrorList
	if raw.Release != nil {
		errs = append(errs, releaseSideErrs(path, raw)...)
		s.Canary, sideErrs = parseSide(path.Child("canary"), s.Kind, RoleCanary, withReleaseSource(raw.Canary))
		errs = append(errs, sideErrs...)
		var relErrs field.ErrorList
		s.Release, relErrs = parseRelease(path.Child("release"), raw.Release, s.Canary.Revision)
		errs = append(errs, relErrs...)
	} else {
		s.Primary, sideErrs = parseSide(path.Child("primary"), s.Kind, RolePrimary, raw.Primary)
		errs = append(errs, sideErrs...)
		s.Canary, sideErrs = parseSide(path.Child("canary"), s.Kind, RoleCanary, raw.Canary)
		errs = append(errs, sideErrs...)
	}

	var trafficErrs field.ErrorList
	s.Traffic, trafficErrs = parseTraffic(path.Child("traffic"), s.Kind, raw.Traffic)
	errs = append(errs, trafficErrs...)

	if s.Traffic.Progressive() && s.Canary.Revision == "" {
		errs = append(errs, field.Required(path.Child("canary", "revision"),
			"traffic.steps needs a canary revision, so that a new version restarts the rollout"))
	}
	if raw.Traffic != nil {
		var windowErrs, previewErrs field.ErrorList
		s.Traffic.RollbackWindow, windowErrs = rollbackWindow(path.Child("traffic", "rollbackWindow"), raw.Traffic.RollbackWindow, raw.Release != nil)
		errs = append(errs, windowErrs...)
		s.Traffic.Preview, previewErrs = parsePreview(path.Child("traffic", "preview"), s, raw.Traffic.Preview)
		errs = append(errs, previewErrs...)
	}
	return s, errs
}

// releaseSideErrs refuses what a release's sides cannot hold: a primary
// (the release's stable revision is the primary), a canary naming a
// backend (the canary is the release's revision), no steps, no port.
func releaseSideErrs(path *field.Path, raw *rawSpec) field.ErrorList {
	var errs field.ErrorList
	if raw.Primary != nil {
		errs = append(errs, field.Forbidden(path.Child("primary"), "with release, the primary is the release's stable revision: set either release or primary"))
	}
	if c := raw.Canary; c != nil && (c.Service != nil || c.ExternalName != nil || c.BackendRef != nil) {
		errs = append(errs, field.Forbidden(path.Child("canary"), "with release, the canary is the release's revision canary.revision: it names no service, externalName or backendRef"))
	}
	if raw.Traffic == nil || len(raw.Traffic.Steps) == 0 {
		errs = append(errs, field.Required(path.Child("traffic", "steps"), "a release rolls each revision out through steps"))
	}
	if raw.Port == nil {
		errs = append(errs, field.Required(path.Child("port"), "a release's proxy Services serve spec.port"))
	}
	return errs
}

// releasePlaceholderSelector is the selector a release's sides parse with
// before releaseSides gives them their own.
func releasePlaceholderSelector() map[string]string { return map[string]string{"release": "release"} }

// withReleaseSource is a release's canary as written, with a source of its
// own so that it parses as a side: the release composes its Service.
func withReleaseSource(raw *rawSide) *rawSide {
	if raw == nil {
		return &rawSide{Service: &rawService{Selector: releasePlaceholderSelector()}}
	}
	c := *raw
	c.Service, c.ExternalName, c.BackendRef = &rawService{Selector: releasePlaceholderSelector()}, nil, nil
	return &c
}

func parseParentRefs(path *field.Path, s *Spec, defaults []gwv1.ParentReference) field.ErrorList {
	if len(s.ParentRefs) == 0 {
		if len(defaults) == 0 {
			return field.ErrorList{field.Required(path, "name the route's parents (a Gateway), or set defaultParentRefs in the function's Input")}
		}
		// The Input's defaults were validated with the Input.
		s.ParentRefs = defaults
		return nil
	}
	if len(s.ParentRefs) > maxParentRefs {
		return field.ErrorList{field.TooMany(path, len(s.ParentRefs), maxParentRefs)}
	}
	return admission.ParentReferences(path, s.ParentRefs)
}

// parentRefs converts parentRefs as written to Gateway API's type.
func parentRefs(raw []rawParentReference) []gwv1.ParentReference {
	if raw == nil {
		return nil
	}
	out := make([]gwv1.ParentReference, 0, len(raw))
	for _, r := range raw {
		out = append(out, gwv1.ParentReference(r))
	}
	return out
}

func validateHostnames(path *field.Path, kind RouteKind, hostnames []gwv1.Hostname) field.ErrorList {
	switch kind {
	case KindHTTPRoute, KindGRPCRoute:
	case KindTCPRoute, KindUDPRoute:
		if len(hostnames) > 0 {
			return field.ErrorList{field.Forbidden(path, "a "+string(kind)+" matches no hostnames")}
		}
		return nil
	case KindTLSRoute:
		if len(hostnames) == 0 {
			return field.ErrorList{field.Required(path, "a TLSRoute routes by SNI: name 1 to 16 hostnames")}
		}
	}
	if len(hostnames) > maxHostnames {
		return field.ErrorList{field.TooMany(path, len(hostnames), maxHostnames)}
	}
	if kind == KindTLSRoute {
		return admission.TLSHostnames(path, hostnames)
	}
	return admission.Hostnames(path, hostnames)
}

func parseRules(path *field.Path, kind RouteKind, raw []rawRule) ([]Rule, field.ErrorList) {
	var errs field.ErrorList
	limit := MaxRules
	if kind.Streams() {
		limit = 1
	}
	if len(raw) > limit {
		return nil, field.ErrorList{field.TooMany(path, len(raw), limit)}
	}

	rules := make([]Rule, 0, len(raw))
	for i, r := range raw {
		p := path.Index(i)
		rule := Rule{Name: r.Name}
		if r.Name != nil {
			errs = append(errs, admission.SectionName(p.Child("name"), *r.Name)...)
		}
		switch kind {
		case KindHTTPRoute:
			errs = append(errs, decodeAndCheck(p.Child("matches"), r.Matches, &rule.HTTPMatches, admission.HTTPRouteMatches)...)
			errs = append(errs, decodeAndCheck(p.Child("filters"), r.Filters, &rule.HTTPFilters, admission.HTTPRouteFilters)...)
			errs = append(errs, decodeFragments(p.Child("backendRefs"), r.BackendRefs, &rule.HTTPBackendRefs)...)
			errs = append(errs, redirectAlone(p, rule)...)
			rule.Timeouts = (*gwv1.HTTPRouteTimeouts)(r.Timeouts)
			errs = append(errs, admission.HTTPRouteTimeouts(p.Child("timeouts"), rule.Timeouts)...)
			rule.Retry = (*gwv1.HTTPRouteRetry)(r.Retry)
		case KindGRPCRoute:
			errs = append(errs, decodeAndCheck(p.Child("matches"), r.Matches, &rule.GRPCMatches, admission.GRPCRouteMatches)...)
			errs = append(errs, decodeAndCheck(p.Child("filters"), r.Filters, &rule.GRPCFilters, admission.GRPCRouteFilters)...)
			errs = append(errs, decodeFragments(p.Child("backendRefs"), r.BackendRefs, &rule.GRPCBackendRefs)...)
			errs = append(errs, unsupported(p.Child("timeouts"), r.Timeouts != nil, "timeouts", kind)...)
			errs = append(errs, unsupported(p.Child("retry"), r.Retry != nil, "retries", kind)...)
		case KindTLSRoute, KindTCPRoute, KindUDPRoute:
			errs = append(errs, unsupported(p.Child("matches"), hasItems(r.Matches), "matches", kind)...)
			errs = append(errs, unsupported(p.Child("filters"), hasItems(r.Filters), "filters", kind)...)
			errs = append(errs, unsupported(p.Child("timeouts"), r.Timeouts != nil, "timeouts", kind)...)
			errs = append(errs, unsupported(p.Child("retry"), r.Retry != nil, "retries", kind)...)
			if hasItems(r.BackendRefs) {
				errs = append(errs, field.Forbidden(p.Child("backendRefs"),
					"a "+string(kind)+" has one rule, which carries the rollout: it cannot have backendRefs of its own"))
			}
		}
		if (kind == KindHTTPRoute || kind == KindGRPCRoute) && emptyList(r.BackendRefs) {
			// Gateway API answers a rule without backends with an error;
			// the function would make it carry the rollout instead.
			errs = append(errs, field.Invalid(p.Child("backendRefs"), "[]",
				"an empty list is no backend of the rule's own: leave backendRefs out for a rule that carries the rollout, or name the rule's own backends"))
		}
		rules = append(rules, rule)
	}
	if len(rules) > 0 && !slices.ContainsFunc(rules, func(r Rule) bool { return !r.Own() }) {
		errs = append(errs, field.Invalid(path, fmt.Sprintf("%d rules of their own", len(rules)),
			"at least one rule must carry the rollout: every rule has backendRefs of its own or redirects"))
	}
	return rules, errs
}

// redirectAlone refuses a RequestRedirect beside backendRefs: a redirect
// answers the request itself, so Gateway API forbids backends beside it.
// A rule that redirects is a rule of its own, composed as written.
func redirectAlone(path *field.Path, r Rule) field.ErrorList {
	if len(r.HTTPBackendRefs) == 0 {
		return nil
	}
	var errs field.ErrorList
	for i, f := range r.HTTPFilters {
		if f.Type == gwv1.HTTPRouteFilterRequestRedirect {
			errs = append(errs, field.Forbidden(path.Child("filters").Index(i),
				"a RequestRedirect answers the request itself: a rule that redirects takes no backendRefs"))
		}
	}
	return errs
}

// unsupported rejects a feature that the route kind cannot carry: dropping
// it silently would route differently from what the user wrote.
func unsupported(path *field.Path, set bool, feature string, kind RouteKind) field.ErrorList {
	if !set {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a %s cannot carry %s", kind, feature))}
}

// hasItems reports whether a list holds anything. An empty list or null is
// the same as leaving the field out.
func hasItems(list []fragment) bool { return len(list) > 0 }

// emptyList reports whether a list is written empty, as opposed to absent or
// null.
func emptyList(list []fragment) bool { return list != nil && len(list) == 0 }

// decodeFragments decodes kind-specific Gateway API fragments strictly into
// their Gateway API type, with errors at the CanaryRoute's own paths.
func decodeFragments(path *field.Path, list []fragment, into any) field.ErrorList {
	if list == nil {
		return nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, err.Error())}
	}
	return decode.Strict(path, b, into)
}

// decodeAndCheck decodes fragments and, once they decoded, checks them with
// the Gateway API's rules. The check depends only on the fragments' own
// decoding: an error elsewhere in the spec must not hide their own errors.
func decodeAndCheck[T any](path *field.Path, list []fragment, into *[]T, check func(*field.Path, []T) field.ErrorList) field.ErrorList {
	if errs := decodeFragments(path, list, into); len(errs) > 0 {
		return errs
	}
	return check(path, *into)
}
