// Package compose plans what a CanaryRoute composes. Before the rollout
// engine runs, it applies the platform's policy to the spec, resolves the
// backends, plans the ReferenceGrants and the route's shape, and names every
// object the run composes; once the engine has decided the weights, it
// builds those objects with their readiness, or says what a hold re-emits.
//
// It works on typed values only: package main converts between the
// function's request and response and these types.
package compose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	errXR         = "invalid CanaryRoute"
	errPolicy     = "CanaryRoute not allowed by the function's Input"
	errBuildRoute = "the composed route would be rejected by the Gateway API"
)

// Resolved is a CanaryRoute under the platform's policy: its expressions
// compiled, its backends resolved and checked, its ReferenceGrants planned.
// It says what it composes (Need), so that the versions to compose can be
// chosen before it is planned.
type Resolved struct {
	CR     *xr.CanaryRoute
	Policy *policy.Policy

	Primary backend.Backend
	Canary  backend.Backend
	// Mirrors are the backends of the RequestMirror filters in the spec.
	Mirrors []backend.Reference
	// RuleBackends are the backendRefs of the rules of their own.
	RuleBackends []backend.Reference
	Grants       grant.Result
	// Need is what the CanaryRoute composes, for the versions.
	Need served.Need

	// canaryDigest is the digest of the canary side (see CanaryDigest).
	canaryDigest string

	// programs are the compiled expressions of the gates and the analysis
	// templates, by text; metricPrograms those of the metrics, which are
	// compiled over other variables.
	programs, metricPrograms map[string]*expr.Program
}

// A Plan is what a CanaryRoute composes at the versions chosen for it,
// before the rollout engine decides the weights.
type Plan struct {
	*Resolved

	// Versions are the versions the plan composes.
	Versions served.Versions
	// Route is the route's shape; the weights come from the decision, and
	// a step's own matches and mirror from RouteFor.
	Route route.Params

	// builds are the routes built in this run, by shape and weight: a run
	// builds each route once, whoever asks for it (the steps' checks, the
	// engine's look at the observed route, the route composed).
	builds map[buildKey]build

	// set are the plans of every route of spec.routes, the first of which
	// composes what they share; routeOnly is set on the others: they
	// compose their routes and grants alone (see Together).
	set       []*Plan
	routeOnly bool
	// self backs set for a single route, which then costs no allocation.
	self [1]*Plan
}

// WithRevisions is the plan with the release's Services selecting the
// revisions a run decided (see release.Decision: "" keeps the spec's), in a
// copy: the plan the run was given, and the CanaryRoute it was built from,
// stay as they were. Routes do not depend on the revisions, so the copy
// shares the routes built.
func (p *Plan) WithRevisions(primary, canary string) *Plan {
	cr := *p.CR
	cr.Spec = cr.Spec.WithPrimaryRevision(primary).WithCanaryRevision(canary)
	r := *p.Resolved
	r.CR = &cr
	q := *p
	q.Resolved = &r
	// The routes' plans, with this copy first; theirs do not depend on
	// the revisions either.
	q.self[0] = &q
	q.set = q.self[:]
	if others := p.Routes()[1:]; len(others) > 0 {
		q.set = append([]*Plan{&q}, others...)
	}
	return &q
}

// Program is the compiled expression of a text that the spec holds; nil for
// "".
func (r *Resolved) Program(text string) *expr.Program { return r.programs[text] }

// Resolve applies the policy to a CanaryRoute, compiles its expressions with
// the compiler, resolves its backends and plans its ReferenceGrants. An
// error is bad input, for a Fatal result: it names the CanaryRoute's field
// (or the Input's) and the reason.
func Resolve(cr *xr.CanaryRoute, pol *policy.Policy, compiler *expr.Compiler) (*Resolved, error) {
	if errs := CheckPolicy(cr, pol); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errPolicy)
	}
	r := &Resolved{CR: cr, Policy: pol}
	var errs field.ErrorList
	if r.programs, errs = compile(cr, compiler); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errXR)
	}
	if r.metricPrograms, errs = compileMetrics(cr, pol, compiler); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errXR)
	}
	if errs := checkHooks(cr, pol); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errXR)
	}
	primary, primaryErrs := backend.Resolve(cr, xr.RolePrimary)
	canary, canaryErrs := backend.Resolve(cr, xr.RoleCanary)
	mirrors, mirrorErrs := backend.Mirrors(cr)
	ruleBackends, ruleErrs := backend.RuleBackends(cr)
	if errs := slices.Concat(primaryErrs, canaryErrs, mirrorErrs, ruleErrs); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errXR)
	}
	if errs := slices.Concat(checkReferences(cr, pol, mirrors, "the mirror's backend"), checkReferences(cr, pol, ruleBackends, "the rule's backend")); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(cr.RepathErrors(errs)), errPolicy)
	}
	r.Primary, r.Canary, r.Mirrors, r.RuleBackends = primary, canary, mirrors, ruleBackends
	r.canaryDigest = backend.Digest(cr.Spec.Canary, canary)
	if dv := cr.DigestView(); dv != cr {
		// A route of spec.routes: the canary as written, whatever the
		// routes' order and ports (see xr.CanaryRoute.DigestView). Its
		// errors are this view's, which Resolve reported above.
		b, _ := backend.Resolve(dv, xr.RoleCanary)
		r.canaryDigest = backend.Digest(dv.Spec.Canary, b)
	}

	backends := []backend.Backend{primary, canary}
	for _, m := range slices.Concat(mirrors, ruleBackends) {
		backends = append(backends, m.Backend)
	}
	r.Grants = grant.Plan(grant.Request{
		RouteKind:      cr.Spec.Kind,
		RouteNamespace: cr.RouteNamespace,
		RouteName:      cr.ComposedRouteName(),
		Scope:          cr.Scope,
		Mode:           cr.Spec.ReferenceGrants,
		Backends:       backends,
	}, pol)
	// The versions depend on what the run composes, the grants included.
	r.Need = need(cr, len(r.Grants.Grants) > 0)
	return r, nil
}

// Overrides are the versions the Input chooses for what the CanaryRoute
// composes.
func (r *Resolved) Overrides() served.Overrides {
	kind := r.CR.Spec.Kind
	return served.Overrides{
		Route:     r.Policy.RouteVersions[string(kind)],
		RoutePath: field.NewPath(strings.ToLower(strings.TrimSuffix(string(kind), "Route")) + "RouteVersion"),
		Grant:     r.Policy.GrantVersion,
	}
}

// Plan plans what the CanaryRoute composes at the versions chosen for its
// Need, and checks the route of every step with a shape of its own. An
// error is bad input, for a Fatal result.
func (r *Resolved) Plan(v served.Versions) (*Plan, error) {
	p := &Plan{Resolved: r, Versions: v, builds: map[buildKey]build{}}
	p.self[0] = p
	p.set = p.self[:]
	p.Grants = r.Grants.AtVersion(v.Grant)
	p.Route = routeParams(r.CR, v, r.Primary, r.Canary)
	if errs := append(p.checkSteps(), p.checkPreview()...); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(r.CR.RepathErrors(errs)), errBuildRoute)
	}
	return p, nil
}

// need is what the CanaryRoute composes, for the versions to choose: its
// route kind, whether it composes grants and BackendTLSPolicies, and the
// rule fields that only some channels' CRDs have.
func need(cr *xr.CanaryRoute, grants bool) served.Need {
	n := served.Need{RouteKind: string(cr.Spec.Kind), Grants: grants}
	for _, s := range []struct {
		role xr.Role
		side xr.Side
	}{{xr.RolePrimary, cr.Spec.Primary}, {xr.RoleCanary, cr.Spec.Canary}} {
		if s.side.TLS != nil && n.BackendTLS == nil {
			n.BackendTLS = field.NewPath("spec", string(s.role), "tls")
		}
	}
	for i, r := range cr.Spec.Rules {
		if r.Retry != nil {
			n.RuleFields = append(n.RuleFields, served.RuleField{Name: "retry", Path: field.NewPath("spec", "rules").Index(i).Child("retry")})
			break
		}
	}
	if a := cr.Spec.Traffic.Affinity; a != nil && a.Mode == xr.AffinitySessionPersistence {
		n.RuleFields = append(n.RuleFields, served.RuleField{Name: "sessionPersistence", Path: field.NewPath("spec", "traffic", "sessionAffinity", "mode")})
	}
	return n
}

// compile compiles the expressions of the gates and the analysis
// templates; an error names the field.
func compile(cr *xr.CanaryRoute, compiler *expr.Compiler) (map[string]*expr.Program, field.ErrorList) {
	out := map[string]*expr.Program{}
	var errs field.ErrorList
	add := func(path *field.Path, text string) {
		if text == "" {
			return
		}
		prg, err := compiler.Compile(text)
		if err != nil {
			errs = append(errs, field.Invalid(path, text, "must be a CEL expression over `object` that returns a bool: "+err.Error()))
			return
		}
		out[text] = prg
	}
	for i, g := range cr.Spec.Traffic.Gates {
		add(field.NewPath("spec", "traffic", "gates").Index(i).Child("successWhen"), g.SuccessWhen)
		add(field.NewPath("spec", "traffic", "gates").Index(i).Child("failWhen"), g.FailWhen)
	}
	for _, a := range cr.Spec.Traffic.Analysis {
		add(field.NewPath("spec", "traffic", "analysis").Key(a.Name).Child("successWhen"), a.SuccessWhen)
		add(field.NewPath("spec", "traffic", "analysis").Key(a.Name).Child("failWhen"), a.FailWhen)
	}
	return out, errs
}

// RouteFor is the route's shape at a step: its own matches and mirror,
// where it sets them, replace the traffic's.
func (p *Plan) RouteFor(step *int32) route.Params {
	params := p.Route
	steps := p.CR.Spec.Traffic.Steps
	if step == nil || *step < 0 || int(*step) >= len(steps) {
		return params
	}
	s := steps[*step]
	path := field.NewPath("spec", "traffic", "steps").Index(int(*step))
	if m := s.Matches; m != nil {
		params.ABHTTPMatches, params.ABGRPCMatches, params.ABPath = m.HTTP, m.GRPC, path.Child("matches")
	}
	if m := s.Mirror; m != nil {
		params.MirrorPercent = &m.Percent
		params.MirrorHTTPMatches, params.MirrorGRPCMatches = nil, nil
		if m.Matches != nil {
			params.MirrorHTTPMatches, params.MirrorGRPCMatches = m.Matches.HTTP, m.Matches.GRPC
		}
		params.MirrorPath = path.Child("mirror", "matches")
	}
	return params
}

// checkSteps builds the route of every step with a shape of its own, fully
// active, so that a step whose matches or mirror would break a limit of the
// Gateway API (16 rules, companions included) is refused before any rollout
// reaches it; the errors name the step's fields. Where steps have shapes of
// their own, the shape of traffic.matches and traffic.mirror, which the
// other steps take, is built too: BuildRoute checks only the current step's.
func (p *Plan) checkSteps() field.ErrorList {
	var errs field.ErrorList
	steps := p.CR.Spec.Traffic.Steps
	own := slices.ContainsFunc(steps, func(s xr.Step) bool { return s.Matches != nil || s.Mirror != nil })
	trafficChecked := false
	for i, s := range steps {
		where := "in step " + strconv.Itoa(i) + ": "
		if s.Matches == nil && s.Mirror == nil {
			if !own || trafficChecked {
				continue
			}
			trafficChecked = true
			where = "in the steps that take spec.traffic's matches and mirror (step " + strconv.Itoa(i) + " is the first): "
		}
		weight := s.Weight
		if weight.IsZero() {
			weight = percent.Int(1)
		}
		if !weight.Less(percent.Max) {
			weight = percent.Int(99) // The shape of a step that still has a primary.
		}
		buildErrs := p.build(ptr.To(int32(i)), weight, true).errs()
		for _, e := range buildErrs {
			c := *e
			c.Detail = where + c.Detail
			errs = append(errs, &c)
		}
	}
	return errs
}

// CheckPolicy refuses what the Input forbids outright: features that no
// weight or grant can make safe.
func CheckPolicy(cr *xr.CanaryRoute, pol *policy.Policy) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, checkScope(cr, pol)...)
	for _, s := range []struct {
		role xr.Role
		side xr.Side
	}{{xr.RolePrimary, cr.Spec.Primary}, {xr.RoleCanary, cr.Spec.Canary}} {
		if s.side.ExternalName != "" && !pol.AllowExternalNames {
			errs = append(errs, field.Forbidden(field.NewPath("spec", string(s.role), "externalName"),
				"the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"))
		}
		if s.side.ExternalName != "" {
			errs = append(errs, deniedName(field.NewPath("spec", string(s.role), "externalName"), s.side.ExternalName, pol)...)
		}
		if ref := s.side.BackendRef; ref != nil && backend.GroupKindOf(*ref) == backend.KindIstioHostname {
			errs = append(errs, deniedName(field.NewPath("spec", string(s.role), "backendRef", "name"), string(ref.Name), pol)...)
		}
	}
	// A refused canary is held at weight 0, but a primary cannot be: in the
	// route's own namespace no gateway would refuse a primary of a kind the
	// Input forbids, so leaving it in the route would ignore the policy.
	if ref := cr.Spec.Primary.BackendRef; ref != nil && !pol.AllowsKind(backend.GroupKindOf(*ref)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "primary", "backendRef", "kind"),
			"backend kind "+backend.KindString(backend.GroupKindOf(*ref))+" is not in the function Input's allowedBackendKinds"))
	}
	errs = append(errs, checkKinds(cr, pol)...)
	return errs
}

// checkScope refuses a route namespace the policy does not allow: a
// cluster-scoped CanaryRoute's, and a claim's that is not proven.
func checkScope(cr *xr.CanaryRoute, pol *policy.Policy) field.ErrorList {
	var errs field.ErrorList
	// Anyone who may create a cluster-scoped CanaryRoute could otherwise put
	// a route, and proxy Services selecting any pods, in any namespace.
	if cr.Scope == xr.ScopeCluster && !pol.AllowsRouteNamespace(cr.RouteNamespace) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "namespace"),
			"namespace "+fielderr.Quote(cr.RouteNamespace)+" is not in the function Input's allowedRouteNamespaces"))
	}
	// A claim reference is proven, not believed: whoever may write a
	// cluster-scoped XR may write a claimRef naming any namespace.
	if cr.Scope == xr.ScopeClaim && !cr.ClaimProven && !pol.AllowsRouteNamespace(cr.RouteNamespace) {
		kind, name := "claim", cr.RouteNamespace
		if c := cr.Claim; c != nil {
			kind, name = fielderr.Cut(c.Kind, fielderr.MaxValue), cr.RouteNamespace+"/"+fielderr.Cut(c.Name, fielderr.MaxValue)
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec", "claimRef"),
			"no "+kind+" "+name+" references this CanaryRoute, so its namespace "+fielderr.Quote(cr.RouteNamespace)+
				" must be in the function Input's allowedRouteNamespaces, as for any cluster-scoped CanaryRoute"))
	}
	return errs
}

// checkKinds refuses the kinds of objects the function would compose or
// read with Crossplane's rights that the policy does not allow: analysis
// templates, a release's workload, gates.
func checkKinds(cr *xr.CanaryRoute, pol *policy.Policy) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, checkAnalysisKinds(cr, func(apiVersion, kind string) bool {
		gv, err := schema.ParseGroupVersion(apiVersion)
		return err == nil && pol.AllowsAnalysis(gv.WithKind(kind))
	})...)
	if r := cr.Spec.Release; r != nil && r.Workload != nil {
		gv, err := schema.ParseGroupVersion(r.Workload.APIVersion)
		if err != nil || !pol.AllowsWorkload(gv.WithKind(r.Workload.Kind)) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "release", "workload", "kind"),
				"workloads of kind "+fielderr.Quote(r.Workload.Kind)+" ("+fielderr.Quote(r.Workload.APIVersion)+") are not in the function Input's allowedWorkloadKinds"))
		}
	}
	for i, g := range cr.Spec.Traffic.Gates {
		if !pol.AllowsGate(g.GroupVersionKind()) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "traffic", "gates").Index(i).Child("kind"),
				"gates on "+fielderr.Quote(g.Kind)+" ("+fielderr.Quote(g.APIVersion)+") are not in the function Input's allowedGateKinds"))
		}
	}
	return errs
}

// checkReferences applies the policy to backends written in the spec
// outside the sides: the backends of RequestMirror filters, and the
// backendRefs of rules of their own. Neither can be held at weight 0 like a
// canary (a mirror copies every request it sees, a rule of its own sends
// its requests there whatever the rollout does), so one the policy refuses
// is a Fatal naming where it is written.
func checkReferences(cr *xr.CanaryRoute, pol *policy.Policy, refs []backend.Reference, what string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range refs {
		if reason := grant.RefusalReason(m.Backend, cr.RouteNamespace, pol); reason != "" {
			errs = append(errs, field.Forbidden(m.Path, what+" "+DescribeRef(m.Backend.Ref)+" is refused: "+reason))
		}
		if m.Backend.GroupKind() == backend.KindIstioHostname {
			errs = append(errs, deniedName(m.Path.Child("name"), string(m.Backend.Ref.Name), pol)...)
		}
	}
	return errs
}

// deniedName refuses a host name that the Input's deniedExternalNames
// covers.
func deniedName(path *field.Path, host string, pol *policy.Policy) field.ErrorList {
	d := pol.DeniedExternalName(host)
	if d == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, "host "+fielderr.Quote(host)+" is covered by "+fielderr.Quote(d)+" in the function Input's deniedExternalNames")}
}

// routeParams are the route's shape; the weights come from the decision.
func routeParams(cr *xr.CanaryRoute, versions served.Versions, primary, canary backend.Backend) route.Params {
	p := route.Params{
		Kind:          cr.Spec.Kind,
		Name:          cr.ComposedRouteName(),
		Namespace:     cr.RouteNamespace,
		ParentRefs:    cr.Spec.ParentRefs,
		Hostnames:     cr.Spec.Hostnames,
		Rules:         cr.Spec.Rules,
		Primary:       primary,
		Canary:        canary,
		ABHTTPMatches: cr.Spec.Traffic.HTTPMatches,
		ABGRPCMatches: cr.Spec.Traffic.GRPCMatches,
	}
	p.Version = versions.Route
	if m := cr.Spec.Traffic.Mirror; m != nil {
		p.MirrorPercent = &m.Percent
		// Its matches limit it to the requests that meet them, as a
		// step's do: mirror companion rules carry it.
		if m.Matches != nil {
			p.MirrorHTTPMatches, p.MirrorGRPCMatches = m.Matches.HTTP, m.Matches.GRPC
		}
	}
	if a := cr.Spec.Traffic.Affinity; a != nil {
		p.Affinity = &route.Affinity{
			CookieName:  a.CookieName,
			Value:       route.CookieValue(cr.RouteNamespace, cr.RouteName, cr.Spec.Canary.Revision),
			MaxAge:      a.MaxAge,
			Attributes:  a.Attributes,
			Persistence: a.Mode == xr.AffinitySessionPersistence,
		}
		if a.PrimaryCookieName != "" {
			p.Affinity.PrimaryCookieName = a.PrimaryCookieName
			p.Affinity.PrimaryValue = route.CookieValue(cr.RouteNamespace, cr.RouteName, cr.Spec.Canary.Revision+"/primary")
		}
	}
	return p
}

// RouteKey is the key of the route this plan composes.
func (r *Resolved) RouteKey() names.Key {
	return names.EntryRouteKey(string(r.CR.Spec.Kind), r.CR.Entry)
}

// GrantKey is the key of this plan's ReferenceGrant in a namespace.
func (r *Resolved) GrantKey(namespace string) names.Key {
	return names.EntryGrantKey(namespace, r.CR.Entry)
}

// CanaryDigest is the digest of the canary side as the spec has it now.
func (r *Resolved) CanaryDigest() string { return r.canaryDigest }

// CanaryRefusal is why the policy refused the canary, or "".
func (r *Resolved) CanaryRefusal() string {
	for _, f := range r.Grants.Refused {
		if f.Role == xr.RoleCanary {
			return f.Reason
		}
	}
	return ""
}

// CanaryBackends are the route's canary backends, for status: none when the
// primary and the canary are one backend, which then is the primary.
func (r *Resolved) CanaryBackends() []xr.BackendID {
	if backend.Same(r.Primary, r.Canary) {
		return nil
	}
	return []xr.BackendID{r.Canary.ID()}
}

// DescribeRef names a backend as kind namespace/name:port.
func DescribeRef(ref gwv1.BackendObjectReference) string {
	s := backend.KindString(backend.GroupKindOf(ref)) + " "
	if ref.Namespace != nil {
		s += string(*ref.Namespace) + "/"
	}
	s += string(ref.Name)
	if ref.Port != nil {
		s += fmt.Sprintf(":%d", *ref.Port)
	}
	// A reference that is refused may not have been checked for its length
	// yet: a message quotes at most fielderr.MaxValue characters of it.
	return fielderr.Cut(s, fielderr.MaxValue)
}
