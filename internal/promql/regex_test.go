package promql

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
)

// parsed is what Prometheus's parser says of a query as Check reads it
// (its placeholders replaced by samples), with each regular expression
// compiled for real: whether it accepts it, as Check would.
func parsed(query string) bool {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(expand(query, func(name string) string { return samples[name] }))
	if err != nil {
		return false
	}
	t := expr.Type()
	return t == parser.ValueTypeVector || t == parser.ValueTypeScalar
}

// TestRegexStandInsAgree: Check hands Prometheus's parser a stand-in for
// each regular expression; what it accepts and refuses is what the parser
// accepts and refuses with the regular expressions themselves.
func TestRegexStandInsAgree(t *testing.T) {
	cases := map[string]struct {
		reason string
		query  string
		want   bool
	}{
		"APIExample": {
			reason: "The regular expression of API.md's example.",
			query:  `sum(rate(x{service="{{service}}", code=~"5.."}[{{interval}}]))`,
			want:   true,
		},
		"Invalid": {
			reason: "A regular expression that does not parse is refused.",
			query:  `sum(x{a=~"(5.."})`,
		},
		"InvalidRepeat": {
			reason: "A counted repetition beyond 1,000 is refused, as Go's regexp refuses it.",
			query:  `sum(x{a=~"a{1001}"})`,
		},
		"UnbalancedAfterAnchoring": {
			reason: "Prometheus parses the expression alone before it anchors it: a)( is refused, though ^(?s:a)()$ would parse.",
			query:  `sum(x{a=~"a)("})`,
		},
		"OnlyEmptyMatchers": {
			reason: "A selector without a name whose only matcher matches the empty string is refused: the stand-in matches it too.",
			query:  `sum({a=~".*"})`,
		},
		"OnlyEmptyAlternative": {
			reason: "x| matches the empty string.",
			query:  `sum({a=~"x|"})`,
		},
		"OnlyAnchors": {
			reason: "^$ matches the empty string.",
			query:  `sum({a=~"^$"})`,
		},
		"EmptyRegex": {
			reason: "An empty regular expression matches the empty string.",
			query:  `sum({a=~""})`,
		},
		"NonEmptyMatcher": {
			reason: ".+ never matches the empty string: the selector selects.",
			query:  `sum({a=~".+"})`,
			want:   true,
		},
		"WordBoundary": {
			reason: `\b does not match the empty string (no word around it).`,
			query:  `sum({a=~"\\b"})`,
			want:   true,
		},
		"NotWordBoundary": {
			reason: `\B does.`,
			query:  `sum({a=~"\\B"})`,
		},
		"NegatedEmpty": {
			reason: "!~ of an expression that matches the empty string never matches it.",
			query:  `sum({a!~".*"})`,
			want:   true,
		},
		"NegatedNonEmpty": {
			reason: "!~ of one that never matches the empty string always matches it.",
			query:  `sum({a!~".+"})`,
		},
		"CountedZero": {
			reason: "a{0,3} matches the empty string.",
			query:  `sum({a=~"a{0,3}"})`,
		},
		"SingleQuotedAndRaw": {
			reason: "Regular expressions in single quotes and backticks are read as such.",
			query:  "sum(x{a=~'5..', b!~`(?i)get|post`})",
			want:   true,
		},
		"PlaceholderInRegex": {
			reason: "A placeholder in a regular expression is read with its sample.",
			query:  `sum(x{a=~"{{revision}}-.*"})`,
			want:   true,
		},
		"NameTwice": {
			reason: "A name and a __name__ matcher are refused, whatever the matcher's expression.",
			query:  `sum(x{__name__=~"y.*"})`,
		},
		"RegexUnquoteError": {
			reason: "A string that does not unquote is left to the parser, which refuses it.",
			query:  `sum(x{a=~"\q"})`,
		},
		"CaseFolded": {
			reason: "A case-insensitive class within the bounds is a regular expression like any other.",
			query:  `sum(x{a=~"(?i)[a-z]+"})`,
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Check(tc.query)
			if diff := cmp.Diff(tc.want, got == nil); diff != "" {
				t.Errorf("%s\nCheck(%s) = %v: accepted -want, +got:\n%s", tc.reason, tc.query, got, diff)
			}
			if p := parsed(tc.query); p != tc.want {
				t.Errorf("%s\nPrometheus's parser, the regular expressions compiled: accepted %t, want %t", tc.reason, p, tc.want)
			}
		})
	}
}

// TestRegexBounds: what a query's regular expressions may cost Prometheus's
// parser (and the provider, which compiles them on every query) is bounded
// before anything parses them.
func TestRegexBounds(t *testing.T) {
	matchers := func(n int) string {
		var b strings.Builder
		b.WriteString("x{")
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`a=~"b"`)
		}
		return b.String() + "}"
	}
	cases := map[string]struct {
		reason string
		query  string
		want   string // a part of the error; "" for none
	}{
		"MostMatchers": {
			reason: "16 regular expression matchers are a query.",
			query:  matchers(16),
		},
		"TooManyMatchers": {
			reason: "Attack: a 17th is refused before the parser compiles any.",
			query:  matchers(17),
			want:   "more than 16 regular expression matchers (=~, !~) at byte 117",
		},
		"RegexInStringOrComment": {
			reason: "=~ in a string or a comment is no matcher.",
			query:  `x{a="=~\"b\""} # =~ "` + strings.Repeat("=~'x' ", 20) + "\n",
		},
		"LongestRegexes": {
			reason: "1,024 characters of regular expressions, over several matchers, are a query.",
			query:  `x{a=~"` + strings.Repeat(".*a", 200) + `", b!~"` + strings.Repeat("[bc]", 106) + `"}`,
		},
		"RegexesTooLong": {
			reason: "Attack: Go's parser allocates about 230 bytes for each character of .*a.*a...: a 1,025th character is refused before it parses.",
			query:  `x{a=~"` + strings.Repeat(".*a", 200) + `", b!~"` + strings.Repeat("[bc]", 106) + `c"}`,
			want:   "the regular expression at byte 612: the query's regular expressions are longer than 1024 characters",
		},
		"LengthInCharacters": {
			reason: "Their length counts characters: 1,000 Greek letters are 2,000 bytes and within it.",
			query:  `x{a=~"` + strings.Repeat("α", 1000) + `.*"}`,
		},
		"LiteralAlternativesNotCounted": {
			reason: "Alternatives of plain text (a list of pods), which Prometheus matches without parsing them, are not counted.",
			query:  `x{pod=~"` + strings.Repeat("web-0123456789|", 250) + `web"}`,
		},
		"MostUnicodeClasses": {
			reason: "8 Unicode classes are a query, in classes or not.",
			query:  `x{a=~"\\pL[\\pN\\p{Greek}]\\PL", b=~"\\pL\\pL\\pL\\pL"}`,
		},
		"TooManyUnicodeClasses": {
			reason: "Attack: each Unicode class costs the parser a copy of its table (13 KB for \\pL, 3 times that folded): a 9th is refused.",
			query:  `x{a=~"\\pL[\\pN\\p{Greek}]\\PL", b=~"\\pL\\pL\\pL\\pL\\pL"}`,
			want:   "the regular expression at byte 36: the query's regular expressions hold more than 8 Unicode classes",
		},
		"FoldedNarrowRanges": {
			reason: "Case-insensitive classes of a few letters, and one of every character (which folding skips), are a query.",
			query:  `x{a=~"(?i)[a-z0-9]+[\\x{0}-\\x{10FFFF}]"}`,
		},
		"FoldedWideRange": {
			reason: "Attack: Go's parser folds a range one character at a time (2 ms for this one): a range wider than 4,096 folding characters is refused.",
			query:  `x{a=~"(?i)[\\x{42}-\\x{1E942}]"}`,
			want:   "the regular expression at byte 5: the query's case-insensitive character classes span more than 4096 characters",
		},
		"FoldedScoped": {
			reason: "Folding turned on in a group counts from there on.",
			query:  `x{a=~"[\\x{42}-\\x{1E942}](?i:[\\x{42}-\\x{1E942}])"}`,
			want:   "span more than 4096 characters",
		},
		"UnfoldedWideRange": {
			reason: "Without case folding a range is two numbers, whatever its width.",
			query:  `x{a=~"[\\x{42}-\\x{1E942}]"}`,
		},
		"CountedRepetitions": {
			reason: "Fifty .{1000} compile to 50,000 instructions: a query (the provider compiles it in milliseconds).",
			query:  `x{a=~"` + strings.Repeat(".{1000}", 50) + `"}`,
		},
		"CountedRepetitionsTooLarge": {
			reason: "Attack: 66 of them are refused: the provider would compile them on every query.",
			query:  `x{a=~"` + strings.Repeat(".{1000}", 66) + `"}`,
			want:   "expand to more than 65536 instructions",
		},
		"RepeatedGroup": {
			reason: "Attack: a repetition copies all it repeats: 80 characters a thousand times are refused (Go's parser bounds the product of nested counts to 1,000, not what they repeat).",
			query:  `x{a=~"(?:` + strings.Repeat("ab", 40) + `){1000}"}`,
			want:   "expand to more than 65536 instructions",
		},
		"ErrorSaysWhere": {
			reason: "A regular expression that does not parse is named by its byte, with Go's reason.",
			query:  `sum(x{a=~"(5.."})`,
			want:   "query is not PromQL: the regular expression at byte 9: error parsing regexp: missing closing ): `(5..`",
		},
		"QuotedRegexLiteral": {
			reason: `\Q...\E quotes what would be a class: nothing in it counts.`,
			query:  `x{a=~"(?i)\\Q[\\x{42}-\\x{1E942}]\\pL\\pL\\pL\\pL\\pL\\pL\\pL\\pL\\pL\\E"}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Check(tc.query)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\nCheck(%s): %v", tc.reason, tc.query, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s\nCheck(%s) = %v, want an error saying %q", tc.reason, tc.query, err, tc.want)
			}
		})
	}
}

// FuzzRegexStandIn: whatever a matcher's regular expression, Check accepts
// the query exactly when Prometheus's parser, compiling it for real,
// does, unless a bound refuses it first.
func FuzzRegexStandIn(f *testing.F) {
	// \pc0 and \xff found that Prometheus reads expressions with
	// grafana/regexp's syntax (which refuses \pc, unlike Go's own), and
	// matches plain text without parsing it (even not UTF-8).
	for _, seed := range []string{"5..", ".*", "", "x|", `\b`, "a{0,3}", "(?i)[a-z]", "a)(", `\pL+`, "^$", "(a|b)*c", `[]a]`, `[^\n]`, `\pc0`, "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, re string) {
		for _, query := range []string{`x{a=~"` + Escape(re) + `"}`, `{a=~"` + Escape(re) + `"}`, `{a!~"` + Escape(re) + `", b="c"}`} {
			err := Check(query)
			if err != nil && !strings.Contains(err.Error(), errDoesNotParse) {
				return // A bound, or the query is too long.
			}
			if p := parsed(query); p != (err == nil) {
				t.Errorf("Check(%q) = %v, but Prometheus's parser, the expression compiled, accepts it: %t", query, err, p)
			}
		}
	})
}
