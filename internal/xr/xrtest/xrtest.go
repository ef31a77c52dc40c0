// Package xrtest is test support for the packages that validate a
// CanaryRoute and the function's Input: it compares field errors by what a
// test pins of them (the field, the type and a phrase of the detail), so that
// tests say which field an error names without copying whole messages.
//
// Only _test.go files import it.
package xrtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// FieldErr is what a test pins of a field.Error: the field it names, its
// type, and a phrase that its detail contains.
type FieldErr struct {
	Field  string
	Type   field.ErrorType
	Phrase string
}

func (e FieldErr) String() string { return e.Field + ": " + string(e.Type) + ": " + e.Phrase }

// Invalid is a wanted field.Invalid error.
func Invalid(path, phrase string) FieldErr {
	return FieldErr{Field: path, Type: field.ErrorTypeInvalid, Phrase: phrase}
}

// Required is a wanted field.Required error.
func Required(path, phrase string) FieldErr {
	return FieldErr{Field: path, Type: field.ErrorTypeRequired, Phrase: phrase}
}

// Forbidden is a wanted field.Forbidden error.
func Forbidden(path, phrase string) FieldErr {
	return FieldErr{Field: path, Type: field.ErrorTypeForbidden, Phrase: phrase}
}

// TooMany is a wanted field.TooMany error with its limit.
func TooMany(path string, limit int) FieldErr {
	return FieldErr{Field: path, Type: field.ErrorTypeTooMany, Phrase: fmt.Sprintf("at most %d", limit)}
}

// NotSupported is a wanted field.NotSupported error for a value.
func NotSupported(path, value string) FieldErr {
	return FieldErr{Field: path, Type: field.ErrorTypeNotSupported, Phrase: fmt.Sprintf("%q", value)}
}

// FieldErrors flattens an error of field.Errors (an aggregate, a list, or
// one) into the field.Errors it holds. Anything else fails the test: every
// error of these packages names a field.
func FieldErrors(t testing.TB, err error) []*field.Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var out []*field.Error
		for _, e := range agg.Errors() {
			out = append(out, FieldErrors(t, e)...)
		}
		return out
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		return []*field.Error{fe}
	}
	t.Fatalf("error %q names no field", err)
	return nil
}

// Diff compares errors with the wanted ones: each wanted error must match a
// distinct actual error (same field, same type, detail containing the
// phrase), and no actual error may be left over. It returns a cmp.Diff of
// the wanted errors and the actual ones, where an actual error that matches
// a wanted one is shown as that wanted one, so the diff shows only the
// mismatches.
func Diff(want []FieldErr, errs []*field.Error) string {
	got := make([]FieldErr, 0, len(errs))
	used := make([]bool, len(want))
	for _, e := range errs {
		body := e.ErrorBody()
		match := FieldErr{Field: e.Field, Type: e.Type, Phrase: body}
		for i, w := range want {
			if !used[i] && w.Field == e.Field && w.Type == e.Type && strings.Contains(body, w.Phrase) {
				used[i], match = true, w
				break
			}
		}
		got = append(got, match)
	}
	return cmp.Diff(sorted(want), sorted(got), cmpopts.EquateEmpty())
}

func sorted(s []FieldErr) []FieldErr {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b FieldErr) int { return strings.Compare(a.String(), b.String()) })
	return s
}

// FromYAML decodes YAML into the JSON types that Crossplane hands the
// function (float64 numbers, map[string]any objects).
func FromYAML(t testing.TB, s string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad test YAML %q: %v", s, err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatalf("bad test YAML %q: %v", s, err)
	}
	return v
}

// A Patch changes an object under test.
type Patch func(t testing.TB, obj map[string]any)

// Set sets the field at a dotted path (no list indexes) to the value that
// the YAML document v holds, creating objects on the way.
func Set(path, v string) Patch {
	return func(t testing.TB, obj map[string]any) {
		t.Helper()
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = FromYAML(t, v)
	}
}

// Del deletes the field at a dotted path.
func Del(path string) Patch {
	return func(_ testing.TB, obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				return
			}
			m = next
		}
		delete(m, keys[len(keys)-1])
	}
}
