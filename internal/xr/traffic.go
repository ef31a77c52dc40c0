package xr

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// cookieNamePattern is an RFC 6265 cookie-name (an RFC 7230 token), kept to
// characters that need no escaping in the Cookie header's regular
// expression.
var cookieNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func parseTraffic(path *field.Path, kind RouteKind, raw *rawTraffic) (Traffic, field.ErrorList) {
	t := Traffic{RequireAcceptedRoute: true}
	if raw == nil {
		return t, nil
	}
	var errs field.ErrorList
	t.Weight = raw.Weight
	t.Paused = raw.Paused
	t.Abort = raw.Abort
	if raw.RequireAcceptedRoute != nil {
		t.RequireAcceptedRoute = *raw.RequireAcceptedRoute
	}
	if raw.ProgressDeadline != nil {
		var deadlineErrs field.ErrorList
		t.ProgressDeadline, deadlineErrs = progressDeadline(path.Child("progressDeadline"), *raw.ProgressDeadline, len(raw.Steps) > 0)
		errs = append(errs, deadlineErrs...)
	}

	if raw.Weight != nil {
		errs = append(errs, weightIn(path.Child("weight"), *raw.Weight)...)
		if len(raw.Steps) > 0 {
			errs = append(errs, field.Forbidden(path.Child("steps"), "set either weight (manual) or steps (progressive), not both"))
		}
	}

	var stepErrs field.ErrorList
	t.Steps, stepErrs = parseSteps(path.Child("steps"), kind, raw.Steps)
	errs = append(errs, stepErrs...)

	if m, matchErrs := parseMatches(path.Child("matches"), kind, raw.Matches, whatAB); m != nil || len(matchErrs) > 0 {
		errs = append(errs, matchErrs...)
		if m != nil {
			t.HTTPMatches, t.GRPCMatches = m.HTTP, m.GRPC
		}
	}

	var mirrorErrs field.ErrorList
	t.Mirror, mirrorErrs = parseMirror(path.Child("mirror"), kind, raw.Mirror)
	errs = append(errs, mirrorErrs...)

	if raw.SessionAffinity != nil {
		var affErrs field.ErrorList
		t.Affinity, affErrs = parseAffinity(path.Child("sessionAffinity"), kind, raw.SessionAffinity)
		errs = append(errs, affErrs...)
	}

	var gateErrs field.ErrorList
	t.Gates, gateErrs = parseGates(path.Child("gates"), raw.Gates)
	errs = append(errs, gateErrs...)

	var controlErrs, metricErrs field.ErrorList
	t, controlErrs = parseControls(path, t, raw)
	errs = append(errs, controlErrs...)
	t, metricErrs = parseMetrics(path, t, raw)
	errs = append(errs, metricErrs...)
	var hookErrs field.ErrorList
	t, hookErrs = parseHooks(path.Child("hooks"), t, raw.Hooks)
	errs = append(errs, hookErrs...)
	errs = append(errs, expressionTotal(path, t)...)
	return t, errs
}

// maxExpressionTotal bounds the text of every expression of a CanaryRoute
// together: a run compiles the expressions it has not seen before (about
// 2 ms a kilobyte), and a spec the XRD admits must still answer in a few
// milliseconds.
const maxExpressionTotal = 4096

// expressionTotal refuses a CanaryRoute whose gates and analysis templates
// hold more expression text than maxExpressionTotal together.
func expressionTotal(path *field.Path, t Traffic) field.ErrorList {
	total := 0
	for _, g := range t.Gates {
		total += len(g.SuccessWhen) + len(g.FailWhen)
	}
	for _, a := range t.Analysis {
		total += len(a.SuccessWhen) + len(a.FailWhen)
	}
	for _, m := range t.Metrics {
		total += len(m.SuccessWhen)
	}
	if total <= maxExpressionTotal {
		return nil
	}
	return field.ErrorList{field.Invalid(path, fmt.Sprintf("%d characters of expressions", total),
		fmt.Sprintf("the successWhen and failWhen expressions of gates, analysis and metrics may hold at most %d characters together", maxExpressionTotal))}
}

// parseMatches reads A/B or mirror matches of the route's kind: each adds
// header, query parameter or method conditions to a rule's own matches.
func parseMatches(path *field.Path, kind RouteKind, raw []fragment, what string) (*Matches, field.ErrorList) {
	if !hasItems(raw) {
		return nil, nil
	}
	var errs field.ErrorList
	m := &Matches{}
	switch kind {
	case KindHTTPRoute:
		errs = append(errs, decodeAndCheck(path, raw, &m.HTTP, admission.HTTPRouteMatches)...)
		for i, hm := range m.HTTP {
			// The path belongs to the rule: these matches only narrow the
			// rule's own matches to a group of requests.
			if hm.Path != nil {
				errs = append(errs, field.Forbidden(path.Index(i).Child("path"),
					what+" add header, query parameter and method conditions to each rule's matches; the path comes from the rule"))
			}
			errs = append(errs, noCondition(path.Index(i), len(hm.Headers)+len(hm.QueryParams) == 0 && hm.Method == nil, what)...)
		}
	case KindGRPCRoute:
		errs = append(errs, decodeAndCheck(path, raw, &m.GRPC, admission.GRPCRouteMatches)...)
		for i, gm := range m.GRPC {
			errs = append(errs, noCondition(path.Index(i), len(gm.Headers) == 0 && gm.Method == nil, what)...)
		}
	default:
		return nil, unsupported(path, true, what, kind)
	}
	if len(m.HTTP)+len(m.GRPC) == 0 {
		return nil, errs
	}
	return m, errs
}

// parseMirror reads a mirror: a percent (default 100) and, optionally,
// matches that limit it to some requests.
func parseMirror(path *field.Path, kind RouteKind, raw *rawMirror) (*Mirror, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	if kind != KindHTTPRoute && kind != KindGRPCRoute {
		return nil, unsupported(path, true, "request mirroring", kind)
	}
	var errs field.ErrorList
	m := &Mirror{Percent: percentMax}
	if raw.Percent != nil {
		m.Percent = *raw.Percent
		errs = append(errs, percentIn(path.Child("percent"), m.Percent)...)
	}
	var matchErrs field.ErrorList
	m.Matches, matchErrs = parseMatches(path.Child("matches"), kind, raw.Matches, whatMirror)
	return m, append(errs, matchErrs...)
}

// noCondition refuses a match that adds no condition: its companion rule
// would match exactly what its rule matches and, coming first, take every
// request.
func noCondition(path *field.Path, empty bool, what string) field.ErrorList {
	if !empty {
		return nil
	}
	if what == whatMirror {
		return field.ErrorList{field.Required(path, "a mirror match adds a header, query parameter or method condition; an empty one would mirror every request of its rule")}
	}
	return field.ErrorList{field.Required(path, "an A/B match adds a header, query parameter or method condition; an empty one would send every request to the canary")}
}

// What matches are for, in messages.
const (
	whatAB     = "A/B matches"
	whatMirror = "mirror matches"
)

func percentIn(path *field.Path, v int32) field.ErrorList {
	if v < 0 || v > percentMax {
		return field.ErrorList{field.Invalid(path, v, "must be a percent between 0 and 100")}
	}
	return nil
}

// weightIn checks a weight: the decoder reads only percents from 0 to 100
// with at most two decimals, so this holds a value built otherwise to the
// same rule.
func weightIn(path *field.Path, v percent.Percent) field.ErrorList {
	if !v.Valid() {
		return field.ErrorList{field.Invalid(path, json.Number(v.String()), percent.Invalid)}
	}
	return nil
}

func parseSteps(path *field.Path, kind RouteKind, raw []rawStep) ([]Step, field.ErrorList) {
	if len(raw) > maxSteps {
		return nil, field.ErrorList{field.TooMany(path, len(raw), maxSteps)}
	}
	var errs field.ErrorList
	steps := make([]Step, 0, len(raw))
	for i, r := range raw {
		p := path.Index(i)
		s := Step{Approval: r.Approval}
		if r.Weight == nil {
			errs = append(errs, field.Required(p.Child("weight"), "a step sets the canary percent"))
		} else {
			s.Weight = *r.Weight
			errs = append(errs, weightIn(p.Child("weight"), s.Weight)...)
			// A rollout only moves forward: a weight that goes down would
			// shift users back and forth between versions.
			if i > 0 && s.Weight.Less(steps[i-1].Weight) {
				errs = append(errs, field.Invalid(p.Child("weight"), json.Number(s.Weight.String()),
					fmt.Sprintf("must not be lower than the previous step's weight %s", steps[i-1].Weight)))
			}
		}
		if r.Pause != nil {
			d, durErrs := duration(p.Child("pause"), *r.Pause)
			errs = append(errs, durErrs...)
			s.Pause = d
		}
		if len(r.Analysis) > maxStepAnalysis {
			errs = append(errs, field.TooMany(p.Child("analysis"), len(r.Analysis), maxStepAnalysis))
		} else {
			for j, name := range r.Analysis {
				if slices.Contains(r.Analysis[:j], name) {
					errs = append(errs, field.Duplicate(p.Child("analysis").Index(j), name))
				}
			}
			s.Analysis = r.Analysis
		}
		var matchErrs, mirrorErrs field.ErrorList
		s.Matches, matchErrs = parseMatches(p.Child("matches"), kind, r.Matches, whatAB)
		s.Mirror, mirrorErrs = parseMirror(p.Child("mirror"), kind, r.Mirror)
		errs = append(errs, matchErrs...)
		errs = append(errs, mirrorErrs...)
		steps = append(steps, s)
	}
	return steps, errs
}

// cookiePathPattern is an RFC 6265 path-value that starts with "/": any
// character but controls and ";".
var cookiePathPattern = regexp.MustCompile(`^/[^;\x00-\x1f\x7f]{0,255}$`)

// SameSite values of a cookie.
var sameSiteValues = []string{"Strict", "Lax", "None"}

func parseAffinity(path *field.Path, kind RouteKind, raw *rawAffinity) (*SessionAffinity, field.ErrorList) {
	var errs field.ErrorList
	a := &SessionAffinity{CookieName: raw.CookieName, PrimaryCookieName: raw.PrimaryCookieName, Mode: raw.Mode, Attributes: CookieAttributes{Path: "/"}}
	if a.Mode == "" {
		a.Mode = AffinityCookie
	}
	switch {
	case a.Mode != AffinityCookie && a.Mode != AffinitySessionPersistence:
		errs = append(errs, field.NotSupported(path.Child("mode"), a.Mode, []AffinityMode{AffinityCookie, AffinitySessionPersistence}))
	case a.Mode == AffinityCookie && kind != KindHTTPRoute:
		errs = append(errs, unsupported(path, true, "session affinity with cookies of the function's (mode Cookie); set mode: SessionPersistence for the gateway's own", kind)...)
	case a.Mode == AffinitySessionPersistence && kind != KindHTTPRoute && kind != KindGRPCRoute:
		errs = append(errs, unsupported(path, true, "session persistence", kind)...)
	}
	if !cookieNamePattern.MatchString(raw.CookieName) {
		errs = append(errs, field.Invalid(path.Child("cookieName"), raw.CookieName, "must be 1 to 64 letters, digits, '.', '_' or '-'"))
	}
	if raw.PrimaryCookieName != "" {
		switch {
		case a.Mode == AffinitySessionPersistence:
			errs = append(errs, field.Forbidden(path.Child("primaryCookieName"),
				"with mode SessionPersistence the gateway keeps every session on the backend it chose, primary or canary: there is no primary cookie to set"))
		case !cookieNamePattern.MatchString(raw.PrimaryCookieName):
			errs = append(errs, field.Invalid(path.Child("primaryCookieName"), raw.PrimaryCookieName, "must be 1 to 64 letters, digits, '.', '_' or '-'"))
		case raw.PrimaryCookieName == raw.CookieName:
			errs = append(errs, field.Invalid(path.Child("primaryCookieName"), raw.PrimaryCookieName, "must differ from cookieName: each side sets a cookie of its own"))
		}
	}
	if at := raw.Attributes; at != nil {
		p := path.Child("attributes")
		if a.Mode == AffinitySessionPersistence {
			errs = append(errs, field.Forbidden(p, "with mode SessionPersistence the gateway writes its own cookie, whose attributes Gateway API does not set"))
		}
		var attrErrs field.ErrorList
		a.Attributes, attrErrs = parseCookieAttributes(p, at)
		errs = append(errs, attrErrs...)
	}
	if raw.MaxAge == nil {
		errs = append(errs, field.Required(path.Child("maxAge"), "say how long a client stays on its side, such as 24h"))
		return a, errs
	}
	d, durErrs := duration(path.Child("maxAge"), *raw.MaxAge)
	errs = append(errs, durErrs...)
	switch {
	case len(durErrs) > 0:
	case d < time.Second:
		errs = append(errs, field.Invalid(path.Child("maxAge"), *raw.MaxAge, "must be at least 1s: Max-Age counts whole seconds"))
	case d > maxSessionAge:
		errs = append(errs, field.Invalid(path.Child("maxAge"), *raw.MaxAge, "must be at most 99999h, the longest Gateway API duration"))
	}
	a.MaxAge = d.Truncate(time.Second)
	return a, errs
}

// parseCookieAttributes reads the attributes written into Set-Cookie.
func parseCookieAttributes(p *field.Path, at *rawAttributes) (CookieAttributes, field.ErrorList) {
	var errs field.ErrorList
	out := CookieAttributes{Path: "/", Domain: at.Domain, Secure: at.Secure, SameSite: at.SameSite}
	if at.Path != nil {
		out.Path = *at.Path
		if !cookiePathPattern.MatchString(*at.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), *at.Path, "must start with '/', hold at most 256 characters and no ';' or control characters"))
		}
	}
	if at.Domain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(at.Domain) {
			errs = append(errs, field.Invalid(p.Child("domain"), at.Domain, msg))
		}
	}
	switch {
	case at.SameSite == "":
	case !slices.Contains(sameSiteValues, at.SameSite):
		errs = append(errs, field.NotSupported(p.Child("sameSite"), at.SameSite, sameSiteValues))
	case at.SameSite == "None" && !at.Secure:
		errs = append(errs, field.Invalid(p.Child("sameSite"), at.SameSite, "SameSite=None needs secure: true: browsers refuse such a cookie otherwise"))
	}
	return out, errs
}

// maxSessionAge is the longest Gateway API duration (99999h), which a
// sessionPersistence's absoluteTimeout is.
const maxSessionAge = 99999 * time.Hour

func parseGates(path *field.Path, raw []rawGate) ([]Gate, field.ErrorList) {
	if len(raw) > maxGates {
		return nil, field.ErrorList{field.TooMany(path, len(raw), maxGates)}
	}
	var errs field.ErrorList
	gates := make([]Gate, 0, len(raw))
	for i, r := range raw {
		p := path.Index(i)
		g := Gate{
			APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, ConditionType: r.ConditionType,
			SuccessWhen: r.SuccessWhen, FailWhen: r.FailWhen, FailAfter: DefaultFailAfter,
		}
		if gv, err := schema.ParseGroupVersion(r.APIVersion); err != nil || gv.Version == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), r.APIVersion, "must be group/version, or version for the core group"))
		}
		if r.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), "a gate names the kind of its object"))
		}
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a gate names its object"))
		}
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			if r.Name != "" {
				errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
			}
		}
		switch {
		case r.ConditionType == "" && r.SuccessWhen == "":
			errs = append(errs, field.Required(p.Child("conditionType"), "a gate names the condition that must be True, such as Available, or sets successWhen"))
		case r.ConditionType != "" && r.SuccessWhen != "":
			errs = append(errs, field.Forbidden(p.Child("successWhen"), "set either conditionType or successWhen, not both"))
		case len(r.ConditionType) > maxConditionType:
			errs = append(errs, field.TooLong(p.Child("conditionType"), r.ConditionType, maxConditionType))
		}
		if r.FailWhen != "" && r.SuccessWhen == "" {
			errs = append(errs, field.Forbidden(p.Child("failWhen"), "failWhen goes with successWhen: a condition gate fails on its condition being False for failAfter"))
		}
		if r.FailAfter != nil {
			d, durErrs := duration(p.Child("failAfter"), *r.FailAfter)
			errs = append(errs, durErrs...)
			g.FailAfter = d
		}
		gates = append(gates, g)
	}
	return gates, errs
}

// parseControls reads the rollout controls: approval, promote, retry and the
// analysis templates that steps name.
func parseControls(path *field.Path, t Traffic, raw *rawTraffic) (Traffic, field.ErrorList) {
	var errs field.ErrorList
	progressiveOnly := func(p *field.Path, set bool, what string) {
		if set && len(t.Steps) == 0 {
			errs = append(errs, field.Forbidden(p, what+" acts on progressive rollouts: it needs traffic.steps"))
		}
	}
	if a := raw.Approval; a != nil {
		p := path.Child("approval")
		progressiveOnly(p, true, "approval")
		t.Approval = &Approval{Revision: a.Revision}
		errs = append(errs, revision(p.Child("revision"), a.Revision)...)
		if a.Step == nil {
			errs = append(errs, field.Required(p.Child("step"), "an approval names the last step it approves"))
		} else {
			t.Approval.Step = *a.Step
			if *a.Step < 0 || int(*a.Step) >= maxSteps {
				errs = append(errs, field.Invalid(p.Child("step"), *a.Step, fmt.Sprintf("must be a step index between 0 and %d", maxSteps-1)))
			}
		}
	}
	if pr := raw.Promote; pr != nil {
		p := path.Child("promote")
		progressiveOnly(p, true, "promote")
		t.Promote = &Promote{Revision: pr.Revision}
		errs = append(errs, revision(p.Child("revision"), pr.Revision)...)
	}
	if raw.Retry != nil {
		progressiveOnly(path.Child("retry"), true, "retry")
		t.Retry = *raw.Retry
		errs = append(errs, revision(path.Child("retry"), t.Retry)...)
	}

	if len(raw.Analysis) > maxAnalysisTemplates {
		return t, append(errs, field.TooMany(path.Child("analysis"), len(raw.Analysis), maxAnalysisTemplates))
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Analysis)) {
		p := path.Child("analysis").Key(name)
		a := raw.Analysis[name]
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, "an analysis name "+msg))
		}
		if len(name) > maxAnalysisName {
			errs = append(errs, field.TooLong(p, name, maxAnalysisName))
		}
		errs = append(errs, analysisTemplate(p.Child("template"), a.Template)...)
		if a.SuccessWhen == "" {
			errs = append(errs, field.Required(p.Child("successWhen"), "an analysis passes when this expression is true, such as object.status.succeeded > 0"))
		}
		t.Analysis = append(t.Analysis, AnalysisTemplate{Name: name, Template: a.Template, SuccessWhen: a.SuccessWhen, FailWhen: a.FailWhen})
	}
	for i, s := range t.Steps {
		for j, name := range s.Analysis {
			if _, ok := t.Template(name); !ok {
				errs = append(errs, field.NotFound(path.Child("steps").Index(i).Child("analysis").Index(j), name))
			}
		}
	}
	return t, errs
}

// analysisTemplate checks an analysis object: any kind (the Input says
// which), named and placed by the function.
func analysisTemplate(path *field.Path, tmpl map[string]any) field.ErrorList {
	if len(tmpl) == 0 {
		return field.ErrorList{field.Required(path, "an analysis composes an object, such as a batch/v1 Job")}
	}
	var errs field.ErrorList
	apiVersion, _ := tmpl["apiVersion"].(string)
	if gv, err := schema.ParseGroupVersion(apiVersion); err != nil || gv.Version == "" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), apiVersion, "must be group/version, or version for the core group"))
	}
	if kind, _ := tmpl["kind"].(string); kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), "an analysis object names its kind"))
	}
	switch meta := tmpl["metadata"].(type) {
	case nil:
	case map[string]any:
		// The function names and places the object, and Crossplane owns
		// it: a template's owner references or finalizers could keep it
		// from being deleted once its step has passed.
		for _, f := range slices.Sorted(maps.Keys(meta)) {
			switch f {
			case "labels", "annotations":
				errs = append(errs, stringMap(path.Child("metadata", f), meta[f], f == "labels")...)
			case "name", "generateName", "namespace":
				errs = append(errs, field.Forbidden(path.Child("metadata", f),
					"the function names analysis objects after the route, revision and step, in the route's namespace"))
			default:
				errs = append(errs, field.Forbidden(path.Child("metadata", f),
					"an analysis template's metadata may only hold labels and annotations: the function names the object and Crossplane owns it"))
			}
		}
	default:
		errs = append(errs, field.Invalid(path.Child("metadata"), field.OmitValueType{}, "must be an object"))
	}
	return errs
}

// stringMap checks a template's labels or annotations: strings, and for
// labels, valid label keys and values (the API server would refuse others,
// and the function adds its own labels beside them). Keys under
// names.OwnKeyPrefix are the function's: a template that wrote one would make an
// object the function labels as its own with the template's value, and
// then does not recognise.
func stringMap(path *field.Path, v any, labels bool) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be an object of strings")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, names.OwnKeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k),
				"labels and annotations under "+names.OwnKeyPrefix+" are the function's own: it labels the objects it composes with them and recognises them by them"))
			continue
		}
		val, ok := m[k].(string)
		if !ok {
			errs = append(errs, field.Invalid(path.Key(k), field.OmitValueType{}, "must be a string"))
			continue
		}
		if !labels {
			continue
		}
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(val) {
			errs = append(errs, field.Invalid(path.Key(k), val, msg))
		}
	}
	return errs
}

// revision checks a revision value: the pattern of canary.revision.
func revision(path *field.Path, v string) field.ErrorList {
	if !revisionPattern.MatchString(v) {
		return field.ErrorList{field.Invalid(path, v, "must be 1 to 63 letters, digits, '.', '_' or '-'")}
	}
	return nil
}

// Bounds of traffic.progressDeadline: shorter than a minute would fail a
// rollout before most gateways report; longer than a day is no deadline.
const (
	minProgressDeadline = time.Minute
	maxProgressDeadline = 24 * time.Hour
)

func progressDeadline(path *field.Path, s string, progressive bool) (time.Duration, field.ErrorList) {
	d, errs := duration(path, s)
	if len(errs) > 0 {
		return 0, errs
	}
	if d < minProgressDeadline || d > maxProgressDeadline {
		return 0, field.ErrorList{field.Invalid(path, s, "must be between 1m and 24h")}
	}
	if !progressive {
		return 0, field.ErrorList{field.Forbidden(path, "a progress deadline bounds how long a step may be held: it needs traffic.steps")}
	}
	return d, nil
}

// duration parses a Go duration such as 30s, 5m or 1h30m.
func duration(path *field.Path, s string) (time.Duration, field.ErrorList) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(path, s, "must be a duration such as 30s, 5m or 1h30m")}
	}
	if d < 0 {
		return 0, field.ErrorList{field.Invalid(path, s, "must not be negative")}
	}
	return d, nil
}
