package xr

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
)

// FuzzParse feeds arbitrary JSON objects to Parse as the XR. Parse must never
// panic, must return either a CanaryRoute or an error of field errors, must
// not modify the XR, and everything it accepts must hold the limits that the
// rest of the function relies on.
//
// Seeds: the XRs of the table tests and the example XRs. Run it with
//
//	go test ./internal/xr -run '^$' -fuzz FuzzParse -fuzztime 3m
func FuzzParse(f *testing.F) {
	add := func(obj map[string]any) {
		b, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	parsed := parseCases(f)
	for _, name := range slices.Sorted(maps.Keys(parsed)) {
		add(parsed[name].args.xr)
	}
	scope := scopeCases()
	for _, name := range slices.Sorted(maps.Keys(scope)) {
		add(xrWith(f, scope[name].patches...))
	}
	spec := specCases()
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		add(xrWith(f, spec[name].args.patches...))
	}
	paths, err := filepath.Glob("../../example/*/xr.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		before := runtime.DeepCopyJSON(obj)
		for _, d := range [][]gwv1.ParentReference{nil, defaultParents} {
			cr, err := Parse(obj, d)
			if diff := cmp.Diff(before, obj); diff != "" {
				t.Fatalf("Parse modified the XR: -before, +after:\n%s", diff)
			}
			if (cr == nil) == (err == nil) {
				t.Fatalf("Parse returned %v and %v: want exactly one of a CanaryRoute and an error", cr, err)
			}
			if err != nil {
				if len(fieldErrors(t, err)) == 0 {
					t.Fatalf("Parse returned an error without field errors: %v", err)
				}
				continue
			}
			again, err := Parse(obj, d)
			if err != nil {
				t.Fatalf("second Parse failed: %v", err)
			}
			if diff := cmp.Diff(cr, again, cmpopts.IgnoreUnexported(CanaryRoute{})); diff != "" {
				t.Fatalf("Parse is not deterministic: -first, +second:\n%s", diff)
			}
			checkInvariants(t, cr)
		}
	})
}

// checkInvariants fails the test when a CanaryRoute that Parse accepted
// breaks a limit of the reference that later steps rely on.
func checkInvariants(t *testing.T, cr *CanaryRoute) {
	t.Helper()
	s := cr.Spec
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("accepted an invalid CanaryRoute: "+format, args...)
	}
	if msgs := validation.IsDNS1123Label(cr.RouteNamespace); len(msgs) > 0 {
		fail("route namespace %q: %v", cr.RouteNamespace, msgs)
	}
	if msgs := validation.IsDNS1123Subdomain(cr.RouteName); len(msgs) > 0 {
		fail("route name %q: %v", cr.RouteName, msgs)
	}
	if !slices.Contains(RouteKinds, s.Kind) {
		fail("kind %q", s.Kind)
	}
	if s.ReferenceGrants != GrantsCompose && s.ReferenceGrants != GrantsSkip {
		fail("referenceGrants %q", s.ReferenceGrants)
	}
	if n := len(s.ParentRefs); n < 1 || n > maxParentRefs {
		fail("%d parentRefs", n)
	}
	switch n := len(s.Hostnames); {
	case n > maxHostnames:
		fail("%d hostnames", n)
	case s.Kind == KindTLSRoute && n == 0:
		fail("a TLSRoute without hostnames")
	case (s.Kind == KindTCPRoute || s.Kind == KindUDPRoute) && n > 0:
		fail("a %s with hostnames", s.Kind)
	}
	if s.Port < 0 || s.Port > 65535 {
		fail("port %d", s.Port)
	}
	limit := MaxRules
	if s.Kind.Streams() {
		limit = 1
	}
	if len(s.Rules) > limit {
		fail("%d rules for a %s", len(s.Rules), s.Kind)
	}
	if len(s.Rules) > 0 && !slices.ContainsFunc(s.Rules, func(r Rule) bool { return !r.Own() }) {
		fail("no rule carries the rollout")
	}
	for i, r := range s.Rules {
		if s.Kind.Streams() && (r.Own() || r.Retry != nil) {
			fail("rule %d of a %s has backendRefs or a retry", i, s.Kind)
		}
		if s.Kind == KindGRPCRoute && r.Retry != nil {
			fail("rule %d of a GRPCRoute has a retry", i)
		}
	}
	for _, side := range []struct {
		role Role
		side Side
	}{{RolePrimary, s.Primary}, {RoleCanary, s.Canary}} {
		n := 0
		if side.side.Service != nil {
			n++
			if len(side.side.Service.Selector) == 0 {
				fail("%s proxy Service without a selector", side.role)
			}
		}
		if side.side.ExternalName != "" {
			n++
		}
		if side.side.BackendRef != nil {
			n++
		}
		if n != 1 {
			fail("%s has %d backend sources", side.role, n)
		}
		if side.side.ComposesService() {
			if msgs := validation.IsDNS1035Label(ProxyServiceName(cr.RouteName, side.role)); len(msgs) > 0 {
				fail("%s proxy Service name: %v", side.role, msgs)
			}
		}
		if t := side.side.TLS; t != nil && (!side.side.ComposesService() || t.Hostname == "" ||
			(len(t.CACertificateRefs) > 0) == (t.WellKnownCACertificates != nil) || (s.Kind != KindHTTPRoute && s.Kind != KindGRPCRoute)) {
			fail("%s tls %+v", side.role, *t)
		}
	}
	if s.Primary.Revision != "" {
		fail("a primary revision")
	}
	tr := s.Traffic
	if tr.Weight != nil && !tr.Weight.Valid() {
		fail("weight %s", *tr.Weight)
	}
	if tr.Weight != nil && len(tr.Steps) > 0 {
		fail("both weight and steps")
	}
	if len(tr.Steps) > 0 && s.Canary.Revision == "" {
		fail("steps without a revision")
	}
	for i, st := range tr.Steps {
		if !st.Weight.Valid() || st.Pause < 0 || (i > 0 && st.Weight.Less(tr.Steps[i-1].Weight)) {
			fail("step %d: %+v", i, st)
		}
	}
	if m := tr.Mirror; m != nil && (m.Percent < 0 || m.Percent > 100) {
		fail("mirror percent %d", m.Percent)
	}
	if a := tr.Affinity; a != nil && ((a.Mode == AffinityCookie && s.Kind != KindHTTPRoute) ||
		(a.Mode == AffinitySessionPersistence && s.Kind != KindHTTPRoute && s.Kind != KindGRPCRoute) ||
		a.MaxAge < 1e9 || a.MaxAge > maxSessionAge || !cookieNamePattern.MatchString(a.CookieName) ||
		(a.PrimaryCookieName != "" && (a.PrimaryCookieName == a.CookieName || a.Mode != AffinityCookie))) {
		fail("session affinity %+v on a %s", *a, s.Kind)
	}
	if s.Kind.Streams() && (tr.Mirror != nil || len(tr.HTTPMatches)+len(tr.GRPCMatches) > 0 ||
		len(s.Primary.HTTPFilters)+len(s.Canary.HTTPFilters)+len(s.Primary.GRPCFilters)+len(s.Canary.GRPCFilters) > 0) {
		fail("HTTP features on a %s", s.Kind)
	}
	for _, g := range tr.Gates {
		if g.APIVersion == "" || g.Kind == "" || g.Name == "" || (g.ConditionType == "") == (g.SuccessWhen == "") || (g.FailWhen != "" && g.SuccessWhen == "") || g.FailAfter < 0 {
			fail("gate %+v", g)
		}
	}
	for _, a := range tr.Analysis {
		meta, _ := a.Template["metadata"].(map[string]any)
		for _, f := range []string{"labels", "annotations"} {
			keys, _ := meta[f].(map[string]any)
			for k := range keys {
				if strings.HasPrefix(k, names.OwnKeyPrefix) {
					fail("analysis %s writes the function's own %s key %q", a.Name, f, k)
				}
			}
		}
	}
}

// FuzzParsePatch starts from a valid XR of the table tests and replaces the
// value at a fuzzed path (dots between keys, numbers index lists) with a
// fuzzed JSON value. Byte mutations of whole XRs mostly break the JSON;
// this reaches every field with values of every type. Same properties as
// FuzzParse.
func FuzzParsePatch(f *testing.F) {
	spec := specCases()
	caseNames := slices.Sorted(maps.Keys(spec))
	for i, path := range []string{
		"spec.traffic.weight", "spec.traffic.steps.0.pause", "spec.rules.0.matches.0.path.value",
		"spec.primary.service.targetPort", "spec.canary.backendRef", "spec.hostnames.0", "status.rollout.step",
		"spec.parentRefs.0.port", "spec.traffic.sessionAffinity.maxAge", "metadata.namespace", "spec.claimRef",
	} {
		for _, v := range []string{`null`, `0`, `-1`, `1e10`, `"x"`, `""`, `[]`, `{}`, `[{}]`, `true`, `"1h"`, `"*"`} {
			f.Add(uint16(i*7), path, []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, seed uint16, path string, value []byte) {
		var v any
		if err := json.Unmarshal(value, &v); err != nil {
			return
		}
		tc := spec[caseNames[int(seed)%len(caseNames)]]
		obj := xrWith(t, tc.args.patches...)
		if !setPath(obj, strings.Split(path, "."), v) {
			return
		}
		before := runtime.DeepCopyJSON(obj)
		cr, err := Parse(obj, tc.args.defaults)
		if diff := cmp.Diff(before, obj); diff != "" {
			t.Fatalf("Parse modified the XR: -before, +after:\n%s", diff)
		}
		if (cr == nil) == (err == nil) {
			t.Fatalf("Parse returned %v and %v: want exactly one of a CanaryRoute and an error", cr, err)
		}
		if err != nil {
			if len(fieldErrors(t, err)) == 0 {
				t.Fatalf("Parse returned an error without field errors: %v", err)
			}
			return
		}
		checkInvariants(t, cr)
	})
}

// setPath sets the value at a path of keys and list indexes in a JSON
// object, creating objects on the way. It reports whether the path fits the
// object.
func setPath(obj any, path []string, v any) bool {
	if len(path) == 0 {
		return false
	}
	switch o := obj.(type) {
	case map[string]any:
		if len(path) == 1 {
			o[path[0]] = v
			return true
		}
		next, ok := o[path[0]]
		if !ok || next == nil {
			next = map[string]any{}
			o[path[0]] = next
		}
		return setPath(next, path[1:], v)
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(o) {
			return false
		}
		if len(path) == 1 {
			o[i] = v
			return true
		}
		return setPath(o[i], path[1:], v)
	default:
		return false
	}
}
