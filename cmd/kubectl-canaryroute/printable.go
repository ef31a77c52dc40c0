package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// printable is the snapshot with every string of its objects (values and
// keys) made safe for a terminal: the tree prints status messages,
// conditions, events and labels that anyone who may write them chose, and
// a terminal obeys the escape sequences among them (a cleared screen, a
// retitled window, a clipboard written through OSC 52, text hidden or a
// line forged after a newline). The objects are copied; s is unchanged.
func (s snapshot) printable() snapshot {
	copies := map[*unstructured.Unstructured]*unstructured.Unstructured{}
	cp := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		if u == nil {
			return nil
		}
		if c, ok := copies[u]; ok {
			return c
		}
		c := &unstructured.Unstructured{Object: printableValue(u.Object).(map[string]any)} //nolint:forcetypeassert // A map stays a map.
		copies[u] = c
		return c
	}
	all := func(us []*unstructured.Unstructured) []*unstructured.Unstructured {
		out := make([]*unstructured.Unstructured, len(us))
		for i, u := range us {
			out[i] = cp(u)
		}
		return out
	}
	return snapshot{
		named: cp(s.named), xr: cp(s.xr), claim: cp(s.claim),
		composed: all(s.composed), workloads: all(s.workloads), events: all(s.events),
		unreadable: s.unreadable,
	}
}

// printableValue copies a JSON value with its strings made printable.
func printableValue(v any) any {
	switch v := v.(type) {
	case string:
		return printableText(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[printableText(k)] = printableValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = printableValue(e)
		}
		return out
	default:
		return v
	}
}

// printableText is a string on one line of a terminal: line breaks and
// tabs become spaces, other control and format characters (escape, bell,
// C1 controls, bidirectional overrides, zero-width characters) are written
// as \xNN or \uNNNN, and bytes that are not UTF-8 as \xNN.
func printableText(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// isPrintable reports whether s needs no change (most strings: the copy is
// then the string itself).
func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r))) {
			return false
		}
	}
	return true
}
