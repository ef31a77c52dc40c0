package expr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// job is a Job's status as the API server returns it, decoded from JSON.
func job(t testing.TB, status string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion":"batch/v1","kind":"Job","status":`+status+`}`), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestCompile(t *testing.T) {
	cases := map[string]struct {
		reason string
		text   string
		err    string // a part of the error; "" for none
	}{
		"Bool":        {reason: "A comparison is a bool.", text: "object.status.succeeded > 0"},
		"In":          {reason: "Membership is a bool.", text: "object.status.phase in ['Failed', 'Error']"},
		"Dyn":         {reason: "A field whose type is only known at evaluation may be a bool: checked then.", text: "object.status.ready"},
		"Has":         {reason: "has() tests a field's presence.", text: "has(object.status) && object.status.succeeded > 0"},
		"Int":         {reason: "An expression known to return an int is refused.", text: "1 + 2", err: "returns int, not a bool"},
		"String":      {reason: "An expression known to return a string is refused.", text: "'yes'", err: "returns string, not a bool"},
		"Syntax":      {reason: "A syntax error says where.", text: "object.status.succeeded >", err: "Syntax error"},
		"UnknownName": {reason: "Only `object` is bound.", text: "status.succeeded > 0", err: "undeclared reference to 'status'"},
		"TooLong":     {reason: "An expression longer than MaxLength is refused before it is parsed.", text: strings.Repeat("true && ", 200) + "true", err: "longer than 1024"},
	}
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Compile(tc.text)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.err == "") != (got == "") || !strings.Contains(got, tc.err) {
				t.Errorf("%s\nCompile(%q): error %q, want one containing %q", tc.reason, tc.text, got, tc.err)
			}
		})
	}
}

func TestEval(t *testing.T) {
	type want struct {
		value bool
		err   string
	}
	cases := map[string]struct {
		reason string
		text   string
		status string
		want   want
	}{
		"Succeeded":     {reason: "A Job that succeeded passes.", text: "object.status.succeeded > 0", status: `{"succeeded":1}`, want: want{value: true}},
		"NotYet":        {reason: "A Job still running does not.", text: "object.status.active > 0 && object.status.succeeded > 0", status: `{"active":1,"succeeded":0}`, want: want{value: false}},
		"MissingField":  {reason: "A missing field is an error, for the caller to hold on.", text: "object.status.succeeded > 0", status: `{}`, want: want{err: "no such key: succeeded"}},
		"DynNotBool":    {reason: "A dyn result that is not a bool is an error.", text: "object.status.phase", status: `{"phase":"Running"}`, want: want{err: "not a bool"}},
		"DynBool":       {reason: "A dyn result that is a bool is the verdict.", text: "object.status.ready", status: `{"ready":true}`, want: want{value: true}},
		"PhaseIn":       {reason: "Argo's AnalysisRun phases.", text: "object.status.phase in ['Failed', 'Error']", status: `{"phase":"Error"}`, want: want{value: true}},
		"NumbersAsJSON": {reason: "JSON numbers are doubles: comparing them with integer literals works.", text: "object.status.succeeded == 2", status: `{"succeeded":2}`, want: want{value: true}},
	}
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := c.Compile(tc.text)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.text, err)
			}
			v, err := p.Eval(context.Background(), nil, job(t, tc.status))
			got := want{value: v}
			if err != nil {
				got.err = err.Error()
				if strings.Contains(got.err, tc.want.err) && tc.want.err != "" {
					got.err = tc.want.err
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nEval(%q): -want, +got:\n%s", tc.reason, tc.text, diff)
			}
		})
	}
}

func TestCostLimit(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	// A comprehension over a large list, nested: far more than CostLimit
	// operations.
	p, err := c.Compile("object.items.all(a, object.items.all(b, a + b >= 0))")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = float64(i)
	}
	_, err = p.Eval(context.Background(), nil, map[string]any{"items": items})
	if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("Eval(...) of a million operations: %v, want the cost limit", err)
	}
}

// heavyObject holds two lists of n objects and a list of 100 indexes:
// what a tenant can write into any object a gate reads.
func heavyObject(n int) map[string]any {
	mk := func() []any {
		l := make([]any, n)
		for i := range l {
			l[i] = map[string]any{"k": "value", "n": float64(i)}
		}
		return l
	}
	idx := make([]any, 100)
	for i := range idx {
		idx[i] = float64(i)
	}
	return map[string]any{"status": map[string]any{"a": mk(), "b": mk(), "idx": idx}}
}

// TestComparisonsChargedByWork: CEL charges == and `in` by the number of
// top-level items, and compares every field of every item: the function
// charges them by the values they may visit, so comparisons of large
// values reach the cost limit instead of running for seconds.
func TestComparisonsChargedByWork(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	big, small := heavyObject(20_000), heavyObject(3)
	cases := map[string]struct {
		reason string
		text   string
		object map[string]any
		want   bool // the result when it is within the limit
		limit  bool // the cost limit stops it
	}{
		"EqualBigLists": {
			reason: "Two lists of 20,000 objects compared: 120,000 values, past the limit.",
			text:   "object.status.a == object.status.b", object: big, limit: true,
		},
		"EqualBigListsInALoop": {
			reason: "The same comparison a hundred times.",
			text:   "object.status.idx.all(i, object.status.a == object.status.b)", object: big, limit: true,
		},
		"InBigList": {
			reason: "An object looked for in a list of 20,000 objects, a hundred times.",
			text:   "object.status.idx.all(i, object.status.a[19999] in object.status.b)", object: big, limit: true,
		},
		"NotEqualEmpty": {
			reason: "A big list against an empty one costs the smaller side: nothing to walk.",
			text:   "object.status.idx.all(i, object.status.a != [])", object: big, want: true,
		},
		"EqualSmallLists": {
			reason: "Small comparisons stay cheap.",
			text:   "object.status.a == object.status.b && object.status.a[0] in object.status.b", object: small, want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := c.Compile(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Eval(context.Background(), &Budget{}, tc.object)
			if tc.limit {
				if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
					t.Errorf("%s\nEval(%q) = %v, %v; want the cost limit", tc.reason, tc.text, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%s\nEval(%q) = %v, %v; want %v", tc.reason, tc.text, got, err, tc.want)
			}
		})
	}
}

// TestComparisonWalksCharged: the walk that sizes a comparison is charged
// too, and never goes far past the smaller side: a scalar compared with a
// whole large object (4,000 items, in a comprehension) reaches the cost
// limit instead of walking the object on every iteration; long strings
// cost their length, as CEL charges them.
func TestComparisonWalksCharged(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 4_000)
	for i := range items {
		items[i] = map[string]any{"k": "value", "n": float64(i)}
	}
	long := strings.Repeat("a", 500_000)
	idx := make([]any, 100)
	for i := range idx {
		idx[i] = float64(i)
	}
	cases := map[string]struct {
		reason string
		text   string
		object map[string]any
	}{
		"ScalarAgainstObject": {
			reason: "x.n != object walked the whole object at a cost of one, 4,000 times.",
			text:   "object.status.items.all(x, x.n != object)",
			object: map[string]any{"status": map[string]any{"items": items}},
		},
		"LongStrings": {
			reason: "Two strings of 500,000 bytes compared a hundred times cost their length, not one a comparison.",
			text:   "object.status.idx.all(i, object.status.s == object.status.t)",
			object: map[string]any{"status": map[string]any{"s": long, "t": long, "idx": idx}},
		},
		"StringInList": {
			reason: "A long string looked for in a list of long strings costs their length.",
			text:   "object.status.idx.all(i, object.status.s + 'x' in object.status.l)",
			object: map[string]any{"status": map[string]any{"s": long, "l": []any{long, long, long}, "idx": idx}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := c.Compile(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Eval(context.Background(), &Budget{}, tc.object)
			if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
				t.Errorf("%s\nEval(%q) = %v, %v; want the cost limit", tc.reason, tc.text, got, err)
			}
		})
	}
}

// TestInOperands: `in` takes dyn operands, so that it can be charged, but
// its right side must be a list or a map, as CEL's own type check says: a
// right side known to be anything else is a compile error, not an
// expression that fails on every evaluation.
func TestInOperands(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	object := map[string]any{"status": map[string]any{"phase": "Failed"}}
	for _, text := range []string{"object.status.phase in 'Failed'", "'a' in 'abc'", "1 in 2", "[1] in [[1]] && 'x' in 'x'"} {
		if _, err := c.Compile(text); err == nil || !strings.Contains(err.Error(), "found no matching overload for 'in'") {
			t.Errorf("Compile(%q) = %v, want no matching overload for 'in'", text, err)
		}
	}
	for text, want := range map[string]bool{
		"'a' in ['a']": true, "1 in {1: 2}": true, "1 in [1.0]": true, "'a' in {'a': 1}": true,
		"object.status.phase in ['Failed', 'Error']": true, "'b' in ['a']": false, "object.status.phase in object.status": false,
	} {
		p, err := c.Compile(text)
		if err != nil {
			t.Errorf("Compile(%q): %v", text, err)
			continue
		}
		if got, err := p.Eval(context.Background(), nil, object); err != nil || got != want {
			t.Errorf("Eval(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	c, err := NewCompiler(2)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := c.Compile("true")
	if again, _ := c.Compile("true"); again != first {
		t.Error("Compile(...) compiled the same text twice")
	}
	for i := range 5 {
		if _, err := c.Compile(fmt.Sprintf("object.n == %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Len(); got != 2 {
		t.Errorf("the cache holds %d expressions, want at most 2", got)
	}
	if again, _ := c.Compile("true"); again == first {
		t.Error("the least recently used expression was not evicted")
	}
}

func TestCompilerIsSafeForConcurrentUse(t *testing.T) {
	c, err := NewCompiler(4)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				p, err := c.Compile(fmt.Sprintf("object.n == %d", (i+j)%6))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := p.Eval(context.Background(), nil, map[string]any{"n": float64(j)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func TestMatches(t *testing.T) {
	type want struct {
		value bool
		err   string // a part of the error; "" for none
	}
	long := strings.Repeat("ab", 100_000)
	cases := map[string]struct {
		reason string
		text   string
		object map[string]any
		want   want
	}{
		"Member": {
			reason: "matches() as a member works as CEL's own.",
			text:   "object.s.matches('^Succ.*$')", object: map[string]any{"s": "Successful"}, want: want{value: true},
		},
		"Global": {
			reason: "matches() as a function works as CEL's own.",
			text:   "matches(object.s, 'ful$')", object: map[string]any{"s": "Successful"}, want: want{value: true},
		},
		"NoMatch": {
			reason: "A string that does not match is false.",
			text:   "object.s.matches('^Failed$')", object: map[string]any{"s": "Successful"}, want: want{value: false},
		},
		"LongStringShortPattern": {
			reason: "A long string with a short pattern is within the work bound: 200 KB by a pattern of a few instructions would not be, so a 20 KB one is used.",
			text:   "object.s.matches('b$')", object: map[string]any{"s": long[:20_000]}, want: want{value: true},
		},
		"TooCostly": {
			reason: "A long pattern over a 200 KB string is refused before it runs: Go's regexp would take seconds, and CEL's cost model charges matches() by the string alone.",
			text:   "object.s.matches('" + strings.Repeat("(?:a|b)", 50) + "z')", object: map[string]any{"s": long},
			want: want{err: "too costly to evaluate"},
		},
		"BadPattern": {
			reason: "A pattern that does not compile is an evaluation error, which holds.",
			text:   "object.s.matches(object.p)", object: map[string]any{"s": "x", "p": "("}, want: want{err: "missing closing )"},
		},
	}
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := c.Compile(tc.text)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.text, err)
			}
			v, err := p.Eval(context.Background(), nil, tc.object)
			got := want{value: v}
			if err != nil {
				got.err = err.Error()
				if tc.want.err != "" && strings.Contains(got.err, tc.want.err) {
					got.err = tc.want.err
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nEval(%q): -want, +got:\n%s", tc.reason, tc.text, diff)
			}
		})
	}
}

func TestMatchesAreCharged(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	// Each call is within MaxMatchWork, but together they are worth many
	// evaluations: the cost limit stops the comprehension.
	p, err := c.Compile("object.items.all(s, s.matches('" + strings.Repeat("(?:a|b)", 10) + "z'))")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = strings.Repeat("ab", 600) + "z"
	}
	if _, err := p.Eval(context.Background(), nil, map[string]any{"items": items}); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("Eval(...) of 1,000 matches() of 1,200 bytes each: %v, want the cost limit", err)
	}
}

func TestBudget(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	heavy, err := c.Compile("object.items.all(a, object.items.all(b, a + b >= 0))")
	if err != nil {
		t.Fatal(err)
	}
	light, err := c.Compile("object.ok")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = float64(i)
	}
	obj := map[string]any{"items": items, "ok": true}
	budget := &Budget{}
	// Each heavy evaluation spends up to CostLimit, then fails: RunBudget
	// allows a few of them.
	n := 0
	for ; n < 100; n++ {
		if _, err := heavy.Eval(context.Background(), budget, obj); errors.Is(err, ErrBudget) {
			break
		}
	}
	if want := RunBudget / CostLimit; n < want || n > want+1 {
		t.Errorf("%d heavy evaluations ran before the budget was spent, want %d or %d", n, want, want+1)
	}
	if _, err := light.Eval(context.Background(), budget, obj); !errors.Is(err, ErrBudget) {
		t.Errorf("an evaluation after the budget was spent: %v, want ErrBudget", err)
	}
	if ok, err := light.Eval(context.Background(), &Budget{}, obj); err != nil || !ok {
		t.Errorf("an evaluation with a budget of its own: %v, %v, want true", ok, err)
	}
}

func TestCompileErrorIsBounded(t *testing.T) {
	c, err := NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	// A kilobyte of text with an error at its end: CEL's error quotes the
	// whole line, which the function's Fatal must not.
	text := strings.Repeat("object.a == 1 && ", 58) + "object.b =="
	_, err = c.Compile(text)
	if err == nil {
		t.Fatal("Compile(...) of a syntax error: no error")
	}
	if strings.Contains(err.Error(), "object.a == 1 && object.a") || len(err.Error()) > maxErrorLength+3 {
		t.Errorf("Compile(...): the error quotes the source or is longer than %d: %q", maxErrorLength, err)
	}
	if !strings.Contains(err.Error(), "Syntax error") {
		t.Errorf("Compile(...): %q, want it to say what is wrong", err)
	}
}

// BenchmarkCompile is what a run pays for an expression it has not seen:
// the longest one the XRD admits.
func BenchmarkCompile(b *testing.B) {
	text := strings.Repeat("object.status.phase == 'Running' && ", 27) + "true"
	for i := 0; b.Loop(); i++ {
		c, err := NewCompiler(1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Compile(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorstEvaluation measures the slowest evaluations known, each
// stopped by the cost limit: a filter over 40,000 items (CEL keeps a
// comprehension's cost on a stack it searches on every iteration, so the
// time grows with the square of the cost), and comparisons of large lists.
// docs/performance.md records the figures.
func BenchmarkWorstEvaluation(b *testing.B) {
	c, err := NewCompiler(0)
	if err != nil {
		b.Fatal(err)
	}
	samples := make([]any, 40_000)
	for i := range samples {
		samples[i] = map[string]any{"code": float64(200 + 303*(i%2))}
	}
	big := heavyObject(20_000)
	for name, tc := range map[string]struct {
		text   string
		object map[string]any
	}{
		"Filter":         {"object.status.samples.filter(s, s.code >= 500).size() > 5", map[string]any{"status": map[string]any{"samples": samples}}},
		"NestedAll":      {"object.status.samples.all(a, object.status.samples.all(b, a.code >= 0))", map[string]any{"status": map[string]any{"samples": samples}}},
		"Equal":          {"object.status.idx.all(i, object.status.a == object.status.b)", big},
		"In":             {"object.status.idx.all(i, object.status.a[19999] in object.status.b)", big},
		"ScalarVsObject": {"object.status.a.all(x, x.n != object)", big},
	} {
		b.Run(name, func(b *testing.B) {
			p, err := c.Compile(tc.text)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := p.Eval(context.Background(), nil, tc.object); err == nil {
					b.Fatal("the evaluation ended within the cost limit")
				}
			}
		})
	}
}

// FuzzExpression compiles arbitrary text and evaluates what compiles against
// an arbitrary JSON object: never a panic, and never more work than the cost
// limit allows.
func FuzzExpression(f *testing.F) {
	f.Add("object.status.succeeded > 0", `{"status":{"succeeded":1}}`)
	f.Add("object.status.phase in ['Failed', 'Error']", `{"status":{"phase":"Error"}}`)
	f.Add("object.items.all(a, object.items.all(b, a == b))", `{"items":[1,2,3,4,5,6,7,8,9,10]}`)
	f.Add("object.s.matches('^(a+)+$')", `{"s":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}`)
	f.Add("size(object.s + object.s + object.s) > 0", `{"s":"x"}`)
	f.Add("object.items.all(i, object.items != object && 'x' in object.l)", `{"items":[{"a":1},{"b":[2]}],"l":["x","y"]}`)
	f.Add("object.a == object.b || 1 in object.m", `{"a":[{"k":"v"}],"b":[{"k":"v"}],"m":{"1":2}}`)
	// Patterns read from the object: too long, costly to parse (a
	// case-folded range, Unicode tables), costly to compile (a repeat),
	// invalid, and used again in a comprehension.
	f.Add("object.s.matches(object.p)", `{"s":"x","p":"`+strings.Repeat("a", MaxPatternLength+1)+`"}`)
	f.Add("matches(object.s, object.p)", `{"s":"x","p":"(?i)[\u0100-\ud83a\udd43]"}`)
	f.Add("object.l.exists(p, object.s.matches(p))", `{"s":"abc","l":["\\pL+","a{1000}","(?:a|b){500}z","(","\\Q[\\E"]}`)
	f.Add("object.l.all(s, s.matches(object.p))", `{"p":"^v[0-9]+$","l":["v1","v2","v10","x"]}`)
	c, err := NewCompiler(64)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, doc string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			t.Skip()
		}
		p, err := c.Compile(text)
		if err != nil {
			return
		}
		ev := &evaluation{}
		_, det, err := p.evalWith(context.Background(), ev, obj)
		if det == nil || det.ActualCost() == nil {
			t.Fatalf("%q: no cost", text)
		}
		cost := *det.ActualCost()
		if err == nil && cost > CostLimit {
			t.Fatalf("%q cost %d, more than the limit %d", text, cost, CostLimit)
		}
		// Every pattern the evaluation parsed or compiled was charged
		// for it first.
		var charged uint64
		for pattern, u := range ev.patterns {
			charged += u.parseCost
			if u.compileCharged {
				charged += u.parseCost + u.size*compileCostPerInst
			} else if u.re != nil {
				t.Fatalf("%q: the pattern %.40q was compiled and not charged for it", text, pattern)
			}
		}
		if cost < charged {
			t.Fatalf("%q cost %d, less than the %d its patterns were charged", text, cost, charged)
		}
	})
}
