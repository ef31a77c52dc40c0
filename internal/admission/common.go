package admission

import (
	"net/netip"
	"strings"

	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Messages of the CRDs' x-kubernetes-validations rules shared by several
// kinds, verbatim.
const (
	msgServicePort          = "Must have port for Service reference"
	msgSectionSpecified     = "sectionName must be specified when parentRefs includes 2 or more references to the same parent"
	msgSectionUnique        = "sectionName must be unique when parentRefs includes 2 or more references to the same parent"
	msgSectionPortSpecified = "sectionName or port must be specified when parentRefs includes 2 or more references to the same parent"
	msgSectionPortUnique    = "sectionName or port must be unique when parentRefs includes 2 or more references to the same parent"
	// MsgRuleNameUnique is the CRDs' message for two rules of one name.
	MsgRuleNameUnique        = "Rule name must be unique within the route"
	msgTotalMatches          = "While 16 rules and 64 matches per rule are allowed, the total number of matches across all rules in a route must be less than 128"
	msgHostnameIP            = "Hostnames cannot contain an IP"
	msgHostnameRFC1123       = "Hostnames must be valid based on RFC-1123"
	msgHostnameWildcard      = "Wildcards on hostnames must be the first label, and the rest of hostname must be valid based on RFC-1123"
	msgAbsoluteTimeout       = "AbsoluteTimeout must be specified when cookie lifetimeType is Permanent"
	msgCookieConfigType      = "cookieConfig can only be set with type Cookie"
	msgMirrorPercentFraction = "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter"
	msgFractionNumerator     = "numerator must be less than or equal to denominator"
)

// Defaults of the CRDs that CEL rules see, since the API server defaults
// before it validates.
const (
	defaultParentGroup = gwv1.Group(gwv1.GroupName)
	defaultParentKind  = gwv1.Kind("Gateway")
	defaultBackendKind = gwv1.Kind("Service")
)

// Limits of the CRDs.
const (
	maxParentRefs    = 32
	maxHostnames     = 16
	maxTLSHostnames  = 1024
	maxRules         = 16
	maxMatches       = 64
	maxTotalMatches  = 128
	maxFilters       = 16
	maxBackendRefs   = 16
	maxHeaders       = 16
	maxCORSItems     = 64
	maxCORSMethods   = 9
	maxAuthHeaders   = 64
	maxPort          = 65535
	maxWeight        = 1000000
	maxPercent       = 100
	minRetryCode     = 400
	maxRetryCode     = 599
	maxGrantPeers    = 16
	defaultFractionD = 100
)

var (
	enumGatewayDefaultScope = []string{string(gwv1.GatewayDefaultScopeAll), string(gwv1.GatewayDefaultScopeNone)}
	enumSessionType         = []string{string(gwv1.CookieBasedSessionPersistence), string(gwv1.HeaderBasedSessionPersistence)}
	enumLifetimeType        = []string{string(gwv1.PermanentCookieLifetimeType), string(gwv1.SessionCookieLifetimeType)}
)

// ObjectMeta validates metadata as the API server does for a namespaced
// custom resource (name a DNS-1123 subdomain, namespace a DNS-1123 label,
// labels, annotations, owner references, finalizers), except that an empty
// name or namespace is accepted: Crossplane names composed resources and puts
// them in the XR's namespace when the function leaves these empty.
func ObjectMeta(path *field.Path, meta *metav1.ObjectMeta) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(meta, true, metavalidation.NameIsDNSSubdomain, path)
	out := errs[:0]
	name, namespace := path.Child("name").String(), path.Child("namespace").String()
	for _, e := range errs {
		if e.Type == field.ErrorTypeRequired && (e.Field == name || e.Field == namespace) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// SectionName validates a SectionName such as a rule name or a parentRef's
// sectionName.
func SectionName(path *field.Path, v gwv1.SectionName) field.ErrorList {
	return strSectionName.checkAt(func() *field.Path { return path }, string(v))
}

// Duration validates a Gateway API Duration (GEP-2257), e.g. "1h30m".
func Duration(path *field.Path, v gwv1.Duration) field.ErrorList {
	return strDuration.checkAt(func() *field.Path { return path }, string(v))
}

// ParentReferences validates the parentRefs of a route: each reference and
// the list-level rules of both channels (sectionName, or sectionName or port,
// must be set and unique when a parent is referenced more than once).
func ParentReferences(path *field.Path, refs []gwv1.ParentReference) field.ErrorList {
	return parentReferences(path, refs, true)
}

// parentReferences validates parentRefs with the experimental channel's
// rules and, if standard, the standard channel's too.
func parentReferences(path *field.Path, refs []gwv1.ParentReference, standard bool) field.ErrorList {
	var errs field.ErrorList
	if len(refs) > maxParentRefs {
		return append(errs, field.TooMany(path, len(refs), maxParentRefs))
	}
	for i := range refs {
		errs = append(errs, parentReference(path.Index(i), &refs[i])...)
	}
	return append(errs, parentRefsRules(path, refs, standard)...)
}

func parentReference(path *field.Path, r *gwv1.ParentReference) field.ErrorList {
	var errs field.ErrorList
	if r.Group != nil {
		errs = append(errs, strGroup.check(path, "group", string(*r.Group))...)
	}
	if r.Kind != nil {
		errs = append(errs, strKind.check(path, "kind", string(*r.Kind))...)
	}
	if r.Namespace != nil {
		errs = append(errs, strNamespace.check(path, "namespace", string(*r.Namespace))...)
	}
	errs = append(errs, strObjectName.check(path, "name", string(r.Name))...)
	if r.SectionName != nil {
		errs = append(errs, strSectionName.check(path, "sectionName", string(*r.SectionName))...)
	}
	if r.Port != nil {
		errs = append(errs, intRange(path, "port", int64(*r.Port), 1, maxPort)...)
	}
	return errs
}

// parentRefsRules mirrors the four CEL rules on parentRefs: the standard
// channel's on sectionName and the experimental channel's on sectionName or
// port. The function's objects must pass both, except objects of versions
// that only the experimental channel serves.
func parentRefsRules(path *field.Path, refs []gwv1.ParentReference, standard bool) field.ErrorList {
	// The rules compare every pair of references to one parent; grouped by
	// parent, they are what each group holds: linear in the references,
	// where the pairs are quadratic (32 parents are 1,024 pairs).
	type parent struct{ group, kind, name, namespace string }
	type seen struct{ emptySection, section, noPort, port bool }
	type sectionPort struct {
		parent
		section string
		port    gwv1.PortNumber
	}
	groups := make(map[parent]*seen, len(refs))
	sections := make(map[sectionPort]bool, len(refs))
	sectionPorts := make(map[sectionPort]bool, len(refs))
	var unique, portUnique bool
	for i := range refs {
		r := &refs[i]
		p := parent{string(deref(r.Group, defaultParentGroup)), string(deref(r.Kind, defaultParentKind)), string(r.Name), string(deref(r.Namespace, ""))}
		g := groups[p]
		if g == nil {
			g = &seen{}
			groups[p] = g
		}
		s, port := string(deref(r.SectionName, "")), deref(r.Port, 0)
		g.emptySection, g.section = g.emptySection || s == "", g.section || s != ""
		g.noPort, g.port = g.noPort || port == 0, g.port || port != 0
		k := sectionPort{parent: p, section: s}
		unique = unique || sections[k]
		sections[k] = true
		k.port = port
		portUnique = portUnique || sectionPorts[k]
		sectionPorts[k] = true
	}
	var specified, portSpecified bool
	for _, g := range groups {
		mixedSections := g.emptySection && g.section
		specified = specified || mixedSections
		portSpecified = portSpecified || mixedSections || (g.noPort && g.port)
	}
	return parentRefsErrs(path, []bool{specified && standard, unique && standard, portSpecified, portUnique})
}

// parentRefsErrs are the parentRefs rules that failed, in the CRDs' order:
// sectionName specified, sectionName unique, sectionName or port
// specified, sectionName or port unique.
func parentRefsErrs(path *field.Path, failed []bool) field.ErrorList {
	var errs field.ErrorList
	for i, msg := range []string{msgSectionSpecified, msgSectionUnique, msgSectionPortSpecified, msgSectionPortUnique} {
		if failed[i] {
			errs = append(errs, rule(path, typeArray, msg))
		}
	}
	return errs
}

// Hostnames validates the hostnames of an HTTPRoute or a GRPCRoute.
func Hostnames(path *field.Path, hostnames []gwv1.Hostname) field.ErrorList {
	if len(hostnames) > maxHostnames {
		return field.ErrorList{field.TooMany(path, len(hostnames), maxHostnames)}
	}
	var errs field.ErrorList
	for i, h := range hostnames {
		errs = append(errs, strHostname.checkIndex(path, i, string(h))...)
	}
	return errs
}

// TLSHostnames validates the hostnames of a TLSRoute v1: at least one, and
// neither an IP address nor a misplaced wildcard.
func TLSHostnames(path *field.Path, hostnames []gwv1.Hostname) field.ErrorList {
	if len(hostnames) == 0 {
		// The field is omitted when empty, and it is required.
		return field.ErrorList{field.Required(path, "")}
	}
	if len(hostnames) > maxTLSHostnames {
		return field.ErrorList{field.TooMany(path, len(hostnames), maxTLSHostnames)}
	}
	var errs field.ErrorList
	var ip, rfc, wildcard bool
	for i, h := range hostnames {
		errs = append(errs, strHostname.checkIndex(path, i, string(h))...)
		s := jsonString(string(h))
		ip = ip || isIP(s)
		if !strings.Contains(s, "*") {
			rfc = rfc || !reRFC1123.MatchString(s)
		} else {
			wildcard = wildcard || !strings.HasPrefix(s, "*.") || !reRFC1123.MatchString(s[2:])
		}
	}
	if ip {
		errs = append(errs, rule(path, typeArray, msgHostnameIP))
	}
	if rfc {
		errs = append(errs, rule(path, typeArray, msgHostnameRFC1123))
	}
	if wildcard {
		errs = append(errs, rule(path, typeArray, msgHostnameWildcard))
	}
	return errs
}

// isIP is CEL's isIP() of the Kubernetes IP library.
func isIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == "" && !a.Is4In6()
}

// BackendObjectReference validates a reference to a backend, including the
// rule that a Service (the default kind) needs a port.
func BackendObjectReference(path *field.Path, r *gwv1.BackendObjectReference) field.ErrorList {
	var errs field.ErrorList
	if r.Group != nil {
		errs = append(errs, strGroup.check(path, "group", string(*r.Group))...)
	}
	if r.Kind != nil {
		errs = append(errs, strKind.check(path, "kind", string(*r.Kind))...)
	}
	errs = append(errs, strObjectName.check(path, "name", string(r.Name))...)
	if r.Namespace != nil {
		errs = append(errs, strNamespace.check(path, "namespace", string(*r.Namespace))...)
	}
	if r.Port != nil {
		errs = append(errs, intRange(path, "port", int64(*r.Port), 1, maxPort)...)
	}
	if deref(r.Group, "") == "" && deref(r.Kind, defaultBackendKind) == defaultBackendKind && r.Port == nil {
		errs = append(errs, rule(path, typeObject, msgServicePort))
	}
	return errs
}

// BackendRef validates a weighted backend reference.
func BackendRef(path *field.Path, r *gwv1.BackendRef) field.ErrorList {
	errs := BackendObjectReference(path, &r.BackendObjectReference)
	if r.Weight != nil {
		errs = append(errs, intRange(path, "weight", int64(*r.Weight), 0, maxWeight)...)
	}
	return errs
}

// BackendRefs validates the backendRefs of a TLSRoute or TCPRoute rule,
// which needs at least one.
func BackendRefs(path *field.Path, refs []gwv1.BackendRef) field.ErrorList {
	if len(refs) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(refs) > maxBackendRefs {
		return field.ErrorList{field.TooMany(path, len(refs), maxBackendRefs)}
	}
	var errs field.ErrorList
	for i := range refs {
		errs = append(errs, BackendRef(path.Index(i), &refs[i])...)
	}
	return errs
}

// ruleNames mirrors the experimental channel's rule: a rule name is unique
// within the route. Rules without a name are exempt.
func ruleNames(path *field.Path, names []*gwv1.SectionName) field.ErrorList {
	for i, a := range names {
		if a == nil {
			continue
		}
		for _, b := range names[:i] {
			if b != nil && jsonString(string(*a)) == jsonString(string(*b)) {
				return field.ErrorList{rule(path, typeArray, MsgRuleNameUnique)}
			}
		}
	}
	return nil
}

// SessionPersistence validates a rule's sessionPersistence, a field of the
// experimental channel only (the standard channel drops it).
func SessionPersistence(path *field.Path, s *gwv1.SessionPersistence) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.SessionName != nil {
		errs = append(errs, strSessionName.check(path, "sessionName", *s.SessionName)...)
	}
	if s.AbsoluteTimeout != nil {
		errs = append(errs, strDuration.check(path, "absoluteTimeout", string(*s.AbsoluteTimeout))...)
	}
	if s.Type != nil {
		errs = append(errs, enum(path, "type", *s.Type, enumSessionType)...)
	}
	if c := s.CookieConfig; c != nil && c.LifetimeType != nil {
		errs = append(errs, enum(path.Child("cookieConfig"), "lifetimeType", *c.LifetimeType, enumLifetimeType)...)
	}
	if c := s.CookieConfig; c != nil && deref(c.LifetimeType, gwv1.SessionCookieLifetimeType) == gwv1.PermanentCookieLifetimeType && s.AbsoluteTimeout == nil {
		errs = append(errs, rule(path, typeObject, msgAbsoluteTimeout))
	}
	if s.CookieConfig != nil && deref(s.Type, gwv1.CookieBasedSessionPersistence) != gwv1.CookieBasedSessionPersistence {
		errs = append(errs, rule(path, typeObject, msgCookieConfigType))
	}
	return errs
}

// useDefaultGateways validates a route's useDefaultGateways, a field of the
// experimental channel only.
func useDefaultGateways(path *field.Path, v gwv1.GatewayDefaultScope) field.ErrorList {
	if v == "" {
		return nil
	}
	return enum(path, "useDefaultGateways", v, enumGatewayDefaultScope)
}

// commonRouteSpec validates the fields that all routes share, with the
// standard channel's rules too if the version is served by both channels.
func commonRouteSpec(spec *field.Path, c *gwv1.CommonRouteSpec, standard bool) field.ErrorList {
	errs := parentReferences(spec.Child("parentRefs"), c.ParentRefs, standard)
	return append(errs, useDefaultGateways(spec, c.UseDefaultGateways)...)
}
