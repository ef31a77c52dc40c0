package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// Speed and memory are measured here, never asserted in tests.
// docs/performance.md records the figures and how they grow.

// progressiveXR is the Flagger scenario as a progressive rollout with a
// gate, at step 0.
var progressiveXR = strings.Replace(strings.Replace(flaggerXR, "weight: 20", `steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 5m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}]`, 1),
	"namespace: monitoring, port: 3456}", "namespace: monitoring, port: 3456}\n    revision: v2", 1) + `
status:
  rollout: {phase: Progressing, revision: v2, step: 0, stepStartedAt: "2026-12-02T10:00:00Z", canaryWeight: 10, primaryWeight: 90}
`

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
	t := &testing.T{}
	gate := toStruct(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo-canary, namespace: test}
status:
  conditions: [{type: Available, status: "True", lastTransitionTime: "2026-12-02T09:00:00Z"}]
`)
	progressive := testRequest(t, progressiveXR, allowMonitoring, map[string]string{"route-httproute": acceptedRoute(3, 3)})
	progressive.RequiredResources = map[string]*fnv1.Resources{
		"gate-0":                   {Items: []*fnv1.Resource{{Resource: gate}}},
		"existing-route-httproute": {Items: []*fnv1.Resource{{Resource: toStruct(t, ownRoute("crossplane.io/composite: podinfo", 90, 10))}}},
		"existing-service-primary": {},
	}
	reqs := map[string]*fnv1.RunFunctionRequest{
		"Flagger":     testRequest(t, flaggerXR, allowMonitoring, nil),
		"Progressive": progressive,
	}
	for _, n := range []int{1, 4, 16} {
		reqs[fmt.Sprintf("Rules%d", n)] = testRequest(t, rulesXR(n), allowMonitoring, nil)
	}
	if t.Failed() {
		tb.Fatal("cannot build the benchmark requests")
	}
	// A benchmark of a Fatal would measure the wrong path.
	f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
	for name, req := range reqs {
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				tb.Fatalf("the %s request is a Fatal: %s", name, r.GetMessage())
			}
		}
	}
	return reqs
}

// BenchmarkRunFunction measures whole runs in process.
func BenchmarkRunFunction(b *testing.B) {
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(4 << 20))
	fnv1.RegisterFunctionRunnerServiceServer(srv, withRecover(&Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}, logging.NewNopLogger()))
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

// grpcLimit is the function's default largest request (--max-recv-message-size).
const grpcLimit = 4 << 20

// BenchmarkHostileInputs measures a run on each hostile spec: the reference (docs/reference.md) wants
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
