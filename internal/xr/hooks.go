package xr

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
)

// parseHooks reads traffic.hooks, with their defaults. That each names a
// webhook of the function's Input is checked where the Input is known
// (package compose).
func parseHooks(path *field.Path, t Traffic, raw []rawHook) (Traffic, field.ErrorList) {
	if len(raw) == 0 {
		return t, nil
	}
	var errs field.ErrorList
	if len(t.Steps) == 0 {
		errs = append(errs, field.Forbidden(path, "hooks are called at a progressive rollout's moments: they need traffic.steps"))
	}
	if len(raw) > MaxHooks {
		return t, append(errs, field.TooMany(path, len(raw), MaxHooks))
	}
	seen := map[string]bool{}
	for i, rh := range raw {
		p := path.Index(i)
		if seen[rh.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), rh.Name))
		}
		seen[rh.Name] = true
		h, hookErrs := parseHook(p, rh)
		errs = append(errs, hookErrs...)
		t.Hooks = append(t.Hooks, h)
	}
	return t, errs
}

// parseHook reads one of traffic.hooks.
func parseHook(p *field.Path, rh rawHook) (Hook, field.ErrorList) {
	var errs field.ErrorList
	h := Hook{Name: rh.Name, Webhook: rh.Webhook, Type: hooks.Type(rh.Type)}
	for _, msg := range validation.IsDNS1123Label(rh.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), rh.Name, "must be a DNS label: "+msg))
	}
	if len(rh.Name) > maxHookName {
		errs = append(errs, field.TooLong(p.Child("name"), rh.Name, maxHookName))
	}
	for _, msg := range validation.IsDNS1123Label(rh.Webhook) {
		errs = append(errs, field.Invalid(p.Child("webhook"), rh.Webhook, "must name a webhook of the function's Input, a DNS label: "+msg))
	}
	if !slices.Contains(hooks.Types, h.Type) {
		valid := make([]string, len(hooks.Types))
		for i, t := range hooks.Types {
			valid[i] = string(t)
		}
		errs = append(errs, field.NotSupported(p.Child("type"), rh.Type, valid))
	}
	if len(rh.Metadata) > maxHookMetadata {
		errs = append(errs, field.TooMany(p.Child("metadata"), len(rh.Metadata), maxHookMetadata))
	}
	for _, k := range slices.Sorted(maps.Keys(rh.Metadata)) {
		if len(k) > maxHookMetadataKey {
			errs = append(errs, field.TooLong(p.Child("metadata").Key(k[:maxHookMetadataKey]), k, maxHookMetadataKey))
		}
		if v := rh.Metadata[k]; len(v) > maxHookMetadataValue {
			errs = append(errs, field.TooLong(p.Child("metadata").Key(k), v, maxHookMetadataValue))
		}
	}
	if len(rh.Metadata) > 0 {
		h.Metadata = maps.Clone(rh.Metadata)
	}
	var intervalErrs, limitErrs field.ErrorList
	h.Interval, intervalErrs = parseInterval(p.Child("interval"), rh.Interval, DefaultHookInterval)
	h.FailureLimit, limitErrs = parseFailureLimit(p.Child("failureLimit"), rh.FailureLimit)
	errs = append(append(errs, intervalErrs...), limitErrs...)
	return h, errs
}

// HookTransition names a moment of a rollout for the hooks' records: the
// revision, the attempt (a retry's value) and the moment.
func HookTransition(revision, attempt, moment string) string {
	return hookRollout(revision, attempt) + moment
}

// hookRollout is what every transition of a rollout (a revision's
// attempt) starts with.
func hookRollout(revision, attempt string) string {
	if attempt != "" {
		return revision + "@" + attempt + "/"
	}
	return revision + "/"
}

// HookRecords are status.rollout.hooks by hook name, the newest of a name
// when a status (written by hand) holds several; only the records of the
// status's own rollout (its revision and attempt): a revision rolled out
// again (v2, v3, then v2) is a new rollout whose hooks are asked anew, not
// answered by what they answered the earlier one.
func HookRecords(s *RolloutStatus) map[string]HookStatus {
	if s == nil || len(s.Hooks) == 0 {
		return nil
	}
	out := make(map[string]HookStatus, len(s.Hooks))
	current := hookRollout(s.Revision, s.Attempt)
	for _, h := range s.Hooks {
		if !strings.HasPrefix(h.Transition, current) {
			continue
		}
		h, ok := h.Admitted()
		if !ok {
			continue
		}
		if old, ok := out[h.Name]; !ok || old.Time.Before(&h.Time) {
			out[h.Name] = h
		}
	}
	return out
}

// Admitted is the record bounded as the API server admits it, and false
// for a record the XRD would refuse whatever its bounds (written by hand,
// or by another pipeline step): it is no record, and writing it back would
// keep every later status from being written.
func (h HookStatus) Admitted() (HookStatus, bool) {
	if h.Result != HookSucceeded && h.Result != HookFailed || h.Name == "" {
		return HookStatus{}, false
	}
	return h.Bounded(), true
}

// Bounded is the record as the API server admits it.
func (h HookStatus) Bounded() HookStatus {
	// Within the bound, as the XRD counts it (fielderr.Cut adds its note
	// beyond the bound).
	h.Name = fielderr.Truncate(h.Name, maxHookName, fielderr.Characters, nil)
	h.Transition = fielderr.Truncate(h.Transition, maxHookTransition, fielderr.Characters, nil)
	h.Reason = fielderr.Truncate(h.Reason, MaxStatusValue, fielderr.Characters, nil)
	h.Status = min(max(h.Status, 0), 999)
	h.Failures = min(max(h.Failures, 0), maxHookFailures)
	h.Time = clampTimeValue(h.Time)
	return h
}
