package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
)

// TestHooksForgedContextWithinTheXRD: attack: another pipeline step (or a
// forged context) writes the hook-calls key with records the XRD refuses:
// a result outside its enum, a transition and a reason past 256
// characters, a status past 999, negative failures. The records read from
// status are checked and bounded; those read from the context were
// written to status as they came, and the API server would then refuse
// every later status of the XR.
func TestHooksForgedContextWithinTheXRD(t *testing.T) {
	x := steppedXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, `
    hooks:
      - {name: go, webhook: gate, type: confirm-rollout}
      - {name: load, webhook: gate, type: rollout}
`)
	input := hooksInput("http://gate.test/", "http://gate.test/")
	future := testNow.Add(time.Hour).UTC().Format(time.RFC3339)
	cases := map[string]map[string]any{
		"result outside the enum": {"go": map[string]any{"name": "go", "transition": "v2/start", "time": future, "result": "Maybe"}},
		"long transition and reason": {"go": map[string]any{
			"name": "go", "transition": "v2/start" + strings.Repeat("t", 2000), "time": future,
			"result": "Failed", "reason": strings.Repeat("r", 4000), "status": 5000, "failures": -3,
		}},
		"empty result": {"load": map[string]any{"name": "load", "transition": "v2/step-0", "time": future, "result": ""}},
	}
	for name, forged := range cases {
		t.Run(name, func(t *testing.T) {
			req := testRequest(t, x, input, nil)
			b, err := json.Marshal(forged)
			if err != nil {
				t.Fatal(err)
			}
			req.Context = &structpb.Struct{Fields: map[string]*structpb.Value{pipeline.HookCallsKey: structpb.NewStringValue(string(b))}}
			// No caller (a preview): nothing overwrites the records read.
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("a Fatal: %s", msg)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}
