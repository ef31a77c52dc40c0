package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

// abortedFlagger is the Flagger scenario with abort set and a canary that the
// Input no longer allows (an ExternalName without allowExternalNames): a
// spec that cannot be composed.
var abortedFlagger = strings.Replace(flaggerWith("    backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}", "    externalName: canary.example.net"),
	"    weight: 20", "    weight: 20\n    abort: true", 1)

// observedPrimary and observedGrant are the Flagger scenario's Service and
// grant as the API server returns them.
const (
	observedPrimary = `{apiVersion: v1, kind: Service, metadata: {name: podinfo-primary, namespace: test, uid: 6a1c7e0e-1b2f-4c55-9a7e-0c1d2e3f4a5b, labels: {crossplane.io/composite: podinfo}}, spec: {type: ClusterIP, clusterIP: 10.0.0.7, sessionAffinity: None, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}, status: {loadBalancer: {}}}`
	observedGrant   = `{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}}`
)

func TestRescueAbort(t *testing.T) {
	type args struct {
		xr       string
		observed map[string]string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"RescuesTheLastRoute": {
			reason: "With abort set, a spec that cannot be composed still sends the canary to 0%: the route as last observed, the recorded canary backend at 0, the A/B rule and the mirror to the canary removed, the other objects kept as composed (identity and spec, nothing the API server added); a Warning says why, RolloutHealthy is False with reason Aborted, the other conditions are re-sent.",
			args: args{
				xr: abortedFlagger + recordedCanary,
				observed: map[string]string{
					"route-httproute":           ownRoute("crossplane.io/composite: podinfo", 80, 20),
					"service-primary":           observedPrimary,
					"referencegrant-monitoring": observedGrant,
				},
			},
			want: `
meta: {ttl: 60s}
desired:
  composite:
    resource:
      status:
        rollout:
          phase: Aborted
          reason: Aborted
          canaryWeight: 0
          primaryWeight: 100
          canaryBackends: [{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}]
          message: "` + msgRescuedAbort + `"
  resources:
    route-httproute:
      ready: READY_FALSE
      resource:
        apiVersion: gateway.networking.k8s.io/v1
        kind: HTTPRoute
        metadata: {name: podinfo, namespace: test}
        spec:
          parentRefs: [{name: gateway, namespace: istio-ingress}]
          rules:
            - matches: [{path: {type: PathPrefix, value: /}}]
              backendRefs:
                - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}
                - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}
    service-primary:
      ready: READY_TRUE
      resource:
        apiVersion: v1
        kind: Service
        metadata: {name: podinfo-primary, namespace: test}
        spec: {type: ClusterIP, selector: {app: podinfo}, ports: [{name: http, port: 9898, targetPort: 9898, protocol: TCP}]}
    referencegrant-monitoring:
      ready: READY_TRUE
      resource:
        apiVersion: gateway.networking.k8s.io/v1beta1
        kind: ReferenceGrant
        metadata: {name: httproute.podinfo.test, namespace: monitoring}
        spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: test}], to: [{group: "", kind: Service, name: canary-proxy}]}
results:
  - severity: SEVERITY_WARNING
    reason: Aborted
    target: TARGET_COMPOSITE_AND_CLAIM
    message: "spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"
conditions:
  - {type: ReferenceGrantsReady, status: STATUS_CONDITION_TRUE, reason: Ready, message: composed, target: TARGET_COMPOSITE_AND_CLAIM}
  - {type: RolloutHealthy, status: STATUS_CONDITION_FALSE, reason: Aborted, message: "` + msgRescuedAbort + `", target: TARGET_COMPOSITE_AND_CLAIM}
`,
		},
		"WithoutRecordedCanaryIsFatal": {
			reason: "Without status.rollout.canaryBackends the function cannot tell the canary's backends from the primary's, and never guesses by name: the Fatal stands, and Crossplane applies nothing.",
			args: args{
				xr:       abortedFlagger,
				observed: map[string]string{"route-httproute": ownRoute("crossplane.io/composite: podinfo", 80, 20)},
			},
			want: `
meta: {ttl: 60s}
results:
  - severity: SEVERITY_FATAL
    target: TARGET_COMPOSITE
    message: "CanaryRoute not allowed by the function's Input: spec.canary.externalName: Forbidden: the function's Input does not set allowExternalNames: ExternalName Services are refused by many gateways (CVE-2021-25740)"
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return testNow })}
			req := testRequest(t, tc.args.xr, allowMonitoring, tc.args.observed)
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(responseYAML(t, tc.want), rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}
