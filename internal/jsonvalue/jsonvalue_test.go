package jsonvalue

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
)

// encodingJSON is the reference: what json.Marshal returns, its error as
// text.
func encodingJSON(v any) (string, string) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

func ours(v any) (string, string) {
	b, err := Marshal(v)
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

func cyclic() map[string]any {
	m := map[string]any{"a": 1.0}
	m["self"] = m
	return m
}

// cyclicThroughSlice is a map that holds itself through a slice.
func cyclicThroughSlice() map[string]any {
	m := map[string]any{}
	m["x"] = []any{m}
	return m
}

// node is a pointer type that encoding/json walks by reflection.
type node struct {
	Next *node
}

// cyclicPointerBelowMap is a cycle of pointers below a decoded map.
func cyclicPointerBelowMap() map[string]any {
	n := &node{}
	n.Next = n
	return map[string]any{"a": []any{map[string]any{"n": n}}}
}

func deep(n int) any {
	var v any = "leaf"
	for i := range n {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

func TestMarshalAgreesWithEncodingJSON(t *testing.T) {
	cases := map[string]struct {
		value any
		want  string // What both write; "" for an error, "*" for any value.
	}{
		"Nil":                   {value: nil, want: `null`},
		"NilMap":                {value: map[string]any(nil), want: `null`},
		"NilSlice":              {value: []any(nil), want: `null`},
		"EmptyMap":              {value: map[string]any{}, want: `{}`},
		"EmptySlice":            {value: []any{}, want: `[]`},
		"Bools":                 {value: []any{true, false}, want: `[true,false]`},
		"SortedKeys":            {value: map[string]any{"b": 1.0, "a": 2.0, "B": 3.0, "": 4.0}, want: `{"":4,"B":3,"a":2,"b":1}`},
		"Integers":              {value: []any{0.0, math.Copysign(0, -1), 80.0, -3.0, 9007199254740993.0, 1e20}, want: `[0,-0,80,-3,9007199254740992,100000000000000000000]`},
		"Fractions":             {value: []any{0.5, 1e-6, 1.5e-7, 1e-9, 1e21, 1.2345e300, -2.5e-10}, want: `[0.5,0.000001,1.5e-7,1e-9,1e+21,1.2345e+300,-2.5e-10]`},
		"NaN":                   {value: math.NaN()},
		"Inf":                   {value: []any{math.Inf(-1)}},
		"Escapes":               {value: "a\"b\\c\n\t\r\b\f\x00\x1f<>&", want: `"a\"b\\c\n\t\r\b\f\u0000\u001f\u003c\u003e\u0026"`},
		"Unicode":               {value: "héllo ✓ \u2028\u2029", want: `"héllo ✓ \u2028\u2029"`},
		"InvalidUTF8":           {value: "a\xffb\xc3", want: `"a\ufffdb\ufffd"`},
		"EscapedKey":            {value: map[string]any{"<k>": "v"}, want: `{"\u003ck\u003e":"v"}`},
		"NotDecodedJSON":        {value: map[string]any{"i": 3, "n": json.Number("1.50"), "m": map[string]string{"x": "y"}}, want: `{"i":3,"m":{"x":"y"},"n":1.50}`},
		"Unsupported":           {value: map[string]any{"c": make(chan int)}},
		"Cycle":                 {value: cyclic()},
		"CycleThroughSlice":     {value: cyclicThroughSlice()},
		"CyclicPointerBelowMap": {value: cyclicPointerBelowMap()},
		"DeepButAcyclic":        {value: deep(2500), want: "*"},
		"NestedStructure":       {value: map[string]any{"spec": map[string]any{"rules": []any{map[string]any{"weight": 20.0, "name": nil}}}}, want: `{"spec":{"rules":[{"name":null,"weight":20}]}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ref, refErr := encodingJSON(tc.value)
			got, gotErr := ours(tc.value)
			if diff := cmp.Diff(ref+refErr, got+gotErr); diff != "" {
				t.Errorf("Marshal() differs from json.Marshal(): -json.Marshal +Marshal:\n%s", diff)
			}
			if tc.want == "" && gotErr == "" {
				t.Errorf("Marshal() = %s, want an error", got)
			}
			if tc.want != "" && tc.want != "*" && got != tc.want {
				t.Errorf("Marshal() = %s (error %q), want %s", got, gotErr, tc.want)
			}
		})
	}
}

func TestAppendKeepsThePrefix(t *testing.T) {
	b, err := Append([]byte("x="), map[string]any{"a": []any{1.0}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`x={"a":[1]}`, string(b)); diff != "" {
		t.Errorf("Append(): -want +got:\n%s", diff)
	}
}

// FuzzMarshal compares the encoder with encoding/json on any decoded JSON
// document (as encoding/json and as structpb decode it), with any string as
// a key and a value (invalid UTF-8 included, which no decoder makes) and any
// number.
func FuzzMarshal(f *testing.F) {
	f.Add([]byte(`{"spec":{"primary":{"service":{"selector":{"app":"podinfo"}}},"weight":20}}`), "key", "<value>", 1.5)
	f.Add([]byte(`[1e-7,1e21,-0,"\u2028",null,true]`), "\xff", "\x00", math.Inf(1))
	f.Fuzz(func(t *testing.T, doc []byte, key, value string, number float64) {
		var decoded any
		if json.Unmarshal(doc, &decoded) != nil {
			decoded = nil
		}
		values := []any{decoded, map[string]any{key: value, value: []any{number, decoded}}}
		if m, ok := decoded.(map[string]any); ok {
			if s, err := structpb.NewStruct(m); err == nil {
				values = append(values, s.AsMap())
			}
		}
		for _, v := range values {
			ref, refErr := encodingJSON(v)
			got, gotErr := ours(v)
			if ref != got || refErr != gotErr {
				t.Fatalf("Marshal() = %q (error %q), json.Marshal() = %q (error %q)", got, gotErr, ref, refErr)
			}
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	var spec any
	doc := `{"primary":{"service":{"selector":{"app":"podinfo"},"port":9898},"filters":[{"type":"RequestHeaderModifier","requestHeaderModifier":{"add":[{"name":"X-Route","value":"primary"}]}}]},
	"canary":{"backendRef":{"name":"canary-proxy","namespace":"monitoring","port":3456}},
	"parentRefs":[{"name":"gateway","namespace":"istio-ingress"}],"hostnames":["www.example.com"],
	"traffic":{"mode":"Manual","weight":20}}`
	if err := json.Unmarshal([]byte(doc), &spec); err != nil {
		b.Fatal(err)
	}
	for name, marshal := range map[string]func(any) ([]byte, error){"jsonvalue": Marshal, "encoding_json": json.Marshal} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := marshal(spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
