package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// A CanaryRoute that the function composes, whose last run left the
// function's conditions and one of Crossplane's own on it.
const recoverXR = `
apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata: {name: podinfo, namespace: test}
spec:
  parentRefs: [{name: gateway}]
  port: 9898
  primary: {backendRef: {name: podinfo-v1}}
  canary: {backendRef: {name: podinfo-v2}}
  traffic: {weight: 20}
status:
  conditions:
    - {type: Synced, status: "True", reason: ReconcileSuccess}
    - {type: RouteAccepted, status: "True", reason: Accepted, message: every parent accepted the route}
    - {type: RolloutHealthy, status: "False", reason: GateFailed, message: the gate failed}
`

// runnerFunc adapts a function to a FunctionRunnerServiceServer.
func runnerFunc(run func(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)) fnv1.FunctionRunnerServiceServer {
	return runner{run: run}
}

type runner struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	run func(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)
}

func (r runner) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return r.run(ctx, req)
}

// panicClock is a Clock that panics: the function reads the clock in the
// middle of every run that gets as far as the rollout decision.
type panicClock struct{ value any }

func (c panicClock) Now() time.Time { panic(c.value) }

// logRecorder is a Logger that keeps what it is given.
type logRecorder struct {
	mu      sync.Mutex
	entries []map[string]any
}

func (l *logRecorder) Info(msg string, kv ...any) { l.record(msg, kv) }

func (l *logRecorder) Debug(msg string, kv ...any) { l.record(msg, kv) }

func (l *logRecorder) WithValues(...any) logging.Logger { return l }

func (l *logRecorder) record(msg string, kv []any) {
	e := map[string]any{"msg": msg}
	for i := 0; i+1 < len(kv); i += 2 {
		e[fmt.Sprint(kv[i])] = kv[i+1]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func TestRecover(t *testing.T) {
	req := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "run-1"},
		Input:    toStruct(t, `{apiVersion: canaryroute.fn.crossplane.io/v1beta1, kind: Input}`),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, recoverXR)}},
	}
	composed := &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Tag: "run-1"}}
	errBoom := errors.New("boom")

	// fatalWith is the response to a run that panicked: a Fatal, and the
	// function's own conditions as the XR had them (not Crossplane's
	// Synced), so they do not turn Unknown.
	fatalWith := func(msg string) *fnv1.RunFunctionResponse {
		return &fnv1.RunFunctionResponse{
			Meta: &fnv1.ResponseMeta{Tag: "run-1", Ttl: durationpb.New(time.Minute)},
			Results: []*fnv1.Result{{
				Severity: fnv1.Severity_SEVERITY_FATAL,
				Message:  "internal error: the function panicked (a bug, please report it): " + msg,
				Target:   fnv1.Target_TARGET_COMPOSITE.Enum(),
			}},
			Conditions: []*fnv1.Condition{
				{Type: "RouteAccepted", Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: "Accepted", Message: ptr.To("every parent accepted the route"), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()},
				{Type: "RolloutHealthy", Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "GateFailed", Message: ptr.To("the gate failed"), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()},
				{Type: "Composed", Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "Refused", Message: ptr.To("internal error: the function panicked (a bug, please report it): " + msg), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()},
			},
		}
	}
	panicking := func(v any) fnv1.FunctionRunnerServiceServer {
		return runnerFunc(func(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { panic(v) })
	}

	type want struct {
		rsp *fnv1.RunFunctionResponse
		err error
		// panicLogged: one log entry names the XR and the panic, with the
		// stack of the panicking code.
		panicLogged bool
	}
	cases := map[string]struct {
		reason string
		fn     fnv1.FunctionRunnerServiceServer
		want   want
	}{
		"RunFunctionPanics": {
			reason: "A panic in the real function (through its clock) is a Fatal result naming an internal error, not a crash or a gRPC error.",
			fn:     &Function{log: logging.NewNopLogger(), clock: panicClock{value: "clock broke"}},
			want:   want{rsp: fatalWith("clock broke"), panicLogged: true},
		},
		"PanicWithError": {
			reason: "An error value is quoted by its message.",
			fn:     panicking(fmt.Errorf("cannot index: %w", errBoom)),
			want:   want{rsp: fatalWith("cannot index: boom"), panicLogged: true},
		},
		"RuntimeError": {
			reason: "A runtime error (here a division by zero) is recovered like any panic.",
			fn: runnerFunc(func(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				perResource := 100 / len(req.GetObserved().GetResources())
				return &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Tag: strconv.Itoa(perResource)}}, nil
			}),
			want: want{rsp: fatalWith("runtime error: integer divide by zero"), panicLogged: true},
		},
		"PanicWithNil": {
			reason: "panic(nil) is a panic too.",
			fn:     panicking(nil),
			want:   want{rsp: fatalWith("panic called with nil argument"), panicLogged: true},
		},
		"LongPanicValueIsCapped": {
			reason: "A panic value that quotes a large input is cut to 256 bytes on a rune boundary, with its length.",
			fn:     panicking(strings.Repeat("é", 1000)),
			want:   want{rsp: fatalWith(strings.Repeat("é", 128) + "... (2000 bytes)"), panicLogged: true},
		},
		"InvalidUTF8": {
			reason: "A panic value that is not UTF-8 would fail the response's encoding: it is repaired.",
			fn:     panicking("bad \xff byte"),
			want:   want{rsp: fatalWith("bad \uFFFD byte"), panicLogged: true},
		},
		"NoPanic": {
			reason: "Without a panic the wrapped function's response passes through untouched.",
			fn: runnerFunc(func(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				return composed, nil
			}),
			want: want{rsp: composed},
		},
		"ErrorPassesThrough": {
			reason: "An error of the wrapped function is its own business: it passes through.",
			fn: runnerFunc(func(context.Context, *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				return nil, errBoom
			}),
			want: want{err: errBoom},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := &logRecorder{}
			rsp, err := withRecover(tc.fn, log, nil).RunFunction(t.Context(), req)
			if diff := cmp.Diff(tc.want.rsp, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want rsp, +got rsp:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.err, err, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want err, +got err:\n%s", tc.reason, diff)
			}
			if got := panicLogged(log.entries); got != tc.want.panicLogged {
				t.Errorf("%s\nthe panic was logged with the XR and its stack: want %t, got %t; log:\n%v", tc.reason, tc.want.panicLogged, got, log.entries)
			}
		})
	}
}

// panicLogged tells whether the log holds exactly one entry, naming the XR,
// with a stack that reaches this file, where every panic of TestRecover is
// raised.
func panicLogged(entries []map[string]any) bool {
	if len(entries) != 1 {
		return false
	}
	e := entries[0]
	stack, _ := e["stack"].(string)
	return e["xr"] == "podinfo" && e["namespace"] == "test" && e["tag"] == "run-1" && e["panic"] != nil &&
		strings.Contains(stack, "recover_test.go")
}
