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

// TestObject pins how an observed object decodes into its type: as the API
// machinery's converter would, but never wrapping a value that does not fit
// its typed field.
func TestObject(t *testing.T) {
	// ref embeds its fields as Gateway API's HTTPBackendRef embeds
	// BackendRef: JSON knows no such level.
	type ref struct {
		Name   string `json:"name"`
		Weight *int32 `json:"weight,omitempty"`
	}
	type rule struct {
		BackendRefs []struct {
			ref `json:",inline"`
		} `json:"backendRefs"`
	}
	type route struct {
		Spec struct {
			Rules []rule `json:"rules"`
		} `json:"spec"`
	}
	refs := func(refs ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"rules": []any{map[string]any{"backendRefs": refs}}}}
	}
	cases := map[string]struct {
		reason string
		obj    map[string]any
		want   string // the error; "" for none
	}{
		"Fits": {
			reason: "Numbers as Crossplane hands them (float64) that fit their fields decode; an unknown field is ignored, as by the converter.",
			obj:    refs(map[string]any{"name": "a", "weight": float64(2147483647), "newField": float64(1)}),
		},
		"BeyondInt32": {
			reason: "A number beyond the field's range is refused, naming the field as JSON does, with its indexes (no embedded struct).",
			obj:    refs(map[string]any{"name": "a", "weight": float64(80)}, map[string]any{"name": "b", "weight": float64(4294967376)}),
			want:   "spec.rules[0].backendRefs[1].weight: 4294967376 does not fit its type, int32",
		},
		"Fraction": {
			reason: "A fraction does not fit an integer field.",
			obj:    refs(map[string]any{"name": "a", "weight": 80.5}),
			want:   "spec.rules[0].backendRefs[0].weight: 80.5 does not fit its type, int32",
		},
		"WrongType": {
			reason: "A value of another JSON kind says which kind the field needs.",
			obj:    refs(map[string]any{"name": "a", "weight": "heavy"}),
			want:   "spec.rules[0].backendRefs[0].weight: must be an integer, not string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var into route
			got := ""
			if err := Object(tc.obj, &into); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nObject(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
