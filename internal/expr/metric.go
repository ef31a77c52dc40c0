package expr

import (
	"context"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// The variables of a metric's successWhen: the canary's number, and the
// primary's when the metric compares to it.
const (
	ResultVariable   = "result"
	BaselineVariable = "baseline"
)

// metricKey tells a metric's expression from a gate's of the same text in
// the compiler's cache: they are compiled in different environments.
const metricKey = "metric\x00"

// CompileMetric compiles a metric's successWhen, over result and baseline
// (doubles), or returns the one compiled before for the same text. It must
// return a bool.
func (c *Compiler) CompileMetric(text string) (*Program, error) {
	return c.cached(text, metricKey, c.metricEnv)
}

// UsesBaseline reports whether a metric's expression reads baseline.
func (p *Program) UsesBaseline() bool { return p.usesBaseline }

// EvalMetric evaluates a metric's expression for a measurement, within the
// run's budget, as Eval does for an object.
func (p *Program) EvalMetric(ctx context.Context, budget *Budget, result, baseline float64) (bool, error) {
	if budget.spent() {
		return false, ErrBudget
	}
	out, details, err := p.prg.ContextEval(ctx, &activation{result: result, baseline: baseline, evaluation: &evaluation{}})
	return verdict(budget, out, details, err)
}

// doubles makes every integer literal of a parsed metric expression a
// double: a metric's numbers are doubles, and CEL has no arithmetic across
// numeric types, so baseline * 2 would not compile where baseline * 2.0
// does. In an expression over two doubles, an integer literal is always
// meant as a number.
func doubles(parsed *cel.Ast) {
	fac := celast.NewExprFactory()
	celast.PostOrderVisit(parsed.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.LiteralKind {
			return
		}
		switch v := e.AsLiteral().(type) {
		case types.Int:
			e.SetKindCase(fac.NewLiteral(e.ID(), types.Double(v)))
		case types.Uint:
			e.SetKindCase(fac.NewLiteral(e.ID(), types.Double(v)))
		}
	}))
}
