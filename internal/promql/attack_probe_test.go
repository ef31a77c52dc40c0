package promql

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// probeFill is prefix, unit repeated as often as fits and suffix: a query
// of MaxQueryLength characters at most.
func probeFill(prefix, unit, suffix string) string {
	room := MaxQueryLength - len(prefix) - len(suffix)
	return prefix + strings.Repeat(unit, room/len(unit)) + suffix
}

// probeAllocated is the bytes one first check of each query allocates,
// summed.
func probeAllocated(queries ...string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, q := range queries {
		_ = CheckOnce(q)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestProbeParserErrorRecoveryCost: docs/metrics.md says "no query the XRD
// admits costs its check more than about a millisecond
// (BenchmarkCheckHostile: every bound, and every query that once cost
// most), ten of them a spec's first run 7 to 9 ms", and API.md (Safety
// round 4) bounds any run of any spec the XRD admits at 50 ms on 2 cores.
// The shape bound counts operators, chains, parentheses and the labels of
// on()/ignoring()/group_left()/group_right() written as words or strings,
// and the function reads regular expressions itself; nothing bounds what
// Prometheus's parser spends recovering from syntax errors. Its grammar
// has error productions in grouping and label lists: each stray comma
// records a parse error and the parse goes on. 4,096 characters of
// "sum by(,,,,…)(x)" (no operator, no regex, one parenthesis level) cost
// 1.6 MB and 24,500 allocations, 7 times the costliest query of
// BenchmarkCheckHostile (RegexLongest, 230 KB, 1,085 allocations) and 16
// times the worst accepted one; 1.5 to 15 ms each on this 2-core machine
// (BenchmarkProbeParserErrorRecovery). Ten of them, a spec the XRD admits,
// cost its first run 16 MB. The query is refused in the end, but only
// after the parser paid for it. A chain of subqueries without parentheses
// ("x[1:][1:]…", brackets are not counted) is quadratic in checkAST
// (SubqueryExpr.PositionRange recurses for each level's error): 3 to 7 ms.
func TestProbeParserErrorRecoveryCost(t *testing.T) {
	const reason = "Attack: a query of stray commas in a grouping or label list, which no bound of the shape sees, makes Prometheus's parser record a parse error per comma: the first check costs several times the documented worst query"
	worst := probeAllocated(`x{z=~"` + strings.Repeat(".*a", maxRegexLength/3) + `"}`) // BenchmarkCheckHostile's RegexLongest
	for name, unit := range map[string][3]string{
		"GroupingCommas": {"sum by(", ",", ")(x)"},
		"OnCommas":       {"x + on(", ",", ") x"},
		"MatcherCommas":  {"{", ",", "}"},
	} {
		t.Run(name, func(t *testing.T) {
			// Ten metrics, each its own query (a label name tells them
			// apart, so that none is found checked).
			var queries []string
			for i := range 10 {
				q := probeFill(unit[0], unit[1], unit[2]+fmt.Sprintf(" or y%s%d", name, i))
				if len([]rune(q)) > MaxQueryLength {
					t.Fatalf("the query is %d characters", len([]rune(q)))
				}
				if _, err := scan(q); err != nil {
					t.Fatalf("the shape bound refuses it: %v", err)
				}
				queries = append(queries, q)
			}
			one := probeAllocated(queries[0])
			spec := probeAllocated(queries[1:]...) + one
			if one > 4*worst {
				t.Errorf("%s\none first check of %.40q… allocated %d bytes (the costliest query of BenchmarkCheckHostile: %d); ten, a spec's first run, %d bytes; it said: %.100v",
					reason, queries[0], one, worst, spec, CheckOnce(queries[0]))
			}
		})
	}
}

func BenchmarkProbeParserErrorRecovery(b *testing.B) {
	for name, q := range map[string]string{
		"GroupingCommas": probeFill("sum by(", ",", ")(x)"),
		"MatcherCommas":  probeFill("{", ",", "}"),
		"SubqueryChain":  probeFill("x", "[1:]", ""),
		"RegexLongest":   `x{z=~"` + strings.Repeat(".*a", maxRegexLength/3) + `"}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Check(q)
			}
		})
	}
}
