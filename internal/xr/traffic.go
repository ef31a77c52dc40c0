package xr

import (
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
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
		errs = append(errs, percent(path.Child("weight"), *raw.Weight)...)
		if len(raw.Steps) > 0 {
			errs = append(errs, field.Forbidden(path.Child("steps"), "set either weight (manual) or steps (progressive), not both"))
		}
	}

	var stepErrs field.ErrorList
	t.Steps, stepErrs = parseSteps(path.Child("steps"), raw.Steps)
	errs = append(errs, stepErrs...)

	switch kind {
	case KindHTTPRoute:
		errs = append(errs, decodeAndCheck(path.Child("matches"), raw.Matches, &t.HTTPMatches, admission.HTTPRouteMatches)...)
		for i, m := range t.HTTPMatches {
			// The path belongs to the rule: an A/B match only narrows
			// the rule's own matches to a group of users.
			if m.Path != nil {
				errs = append(errs, field.Forbidden(path.Child("matches").Index(i).Child("path"),
					"A/B matches add header, query parameter and method conditions to each rule's matches; the path comes from the rule"))
			}
			errs = append(errs, noCondition(path.Child("matches").Index(i), len(m.Headers)+len(m.QueryParams) == 0 && m.Method == nil)...)
		}
	case KindGRPCRoute:
		errs = append(errs, decodeAndCheck(path.Child("matches"), raw.Matches, &t.GRPCMatches, admission.GRPCRouteMatches)...)
		for i, m := range t.GRPCMatches {
			errs = append(errs, noCondition(path.Child("matches").Index(i), len(m.Headers) == 0 && m.Method == nil)...)
		}
	default:
		errs = append(errs, unsupported(path.Child("matches"), hasItems(raw.Matches), "A/B matches", kind)...)
	}

	if raw.Mirror != nil {
		errs = append(errs, unsupported(path.Child("mirror"), kind == KindTLSRoute || kind == KindTCPRoute, "request mirroring", kind)...)
		t.Mirror = &Mirror{Percent: percentMax}
		if raw.Mirror.Percent != nil {
			t.Mirror.Percent = *raw.Mirror.Percent
			errs = append(errs, percent(path.Child("mirror", "percent"), t.Mirror.Percent)...)
		}
	}

	if raw.SessionAffinity != nil {
		errs = append(errs, unsupported(path.Child("sessionAffinity"), kind != KindHTTPRoute, "session affinity", kind)...)
		var affErrs field.ErrorList
		t.Affinity, affErrs = parseAffinity(path.Child("sessionAffinity"), raw.SessionAffinity)
		errs = append(errs, affErrs...)
	}

	var gateErrs field.ErrorList
	t.Gates, gateErrs = parseGates(path.Child("gates"), raw.Gates)
	errs = append(errs, gateErrs...)
	return t, errs
}

// noCondition refuses an A/B match that adds no condition: its companion
// rule would match exactly what its rule matches and, coming first, take
// every request for the canary.
func noCondition(path *field.Path, empty bool) field.ErrorList {
	if !empty {
		return nil
	}
	return field.ErrorList{field.Required(path, "an A/B match adds a header, query parameter or method condition; an empty one would send every request to the canary")}
}

func percent(path *field.Path, v int32) field.ErrorList {
	if v < 0 || v > percentMax {
		return field.ErrorList{field.Invalid(path, v, "must be a percent between 0 and 100")}
	}
	return nil
}

func parseSteps(path *field.Path, raw []rawStep) ([]Step, field.ErrorList) {
	if len(raw) > maxSteps {
		return nil, field.ErrorList{field.TooMany(path, len(raw), maxSteps)}
	}
	var errs field.ErrorList
	steps := make([]Step, 0, len(raw))
	for i, r := range raw {
		p := path.Index(i)
		var s Step
		if r.Weight == nil {
			errs = append(errs, field.Required(p.Child("weight"), "a step sets the canary percent"))
		} else {
			s.Weight = *r.Weight
			errs = append(errs, percent(p.Child("weight"), s.Weight)...)
			// A rollout only moves forward: a weight that goes down would
			// shift users back and forth between versions.
			if i > 0 && s.Weight < steps[i-1].Weight {
				errs = append(errs, field.Invalid(p.Child("weight"), s.Weight,
					fmt.Sprintf("must not be lower than the previous step's weight %d", steps[i-1].Weight)))
			}
		}
		if r.Pause != nil {
			d, durErrs := duration(p.Child("pause"), *r.Pause)
			errs = append(errs, durErrs...)
			s.Pause = d
		}
		steps = append(steps, s)
	}
	return steps, errs
}

func parseAffinity(path *field.Path, raw *rawAffinity) (*SessionAffinity, field.ErrorList) {
	var errs field.ErrorList
	a := &SessionAffinity{CookieName: raw.CookieName}
	if !cookieNamePattern.MatchString(raw.CookieName) {
		errs = append(errs, field.Invalid(path.Child("cookieName"), raw.CookieName, "must be 1 to 64 letters, digits, '.', '_' or '-'"))
	}
	if raw.MaxAge == nil {
		errs = append(errs, field.Required(path.Child("maxAge"), "say how long a client stays on the canary, such as 24h"))
		return a, errs
	}
	d, durErrs := duration(path.Child("maxAge"), *raw.MaxAge)
	errs = append(errs, durErrs...)
	if len(durErrs) == 0 && d < time.Second {
		errs = append(errs, field.Invalid(path.Child("maxAge"), *raw.MaxAge, "must be at least 1s: Max-Age counts whole seconds"))
	}
	a.MaxAge = d
	return a, errs
}

func parseGates(path *field.Path, raw []rawGate) ([]Gate, field.ErrorList) {
	if len(raw) > maxGates {
		return nil, field.ErrorList{field.TooMany(path, len(raw), maxGates)}
	}
	var errs field.ErrorList
	gates := make([]Gate, 0, len(raw))
	for i, r := range raw {
		p := path.Index(i)
		g := Gate{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, ConditionType: r.ConditionType, FailAfter: DefaultFailAfter}
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
		case r.ConditionType == "":
			errs = append(errs, field.Required(p.Child("conditionType"), "a gate names the condition that must be True, such as Available"))
		case len(r.ConditionType) > maxConditionType:
			errs = append(errs, field.TooLong(p.Child("conditionType"), r.ConditionType, maxConditionType))
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
