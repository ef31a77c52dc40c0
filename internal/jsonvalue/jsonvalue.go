// Package jsonvalue encodes decoded JSON values (what structpb's AsMap and
// encoding/json make: map[string]any, []any, string, float64, bool and nil)
// to the very bytes encoding/json writes for them, without its reflection.
//
// The function re-encodes parts of the observed XR and the Input on every run
// to decode them strictly into typed values; encoding/json's reflection over
// maps of interfaces, and the sorting of their keys through reflect values,
// was the largest part of that. Byte identity matters: decoding errors are
// located by their offset in these bytes, and tests compare both encoders.
package jsonvalue

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// maxDepth is how deep the encoder nests before it hands a value to
// encoding/json, which detects cycles from that depth on: a map that holds
// itself must give encoding/json's error, not exhaust the stack.
const maxDepth = 1000

// Marshal returns what json.Marshal(v) returns.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends what json.Marshal(v) returns to b.
func Append(b []byte, v any) ([]byte, error) {
	out, err := appendValue(b, v, 0)
	if err != nil {
		// encoding/json words an error by the path it walked from the top
		// (a cycle through a map and a slice is reported as the type where
		// it first noticed it), so only the whole value marshalled by it
		// gives the same error. Errors are rare; the cost does not matter.
		return appendMarshalled(b, v)
	}
	return out, nil
}

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return appendMarshalled(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendString(b, v)
	case float64:
		return appendFloat(b, v)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json sorts keys bytewise too.
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendValue(b, v[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default:
		// Not a decoded JSON value (an int, a typed struct, a json.Number):
		// encoding/json knows best.
		return appendMarshalled(b, v)
	}
}

func appendMarshalled(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

// appendString writes strings that need no escaping itself; encoding/json
// writes the others (escapes for quotes, control characters, HTML's <, >
// and &, U+2028 and U+2029, and invalid UTF-8).
func appendString(b []byte, s string) ([]byte, error) {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return appendMarshalled(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// appendFloat formats a number as encoding/json does: plain notation
// between 1e-6 and 1e21, exponent notation outside, and an error for NaN
// and the infinities.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendMarshalled(b, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
