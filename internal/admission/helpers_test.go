package admission

import (
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ignoreBadValue compares errors by type, path and detail: the value is
// already part of the case.
var ignoreBadValue = cmpopts.IgnoreFields(field.Error{}, "BadValue") //nolint:gochecknoglobals // A constant option.

// path parses "spec.rules[0].backendRefs[1]" into a field path.
func path(s string) *field.Path {
	var p *field.Path
	for part := range strings.SplitSeq(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if p == nil {
			p = field.NewPath(name)
		} else {
			p = p.Child(name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil {
				panic(err)
			}
			p = p.Index(i)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

// Expected errors, built as the validators build them.

func celErr(p, msg string) *field.Error { return field.Invalid(path(p), typeObject, msg) }

func celListErr(p, msg string) *field.Error { return field.Invalid(path(p), typeArray, msg) }

func required(p string) *field.Error { return field.Required(path(p), "") }

func tooMany(p string, n, maxItems int) *field.Error { return field.TooMany(path(p), n, maxItems) }

func tooLong(p string, maxLength int) *field.Error { return field.TooLong(path(p), "", maxLength) }

func duplicate(p string) *field.Error { return field.Duplicate(path(p), nil) }

func notSupported(p string, allowed []string) *field.Error {
	return field.NotSupported(path(p), nil, allowed)
}

func mismatch(p, pattern string) *field.Error {
	return field.Invalid(path(p), nil, "should match '"+pattern+"'")
}

func tooShort(p string, n int) *field.Error {
	return field.Invalid(path(p), nil, "should be at least "+strconv.Itoa(n)+" chars long")
}

func below(p string, minimum int) *field.Error {
	return field.Invalid(path(p), nil, "should be greater than or equal to "+strconv.Itoa(minimum))
}

func above(p string, maximum int) *field.Error {
	return field.Invalid(path(p), nil, "should be less than or equal to "+strconv.Itoa(maximum))
}

func fewItems(p string, n int) *field.Error {
	return field.Invalid(path(p), nil, "should have at least "+strconv.Itoa(n)+" items")
}

func errs(e ...*field.Error) field.ErrorList { return e }

// diff compares want and got errors, ignoring the values.
func diff(want, got field.ErrorList) string {
	return cmp.Diff(want, got, ignoreBadValue, cmpopts.EquateEmpty())
}
