package bounds

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

func TestCheck(t *testing.T) {
	list := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "x"
		}
		return out
	}
	labels := func(n int) map[string]any {
		out := map[string]any{}
		for i := range n {
			out[fmt.Sprintf("k%03d", i)] = "v"
		}
		return out
	}
	limits := Limits{
		"spec.hostnames":        16,
		"spec.rules[*].filters": 2,
		"spec.selector":         3,
		"spec.routeName":        5,
		"conditionType":         4,
	}
	cases := map[string]struct {
		reason string
		value  any
		want   []string
	}{
		"WithinLimits": {
			reason: "Values within their limits pass.",
			value:  map[string]any{"hostnames": list(16), "routeName": "abcde", "selector": labels(3)},
		},
		"ListByPath": {
			reason: "A list longer than the limit of its path is refused, by its length alone.",
			value:  map[string]any{"hostnames": list(17)},
			want:   []string{"spec.hostnames: Too many: 17: must have at most 16 items"},
		},
		"ListInListByPattern": {
			reason: "A pattern with [*] matches the elements of every list on the way.",
			value:  map[string]any{"rules": []any{map[string]any{"filters": list(2)}, map[string]any{"filters": list(3)}}},
			want:   []string{"spec.rules[1].filters: Too many: 3: must have at most 2 items"},
		},
		"DefaultList": {
			reason: "A list that no limit names has at most 64 items.",
			value:  map[string]any{"other": list(65)},
			want:   []string{"spec.other: Too many: 65: must have at most 64 items"},
		},
		"DataMap": {
			reason: "A map named in the limits is data: it has at most that many keys.",
			value:  map[string]any{"selector": labels(4)},
			want:   []string{"spec.selector: Too many: 4: must have at most 3 items"},
		},
		"ObjectKeys": {
			reason: "An object has at most 64 keys: the function's objects have a few.",
			value:  labels(65),
			want:   []string{"spec: Too many: 65: must have at most 64 items"},
		},
		"StringByPath": {
			reason: "A string longer than the limit of its path is refused before any pattern is tried.",
			value:  map[string]any{"routeName": "abcdef"},
			want:   []string{`spec.routeName: Too long: may not be more than 5 characters`},
		},
		"StringByName": {
			reason: "A field name alone limits every field of that name.",
			value:  map[string]any{"gates": []any{map[string]any{"conditionType": "Available"}}},
			want:   []string{`spec.gates[0].conditionType: Too long: may not be more than 4 characters`},
		},
		"DefaultString": {
			reason: "A string that no limit names has at most 4096 characters.",
			value:  map[string]any{"message": strings.Repeat("m", 4097)},
			want:   []string{`spec.message: Too long: may not be more than 4096 characters`},
		},
		"CharactersNotBytes": {
			reason: "A limit counts characters, as the XRD's maxLength does: 5 Greek letters are 10 bytes and within a limit of 5.",
			value:  map[string]any{"routeName": "αβγδε"},
		},
		"CharactersOverTheLimit": {
			reason: "6 Greek letters are over it.",
			value:  map[string]any{"routeName": "αβγδεζ"},
			want:   []string{`spec.routeName: Too long: may not be more than 5 characters`},
		},
		"AtMostMaxErrors": {
			reason: "At most fielderr.MaxErrors errors, in a stable order.",
			value: func() map[string]any {
				m := map[string]any{}
				for i := range 30 {
					m[fmt.Sprintf("f%02d", i)] = list(65)
				}
				return m
			}(),
			want: func() []string {
				out := make([]string, fielderr.MaxErrors)
				for i := range out {
					out[i] = fmt.Sprintf("spec.f%02d: Too many: 65: must have at most 64 items", i)
				}
				return out
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := Check(field.NewPath("spec"), tc.value, limits)
			got := make([]string, 0, len(errs))
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzCheck checks that any JSON document, under limits that its own keys
// name, gives at most fielderr.MaxErrors errors, the same ones twice.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"hostnames":["a","b"],"selector":{"app":"x"},"rules":[{"filters":[1,2,3]}]}`), "spec.selector", uint8(1))
	f.Add([]byte(`{"routeName":"abcdef","gates":[{"conditionType":"Available"}]}`), "conditionType", uint8(4))
	f.Fuzz(func(t *testing.T, doc []byte, pattern string, limit uint8) {
		var v any
		if json.Unmarshal(doc, &v) != nil {
			t.Skip()
		}
		limits := Limits{pattern: int(limit), "spec.rules[*].filters": 2, "spec.hostnames": 1}
		first := Check(field.NewPath("spec"), v, limits)
		if len(first) > fielderr.MaxErrors {
			t.Fatalf("Check(...) returned %d errors, more than %d", len(first), fielderr.MaxErrors)
		}
		if diff := cmp.Diff(first.ToAggregate(), Check(field.NewPath("spec"), v, limits).ToAggregate()); diff != "" {
			t.Fatalf("Check(...) is not deterministic: -first, +second:\n%s", diff)
		}
	})
}
