package promql

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// apiExample is the query of API.md's example.
const apiExample = `sum(rate(requests_total{namespace="{{namespace}}", service="{{service}}", code=~"5.."}[{{interval}}]))
/ sum(rate(requests_total{namespace="{{namespace}}", service="{{service}}"}[{{interval}}]))`

func BenchmarkCheck(b *testing.B) {
	for b.Loop() {
		if err := Check(apiExample); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckLongest(b *testing.B) {
	// A query of MaxQueryLength bytes: 100 selectors summed.
	var q strings.Builder
	q.WriteString(`sum(x{rev="{{revision}}"}[{{interval}}])`)
	for q.Len() < MaxQueryLength-60 {
		fmt.Fprintf(&q, ` + sum(rate(x%d{rev="{{revision}}"}[{{interval}}]))`, q.Len())
	}
	query := strings.Replace(q.String(), `sum(x{rev="{{revision}}"}[{{interval}}])`, `sum(rate(x{rev="{{revision}}"}[{{interval}}]))`, 1)
	if err := Check(query); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(query)))
	for b.Loop() {
		_ = Check(query)
	}
}

func BenchmarkExpand(b *testing.B) {
	v := Values{Namespace: "shop", Route: "web", Service: "web-canary", Revision: `v2"x`, Interval: time.Minute}
	for b.Loop() {
		_ = Expand(apiExample, v)
	}
}

func BenchmarkAnswer(b *testing.B) {
	body := []byte(answerOne)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, why, _ := answer(body, redact.Secrets{}); why != "" {
			b.Fatal(why)
		}
	}
}

func BenchmarkAnswerManySeries(b *testing.B) {
	// An answer of nearly MaxAnswer bytes of series: what the decoder keeps
	// stays one series.
	var s strings.Builder
	s.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	series := `{"metric":{"pod":"web-%06d"},"value":[1700000000.123,"1"]}`
	for i := 0; s.Len() < MaxAnswer-100; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, series, i)
	}
	s.WriteString(`]}}`)
	body := []byte(s.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, outcome := answer(body, redact.Secrets{}); outcome != OutcomeNoData {
			b.Fatal(outcome)
		}
	}
}

func BenchmarkCheckHostile(b *testing.B) {
	// Queries of at most MaxQueryLength characters chosen to cost the
	// check most: regular expressions (the function reads them, the
	// parser compiled them before it got stand-ins), deep nesting, long
	// chains, keyword operators, grouping lists. Many are refused now, by
	// a bound: what that costs is measured too.
	regexes := func(unit string, n int) string {
		var q strings.Builder
		q.WriteString("x")
		for i := range n {
			// Each matcher's share of the characters a query's
			// regular expressions may have.
			fmt.Fprintf(&q, `%sa%d=~"%s"`, map[bool]string{true: "{", false: ","}[i == 0], i, strings.Repeat(unit, maxRegexLength/n/len(unit)))
		}
		return q.String() + "}"
	}
	queries := map[string]string{
		"RegexStars":          `x{a=~"` + strings.Repeat(".*a", 1300) + `"}`,
		"RegexAlts":           `x{a=~"` + strings.Repeat("(a|b|c)*", 500) + `"}`,
		"RegexOptions":        `x{a=~"` + strings.Repeat("a?", 1000) + strings.Repeat("a", 1000) + `"}`,
		"RegexLongest":        `x{a=~"` + strings.Repeat(".*a", maxRegexLength/3) + `"}`,
		"RegexMatchers":       regexes(".*a", maxRegexes),
		"RegexCounted":        `x{a=~"` + strings.Repeat(".{1000}", 65) + `"}`,
		"RegexCountedRefused": `x{a=~"` + strings.Repeat(".{1000}", 584) + `"}`,
		"RegexUnicode":        `x{a=~"` + strings.Repeat(`(?i)\\pL`, maxUnicodeClasses) + strings.Repeat("ab", 400) + `"}`,
		"RegexFolded":         `x{a=~"(?i)` + strings.Repeat(`[\\x{100}-\\x{1ff}]`, maxFoldedRunes/256) + strings.Repeat("ab", 350) + `"}`,
		"Nesting":             strings.Repeat("(", 2047) + "x" + strings.Repeat(")", 2047),
		"NegNesting":          strings.Repeat("-(", 1365) + "x" + strings.Repeat(")", 1365),
		"Subqueries":          strings.Repeat("sum_over_time((", 186) + "x" + strings.Repeat(")[1m:])", 186),
		"Unary":               strings.Repeat("-", 4095) + "1",
		"Binary":              strings.Repeat("x + ", 1023) + "x",
		"KeywordOperators":    strings.Repeat("x and ", 256) + "x",
		"GroupingLabels":      "x * on(" + strings.Repeat("a,", 31) + "a) group_left(" + strings.Repeat("b,", 31) + "b) y",
		"GroupingCommas":      fill("sum by(", ",", ")(x)"),
		"MatcherCommas":       fill("{", ",", "}"),
		"MatcherNoOp":         fill("x{", "a,", "a}"),
		"Commas":              "sum by(" + strings.Repeat("a,", maxCommas) + "a)(x)",
		"SubqueryChain":       fill("x", "[1:]", ""),
	}
	for name, q := range queries {
		if n := len([]rune(q)); n > MaxQueryLength {
			b.Fatalf("%s is %d characters", name, n)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Check(q)
			}
		})
	}
}

func BenchmarkCheckOnce(b *testing.B) {
	// The worst query the shape bound admits found checked: what every run
	// after the first pays for it. (A unary chain, which this measured,
	// is refused since.)
	query := worstAccepted()
	if err := CheckOnce(query); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = CheckOnce(query)
	}
}

func BenchmarkWebAnswerWorst(b *testing.B) {
	// The most a web provider's answer is decoded whole: maxWebValues
	// values, objects of long strings up to nearly MaxAnswer bytes, and a
	// jsonPath whose filter walks them all.
	var s strings.Builder
	s.WriteString(`{"items":[`)
	// Each item is three values to jsonValues: its object, and the comma
	// before each of its two fields' values but the first.
	for i := 0; s.Len() < MaxAnswer-200 && 3*i < maxWebValues-8; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"n":"%s","v":%d}`, strings.Repeat("x", 40), i)
	}
	s.WriteString(`],"ratio":0.5}`)
	body := []byte(s.String())
	if n := jsonValues(body); n > maxWebValues {
		b.Fatalf("the answer has %d values, more than the bound", n)
	}
	w := webAPI{jsonPath: `{.items[?(@.v==-1.0)].v}`}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, outcome := w.answer(body, redact.Secrets{}); outcome != OutcomeNoData {
			b.Fatal(outcome)
		}
	}
}

func BenchmarkDatadogAnswerManySeries(b *testing.B) {
	// An answer of nearly MaxAnswer bytes of series: what the decoder keeps
	// stays one series.
	var s strings.Builder
	s.WriteString(`{"status":"ok","series":[`)
	for i := 0; s.Len() < MaxAnswer-100; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"scope":"pod:web-%06d","pointlist":[[1700000000000.0,1],[1700000020000.0,null]]}`, i)
	}
	s.WriteString(`]}`)
	body := []byte(s.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, outcome := (datadogAPI{}).answer(body, redact.Secrets{}); outcome != OutcomeNoData {
			b.Fatal(outcome)
		}
	}
}
