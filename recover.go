package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

const errPanicFmt = "internal error: the function panicked (a bug, please report it): %s"

// maxPanicValue caps the bytes of the panic value quoted in the Fatal
// result, cut on a character boundary: it may hold a whole user input, and
// the result ends up in an event and a condition message, which Kubernetes
// truncates anyway.
const maxPanicValue = 256

// recoverer turns a panic in the function it wraps into a Fatal result. gRPC
// does not recover handler panics, so without it one bad run would end the
// process and every run in flight, and Crossplane would retry the same input
// into a crash loop.
type recoverer struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	wrapped fnv1.FunctionRunnerServiceServer
	log     logging.Logger
	metrics *telemetry.Runs
}

// withRecover wraps fn so that a panic becomes a Fatal result, counted in
// m (nil counts nothing).
func withRecover(fn fnv1.FunctionRunnerServiceServer, log logging.Logger, m *telemetry.Runs) fnv1.FunctionRunnerServiceServer {
	return &recoverer{wrapped: fn, log: log, metrics: m}
}

// RunFunction runs the wrapped function, turning a panic into a Fatal
// result. The stack goes to the log only: the result is for the XR's owner,
// the stack for whoever fixes the function.
func (r *recoverer) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (rsp *fnv1.RunFunctionResponse, err error) {
	start := r.metrics.Start()
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		// A result's message is a protobuf string: invalid UTF-8 would fail
		// the response's encoding, and Crossplane would get a gRPC error
		// instead of the Fatal.
		msg := fielderr.Truncate(strings.ToValidUTF8(fmt.Sprint(v), "\uFFFD"), maxPanicValue, fielderr.Bytes, func(s string) string {
			return fmt.Sprintf(" (%d bytes)", len(s))
		})
		r.log.Info("Recovered from a panic: the run ends with a Fatal result",
			"tag", req.GetMeta().GetTag(), "xr", pipeline.CompositeMeta(req, "name"), "namespace", pipeline.CompositeMeta(req, "namespace"), "panic", msg, "stack", string(debug.Stack()))
		rsp, err = fatal(req, nil, errors.Errorf(errPanicFmt, msg)), nil
		// A panic ends the run: nothing of it is applied, but what the
		// Fatal says.
		r.metrics.Record(telemetry.Outcome{Result: telemetry.ResultPanic, Applied: true}, start)
	}()
	return r.wrapped.RunFunction(ctx, req)
}
