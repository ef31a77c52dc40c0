package expr

import (
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync/atomic"
	"testing"
)

// seeds makes the patterns of each run of a benchmark new to the process,
// across its runs too.
var seeds atomic.Int64

// fill repeats unit up to n bytes (whole units only).
func fill(prefix, unit, suffix string, n int) string {
	return prefix + strings.Repeat(unit, (n-len(prefix)-len(suffix))/len(unit)) + suffix
}

// hostilePatterns are patterns of at most MaxPatternLength bytes that make
// Go's parser or compiler work hardest for each kind of construct, each
// with tag (an optional group that makes it new) at its start.
func hostilePatterns(tag string) map[string]string {
	n := MaxPatternLength
	return map[string]string{
		"Literal":          fill(tag, "a", "", n),
		"AnchoredLiteral":  fill("^"+tag, "a", "$", n),
		"Dots":             fill(tag, ".", "", n),
		"DotStars":         fill(tag, ".*", "", n),
		"Groups":           fill(tag, "(a)", "", n),
		"Nested":           tag + strings.Repeat("(", 340) + strings.Repeat(")", 340),
		"Alternation":      fill(tag, "ab|", "c", n),
		"AltPrefixes":      fill(tag, "abcdefgh|abcdefgi|", "x", n),
		"Classes":          fill(tag, "[a-z]", "", n),
		"AnchoredClasses":  fill("^"+tag, "[a-z]", "$", n),
		"Tables":           fill(tag, `\pL`, "", n),
		"AnchoredTables":   fill("^"+tag, `\pL`, "$", n),
		"NegatedTables":    fill(tag, `\PL`, "", n),
		"TablesInClass":    fill(tag+"[", `\pL`, "]", n),
		"TwoTablesClasses": fill(tag, `[\pL\pN]`, "", n),
		"FoldedTables":     fill(tag+"(?i)", `\pL`, "", n),
		"FoldedRanges":     fill(tag+"(?i)", "[Ā-𞥃]", "", n),
		"FoldedClass":      fill(tag+"(?i)[", "Ā-𞥃", "]", n),
		"FoldedHexRanges":  fill(tag+"(?i)", `[\x{100}-\x{1E943}]`, "", n),
		"FoldedASCII":      fill(tag+"(?i)", "[a-z]", "", n),
		"FoldedLiteral":    fill(tag+"(?i)", "k", "", n),
		"Repeats":          fill(tag, "a{1000}", "", n),
		"TableRepeats":     fill(tag, `\pL{1000}`, "", n),
		"GroupRepeats":     fill(tag, "(a){1000}", "", n),
		"AnchoredRepeats":  fill("^"+tag, "(?:a|b){1000}", "$", n),
	}
}

// BenchmarkPatternCharge measures, for each hostile pattern, what each
// step of a pattern's first use in an evaluation takes per unit of cost
// charged before it: parsing (charged parseCost), and compiling with
// regexp.Compile (which parses again: charged parseCost plus the
// program's size). docs/reference.md quotes the worst.
func BenchmarkPatternCharge(b *testing.B) {
	for name, p := range hostilePatterns("") {
		parsed, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		insts, _ := programSize(parsed)
		pc := parseCost(p)
		b.Run(name+"/Parse", func(b *testing.B) {
			for b.Loop() {
				if _, err := syntax.Parse(p, syntax.Perl); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pc), "ns/unit")
			b.ReportMetric(float64(pc), "units")
		})
		b.Run(name+"/Compile", func(b *testing.B) {
			for b.Loop() {
				if _, err := regexp.Compile(p); err != nil {
					b.Fatal(err)
				}
			}
			charged := pc + insts*compileCostPerInst
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(charged), "ns/unit")
			b.ReportMetric(float64(charged), "units")
		})
	}
}

// BenchmarkMatchWork measures what Go's regexp takes per unit of work
// (the string's length plus one, times the program's size) for the
// slowest patterns known, each over a string that makes its work
// MaxMatchWork: the backtracker (programs up to 500 instructions over
// short strings) and the NFA (larger ones) with every thread alive, and
// a one-pass program. It justifies matchCostDivisor.
func BenchmarkMatchWork(b *testing.B) {
	for name, tc := range map[string]struct{ pattern, unit string }{
		"Backtrack":      {strings.Repeat("(?:a|b)*", 50) + "z", "ab"},
		"BacktrackSmall": {strings.Repeat("(?:a|b)*", 5) + "z", "ab"},
		"BacktrackDots":  {strings.Repeat(".*a", 60) + "z", "a"},
		"NFA":            {strings.Repeat("(?:a|b)*", 200) + "z", "ab"},
		"NFAClasses":     {strings.Repeat("[a-z]?", 400) + "Z", "abc"},
		"NFACaptures":    {strings.Repeat("(a*)", 150) + "z", "a"},
		"NFACaptures300": {strings.Repeat("(a*)", 300) + "z", "a"},
		"NFAOptional":    {strings.Repeat("a?", 400) + "z", "a"},
		"BacktrackOpt":   {"(?:a?){240}z", "a"},
		"OnePass":        {"^(?:a|b){300}z$", "ab"},
		"Literal":        {strings.Repeat("ab", 50) + "c", "ab"},
	} {
		parsed, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			b.Fatal(err)
		}
		insts, _ := programSize(parsed)
		size := max(insts, uint64(len(tc.pattern)))
		n := int(MaxMatchWork/size) - 1
		s := strings.Repeat(tc.unit, n/len(tc.unit)+1)[:n]
		re := regexp.MustCompile(tc.pattern)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				re.MatchString(s)
			}
			work := matchWork(len(s), len(tc.pattern), insts)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(work), "ns/work")
			b.ReportMetric(float64(work), "work")
		})
	}
}

// patternObject is the object of issue 25: a Deployment whose ten
// annotations hold patterns of n bytes each (1.4 MB for 140 KB, within
// etcd's limit), unique to seed so that no cache of an earlier run holds
// them, and that fail to compile when invalid (an unclosed group, found at
// the pattern's end).
func patternObject(seed int64, n int, invalid bool) map[string]any {
	annotations := map[string]any{}
	for i := range 10 {
		p := fmt.Sprintf("r%d-%d-", seed, i)
		p += strings.Repeat("abcdefghij", n/10+1)[:n-len(p)]
		if invalid {
			p = p[:n-1] + "("
		}
		annotations[fmt.Sprintf("a%d", i)] = p
	}
	return map[string]any{"metadata": map[string]any{"annotations": annotations}}
}

// BenchmarkPatternsFromObject is issue 25: a gate whose successWhen matches
// each annotation's key with the pattern its value holds, on an object of
// ten patterns new to the function on every run: one run's evaluation,
// with a budget of its own. Patterns of 140 KB that do not compile
// ("Invalid") and that do ("Valid"), and valid ones of MaxPatternLength.
func BenchmarkPatternsFromObject(b *testing.B) {
	c, err := NewCompiler(0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.Compile("object.metadata.annotations.exists(k, k.matches(object.metadata.annotations[k]))")
	if err != nil {
		b.Fatal(err)
	}
	for name, tc := range map[string]struct {
		n       int
		invalid bool
	}{
		"Invalid140KB": {140_000, true},
		"Valid140KB":   {140_000, false},
		"Valid1KB":     {1024, false},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				obj := patternObject(seeds.Add(1), tc.n, tc.invalid)
				b.StartTimer()
				if ok, err := p.Eval(context.Background(), &Budget{}, obj); ok {
					b.Fatalf("Eval(...) = %v, %v; want the gate held", ok, err)
				}
			}
		})
	}
}

// BenchmarkOneHostilePattern is one evaluation of a gate that matches its
// object's name with one pattern its object holds, new to the function on
// every run, of the kinds that make Go's parser or compiler work hardest
// (hostilePatterns): what one such pattern cost a run before it paid before
// it ran.
func BenchmarkOneHostilePattern(b *testing.B) {
	c, err := NewCompiler(0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.Compile("object.s.matches(object.p)")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"FoldedRanges", "Repeats", "Dots"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				obj := map[string]any{"s": "podinfo", "p": hostilePatterns(fmt.Sprintf("(?:q%d)?", seeds.Add(1)))[name]}
				b.StartTimer()
				_, _ = p.Eval(context.Background(), &Budget{}, obj)
			}
		})
	}
}

// BenchmarkWorstPatternRun is the slowest run known for matches(): ten
// gates that each match a string with 100 patterns of MaxPatternLength bytes (new to the
// function on every run) of one hostile kind (hostilePatterns) from their
// object, and a gate whose object makes every match as costly as
// MaxMatchWork allows for the slowest program known (BenchmarkMatchWork),
// until the run's budget is spent. docs/performance.md records the figures.
func BenchmarkWorstPatternRun(b *testing.B) {
	c, err := NewCompiler(0)
	if err != nil {
		b.Fatal(err)
	}
	gate, err := c.Compile("object.l.filter(p, object.s.matches(p)).size() == 0")
	if err != nil {
		b.Fatal(err)
	}
	runGates := func(b *testing.B, obj map[string]any) {
		b.Helper()
		budget := &Budget{}
		for range 10 {
			if ok, err := gate.Eval(context.Background(), budget, obj); err == nil {
				b.Fatalf("Eval(...) = %v, want an error", ok)
			}
		}
	}
	for name := range hostilePatterns("") {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				l := make([]any, 100)
				for i := range l {
					l[i] = hostilePatterns(fmt.Sprintf("(?:q%d)?", seeds.Add(1)))[name]
				}
				obj := map[string]any{"s": "abc", "l": l}
				b.StartTimer()
				runGates(b, obj)
			}
		})
	}
	// 400 optional characters: the NFA at its slowest (BenchmarkMatchWork),
	// over strings as long as MaxMatchWork allows; the pattern compiled
	// once ("MatchWork"), or a new one for each string ("MatchWorkNew").
	matches, err := c.Compile("object.l.filter(s, s.matches(object.p[s])).size() == 0")
	if err != nil {
		b.Fatal(err)
	}
	groups := strings.Repeat("a?", 400) + "z"
	for name, newPatterns := range map[string]bool{"MatchWork": false, "MatchWorkNew": true} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				l, p := make([]any, 100), map[string]any{}
				for i := range l {
					pattern := groups
					if newPatterns {
						pattern = fmt.Sprintf("(?:q%d)?", seeds.Add(1)) + groups
					}
					parsed, err := syntax.Parse(pattern, syntax.Perl)
					if err != nil {
						b.Fatal(err)
					}
					insts, _ := programSize(parsed)
					n := int(MaxMatchWork/max(insts, uint64(len(pattern)))) - 1
					s := strings.Repeat("a", n-4) + fmt.Sprintf("%04d", i)
					l[i], p[s] = s, pattern
				}
				obj := map[string]any{"l": l, "p": p}
				b.StartTimer()
				budget := &Budget{}
				for range 10 {
					if ok, err := matches.Eval(context.Background(), budget, obj); err == nil {
						b.Fatalf("Eval(...) = %v, want an error", ok)
					}
				}
			}
		})
	}
}
