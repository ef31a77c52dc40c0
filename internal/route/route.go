// Package route builds the composed Gateway API route: one builder per route
// kind (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute) over shared pieces (the
// weighted primary/canary backends, companion rules, the mirror filter), and
// reads back what the gateway made of the route it composed earlier.
package route

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Limits of a route that the Gateway API CRDs enforce, checked here first so
// the message can say where the extra rules come from.
const (
	maxRules            = 16
	maxMatchesPerRule   = 64
	maxMatchesInRoute   = 128
	maxBackendsInRule   = 16
	percentTotal        = 100
	defaultPathPrefix   = "/"
	companionABSuffix   = "-canary-match"
	companionStickiness = "-canary-session"
	companionPrimary    = "-primary-session"
	companionMirror     = "-canary-mirror"
	// companionPrimaryMirror keeps the primary's users on the primary for
	// the requests that the mirror's matches take, and mirrors them.
	companionPrimaryMirror = "-primary-session-mirror"
)

// Params is everything a route builder needs: the spec's routing, the two
// backends, and what the traffic policy decided for this run.
type Params struct {
	Kind       xr.RouteKind
	Version    v1beta1.RouteVersion // GRPCRoute, TLSRoute, TCPRoute, UDPRoute
	Name       string
	Namespace  string
	ParentRefs []gwv1.ParentReference
	Hostnames  []gwv1.Hostname
	Rules      []xr.Rule

	Primary backend.Backend
	Canary  backend.Backend

	// CanaryWeight is the canary percent for this run, 0 to 100 with at most
	// two decimals.
	CanaryWeight percent.Percent
	// Total is what the weighted backends' weights add up to:
	// percent.WholeTotal (100) while every weight of the spec is whole,
	// percent.FineTotal (10,000) otherwise. 0, or a CanaryWeight with
	// decimals, is as percent.Total of the CanaryWeight says.
	Total int32
	// Active is true while the rollout is under way (weight above 0 or a
	// step in progress): A/B matches and mirroring apply only then.
	Active bool

	ABHTTPMatches []gwv1.HTTPRouteMatch
	ABGRPCMatches []gwv1.GRPCRouteMatch
	// MirrorPercent, when set, mirrors that share of the weighted rules'
	// requests to the canary.
	MirrorPercent *int32
	// MirrorHTTPMatches and MirrorGRPCMatches, when set, limit the mirror to
	// the requests that match: companion rules carry it, with the weighted
	// backends, and the weighted rules carry none.
	MirrorHTTPMatches []gwv1.HTTPRouteMatch
	MirrorGRPCMatches []gwv1.GRPCRouteMatch
	// ABPath and MirrorPath are where the A/B and the mirror matches come
	// from, for messages (default spec.traffic.matches and
	// spec.traffic.mirror.matches): a step's own are under its index.
	ABPath     *field.Path
	MirrorPath *field.Path
	// Affinity, when set, pins clients to the canary with a cookie.
	Affinity *Affinity
	// CanaryOnly builds the preview route: every rule that carries the
	// rollout sends every request to the canary alone (its backend and
	// its filters), and nothing of the rollout's shaping (companion rules,
	// the mirror, affinity) joins it, whatever the Params say of them.
	// Rules of their own are composed as written, as in any route.
	CanaryOnly bool
}

// Affinity is the session cookie that keeps a client on the canary, and
// the primary's own, or the gateway's session persistence.
type Affinity struct {
	CookieName string
	Value      string
	// PrimaryCookieName and PrimaryValue, when set, are the primary's
	// cookie.
	PrimaryCookieName string
	PrimaryValue      string
	MaxAge            time.Duration
	Attributes        xr.CookieAttributes
	// Persistence writes the Gateway API's sessionPersistence on the
	// weighted rules instead of cookies of the function's.
	Persistence bool
}

// single reports whether primary and canary are one backend: the route then
// carries it once, at 100, and there is nothing to shape.
func (p Params) single() bool {
	return backend.Same(p.Primary, p.Canary)
}

// shaping reports whether A/B matches, mirroring and affinity apply: never
// in the preview route.
func (p Params) shaping() bool {
	return p.Active && !p.single() && !p.CanaryOnly
}

// abCompanion reports whether each rule gets an A/B companion rule.
func (p Params) abCompanion() bool {
	switch p.Kind {
	case xr.KindHTTPRoute:
		return p.shaping() && len(p.ABHTTPMatches) > 0
	case xr.KindGRPCRoute:
		return p.shaping() && len(p.ABGRPCMatches) > 0
	default:
		return false
	}
}

// mirrorCompanion reports whether each rule gets a mirror companion rule:
// a mirror limited by matches.
func (p Params) mirrorCompanion() bool {
	return p.shaping() && p.MirrorPercent != nil && len(p.MirrorHTTPMatches)+len(p.MirrorGRPCMatches) > 0
}

// abPath is where the A/B matches come from.
func (p Params) abPath() *field.Path {
	if p.ABPath != nil {
		return p.ABPath
	}
	return field.NewPath("spec", "traffic", "matches")
}

// mirrorPath is where the mirror matches come from.
func (p Params) mirrorPath() *field.Path {
	if p.MirrorPath != nil {
		return p.MirrorPath
	}
	return field.NewPath("spec", "traffic", "mirror", "matches")
}

// sessionCompanion reports whether each rule gets a session companion rule:
// while the canary gets traffic, on HTTPRoutes, with cookies of the
// function's.
func (p Params) sessionCompanion() bool {
	return p.Kind == xr.KindHTTPRoute && p.shaping() && p.Affinity != nil && !p.Affinity.Persistence && !p.CanaryWeight.IsZero()
}

// primaryCompanion reports whether each rule gets a companion rule that
// keeps the primary's users on the primary.
func (p Params) primaryCompanion() bool {
	return p.sessionCompanion() && p.Affinity.PrimaryCookieName != ""
}

// persistence reports whether the weighted rules carry the Gateway API's
// sessionPersistence: while the canary gets traffic, as the cookies would.
func (p Params) persistence() bool {
	return p.shaping() && p.Affinity != nil && p.Affinity.Persistence && !p.CanaryWeight.IsZero()
}

// origin says where a composed rule comes from: the spec's rule, and which
// of its companions it is ("" for the weighted rule itself, or a rule of
// its own).
type origin struct {
	rule      int
	companion string
	own       bool
}

// layout lists the origin of each composed rule, in the order the builders
// compose them: each rule's companions come right before it; a rule of its
// own has none.
func (p Params) layout() []origin {
	rules := max(len(p.Rules), 1)
	out := make([]origin, 0, 3*rules)
	for i := range rules {
		if i < len(p.Rules) && p.Rules[i].Own() {
			out = append(out, origin{rule: i, own: true})
			continue
		}
		if p.abCompanion() {
			out = append(out, origin{rule: i, companion: "A/B"})
		}
		if p.sessionCompanion() {
			out = append(out, origin{rule: i, companion: "session"})
		}
		if p.primaryCompanion() && p.mirrorCompanion() {
			out = append(out, origin{rule: i, companion: "primary session mirror"})
		}
		if p.primaryCompanion() {
			out = append(out, origin{rule: i, companion: "primary session"})
		}
		if p.mirrorCompanion() {
			out = append(out, origin{rule: i, companion: "mirror"})
		}
		out = append(out, origin{rule: i})
	}
	return out
}

// Build composes the route of the Params' kind. The errors are what the
// Gateway API CRDs would reject in the result; the caller turns them into a
// Fatal result, so the cluster keeps its last good route.
func Build(p Params) (runtime.Object, field.ErrorList) {
	switch p.Kind {
	case xr.KindHTTPRoute:
		return buildHTTPRoute(p)
	case xr.KindGRPCRoute:
		return buildGRPCRoute(p)
	case xr.KindTLSRoute:
		return buildTLSRoute(p)
	case xr.KindTCPRoute:
		return buildTCPRoute(p)
	case xr.KindUDPRoute:
		return buildUDPRoute(p)
	default:
		return nil, field.ErrorList{field.NotSupported(field.NewPath("spec", "kind"), p.Kind, xr.RouteKinds)}
	}
}

func objectMeta(p Params) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}
}

func commonSpec(p Params) gwv1.CommonRouteSpec {
	refs := make([]gwv1.ParentReference, 0, len(p.ParentRefs))
	for _, r := range p.ParentRefs {
		refs = append(refs, *r.DeepCopy())
	}
	return gwv1.CommonRouteSpec{ParentRefs: refs}
}

// weightedBackend is a backendRef of a weighted rule, with the role that
// decides its filters.
type weightedBackend struct {
	role xr.Role
	ref  gwv1.BackendRef
}

// weighted returns the backends of a weighted rule: primary at 100-w and
// canary at w, out of 100 while every weight is whole, out of 10,000
// otherwise (0.1% is primary 9990, canary 10). A canary at weight 0 stays in
// the rule, so that moving traffic is a change of weights only. When both
// sides are one backend, it is listed once at 100; in the preview route, the
// canary alone is, at 100.
func weighted(p Params) []weightedBackend {
	if p.CanaryOnly {
		return []weightedBackend{{role: xr.RoleCanary, ref: backendRef(p.Canary, percentTotal)}}
	}
	if p.single() {
		return []weightedBackend{{role: xr.RolePrimary, ref: backendRef(p.Primary, percentTotal)}}
	}
	total := p.total()
	canary := p.CanaryWeight.Of(total)
	return []weightedBackend{
		{role: xr.RolePrimary, ref: backendRef(p.Primary, total-canary)},
		{role: xr.RoleCanary, ref: backendRef(p.Canary, canary)},
	}
}

// total is what the weighted backends' weights add up to: Total, unless
// the canary's weight cannot be written out of it.
func (p Params) total() int32 {
	if p.Total == percent.FineTotal || !p.CanaryWeight.Whole() {
		return percent.FineTotal
	}
	return percent.WholeTotal
}

func backendRef(b backend.Backend, weight int32) gwv1.BackendRef {
	return gwv1.BackendRef{BackendObjectReference: *b.Ref.DeepCopy(), Weight: &weight}
}

// companionName derives a companion rule's name from its rule's name, so
// users can tell them apart in the gateway's status and metrics. Unnamed
// rules have unnamed companions.
func companionName(rule *gwv1.SectionName, suffix string) *gwv1.SectionName {
	if rule == nil {
		return nil
	}
	name := gwv1.SectionName(string(*rule) + suffix)
	return &name
}

// matchCount is the number of matches across a route's rules.
func matchCount[R any](rules []R, matches func(R) int) int {
	n := 0
	for _, r := range rules {
		n += matches(r)
	}
	return n
}

// tooMany reports a limit exceeded by the composed route, saying by how much.
func tooMany(path *field.Path, what string, got, limit int, why string) *field.Error {
	return field.Invalid(path, got, fmt.Sprintf("the composed route would have %d %s, %d more than the Gateway API allows (%d)%s", got, what, got-limit, limit, why))
}

// Admit checks a composed route the way the Gateway API CRDs would, with the
// function's own typed checks: running the CRDs' schema and CEL validators
// on every run would cost more than the rest of the run together. The
// errors name the CanaryRoute's fields: a composed rule is named after the
// spec's rule it comes from, and a companion rule says so.
func Admit(p Params, obj runtime.Object) field.ErrorList {
	errs := explain(p, admit(obj))
	if collisions := companionCollisions(p); len(collisions) > 0 {
		// They are why the rule names are not unique: said once, with
		// the companion rule that collides.
		errs = slices.DeleteFunc(errs, func(e *field.Error) bool {
			return e.Field == "spec.rules" && e.Detail == admission.MsgRuleNameUnique
		})
		errs = append(collisions, errs...)
	}
	return errs
}

// Check checks a route the way the Gateway API CRDs would: what the abort
// rescue re-emits passes the same checks as what a run composes.
func Check(obj runtime.Object) field.ErrorList { return admit(obj) }

func admit(obj runtime.Object) field.ErrorList {
	k, ok := kindOfObject(obj)
	if !ok {
		return field.ErrorList{field.InternalError(nil, errors.Errorf("no admission check for %T", obj))}
	}
	return k.admit(obj)
}

// composedRule matches the path of a composed rule: spec.rules[<i>]...
var composedRule = regexp.MustCompile(`^spec\.rules\[(\d+)\](.*)$`)

// backendFilter matches the rest of a path inside a composed rule's
// backendRef filters: .backendRefs[<j>].filters[<n>]... or .filters.
var backendFilter = regexp.MustCompile(`^\.backendRefs\[(\d+)\]\.filters(?:\[(\d+)\])?(.*)$`)

// ruleFilter matches the rest of a path inside a composed rule's own
// filters: .filters[<n>]... or .filters.
var ruleFilter = regexp.MustCompile(`^\.filters(?:\[(\d+)\])?(.*)$`)

// explain renames the paths of composed rules after the CanaryRoute's own
// fields: a composed rule after the spec's rule it comes from (saying when
// the error is in a companion rule or the default rule), a backend's
// filters after the side they come from, and it says when what the function
// adds (the session cookie, the mirror filter) is what breaks a limit.
func explain(p Params, errs field.ErrorList) field.ErrorList {
	layout := p.layout()
	weighted := weightedErrors(layout, errs)
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		m := composedRule.FindStringSubmatch(e.Field)
		if m == nil {
			out = append(out, e)
			continue
		}
		k, err := strconv.Atoi(m[1])
		if err != nil || k >= len(layout) {
			out = append(out, e)
			continue
		}
		o, c := layout[k], *e
		if o.companion != "" && weighted[copiedKey(o.rule, m[2], e)] {
			continue
		}
		if f := backendFilter.FindStringSubmatch(m[2]); f != nil && !o.own {
			out = append(out, p.explainBackendFilter(o, &c, f))
			continue
		}
		out = append(out, p.explainRule(o, &c, m[2]))
	}
	return out
}

// weightedErrors are the errors of the weighted rules, by copiedKey. A
// companion rule copies its rule's matches, filters, timeouts and retry: an
// error there is the user's, and the weighted rule reports it already. Only
// what the companion itself adds is its own.
func weightedErrors(layout []origin, errs field.ErrorList) map[string]bool {
	weighted := map[string]bool{}
	for _, e := range errs {
		if m := composedRule.FindStringSubmatch(e.Field); m != nil {
			if k, err := strconv.Atoi(m[1]); err == nil && k < len(layout) && layout[k].companion == "" && !layout[k].own {
				weighted[copiedKey(layout[k].rule, m[2], e)] = true
			}
		}
	}
	return weighted
}

// explainRule renames an error in a composed rule after the spec's rule it
// comes from (rest is its place inside the rule), and says when it is in a
// companion rule or the default rule, or when the mirror filter that the
// function adds is what breaks a limit.
func (p Params) explainRule(o origin, c *field.Error, rest string) *field.Error {
	c.Field = fmt.Sprintf("spec.rules[%d]%s", o.rule, rest)
	var where string
	if len(p.Rules) == 0 {
		c.Field = "spec.rules" + rest
		where = "the default rule"
	}
	if o.companion != "" {
		where = strings.TrimSuffix("the "+o.companion+" companion rule of "+where, " of ")
	}
	if f := ruleFilter.FindStringSubmatch(rest); f != nil && p.carriesMirror(o) {
		if n, err := strconv.Atoi(f[1]); f[1] == "" || (err == nil && n == p.ruleFilterCount(o.rule)) {
			to := "each weighted rule"
			if o.companion != "" {
				to = "this companion rule"
			}
			where = strings.TrimSpace(where + " (the RequestMirror filter that " + strings.TrimSuffix(p.mirrorPath().String(), ".matches") + " adds to " + to + " counts here)")
		}
	}
	if where != "" {
		c.Detail = "in " + where + ": " + c.Detail
	}
	return c
}

// copiedKey identifies an error in a composed rule by the spec's rule it
// comes from, its place inside the rule and what it says, so that the copy
// of an error in a companion rule is told from the weighted rule's.
func copiedKey(rule int, rest string, e *field.Error) string {
	return fmt.Sprintf("%d%s|%s|%s", rule, rest, e.Type, e.Detail)
}

// companionCollisions refuses a rule named like a companion rule that the
// function names after another rule (<rule>-canary-session and the like):
// the Gateway API would refuse the route for two rules of one name, and say
// nothing of the companion.
func companionCollisions(p Params) field.ErrorList {
	names := make(map[string]int, len(p.Rules))
	for i, r := range p.Rules {
		if r.Name != nil {
			names[string(*r.Name)] = i
		}
	}
	var errs field.ErrorList
	for _, o := range p.layout() {
		if o.companion == "" || o.rule >= len(p.Rules) || p.Rules[o.rule].Name == nil {
			continue
		}
		name := string(*p.Rules[o.rule].Name) + companionSuffix[o.companion]
		if j, ok := names[name]; ok {
			errs = append(errs, field.Invalid(field.NewPath("spec", "rules").Index(j).Child("name"), name, fmt.Sprintf(
				"the function names the %s companion rule of spec.rules[%d] so: rename this rule", o.companion, o.rule)))
		}
	}
	return errs
}

// companionSuffix is the suffix of each companion rule's name.
var companionSuffix = map[string]string{
	"A/B":                    companionABSuffix,
	"session":                companionStickiness,
	"primary session":        companionPrimary,
	"primary session mirror": companionPrimaryMirror,
	"mirror":                 companionMirror,
}

// explainBackendFilter names a backend's filter after the side it comes
// from: every composed rule carries the side's filters, so the error is the
// side's, said once.
func (p Params) explainBackendFilter(o origin, c *field.Error, f []string) *field.Error {
	j, _ := strconv.Atoi(f[1])
	role := xr.RolePrimary
	// A/B and session companions carry the canary alone, the primary
	// session companions the primary alone; a mirror companion carries
	// both, as the weighted rule does.
	primaryAlone := o.companion == "primary session" || o.companion == "primary session mirror"
	if p.CanaryOnly || o.companion == "A/B" || o.companion == "session" || (!primaryAlone && j == 1 && !p.single()) {
		role = xr.RoleCanary
	}
	c.Field = "spec." + string(role) + ".filters"
	if f[2] != "" {
		c.Field += "[" + f[2] + "]"
	}
	c.Field += f[3]
	if role != xr.RoleCanary || !p.cookieAdded() {
		return c
	}
	n, err := strconv.Atoi(f[2])
	switch {
	case f[2] == "":
		c.Detail += " (the ResponseHeaderModifier that spec.traffic.sessionAffinity adds for its Set-Cookie header counts here)"
	case err == nil && n >= p.canaryFilterCount():
		c.Field = "spec.traffic.sessionAffinity"
		c.Detail = "the session cookie's ResponseHeaderModifier, added to the canary's filters: " + c.Detail
	case err == nil && strings.HasPrefix(f[3], ".responseHeaderModifier"):
		c.Detail += " (the session cookie's Set-Cookie header, which spec.traffic.sessionAffinity adds to this ResponseHeaderModifier, counts here)"
	}
	return c
}

// cookieAdded reports whether the canary's filters carry the session cookie
// in this route.
func (p Params) cookieAdded() bool {
	return p.Kind == xr.KindHTTPRoute && p.Affinity != nil && p.shaping() && !p.CanaryWeight.IsZero()
}

// carriesMirror reports whether a composed rule carries the mirror filter
// that the function adds: the weighted rule and the primary's session
// companion with a mirror without matches, the companions of a mirror with
// matches.
func (p Params) carriesMirror(o origin) bool {
	switch {
	case o.own:
		return false
	case o.companion == "" || o.companion == "primary session":
		return p.mirrorAdded()
	default:
		return o.companion == "mirror" || o.companion == "primary session mirror"
	}
}

// mirrorAdded reports whether each weighted rule carries the mirror filter
// of spec.traffic.mirror in this route: a mirror without matches.
func (p Params) mirrorAdded() bool {
	return p.MirrorPercent != nil && p.shaping() && !p.mirrorCompanion()
}

func (p Params) canaryFilterCount() int {
	return max(len(p.Canary.HTTPFilters), len(p.Canary.GRPCFilters))
}

func (p Params) ruleFilterCount(i int) int {
	if i >= len(p.Rules) {
		return 0
	}
	return max(len(p.Rules[i].HTTPFilters), len(p.Rules[i].GRPCFilters))
}

// deepCopy copies a list of Gateway API values, so that the composed route
// never shares memory with the spec it was built from.
func deepCopy[T any, PT interface {
	*T
	DeepCopyInto(out *T)
}](in []T,
) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		PT(&in[i]).DeepCopyInto(&out[i])
	}
	return out
}
