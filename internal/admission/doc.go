// Package admission checks Gateway API objects the way the API server would
// admit them, without the API server: it mirrors, in plain Go on the typed
// structs of sigs.k8s.io/gateway-api, what the Gateway API CRDs reject (their
// OpenAPI schema, their x-kubernetes-validations CEL rules, the uniqueness of
// list-map keys and list-set items, and metadata name and namespace).
//
// The function calls it on every run, so that an object the API server
// would refuse becomes a clear error on the XR instead of a failed apply. It
// must stay fast and light: it imports neither k8s.io/apiextensions-apiserver,
// nor k8s.io/apiserver, nor a CEL library (a test enforces it), and compiles
// its regular expressions once at init.
//
// # What the API server sees
//
// Checks apply to the object as it is sent: encoded to JSON (a field with
// omitempty and a zero value is absent; a nil list without omitempty is
// null, which the API server drops) and then defaulted by the CRD schema
// before validation (a backendRef's kind defaults to Service, so it needs a
// port; an HTTPRoute rule without matches gets one PathPrefix "/" match; a
// parentRef's group and kind default to Gateway's). Strings are measured in
// characters, as the API server does.
//
// # Channel policy
//
// The function does not know which Gateway API release channel a cluster
// runs, so it must produce objects that both the standard and the
// experimental CRDs of the Gateway API version in go.mod accept:
//
//   - Where the channels differ on a field that both have, the rule of
//     either channel that rejects wins. The experimental channel restricts
//     header values to `^[!-~]+([\t ]?[!-~]+)*$`, requires rule names to be
//     unique within a route, and has parentRefs rules on "sectionName or
//     port" where the standard channel has rules on sectionName alone: all of
//     these apply.
//   - Fields that only the experimental channel has (a rule's retry and
//     sessionPersistence, a route's useDefaultGateways, a filter's
//     externalAuth) are checked with the experimental rules: the standard
//     channel drops them. Enumerations are the standard ones where they are
//     narrower, so an ExternalAuth filter type is refused.
//   - TLSRoute, TCPRoute and UDPRoute v1alpha2, and BackendTLSPolicy
//     v1alpha3, exist only in the experimental channel (for older clusters)
//     and are checked against that version's schema.
//
// A differential test compares every check with the CRD validator of both
// channels (internal/crdschema) on a large generated corpus, and a fuzz
// target keeps them in agreement.
//
// # Fragments
//
// Besides whole objects (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute,
// TLSRouteV1Alpha2, TCPRouteV1Alpha2, UDPRouteV1Alpha2, ReferenceGrant,
// ReferenceGrantV1Beta1, BackendTLSPolicy, BackendTLSPolicyV1Alpha3), the
// validators of fragments (ParentReferences, Hostnames, HTTPRouteMatches,
// HTTPRouteFilters, BackendObjectReference, SessionPersistence,
// BackendTLSPolicyValidation, ...) take the path of the fragment, so a caller
// can check what a user wrote at the user's own path (say
// spec.rules[1].filters, or a side's tls, of the XR) before composing it.
// Rules that span several fragments (total matches across rules, unique rule
// names, a policy's targetRefs) are checked only by the whole-object and
// list-of-rules validators.
//
// # Cost
//
// Validating a typical HTTPRoute (2 parentRefs, 2 hostnames, 3 rules with
// matches and header filters, 2 weighted backendRefs each with a filter)
// costs about 14 µs, 104 allocations and 5 KB (BenchmarkHTTPRoute), against
// about 6.3 ms, 32,000 allocations and 3.2 MB for the CRD validator of one
// channel on the same route (BenchmarkCRDValidatorHTTPRoute): some 450 times
// less. Measured on the project's 2-core machine under load; README.md has
// the details.
package admission
