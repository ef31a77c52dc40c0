package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// fill repeats unit up to n bytes (whole units only).
func fill(prefix, unit, suffix string, n int) string {
	return prefix + strings.Repeat(unit, (n-len(prefix)-len(suffix))/len(unit)) + suffix
}

// hostilePatterns are patterns of at most MaxPatternLength bytes that make
// Go's parser or compiler work hardest for each kind of construct.
func hostilePatterns() map[string]string {
	n := MaxPatternLength
	return map[string]string{
		"Literal":          fill("", "a", "", n),
		"AnchoredLiteral":  fill("^", "a", "$", n),
		"Dots":             fill("", ".", "", n),
		"DotStars":         fill("", ".*", "", n),
		"Groups":           fill("", "(a)", "", n),
		"Nested":           strings.Repeat("(", 340) + strings.Repeat(")", 340),
		"Alternation":      fill("", "ab|", "c", n),
		"AltPrefixes":      fill("", "abcdefgh|abcdefgi|", "x", n),
		"Classes":          fill("", "[a-z]", "", n),
		"AnchoredClasses":  fill("^", "[a-z]", "$", n),
		"Tables":           fill("", `\pL`, "", n),
		"AnchoredTables":   fill("^", `\pL`, "$", n),
		"NegatedTables":    fill("", `\PL`, "", n),
		"TablesInClass":    fill("[", `\pL`, "]", n),
		"TwoTablesClasses": fill("", `[\pL\pN]`, "", n),
		"FoldedTables":     fill("(?i)", `\pL`, "", n),
		"FoldedRanges":     fill("(?i)", "[Ā-𞥃]", "", n),
		"FoldedClass":      fill("(?i)[", "Ā-𞥃", "]", n),
		"FoldedHexRanges":  fill("(?i)", `[\x{100}-\x{1E943}]`, "", n),
		"FoldedASCII":      fill("(?i)", "[a-z]", "", n),
		"FoldedLiteral":    fill("(?i)", "k", "", n),
		"Repeats":          fill("", "a{1000}", "", n),
		"TableRepeats":     fill("", `\pL{1000}`, "", n),
		"GroupRepeats":     fill("", "(a){1000}", "", n),
		"AnchoredRepeats":  fill("^", "(?:a|b){1000}", "$", n),
	}
}

// BenchmarkPatternCharge measures, for each hostile pattern, what each
// step of a pattern's first use in an evaluation takes per unit of cost
// charged before it: parsing (charged parseCost), and compiling with
// regexp.Compile (which parses again: charged parseCost plus the
// program's size). docs/reference.md quotes the worst.
func BenchmarkPatternCharge(b *testing.B) {
	for name, p := range hostilePatterns() {
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
