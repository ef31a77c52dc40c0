package admission

import (
	"cmp"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// Messages of the BackendTLSPolicy CRD's x-kubernetes-validations rules,
// verbatim.
const (
	msgTargetSectionSpecified = "sectionName must be specified when targetRefs includes 2 or more references to the same target"
	msgTargetSectionUnique    = "sectionName must be unique when targetRefs includes 2 or more references to the same target"
	msgCACertificatesBoth     = "must not contain both CACertificateRefs and WellKnownCACertificates"
	msgCACertificatesNeither  = "must specify either CACertificateRefs or WellKnownCACertificates"
	msgSANHostnameSpecified   = "SubjectAltName element must contain Hostname, if Type is set to Hostname"
	msgSANHostnameType        = "SubjectAltName element must not contain Hostname, if Type is not set to Hostname"
	msgSANURISpecified        = "SubjectAltName element must contain URI, if Type is set to URI"
	msgSANURIType             = "SubjectAltName element must not contain URI, if Type is not set to URI"
)

// Patterns of the BackendTLSPolicy CRD, verbatim.
const (
	patWellKnownCA = `^(System|([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]))$`
	patAbsoluteURI = `^(([^:/?#]+):)(//([^/?#]*))([^?#]*)(\?([^#]*))?(#(.*))?`
)

// Compiled once at package init, like those of check.go.
var (
	reWellKnownCA = regexp.MustCompile(patWellKnownCA)
	reAbsoluteURI = regexp.MustCompile(patAbsoluteURI)
)

// Limits of the BackendTLSPolicy CRD.
const (
	maxTargetRefs        = 16
	maxCACertificateRefs = 8
	maxSubjectAltNames   = 5
	maxTLSOptions        = 16
)

var (
	strWellKnownCA     = str{min: 1, max: 253, re: reWellKnownCA, pattern: patWellKnownCA}
	strAbsoluteURI     = str{min: 1, max: 253, re: reAbsoluteURI, pattern: patAbsoluteURI}
	strAnnotationValue = str{max: 4096}

	enumSubjectAltNameType = []string{string(gwv1.HostnameSubjectAltNameType), string(gwv1.URISubjectAltNameType)}
)

// BackendTLSPolicy validates a BackendTLSPolicy v1 as both Gateway API
// channels would: their v1 schemas are the same.
func BackendTLSPolicy(p *gwv1.BackendTLSPolicy) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &p.ObjectMeta)
	spec := field.NewPath("spec")
	if zeroBackendTLSPolicySpec(&p.Spec) {
		// spec is omitzero: a zero spec is not sent, and it is required.
		return append(errs, field.Required(spec, ""))
	}
	errs = append(errs, policyTargetRefs(spec.Child("targetRefs"), p.Spec.TargetRefs)...)
	errs = append(errs, BackendTLSPolicyValidation(spec.Child("validation"), &p.Spec.Validation)...)
	return append(errs, tlsOptions(spec.Child("options"), p.Spec.Options)...)
}

// BackendTLSPolicyV1Alpha3 validates a BackendTLSPolicy v1alpha3, which only
// the experimental channel serves, with the same schema as v1.
func BackendTLSPolicyV1Alpha3(p *gwv1alpha3.BackendTLSPolicy) field.ErrorList {
	return BackendTLSPolicy((*gwv1.BackendTLSPolicy)(p))
}

// zeroBackendTLSPolicySpec tells whether encoding/json omits the spec
// (omitzero): every field is zero, and a non-nil empty list or map is not.
func zeroBackendTLSPolicySpec(s *gwv1.BackendTLSPolicySpec) bool {
	v := &s.Validation
	return s.TargetRefs == nil && s.Options == nil && v.CACertificateRefs == nil &&
		v.WellKnownCACertificates == nil && v.Hostname == "" && v.SubjectAltNames == nil
}

// policyTargetRefs validates the targetRefs of a BackendTLSPolicy: 1 to 16
// references, and the CEL rules that a target referenced more than once has
// a sectionName in each reference, a different one.
func policyTargetRefs(path *field.Path, refs []gwv1.LocalPolicyTargetReferenceWithSectionName) field.ErrorList {
	switch n := len(refs); {
	case n == 0:
		// The field is omitted when empty, and it is required.
		return field.ErrorList{field.Required(path, "")}
	case n > maxTargetRefs:
		return field.ErrorList{field.TooMany(path, n, maxTargetRefs)}
	}
	var errs field.ErrorList
	for i := range refs {
		r := &refs[i]
		p := path.Index(i)
		errs = append(errs, strGroup.check(p, "group", string(r.Group))...)
		errs = append(errs, strKind.check(p, "kind", string(r.Kind))...)
		errs = append(errs, strObjectName.check(p, "name", string(r.Name))...)
		if r.SectionName != nil {
			errs = append(errs, strSectionName.check(p, "sectionName", string(*r.SectionName))...)
		}
	}
	return append(errs, targetRefsRules(path, refs)...)
}

// sameTarget is the CRD's test of two targetRefs naming the same target:
// group, kind and name are required, so there is no defaulting.
func sameTarget(a, b *gwv1.LocalPolicyTargetReferenceWithSectionName) bool {
	return jsonString(string(a.Group)) == jsonString(string(b.Group)) &&
		jsonString(string(a.Kind)) == jsonString(string(b.Kind)) &&
		jsonString(string(a.Name)) == jsonString(string(b.Name))
}

// targetRefsRules mirrors the two CEL rules on targetRefs. An absent
// sectionName equals an empty one.
func targetRefsRules(path *field.Path, refs []gwv1.LocalPolicyTargetReferenceWithSectionName) field.ErrorList {
	if len(refs) < 2 {
		return nil
	}
	var specified, unique bool
	for i := range refs {
		s1 := jsonString(string(deref(refs[i].SectionName, "")))
		same := 0 // exists_one counts the reference itself.
		for j := range refs {
			if !sameTarget(&refs[i], &refs[j]) {
				continue
			}
			s2 := jsonString(string(deref(refs[j].SectionName, "")))
			if (s1 == "") != (s2 == "") {
				specified = true
			}
			if s1 == s2 {
				same++
			}
		}
		unique = unique || same != 1
	}
	var errs field.ErrorList
	if specified {
		errs = append(errs, rule(path, typeArray, msgTargetSectionSpecified))
	}
	if unique {
		errs = append(errs, rule(path, typeArray, msgTargetSectionUnique))
	}
	return errs
}

// BackendTLSPolicyValidation validates the validation of a BackendTLSPolicy:
// its hostname (a precise hostname, which the CRD does not forbid to be an
// IP address), either CA certificate references (up to 8) or a well-known
// CA set, and up to 5 subject alternative names.
func BackendTLSPolicyValidation(path *field.Path, v *gwv1.BackendTLSPolicyValidation) field.ErrorList {
	var errs field.ErrorList
	if n := len(v.CACertificateRefs); n > maxCACertificateRefs {
		errs = append(errs, field.TooMany(path.Child("caCertificateRefs"), n, maxCACertificateRefs))
	} else if n > 0 {
		p := path.Child("caCertificateRefs")
		for i := range v.CACertificateRefs {
			errs = append(errs, localObjectReference(p.Index(i), &v.CACertificateRefs[i])...)
		}
	}
	if v.WellKnownCACertificates != nil {
		errs = append(errs, strWellKnownCA.check(path, "wellKnownCACertificates", string(*v.WellKnownCACertificates))...)
	}
	// hostname has no omitempty: it is always sent, and so never missing.
	errs = append(errs, strPreciseHostname.check(path, "hostname", string(v.Hostname))...)
	if n := len(v.SubjectAltNames); n > maxSubjectAltNames {
		errs = append(errs, field.TooMany(path.Child("subjectAltNames"), n, maxSubjectAltNames))
	} else if n > 0 {
		p := path.Child("subjectAltNames")
		for i := range v.SubjectAltNames {
			errs = append(errs, subjectAltName(p.Index(i), &v.SubjectAltNames[i])...)
		}
	}
	// An empty caCertificateRefs is omitted; an empty well-known set is sent.
	refs := len(v.CACertificateRefs) > 0
	wellKnown := v.WellKnownCACertificates != nil && *v.WellKnownCACertificates != ""
	if refs && wellKnown {
		errs = append(errs, rule(path, typeObject, msgCACertificatesBoth))
	}
	if !refs && !wellKnown {
		errs = append(errs, rule(path, typeObject, msgCACertificatesNeither))
	}
	return errs
}

// subjectAltName validates one subject alternative name: its type, and the
// one field of that type. hostname and uri are omitted when empty.
func subjectAltName(path *field.Path, s *gwv1.SubjectAltName) field.ErrorList {
	// type has no omitempty: it is always sent, and so never missing.
	errs := enum(path, "type", s.Type, enumSubjectAltNameType)
	if s.Hostname != "" {
		errs = append(errs, strHostname.check(path, "hostname", string(s.Hostname))...)
	}
	if s.URI != "" {
		errs = append(errs, strAbsoluteURI.check(path, "uri", string(s.URI))...)
	}
	hostname, uri := s.Type == gwv1.HostnameSubjectAltNameType, s.Type == gwv1.URISubjectAltNameType
	if hostname && s.Hostname == "" {
		errs = append(errs, rule(path, typeObject, msgSANHostnameSpecified))
	}
	if !hostname && s.Hostname != "" {
		errs = append(errs, rule(path, typeObject, msgSANHostnameType))
	}
	if uri && s.URI == "" {
		errs = append(errs, rule(path, typeObject, msgSANURISpecified))
	}
	if !uri && s.URI != "" {
		errs = append(errs, rule(path, typeObject, msgSANURIType))
	}
	return errs
}

// tlsOptions validates a BackendTLSPolicy's options: at most 16, each value
// at most 4096 characters. The CRD does not constrain the keys (a schema
// cannot), whatever the AnnotationKey type's markers say. The API server
// reports a value at spec.options.<key>.
func tlsOptions(path *field.Path, options map[gwv1.AnnotationKey]gwv1.AnnotationValue) field.ErrorList {
	if len(options) > maxTLSOptions {
		return field.ErrorList{field.TooMany(path, len(options), maxTLSOptions)}
	}
	var errs field.ErrorList
	for k, v := range options {
		errs = append(errs, strAnnotationValue.check(path, string(k), string(v))...)
	}
	if len(errs) > 1 { // In the keys' order, for stable errors.
		slices.SortFunc(errs, func(a, b *field.Error) int { return cmp.Compare(a.Field, b.Field) })
	}
	return errs
}
