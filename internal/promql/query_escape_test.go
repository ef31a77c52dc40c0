package promql

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestEscapeReplacementCharacter: PromQL's lexer refuses U+FFFD written
// as it is: a value holding it is escaped, and the query still parses.
func TestEscapeReplacementCharacter(t *testing.T) {
	for name, rev := range map[string]string{
		"Alone":  "\uFFFD",
		"Inside": "v2-\uFFFD-x",
	} {
		t.Run(name, func(t *testing.T) {
			query := Expand(`sum(x{rev="{{revision}}", keep="yes"})`, Values{Revision: rev})
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
			if err != nil {
				t.Fatalf("Expand(..., %q) = %q does not parse: %v", rev, query, err)
			}
			var got string
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					for _, m := range vs.LabelMatchers {
						if m.Name == "rev" {
							got = m.Value
						}
					}
				}
				return nil
			})
			if got != rev {
				t.Errorf("PromQL reads the revision back as %q, want %q", got, rev)
			}
		})
	}
}
