package decode

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestDecodePaths pins how decoder paths become field paths.
func TestDecodePaths(t *testing.T) {
	type args struct {
		jsonPath string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"Field":       {reason: "A plain field is a child.", args: args{"weight"}, want: "spec.traffic.weight"},
		"Nested":      {reason: "Dots separate children.", args: args{"mirror.percent"}, want: "spec.traffic.mirror.percent"},
		"Index":       {reason: "A list index follows its field.", args: args{"steps[1].pause"}, want: "spec.traffic.steps[1].pause"},
		"LeadingIdx":  {reason: "A fragment that is a list starts with an index.", args: args{"[0].path.tpye"}, want: "spec.traffic[0].path.tpye"},
		"NestedLists": {reason: "Indexes of nested lists follow each other.", args: args{"a[1][2].b"}, want: "spec.traffic.a[1][2].b"},
		"NotAnIndex":  {reason: "Brackets without a number stay part of the name.", args: args{"[x]"}, want: "spec.traffic.[x]"},
		"Empty":       {reason: "No path leaves the base path.", args: args{""}, want: "spec.traffic"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AppendJSONPath(field.NewPath("spec", "traffic"), tc.args.jsonPath).String()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nappendJSONPath(%q): -want, +got:\n%s", tc.reason, tc.args.jsonPath, diff)
			}
		})
	}
}
