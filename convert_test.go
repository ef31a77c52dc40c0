package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/proxy"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestStructOfMatchesTheAPIMachinery pins that the function's own
// conversion of typed objects to Structs gives what the API machinery's
// converter and structpb gave before it (what the SDK's helpers do), for
// everything the examples compose: every route kind, active or not, proxy
// Services, grants, and the status.
func TestStructOfMatchesTheAPIMachinery(t *testing.T) {
	files, err := filepath.Glob("example/*/xr.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	pol, err := policy.Parse(map[string]any{"allowedBackendNamespaces": []any{"*"}, "allowExternalNames": true})
	if err != nil {
		t.Fatal(err)
	}
	var objects []any
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		cr, err := xr.Parse(obj, []gwv1.ParentReference{{Name: "gateway"}})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		primary, _ := backend.Resolve(cr, xr.RolePrimary)
		canary, _ := backend.Resolve(cr, xr.RoleCanary)
		p := routeParams(cr, pol, primary, canary)
		for _, w := range []int32{0, 30, 100} {
			p.CanaryWeight, p.Active = w, w < 100
			built, errs := route.Build(p)
			if len(errs) > 0 {
				t.Fatalf("%s: %v", file, errs)
			}
			objects = append(objects, built)
		}
		for _, role := range []xr.Role{xr.RolePrimary, xr.RoleCanary} {
			if svc := proxy.Service(cr, role); svc != nil {
				objects = append(objects, svc)
			}
		}
		g := grant.Plan(grant.Request{
			RouteKind: cr.Spec.Kind, RouteNamespace: cr.RouteNamespace, RouteName: cr.RouteName, Scope: xr.ScopeCluster,
			Mode: xr.GrantsCompose, Version: pol.GrantVersion, Backends: []backend.Backend{primary, canary},
		}, pol)
		for _, gr := range g.Grants {
			objects = append(objects, gr)
		}
	}
	objects = append(objects,
		&xr.RolloutStatus{
			Phase: xr.PhaseProgressing, Step: ptr.To[int32](2), StepStartedAt: &metav1.Time{Time: testNow}, CanaryWeight: 50, PrimaryWeight: 50,
			Message: `holding <step> "2" & more: é ✓ \ / ` + "\t\n\u2028", CanaryBackends: []xr.BackendID{{Kind: "Service", Name: "a", Port: ptr.To[int32](80)}},
		},
		&xr.RolloutStatus{},
		&xr.RouteStatus{Kind: xr.KindHTTPRoute, Name: "podinfo", Parents: []xr.ParentStatus{{Name: "g", Accepted: true}}},
	)

	for i, obj := range objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := structOf(obj)
		if err != nil {
			t.Fatalf("structOf(%T): %v", obj, err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("object %d (%T): structOf differs from the API machinery's conversion: -want, +got:\n%s", i, obj, diff)
		}
	}
}

// TestJSONParser pins the parser on what encoding/json writes, and on what
// it never writes but the parser must still refuse or read right.
func TestJSONParser(t *testing.T) {
	cases := map[string]struct {
		reason string
		json   string
		want   any // as structpb.NewValue takes it; nil with wantErr
		err    bool
	}{
		"Scalars":       {reason: "Numbers, booleans, null.", json: `[1,-2.5,1e+21,0,true,false,null]`, want: []any{1.0, -2.5, 1e21, 0.0, true, false, nil}},
		"Escapes":       {reason: "encoding/json's escapes: quotes, backslashes, control characters, HTML and line separators.", json: `"a\"b\\c\n\t\u003c\u003e\u0026\u2028\u0001"`, want: "a\"b\\c\n\t<>&\u2028\u0001"},
		"Unicode":       {reason: "Characters beyond ASCII come as they are.", json: `"é✓😀"`, want: "é✓😀"},
		"SurrogatePair": {reason: "A surrogate pair, which encoding/json never writes, still reads right.", json: `"\ud83d\ude00"`, want: "😀"},
		"Empty":         {reason: "Empty objects and lists.", json: `{"a":{},"b":[]}`, want: map[string]any{"a": map[string]any{}, "b": []any{}}},
		"Nested":        {reason: "Objects in lists in objects.", json: `{"a":[{"b":[1,{"c":"d"}]}]}`, want: map[string]any{"a": []any{map[string]any{"b": []any{1.0, map[string]any{"c": "d"}}}}}},
		"LargeInt":      {reason: "A large integer reads as the float64 it is.", json: `9007199254740993`, want: float64(9007199254740993)},
		"Unterminated":  {reason: "A string without its end is an error.", json: `"abc`, err: true},
		"BadNumber":     {reason: "A number that is none is an error.", json: `-`, err: true},
		"MissingColon":  {reason: "An object without a colon is an error.", json: `{"a" 1}`, err: true},
		"Trailing":      {reason: "Data after the value is an error.", json: `1 2`, err: true},
		"BadLiteral":    {reason: "A word that is no literal is an error.", json: `nope`, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := newJSONParser([]byte(tc.json))
			got, err := p.value()
			if err == nil && p.i != len(p.b) {
				err = errors.New(errTrailingData)
			}
			if tc.err {
				if err == nil {
					t.Errorf("%s\nparse(%s): want an error, got %v", tc.reason, tc.json, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nparse(%s): %v", tc.reason, tc.json, err)
			}
			want, err := structpb.NewValue(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nparse(%s): -want, +got:\n%s", tc.reason, tc.json, diff)
			}
		})
	}
}
