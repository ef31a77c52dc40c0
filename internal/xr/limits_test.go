package xr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/bounds"
)

// TestSpecLimitsAreTheXRDs checks that the function bounds the spec with
// exactly the limits the XRDs state: every maxItems, maxProperties and
// maxLength of the XRDs' spec, read from the files, and nothing else. A
// limit the XRD admits and the function refuses would make a valid-looking
// CanaryRoute a Fatal, and the reverse would let the API server store what
// no run can compose.
func TestSpecLimitsAreTheXRDs(t *testing.T) {
	stated := map[string]int{}
	for _, file := range []string{"canaryroute-namespaced.yaml", "canaryroute-cluster.yaml"} {
		root := xrdSchema(t, file)
		node, ok := schemaAt(root, "spec")
		if !ok {
			t.Fatalf("%s: no schema for spec", file)
		}
		walkSchema(node, "spec", func(pattern string, node map[string]any) {
			l, which := xrdLimit(node)
			if which == "" {
				if node["additionalProperties"] == nil {
					return
				}
				l = bounds.DefaultItems // A map of data: package bounds walks its keys as data.
			}
			if prev, seen := stated[pattern]; seen && prev != l {
				t.Errorf("the XRDs disagree on %s: %d and %d", pattern, prev, l)
			}
			stated[pattern] = l
		})
	}
	if diff := cmp.Diff(stated, map[string]int(specLimits)); diff != "" {
		t.Errorf("the function's spec limits are not the XRDs' (-XRDs, +function):\n%s", diff)
	}
}

// TestVerdictsFitSteps checks that status.rollout.analysis holds a verdict
// of every analysis of every step.
func TestVerdictsFitSteps(t *testing.T) {
	if MaxVerdicts < maxSteps*maxStepAnalysis {
		t.Errorf("status.rollout.analysis holds %d verdicts, fewer than %d steps of %d analyses", MaxVerdicts, maxSteps, maxStepAnalysis)
	}
}

func TestStatedSizes(t *testing.T) {
	cases := map[string]struct {
		reason string
		schema string
		want   map[string]size
		panics bool
	}{
		"ListsStringsMaps": {
			reason: "maxItems, maxLength and maxProperties are read at their bounds patterns, below lists and maps too.",
			schema: `{"properties": {"spec": {"properties": {
				"rules": {"maxItems": 16, "items": {"properties": {"name": {"maxLength": 253}}}},
				"selector": {"maxProperties": 8, "additionalProperties": {"maxLength": 63}}}},
				"status": {"properties": {"message": {"maxLength": 1024}}}}}`,
			want: map[string]size{
				"spec.rules": {limit: 16}, "spec.rules[*].name": {limit: 253, isString: true},
				"spec.selector": {limit: 8}, "spec.selector[*]": {limit: 63, isString: true},
				"status.message": {limit: 1024, isString: true},
			},
		},
		"MapWithoutLimit": {
			reason: "A map without maxProperties is named with the default, so that package bounds walks its keys as data.",
			schema: `{"properties": {"spec": {"properties": {"labels": {"additionalProperties": {"type": "string"}}}}, "status": {}}}`,
			want:   map[string]size{"spec.labels": {limit: bounds.DefaultItems}},
		},
		"Unbounded": {
			reason: "What states no size is not named: package bounds applies its defaults.",
			schema: `{"properties": {"spec": {"properties": {"kind": {"type": "string"}, "rules": {"items": {"type": "object"}}}}, "status": {}}}`,
			want:   map[string]size{},
		},
		"FieldsOfAnObject": {
			reason: "Package bounds counts the keys of maps: an object of named fields with maxProperties cannot be checked, and is refused.",
			schema: `{"properties": {"spec": {"maxProperties": 2, "properties": {"a": {}}}, "status": {}}}`,
			panics: true,
		},
		"NoStatus": {
			reason: "A schema without status is not the generated one.",
			schema: `{"properties": {"spec": {}}}`,
			panics: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); (r != nil) != tc.panics {
					t.Errorf("%s\nstatedSizes: panic %v, want a panic: %t", tc.reason, r, tc.panics)
				}
			}()
			got := statedSizes([]byte(tc.schema))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(size{})); diff != "" {
				t.Errorf("%s\nstatedSizes: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestStatusLimitsAdmitTheXRDs: the function reads its own status back on
// every run, so it must admit every status the XRDs admit: a list, map or
// string of status.rollout or status.route that the API server accepts but
// the parser refuses would make every later run a Fatal, which never
// updates status, so the XR could never recover.
func TestStatusLimitsAdmitTheXRDs(t *testing.T) {
	for _, file := range []string{"canaryroute-namespaced.yaml", "canaryroute-cluster.yaml"} {
		root := xrdSchema(t, file)
		for _, k := range []string{"rollout", "route", "routes"} {
			node, ok := schemaAt(root, "status."+k)
			if !ok {
				t.Fatalf("%s: no schema for status.%s", file, k)
			}
			walkSchema(node, "status."+k, func(pattern string, node map[string]any) {
				typ, _ := node["type"].(string)
				var def int
				switch typ {
				case "array":
					def = bounds.DefaultItems
				case "string":
					def = bounds.DefaultString
				case "object":
					if node["additionalProperties"] == nil {
						return // Fields of their own: no items to count.
					}
					def = bounds.DefaultItems
				default:
					return
				}
				function := def
				if l, ok := statusLimits[pattern]; ok {
					function = l
				}
				if _, ok := node["enum"]; ok || node["format"] == "date-time" {
					return // Bounded by its values.
				}
				xrd, which := xrdLimit(node)
				if which == "" {
					t.Errorf("%s: %s (%s) is unbounded in the XRD; the function reads at most %d", file, pattern, typ, function)
					return
				}
				if xrd > function {
					t.Errorf("%s: %s has %s %d in the XRD; the function reads at most %d, so a status the API server accepts would make every run a Fatal", file, pattern, which, xrd, function)
				}
			})
		}
	}
}

// xrdSchema is the OpenAPI schema of an XRD of example/definitions.
func xrdSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "example", "definitions", file))
	if err != nil {
		t.Fatal(err)
	}
	var xrd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &xrd); err != nil {
		t.Fatal(err)
	}
	return xrd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// walkSchema calls fn for a schema and every schema below it, with its
// bounds pattern (status.rollout.analysis[*].name).
func walkSchema(node map[string]any, pattern string, fn func(pattern string, node map[string]any)) {
	fn(pattern, node)
	if props, ok := node["properties"].(map[string]any); ok {
		for name, p := range props {
			if child, ok := p.(map[string]any); ok {
				walkSchema(child, pattern+"."+name, fn)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if child, ok := node[k].(map[string]any); ok {
			walkSchema(child, pattern+"[*]", fn)
		}
	}
}

// schemaAt finds the schema of a bounds pattern (spec.rules[*].filters).
func schemaAt(node map[string]any, pattern string) (map[string]any, bool) {
	for _, part := range strings.Split(strings.ReplaceAll(pattern, "[*]", ".[*]"), ".") {
		var next any
		if part == "[*]" {
			next = node["items"]
			if next == nil {
				next = node["additionalProperties"]
			}
		} else {
			props, _ := node["properties"].(map[string]any)
			next = props[part]
		}
		n, ok := next.(map[string]any)
		if !ok {
			return nil, false
		}
		node = n
	}
	return node, true
}

// xrdLimit is the size limit a schema states, and which keyword states it.
func xrdLimit(node map[string]any) (int, string) {
	for _, k := range []string{"maxLength", "maxItems", "maxProperties"} {
		if v, ok := node[k].(float64); ok {
			return int(v), k
		}
	}
	return 0, ""
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 200)
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Valid":        {reason: "A valid label value is kept.", in: "v2", want: "v2"},
		"Empty":        {reason: "An empty value is a valid label value.", in: "", want: ""},
		"TrailingDot":  {reason: "The revision pattern admits a trailing dot, which a label value cannot end with.", in: "v2.", want: "v2-1f8abfc0"},
		"LeadingUnder": {reason: "Nor may it start with an underscore.", in: "_v2", want: "v2-e5335831"},
		"Long":         {reason: "A route name may have 253 characters, a label value 63.", in: long, want: strings.Repeat("a", 54) + "-c2a908d9"},
		"Space":        {reason: "A status written by hand may hold a space: it becomes '-'.", in: "a b", want: "a-b-c8687a08"},
		"Slash":        {reason: "Or a slash.", in: "team/a", want: "team-a-65f838a2"},
		"NotASCII":     {reason: "Or letters outside ASCII, which are never cut inside a character.", in: strings.Repeat("a", 53) + "ü", want: strings.Repeat("a", 53) + "-e3f3b00c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := LabelValue(tc.in)
			if msgs := validation.IsValidLabelValue(got); len(msgs) > 0 {
				t.Errorf("%s\nLabelValue(%q) = %q: not a valid label value: %v", tc.reason, tc.in, got, msgs)
			}
			if got != tc.want {
				t.Errorf("%s\nLabelValue(%q) = %q, want %q", tc.reason, tc.in, got, tc.want)
			}
		})
	}
	if LabelValue("v2.") == LabelValue("v2_") {
		t.Error("two values must get two labels")
	}
}
