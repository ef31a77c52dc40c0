package expr

import (
	"context"
	"errors"
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// counts is how many patterns were parsed and compiled since a test began.
type counts struct{ Parses, Compiles int64 }

func countFrom() func() counts {
	p, c := parses.Load(), compiles.Load()
	return func() counts { return counts{Parses: parses.Load() - p, Compiles: compiles.Load() - c} }
}

// patternOf is a valid pattern of n bytes, unique to tag, which no other
// test (nor an earlier run of this one) has put in the shared cache.
func patternOf(tag string, n int) string {
	p := tag + "-" + strings.Repeat("abcdefghij", n/10+1)
	return p[:n]
}

// TestPatternTooLong: a pattern longer than MaxPatternLength, read from
// the object, is an evaluation error that names the limit and quotes
// nothing of the pattern, and is never parsed nor compiled: the issue's
// 140 KB patterns cost a parse and two compiles each before.
func TestPatternTooLong(t *testing.T) {
	type want struct {
		Value  bool
		Err    string
		Counts counts
	}
	tooLong := fmt.Sprintf("matches() cannot use a pattern longer than %d bytes", MaxPatternLength)
	// Each expression gets patterns of its own, new to the shared cache.
	cases := func(tag string) map[string]struct {
		reason  string
		pattern string
		want    want
	} {
		return map[string]struct {
			reason  string
			pattern string
			want    want
		}{
			"AtTheLimit": {
				reason:  "A pattern of MaxPatternLength bytes is parsed and compiled once, and matched.",
				pattern: patternOf(tag+"/at", MaxPatternLength),
				want:    want{Value: false, Counts: counts{Parses: 1, Compiles: 1}},
			},
			"OneByteOver": {
				reason:  "One byte more is refused before it is parsed.",
				pattern: patternOf(tag+"/over", MaxPatternLength+1),
				want:    want{Err: tooLong},
			},
			"Issue25": {
				reason:  "A 140 KB pattern is refused before it is parsed.",
				pattern: patternOf(tag+"/issue", 140_000),
				want:    want{Err: tooLong},
			},
			"InvalidAndTooLong": {
				reason:  "Too long is said first, whatever else is wrong with the pattern.",
				pattern: patternOf(tag+"/invalid", 140_000) + "(",
				want:    want{Err: tooLong},
			},
		}
	}
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"object.s.matches(object.p)", "matches(object.s, object.p)"} {
		p, err := c.Compile(text)
		if err != nil {
			t.Fatal(err)
		}
		for name, tc := range cases(t.Name() + text) {
			t.Run(name, func(t *testing.T) {
				count := countFrom()
				v, err := p.Eval(context.Background(), &Budget{}, map[string]any{"s": "x", "p": tc.pattern})
				got := want{Value: v, Counts: count()}
				if err != nil {
					got.Err = err.Error()
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s\nEval(%q): -want, +got:\n%s", tc.reason, text, diff)
				}
			})
		}
	}
}

// TestPatternsPayBeforeTheyRun is the object at the limit: ten
// patterns of MaxPatternLength bytes, new to the function, matched by one
// gate, which a run of ten gates evaluates ten times. A pattern's first use
// in an evaluation costs about 4,200: its price of 1,024 (its length)
// before it is parsed, then 3,158 before it is compiled (1,024 to parse it
// again, two a unit of its 1,026 instructions, its match 82). Two fit
// within the cost limit of 10,000; the third is priced and parsed (9,388),
// and its compile's charge stops the evaluation before it is compiled. An
// evaluation costs the same with the patterns in the cache as without
// them, so the run's budget is spent after four evaluations, whatever the
// cache holds, and the run has compiled two patterns, never the tenth.
// (Parsing the third again in each evaluation is what its price paid for:
// parsing, unlike compiling, is not kept.)
func TestPatternsPayBeforeTheyRun(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile("object.spec.patterns.exists(p, object.metadata.name.matches(p))")
	if err != nil {
		t.Fatal(err)
	}
	patterns := make([]any, 10)
	for i := range patterns {
		patterns[i] = patternOf(fmt.Sprintf("%s/%d", t.Name(), i), MaxPatternLength)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "podinfo"}, "spec": map[string]any{"patterns": patterns}}

	type evaluation struct {
		Err    string
		Cost   uint64
		Counts counts
	}
	got := make([]evaluation, 0, 10)
	budget := &Budget{}
	for range 10 {
		count := countFrom()
		before := budget.Used()
		_, err := p.Eval(context.Background(), budget, obj)
		e := evaluation{Cost: budget.Used() - before, Counts: count()}
		switch {
		case errors.Is(err, ErrBudget):
			e.Err = "budget"
		case err != nil && strings.Contains(err.Error(), "cost limit exceeded"):
			e.Err = "cost limit"
		case err != nil:
			e.Err = err.Error()
		}
		got = append(got, e)
	}
	first := got[0].Cost
	compileCharge := uint64(MaxPatternLength*parseCostPerByte + (MaxPatternLength+2)*compileCostPerInst + MaxMatchWork/matchCostDivisor)
	if first <= CostLimit || first > CostLimit+compileCharge {
		t.Fatalf("the first evaluation cost %d, want over the cost limit %d by less than a compile's charge %d", first, CostLimit, compileCharge)
	}
	want := make([]evaluation, 0, 10)
	want = append(want,
		evaluation{Err: "cost limit", Cost: first, Counts: counts{Parses: 3, Compiles: 2}},
		// The first two patterns are in the cache now; the third, never
		// compiled, is parsed again, and charged as before.
		evaluation{Err: "cost limit", Cost: first, Counts: counts{Parses: 1}},
		evaluation{Err: "cost limit", Cost: first, Counts: counts{Parses: 1}},
		evaluation{Err: "cost limit", Cost: first, Counts: counts{Parses: 1}},
	)
	for range 6 {
		want = append(want, evaluation{Err: "budget"})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ten evaluations of a gate over ten new patterns of %d bytes, one run: -want, +got:\n%s", MaxPatternLength, diff)
	}
}

// TestPatternCacheIsBoundedByBytes: compiled patterns are kept within a
// number of them and a number of bytes (their estimate): inserting many
// large patterns never takes the cache past either, the least recently
// used go first, and a pattern larger than an eighth of the bytes is not
// kept at all.
func TestPatternCacheIsBoundedByBytes(t *testing.T) {
	const maxBytes = 256 << 10
	c := newPatternCache(100, maxBytes)
	estimates := map[string]uint64{}
	add := func(text string) uint64 {
		t.Helper()
		parsed, err := syntax.Parse(text, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		insts, runes := programSize(parsed)
		bytes := patternBytes(text, insts, runes)
		if _, err := compilePattern(c, text, insts, bytes); err != nil {
			t.Fatal(err)
		}
		estimates[text] = bytes
		return bytes
	}
	// Patterns of 100 bytes, each estimated at about 26 KB: ten fit.
	var maxEntries int
	for i := range 200 {
		add(patternOf(strconv.Itoa(i), 100))
		if i == 50 {
			if _, ok := c.Get(patternOf("0", 100)); ok {
				t.Error("the first pattern is still kept after 50 more")
			}
			// Used again, the 48th survives the next ones.
			if _, ok := c.Get(patternOf("48", 100)); !ok {
				t.Error("the 48th pattern is not kept after two more")
			}
		}
		n, bytes := c.Len()
		maxEntries = max(maxEntries, n)
		if bytes > maxBytes {
			t.Fatalf("after %d patterns the cache keeps %d bytes, more than its bound %d", i+1, bytes, maxBytes)
		}
	}
	if _, ok := c.Get(patternOf("48", 100)); ok {
		t.Error("the 48th pattern is kept after 150 more")
	}
	n, bytes := c.Len()
	var sum uint64
	var kept int
	for text, estimate := range estimates {
		if p, ok := c.Get(text); ok {
			sum += p.bytes
			kept++
			if p.bytes != estimate {
				t.Errorf("the cache keeps a pattern of %d bytes with %d", estimate, p.bytes)
			}
		}
	}
	if sum != bytes || n != kept {
		t.Errorf("the cache accounts %d bytes and %d entries, holds %d bytes in %d entries", bytes, n, sum, kept)
	}
	if maxEntries < 8 || maxEntries > 10 {
		t.Errorf("the cache kept up to %d patterns of about 26 KB in %d bytes, want 8 to 10", maxEntries, maxBytes)
	}
	// A pattern estimated at more than an eighth of the bytes is compiled
	// for its caller and not kept.
	large := patternOf("large", 200)
	if b := add(large); b <= maxBytes/8 {
		t.Fatalf("the large pattern is estimated at %d bytes, not more than %d", b, maxBytes/8)
	}
	if _, ok := c.Get(large); ok {
		t.Error("a pattern larger than an eighth of the cache is kept")
	}
	if n2, b2 := c.Len(); n2 != n || b2 != bytes {
		t.Errorf("the cache changed from %d patterns and %d bytes to %d and %d for a pattern it does not keep", n, bytes, n2, b2)
	}

	// The shared cache has the same bounds.
	if n, bytes := patterns.Len(); n > patternCacheEntries || bytes > patternCacheBytes {
		t.Errorf("the shared cache keeps %d patterns and %d bytes, more than %d and %d", n, bytes, patternCacheEntries, patternCacheBytes)
	}
}

// TestProgramSize: the size charged for compiling a pattern, and used for
// its work, is never less than the program Go compiles from it.
func TestProgramSize(t *testing.T) {
	cases := map[string]struct {
		pattern string
		exact   bool // the estimate is the program's size exactly
	}{
		"Empty":        {pattern: "", exact: true},
		"Literal":      {pattern: "podinfo", exact: true},
		"Anchored":     {pattern: "^v[0-9]+\\.[0-9]+$", exact: true},
		"Alternation":  {pattern: "^(Succeeded|Completed|Failed)$", exact: true},
		"Captures":     {pattern: "(a)(b(c))", exact: true},
		"Star":         {pattern: "a*b*(?:cd)*"},
		"NullableStar": {pattern: "(?:a*)*"},
		"Plus":         {pattern: "a+(?:bc)+", exact: true},
		"Quest":        {pattern: "a?(?:bc)?", exact: true},
		"Repeat":       {pattern: "a{1000}", exact: true},
		"RepeatRange":  {pattern: "(?:ab){2,5}", exact: true},
		"RepeatOpen":   {pattern: "(?:ab){3,}"},
		"RepeatZero":   {pattern: "a{0}b{0,0}"},
		"Nested":       {pattern: "(?:(?:a{10}){10}){10}", exact: true},
		"Classes":      {pattern: `[a-z]\d\pL[^\n].`, exact: true},
		"Folded":       {pattern: "(?i)kelvin[a-z]+", exact: true},
		"Semver":       {pattern: `^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`},
		"Hostile":      {pattern: hostilePatterns("")["AnchoredRepeats"]},
		"EmptyGroups":  {pattern: "(?:)(?:)|(?:)"},
		"Boundaries":   {pattern: `\b\B^$\A\z`, exact: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			parsed, err := syntax.Parse(tc.pattern, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := syntax.Compile(parsed.Simplify())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := programSize(parsed)
			if want := uint64(len(prog.Inst)); got < want || tc.exact && got != want {
				t.Errorf("programSize(%.40q) = %d, the program has %d instructions (exact: %v)", tc.pattern, got, want, tc.exact)
			}
		})
	}
}

// TestParseCost: what parsing a pattern is charged, before it is parsed,
// from a scan of its text: its length, its Unicode tables, and, where the
// pattern may fold case, the code points each class range expands into.
func TestParseCost(t *testing.T) {
	wide := uint64(maxFold-0x100+1) / foldPointsPerUnit
	cases := map[string]struct {
		reason  string
		pattern string
		extra   uint64 // the cost beyond the pattern's length
	}{
		"Literal":        {reason: "A literal costs its length.", pattern: "podinfo", extra: 0},
		"Table":          {reason: "A Unicode table costs what expanding it does.", pattern: `\pL+`, extra: parseCostPerTable},
		"TablesInClass":  {reason: "So do tables in a class.", pattern: `[\p{Greek}\PNx]`, extra: 2 * parseCostPerTable},
		"WideRange":      {reason: "A range is as cheap as its bounds without folding.", pattern: "[Ā-𞥃]", extra: 0},
		"FoldedASCII":    {reason: "Folding [a-z] visits its 26 code points.", pattern: "(?i)[a-z]", extra: 26 / foldPointsPerUnit},
		"FoldedWide":     {reason: "Folding a range of most of Unicode visits each code point it has between A and the last that folds.", pattern: "(?i)[Ā-𞥃]", extra: wide},
		"FoldedHex":      {reason: "Bounds may be written in hex.", pattern: `(?i:[\x{100}-\x{1E943}])`, extra: wide},
		"FoldedAll":      {reason: "A range that holds every folding code point is not expanded.", pattern: `(?i)[\x00-\x{10FFFF}]`, extra: 1 / foldPointsPerUnit},
		"FoldedUnknown":  {reason: "A bound the scan cannot read counts at its worst: here, the lowest that folding does not skip.", pattern: `(?i)[\x{000000041}-z]`, extra: uint64('z'-minFold) / foldPointsPerUnit},
		"FoldedLater":    {reason: "A flag anywhere counts for every class: the scan does not follow groups.", pattern: "[Ā-𞥃](?i)", extra: wide},
		"FoldedNegated":  {reason: "A negated class is folded before it is negated.", pattern: "(?i)[^Ā-𞥃]", extra: wide},
		"BracketFirst":   {reason: "A ] first in a class is a character.", pattern: "(?i)[]-𞥃]", extra: uint64(maxFold-']'+1) / foldPointsPerUnit},
		"Quoted":         {reason: `Nothing between \Q and \E is a flag or a class.`, pattern: `\Q(?i)\E[Ā-𞥃]`, extra: 0},
		"EscapedBracket": {reason: `\[ starts no class.`, pattern: `(?i)\[Ā-𞥃]`, extra: 0},
		"NamedClass":     {reason: "A POSIX class is no range.", pattern: "(?i)[[:alpha:]-z]", extra: 2 / foldPointsPerUnit},
		"Unclosed":       {reason: "A class that does not end counts what it has.", pattern: "(?i)[Ā-𞥃", extra: wide},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got, want := parseCost(tc.pattern), uint64(len(tc.pattern))*parseCostPerByte+tc.extra; got != want {
				t.Errorf("%s\nparseCost(%q) = %d, want %d", tc.reason, tc.pattern, got, want)
			}
		})
	}
}

// TestPatternErrors: a pattern that does not compile is an evaluation
// error, which holds the gate, quoting at most maxQuote bytes of it (Go's
// error quotes the whole pattern for a missing parenthesis).
func TestPatternErrors(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile("object.s.matches(object.p)")
	if err != nil {
		t.Fatal(err)
	}
	long := patternOf(t.Name(), MaxPatternLength-1) + "("
	cases := map[string]struct {
		pattern string
		want    string
	}{
		"Short":       {pattern: "(", want: "error parsing regexp: missing closing ): `(`"},
		"Long":        {pattern: long, want: "error parsing regexp: missing closing ): `" + long[:maxQuote] + "...` (1024 bytes)"},
		"RepeatCount": {pattern: "a{1001}", want: "error parsing regexp: invalid repeat count: `{1001}`"},
		"Escape":      {pattern: `\q`, want: "error parsing regexp: invalid escape sequence: `\\q`"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			count := countFrom()
			_, err := p.Eval(context.Background(), &Budget{}, map[string]any{"s": "x", "p": tc.pattern})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Eval(...) with the pattern %.40q: %q, want %q", tc.pattern, got, tc.want)
			}
			if got := count(); got != (counts{Parses: 1}) {
				t.Errorf("a pattern that does not parse: %+v, want one parse and no compile", got)
			}
		})
	}
}

// TestMatchesCompileErrors: matches() is checked as CEL's own: its type
// errors name it, and the steps it is made of cannot be written.
func TestMatchesCompileErrors(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{
		"1.matches('a')":           "found no matching overload for 'matches' applied to 'int.(string)'",
		"'a'.matches(1)":           "found no matching overload for 'matches' applied to 'string.(int)'",
		"matches('a')":             "found no matching overload for 'matches' applied to '(string)'",
		"'a'.matches('b', 'c')":    "found no matching overload for 'matches' applied to 'string.(string, string)'",
		"@run_pattern('a')":        "Syntax error",
		"object.matches('x')":      "found no matching overload for 'matches'",
		"'a'.matches('b') + 1 > 0": "found no matching overload for '_+_'",
	} {
		if _, err := c.Compile(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", text, err, want)
		}
	}
}

// TestMatchesSafeForConcurrentUse: evaluations that share a cache too
// small for their patterns, at once (run with -race).
func TestMatchesSafeForConcurrentUse(t *testing.T) {
	shared := patterns
	patterns = newPatternCache(2, 1<<20)
	t.Cleanup(func() { patterns = shared })
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile("object.s.matches(object.p) && object.items.all(i, i.matches(object.p))")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % 6
				obj := map[string]any{"s": fmt.Sprintf("v%d.0", k), "p": fmt.Sprintf("^v%d\\.[0-9]+$", k), "items": []any{fmt.Sprintf("v%d.1", k), fmt.Sprintf("v%d.2", k)}}
				if ok, err := p.Eval(context.Background(), &Budget{}, obj); err != nil || !ok {
					t.Errorf("Eval(...) with the pattern %q = %v, %v; want true", obj["p"], ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, _ := patterns.Len(); n > 2 {
		t.Errorf("the cache keeps %d patterns, more than its 2", n)
	}
}

// FuzzPatternCost reads any pattern as matches() prices it: the scan never
// panics and charges at least a unit a byte, the size charged for its
// program is never less than the program Go compiles, and an error quotes
// at most maxQuote bytes of it.
func FuzzPatternCost(f *testing.F) {
	for _, p := range hostilePatterns("") {
		f.Add(p)
	}
	for _, p := range []string{"", "podinfo", `^v[0-9]+\.[0-9]+$`, "(?i)[]-𞥃]", `\Q(?i)\E[Ā-𞥃]`, "(?i)[^Ā-𞥃", "(", "a{1001}", `[\x{00000041}-\x{1E943}]`, "(?P<n>a)(?<m>b)", `[[:alpha:]-\d]`, `\`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if len(pattern) > MaxPatternLength {
			t.Skip()
		}
		cost := parseCost(pattern)
		if cost < uint64(len(pattern))*parseCostPerByte {
			t.Fatalf("parseCost(%q) = %d, less than its length", pattern, cost)
		}
		if cost > CostLimit {
			// matches() never parses it: its price stops the evaluation.
			return
		}
		parsed, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			if msg := patternError(err).Error(); len(msg) > 100+maxQuote {
				t.Fatalf("the error of %q quotes too much: %q", pattern, msg)
			}
			return
		}
		insts, _ := programSize(parsed)
		if insts > MaxMatchWork {
			// matches() refuses it before it is compiled, whatever the string.
			return
		}
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil {
			t.Fatalf("%q parses and does not compile: %v", pattern, err)
		}
		if insts < uint64(len(prog.Inst)) {
			t.Fatalf("programSize(%q) = %d, the program has %d instructions", pattern, insts, len(prog.Inst))
		}
	})
}
