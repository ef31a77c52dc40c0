package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// FuzzRunFunction feeds arbitrary specs (and status) to the function. Bad
// input must be a Fatal result, never a panic or a gRPC error; good input
// must compose routes and grants that the Gateway API CRDs accept; and the
// same request must always give the same response.
func FuzzRunFunction(f *testing.F) {
	for _, seed := range exampleSpecs(f) {
		f.Add(seed, allowMonitoring)
	}
	f.Add(`{"primary":{},"canary":{}}`, emptyInput)
	f.Add(`{"kind":"TLSRoute","primary":{"backendRef":{"name":"a"}},"canary":{"backendRef":{"name":"b"}},"port":1,"parentRefs":[{"name":"g"}]}`, emptyInput)
	f.Add(`{"traffic":{"steps":[{"weight":50}]},"canary":{"revision":"v1","service":{"selector":{"a":"b"}}},"primary":{"backendRef":{"name":"x","port":80}},"port":80,"parentRefs":[{"name":"g"}]}`, emptyInput)

	standard := crdschema.GatewayAPI(f, crdschema.Standard)
	experimental := crdschema.GatewayAPI(f, crdschema.Experimental)

	f.Fuzz(func(t *testing.T, spec, input string) {
		var specObj any
		if err := json.Unmarshal([]byte(spec), &specObj); err != nil {
			t.Skip()
		}
		var inputObj map[string]any
		if err := yaml.Unmarshal([]byte(input), &inputObj); err != nil || inputObj == nil {
			t.Skip()
		}
		xr := map[string]any{
			"apiVersion": "platform.example.org/v1alpha1",
			"kind":       "CanaryRoute",
			"metadata":   map[string]any{"name": "fuzz", "namespace": "test"},
			"spec":       specObj,
		}
		req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{}}}
		var err error
		if req.Observed.Composite.Resource, err = structpb.NewStruct(xr); err != nil {
			t.Skip()
		}
		if req.Input, err = structpb.NewStruct(inputObj); err != nil {
			t.Skip()
		}

		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error for %s: %v", spec, err)
		}
		again, _ := f.RunFunction(context.Background(), req)
		if !proto.Equal(rsp, again) {
			t.Fatalf("RunFunction is not deterministic for %s", spec)
		}

		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				if len(rsp.GetDesired().GetResources()) > 0 {
					t.Fatalf("a Fatal result must come with nothing new to apply, got %d resources", len(rsp.GetDesired().GetResources()))
				}
				return
			}
		}
		for name, r := range rsp.GetDesired().GetResources() {
			obj := r.GetResource().AsMap()
			if k := compose.Key(name); !k.IsRoute() && !k.IsGrant() {
				continue
			}
			schemas := []*crdschema.Set{standard, experimental}
			if strings.HasSuffix(obj["apiVersion"].(string), "v1alpha2") {
				schemas = schemas[1:]
			}
			for _, s := range schemas {
				if errs := s.Validate(obj); len(errs) > 0 {
					b, _ := yaml.Marshal(obj)
					t.Fatalf("the function accepted spec %s but the Gateway API CRDs reject %s:\n%v\n%s", spec, name, errs, b)
				}
			}
		}
	})
}

// exampleSpecs returns the spec of every example XR, as JSON.
func exampleSpecs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("example/*/xr.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no example XRs: %v", err)
	}
	specs := make([]string, 0, len(files))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var xr struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &xr); err != nil {
			tb.Fatal(err)
		}
		specs = append(specs, string(xr.Spec))
	}
	return specs
}
