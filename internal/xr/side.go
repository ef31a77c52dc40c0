package xr

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/admission"
)

// revisionPattern is the reference's pattern for canary.revision: it ends up in
// status and in the session cookie's hash, so it stays short and plain.
var revisionPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)

// clusterLocalSuffixes are DNS suffixes that resolve inside the cluster. An
// ExternalName Service to one of them would reach a Service in another
// namespace without the ReferenceGrant that Gateway API requires for that.
var clusterLocalSuffixes = []string{".svc", ".cluster.local", ".svc.cluster.local"}

func parseSide(path *field.Path, kind RouteKind, role Role, raw *rawSide) (Side, field.ErrorList) {
	if raw == nil {
		return Side{}, field.ErrorList{field.Required(path, "set one of service, externalName or backendRef")}
	}
	var errs field.ErrorList
	side := Side{BackendRef: (*gwv1.BackendObjectReference)(raw.BackendRef)}

	sources := 0
	if raw.Service != nil {
		sources++
		var svcErrs field.ErrorList
		side.Service, svcErrs = parseService(path.Child("service"), raw.Service)
		errs = append(errs, svcErrs...)
	}
	if raw.ExternalName != nil {
		sources++
		side.ExternalName = *raw.ExternalName
		errs = append(errs, ExternalName(path.Child("externalName"), side.ExternalName)...)
	}
	if raw.BackendRef != nil {
		sources++
		// The port rules depend on the backend's kind and on spec.port, so
		// the complete reference is checked once it is resolved.
	}
	if sources != 1 {
		errs = append(errs, field.Invalid(path, fmt.Sprintf("%d backend sources", sources), "set exactly one of service, externalName or backendRef"))
	}

	switch kind {
	case KindHTTPRoute:
		errs = append(errs, decodeAndCheck(path.Child("filters"), raw.Filters, &side.HTTPFilters, admission.HTTPRouteFilters)...)
	case KindGRPCRoute:
		errs = append(errs, decodeAndCheck(path.Child("filters"), raw.Filters, &side.GRPCFilters, admission.GRPCRouteFilters)...)
	default:
		errs = append(errs, unsupported(path.Child("filters"), hasItems(raw.Filters), "backend filters", kind)...)
	}

	if raw.TLS != nil {
		var tlsErrs field.ErrorList
		side.TLS, tlsErrs = parseBackendTLS(path.Child("tls"), kind, raw)
		errs = append(errs, tlsErrs...)
	}

	if raw.Revision != nil {
		side.Revision = *raw.Revision
		switch {
		case role != RoleCanary:
			errs = append(errs, field.Forbidden(path.Child("revision"), "only the canary has a revision"))
		case !revisionPattern.MatchString(side.Revision):
			errs = append(errs, field.Invalid(path.Child("revision"), side.Revision, "must be 1 to 63 letters, digits, '.', '_' or '-'"))
		}
	}
	return side, errs
}

// parseBackendTLS reads a side's tls: the validation of the
// BackendTLSPolicy composed for its proxy Service. Only a side that
// composes a proxy Service has one to target (a backendRef's own backend
// takes a BackendTLSPolicy of its owner's), and only HTTPRoute and GRPCRoute
// traffic is encrypted by the gateway towards its backends.
func parseBackendTLS(path *field.Path, kind RouteKind, raw *rawSide) (*gwv1.BackendTLSPolicyValidation, field.ErrorList) {
	if raw.Service == nil && raw.ExternalName == nil {
		return nil, field.ErrorList{field.Forbidden(path, "tls goes with a service or externalName side, whose proxy Service the function composes; a backendRef's own backend takes a BackendTLSPolicy of its own")}
	}
	if kind != KindHTTPRoute && kind != KindGRPCRoute {
		return nil, unsupported(path, true, "backend TLS", kind)
	}
	v := (*gwv1.BackendTLSPolicyValidation)(raw.TLS)
	var errs field.ErrorList
	if v.Hostname == "" {
		errs = append(errs, field.Required(path.Child("hostname"), "the name the backend's certificate must be valid for, sent as SNI"))
	}
	// The CRD's pattern admits an IP address, which SNI cannot carry (RFC
	// 6066, section 3): gateways then send none, or verify inconsistently.
	if net.ParseIP(string(v.Hostname)) != nil || numericLastLabel(string(v.Hostname)) {
		errs = append(errs, field.Invalid(path.Child("hostname"), v.Hostname, "an IP address cannot be sent as SNI (RFC 6066): give the DNS name the backend's certificate is valid for"))
	}
	hasRefs, hasWellKnown := len(v.CACertificateRefs) > 0, v.WellKnownCACertificates != nil
	if hasRefs == hasWellKnown {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "set exactly one of caCertificateRefs (ConfigMaps of CA certificates) or wellKnownCACertificates (System)"))
	}
	if len(errs) > 0 {
		return v, errs
	}
	// The BackendTLSPolicy CRD's rules, at the CanaryRoute's own path.
	return v, admission.BackendTLSPolicyValidation(path, v)
}

func parseService(path *field.Path, raw *rawService) (*ServiceSource, field.ErrorList) {
	var errs field.ErrorList
	svc := &ServiceSource{Selector: raw.Selector, TargetPort: raw.TargetPort}

	// A proxy Service without a selector has no endpoints: it would route
	// to nothing, so the selector is required.
	if len(raw.Selector) == 0 {
		errs = append(errs, field.Required(path.Child("selector"), "a proxy Service selects the pods it sends traffic to"))
	}
	if len(raw.Selector) > maxSelector {
		// Checking thousands of labels would only list thousands of errors.
		return svc, append(errs, field.TooMany(path.Child("selector"), len(raw.Selector), maxSelector))
	}
	for _, k := range slices.Sorted(maps.Keys(raw.Selector)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path.Child("selector").Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(raw.Selector[k]) {
			errs = append(errs, field.Invalid(path.Child("selector").Key(k), raw.Selector[k], msg))
		}
	}

	if tp := raw.TargetPort; tp != nil {
		switch tp.Type {
		case intstr.Int:
			for _, msg := range validation.IsValidPortNum(tp.IntValue()) {
				errs = append(errs, field.Invalid(path.Child("targetPort"), tp.IntValue(), msg))
			}
		case intstr.String:
			for _, msg := range validation.IsValidPortName(tp.StrVal) {
				errs = append(errs, field.Invalid(path.Child("targetPort"), tp.StrVal, msg))
			}
		}
	}

	if raw.AppProtocol != nil {
		svc.AppProtocol = *raw.AppProtocol
		for _, msg := range validation.IsQualifiedName(svc.AppProtocol) {
			errs = append(errs, field.Invalid(path.Child("appProtocol"), svc.AppProtocol, msg))
		}
	}
	return svc, errs
}

// ExternalName checks the host of an externalName side: a DNS name outside
// the cluster. Whether ExternalName sides are allowed at all is the Input's
// call.
//
// Like Kubernetes, it accepts a fully qualified name with a trailing dot.
func ExternalName(path *field.Path, host string) field.ErrorList {
	name := strings.TrimSuffix(host, ".")
	if net.ParseIP(name) != nil || numericLastLabel(name) {
		return field.ErrorList{field.Invalid(path, host, "must be a DNS name, not an IP address: an IP may be a cluster-local Pod or Service address")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, host, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	lower := strings.ToLower(name)
	for _, suffix := range clusterLocalSuffixes {
		if strings.HasSuffix(lower, suffix) || lower == suffix[1:] {
			return field.ErrorList{field.Invalid(path, host,
				fmt.Sprintf("must not be a cluster-local name (*%s): it would reach another namespace without a ReferenceGrant; use backendRef with a namespace instead", suffix))}
		}
	}
	// The localhost family names the gateway's own host: an ExternalName
	// to it would reach whatever listens on the proxy's loopback (its admin
	// interface, a sidecar) around every policy.
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") || lower == "localhost.localdomain" {
		return field.ErrorList{field.Invalid(path, host,
			"must not name the local host (localhost, *.localhost, localhost.localdomain): it would reach the gateway's own loopback")}
	}
	if alias := HostAlias(lower); alias != "" {
		return field.ErrorList{field.Invalid(path, host,
			fmt.Sprintf("must not name a metadata or host endpoint (%s): it would reach the node's credentials or the machine the gateway runs on", alias))}
	}
	// A name of one label never leaves the cluster: resolvers try it with
	// the pod's search domains first (<name>.<namespace>.svc.cluster.local),
	// so it would name a Service of the gateway's namespace.
	if !strings.Contains(name, ".") {
		return field.ErrorList{field.Invalid(path, host,
			"must be a fully qualified DNS name such as api.example.com: a single label resolves to a cluster-local Service through the search domains")}
	}
	return nil
}

// hostAliases are the well-known names of a machine's own metadata and host
// services: a cloud's instance metadata (which hands out the node's
// credentials), Docker's names for the host, and the API server's short
// name.
var hostAliases = []string{
	"metadata.google.internal", "metadata",
	"instance-data.ec2.internal", "instance-data",
	"host.docker.internal", "gateway.docker.internal",
	"kubernetes",
}

// HostAlias returns the well-known metadata or host name that a lowercase
// name is, or is below; "" for none.
func HostAlias(name string) string {
	name = strings.TrimSuffix(name, ".")
	for _, a := range hostAliases {
		if name == a || strings.HasSuffix(name, "."+a) {
			return a
		}
	}
	return ""
}

// numericLastLabel reports whether a name ends in a label of digits (or a
// hexadecimal 0x number): resolvers read such names as IPv4 addresses in
// their short forms (10.1, 167772161, 0x0a.0.0.1), which net.ParseIP does
// not; and no top-level domain is numeric.
func numericLastLabel(name string) bool {
	last := strings.ToLower(name[strings.LastIndexByte(name, '.')+1:])
	if last == "" {
		return false
	}
	digits, isHexNumber := strings.CutPrefix(last, "0x")
	if digits == "" {
		return false
	}
	for _, c := range digits {
		isDigit := c >= '0' && c <= '9'
		isHex := isHexNumber && c >= 'a' && c <= 'f'
		if !isDigit && !isHex {
			return false
		}
	}
	return true
}

// proxyNames checks the names of the proxy Services that the sides compose:
// Service names are DNS-1035 labels of at most 63 characters.
func proxyNames(path *field.Path, routeName string, s Spec) field.ErrorList {
	var errs field.ErrorList
	for _, side := range []struct {
		role Role
		side Side
	}{{RolePrimary, s.Primary}, {RoleCanary, s.Canary}} {
		if !side.side.ComposesService() {
			continue
		}
		name := ProxyServiceName(routeName, side.role)
		for _, msg := range validation.IsDNS1035Label(name) {
			errs = append(errs, field.Invalid(path.Child("routeName"), routeName,
				fmt.Sprintf("the %s proxy Service would be named %q, which is invalid: %s", side.role, name, msg)))
		}
	}
	return errs
}

// ComposesService reports whether the side composes a proxy Service.
func (s Side) ComposesService() bool {
	return s.Service != nil || s.ExternalName != ""
}

// ProxyServiceName is the name of a side's proxy Service.
func ProxyServiceName(routeName string, role Role) string {
	return routeName + "-" + string(role)
}

// LabelValue is a value as a label of the function's can hold it: the value
// itself when it is a valid label value, else its first characters and a
// hash of the whole, so that a route name of up to 253 characters, or a
// revision such as "v2." that the revision pattern admits, still labels the
// objects composed for it, each value to a label of its own.
//
// Any value gets a valid label: a character a label value cannot hold (a
// space, a slash, a letter outside ASCII, from a status written by hand)
// becomes '-' before the value is cut.
func LabelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	safe := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, v)
	base := strings.Trim(safe[:min(len(safe), 54)], "-_.")
	if base == "" {
		base = "x"
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}
