package xr

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// The CanaryRoute's API: the spec and status types that the XRDs of
// example/definitions are generated from (hack/xrdgen, through
// controller-tools), and that the function decodes the XR into. The doc
// comments of the fields become the XRDs' descriptions and the kubebuilder
// markers their validation, so the JSON the function decodes and the schema
// the API server enforces cannot drift apart. Package bounds' limits are read
// back from the generated schema (limits.go).
//
// The spec types (raw*) hold what the user wrote, decoded strictly; parse.go
// validates them into Spec. Gateway API fragments whose type depends on the
// route's kind (matches, filters, a rule's backendRefs) stay raw until the
// kind is known. Where a Gateway API struct carries defaults or rules that the
// CanaryRoute does not want in its schema (a parentRef's default group and
// kind, a backendRef's port rule), a raw* copy of it with the same fields
// converts to the Gateway API type in one Go conversion, which stops
// compiling when the two differ.

// object is the CanaryRoute as its XRDs define it: its spec and status, and
// the columns kubectl shows beside Crossplane's own (SYNCED, READY,
// COMPOSITION, AGE). ROUTE shows with -o wide.
//
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=".status.rollout.phase",description="Phase of the rollout: Stable, Progressing, Paused, Succeeded, Aborted or Failed."
// +kubebuilder:printcolumn:name="STEP",type=integer,JSONPath=".status.rollout.step",description="Current step of a progressive rollout."
// +kubebuilder:printcolumn:name="CANARY",type=number,JSONPath=".status.rollout.canaryWeight",description="Percent of the traffic the canary gets, as written (0.1)."
// +kubebuilder:printcolumn:name="REVISION",type=string,JSONPath=".status.rollout.revision",description="The canary's revision the rollout is about."
// +kubebuilder:printcolumn:name="STABLE",type=string,JSONPath=".status.release.stable.revision",description="The revision a release's primary serves."
// +kubebuilder:printcolumn:name="ROUTE",type=string,JSONPath=".status.route.name",description="The composed route.",priority=1
type object struct { //nolint:unused // The XRDs' root, read by hack/xrdgen; the function decodes spec and status on their own.
	// CanaryRoute composes a Gateway API route whose weights move traffic
	// from the primary to the canary, recomputed on every reconcile.
	Spec rawSpec `json:"spec"`

	// Status is what the function reports, and what it carries from one
	// reconcile to the next.
	Status Status `json:"status"`
}

// rawSpec is spec as written. Other spec fields (Crossplane's own, such as
// spec.crossplane, or a platform team's additions for other functions in
// the pipeline) are none of the function's business: see specKeys.
//
// The rule on namespace is the cluster-scoped XRD's only: the namespaced
// one has no spec.namespace (hack/xrdgen drops the field and the rules over
// it). namespace is a CEL reserved word: unescaped, the rule would not reach
// the property's schema, its strings would count as unbounded, and the API
// server would refuse the XRD for its estimated cost.
//
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.weight) || !has(self.traffic.steps)",message="set either traffic.weight (manual) or traffic.steps (progressive), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.steps) || has(self.canary.revision)",message="traffic.steps needs canary.revision, so that a new version restarts the rollout"
// +kubebuilder:validation:XValidation:rule="has(self.routeName) == has(oldSelf.routeName) && (!has(self.routeName) || self.routeName == oldSelf.routeName)",message="routeName is immutable: a new name would leave the old route's traffic behind"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind in ['HTTPRoute', 'GRPCRoute'] || !has(self.rules) || self.rules.all(r, !has(r.matches) && !has(r.filters) && !has(r.timeouts) && !has(r.backendRefs) && !has(r.retry))",message="TLSRoute, TCPRoute and UDPRoute rules carry no matches, filters, timeouts, retries or backendRefs of their own"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'TLSRoute' || (has(self.hostnames) && size(self.hostnames) > 0)",message="a TLSRoute routes by SNI: set 1 to 16 hostnames"
// +kubebuilder:validation:XValidation:rule="has(self.__namespace__) == has(oldSelf.__namespace__) && (!has(self.__namespace__) || self.__namespace__ == oldSelf.__namespace__)",message="namespace is immutable: a new namespace would leave the old route's traffic behind"
// +kubebuilder:validation:XValidation:rule="has(self.release) != has(self.primary)",message="set either release (the sides are revisions of one workload) or primary, not both"
// +kubebuilder:validation:XValidation:rule="has(self.release) == ![has(self.canary.service), has(self.canary.externalName), has(self.canary.backendRef)].exists(x, x)",message="canary: set exactly one of service, externalName or backendRef; with release, none: the canary is a revision of the release's workload"
// +kubebuilder:validation:XValidation:rule="!has(self.release) || (has(self.traffic) && has(self.traffic.steps) && has(self.port))",message="a release rolls each revision out through traffic.steps, to proxy Services on spec.port"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.rollbackWindow) || has(self.release)",message="rollbackWindow rolls back to the release's earlier revisions: it needs release"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.preview) || !has(self.kind) || self.kind in ['HTTPRoute', 'GRPCRoute', 'TLSRoute']",message="traffic.preview composes a route of its own hostnames: TCPRoute and UDPRoute have no hostnames"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.preview) || !has(self.hostnames) || self.traffic.preview.hostnames.all(h, !(h in self.hostnames))",message="a preview hostname must not be one of spec.hostnames: the main route would take its requests"
// +kubebuilder:validation:XValidation:rule="!has(self.traffic) || !has(self.traffic.preview) || !has(self.routeName) || size(self.routeName) <= 245",message="with traffic.preview, routeName is at most 245 characters: the preview route is named <routeName>-preview"
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || (!has(self.parentRefs) && !has(self.hostnames) && !has(self.rules) && (!has(self.kind) || self.kind == 'HTTPRoute'))",message="set either routes or the single route's kind, parentRefs, hostnames and rules, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || !has(self.routeName) || self.routes.all(r, size(self.routeName) + size(r.name) <= 252)",message="routeName and a route's name make the route's name, <routeName>-<name>: at most 253 characters"
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || !has(self.traffic) || !has(self.traffic.preview) || !has(self.routeName) || self.routes.all(r, size(self.routeName) + size(r.name) <= 244)",message="with traffic.preview, routeName and a route's name are at most 244 characters together: its preview route is named <routeName>-<name>-preview"
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || !has(self.traffic) || !has(self.traffic.preview) || self.routes.exists(r, !has(r.kind) || r.kind in ['HTTPRoute', 'GRPCRoute', 'TLSRoute'])",message="traffic.preview composes routes of their own hostnames: at least one route must be an HTTPRoute, GRPCRoute or TLSRoute"
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || !has(self.traffic) || !has(self.traffic.preview) || self.routes.all(r, !has(r.hostnames) || self.traffic.preview.hostnames.all(h, !(h in r.hostnames)))",message="a preview hostname must not be one of a route's hostnames: the route would take its requests"
type rawSpec struct {
	// Namespace of the route, for a cluster-scoped CanaryRoute without a
	// claim. A claimed CanaryRoute always routes in its claim's namespace.
	// Immutable. A DNS-1123 label of at most 63 characters.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// RouteName is the name of the composed route. Default: the claim's
	// name, else the CanaryRoute's name. Proxy Services are named
	// <routeName>-primary and <routeName>-canary. Immutable. A DNS-1123
	// subdomain of at most 253 characters.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	RouteName string `json:"routeName,omitempty"`

	// Kind of the composed route: HTTPRoute, GRPCRoute, TLSRoute, TCPRoute
	// or UDPRoute. Default: HTTPRoute.
	// +kubebuilder:validation:Enum=HTTPRoute;GRPCRoute;TLSRoute;TCPRoute;UDPRoute
	// +kubebuilder:default=HTTPRoute
	Kind RouteKind `json:"kind,omitempty"`

	// ParentRefs are the parents of the route (usually a Gateway), as
	// Gateway API ParentReferences. Default: the function Input's
	// defaultParentRefs. At most 32.
	// +kubebuilder:validation:MaxItems=32
	ParentRefs []rawParentReference `json:"parentRefs,omitempty"`

	// Hostnames of the route (HTTPRoute, GRPCRoute; required for TLSRoute,
	// refused for TCPRoute and UDPRoute). At most 16.
	// +kubebuilder:validation:MaxItems=16
	Hostnames []gwv1.Hostname `json:"hostnames,omitempty"`

	// Port of the proxy Services, and default port of backends that need
	// one. 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Rules are the routing rules. Default: one rule (HTTPRoute: PathPrefix
	// "/"). Each rule sends its traffic to the primary and the canary by
	// weight, but a rule of its own (with backendRefs of its own, or a
	// RequestRedirect filter), which is composed as written. At least one
	// rule carries the rollout. At most 16; a TLSRoute, TCPRoute or UDPRoute
	// has one.
	// +kubebuilder:validation:MaxItems=16
	Rules []rawRule `json:"rules,omitempty"`

	// Primary is the stable side: where its traffic goes. Set exactly one
	// of service, externalName or backendRef. Only the canary has a
	// revision. Without release only: with release, the primary is the
	// release's stable revision.
	// +kubebuilder:validation:XValidation:rule="!has(self.revision)",message="only the canary has a revision"
	// +kubebuilder:validation:XValidation:rule="[has(self.service), has(self.externalName), has(self.backendRef)].filter(x, x).size() == 1",message="set exactly one of service, externalName or backendRef"
	Primary *rawSide `json:"primary,omitempty"`

	// Canary is the new version's side, with its revision. Without
	// release, set exactly one of service, externalName or backendRef; with
	// release, the canary is the release's revision canary.revision, and
	// changing it is the one edit of a release.
	// +required
	Canary *rawSide `json:"canary,omitempty"`

	// Release makes the sides revisions of one workload: the function
	// composes both proxy Services from the release's selector and
	// revision label, promotes a revision that completed its steps on its
	// own, and tells the pipeline's next step how many replicas each
	// revision needs. Exclusive with primary.
	Release *rawRelease `json:"release,omitempty"`

	// Traffic is the traffic policy: a manual weight, or progressive steps.
	// Default: weight 0, all traffic to the primary.
	Traffic *rawTraffic `json:"traffic,omitempty"`

	// ReferenceGrants says whether the function composes the
	// ReferenceGrants that cross-namespace backends need (Compose), or
	// leaves them to someone else (Skip). Default: Compose.
	// +kubebuilder:default=Compose
	ReferenceGrants GrantMode `json:"referenceGrants,omitempty"`

	// Routes are the routes one rollout steers together, instead of kind,
	// parentRefs, hostnames and rules (the shorthand for one route): each
	// is composed as its own route, named <routeName>-<name>, with the
	// same primary and canary and the same weights; a step advances once
	// every route carries it. 1 to 8.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Routes []rawRoute `json:"routes,omitempty"`
}

// rawRoute is one entry of spec.routes: a route of the rollout, with the
// fields that the single-route shorthand writes at spec's top level.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind in ['HTTPRoute', 'GRPCRoute'] || !has(self.rules) || self.rules.all(r, !has(r.matches) && !has(r.filters) && !has(r.timeouts) && !has(r.backendRefs) && !has(r.retry))",message="TLSRoute, TCPRoute and UDPRoute rules carry no matches, filters, timeouts, retries or backendRefs of their own"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'TLSRoute' || (has(self.hostnames) && size(self.hostnames) > 0)",message="a TLSRoute routes by SNI: set 1 to 16 hostnames"
type rawRoute struct {
	// Name of the route in the rollout: the composed route is named
	// <routeName>-<name>. A DNS-1123 label of at most 63 characters, not
	// "preview" nor ending in "-preview" (the preview routes' names).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'preview' && !self.endsWith('-preview')",message="preview and names ending in -preview are the preview routes' names"
	Name string `json:"name"`

	// Kind of the route: HTTPRoute, GRPCRoute, TLSRoute, TCPRoute or
	// UDPRoute. Default: HTTPRoute.
	// +kubebuilder:validation:Enum=HTTPRoute;GRPCRoute;TLSRoute;TCPRoute;UDPRoute
	// +kubebuilder:default=HTTPRoute
	Kind RouteKind `json:"kind,omitempty"`

	// ParentRefs are the parents of the route, as spec.parentRefs.
	// Default: the function Input's defaultParentRefs. At most 32.
	// +kubebuilder:validation:MaxItems=32
	ParentRefs []rawParentReference `json:"parentRefs,omitempty"`

	// Hostnames of the route, as spec.hostnames. At most 16.
	// +kubebuilder:validation:MaxItems=16
	Hostnames []gwv1.Hostname `json:"hostnames,omitempty"`

	// Port is this route's port on the sides: the port of the proxy
	// Services it references (each proxy Service has one port per distinct
	// route port), and of backendRef sides whose kind takes one. Default:
	// spec.port, or the backendRef's own port. 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Rules are the route's rules, as spec.rules. At most 16.
	// +kubebuilder:validation:MaxItems=16
	Rules []rawRule `json:"rules,omitempty"`
}

// rawParentReference is gwv1.ParentReference without its default group
// and kind: the function composes parentRefs as written.
type rawParentReference struct {
	// Group of the parent. Default, in the route: gateway.networking.k8s.io.
	Group *gwv1.Group `json:"group,omitempty"`
	// Kind of the parent. Default, in the route: Gateway.
	Kind *gwv1.Kind `json:"kind,omitempty"`
	// Namespace of the parent. Default: the route's namespace.
	Namespace *gwv1.Namespace `json:"namespace,omitempty"`
	// Name of the parent.
	// +required
	Name gwv1.ObjectName `json:"name"`
	// SectionName is the name of a section of the parent, such as a
	// Gateway's listener.
	SectionName *gwv1.SectionName `json:"sectionName,omitempty"`
	// Port of the parent to attach to. 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"` // gwv1.PortNumber is int32.
}

// rawRule is one routing rule as written.
type rawRule struct {
	// Name of the rule, a DNS-1123 subdomain of at most 253 characters.
	Name *gwv1.SectionName `json:"name,omitempty"`

	// Matches are HTTPRouteMatch (HTTPRoute) or GRPCRouteMatch (GRPCRoute)
	// conditions, as Gateway API writes them. At most 64.
	// +kubebuilder:validation:MaxItems=64
	Matches []fragment `json:"matches,omitempty"`

	// Filters are rule-level HTTPRoute or GRPCRoute filters, kept as
	// written. At most 16.
	// +kubebuilder:validation:MaxItems=16
	Filters []fragment `json:"filters,omitempty"`

	// BackendRefs are the backends of a rule of its own, as Gateway API
	// writes them (HTTPBackendRef or GRPCBackendRef): the rule is composed
	// as written and never weighted; its backends pass the function Input's
	// policy like the sides'. At most 16.
	// +kubebuilder:validation:MaxItems=16
	BackendRefs []fragment `json:"backendRefs,omitempty"`

	// Timeouts are the HTTPRoute timeouts of the rule (HTTPRoute only).
	Timeouts *rawTimeouts `json:"timeouts,omitempty"`

	// Retry is the HTTPRoute retry of the rule (HTTPRoute only, Gateway
	// API's experimental channel), passed through.
	Retry *rawRetry `json:"retry,omitempty"`
}

// rawTimeouts is gwv1.HTTPRouteTimeouts without its rule on the two
// timeouts, which the function checks itself.
type rawTimeouts struct {
	// Request is the timeout of a whole request, such as 10s.
	Request *gwv1.Duration `json:"request,omitempty"`
	// BackendRequest is the timeout of one request to a backend, such as
	// 2s.
	BackendRequest *gwv1.Duration `json:"backendRequest,omitempty"`
}

// rawRetry is gwv1.HTTPRouteRetry with a bound on its codes.
type rawRetry struct {
	// Codes are the HTTP statuses (400 to 599) that are retried. At most
	// 64.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	Codes []gwv1.HTTPRouteRetryStatusCode `json:"codes,omitempty"`
	// Attempts is the most retries of a request; at least 1.
	// +kubebuilder:validation:Minimum=1
	Attempts *int `json:"attempts,omitempty"`
	// Backoff is the time between retries, such as 100ms.
	Backoff *gwv1.Duration `json:"backoff,omitempty"`
}

// rawSide is the primary or the canary as written.
//
// +kubebuilder:validation:XValidation:rule="[has(self.service), has(self.externalName), has(self.backendRef)].filter(x, x).size() <= 1",message="set exactly one of service, externalName or backendRef"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.backendRef)",message="tls goes with a service or externalName side, whose proxy Service the function composes"
type rawSide struct {
	// Service composes a ClusterIP proxy Service <routeName>-<side> that
	// selects these pods.
	Service *rawService `json:"service,omitempty"`

	// ExternalName composes an ExternalName proxy Service to this host
	// outside the cluster (only where the function's Input allows it); a
	// trailing dot is allowed. At most 254 characters.
	// +kubebuilder:validation:MaxLength=254
	ExternalName *string `json:"externalName,omitempty"`

	// BackendRef routes to this backend as written (any group and kind).
	BackendRef *rawBackendRef `json:"backendRef,omitempty"`

	// Filters on this side's backendRef in every rule (HTTPRoute,
	// GRPCRoute), as Gateway API writes them. At most 16.
	// +kubebuilder:validation:MaxItems=16
	Filters []fragment `json:"filters,omitempty"`

	// TLS towards a service or externalName side's backend composes a
	// BackendTLSPolicy (gateway.networking.k8s.io/v1) that targets the
	// side's proxy Service (HTTPRoute, GRPCRoute).
	TLS *rawBackendTLS `json:"tls,omitempty"`

	// Revision of the canary (the canary only), such as its image tag.
	// Required with traffic.steps: a new revision restarts the rollout at
	// step 0 and drops the canary's sessions. 1 to 63 letters, digits, '.',
	// '_' or '-'.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,63}$`
	Revision *string `json:"revision,omitempty"`
}

// rawService is a side's proxy Service as written.
type rawService struct {
	// Selector holds the labels of the pods: 1 to 64.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	Selector map[string]string `json:"selector,omitempty"`

	// TargetPort is the port of the pods, a number or a name. Default:
	// spec.port.
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`

	// AppProtocol of the Service port, such as kubernetes.io/h2c.
	AppProtocol *string `json:"appProtocol,omitempty"`
}

// rawRelease is spec.release as written.
type rawRelease struct {
	// Selector holds the labels that every revision's pods share: 1 to 63.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=63
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && size(self[k]) <= 63)",message="selector keys and values are label keys and values"
	Selector map[string]string `json:"selector,omitempty"`

	// RevisionLabel is the label whose value is a pod's revision: each
	// side's proxy Service selects the selector and this label at its
	// revision. It must not be one of selector's keys.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RevisionLabel string `json:"revisionLabel,omitempty"`

	// Replicas is how many replicas a revision runs at full traffic: the
	// pipeline's next step composes each revision's workload with the
	// count the function gives it. 1 to 1000. Default: 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// Workload, when set, is the object that runs each revision, read in
	// the route's namespace: a move to a weight waits until the canary's
	// status.readyReplicas can carry it, and the promotion until the new
	// revision's reach replicas.
	Workload *rawWorkload `json:"workload,omitempty"`

	// ScaleDownDelay is how long a retired revision keeps its replicas
	// after its promotion, for connections to drain and a fast rollback.
	// 0s to 24h. Default: 30s.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="scaleDownDelay must be at most 24h"
	ScaleDownDelay *string `json:"scaleDownDelay,omitempty"`

	// TargetPort is the pods' port, a number or a name. Default:
	// spec.port.
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`

	// AppProtocol of the proxy Services' port, such as kubernetes.io/h2c.
	// +kubebuilder:validation:MaxLength=253
	AppProtocol *string `json:"appProtocol,omitempty"`
}

// rawWorkload names the object that runs each revision.
type rawWorkload struct {
	// APIVersion of the workload. Default: apps/v1.
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the workload (one the function Input's allowedWorkloadKinds
	// lists). Default: Deployment.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`
	// Name of a revision's workload, where {{revision}} stands for the
	// revision, such as podinfo-{{revision}}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// rawBackendRef is gwv1.BackendObjectReference without its defaults and
// its rule that a Service names a port: the function applies spec.port.
type rawBackendRef struct {
	// Group of the backend. Default: "" (the core group).
	Group *gwv1.Group `json:"group,omitempty"`
	// Kind of the backend. Default: Service.
	Kind *gwv1.Kind `json:"kind,omitempty"`
	// Name of the backend.
	// +required
	Name gwv1.ObjectName `json:"name"`
	// Namespace of the backend. Default: the route's namespace; another
	// one needs a ReferenceGrant, which the function composes where its
	// Input allows it.
	Namespace *gwv1.Namespace `json:"namespace,omitempty"`
	// Port of the backend. Default: spec.port. 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"` // gwv1.PortNumber is int32.
}

// rawBackendTLS is gwv1.BackendTLSPolicyValidation, with System the only
// well-known set of CA certificates.
//
// +kubebuilder:validation:XValidation:rule="has(self.caCertificateRefs) != has(self.wellKnownCACertificates)",message="set exactly one of caCertificateRefs or wellKnownCACertificates"
type rawBackendTLS struct {
	// CACertificateRefs are ConfigMaps (in the route's namespace) holding
	// the CA certificates, under the key ca.crt. At most 8.
	// +kubebuilder:validation:MaxItems=8
	CACertificateRefs []gwv1.LocalObjectReference `json:"caCertificateRefs,omitempty"`
	// WellKnownCACertificates: System, the gateway's own CA certificates.
	// +kubebuilder:validation:Enum=System
	WellKnownCACertificates *gwv1.WellKnownCACertificatesType `json:"wellKnownCACertificates,omitempty"`
	// Hostname is the name the backend's certificate must be valid for,
	// sent as SNI.
	// +required
	Hostname gwv1.PreciseHostname `json:"hostname"`
	// SubjectAltNames are names the certificate must hold, instead of
	// hostname, as Gateway API writes them. At most 5.
	// +kubebuilder:validation:MaxItems=5
	SubjectAltNames []gwv1.SubjectAltName `json:"subjectAltNames,omitempty"`
}

// rawTraffic is the traffic policy as written.
//
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.map(s, s.weight).isSorted()",message="steps must not lower the weight: a rollout only moves forward"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadline) || has(self.steps)",message="progressDeadline bounds how long a step may be held: it needs steps"
// +kubebuilder:validation:XValidation:rule="has(self.steps) || (!has(self.approval) && !has(self.promote) && !has(self.retry))",message="approval, promote and retry act on progressive rollouts: they need steps"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.analysis) || s.analysis.all(a, has(self.analysis) && a in self.analysis))",message="a step's analysis names templates of traffic.analysis"
// +kubebuilder:validation:XValidation:rule="(!has(self.metrics) && !has(self.bake)) || has(self.steps)",message="metrics and bake judge the steps of a progressive rollout: they need steps"
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || !has(self.steps) || self.metrics.all(m, !has(m.steps) || m.steps.all(i, i < size(self.steps)))",message="a metric's steps are indexes of traffic.steps"
// +kubebuilder:validation:XValidation:rule="!has(self.preview) || has(self.steps)",message="a preview shows the canary while a rollout is active: it needs steps"
// +kubebuilder:validation:XValidation:rule="!has(self.hooks) || has(self.steps)",message="hooks are called at a progressive rollout's moments: they need steps"
type rawTraffic struct {
	// Weight is the canary's percent in manual mode, 0 to 100 with at most
	// two decimals (0.1). Default: 0.
	Weight *percent.Percent `json:"weight,omitempty"`

	// Steps are the progressive mode. Each step holds until its pause has
	// elapsed and every gate holds. At most 32.
	// +kubebuilder:validation:MaxItems=32
	Steps []rawStep `json:"steps,omitempty"`

	// Paused freezes the rollout at its current step.
	Paused bool `json:"paused,omitempty"`

	// Abort sends all traffic to the primary (phase Aborted). Clearing it
	// restarts at step 0.
	Abort bool `json:"abort,omitempty"`

	// Matches are A/B conditions (headers, query parameters, method):
	// requests that match always go to the canary while the rollout is
	// active (HTTPRoute, GRPCRoute). At most 64.
	// +kubebuilder:validation:MaxItems=64
	Matches []fragment `json:"matches,omitempty"`

	// Mirror copies a share of the weighted rules' requests to the canary
	// while the rollout is active (HTTPRoute, GRPCRoute).
	Mirror *rawMirror `json:"mirror,omitempty"`

	// SessionAffinity keeps clients that reached the canary on the canary,
	// with a cookie (mode Cookie, HTTPRoute), or with the gateway's own
	// session persistence (mode SessionPersistence, HTTPRoute and
	// GRPCRoute, Gateway API's experimental channel).
	SessionAffinity *rawAffinity `json:"sessionAffinity,omitempty"`

	// Gates are conditions on objects in the route's namespace that every
	// step waits for. At most 16.
	// +kubebuilder:validation:MaxItems=16
	Gates []rawGate `json:"gates,omitempty"`

	// RequireAcceptedRoute holds each step until every parent accepted the
	// route with the step's weights. Default: true.
	// +kubebuilder:default=true
	RequireAcceptedRoute *bool `json:"requireAcceptedRoute,omitempty"`

	// ProgressDeadline fails the rollout (weight 0, phase Failed) when a
	// step is held past its pause for longer than this: by a gateway that
	// does not accept the route, or a gate object that is missing, Unknown,
	// or False within its failAfter. 1m to 24h. Default: no deadline.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="progressDeadline must be between 1m and 24h"
	ProgressDeadline *string `json:"progressDeadline,omitempty"`

	// Approval approves every approval step of a revision up to a step.
	Approval *rawApproval `json:"approval,omitempty"`

	// Promote moves the revision it names to its last step once, from a
	// step whose route the gateway accepted.
	Promote *rawPromote `json:"promote,omitempty"`

	// Retry, a value other than the one status.rollout.retry records,
	// restarts a Failed or Aborted revision at step 0, once. Every value
	// seen is recorded, so write a new value after the failure (a counter
	// or a timestamp). 1 to 63 letters, digits, '.', '_' or '-'.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,63}$`
	Retry *string `json:"retry,omitempty"`

	// Analysis are the analysis templates that steps name, by name
	// (DNS-1123 labels of at most 32 characters). At most 8.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 32 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="analysis names are DNS-1123 labels of at most 32 characters"
	Analysis map[string]rawAnalysis `json:"analysis,omitempty"`

	// Metrics judge the canary by its own traffic: the function queries
	// each metric's provider (named in the function's Input) once per
	// interval while a step it counts in is current, and a step advances
	// only after its pause and a passing measurement of each of its
	// metrics. At most 10.
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=name
	Metrics []rawMetric `json:"metrics,omitempty"`

	// RollbackWindow is how many of the release's last stable revisions
	// roll back without steps: setting canary.revision to one of them
	// (unchanged since) goes straight to its promotion. 0 to 10. Default:
	// 0, every revision rolls out through the steps.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	RollbackWindow *int32 `json:"rollbackWindow,omitempty"`

	// Bake keeps measuring the metrics this long after the last step has
	// passed, before the rollout Succeeds (phase Progressing, reason
	// Baking). 0s to 24h. Default: none.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="bake must be at most 24h"
	Bake *string `json:"bake,omitempty"`

	// Preview composes one more route of the route's kind,
	// <routeName>-preview, on the same parents, while a rollout is active
	// (phase Progressing, Paused or Promoting): its hostnames send every
	// request of the route's rules to the canary, so that testers reach
	// the new revision by name before the steps give it any traffic. It is
	// deleted when the rollout ends. HTTPRoute, GRPCRoute and TLSRoute;
	// it needs steps.
	Preview *rawPreview `json:"preview,omitempty"`

	// Hooks call the webhooks of the function's Input at the rollout's
	// moments, as Flagger's webhooks do: a load tester during each step,
	// a person's or a service's go-ahead, a rollback trigger, a message to
	// the team's chat. Each call is recorded in status.rollout.hooks, so
	// that a hook runs once per transition however often Crossplane
	// calls. Progressive rollouts only. At most 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Hooks []rawHook `json:"hooks,omitempty"`
}

// rawHook is one of traffic.hooks as written.
type rawHook struct {
	// Name of the hook, a DNS-1123 label of at most 32 characters: its
	// record in status.rollout.hooks.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Webhook names one of the function Input's webhooks: the platform
	// team chooses the addresses, authors only when they are called.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Webhook string `json:"webhook"`

	// Type says when the webhook is called and what its answer does:
	// confirm-rollout (before the first step gets weight; holds until a
	// 2xx), pre-rollout (once before the first step; failureLimit failures
	// fail the rollout), rollout (once per step, before its metrics are
	// judged; a failure holds the step, failureLimit fail the rollout),
	// confirm-traffic-increase (before each next step's weight),
	// confirm-promotion (before Succeeded), post-rollout (once after
	// Succeeded, Failed or Aborted; recorded only), rollback (asked while
	// the rollout progresses: a 2xx aborts it) and event (once per
	// transition).
	// +required
	// +kubebuilder:validation:Enum=confirm-rollout;pre-rollout;rollout;confirm-traffic-increase;confirm-promotion;post-rollout;rollback;event
	Type string `json:"type"`

	// Metadata is sent in the call's body as written (Flagger's
	// loadtester reads its cmd). At most 16 keys; keys of at most 63
	// characters, values of at most 1024.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && size(self[k]) <= 1024)",message="metadata keys are at most 63 characters and values at most 1024"
	Metadata map[string]string `json:"metadata,omitempty"`

	// Interval is how soon a hook that did not answer 2xx is asked again:
	// a confirm-*, a rollback, or a pre-rollout or rollout hook under its
	// failureLimit. 5s to 1h. Default: 1m.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('1h')",message="interval must be between 5s and 1h"
	Interval *string `json:"interval,omitempty"`

	// FailureLimit is how many failed calls of a pre-rollout or rollout
	// hook, for one step of one attempt, fail the rollout. 1 to 10.
	// Default: 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	FailureLimit *int32 `json:"failureLimit,omitempty"`
}

// rawPreview is traffic.preview as written.
type rawPreview struct {
	// Hostnames of the preview route, as Gateway API writes them: 1 to 16,
	// none of them one of spec.hostnames (the main route would take its
	// requests), no two alike.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Hostnames []gwv1.Hostname `json:"hostnames"`
}

// rawMetric is one of traffic.metrics as written.
type rawMetric struct {
	// Name of the metric, a DNS-1123 label of at most 32 characters.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Provider names one of the function Input's metricProviders: the
	// platform team chooses where queries go, authors only what they ask.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Provider string `json:"provider"`

	// Query gives one number, in the provider's language: PromQL for a
	// prometheus provider, a metrics query for datadog, the {{query}} of a
	// web provider's URL. {{namespace}}, {{route}} (spec's route name,
	// also with spec.routes), {{service}} (the measured side's proxy
	// Service or backend), {{revision}} and {{interval}} are replaced by
	// their values, escaped for the provider; nothing else is changed. At
	// most 4096 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// Interval is how often the metric is measured: at most once per
	// interval and side, whatever the reconcile rate. 5s to 1h. Default:
	// 1m.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('1h')",message="interval must be between 5s and 1h"
	Interval *string `json:"interval,omitempty"`

	// SuccessWhen is a CEL expression over result (the canary's number)
	// and baseline (the primary's, with compareTo) that is true when the
	// measurement passes, such as result <= 0.01. At most 1024
	// characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SuccessWhen string `json:"successWhen"`

	// CompareTo primary measures the same query for the primary side too,
	// as baseline.
	// +kubebuilder:validation:Enum=primary
	CompareTo *string `json:"compareTo,omitempty"`

	// FailureLimit is how many failed measurements in a row fail the
	// rollout. 1 to 10. Default: 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	FailureLimit *int32 `json:"failureLimit,omitempty"`

	// NoData is what an answer without one number (an empty result, NaN, a
	// provider that cannot be reached) counts as: Hold (default) holds the
	// step, Pass passes, Fail fails like a failed measurement.
	// +kubebuilder:validation:Enum=Hold;Pass;Fail
	NoData *string `json:"noData,omitempty"`

	// Steps are the indexes of the steps the metric counts in. Default:
	// every step with a weight above 0 (below 100 with compareTo).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=31
	// +listType=set
	Steps []int32 `json:"steps,omitempty"`

	// DryRun measures, records and announces the metric, and never holds
	// or fails the rollout.
	DryRun bool `json:"dryRun,omitempty"`
}

// rawStep is one progressive step as written.
type rawStep struct {
	// Weight is the canary's percent during the step, 0 to 100 with at
	// most two decimals (0.1). When every weight of the spec is whole the
	// route's weights are out of 100; otherwise out of 10,000.
	// +required
	Weight *percent.Percent `json:"weight,omitempty"`

	// Pause is how long the step lasts at least, such as 1m or 1h30m.
	// Default: no pause.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Pause *string `json:"pause,omitempty"`

	// Analysis names the traffic.analysis templates that must pass before
	// the step advances; each is composed while the step is current. At
	// most 4.
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=32
	// +listType=set
	Analysis []string `json:"analysis,omitempty"`

	// Approval holds the step, after its pause, gates and analysis, until
	// traffic.approval names this revision and this step or a later one.
	Approval bool `json:"approval,omitempty"`

	// Matches are A/B matches while this step is current, in place of
	// traffic.matches. At most 64.
	// +kubebuilder:validation:MaxItems=64
	Matches []fragment `json:"matches,omitempty"`

	// Mirror mirrors requests to the canary while this step is current, in
	// place of traffic.mirror.
	Mirror *rawMirror `json:"mirror,omitempty"`
}

// rawMirror is a mirror as written.
type rawMirror struct {
	// Percent of the requests mirrored, 0 to 100. Default: 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=100
	Percent *int32 `json:"percent,omitempty"`

	// Matches limit the mirror to the requests that match (header, query
	// parameter and method conditions added to each rule's matches),
	// through companion rules that keep the weighted backends. At most 64.
	// +kubebuilder:validation:MaxItems=64
	Matches []fragment `json:"matches,omitempty"`
}

// rawApproval is traffic.approval as written.
type rawApproval struct {
	// Revision whose approval steps are approved.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,63}$`
	Revision string `json:"revision,omitempty"`

	// Step is the index of the last step approved, 0 to 31.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	Step *int32 `json:"step,omitempty"`
}

// rawPromote is traffic.promote as written.
type rawPromote struct {
	// Revision to move to its last step.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,63}$`
	Revision string `json:"revision,omitempty"`
}

// rawAnalysis is an analysis template as written.
type rawAnalysis struct {
	// Template is the object to compose while a step names it (any kind
	// the function's Input allows; default batch/v1 Job), named and placed
	// by the function. Its metadata may hold labels and annotations only,
	// none under canaryroute.fn.crossplane.io/, which are the function's.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template map[string]any `json:"template,omitempty"`

	// SuccessWhen is a CEL expression over `object` (the analysis object)
	// that is true once it passed, such as object.status.succeeded > 0. At
	// most 1024 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SuccessWhen string `json:"successWhen,omitempty"`

	// FailWhen is a CEL expression over `object` that fails the rollout
	// when true, such as object.status.failed > 0. At most 1024
	// characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	FailWhen string `json:"failWhen,omitempty"`
}

// rawAffinity is traffic.sessionAffinity as written.
//
// +kubebuilder:validation:XValidation:rule="!has(self.primaryCookieName) || self.primaryCookieName != self.cookieName",message="primaryCookieName must differ from cookieName"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode == 'Cookie' || (!has(self.primaryCookieName) && !has(self.attributes))",message="primaryCookieName and attributes go with mode Cookie: with SessionPersistence the gateway writes its own cookie"
type rawAffinity struct {
	// CookieName is the name of the canary's cookie (mode Cookie), or of
	// the gateway's session cookie (mode SessionPersistence): 1 to 64
	// letters, digits, '.', '_' or '-'.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,64}$`
	CookieName string `json:"cookieName,omitempty"`

	// PrimaryCookieName is the primary's own cookie, which keeps its users
	// on the primary as the weight grows (mode Cookie).
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,64}$`
	PrimaryCookieName string `json:"primaryCookieName,omitempty"`

	// MaxAge is how long a client stays on its side, such as 24h: 1s to
	// 99999h.
	// +required
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	MaxAge *string `json:"maxAge,omitempty"`

	// Attributes of the cookies (mode Cookie).
	Attributes *rawAttributes `json:"attributes,omitempty"`

	// Mode: Cookie (the function's cookies, HTTPRoute) or
	// SessionPersistence (the gateway's own). Default: Cookie.
	// +kubebuilder:default=Cookie
	Mode AffinityMode `json:"mode,omitempty"`
}

// rawAttributes are the cookies' attributes as written.
//
// +kubebuilder:validation:XValidation:rule="!has(self.sameSite) || self.sameSite != 'None' || (has(self.secure) && self.secure)",message="SameSite=None needs secure: true"
type rawAttributes struct {
	// Path of the cookies: '/' and at most 255 more characters, no ';' and
	// no control characters. Default: "/".
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^;\x00-\x1f\x7f]*$`
	Path *string `json:"path,omitempty"`

	// Domain of the cookies, a DNS-1123 subdomain. Default: none, the
	// request's host.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Domain string `json:"domain,omitempty"`

	// Secure sends the cookies over HTTPS only.
	Secure bool `json:"secure,omitempty"`

	// SameSite of the cookies: Strict, Lax or None (which needs secure).
	// Default: none, the browser's.
	// +kubebuilder:validation:Enum=Strict;Lax;None
	SameSite string `json:"sameSite,omitempty"`
}

// rawGate is a gate as written.
//
// +kubebuilder:validation:XValidation:rule="has(self.conditionType) != has(self.successWhen)",message="set either conditionType or successWhen"
// +kubebuilder:validation:XValidation:rule="!has(self.failWhen) || has(self.successWhen)",message="failWhen goes with successWhen"
type rawGate struct {
	// APIVersion of the gate object, such as apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the gate object, such as Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`

	// Name of the gate object, in the route's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// ConditionType is the condition of the object that must be True, such
	// as Available. Set either conditionType or successWhen.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	ConditionType string `json:"conditionType,omitempty"`

	// SuccessWhen is a CEL expression over `object` (the gate object) that
	// is true once the gate holds, such as object.status.phase ==
	// 'Successful'. At most 1024 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SuccessWhen string `json:"successWhen,omitempty"`

	// FailWhen is a CEL expression over `object` that fails the rollout at
	// once when true. At most 1024 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	FailWhen string `json:"failWhen,omitempty"`

	// FailAfter fails the rollout once the condition has been False this
	// long. Default: 5m.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	FailAfter *string `json:"failAfter,omitempty"`
}

// fragment is a Gateway API value that the CanaryRoute holds as written (a
// match, a filter, a backend reference) until the route's kind says which
// Gateway API type it is: then it is decoded strictly and checked with the
// Gateway API's rules, field by field. The XRDs keep it as an object.
//
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type fragment json.RawMessage

// MarshalJSON returns the fragment as written.
func (f fragment) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	return f, nil
}

// UnmarshalJSON keeps a copy of the fragment as written.
func (f *fragment) UnmarshalJSON(b []byte) error {
	*f = append((*f)[:0], b...)
	return nil
}

// Status is the part of the XR's status that the function owns. It reads
// it back on every run, leniently: fields a newer release adds must not
// break an older one during a rollback.
type Status struct {
	// Rollout is the rollout state, carried from one reconcile to the next.
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// Route is the composed route and what its parents say about it,
	// for the single-route shorthand.
	Route *RouteStatus `json:"route,omitempty"`
	// Routes are the composed routes of spec.routes and what their
	// parents say about them, in spec.routes' order. At most 8.
	// +kubebuilder:validation:MaxItems=8
	Routes []RouteStatus `json:"routes,omitempty"`
	// Release is the release loop's memory: the stable revision, the ones
	// before it, and the one being retired.
	Release *ReleaseStatus `json:"release,omitempty"`
}

// ReleaseStatus is status.release.
type ReleaseStatus struct {
	// Stable is the revision the primary serves.
	Stable *StableRevision `json:"stable,omitempty"`
	// History are the revisions that were stable before, newest first. At
	// most 10.
	// +kubebuilder:validation:MaxItems=10
	History []ReleasedRevision `json:"history,omitempty"`
	// Retiring is the revision the last promotion retired: it keeps its
	// replicas until at, then gets none.
	Retiring *RetiringRevision `json:"retiring,omitempty"`
	// CanaryMove is a move of the canary Service from one revision to
	// another that waits for the route: the Service keeps selecting from
	// while the route may send it a request, and moves at `at`, once the
	// route has sent it nothing for a while (a gateway's data plane
	// follows its route a moment after accepting it).
	CanaryMove *CanaryMove `json:"canaryMove,omitempty"`
}

// CanaryMove is a move of the canary Service's selector under way.
type CanaryMove struct {
	// From is the revision the canary Service selects.
	// +kubebuilder:validation:MaxLength=63
	From string `json:"from"`
	// To is the revision it moves to.
	// +kubebuilder:validation:MaxLength=63
	To string `json:"to"`
	// At is when it moves, if the route still sends it nothing.
	At metav1.Time `json:"at"`
}

// StableRevision is the revision the primary serves.
type StableRevision struct {
	// Revision of the stable pods.
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision"`
	// Digest of the revision's side as it was promoted: a rollback to it
	// skips the steps only while it is unchanged.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest,omitempty"`
	// Since is when the revision became stable.
	Since metav1.Time `json:"since"`
}

// ReleasedRevision is a revision that was stable.
type ReleasedRevision struct {
	// Revision that was stable.
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision"`
	// Digest of its side as it was promoted.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest,omitempty"`
	// SucceededAt is when it was promoted.
	SucceededAt metav1.Time `json:"succeededAt"`
}

// RetiringRevision is a revision that a promotion retired.
type RetiringRevision struct {
	// Revision retired.
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision"`
	// At is when it gets no replicas.
	At metav1.Time `json:"at"`
}

// Phase of a rollout.
// +kubebuilder:validation:Enum=Stable;Progressing;Paused;Promoting;Succeeded;Aborted;Failed
type Phase string

// Rollout phases.
const (
	PhaseStable      Phase = "Stable"
	PhaseProgressing Phase = "Progressing"
	PhasePaused      Phase = "Paused"
	// PhasePromoting: a release moves its primary to the revision that
	// completed its steps, while the canary carries every request.
	PhasePromoting Phase = "Promoting"
	PhaseSucceeded Phase = "Succeeded"
	PhaseAborted   Phase = "Aborted"
	PhaseFailed    Phase = "Failed"
)

// RolloutStatus is status.rollout: the rollout state that carries over
// between runs, since a function keeps no memory of its own. The engine reads
// its own past decisions from these fields, never from the wording of
// Message.
type RolloutStatus struct {
	// Phase of the rollout: Stable, Progressing, Paused, Succeeded, Aborted
	// or Failed.
	Phase Phase `json:"phase,omitempty"`
	// Reason is the machine-readable reason of the phase, such as
	// GateFailed or CanaryChanged. At most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
	// Revision of the canary that the rollout is about.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{0,63}$`
	Revision string `json:"revision,omitempty"`
	// Step is the index of the current step of a progressive rollout.
	Step *int32 `json:"step,omitempty"`
	// StepStartedAt is when the current step started.
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// NextStepAt is when the current step's pause ends.
	NextStepAt *metav1.Time `json:"nextStepAt,omitempty"`
	// CanaryWeight is the canary's percent in the route, 0 to 100, as
	// written (0.1).
	CanaryWeight percent.Percent `json:"canaryWeight"`
	// PrimaryWeight is the primary's percent in the route, 0 to 100, as
	// written (99.9).
	PrimaryWeight percent.Percent `json:"primaryWeight"`
	// CanaryDigest is a digest of the canary side (its source and filters):
	// a change of it restarts a progressive rollout.
	// +kubebuilder:validation:MaxLength=64
	CanaryDigest string `json:"canaryDigest,omitempty"`
	// CanaryBackends are the route's canary backends, which an emergency
	// abort sends to weight 0 without guessing them by name. At most 4.
	// +kubebuilder:validation:MaxItems=4
	CanaryBackends []BackendID `json:"canaryBackends,omitempty"`
	// AwaitingApproval is true while an approval step waits for
	// traffic.approval.
	AwaitingApproval bool `json:"awaitingApproval,omitempty"`
	// Analysis are the verdicts of the revision's analysis, step by step:
	// once a step has passed, its analysis object is deleted and its
	// verdict stays here. At most 128: 32 steps of 4 analyses.
	// +kubebuilder:validation:MaxItems=128
	Analysis []AnalysisVerdict `json:"analysis,omitempty"`
	// Promoted is the revision that traffic.promote moved to its last
	// step: a promote acts once.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{0,63}$`
	Promoted string `json:"promoted,omitempty"`
	// Retry is the last traffic.retry value seen: a retry acts once, and a
	// value seen while there was nothing to retry never restarts a later
	// failure by itself.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{0,63}$`
	Retry string `json:"retry,omitempty"`
	// Attempt is the traffic.retry value that started the current attempt
	// of the revision ("" for its first): analysis objects are labelled and
	// named with it, so a retry gets objects of its own.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{0,63}$`
	Attempt string `json:"attempt,omitempty"`
	// Metrics are the latest measurements of each of traffic.metrics in
	// this attempt of the revision: the memory of the measurements across
	// runs and restarts of the function. At most 10 metrics.
	// +kubebuilder:validation:MaxItems=10
	Metrics []MetricStatus `json:"metrics,omitempty"`
	// BakeStartedAt is when the last step passed and started baking (see
	// traffic.bake).
	BakeStartedAt *metav1.Time `json:"bakeStartedAt,omitempty"`
	// Hooks are the last call of each of traffic.hooks in this rollout:
	// what it answered, when, and the transition it was for, so that a
	// hook runs once per transition however often Crossplane calls. At
	// most 16.
	// +kubebuilder:validation:MaxItems=16
	Hooks []HookStatus `json:"hooks,omitempty"`
	// Sequence counts the decisions the function recorded in this status:
	// it grows by one with every change of status.rollout or
	// status.release, and with the XR's metadata.generation it orders
	// Crossplane's reads, whose caches lag under load: a read older than a
	// decision answered gets that decision again, never an older one (see
	// docs/rollout.md, "Fresh state"). Written by the function only.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9007199254740991
	Sequence int64 `json:"sequence,omitempty"`
	// Message says what the rollout is doing, for people; the function
	// never reads it back. At most 1024 characters.
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// Results of a hook's call.
const (
	// HookSucceeded: the webhook answered 2xx.
	HookSucceeded = "Succeeded"
	// HookFailed: it did not (another status, no answer, too long an
	// answer).
	HookFailed = "Failed"
)

// HookStatus is the last call of one hook.
type HookStatus struct {
	// Name of the hook.
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
	// Transition is what the call was for: the revision, the attempt and
	// the moment (start, step-N, step-N-at-W, promotion-at-W, each with the
	// time its step started; rollback; the events' reasons and digest; the
	// phase that ended the rollout). At most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	Transition string `json:"transition"`
	// Time of the call.
	Time metav1.Time `json:"time"`
	// Result: Succeeded (2xx) or Failed.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	Result string `json:"result"`
	// Status is the answer's HTTP status; 0 when there was none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=999
	Status int32 `json:"status,omitempty"`
	// Reason says why the call failed, never quoting a secret address.
	// At most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
	// Failures counts the failed calls for this transition.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Failures int32 `json:"failures,omitempty"`
}

// Verdicts of a measurement, beside VerdictPassed and VerdictFailed.
const (
	// VerdictNoData: the answer was no number (see traffic.metrics.noData).
	VerdictNoData = "NoData"
)

// MetricStatus is the latest measurements of one metric.
type MetricStatus struct {
	// Name of the metric.
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
	// Measurements, oldest first. At most 10.
	// +kubebuilder:validation:MaxItems=10
	Measurements []Measurement `json:"measurements,omitempty"`
}

// Measurement is one measurement of a metric.
type Measurement struct {
	// Time of the query.
	Time metav1.Time `json:"time"`
	// Step is the index of the step current when it was taken.
	Step int32 `json:"step"`
	// Value is the canary's number, as Prometheus wrote it.
	// +kubebuilder:validation:MaxLength=32
	Value string `json:"value,omitempty"`
	// Baseline is the primary's number (compareTo: primary).
	// +kubebuilder:validation:MaxLength=32
	Baseline string `json:"baseline,omitempty"`
	// Verdict: Passed, Failed or NoData.
	// +kubebuilder:validation:Enum=Passed;Failed;NoData
	Verdict string `json:"verdict"`
	// Reason says why there is no number, or why successWhen could not be
	// judged. At most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
}

// Verdicts of an analysis.
const (
	VerdictPassed = "Passed"
	VerdictFailed = "Failed"
)

// AnalysisVerdict is the outcome of one analysis at one step.
type AnalysisVerdict struct {
	// Name of the analysis template.
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
	// Step is the index of the step the analysis ran at.
	Step int32 `json:"step"`
	// Verdict: Passed or Failed.
	// +kubebuilder:validation:Enum=Passed;Failed
	Verdict string `json:"verdict"`
	// Time of the verdict.
	Time metav1.Time `json:"time"`
}

// BackendID identifies a backend in a route, with Gateway API's defaults
// applied: the group and kind, the namespace (the route's when the reference
// names none), the name, and the port when the reference has one.
type BackendID struct {
	// Group of the backend; "" is the core group.
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group"`
	// Kind of the backend.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace of the backend.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the backend.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Port of the backend, when the reference has one.
	Port *int32 `json:"port,omitempty"`
}

// RouteStatus is status.route: the composed route and what its parents say.
type RouteStatus struct {
	// Kind of the composed route.
	// +kubebuilder:validation:MaxLength=63
	Kind RouteKind `json:"kind"`
	// Name of the composed route.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the composed route.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Parents are the route's parents and their verdicts. At most 32.
	// +kubebuilder:validation:MaxItems=32
	Parents []ParentStatus `json:"parents,omitempty"`
	// Versions are the API versions the function read from the cluster's
	// CRD schemas, and when; the runs after it reuse them for ten minutes
	// rather than have Crossplane fetch the schemas on every reconcile.
	Versions *ServedVersions `json:"versions,omitempty"`
}

// ServedVersions are the versions a run chose from the cluster's schemas.
type ServedVersions struct {
	// Route is the version of the route's kind.
	// +kubebuilder:validation:MaxLength=16
	Route string `json:"route,omitempty"`
	// ReferenceGrant is the version of ReferenceGrant.
	// +kubebuilder:validation:MaxLength=16
	ReferenceGrant string `json:"referenceGrant,omitempty"`
	// BackendTLSPolicy is the version of BackendTLSPolicy.
	// +kubebuilder:validation:MaxLength=16
	BackendTLSPolicy string `json:"backendTLSPolicy,omitempty"`
	// CheckedAt is when the schemas were read.
	CheckedAt metav1.Time `json:"checkedAt"`
}

// ParentStatus is one parent's verdict on the route.
type ParentStatus struct {
	// Name of the parent.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the parent.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// SectionName of the parent the route attached to.
	// +kubebuilder:validation:MaxLength=253
	SectionName string `json:"sectionName,omitempty"`
	// Port of the parent the route attached to.
	Port int32 `json:"port,omitempty"`
	// Accepted is true once the parent accepted the route.
	Accepted bool `json:"accepted"`
	// ResolvedRefs is true once the parent resolved the route's
	// references.
	ResolvedRefs bool `json:"resolvedRefs"`
	// Reason is the reason of the parent's first condition that is not
	// True, so the user sees why without reading the route. At most 256
	// characters.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
}
