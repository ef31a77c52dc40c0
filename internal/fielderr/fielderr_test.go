package fielderr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var path = field.NewPath("spec", "x")

// invalid is the message of an Invalid error at spec.x whose value is
// written as value (already quoted where it is a string).
func invalid(value, detail string) string {
	return "spec.x: Invalid value: " + value + ": " + detail
}

// distinct are n errors at spec.x with distinct values.
func distinct(n int) field.ErrorList {
	errs := make(field.ErrorList, 0, n)
	for i := range n {
		errs = append(errs, field.Invalid(path, i, "bad"))
	}
	return errs
}

// distinctMessages are the messages of distinct(n)[from:to].
func distinctMessages(from, to int) string {
	msgs := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, invalid(strconv.Itoa(i), "bad"))
	}
	return strings.Join(msgs, ", ")
}

func TestSummarize(t *testing.T) {
	long := strings.Repeat("a", 300)
	// A list whose JSON is longer than MaxValue: 60 items of "abc".
	list := make([]string, 60)
	for i := range list {
		list[i] = "abc"
	}
	listJSON := `["` + strings.Join(list, `","`) + `"]`
	type want struct {
		// msg is the aggregate's message, "" for a nil error.
		msg string
		// kept is how many errors Errors returns.
		kept int
	}
	cases := map[string]struct {
		reason string
		errs   field.ErrorList
		want   want
	}{
		"NoErrors": {
			reason: "No errors are no error at all.",
			want:   want{},
		},
		"OnlyNils": {
			reason: "Nil entries are skipped: a list of them is no error either.",
			errs:   field.ErrorList{nil, nil},
			want:   want{},
		},
		"One": {
			reason: "One error reads as itself, without the aggregate's brackets.",
			errs:   field.ErrorList{field.Required(path, "need it")},
			want:   want{msg: "spec.x: Required value: need it", kept: 1},
		},
		"Several": {
			reason: "Several errors are listed in order, in brackets.",
			errs:   field.ErrorList{field.Required(path, "need it"), nil, field.Invalid(path, true, "bad")},
			want:   want{msg: "[spec.x: Required value: need it, " + invalid("true", "bad") + "]", kept: 2},
		},
		"Duplicates": {
			reason: "An error repeated (a check run over copies of one value) is listed once.",
			errs:   field.ErrorList{field.Invalid(path, 1, "bad"), field.Invalid(path, 2, "bad"), field.Invalid(path, 1, "bad"), field.Invalid(path, 1, "bad")},
			want:   want{msg: "[" + invalid("1", "bad") + ", " + invalid("2", "bad") + "]", kept: 2},
		},
		"DuplicatesOnceCut": {
			reason: "Values that differ only past what a message quotes read the same: one is listed.",
			errs:   field.ErrorList{field.Invalid(path, long+"x", "bad"), field.Invalid(path, long+"y", "bad")},
			want:   want{msg: invalid(`"`+strings.Repeat("a", MaxValue)+`...(301 characters)"`, "bad"), kept: 1},
		},
		"AtMostTwenty": {
			reason: "At most MaxErrors errors are listed, then how many more there were.",
			errs:   distinct(25),
			want:   want{msg: "[" + distinctMessages(0, 20) + "] (and 5 more errors)", kept: MaxErrors},
		},
		"ExactlyTwenty": {
			reason: "MaxErrors errors are all listed, with no note.",
			errs:   distinct(20),
			want:   want{msg: "[" + distinctMessages(0, 20) + "]", kept: MaxErrors},
		},
		"DuplicatesDoNotCountAgainstTheLimit": {
			reason: "A duplicate of a listed error takes no place in the list: the 20 distinct errors are all listed.",
			errs:   append(append(distinct(10), distinct(10)...), distinct(20)...),
			want:   want{msg: "[" + distinctMessages(0, 20) + "]", kept: MaxErrors},
		},
		"LongString": {
			reason: "A string value is quoted to MaxValue characters, then how long it was.",
			errs:   field.ErrorList{field.Invalid(path, long, "bad")},
			want:   want{msg: invalid(`"`+strings.Repeat("a", MaxValue)+`...(300 characters)"`, "bad"), kept: 1},
		},
		"LongMultibyteString": {
			reason: "A value is cut on a character boundary, never inside one, so the message stays valid UTF-8.",
			errs:   field.ErrorList{field.Invalid(path, strings.Repeat("é", 200), "bad")},
			want:   want{msg: invalid(`"`+strings.Repeat("é", MaxValue/2)+`...(200 characters)"`, "bad"), kept: 1},
		},
		"ShortList": {
			reason: "A list or an object that is short is quoted as it is.",
			errs:   field.ErrorList{field.Invalid(path, []string{"a", "b"}, "bad")},
			want:   want{msg: invalid(`["a","b"]`, "bad"), kept: 1},
		},
		"LongList": {
			reason: "A list or an object longer than MaxValue in JSON is quoted as its JSON, cut like a string.",
			errs:   field.ErrorList{field.Invalid(path, list, "bad")},
			want:   want{msg: invalid(fmt.Sprintf("%q", listJSON[:MaxValue]+fmt.Sprintf("...(%d characters)", len(listJSON))), "bad"), kept: 1},
		},
		"ValueWithoutJSON": {
			reason: "A value that has no JSON (a function) is left out rather than printed by reflection.",
			errs:   field.ErrorList{field.Invalid(path, map[string]any{"f": func() {}}, "bad")},
			want:   want{msg: "spec.x: Invalid value: bad", kept: 1},
		},
		"NumbersAndBooleans": {
			reason: "Numbers and booleans are short: quoted as they are.",
			errs:   field.ErrorList{field.Invalid(path, int64(1)<<40, "bad"), field.Invalid(path, 1.5, "bad")},
			want:   want{msg: "[" + invalid("1099511627776", "bad") + ", " + invalid("1.5", "bad") + "]", kept: 2},
		},
		"LongFieldPath": {
			reason: "A field path (a map key the user wrote) is cut to MaxValue characters.",
			errs:   field.ErrorList{field.Required(field.NewPath("spec").Key(long), "need it")},
			want:   want{msg: "spec[" + strings.Repeat("a", MaxValue-5) + "...(306 characters): Required value: need it", kept: 1},
		},
		"LongDetail": {
			reason: "A detail, which may quote values too, is cut to 4 x MaxValue characters.",
			errs:   field.ErrorList{field.Required(path, strings.Repeat("d", 5000))},
			want:   want{msg: "spec.x: Required value: " + strings.Repeat("d", 4*MaxValue) + "...(5000 characters)", kept: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Summarize(tc.errs)
			var got want
			if err != nil {
				got.msg = err.Error()
				var agg interface{ Errors() []error }
				if !errors.As(err, &agg) {
					t.Fatalf("%s\nSummarize(...) is a %T, not an aggregate", tc.reason, err)
				}
				got.kept = len(agg.Errors())
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nSummarize(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSummarizeKeepsFieldErrors: the aggregate's errors are *field.Errors
// (callers read their type and field), bounded copies that leave the
// caller's list as it was, and errors.Is finds one of them.
func TestSummarizeKeepsFieldErrors(t *testing.T) {
	long := strings.Repeat("a", 300)
	in := field.Invalid(path, long, "bad")
	err := Summarize(field.ErrorList{in})
	var agg interface{ Errors() []error }
	if !errors.As(err, &agg) || len(agg.Errors()) != 1 {
		t.Fatalf("Summarize(...) = %v, want an aggregate of one error", err)
	}
	var kept *field.Error
	if !errors.As(agg.Errors()[0], &kept) {
		t.Fatalf("the aggregate keeps a %T, want a *field.Error", agg.Errors()[0])
	}
	if kept.Type != field.ErrorTypeInvalid || kept.Field != "spec.x" || kept.Detail != "bad" {
		t.Errorf("the kept error is %s %s %q, want Invalid spec.x \"bad\"", kept.Type, kept.Field, kept.Detail)
	}
	if in.BadValue != long {
		t.Errorf("Summarize changed the caller's error: its value is now %v", in.BadValue)
	}
	if !errors.Is(err, kept) {
		t.Error("errors.Is(Summarize(...), a kept error) = false, want true")
	}
	if errors.Is(err, field.Invalid(path, "other", "bad")) {
		t.Error("errors.Is(Summarize(...), an error it does not hold) = true, want false")
	}
}

func TestCut(t *testing.T) {
	cases := map[string]struct {
		reason string
		s      string
		n      int
		want   string
	}{
		"Short": {
			reason: "A string within the bound is returned as it is.",
			s:      "abc", n: 5, want: "abc",
		},
		"Exact": {
			reason: "A string of exactly n bytes is not cut.",
			s:      "abcde", n: 5, want: "abcde",
		},
		"Cut": {
			reason: "A longer string keeps n bytes and says how long it was, in characters.",
			s:      "abcdef", n: 3, want: "abc...(6 characters)",
		},
		"RuneBoundary": {
			reason: "A cut that would split a two-byte character keeps the characters before it.",
			s:      "ééé", n: 3, want: "é...(3 characters)",
		},
		"FourByteRune": {
			reason: "The same for a four-byte character: nothing of it is kept.",
			s:      "a😀b", n: 4, want: "a...(3 characters)",
		},
		"Zero": {
			reason: "n 0 keeps nothing but the length.",
			s:      "abc", n: 0, want: "...(3 characters)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Cut(tc.s, tc.n)); diff != "" {
				t.Errorf("%s\nCut(%q, %d): -want, +got:\n%s", tc.reason, tc.s, tc.n, diff)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	bytes := func(s string) string { return " (" + strconv.Itoa(len(s)) + " bytes)" }
	cases := map[string]struct {
		reason string
		s      string
		n      int
		unit   Unit
		note   func(string) string
		want   string
	}{
		"BytesShort": {
			reason: "A string within the bound is returned as it is, invalid UTF-8 too.",
			s:      "a\xffb", n: 3, unit: Bytes, want: "a\xffb",
		},
		"BytesEllipsis": {
			reason: "A longer string keeps the longest head of n bytes on a character boundary, then the ellipsis.",
			s:      "aéé", n: 4, unit: Bytes, want: "aé...",
		},
		"BytesNote": {
			reason: "The note says what it will of the whole string, after the ellipsis and beyond the bound.",
			s:      strings.Repeat("é", 10), n: 5, unit: Bytes, note: bytes, want: "éé... (20 bytes)",
		},
		"CharactersExact": {
			reason: "A string of exactly n characters is not cut, however many bytes they take.",
			s:      "ééé", n: 3, unit: Characters, want: "ééé",
		},
		"CharactersEllipsis": {
			reason: "A longer string keeps n-1 characters and ends with …, the API server's maxLength counting it.",
			s:      "éééé", n: 3, unit: Characters, want: "éé…",
		},
		"CharactersInvalidUTF8": {
			reason: "Invalid UTF-8, which the API server refuses, is replaced first, cut or not.",
			s:      "a\xffb", n: 3, unit: Characters, want: "a\uFFFDb",
		},
		"CharactersNote": {
			reason: "In characters, the note counts within the bound too.",
			s:      "abcdefghij", n: 8, unit: Characters, note: func(string) string { return "(10)" }, want: "abc…(10)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Truncate(tc.s, tc.n, tc.unit, tc.note)); diff != "" {
				t.Errorf("%s\nTruncate(%q, %d, %d): -want, +got:\n%s", tc.reason, tc.s, tc.n, tc.unit, diff)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	cases := map[string]struct {
		reason string
		s      string
		want   string
	}{
		"Short": {
			reason: "A short value is quoted as Go quotes it.",
			s:      "podinfo", want: `"podinfo"`,
		},
		"Escapes": {
			reason: "Quotes and control characters are escaped: a value cannot break the message's lines.",
			s:      "a\"b\nc", want: `"a\"b\nc"`,
		},
		"Long": {
			reason: "A long value is cut to MaxValue characters inside the quotes, with its length.",
			s:      strings.Repeat("x", 1000), want: `"` + strings.Repeat("x", MaxValue) + `...(1000 characters)"`,
		},
		"LongMultibyte": {
			reason: "A long multi-byte value is cut on a character boundary: no broken character is quoted.",
			s:      "a" + strings.Repeat("é", 200), want: `"a` + strings.Repeat("é", (MaxValue-1)/2) + `...(201 characters)"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Quote(tc.s)); diff != "" {
				t.Errorf("%s\nQuote(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestList(t *testing.T) {
	items := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint("i", i)
		}
		return out
	}
	cases := map[string]struct {
		reason string
		items  []string
		want   string
	}{
		"None": {
			reason: "No items are an empty list.",
			want:   "",
		},
		"Few": {
			reason: "Items are joined with the separator.",
			items:  items(3), want: "i0; i1; i2",
		},
		"Twenty": {
			reason: "MaxErrors items are all listed.",
			items:  items(20), want: strings.Join(items(20), "; "),
		},
		"More": {
			reason: "Past MaxErrors items, the list says how many more there were.",
			items:  items(23), want: strings.Join(items(20), "; ") + "; (and 3 more)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, List(tc.items, "; ")); diff != "" {
				t.Errorf("%s\nList(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
