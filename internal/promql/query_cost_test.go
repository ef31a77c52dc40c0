package promql

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// worstAccepted is the worst query docs/performance.md says the shape
// bound admits (bounds_test.go's hostileMetricsXR): 4,096 bytes, 254
// multiplications and two label matchers.
func worstAccepted() string {
	operators := strings.Repeat("*x", 254)
	selector := `x_0{b="{{service}}",c="%s"}`
	pad := strings.Repeat("a", MaxQueryLength-len(selector)+2-len(operators))
	return fmt.Sprintf(selector, pad) + operators
}

// repeatTo repeats unit as often as fits in room bytes.
func repeatTo(unit string, room int) string { return strings.Repeat(unit, room/len(unit)) }

// checkCost is what one CheckOnce of a query never checked before costs:
// the bytes it allocates (what the assertions read: no machine's speed
// changes them) and the time it took (only shown).
func checkCost(query string) (uint64, time.Duration, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := CheckOnce(query)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took, err
}

// TestCheckCostBounded: the contract (API.md, Safety round 4) is that
// no spec the XRD admits makes a run take over 50 ms on 2 cores, and
// docs/metrics.md says the shape bound "keeps a query's check under a
// millisecond". The bound counts operator characters, parentheses and
// chains, but two parts of Prometheus's parser cost far more than any
// operator, and the bound does not see them:
//
//   - a regular expression matcher (=~, !~) is compiled by the parser
//     (labels.NewFastRegexMatcher): counted repetitions and Unicode classes
//     expand into hundreds of thousands of instructions;
//   - checkAST compares every label of on(...) with every label of
//     group_left(...)/group_right(...) and records one parse error per equal
//     pair: n*m errors, each formatted and kept until the parse ends.
//
// Each query is 4,096 bytes at most with one or two operators. The test
// counts the bytes a first check allocates, against the worst query the
// bound is documented to admit; the message shows the time.
func TestCheckCostBounded(t *testing.T) {
	room := MaxQueryLength - len(`x{a=~""}`)
	onGroup := func(kind string) string {
		labels := repeatTo("a,", (MaxQueryLength-len("x * on(a) group_left(a) x"))/2) + "a"
		return "x * on(" + labels + ") " + kind + "(" + labels + ") x"
	}
	cases := map[string]struct {
		reason string
		query  string
	}{
		"RegexCountedRepeats": {
			reason: "Attack: a 4,096-byte query of one regex matcher of counted repetitions (.{1000} over and over), which the shape bound admits and the check accepts, costs Prometheus's parser a quarter of a second and about 185 MB to compile: ten such metrics make a spec's first run take seconds.",
			query:  `x{a=~"` + repeatTo(`.{1000}`, room) + `"}`,
		},
		"RegexRepeatedGroups": {
			reason: "Attack: a regex of (?:a.*){1000} groups, accepted, costs about a second and 280 MB to compile; the 13-byte unit alone costs milliseconds.",
			query:  `x{a=~"` + repeatTo(`(?:a.*){1000}`, room) + `"}`,
		},
		"RegexUnicodeClasses": {
			reason: "Attack: a regex of \\pL classes (a Unicode class is hundreds of ranges), accepted, costs Prometheus's parser 58 MB and a third of a second.",
			query:  `x{a=~"` + repeatTo(`\\pL`, room) + `"}`,
		},
		"RegexCaseFoldedRepeats": {
			reason: "Attack: (?i)k{1000}: case folding turns each k into a class of three runes (k, K, the Kelvin sign), repeated a thousand times, over and over: 185 MB and a fifth of a second or more.",
			query:  `x{a=~"(?i)` + repeatTo(`k{1000}`, room-len("(?i)")) + `"}`,
		},
		"OnGroupLeftDuplicates": {
			reason: "Attack: x * on(a,a,…) group_left(a,a,…) x has one operator, yet Prometheus's checkAST compares each of the ~1,000 labels of on() with each of group_left()'s and records a parse error per equal pair: a million errors, 3 million allocations, 400 MB and seconds for one query (refused in the end, but only after all of it).",
			query:  onGroup("group_left"),
		},
		"OnGroupRightDuplicates": {
			reason: "Attack: the same with group_right.",
			query:  onGroup("group_right"),
		},
	}
	baseline, baseTook, err := checkCost(worstAccepted())
	if err != nil {
		t.Fatalf("the worst accepted query of docs/performance.md: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if len(tc.query) > MaxQueryLength {
				t.Fatalf("the query is %d bytes", len(tc.query))
			}
			if _, err := scan(tc.query); err != nil {
				t.Logf("scan refuses it already: %v", err)
				return
			}
			bytes, took, err := checkCost(tc.query)
			if bytes > 16*baseline {
				t.Errorf("%s\nCheckOnce of a %d-byte query allocated %d bytes in %v (the worst query the bound is documented to admit: %d bytes in %v), and said %v",
					tc.reason, len(tc.query), bytes, took, baseline, baseTook, err)
			}
		})
	}
}

// fill is prefix, unit repeated as often as fits and suffix: a query of
// MaxQueryLength characters at most.
func fill(prefix, unit, suffix string) string {
	room := MaxQueryLength - len(prefix) - len(suffix)
	return prefix + strings.Repeat(unit, room/len(unit)) + suffix
}

// allocated is the bytes one first check of each query allocates, summed.
func allocated(queries ...string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, q := range queries {
		_ = CheckOnce(q)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCheckCostOfErrorRecovery: Prometheus's parser recovers from some
// syntax errors and goes on, recording an error for each: a stray comma in
// a grouping or label list, an item it cannot read. 4,096 characters of
// "sum by(,,,…)(x)" (no operator, no regex, one parenthesis level) cost
// 1.6 MB and 24,500 allocations, 7 times the costliest query of
// BenchmarkCheckHostile (RegexLongest); ten of them, a spec the XRD
// admits, cost its first run 16 MB, and the query was refused only after
// the parser paid for it. A chain of subqueries without parentheses
// ("x[1:][1:]…") is quadratic in checkAST (SubqueryExpr.PositionRange
// recurses for each level's error). The shape bound refuses each before
// the parser runs (an empty list item, more than maxCommas commas, a
// range of a range), and says why: a first check of any of them, refused
// or not, costs at most 4 times RegexLongest.
func TestCheckCostOfErrorRecovery(t *testing.T) {
	const reason = "Attack: a query of stray commas in a grouping or label list, of items the parser cannot read, or of subqueries in a row makes Prometheus's parser record a parse error per item: the first check must cost no more than a few times the costliest query of BenchmarkCheckHostile"
	worst := allocated(`x{z=~"` + strings.Repeat(".*a", maxRegexLength/3) + `"}`) // BenchmarkCheckHostile's RegexLongest
	for name, unit := range map[string][3]string{
		"GroupingCommas": {"sum by(", ",", ")(x)"},
		"OnCommas":       {"x + on(", ",", ") x"},
		"MatcherCommas":  {"{", ",", "}"},
		"MatcherNoOp":    {"x{", "a,", "a}"},
		"GroupingNumber": {"sum by(", "1,", "1)(x)"},
		"SubqueryChain":  {"x", "[1:]", ""},
	} {
		t.Run(name, func(t *testing.T) {
			// Ten metrics, each its own query (a label name tells them
			// apart, so that none is found checked).
			queries := make([]string, 0, 10)
			for i := range 10 {
				q := fill(unit[0], unit[1], unit[2]+fmt.Sprintf(" or y%s%d", name, i))
				if len([]rune(q)) > MaxQueryLength {
					t.Fatalf("the query is %d characters", len([]rune(q)))
				}
				queries = append(queries, q)
			}
			one := allocated(queries[0])
			spec := allocated(queries[1:]...) + one
			err := CheckOnce(queries[0])
			if err == nil {
				t.Errorf("%s\nCheckOnce(%.40q…) = nil, want an error saying why", reason, queries[0])
			}
			if one > 4*worst {
				t.Errorf("%s\none first check of %.40q… allocated %d bytes (the costliest query of BenchmarkCheckHostile: %d); ten, a spec's first run, %d bytes; it said: %.100v",
					reason, queries[0], one, worst, spec, err)
			}
		})
	}
}
