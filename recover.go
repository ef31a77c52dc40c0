package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

const errPanicFmt = "internal error: the function panicked (a bug, please report it): %s"

// maxPanicValue caps the panic value quoted in the Fatal result: it may hold
// a whole user input, and the result ends up in an event and a condition
// message, which Kubernetes truncates anyway.
const maxPanicValue = 256

// recoverer turns a panic in the function it wraps into a Fatal result. gRPC
// does not recover handler panics, so without it one bad run would end the
// process and every run in flight, and Crossplane would retry the same input
// into a crash loop.
type recoverer struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	wrapped fnv1.FunctionRunnerServiceServer
	log     logging.Logger
}

// withRecover wraps fn so that a panic becomes a Fatal result.
func withRecover(fn fnv1.FunctionRunnerServiceServer, log logging.Logger) fnv1.FunctionRunnerServiceServer {
	return &recoverer{wrapped: fn, log: log}
}

// RunFunction runs the wrapped function, turning a panic into a Fatal
// result. The stack goes to the log only: the result is for the XR's owner,
// the stack for whoever fixes the function.
func (r *recoverer) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (rsp *fnv1.RunFunctionResponse, err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		msg := capPanicValue(fmt.Sprint(v))
		r.log.Info("Recovered from a panic: the run ends with a Fatal result",
			"tag", req.GetMeta().GetTag(), "xr", compositeName(req), "namespace", compositeNamespace(req), "panic", msg, "stack", string(debug.Stack()))
		rsp, err = panicked(req, msg), nil
	}()
	return r.wrapped.RunFunction(ctx, req)
}

// panicked is the response to a run that panicked: a Fatal result, with the
// function's conditions re-sent as the XR last had them, like any Fatal.
func panicked(req *fnv1.RunFunctionRequest, msg string) *fnv1.RunFunctionResponse {
	return fatal(req, nil, errors.Errorf(errPanicFmt, msg))
}

// capPanicValue cuts s to maxPanicValue bytes on a rune boundary. A result's
// message is a protobuf string: invalid UTF-8 would fail the response's
// encoding, and Crossplane would get a gRPC error instead of the Fatal.
func capPanicValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxPanicValue {
		return s
	}
	cut := maxPanicValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}
