package xr

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
		errs = append(errs, decodeLenient(path.Child("rollout"), v, &s.Rollout)...)
	}
	if v, ok := raw["route"]; ok && v != nil {
		errs = append(errs, decodeLenient(path.Child("route"), v, &s.Route)...)
	}
	if len(errs) > 0 {
		return Status{}, errs
	}
	return s, nil
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
		return field.ErrorList{decodeError(path, b, err)}
	}
	return nil
}
