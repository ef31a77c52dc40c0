package main

// The versions the function composes: the capabilities of the caller, the
// schemas Crossplane hands, the versions an earlier run recorded (and how
// far they are trusted), the Input's overrides; through Crossplane's
// requirements loop on clusters that serve different versions.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// experimentalCluster serves the Gateway API's experimental channel.
var experimentalCluster = servedCluster{
	"gateway.networking.k8s.io/v1/HTTPRoute":           {"matches", "backendRefs", "retry", "sessionPersistence"},
	"gateway.networking.k8s.io/v1/GRPCRoute":           {"matches", "backendRefs", "sessionPersistence"},
	"gateway.networking.k8s.io/v1/ReferenceGrant":      nil,
	"gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
	"gateway.networking.k8s.io/v1/BackendTLSPolicy":    nil,
}

func TestCapabilitiesAndServedVersions(t *testing.T) {
	caps := func(c ...fnv1.Capability) *fnv1.RequestMeta { return &fnv1.RequestMeta{Capabilities: c} }
	all := caps(fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES,
		fnv1.Capability_CAPABILITY_CONDITIONS, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS)
	schema := func(s string) *fnv1.Schema { return &fnv1.Schema{OpenapiV3: toStruct(t, s)} }
	type want struct {
		fatal   string   // a part of the Fatal's message; "" for none
		schemas []string // the schema requirements' names
		grant   string   // the composed grant's apiVersion
		route   string   // the composed route's apiVersion
		// versions is status.route.versions, as recorded.
		versions map[string]any
	}
	// The Flagger scenario's route and grant as observed, at a version.
	observedAt := func(route, grant string) map[string]string {
		return map[string]string{
			"route-httproute":           `{apiVersion: gateway.networking.k8s.io/` + route + `, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`,
			"referencegrant-monitoring": `{apiVersion: gateway.networking.k8s.io/` + grant + `, kind: ReferenceGrant, metadata: {name: httproute.podinfo.test, namespace: monitoring}}`,
		}
	}
	cases := map[string]struct {
		reason   string
		meta     *fnv1.RequestMeta
		xr       string
		observed map[string]string
		schemas  map[string]*fnv1.Schema
		want     want
	}{
		"NoCapabilities": {
			reason: "A caller that advertises no capabilities predates them: no schemas are asked for, and the defaults apply.",
			xr:     flaggerXR,
			want:   want{grant: "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1"},
		},
		"NoRequiredResources": {
			reason: "A caller that advertises its capabilities without required resources cannot answer the takeover check: a Fatal that says which capability is missing, never a silent skip.",
			meta:   caps(fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_CONDITIONS),
			xr:     flaggerXR,
			want:   want{fatal: "not CAPABILITY_REQUIRED_RESOURCES"},
		},
		"SchemasAsked": {
			reason: "Where the caller offers required schemas, the function asks for the XR's own and every version of each kind it composes; the first call, before any is handed, composes the defaults.",
			meta:   all,
			xr:     flaggerXR,
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"SchemasHanded": {
			reason: "With the schemas handed, the newest served versions are composed: ReferenceGrant v1.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": schema(`{type: object}`), "schema-httproute-v1": schema(`{type: object}`),
				"schema-referencegrant-v1": schema(`{type: object}`), "schema-referencegrant-v1beta1": schema(`{type: object}`),
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1", route: "gateway.networking.k8s.io/v1",
				versions: map[string]any{"route": "v1", "referenceGrant": "v1", "checkedAt": "2026-12-02T10:07:00Z"},
			},
		},
		"VersionsReused": {
			reason:   "status.route.versions read less than ten minutes ago are reused: no schema is asked for, so Crossplane neither fetches nor parses them on this reconcile, and the record stays as it was.",
			meta:     all,
			xr:       flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			observed: observedAt("v1", "v1"),
			want: want{
				grant: "gateway.networking.k8s.io/v1", route: "gateway.networking.k8s.io/v1",
				versions: map[string]any{"route": "v1", "referenceGrant": "v1", "checkedAt": "2026-12-02T10:00:00Z"},
			},
		},
		"VersionsNotBorneOut": {
			reason: "Recorded versions that the observed objects do not bear out (a forged status, or one the cluster no longer serves) are not reused: a version the cluster does not serve would make Crossplane fail every reconcile on the requirement at that version. The schemas are read again.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			// The grant the cluster holds is v1beta1: it serves no v1.
			observed: observedAt("v1", "v1beta1"),
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsBeforeTheGrant": {
			reason: "Nor where the run composes a grant that does not exist yet (a canary moved to another namespace): no grant bears out the recorded grant version.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			observed: map[string]string{
				"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}}`,
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsBeforeTheRoute": {
			reason: "Nor are they reused before the route exists: nothing bears them out yet.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T10:00:00Z\"}}\n",
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"VersionsStale": {
			reason: "Versions read ten minutes ago or more are read again: the schemas are asked for, and this first call composes the defaults.",
			meta:   all,
			xr:     flaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: {route: v1, referenceGrant: v1, checkedAt: \"2026-12-02T09:57:00Z\"}}\n",
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"NoSelfSchema": {
			reason: "crossplane render without --required-schemas answers every schema empty, the XR's own too: nothing can be concluded, and the defaults apply.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": {}, "schema-httproute-v1": {}, "schema-referencegrant-v1": {}, "schema-referencegrant-v1beta1": {},
			},
			want: want{
				schemas: []string{"schema-httproute-v1", "schema-referencegrant-v1", "schema-referencegrant-v1beta1", "schema-self"},
				grant:   "gateway.networking.k8s.io/v1beta1", route: "gateway.networking.k8s.io/v1",
			},
		},
		"KindNotServed": {
			reason: "A cluster that serves no HTTPRoute at all: a Fatal naming spec.kind.",
			meta:   all,
			xr:     flaggerXR,
			schemas: map[string]*fnv1.Schema{
				"schema-self": schema(`{type: object}`), "schema-httproute-v1": {},
				"schema-referencegrant-v1": schema(`{type: object}`), "schema-referencegrant-v1beta1": schema(`{type: object}`),
			},
			want: want{fatal: "spec.kind: Invalid value: \"HTTPRoute\": the cluster serves no HTTPRoute version"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := testRequest(t, tc.xr, allowMonitoring, tc.observed)
			req.Meta, req.RequiredSchemas = tc.meta, tc.schemas
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			got := want{fatal: fatalOf(rsp)}
			if tc.want.fatal != "" && strings.Contains(got.fatal, tc.want.fatal) {
				got.fatal = tc.want.fatal
			}
			for name := range rsp.GetRequirements().GetSchemas() {
				got.schemas = append(got.schemas, name)
			}
			slices.Sort(got.schemas)
			got.grant, _ = rsp.GetDesired().GetResources()["referencegrant-monitoring"].GetResource().AsMap()["apiVersion"].(string)
			got.route, _ = rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()["apiVersion"].(string)
			got.versions = recordedVersions(rsp)
			assertXRDAccepts(t, req, rsp)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// composedVersions lists the apiVersion of each composed object, by key.
func composedVersions(rsp *fnv1.RunFunctionResponse) map[string]string {
	out := map[string]string{}
	for k, r := range rsp.GetDesired().GetResources() {
		out[k], _ = r.GetResource().AsMap()["apiVersion"].(string)
	}
	return out
}

// recordedVersions is status.route.versions as the response desires it.
func recordedVersions(rsp *fnv1.RunFunctionResponse) map[string]any {
	st, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	route, _ := st["route"].(map[string]any)
	v, _ := route["versions"].(map[string]any)
	return v
}

// tlsFlaggerXR is the Flagger scenario (a grant in monitoring) with a
// BackendTLSPolicy on the primary's proxy Service.
var tlsFlaggerXR = strings.Replace(flaggerXR, "      selector: {app: podinfo}", "      selector: {app: podinfo}\n    tls: {hostname: podinfo.internal, wellKnownCACertificates: System}", 1)

// TestServedVersionsLoopSettles runs reconciles of a CanaryRoute that
// composes a route, a grant and a BackendTLSPolicy through the simulated
// Crossplane: each must settle within Crossplane's five iterations, give a
// byte-identical answer for the identical final request, compose only
// versions the cluster serves, and write a status.route.versions the XRD
// admits; across the ten-minute boundary (the clock moving between calls)
// too.
func TestServedVersionsLoopSettles(t *testing.T) {
	for name, tick := range map[string]time.Duration{"StillClock": 0, "MovingClock": 20 * time.Second} {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tlsFlaggerXR, allowMonitoring)
			s.served, s.tick = experimentalCluster, tick
			xrds := crdschema.XRDs(t, xrdFiles...)
			for i, step := range []time.Duration{time.Minute, 4 * time.Minute, 4*time.Minute + 50*time.Second, 9 * time.Second, 31 * time.Second, 10 * time.Minute, 0} {
				r := s.reconcile()
				if r.err != nil {
					t.Fatalf("reconcile %d at %s: %v", i, s.now.Format(time.TimeOnly), r.err)
				}
				if isFatal(r.rsp) {
					t.Fatalf("reconcile %d is Fatal: %v", i, r.rsp.GetResults())
				}
				// The identical request gives the identical answer.
				a, err := functionAt(r.at).RunFunction(context.Background(), proto.Clone(r.req).(*fnv1.RunFunctionRequest))
				if err != nil {
					t.Fatal(err)
				}
				ab, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a)
				rb, _ := proto.MarshalOptions{Deterministic: true}.Marshal(r.rsp)
				if !bytes.Equal(ab, rb) {
					t.Errorf("reconcile %d: the identical final request gives a different answer", i)
				}
				for k, v := range composedVersions(r.rsp) {
					kind, _ := r.rsp.GetDesired().GetResources()[k].GetResource().AsMap()["kind"].(string)
					if !experimentalCluster.serves(v, kind) {
						t.Errorf("reconcile %d composes %s %s, which the cluster does not serve", i, v, kind)
					}
				}
				x := r.req.GetObserved().GetComposite().GetResource().AsMap()
				if st, ok := r.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]; ok {
					x["status"] = st
					if errs := xrds.Validate(x); len(errs) > 0 {
						t.Errorf("reconcile %d: the XRD refuses the status: %v", i, errs)
					}
				}
				t.Logf("reconcile %d at %s: %d calls, versions %v, recorded %v", i, s.now.Format(time.TimeOnly), r.calls, composedVersions(r.rsp), recordedVersions(r.rsp))
				s.apply(r.rsp)
				s.now = s.now.Add(step)
			}
		})
	}
}

// candidateVersions are the versions the docs say the function composes
// ("Versions as the cluster serves them").
var candidateVersions = map[string][]string{
	"HTTPRoute": {"v1"}, "GRPCRoute": {"v1", "v1alpha2"}, "TLSRoute": {"v1", "v1alpha2"}, "TCPRoute": {"v1", "v1alpha2"},
	"UDPRoute": {"v1", "v1alpha2"}, "ReferenceGrant": {"v1", "v1beta1"}, "BackendTLSPolicy": {"v1"},
}

// outsideCandidates lists the Gateway API objects a response composes or
// asks for at a version the function never composes.
func outsideCandidates(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	check := func(what, apiVersion, kind string) {
		v, ok := strings.CutPrefix(apiVersion, "gateway.networking.k8s.io/")
		if ok && !slices.Contains(candidateVersions[kind], v) {
			out = append(out, fmt.Sprintf("%s: %s %s", what, apiVersion, kind))
		}
	}
	for k, r := range rsp.GetDesired().GetResources() {
		m := r.GetResource().AsMap()
		a, _ := m["apiVersion"].(string)
		kd, _ := m["kind"].(string)
		check("composed "+k, a, kd)
	}
	for k, sel := range rsp.GetRequirements().GetResources() {
		check("required "+k, sel.GetApiVersion(), sel.GetKind())
	}
	slices.Sort(out)
	return out
}

// TestForgedRecordedVersionsAreNotReused: status.route.versions is status,
// which anyone who may write the XR's status can forge within the XRD's
// limits (any string of up to 16 characters). Reused as it is, {route: v9,
// referenceGrant: v7} would compose a ReferenceGrant
// gateway.networking.k8s.io/v7 and ask Crossplane for the HTTPRoute at v9,
// whose fetch fails the whole reconcile. A recorded version that the
// function never composes for its kind is not reused: nothing outside the
// candidates is composed or asked for, and the reconcile settles.
func TestForgedRecordedVersionsAreNotReused(t *testing.T) {
	forged := map[string]string{
		"UnknownVersions":     `{route: v9, referenceGrant: v7, backendTLSPolicy: v1, checkedAt: "2026-12-02T10:05:00Z"}`,
		"HTTPRouteV1Alpha2":   `{route: v1alpha2, referenceGrant: v1, backendTLSPolicy: v1, checkedAt: "2026-12-02T10:05:00Z"}`,
		"BackendTLSPolicyOld": `{route: v1, referenceGrant: v1, backendTLSPolicy: v1alpha3, checkedAt: "2026-12-02T10:05:00Z"}`,
	}
	for name, versions := range forged {
		t.Run(name, func(t *testing.T) {
			x := tlsFlaggerXR + "status:\n  route: {kind: HTTPRoute, name: podinfo, namespace: test, versions: " + versions + "}\n"
			req := testRequest(t, x, allowMonitoring, nil)
			req.Meta = allCapabilities
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if bad := outsideCandidates(rsp); len(bad) > 0 {
				t.Errorf("forged status.route.versions %s are reused as they are: the run composes or asks for versions the function never composes:\n  %s\nrecorded again: %v",
					versions, strings.Join(bad, "\n  "), recordedVersions(rsp))
			}
			// Through Crossplane: the reconcile must not fail.
			s := newSim(t, x, allowMonitoring)
			s.now, s.served = testNow, experimentalCluster
			if r := s.reconcile(); r.err != nil {
				t.Errorf("with forged status.route.versions %s the reconcile fails: %v", versions, r.err)
			}
		})
	}
}

// TestOverriddenVersionsAreNotRecorded: a platform team that pinned
// grpcRouteVersion: v1alpha2 removes the pin on a cluster that serves
// GRPCRoute v1 and v1alpha2: the next reconcile composes v1, which the
// function chooses from the schemas, not the v1alpha2 of the override
// (versions an override chose are never recorded for reuse).
func TestOverriddenVersionsAreNotRecorded(t *testing.T) {
	grpcXR := strings.Replace(flaggerWith("  port: 9898", "  port: 9898\n  kind: GRPCRoute"), "    filters:\n      - type: RequestHeaderModifier\n        requestHeaderModifier:\n          add: [{name: X-Route, value: primary}]\n", "", 1)
	cluster := servedCluster{
		"gateway.networking.k8s.io/v1/GRPCRoute":           {"matches", "backendRefs"},
		"gateway.networking.k8s.io/v1alpha2/GRPCRoute":     {"matches", "backendRefs"},
		"gateway.networking.k8s.io/v1/ReferenceGrant":      nil,
		"gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
	}
	s := newSim(t, grpcXR, allowMonitoring+"grpcRouteVersion: v1alpha2\n")
	s.served = cluster
	r := s.reconcile()
	if r.err != nil || isFatal(r.rsp) {
		t.Fatalf("setup: %v %v", r.err, r.rsp.GetResults())
	}
	if v := composedVersions(r.rsp)["route-grpcroute"]; v != "gateway.networking.k8s.io/v1alpha2" {
		t.Fatalf("setup: the override composes %s", v)
	}
	s.apply(r.rsp)
	s.now = s.now.Add(time.Minute)
	s.input = allowMonitoring // the pin removed
	r = s.reconcile()
	if r.err != nil || isFatal(r.rsp) {
		t.Fatalf("%v %v", r.err, r.rsp.GetResults())
	}
	if v := composedVersions(r.rsp)["route-grpcroute"]; v != "gateway.networking.k8s.io/v1" {
		t.Errorf("with grpcRouteVersion removed from the Input, the run composes GRPCRoute %s as status.route.versions recorded it under the override (%v), not v1, which the function chooses from the schemas", v, recordedVersions(r.rsp))
	}
}

// TestBackendTLSNeedsSchemas: under a caller that advertises its
// capabilities but hands no CRD schemas (Crossplane v2.0 and v2.1), tls is a
// Fatal naming the field: the run would ask for a BackendTLSPolicy v1, and
// on a cluster that does not serve it Crossplane fails every reconcile on
// that request, an emergency abort's too. The abort of such a spec is
// rescued like any other.
func TestBackendTLSNeedsSchemas(t *testing.T) {
	v21 := &fnv1.RequestMeta{Capabilities: []fnv1.Capability{
		fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES, fnv1.Capability_CAPABILITY_CONDITIONS,
	}}
	withTLS := featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", "")
	cases := map[string]struct {
		reason   string
		xr       string
		observed map[string]string
		want     view
	}{
		"TLSRefused": {
			reason: "tls is a Fatal naming the field, which asks Crossplane for nothing, the BackendTLSPolicy least of all.",
			xr:     withTLS,
			want: view{
				Results: []string{"FATAL: the cluster cannot hold what the CanaryRoute composes: spec.primary.tls: Forbidden: a BackendTLSPolicy needs a caller that hands the function CRD schemas (CAPABILITY_REQUIRED_SCHEMAS, Crossplane v2.2 or later), so that it composes one only where the cluster serves BackendTLSPolicy v1 (Gateway API v1.4 or later); under an older Crossplane, remove tls and create the BackendTLSPolicy for the proxy Service yourself"},
				TTL:     time.Minute,
			},
		},
		"WithoutTLS": {
			reason: "Without tls the same caller composes as usual.",
			xr:     featureXR("HTTPRoute", "", "", "", ""),
			want: view{
				Conditions:   []string{"RouteAccepted=False Pending: the route has not been created yet", "ReferenceGrantsReady=True Ready: no backend in another namespace needs a ReferenceGrant", "RolloutHealthy=True Stable: Stable: canary 20%, primary 80%"},
				Resources:    []string{"route-httproute", "service-canary", "service-primary"},
				Ready:        map[string]string{"route-httproute": "READY_FALSE", "service-canary": "READY_FALSE", "service-primary": "READY_FALSE"},
				Weights:      [][]string{{"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=20"}},
				Rollout:      map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryDigest": "set", "canaryWeight": float64(20), "phase": "Stable", "primaryWeight": float64(80), "reason": "Manual", "revision": "v2"},
				TTL:          time.Minute,
				Requirements: []string{"existing-route-httproute: gateway.networking.k8s.io/v1 HTTPRoute test/podinfo", "existing-service-canary: v1 Service test/podinfo-canary", "existing-service-primary: v1 Service test/podinfo-primary"},
			},
		},
		"AbortRescued": {
			reason: "The abort of a CanaryRoute with tls is rescued: the route as last observed, the canary at 0, nothing asked of Crossplane.",
			xr: strings.Replace(withTLS, "  traffic: {weight: 20}", "  traffic: {weight: 20, abort: true}", 1) +
				recordedCanaryStatus(`{group: "", kind: Service, namespace: test, name: podinfo-canary, port: 9898}`),
			observed: map[string]string{"route-httproute": routeAt(
				`{group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}`,
				`{group: "", kind: Service, name: podinfo-canary, port: 9898, weight: 20}`)},
			want: view{
				Results:    []string{"WARNING RolloutAborted: spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: the cluster cannot hold what the CanaryRoute composes: spec.primary.tls: Forbidden: a BackendTLSPolicy needs a caller that hands the function CRD schemas (CAPABILITY_REQUIRED_SCHEMAS, Crossplane v2.2 or later), so that it composes one only where the cluster serves BackendTLSPolicy v1 (Gateway API v1.4 or later); under an older Crossplane, remove tls and create the BackendTLSPolicy for the proxy Service yourself"},
				Conditions: []string{"RolloutHealthy=False Aborted: aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"},
				Resources:  []string{"route-httproute"},
				Ready:      map[string]string{"route-httproute": "READY_FALSE"},
				Weights:    [][]string{{"Service/podinfo-primary:9898=80", "Service/podinfo-canary:9898=0"}},
				Rollout:    map[string]any{"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": float64(9898)}}, "canaryWeight": float64(0), "message": "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed", "phase": "Aborted", "primaryWeight": float64(100), "reason": "AbortRescued"},
				TTL:        time.Minute,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := testRequest(t, tc.xr, allowTest, tc.observed)
			req.Meta = v21
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, viewOf(t, rsp)); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want, +got:\n%s", tc.reason, diff)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// TestServedVersionsReachedOnClustersThatNeedThem: docs/reference.md,
// "Versions as the cluster serves them": on a cluster that serves TCPRoute
// v1alpha2 only (Gateway API before v1.6, example/served-versions) the
// function composes v1alpha2 with no Input switch; a cluster that serves no
// BackendTLSPolicy, no ReferenceGrant or no Gateway API at all gets a
// Fatal naming spec.<side>.tls, spec.referenceGrants or spec.kind.
// Crossplane fetches required resources before schemas, and a kind the
// cluster does not serve at that version fails the reconcile ("no matches
// for kind", crossplane v2.2.0 internal/xfn/required_resources.go): the
// first call, which has no schemas yet, asks for the schemas alone, never
// for objects at the default versions. crossplane render would hide it: its
// fetcher only filters the files it is given.
func TestServedVersionsReachedOnClustersThatNeedThem(t *testing.T) {
	tcpXR := featureXR("TCPRoute", "", "", "", "")
	cases := map[string]struct {
		xr      string
		cluster servedCluster
		want    string // the composed route's apiVersion, or a part of the Fatal
	}{
		"TCPRouteV1Alpha2Only": {tcpXR, servedCluster{
			"gateway.networking.k8s.io/v1alpha2/TCPRoute": {"backendRefs"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "gateway.networking.k8s.io/v1alpha2"},
		"GRPCRouteV1Alpha2Only": {featureXR("GRPCRoute", "", "", "", ""), servedCluster{
			"gateway.networking.k8s.io/v1alpha2/GRPCRoute": {"matches"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "gateway.networking.k8s.io/v1alpha2"},
		"NoBackendTLSPolicy": {featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), servedCluster{
			"gateway.networking.k8s.io/v1/HTTPRoute": {"matches"}, "gateway.networking.k8s.io/v1beta1/ReferenceGrant": nil,
		}, "spec.primary.tls"},
		"NoReferenceGrant": {flaggerXR, servedCluster{
			"gateway.networking.k8s.io/v1/HTTPRoute": {"matches"},
		}, "spec.referenceGrants"},
		"NoGatewayAPI": {flaggerXR, servedCluster{}, "spec.kind"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, tc.xr, allowMonitoring)
			s.served = tc.cluster
			r := s.reconcile()
			if r.err != nil {
				t.Fatalf("the reconcile fails after %d call(s) instead of %s: %v", r.calls, tc.want, r.err)
			}
			if strings.HasPrefix(tc.want, "spec.") {
				if !isFatal(r.rsp) || !strings.Contains(fmt.Sprint(r.rsp.GetResults()), tc.want) {
					t.Errorf("want a Fatal naming %s, got %v", tc.want, r.rsp.GetResults())
				}
				return
			}
			if isFatal(r.rsp) {
				t.Fatalf("want a route at %s, got a Fatal: %s", tc.want, fatalOf(r.rsp))
			}
			routes := 0
			for k, v := range composedVersions(r.rsp) {
				if !strings.HasPrefix(k, "route-") {
					continue
				}
				routes++
				if v != tc.want {
					t.Errorf("%s composed at %s, want %s", k, v, tc.want)
				}
			}
			if routes != 1 {
				t.Errorf("%d routes composed, want one at %s", routes, tc.want)
			}
		})
	}
}
