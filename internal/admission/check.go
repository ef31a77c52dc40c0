package admission

import (
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Patterns of the Gateway API CRDs (OpenAPI pattern and CEL matches()),
// copied verbatim so that a test can find each of them in the CRD YAML.
const (
	patGroup       = `^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	patKind        = `^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`
	patNamespace   = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	patSubdomain   = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	patHostname    = `^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	patHeaderName  = `^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$`
	patHeaderValue = `^[!-~]+([\t ]?[!-~]+)*$`
	patDuration    = `^([0-9]{1,5}(h|m|s|ms)){1,4}$`
	patPath        = `^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`
	patCORSOrigin  = `(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9\-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)`
	patGRPCService = `^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$`
	patGRPCMethod  = `^[A-Za-z_][A-Za-z_0-9]*$`
	patRFC1123     = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
)

// Compiled once at package init: the function validates on every run. The
// patterns are the CRDs' own, verbatim, so linters' rewrites do not apply.
//
//nolint:gocritic // Verbatim from the CRDs: TestPatternsAndMessagesAreTheCRDs finds each there.
var (
	reGroup       = regexp.MustCompile(patGroup)
	reKind        = regexp.MustCompile(patKind)
	reNamespace   = regexp.MustCompile(patNamespace)
	reSubdomain   = regexp.MustCompile(patSubdomain)
	reHostname    = regexp.MustCompile(patHostname)
	reHeaderName  = regexp.MustCompile(patHeaderName)
	reHeaderValue = regexp.MustCompile(patHeaderValue)
	reDuration    = regexp.MustCompile(patDuration)
	rePath        = regexp.MustCompile(patPath)
	reCORSOrigin  = regexp.MustCompile(patCORSOrigin)
	reGRPCService = regexp.MustCompile(patGRPCService)
	reGRPCMethod  = regexp.MustCompile(patGRPCMethod)
	reRFC1123     = regexp.MustCompile(patRFC1123)
)

// A str is the OpenAPI schema of a string field: its length bounds, counted
// in characters as the API server does, and its pattern.
type str struct {
	min     int
	max     int // 0: no maximum.
	re      *regexp.Regexp
	pattern string
	// match, if set, is equivalent to re and faster.
	match func(string) bool
}

func (s str) matches(v string) bool {
	if s.match != nil {
		return s.match(v)
	}
	return s.re.MatchString(v)
}

// String schemas shared by the Gateway API types, named after their Go type.
var (
	strGroup           = str{max: 253, re: reGroup, pattern: patGroup, match: matchGroup}
	strKind            = str{min: 1, max: 63, re: reKind, pattern: patKind, match: matchKind}
	strObjectName      = str{min: 1, max: 253}
	strNamespace       = str{min: 1, max: 63, re: reNamespace, pattern: patNamespace, match: matchLabel}
	strSectionName     = str{min: 1, max: 253, re: reSubdomain, pattern: patSubdomain, match: matchSubdomain}
	strHostname        = str{min: 1, max: 253, re: reHostname, pattern: patHostname, match: matchHostname}
	strPreciseHostname = str{min: 1, max: 253, re: reSubdomain, pattern: patSubdomain, match: matchSubdomain}
	strHeaderName      = str{min: 1, max: 256, re: reHeaderName, pattern: patHeaderName, match: matchHeaderName}
	// The experimental channel adds the pattern; the standard one has none.
	strHeaderValue  = str{min: 1, max: 4096, re: reHeaderValue, pattern: patHeaderValue, match: matchHeaderValue}
	strGRPCValue    = str{min: 1, max: 4096}
	strQueryValue   = str{min: 1, max: 1024}
	strDuration     = str{re: reDuration, pattern: patDuration}
	strPathValue    = str{max: 1024}
	strAuthPath     = str{max: 1024, re: rePath, pattern: patPath}
	strCORSOrigin   = str{min: 1, max: 253, re: reCORSOrigin, pattern: patCORSOrigin}
	strGRPCName     = str{max: 1024}
	strSessionName  = str{max: 128}
	strPathModifier = str{max: 1024}
)

// check validates v, the value of field name of parent. The path is built
// only when there is an error: valid objects are the common case.
func (s str) check(parent *field.Path, name, v string) field.ErrorList {
	return s.checkAt(func() *field.Path { return parent.Child(name) }, v)
}

// checkIndex validates v, item i of the list at path.
func (s str) checkIndex(path *field.Path, i int, v string) field.ErrorList {
	return s.checkAt(func() *field.Path { return path.Index(i) }, v)
}

func (s str) checkAt(p func() *field.Path, v string) field.ErrorList {
	v = jsonString(v)
	var errs field.ErrorList
	n := -1
	if s.min > 0 || s.max > 0 {
		n = utf8.RuneCountInString(v)
	}
	if s.max > 0 && n > s.max {
		errs = append(errs, field.TooLong(p(), "", s.max))
	}
	if n >= 0 && n < s.min {
		errs = append(errs, field.Invalid(p(), v, "should be at least "+strconv.Itoa(s.min)+" chars long"))
	}
	if s.re != nil && !s.matches(v) {
		errs = append(errs, field.Invalid(p(), v, "should match '"+s.pattern+"'"))
	}
	return errs
}

// jsonString returns s as the API server receives it: encoding/json
// replaces each invalid UTF-8 byte with U+FFFD.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b = append(b, r) // RuneError for an invalid byte, as encoding/json.
		i += size
	}
	return string(b)
}

// intRange validates an integer field against its minimum and maximum.
func intRange(parent *field.Path, name string, v, minimum, maximum int64) field.ErrorList {
	if v < minimum || v > maximum {
		return intRangeAt(parent.Child(name), v, minimum, maximum)
	}
	return nil
}

// intRangeIndex validates item i of a list of integers.
func intRangeIndex(path *field.Path, i int, v, minimum, maximum int64) field.ErrorList {
	if v < minimum || v > maximum {
		return intRangeAt(path.Index(i), v, minimum, maximum)
	}
	return nil
}

func intRangeAt(p *field.Path, v, minimum, maximum int64) field.ErrorList {
	if v < minimum {
		return field.ErrorList{field.Invalid(p, v, "should be greater than or equal to "+strconv.FormatInt(minimum, 10))}
	}
	if v > maximum {
		return field.ErrorList{field.Invalid(p, v, "should be less than or equal to "+strconv.FormatInt(maximum, 10))}
	}
	return nil
}

// intMin validates an integer field that has only a minimum.
func intMin(parent *field.Path, name string, v, minimum int64) field.ErrorList {
	if v < minimum {
		return field.ErrorList{field.Invalid(parent.Child(name), v, "should be greater than or equal to "+strconv.FormatInt(minimum, 10))}
	}
	return nil
}

// enum validates a string field against its allowed values.
func enum[T ~string](parent *field.Path, name string, v T, allowed []string) field.ErrorList {
	if slices.Contains(allowed, string(v)) {
		return nil
	}
	return field.ErrorList{field.NotSupported(parent.Child(name), string(v), allowed)}
}

// enumIndex validates item i of a list of strings against allowed values.
func enumIndex[T ~string](path *field.Path, i int, v T, allowed []string) field.ErrorList {
	if slices.Contains(allowed, string(v)) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path.Index(i), string(v), allowed)}
}

// rule reports a failed x-kubernetes-validations rule with its CRD message,
// as the API server does: the value shown is the schema type of the field
// the rule is on.
func rule(path *field.Path, schemaType, message string) *field.Error {
	return field.Invalid(path, schemaType, message)
}

// Schema types, shown as the value of a failed CEL rule.
const (
	typeObject = "object"
	typeArray  = "array"
)

// uniqueStrings reports items of an x-kubernetes-list-type set that repeat
// an earlier one, as the API server does: at the second item of each value,
// not the third or later.
func uniqueStrings[T ~string](path *field.Path, list []T) field.ErrorList {
	var errs field.ErrorList
	if len(list) < 2 {
		return nil
	}
	for i := 1; i < len(list); i++ {
		v, n := jsonString(string(list[i])), 0
		for j := range i {
			if jsonString(string(list[j])) == v {
				n++
			}
		}
		if n == 1 {
			errs = append(errs, field.Duplicate(path.Index(i), string(list[i])))
		}
	}
	return errs
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
