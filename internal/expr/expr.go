// Package expr compiles and evaluates the CEL expressions of gates and
// analysis templates (successWhen, failWhen): boolean expressions over the
// observed object, bound to the variable `object` as a map.
//
// Each distinct text is compiled once and kept in a bounded cache, since the
// same CanaryRoute is evaluated on every reconcile; every evaluation has a
// cost limit, so no expression can make a run slow, whatever the object.
package expr

import (
	"context"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
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
	// maxErrorLength bounds the compile error quoted in a Fatal: CEL's
	// errors repeat the source line, which may be a kilobyte.
	maxErrorLength = 256

	// interruptEvery is how many comprehension iterations run between two
	// checks of the context.
	interruptEvery = 100
)

// The overload of the charged `in`: an id of its own, since the
// interpreter knows the standard library's.
const overloadIn = "charged_in"

// Variable is the name the observed object is bound to.
const Variable = "object"

// A Program is a compiled expression, ready to evaluate.
type Program struct {
	text string
	prg  cel.Program
	// usesBaseline: a metric's expression reads baseline.
	usesBaseline bool
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
	out, details, err := p.eval(ctx, object)
	return verdict(budget, out, details, err)
}

// verdict charges an evaluation's cost to the run's budget (the cost limit
// when CEL did not count it: an evaluation cut short) and reads its boolean
// result.
func verdict(budget *Budget, out ref.Val, details *cel.EvalDetails, err error) (bool, error) {
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
		return false, errors.Errorf("the expression returned %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// eval evaluates the expression with an evaluation of its own (see
// evaluation).
func (p *Program) eval(ctx context.Context, object map[string]any) (ref.Val, *cel.EvalDetails, error) {
	return p.evalWith(ctx, &evaluation{}, object)
}

// evalWith evaluates the expression with the given evaluation's state,
// which FuzzExpression reads afterwards.
func (p *Program) evalWith(ctx context.Context, e *evaluation, object map[string]any) (ref.Val, *cel.EvalDetails, error) {
	return p.prg.ContextEval(ctx, &activation{object: object, evaluation: e})
}

// An activation binds the object (or a metric's result and baseline), and
// the evaluation's own state.
type activation struct {
	object           map[string]any
	result, baseline float64
	evaluation       *evaluation
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case Variable:
		return a.object, true
	case ResultVariable:
		return a.result, true
	case BaselineVariable:
		return a.baseline, true
	case evaluationVariable:
		return a.evaluation, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

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
var ErrBudget = errors.Errorf("not evaluated: this run's expressions already cost %d, the most one run may spend", RunBudget)

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
	// metricEnv compiles the successWhen of metrics, over result and
	// baseline.
	metricEnv *cel.Env

	// compiled are the programs (or why a text does not compile) kept by
	// their environment's key and their text, bounded by their number.
	compiled *memo.Cache[string, compiledExpr]
}

type compiledExpr struct {
	prg *Program
	err error
}

// NewCompiler returns a compiler that keeps at most size compiled
// expressions (CacheSize when size is 0 or less).
func NewCompiler(size int) (*Compiler, error) {
	if size <= 0 {
		size = CacheSize
	}
	opts := []cel.EnvOption{
		cel.Variable(Variable, cel.MapType(cel.StringType, cel.DynType)),
		// The standard library's matches() is replaced by one whose work
		// is bounded and charged before it runs (see matchesOptions).
		// So is `in`: CEL's has an overload for lists and one for maps, and
		// on values of dyn type (all of an object's) the interpreter cannot
		// tell which applies until it runs, so no cost could be charged to
		// it. One overload of dyn operands is charged by the list's size.
		cel.StdLib(cel.StdLibSubset(env.NewLibrarySubset().AddExcludedFunctions(
			&env.Function{Name: overloads.Matches}, &env.Function{Name: operators.In}))),
		cel.Function(operators.In,
			cel.Overload(overloadIn, []*cel.Type{cel.DynType, cel.DynType}, cel.BoolType, cel.BinaryBinding(contains))),
	}
	celEnv, err := cel.NewCustomEnv(append(opts, matchesOptions()...)...)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the CEL environment")
	}
	// A metric's numbers are doubles, and its thresholds are often written
	// as integers (result > 0): comparisons across numeric types read as
	// people mean them.
	metricOpts := append([]cel.EnvOption{
		cel.Variable(ResultVariable, cel.DoubleType), cel.Variable(BaselineVariable, cel.DoubleType),
		cel.CrossTypeNumericComparisons(true),
	}, opts[1:]...)
	metricEnv, err := cel.NewCustomEnv(append(metricOpts, matchesOptions()...)...)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the CEL environment of metrics")
	}
	return &Compiler{env: celEnv, metricEnv: metricEnv, compiled: memo.New[string, compiledExpr](size, memo.Unbounded)}, nil
}

// ErrTooLong is returned for an expression longer than MaxLength.
var ErrTooLong = errors.Errorf("the expression is longer than %d characters", MaxLength)

// Compile compiles an expression, or returns the one compiled before for
// the same text. An expression whose type is known not to be a boolean is
// refused; one whose type is only known when evaluated (dyn, such as
// object.status.ready) is checked then.
func (c *Compiler) Compile(text string) (*Program, error) {
	return c.cached(text, "", c.env)
}

// cached compiles an expression in an environment, or returns the one
// compiled before for the same text and environment; key tells the
// environments apart in the cache.
func (c *Compiler) cached(text, prefix string, celEnv *cel.Env) (*Program, error) {
	if len(text) > MaxLength {
		return nil, ErrTooLong
	}
	key := prefix + text
	if e, ok := c.compiled.Get(key); ok {
		return e.prg, e.err
	}
	prg, err := c.compile(celEnv, text)
	c.compiled.Add(key, compiledExpr{prg: prg, err: err}, 0)
	return prg, err
}

// Len is how many compiled expressions the cache holds.
func (c *Compiler) Len() int {
	n, _ := c.compiled.Len()
	return n
}

func (c *Compiler) compile(celEnv *cel.Env, text string) (*Program, error) {
	ast, iss := celEnv.Parse(text)
	if iss.Err() != nil {
		return nil, errors.New(compileError(iss.Err().Error()))
	}
	if celEnv == c.metricEnv {
		doubles(ast)
	}
	ast, iss = celEnv.Check(ast)
	if iss.Err() != nil {
		return nil, errors.New(compileError(iss.Err().Error()))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, errors.Errorf("the expression returns %s, not a bool", t)
	}
	if err := checkIn(ast); err != nil {
		return nil, err
	}
	prg, err := celEnv.Program(ast,
		cel.CostLimit(CostLimit),
		cel.CostTrackerOptions(append(matchesCostTrackers(),
			interpreter.OverloadCostTracker(overloads.Equals, comparisonCost),
			interpreter.OverloadCostTracker(overloads.NotEquals, comparisonCost),
			interpreter.OverloadCostTracker(overloadIn, inCost))...),
		cel.InterruptCheckFrequency(interruptEvery),
		// Not OptOptimize: it would replace matches() of a constant pattern
		// with one that is not bounded.
		cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, errors.Wrap(err, "cannot prepare the expression")
	}
	usesBaseline := len(celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == BaselineVariable
	})) > 0
	return &Program{text: text, prg: prg, usesBaseline: usesBaseline}, nil
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
			return errors.Errorf("found no matching overload for 'in' applied to '(%s, %s)': the right side of 'in' is a list or a map", left, right)
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
	return fielderr.Truncate(strings.Join(kept, "; "), maxErrorLength, fielderr.Bytes, nil)
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
