package scale

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		res    Result
		want   []string
	}{
		"Clean": {
			reason: "A run without problems is not wrong.",
			res:    Result{},
		},
		"MovedBack": {
			reason: "A weight that went back is the defect the run looks for.",
			res:    Result{RouteBack: 1, BackExamples: []string{"app-0001: 10 50 10"}},
			want:   []string{"rollouts moved back: 0 status writes a step back, 1 route versions a weight back, 0 route versions gave an aborted canary weight again; for example [app-0001: 10 50 10]"},
		},
		"TransientControlPlaneErrors": {
			reason: "An overloaded API server's timeouts and conflicts are Crossplane's to retry, not the function's defects.",
			res: Result{Problems: []string{
				`Synced False: ReconcileError: cannot compose resources: cannot apply composed resource "route-httproute": Timeout: request did not complete within requested timeout - context deadline exceeded (3x)`,
				`Warning event ComposeResources on CanaryRoute: cannot update status: Operation cannot be fulfilled on canaryroutes.platform.example.org "scale-0001": the object has been modified; please apply your changes to the latest version and try again (1x)`,
				`cannot abort a CanaryRoute: the server was unable to return a response in the time allotted, but may still be processing the request (1x)`,
			}},
		},
		"ServiceWarnings": {
			reason: "The ClusterIP repair loop's warnings on Services are the API server's.",
			res:    Result{Problems: []string{"Warning event ClusterIPNotAllocated on Service: Cluster IP [IPv4]:10.0.0.1 is not allocated; repairing (2x)"}},
		},
		"NotTheControlPlanes": {
			reason: "A timeout is the control plane's only in what Crossplane reports of its requests: the harness's failed read, a rollout's message and a pipeline step that ran out of time fail the run.",
			res: Result{Problems: []string{
				"cannot list the routes: dial tcp 127.0.0.1:6443: i/o timeout (1x)",
				"rollout Failed: metric error-rate: query failed: context deadline exceeded (1x)",
				`Synced False: ReconcileError: cannot compose resources: cannot run Composition pipeline step "canary-route": rpc error: code = DeadlineExceeded desc = context deadline exceeded (1x)`,
			}},
			want: []string{
				"cannot list the routes: dial tcp 127.0.0.1:6443: i/o timeout (1x)",
				"rollout Failed: metric error-rate: query failed: context deadline exceeded (1x)",
				`Synced False: ReconcileError: cannot compose resources: cannot run Composition pipeline step "canary-route": rpc error: code = DeadlineExceeded desc = context deadline exceeded (1x)`,
			},
		},
		"FunctionProblems": {
			reason: "A Fatal, a failed rollout or a route left at the wrong weight fails the run.",
			res: Result{Problems: []string{
				"Synced False: ReconcileError: cannot compose resources: pipeline step \"canary-route\" returned a fatal result: spec.traffic.steps[0].weight: Invalid value (1x)",
				"a route carries 50% for its canary at the end, not 100% (1x)",
			}},
			want: []string{
				"Synced False: ReconcileError: cannot compose resources: pipeline step \"canary-route\" returned a fatal result: spec.traffic.steps[0].weight: Invalid value (1x)",
				"a route carries 50% for its canary at the end, not 100% (1x)",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.res.Errors()); diff != "" {
				t.Errorf("%s\nErrors(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
