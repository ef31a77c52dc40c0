// Package decode decodes JSON into typed values strictly, with errors that
// name the offending field in the terms of the object the user wrote
// (spec.traffic.steps[1].weight, allowedGateKinds[0].kind), not in the
// decoder's: a typo or a value of the wrong type is found without reading
// the whole object back.
package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Strict decodes JSON into a typed value, rejecting unknown and
// duplicate fields. Each error names the offending field below path (such as
// spec.traffic.steps[1].weight), so that the user finds the typo or the
// value of the wrong type without reading the whole object back.
func Strict(path *field.Path, data []byte, into any) field.ErrorList {
	strict, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return field.ErrorList{Error(path, data, err)}
	}
	errs := make(field.ErrorList, 0, len(strict))
	for _, e := range strict {
		var fe sigsjson.FieldError
		if !errors.As(e, &fe) {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, e.Error()))
			continue
		}
		what, _, _ := strings.Cut(e.Error(), " \"") // "unknown field" or "duplicate field"
		errs = append(errs, field.Invalid(AppendJSONPath(path, fe.FieldPath()), field.OmitValueType{}, what))
	}
	return errs
}

// Object decodes an object as the API server returned it (the JSON types
// Crossplane hands a function: float64 numbers, maps, lists) into its typed
// value, as runtime.DefaultUnstructuredConverter would, but refuses a value
// that does not fit its typed field: the converter wraps an integer beyond
// the field's range silently (4294967376 in an int32 becomes 80), so what is
// decoded would not be what was observed. Unknown fields are ignored, as by
// the converter. The error names the field with its list indexes.
func Object(obj map[string]any, into any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	err = sigsjson.UnmarshalCaseSensitivePreserveInts(data, into)
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) {
		return err
	}
	// The data is the marshalled object, so the offset of the error finds
	// the value; the decoder's own field path names embedded structs
	// (HTTPBackendRef's BackendRef) that JSON does not have.
	at, _, ok := jsonPathAt(data, te.Offset)
	if !ok {
		at = Error(nil, data, err).Field
	}
	if number, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKind(te.Type) == "an integer" {
		return errors.Errorf("%s: %s does not fit its type, %s", at, number, te.Type)
	}
	return errors.Errorf("%s: must be %s, not %s", at, jsonKind(te.Type), te.Value)
}

// Typed decodes an object into the empty typed object that newFor returns
// for its apiVersion and kind, as Object does; an object of a kind newFor
// does not know (nil) is an error naming it.
func Typed(obj map[string]any, newFor func(schema.GroupVersionKind) runtime.Object) (runtime.Object, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read the observed %s", kind)
	}
	into := newFor(gv.WithKind(kind))
	if into == nil {
		return nil, errors.Errorf("cannot read the observed object: %q %q is not a kind the function composes", apiVersion, kind)
	}
	if err := Object(obj, into); err != nil {
		return nil, errors.Wrapf(err, "cannot read the observed %s", kind)
	}
	return into, nil
}

// AsComposed is an observed object as a function composes it: its
// apiVersion, kind, name, namespace and spec, without its status or the
// metadata that the API server and other controllers own (labels, owner
// references, uid, generation). The object itself is not changed.
func AsComposed(obj map[string]any) map[string]any {
	out := make(map[string]any, 4)
	for _, k := range []string{"apiVersion", "kind", "spec"} {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		identity := make(map[string]any, 2)
		for _, k := range []string{"name", "namespace"} {
			if v, ok := meta[k]; ok {
				identity[k] = v
			}
		}
		out["metadata"] = identity
	}
	return out
}

// Error turns a decoding error into one that names the field whose
// value has the wrong type, and says which type it needs in JSON terms.
func Error(path *field.Path, data []byte, err error) *field.Error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return field.Invalid(path, field.OmitValueType{}, strings.TrimPrefix(err.Error(), "json: "))
	}
	// The decoder names the field without list indexes (nothing at all for
	// an element of a top-level list); the offset of the error finds the
	// element too, when it agrees. The decoder's field path stops at a map;
	// the value's own path goes on with the map key.
	at := AppendJSONPath(path, te.Field)
	if te.Offset == 0 && te.Value != "" {
		// A type's own UnmarshalJSON (percent.Percent's) cannot know where
		// its value is: the decoder names the field without list indexes.
		// The value is the first one at that field with that text, since
		// the decoder stops at the first it refuses.
		if p, ok := jsonPathOf(data, te.Field, strings.TrimPrefix(te.Value, "number ")); ok {
			at = AppendJSONPath(path, p)
		}
	} else if p, names, ok := jsonPathAt(data, te.Offset); ok && (names == te.Field || strings.HasPrefix(names, te.Field+".") || te.Field == "") {
		at = AppendJSONPath(path, p)
	}
	if number, ok := strings.CutPrefix(te.Value, "number "); ok && described(te.Type) {
		// The value as written, unquoted: "Invalid value: 0.005: must be a
		// percent from 0 to 100 with at most two decimals".
		return field.Invalid(at, json.Number(number), "must be "+jsonKind(te.Type))
	}
	return field.Invalid(at, field.OmitValueType{}, fmt.Sprintf("must be %s, not %s", jsonKind(te.Type), te.Value))
}

// describer is a type that says what its values must be, for the errors of
// those it refuses (percent.Percent: "a percent from 0 to 100 with at most
// two decimals").
type describer interface{ Describe() string }

// described reports whether a type says what its values must be.
func described(t reflect.Type) bool {
	return t != nil && (t.Implements(describerType) || reflect.PointerTo(t).Implements(describerType))
}

var describerType = reflect.TypeFor[describer]()

// jsonKind names the JSON kind of value that a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	if described(t) {
		return reflect.Zero(t).Interface().(describer).Describe()
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "of type " + t.String()
	}
}

// AppendJSONPath appends a decoder's field path ("steps[0].pause",
// "[1].path.type") to path.
func AppendJSONPath(path *field.Path, jsonPath string) *field.Path {
	for jsonPath != "" {
		if strings.HasPrefix(jsonPath, "[") {
			end := strings.IndexByte(jsonPath, ']')
			if i, err := strconv.Atoi(jsonPath[1:max(end, 1)]); end > 0 && err == nil {
				path = path.Index(i)
				jsonPath = strings.TrimPrefix(jsonPath[end+1:], ".")
				continue
			}
		}
		end := strings.IndexAny(jsonPath[1:], ".[") + 1
		if end == 0 {
			end = len(jsonPath)
		}
		path = path.Child(jsonPath[:end])
		jsonPath = strings.TrimPrefix(jsonPath[end:], ".")
	}
	return path
}

// jsonPathOf returns the path, with list indexes, of the first scalar
// value at the field names (without indexes, "steps.weight", as the decoder
// names a field) whose JSON text is text ("0.005"; "string", "bool",
// "object" or "array" for any of those).
func jsonPathOf(data []byte, names, text string) (string, bool) {
	found, ok := "", false
	walkJSON(data, func(full, n string, tok json.Token, _ int64) bool {
		if n != names {
			return true
		}
		written := ""
		switch v := tok.(type) {
		case json.Number:
			written = v.String()
		case string:
			written = "string"
		case bool:
			written = "bool"
		case json.Delim:
			// The value opens here: an object or a list where a scalar
			// was expected.
			switch v {
			case '{':
				written = "object"
			case '[':
				written = "array"
			}
		}
		if written == text {
			found, ok = full, true
			return false
		}
		return true
	})
	return found, ok
}

// jsonPathAt returns the path of the JSON value that ends at or after
// offset (how the decoder reports where a type error is), with list indexes
// ("steps[1].weight"), and the same path without indexes ("steps.weight"),
// as the decoder names the field.
func jsonPathAt(data []byte, offset int64) (string, string, bool) {
	var full, names string
	ok := false
	walkJSON(data, func(f, n string, _ json.Token, end int64) bool {
		if end < offset {
			return true
		}
		full, names, ok = f, n, true
		return false
	})
	return full, names, ok
}

// walkJSON calls visit with the path of each value (with list indexes and
// without), its first token and the offset where that token ends, in the
// order of the text, until visit returns false or the data ends.
func walkJSON(data []byte, visit func(full, names string, tok json.Token, end int64) bool) {
	type frame struct {
		list      bool
		index     int
		key       string
		expectKey bool
	}
	var stack []frame
	next := func() { // A value ended: advance the container.
		if n := len(stack); n > 0 {
			if stack[n-1].list {
				stack[n-1].index++
			} else {
				stack[n-1].expectKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		n := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:n-1]
			next()
			continue
		}
		if n > 0 && !stack[n-1].list && stack[n-1].expectKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].expectKey = false
			continue
		}
		var full, names strings.Builder
		for _, f := range stack {
			if f.list {
				fmt.Fprintf(&full, "[%d]", f.index)
				continue
			}
			if names.Len() > 0 {
				names.WriteByte('.')
			}
			names.WriteString(f.key)
			if full.Len() > 0 {
				full.WriteByte('.')
			}
			full.WriteString(f.key)
		}
		if !visit(full.String(), names.String(), tok, dec.InputOffset()) {
			return
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{list: true})
		default:
			next()
		}
	}
}
