package admission

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
)

// A kindCase is a test case of any kind: a baseline, a mutation of it, and
// the errors expected.
type kindCase struct {
	reason string
	obj    func() any
	want   field.ErrorList
}

func grpcCase(reason string, mutate func(r *gwv1.GRPCRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := grpcRoute(); mutate(r); return r }, want: want}
}

func tlsCase(reason string, mutate func(r *gwv1.TLSRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := tlsRoute(); mutate(r); return r }, want: want}
}

func tcpCase(reason string, mutate func(r *gwv1.TCPRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := tcpRoute(); mutate(r); return r }, want: want}
}

func tlsV1Alpha2Case(reason string, mutate func(r *gwv1alpha2.TLSRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := tlsRouteV1Alpha2(); mutate(r); return r }, want: want}
}

func tcpV1Alpha2Case(reason string, mutate func(r *gwv1alpha2.TCPRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := tcpRouteV1Alpha2(); mutate(r); return r }, want: want}
}

func udpCase(reason string, mutate func(r *gwv1.UDPRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := udpRoute(); mutate(r); return r }, want: want}
}

func udpV1Alpha2Case(reason string, mutate func(r *gwv1alpha2.UDPRoute), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { r := udpRouteV1Alpha2(); mutate(r); return r }, want: want}
}

func grantCase(reason string, mutate func(g *gwv1.ReferenceGrant), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { g := referenceGrant(); mutate(g); return g }, want: want}
}

func grpcMethod(service, method *string) []gwv1.GRPCRouteMatch {
	return []gwv1.GRPCRouteMatch{{Method: &gwv1.GRPCMethodMatch{Service: service, Method: method}}}
}

func otherCases() map[string]kindCase {
	cases := map[string]kindCase{
		"GRPCRoute/Valid": grpcCase("The typical GRPCRoute is accepted.", func(*gwv1.GRPCRoute) {}),
		"GRPCRoute/EmptySpec": grpcCase("A GRPCRoute needs no rules.", func(r *gwv1.GRPCRoute) {
			r.Spec = gwv1.GRPCRouteSpec{}
		}),
		"GRPCRoute/EmptyMethodMatch": grpcCase("A method match names a service or a method: its type defaults to Exact first.",
			func(r *gwv1.GRPCRoute) { r.Spec.Rules[0].Matches = grpcMethod(nil, nil) },
			celErr("spec.rules[0].matches[0].method", msgGRPCServiceOrMethod)),
		"GRPCRoute/ServiceChars": grpcCase("An Exact service is a dotted name.",
			func(r *gwv1.GRPCRoute) { r.Spec.Rules[0].Matches = grpcMethod(ptr.To("a..b"), ptr.To("1x")) },
			celErr("spec.rules[0].matches[0].method", msgGRPCServiceChars),
			celErr("spec.rules[0].matches[0].method", msgGRPCMethodChars)),
		"GRPCRoute/RegularExpressionMethod": grpcCase("A RegularExpression method match escapes the character rules.", func(r *gwv1.GRPCRoute) {
			r.Spec.Rules[0].Matches = grpcMethod(ptr.To("a..b"), ptr.To("[a-z]+"))
			r.Spec.Rules[0].Matches[0].Method.Type = ptr.To(gwv1.GRPCMethodMatchRegularExpression)
		}),
		"GRPCRoute/RepeatedFilter": grpcCase("A RequestHeaderModifier filter cannot be repeated.",
			func(r *gwv1.GRPCRoute) {
				r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, r.Spec.Rules[0].Filters[0])
			},
			celListErr("spec.rules[0].filters", "RequestHeaderModifier filter cannot be repeated")),
		"GRPCRoute/URLRewrite": grpcCase("GRPCRoute has no URLRewrite filter.",
			func(r *gwv1.GRPCRoute) { r.Spec.Rules[0].Filters = []gwv1.GRPCRouteFilter{{Type: "URLRewrite"}} },
			notSupported("spec.rules[0].filters[0].type", enumGRPCFilterType)),
		"GRPCRoute/MirrorWithoutPort": grpcCase("A mirror's Service needs a port.",
			func(r *gwv1.GRPCRoute) {
				r.Spec.Rules[1].Filters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{BackendRef: gwv1.BackendObjectReference{Name: "m"}}}}
			},
			celErr("spec.rules[1].filters[0].requestMirror.backendRef", msgServicePort)),
		"GRPCRoute/TooManyTotalMatches": grpcCase("At most 128 matches across rules; a rule without matches counts none.",
			func(r *gwv1.GRPCRoute) {
				m := grpcMethod(ptr.To("a"), nil)[0]
				r.Spec.Rules[0].Matches = slices.Repeat([]gwv1.GRPCRouteMatch{m}, 64)
				r.Spec.Rules[1].Matches = slices.Repeat([]gwv1.GRPCRouteMatch{m}, 64)
				r.Spec.Rules = append(r.Spec.Rules, gwv1.GRPCRouteRule{Matches: []gwv1.GRPCRouteMatch{m}, BackendRefs: grpcBackends()})
			},
			celListErr("spec.rules", msgTotalMatches)),
		"GRPCRoute/TotalMatches": grpcCase("128 matches are fine.", func(r *gwv1.GRPCRoute) {
			m := grpcMethod(ptr.To("a"), nil)[0]
			r.Spec.Rules[0].Matches = slices.Repeat([]gwv1.GRPCRouteMatch{m}, 64)
			r.Spec.Rules[1].Matches = slices.Repeat([]gwv1.GRPCRouteMatch{m}, 64)
			r.Spec.Rules = append(r.Spec.Rules, gwv1.GRPCRouteRule{BackendRefs: grpcBackends()})
		}),
		"GRPCRoute/DuplicateHeaderMatch": grpcCase("Header matches are a list map keyed by name.",
			func(r *gwv1.GRPCRoute) {
				m := &r.Spec.Rules[0].Matches[0]
				m.Headers = append(m.Headers, m.Headers[0])
			},
			duplicate("spec.rules[0].matches[0].headers[1]")),
		"GRPCRoute/HeaderMatchValueSpaces": grpcCase("GRPCRoute header match values have no pattern in either channel.", func(r *gwv1.GRPCRoute) {
			r.Spec.Rules[0].Matches[0].Headers[0].Value = " a  b "
		}),
		"GRPCRoute/DuplicateRuleName": grpcCase("The experimental channel requires rule names to be unique.",
			func(r *gwv1.GRPCRoute) { r.Spec.Rules[1].Name = r.Spec.Rules[0].Name },
			celListErr("spec.rules", MsgRuleNameUnique)),

		"GRPCRoute/SessionPersistence": grpcCase("A GRPCRoute rule's sessionPersistence (experimental) has the same rules as an HTTPRoute's.",
			func(r *gwv1.GRPCRoute) {
				r.Spec.Rules[0].SessionPersistence = &gwv1.SessionPersistence{
					SessionName:  ptr.To(strings.Repeat("s", 129)),
					CookieConfig: &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
				}
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{Type: ptr.To(gwv1.HeaderBasedSessionPersistence), CookieConfig: &gwv1.CookieConfig{}}
			},
			tooLong("spec.rules[0].sessionPersistence.sessionName", 128),
			celErr("spec.rules[0].sessionPersistence", msgAbsoluteTimeout),
			celErr("spec.rules[1].sessionPersistence", msgCookieConfigType)),
		"GRPCRoute/ValidSessionPersistence": grpcCase("A header-based session, and a permanent cookie with its timeout, are fine.",
			func(r *gwv1.GRPCRoute) {
				r.Spec.Rules[0].SessionPersistence = &gwv1.SessionPersistence{Type: ptr.To(gwv1.HeaderBasedSessionPersistence), SessionName: ptr.To("x-session")}
				r.Spec.Rules[1].SessionPersistence = &gwv1.SessionPersistence{
					AbsoluteTimeout: ptr.To[gwv1.Duration]("24h"),
					CookieConfig:    &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
				}
			}),

		"TLSRoute/Valid": tlsCase("The typical TLSRoute is accepted.", func(*gwv1.TLSRoute) {}),
		"TLSRoute/NoHostnames": tlsCase("A TLSRoute v1 needs a hostname.",
			func(r *gwv1.TLSRoute) { r.Spec.Hostnames = nil },
			required("spec.hostnames")),
		"TLSRoute/IPHostname": tlsCase("TLSRoute v1 hostnames are not IP addresses.",
			func(r *gwv1.TLSRoute) { r.Spec.Hostnames = []gwv1.Hostname{"10.0.0.1"} },
			celListErr("spec.hostnames", msgHostnameIP)),
		"TLSRoute/LeadingZeroIP": tlsCase("Leading zeros make it no IP address for CEL's isIP.",
			func(r *gwv1.TLSRoute) { r.Spec.Hostnames = []gwv1.Hostname{"10.0.0.01"} }),
		"TLSRoute/TwoRules": tlsCase("A TLSRoute v1 has exactly one rule.",
			func(r *gwv1.TLSRoute) { r.Spec.Rules = append(r.Spec.Rules, r.Spec.Rules[0]) },
			tooMany("spec.rules", 2, 1)),
		"TLSRoute/NoRules": tlsCase("A TLSRoute v1 has exactly one rule.",
			func(r *gwv1.TLSRoute) { r.Spec.Rules = nil },
			required("spec.rules")),
		"TLSRoute/NoBackendRefs": tlsCase("A TLSRoute rule needs a backendRef.",
			func(r *gwv1.TLSRoute) { r.Spec.Rules[0].BackendRefs = nil },
			required("spec.rules[0].backendRefs")),
		"TLSRoute/SameParent": tlsCase("parentRefs rules apply to every route kind.",
			func(r *gwv1.TLSRoute) { r.Spec.ParentRefs[1] = r.Spec.ParentRefs[0] },
			celListErr("spec.parentRefs", msgSectionUnique), celListErr("spec.parentRefs", msgSectionPortUnique)),

		"TCPRoute/Valid": tcpCase("The typical TCPRoute is accepted.", func(*gwv1.TCPRoute) {}),
		"TCPRoute/NoRules": tcpCase("A TCPRoute v1 has exactly one rule.",
			func(r *gwv1.TCPRoute) { r.Spec.Rules = nil },
			required("spec.rules")),
		"TCPRoute/ServiceWithoutPort": tcpCase("A backendRef to a Service must have a port.",
			func(r *gwv1.TCPRoute) { r.Spec.Rules[0].BackendRefs[0].Port = nil },
			celErr("spec.rules[0].backendRefs[0]", msgServicePort)),

		"TLSRouteV1Alpha2/Valid": tlsV1Alpha2Case("The typical TLSRoute v1alpha2 is accepted.", func(*gwv1alpha2.TLSRoute) {}),
		"TLSRouteV1Alpha2/IPHostname": tlsV1Alpha2Case("v1alpha2 has no CEL rules on hostnames.",
			func(r *gwv1alpha2.TLSRoute) { r.Spec.Hostnames = []gwv1.Hostname{"10.0.0.1"} }),
		"TLSRouteV1Alpha2/NilRules": tlsV1Alpha2Case("rules is sent as null, then found missing.",
			func(r *gwv1alpha2.TLSRoute) { r.Spec.Rules = nil },
			required("spec.rules")),
		"TLSRouteV1Alpha2/SameParentDifferentPorts": tlsV1Alpha2Case("Only the experimental channel serves v1alpha2: ports tell parentRefs apart.",
			func(r *gwv1alpha2.TLSRoute) {
				r.Spec.ParentRefs[0].SectionName, r.Spec.ParentRefs[1].SectionName = nil, nil
				r.Spec.ParentRefs[0].Port, r.Spec.ParentRefs[1].Port = ptr.To[gwv1.PortNumber](80), ptr.To[gwv1.PortNumber](443)
			}),
		"TLSRouteV1Alpha2/EmptyRules": tlsV1Alpha2Case("An empty rules is sent as such: too few items.",
			func(r *gwv1alpha2.TLSRoute) { r.Spec.Rules = []gwv1alpha2.TLSRouteRule{} },
			fewItems("spec.rules", 1)),
		"TLSRouteV1Alpha2/DuplicateRuleName": tlsV1Alpha2Case("Rule names are unique.",
			func(r *gwv1alpha2.TLSRoute) { r.Spec.Rules[1].Name = r.Spec.Rules[0].Name },
			celListErr("spec.rules", MsgRuleNameUnique)),

		"TCPRouteV1Alpha2/Valid": tcpV1Alpha2Case("The typical TCPRoute v1alpha2 is accepted.", func(*gwv1alpha2.TCPRoute) {}),
		"TCPRouteV1Alpha2/TooManyRules": tcpV1Alpha2Case("At most 16 rules.",
			func(r *gwv1alpha2.TCPRoute) { r.Spec.Rules = slices.Repeat(r.Spec.Rules, 17) },
			tooMany("spec.rules", 17, 16)),

		"UDPRoute/Valid": udpCase("The typical UDPRoute is accepted.", func(*gwv1.UDPRoute) {}),
		"UDPRoute/NoRules": udpCase("A UDPRoute v1 has exactly one rule; an empty rules is omitted.",
			func(r *gwv1.UDPRoute) { r.Spec.Rules = []gwv1.UDPRouteRule{} },
			required("spec.rules")),
		"UDPRoute/TwoRules": udpCase("A UDPRoute v1 has exactly one rule.",
			func(r *gwv1.UDPRoute) { r.Spec.Rules = append(r.Spec.Rules, r.Spec.Rules[0]) },
			tooMany("spec.rules", 2, 1)),
		"UDPRoute/NoBackendRefs": udpCase("A UDPRoute rule needs a backendRef.",
			func(r *gwv1.UDPRoute) { r.Spec.Rules[0].BackendRefs = nil },
			required("spec.rules[0].backendRefs")),
		"UDPRoute/TooManyBackendRefs": udpCase("At most 16 backendRefs.",
			func(r *gwv1.UDPRoute) {
				r.Spec.Rules[0].BackendRefs = slices.Repeat(r.Spec.Rules[0].BackendRefs[:1], 17)
			},
			tooMany("spec.rules[0].backendRefs", 17, maxBackendRefs)),
		"UDPRoute/BackendRefFields": udpCase("A backendRef's port, weight and name are checked; a Service needs a port.",
			func(r *gwv1.UDPRoute) {
				r.Spec.Rules[0].Name = ptr.To[gwv1.SectionName]("DNS")
				r.Spec.Rules[0].BackendRefs[0].Port = ptr.To[gwv1.PortNumber](0)
				r.Spec.Rules[0].BackendRefs[0].Weight = ptr.To[int32](-1)
				r.Spec.Rules[0].BackendRefs[1].Name, r.Spec.Rules[0].BackendRefs[1].Port = "", nil
			},
			mismatch("spec.rules[0].name", patSubdomain),
			below("spec.rules[0].backendRefs[0].port", 1), below("spec.rules[0].backendRefs[0].weight", 0),
			tooShort("spec.rules[0].backendRefs[1].name", 1), celErr("spec.rules[0].backendRefs[1]", msgServicePort)),
		"UDPRoute/SameParent": udpCase("parentRefs rules apply to every route kind.",
			func(r *gwv1.UDPRoute) { r.Spec.ParentRefs[1] = r.Spec.ParentRefs[0] },
			celListErr("spec.parentRefs", msgSectionUnique), celListErr("spec.parentRefs", msgSectionPortUnique)),
		"UDPRoute/UseDefaultGateways": udpCase("useDefaultGateways (experimental) is All or None.",
			func(r *gwv1.UDPRoute) { r.Spec.UseDefaultGateways = "Some" },
			notSupported("spec.useDefaultGateways", enumGatewayDefaultScope)),

		"UDPRouteV1Alpha2/Valid": udpV1Alpha2Case("The typical UDPRoute v1alpha2 is accepted.", func(*gwv1alpha2.UDPRoute) {}),
		"UDPRouteV1Alpha2/NilRules": udpV1Alpha2Case("rules has no omitempty: it is sent as null, then found missing.",
			func(r *gwv1alpha2.UDPRoute) { r.Spec.Rules = nil },
			required("spec.rules")),
		"UDPRouteV1Alpha2/EmptyRules": udpV1Alpha2Case("An empty rules is sent as such: too few items.",
			func(r *gwv1alpha2.UDPRoute) { r.Spec.Rules = []gwv1alpha2.UDPRouteRule{} },
			fewItems("spec.rules", 1)),
		"UDPRouteV1Alpha2/TooManyRules": udpV1Alpha2Case("At most 16 rules.",
			func(r *gwv1alpha2.UDPRoute) {
				for len(r.Spec.Rules) < 17 {
					r.Spec.Rules = append(r.Spec.Rules, gwv1alpha2.UDPRouteRule{BackendRefs: []gwv1.BackendRef{backend("b", 1)}})
				}
			},
			tooMany("spec.rules", 17, 16)),
		"UDPRouteV1Alpha2/DuplicateRuleName": udpV1Alpha2Case("Rule names are unique.",
			func(r *gwv1alpha2.UDPRoute) { r.Spec.Rules[1].Name = r.Spec.Rules[0].Name },
			celListErr("spec.rules", MsgRuleNameUnique)),
		"UDPRouteV1Alpha2/SameParentDifferentPorts": udpV1Alpha2Case("Only the experimental channel serves v1alpha2: ports tell parentRefs apart.",
			func(r *gwv1alpha2.UDPRoute) {
				r.Spec.ParentRefs[0].SectionName, r.Spec.ParentRefs[1].SectionName = nil, nil
				r.Spec.ParentRefs[0].Port, r.Spec.ParentRefs[1].Port = ptr.To[gwv1.PortNumber](53), ptr.To[gwv1.PortNumber](5353)
			}),

		"ReferenceGrant/Valid": grantCase("The typical ReferenceGrant is accepted.", func(*gwv1.ReferenceGrant) {}),
		"ReferenceGrant/NilFrom": grantCase("from is sent as null, then found missing.",
			func(g *gwv1.ReferenceGrant) { g.Spec.From = nil },
			required("spec.from")),
		"ReferenceGrant/EmptyTo": grantCase("to needs an item.",
			func(g *gwv1.ReferenceGrant) { g.Spec.To = []gwv1.ReferenceGrantTo{} },
			fewItems("spec.to", 1)),
		"ReferenceGrant/Fields": grantCase("Peers' kinds, namespaces and names are checked.",
			func(g *gwv1.ReferenceGrant) {
				g.Spec.From[0].Namespace, g.Spec.From[0].Kind = "Test", ""
				g.Spec.To[0].Name = ptr.To[gwv1.ObjectName]("")
			},
			tooShort("spec.from[0].kind", 1), mismatch("spec.from[0].kind", patKind),
			mismatch("spec.from[0].namespace", patNamespace), tooShort("spec.to[0].name", 1)),
		"ReferenceGrant/LongNamespace": grantCase("The metadata namespace is a DNS label.",
			func(g *gwv1.ReferenceGrant) { g.Namespace = strings.Repeat("n", 64) },
			field.Invalid(path("metadata.namespace"), nil, "must be no more than 63 characters")),
		"ReferenceGrantV1Beta1/Valid": {
			reason: "v1beta1 has the same schema as v1.",
			obj:    func() any { return referenceGrantV1Beta1() },
		},
		"ReferenceGrantV1Beta1/NilTo": {
			reason: "v1beta1 has the same schema as v1.",
			obj: func() any {
				g := referenceGrantV1Beta1()
				g.Spec.To = nil
				return g
			},
			want: errs(required("spec.to")),
		},
	}
	maps.Copy(cases, backendTLSPolicyCases())
	return cases
}

// maximal is the HTTPRoute case at every limit at once.
const maximal = "Maximal"

// TestMaximalHTTPRoute shows that a route at every limit at once passes the
// CRDs of both channels: the API server's CEL cost budget, which this
// package does not mirror, cannot refuse an object that passes the schema's
// limits.
func TestMaximalHTTPRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("the CRD validator takes seconds on this route")
	}
	r := httpRoute()
	httpRouteCases()[maximal].mutate(r)
	if v := judge(t, r); !v.agree() || !v.crdAccepts() {
		t.Error(report(maximal, r, v))
	}
}

func TestOtherKinds(t *testing.T) {
	for name, tc := range otherCases() {
		t.Run(name, func(t *testing.T) {
			if d := diff(tc.want, admit(tc.obj())); d != "" {
				t.Errorf("\n%s\n%s: -want, +got:\n%s", tc.reason, name, d)
			}
		})
	}
}

// namedCase is a hand-written case as an object for the differential test.
type namedCase struct {
	name string
	obj  any
}

// allCases are the objects of every hand-written case, in a fixed order.
func allCases() []namedCase {
	var out []namedCase
	hc := httpRouteCases()
	for _, name := range slices.Sorted(maps.Keys(hc)) {
		if name == maximal {
			continue // Costly for the CRD validator: see TestMaximalHTTPRoute.
		}
		r := httpRoute()
		hc[name].mutate(r)
		out = append(out, namedCase{name: "HTTPRoute/" + name, obj: r})
	}
	oc := otherCases()
	for _, name := range slices.Sorted(maps.Keys(oc)) {
		out = append(out, namedCase{name: name, obj: oc[name].obj()})
	}
	return out
}
