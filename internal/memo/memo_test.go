package memo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestOfTellsValuesApart(t *testing.T) {
	// Pairs of values that differ in one way each: none may share a key.
	values := map[string]any{
		"nil":              nil,
		"false":            false,
		"true":             true,
		"empty string":     "",
		"string 1":         "1",
		"float 1":          float64(1),
		"int 1":            int64(1),
		"float 0":          float64(0),
		"empty list":       []any{},
		"empty object":     map[string]any{},
		"list a b":         []any{"a", "b"},
		"list b a":         []any{"b", "a"},
		"list ab":          []any{"ab"},
		"list a, list b":   []any{[]any{"a"}, []any{"b"}},
		"list of nil":      []any{nil},
		"object a:b":       map[string]any{"a": "b"},
		"object b:a":       map[string]any{"b": "a"},
		"object a:b c:d":   map[string]any{"a": "b", "c": "d"},
		"object a:d c:b":   map[string]any{"a": "d", "c": "b"},
		"object a:{b:c}":   map[string]any{"a": map[string]any{"b": "c"}},
		"object a:[b, c]":  map[string]any{"a": []any{"b", "c"}},
		"object a:b twice": map[string]any{"a": "b", "x": map[string]any{"a": "b"}},
	}
	seen := map[Key]string{}
	for name, v := range values {
		key, _, ok := Of(v)
		if !ok {
			t.Errorf("Of(%s): not hashable", name)
			continue
		}
		if other, ok := seen[key]; ok {
			t.Errorf("Of(%s) == Of(%s)", name, other)
		}
		seen[key] = name
	}
}

func TestOfIsTheSameForEqualValues(t *testing.T) {
	build := func(order []string) map[string]any {
		m := map[string]any{}
		for _, k := range order {
			m[k] = []any{k, map[string]any{"n": float64(len(k))}}
		}
		return m
	}
	a, _, _ := Of(build([]string{"x", "yy", "zzz", "w"}))
	b, _, _ := Of(build([]string{"w", "zzz", "yy", "x"}))
	if a != b {
		t.Errorf("equal objects built in another order have other keys: %v, %v", a, b)
	}
}

func TestOfRefusesOtherTypes(t *testing.T) {
	for name, v := range map[string]any{
		"an int":           1,
		"a typed map":      map[string]string{"a": "b"},
		"nested in a list": []any{"a", struct{}{}},
		"nested in a map":  map[string]any{"a": []string{"b"}},
	} {
		if _, _, ok := Of(v); ok {
			t.Errorf("Of(%s): want not hashable", name)
		}
	}
}

func TestCacheBounds(t *testing.T) {
	key := func(s string) Key {
		k, _, _ := Of(s)
		return k
	}
	cases := map[string]struct {
		entries  int
		bytes    uint64
		add      []string // each of 10 bytes
		get      []string
		want     []bool
		wantLen  int
		wantSize uint64
	}{
		"WithinBounds":         {entries: 4, bytes: 1000, add: []string{"a", "b"}, get: []string{"a", "b", "c"}, want: []bool{true, true, false}, wantLen: 2, wantSize: 20},
		"OldestEvictedByCount": {entries: 2, bytes: 1000, add: []string{"a", "b", "c"}, get: []string{"a", "b", "c"}, want: []bool{false, true, true}, wantLen: 2, wantSize: 20},
		"OldestEvictedByBytes": {entries: 10, bytes: 80, add: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, get: []string{"a", "i"}, want: []bool{false, true}, wantLen: 8, wantSize: 80},
		"TooLargeNotKept":      {entries: 10, bytes: 79, add: []string{"a"}, get: []string{"a"}, want: []bool{false}, wantLen: 0, wantSize: 0},
		"UnboundedByBytes":     {entries: 2, bytes: Unbounded, add: []string{"a", "b", "c"}, get: []string{"a", "b", "c"}, want: []bool{false, true, true}, wantLen: 2, wantSize: 20},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New[Key, string](tc.entries, tc.bytes)
			for _, s := range tc.add {
				c.Add(key(s), s, 10)
			}
			got := make([]bool, 0, len(tc.get))
			for _, s := range tc.get {
				v, ok := c.Get(key(s))
				if ok && v != s {
					t.Errorf("Get(%s) = %s", s, v)
				}
				got = append(got, ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
			n, size := c.Len()
			if n != tc.wantLen || size != tc.wantSize {
				t.Errorf("Len() = %d, %d; want %d, %d", n, size, tc.wantLen, tc.wantSize)
			}
		})
	}
}

func TestCacheKeepsTheRecentlyUsed(t *testing.T) {
	c := New[Key, int](2, 1000)
	ka, _, _ := Of("a")
	kb, _, _ := Of("b")
	kc, _, _ := Of("c")
	c.Add(ka, 1, 1)
	c.Add(kb, 2, 1)
	c.Get(ka) // a is now the most recently used: b goes.
	c.Add(kc, 3, 1)
	if _, ok := c.Get(kb); ok {
		t.Error("b, the least recently used, was kept")
	}
	if _, ok := c.Get(ka); !ok {
		t.Error("a, used last, was evicted")
	}
}

func TestCacheKeepReturnsTheValueKept(t *testing.T) {
	ka, _, _ := Of("a")
	kb, _, _ := Of("b")
	cases := map[string]struct {
		reason string
		kept   map[Key]int
		value  int
		size   uint64
		want   int
	}{
		"New": {
			reason: "A value no one kept is kept and returned.",
			kept:   map[Key]int{kb: 2},
			value:  1, size: 1, want: 1,
		},
		"KeptFirst": {
			reason: "A value another caller kept first is returned, not the one offered.",
			kept:   map[Key]int{ka: 2},
			value:  1, size: 1, want: 2,
		},
		"TooLarge": {
			reason: "A value too large to keep (over an eighth of the cache) is returned as offered.",
			kept:   map[Key]int{ka: 2},
			value:  1, size: 126, want: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New[Key, int](2, 1000)
			for k, v := range tc.kept {
				c.Add(k, v, 1)
			}
			if diff := cmp.Diff(tc.want, c.Keep(ka, tc.value, tc.size)); diff != "" {
				t.Errorf("%s\nKeep(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func BenchmarkOf(b *testing.B) {
	spec := map[string]any{
		"parentRefs": []any{map[string]any{"name": "gateway", "namespace": "infra", "sectionName": "https"}},
		"hostnames":  []any{"podinfo.example.com"},
		"port":       float64(9898),
		"primary":    map[string]any{"service": map[string]any{"selector": map[string]any{"app": "podinfo"}}},
		"canary":     map[string]any{"revision": "v2", "backendRef": map[string]any{"name": "podinfo-canary", "namespace": "monitoring", "port": float64(9898)}},
		"traffic":    map[string]any{"steps": []any{map[string]any{"weight": float64(10), "pause": "1m"}, map[string]any{"weight": float64(50)}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		Of(spec)
	}
}

func TestOfProtoIsOfItsValue(t *testing.T) {
	// A value in its protobuf form has the key of the value it decodes to.
	values := map[string]any{
		"null":   nil,
		"bool":   true,
		"string": "x",
		"number": float64(7),
		"list":   []any{"a", float64(1), nil, []any{}},
		"object": map[string]any{"a": map[string]any{"b": []any{true}}, "c": "d"},
	}
	for name, v := range values {
		pv, err := structpb.NewValue(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := Of(pv.AsInterface())
		if got := OfProto(pv); got != want {
			t.Errorf("OfProto(%s) = %v, want Of of its value, %v", name, got, want)
		}
	}
	obj, err := structpb.NewStruct(map[string]any{"a": "b", "sequence": float64(3)})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := Of(map[string]any{"a": "b"})
	if got := OfProtoObject(obj.GetFields(), "sequence"); got != want {
		t.Errorf("OfProtoObject(..., omit) = %v, want the key of the object without the member, %v", got, want)
	}
}

func TestCachePut(t *testing.T) {
	always := func(int) bool { return true }
	never := func(int) bool { return false }
	cases := map[string]struct {
		reason  string
		put     func(c *Cache[string, int])
		want    int
		wantOK  bool
		entries int
	}{
		"Replaces": {
			reason:  "Put replaces the value kept when replace says so.",
			put:     func(c *Cache[string, int]) { c.Put("k", 1, 10, always); c.Put("k", 2, 10, always) },
			want:    2,
			wantOK:  true,
			entries: 1,
		},
		"Keeps": {
			reason:  "Put keeps the value kept when replace says no.",
			put:     func(c *Cache[string, int]) { c.Put("k", 1, 10, always); c.Put("k", 2, 10, never) },
			want:    1,
			wantOK:  true,
			entries: 1,
		},
		"TooLargeRemoves": {
			reason:  "A value too large to keep takes the old one away.",
			put:     func(c *Cache[string, int]) { c.Put("k", 1, 10, always); c.Put("k", 2, 1<<20, always) },
			entries: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New[string, int](4, 1024)
			tc.put(c)
			got, ok := c.Get("k")
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("%s\nGet() = %d, %t; want %d, %t", tc.reason, got, ok, tc.want, tc.wantOK)
			}
			if n, _ := c.Len(); n != tc.entries {
				t.Errorf("%s\nLen() = %d entries, want %d", tc.reason, n, tc.entries)
			}
		})
	}
}
