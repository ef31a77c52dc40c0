package compose

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// rescueRoute is the Flagger scenario's route as the API server returns it
// after a good run at 80/20: an A/B rule to the canary, and a mirror to it
// on the weighted rule. No parent has reported on it.
const rescueRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: 2, labels: {crossplane.io/composite: podinfo}}
spec:
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  rules:
    - matches: [{headers: [{name: X-Beta, value: "yes"}]}]
      backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}]
    - matches: [{path: {type: PathPrefix, value: /}}]
      filters:
        - type: RequestMirror
          requestMirror: {backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}, percent: 10}
      backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}
`

// The Flagger scenario's canary, and its primary's proxy Service, as a
// status records them.
var (
	canaryID  = xr.BackendID{Kind: "Service", Namespace: "monitoring", Name: "canary-proxy", Port: ptr.To[int32](3456)}
	primaryID = xr.BackendID{Kind: "Service", Namespace: "test", Name: "podinfo-primary", Port: ptr.To[int32](9898)}
)

// A rescued is what a test reads of a Rescue: the objects by key ("Kind
// namespace/name" and whether ready), the route's rules ("name=weight" per
// backend, "mirror" per mirror), the status, what it says.
type rescued struct {
	Applied bool
	Objects map[names.Key]string
	Rules   [][]string
	Status  xr.RolloutStatus
	Warning *Warning
	Healthy xr.Condition
}

func rescuedOf(t *testing.T, r Rescue) rescued {
	t.Helper()
	out := rescued{Applied: r.Applied, Status: r.Status, Warning: r.Warning, Healthy: r.Healthy}
	for _, o := range r.Objects {
		m, ok := o.Object.(metav1.Object)
		if !ok {
			t.Fatalf("the rescued %s is a %T", o.Key, o.Object)
		}
		if out.Objects == nil {
			out.Objects = map[names.Key]string{}
		}
		out.Objects[o.Key] = fmt.Sprintf("%s %s/%s ready=%t", o.Object.GetObjectKind().GroupVersionKind().Kind, m.GetNamespace(), m.GetName(), o.Ready)
		if route, ok := o.Object.(*gwv1.HTTPRoute); ok {
			for _, rule := range route.Spec.Rules {
				var parts []string
				for _, f := range rule.Filters {
					if f.Type == gwv1.HTTPRouteFilterRequestMirror {
						parts = append(parts, "mirror")
					}
				}
				for _, b := range rule.BackendRefs {
					parts = append(parts, fmt.Sprintf("%s=%d", b.Name, ptr.Deref(b.Weight, 1)))
				}
				out.Rules = append(out.Rules, parts)
			}
		}
	}
	return out
}

func TestRescueAbort(t *testing.T) {
	cause := errors.New("invalid CanaryRoute: spec.traffic.weight: Invalid value: 120")
	abort := set("spec.traffic.abort", "true")
	recorded := func(ids ...string) patch {
		return set("status.rollout", `{phase: Stable, reason: Manual, canaryWeight: 20, primaryWeight: 80, canaryDigest: d1, canaryBackends: [`+strings.Join(ids, ", ")+`]}`)
	}
	const canary = `{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 3456}`
	const primary = `{group: "", kind: Service, namespace: test, name: podinfo-primary, port: 9898}`
	// rescuedStatus is the status of a rescue that zeroed the canary
	// backends given, from the status recorded(...) wrote.
	rescuedStatus := func(canary ...xr.BackendID) xr.RolloutStatus {
		return xr.RolloutStatus{
			Phase: xr.PhaseAborted, Reason: rollout.ReasonAbortRescued, CanaryWeight: percent.Int(0), PrimaryWeight: percent.Int(100),
			CanaryDigest: "d1", CanaryBackends: canary, Message: MsgRescuedAbort,
		}
	}
	aborted := xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: rollout.ReasonAborted, Message: MsgRescuedAbort}
	warned := &Warning{rollout.EventAborted, "spec.traffic.abort is set: the canary is held at 0% in the last composed route, although the CanaryRoute cannot be composed: " + cause.Error()}
	notApplied := func(why string) (*Warning, xr.Condition) {
		msg := "spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names " + why +
			". Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand"
		return &Warning{"AbortNotApplied", msg}, xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: "AbortNotApplied", Message: msg}
	}
	// refused is a rescue that is not applied, saying why.
	refused := func(why string, warn bool) rescued {
		w, c := notApplied(why)
		if !warn {
			w = nil
		}
		return rescued{Warning: w, Healthy: c}
	}
	// zeroed are the rules of rescueRoute once the canary is cut: the A/B
	// rule and the mirror gone, the canary at 0, the primary as it was.
	zeroed := [][]string{{"podinfo-primary=80", "canary-proxy=0"}}
	flaggerObjects := map[names.Key]string{
		"route-httproute":           "HTTPRoute test/podinfo ready=false",
		"service-primary":           "Service test/podinfo-primary ready=true",
		"referencegrant-monitoring": "ReferenceGrant monitoring/httproute.podinfo.test ready=true",
	}
	observedAll := map[names.Key]string{
		"route-httproute":           rescueRoute,
		"service-primary":           observedService,
		"referencegrant-monitoring": observedGrantV1Beta1,
	}
	type want struct {
		ok      bool
		rescued rescued
	}
	cases := map[string]struct {
		reason   string
		patches  []patch
		observed map[names.Key]string
		want     want
	}{
		"NoAbort": {
			reason:   "Without spec.traffic.abort there is nothing to rescue: the Fatal stands.",
			patches:  []patch{recorded(canary)},
			observed: observedAll,
			want:     want{},
		},
		"NoRecord": {
			reason:   "Without status.rollout.canaryBackends the canary is never guessed by name.",
			patches:  []patch{abort},
			observed: observedAll,
			want:     want{},
		},
		"NoRoute": {
			reason:   "Without a route observed, nothing sends traffic to the canary: there is nothing to rescue, and the Fatal stands alone.",
			patches:  []patch{abort, recorded(canary)},
			observed: map[names.Key]string{"service-primary": observedService},
			want:     want{},
		},
		"RouteDoesNotDecode": {
			reason:   "A route that does not decode cannot be re-emitted: the rescue gives up, and the Fatal stands.",
			patches:  []patch{abort, recorded(canary)},
			observed: map[names.Key]string{"route-httproute": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: "x"}}`},
			want:     want{},
		},
		"Rescued": {
			reason:   "The route as last observed with the canary at 0, its A/B rule and mirror removed; the Service and the grant as composed, ready since they exist; the route ready as its parents say; the status Aborted, AbortRescued; a Warning with the cause.",
			patches:  []patch{abort, recorded(canary)},
			observed: observedAll,
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: flaggerObjects, Rules: zeroed,
				Status: rescuedStatus(canaryID), Warning: warned, Healthy: aborted,
			}},
		},
		"AcceptedRouteIsReady": {
			reason:  "A rescued route that every parent accepted at its generation is ready.",
			patches: []patch{abort, recorded(canary)},
			observed: map[names.Key]string{"route-httproute": rescueRoute + `
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "True", reason: Accepted, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
        - {type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: 2, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
`},
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: map[names.Key]string{"route-httproute": "HTTPRoute test/podinfo ready=true"}, Rules: zeroed,
				Status: rescuedStatus(canaryID), Warning: warned, Healthy: aborted,
			}},
		},
		"WarnsOnce": {
			reason:   "A status that says the rescue already happened: the same rescue, without a Warning, which would spend the XR's event budget on every reconcile.",
			patches:  []patch{abort, set("status.rollout", `{phase: Aborted, reason: AbortRescued, canaryWeight: 0, primaryWeight: 100, canaryDigest: d1, canaryBackends: [`+canary+`]}`)},
			observed: observedAll,
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: flaggerObjects, Rules: zeroed,
				Status: rescuedStatus(canaryID), Healthy: aborted,
			}},
		},
		"OtherKeysLeftAlone": {
			reason:  "Observed objects under keys the function does not compose on every run (another function's, an analysis object) are not re-emitted.",
			patches: []patch{abort, recorded(canary)},
			observed: map[names.Key]string{
				"route-httproute": rescueRoute,
				"analysis-smoke":  `{apiVersion: batch/v1, kind: Job, metadata: {name: podinfo-v2-0-smoke, namespace: test}}`,
				"dashboard":       `{apiVersion: v1, kind: ConfigMap, metadata: {name: dashboard, namespace: test}}`,
			},
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: map[names.Key]string{"route-httproute": "HTTPRoute test/podinfo ready=false"}, Rules: zeroed,
				Status: rescuedStatus(canaryID), Warning: warned, Healthy: aborted,
			}},
		},
		"PreviewEnds": {
			reason:  "An abort ends the preview route, which sends the canary every request of its hostnames: the rescue does not re-emit it (so Crossplane deletes it), and rescues the route as without one.",
			patches: []patch{abort, recorded(canary)},
			observed: map[names.Key]string{
				"route-httproute":           rescueRoute,
				"service-primary":           observedService,
				"referencegrant-monitoring": observedGrantV1Beta1,
				"route-httproute-preview": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo-preview, namespace: test, labels: {crossplane.io/composite: podinfo}},
				  spec: {parentRefs: [{name: gateway, namespace: istio-ingress}], hostnames: [preview.example.com], rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456, weight: 100}]}]}}`,
			},
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: flaggerObjects, Rules: zeroed,
				Status: rescuedStatus(canaryID), Warning: warned, Healthy: aborted,
			}},
		},
		"PreviewAlone": {
			reason:   "A preview route is no route to rescue: without the route, nothing is composed, and the Fatal stands (Crossplane applies nothing).",
			patches:  []patch{abort, recorded(canary)},
			observed: map[names.Key]string{"route-httproute-preview": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo-preview, namespace: test}, spec: {rules: [{backendRefs: [{name: canary-proxy, namespace: monitoring, port: 3456}]}]}}`},
			want:     want{},
		},
		"LenientStatus": {
			reason:   "A status.rollout that does not decode (a step that is no number) still gives its canaryBackends: the rescue reads what it can, and the rest of the status starts afresh.",
			patches:  []patch{abort, set("status.rollout", `{step: x, canaryBackends: [`+canary+`]}`)},
			observed: observedAll,
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: flaggerObjects, Rules: zeroed,
				Status: xr.RolloutStatus{
					Phase: xr.PhaseAborted, Reason: rollout.ReasonAbortRescued, PrimaryWeight: percent.Int(100),
					CanaryBackends: []xr.BackendID{canaryID}, Message: MsgRescuedAbort,
				},
				Warning: warned, Healthy: aborted,
			}},
		},
		"RecordTrimmedToTheCanary": {
			reason:   "Attack: a record that names the primary's proxy Service beside the canary: only the canary is zeroed and recorded.",
			patches:  []patch{abort, recorded(primary, canary)},
			observed: observedAll,
			want: want{ok: true, rescued: rescued{
				Applied: true, Objects: flaggerObjects, Rules: zeroed,
				Status: rescuedStatus(canaryID), Warning: warned, Healthy: aborted,
			}},
		},
		"RecordNamesTheObservedPrimary": {
			reason:   "Attack: a record that names the primary's proxy Service (service-primary, as observed) is not trusted: nothing is composed, and the Warning says why.",
			patches:  []patch{abort, recorded(primary)},
			observed: observedAll,
			want:     want{ok: true, rescued: refused("Service test/podinfo-primary, which carries the primary's traffic", true)},
		},
		"NotAppliedWarnsOnce": {
			reason:   "The conditions say that an earlier run already warned that the abort is not applied: no Warning again.",
			patches:  []patch{abort, recorded(primary), set("status.conditions", `[{type: RolloutHealthy, status: "False", reason: AbortNotApplied, message: earlier}]`)},
			observed: observedAll,
			want:     want{ok: true, rescued: refused("Service test/podinfo-primary, which carries the primary's traffic", false)},
		},
		"RecordNamesTheSpecsPrimary": {
			reason: "Attack: a record that names the spec's primary backendRef, with Gateway API's defaults applied (core group, kind Service, the route's namespace), is not trusted either.",
			patches: []patch{
				abort, del("spec.primary.service"), set("spec.primary.backendRef", `{name: podinfo-stable, port: 9898}`),
				recorded(`{group: "", kind: Service, namespace: test, name: podinfo-stable}`),
			},
			observed: map[names.Key]string{"route-httproute": rescueRoute},
			want:     want{ok: true, rescued: refused("Service test/podinfo-stable, which carries the primary's traffic", true)},
		},
		"RecordNamesTheSpecsPrimaryProxy": {
			reason: "Attack: a record that names the proxy Service the spec's service side gets (named after spec.routeName), before it is observed, is not trusted either.",
			patches: []patch{
				abort, set("spec.routeName", "web"),
				recorded(`{group: "", kind: Service, namespace: test, name: web-primary}`),
			},
			observed: map[names.Key]string{"route-httproute": rescueRoute},
			want:     want{ok: true, rescued: refused("Service test/web-primary, which carries the primary's traffic", true)},
		},
		"RecordNotBesideThePrimary": {
			reason:   "Attack: a record that names a backend no rule weighs against the primary (the canary of the A/B rule only, on another port) is not trusted: zeroing it would change nothing the status claims.",
			patches:  []patch{abort, recorded(`{group: "", kind: Service, namespace: monitoring, name: canary-proxy, port: 1}`)},
			observed: observedAll,
			want:     want{ok: true, rescued: refused("Service monitoring/canary-proxy, which no rule of the route holds beside the primary's backend", true)},
		},
		"SpecRulesNoList": {
			reason:   "spec.rules that is no list says nothing of which rules are weighted: the record cannot be borne out.",
			patches:  []patch{abort, set("spec.rules", `"x"`), recorded(canary)},
			observed: observedAll,
			want:     want{ok: true, rescued: refused("Service monitoring/canary-proxy, but spec.rules is no list, so the route's weighted rules cannot be told from rules of their own", true)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			composite := object(t, baseXR)
			for _, p := range tc.patches {
				p(t, composite)
			}
			observed := make(map[names.Key]map[string]any, len(tc.observed))
			for k, y := range tc.observed {
				observed[k] = object(t, y)
			}
			r, ok := RescueAbort(composite, observed, cause, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
			got := want{ok: ok}
			if ok {
				got.rescued = rescuedOf(t, r)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRescueAbort(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDescribeBackends(t *testing.T) {
	cases := map[string]struct {
		reason string
		ids    []xr.BackendID
		want   string
	}{
		"None":    {reason: "No backends, no words.", want: ""},
		"Service": {reason: "A Service reads as Service namespace/name, without its port.", ids: []xr.BackendID{primaryID}, want: "Service test/podinfo-primary"},
		"OtherGroup": {
			reason: "A kind of another group names its group.",
			ids:    []xr.BackendID{primaryID, {Group: "gateway.envoyproxy.io", Kind: "Backend", Namespace: "test", Name: "cdn"}},
			want:   "Service test/podinfo-primary, Backend.gateway.envoyproxy.io test/cdn",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DescribeBackends(tc.ids)); diff != "" {
				t.Errorf("%s\nDescribeBackends(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRescuedRecord(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const release = `{stable: {revision: "6.7.0", since: "2026-12-02T09:30:00Z"}, retiring: {revision: "6.6.0", at: %q}}`
	primary := map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "podinfo", "version": "6.7.0"}}}
	cases := map[string]struct {
		reason    string
		retiresAt string
		want      map[string]int32
	}{
		"RetiringBeforeItsTime": {
			reason:    "A rescue retires nothing early: the retiring revision keeps its replicas until its time.",
			retiresAt: "2026-12-02T10:00:30Z",
			want:      map[string]int32{"6.6.0": 4, "6.7.0": 4, "6.7.1": 0},
		},
		"RetiredPastItsTime": {
			reason:    "A rescue never brings a retired revision back: past its time it gets none.",
			retiresAt: "2026-12-02T09:30:30Z",
			want:      map[string]int32{"6.6.0": 0, "6.7.0": 4, "6.7.1": 0},
		},
		"RetiringAtItsTime": {
			reason:    "At its time exactly, the retiring revision gets none, as on any run.",
			retiresAt: "2026-12-02T10:00:00Z",
			want:      map[string]int32{"6.6.0": 0, "6.7.0": 4, "6.7.1": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			composite := map[string]any{}
			set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, replicas: 4, workload: {name: "podinfo-{{revision}}"}}`)(t, composite)
			set("spec.canary.revision", `"6.7.1"`)(t, composite)
			set("status.release", fmt.Sprintf(release, tc.retiresAt))(t, composite)
			xrp := fieldpath.Pave(composite)
			rs := lenientRelease(xrp)
			if rs == nil || rs.Retiring == nil {
				t.Fatalf("%s\nlenientRelease(...): status.release not read", tc.reason)
			}
			rec := rescuedRecord(xrp, xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "6.7.1"}, rs, primary, now)
			if diff := cmp.Diff(tc.want, rec.Replicas); diff != "" {
				t.Errorf("%s\nrescuedRecord(...).Replicas: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRescuedReleaseHostileEdits attacks what a rescued abort writes of a
// release: status.release written back as read, and the record the
// pipeline's next step composes the workloads from.
func TestRescuedReleaseHostileEdits(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 7, 0, 0, time.UTC)
	primary := map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "podinfo", "version": "6.7.0"}}}
	history := func(n int) string {
		entries := make([]string, 0, n)
		entries = append(entries, `{revision: "6.6.0", digest: d6, succeededAt: "2026-12-02T10:06:40Z"}`, `{revision: "6.5.0", digest: d5, succeededAt: "2026-12-02T09:00:00Z"}`)
		for i := len(entries); i < n; i++ {
			entries = append(entries, fmt.Sprintf(`{revision: "6.%d.0", digest: d%d, succeededAt: "2026-12-01T09:00:00Z"}`, 4-i+2, i))
		}
		return "[" + strings.Join(entries, ", ") + "]"
	}
	const releaseFmt = `{stable: {revision: "6.7.0", digest: d7, since: "2026-12-02T10:06:50Z"}, history: %s, retiring: {revision: "6.6.0", at: "2026-12-02T10:07:20Z"}}`
	type want struct {
		replicas map[string]int32
		history  int
	}
	cases := map[string]struct {
		reason  string
		release string
		want    want
	}{
		"SecondRetireeKeepsItsReplicas": {
			reason:  "A rescue retires nothing early: 6.5.0, retired by the promotion before the last one at 10:06:40, keeps its replicas until 10:07:10 as release.retirements keeps them on a composing run (history dates it), not leave the record (its Deployment deleted).",
			release: fmt.Sprintf(releaseFmt, history(2)),
			want:    want{replicas: map[string]int32{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 0}, history: 2},
		},
		"WrittenBackBounded": {
			reason:  "status.release is written back as the XRD admits it (release.Decide bounds it: at most maxHistory entries), not as read: a status that an older XRD admitted, read back, is not a reason for Crossplane to fail applying the rescue.",
			release: fmt.Sprintf(releaseFmt, history(maxHistoryForTest()+1)),
			// Only the history is asked of this case.
			want: want{history: maxHistoryForTest()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			composite := map[string]any{}
			set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, replicas: 4, scaleDownDelay: 30s, workload: {name: "podinfo-{{revision}}"}}`)(t, composite)
			set("spec.canary.revision", `"6.7.1"`)(t, composite)
			set("status.release", tc.release)(t, composite)
			xrp := fieldpath.Pave(composite)
			rs := lenientRelease(xrp)
			if rs == nil {
				t.Fatalf("%s\nlenientRelease(...): status.release not read", tc.reason)
			}
			rec := rescuedRecord(xrp, xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "6.7.1"}, rs, primary, now)
			got := want{replicas: rec.Replicas, history: len(rs.History)}
			if tc.want.replicas == nil {
				got.replicas = nil
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nrescuedRecord(...), lenientRelease(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// maxHistoryForTest is the XRD's maxItems of status.release.history, as
// xr.ReleaseStatus.Bounded applies it.
func maxHistoryForTest() int {
	h := make([]xr.ReleasedRevision, 64)
	return len(xr.ReleaseStatus{History: h}.Bounded().History)
}
