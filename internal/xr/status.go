package xr

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/decode"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// A Condition is one of the XR's conditions, as the function sets it.
type Condition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// parseStatus reads the status the function wrote on an earlier run. The
// function owns these fields, but a user (or a bad restore) can still write
// anything there, so a status that does not decode is an error naming the
// field, rather than a silent restart of the rollout.
func parseStatus(obj map[string]any) (Status, field.ErrorList) {
	var s Status
	path := field.NewPath("status")
	v, found := obj["status"]
	if !found || v == nil {
		return s, nil
	}
	raw, ok := v.(map[string]any)
	if !ok {
		return s, field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be an object")}
	}
	// Not strict: fields that a newer release of the function may add must
	// not break an older one during a rollback. Other status fields
	// (conditions, Crossplane's own) are none of the parser's business.
	var errs field.ErrorList
	if v, ok := raw["rollout"]; ok && v != nil {
		errs = append(errs, decodeLenient(path.Child("rollout"), normalizeTimes(v), &s.Rollout)...)
		statusWeights(s.Rollout)
	}
	if v, ok := raw["route"]; ok && v != nil {
		errs = append(errs, decodeLenient(path.Child("route"), normalizeRouteTimes(v), &s.Route)...)
	}
	// status.routes as status.route, each entry by its index: the runs
	// after the one that wrote it reuse each route's versions from it.
	if v, ok := raw["routes"]; ok && v != nil {
		routes, routeErrs := parseRouteStatuses(path.Child("routes"), v)
		s.Routes = routes
		errs = append(errs, routeErrs...)
	}
	if v, ok := raw["release"]; ok && v != nil {
		errs = append(errs, decodeLenient(path.Child("release"), normalizeReleaseTimes(v), &s.Release)...)
	}
	if len(errs) > 0 {
		return Status{}, errs
	}
	return s, nil
}

// normalizeReleaseTimes writes the times of status.release as Go parses
// them (see normalizeTimes), in a copy.
func normalizeReleaseTimes(v any) any {
	release, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := maps.Clone(release)
	upper := func(m any, key string) any {
		obj, ok := m.(map[string]any)
		if !ok {
			return m
		}
		if t, ok := obj[key].(string); ok {
			obj = maps.Clone(obj)
			obj[key] = strings.ToUpper(t)
		}
		return obj
	}
	out["stable"] = upper(out["stable"], "since")
	out["retiring"] = upper(out["retiring"], "at")
	out["canaryMove"] = upper(out["canaryMove"], "at")
	if list, ok := out["history"].([]any); ok {
		history := make([]any, 0, len(list))
		for _, item := range list {
			history = append(history, upper(item, "succeededAt"))
		}
		out["history"] = history
	}
	for _, k := range []string{"stable", "retiring", "canaryMove"} {
		if out[k] == nil {
			delete(out, k)
		}
	}
	return out
}

// parseRouteStatuses reads status.routes: a list of what status.route
// holds, each entry decoded as status.route is.
func parseRouteStatuses(path *field.Path, v any) ([]RouteStatus, field.ErrorList) {
	list, ok := v.([]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be a list")}
	}
	out := make([]RouteStatus, 0, len(list))
	var errs field.ErrorList
	for i, item := range list {
		var rs *RouteStatus
		if itemErrs := decodeLenient(path.Index(i), normalizeRouteTimes(item), &rs); len(itemErrs) > 0 {
			errs = append(errs, itemErrs...)
			continue
		}
		if rs != nil {
			out = append(out, *rs)
		}
	}
	return out, errs
}

// normalizeRouteTimes writes status.route.versions.checkedAt as Go parses
// it (see normalizeTimes). It returns a copy; the XR is never changed.
func normalizeRouteTimes(v any) any {
	route, ok := v.(map[string]any)
	if !ok {
		return v
	}
	versions, ok := route["versions"].(map[string]any)
	if !ok {
		return v
	}
	t, ok := versions["checkedAt"].(string)
	if !ok {
		return v
	}
	out, vs := maps.Clone(route), maps.Clone(versions)
	vs["checkedAt"] = strings.ToUpper(t)
	out["versions"] = vs
	return out
}

// normalizeTimes writes the times of status.rollout as Go parses them: the
// date-time format the API server checks accepts a lowercase t and z
// (2026-12-02t10:00:00z), which RFC 3339 allows and Go's parser does not.
// Without this, a status the API server admitted would be one no run could
// read. It returns a copy; the XR is never changed.
func normalizeTimes(v any) any {
	rollout, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := maps.Clone(rollout)
	// The sequence is internal/freshness's, which reads it from the request
	// as a number, leniently: one of another type (under an XRD without its
	// bounds) must not make every run a Fatal, which writes no status.
	delete(out, "sequence")
	for _, k := range []string{"stepStartedAt", "nextStepAt", "bakeStartedAt"} {
		if t, ok := out[k].(string); ok {
			out[k] = strings.ToUpper(t)
		}
	}
	if list, ok := out["analysis"].([]any); ok {
		out["analysis"] = normalizeListTimes(list)
	}
	if list, ok := out["metrics"].([]any); ok {
		metrics := make([]any, 0, len(list))
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				if ms, ok := m["measurements"].([]any); ok {
					m = maps.Clone(m)
					m["measurements"] = normalizeListTimes(ms)
				}
				item = m
			}
			metrics = append(metrics, item)
		}
		out["metrics"] = metrics
	}
	return out
}

// normalizeListTimes writes the time of each item of a list as Go parses
// it (see normalizeTimes), in a copy.
func normalizeListTimes(list []any) []any {
	out := make([]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if t, ok := m["time"].(string); ok {
				m = maps.Clone(m)
				m["time"] = strings.ToUpper(t)
			}
			item = m
		}
		out = append(out, item)
	}
	return out
}

// decodeLenient decodes a value of the unstructured object into a typed
// one, ignoring unknown fields. An object is decoded field by field, so that
// an error names the field (status.rollout.stepStartedAt) even when the
// decoder's own error does not, as with a time that does not parse.
func decodeLenient[T any](path *field.Path, v any, into **T) field.ErrorList {
	obj, ok := v.(map[string]any)
	if !ok {
		return decodeValue(path, v, into)
	}
	out := new(T)
	rv := reflect.ValueOf(out).Elem()
	names := jsonNames(rv.Type())
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		i, known := names[k]
		if !known {
			continue
		}
		errs = append(errs, decodeValue(path.Child(k), obj[k], rv.Field(i).Addr().Interface())...)
	}
	if len(errs) > 0 {
		return errs
	}
	*into = out
	return nil
}

// decodeValue decodes one JSON value into a typed one.
func decodeValue(path *field.Path, v, into any) field.ErrorList {
	b, err := json.Marshal(v)
	if err != nil {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, err.Error())}
	}
	if err := json.Unmarshal(b, into); err != nil {
		return field.ErrorList{decode.Error(path, b, err)}
	}
	return nil
}

// Times a status may hold: what the date-time format admits, four-digit
// years.
var (
	minStatusTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxStatusTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// MaxSequence is the largest status.rollout.sequence, the XRD's maximum:
// the largest integer a JSON number (a float64, in the function's requests)
// holds exactly. A counter there stays there.
const MaxSequence = 1<<53 - 1

// Bounded is the status as the API server admits it, whatever the run
// observed: the message cut to MaxStatusMessage characters, the times within
// the years date-time admits, the sequence within 0..MaxSequence.
func (s RolloutStatus) Bounded() RolloutStatus {
	s.Message = fielderr.Truncate(s.Message, MaxStatusMessage, fielderr.Characters, nil)
	s.Sequence = min(max(s.Sequence, 0), MaxSequence)
	s.StepStartedAt = clampTime(s.StepStartedAt)
	s.NextStepAt = clampTime(s.NextStepAt)
	s.BakeStartedAt = clampTime(s.BakeStartedAt)
	if s.Metrics != nil {
		metrics := make([]MetricStatus, 0, min(len(s.Metrics), MaxMetrics))
		for _, m := range s.Metrics[:min(len(s.Metrics), MaxMetrics)] {
			m.Measurements = slices.Clone(m.Measurements[max(0, len(m.Measurements)-MaxMeasurements):])
			for i := range m.Measurements {
				ms := &m.Measurements[i]
				ms.Reason = fielderr.Truncate(ms.Reason, MaxStatusValue, fielderr.Characters, nil)
				ms.Value, ms.Baseline = fielderr.Truncate(ms.Value, MaxMeasurementValue, fielderr.Characters, nil), fielderr.Truncate(ms.Baseline, MaxMeasurementValue, fielderr.Characters, nil)
				ms.Time = clampTimeValue(ms.Time)
			}
			metrics = append(metrics, m)
		}
		s.Metrics = metrics
	}
	if s.Hooks != nil {
		hooks := make([]HookStatus, 0, min(len(s.Hooks), MaxHooks))
		for _, h := range s.Hooks[:min(len(s.Hooks), MaxHooks)] {
			hooks = append(hooks, h.Bounded())
		}
		s.Hooks = hooks
	}
	return s
}

// Bounded is the route status as the API server admits it: each parent's
// reason, which the gateway wrote, cut to its limit of characters.
func (s RouteStatus) Bounded() RouteStatus {
	parents := make([]ParentStatus, 0, len(s.Parents))
	for _, p := range s.Parents {
		p.Reason = fielderr.Truncate(p.Reason, maxParentReason, fielderr.Characters, nil)
		parents = append(parents, p)
	}
	if s.Parents != nil {
		s.Parents = parents
	}
	return s
}

func clampTime(t *metav1.Time) *metav1.Time {
	switch {
	case t == nil || t.IsZero():
		// A zero time is written as null: the same as no time at all.
		return nil
	case t.Time.Before(minStatusTime):
		return &metav1.Time{Time: minStatusTime}
	case t.After(maxStatusTime):
		return &metav1.Time{Time: maxStatusTime}
	default:
		return t
	}
}

// clampTimeValue is clampTime for a time that is always written.
func clampTimeValue(t metav1.Time) metav1.Time {
	if c := clampTime(&t); c != nil {
		return *c
	}
	return t
}

// statusWeights reads the weights of status.rollout as the weights they
// are nearest to (see percent.Nearest): a record written by hand, forged,
// or with more decimals than a weight has is no reason to stop a rollout,
// and one out of range was always clamped.
func statusWeights(r *RolloutStatus) {
	if r == nil {
		return
	}
	r.CanaryWeight, r.PrimaryWeight = r.CanaryWeight.Nearest(), r.PrimaryWeight.Nearest()
}
