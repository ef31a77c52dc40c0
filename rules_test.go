package main

// Rules: the user's rules of their own beside the weighted ones, and the
// companion rules the function adds for A/B matches, mirrors and session
// affinity; their limits, counted with the companions, refused up front.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRulesOfTheirOwnPassThePolicy: every backend a rule of its own names,
// and every mirror on its backendRefs, passes the Input's policy like a
// side's, and a refusal is a Fatal naming spec.rules[i].backendRefs[j]
// (docs/reference.md, "Rules of their own"); allowed cross-namespace ones
// get a grant naming exactly them, and a namespaced XR gets
// GrantNotComposable. Held, as far as tried.
func TestRulesOfTheirOwnPassThePolicy(t *testing.T) {
	xr := func(backendRefs string) string {
		return strings.Replace(ownRulesXR(`    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: `+backendRefs, ""), ", abort: true", "", 1)
	}
	input := allowTest + "allowedBackendNamespaces: [cdn]\nallowedBackendKinds: [{group: \"\", kind: Service}, {group: networking.istio.io, kind: Hostname}]\n"
	cases := map[string]struct {
		refs  string
		fatal string // a part of the Fatal; "" for none
		grant []string
	}{
		"NamespaceRefused":   {refs: `[{name: x, port: 80}, {name: cdn-cache, namespace: kube-system, port: 80}]`, fatal: `spec.rules[0].backendRefs[1]: Forbidden`},
		"KindRefused":        {refs: `[{group: gateway.envoyproxy.io, kind: Backend, name: cdn}]`, fatal: `spec.rules[0].backendRefs[0]: Forbidden`},
		"MetadataHostname":   {refs: `[{group: networking.istio.io, kind: Hostname, name: metadata.google.internal, port: 80}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"LocalhostHostname":  {refs: `[{group: networking.istio.io, kind: Hostname, name: api.localhost, port: 80}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"ClusterHostname":    {refs: `[{group: networking.istio.io, kind: Hostname, name: kubernetes.default.svc.cluster.local, port: 443}]`, fatal: `spec.rules[0].backendRefs[0].name`},
		"MirrorRefused":      {refs: `[{name: cdn-cache, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: x, namespace: kube-system, port: 80}}}]}]`, fatal: `spec.rules[0].backendRefs[0].filters[0].requestMirror.backendRef`},
		"DefaultsWrittenOut": {refs: `[{group: "", kind: Service, name: cdn-cache, namespace: cdn, port: 80}]`, grant: []string{"from HTTPRoute test", "to Service cdn-cache"}},
		"TwoInOneGrant":      {refs: `[{name: a, namespace: cdn, port: 80}, {name: b, namespace: cdn, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: c, namespace: cdn, port: 80}}}]}]`, grant: []string{"from HTTPRoute test", "to Service a", "to Service b", "to Service c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := runFunction(t, xr(tc.refs), input, nil, nil)
			v := viewOf(t, rsp)
			if tc.fatal != "" {
				if !isFatal(rsp) || !strings.Contains(strings.Join(v.Results, "\n"), tc.fatal) {
					t.Errorf("want a Fatal naming %s, got %v (weights %v)", tc.fatal, v.Results, v.Weights)
				}
				return
			}
			assertXRDAccepts(t, req, rsp)
			if got := v.Grants["cdn"]; !slices.Equal(got, tc.grant) {
				t.Errorf("grant in cdn: got %v, want %v (results %v)", got, tc.grant, v.Results)
			}
		})
	}
	t.Run("GrantGoesWithTheRule", func(t *testing.T) {
		s := newSim(t, xr(`[{name: cdn-cache, namespace: cdn, port: 80}]`), input)
		r := s.run(0)
		if !slices.Contains(r.resources, "referencegrant-cdn") {
			t.Fatalf("setup: no grant: %v %v", r.resources, r.events)
		}
		spec := s.xr["spec"].(map[string]any)
		spec["rules"] = spec["rules"].([]any)[1:]
		r = s.run(0)
		if slices.Contains(r.resources, "referencegrant-cdn") || r.fatal != "" {
			t.Errorf("the rule of its own is gone, yet its grant is still composed: %v %v", r.resources, r.fatal)
		}
	})
	t.Run("NamespacedXR", func(t *testing.T) {
		x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
    - {name: static, matches: [{path: {type: PathPrefix, value: /assets}}], backendRefs: [{name: cdn-cache, namespace: cdn, port: 80}]}
    - {name: api}
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-v3}}
  traffic: {weight: 10}`)
		_, rsp := runFunction(t, x, input, nil, nil)
		v := viewOf(t, rsp)
		if !slices.ContainsFunc(v.Conditions, func(c string) bool {
			return strings.HasPrefix(c, "ReferenceGrantsReady=False GrantNotComposable") && strings.Contains(c, "in namespace cdn") && strings.Contains(c, "to Service cdn-cache")
		}) {
			t.Errorf("a namespaced XR with a cross-namespace rule backend: want ReferenceGrantsReady False GrantNotComposable naming the grant, got %v", v.Conditions)
		}
	})
}

// TestRulesOfTheirOwnDoNotStopOrJoinTheRollout: a progressive rollout with
// A/B matches, a mirror and two-sided stickiness, beside a redirect-only
// rule and a static rule of their own, through the simulated Crossplane
// (the API server defaulting the backendRefs): it must reach Succeeded, the
// rules of their own must stay exactly as written on every run (no
// companion, cookie or mirror), and the canary-only rules must end with it.
func TestRulesOfTheirOwnDoNotStopOrJoinTheRollout(t *testing.T) {
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
    - name: legacy
      matches: [{path: {type: PathPrefix, value: /old}}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}, statusCode: 301}}]
    - name: static
      matches: [{path: {type: PathPrefix, value: /assets}}]
      backendRefs: [{name: cdn-cache, port: 80}]
    - name: api
      matches: [{path: {type: PathPrefix, value: /}}]
  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}, revision: v2}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]
    matches: [{headers: [{name: x-canary, value: "1"}]}]
    mirror: {percent: 10}
    sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`)
	s := newSim(t, x, emptyInput)
	want := []string{"legacy: [/old] f:RequestRedirect", "static: [/assets] b:cdn-cache=<nil>"}
	var last simRun
	for i := range 16 {
		last = s.run(0)
		apiServerDefaults(s)
		if last.fatal != "" {
			t.Fatalf("run %d is Fatal: %s", i, last.fatal)
		}
		shape := ruleShapes(last.rsp, "route-httproute")
		if len(shape) < 3 || shape[0] != want[0] || shape[1] != want[1] {
			t.Errorf("run %d (%v step %v): the rules of their own are not as written: %v", i, last.out["phase"], last.out["step"], shape)
		}
		if last.out["phase"] == "Succeeded" {
			break
		}
	}
	t.Log("\n" + s.describe())
	if last.out["phase"] != "Succeeded" {
		t.Fatalf("the rollout never succeeds beside rules of their own: %v %q", last.out["phase"], last.out["message"])
	}
	if shape := ruleShapes(last.rsp, "route-httproute"); len(shape) != 3 {
		t.Errorf("once Succeeded the route has %d rules, want the 2 of their own and the weighted one: %v", len(shape), shape)
	}
}

// TestRuleLimitCountsRulesOfTheirOwn: "at most 16 rules after companion
// rules (rules of their own count)". 10 rules of their own and 3 weighted
// rules with A/B matches and session affinity (3 companions each while
// active) make 22 rules: a Fatal from the start, naming spec.rules, never a
// route the API server refuses halfway through the rollout.
func TestRuleLimitCountsRulesOfTheirOwn(t *testing.T) {
	var rules strings.Builder
	for i := range 10 {
		fmt.Fprintf(&rules, "    - {name: own%d, matches: [{path: {type: PathPrefix, value: /own%d}}], backendRefs: [{name: cdn, port: 80}]}\n", i, i)
	}
	for i := range 3 {
		fmt.Fprintf(&rules, "    - {name: w%d, matches: [{path: {type: PathPrefix, value: /w%d}}]}\n", i, i)
	}
	x := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  rules:
` + rules.String() + `  primary: {backendRef: {name: podinfo}}
  canary: {backendRef: {name: podinfo-canary}}
  traffic:
    weight: 0
    matches: [{headers: [{name: x-canary, value: "1"}]}]
    sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`)
	_, rsp := runFunction(t, x, emptyInput, nil, nil)
	v := viewOf(t, rsp)
	if !isFatal(rsp) || !strings.Contains(strings.Join(v.Results, ""), "spec.rules") {
		t.Errorf("want a Fatal naming spec.rules for 22 rules while active, got %v, %d rules", v.Results, len(v.Weights))
	}
}

// TestStepActionsEndWithTheirStep: a step's matches replace traffic.matches
// while it is current, and its mirror replaces traffic.mirror; canary-only
// rules end with the rollout (none at weight 100 or once Succeeded), and an
// aborted rollout sends nothing to the canary. It walks a dark launch, a
// testers-only step, a weighted step, then 100%, and an abort at the
// testers-only step, and looks for each step's rules where they belong and
// nowhere else.
func TestStepActionsEndWithTheirStep(t *testing.T) {
	xrYAML := analysisXR(`
      - {weight: 0, pause: 1m, mirror: {percent: 100, matches: [{method: GET}]}}
      - {weight: 0, pause: 1m, matches: [{headers: [{name: x-canary, value: "1"}]}]}
      - {weight: 10, pause: 1m}
      - {weight: 100}`, `    matches: [{headers: [{name: x-ab, value: "1"}]}]
`)
	// problems lists where a run's route breaks the rules of its step.
	problems := func(s *xpSim) []string {
		var out []string
		for _, r := range s.runs {
			joined := strings.Join(ruleShapes(r.rsp, "route-httproute"), " | ")
			step, phase := r.out["step"], r.out["phase"]
			line := fmt.Sprintf("%s %v step %v: %s", r.at.Format(time.TimeOnly), phase, step, joined)
			has := func(part string) bool { return strings.Contains(joined, part) }
			switch {
			case phase == "Succeeded" || phase == "Aborted":
				if len(ruleShapes(r.rsp, "route-httproute")) != 1 || has("RequestMirror") || has(" h:") {
					out = append(out, "canary-only rules or a mirror after the rollout ended: "+line)
				}
			case step == float64(0):
				// Step 0 has no matches of its own: traffic.matches apply,
				// and its mirror.
				if has("h:x-canary") || !has("h:x-ab") || !has("RequestMirror") {
					out = append(out, "step 0 without its mirror or traffic.matches, or with step 1's matches: "+line)
				}
			case step == float64(1):
				if has("RequestMirror") || has("h:x-ab") || !has("h:x-canary") {
					out = append(out, "step 1 without its own matches, or with step 0's mirror or traffic.matches, which they replace: "+line)
				}
			case step == float64(2):
				if has("h:x-canary") || has("RequestMirror") || !has("h:x-ab") {
					out = append(out, "an earlier step's action leaks into step 2, or traffic.matches are missing: "+line)
				}
			}
		}
		return out
	}
	t.Run("Succeeds", func(t *testing.T) {
		s := newSim(t, xrYAML, emptyInput)
		for range 14 {
			s.run(0)
		}
		if s.runs[len(s.runs)-1].out["phase"] != "Succeeded" {
			t.Fatalf("setup: the rollout did not succeed\n%s", s.describe())
		}
		for _, p := range problems(s) {
			t.Error(p)
		}
	})
	t.Run("AbortedAtStep1", func(t *testing.T) {
		s := newSim(t, xrYAML, emptyInput)
		for range 8 {
			if r := s.run(0); r.out["step"] == float64(1) {
				break
			}
		}
		s.setSpec("traffic.abort", true)
		s.run(0)
		s.run(0)
		if r := s.runs[len(s.runs)-1]; r.out["phase"] != "Aborted" {
			t.Fatalf("setup: the rollout did not abort\n%s", s.describe())
		}
		for _, p := range problems(s) {
			t.Error(p)
		}
	})
}

// TestStepThatBreaksARuleLimitIsRefusedUpFront: every limit (16 rules,
// filters) counts the companion rules, and a step that would break one is
// refused before any rollout reaches it: a Fatal from the first run, which
// says that the companions break the limit while the rollout is active.
// Here step 1 (10%) adds the session-affinity companions to the A/B ones:
// 6 rules + 6 A/B + 6 session = 18, while step 0 (0%) fits.
func TestStepThatBreaksARuleLimitIsRefusedUpFront(t *testing.T) {
	var rules strings.Builder
	for i := range 6 {
		fmt.Fprintf(&rules, "    - matches: [{path: {type: PathPrefix, value: /p%d}}]\n", i)
	}
	xrYAML := strings.Replace(analysisXR(`[{weight: 0, pause: 1m}, {weight: 10, pause: 1m}, {weight: 100}]`,
		`    matches: [{headers: [{name: x-ab, value: "1"}]}]
    sessionAffinity: {cookieName: canary, maxAge: 1h}
`), "  port: 9898\n", "  port: 9898\n  rules:\n"+rules.String(), 1)
	_, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
	want := "the composed route would be rejected by the Gateway API: [spec.rules: Invalid value: 18: the composed route would have 18 rules, 2 more than the Gateway API allows (16): the 6 rules of the spec gain 12 A/B, session or mirror companion rules while the rollout is active, spec.rules: Too many: 18: must have at most 16 items]"
	if diff := cmp.Diff(want, fatalOf(rsp)); diff != "" {
		t.Errorf("the first run, at step 0: -want Fatal, +got:\n%s", diff)
	}
}

// TestCompanionNameCollisionExplained: a Fatal
// "says when the function's own additions (the session cookie, companion
// rules) are what broke a limit". A rule of its own named
// api-canary-session beside a weighted rule api collides with the session
// companion the function names so: the Fatal names the rule's name and the
// companion, not only "Rule name must be unique within the route". Without
// session affinity there is no companion, and the name is the user's.
func TestCompanionNameCollisionExplained(t *testing.T) {
	rule := `    - name: api-canary-session
      matches: [{path: {type: PathPrefix, value: /x}}]
      backendRefs: [{name: cdn, port: 80}]`
	x := strings.Replace(ownRulesXR(rule, ", sessionAffinity: {cookieName: c, maxAge: 1h}"), ", abort: true", "", 1)
	_, rsp := runFunction(t, x, allowTest, nil, nil)
	want := `spec.rules[0].name: Invalid value: "api-canary-session": the function names the session companion rule of spec.rules[1] so: rename this rule`
	if msg := strings.Join(viewOf(t, rsp).Results, ""); !isFatal(rsp) || !strings.Contains(msg, want) || strings.Contains(msg, "must be unique") {
		t.Errorf("want a Fatal saying only %q, got %s", want, msg)
	}
	x = strings.Replace(ownRulesXR(rule, ""), ", abort: true", "", 1)
	if _, rsp := runFunction(t, x, allowTest, nil, nil); isFatal(rsp) {
		t.Errorf("without session affinity the rule name collides with nothing, yet: %v", viewOf(t, rsp).Results)
	}
}

// TestCopiedErrorsReportedOnceForTheUsersRule: a rule's own retry out of
// range (codes [399]) with session affinity: the function copies retry into
// the session companion, and the Fatal reports the user's error once, at
// the user's field, never "in the session companion rule" as if the
// function's addition were wrong.
func TestCopiedErrorsReportedOnceForTheUsersRule(t *testing.T) {
	x := featureXR("HTTPRoute", `{name: api, retry: {codes: [399]}}`, "", "", `, sessionAffinity: {cookieName: c, maxAge: 1h}`)
	_, rsp := runFunction(t, x, allowTest, nil, nil)
	msg := strings.Join(viewOf(t, rsp).Results, "")
	if !strings.Contains(msg, "spec.rules[0].retry.codes[0]") || strings.Contains(msg, "companion rule") || strings.Count(msg, "spec.rules[0].retry.codes[0]") > 1 {
		t.Errorf("the user's own retry error is blamed on, or repeated for, the function's companion rule: %s", msg)
	}
}

// TestCompanionRulesThroughTheFunction: traffic.mirror.matches and a step's
// mirror matches reach the route beside A/B matches and session affinity,
// as companion rules in the order of their intents (docs/traffic.md,
// "Companion rules and precedence"), and canary-only rules end at 100%;
// every route passes the Gateway API CRDs of both channels, with a status
// the XRD admits.
func TestCompanionRulesThroughTheFunction(t *testing.T) {
	crds := gatewayAPICRDs(t)
	step := func(x, mirror string) string {
		return strings.Replace(x, "traffic: {weight: 20", "traffic: {steps: [{weight: 20, pause: 1h, mirror: "+mirror+"}, {weight: 100}]", 1)
	}
	cases := map[string]struct {
		reason string
		xr     string
		input  string // allowTest when ""
		key    string
		want   []string
	}{
		"StepMirrorEverything": {
			reason: "A/B on a query parameter, both cookies and a step's mirror limited to GETs or a header: the A/B and session companions carry what could outrank them, a companion of the primary's cookie mirrors.",
			xr: step(featureXR("HTTPRoute", `{name: api, matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: x-tenant, value: a}]}]}`, "", "",
				`, matches: [{queryParams: [{name: canary, value: "1"}]}], sessionAffinity: {cookieName: c, primaryCookieName: p, maxAge: 1h}`),
				`{percent: 10, matches: [{method: GET}, {headers: [{name: x-mirror, value: "1"}]}]}`),
			key: "route-httproute",
			want: []string{
				"api-canary-match: [/api h:x-tenant q:canary] [/api h:x-tenant q:canary m:GET] [/api h:x-tenant h:x-mirror q:canary] [/api h:x-tenant h:Cookie q:canary] [/api h:x-tenant h:Cookie q:canary m:GET] [/api h:x-tenant h:x-mirror h:Cookie q:canary] b:podinfo-canary=1",
				"api-canary-session: [/api h:x-tenant h:Cookie] [/api h:x-tenant h:Cookie m:GET] [/api h:x-tenant h:x-mirror h:Cookie] b:podinfo-canary=1",
				"api-primary-session-mirror: [/api h:x-tenant h:Cookie m:GET] [/api h:x-tenant h:x-mirror h:Cookie] f:RequestMirror b:podinfo-primary=1",
				"api-primary-session: [/api h:x-tenant h:Cookie] b:podinfo-primary=1",
				"api-canary-mirror: [/api h:x-tenant m:GET] [/api h:x-tenant h:x-mirror] f:RequestMirror b:podinfo-primary=80 b:podinfo-canary=20",
				"api: [/api h:x-tenant] b:podinfo-primary=80 b:podinfo-canary=20",
			},
		},
		"TrafficMirrorPersistence": {
			reason: "traffic.mirror.matches in manual mode with SessionPersistence: the mirror companion weighs the sides with the gateway's session persistence too.",
			xr: featureXR("HTTPRoute", "", "", "",
				`, mirror: {percent: 50, matches: [{method: GET}]}, matches: [{headers: [{name: x-canary, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h, mode: SessionPersistence}`),
			key: "route-httproute",
			want: []string{
				"<nil>: [/ h:x-canary] [/ h:x-canary m:GET] b:podinfo-canary=1",
				"<nil>: [/ m:GET] f:RequestMirror b:podinfo-primary=80 b:podinfo-canary=20 persistence",
				"<nil>: [/] b:podinfo-primary=80 b:podinfo-canary=20 persistence",
			},
		},
		"GRPCTrafficMirrorPersistence": {
			reason: "The same on a GRPCRoute: a method of the mirror's outranks the A/B header, so the A/B companion carries both.",
			xr: featureXR("GRPCRoute", `{name: api, matches: [{method: {service: shop.Checkout}}]}`, "", "",
				`, mirror: {percent: 50, matches: [{method: {method: Get}}]}, matches: [{headers: [{name: x-canary, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h, mode: SessionPersistence}`),
			key: "route-grpcroute",
			want: []string{
				"api-canary-match: [h:x-canary m:shop.Checkout/] [h:x-canary m:shop.Checkout/Get] b:podinfo-canary=1",
				"api-canary-mirror: [m:shop.Checkout/Get] f:RequestMirror b:podinfo-primary=80 b:podinfo-canary=20 persistence",
				"api: [m:shop.Checkout/] b:podinfo-primary=80 b:podinfo-canary=20 persistence",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			input := tc.input
			if input == "" {
				input = allowTest
			}
			req, rsp := runFunction(t, tc.xr, input, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("refused: %v", viewOf(t, rsp).Results)
			}
			crds.checkComposed(t, name, rsp)
			assertXRDAccepts(t, req, rsp)
			if diff := cmp.Diff(tc.want, ruleShapes(rsp, tc.key)); diff != "" {
				t.Errorf("%s\ncomposed rules: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCanaryOnlyRulesEndAtHundred: at 100% (manual) there are no A/B or
// session rules and no mirror: the canary would only get duplicated load.
func TestCanaryOnlyRulesEndAtHundred(t *testing.T) {
	testViews(t, map[string]viewCase{
		"ManualAtHundred": {
			reason: "The A/B matches and the mirror of traffic are left out at 100%.",
			args:   runArgs{input: allowMonitoring, xr: flaggerWith("    weight: 20", "    weight: 100\n    matches: [{headers: [{name: X-Beta, value: 'yes'}]}]\n    mirror: {percent: 50}")},
			want: flaggerView(func(v *view) {
				v.Weights = [][]string{{"Service/podinfo-primary:9898=0", "Service/monitoring/canary-proxy:3456=100"}}
				v.Conditions[2] = "RolloutHealthy=True Stable: Stable: canary 100%, primary 0%"
				v.Rollout["canaryWeight"], v.Rollout["primaryWeight"] = float64(100), float64(0)
			}),
		},
	})
}
