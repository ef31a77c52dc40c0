// Package bounds refuses oversized input before anything decodes or
// validates it. A request under the gRPC limit can hold a list of a hundred
// thousand elements or a string of megabytes; decoding that, and validating
// every element, would take seconds and yield a message of megabytes.
// Checking the size of what the function reads first, in one pass over the
// unstructured content, keeps every run short: no list, map or string
// longer than its limit ever reaches a decoder or a regular expression.
package bounds

import (
	"slices"
	"strings"
	"unicode/utf8"

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

// sortedKeysOnStack is how many keys of a map are sorted without a heap
// allocation; the function's objects have fewer.
const sortedKeysOnStack = 16

// Limits are the limits of fields, by path pattern: a path with list
// indexes written [*] (spec.rules[*].matches), or a field name alone (name)
// for every field of that name. Lists and maps are limited in items, strings
// in characters, as an XRD's maxLength counts them (at most four bytes
// each). A map named here is data, such as a label selector: its keys are
// written [*] in the patterns below it.
type Limits map[string]int

// Check walks a value and returns an error for each list, map or string
// longer than its limit, at most fielderr.MaxErrors of them, in a stable
// order. It stops descending where it found something too long.
func Check(path *field.Path, v any, limits Limits) field.ErrorList {
	root := path.String()
	w := walker{limits: limits, root: path, pattern: []byte(root)}
	w.walk(lastName(root), v, 0)
	return w.errs
}

// A step is one element of the path below the root: a field, a list index
// or a key of a data map. Paths are built from steps only for an error, so
// a value that fits costs no path at all.
type step struct {
	name  string
	index int
	kind  stepKind
}

type stepKind int

const (
	stepChild stepKind = iota
	stepIndex
	stepKey
)

type walker struct {
	limits Limits
	root   *field.Path
	// pattern is the current path pattern, extended in place on the way
	// down: looking a map up with string(bytes) allocates nothing.
	pattern []byte
	steps   []step
	errs    field.ErrorList
}

func (w *walker) full() bool { return len(w.errs) >= fielderr.MaxErrors }

// path is the field path of the current value.
func (w *walker) path() *field.Path {
	p := w.root
	for _, s := range w.steps {
		switch s.kind {
		case stepIndex:
			p = p.Index(s.index)
		case stepKey:
			p = p.Key(s.name)
		default:
			p = p.Child(s.name)
		}
	}
	return p
}

// limit is the limit of the current field (whose last name is name), or
// def.
func (w *walker) limit(name string, def int) int {
	if l, ok := w.limits[string(w.pattern)]; ok {
		return l
	}
	if l, ok := w.limits[name]; ok {
		return l
	}
	return def
}

// walk checks v, the value at the current path, and what it holds.
func (w *walker) walk(name string, v any, depth int) {
	if w.full() || depth > maxDepth {
		return
	}
	switch t := v.(type) {
	case string:
		// The XRD's maxLength counts characters: a string longer in
		// bytes only is counted (a string never has more characters
		// than bytes).
		if l := w.limit(name, DefaultString); len(t) > l && utf8.RuneCountInString(t) > l {
			w.errs = append(w.errs, field.TooLongCharacters(w.path(), t, l))
		}
	case []any:
		if l := w.limit(name, DefaultItems); len(t) > l {
			w.errs = append(w.errs, field.TooMany(w.path(), len(t), l))
			return
		}
		n := len(w.pattern)
		w.pattern = append(w.pattern, "[*]"...)
		for i, item := range t {
			w.descend(step{index: i, kind: stepIndex}, name, item, depth)
		}
		w.pattern = w.pattern[:n]
	case map[string]any:
		w.walkMap(name, t, depth)
	}
}

func (w *walker) walkMap(name string, m map[string]any, depth int) {
	l, data := w.limits[string(w.pattern)]
	if !data {
		l = DefaultItems
	}
	if len(m) > l {
		w.errs = append(w.errs, field.TooMany(w.path(), len(m), l))
		return
	}
	// In a stable order: the errors kept must not depend on map order.
	keys := make([]string, 0, sortedKeysOnStack)
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n := len(w.pattern)
	if data {
		w.pattern = append(w.pattern, "[*]"...)
	}
	for _, k := range keys {
		if len(k) > DefaultString {
			w.errs = append(w.errs, field.TooLong(w.path(), k, DefaultString))
			continue
		}
		if data {
			w.descend(step{name: k, kind: stepKey}, name, m[k], depth)
			continue
		}
		w.pattern = append(append(w.pattern, '.'), k...)
		w.descend(step{name: k}, k, m[k], depth)
		w.pattern = w.pattern[:n]
	}
	w.pattern = w.pattern[:n]
}

// descend walks a value one step below the current path.
func (w *walker) descend(s step, name string, v any, depth int) {
	w.steps = append(w.steps, s)
	w.walk(name, v, depth+1)
	w.steps = w.steps[:len(w.steps)-1]
}

// lastName is the last field name of a path pattern.
func lastName(pattern string) string {
	pattern = strings.TrimRight(pattern, "[*]")
	return pattern[strings.LastIndexByte(pattern, '.')+1:]
}
