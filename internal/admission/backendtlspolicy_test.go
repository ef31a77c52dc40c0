package admission

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func backendTLSCase(reason string, mutate func(p *gwv1.BackendTLSPolicy), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { p := backendTLSPolicy(); mutate(p); return p }, want: want}
}

func backendTLSSystemCase(reason string, mutate func(p *gwv1.BackendTLSPolicy), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { p := backendTLSPolicySystem(); mutate(p); return p }, want: want}
}

func backendTLSV1Alpha3Case(reason string, mutate func(p *gwv1.BackendTLSPolicy), want ...*field.Error) kindCase {
	return kindCase{reason: reason, obj: func() any { p := backendTLSPolicy(); mutate(p); return backendTLSPolicyV1Alpha3(p) }, want: want}
}

func sans(s ...gwv1.SubjectAltName) func(p *gwv1.BackendTLSPolicy) {
	return func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.SubjectAltNames = s }
}

const sanPath = "spec.validation.subjectAltNames"

//nolint:maintidx // A table of cases.
func backendTLSPolicyCases() map[string]kindCase {
	return map[string]kindCase{
		"BackendTLSPolicy/Valid": backendTLSCase("The typical policy, with CA certificates from a ConfigMap, is accepted.", func(*gwv1.BackendTLSPolicy) {}),
		"BackendTLSPolicy/ValidSystem": backendTLSSystemCase("The system's CA certificates and subject alternative names are accepted.",
			func(*gwv1.BackendTLSPolicy) {}),
		"BackendTLSPolicy/NoNameNoNamespace": backendTLSCase("Crossplane names composed resources and sets their namespace.",
			func(p *gwv1.BackendTLSPolicy) { p.Name, p.Namespace = "", "" }),
		"BackendTLSPolicy/LongNamespace": backendTLSCase("The metadata namespace is a DNS label.",
			func(p *gwv1.BackendTLSPolicy) { p.Namespace = strings.Repeat("n", 64) },
			field.Invalid(path("metadata.namespace"), nil, "must be no more than 63 characters")),
		"BackendTLSPolicy/ZeroSpec": backendTLSCase("spec is omitzero: a zero spec is not sent, and it is required.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec = gwv1.BackendTLSPolicySpec{} },
			required("spec")),
		"BackendTLSPolicy/NearlyZeroSpec": backendTLSCase("A non-nil empty targetRefs makes the spec non-zero: it is sent, without targetRefs (omitempty) and with an empty hostname.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec = gwv1.BackendTLSPolicySpec{TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{}}
			},
			required("spec.targetRefs"),
			tooShort("spec.validation.hostname", 1), mismatch("spec.validation.hostname", patSubdomain),
			celErr("spec.validation", msgCACertificatesNeither)),
		"BackendTLSPolicy/NoTargetRefs": backendTLSCase("A policy needs a target.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.TargetRefs = nil },
			required("spec.targetRefs")),
		"BackendTLSPolicy/TooManyTargetRefs": backendTLSCase("At most 16 targets.",
			func(p *gwv1.BackendTLSPolicy) {
				for i := len(p.Spec.TargetRefs); i < 17; i++ {
					p.Spec.TargetRefs = append(p.Spec.TargetRefs, serviceTarget(strings.Repeat("t", i), nil))
				}
			},
			tooMany("spec.targetRefs", 17, maxTargetRefs)),
		"BackendTLSPolicy/TargetRefFields": backendTLSCase("A target's group, kind, name and sectionName are checked.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.TargetRefs[1] = gwv1.LocalPolicyTargetReferenceWithSectionName{
					LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "Core"},
					SectionName:                ptr.To[gwv1.SectionName]("HTTPS"),
				}
			},
			mismatch("spec.targetRefs[1].group", patGroup),
			tooShort("spec.targetRefs[1].kind", 1), mismatch("spec.targetRefs[1].kind", patKind),
			tooShort("spec.targetRefs[1].name", 1),
			mismatch("spec.targetRefs[1].sectionName", patSubdomain)),
		"BackendTLSPolicy/SameTargetWithoutSectionName": backendTLSCase("A target referenced twice has a sectionName in each reference.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.TargetRefs[1] = serviceTarget("podinfo-primary-proxy", ptr.To[gwv1.SectionName]("https"))
			},
			celListErr("spec.targetRefs", msgTargetSectionSpecified)),
		"BackendTLSPolicy/SameTargetSameSection": backendTLSCase("A target referenced twice has a different sectionName in each reference.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.TargetRefs[0] = p.Spec.TargetRefs[1] },
			celListErr("spec.targetRefs", msgTargetSectionUnique)),
		"BackendTLSPolicy/SameTargetEmptySection": backendTLSCase("An empty sectionName is too short, and equals an absent one for the CEL rules.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.TargetRefs[1] = serviceTarget("podinfo-primary-proxy", ptr.To[gwv1.SectionName](""))
			},
			tooShort("spec.targetRefs[1].sectionName", 1), mismatch("spec.targetRefs[1].sectionName", patSubdomain),
			celListErr("spec.targetRefs", msgTargetSectionUnique)),
		"BackendTLSPolicy/SameTargetDifferentSections": backendTLSCase("Two sections of one Service are two targets.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.TargetRefs[0] = serviceTarget("podinfo-canary-proxy", ptr.To[gwv1.SectionName]("grpc"))
			}),
		"BackendTLSPolicy/SameNameOtherGroup": backendTLSCase("A ServiceImport of the same name is another target: group and kind have no defaults to compare.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.TargetRefs[1] = serviceTarget("podinfo-primary-proxy", nil)
				p.Spec.TargetRefs[1].Group, p.Spec.TargetRefs[1].Kind = "multicluster.x-k8s.io", "ServiceImport"
			}),
		"BackendTLSPolicy/BothCASources": backendTLSCase("CA certificate references and a well-known CA set exclude each other.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.WellKnownCACertificates = ptr.To(gwv1.WellKnownCACertificatesSystem)
			},
			celErr("spec.validation", msgCACertificatesBoth)),
		"BackendTLSPolicy/NoCASource": backendTLSCase("A policy needs CA certificate references or a well-known CA set.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.CACertificateRefs = nil },
			celErr("spec.validation", msgCACertificatesNeither)),
		"BackendTLSPolicy/EmptyWellKnown": backendTLSSystemCase("An empty well-known CA set is sent: too short, and no CA source for the CEL rule.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.WellKnownCACertificates = ptr.To[gwv1.WellKnownCACertificatesType]("")
			},
			tooShort("spec.validation.wellKnownCACertificates", 1), mismatch("spec.validation.wellKnownCACertificates", patWellKnownCA),
			celErr("spec.validation", msgCACertificatesNeither)),
		"BackendTLSPolicy/EmptyCARefsWithSystem": backendTLSSystemCase("An empty caCertificateRefs is omitted: System alone is the CA source.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.CACertificateRefs = []gwv1.LocalObjectReference{} }),
		"BackendTLSPolicy/VendorWellKnown": backendTLSSystemCase("The CRD's pattern, not an enum, admits vendor-prefixed CA sets.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.WellKnownCACertificates = ptr.To[gwv1.WellKnownCACertificatesType]("example.com/bundle")
			}),
		"BackendTLSPolicy/BadWellKnown": backendTLSSystemCase("System is spelt with a capital; a vendor set needs a name.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.WellKnownCACertificates = ptr.To[gwv1.WellKnownCACertificatesType]("example.com/")
			},
			mismatch("spec.validation.wellKnownCACertificates", patWellKnownCA)),
		"BackendTLSPolicy/TooManyCARefs": backendTLSCase("At most 8 CA certificate references.",
			func(p *gwv1.BackendTLSPolicy) {
				for i := len(p.Spec.Validation.CACertificateRefs); i < 9; i++ {
					p.Spec.Validation.CACertificateRefs = append(p.Spec.Validation.CACertificateRefs, gwv1.LocalObjectReference{Kind: "ConfigMap", Name: gwv1.ObjectName(strings.Repeat("c", i))})
				}
			},
			tooMany("spec.validation.caCertificateRefs", 9, maxCACertificateRefs)),
		"BackendTLSPolicy/CARefFields": backendTLSCase("A CA certificate reference's group, kind and name are checked.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.CACertificateRefs = append(p.Spec.Validation.CACertificateRefs, gwv1.LocalObjectReference{Group: "Core"})
			},
			mismatch("spec.validation.caCertificateRefs[1].group", patGroup),
			tooShort("spec.validation.caCertificateRefs[1].kind", 1), mismatch("spec.validation.caCertificateRefs[1].kind", patKind),
			tooShort("spec.validation.caCertificateRefs[1].name", 1)),
		"BackendTLSPolicy/NoHostname": backendTLSCase("hostname has no omitempty: an empty one is sent, and is too short.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.Hostname = "" },
			tooShort("spec.validation.hostname", 1), mismatch("spec.validation.hostname", patSubdomain)),
		"BackendTLSPolicy/WildcardHostname": backendTLSCase("The hostname is a precise hostname: no wildcard.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.Hostname = "*.example.com" },
			mismatch("spec.validation.hostname", patSubdomain)),
		"BackendTLSPolicy/IPHostname": backendTLSCase("The CRD has no rule against an IP address as hostname (the type's doc forbids it; the schema does not).",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.Hostname = "10.0.0.1" }),
		"BackendTLSPolicy/LongHostname": backendTLSCase("A hostname has at most 253 characters.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Validation.Hostname = gwv1.PreciseHostname(strings.Repeat(strings.Repeat("h", 63)+".", 4) + "com")
			},
			tooLong("spec.validation.hostname", 253)),
		"BackendTLSPolicy/TooManySANs": backendTLSSystemCase("At most 5 subject alternative names.",
			func(p *gwv1.BackendTLSPolicy) {
				s := gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "https://a"}
				p.Spec.Validation.SubjectAltNames = slices.Repeat([]gwv1.SubjectAltName{s}, 6)
			},
			tooMany(sanPath, 6, maxSubjectAltNames)),
		"BackendTLSPolicy/RepeatedSANs": backendTLSSystemCase("subjectAltNames is an atomic list: repeats are fine.",
			sans(gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "https://a"}, gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "https://a"})),
		"BackendTLSPolicy/SANHostnameMissing": backendTLSSystemCase("A Hostname subject alternative name has a hostname.",
			sans(gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType}),
			celErr(sanPath+"[0]", msgSANHostnameSpecified)),
		"BackendTLSPolicy/SANURIMissing": backendTLSSystemCase("A URI subject alternative name has a URI.",
			sans(gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType}),
			celErr(sanPath+"[0]", msgSANURISpecified)),
		"BackendTLSPolicy/SANBothFields": backendTLSSystemCase("A subject alternative name has only the field of its type.",
			sans(
				gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType, Hostname: "a.example.com", URI: "https://a"},
				gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, Hostname: "a.example.com", URI: "https://a"},
			),
			celErr(sanPath+"[0]", msgSANURIType), celErr(sanPath+"[1]", msgSANHostnameType)),
		"BackendTLSPolicy/SANBadType": backendTLSSystemCase("A subject alternative name is a Hostname or a URI; type has no omitempty, so an empty one is sent.",
			sans(gwv1.SubjectAltName{Type: "DNS", Hostname: "a.example.com"}, gwv1.SubjectAltName{URI: "https://a"}),
			notSupported(sanPath+"[0].type", enumSubjectAltNameType), celErr(sanPath+"[0]", msgSANHostnameType),
			notSupported(sanPath+"[1].type", enumSubjectAltNameType), celErr(sanPath+"[1]", msgSANURIType)),
		"BackendTLSPolicy/SANBadValues": backendTLSSystemCase("A hostname may start with a wildcard label only; a URI has a scheme and an authority.",
			sans(
				gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType, Hostname: "a.*.example.com"},
				gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "urn:example:a"},
				gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: gwv1.AbsoluteURI("https://" + strings.Repeat("u", 246))},
			),
			mismatch(sanPath+"[0].hostname", patHostname),
			mismatch(sanPath+"[1].uri", patAbsoluteURI),
			tooLong(sanPath+"[2].uri", 253)),
		"BackendTLSPolicy/SANURIUnanchored": backendTLSSystemCase("The URI pattern is anchored at the start only: anything may follow the authority.",
			sans(gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "spiffe://a b/c?d#e f"})),
		"BackendTLSPolicy/TooManyOptions": backendTLSCase("At most 16 options.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Options = map[gwv1.AnnotationKey]gwv1.AnnotationValue{}
				for i := range 17 {
					p.Spec.Options[gwv1.AnnotationKey("example.com/"+strings.Repeat("o", i+1))] = "v"
				}
			},
			tooMany("spec.options", 17, maxTLSOptions)),
		"BackendTLSPolicy/OptionValues": backendTLSCase("Option values have at most 4096 characters, reported at spec.options.<key>.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Options = map[gwv1.AnnotationKey]gwv1.AnnotationValue{
					"example.com/b": gwv1.AnnotationValue(strings.Repeat("v", 4097)),
					"example.com/a": gwv1.AnnotationValue(strings.Repeat("é", 4097)),
					"example.com/c": gwv1.AnnotationValue(strings.Repeat("é", 4096)),
					"example.com/d": "",
				}
			},
			tooLong("spec.options.example.com/a", 4096), tooLong("spec.options.example.com/b", 4096)),
		"BackendTLSPolicy/OptionKeys": backendTLSCase("The CRD does not constrain option keys, whatever the AnnotationKey type's markers say.",
			func(p *gwv1.BackendTLSPolicy) {
				p.Spec.Options = map[gwv1.AnnotationKey]gwv1.AnnotationValue{"Bad Key!": "v", gwv1.AnnotationKey(strings.Repeat("k", 300)): "v"}
			}),

		"BackendTLSPolicyV1Alpha3/Valid": backendTLSV1Alpha3Case("v1alpha3 (experimental only) has the same schema as v1.", func(*gwv1.BackendTLSPolicy) {}),
		"BackendTLSPolicyV1Alpha3/NoCASource": backendTLSV1Alpha3Case("v1alpha3 has the same schema as v1.",
			func(p *gwv1.BackendTLSPolicy) { p.Spec.Validation.CACertificateRefs = nil },
			celErr("spec.validation", msgCACertificatesNeither)),
	}
}

// maximalBackendTLSPolicy is a policy at every limit at once.
func maximalBackendTLSPolicy() *gwv1.BackendTLSPolicy {
	p := backendTLSPolicy()
	p.Spec.TargetRefs = nil
	for i := range maxTargetRefs {
		// The same target each time, so the CEL rules compare every pair.
		p.Spec.TargetRefs = append(p.Spec.TargetRefs, serviceTarget(strings.Repeat("t", 253), ptr.To(gwv1.SectionName(strings.Repeat("s", 253-i)))))
	}
	for i := len(p.Spec.Validation.CACertificateRefs); i < maxCACertificateRefs; i++ {
		p.Spec.Validation.CACertificateRefs = append(p.Spec.Validation.CACertificateRefs, gwv1.LocalObjectReference{Kind: "ConfigMap", Name: gwv1.ObjectName(strings.Repeat("c", 253-i))})
	}
	p.Spec.Validation.Hostname = gwv1.PreciseHostname(strings.Repeat(strings.Repeat("h", 63)+".", 3) + strings.Repeat("h", 61))
	for range maxSubjectAltNames {
		p.Spec.Validation.SubjectAltNames = append(p.Spec.Validation.SubjectAltNames,
			gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: gwv1.AbsoluteURI("https://" + strings.Repeat("u", 245))})
	}
	p.Spec.Options = map[gwv1.AnnotationKey]gwv1.AnnotationValue{}
	for i := range maxTLSOptions {
		p.Spec.Options[gwv1.AnnotationKey("example.com/"+strings.Repeat("o", i+1))] = gwv1.AnnotationValue(strings.Repeat("v", 4096))
	}
	return p
}

// TestMaximalBackendTLSPolicy shows that a policy at every limit at once
// passes the CRDs of both channels: the CEL cost budget, which this package
// does not mirror, cannot refuse a policy that passes the schema's limits.
func TestMaximalBackendTLSPolicy(t *testing.T) {
	p := maximalBackendTLSPolicy()
	if v := judge(t, p); !v.agree() || !v.crdAccepts() {
		t.Error(report("MaximalBackendTLSPolicy", p, v))
	}
}

func TestBackendTLSPolicyFragmentPaths(t *testing.T) {
	type args struct {
		check func() field.ErrorList
	}
	cases := map[string]struct {
		reason string
		args   args
		want   field.ErrorList
	}{
		"BackendTLSPolicyValidation": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return BackendTLSPolicyValidation(path("spec.primary.tls"), &gwv1.BackendTLSPolicyValidation{
					Hostname:        "podinfo.internal",
					SubjectAltNames: []gwv1.SubjectAltName{{Type: gwv1.URISubjectAltNameType}},
				})
			}},
			want: errs(celErr("spec.primary.tls.subjectAltNames[0]", msgSANURISpecified), celErr("spec.primary.tls", msgCACertificatesNeither)),
		},
		"SessionPersistence": {
			reason: "Fragment validators report errors at the caller's path.",
			args: args{check: func() field.ErrorList {
				return SessionPersistence(path("spec.traffic.sessionPersistence"), &gwv1.SessionPersistence{
					CookieConfig: &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
				})
			}},
			want: errs(celErr("spec.traffic.sessionPersistence", msgAbsoluteTimeout)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := diff(tc.want, tc.args.check()); d != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func BenchmarkBackendTLSPolicy(b *testing.B) {
	p := backendTLSPolicySystem()
	b.ReportAllocs()
	for b.Loop() {
		if errs := BackendTLSPolicy(p); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
