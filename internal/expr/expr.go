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
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Limits of an expression and of its evaluation.
const (
	// MaxLength is the longest expression text, in bytes.
	MaxLength = 1024
	// CostLimit bounds one evaluation: about a hundred thousand
	// operations, far beyond any check of an object's status, and a few
	// milliseconds at most.
	CostLimit = 100_000
	// CacheSize is how many distinct compiled expressions are kept.
	CacheSize = 512

	// interruptEvery is how many comprehension iterations run between two
	// checks of the context.
	interruptEvery = 100
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

// Eval evaluates the expression against an object. An error (a missing
// field, a value of another type than expected, a result that is not a
// boolean, the cost limit) is the caller's to report: for a gate, it holds.
func (p *Program) Eval(ctx context.Context, object map[string]any) (bool, error) {
	out, _, err := p.prg.ContextEval(ctx, map[string]any{Variable: object})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the expression returned %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
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
	env, err := cel.NewEnv(cel.Variable(Variable, cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("cannot create the CEL environment: %w", err)
	}
	return &Compiler{env: env, order: list.New(), entries: map[string]*list.Element{}, size: size}, nil
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
		return nil, errors.New(iss.Err().Error())
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("the expression returns %s, not a bool", t)
	}
	prg, err := c.env.Program(ast,
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(interruptEvery),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("cannot prepare the expression: %w", err)
	}
	return &Program{text: text, prg: prg}, nil
}
