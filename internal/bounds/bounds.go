// Package bounds refuses oversized input before anything decodes or
// validates it. A request under the gRPC limit can hold a list of a hundred
// thousand elements or a string of megabytes; decoding that, and validating
// every element, would take seconds and yield a message of megabytes.
// Checking the size of what the function reads first, in one pass over the
// unstructured content, keeps every run short: no list, map or string
// longer than its limit ever reaches a decoder or a regular expression.
package bounds

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// Defaults for what a Limits table does not name. No list or map of the
// Gateway API or of the CanaryRoute holds more than 64 items, and no string
// more than 4096 characters (an HTTP header value).
const (
	DefaultItems  = 64
	DefaultString = 4096
)

// maxDepth bounds the nesting that is walked: protobuf refuses deeper
// structs anyway.
const maxDepth = 100

// Limits are the limits of fields, by path pattern: a path with list
// indexes written [*] (spec.rules[*].matches), or a field name alone (name)
// for every field of that name. Lists and maps are limited in items, strings
// in bytes. A map named here is data, such as a label selector: its keys are
// written [*] in the patterns below it.
type Limits map[string]int

// Check walks a value and returns an error for each list, map or string
// longer than its limit, at most fielderr.MaxErrors of them. It stops
// descending where it found something too long.
func Check(path *field.Path, v any, limits Limits) field.ErrorList {
	root := path.String()
	// Almost every value fits: a first pass that builds no paths and sorts
	// no keys says so at a fraction of the cost. Only a value that does not
	// fit is walked again, in a stable order, for its errors.
	if fits(limits, []byte(root), lastName(root), v, 0) {
		return nil
	}
	w := walker{limits: limits}
	w.walk(path, root, lastName(root), v, 0)
	return w.errs
}

// fits reports whether walk would find nothing too long in v. pattern is
// the walk's pattern as bytes, extended in place on the way down: looking a
// map up with string(bytes) allocates nothing.
func fits(limits Limits, pattern []byte, name string, v any, depth int) bool {
	if depth > maxDepth {
		return true
	}
	limit := func(def int) int {
		if l, ok := limits[string(pattern)]; ok {
			return l
		}
		if l, ok := limits[name]; ok {
			return l
		}
		return def
	}
	switch t := v.(type) {
	case string:
		return len(t) <= limit(DefaultString)
	case []any:
		if len(t) > limit(DefaultItems) {
			return false
		}
		pattern = append(pattern, "[*]"...)
		for _, item := range t {
			if !fits(limits, pattern, name, item, depth+1) {
				return false
			}
		}
	case map[string]any:
		l, data := limits[string(pattern)]
		if !data {
			l = DefaultItems
		}
		if len(t) > l {
			return false
		}
		if data {
			pattern = append(pattern, "[*]"...)
		}
		for k, item := range t {
			if len(k) > DefaultString {
				return false
			}
			if data {
				if !fits(limits, pattern, name, item, depth+1) {
					return false
				}
				continue
			}
			if !fits(limits, append(append(pattern, '.'), k...), k, item, depth+1) {
				return false
			}
		}
	}
	return true
}

type walker struct {
	limits Limits
	errs   field.ErrorList
}

func (w *walker) full() bool { return len(w.errs) >= fielderr.MaxErrors }

// limit is the limit of the field at pattern (whose last name is name), or
// def.
func (w *walker) limit(pattern, name string, def int) int {
	if l, ok := w.limits[pattern]; ok {
		return l
	}
	if l, ok := w.limits[name]; ok {
		return l
	}
	return def
}

func (w *walker) walk(path *field.Path, pattern, name string, v any, depth int) {
	if w.full() || depth > maxDepth {
		return
	}
	switch t := v.(type) {
	case string:
		if l := w.limit(pattern, name, DefaultString); len(t) > l {
			w.errs = append(w.errs, field.TooLong(path, t, l))
		}
	case []any:
		if l := w.limit(pattern, name, DefaultItems); len(t) > l {
			w.errs = append(w.errs, field.TooMany(path, len(t), l))
			return
		}
		for i, item := range t {
			w.walk(path.Index(i), pattern+"[*]", name, item, depth+1)
		}
	case map[string]any:
		l, data := w.limits[pattern]
		if !data {
			l = DefaultItems
		}
		if len(t) > l {
			w.errs = append(w.errs, field.TooMany(path, len(t), l))
			return
		}
		// In a stable order: the errors kept must not depend on map order.
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if len(k) > DefaultString {
				w.errs = append(w.errs, field.TooLong(path, k, DefaultString))
				continue
			}
			if data {
				w.walk(path.Key(k), pattern+"[*]", name, t[k], depth+1)
				continue
			}
			w.walk(path.Child(k), pattern+"."+k, k, t[k], depth+1)
		}
	}
}

// lastName is the last field name of a path pattern.
func lastName(pattern string) string {
	pattern = strings.TrimRight(pattern, "[*]")
	return pattern[strings.LastIndexByte(pattern, '.')+1:]
}
