package route

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

func TestRolloutRules(t *testing.T) {
	cdn := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "cdn-cache", Port: ptr.To[gwv1.PortNumber](80)}}}
	besidePrimary := []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: primary.Ref}}, cdn}
	named := func(n string) *gwv1.SectionName { return ptr.To(gwv1.SectionName(n)) }
	withAB := func(p *Params) { p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} }
	withSession := func(p *Params) {
		p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
	}
	withMirror := func(p *Params) {
		p.MirrorPercent = ptr.To[int32](10)
		p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
	}
	rules := func(rs ...xr.Rule) func(*Params) { return func(p *Params) { p.Rules = rs } }

	type args struct {
		// route is the route observed: built from params (and checked
		// against the Gateway API CRDs), unless yaml is set.
		params []func(*Params)
		yaml   string
		// spec is what the spec tells of its rules now; the params' rules
		// when nil.
		spec []SpecRule
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []bool
	}{
		"DefaultRule": {
			reason: "A spec without rules has one unnamed weighted rule: it and its unnamed companions (A/B, both session rules, the primary's that mirrors, mirror) are the rollout's.",
			args:   args{params: []func(*Params){withAB, withSession, withMirror}},
			want:   []bool{true, true, true, true, true, true},
		},
		"NamedRuleOfItsOwn": {
			reason: "A rule of its own is not the rollout's; the weighted rule and its companion named after it are.",
			args:   args{params: []func(*Params){withAB, rules(xr.Rule{Name: named("static"), HTTPBackendRefs: []gwv1.HTTPBackendRef{cdn}}, xr.Rule{Name: named("api")})}},
			want:   []bool{false, true, true},
		},
		"UnnamedRuleOfItsOwnBesideThePrimary": {
			reason: "An unnamed rule of its own of the weighted rule's shape (the primary beside another backend) is told apart by where the spec puts it, not by a name.",
			args:   args{params: []func(*Params){rules(xr.Rule{HTTPBackendRefs: besidePrimary}, xr.Rule{Name: named("api")})}},
			want:   []bool{false, true},
		},
		"UnnamedRuleOfItsOwnAndUnnamedWeightedRule": {
			reason: "Both unnamed: the order of the spec's rules tells them apart.",
			args:   args{params: []func(*Params){rules(xr.Rule{HTTPBackendRefs: besidePrimary}, xr.Rule{})}},
			want:   []bool{false, true},
		},
		"UnnamedRuleOfItsOwnMistakableForACompanion": {
			reason: "With an unnamed companion rule, the unnamed rule of its own could be matched as a second companion: a rule that some matching makes a rule of its own is not the rollout's.",
			args:   args{params: []func(*Params){withAB, rules(xr.Rule{HTTPBackendRefs: besidePrimary}, xr.Rule{})}},
			want:   []bool{false, true, true},
		},
		"RuleOfItsOwnRemoved": {
			reason: "A rule of its own that an earlier abort removed (it sent only to the canary) is missing from the route: the weighted rule is still found.",
			args: args{
				yaml: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898, weight: 80}, {name: canary-proxy, namespace: monitoring, port: 3456, weight: 0}]}]`),
				spec: []SpecRule{{Own: true}, {}},
			},
			want: []bool{true},
		},
		"SpecRulesChangedNamed": {
			reason: "Rules the spec no longer matches (a rule of its own dropped from the spec): by name, the weighted rule is the rollout's, a rule the spec does not name is not.",
			args: args{
				yaml: httpRoute(`[{name: beta, backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: beta-backend}, {name: podinfo-v2, port: 9898}]}, {name: api, backendRefs: [{name: podinfo, port: 9898}, {name: podinfo-v2, port: 9898}]}]`),
				spec: []SpecRule{{Name: named("api")}},
			},
			want: []bool{false, true},
		},
		"SpecRulesChangedCompanionByName": {
			reason: "By name, a companion named after a weighted rule is the rollout's.",
			args: args{
				yaml: httpRoute(`[{name: api-canary-mirror, backendRefs: [{name: podinfo-primary, port: 9898}]}, {name: api, backendRefs: [{name: podinfo-primary, port: 9898}]}, {name: old, backendRefs: [{name: legacy, port: 80}]}]`),
				spec: []SpecRule{{Name: named("api")}, {Name: named("new")}},
			},
			want: []bool{true, true, false},
		},
		"SpecRulesChangedUnnamed": {
			reason: "Rules the spec no longer matches, unnamed: nothing tells which is weighted, so none is the rollout's.",
			args: args{
				yaml: httpRoute(`[{backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]}, {backendRefs: [{name: podinfo-primary, port: 9898}, {name: canary-proxy, namespace: monitoring, port: 3456}]}]`),
				spec: []SpecRule{{Name: named("api")}},
			},
			want: []bool{false, false},
		},
		"NameOfARuleOfItsOwn": {
			reason: "By name, a rule whose name the spec gives a rule of its own is never the rollout's.",
			args: args{
				yaml: httpRoute(`[{name: api, backendRefs: [{name: podinfo-primary, port: 9898}]}]`),
				spec: []SpecRule{{Name: named("api"), Own: true}, {Name: named("api")}, {Name: named("other")}},
			},
			want: []bool{false},
		},
		"GRPCRoute": {
			reason: "A GRPCRoute's rules of their own alike.",
			args: args{params: []func(*Params){func(p *Params) {
				p.Kind = xr.KindGRPCRoute
				p.Hostnames = nil
				p.Rules = []xr.Rule{{GRPCBackendRefs: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: primary.Ref}}, {BackendRef: cdn.BackendRef}}}, {}}
			}}},
			want: []bool{false, true},
		},
		"TCPRoute": {
			reason: "A TCPRoute's single rule is the rollout's.",
			args: args{
				yaml: `{apiVersion: gateway.networking.k8s.io/v1, kind: TCPRoute, metadata: {name: podinfo, namespace: test}, spec: {rules: [{name: x, backendRefs: [{name: podinfo-primary, port: 9898}, {name: cdn-cache, port: 80}]}]}}`,
				spec: []SpecRule{{Name: named("y"), Own: true}},
			},
			want: []bool{true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var obj runtime.Object
			spec := tc.args.spec
			if tc.args.yaml != "" {
				obj = decoded(t, tc.args.yaml)
			} else {
				p := params(tc.args.params...)
				obj = admitted(t, p)
				if spec == nil {
					spec = SpecRules(p.Rules)
				}
			}
			if diff := cmp.Diff(tc.want, RolloutRules(obj, spec)); diff != "" {
				t.Errorf("%s\nRolloutRules(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRolloutRulesNeverTakesARuleOfItsOwn builds the routes of every spec of
// up to three rules (of its own or weighted, named or not) under every
// combination of companion rules, and checks RolloutRules against the
// layout the builders followed: a rule of its own is never the rollout's,
// and a named weighted rule, or a companion of one, always is.
func TestRolloutRulesNeverTakesARuleOfItsOwn(t *testing.T) {
	cdn := []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: primary.Ref}}, {BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "cdn-cache", Port: ptr.To[gwv1.PortNumber](80)}}}}
	kinds := []func(i int) xr.Rule{
		func(i int) xr.Rule {
			return xr.Rule{Name: ptr.To(gwv1.SectionName(fmt.Sprintf("own-%d", i))), HTTPBackendRefs: cdn}
		},
		func(int) xr.Rule { return xr.Rule{HTTPBackendRefs: cdn} },
		func(i int) xr.Rule { return xr.Rule{Name: ptr.To(gwv1.SectionName(fmt.Sprintf("weighted-%d", i)))} },
		func(int) xr.Rule { return xr.Rule{} },
	}
	companions := map[string]func(*Params){
		"None": func(p *Params) { p.Active = false },
		"AB":   func(p *Params) { p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch} },
		"Sessions": func(p *Params) {
			p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
		},
		"SessionsAndMirror": func(p *Params) {
			p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
			p.MirrorPercent = ptr.To[int32](10)
			p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
		},
		"All": func(p *Params) {
			p.ABHTTPMatches = []gwv1.HTTPRouteMatch{abMatch}
			p.Affinity = &Affinity{CookieName: "canary", Value: "0123456789abcdef", PrimaryCookieName: "stable", PrimaryValue: "fedcba9876543210", MaxAge: time.Hour}
			p.MirrorPercent = ptr.To[int32](10)
			p.MirrorHTTPMatches = []gwv1.HTTPRouteMatch{{Method: ptr.To(gwv1.HTTPMethodGet)}}
		},
	}
	var specs [][]xr.Rule
	var grow func(rules []xr.Rule)
	grow = func(rules []xr.Rule) {
		if slices.ContainsFunc(rules, func(r xr.Rule) bool { return !r.Own() }) {
			specs = append(specs, rules)
		}
		if len(rules) == 3 {
			return
		}
		for _, k := range kinds {
			grow(append(slices.Clone(rules), k(len(rules))))
		}
	}
	grow(nil)
	for name, mutate := range companions {
		for _, rules := range specs {
			p := params(mutate, func(p *Params) { p.Rules = rules })
			// The function's typed checks, which the differential tests
			// of package admission hold to the Gateway API CRDs: the CRD
			// validator itself would take seconds for these routes.
			obj, errs := Build(p)
			if len(p.layout()) > maxRules {
				// Three weighted rules with every companion (six each)
				// are refused as a whole: no route to read back.
				continue
			}
			if errs = append(errs, Admit(p, obj)...); len(errs) > 0 {
				t.Fatalf("%s, spec rules %s: the built route is refused: %v", name, describe(rules), errs)
			}
			layout, got := p.layout(), RolloutRules(obj, SpecRules(rules))
			if len(layout) != len(got) {
				t.Fatalf("%s %v: %d rules built, RolloutRules(...) says of %d", name, SpecRules(rules), len(layout), len(got))
			}
			for i, o := range layout {
				named := rules[o.rule].Name != nil
				if o.own && got[i] {
					t.Errorf("%s, spec rules %s: RolloutRules(...) takes rule %d, a rule of its own, for the rollout's: %v", name, describe(rules), i, got)
				}
				if !o.own && named && !got[i] {
					t.Errorf("%s, spec rules %s: RolloutRules(...) does not take rule %d, of the named weighted rule %d, for the rollout's: %v", name, describe(rules), i, o.rule, got)
				}
			}
		}
	}
}

// describe is a spec's rules in short: own or weighted, and the name.
func describe(rules []xr.Rule) string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		kind := "weighted"
		if r.Own() {
			kind = "own"
		}
		out = append(out, kind+":"+string(ptr.Deref(r.Name, "")))
	}
	return strings.Join(out, ",")
}
