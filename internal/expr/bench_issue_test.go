package expr

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// seeds makes every object of BenchmarkPatternsFromObject new to the
// process, across its runs too.
var seeds atomic.Int64

// patternObject is the object of issue 25: a Deployment of 1.4 MB whose
// annotations hold ten patterns of 140 KB each, unique to seed (so that no
// cache of an earlier run holds them), and that fail to compile when
// invalid (an unclosed group, found at the pattern's end).
func patternObject(seed int, invalid bool) map[string]any {
	annotations := map[string]any{}
	for i := range 10 {
		p := fmt.Sprintf("r%d-%d-", seed, i) + strings.Repeat("abcdefghij", 14_000)[:140_000-20]
		if invalid {
			p += "("
		}
		annotations[fmt.Sprintf("a%d", i)] = p
	}
	return map[string]any{"metadata": map[string]any{"annotations": annotations}}
}

// BenchmarkPatternsFromObject is issue 25: a gate whose successWhen matches
// each annotation's key with the pattern its value holds, on an object of
// ten 140 KB patterns (1.4 MB, within etcd's limit), new to the function on
// every run: one run's evaluation with a budget of its own. "Invalid" are
// patterns that do not compile, "Valid" ones that do.
func BenchmarkPatternsFromObject(b *testing.B) {
	c, err := NewCompiler(0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.Compile("object.metadata.annotations.all(k, k.matches(object.metadata.annotations[k]))")
	if err != nil {
		b.Fatal(err)
	}
	for _, invalid := range []bool{true, false} {
		name := "Valid"
		if invalid {
			name = "Invalid"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				obj := patternObject(int(seeds.Add(1)), invalid)
				b.StartTimer()
				if ok, err := p.Eval(context.Background(), &Budget{}, obj); err == nil {
					b.Fatalf("Eval(...) = %v, want an error that holds the gate", ok)
				}
			}
		})
	}
}
