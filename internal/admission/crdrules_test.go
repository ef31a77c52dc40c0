package admission

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

var update = flag.Bool("update", false, "rewrite testdata/crd-constraints.golden from the Gateway API CRDs")

// mirrored are the CRD versions whose rules this package mirrors.
var mirrored = []struct {
	file     string
	versions []string
}{
	{"gateway.networking.k8s.io_httproutes.yaml", []string{"v1"}},
	{"gateway.networking.k8s.io_grpcroutes.yaml", []string{"v1"}},
	{"gateway.networking.k8s.io_tlsroutes.yaml", []string{"v1", "v1alpha2"}},
	{"gateway.networking.k8s.io_tcproutes.yaml", []string{"v1", "v1alpha2"}},
	{"gateway.networking.k8s.io_udproutes.yaml", []string{"v1", "v1alpha2"}},
	{"gateway.networking.k8s.io_referencegrants.yaml", []string{"v1", "v1beta1"}},
	{"gateway.networking.k8s.io_backendtlspolicies.yaml", []string{"v1", "v1alpha3"}},
}

// constraintKeys are the schema keywords that reject objects.
var constraintKeys = []string{
	"pattern", "maxLength", "minLength", "enum", "minimum", "maximum", "maxItems", "minItems", "required",
	"default", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "format", "type", "nullable",
	"exclusiveMinimum", "exclusiveMaximum", "maxProperties", "minProperties", "oneOf", "anyOf", "allOf", "not",
	"x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
}

// constraints lists every rule of the mirrored CRD versions of both
// channels, one line each, so that a new Gateway API version that changes a
// rule fails TestCRDConstraintsUnchanged until this package follows.
func constraints(t *testing.T) (lines, patterns, messages, rules []string) {
	t.Helper()
	dir, err := crdschema.GatewayAPIDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crdschema.Channels {
		for _, m := range mirrored {
			b, err := os.ReadFile(filepath.Join(dir, "config", "crd", string(c), m.file))
			if err != nil {
				t.Fatal(err)
			}
			var crd map[string]any
			if err := yaml.Unmarshal(b, &crd); err != nil {
				t.Fatal(err)
			}
			kind := crd["spec"].(map[string]any)["names"].(map[string]any)["kind"].(string)
			for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
				v := v.(map[string]any)
				if !slices.Contains(m.versions, v["name"].(string)) {
					continue
				}
				served := v["served"].(bool)
				prefix := fmt.Sprintf("%s %s/%s served=%t ", c, kind, v["name"], served)
				s := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
				walk(s, "spec", func(path, key string, value any) {
					switch key {
					case "pattern":
						patterns = append(patterns, value.(string))
					case "x-kubernetes-validations":
						for _, r := range value.([]any) {
							r := r.(map[string]any)
							messages = append(messages, fmt.Sprint(r["message"]))
							rules = append(rules, fmt.Sprint(r["rule"]))
						}
					}
					lines = append(lines, fmt.Sprintf("%s%s %s=%v", prefix, path, key, value))
				})
			}
		}
	}
	sort.Strings(lines)
	return slices.Compact(lines), patterns, messages, rules
}

func walk(s map[string]any, path string, visit func(path, key string, value any)) {
	for _, k := range constraintKeys {
		if v, ok := s[k]; ok {
			visit(path, k, v)
		}
	}
	if v, ok := s["x-kubernetes-validations"]; ok {
		visit(path, "x-kubernetes-validations", v)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, p := range props {
			walk(p.(map[string]any), path+"."+k, visit)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		walk(items, path+"[]", visit)
	}
	// The values of a map, such as a BackendTLSPolicy's options.
	if values, ok := s["additionalProperties"].(map[string]any); ok {
		walk(values, path+"{}", visit)
	}
}

// TestCRDConstraintsUnchanged pins the rules of the Gateway API CRDs that
// this package mirrors. When it fails after a Gateway API upgrade, review
// the diff, mirror the changes here, then run go test -run
// TestCRDConstraintsUnchanged -update ./internal/admission.
func TestCRDConstraintsUnchanged(t *testing.T) {
	lines, _, _, _ := constraints(t)
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "crd-constraints.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); d != "" {
		t.Errorf("the Gateway API CRDs changed: review and mirror, then -update. -want, +got:\n%s", d)
	}
}

// TestPatternsAndMessagesAreTheCRDs checks that every pattern and message
// this package uses is the CRDs' own, verbatim.
func TestPatternsAndMessagesAreTheCRDs(t *testing.T) {
	_, patterns, messages, rules := constraints(t)
	ourPatterns := []string{
		patGroup, patKind, patNamespace, patSubdomain, patHostname, patHeaderName, patHeaderValue,
		patDuration, patPath, patCORSOrigin, patGRPCService, patGRPCMethod, patWellKnownCA, patAbsoluteURI,
	}
	for _, p := range ourPatterns {
		if !slices.Contains(patterns, p) && !containsSubstring(rules, p) {
			t.Errorf("pattern %q is in no CRD", p)
		}
	}
	// The TLSRoute CEL rule writes this one with doubled backslashes.
	if !containsSubstring(rules, strings.ReplaceAll(patRFC1123, `\`, `\\`)) {
		t.Errorf("pattern %q is in no CRD rule", patRFC1123)
	}
	ourMessages := make([]string, 0, 80)
	ourMessages = append(ourMessages,
		msgServicePort, msgSectionSpecified, msgSectionUnique, msgSectionPortSpecified, msgSectionPortUnique,
		MsgRuleNameUnique, msgTotalMatches, msgHostnameIP, msgHostnameRFC1123, msgHostnameWildcard,
		msgAbsoluteTimeout, msgCookieConfigType, msgMirrorPercentFraction, msgFractionNumerator,
		msgRedirectWithBackends, msgRedirectPrefixMatch, msgRewritePrefixMatch, msgBackendRedirectPrefix,
		msgBackendRewritePrefix, msgRedirectOrRewrite, msgBackendRequestTimeout, msgPathAbsolute,
		msgPathDoubleSlash, msgPathDotSegment, msgPathDotDotSegment, msgPathEncodedSlashLower,
		msgPathEncodedSlashUpper, msgPathFragment, msgPathEndsDotDot, msgPathEndsDot, msgPathType, msgPathChars,
		msgFullPathSpecified, msgFullPathType, msgPrefixMatchSpecified, msgPrefixMatchType,
		msgCORSOriginsWildcard, msgCORSMethodsWildcard, msgCORSHeadersWildcard, msgAuthGRPCSpecified,
		msgAuthGRPCProtocol, msgAuthHTTPSpecified, msgAuthHTTPProtocol, msgGRPCServiceOrMethod,
		msgGRPCServiceChars, msgGRPCMethodChars,
		msgTargetSectionSpecified, msgTargetSectionUnique, msgCACertificatesBoth, msgCACertificatesNeither,
		msgSANHostnameSpecified, msgSANHostnameType, msgSANURISpecified, msgSANURIType,
	)
	for _, t := range unrepeatableHTTPFilters {
		ourMessages = append(ourMessages, filterRepeated(string(t)))
	}
	for _, f := range []struct{ field, typ string }{
		{filterCORS, "CORS"},
		{filterRequestHeaderModifier, "RequestHeaderModifier"},
		{filterResponseHeaderModifier, "ResponseHeaderModifier"},
		{filterRequestMirror, "RequestMirror"},
		{filterRequestRedirect, "RequestRedirect"},
		{filterURLRewrite, "URLRewrite"},
		{filterExtensionRef, "ExtensionRef"},
		{filterExternalAuth, "ExternalAuth"},
	} {
		ourMessages = append(ourMessages, filterMustBeNil(f.field, f.typ), filterMustBeSet(f.field, f.typ))
	}
	for _, m := range ourMessages {
		if !slices.Contains(messages, m) {
			t.Errorf("message %q is in no CRD", m)
		}
	}
	// And every CRD message is ours.
	for _, m := range messages {
		if !slices.Contains(ourMessages, m) {
			t.Errorf("CRD message %q is not mirrored", m)
		}
	}
}

func containsSubstring(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}
