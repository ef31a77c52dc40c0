package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
)

// Speed and memory are measured here, never asserted in tests.
// docs/performance.md records the figures and how they grow.

// rulesXR is the Flagger scenario with n rules of 4 header matches each,
// 32 parentRefs and 16 hostnames: the large CanaryRoute of the performance
// issue, scaled by its rules.
func rulesXR(n int) string {
	var b strings.Builder
	b.WriteString("\n  parentRefs:\n")
	for i := range 32 {
		fmt.Fprintf(&b, "    - {name: gateway, namespace: istio-ingress, sectionName: listener-%d}\n", i)
	}
	b.WriteString("  hostnames:\n")
	for i := range 16 {
		fmt.Fprintf(&b, "    - www%d.example.com\n", i)
	}
	b.WriteString("  rules:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - name: rule-%d\n      matches:\n        - path: {type: PathPrefix, value: /api/%d}\n          headers:\n", i, i)
		for j := range 4 {
			fmt.Fprintf(&b, "            - {name: X-Header-%d, value: value-%d-%d}\n", j, i, j)
		}
	}
	xr := strings.Replace(flaggerXR, "\n  parentRefs:\n    - name: gateway\n      namespace: istio-ingress", "", 1)
	xr = strings.Replace(xr, "\n  hostnames: [www.example.com]", "", 1)
	return strings.Replace(xr, "\n  port: 9898", b.String()+"  port: 9898", 1)
}

// benchRequests are the requests the benchmarks run: the Flagger scenario
// (manual weight), a progressive rollout with a gate whose object and route
// Crossplane fetched, and the large CanaryRoute with 1, 4 and 16 rules.
func benchRequests(tb testing.TB) map[string]*fnv1.RunFunctionRequest {
	tb.Helper()
	gate := toStruct(tb, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo-canary, namespace: test}
status:
  conditions: [{type: Available, status: "True", lastTransitionTime: "2026-12-02T09:00:00Z"}]
`)
	progressive := testRequest(tb, progressiveXR, allowMonitoring, map[string]string{"route-httproute": acceptedRoute(3, 3)})
	progressive.RequiredResources = map[string]*fnv1.Resources{
		"gate-0":                   {Items: []*fnv1.Resource{{Resource: gate}}},
		"existing-route-httproute": {Items: []*fnv1.Resource{{Resource: toStruct(tb, ownRoute("crossplane.io/composite: podinfo", 90, 10))}}},
		"existing-service-primary": {},
	}
	reqs := map[string]*fnv1.RunFunctionRequest{
		"Flagger":           testRequest(tb, flaggerXR, allowMonitoring, nil),
		"Progressive":       progressive,
		"ProgressiveNoGate": progressiveWith(tb, "", nil),
		"ExpressionGates3":  progressiveWith(tb, expressionGates, expressionGateObjects(tb)),
	}
	for _, n := range []int{1, 4, 16} {
		reqs[fmt.Sprintf("Rules%d", n)] = testRequest(tb, rulesXR(n), allowMonitoring, nil)
	}
	// Several routes: the two of example/multi-route, then the most a
	// rollout steers, each route as Flagger's one.
	reqs["Routes2"] = testRequest(tb, routesXR(webAndGRPC, "    weight: 20"), emptyInput, nil)
	eight := make([]string, 0, 8)
	for i := range 8 {
		eight = append(eight, fmt.Sprintf("    - {name: r%d, parentRefs: [{name: public, namespace: infra}], hostnames: [r%d.example.com]}", i, i))
	}
	reqs["Routes8"] = testRequest(tb, routesXR(strings.Join(eight, "\n"), "    weight: 20"), emptyInput, nil)
	// A benchmark of a Fatal would measure the wrong path.
	f := functionAt(testNow)
	for name, req := range reqs {
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			tb.Fatal(err)
		}
		if msg := fatalOf(rsp); msg != "" {
			tb.Fatalf("the %s request is a Fatal: %s", name, msg)
		}
	}
	return reqs
}

// expressionGates are three expression gates of the kinds users judge: an
// Argo Rollouts AnalysisRun, a Job, and a provider-http Request.
const expressionGates = `[
      {apiVersion: argoproj.io/v1alpha1, kind: AnalysisRun, name: podinfo-v2, successWhen: "object.status.phase in ['Running', 'Successful']", failWhen: "object.status.phase in ['Failed', 'Error']"},
      {apiVersion: batch/v1, kind: Job, name: podinfo-load, successWhen: "has(object.status.succeeded) && object.status.succeeded > 0", failWhen: "has(object.status.failed) && object.status.failed > 0"},
      {apiVersion: http.m.crossplane.io/v1alpha2, kind: Request, name: podinfo-errors, successWhen: "object.status.response.statusCode == 200 && object.status.response.body.matches('\"value\":\\\\[[0-9.e+]+,\"1\"\\\\]')"}]`

// expressionGateObjects are the objects of expressionGates, as Crossplane
// fetched them.
func expressionGateObjects(tb testing.TB) map[string]*fnv1.Resources {
	objs := []string{
		`{apiVersion: argoproj.io/v1alpha1, kind: AnalysisRun, metadata: {name: podinfo-v2, namespace: test}, status: {phase: Running}}`,
		`{apiVersion: batch/v1, kind: Job, metadata: {name: podinfo-load, namespace: test}, status: {active: 1}}`,
		`{apiVersion: http.m.crossplane.io/v1alpha2, kind: Request, metadata: {name: podinfo-errors, namespace: test}, status: {response: {statusCode: 200, body: '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1764669600.123,"1"]}]}}'}}}`,
	}
	out := map[string]*fnv1.Resources{}
	for i, o := range objs {
		out[pipeline.Gate(i)] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: toStruct(tb, o)}}}
	}
	return out
}

// progressiveWith is the progressive Flagger scenario at step 0 with the
// given gates (a YAML list; "" for none) and their objects, the route and
// the takeover check's answers fetched, under an Input that allows the
// gates' kinds.
func progressiveWith(tb testing.TB, gates string, objects map[string]*fnv1.Resources) *fnv1.RunFunctionRequest {
	xr := strings.Replace(progressiveXR, "\n    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]", "", 1)
	if gates != "" {
		xr = strings.Replace(xr, "{weight: 100}]", "{weight: 100}]\n    gates: "+gates, 1)
	}
	input := allowMonitoring + `
allowedGateKinds:
  - {apiVersion: argoproj.io/v1alpha1, kind: AnalysisRun}
  - {apiVersion: batch/v1, kind: Job}
  - {apiVersion: http.m.crossplane.io/v1alpha2, kind: Request}
`
	req := testRequest(tb, xr, input, map[string]string{"route-httproute": acceptedRoute(3, 3)})
	req.RequiredResources = map[string]*fnv1.Resources{
		"existing-route-httproute": {Items: []*fnv1.Resource{{Resource: toStruct(tb, ownRoute("crossplane.io/composite: podinfo", 90, 10))}}},
		"existing-service-primary": {},
	}
	for k, v := range objects {
		req.RequiredResources[k] = v
	}
	return req
}

// BenchmarkRunFunction measures whole runs in process.
func BenchmarkRunFunction(b *testing.B) {
	asServed(b)
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, req := range benchRequests(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.RunFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServeGRPC measures whole runs as Crossplane makes them: over gRPC
// on loopback, through the server the CLI starts (the recover included), so
// that a profile (-cpuprofile) shows the cost of the protobuf messages and
// of the conversions around RunFunction too. hack/bench compares the same
// path with an echo function's.
func BenchmarkServeGRPC(b *testing.B) {
	asServed(b)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(4 << 20))
	fnv1.RegisterFunctionRunnerServiceServer(srv, withRecover(&Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}, logging.NewNopLogger(), nil))
	go srv.Serve(l) // Stopped below.
	b.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	client := fnv1.NewFunctionRunnerServiceClient(conn)
	for name, req := range benchRequests(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.RunFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkColdExpressions measures a run that finds none of its
// expressions compiled (the first run after they changed, or after other
// CanaryRoutes churned the cache): 4,096 characters of expressions, the
// most a CanaryRoute may hold, compiled by a compiler of its own on every
// iteration.
func BenchmarkColdExpressions(b *testing.B) {
	asServed(b)
	t := &testing.T{}
	gates := make([]string, 0, 8)
	for i := range 8 {
		// 8 gates of two expressions of about 250 characters each.
		e := fmt.Sprintf("has(object.status.phase) && object.status.phase in ['Running', 'Successful'] && object.metadata.name == 'gate-%d' && !has(object.metadata.deletionTimestamp) && (has(object.status.startedAt) || object.status.phase == 'Running')", i)
		gates = append(gates, fmt.Sprintf("{apiVersion: argoproj.io/v1alpha1, kind: AnalysisRun, name: gate-%d, successWhen: %q, failWhen: %q}", i, e, "!("+e+")"))
	}
	req := progressiveWith(t, "["+strings.Join(gates, ", ")+"]", nil)
	if t.Failed() {
		b.Fatal("cannot build the request")
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := expr.NewCompiler(0)
		if err != nil {
			b.Fatal(err)
		}
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow }), exprs: c}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil || isFatal(rsp) {
			b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
	}
}

// grpcLimit is the function's default largest request (--max-recv-message-size).
const grpcLimit = 4 << 20

// BenchmarkHostileInputs measures a run on each hostile spec: the reference (docs/reference.md) wants
// an answer within 100 ms for anything under the gRPC limit.
func BenchmarkHostileInputs(b *testing.B) {
	asServed(b)
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

// asServed runs a benchmark as the function runs when served: without the
// tests' check of the routes that runs share (compose.VerifyShared), which
// builds each of them again.
func asServed(b *testing.B) {
	b.Helper()
	verify := compose.VerifyShared
	compose.VerifyShared = false
	b.Cleanup(func() { compose.VerifyShared = verify })
}

// BenchmarkRunFunctionRemembered measures runs as the function serves them
// in a cluster: with its memory of the newest decision per CanaryRoute
// (internal/freshness), on requests from a cluster (a UID and a
// generation). Fresh is a settled CanaryRoute's run: its status is the one
// the function answered, the call settles (its context records the
// requirements it makes again), so the run decides, stamps its sequence
// and remembers its answer. Stale is a read older than that answer,
// answered with the remembered decision.
func BenchmarkRunFunctionRemembered(b *testing.B) {
	asServed(b)
	for name, req := range benchRequests(b) {
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow }), memory: freshness.NewMemory[pipeline.Answer](freshness.DefaultEntries, freshness.DefaultBytes)}
		stale := proto.Clone(req).(*fnv1.RunFunctionRequest)
		md := stale.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue()
		md.Fields["uid"], md.Fields["generation"] = structpb.NewStringValue("9d2f6c4e-0000-4000-8000-0000000000b1"), structpb.NewNumberValue(1)
		// Settle: the status the function answers is the one it reads, and
		// the call makes the requirements the call before made.
		fresh := proto.Clone(stale).(*fnv1.RunFunctionRequest)
		for range 4 {
			rsp, err := f.RunFunction(context.Background(), fresh)
			if err != nil || isFatal(rsp) {
				b.Fatalf("%s: RunFunction(...): %v %v", name, err, rsp.GetResults())
			}
			fresh.Observed.Composite.Resource.Fields["status"] = rsp.GetDesired().GetComposite().GetResource().GetFields()["status"]
			fresh.Context = rsp.GetContext()
		}
		// FreshForgetful is the same run by a process without the memory:
		// what the memory costs is the difference with Fresh.
		forgetful := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
		for variant, run := range map[string]struct {
			f *Function
			r *fnv1.RunFunctionRequest
		}{"Fresh": {f, fresh}, "FreshForgetful": {forgetful, fresh}, "Stale": {f, stale}} {
			b.Run(name+"/"+variant, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := run.f.RunFunction(context.Background(), run.r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// hostileMetricsSpecs counts the specs BenchmarkHostileMetrics made new, in
// every round of -count: a spec of an earlier round would be found checked.
var hostileMetricsSpecs int

// BenchmarkHostileMetrics measures runs of the worst CanaryRoutes the XRD
// admits for the PromQL check, ten queries of 4,096 characters each: API.md
// wants no run of them over 50 ms on 2 cores. First is a run of a spec
// never seen (each iteration's queries are new, the check's cache cold) of
// the most operators a query may have (hostileMetricsXR); FirstRegex of
// counted repetitions in a regular expression (regexMetricsXR), which
// Prometheus's parser compiled; FirstWorstRegex of regular expressions at
// every bound of the function's own reading of them, beside the most
// operators (worstRegexMetricsXR). Again is a later run of the same XR.
func BenchmarkHostileMetrics(b *testing.B) {
	asServed(b)
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	run := func(b *testing.B, req *fnv1.RunFunctionRequest) {
		b.Helper()
		if rsp, err := f.RunFunction(context.Background(), req); err != nil || isFatal(rsp) {
			b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
	}
	for _, first := range []struct {
		name string
		xr   func(tag string) string
	}{{"First", hostileMetricsXR}, {"FirstRegex", regexMetricsXR}, {"FirstWorstRegex", worstRegexMetricsXR}} {
		b.Run(first.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				hostileMetricsSpecs++
				req := testRequest(b, first.xr(fmt.Sprint("first", hostileMetricsSpecs)), metricsInput, nil)
				b.StartTimer()
				run(b, req)
			}
		})
	}
	b.Run("Again", func(b *testing.B) {
		req := testRequest(b, hostileMetricsXR("again"), metricsInput, nil)
		run(b, req)
		b.ReportAllocs()
		for b.Loop() {
			run(b, req)
		}
	})
}

// hooksBenchXR is a rollout at step 1 of three, its pause over, with a
// hook of every type (the gateway's acceptance is not awaited: the
// benchmark has no gateway).
const hooksBenchXR = `
    requireAcceptedRoute: false
    hooks:
      - {name: go, webhook: gate, type: confirm-rollout}
      - {name: pre, webhook: gate, type: pre-rollout}
      - {name: load, webhook: loadtester, type: rollout, metadata: {cmd: "hey -z 1m http://podinfo-canary.test:9898/"}}
      - {name: more, webhook: gate, type: confirm-traffic-increase}
      - {name: promote, webhook: gate, type: confirm-promotion}
      - {name: post, webhook: gate, type: post-rollout}
      - {name: rollback, webhook: never, type: rollback}
      - {name: chat, webhook: gate, type: event}
status:
  rollout:
    phase: Progressing
    reason: StepAdvanced
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T09:50:00Z"
    canaryWeight: 50
    primaryWeight: 50
`

// BenchmarkHooks measures runs of a rollout with a hook of every type on a
// webhook on loopback that answers at once (200, and 404 to the rollback
// hook): Due, where the rollback and rollout hooks are called, then the
// confirm-traffic-increase hook (two rounds), and the event hook told; Steady, the same run once those calls are recorded
// in the status (nothing due: the cost of hooks on every other run).
func BenchmarkHooks(b *testing.B) {
	asServed(b)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/never" {
			http.Error(w, "no rollback", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow }), caller: &hooks.Client{}}
	xr := withUID(steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, hooksBenchXR))
	input := hooksInput(srv.URL, srv.URL) + fmt.Sprintf("  - {name: never, url: %q}\n", srv.URL+"/never")
	due := testRequest(b, xr, input, map[string]string{"route-httproute": acceptedRoute(2, 2)})
	rsp, err := f.RunFunction(context.Background(), due)
	if err != nil || isFatal(rsp) {
		b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
	}
	// Steady: the status the runs leave once nothing is due (the rollout
	// holding step 2's pause, every hook answered).
	steady := proto.Clone(due).(*fnv1.RunFunctionRequest)
	for range 6 {
		x := steady.GetObserved().GetComposite().GetResource().AsMap()
		x["status"] = rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
		steady.Observed.Composite.Resource = mustStruct(b, x)
		before := calls.Load()
		if rsp, err = f.RunFunction(context.Background(), steady); err != nil || isFatal(rsp) {
			b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
		}
		if calls.Load() == before {
			break
		}
	}
	for name, req := range map[string]*fnv1.RunFunctionRequest{"Due": due, "Steady": steady} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			calls.Store(0)
			for b.Loop() {
				if _, err := f.RunFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(calls.Load())/float64(b.N), "calls/op")
		})
	}
}
