package expr

import (
	"reflect"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
)

// Limits of matches(). A pattern pays before it runs: CEL charges a call
// once it has returned, and CEL's cost model charges matches() by the
// string's length, which says nothing of what Go's regexp package does with
// the pattern. Parsing a pattern of 13 bytes may take 2 ms (a case-folded
// range of Unicode, which the parser expands one code point at a time), and
// compiling one of 7 bytes takes 150 µs and keeps 40 KB (a{1000}). So each
// call of matches() runs in steps, and each step charges, before it runs, a
// bound of what the next one does.
const (
	// MaxPatternLength is the longest pattern matches() accepts, in bytes:
	// as long as an expression (MaxLength), so that a pattern read from an
	// object has the room of one written in the expression. Real patterns
	// are tens of bytes (a version, a phase, a list of names); a longer one
	// is an evaluation error, before it is parsed.
	MaxPatternLength = MaxLength
	// MaxMatchWork bounds one matches() call: the string's length times
	// the size of the pattern's program. Go's regular expressions run in
	// linear time, but that time is the product of the two, and CEL's cost
	// model charges matches() by the string's length alone: a long
	// pattern over a long annotation could take seconds.
	MaxMatchWork = 100_000
	// matchCostDivisor turns a matches() call's work into CEL cost: the
	// largest call costs a tenth of an evaluation's limit. Go's backtracker
	// and NFA take up to about 20 ns a unit of work (BenchmarkMatchWork:
	// optional characters, every thread alive), so a unit of cost is up to
	// 2 µs of matching; a run's budget spent on the slowest matches takes
	// tens of milliseconds (BenchmarkWorstPatternRun).
	matchCostDivisor = MaxMatchWork * 10 / CostLimit

	// The charges of a pattern's first use in an evaluation, in CEL cost
	// units of at most about half a microsecond of the slowest work of each
	// kind (BenchmarkPatternCharge): the parser's, a unit a byte, and more
	// for what it expands (a Unicode table; each code point of a
	// case-folded range, which takes 45 ns); the compiler's, two units an
	// instruction of the program (up to 500 ns each, for repeats).
	parseCostPerByte   = 1
	parseCostPerTable  = 250
	foldPointsPerUnit  = 4
	compileCostPerInst = 2

	// patternCacheEntries and patternCacheBytes bound the compiled patterns
	// kept across evaluations, by number and by the memory they keep
	// (patternBytes); a pattern that would take more than an eighth of it
	// is compiled for its evaluation only.
	patternCacheEntries = 256
	patternCacheBytes   = 8 << 20

	// maxQuote bounds what an error quotes of a pattern.
	maxQuote = 32
)

// The steps of a matches() call (see expandMatches), and the types that
// carry it from one to the next. Their names start with @, which no
// expression can write.
const (
	fnPrice            = "@price_pattern"
	fnPrepare          = "@prepare_pattern"
	fnRun              = "@run_pattern"
	overloadMatches    = "bounded_matches"
	overloadMatchesMbr = "bounded_string_matches"
	overloadPrice      = "@price_pattern_match"
	overloadPrepare    = "@prepare_pattern_match"
	overloadRun        = "@run_pattern_match"
	evaluationVariable = "@evaluation"
)

var (
	matchType      = cel.OpaqueType("@match")
	evaluationType = cel.OpaqueType("@evaluation")
)

// Error messages of matches().
const (
	errFmtPatternTooLong = "matches() cannot use a pattern longer than %d bytes"
	errFmtTooCostly      = "matches() on a string of %d bytes with a pattern of %d bytes is too costly to evaluate (at most %d units of work; shorten the string or the pattern)"
	errFmtBadPattern     = "error parsing regexp: %s: %s"
)

// matchesOptions declares matches() in its steps. An expression's
// s.matches(p) (or matches(s, p)) is expanded, when it is parsed, into
//
//	@run(@prepare(@price(s.matches(p), @evaluation)))
//
// matches(s, p) only pairs its arguments, so that a type error names
// matches() as CEL's own would. @price refuses a pattern longer than
// MaxPatternLength and charges, the first time the evaluation uses the
// pattern, a bound of what parsing it costs; @prepare parses it (or finds
// it), refuses a call whose work exceeds MaxMatchWork and charges the work
// and, the first time, the compiler's; @run compiles it (or finds it) and
// matches. CEL charges each step once it has returned, and the cost limit
// stops the evaluation there: before the next step runs.
func matchesOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Macros(
			cel.ReceiverMacro(overloads.Matches, 1, expandMatches),
			cel.GlobalMacro(overloads.Matches, 2, expandMatches)),
		cel.Variable(evaluationVariable, evaluationType),
		cel.Function(overloads.Matches,
			cel.Overload(overloadMatches, []*cel.Type{cel.StringType, cel.StringType}, matchType, cel.BinaryBinding(newMatch)),
			cel.MemberOverload(overloadMatchesMbr, []*cel.Type{cel.StringType, cel.StringType}, matchType, cel.BinaryBinding(newMatch))),
		cel.Function(fnPrice, cel.Overload(overloadPrice, []*cel.Type{matchType, evaluationType}, matchType, cel.BinaryBinding(price))),
		cel.Function(fnPrepare, cel.Overload(overloadPrepare, []*cel.Type{matchType}, matchType, cel.UnaryBinding(prepare))),
		cel.Function(fnRun, cel.Overload(overloadRun, []*cel.Type{matchType}, cel.BoolType, cel.UnaryBinding(run))),
	}
}

// matchesCostTrackers charge each step what it says the next one costs.
func matchesCostTrackers() []interpreter.CostTrackerOption {
	return []interpreter.CostTrackerOption{
		interpreter.OverloadCostTracker(overloadMatches, stepCost),
		interpreter.OverloadCostTracker(overloadMatchesMbr, stepCost),
		interpreter.OverloadCostTracker(overloadPrice, stepCost),
		interpreter.OverloadCostTracker(overloadPrepare, stepCost),
		interpreter.OverloadCostTracker(overloadRun, stepCost),
	}
}

func expandMatches(eh cel.MacroExprFactory, target celast.Expr, args []celast.Expr) (celast.Expr, *cel.Error) {
	call := eh.NewCall(overloads.Matches, args...)
	if target != nil {
		call = eh.NewMemberCall(overloads.Matches, target, args...)
	}
	return eh.NewCall(fnRun, eh.NewCall(fnPrepare, eh.NewCall(fnPrice, call, eh.NewIdent(evaluationVariable)))), nil
}

// stepCost charges a step what its result says: a call on its way carries
// the charge of what the next step does; the match's result (a bool)
// carries nothing more, and an error one (a refusal costs no more to make).
func stepCost(_ []ref.Val, result ref.Val) *uint64 {
	var cost uint64
	switch r := result.(type) {
	case *match:
		cost = r.charge
	case *types.Err:
		cost = 1
	}
	return &cost
}

// An evaluation is what one evaluation knows of the patterns it has used:
// each is parsed, charged for and compiled at most once in an evaluation,
// whatever the shared cache holds, so that what an evaluation costs, and
// whether it reaches the cost limit, depends on its expression and its
// object alone, never on what other evaluations left in the cache. It is
// used by one evaluation at a time, as CEL evaluates in one goroutine.
type evaluation struct {
	patterns map[string]*usedPattern
}

// A usedPattern is what an evaluation knows of a pattern.
type usedPattern struct {
	parseCost      uint64
	size           uint64 // of its program, in instructions; 0 until known
	bytes          uint64 // what its compiled form keeps
	re             *regexp.Regexp
	err            error
	compileCharged bool
}

// A match is a matches() call on its way from one step to the next, with
// the charge of the step that made it.
type match struct {
	s, pattern string
	used       *usedPattern
	charge     uint64
}

func newMatch(str, pattern ref.Val) ref.Val {
	s, ok := str.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(str)
	}
	p, ok := pattern.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(pattern)
	}
	return &match{s: string(s), pattern: string(p)}
}

// price refuses a pattern longer than MaxPatternLength, and charges its
// parsing on its first use in the evaluation.
func price(mv, ev ref.Val) ref.Val {
	m, ok := mv.(*match)
	if !ok {
		return types.MaybeNoSuchOverloadErr(mv)
	}
	e, ok := ev.(*evaluation)
	if !ok {
		return types.MaybeNoSuchOverloadErr(ev)
	}
	if len(m.pattern) > MaxPatternLength {
		return types.NewErr(errFmtPatternTooLong, MaxPatternLength)
	}
	next := &match{s: m.s, pattern: m.pattern}
	if next.used = e.patterns[m.pattern]; next.used == nil {
		next.used = &usedPattern{parseCost: parseCost(m.pattern)}
		if e.patterns == nil {
			e.patterns = map[string]*usedPattern{}
		}
		e.patterns[m.pattern] = next.used
		next.charge = next.used.parseCost
	}
	return next
}

// prepare parses the pattern (paid by price) or finds it, refuses a call
// whose work exceeds MaxMatchWork, and charges the work and, on the
// pattern's first use in the evaluation, its compiling.
func prepare(mv ref.Val) ref.Val {
	m, ok := mv.(*match)
	if !ok || m.used == nil {
		return types.MaybeNoSuchOverloadErr(mv)
	}
	u := m.used
	if u.size == 0 && u.err == nil {
		if c, ok := patterns.Get(m.pattern); ok {
			u.re, u.size, u.bytes = c.re, c.size, c.bytes
		} else {
			parses.Add(1)
			parsed, err := syntax.Parse(m.pattern, syntax.Perl)
			if err != nil {
				u.err = patternError(err)
			} else {
				insts, runes := programSize(parsed)
				u.size, u.bytes = insts, patternBytes(m.pattern, insts, runes)
			}
		}
	}
	if u.err != nil {
		return types.WrapErr(u.err)
	}
	work := matchWork(len(m.s), len(m.pattern), u.size)
	if work > MaxMatchWork {
		return types.NewErr(errFmtTooCostly, len(m.s), len(m.pattern), MaxMatchWork)
	}
	next := &match{s: m.s, pattern: m.pattern, used: u, charge: max(1, work/matchCostDivisor)}
	if !u.compileCharged {
		u.compileCharged = true
		// regexp.Compile parses the pattern again.
		next.charge += u.parseCost + u.size*compileCostPerInst
	}
	return next
}

// run compiles the pattern (paid by prepare) or finds it, and matches.
func run(mv ref.Val) ref.Val {
	m, ok := mv.(*match)
	if !ok || m.used == nil {
		return types.MaybeNoSuchOverloadErr(mv)
	}
	u := m.used
	if u.re == nil {
		re, err := compilePattern(patterns, m.pattern, u.size, u.bytes)
		if err != nil {
			u.err = patternError(err)
			return types.WrapErr(u.err)
		}
		u.re = re
	}
	return types.Bool(u.re.MatchString(m.s))
}

// matchWork is what matching a string of n bytes takes at worst: its
// length, plus one, times the size of the pattern's program (or its
// length, if longer), which is how Go's regular expression engines scale.
func matchWork(n, patternLength int, size uint64) uint64 {
	if n < 0 || patternLength < 0 {
		return MaxMatchWork + 1
	}
	return (uint64(n) + 1) * max(size, uint64(patternLength))
}

// patternError says why a pattern does not compile, quoting at most
// maxQuote bytes of it: Go's errors quote the whole pattern for some
// (a missing parenthesis, a pattern too large).
func patternError(err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return err
	}
	return errors.Errorf(errFmtBadPattern, se.Code, quote(se.Expr))
}

// quote quotes at most maxQuote bytes of s, and says how long it is.
func quote(s string) string {
	if len(s) <= maxQuote {
		return "`" + s + "`"
	}
	return "`" + fielderr.Truncate(s, maxQuote, fielderr.Bytes, nil) + "` (" + strconv.Itoa(len(s)) + " bytes)"
}

// The ref.Val methods of the values that carry a matches() call: no
// expression can name them, convert them or compare them.

func (e *evaluation) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("an evaluation has no native form")
}

func (e *evaluation) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an evaluation converts to no type")
}
func (e *evaluation) Equal(other ref.Val) ref.Val { return types.Bool(e == other) }
func (e *evaluation) Type() ref.Type              { return evaluationType }
func (e *evaluation) Value() any                  { return e }

func (m *match) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("a match has no native form")
}

func (m *match) ConvertToType(ref.Type) ref.Val { return types.NewErr("a match converts to no type") }
func (m *match) Equal(other ref.Val) ref.Val    { return types.Bool(m == other) }
func (m *match) Type() ref.Type                 { return matchType }
func (m *match) Value() any                     { return m }

// parses and compiles count the patterns parsed and compiled, for tests.
var parses, compiles atomic.Int64

// Go's case folding limits (regexp/syntax's minFold and maxFold): a
// case-folded class range is expanded code point by code point within
// them.
const (
	minFold = 0x0041
	maxFold = 0x1e943
)

// parseCost bounds what parsing a pattern costs, from a scan of it as Go's
// parser reads it (regexp/syntax's parse and parseClass): a unit a byte,
// parseCostPerTable a Unicode table (\pL, \p{Greek}, \PN), and, if the
// pattern may fold case ((?i)), a unit per foldPointsPerUnit code points of
// each class range that folding expands. What the scan cannot read for sure
// it counts at the most it could be.
func parseCost(p string) uint64 {
	var tables, foldPoints uint64
	folds := false
	t := p
	for t != "" {
		switch {
		case strings.HasPrefix(t, `\Q`):
			// \Q...\E: literals only.
			_, t, _ = strings.Cut(t[2:], `\E`)
		case t[0] == '\\' && len(t) >= 2:
			if t[1] == 'p' || t[1] == 'P' {
				tables++
			}
			t = t[2:]
		case strings.HasPrefix(t, "(?"):
			// Flags, which may turn folding on, or a named group.
			t = t[2:]
			for t != "" && strings.IndexByte("imsU-", t[0]) >= 0 {
				folds = folds || t[0] == 'i'
				t = t[1:]
			}
		case t[0] == '[':
			var tb, fp uint64
			tb, fp, t = scanClass(t)
			tables += tb
			foldPoints += fp
		default:
			t = t[1:]
		}
	}
	cost := uint64(len(p))*parseCostPerByte + tables*parseCostPerTable
	if folds {
		cost += foldPoints / foldPointsPerUnit
	}
	return cost
}

// scanClass reads a class at the start of t as parseClass does, and counts
// its Unicode tables and the code points that folding its ranges expands.
func scanClass(t string) (tables, foldPoints uint64, rest string) {
	t = t[1:]
	t = strings.TrimPrefix(t, "^")
	for first := true; t == "" || t[0] != ']' || first; first = false {
		if t == "" {
			return tables, foldPoints, t
		}
		if table, rest, ok := classGroup(t); ok {
			if table {
				tables++
			}
			t = rest
			continue
		}
		var lo, hi rune
		lo, t = classChar(t)
		hi = lo
		if len(t) >= 2 && t[0] == '-' && t[1] != ']' {
			hi, t = classChar(t[1:])
		}
		foldPoints += foldSpan(lo, hi)
	}
	return tables, foldPoints, t[1:]
}

// classGroup reads what parseClass reads before a character, if t starts
// with one: a POSIX class ([:alpha:]), a Unicode table (\pL, \p{Greek}) or
// a Perl class (\d).
func classGroup(t string) (table bool, rest string, ok bool) {
	switch {
	case len(t) > 2 && t[0] == '[' && t[1] == ':':
		if i := strings.Index(t[2:], ":]"); i >= 0 {
			return false, t[i+4:], true
		}
	case len(t) >= 2 && t[0] == '\\' && (t[1] == 'p' || t[1] == 'P'):
		rest = t[2:]
		if strings.HasPrefix(rest, "{") {
			if i := strings.IndexByte(rest, '}'); i >= 0 {
				rest = rest[i+1:]
			}
		}
		return true, rest, true
	case len(t) >= 2 && t[0] == '\\' && strings.IndexByte("dDsSwW", t[1]) >= 0:
		return false, t[2:], true
	}
	return false, t, false
}

// classChar reads a class character as parseClassChar does: its value, or
// -1 where the scan does not tell it (parseEscape refuses most of those).
func classChar(t string) (rune, string) {
	if t[0] != '\\' {
		r, n := utf8.DecodeRuneInString(t)
		return r, t[n:]
	}
	if len(t) < 2 {
		return -1, ""
	}
	c, t := t[1], t[2:]
	switch {
	case c == 'x' && strings.HasPrefix(t, "{"):
		end := strings.IndexByte(t, '}')
		if end < 0 {
			return -1, ""
		}
		return hexValue(t[1:end]), t[end+1:]
	case c == 'x':
		if len(t) < 2 {
			return -1, ""
		}
		return hexValue(t[:2]), t[2:]
	case c >= '0' && c <= '7':
		r := rune(c - '0')
		for i := 0; i < 2 && t != "" && t[0] >= '0' && t[0] <= '7'; i++ {
			r = r*8 + rune(t[0]-'0')
			t = t[1:]
		}
		return r, t
	case strings.IndexByte("afnrtv", c) >= 0:
		return rune("\a\f\n\r\t\v"[strings.IndexByte("afnrtv", c)]), t
	case c < utf8.RuneSelf && !isAlnum(c):
		// Escaped punctuation is itself; parseEscape refuses any other
		// letter or digit.
		return rune(c), t
	default:
		return -1, t
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func hexValue(s string) rune {
	var r rune
	if s == "" || len(s) > 8 {
		return -1
	}
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			r = r*16 + c - '0'
		case c >= 'a' && c <= 'f':
			r = r*16 + c - 'a' + 10
		case c >= 'A' && c <= 'F':
			r = r*16 + c - 'A' + 10
		default:
			return -1
		}
	}
	return r
}

// foldSpan is how many code points folding the range lo-hi visits (as
// regexp/syntax's appendFoldedRange does), at most; -1 is any value, the
// worst.
func foldSpan(lo, hi rune) uint64 {
	if lo < 0 {
		lo = minFold + 1
	}
	if hi < 0 {
		hi = maxFold - 1
	}
	if lo <= minFold && hi >= maxFold || hi < minFold || lo > maxFold || hi < lo {
		return 1
	}
	return uint64(min(hi, maxFold)-max(lo, minFold)) + 1
}

// programSize bounds the instructions of the program Go compiles from a
// parsed pattern (once simplified: a repeat becomes copies of what it
// repeats), as regexp/syntax's own calcSize does to refuse programs too
// large, and counts the runes of its character classes, which the program
// keeps (the copies of a repeat share them).
func programSize(re *syntax.Regexp) (insts, runes uint64) {
	insts, runes = nodeSize(re)
	return insts + 2, runes // the program's fail and match instructions
}

func nodeSize(re *syntax.Regexp) (insts, runes uint64) {
	var sub uint64
	for _, s := range re.Sub {
		i, r := nodeSize(s)
		sub += i
		runes += r
	}
	switch re.Op {
	case syntax.OpLiteral:
		insts = uint64(len(re.Rune))
	case syntax.OpCharClass:
		insts, runes = 1, runes+uint64(cap(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		insts = 2 + sub
	case syntax.OpPlus, syntax.OpQuest:
		insts = 1 + sub
	case syntax.OpConcat:
		insts = sub
	case syntax.OpAlternate:
		insts = sub + uint64(len(re.Sub)) - 1
	case syntax.OpRepeat:
		// The parser allows counts of 0 to 1000 only, max -1 for none.
		minimum, maximum := uint64(max(0, min(re.Min, 1000))), uint64(max(0, min(re.Max, 1000)))
		switch {
		case re.Max < 0 && minimum == 0:
			insts = 2 + sub
		case re.Max < 0:
			insts = 1 + minimum*sub
		default:
			insts = maximum*sub + maximum - min(minimum, maximum)
		}
	default:
		// Any other is one instruction, or none (an empty match's nop
		// is one).
		insts = 1
	}
	return max(1, insts), runes
}

// patternBytes estimates what a compiled pattern keeps, from above: an
// instruction keeps up to 160 bytes (a class's keeps the class's parsed
// node), and a third more in a one-pass program (an anchored pattern's); a
// class's runes 4 bytes each of their capacity (folding leaves a class's
// slice as long as all it expanded), and three times that in a one-pass
// program; the Regexp itself about a kilobyte. The estimate is 1.1 to 5
// times what the patterns of BenchmarkPatternCharge keep, measured.
func patternBytes(p string, insts, runes uint64) uint64 {
	return 1024 + uint64(len(p)) + 240*insts + 12*runes
}

// patterns are the patterns compiled by matches(), shared by every
// evaluation so that a pattern an expression uses on every run is compiled
// once.
var patterns = newPatternCache(patternCacheEntries, patternCacheBytes)

// A cachedPattern is a compiled pattern, with the size of its program and
// the estimate of what it keeps (patternBytes).
type cachedPattern struct {
	re    *regexp.Regexp
	size  uint64
	bytes uint64
}

// newPatternCache returns a cache of the most recently used compiled
// patterns, within a number of them and a number of bytes (their
// estimate).
func newPatternCache(entries int, bytes uint64) *memo.Cache[string, cachedPattern] {
	return memo.New[string, cachedPattern](entries, bytes)
}

// compilePattern finds a pattern in the cache, or compiles it and keeps it
// if it takes at most an eighth of the cache (the least recently used ones
// evicted until the cache is within its bounds). Two evaluations that need
// a new pattern at once may both compile it (each has paid for it).
func compilePattern(c *memo.Cache[string, cachedPattern], text string, size, bytes uint64) (*regexp.Regexp, error) {
	if p, ok := c.Get(text); ok {
		return p.re, nil
	}
	compiles.Add(1)
	re, err := regexp.Compile(text)
	if err != nil {
		return nil, err
	}
	c.Add(text, cachedPattern{re: re, size: size, bytes: bytes}, bytes)
	return re, nil
}
