package xr

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// specArgs are the inputs of a TestParseSpec case.
type specArgs struct {
	patches  []patch
	defaults []gwv1.ParentReference
	// pick selects what the case checks of a valid result.
	pick func(*CanaryRoute) any
}

// specWant is what a TestParseSpec case expects: the picked value of a
// valid result, or the errors.
type specWant struct {
	value any
	errs  []fieldErr
}

type specCase struct {
	reason string
	args   specArgs
	want   specWant
}

// specCases are the cases of TestParseSpec, and seeds of FuzzParse.
func specCases() map[string]specCase {
	type args = specArgs
	type want = specWant
	kind := func(k RouteKind) patch { return set("spec.kind", string(k)) }
	// l4 turns the base XR into a valid TLSRoute or TCPRoute.
	l4 := func(k RouteKind) []patch {
		ps := []patch{kind(k)}
		if k == KindTCPRoute || k == KindUDPRoute {
			ps = append(ps, del("spec.hostnames"))
		}
		return ps
	}
	withL4 := func(k RouteKind, more ...patch) []patch { return append(l4(k), more...) }
	steps := func(s string) []patch {
		return []patch{del("spec.traffic.weight"), set("spec.traffic.steps", s), set("spec.canary.revision", "v2")}
	}
	pickKind := func(cr *CanaryRoute) any { return cr.Spec.Kind }
	pickParents := func(cr *CanaryRoute) any { return cr.Spec.ParentRefs }
	pickHostnames := func(cr *CanaryRoute) any { return cr.Spec.Hostnames }
	pickRules := func(cr *CanaryRoute) any { return cr.Spec.Rules }
	pickPrimary := func(cr *CanaryRoute) any { return cr.Spec.Primary }
	pickCanary := func(cr *CanaryRoute) any { return cr.Spec.Canary }
	pickTraffic := func(cr *CanaryRoute) any { return cr.Spec.Traffic }
	pickSteps := func(cr *CanaryRoute) any { return cr.Spec.Traffic.Steps }
	pickGates := func(cr *CanaryRoute) any { return cr.Spec.Traffic.Gates }
	pickStatus := func(cr *CanaryRoute) any { return cr.Status }
	gate := `{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available}`

	return map[string]specCase{
		// kind
		"KindDefault": {
			reason: "kind defaults to HTTPRoute.",
			args:   args{pick: pickKind},
			want:   want{value: KindHTTPRoute},
		},
		"KindGRPCRoute": {
			reason: "GRPCRoute is a supported kind.",
			args:   args{patches: []patch{kind(KindGRPCRoute)}, pick: pickKind},
			want:   want{value: KindGRPCRoute},
		},
		"KindTLSRoute": {
			reason: "TLSRoute is a supported kind.",
			args:   args{patches: l4(KindTLSRoute), pick: pickKind},
			want:   want{value: KindTLSRoute},
		},
		"KindTCPRoute": {
			reason: "TCPRoute is a supported kind.",
			args:   args{patches: l4(KindTCPRoute), pick: pickKind},
			want:   want{value: KindTCPRoute},
		},
		"KindUDPRoute": {
			reason: "UDPRoute is a supported kind, like TCPRoute.",
			args:   args{patches: l4(KindUDPRoute), pick: pickKind},
			want:   want{value: KindUDPRoute},
		},
		"KindUnknown": {
			reason: "kind is an enum: SCTPRoute is not supported.",
			args:   args{patches: []patch{kind("SCTPRoute")}},
			want:   want{errs: []fieldErr{notSupported("spec.kind", "SCTPRoute")}},
		},
		"UDPRouteHostnames": {
			reason: "A UDPRoute matches no hostnames.",
			args:   args{patches: []patch{kind(KindUDPRoute)}},
			want:   want{errs: []fieldErr{forbidden("spec.hostnames", "a UDPRoute matches no hostnames")}},
		},
		"KindCase": {
			reason: "kind is case-sensitive, as Kubernetes kinds are.",
			args:   args{patches: []patch{kind("httproute")}},
			want:   want{errs: []fieldErr{notSupported("spec.kind", "httproute")}},
		},

		// parentRefs
		"ParentRefsRequired": {
			reason: "Without parents in the XR or the Input the route attaches to nothing.",
			args:   args{patches: []patch{del("spec.parentRefs")}},
			want:   want{errs: []fieldErr{required("spec.parentRefs", "defaultParentRefs")}},
		},
		"ParentRefsEmptyList": {
			reason: "An empty list is the same as none.",
			args:   args{patches: []patch{set("spec.parentRefs", "[]")}},
			want:   want{errs: []fieldErr{required("spec.parentRefs", "defaultParentRefs")}},
		},
		"ParentRefsOwnWinOverDefaults": {
			reason: "The XR's own parents win over the Input's defaults.",
			args:   args{defaults: defaultParents, pick: pickParents},
			want:   want{value: []gwv1.ParentReference{{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress")}}},
		},
		"ParentRefsMax": {
			reason: "32 parents are allowed.",
			args:   args{patches: []patch{set("spec.parentRefs", listf(32, "{name: gw%d}"))}, pick: func(cr *CanaryRoute) any { return len(cr.Spec.ParentRefs) }},
			want:   want{value: 32},
		},
		"ParentRefsTooMany": {
			reason: "At most 32 parents.",
			args:   args{patches: []patch{set("spec.parentRefs", listf(33, "{name: gw%d}"))}},
			want:   want{errs: []fieldErr{tooMany("spec.parentRefs", 32)}},
		},
		"ParentRefInvalidNamespace": {
			reason: "A parent's namespace must be a namespace name (Gateway API pattern).",
			args:   args{patches: []patch{set("spec.parentRefs", `[{name: gateway, namespace: Istio_Ingress}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.parentRefs[0].namespace", "Istio_Ingress")}},
		},
		"ParentRefInvalidPort": {
			reason: "A parent's port is a port number.",
			args:   args{patches: []patch{set("spec.parentRefs", `[{name: gateway, port: 0}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.parentRefs[0].port", "greater than or equal to 1")}},
		},
		"ParentRefSameParentTwice": {
			reason: "The same Gateway twice needs distinct sectionNames (the CRDs' rules).",
			args:   args{patches: []patch{set("spec.parentRefs", `[{name: gateway}, {name: gateway}]`)}},
			want: want{errs: []fieldErr{
				invalid("spec.parentRefs", "sectionName must be unique"),
				invalid("spec.parentRefs", "sectionName or port must be unique"),
			}},
		},
		"ParentRefUnknownField": {
			reason: "A typo in a parentRef is an error naming it, not a silently dropped field.",
			args:   args{patches: []patch{set("spec.parentRefs", `[{name: gateway, sectionNmae: https}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.parentRefs[0].sectionNmae", "unknown field")}},
		},

		// hostnames
		"HostnamesOptionalHTTP": {
			reason: "An HTTPRoute may match every hostname.",
			args:   args{patches: []patch{del("spec.hostnames")}, pick: pickHostnames},
			want:   want{value: []gwv1.Hostname(nil)},
		},
		"HostnamesMax": {
			reason: "16 hostnames are allowed.",
			args:   args{patches: []patch{set("spec.hostnames", listf(16, "h%d.example.com"))}, pick: func(cr *CanaryRoute) any { return len(cr.Spec.Hostnames) }},
			want:   want{value: 16},
		},
		"HostnameWrongType": {
			reason: "A list element of the wrong type is named by its index, not by the list.",
			args:   args{patches: []patch{set("spec.hostnames", `[www.example.com, 5]`)}},
			want:   want{errs: []fieldErr{invalid("spec.hostnames[1]", "must be a string, not number")}},
		},
		"ParentRefWrongType": {
			reason: "A list element that should be an object is named by its index.",
			args:   args{patches: []patch{set("spec.parentRefs", `[{name: gateway}, 7]`)}},
			want:   want{errs: []fieldErr{invalid("spec.parentRefs[1]", "must be an object, not number")}},
		},
		"HostnamesTooMany": {
			reason: "At most 16 hostnames.",
			args:   args{patches: []patch{set("spec.hostnames", listf(17, "h%d.example.com"))}},
			want:   want{errs: []fieldErr{tooMany("spec.hostnames", 16)}},
		},
		"HostnameInvalid": {
			reason: "A hostname follows Gateway API's pattern; the error names its index.",
			args:   args{patches: []patch{set("spec.hostnames", `[www.example.com, -bad.example.com]`)}},
			want:   want{errs: []fieldErr{invalid("spec.hostnames[1]", "-bad.example.com")}},
		},
		"HostnamesGRPC": {
			reason: "A GRPCRoute takes hostnames like an HTTPRoute.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.hostnames", `["*.example.com"]`)}, pick: pickHostnames},
			want:   want{value: []gwv1.Hostname{"*.example.com"}},
		},
		"HostnamesTLSRequired": {
			reason: "A TLSRoute routes by SNI: it needs a hostname.",
			args:   args{patches: []patch{kind(KindTLSRoute), del("spec.hostnames")}},
			want:   want{errs: []fieldErr{required("spec.hostnames", "TLSRoute")}},
		},
		"HostnamesTLSTooMany": {
			reason: "A TLSRoute takes at most 16 hostnames too.",
			args:   args{patches: []patch{kind(KindTLSRoute), set("spec.hostnames", listf(17, "h%d.example.com"))}},
			want:   want{errs: []fieldErr{tooMany("spec.hostnames", 16)}},
		},
		"HostnamesTLSWildcard": {
			reason: "A TLSRoute takes a wildcard hostname.",
			args:   args{patches: []patch{kind(KindTLSRoute), set("spec.hostnames", `["*.example.com"]`)}, pick: pickHostnames},
			want:   want{value: []gwv1.Hostname{"*.example.com"}},
		},
		"HostnamesTLSIP": {
			reason: "A TLSRoute hostname cannot be an IP (the TLSRoute CRD's rule).",
			args:   args{patches: []patch{kind(KindTLSRoute), set("spec.hostnames", `["10.0.0.1"]`)}},
			want:   want{errs: []fieldErr{invalid("spec.hostnames", "Hostnames cannot contain an IP")}},
		},
		"HostnamesTCPForbidden": {
			reason: "A TCPRoute matches no hostnames: a hostname is refused, never dropped.",
			args:   args{patches: []patch{kind(KindTCPRoute)}},
			want:   want{errs: []fieldErr{forbidden("spec.hostnames", "TCPRoute")}},
		},

		// port
		"PortOptional": {
			reason: "spec.port may be left out; 0 stands for unset.",
			args:   args{patches: []patch{del("spec.port")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Port }},
			want:   want{value: int32(0)},
		},
		"PortZero": {
			reason: "A port written as 0 is no port number.",
			args:   args{patches: []patch{set("spec.port", "0")}},
			want:   want{errs: []fieldErr{invalid("spec.port", "between 1 and 65535")}},
		},
		"PortTooHigh": {
			reason: "65536 is no port number.",
			args:   args{patches: []patch{set("spec.port", "65536")}},
			want:   want{errs: []fieldErr{invalid("spec.port", "between 1 and 65535")}},
		},
		"PortMax": {
			reason: "65535 is a port number.",
			args:   args{patches: []patch{set("spec.port", "65535")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Port }},
			want:   want{value: int32(65535)},
		},
		"PortString": {
			reason: "A port of the wrong type is an error naming spec.port.",
			args:   args{patches: []patch{set("spec.port", `"9898"`)}},
			want:   want{errs: []fieldErr{invalid("spec.port", "must be an integer")}},
		},
		"PortFraction": {
			reason: "A fractional port is an error naming spec.port.",
			args:   args{patches: []patch{set("spec.port", `98.5`)}},
			want:   want{errs: []fieldErr{invalid("spec.port", "98.5")}},
		},

		// rules
		"RulesMax": {
			reason: "16 rules are allowed.",
			args:   args{patches: []patch{set("spec.rules", listf(16, "{name: r%d}"))}, pick: func(cr *CanaryRoute) any { return len(cr.Spec.Rules) }},
			want:   want{value: 16},
		},
		"RulesTooMany": {
			reason: "At most 16 rules.",
			args:   args{patches: []patch{set("spec.rules", listf(17, "{name: r%d}"))}},
			want:   want{errs: []fieldErr{tooMany("spec.rules", 16)}},
		},
		"RulesTLSOne": {
			reason: "A TLSRoute carries one rule.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.rules", `[{name: tls}, {name: other}]`))},
			want:   want{errs: []fieldErr{tooMany("spec.rules", 1)}},
		},
		"RulesTCPOne": {
			reason: "A TCPRoute carries one rule.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.rules", `[{}, {}]`))},
			want:   want{errs: []fieldErr{tooMany("spec.rules", 1)}},
		},
		"RuleTCPName": {
			reason: "A TCPRoute rule may be named.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.rules", `[{name: tcp}]`)), pick: pickRules},
			want:   want{value: []Rule{{Name: ptr.To[gwv1.SectionName]("tcp")}}},
		},
		"RuleRedirect": {
			reason: "A rule whose filters hold a RequestRedirect is a rule of its own, kept as written: a redirect takes no backend.",
			args: args{
				patches: []patch{set("spec.rules", `[{name: old, matches: [{path: {type: PathPrefix, value: /old}}], filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]}, {name: api}]`)},
				pick:    func(cr *CanaryRoute) any { return []bool{cr.Spec.Rules[0].Own(), cr.Spec.Rules[1].Own()} },
			},
			want: want{value: []bool{true, false}},
		},
		"RuleRedirectOnly": {
			reason: "At least one rule carries the rollout: a CanaryRoute whose every rule redirects has nothing to weigh.",
			args:   args{patches: []patch{set("spec.rules", `[{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules", "at least one rule must carry the rollout")}},
		},
		"RuleRedirectWithBackends": {
			reason: "A RequestRedirect answers the request itself: Gateway API forbids backendRefs beside it.",
			args:   args{patches: []patch{set("spec.rules", `[{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}], backendRefs: [{name: cdn, port: 80}]}, {}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].filters[0]", "takes no backendRefs")}},
		},
		"RuleOwnBackends": {
			reason: "A rule with backendRefs of its own keeps them as written, filters and weights included.",
			args: args{
				patches: []patch{set("spec.rules", `[{name: static, matches: [{path: {type: PathPrefix, value: /assets}}], backendRefs: [{name: cdn-cache, port: 80, weight: 3, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-CDN, value: "1"}]}}]}]}, {name: api}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Rules[0] },
			},
			want: want{value: Rule{
				Name:        ptr.To[gwv1.SectionName]("static"),
				HTTPMatches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/assets")}}},
				HTTPBackendRefs: []gwv1.HTTPBackendRef{{
					BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "cdn-cache", Port: ptr.To[gwv1.PortNumber](80)}, Weight: ptr.To[int32](3)},
					Filters:    []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "X-CDN", Value: "1"}}}}},
				}},
			}},
		},
		"RuleOwnBackendsOnly": {
			reason: "At least one rule carries the rollout.",
			args:   args{patches: []patch{set("spec.rules", `[{backendRefs: [{name: cdn-cache, port: 80}]}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules", "at least one rule must carry the rollout")}},
		},
		"RuleOwnBackendsGRPC": {
			reason: "A GRPCRoute rule may have backendRefs of its own, as GRPCBackendRefs.",
			args: args{
				patches: []patch{kind(KindGRPCRoute), set("spec.rules", `[{backendRefs: [{name: legacy, port: 9000}]}, {}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Rules[0].GRPCBackendRefs },
			},
			want: want{value: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "legacy", Port: ptr.To[gwv1.PortNumber](9000)}}}}},
		},
		"RuleOwnBackendsTCP": {
			reason: "A TCPRoute has one rule, which carries the rollout: backendRefs of its own are refused.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.rules", `[{backendRefs: [{name: db, port: 5432}]}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].backendRefs", "carries the rollout")}},
		},
		"RuleOwnBackendsUnknownField": {
			reason: "A rule's backendRefs decode strictly: a typo is an error naming it.",
			args:   args{patches: []patch{set("spec.rules", `[{backendRefs: [{name: cdn, prot: 80}]}, {}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].backendRefs[0].prot", "unknown field")}},
		},
		"RuleRetry": {
			reason: "An HTTPRoute rule's retry is kept as written.",
			args: args{
				patches: []patch{set("spec.rules", `[{retry: {codes: [503], attempts: 2, backoff: 100ms}}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Rules[0].Retry },
			},
			want: want{value: &gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{503}, Attempts: ptr.To(2), Backoff: ptr.To[gwv1.Duration]("100ms")}},
		},
		"RuleRetryGRPC": {
			reason: "A GRPCRoute rule cannot carry retries: Gateway API has none for it.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.rules", `[{retry: {attempts: 2}}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].retry", "a GRPCRoute cannot carry retries")}},
		},
		"RuleRetryUDP": {
			reason: "A UDPRoute rule cannot carry retries.",
			args:   args{patches: withL4(KindUDPRoute, set("spec.rules", `[{retry: {attempts: 2}}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].retry", "a UDPRoute cannot carry retries")}},
		},
		"RuleTLSMatches": {
			reason: "A TLSRoute rule cannot carry matches: Forbidden, naming the feature and the kind.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.rules", `[{matches: [{path: {value: /}}]}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].matches", "a TLSRoute cannot carry matches")}},
		},
		"RuleTLSEmptyMatches": {
			reason: "An empty matches list is the same as none, even on a TLSRoute.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.rules", `[{matches: [], filters: []}]`)), pick: pickRules},
			want:   want{value: []Rule{{}}},
		},
		"RuleTCPFilters": {
			reason: "A TCPRoute rule cannot carry filters.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.rules", `[{filters: [{type: RequestHeaderModifier}]}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].filters", "a TCPRoute cannot carry filters")}},
		},
		"RuleTCPTimeouts": {
			reason: "A TCPRoute rule cannot carry timeouts.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.rules", `[{timeouts: {request: 10s}}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].timeouts", "a TCPRoute cannot carry timeouts")}},
		},
		"RuleTLSMatchesNotAList": {
			reason: "Matches of the wrong type on a TLSRoute are refused too, not ignored: matches are a list of any kind of route.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.rules", `[{matches: {path: /}}]`))},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].matches", "must be a list, not object")}},
		},
		"RuleGRPCTimeouts": {
			reason: "A GRPCRoute rule cannot carry timeouts.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.rules", `[{timeouts: {request: 10s}}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.rules[0].timeouts", "a GRPCRoute cannot carry timeouts")}},
		},
		"RuleHTTPMatchUnknownField": {
			reason: "A typo deep in a rule's match names the full path of the unknown field.",
			args:   args{patches: []patch{set("spec.rules", `[{matches: [{path: {tpye: Exact, value: /}}]}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].matches[0].path.tpye", "unknown field")}},
		},
		"RuleHTTPMatchWrongType": {
			reason: "A GRPCRoute-style method on an HTTPRoute is a type error naming the field and its index.",
			args:   args{patches: []patch{set("spec.rules", `[{}, {matches: [{}, {method: {service: x}}]}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[1].matches[1].method", "must be a string, not object")}},
		},
		"RuleHTTPMatchInvalidPath": {
			reason: "A match is checked with Gateway API's rules: a path must start with '/'.",
			args:   args{patches: []patch{set("spec.rules", `[{matches: [{path: {type: PathPrefix, value: api}}]}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].matches[0].path", "must be an absolute path")}},
		},
		"RuleInvalidName": {
			reason: "A rule name is a SectionName.",
			args:   args{patches: []patch{set("spec.rules", `[{name: API}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].name", "API")}},
		},
		"RuleInvalidTimeout": {
			reason: "A timeout is a Gateway API Duration.",
			args:   args{patches: []patch{set("spec.rules", `[{timeouts: {request: 10x}}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].timeouts.request", "10x")}},
		},
		"RuleErrorsDoNotHideEachOther": {
			reason: "An error in one rule does not hide the Gateway API errors of the next: every invalid field is named at once.",
			args: args{patches: []patch{
				set("spec.rules", `[{name: API}, {matches: [{path: {type: PathPrefix, value: api}}]}]`),
				set("spec.traffic.matches", `[{headers: [{name: "bad header", value: x}]}]`),
			}},
			want: want{errs: []fieldErr{
				invalid("spec.rules[0].name", "API"),
				invalid("spec.rules[1].matches[0].path", "must be an absolute path"),
				invalid("spec.traffic.matches[0].headers[0].name", "bad header"),
			}},
		},

		// sides
		"PrimaryRequired": {
			reason: "A CanaryRoute needs a primary.",
			args:   args{patches: []patch{del("spec.primary")}},
			want:   want{errs: []fieldErr{required("spec.primary", "one of service, externalName or backendRef")}},
		},
		"CanaryRequired": {
			reason: "A CanaryRoute needs a canary.",
			args:   args{patches: []patch{del("spec.canary")}},
			want:   want{errs: []fieldErr{required("spec.canary", "one of service, externalName or backendRef")}},
		},
		"SideNoSource": {
			reason: "A side names exactly one source: none is refused.",
			args:   args{patches: []patch{set("spec.canary", `{revision: v2}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary", "exactly one of service, externalName or backendRef")}},
		},
		"SideTwoSources": {
			reason: "A side names exactly one source: two are refused.",
			args:   args{patches: []patch{set("spec.canary.service", `{selector: {app: podinfo}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary", "exactly one of service, externalName or backendRef")}},
		},
		"SideUnknownSource": {
			reason: "A misspelt source is an unknown field, named.",
			args:   args{patches: []patch{set("spec.canary", `{backendRefs: [{name: x}]}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.backendRefs", "unknown field")}},
		},
		"ServiceSelectorRequired": {
			reason: "A proxy Service without a selector would route to nothing.",
			args:   args{patches: []patch{set("spec.primary", `{service: {targetPort: 8080}}`)}},
			want:   want{errs: []fieldErr{required("spec.primary.service.selector", "selects the pods")}},
		},
		"ServiceSelectorEmpty": {
			reason: "An empty selector is the same as none.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {}}}`)}},
			want:   want{errs: []fieldErr{required("spec.primary.service.selector", "selects the pods")}},
		},
		"ServiceSelectorInvalidKey": {
			reason: "Selector keys are label keys; the error names the key.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {"app/": podinfo}}}`)}},
			want: want{errs: []fieldErr{
				invalid("spec.primary.service.selector[app/]", "name part must be non-empty"),
				invalid("spec.primary.service.selector[app/]", "name part must consist of alphanumeric characters"),
			}},
		},
		"ServiceSelectorTooMany": {
			reason: "A selector holds at most 64 labels: thousands of invalid labels must not cost seconds and megabytes of errors; the labels are not checked one by one then.",
			args:   args{patches: []patch{set("spec.primary.service.selector", selectorOf(65, "Bad Key %d"))}},
			want:   want{errs: []fieldErr{tooMany("spec.primary.service.selector", 64)}},
		},
		"ServiceSelectorAtLimit": {
			reason: "64 labels are accepted.",
			args:   args{patches: []patch{set("spec.primary.service.selector", selectorOf(64, "app%d"))}, pick: func(cr *CanaryRoute) any { return len(cr.Spec.Primary.Service.Selector) }},
			want:   want{value: 64},
		},
		"ServiceSelectorInvalidValue": {
			reason: "Selector values are label values.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: "pod info"}}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.selector[app]", "pod info")}},
		},
		"ServiceSelectorValueType": {
			reason: "A selector value of the wrong type names the field.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: 1}}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.selector.app", "must be a string")}},
		},
		"ServiceTargetPortNumber": {
			reason: "targetPort takes a port number.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: 8080}}`)}, pick: pickPrimary},
			want:   want{value: Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}, TargetPort: ptr.To(intstr.FromInt32(8080))}}},
		},
		"ServiceTargetPortName": {
			reason: "targetPort takes an IANA port name.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: http-alt}}`)}, pick: pickPrimary},
			want:   want{value: Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}, TargetPort: ptr.To(intstr.FromString("http-alt"))}}},
		},
		"ServiceTargetPortZero": {
			reason: "targetPort 0 is no port number.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: 0}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.targetPort", "between 1 and 65535")}},
		},
		"ServiceTargetPortTooHigh": {
			reason: "targetPort 70000 is no port number.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: 70000}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.targetPort", "between 1 and 65535")}},
		},
		"ServiceTargetPortBadName": {
			reason: "A targetPort name must be an IANA service name.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: HTTP_PORT}}`)}},
			want: want{errs: []fieldErr{
				invalid("spec.primary.service.targetPort", "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
				invalid("spec.primary.service.targetPort", "must contain at least one letter (a-z)"),
			}},
		},
		"ServiceTargetPortDigitsString": {
			reason: "A quoted number is a port name, and a name needs a letter.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, targetPort: "8080"}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.targetPort", "at least one letter")}},
		},
		"ServiceAppProtocol": {
			reason: "appProtocol takes a qualified name such as kubernetes.io/h2c.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, appProtocol: kubernetes.io/h2c}}`)}, pick: pickPrimary},
			want:   want{value: Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}, AppProtocol: "kubernetes.io/h2c"}}},
		},
		"ServiceAppProtocolInvalid": {
			reason: "appProtocol must be a qualified name, as Kubernetes checks it.",
			args:   args{patches: []patch{set("spec.primary", `{service: {selector: {app: podinfo}, appProtocol: "h2c over tls"}}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.service.appProtocol", "h2c over tls")}},
		},
		"ExternalName": {
			reason: "An external DNS name composes an ExternalName proxy.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: canary.example.com}`)}, pick: pickCanary},
			want:   want{value: Side{ExternalName: "canary.example.com"}},
		},
		"ExternalNameFQDN": {
			reason: "A fully qualified name with a trailing dot is accepted, as Kubernetes accepts it.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: canary.example.com.}`)}, pick: pickCanary},
			want:   want{value: Side{ExternalName: "canary.example.com."}},
		},
		"ExternalNameIPv4": {
			reason: "An IP could be a cluster-local Pod or Service address.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: 10.96.0.10}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "not an IP address")}},
		},
		"ExternalNameShortIPv4": {
			reason: "A short IPv4 form (10.1 is 10.0.0.1 to resolvers) is an IP too.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: "10.1"}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "not an IP address")}},
		},
		"ExternalNameIPv6": {
			reason: "An IPv6 address is refused as an IP.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: "fd00::10"}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "not an IP address")}},
		},
		"ExternalNameSvc": {
			reason: "A *.svc name reaches a Service of another namespace without a ReferenceGrant.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: podinfo.other.svc}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "cluster-local name (*.svc)")}},
		},
		"ExternalNameClusterLocal": {
			reason: "A *.cluster.local name is cluster-local.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: podinfo.other.svc.cluster.local}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "cluster-local name")}},
		},
		"ExternalNameClusterLocalFQDN": {
			reason: "A trailing dot does not hide a cluster-local name.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: podinfo.other.svc.cluster.local.}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "cluster-local name")}},
		},
		"ExternalNameSingleLabel": {
			reason: "A single label resolves through the search domains to a Service of the gateway's namespace.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: podinfo}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "fully qualified")}},
		},
		"ExternalNameLocalhost": {
			reason: "localhost names the gateway's own host: its loopback (admin interface, sidecars) is not a backend.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: localhost}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "local host")}},
		},
		"ExternalNameLocalhostSubdomain": {
			reason: "Every *.localhost name resolves to the loopback (RFC 6761).",
			args:   args{patches: []patch{set("spec.canary", `{externalName: admin.localhost.}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "local host")}},
		},
		"ExternalNameLocalhostLocaldomain": {
			reason: "localhost.localdomain is the loopback on many resolvers.",
			args:   args{patches: []patch{set("spec.primary", `{externalName: localhost.localdomain}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.externalName", "local host")}},
		},
		"ExternalNameGCPMetadata": {
			reason: "A cloud's metadata endpoint hands out the node's credentials: it is never a backend.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: metadata.google.internal}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "metadata")}},
		},
		"ExternalNameEC2Metadata": {
			reason: "EC2's metadata host name, fully qualified, is refused like any spelling of it.",
			args:   args{patches: []patch{set("spec.primary", `{externalName: instance-data.ec2.internal.}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.externalName", "metadata")}},
		},
		"ExternalNameDockerHost": {
			reason: "host.docker.internal and gateway.docker.internal name the machine the gateway runs on.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: host.docker.internal}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "metadata")}},
		},
		"ExternalNameDockerGateway": {
			reason: "gateway.docker.internal is the Docker host too.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: gateway.docker.internal}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "metadata")}},
		},
		"ExternalNameSearchDomainAccepted": {
			reason: "A two-label name such as kubernetes.default is accepted: the proxy Service writes it fully qualified, so it never resolves through the search domains (see internal/proxy).",
			args:   args{patches: []patch{set("spec.canary", `{externalName: kubernetes.default}`)}, pick: pickCanary},
			want:   want{value: Side{ExternalName: "kubernetes.default"}},
		},
		"ExternalNameUppercase": {
			reason: "An external name is a lowercase DNS-1123 subdomain, as Kubernetes requires.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: Canary.Example.com}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "RFC 1123 subdomain")}},
		},
		"ExternalNameEmpty": {
			reason: "An empty external name is invalid, not an absent source.",
			args:   args{patches: []patch{set("spec.canary", `{externalName: ""}`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.externalName", "RFC 1123 subdomain")}},
		},
		"RevisionOnPrimary": {
			reason: "Only the canary has a revision.",
			args:   args{patches: []patch{set("spec.primary.revision", "v1")}},
			want:   want{errs: []fieldErr{forbidden("spec.primary.revision", "only the canary")}},
		},
		"Revision": {
			reason: "A revision of letters, digits, '.', '_' and '-' is kept.",
			args:   args{patches: []patch{set("spec.canary.revision", `"1.5.0_rc-1"`)}, pick: func(cr *CanaryRoute) any { return cr.Spec.Canary.Revision }},
			want:   want{value: "1.5.0_rc-1"},
		},
		"RevisionSpace": {
			reason: "A revision matches [A-Za-z0-9._-]{1,63}: a space is refused.",
			args:   args{patches: []patch{set("spec.canary.revision", `"v 2"`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.revision", "1 to 63 letters")}},
		},
		"RevisionTooLong": {
			reason: "A revision has at most 63 characters: refused by its length before any pattern is tried.",
			args:   args{patches: []patch{set("spec.canary.revision", strings.Repeat("a", 64))}},
			want:   want{errs: []fieldErr{{Field: "spec.canary.revision", Type: field.ErrorTypeTooLong, Phrase: "63"}}},
		},
		"RevisionEmpty": {
			reason: "An empty revision is refused.",
			args:   args{patches: []patch{set("spec.canary.revision", `""`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.revision", "1 to 63 letters")}},
		},
		"StepsNeedRevision": {
			reason: "Progressive steps need a canary revision, so that a new version restarts the rollout.",
			args:   args{patches: []patch{del("spec.traffic.weight"), set("spec.traffic.steps", `[{weight: 10}]`)}},
			want:   want{errs: []fieldErr{required("spec.canary.revision", "traffic.steps needs a canary revision")}},
		},
		"SideFiltersHTTP": {
			reason: "A side's filters decode as HTTPRoute filters.",
			args: args{
				patches: []patch{set("spec.canary.filters", `[{type: URLRewrite, urlRewrite: {hostname: podinfo-canary.test.example.com}}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Canary.HTTPFilters },
			},
			want: want{value: []gwv1.HTTPRouteFilter{{
				Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To[gwv1.PreciseHostname]("podinfo-canary.test.example.com")},
			}}},
		},
		"SideFiltersUnknownField": {
			reason: "A typo in a side's filter names the full path.",
			args:   args{patches: []patch{set("spec.canary.filters", `[{type: RequestHeaderModifier, requestHeaderModifier: {ad: [{name: a, value: b}]}}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.filters[0].requestHeaderModifier.ad", "unknown field")}},
		},
		"SideFiltersInvalid": {
			reason: "A side's filters are checked with Gateway API's rules, even when the side has another error.",
			args: args{patches: []patch{
				set("spec.canary.filters", `[{type: RequestHeaderModifier}]`),
				set("spec.canary.revision", `"v 2"`),
			}},
			want: want{errs: []fieldErr{
				invalid("spec.canary.filters[0]", "filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type"),
				invalid("spec.canary.revision", "1 to 63 letters"),
			}},
		},
		"SideFiltersTCP": {
			reason: "A TCPRoute cannot carry backend filters.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.canary.filters", `[{type: RequestHeaderModifier}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.canary.filters", "a TCPRoute cannot carry backend filters")}},
		},
		"SideFiltersTLS": {
			reason: "A TLSRoute cannot carry backend filters.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.primary.filters", `[{type: RequestHeaderModifier}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.primary.filters", "a TLSRoute cannot carry backend filters")}},
		},
		"BackendRefUnknownField": {
			reason: "A typo in a backendRef is an unknown field, named.",
			args:   args{patches: []patch{set("spec.canary.backendRef.prot", "80")}},
			want:   want{errs: []fieldErr{invalid("spec.canary.backendRef.prot", "unknown field")}},
		},
		"BackendRefPortType": {
			reason: "A backendRef port of the wrong type names the field.",
			args:   args{patches: []patch{set("spec.canary.backendRef.port", `"http"`)}},
			want:   want{errs: []fieldErr{invalid("spec.canary.backendRef.port", "must be an integer, not string")}},
		},

		// traffic
		"TrafficDefault": {
			reason: "Without traffic: manual mode at the default weight (nil: 0), requireAcceptedRoute true.",
			args:   args{patches: []patch{del("spec.traffic")}, pick: pickTraffic},
			want:   want{value: Traffic{RequireAcceptedRoute: true}},
		},
		"WeightZero": {
			reason: "Weight 0 is a valid manual weight, kept as set.",
			args:   args{patches: []patch{set("spec.traffic.weight", "0")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Weight }},
			want:   want{value: ptr.To(percent.Zero)},
		},
		"WeightHundred": {
			reason: "Weight 100 sends every request to the canary.",
			args:   args{patches: []patch{set("spec.traffic.weight", "100")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Weight }},
			want:   want{value: ptr.To(percent.Max)},
		},
		"WeightFine": {
			reason: "A weight has at most two decimals: 0.1 is kept exactly, as 10 hundredths.",
			args:   args{patches: []patch{set("spec.traffic.weight", "0.1")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Weight }},
			want:   want{value: ptr.To(percent.Hundredths(10))},
		},
		"WeightTwoDecimals": {
			reason: "33.33 has two decimals.",
			args:   args{patches: []patch{set("spec.traffic.weight", "33.33")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Weight }},
			want:   want{value: ptr.To(percent.Hundredths(3333))},
		},
		"WeightThreeDecimals": {
			reason: "0.005 has three decimals: refused, the value as written.",
			args:   args{patches: []patch{set("spec.traffic.weight", "0.005")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.weight", "Invalid value: 0.005: must be a percent from 0 to 100 with at most two decimals")}},
		},
		"StepWeightsFine": {
			reason: "Steps take weights with decimals, in order.",
			args: args{patches: steps(`[{weight: 0.1}, {weight: 1}, {weight: 25.5}, {weight: 100}]`), pick: func(cr *CanaryRoute) any {
				return []percent.Percent{cr.Spec.Traffic.Steps[0].Weight, cr.Spec.Traffic.Steps[2].Weight}
			}},
			want: want{value: []percent.Percent{percent.Hundredths(10), percent.Hundredths(2550)}},
		},
		"StepWeightsThreeDecimals": {
			reason: "Every weight with more than two decimals is named, beside the spec's other errors: the decoder keeps going.",
			args:   args{patches: steps(`[{weight: 0.005}, {weight: 33.333}, {weight: 50, pause: soon}]`)},
			want: want{errs: []fieldErr{
				invalid("spec.traffic.steps[0].weight", "Invalid value: 0.005: must be a percent from 0 to 100 with at most two decimals"),
				invalid("spec.traffic.steps[1].weight", "Invalid value: 33.333: must be a percent from 0 to 100 with at most two decimals"),
				invalid("spec.traffic.steps[2].pause", ""),
			}},
		},
		"StepWeightsFineLower": {
			reason: "Fine weights never go down either.",
			args:   args{patches: steps(`[{weight: 0.5}, {weight: 0.25}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[1].weight", "must not be lower than the previous step's weight 0.5")}},
		},
		"WeightTooHigh": {
			reason: "Weight is a percent: 101 is refused.",
			args:   args{patches: []patch{set("spec.traffic.weight", "101")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.weight", "from 0 to 100 with at most two decimals")}},
		},
		"WeightNegative": {
			reason: "Weight is a percent: -1 is refused.",
			args:   args{patches: []patch{set("spec.traffic.weight", "-1")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.weight", "from 0 to 100 with at most two decimals")}},
		},
		"WeightString": {
			reason: "A weight of the wrong type names spec.traffic.weight.",
			args:   args{patches: []patch{set("spec.traffic.weight", `"20"`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.weight", "must be a percent from 0 to 100 with at most two decimals, not string")}},
		},
		"WeightTypo": {
			reason: "An unknown field inside a known spec field is an error naming it: a typo never turns into a default.",
			args:   args{patches: []patch{del("spec.traffic.weight"), set("spec.traffic.wieght", "20")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.wieght", "unknown field")}},
		},
		"WeightCase": {
			reason: "Field names are case-sensitive: Weight is an unknown field.",
			args:   args{patches: []patch{del("spec.traffic.weight"), set("spec.traffic.Weight", "20")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.Weight", "unknown field")}},
		},
		"TrafficNotAnObject": {
			reason: "A traffic of the wrong type names spec.traffic.",
			args:   args{patches: []patch{set("spec.traffic", "20")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic", "must be an object")}},
		},
		"WeightAndSteps": {
			reason: "weight (manual) and steps (progressive) exclude each other.",
			args:   args{patches: []patch{set("spec.traffic.steps", `[{weight: 10}]`), set("spec.canary.revision", "v2")}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.steps", "not both")}},
		},
		"Steps": {
			reason: "Steps keep their weights and parsed pauses; a step without a pause has none.",
			args:   args{patches: steps(`[{weight: 0, pause: 30s}, {weight: 10, pause: 1h30m}, {weight: 10}, {weight: 100, pause: 0s}]`), pick: pickSteps},
			want:   want{value: []Step{{Weight: percent.Int(0), Pause: 30 * time.Second}, {Weight: percent.Int(10), Pause: 90 * time.Minute}, {Weight: percent.Int(10)}, {Weight: percent.Int(100)}}},
		},
		"StepsMax": {
			reason: "32 steps are allowed.",
			args:   args{patches: steps(list(32, "{weight: 50}")), pick: func(cr *CanaryRoute) any { return len(cr.Spec.Traffic.Steps) }},
			want:   want{value: 32},
		},
		"StepsTooMany": {
			reason: "At most 32 steps.",
			args:   args{patches: steps(list(33, "{weight: 50}"))},
			want:   want{errs: []fieldErr{tooMany("spec.traffic.steps", 32)}},
		},
		"StepWeightRequired": {
			reason: "Each step sets a weight.",
			args:   args{patches: steps(`[{weight: 10}, {pause: 1m}]`)},
			want:   want{errs: []fieldErr{required("spec.traffic.steps[1].weight", "canary percent")}},
		},
		"StepWeightTooHigh": {
			reason: "A step's weight is a percent.",
			args:   args{patches: steps(`[{weight: 101}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[0].weight", "from 0 to 100 with at most two decimals")}},
		},
		"StepWeightNegative": {
			reason: "A step's weight is a percent: -5 is refused.",
			args:   args{patches: steps(`[{weight: -5}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[0].weight", "from 0 to 100 with at most two decimals")}},
		},
		"StepWeightsDecrease": {
			reason: "A rollout only moves forward: a lower weight than the step before names the step.",
			args:   args{patches: steps(`[{weight: 10}, {weight: 50}, {weight: 20}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[2].weight", "lower than the previous step's weight 50")}},
		},
		"StepWeightType": {
			reason: "A step weight of the wrong type names the step by index.",
			args:   args{patches: steps(`[{weight: 10}, {weight: ten}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[1].weight", "must be a percent from 0 to 100 with at most two decimals, not string")}},
		},
		"StepWeightObject": {
			reason: "A step weight that is an object or a list names the step by index too.",
			args:   args{patches: steps(`[{weight: 10}, {weight: {a: 1}}, {weight: [1]}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[1].weight", "must be a percent from 0 to 100 with at most two decimals, not object")}},
		},
		"StepUnknownField": {
			reason: "A typo in a step names the step by index.",
			args:   args{patches: steps(`[{weight: 10}, {weight: 20, paus: 1m}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[1].paus", "unknown field")}},
		},
		"StepPauseInvalid": {
			reason: "A pause is a Go duration.",
			args:   args{patches: steps(`[{weight: 10, pause: 1d}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[0].pause", "duration such as 30s")}},
		},
		"StepPauseNegative": {
			reason: "A pause is never negative.",
			args:   args{patches: steps(`[{weight: 10, pause: -1m}]`)},
			want:   want{errs: []fieldErr{invalid("spec.traffic.steps[0].pause", "must not be negative")}},
		},
		"MirrorDefaultPercent": {
			reason: "A mirror without a percent mirrors every request.",
			args:   args{patches: []patch{set("spec.traffic.mirror", "{}")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Mirror }},
			want:   want{value: &Mirror{Percent: 100}},
		},
		"MirrorPercentZero": {
			reason: "A mirror percent of 0 is kept as written, not defaulted.",
			args:   args{patches: []patch{set("spec.traffic.mirror", "{percent: 0}")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Mirror }},
			want:   want{value: &Mirror{Percent: 0}},
		},
		"MirrorPercentTooHigh": {
			reason: "The mirror percent is a percent.",
			args:   args{patches: []patch{set("spec.traffic.mirror", "{percent: 101}")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.mirror.percent", "between 0 and 100")}},
		},
		"MirrorGRPC": {
			reason: "A GRPCRoute can mirror requests.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.traffic.mirror", "{percent: 5}")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Mirror }},
			want:   want{value: &Mirror{Percent: 5}},
		},
		"MirrorTLS": {
			reason: "A TLSRoute cannot mirror requests.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.traffic.mirror", "{}"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.mirror", "a TLSRoute cannot carry request mirroring")}},
		},
		"MirrorTCP": {
			reason: "A TCPRoute cannot mirror requests.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.traffic.mirror", "{percent: 10}"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.mirror", "a TCPRoute cannot carry request mirroring")}},
		},
		"SessionAffinity": {
			reason: "Session affinity keeps its cookie name and parsed max age; the mode defaults to Cookie, the cookie's path to /.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: canary_v2.x-y, maxAge: 1s}")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Affinity }},
			want:   want{value: &SessionAffinity{CookieName: "canary_v2.x-y", MaxAge: time.Second, Attributes: CookieAttributes{Path: "/"}, Mode: AffinityCookie}},
		},
		"SessionAffinityBothSides": {
			reason: "primaryCookieName and the cookie attributes are kept.",
			args: args{
				patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: canary, primaryCookieName: stable, maxAge: 24h, attributes: {path: /shop, domain: example.com, secure: true, sameSite: None}}")},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Traffic.Affinity },
			},
			want: want{value: &SessionAffinity{
				CookieName: "canary", PrimaryCookieName: "stable", MaxAge: 24 * time.Hour,
				Attributes: CookieAttributes{Path: "/shop", Domain: "example.com", Secure: true, SameSite: "None"}, Mode: AffinityCookie,
			}},
		},
		"SessionAffinitySameCookie": {
			reason: "Each side sets a cookie of its own: the primary's name must differ from the canary's.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: canary, primaryCookieName: canary, maxAge: 1h}")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.primaryCookieName", "must differ from cookieName")}},
		},
		"SessionAffinityAttributes": {
			reason: "Cookie attributes are checked: a path starts with / and holds no ;, a domain is a DNS name, sameSite an enum, and None needs secure.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h, attributes: {path: "/a;b", domain: "Example..com", sameSite: None}}`)}},
			want: want{errs: []fieldErr{
				invalid("spec.traffic.sessionAffinity.attributes.domain", "RFC 1123 subdomain"),
				invalid("spec.traffic.sessionAffinity.attributes.path", "start with '/'"),
				invalid("spec.traffic.sessionAffinity.attributes.sameSite", "needs secure: true"),
			}},
		},
		"SessionAffinitySameSiteUnknown": {
			reason: "sameSite is Strict, Lax or None.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h, attributes: {sameSite: strict}}`)}},
			want:   want{errs: []fieldErr{notSupported("spec.traffic.sessionAffinity.attributes.sameSite", "strict")}},
		},
		"SessionPersistence": {
			reason: "mode SessionPersistence is kept, and gives a GRPCRoute affinity too.",
			args: args{
				patches: []patch{kind(KindGRPCRoute), set("spec.traffic.sessionAffinity", "{cookieName: session, maxAge: 2h, mode: SessionPersistence}")},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Traffic.Affinity },
			},
			want: want{value: &SessionAffinity{CookieName: "session", MaxAge: 2 * time.Hour, Attributes: CookieAttributes{Path: "/"}, Mode: AffinitySessionPersistence}},
		},
		"SessionPersistenceNoPrimaryCookie": {
			reason: "With SessionPersistence the gateway keeps every session where it went: a primary cookie or attributes have nothing to apply to.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: s, primaryCookieName: p, maxAge: 1h, mode: SessionPersistence, attributes: {secure: true}}")}},
			want: want{errs: []fieldErr{
				forbidden("spec.traffic.sessionAffinity.attributes", "writes its own cookie"),
				forbidden("spec.traffic.sessionAffinity.primaryCookieName", "there is no primary cookie"),
			}},
		},
		"SessionPersistenceTooLong": {
			reason: "A session's absoluteTimeout is a Gateway API duration: at most 99999h.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: s, maxAge: 100000h, mode: SessionPersistence}")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.maxAge", "at most 99999h")}},
		},
		"SessionAffinityModeUnknown": {
			reason: "mode is Cookie or SessionPersistence.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", "{cookieName: s, maxAge: 1h, mode: Header}")}},
			want:   want{errs: []fieldErr{notSupported("spec.traffic.sessionAffinity.mode", "Header")}},
		},
		"SessionPersistenceTCP": {
			reason: "A TCPRoute has no sessions to persist.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.traffic.sessionAffinity", "{cookieName: s, maxAge: 1h, mode: SessionPersistence}"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.sessionAffinity", "a TCPRoute cannot carry session persistence")}},
		},
		"SessionAffinityCookieName": {
			reason: "A cookie name matches [A-Za-z0-9_.-]{1,64}: '=' is refused.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: "a=b", maxAge: 1h}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.cookieName", "1 to 64 letters")}},
		},
		"SessionAffinityCookieNameTooLong": {
			reason: "A cookie name has at most 64 characters.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: `+strings.Repeat("c", 65)+`, maxAge: 1h}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.cookieName", "1 to 64 letters")}},
		},
		"SessionAffinityCookieNameMissing": {
			reason: "A cookie name is required.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{maxAge: 1h}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.cookieName", "1 to 64 letters")}},
		},
		"SessionAffinityMaxAgeShort": {
			reason: "Max-Age counts whole seconds: less than 1s is refused.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 500ms}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.maxAge", "at least 1s")}},
		},
		"SessionAffinityMaxAgeMissing": {
			reason: "A max age is required.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary}`)}},
			want:   want{errs: []fieldErr{required("spec.traffic.sessionAffinity.maxAge", "how long")}},
		},
		"SessionAffinityMaxAgeInvalid": {
			reason: "A max age is a Go duration: 1d is not one.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1d}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.maxAge", "duration such as 30s")}},
		},
		"SessionAffinityMaxAgeNegative": {
			reason: "A negative max age is refused as negative.",
			args:   args{patches: []patch{set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: -1h}`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.sessionAffinity.maxAge", "must not be negative")}},
		},
		"SessionAffinityGRPC": {
			reason: "Cookies of the function's are HTTPRoute only: a GRPCRoute refuses mode Cookie, and says to use SessionPersistence.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h}`)}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.sessionAffinity", "set mode: SessionPersistence")}},
		},
		"BackendTLS": {
			reason: "tls on a service side is the validation of the BackendTLSPolicy composed for its proxy Service.",
			args: args{
				patches: []patch{set("spec.primary.tls", `{hostname: podinfo.internal, wellKnownCACertificates: System}`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Primary.TLS },
			},
			want: want{value: &gwv1.BackendTLSPolicyValidation{Hostname: "podinfo.internal", WellKnownCACertificates: ptr.To(gwv1.WellKnownCACertificatesSystem)}},
		},
		"BackendTLSRefs": {
			reason: "tls may name ConfigMaps of CA certificates instead.",
			args: args{
				patches: []patch{set("spec.primary.tls", `{hostname: podinfo.internal, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Primary.TLS.CACertificateRefs },
			},
			want: want{value: []gwv1.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: "ca"}}},
		},
		"BackendTLSBothOrNone": {
			reason: "tls sets exactly one of caCertificateRefs and wellKnownCACertificates, and a hostname.",
			args:   args{patches: []patch{set("spec.primary.tls", `{wellKnownCACertificates: System, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`)}},
			want: want{errs: []fieldErr{
				invalid("spec.primary.tls", "exactly one of caCertificateRefs"),
				required("spec.primary.tls.hostname", "sent as SNI"),
			}},
		},
		"BackendTLSHostname": {
			reason: "tls follows the BackendTLSPolicy CRD's rules at the CanaryRoute's own path: a hostname is a precise DNS name.",
			args:   args{patches: []patch{set("spec.primary.tls", `{hostname: "*.internal", wellKnownCACertificates: System}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.tls.hostname", "")}},
		},
		"EmptyBackendRefs": {
			reason: "backendRefs written empty is neither a rule of its own (Gateway API would answer it with an error) nor one that carries the rollout: refused, never silently weighted.",
			args:   args{patches: []patch{set("spec.rules", `[{name: closed, matches: [{path: {type: PathPrefix, value: /closed}}], backendRefs: []}, {name: api}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.rules[0].backendRefs", "an empty list is no backend of the rule's own")}},
		},
		"BackendTLSShortIPv4": {
			reason: "Nor an IPv4 address in a short or numeric form (127.1, 0x7f.1), which SNI cannot carry either.",
			args:   args{patches: []patch{set("spec.primary.tls", `{hostname: "0x7f.1", wellKnownCACertificates: System}`)}},
			want:   want{errs: []fieldErr{invalid("spec.primary.tls.hostname", "an IP address cannot be sent as SNI")}},
		},
		"BackendTLSOnBackendRef": {
			reason: "tls goes with a side whose proxy Service the function composes: a backendRef's own backend takes a BackendTLSPolicy of its owner's.",
			args:   args{patches: []patch{set("spec.canary.tls", `{hostname: canary.internal, wellKnownCACertificates: System}`)}},
			want:   want{errs: []fieldErr{forbidden("spec.canary.tls", "goes with a service or externalName side")}},
		},
		"BackendTLSTCP": {
			reason: "A TCPRoute carries its bytes as they are: the gateway originates no TLS.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.primary.tls", `{hostname: db.internal, wellKnownCACertificates: System}`))},
			want:   want{errs: []fieldErr{forbidden("spec.primary.tls", "a TCPRoute cannot carry backend TLS")}},
		},
		"SessionAffinityTLS": {
			reason: "A TLSRoute refuses session affinity.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h}`))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.sessionAffinity", "a TLSRoute cannot carry session affinity")}},
		},
		"SessionAffinityTCP": {
			reason: "A TCPRoute refuses session affinity.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h}`))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.sessionAffinity", "a TCPRoute cannot carry session affinity")}},
		},
		"ABMatchesHTTP": {
			reason: "HTTPRoute A/B matches decode as HTTPRoute matches.",
			args: args{
				patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Canary, value: always}], queryParams: [{name: canary, value: "1"}], method: GET}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Traffic.HTTPMatches },
			},
			want: want{value: []gwv1.HTTPRouteMatch{{
				Headers:     []gwv1.HTTPHeaderMatch{{Name: "X-Canary", Value: "always"}},
				QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "canary", Value: "1"}},
				Method:      ptr.To(gwv1.HTTPMethodGet),
			}}},
		},
		"ABMatchesPath": {
			reason: "An A/B match never carries a path: the path comes from each rule.",
			args:   args{patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Canary, value: always}]}, {path: {type: PathPrefix, value: /beta}, method: GET}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.matches[1].path", "the path comes from the rule")}},
		},
		"ABMatchEmpty": {
			reason: "An A/B match without a condition would send every request to the canary: Required, naming the match.",
			args:   args{patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Canary, value: always}]}, {}]`)}},
			want:   want{errs: []fieldErr{required("spec.traffic.matches[1]", "an empty one would send every request to the canary")}},
		},
		"ABMatchEmptyGRPC": {
			reason: "The same for a GRPCRoute A/B match.",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.traffic.matches", `[{}]`)}},
			want:   want{errs: []fieldErr{required("spec.traffic.matches[0]", "an empty one would send every request to the canary")}},
		},
		"ABMatchesGRPC": {
			reason: "GRPCRoute A/B matches decode as GRPCRoute matches.",
			args: args{
				patches: []patch{kind(KindGRPCRoute), set("spec.traffic.matches", `[{method: {service: podinfo.v1.Echo, method: Beta}}]`)},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Traffic.GRPCMatches },
			},
			want: want{value: []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: ptr.To("podinfo.v1.Echo"), Method: ptr.To("Beta")}}}},
		},
		"ABMatchesGRPCInvalid": {
			reason: "GRPCRoute A/B matches follow GRPCRoute's rules (a method match needs a service or a method).",
			args:   args{patches: []patch{kind(KindGRPCRoute), set("spec.traffic.matches", `[{method: {}}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.matches[0].method", "One or both of 'service' or 'method' must be specified")}},
		},
		"ABMatchesTLS": {
			reason: "A TLSRoute cannot carry A/B matches.",
			args:   args{patches: withL4(KindTLSRoute, set("spec.traffic.matches", `[{headers: [{name: a, value: b}]}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.matches", "a TLSRoute cannot carry A/B matches")}},
		},
		"ABMatchesTCP": {
			reason: "A TCPRoute cannot carry A/B matches.",
			args:   args{patches: withL4(KindTCPRoute, set("spec.traffic.matches", `[{}]`))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.matches", "a TCPRoute cannot carry A/B matches")}},
		},
		"Gates": {
			reason: "Gates keep their object and condition; failAfter defaults to 5m.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[`+gate+`, {apiVersion: v1, kind: Pod, name: p, conditionType: Ready, failAfter: 0s}]`)}, pick: pickGates},
			want: want{value: []Gate{
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo-canary", ConditionType: "Available", FailAfter: 5 * time.Minute},
				{APIVersion: "v1", Kind: "Pod", Name: "p", ConditionType: "Ready", FailAfter: 0},
			}},
		},
		"GateFields": {
			reason: "A gate needs apiVersion, kind, name and conditionType; each missing one is named.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{}]`)}},
			want: want{errs: []fieldErr{
				invalid("spec.traffic.gates[0].apiVersion", "group/version"),
				required("spec.traffic.gates[0].kind", "kind"),
				required("spec.traffic.gates[0].name", "names its object"),
				required("spec.traffic.gates[0].conditionType", "condition"),
			}},
		},
		"GateAPIVersion": {
			reason: "A gate's apiVersion is group/version.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1/beta, kind: Deployment, name: p, conditionType: Available}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.gates[0].apiVersion", "group/version")}},
		},
		"GateName": {
			reason: "A gate's name is an object name.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: Podinfo_Canary, conditionType: Available}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.gates[0].name", "RFC 1123 subdomain")}},
		},
		"GateFailAfter": {
			reason: "failAfter is a Go duration.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: p, conditionType: Available, failAfter: soon}]`)}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.gates[0].failAfter", "duration such as 30s")}},
		},
		"GateConditionTypeTooLong": {
			reason: "A condition type has at most 316 characters, as metav1.Condition says.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: p, conditionType: `+strings.Repeat("A", 317)+`}]`)}},
			want:   want{errs: []fieldErr{{Field: "spec.traffic.gates[0].conditionType", Type: field.ErrorTypeTooLong, Phrase: "316"}}},
		},
		"GatesTooMany": {
			reason: "At most 16 gates.",
			args:   args{patches: []patch{set("spec.traffic.gates", list(17, gate))}},
			want:   want{errs: []fieldErr{tooMany("spec.traffic.gates", 16)}},
		},
		// rollout controls
		"ExpressionGate": {
			reason: "A gate may judge its object with successWhen and failWhen instead of a condition.",
			args: args{
				patches: []patch{set("spec.traffic.gates", `[{apiVersion: argoproj.io/v1alpha1, kind: AnalysisRun, name: run, successWhen: "object.status.phase == 'Successful'", failWhen: "object.status.phase == 'Failed'"}]`)},
				pick:    pickGates,
			},
			want: want{value: []Gate{{
				APIVersion: "argoproj.io/v1alpha1", Kind: "AnalysisRun", Name: "run",
				SuccessWhen: "object.status.phase == 'Successful'", FailWhen: "object.status.phase == 'Failed'", FailAfter: DefaultFailAfter,
			}}},
		},
		"GateConditionAndExpression": {
			reason: "A gate has either conditionType or successWhen.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: p, conditionType: Available, successWhen: "true"}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.gates[0].successWhen", "not both")}},
		},
		"GateFailWhenAlone": {
			reason: "failWhen goes with successWhen.",
			args:   args{patches: []patch{set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: p, conditionType: Available, failWhen: "true"}]`)}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.gates[0].failWhen", "goes with successWhen")}},
		},
		"ExpressionsTooLongTogether": {
			reason: "The expressions of a CanaryRoute hold at most 4,096 characters together: a run compiles the ones it has not seen, and must still answer in a few milliseconds.",
			args: args{patches: []patch{set("spec.traffic.gates",
				listf(5, `{apiVersion: apps/v1, kind: Deployment, name: p%d, successWhen: "`+strings.Repeat("true && ", 110)+`true"}`))}},
			want: want{errs: []fieldErr{invalid("spec.traffic", "at most 4096 characters together")}},
		},
		"Controls": {
			reason: "approval, promote and retry are kept.",
			args: args{
				patches: append(steps(`[{weight: 10}, {weight: 50, approval: true}, {weight: 100}]`),
					set("spec.traffic.approval", `{revision: v2, step: 1}`), set("spec.traffic.promote", `{revision: v2}`), set("spec.traffic.retry", `"3"`)),
				pick: func(cr *CanaryRoute) any {
					t := cr.Spec.Traffic
					return []any{t.Approval, t.Promote, t.Retry, t.Steps[1].Approval}
				},
			},
			want: want{value: []any{&Approval{Revision: "v2", Step: 1}, &Promote{Revision: "v2"}, "3", true}},
		},
		"ControlsNeedSteps": {
			reason: "approval, promote and retry act on progressive rollouts: with a manual weight they would silently do nothing.",
			args:   args{patches: []patch{set("spec.traffic.approval", `{revision: v2, step: 1}`), set("spec.traffic.promote", `{revision: v2}`), set("spec.traffic.retry", `"1"`)}},
			want: want{errs: []fieldErr{
				forbidden("spec.traffic.approval", "needs traffic.steps"),
				forbidden("spec.traffic.promote", "needs traffic.steps"),
				forbidden("spec.traffic.retry", "needs traffic.steps"),
			}},
		},
		"ApprovalWithoutStep": {
			reason: "An approval names the last step it approves.",
			args:   args{patches: append(steps(`[{weight: 10, approval: true}]`), set("spec.traffic.approval", `{revision: v2}`))},
			want:   want{errs: []fieldErr{required("spec.traffic.approval.step", "names the last step")}},
		},
		"AnalysisTemplate": {
			reason: "A step names the analysis templates it runs; a template keeps its object as written.",
			args: args{
				patches: append(steps(`[{weight: 10, analysis: [smoke]}]`),
					set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job, metadata: {labels: {team: web}}, spec: {}}, successWhen: "object.status.succeeded > 0"}}`)),
				pick: func(cr *CanaryRoute) any { return []any{cr.Spec.Traffic.Steps[0].Analysis, cr.Spec.Traffic.Analysis} },
			},
			want: want{value: []any{[]string{"smoke"}, []AnalysisTemplate{{
				Name:        "smoke",
				Template:    map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"labels": map[string]any{"team": "web"}}, "spec": map[string]any{}},
				SuccessWhen: "object.status.succeeded > 0",
			}}}},
		},
		"AnalysisNotFound": {
			reason: "A step's analysis names a template of traffic.analysis.",
			args:   args{patches: steps(`[{weight: 10, analysis: [smoke]}]`)},
			want:   want{errs: []fieldErr{{Field: "spec.traffic.steps[0].analysis[0]", Type: field.ErrorTypeNotFound, Phrase: "smoke"}}},
		},
		"AnalysisTemplateMetadata": {
			reason: "The function names and places an analysis object, and Crossplane owns it: a template's metadata holds only valid labels and annotations.",
			args: args{patches: append(steps(`[{weight: 10, analysis: [smoke]}]`),
				set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job, metadata: {name: x, finalizers: [f], ownerReferences: [], labels: {"bad key!": v, ok: 1}, annotations: {a: 2}}}, successWhen: "true"}}`))},
			want: want{errs: []fieldErr{
				invalid("spec.traffic.analysis[smoke].template.metadata.annotations[a]", "must be a string"),
				forbidden("spec.traffic.analysis[smoke].template.metadata.finalizers", "only hold labels and annotations"),
				invalid("spec.traffic.analysis[smoke].template.metadata.labels[bad key!]", "name part must consist of alphanumeric"),
				invalid("spec.traffic.analysis[smoke].template.metadata.labels[ok]", "must be a string"),
				forbidden("spec.traffic.analysis[smoke].template.metadata.name", "names analysis objects"),
				forbidden("spec.traffic.analysis[smoke].template.metadata.ownerReferences", "only hold labels and annotations"),
			}},
		},
		"AnalysisTemplateOwnKeys": {
			reason: "Labels and annotations under canaryroute.fn.crossplane.io/ are the function's own, today's keys and any later one: a template that writes one is refused, never composed as an object the function then fails to recognise.",
			args: args{patches: append(steps(`[{weight: 10, analysis: [smoke]}]`),
				set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job, metadata: {`+
					`labels: {canaryroute.fn.crossplane.io/retry: "1", canaryroute.fn.crossplane.io/later: x, team: web}, `+
					`annotations: {canaryroute.fn.crossplane.io/note: x, example.com/note: v}}}, successWhen: "true"}}`))},
			want: want{errs: []fieldErr{
				forbidden("spec.traffic.analysis[smoke].template.metadata.annotations[canaryroute.fn.crossplane.io/note]", "the function's own"),
				forbidden("spec.traffic.analysis[smoke].template.metadata.labels[canaryroute.fn.crossplane.io/later]", "the function's own"),
				forbidden("spec.traffic.analysis[smoke].template.metadata.labels[canaryroute.fn.crossplane.io/retry]", "the function's own"),
			}},
		},
		"AnalysisTemplateKeysLikeOwn": {
			reason: "Only keys under the prefix canaryroute.fn.crossplane.io/ are the function's: a subdomain of it, a longer domain and the bare name are the user's.",
			args: args{
				patches: append(steps(`[{weight: 10, analysis: [smoke]}]`),
					set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job, metadata: {`+
						`labels: {team.canaryroute.fn.crossplane.io/a: x, canaryroute.fn.crossplane.io.example.com/b: x, canaryroute.fn.crossplane.io: x}, `+
						`annotations: {retry: x}}}, successWhen: "true"}}`)),
				pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Analysis[0].Template["metadata"] },
			},
			want: want{value: map[string]any{
				"labels":      map[string]any{"team.canaryroute.fn.crossplane.io/a": "x", "canaryroute.fn.crossplane.io.example.com/b": "x", "canaryroute.fn.crossplane.io": "x"},
				"annotations": map[string]any{"retry": "x"},
			}},
		},
		"AnalysisWithoutSuccessWhen": {
			reason: "An analysis passes when successWhen is true: it is required.",
			args: args{patches: append(steps(`[{weight: 10, analysis: [smoke]}]`),
				set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job}}}`))},
			want: want{errs: []fieldErr{required("spec.traffic.analysis[smoke].successWhen", "passes when")}},
		},
		"ProgressDeadline": {
			reason: "progressDeadline is a duration kept for progressive rollouts.",
			args: args{
				patches: []patch{set("spec.traffic", `{steps: [{weight: 10}], progressDeadline: 10m}`), set("spec.canary.revision", "v2")},
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Traffic.ProgressDeadline },
			},
			want: want{value: 10 * time.Minute},
		},
		"ProgressDeadlineBounds": {
			reason: "progressDeadline is between 1m and 24h: shorter fails rollouts before gateways report, longer is no deadline.",
			args:   args{patches: []patch{set("spec.traffic", `{steps: [{weight: 10}], progressDeadline: 30s}`), set("spec.canary.revision", "v2")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.progressDeadline", "between 1m and 24h")}},
		},
		"ProgressDeadlineTooLong": {
			reason: "progressDeadline is at most 24h.",
			args:   args{patches: []patch{set("spec.traffic", `{steps: [{weight: 10}], progressDeadline: 25h}`), set("spec.canary.revision", "v2")}},
			want:   want{errs: []fieldErr{invalid("spec.traffic.progressDeadline", "between 1m and 24h")}},
		},
		"ProgressDeadlineManual": {
			reason: "A progress deadline bounds how long a step is held: without steps it would silently do nothing.",
			args:   args{patches: []patch{set("spec.traffic", `{weight: 10, progressDeadline: 10m}`)}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.progressDeadline", "needs traffic.steps")}},
		},
		"RequireAcceptedRouteFalse": {
			reason: "requireAcceptedRoute false is kept.",
			args:   args{patches: []patch{set("spec.traffic.requireAcceptedRoute", "false")}, pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.RequireAcceptedRoute }},
			want:   want{value: false},
		},
		"RequireAcceptedRouteDefault": {
			reason: "requireAcceptedRoute defaults to true when traffic is set without it.",
			args:   args{pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.RequireAcceptedRoute }},
			want:   want{value: true},
		},
		"PausedAbort": {
			reason: "paused and abort are kept.",
			args: args{
				patches: []patch{set("spec.traffic.paused", "true"), set("spec.traffic.abort", "true")},
				pick:    func(cr *CanaryRoute) any { return [2]bool{cr.Spec.Traffic.Paused, cr.Spec.Traffic.Abort} },
			},
			want: want{value: [2]bool{true, true}},
		},

		// referenceGrants
		"ReferenceGrantsDefault": {
			reason: "referenceGrants defaults to Compose.",
			args:   args{pick: func(cr *CanaryRoute) any { return cr.Spec.ReferenceGrants }},
			want:   want{value: GrantsCompose},
		},
		"ReferenceGrantsSkip": {
			reason: "referenceGrants Skip is kept.",
			args:   args{patches: []patch{set("spec.referenceGrants", "Skip")}, pick: func(cr *CanaryRoute) any { return cr.Spec.ReferenceGrants }},
			want:   want{value: GrantsSkip},
		},
		"ReferenceGrantsUnknown": {
			reason: "referenceGrants is an enum.",
			args:   args{patches: []patch{set("spec.referenceGrants", "Never")}},
			want:   want{errs: []fieldErr{notSupported("spec.referenceGrants", "Never")}},
		},

		// fields that are not the function's
		"ForeignSpecFields": {
			reason: "Crossplane's own spec fields and a platform's additions are ignored, whatever their shape.",
			args: args{patches: []patch{
				set("spec.crossplane", `{compositionRef: {name: canaryroute}, resourceRefs: []}`),
				set("spec.compositionRef", `{name: canaryroute}`),
				set("spec.compositionRevisionRef", `{name: canaryroute-abc}`),
				set("spec.writeConnectionSecretToRef", `{name: s, namespace: n}`),
				set("spec.claimRef", `[not, a, ref]`),
				set("spec.team", `{owner: payments, costCenter: 42}`),
			}, pick: pickKind},
			want: want{value: KindHTTPRoute},
		},

		// status
		"StatusUnknownFields": {
			reason: "Status fields the function does not own, and fields a newer release may add, are ignored.",
			args: args{patches: []patch{set("status", `
conditions: [{type: Ready, status: "True", reason: Available}]
connectionDetails: {lastPublishedTime: "2026-01-01T00:00:00Z"}
rollout: {phase: Stable, canaryWeight: 20, primaryWeight: 80, futureField: {a: 1}}`)}, pick: pickStatus},
			want: want{value: Status{Rollout: &RolloutStatus{Phase: PhaseStable, CanaryWeight: percent.Int(20), PrimaryWeight: percent.Int(80)}}},
		},
		"StatusWeightsNearest": {
			reason: "Status weights are a record, not input: more decimals, a value out of range or a huge one are read as the weight they are nearest to, never as a Fatal.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, canaryWeight: 0.004, primaryWeight: 99.996}`)}, pick: pickStatus},
			want:   want{value: Status{Rollout: &RolloutStatus{Phase: PhaseProgressing, CanaryWeight: percent.Zero, PrimaryWeight: percent.Max}}},
		},
		"StatusWeightsOutOfRange": {
			reason: "A hand-written or forged status weight out of range (1e8, -0.01) is clamped, as it always was.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, canaryWeight: 1e8, primaryWeight: -0.01}`)}, pick: pickStatus},
			want:   want{value: Status{Rollout: &RolloutStatus{Phase: PhaseProgressing, CanaryWeight: percent.Max, PrimaryWeight: percent.Zero}}},
		},
		"StatusWeightsFine": {
			reason: "A status weight with two decimals is read exactly.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, canaryWeight: 0.1, primaryWeight: 99.9}`)}, pick: pickStatus},
			want:   want{value: Status{Rollout: &RolloutStatus{Phase: PhaseProgressing, CanaryWeight: percent.Hundredths(10), PrimaryWeight: percent.Hundredths(9990)}}},
		},
		"StatusNull": {
			reason: "A null status is no status.",
			args:   args{patches: []patch{set("status", "null")}, pick: pickStatus},
			want:   want{value: Status{}},
		},
		"StatusNotAnObject": {
			reason: "A status that is not an object is an error naming status.",
			args:   args{patches: []patch{set("status", `broken`)}},
			want:   want{errs: []fieldErr{invalid("status", "must be an object")}},
		},
		"StatusRolloutNotAnObject": {
			reason: "A malformed status.rollout is an error naming it, not a silent restart of the rollout.",
			args:   args{patches: []patch{set("status.rollout", `Progressing`)}},
			want:   want{errs: []fieldErr{invalid("status.rollout", "must be an object, not string")}},
		},
		"StatusRolloutStep": {
			reason: "A malformed status.rollout.step names the field.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, step: one}`)}},
			want:   want{errs: []fieldErr{invalid("status.rollout.step", "must be an integer, not string")}},
		},
		"StatusRolloutTime": {
			reason: "A stepStartedAt that is not a time is an error naming status.rollout.stepStartedAt.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, stepStartedAt: yesterday}`)}},
			want:   want{errs: []fieldErr{invalid("status.rollout.stepStartedAt", "cannot parse")}},
		},
		"StatusRolloutLowercaseTime": {
			reason: "The API server's date-time format admits a lowercase t and z: such a stepStartedAt reads as the time it is, never as a status no run can move past.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Progressing, stepStartedAt: "2026-12-02t10:00:00z", nextStepAt: "2026-12-02t10:01:00z"}`)}},
			want:   want{},
		},
		"StatusRolloutCanaryBackend": {
			reason: "A malformed element of status.rollout.canaryBackends is named by index and field.",
			args:   args{patches: []patch{set("status.rollout", `{phase: Stable, canaryBackends: [{kind: Service, name: a}, {kind: Service, name: 5}]}`)}},
			want:   want{errs: []fieldErr{invalid("status.rollout.canaryBackends[1].name", "must be a string, not number")}},
		},
		"StatusRouteParent": {
			reason: "A malformed parent of status.route names the parent by index.",
			args:   args{patches: []patch{set("status.route", `{kind: HTTPRoute, name: podinfo, namespace: test, parents: [{name: a, accepted: true}, {name: b, accepted: "yes"}]}`)}},
			want:   want{errs: []fieldErr{invalid("status.route.parents[1].accepted", "must be a boolean, not string")}},
		},
		"StatusRoutes": {
			reason: "Attack: status.routes is read back as status.route is, so that each route's recorded versions are reused; a lowercase checkedAt reads as the time it is.",
			args:   args{patches: []patch{set("status.routes", `[{kind: HTTPRoute, name: podinfo-web, namespace: test, versions: {route: v1, checkedAt: "2026-12-02t10:00:00z"}}, {kind: GRPCRoute, name: podinfo-grpc}]`)}, pick: pickStatus},
			want: want{value: Status{Routes: []RouteStatus{
				{Kind: KindHTTPRoute, Name: "podinfo-web", Namespace: "test", Versions: &ServedVersions{Route: "v1", CheckedAt: metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))}},
				{Kind: KindGRPCRoute, Name: "podinfo-grpc"},
			}}},
		},
		"StatusRoutesParent": {
			reason: "A malformed parent of an entry of status.routes names the entry and the parent by index.",
			args:   args{patches: []patch{set("status.routes", `[{kind: HTTPRoute, name: a}, {kind: HTTPRoute, name: b, parents: [{name: a, accepted: "yes"}]}]`)}},
			want:   want{errs: []fieldErr{invalid("status.routes[1].parents[0].accepted", "must be a boolean, not string")}},
		},
		"StatusRoutesNotAList": {
			reason: "A status.routes that is not a list is an error naming it.",
			args:   args{patches: []patch{set("status.routes", `{kind: HTTPRoute}`)}},
			want:   want{errs: []fieldErr{invalid("status.routes", "must be a list")}},
		},
	}
}

// TestParseSpec pins each rule of the spec in docs/reference.md: the value that a valid
// field yields, and the field path and reason of every invalid one.
func TestParseSpec(t *testing.T) {
	runParseCases(t, specCases())
}

// runParseCases runs TestParseSpec's kind of cases: the errors Parse
// reports, then the value a case picks of a valid result.
func runParseCases(t *testing.T, cases map[string]specCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr, err := Parse(xrWith(t, tc.args.patches...), tc.args.defaults)
			if diff := diffErrs(t, tc.want.errs, fieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nParse(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
			if tc.args.pick == nil {
				if err == nil && tc.want.errs != nil {
					t.Errorf("%s\nParse(...): want an error, got none", tc.reason)
				}
				return
			}
			if cr == nil {
				t.Fatalf("%s\nParse(...): want a CanaryRoute, got nil", tc.reason)
			}
			if diff := cmp.Diff(tc.want.value, tc.args.pick(cr)); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
