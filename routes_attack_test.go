package main

// Attacks on spec.routes at its seams with the single-route contract: the
// versions each route records and reuses, hostile statuses, holds, the
// rescue, grants and warnings, the XRD's limits. Each test's reason says
// what it attacks ("Attack: ...").

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRoutesReuseRecordedVersions: Attack: status.routes[].versions is
// written on every run so that the runs after it reuse each route's
// versions for ten minutes, as status.route's are; a run that never reads
// status.routes back asks Crossplane for every schema on every reconcile.
func TestRoutesReuseRecordedVersions(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     string
	}{
		"Shorthand": {
			reason: "The shorthand's status.route.versions is reused: no schema is asked for on the second reconcile.",
			xr: namespacedXR(`
  parentRefs: [{name: public, namespace: infra}]
  port: 9898
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary: {service: {selector: {app: podinfo, version: v2}}, revision: v2}
  traffic: {weight: 10}`),
		},
		"Routes": {
			reason: "Each route's status.routes[].versions is reused as status.route's is: no schema is asked for on the second reconcile.",
			xr:     routesXR(webAndGRPC, "    weight: 10"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tc.xr, emptyInput)
			s.served = experimentalCluster
			r := s.reconcile()
			if r.err != nil || isFatal(r.rsp) {
				t.Fatalf("setup: %v %v", r.err, r.rsp.GetResults())
			}
			s.apply(r.rsp)
			s.now = s.now.Add(time.Minute)
			r = s.reconcile()
			if r.err != nil || isFatal(r.rsp) {
				t.Fatalf("%v %v", r.err, r.rsp.GetResults())
			}
			// The shorthand's second reconcile: the call that asks for the
			// composed objects, and the one that reads them; no schema.
			if r.calls != 2 || len(r.req.GetRequiredSchemas()) > 0 {
				t.Errorf("%s\nthe second reconcile took %d calls and %d schemas, want 2 calls and none", tc.reason, r.calls, len(r.req.GetRequiredSchemas()))
			}
		})
	}
}

var _ = cmp.Diff
var _ = strings.Contains
