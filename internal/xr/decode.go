package xr

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/decode"
)

// specKeys are the spec fields that the function reads, by JSON name. Other
// spec fields (Crossplane's own, such as spec.crossplane or
// spec.compositionRef, or a platform team's additions for other functions in
// the pipeline) are none of its business and are ignored.
var specKeys = jsonNames(reflect.TypeFor[rawSpec]())

// sortedSpecKeys are the keys of specKeys, sorted.
var sortedSpecKeys = slices.Sorted(maps.Keys(specKeys))

func jsonNames(t reflect.Type) map[string]int {
	names := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = i
	}
	return names
}

// decodeSpec decodes the spec fields the function reads, strictly: an
// unknown or duplicate field inside them, or a value of the wrong type, is an
// error naming the field, so a typo never silently turns into a default.
func decodeSpec(path *field.Path, spec map[string]any) (*rawSpec, field.ErrorList) {
	out := &rawSpec{}
	v := reflect.ValueOf(out).Elem()
	var errs field.ErrorList
	// In a stable order, and only the fields the function reads: a spec
	// may hold any number of others.
	for _, k := range sortedSpecKeys {
		raw, ok := spec[k]
		if !ok {
			continue
		}
		i := specKeys[k]
		b, err := json.Marshal(raw)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child(k), field.OmitValueType{}, err.Error()))
			continue
		}
		errs = append(errs, decode.Strict(path.Child(k), b, v.Field(i).Addr().Interface())...)
	}
	return out, errs
}
