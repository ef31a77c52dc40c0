package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// grpcLimit is the function's default largest request (--max-recv-message-size).
const grpcLimit = 4 << 20

// hostileSpecs are the worst specs a request under the gRPC limit can carry:
// each makes one part of the function work as hard as the bytes allow. API.md
// says a run answers within 100 ms for anything the XRD does not admit;
// BenchmarkHostileInputs measures it, TestHostileInputs checks that each is
// a short Fatal.
func hostileSpecs() map[string]map[string]any {
	base := func() map[string]any {
		return map[string]any{
			"parentRefs": []any{map[string]any{"name": "gateway"}},
			"port":       float64(80),
			"primary":    map[string]any{"backendRef": map[string]any{"name": "podinfo"}},
			"canary":     map[string]any{"backendRef": map[string]any{"name": "podinfo-canary"}},
		}
	}
	many := func(n int, item func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = item(i)
		}
		return out
	}
	specs := map[string]map[string]any{}

	s := base()
	selector := map[string]any{}
	for i := range 120_000 {
		selector[fmt.Sprintf("Bad Key %d", i)] = "Bad Value"
	}
	s["primary"] = map[string]any{"service": map[string]any{"selector": selector}}
	specs["SelectorLabels"] = s

	s = base()
	s["hostnames"] = many(150_000, func(i int) any { return fmt.Sprintf("Bad_Host_%d", i) })
	specs["Hostnames"] = s

	s = base()
	s["parentRefs"] = many(100_000, func(i int) any { return map[string]any{"name": fmt.Sprintf("Bad Gateway %d", i)} })
	specs["ParentRefs"] = s

	s = base()
	s["rules"] = many(30_000, func(int) any {
		return map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "Bogus", "value": "no slash"}}}}
	})
	specs["Rules"] = s

	s = base()
	s["rules"] = []any{map[string]any{"matches": many(40_000, func(int) any {
		return map[string]any{"headers": []any{map[string]any{"name": "Bad Header", "value": "v"}}}
	})}}
	specs["Matches"] = s

	s = base()
	s["canary"] = map[string]any{"backendRef": map[string]any{"name": "c"}, "filters": many(30_000, func(int) any {
		return map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "Bad Name", "value": "v"}}}}
	})}
	specs["Filters"] = s

	s = base()
	s["traffic"] = map[string]any{"steps": many(80_000, func(int) any { return map[string]any{"weight": float64(101), "pause": "never"} })}
	specs["Steps"] = s

	s = base()
	s["traffic"] = map[string]any{"weight": float64(10), "gates": many(40_000, func(int) any {
		return map[string]any{"apiVersion": "a/b/c", "kind": "", "name": "Bad Name", "conditionType": strings.Repeat("C", 10)}
	})}
	specs["Gates"] = s

	s = base()
	s["routeName"] = strings.Repeat("x", 3<<20)
	specs["HugeValue"] = s

	s = base()
	s["canary"] = map[string]any{"externalName": strings.Repeat("a.", 1<<20)}
	specs["HugeExternalName"] = s
	return specs
}

// hostileRequest is a request with a spec, under the gRPC limit.
func hostileRequest(tb testing.TB, spec map[string]any) *fnv1.RunFunctionRequest {
	tb.Helper()
	xr, err := structpb.NewStruct(map[string]any{
		"apiVersion": "platform.example.org/v1alpha1",
		"kind":       "CanaryRoute",
		"metadata":   map[string]any{"name": "podinfo", "namespace": "test"},
		"spec":       spec,
	})
	if err != nil {
		tb.Fatal(err)
	}
	input, err := structpb.NewStruct(map[string]any{"apiVersion": "canaryroute.fn.crossplane.io/v1beta1", "kind": "Input"})
	if err != nil {
		tb.Fatal(err)
	}
	req := &fnv1.RunFunctionRequest{Input: input, Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: xr}}}
	if size := proto.Size(req); size > grpcLimit {
		tb.Fatalf("the hostile request has %d bytes, more than the gRPC limit %d", size, grpcLimit)
	}
	return req
}

// TestHostileInputs checks that each hostile spec is a Fatal result of
// bounded size: at most 20 errors, values cut.
func TestHostileInputs(t *testing.T) {
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, spec := range hostileSpecs() {
		t.Run(name, func(t *testing.T) {
			rsp, err := f.RunFunction(context.Background(), hostileRequest(t, spec))
			if err != nil {
				t.Fatalf("RunFunction(...): unexpected error: %v", err)
			}
			results := rsp.GetResults()
			if len(results) != 1 || results[0].GetSeverity() != fnv1.Severity_SEVERITY_FATAL {
				t.Fatalf("want one Fatal result, got %v", results)
			}
			// 20 errors of a few hundred characters each, at most.
			if n := len(results[0].GetMessage()); n > 16<<10 {
				t.Errorf("the Fatal message has %d bytes: errors or values are not bounded", n)
			}
		})
	}
}

// BenchmarkHostileInputs measures a run on each hostile spec: API.md wants
// an answer within 100 ms for anything under the gRPC limit.
func BenchmarkHostileInputs(b *testing.B) {
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, spec := range hostileSpecs() {
		b.Run(name, func(b *testing.B) {
			req := hostileRequest(b, spec)
			b.SetBytes(int64(proto.Size(req)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.RunFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
