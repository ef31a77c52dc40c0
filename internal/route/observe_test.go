package route

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

func observedRoute(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var gatewayRef = []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To(gwv1.Namespace("istio-ingress"))}}

func TestObserveParents(t *testing.T) {
	type want struct {
		allReady bool
		verdicts []string
	}
	verdict := func(o Observation) []string {
		out := make([]string, 0, len(o.Parents))
		for _, p := range o.Parents {
			s := p.Describe() + " accepted=" + map[bool]string{true: "yes", false: "no"}[p.Accepted] +
				" resolved=" + map[bool]string{true: "yes", false: "no"}[p.ResolvedRefs]
			if !p.Ready() {
				s += " " + p.Reason
			}
			out = append(out, s)
		}
		return out
	}
	cases := map[string]struct {
		reason  string
		route   string
		parents []gwv1.ParentReference
		want    want
	}{
		"NotCreated": {
			reason:  "A route that does not exist yet is pending at every parent.",
			parents: gatewayRef,
			want:    want{verdicts: []string{"istio-ingress/gateway accepted=no resolved=no Pending"}},
		},
		"Accepted": {
			reason:  "Accepted and ResolvedRefs True at the route's generation: ready.",
			route:   statusRoute(2, 2, "True", "Accepted", "True"),
			parents: gatewayRef,
			want:    want{allReady: true, verdicts: []string{"istio-ingress/gateway accepted=yes resolved=yes"}},
		},
		"Refused": {
			reason:  "A parent that refuses the route gives its reason.",
			route:   statusRoute(2, 2, "False", "NotAllowedByListeners", "True"),
			parents: gatewayRef,
			want:    want{verdicts: []string{"istio-ingress/gateway accepted=no resolved=yes NotAllowedByListeners"}},
		},
		"RefsNotResolved": {
			reason:  "A reference the parent cannot resolve (a missing grant) is not ready either.",
			route:   statusRoute(2, 2, "True", "Accepted", "False"),
			parents: gatewayRef,
			want:    want{verdicts: []string{"istio-ingress/gateway accepted=yes resolved=no RefNotPermitted"}},
		},
		"Stale": {
			reason:  "A verdict on an older generation says nothing about the current route.",
			route:   statusRoute(3, 2, "True", "Accepted", "True"),
			parents: gatewayRef,
			want:    want{verdicts: []string{"istio-ingress/gateway accepted=no resolved=no Stale"}},
		},
		"NoObservedGeneration": {
			reason:  "A gateway that does not set observedGeneration (it is optional) cannot tell generations apart: its verdict counts for the current one, instead of holding the route as stale forever.",
			route:   statusRoute(3, 0, "True", "Accepted", "True"),
			parents: gatewayRef,
			want:    want{allReady: true, verdicts: []string{"istio-ingress/gateway accepted=yes resolved=yes"}},
		},
		"OtherParentUnreported": {
			reason: "Every parent must accept: one that has not reported holds the route.",
			route:  statusRoute(2, 2, "True", "Accepted", "True"),
			parents: append([]gwv1.ParentReference{gatewayRef[0]},
				gwv1.ParentReference{Name: "internal", Namespace: ptr.To(gwv1.Namespace("istio-ingress"))}),
			want: want{verdicts: []string{
				"istio-ingress/gateway accepted=yes resolved=yes",
				"istio-ingress/internal accepted=no resolved=no Pending",
			}},
		},
		"DefaultsMatch": {
			reason:  "A status parentRef with defaults written out (group, kind) is the same parent as the spec's.",
			route:   statusRouteWithRef(`{group: gateway.networking.k8s.io, kind: Gateway, name: gateway, namespace: test}`),
			parents: []gwv1.ParentReference{{Name: "gateway"}},
			want:    want{allReady: true, verdicts: []string{"test/gateway accepted=yes resolved=yes"}},
		},
		"SectionDiffers": {
			reason:  "A report on another listener (sectionName) is not a report on this parent.",
			route:   statusRouteWithRef(`{name: gateway, namespace: test, sectionName: http}`),
			parents: []gwv1.ParentReference{{Name: "gateway", SectionName: ptr.To[gwv1.SectionName]("https")}},
			want:    want{verdicts: []string{"test/gateway/https accepted=no resolved=no Pending"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var obj map[string]any
			if tc.route != "" {
				obj = observedRoute(t, tc.route)
			}
			o, err := Observe(obj, "test", tc.parents)
			if err != nil {
				t.Fatal(err)
			}
			got := want{allReady: o.AllReady(), verdicts: verdict(o)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func statusRoute(generation, observed int, accepted, reason, resolved string) string {
	resolvedReason := "ResolvedRefs"
	if resolved != "True" {
		resolvedReason = "RefNotPermitted"
	}
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: podinfo, namespace: test, generation: ` + strconv.Itoa(generation) + `}
status:
  parents:
    - parentRef: {name: gateway, namespace: istio-ingress}
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "` + accepted + `", reason: ` + reason + `, observedGeneration: ` + strconv.Itoa(observed) + `, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
        - {type: ResolvedRefs, status: "` + resolved + `", reason: ` + resolvedReason + `, observedGeneration: ` + strconv.Itoa(observed) + `, lastTransitionTime: "2026-12-02T10:00:00Z", message: ""}
`
}

func statusRouteWithRef(ref string) string {
	return `
metadata: {generation: 1}
status:
  parents:
    - parentRef: ` + ref + `
      controllerName: example.com/gateway
      conditions:
        - {type: Accepted, status: "True", reason: Accepted, observedGeneration: 1}
        - {type: ResolvedRefs, status: "True", reason: ResolvedRefs, observedGeneration: 1}
`
}

func TestObservationCarries(t *testing.T) {
	built := func(weight percent.Percent, total int32) runtime.Object {
		r, errs := Build(params(func(p *Params) { p.CanaryWeight, p.Total = weight, total }))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return r
	}
	cases := map[string]struct {
		reason string
		route  string
		// weight is the canary's in the route composed: 20% unless set.
		weight percent.Percent
		// total is the composed route's: out of 100 unless set.
		total int32
		want  bool
	}{
		"SameWeights": {
			reason: "The observed route carries the backends and weights of the route composed at 20%.",
			route: `
spec:
  rules:
    - backendRefs:
        - {group: "", kind: Service, name: podinfo-primary, port: 9898, weight: 80}
        - {group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}`,
			want: true,
		},
		"DefaultsFilledIn": {
			reason: "The API server's defaults (group, kind) and a namespace written out are the same backend.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, namespace: test, port: 9898, weight: 80}
        - {group: "", kind: Service, name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}`,
			want: true,
		},
		"OlderWeights": {
			reason: "A route still at the previous step's weights does not carry this step's.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 90}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 10}`,
		},
		"OtherBackend": {
			reason: "Backends are compared by what they are: another canary at the same weight is not this route.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 80}
        - {name: podinfo-canary, namespace: monitoring, port: 3456, weight: 20}`,
		},
		"OutOfTenThousand": {
			reason: "Weights are read as ratios: 8000/2000 (composed out of 10,000, after a weight with decimals was written) carries 20%.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 8000}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 2000}`,
			want: true,
		},
		"OutOfHundredForFine": {
			reason: "A route out of 100 (an older one) carries 20% composed out of 10,000 (the spec now has a weight with decimals).",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 80}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}`,
			weight: percent.Int(20),
			total:  percent.FineTotal,
			want:   true,
		},
		"Fine": {
			reason: "0.1% is 9990/10.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 9990}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 10}`,
			weight: percent.Hundredths(10),
			want:   true,
		},
		"FineNotWhole": {
			reason: "A route at 1% (99/1) does not carry 0.1%.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 99}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 1}`,
			weight: percent.Hundredths(10),
		},
		"NothingToAnything": {
			reason: "A rule whose weights are all 0 sends nothing: it carries no weighted route.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898, weight: 0}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}`,
		},
		"DefaultWeight": {
			reason: "A backendRef without weight has Gateway API's default weight 1.",
			route: `
spec:
  rules:
    - backendRefs:
        - {name: podinfo-primary, port: 9898}
        - {name: canary-proxy, namespace: monitoring, port: 3456, weight: 20}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := Observe(observedRoute(t, tc.route), "test", gatewayRef)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.weight
			if w.IsZero() {
				w = percent.Int(20)
			}
			if got := o.Carries(built(w, tc.total), "test"); got != tc.want {
				t.Errorf("%s\nCarries(...): got %v, want %v", tc.reason, got, tc.want)
			}
		})
	}

	if o, _ := Observe(nil, "test", gatewayRef); o.Carries(built(percent.Zero, 0), "test") {
		t.Error("a route that does not exist carries nothing")
	}
}
