package admission

import (
	"regexp"
	"testing"
)

// matchers pairs each hand-written matcher with the pattern it replaces.
var matchers = []struct {
	name  string
	re    *regexp.Regexp
	match func(string) bool
}{
	{"HeaderName", reHeaderName, matchHeaderName},
	{"HeaderValue", reHeaderValue, matchHeaderValue},
	{"Subdomain", reSubdomain, matchSubdomain},
	{"Label", reNamespace, matchLabel},
	{"Hostname", reHostname, matchHostname},
	{"Group", reGroup, matchGroup},
	{"Kind", reKind, matchKind},
}

var matcherSeeds = []string{
	"", "a", "A", "-", "a-", "-a", "a-b", "a.b", "a..b", ".a", "a.", "*", "*.", "*.a", "**.a", "a.*", "*a",
	"x-canary", "X_Y", "a b", "a  b", " a", "a ", "a\tb", "a\t\tb", "a \tb", "\t", " ", "é", "a\x00", "a\x7f",
	"!#$%&'*+-.^_`|~", "\"", "(", "Gateway", "gateway.networking.k8s.io", "9", "9a", "a9", "A-9", "a\xffb",
}

func TestMatchers(t *testing.T) {
	for _, m := range matchers {
		for _, s := range matcherSeeds {
			if want, got := m.re.MatchString(s), m.match(s); want != got {
				t.Errorf("match%s(%q): want %t as the pattern, got %t", m.name, s, want, got)
			}
		}
	}
}

// FuzzMatchers checks that each hand-written matcher agrees with its
// pattern on any string.
func FuzzMatchers(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range matchers {
			if want, got := m.re.MatchString(s), m.match(s); want != got {
				t.Errorf("match%s(%q): want %t as the pattern, got %t", m.name, s, want, got)
			}
		}
	})
}
