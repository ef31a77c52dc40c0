package promql

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
)

// errText is an error's text, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCheck(t *testing.T) {
	padded := "vector(1) #"
	padded += strings.Repeat("x", MaxQueryLength-len(padded))

	cases := map[string]struct {
		reason string
		query  string
		// want is the error's text, or its start when prefix.
		want   string
		prefix bool
	}{
		"LengthInCharacters": {
			reason: "Attack: the XRD's maxLength: 4096 counts characters; a query of fewer than 4,096 characters that holds non-ASCII text (2,138 characters, 4,238 bytes) is no Fatal.",
			query:  `sum(x{service="{{service}}", team="` + strings.Repeat("α", 2100) + `"})`,
		},
		"APIExample": {
			reason: "The query of API.md's example, over several lines, with placeholders in strings and a range.",
			query: `sum(rate(requests_total{namespace="{{namespace}}", service="{{service}}", code=~"5.."}[{{interval}}]))
/ sum(rate(requests_total{namespace="{{namespace}}", service="{{service}}"}[{{interval}}]))`,
		},
		"EveryPlaceholderSingleQuoted": {
			reason: "Single-quoted strings take escapes as double-quoted ones do: every text placeholder may stand in one.",
			query:  `sum(x{ns='{{namespace}}', route='{{route}}', svc='{{service}}', rev='{{revision}}'} offset {{interval}})`,
		},
		"Scalar": {
			reason: "A scalar is one number.",
			query:  `scalar(sum(x{rev="{{revision}}"}))`,
		},
		"Subquery": {
			reason: "The interval stands in a subquery's range and step too.",
			query:  `max_over_time(sum(rate(x[1m]))[{{interval}}:{{interval}}])`,
		},
		"IntervalInString": {
			reason: "The interval's value is letters and digits: harmless in a string.",
			query:  `label_replace(sum(x), "window", "{{interval}}", "", "")`,
		},
		"PlaceholderInComment": {
			reason: "A comment ends at a line's end, which no escaped value holds: a placeholder there is inert.",
			query:  "sum(x) # revision {{revision}}\n",
		},
		"QuoteInComment": {
			reason: "A quote in a comment opens no string: the placeholder after the comment is in a real string.",
			query:  "sum(x) # don't\n + sum(y{rev=\"{{revision}}\"})",
		},
		"EscapedQuoteInString": {
			reason: "An escaped quote does not end a string: the placeholder after it is still inside.",
			query:  `sum(x{a="say \"{{revision}}\""})`,
		},
		"AtTheLimit": {
			reason: "A query of exactly MaxQueryLength bytes is allowed.",
			query:  padded,
		},
		"TooLong": {
			reason: "A query over MaxQueryLength bytes is refused before anything else reads it.",
			query:  padded + "x",
			want:   "query is 4097 characters, more than 4096",
		},
		"UnknownPlaceholder": {
			reason: "Only the five placeholders exist; the error lists them.",
			query:  `sum(x{pod="{{pod}}"})`,
			want:   `unknown placeholder "{{pod}}" at byte 11; known: {{namespace}}, {{route}}, {{service}}, {{revision}}, {{interval}}`,
		},
		"SpacedPlaceholder": {
			reason: "A placeholder is written without spaces.",
			query:  `sum(x{ns="{{ namespace }}"})`,
			want:   `unknown placeholder "{{ namespace }}" at byte 10`,
			prefix: true,
		},
		"UnknownPlaceholderQuotedBounded": {
			reason: "A far-away }} must not make the error quote the whole query.",
			query:  `sum(x{ns="{{` + strings.Repeat("a", 1000) + `}}"})`,
			want:   `unknown placeholder "{{` + strings.Repeat("a", maxPlaceholderNameScan-2) + `" at byte 10`,
			prefix: true,
		},
		"Unclosed": {
			reason: "Every {{ opens a placeholder, which }} must close.",
			query:  `sum(x{ns="{{namespace"})`,
			want:   `"{{" at byte 10 opens a placeholder that no "}}" closes`,
		},
		"BracesInString": {
			reason: "Every {{ opens a placeholder, even in a string: Expand could not tell otherwise.",
			query:  `label_replace(sum(x), "a", "{{x}}", "", "")`,
			want:   `unknown placeholder "{{x}}" at byte 28`,
			prefix: true,
		},
		"OutsideString": {
			reason: "A text value outside a string literal could change the query's structure: escaping protects strings only.",
			query:  `sum(x) by ({{revision}})`,
			want:   `placeholder {{revision}} at byte 11 is outside a string literal: its value is text, write it inside double quotes (such as revision="{{revision}}")`,
		},
		"OutsideStringAfterComment": {
			reason: "PromQL ends a comment at \\r as well as \\n: what follows is code.",
			query:  "sum(x) # c\r+ sum(y{ns={{namespace}}})",
			want:   `placeholder {{namespace}} at byte 22 is outside a string literal`,
			prefix: true,
		},
		"InBacktickString": {
			reason: "A backtick string takes no escapes: a value holding a backtick would end it.",
			query:  "sum(x{rev=`{{revision}}`})",
			want:   "placeholder {{revision}} at byte 11 is inside a backtick string, where no escape applies: write the string in double quotes",
		},
		"IntervalInBacktickString": {
			reason: "No placeholder stands in a backtick string, to keep the rule simple.",
			query:  "label_replace(sum(x), \"w\", `{{interval}}`, \"\", \"\")",
			want:   "placeholder {{interval}} at byte 28 is inside a backtick string",
			prefix: true,
		},
		"AfterBackslash": {
			reason: "A backslash before a placeholder would escape its value's first character, changing the value.",
			query:  `sum(x{rev="\{{revision}}"})`,
			want:   "placeholder {{revision}} at byte 12 follows a backslash, which would escape its value's first character",
		},
		"NotPromQL": {
			reason: "A query that does not parse is refused with the parser's error, at the position of the query as written.",
			query:  `sum(x{ns="{{namespace}}"}) foo`,
			want:   `query is not PromQL: 1:28: parse error: unexpected identifier "foo"`,
		},
		"UnknownFunction": {
			reason: "The parser knows Prometheus's functions.",
			query:  `summ(x)`,
			want:   `query is not PromQL: 1:1: parse error: unknown function with name "summ"`,
		},
		"Empty": {
			reason: "An empty query is no PromQL.",
			query:  ``,
			want:   `query is not PromQL: `,
			prefix: true,
		},
		"ParseErrorBounded": {
			reason: "The parser's error quotes the input: it is cut to 256 characters.",
			query:  `sum(x) ` + strings.Repeat("a", 2000),
			want:   `query is not PromQL: 1:8: parse error: unexpected identifier "` + strings.Repeat("a", 256-len(`1:8: parse error: unexpected identifier "`)) + `...(`,
			prefix: true,
		},
		"RangeVector": {
			reason: "A range vector is no number: refused before any query runs.",
			query:  `x{rev="{{revision}}"}[{{interval}}]`,
			want:   "query gives a range vector; it must give one number (an instant vector or a scalar)",
		},
		"String": {
			reason: "A string is no number.",
			query:  `"{{revision}}"`,
			want:   "query gives a string; it must give one number (an instant vector or a scalar)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errText(Check(tc.query))
			// CheckOnce says the same, when it checks and when it
			// finds the query checked.
			for range 2 {
				if once := errText(CheckOnce(tc.query)); once != got {
					t.Errorf("%s\nCheckOnce(...) = %q, Check(...) = %q", tc.reason, once, got)
				}
			}
			if tc.prefix && strings.HasPrefix(got, tc.want) && tc.want != "" {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCheckOnceKeeps: a query checked once is not parsed again. Parsing the
// worst queries the XRD admits allocates thousands of times; finding one
// checked, next to nothing (a count of allocations, which no machine's
// speed changes; BenchmarkCheckOnce measures the time).
func TestCheckOnceKeeps(t *testing.T) {
	cases := map[string]struct {
		reason string
		query  string
	}{
		"UnaryChain": {
			reason: "Attack: 4,096 characters of unary plus cost Prometheus's parser 25 ms each time it reads them.",
			query:  strings.Repeat("+", MaxQueryLength-len(`x{b="{{service}}"}`)) + `x{b="{{service}}"}`,
		},
		"Refused": {
			reason: "A query refused is kept refused: a spec that is a Fatal on every run checks it once too.",
			query:  strings.Repeat("-", MaxQueryLength-len(`x[{{interval}}]`)) + `x[{{interval}}]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := errText(CheckOnce(tc.query))
			if allocs := testing.AllocsPerRun(5, func() {
				if got := errText(CheckOnce(tc.query)); got != want {
					t.Errorf("%s\nCheckOnce(...) = %q, then %q", tc.reason, want, got)
				}
			}); allocs > 2 {
				t.Errorf("%s\nCheckOnce(...) of a query it checked allocates %.0f times: it checks it again", tc.reason, allocs)
			}
		})
	}
}

// TestCheckOnceCollapsesConcurrentChecks: the first checks of one query
// made at the same time (Crossplane reconciles a new spec, and calls a
// function several times a reconcile, in parallel) are one check, whose
// answer each caller gets.
func TestCheckOnceCollapsesConcurrentChecks(t *testing.T) {
	const callers = 8
	query := fmt.Sprintf(`sum(x{a="collapsed-%d"})`, time.Now().UnixNano())
	var mu sync.Mutex
	calls := 0
	entered, release := make(chan struct{}), make(chan struct{})
	checkQuery = func(q string) error {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release // The others come meanwhile.
		}
		return Check(q)
	}
	t.Cleanup(func() { checkQuery = Check })

	errs := make(chan error, callers)
	go func() { errs <- CheckOnce(query) }()
	<-entered
	for range callers - 1 {
		go func() { errs <- CheckOnce(query) }()
	}
	// The callers queue behind the check under way; one that comes after
	// it finds it kept. Either way nothing is checked twice.
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("CheckOnce(%q) = %v", query, err)
		}
	}
	if calls != 1 {
		t.Errorf("%d concurrent first CheckOnce of one query checked it %d times, want once", callers, calls)
	}
}

func TestSamplesKeepPositions(t *testing.T) {
	// Check parses the query with samples in place of placeholders; errors
	// point at the query as written only if each is as long as its
	// placeholder.
	for name, v := range samples {
		if p := placeholderOpen + name + placeholderClose; len(v) != len(p) {
			t.Errorf("sample %q of %s is %d bytes, want %d", v, p, len(v), len(p))
		}
	}
}

func TestExpand(t *testing.T) {
	values := Values{Namespace: "shop", Route: "web", Service: "web-canary", Revision: "v2", Interval: time.Minute}
	cases := map[string]struct {
		reason string
		query  string
		values Values
		want   string
	}{
		"EveryPlaceholder": {
			reason: "Each placeholder is replaced by its value; nothing else changes.",
			query:  `sum(rate(x{ns="{{namespace}}", route="{{route}}", svc="{{service}}", rev='{{revision}}'}[{{interval}}]))`,
			values: values,
			want:   `sum(rate(x{ns="shop", route="web", svc="web-canary", rev='v2'}[1m]))`,
		},
		"Escaped": {
			reason: "Backslash becomes \\\\, both quotes hex escapes valid in either kind of string.",
			query:  `x{rev="{{revision}}"}`,
			values: Values{Revision: `a"b\c'd`},
			want:   `x{rev="a\x22b\\c\x27d"}`,
		},
		"ControlCharacters": {
			reason: "Control characters become escapes: a newline would end a comment or a string.",
			query:  `x{rev="{{revision}}"}`,
			values: Values{Revision: "a\nb\rc\td\x00e\x7f"},
			want:   `x{rev="a\nb\rc\td\x00e\x7f"}`,
		},
		"NonPrinting": {
			reason: "Non-printing characters become \\u escapes, so that no reader is fooled; printing ones stay.",
			query:  `x{rev="{{revision}}"}`,
			values: Values{Revision: "é\u2028\u0085\u202e😀\U000e0001"},
			want:   `x{rev="é\u2028\u0085\u202e😀\U000e0001"}`,
		},
		"InvalidUTF8": {
			reason: "A byte that is not UTF-8 becomes a \\x escape.",
			query:  `x{rev="{{revision}}"}`,
			values: Values{Revision: "a\xffb"},
			want:   `x{rev="a\xffb"}`,
		},
		"NoRecursion": {
			reason: "A value that reads as a placeholder is never expanded again.",
			query:  `x{rev="{{revision}}", ns="{{namespace}}"}`,
			values: Values{Revision: "{{namespace}}", Namespace: "shop"},
			want:   `x{rev="{{namespace}}", ns="shop"}`,
		},
		"UnknownKept": {
			reason: "What is not a known placeholder is kept as written (Check refuses it).",
			query:  `x{a="{{pod}}", b="{{{revision}}"}`,
			values: values,
			want:   `x{a="{{pod}}", b="{v2"}`,
		},
		"Unclosed": {
			reason: "An unclosed placeholder is kept as written (Check refuses it).",
			query:  `x{a="{{revision"}`,
			values: values,
			want:   `x{a="{{revision"}`,
		},
		"NoPlaceholder": {
			reason: "A query without placeholders is returned as written.",
			query:  `sum(up)`,
			values: values,
			want:   `sum(up)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expand(tc.query, tc.values)); diff != "" {
				t.Errorf("%s\nExpand(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// matcherValue parses query and returns the value of its label matcher
// named label.
func matcherValue(t *testing.T, query, label string) string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", query, err)
	}
	var got []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				if m.Name == label {
					got = append(got, m.Value)
				}
			}
		}
		return nil
	})
	if len(got) != 1 {
		t.Fatalf("ParseExpr(%q): %d matchers of %q, want 1: %q", query, len(got), label, got)
	}
	return got[0]
}

func TestExpandStaysInsideItsString(t *testing.T) {
	// Expanded into a checked query, whatever a value holds, PromQL reads
	// back exactly that value from the string it stands in, and the query
	// keeps its structure (one selector, its other matcher intact).
	revisions := map[string]string{
		"QuoteAndBackslash": `a"b\c`,
		"SingleQuote":       `it's`,
		"Backtick":          "a`b",
		"BreakOut":          `"} or vector(1) or x{a="`,
		"BreakOutSingle":    `'} or vector(1) or x{a='`,
		"TrailingBackslash": `a\`,
		"Newline":           "a\nb",
		"CarriageReturn":    "a\r# b",
		"Controls":          "\x00\x01\x1b[31m\x7f",
		"Unicode":           "é\u2028\u0085\u202e😀",
		"Braces":            "{{revision}}}}",
		"Hash":              "# not a comment",
		"Empty":             "",
		"InvalidUTF8":       "a\xffb\xc3",
	}
	queries := map[string]string{
		"DoubleQuoted": `sum(x{rev="{{revision}}", keep="yes"})`,
		"SingleQuoted": `sum(x{rev='{{revision}}', keep='yes'})`,
	}
	for qname, query := range queries {
		if err := Check(query); err != nil {
			t.Fatalf("Check(%q): %v", query, err)
		}
		for rname, rev := range revisions {
			t.Run(qname+"/"+rname, func(t *testing.T) {
				expanded := Expand(query, Values{Revision: rev})
				if got := matcherValue(t, expanded, "rev"); got != rev {
					t.Errorf("Expand(%q) = %q: PromQL reads the revision back as %q, want %q", query, expanded, got, rev)
				}
				if got := matcherValue(t, expanded, "keep"); got != "yes" {
					t.Errorf("Expand(%q) = %q: the other matcher reads %q, want %q", query, expanded, got, "yes")
				}
			})
		}
	}
}

func TestDuration(t *testing.T) {
	cases := map[string]struct {
		reason string
		d      time.Duration
		want   string
	}{
		"Minute":       {reason: "Whole minutes are minutes.", d: time.Minute, want: "1m"},
		"NinetySec":    {reason: "A duration is written in its largest whole unit.", d: 90 * time.Second, want: "90s"},
		"Milliseconds": {reason: "Milliseconds are PromQL's smallest unit.", d: 1500 * time.Millisecond, want: "1500ms"},
		"Hours":        {reason: "Whole hours are hours.", d: 36 * time.Hour, want: "36h"},
		"Day":          {reason: "Whole days are days.", d: 48 * time.Hour, want: "2d"},
		"SubMs":        {reason: "Less than a millisecond is dropped.", d: time.Second + time.Microsecond, want: "1s"},
		"Zero":         {reason: "Zero is 0s.", d: 0, want: "0s"},
		"Negative":     {reason: "Less than zero is 0s.", d: -time.Minute, want: "0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Duration(tc.d)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDuration(%s): -want, +got:\n%s", tc.reason, tc.d, diff)
			}
			// Prometheus reads it back as the same duration.
			if tc.d >= time.Millisecond {
				if _, err := parser.NewParser(parser.Options{}).ParseExpr("x[" + got + "]"); err != nil {
					t.Errorf("Duration(%s) = %q does not parse as a range: %v", tc.d, got, err)
				}
			}
		})
	}
}

func FuzzExpand(f *testing.F) {
	for _, seed := range []string{`a"b\c`, `'`, "\n", "`", "\xff", "{{namespace}}", `"} or vector(1) or x{a="`, "\u2028"} {
		f.Add(seed)
	}
	const query = `sum(x{rev="{{revision}}", keep='yes'})`
	f.Fuzz(func(t *testing.T, rev string) {
		// Whatever a value holds, PromQL reads it back from its string,
		// and the query keeps its structure.
		expanded := Expand(query, Values{Revision: rev})
		if got := matcherValue(t, expanded, "rev"); got != rev {
			t.Errorf("Expand(%q) = %q: PromQL reads the revision back as %q, want %q", query, expanded, got, rev)
		}
		if got := matcherValue(t, expanded, "keep"); got != "yes" {
			t.Errorf("Expand(%q) = %q: the other matcher reads %q", query, expanded, got)
		}
	})
}

func FuzzCheckedQueryExpands(f *testing.F) {
	for _, seed := range []string{
		`sum(rate(x{ns="{{namespace}}", svc='{{service}}'}[{{interval}}]))`,
		"sum(x) # {{revision}}\n + sum(y{r=\"{{route}}\"})",
		`sum(x{a="say \"{{revision}}\""})`,
		"label_replace(sum(x), \"w\", \"{{interval}}\", \"\", \"\")",
	} {
		f.Add(seed, `a"b\c`+"\n`'")
	}
	f.Fuzz(func(t *testing.T, query, value string) {
		// A query Check accepts parses once expanded, whatever the values:
		// a value cannot end its string and break the query's syntax. Only
		// what PromQL asks of the values themselves may fail: a matcher's
		// regular expression, a metric or label name that must not be
		// empty (the kinds of values are never empty) or must be UTF-8.
		if Check(query) != nil {
			return
		}
		value = strings.ToValidUTF8(value, "?") + "v"
		v := Values{Namespace: value, Route: value, Service: value, Revision: value, Interval: 90 * time.Second}
		expanded := Expand(query, v)
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(expanded); err != nil && !strings.Contains(err.Error(), "error parsing regexp") {
			t.Errorf("Check(%q) passed, but expanded with %q it does not parse: %q: %v", query, value, expanded, err)
		}
		if sample := expand(query, func(name string) string { return samples[name] }); len(sample) != len(query) {
			t.Errorf("Check(%q): its samples moved positions", query)
		}
	})
}

// binaryOperators counts the binary operators of a parsed expression.
func binaryOperators(e parser.Expr) int {
	n := 0
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if _, ok := node.(*parser.BinaryExpr); ok {
			n++
		}
		return nil
	})
	return n
}

// TestKeywordOperatorsCounted: the shape bound says "at most 256
// operators" (docs/performance.md, docs/metrics.md) and counts the
// characters +-*/%^=!<>, and PromQL's set operators and atan2 are words:
// a chain of 680 "and", 800 "or" or 510 "atan2" passed the bound, and cost
// the parser (whose BinaryExpr.Type() walks the chain below each node) 3
// to 4 times the worst query the bound is documented to admit. Whatever
// the bound admits parses into at most maxOperators binary operators.
func TestKeywordOperatorsCounted(t *testing.T) {
	for name, q := range map[string]string{
		"And":    repeatTo("x and ", MaxQueryLength-1) + "x",
		"Or":     repeatTo("x or ", MaxQueryLength-1) + "x",
		"Unless": repeatTo("x unless ", MaxQueryLength-1) + "x",
		"Atan2":  repeatTo("1 atan2 ", MaxQueryLength-1) + "1",
	} {
		t.Run(name, func(t *testing.T) {
			if CheckOnce(q) != nil {
				return // Refused: the bound holds.
			}
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
			if err != nil {
				t.Fatal(err)
			}
			if n := binaryOperators(expr); n > maxOperators {
				start := time.Now()
				_ = Check(q)
				t.Errorf("Attack: the shape bound admits %d binary operators (at most %d, docs/performance.md), written as keywords the scan does not count; Check took %v on this query",
					n, maxOperators, time.Since(start))
			}
		})
	}
}

// labelList is n labels named by a prefix, comma-separated.
func labelList(prefix string, n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(labels, ",")
}

func TestCheckShape(t *testing.T) {
	// Each operator of a query costs Prometheus's parser, and a chain of
	// them its square: a query's shape is bounded before the parser reads
	// it, so no query the XRD admits makes a run wait for it.
	cases := map[string]struct {
		reason string
		query  string
		want   string // a part of the error; "" for none
	}{
		"MostOperators": {
			reason: "256 operators are a query.",
			query:  "x" + strings.Repeat("*x", 256),
		},
		"TooManyOperators": {
			reason: "Attack: 257 operators are refused before the parser reads them.",
			query:  "x" + strings.Repeat("*x", 257),
			want:   "more than 256 operators",
		},
		"LongestChain": {
			reason: "8 operators in a row are a query.",
			query:  "x*" + strings.Repeat("-", 7) + "x",
		},
		"ChainTooLong": {
			reason: "Attack: 4,096 characters of unary operators take the parser 30 ms; 9 in a row are refused.",
			query:  strings.Repeat("+", 9) + "x",
			want:   "more than 8 operators in a row at byte 8",
		},
		"ChainThroughParentheses": {
			reason: "Attack: -(-(-(x))) is a chain too.",
			query:  strings.Repeat("-(", 9) + "x" + strings.Repeat(")", 9),
			want:   "more than 8 operators in a row",
		},
		"ChainWithSpaces": {
			reason: "Spaces do not break a chain.",
			query:  strings.Repeat("- ", 9) + "x",
			want:   "more than 8 operators in a row",
		},
		"GroupingLists": {
			reason: "Grouping and matcher lists as people write them, a trailing comma too (PromQL takes one), are a query.",
			query: `sum by (namespace, service,) (rate(x{a="1", b!="2",}[5m])) / on(namespace) group_left(team, owner) ` +
				`sum without(pod)(y{c=~"a|b"}) or count by() (z) and ignoring(a, b) w`,
		},
		"Subqueries": {
			reason: "A subquery of a function's answer, nested in another, with offset and @, and a range beside a subquery in a function's arguments, are a query.",
			query: `min_over_time(max_over_time(rate(x[1m])[10m:1m] offset 5m)[1h:5m] @ 1700000000) + ` +
				`quantile_over_time(0.9, (x - y)[{{interval}}:]) + predict_linear(x[1h], 60) + max_over_time(x[5m] offset 1m)`,
		},
		"EmptyListItem": {
			reason: "Attack: a grouping list of stray commas makes the parser record an error per comma (1.6 MB for 4,096 characters): an empty item is refused before it runs.",
			query:  "sum by(a,,b)(x)",
			want:   `query has an empty item in a list at byte 9 (a comma after ","): Prometheus's parser records an error for each and goes on, at a cost nothing else bounds`,
		},
		"EmptyFirstItem": {
			reason: "Attack: a list that begins with a comma, of labels, matchers or arguments, spaces and comments between or not.",
			query:  "x{ # a comment\n , a=\"1\"}",
			want:   `query has an empty item in a list at byte 16 (a comma after "{"): Prometheus's parser records an error for each and goes on, at a cost nothing else bounds`,
		},
		"MostCommas": {
			reason: "256 commas are a query.",
			query:  "sum by(" + strings.Repeat("a,", 256) + "a)(x)",
		},
		"TooManyCommas": {
			reason: "Attack: 257 are refused, before the parser records an error for each item it cannot read ({a,a,...}).",
			query:  "x{" + strings.Repeat(`a,`, 257) + `a}`,
			want:   "query has more than 256 commas: Prometheus's parser records an error for each item of a list it cannot read, and goes on; split the query",
		},
		"RangeChain": {
			reason: "Attack: a subquery of a subquery is no PromQL, and a chain of them (x[1:][1:]...) is quadratic in the parser's checks: a second range in a row is refused.",
			query:  "x[1m:] offset 1m [1m:]",
			want:   "query applies more than 1 ranges or subqueries in a row at byte 17: a subquery of a range is no PromQL, and Prometheus's parser pays for each level again",
		},
		"DeepestParentheses": {
			reason: "32 parentheses deep are a query.",
			query:  strings.Repeat("(", 32) + "x" + strings.Repeat(")", 32),
		},
		"TooDeep": {
			reason: "Attack: 33 are refused.",
			query:  strings.Repeat("(", 33) + "x" + strings.Repeat(")", 33),
			want:   "more than 32 deep at byte 32",
		},
		"OperatorsInStrings": {
			reason: "What a string or a comment holds is no operator.",
			query:  `x{a="` + strings.Repeat("+", 300) + `"} # ` + strings.Repeat("-", 300),
		},
		"KeywordOperators": {
			reason: "Attack: and, or, unless and atan2 are operators written as words: 257 of them are refused like 257 symbols.",
			query:  "x" + strings.Repeat(" and x", 100) + strings.Repeat(" OR x", 100) + strings.Repeat(" unless x", 56) + " atan2 x",
			want:   "more than 256 operators",
		},
		"KeywordsInNames": {
			reason: "A word that holds a keyword (android, order, on_call, x:and) is a name, not an operator.",
			query:  "android" + strings.Repeat(" + order_total{on_call=\"x\"} + job:and", 80),
		},
		"KeywordChain": {
			reason: "A keyword operator counts toward a chain as a symbol does.",
			query:  "x and " + strings.Repeat("-", 8) + "x",
			want:   "more than 8 operators in a row at byte 13",
		},
		"MostGroupingLabels": {
			reason: "32 labels in on() and group_left() are a query.",
			query:  "x * on(" + labelList("l", 32) + ") group_left(" + labelList("m", 32) + ") y",
		},
		"TooManyGroupingLabels": {
			reason: "Attack: Prometheus's parser compares each label of on() with each of group_left(): a 33rd is refused.",
			query:  "x * on(" + labelList("l", 32) + ") group_left(" + labelList("m", 33) + ") y",
			want:   "group_left(...) at byte 126 lists more than 32 labels",
		},
		"QuotedGroupingLabels": {
			reason: "Labels written as strings count, in any case of the keyword.",
			query:  "x * IGNORING(" + strings.Repeat(`"a.b",`, 33) + ") y",
			want:   "ignoring(...) at byte 4 lists more than 32 labels",
		},
		"GroupLeftAlone": {
			reason: "group_left without a list is no list: what follows is not counted.",
			query:  "x * on(a) group_left y + sum by (" + labelList("l", 40) + ") (z)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Check(tc.query)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\nCheck(...): %v", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s\nCheck(...) = %v, want an error saying %q", tc.reason, err, tc.want)
			}
		})
	}
}
