package main

// The route features: stickiness on both sides, retries, backend TLS,
// UDPRoute, on every route kind. What the function accepts, the CRDs
// accept; what it refuses is a Fatal naming the field.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRouteFeaturesRefusedWithTheirField: what the function refuses of
// stickiness, retries, backend TLS, UDPRoute and rules of their own is a
// Fatal naming the field, the attacks on a cookie's attributes and the
// Set-Cookie header among them.
func TestRouteFeaturesRefusedWithTheirField(t *testing.T) {
	cases := map[string]struct {
		xr    string
		field string // the field the Fatal must name
	}{
		"SameCookieNames":           {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, primaryCookieName: canary, maxAge: 1h}`), "spec.traffic.sessionAffinity.primaryCookieName"},
		"SetCookieOnPrimary":        {featureXR("HTTPRoute", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: SET-COOKIE, value: a=1}]}}]`, "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`), "spec.primary.filters[0].responseHeaderModifier.add[0].name"},
		"CanaryRemovesSetCookie":    {featureXR("HTTPRoute", "", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [set-cookie]}}]`, `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.canary.filters[0].responseHeaderModifier.remove[0]"},
		"PrimaryRemovesSetCookie":   {featureXR("HTTPRoute", "", `, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [Set-Cookie]}}]`, "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}`), "spec.primary.filters[0].responseHeaderModifier.remove[0]"},
		"RuleSetsSetCookie":         {featureXR("HTTPRoute", `{name: api, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: Set-Cookie, value: "x=1"}]}}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].filters[0].responseHeaderModifier.set[0].name"},
		"RuleRemovesSetCookie":      {featureXR("HTTPRoute", `{name: api, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [Set-Cookie]}}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].filters[0].responseHeaderModifier.remove[0]"},
		"MirrorMatchOnCookie":       {featureXR("HTTPRoute", "", "", "", `, mirror: {matches: [{headers: [{name: Cookie, value: a}]}]}, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.traffic.mirror.matches[0].headers[0].name"},
		"ABAndMirrorOnOneHeader":    {featureXR("HTTPRoute", "", "", "", `, matches: [{headers: [{name: x-canary, type: RegularExpression, value: "1|2"}]}], mirror: {matches: [{method: GET, headers: [{name: x-canary, value: "2"}]}]}`), "spec.traffic.mirror.matches[0]"},
		"CookieMatchOnRule":         {featureXR("HTTPRoute", `{name: api, matches: [{path: {type: PathPrefix, value: /}, headers: [{name: cookie, value: a}]}]}`, "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.rules[0].matches[0].headers[0].name"},
		"PathCRLF":                  {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {path: "/a\r\nSet-Cookie: x=1"}}`), "spec.traffic.sessionAffinity.attributes.path"},
		"PathSemicolon":             {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {path: "/; Domain=evil.example"}}`), "spec.traffic.sessionAffinity.attributes.path"},
		"DomainInjection":           {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {domain: "example.com; SameSite=None"}}`), "spec.traffic.sessionAffinity.attributes.domain"},
		"SameSiteNoneInsecure":      {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {sameSite: None}}`), "spec.traffic.sessionAffinity.attributes.sameSite"},
		"PersistenceWithPrimary":    {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h, mode: SessionPersistence}`), "spec.traffic.sessionAffinity.primaryCookieName"},
		"PersistenceWithAttrs":      {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, mode: SessionPersistence, attributes: {secure: true}}`), "spec.traffic.sessionAffinity.attributes"},
		"PersistenceOnTCPRoute":     {featureXR("TCPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h, mode: SessionPersistence}`), "spec.traffic.sessionAffinity"},
		"CookieOnGRPCRoute":         {featureXR("GRPCRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 1h}`), "spec.traffic.sessionAffinity"},
		"MaxAgeTooLong":             {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 100000h}`), "spec.traffic.sessionAffinity.maxAge"},
		"MaxAgeUnderASecond":        {featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: canary, maxAge: 999ms}`), "spec.traffic.sessionAffinity.maxAge"},
		"RetryCodeLow":              {featureXR("HTTPRoute", `{name: api, retry: {codes: [399]}}`, "", "", ""), "spec.rules[0].retry.codes[0]"},
		"RetryCodeHigh":             {featureXR("HTTPRoute", `{name: api, retry: {codes: [600]}}`, "", "", ""), "spec.rules[0].retry.codes[0]"},
		"RetryCodeTwice":            {featureXR("HTTPRoute", `{name: api, retry: {codes: [503, 503]}}`, "", "", ""), "spec.rules[0].retry.codes[1]"},
		"RetryNoAttempts":           {featureXR("HTTPRoute", `{name: api, retry: {attempts: 0}}`, "", "", ""), "spec.rules[0].retry.attempts"},
		"RetryBadBackoff":           {featureXR("HTTPRoute", `{name: api, retry: {backoff: 1d}}`, "", "", ""), "spec.rules[0].retry.backoff"},
		"RetryOnGRPCRoute":          {featureXR("GRPCRoute", `{name: api, retry: {attempts: 2}}`, "", "", ""), "spec.rules[0].retry"},
		"RetryOnTCPRoute":           {featureXR("TCPRoute", `{name: api, retry: {attempts: 2}}`, "", "", ""), "spec.rules[0].retry"},
		"TLSOnBackendRef":           {strings.Replace(featureXR("HTTPRoute", "", "", "", ""), "canary: {service: {selector: {app: podinfo-canary}}", "canary: {backendRef: {name: c}, tls: {hostname: c.example.com, wellKnownCACertificates: System}", 1), "spec.canary.tls"},
		"TLSOnTLSRoute":             {featureXR("TLSRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), "spec.primary.tls"},
		"TLSOnUDPRoute":             {featureXR("UDPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System}`, "", ""), "spec.primary.tls"},
		"TLSWildcard":               {featureXR("HTTPRoute", "", `, tls: {hostname: "*.example.com", wellKnownCACertificates: System}`, "", ""), "spec.primary.tls.hostname"},
		"TLSBothCAKinds":            {featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`, "", ""), "spec.primary.tls"},
		"TLSNoCA":                   {featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com}`, "", ""), "spec.primary.tls"},
		"TLSExternalNameNotAllowed": {strings.Replace(featureXR("HTTPRoute", "", "", "", ""), "primary: {service: {selector: {app: podinfo}}", "primary: {externalName: p.example.com, tls: {hostname: p.example.com, wellKnownCACertificates: System}", 1), "spec.primary.externalName"},
		"UDPHostnames":              {strings.Replace(featureXR("UDPRoute", "", "", "", ""), "  port: 9898", "  hostnames: [a.example.com]\n  port: 9898", 1), "spec.hostnames"},
		"UDPFilters":                {featureXR("UDPRoute", "", `, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: a, value: b}]}}]`, "", ""), "spec.primary.filters"},
		"UDPMatches":                {featureXR("UDPRoute", `{name: x, matches: [{path: {type: PathPrefix, value: /}}]}`, "", "", ""), "spec.rules[0].matches"},
		"UDPRuleOfItsOwn":           {featureXR("UDPRoute", `{name: x, backendRefs: [{name: a, port: 53}]}`, "", "", ""), "spec.rules[0].backendRefs"},
		"UDPABMatches":              {featureXR("UDPRoute", "", "", "", `, matches: [{headers: [{name: a, value: b}]}]`), "spec.traffic.matches"},
		"EveryRuleOfItsOwn":         {featureXR("HTTPRoute", `{name: a, backendRefs: [{name: a, port: 80}]}`, "", "", ""), "spec.rules"},
		"RedirectBesideBackends":    {featureXR("HTTPRoute", `{name: a, filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}], backendRefs: [{name: a, port: 80}]}`+"\n    - {name: b}", "", "", ""), "spec.rules[0].filters[0]"},
		"TLSCARefWithNamespace":     {featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca, namespace: kube-system}]}`, "", ""), "spec.primary.tls.caCertificateRefs[0]"},
		"RuleBackendWithoutPort":    {featureXR("HTTPRoute", `{name: a, matches: [{path: {type: PathPrefix, value: /a}}], backendRefs: [{name: a}]}`+"\n    - {name: b}", "", "", ""), "spec.rules[0].backendRefs[0]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rsp := runFunction(t, tc.xr, allowTest, nil, nil)
			if msg := fatalOf(rsp); !strings.Contains(msg, tc.field) {
				t.Errorf("want a Fatal naming %s, got %q (weights %v)", tc.field, msg, viewOf(t, rsp).Weights)
			}
		})
	}
}

// TestBackendTLSHostnameRefusesIPAddresses: tls.hostname is "a DNS name
// (no IP, no wildcard)". The BackendTLSPolicy CRD's PreciseHostname pattern
// admits 10.0.0.1, but SNI cannot carry an IP address (RFC 6066), so
// gateways send none or verify inconsistently: a Fatal naming the field,
// for the short and numeric IPv4 forms that resolvers accept (10.1,
// 2130706433, 0x7f.1) too, as for an externalName.
func TestBackendTLSHostnameRefusesIPAddresses(t *testing.T) {
	for _, host := range []string{"10.0.0.1", "169.254.169.254", "127.0.0.1", "::1", "fd00::1", "10.1", "2130706433", "0x7f.1", "127.1", "10.0.1"} {
		t.Run(host, func(t *testing.T) {
			_, rsp := runFunction(t, featureXR("HTTPRoute", "", `, tls: {hostname: "`+host+`", wellKnownCACertificates: System}`, "", ""), allowTest, nil, nil)
			if msg := fatalOf(rsp); !strings.Contains(msg, "spec.primary.tls.hostname") {
				t.Errorf("tls.hostname %s: want a Fatal naming spec.primary.tls.hostname, got %q (composed %v)", host, msg, viewOf(t, rsp).Resources)
			}
		})
	}
}

// TestBackendTLSCACertificateRefsPassedAsWritten: docs/reference.md,
// "Backend TLS", decision: ConfigMaps are core support, other kinds (a
// Secret, Envoy Gateway's ClusterTrustBundle) implementation-specific, and
// the function passes what the CRD admits as written, for the gateway to
// judge in ResolvedRefs.
func TestBackendTLSCACertificateRefsPassedAsWritten(t *testing.T) {
	for name, ref := range map[string]map[string]any{
		"ConfigMap":          {"group": "", "kind": "ConfigMap", "name": "ca"},
		"Secret":             {"group": "", "kind": "Secret", "name": "ca"},
		"ClusterTrustBundle": {"group": "certificates.k8s.io", "kind": "ClusterTrustBundle", "name": "ca"},
	} {
		t.Run(name, func(t *testing.T) {
			flow := fmt.Sprintf("{group: %q, kind: %s, name: %s}", ref["group"], ref["kind"], ref["name"])
			req, rsp := runFunction(t, featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, caCertificateRefs: [`+flow+`]}`, "", ""), allowTest, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("caCertificateRefs %s refused: %v", flow, viewOf(t, rsp).Results)
			}
			assertXRDAccepts(t, req, rsp)
			policy := rsp.GetDesired().GetResources()["backendtlspolicy-primary"].GetResource().AsMap()
			validation, _ := policy["spec"].(map[string]any)["validation"].(map[string]any)
			if diff := cmp.Diff([]any{ref}, validation["caCertificateRefs"]); diff != "" {
				t.Errorf("caCertificateRefs not composed as written: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestRouteFeaturesPassTheCRDs: specs at the edges of stickiness, retries,
// backend TLS and UDPRoute that the function accepts compose routes,
// grants and BackendTLSPolicies that the Gateway API CRDs (standard and
// experimental) accept, and a status the XRD admits.
func TestRouteFeaturesPassTheCRDs(t *testing.T) {
	crds := gatewayAPICRDs(t)
	cases := map[string]string{
		"CookieMaxAgeLongest":   featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, primaryCookieName: p, maxAge: 99999h, attributes: {path: "/a b%20", domain: example.com, secure: true, sameSite: None}}`),
		"CookieMaxAgeFraction":  featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 1.999s}`),
		"PersistenceLongest":    featureXR("HTTPRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 99999h, mode: SessionPersistence}`),
		"PersistenceOdd":        featureXR("GRPCRoute", "", "", "", `, sessionAffinity: {cookieName: c, maxAge: 90061.5s, mode: SessionPersistence}`),
		"RetryOnOwnAndWeighted": featureXR("HTTPRoute", `{name: api, retry: {codes: [500, 599, 400], attempts: 1, backoff: 1ms}}`+"\n    - {name: s, matches: [{path: {type: PathPrefix, value: /s}}], backendRefs: [{name: cdn, port: 80}], retry: {attempts: 3}}", "", "", `, matches: [{headers: [{name: x, value: "1"}]}], sessionAffinity: {cookieName: c, maxAge: 1h}`),
		"TLSBothSides":          featureXR("HTTPRoute", "", `, tls: {hostname: p.example.com, wellKnownCACertificates: System, subjectAltNames: [{type: Hostname, hostname: "*.example.com"}, {type: URI, uri: "spiffe://cluster.local/ns/test/sa/p"}]}`, `, tls: {hostname: c.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`, ""),
		"UDP":                   strings.Replace(featureXR("UDPRoute", "", "", "", ""), "canary: {service: {selector: {app: podinfo-canary}}", "canary: {backendRef: {name: dns, namespace: monitoring, port: 53}", 1),
		"GRPCOwnRule":           featureXR("GRPCRoute", `{name: legacy, matches: [{method: {service: legacy.v1.Svc}}], backendRefs: [{name: legacy, port: 9000, weight: 3}]}`+"\n    - {name: api}", "", "", ""),
	}
	for name, x := range cases {
		t.Run(name, func(t *testing.T) {
			req, rsp := runFunction(t, x, allowMonitoring, nil, nil)
			if isFatal(rsp) {
				t.Fatalf("refused: %v", viewOf(t, rsp).Results)
			}
			crds.checkComposed(t, name, rsp)
			assertXRDAccepts(t, req, rsp)
			if name == "UDP" {
				d := rsp.GetDesired().GetResources()
				port := d["service-primary"].GetResource().AsMap()["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)
				if port["protocol"] != "UDP" || port["name"] != "udp" {
					t.Errorf("UDPRoute proxy Service port: %v", port)
				}
				g := d["referencegrant-monitoring"].GetResource().AsMap()["spec"].(map[string]any)["from"].([]any)[0].(map[string]any)
				if g["kind"] != "UDPRoute" {
					t.Errorf("UDPRoute grant from: %v", g)
				}
			}
		})
	}
}
