// Package expr compiles and evaluates the CEL expressions of gates and
// analysis templates (successWhen, failWhen): boolean expressions over the
// observed object, bound to the variable `object` as a map.
//
// Each distinct text is compiled once and kept in a bounded cache, since the
// same CanaryRoute is evaluated on every reconcile; every evaluation has a
// cost limit, so no expression can make a run slow, whatever the object.
package expr

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Limits of an expression and of its evaluation.
const (
	// MaxLength is the longest expression text, in bytes.
	MaxLength = 1024
	// CostLimit bounds one evaluation: about ten thousand operations, far
	// beyond any check of an object's status (a filter over a thousand
	// items costs about five thousand), and a few milliseconds at most. CEL
	// keeps the cost of a comprehension on a stack it searches on every
	// iteration, so an evaluation's time grows with the square of its cost:
	// the limit is kept low for that (BenchmarkWorstEvaluation).
	CostLimit = 10_000
	// CacheSize is how many distinct compiled expressions are kept.
	CacheSize = 512
	// RunBudget bounds the cost of every evaluation of one run together:
	// a run evaluates at most this much, plus one evaluation's CostLimit,
	// whatever the number of gates and analysis templates.
	RunBudget = 40_000
	// MaxMatchWork bounds one matches() call: the string's length times
	// the size of the pattern's program. Go's regular expressions run in
	// linear time, but that time is the product of the two, and CEL's cost
	// model charges matches() by the string's length alone: a long
	// pattern over a long annotation could take seconds.
	MaxMatchWork = 100_000
	// matchCostDivisor turns a matches() call's work into CEL cost: the
	// largest call costs a tenth of an evaluation's limit.
	matchCostDivisor = MaxMatchWork * 10 / CostLimit
	// maxErrorLength bounds the compile error quoted in a Fatal: CEL's
	// errors repeat the source line, which may be a kilobyte.
	maxErrorLength = 256

	// interruptEvery is how many comprehension iterations run between two
	// checks of the context.
	interruptEvery = 100
)

// The overloads of the bounded matches(): ids of their own, since the
// interpreter knows the standard library's.
const (
	overloadMatches       = "bounded_matches"
	overloadMatchesMember = "bounded_string_matches"
	overloadIn            = "charged_in"
)

// Variable is the name the observed object is bound to.
const Variable = "object"

// A Program is a compiled expression, ready to evaluate.
type Program struct {
	text string
	prg  cel.Program
}

// Text is the expression's source.
func (p *Program) Text() string { return p.text }

// Eval evaluates the expression against an object, within the run's
// budget. An error (a missing field, a value of another type than expected,
// a result that is not a boolean, the cost limit, a spent budget) is the
// caller's to report: for a gate, it holds.
func (p *Program) Eval(ctx context.Context, budget *Budget, object map[string]any) (bool, error) {
	if budget.spent() {
		return false, ErrBudget
	}
	out, details, err := p.prg.ContextEval(ctx, map[string]any{Variable: object})
	if cost := details.ActualCost(); cost != nil {
		budget.charge(*cost)
	} else {
		budget.charge(CostLimit)
	}
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the expression returned %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// Missing reports whether an evaluation error says only that the object
// does not have a field, a key or a list element yet (CEL's "no such key",
// "no such attribute" and "index out of bounds"): the object is not there
// yet, as opposed to an expression that cannot be judged (the cost limit,
// a spent budget, a value of another type, a result that is not a bool).
func Missing(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, prefix := range []string{"no such key:", "no such attribute", "index out of bounds:"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// A Budget is what is left of a run's evaluation cost. Its zero value is a
// full budget. It is not safe for concurrent use: one run evaluates its
// expressions in order.
type Budget struct {
	used uint64
}

// ErrBudget is returned for an expression that a run did not evaluate: the
// run's earlier evaluations spent its budget.
var ErrBudget = fmt.Errorf("not evaluated: this run's expressions already cost %d, the most one run may spend", RunBudget)

func (b *Budget) spent() bool { return b != nil && b.used >= RunBudget }

func (b *Budget) charge(cost uint64) {
	if b != nil {
		b.used += cost
	}
}

// Used is the cost the run's evaluations have spent.
func (b *Budget) Used() uint64 {
	if b == nil {
		return 0
	}
	return b.used
}

// A Compiler compiles expressions and keeps the most recently used ones.
// It is safe for concurrent use.
type Compiler struct {
	env *cel.Env

	mu      sync.Mutex
	order   *list.List // of *entry, most recently used first
	entries map[string]*list.Element
	size    int
}

type entry struct {
	text string
	prg  *Program
	err  error
}

// NewCompiler returns a compiler that keeps at most size compiled
// expressions (CacheSize when size is 0 or less).
func NewCompiler(size int) (*Compiler, error) {
	if size <= 0 {
		size = CacheSize
	}
	celEnv, err := cel.NewCustomEnv(
		cel.Variable(Variable, cel.MapType(cel.StringType, cel.DynType)),
		// The standard library's matches() is replaced by one whose work
		// is bounded and charged (see MaxMatchWork).
		// So is `in`: CEL's has an overload for lists and one for maps, and
		// on values of dyn type (all of an object's) the interpreter cannot
		// tell which applies until it runs, so no cost could be charged to
		// it. One overload of dyn operands is charged by the list's size.
		cel.StdLib(cel.StdLibSubset(env.NewLibrarySubset().AddExcludedFunctions(
			&env.Function{Name: overloads.Matches}, &env.Function{Name: operators.In}))),
		cel.Function(overloads.Matches,
			cel.Overload(overloadMatches, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(boundedMatch)),
			cel.MemberOverload(overloadMatchesMember, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(boundedMatch))),
		cel.Function(operators.In,
			cel.Overload(overloadIn, []*cel.Type{cel.DynType, cel.DynType}, cel.BoolType, cel.BinaryBinding(contains))),
	)
	if err != nil {
		return nil, fmt.Errorf("cannot create the CEL environment: %w", err)
	}
	return &Compiler{env: celEnv, order: list.New(), entries: map[string]*list.Element{}, size: size}, nil
}

// ErrTooLong is returned for an expression longer than MaxLength.
var ErrTooLong = fmt.Errorf("the expression is longer than %d characters", MaxLength)

// Compile compiles an expression, or returns the one compiled before for
// the same text. An expression whose type is known not to be a boolean is
// refused; one whose type is only known when evaluated (dyn, such as
// object.status.ready) is checked then.
func (c *Compiler) Compile(text string) (*Program, error) {
	if len(text) > MaxLength {
		return nil, ErrTooLong
	}
	c.mu.Lock()
	if e, ok := c.entries[text]; ok {
		c.order.MoveToFront(e)
		en := e.Value.(*entry) //nolint:forcetypeassert // Only *entry is stored.
		c.mu.Unlock()
		return en.prg, en.err
	}
	c.mu.Unlock()

	prg, err := c.compile(text)

	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[text]; !ok {
		c.entries[text] = c.order.PushFront(&entry{text: text, prg: prg, err: err})
		for c.order.Len() > c.size {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.entries, oldest.Value.(*entry).text) //nolint:forcetypeassert // Only *entry is stored.
		}
	}
	return prg, err
}

// Len is how many compiled expressions the cache holds.
func (c *Compiler) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *Compiler) compile(text string) (*Program, error) {
	ast, iss := c.env.Compile(text)
	if iss.Err() != nil {
		return nil, errors.New(compileError(iss.Err().Error()))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("the expression returns %s, not a bool", t)
	}
	if err := checkIn(ast); err != nil {
		return nil, err
	}
	prg, err := c.env.Program(ast,
		cel.CostLimit(CostLimit),
		cel.CostTrackerOptions(
			interpreter.OverloadCostTracker(overloadMatches, matchCost),
			interpreter.OverloadCostTracker(overloadMatchesMember, matchCost),
			interpreter.OverloadCostTracker(overloads.Equals, comparisonCost),
			interpreter.OverloadCostTracker(overloads.NotEquals, comparisonCost),
			interpreter.OverloadCostTracker(overloadIn, inCost)),
		cel.InterruptCheckFrequency(interruptEvery),
		// Not OptOptimize: it would replace matches() of a constant pattern
		// with one that is not bounded.
		cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("cannot prepare the expression: %w", err)
	}
	return &Program{text: text, prg: prg}, nil
}

// checkIn refuses an `in` whose right side is known to be neither a list
// nor a map ('a' in 'abc'), as CEL's own type check does: the function's
// `in` takes dyn operands, so that it can be charged, and would otherwise
// admit it and fail on every evaluation.
func checkIn(checked *cel.Ast) error {
	for _, call := range celast.MatchDescendants(celast.NavigateAST(checked.NativeRep()), celast.FunctionMatcher(operators.In)) {
		args := call.AsCall().Args()
		if len(args) != 2 {
			continue
		}
		right := celast.NavigateExpr(checked.NativeRep(), args[1]).Type()
		switch right.Kind() {
		case types.ListKind, types.MapKind, types.DynKind, types.AnyKind, types.TypeParamKind:
		default:
			left := celast.NavigateExpr(checked.NativeRep(), args[0]).Type()
			return fmt.Errorf("found no matching overload for 'in' applied to '(%s, %s)': the right side of 'in' is a list or a map", left, right)
		}
	}
	return nil
}

// compileError keeps what a CEL compile error says and drops the source
// lines it quotes (the expression is the field's value, which the Fatal
// quotes once, cut), within maxErrorLength.
func compileError(msg string) string {
	var kept []string
	for line := range strings.SplitSeq(msg, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "|") {
			continue
		}
		kept = append(kept, strings.TrimSpace(line))
	}
	out := strings.Join(kept, "; ")
	if len(out) > maxErrorLength {
		out = strings.ToValidUTF8(out[:maxErrorLength], "") + "..."
	}
	return out
}

// boundedMatch is CEL's matches(), refused (an evaluation error, which
// holds a gate) when the string's length times the size of the pattern's
// program exceeds MaxMatchWork.
func boundedMatch(str, pattern ref.Val) ref.Val {
	s, ok := str.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(str)
	}
	p, ok := pattern.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(pattern)
	}
	re, err := patterns.get(string(p))
	if err != nil {
		return types.WrapErr(err)
	}
	if work := re.work(len(s)); work > MaxMatchWork {
		return types.NewErr("matches() on a string of %d bytes with a pattern of %d bytes is too costly to evaluate (at most %d units of work; shorten the string or the pattern)",
			len(s), len(p), MaxMatchWork)
	}
	return types.Bool(re.re.MatchString(string(s)))
}

// matchCost charges a matches() call by its work.
func matchCost(args []ref.Val, _ ref.Val) *uint64 {
	cost := uint64(1)
	if len(args) == 2 {
		s, _ := args[0].(types.String)
		p, _ := args[1].(types.String)
		if re, err := patterns.get(string(p)); err == nil {
			cost = max(cost, min(re.work(len(s)), MaxMatchWork)/matchCostDivisor)
		}
	}
	return &cost
}

// comparisonCost charges == and != by the values they may visit, and by
// the walk that finds how many: CEL charges them by the number of top-level
// items alone, so two lists of a thousand objects each would cost a hundred
// and compare every field of every object. The two sides are walked in step,
// to limits that double, until the smaller one is walked whole: the walk
// never exceeds four times the smaller side, and all of it is charged.
func comparisonCost(args []ref.Val, _ ref.Val) *uint64 {
	cost := uint64(1)
	if len(args) != 2 {
		return &cost
	}
	var walked uint64
	for limit := uint64(16); ; limit *= 2 {
		a, b := deepSize(args[0], limit), deepSize(args[1], limit)
		walked += a + b
		if a < limit || b < limit || limit >= maxWalk {
			break
		}
	}
	cost = max(cost, walked/comparisonsPerUnit)
	return &cost
}

// inCost charges x in list by the values it may visit: every item of the
// list, counted deep, since each may be compared with x (CEL charges it by
// the number of items alone). A key looked up in a map costs one.
func inCost(args []ref.Val, _ ref.Val) *uint64 {
	cost := uint64(1)
	if len(args) == 2 {
		if _, ok := args[1].(traits.Lister); ok {
			cost = max(cost, deepSize(args[1], maxWalk)/comparisonsPerUnit)
		}
	}
	return &cost
}

// contains is `in`: whether a list holds a value, or a map a key, as CEL's
// own in_list and in_map say.
func contains(value, container ref.Val) ref.Val {
	switch c := container.(type) {
	case traits.Lister:
		return c.Contains(value)
	case traits.Mapper:
		return c.Contains(value)
	default:
		return types.NoSuchOverloadErr()
	}
}

// comparisonsPerUnit is how many values a comparison visits for one unit of
// cost: CEL's own factor for traversing a string (0.1 a byte).
const comparisonsPerUnit = 10

// maxWalk bounds a walk of a value: a count that large is past the limit of
// any evaluation already.
const maxWalk = CostLimit * comparisonsPerUnit

// deepSize counts a value's scalars, lists and maps, deep, and the bytes of
// its strings (CEL charges a string's traversal by its length), up to limit:
// the walk is never much longer than the count it returns.
func deepSize(v ref.Val, limit uint64) uint64 {
	var n uint64
	var walk func(v ref.Val)
	walk = func(v ref.Val) {
		if n >= limit {
			return
		}
		n++
		switch c := v.(type) {
		case types.String:
			n = min(limit, n+uint64(len(c)))
		case types.Bytes:
			n = min(limit, n+uint64(len(c)))
		case traits.Mapper:
			for it := c.Iterator(); it.HasNext() == types.True && n < limit; {
				k := it.Next()
				walk(k)
				if val, ok := c.Find(k); ok {
					walk(val)
				}
			}
		case traits.Lister:
			for it := c.Iterator(); it.HasNext() == types.True && n < limit; {
				walk(it.Next())
			}
		}
	}
	walk(v)
	return n
}

// A pattern is a compiled regular expression and the size of its program.
type pattern struct {
	re   *regexp.Regexp
	size uint64
}

// work is what matching a string of n bytes takes at worst: its length
// times the size of the pattern's program, which is how Go's regular
// expression engines scale.
func (p *pattern) work(n int) uint64 {
	if n < 0 {
		n = 0
	}
	return (uint64(n) + 1) * p.size
}

// patternCacheSize bounds the compiled patterns kept across evaluations.
const patternCacheSize = 256

// patterns are the patterns matches() has compiled, so that a call in a
// comprehension does not compile its pattern once per element.
var patterns = &patternCache{entries: map[string]*pattern{}}

// A patternCache keeps compiled patterns; once full, it starts afresh,
// which is as good as any eviction for a handful of patterns per run.
type patternCache struct {
	mu      sync.Mutex
	entries map[string]*pattern
}

func (c *patternCache) get(text string) (*pattern, error) {
	c.mu.Lock()
	p, ok := c.entries[text]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	parsed, err := syntax.Parse(text, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(text)
	if err != nil {
		return nil, err
	}
	p = &pattern{re: re, size: uint64(max(len(prog.Inst), len(text)))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= patternCacheSize {
		c.entries = map[string]*pattern{}
	}
	c.entries[text] = p
	return p, nil
}
