package route

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// A SpecRule is what a CanaryRoute's spec says of one of its rules, as far
// as it tells: the rule's name, and whether it is a rule of its own (with
// backendRefs of its own, or a RequestRedirect), which the function composes
// as written and never weighs.
type SpecRule struct {
	Name *gwv1.SectionName
	Own  bool
}

// SpecRules are the SpecRules of a parsed spec's rules.
func SpecRules(rules []xr.Rule) []SpecRule {
	out := make([]SpecRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, SpecRule{Name: r.Name, Own: r.Own()})
	}
	return out
}

// companionSuffixes are the suffixes of the names of a rule's companion
// rules, in the order the builders compose them.
var companionSuffixes = []string{companionABSuffix, companionStickiness, companionPrimaryMirror, companionPrimary, companionMirror}

// RolloutRules reports, rule by rule, whether a rule of a route the function
// composed earlier is the rollout's (a weighted rule, or one of its
// companions) rather than a rule of its own, as the spec's rules tell it: a
// rule of its own needs no name and may hold the primary beside another
// backend, so neither the route's names nor its shapes tell them apart, and
// status.rollout can be written by anyone who may write the XR's status.
//
// The route's rules are matched to the spec's in the order the builders
// compose them: a rule of its own is one rule of its name (or none: an abort
// or a hold may have removed it), and a weighted rule is its companion rules
// (as many for every weighted rule, named after it or unnamed with it)
// followed by the rule of its name. A rule is the rollout's when every such matching makes it
// one. When no matching fits (the spec's rules changed since the route was
// composed), only a named rule whose name the spec gives a weighted rule, or
// one of its companions, and no rule of its own, is the rollout's: an
// unnamed rule could be anything. TLSRoutes, TCPRoutes and UDPRoutes have a
// single rule, always the rollout's.
//
// A spec without rules has one unnamed weighted rule, as the builders
// compose it.
func RolloutRules(obj runtime.Object, spec []SpecRule) []bool {
	v := viewOf(obj)
	if v == nil {
		return nil
	}
	out := make([]bool, v.len())
	if !v.ownRules() {
		for i := range out {
			out[i] = true
		}
		return out
	}
	if len(spec) == 0 {
		spec = []SpecRule{{}}
	}
	names := make([]string, 0, v.len())
	for i := range v.len() {
		names = append(names, sectionName(v.name(i)))
	}
	if roles, ok := alignedRoles(names, spec); ok {
		for i, r := range roles {
			out[i] = r == roleRollout
		}
		return out
	}
	for i, name := range names {
		out[i] = rolloutByName(name, spec)
	}
	return out
}

// A ruleRole is what the matchings of alignedRoles make of a route's rule: a
// bit for each role some matching gives it.
type ruleRole uint8

const (
	roleOwn ruleRole = 1 << iota
	roleRollout
)

// alignedRoles matches the names of a route's rules to the spec's rules (see
// RolloutRules), with each possible number of companion rules, and returns
// the roles each rule gets in the matchings that fit: roleRollout alone only
// where every one makes it the rollout's. It reports false when none fits.
func alignedRoles(names []string, spec []SpecRule) ([]ruleRole, bool) {
	roles := make([]ruleRole, len(names))
	fits := false
	for companions := range len(companionSuffixes) + 1 {
		if (aligner{names: names, spec: spec, companions: companions}).roles(roles) {
			fits = true
		}
	}
	return roles, fits
}

// An aligner matches the names of a route's rules to the spec's rules, with
// a number of companion rules for each weighted rule.
type aligner struct {
	names      []string
	spec       []SpecRule
	companions int
}

// steps lists the steps the spec's rule i can take from the route's rule j:
// how many of the route's rules it makes. A rule of its own makes the rule
// of its name, or none; a weighted rule makes its companions, then itself.
func (a aligner) steps(i, j int) []int {
	n, want := len(a.names), sectionName(a.spec[i].Name)
	if a.spec[i].Own {
		if j < n && a.names[j] == want {
			return []int{0, 1}
		}
		return []int{0}
	}
	if j+a.companions >= n || a.names[j+a.companions] != want {
		return nil
	}
	for c := range a.companions {
		if !isCompanion(a.names[j+c], a.spec[i].Name) {
			return nil
		}
	}
	return []int{a.companions + 1}
}

// reach finds, for each point i of the spec's rules and j of the route's,
// whether the spec's rules before i can make the route's before j (ahead),
// and whether the ones from i on can make the ones from j on (behind).
func (a aligner) reach() (ahead, behind [][]bool) {
	n, s := len(a.names), len(a.spec)
	ahead, behind = make([][]bool, s+1), make([][]bool, s+1)
	for i := range ahead {
		ahead[i], behind[i] = make([]bool, n+1), make([]bool, n+1)
	}
	ahead[0][0], behind[s][n] = true, true
	for i := range s {
		for j := range n + 1 {
			for _, k := range a.steps(i, j) {
				ahead[i+1][j+k] = ahead[i+1][j+k] || ahead[i][j]
			}
		}
	}
	for i := s - 1; i >= 0; i-- {
		for j := range n + 1 {
			behind[i][j] = slices.ContainsFunc(a.steps(i, j), func(k int) bool { return behind[i+1][j+k] })
		}
	}
	return ahead, behind
}

// roles adds to roles what the matchings that fit make of each rule of the
// route, and reports whether any fits: a step between two points that a
// matching reaches from both ends is part of one.
func (a aligner) roles(roles []ruleRole) bool {
	ahead, behind := a.reach()
	if !ahead[len(a.spec)][len(a.names)] {
		return false
	}
	for i, rule := range a.spec {
		r := roleRollout
		if rule.Own {
			r = roleOwn
		}
		for j := range len(a.names) + 1 {
			for _, k := range a.steps(i, j) {
				if !ahead[i][j] || !behind[i+1][j+k] {
					continue
				}
				for m := j; m < j+k; m++ {
					roles[m] |= r
				}
			}
		}
	}
	return true
}

// rolloutByName reports whether a rule's name alone says it is the
// rollout's: the name of a weighted rule of the spec, or of one of its
// companions, and of no rule of its own.
func rolloutByName(rule string, spec []SpecRule) bool {
	if rule == "" || slices.ContainsFunc(spec, func(s SpecRule) bool { return s.Own && sectionName(s.Name) == rule }) {
		return false
	}
	return slices.ContainsFunc(spec, func(s SpecRule) bool {
		return !s.Own && sectionName(s.Name) != "" && (sectionName(s.Name) == rule || isCompanion(rule, s.Name))
	})
}

// isCompanion reports whether a rule's name is the name of a companion rule
// of the spec's rule named weighted: unnamed with it, or named after it.
func isCompanion(rule string, weighted *gwv1.SectionName) bool {
	if sectionName(weighted) == "" {
		return rule == ""
	}
	return slices.ContainsFunc(companionSuffixes, func(suffix string) bool { return rule == sectionName(weighted)+suffix })
}

// sectionName is a rule's name, "" for an unnamed rule.
func sectionName(n *gwv1.SectionName) string {
	return string(ptr.Deref(n, ""))
}
