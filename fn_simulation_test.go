package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// A progressive CanaryRoute: 10% for 1m, 50% for 5m, then 100%, gated on
// the canary Deployment being Available.
const simulatedXR = `
apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata: {name: podinfo, namespace: test}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary:
    service: {selector: {app: podinfo, version: v2}}
    revision: v2
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 5m}, {weight: 100}]
    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-v2, conditionType: Available, failAfter: 2m}]
`

// cluster fakes what Crossplane and the gateway do between two runs: the
// desired state is applied (a route whose spec changed gets a new
// generation), the gateway reports on the route's current generation, and
// the gate Deployment reports its condition.
type cluster struct {
	// accept is the gateway's verdict: Accepted status and reason.
	accept func(now time.Time) (status, reason string)
	// available is the gate's Available condition at a time: status and
	// last transition time.
	available func(now time.Time) (status string, since time.Time)

	xrStatus   map[string]any
	route      map[string]any
	generation int64
	observed   map[string]*fnv1.Resource
}

func (c *cluster) request(t *testing.T, now time.Time) *fnv1.RunFunctionRequest {
	t.Helper()
	xr := toStruct(t, simulatedXR).AsMap()
	if c.xrStatus != nil {
		xr["status"] = c.xrStatus
	}
	req := &fnv1.RunFunctionRequest{
		Input:    toStruct(t, emptyInput),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, xr)}, Resources: map[string]*fnv1.Resource{}},
	}
	for name, r := range c.observed {
		req.Observed.Resources[name] = r
	}
	if c.route != nil {
		status, reason := c.accept(now)
		route := deepCopyMap(c.route)
		route["metadata"].(map[string]any)["generation"] = c.generation
		cond := func(typ, status, reason string) map[string]any {
			return map[string]any{"type": typ, "status": status, "reason": reason, "observedGeneration": c.generation, "lastTransitionTime": "2026-12-02T10:00:00Z", "message": ""}
		}
		route["status"] = map[string]any{"parents": []any{map[string]any{
			"parentRef":      map[string]any{"name": "gateway", "namespace": "istio-ingress"},
			"controllerName": "example.com/gateway",
			"conditions":     []any{cond("Accepted", status, reason), cond("ResolvedRefs", "True", "ResolvedRefs")},
		}}}
		req.Observed.Resources["route-httproute"] = &fnv1.Resource{Resource: mustStruct(t, route)}
	}
	status, since := c.available(now)
	req.RequiredResources = map[string]*fnv1.Resources{"gate-0": {Items: []*fnv1.Resource{{Resource: mustStruct(t, map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo-v2", "namespace": "test"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": "Simulated", "lastTransitionTime": since.Format(time.RFC3339),
		}}},
	})}}}}
	return req
}

// apply takes the run's desired state as the cluster's new observed state.
func (c *cluster) apply(rsp *fnv1.RunFunctionResponse) {
	desired := rsp.GetDesired()
	if s, ok := desired.GetComposite().GetResource().AsMap()["status"].(map[string]any); ok {
		c.xrStatus = s
	}
	c.observed = map[string]*fnv1.Resource{}
	for name, r := range desired.GetResources() {
		if name == "route-httproute" {
			route := r.GetResource().AsMap()
			if c.route == nil || !cmp.Equal(c.route["spec"], route["spec"]) {
				c.generation++
			}
			c.route = route
			continue
		}
		c.observed[name] = r
	}
}

func TestRolloutSimulation(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	accepted := func(time.Time) (string, string) { return "True", "Accepted" }
	availableSince := func(since time.Time) func(time.Time) (string, time.Time) {
		return func(time.Time) (string, time.Time) { return "True", since }
	}
	cases := map[string]struct {
		reason  string
		cluster *cluster
		runs    int
		want    []string
	}{
		"Succeeds": {
			reason:  "The rollout walks 10% -> 50% -> 100% -> Succeeded: each step waits for the gateway to accept its weights and for its pause, one step per run.",
			cluster: &cluster{accept: accepted, available: availableSince(start.Add(-time.Hour))},
			runs:    14,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
				"10:01:00 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 1 (50%)]",
				"10:01:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:02:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:03:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:04:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:05:30 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:06:00 Progressing step 2 at 100%, again in 30s: holding step 2 (100%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 2 (100%)]",
				"10:06:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100% [rollout of revision v2 succeeded at 100%]",
				"10:07:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:08:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:09:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
				"10:10:30 Succeeded step 2 at 100%, again in 1m0s: revision v2 completed all 3 steps at 100%",
			},
		},
		"GatewayRefuses": {
			reason: "A gateway that does not accept the route holds the rollout at step 0, saying which parent and why.",
			cluster: &cluster{
				accept:    func(time.Time) (string, string) { return "False", "NotAllowedByListeners" },
				available: availableSince(start.Add(-time.Hour)),
			},
			runs: 5,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:01:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:01:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
				"10:02:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): istio-ingress/gateway has not accepted the route (NotAllowedByListeners)",
			},
		},
		"GateFails": {
			reason: "The canary Deployment becomes unavailable at 10:02 during step 1: the step holds, and 2m later (failAfter) the rollout fails back to 0%.",
			cluster: &cluster{accept: accepted, available: func(now time.Time) (string, time.Time) {
				down := start.Add(2 * time.Minute)
				if now.Before(down) {
					return "True", start.Add(-time.Hour)
				}
				return "False", down
			}},
			runs: 12,
			want: []string{
				"10:00:00 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): the route has not been created yet [rollout of revision v2 started at step 0 (10%)]",
				"10:00:30 Progressing step 0 at 10%, again in 30s: holding step 0 (10%): pause until 2026-12-02T10:01:00Z",
				"10:01:00 Progressing step 1 at 50%, again in 30s: holding step 1 (50%): the route does not carry the step's weights yet [rollout of revision v2 advanced to step 1 (50%)]",
				"10:01:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:02:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:03:30 Progressing step 1 at 50%, again in 1m0s: holding step 1 (50%): pause until 2026-12-02T10:06:00Z",
				"10:04:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:05:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:06:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:07:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:08:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
				"10:09:30 Failed step 1 at 0%, again in 1m0s: gate 0 failed: Deployment podinfo-v2 has had Available False since 2026-12-02T10:02:00Z (Simulated), longer than 2m0s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := start
			var got []string
			for range tc.runs {
				f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return now })}
				rsp, err := f.RunFunction(context.Background(), tc.cluster.request(t, now))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, describeRun(t, now, rsp))
				assertXRDAccepts(t, tc.cluster.request(t, now), rsp)
				assertWeights(t, rsp)
				tc.cluster.apply(rsp)
				now = now.Add(rsp.GetMeta().GetTtl().AsDuration())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe rollout run by run: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// describeRun says what one run decided, in a line.
func describeRun(t *testing.T, now time.Time, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("%s: unexpected Fatal: %s", now.Format(time.TimeOnly), r.GetMessage())
		}
	}
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	r, _ := status["rollout"].(map[string]any)
	var line strings.Builder
	fmt.Fprintf(&line, "%s %s step %v at %v%%, again in %s: %s", now.Format(time.TimeOnly), r["phase"], r["step"], r["canaryWeight"],
		rsp.GetMeta().GetTtl().AsDuration(), r["message"])
	for _, res := range rsp.GetResults() {
		line.WriteString(" [" + res.GetMessage() + "]")
	}
	return line.String()
}

// assertWeights checks that the composed route carries the weights the
// status reports.
func assertWeights(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	r, _ := status["rollout"].(map[string]any)
	route := rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
	want := [][]string{{
		fmt.Sprintf("Service/podinfo-primary:9898=%v", r["primaryWeight"]),
		fmt.Sprintf("Service/podinfo-canary:9898=%v", r["canaryWeight"]),
	}}
	if diff := cmp.Diff(want, routeWeights(route)); diff != "" {
		t.Errorf("the composed route must carry the weights of status.rollout: -want, +got:\n%s", diff)
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deepCopyMap(m map[string]any) map[string]any {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s.AsMap()
}
