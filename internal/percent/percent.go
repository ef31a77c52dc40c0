// Package percent is the canary's weight: a percent from 0 to 100 with at
// most two decimals, kept exactly as an integer count of hundredths of a
// percent, read from a JSON number's text and written back as written
// ("0.1", "10", "33.33"). The API server stores a custom resource's
// numbers as float64, so the text read is that float's shortest form (what
// a user wrote as 0.1000000000000000055511151231257827 arrives as 0.1);
// from it on, every decision on a weight is integer arithmetic: no float
// ever decides which step a rollout is at, what a route carries or how many
// replicas a revision needs.
package percent

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// A Percent is a weight in hundredths of a percent: 0 to 10,000, 0.1% is 10
// and 100% is 10,000. The zero value is 0%.
//
// It is a struct, as resource.Quantity is, for two reasons.
// runtime.DefaultUnstructuredConverter, which every object of the function
// goes through, honours a type's JSON methods only when the type is not of
// a simple kind: an int32 kind would be converted as the bare count of
// hundredths (a status of 90% written as 9000). And no untyped constant
// converts to it: Weight: 10 does not compile, where it would silently
// have meant 0.1%. go-cmp compares it with Equal.
// The markers say so in the XRDs: a number from 0 to 100.
//
// +kubebuilder:validation:Type=number
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=100
type Percent struct {
	h int32
	// written is a JSON number that is no percent, as written ("0.005",
	// "101"): UnmarshalJSON keeps it rather than stopping the decoder, so
	// that whoever validates the value (xr's parser) names its field, and
	// every other error of the object is reported beside it. Empty for
	// every percent.
	written string
}

// Scale is the hundredths in a whole percent.
const Scale = 100

var (
	// Zero is 0%.
	Zero = Percent{}
	// Max is 100%.
	Max = Percent{h: 100 * Scale}
)

const (
	// WholeTotal is the route's total when every weight of the spec is whole:
	// its weights are percents, as they always were.
	WholeTotal int32 = 100
	// FineTotal is the route's total when a weight has decimals: its
	// weights are hundredths of a percent, 10,000 in all, far below the
	// Gateway API's 1,000,000 per backend.
	FineTotal int32 = 100 * Scale
)

// Invalid says what a weight must be; every refused weight says it.
const Invalid = "must be a percent from 0 to 100 with at most two decimals"

// Int is a whole percent: Int(10) is 10%.
func Int(n int32) Percent { return Percent{h: n * Scale} }

// Hundredths is a percent of h hundredths of a percent: Hundredths(10) is
// 0.1%.
func Hundredths(h int32) Percent { return Percent{h: h} }

// Hundredths is the percent in hundredths of a percent.
func (p Percent) Hundredths() int32 { return p.h }

// Equal reports whether two percents are the same (go-cmp uses it).
func (p Percent) Equal(q Percent) bool { return p == q }

// Less reports whether p is below q.
func (p Percent) Less(q Percent) bool { return p.h < q.h }

// IsZero reports whether the percent is 0.
func (p Percent) IsZero() bool { return p.h == 0 }

// Compare is -1, 0 or +1 as a is below, at or above b (slices.SortFunc,
// slices.IsSortedFunc).
func Compare(a, b Percent) int { return cmp.Compare(a.h, b.h) }

// Greater is the greater of two percents.
func Greater(a, b Percent) Percent {
	if a.h < b.h {
		return b
	}
	return a
}

// Clamp is the percent within 0 to 100: a status anyone may write is read
// as a percent.
func (p Percent) Clamp() Percent { return Percent{h: min(max(p.h, 0), Max.h)} }

// Parse reads a JSON number's text exactly: "10", "10.0", "0.1", "0.10" and
// "1e1" are percents; "0.005" (three decimals), "33.333", "-1", "100.01",
// "NaN", "" and anything that is not a JSON number are not, and the error
// says so. No float is involved in the reading: "0.1" is 10 hundredths.
func Parse(s string) (Percent, error) {
	v, ok := parse(s)
	if !ok {
		return Zero, errors.New(Invalid)
	}
	return v, nil
}

// maxExponent bounds the exponent read: beyond it a number with a digit
// other than 0 is far out of range either way, and no work grows with it.
const maxExponent = 1000

func parse(s string) (Percent, bool) {
	n, ok := readNumber(s)
	if !ok {
		return Zero, false
	}
	digits := strings.TrimLeft(n.intPart+n.frac, "0")
	if digits == "" {
		return Zero, true // 0, 0.0, -0, 0e5: zero however written.
	}
	// The number is digits × 10^(exp - len(frac)); in hundredths, digits ×
	// 10^(exp - len(frac) + 2).
	shift := n.exp - len(n.frac) + 2
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	if shift < 0 {
		return Zero, false // More than two decimals.
	}
	if len(trimmed)+shift > 9 {
		return Zero, false // Far out of range, beyond an int32.
	}
	v, err := strconv.ParseInt(trimmed+strings.Repeat("0", shift), 10, 32)
	if err != nil {
		return Zero, false
	}
	if n.neg {
		v = -v
	}
	// Out of range but a count of hundredths (101, -5): kept, for a
	// status written by hand to be clamped as it always was.
	return Percent{h: int32(v)}, v >= 0 && v <= int64(Max.h) //nolint:gosec // ParseInt's bit size 32 bounds it.
}

// number is a JSON number's text in its parts: the digits before and after
// the point, the exponent (bounded by maxExponent) and the sign.
type number struct {
	intPart, frac string
	exp           int
	neg           bool
}

// readNumber splits a JSON number's text into its parts; false for text
// that is no JSON number.
func readNumber(s string) (number, bool) {
	var n number
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	n.intPart, i = digitsAt(s, i)
	if n.intPart == "" || (len(n.intPart) > 1 && n.intPart[0] == '0') {
		return n, false // JSON: at least one digit, no leading zero.
	}
	if i < len(s) && s[i] == '.' {
		n.frac, i = digitsAt(s, i+1)
		if n.frac == "" {
			return n, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		var exp string
		exp, i = digitsAt(s, i)
		if exp == "" {
			return n, false
		}
		for _, c := range exp {
			if n.exp <= maxExponent {
				n.exp = n.exp*10 + int(c-'0')
			}
		}
		if expNeg {
			n.exp = -n.exp
		}
	}
	return n, i == len(s)
}

// digitsAt returns the digits of s from i on, and the index after them.
func digitsAt(s string, i int) (string, int) {
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[start:i], i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// String is the percent as written, with no trailing zero: "0.1", "10",
// "33.33", "0.5".
func (p Percent) String() string {
	if p.written != "" {
		return p.written
	}
	neg := ""
	v := int64(p.h)
	if v < 0 {
		neg, v = "-", -v
	}
	whole, hundredths := v/Scale, v%Scale
	switch {
	case hundredths == 0:
		return neg + strconv.FormatInt(whole, 10)
	case hundredths%10 == 0:
		return neg + strconv.FormatInt(whole, 10) + "." + strconv.FormatInt(hundredths/10, 10)
	default:
		return neg + strconv.FormatInt(whole, 10) + "." + strconv.FormatInt(hundredths/10, 10) + strconv.FormatInt(hundredths%10, 10)
	}
}

// Exact reports whether the value is a count of hundredths, in range or
// not (101 is; 0.005 and 1e99 are not): what a status may be clamped from.
func (p Percent) Exact() bool { return p.written == "" }

// Nearest is the percent a recorded weight stands for: the nearest count
// of hundredths, from 0 to 100%. It reads status.rollout, the function's
// own record, which only a hand or a forged status fills with more decimals
// (0.001), a value out of range (101, 1e8) or an older float (what the API
// server stores is a float64 already): such a record is read as the weight
// it is nearest to, as an out-of-range one always was clamped, and never
// stops a rollout. A spec's weight is never read so: it is Valid or a
// Fatal.
func (p Percent) Nearest() Percent {
	if p.written == "" {
		return p.Clamp()
	}
	f, err := strconv.ParseFloat(p.written, 64)
	switch {
	case err != nil && !math.IsInf(f, 0): // Not a number at all.
		return Zero
	case math.IsNaN(f) || f <= 0:
		return Zero
	case f >= float64(Max.h)/Scale:
		return Max
	default:
		return Percent{h: int32(math.Round(f * Scale))}
	}
}

// Whole reports whether the percent has no decimals.
func (p Percent) Whole() bool { return p.h%Scale == 0 }

// Valid reports whether the percent is one from 0 to 100.
func (p Percent) Valid() bool { return p.written == "" && p.h >= 0 && p.h <= Max.h }

// Float is the percent as a float64, for what only shows it (a metric's
// value): never for a decision.
func (p Percent) Float() float64 { return float64(p.h) / Scale }

// Rest is what 100% leaves of the percent: the primary's share of the
// canary's.
func (p Percent) Rest() Percent { return Percent{h: Max.h - p.h} }

// Of is the percent as a weight of a route whose weights add up to total:
// exact for FineTotal, and for WholeTotal when the percent is whole (Total
// chooses the total so that it is); otherwise rounded down.
func (p Percent) Of(total int32) int32 {
	return clampInt32(int64(p.h) * int64(total) / int64(Max.h))
}

// CeilReplicas is how many of n replicas carry the percent of the traffic,
// rounded up: a revision that gets any traffic gets a replica.
func (p Percent) CeilReplicas(n int32) int32 {
	return clampInt32((int64(n)*int64(p.h) + int64(Max.h) - 1) / int64(Max.h))
}

// clampInt32 is v within an int32: a value out of range (a status written
// by hand) never wraps around.
func clampInt32(v int64) int32 {
	return int32(min(max(v, math.MinInt32), math.MaxInt32))
}

// Total is the total of a route's weights that carries the percents
// exactly: WholeTotal when every one is whole (the route is as it always
// was), FineTotal otherwise.
func Total(ps ...Percent) int32 {
	for _, p := range ps {
		if !p.Whole() {
			return FineTotal
		}
	}
	return WholeTotal
}

// MarshalJSON writes the percent as a JSON number, as written: 0.1, 10.
func (p Percent) MarshalJSON() ([]byte, error) { return []byte(p.String()), nil }

// ToUnstructured is the percent as runtime.DefaultUnstructuredConverter
// writes it (structured-merge-diff's UnstructuredConverter, as
// resource.Quantity and metav1.Time have): the value its JSON number
// decodes to, an int64 when whole (10) and a float64 otherwise (0.1),
// without the JSON encoding and decoding the converter otherwise does for
// every weight of every status it writes (a decoder's buffer each, 5 KB and
// 19 allocations a run).
func (p Percent) ToUnstructured() any {
	s := p.String()
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// UnmarshalJSON reads a JSON number exactly (see Parse). A number that is
// no percent (0.005, 101, -1) is kept as written, not Valid, for the
// validation to refuse with the field's name beside the object's other
// errors. Any other JSON value is a *json.UnmarshalTypeError, which the
// decoder completes with the field's name; null leaves the percent as it
// is, as for any JSON value.
func (p *Percent) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	v, ok := parse(s)
	switch {
	case ok, !v.IsZero():
		*p = v // A percent, or a count of hundredths out of range (101).
	case isNumber(s):
		*p = Percent{written: s}
	default:
		return &json.UnmarshalTypeError{Value: valueOf(s), Type: reflect.TypeFor[Percent]()}
	}
	return nil
}

// isNumber reports whether s is a JSON number (the decoder hands an
// Unmarshaler only JSON values: one that starts as a number is one).
func isNumber(s string) bool { return s != "" && (s[0] == '-' || isDigit(s[0])) }

// valueOf describes a JSON value as encoding/json's UnmarshalTypeError
// does, a number with its text: "number 0.005", "string", "bool".
func valueOf(s string) string {
	switch {
	case s == "":
		return "nothing"
	case s[0] == '"':
		return "string"
	case s[0] == '{':
		return "object"
	case s[0] == '[':
		return "array"
	case s == "true" || s == "false":
		return "bool"
	default:
		return "number " + s
	}
}

// Describe says what a Percent must be, for the decoder's errors.
func (Percent) Describe() string { return "a percent from 0 to 100 with at most two decimals" }
