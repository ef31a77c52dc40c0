package percent

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		reason string
		text   string
		want   Percent
		ok     bool
	}{
		"Whole":              {reason: "A whole percent is 100 hundredths a percent.", text: "10", want: Hundredths(1000), ok: true},
		"WholeWithDecimal":   {reason: "10.0 is 10: a trailing zero is no decimal.", text: "10.0", want: Hundredths(1000), ok: true},
		"Tenth":              {reason: "0.1 is 10 hundredths, exactly.", text: "0.1", want: Hundredths(10), ok: true},
		"TenthTwoDigits":     {reason: "0.10 is 0.1.", text: "0.10", want: Hundredths(10), ok: true},
		"Hundredth":          {reason: "Two decimals are the finest weight.", text: "0.01", want: Hundredths(1), ok: true},
		"TwoDecimals":        {reason: "33.33 has two decimals.", text: "33.33", want: Hundredths(3333), ok: true},
		"Zero":               {reason: "0 is a percent.", text: "0", want: Hundredths(0), ok: true},
		"ZeroWithDecimals":   {reason: "0.000 is 0, however many zeros.", text: "0.000", want: Hundredths(0), ok: true},
		"NegativeZero":       {reason: "-0 is 0, not a negative percent.", text: "-0", want: Hundredths(0), ok: true},
		"Hundred":            {reason: "100 is the most.", text: "100", want: Hundredths(10000), ok: true},
		"HundredWithZeros":   {reason: "100.00 is 100.", text: "100.00", want: Hundredths(10000), ok: true},
		"Exponent":           {reason: "1e1 is exactly 10.", text: "1e1", want: Hundredths(1000), ok: true},
		"ExponentFraction":   {reason: "2.5E-1 is exactly 0.25.", text: "2.5E-1", want: Hundredths(25), ok: true},
		"ExponentHuge":       {reason: "0e999999999 is 0, without work that grows with the exponent.", text: "0e999999999", want: Hundredths(0), ok: true},
		"ThreeDecimals":      {reason: "0.005 has three decimals.", text: "0.005"},
		"ThirdOfHundred":     {reason: "33.333 has three decimals.", text: "33.333"},
		"TinyExponent":       {reason: "1e-7 (as Go writes a float64 of 0.0000001) has seven decimals.", text: "1e-07"},
		"Negative":           {reason: "A weight is never negative.", text: "-1"},
		"NegativeFraction":   {reason: "Nor a negative hundredth.", text: "-0.01"},
		"AboveHundred":       {reason: "100.01 is above 100.", text: "100.01"},
		"FarAbove":           {reason: "A huge number is above 100, without overflow.", text: "123456789012345678901234567890"},
		"HugeExponent":       {reason: "1e999999999 is above 100, without work that grows with the exponent.", text: "1e999999999"},
		"NaN":                {reason: "NaN is no JSON number.", text: "NaN"},
		"Infinity":           {reason: "Nor is Infinity.", text: "Infinity"},
		"Empty":              {reason: "Nothing is no number.", text: ""},
		"LeadingZero":        {reason: "JSON writes no leading zero.", text: "010"},
		"Point":              {reason: "A point needs digits after it.", text: "1."},
		"PointFirst":         {reason: "And before it.", text: ".5"},
		"Plus":               {reason: "JSON writes no plus sign.", text: "+1"},
		"String":             {reason: "A quoted number is a string.", text: `"10"`},
		"Spaces":             {reason: "The text is the number alone.", text: " 10"},
		"ExponentWithoutDig": {reason: "An exponent needs digits.", text: "1e"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.text)
			if diff := cmp.Diff(tc.ok, err == nil); diff != "" {
				t.Fatalf("%s\nParse(%q): error %v, -want ok +got ok:\n%s", tc.reason, tc.text, err, diff)
			}
			if err != nil {
				if diff := cmp.Diff(Invalid, err.Error()); diff != "" {
					t.Errorf("%s\nParse(%q): -want error +got:\n%s", tc.reason, tc.text, diff)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParse(%q): -want +got:\n%s", tc.reason, tc.text, diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      Percent
		want   string
	}{
		"Zero":      {reason: "0 is 0.", p: Hundredths(0), want: "0"},
		"Whole":     {reason: "A whole percent has no decimals.", p: Int(10), want: "10"},
		"Hundred":   {reason: "100 is 100.", p: Max, want: "100"},
		"Tenth":     {reason: "0.1 without a trailing zero.", p: Hundredths(10), want: "0.1"},
		"Half":      {reason: "0.5 without a trailing zero.", p: Hundredths(50), want: "0.5"},
		"Hundredth": {reason: "0.01 keeps its zero.", p: Hundredths(1), want: "0.01"},
		"Two":       {reason: "33.33 keeps both decimals.", p: Hundredths(3333), want: "33.33"},
		"Primary":   {reason: "99.9 is what 0.1 leaves.", p: Hundredths(10).Rest(), want: "99.9"},
		"Negative":  {reason: "A negative value (a forged one, never parsed) is still written readably.", p: Hundredths(-150), want: "-1.5"},
		"Written":   {reason: "A number that is no percent is written as it was.", p: Percent{written: "0.005"}, want: "0.005"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.p.String()); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	cases := map[string]struct {
		reason string
		got    any
		want   any
	}{
		"TotalWhole":       {reason: "Whole weights keep the route out of 100.", got: Total(Zero, Int(10), Int(100)), want: WholeTotal},
		"TotalFine":        {reason: "One weight with decimals makes it out of 10,000.", got: Total(Int(1), Hundredths(10), Int(100)), want: FineTotal},
		"TotalNone":        {reason: "No weight at all is whole.", got: Total(), want: WholeTotal},
		"OfWhole":          {reason: "10% of 100.", got: Int(10).Of(WholeTotal), want: int32(10)},
		"OfFine":           {reason: "0.1% of 10,000 is 10.", got: Hundredths(10).Of(FineTotal), want: int32(10)},
		"OfFinePrimary":    {reason: "The primary at 99.9% of 10,000 is 9,990.", got: Hundredths(10).Rest().Of(FineTotal), want: int32(9990)},
		"CeilWhole":        {reason: "10% of 3 replicas is 1 (0.3 rounded up), as before.", got: Int(10).CeilReplicas(3), want: int32(1)},
		"CeilFine":         {reason: "0.1% of 1,000 replicas is 1.", got: Hundredths(10).CeilReplicas(1000), want: int32(1)},
		"CeilFineUp":       {reason: "0.01% of 1 replica is 1: any traffic needs a replica.", got: Hundredths(1).CeilReplicas(1), want: int32(1)},
		"CeilZero":         {reason: "0% needs none.", got: Zero.CeilReplicas(1000), want: int32(0)},
		"CeilExact":        {reason: "50.5% of 200 is 101.", got: Hundredths(5050).CeilReplicas(200), want: int32(101)},
		"CeilAll":          {reason: "100% of 1,000 is 1,000.", got: Max.CeilReplicas(1000), want: int32(1000)},
		"WholeTrue":        {reason: "10 is whole.", got: Int(10).Whole(), want: true},
		"WholeFalse":       {reason: "0.1 is not.", got: Hundredths(10).Whole(), want: false},
		"ValidMax":         {reason: "100 is a percent.", got: Max.Valid(), want: true},
		"ValidAbove":       {reason: "100.01 is not.", got: Hundredths(10001).Valid(), want: false},
		"FloatForMetrics":  {reason: "0.1 shows as 0.1.", got: Hundredths(10).Float(), want: 0.1},
		"FloatWholeMetric": {reason: "50 shows as 50.", got: Int(50).Float(), want: 50.0},
		"NearestExact":     {reason: "A recorded 0.1 is 0.1.", got: Hundredths(10).Nearest(), want: Hundredths(10)},
		"NearestDecimals":  {reason: "A recorded 0.006 is nearest 0.01.", got: Percent{written: "0.006"}.Nearest(), want: Hundredths(1)},
		"NearestHuge":      {reason: "A recorded 1e8 is clamped to 100.", got: Percent{written: "1e8"}.Nearest(), want: Max},
		"NearestOverflow":  {reason: "A recorded 1e400 (beyond a float) is 100.", got: Percent{written: "1e400"}.Nearest(), want: Max},
		"NearestNegative":  {reason: "A recorded -0.001 is 0.", got: Percent{written: "-0.001"}.Nearest(), want: Zero},
		"NearestAbove":     {reason: "A recorded 101 (hundredths out of range) is clamped to 100.", got: Hundredths(10100).Nearest(), want: Max},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

type weights struct {
	Weight  *Percent  `json:"weight,omitempty"`
	Steps   []Percent `json:"steps,omitempty"`
	Primary Percent   `json:"primary"`
}

func TestJSON(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   weights
		out    string
		err    string
	}{
		"Fine": {
			reason: "Fine weights read and write as written.",
			in:     `{"weight":0.1,"steps":[0.10,1,25.5,100.0],"primary":99.9}`,
			want:   weights{Weight: ptr(Hundredths(10)), Steps: []Percent{Hundredths(10), Int(1), Hundredths(2550), Max}, Primary: Hundredths(9990)},
			out:    `{"weight":0.1,"steps":[0.1,1,25.5,100],"primary":99.9}`,
		},
		"Whole": {
			reason: "Whole weights write as integers, as they always did.",
			in:     `{"weight":10,"primary":90}`,
			want:   weights{Weight: ptr(Int(10)), Primary: Int(90)},
			out:    `{"weight":10,"primary":90}`,
		},
		"Null": {
			reason: "null is no weight.",
			in:     `{"weight":null,"primary":0}`,
			want:   weights{},
			out:    `{"primary":0}`,
		},
		"ThreeDecimals": {
			reason: "A number that is no percent is kept as written, not Valid, for the validation to name its field; it writes back as written.",
			in:     `{"steps":[1,0.005,101,-1]}`,
			want:   weights{Steps: []Percent{Int(1), {written: "0.005"}, Int(101), Int(-1)}},
			out:    `{"steps":[1,0.005,101,-1],"primary":0}`,
		},
		"String": {
			reason: "A string is not a weight.",
			in:     `{"primary":"10"}`,
			err:    "json: cannot unmarshal string into Go struct field weights.primary of type percent.Percent",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got weights
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("%s\nUnmarshal: no error, want %q", tc.reason, tc.err)
				}
				if diff := cmp.Diff(tc.err, err.Error()); diff != "" {
					t.Errorf("%s\nUnmarshal: -want error +got:\n%s", tc.reason, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nUnmarshal: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nUnmarshal: -want +got:\n%s", tc.reason, diff)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.out, string(b)); diff != "" {
				t.Errorf("%s\nMarshal: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestUnstructured pins the conversion every object of the function goes
// through: runtime.DefaultUnstructuredConverter honours the JSON methods (as
// it does resource.Quantity's), both ways, from the int64 and float64 an
// unstructured object holds.
// TestToUnstructuredAsJSON: ToUnstructured gives what the converter wrote
// through the JSON form before (decoded as structured-merge-diff does:
// numbers as int64 when whole, else float64).
func TestToUnstructuredAsJSON(t *testing.T) {
	for _, p := range []Percent{Zero, Int(10), Max, Hundredths(10), Hundredths(9990), Hundredths(3333), Hundredths(10100), Hundredths(-5), {written: "0.005"}, {written: "1e8"}} {
		b, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var n json.Number
		if err := d.Decode(&n); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var want any
		if i, err := n.Int64(); err == nil {
			want = i
		} else if want, err = n.Float64(); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if diff := cmp.Diff(want, p.ToUnstructured()); diff != "" {
			t.Errorf("ToUnstructured() of %s: -as JSON decodes it, +got:\n%s", b, diff)
		}
	}
}

func TestUnstructured(t *testing.T) {
	from := map[string]struct {
		reason string
		obj    map[string]any
		want   weights
	}{
		"Int64": {
			reason: "An int64 (a whole number the API server sent) is a whole percent.",
			obj:    map[string]any{"weight": int64(10), "steps": []any{int64(1), int64(100)}, "primary": int64(90)},
			want:   weights{Weight: ptr(Int(10)), Steps: []Percent{Int(1), Max}, Primary: Int(90)},
		},
		"Float64": {
			reason: "A float64 (a structpb number, a decimal the API server sent) reads as its shortest text, exactly.",
			obj:    map[string]any{"weight": 0.1, "steps": []any{0.5, 99.99}, "primary": 99.9},
			want:   weights{Weight: ptr(Hundredths(10)), Steps: []Percent{Hundredths(50), Hundredths(9999)}, Primary: Hundredths(9990)},
		},
		"Float64Whole": {
			reason: "A whole float64 (structpb's 10) is 10.",
			obj:    map[string]any{"primary": float64(10)},
			want:   weights{Primary: Int(10)},
		},
	}
	for name, tc := range from {
		t.Run("From"+name, func(t *testing.T) {
			var got weights
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tc.obj, &got); err != nil {
				t.Fatalf("%s\nFromUnstructured: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nFromUnstructured: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("FromInvalid", func(t *testing.T) {
		var got weights
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"primary": 0.005}, &got); err != nil || got.Primary.Valid() || got.Primary.String() != "0.005" {
			t.Errorf("FromUnstructured of 0.005: %v, got %v, want it kept as written, not Valid", err, got)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"primary": "10"}, &got); err == nil {
			t.Errorf("FromUnstructured of a string: no error, got %v", got)
		}
	})

	to := map[string]struct {
		reason string
		in     weights
		want   map[string]any
	}{
		"Whole": {
			reason: "A whole percent is an int64, as an int32 field was: whole output is unchanged.",
			in:     weights{Weight: ptr(Int(10)), Steps: []Percent{Zero, Max}, Primary: Int(90)},
			want:   map[string]any{"weight": int64(10), "steps": []any{int64(0), int64(100)}, "primary": int64(90)},
		},
		"Fine": {
			reason: "A fine percent is a float64 of its text.",
			in:     weights{Weight: ptr(Hundredths(10)), Primary: Hundredths(9990)},
			want:   map[string]any{"weight": 0.1, "primary": 99.9},
		},
	}
	for name, tc := range to {
		t.Run("To"+name, func(t *testing.T) {
			got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tc.in)
			if err != nil {
				t.Fatalf("%s\nToUnstructured: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nToUnstructured: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzParse: whatever parses is a percent, writes as text that parses back
// to it, and agrees with the float the text means to two decimals.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "0.1", "10", "10.0", "0.10", "33.33", "100", "1e1", "2.5E-1", "0.005", "-1", "100.01", "1e-07", "-0", "NaN", "0e99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if !p.Valid() {
			t.Fatalf("Parse(%q) = %v, not a percent", s, p)
		}
		back, err := Parse(p.String())
		if err != nil || !back.Equal(p) {
			t.Fatalf("Parse(%q) = %v, written %q, read back %v (%v)", s, p, p.String(), back, err)
		}
		var f64 float64
		if err := json.Unmarshal([]byte(s), &f64); err != nil {
			t.Fatalf("Parse(%q) accepted what JSON does not: %v", s, err)
		}
		if d := f64*Scale - float64(p.Hundredths()); d > 1e-6 || d < -1e-6 {
			t.Fatalf("Parse(%q) = %v, the number is %v", s, p, f64)
		}
	})
}

func ptr[T any](v T) *T { return &v }
