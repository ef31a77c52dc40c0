// Package v1beta1 contains the input type for function-canary-route: the
// platform team's policy, written once in the Composition, that bounds what
// every CanaryRoute composed by that Composition may reference.
// +kubebuilder:object:generate=true
// +groupName=canaryroute.fn.crossplane.io
// +versionName=v1beta1
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ReferenceGrantVersion is the gateway.networking.k8s.io version of the
// ReferenceGrants that the function composes.
// +kubebuilder:validation:Enum=v1beta1;v1
type ReferenceGrantVersion string

// Supported ReferenceGrant versions.
const (
	// ReferenceGrantV1Beta1 is served by every Gateway API release since
	// v0.6: it works on the widest range of clusters.
	ReferenceGrantV1Beta1 ReferenceGrantVersion = "v1beta1"
	// ReferenceGrantV1 is served by Gateway API v1.5 and later.
	ReferenceGrantV1 ReferenceGrantVersion = "v1"
)

// RouteVersion is the gateway.networking.k8s.io version of a composed
// GRPCRoute, TLSRoute, TCPRoute or UDPRoute.
// +kubebuilder:validation:Enum=v1;v1alpha2
type RouteVersion string

// Supported route versions.
const (
	// RouteV1 is served by Gateway API v1.1 and later for GRPCRoute, v1.5
	// and later for TLSRoute, and v1.6 and later for TCPRoute and UDPRoute
	// (standard channel).
	RouteV1 RouteVersion = "v1"
	// RouteV1Alpha2 is the only version that older Gateway API releases
	// serve for TLSRoute, TCPRoute and UDPRoute (experimental channel), and
	// the only GRPCRoute some implementations serve (Linkerd).
	RouteV1Alpha2 RouteVersion = "v1alpha2"
)

// Input is the platform team's policy for function-canary-route. Every field
// is optional; the defaults deny what could open a path into another
// namespace.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=crossplane
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// AllowedBackendNamespaces lists the namespaces, other than the route's
	// own, that a CanaryRoute may send traffic to. The function composes a
	// ReferenceGrant only into these namespaces. "*" allows every namespace.
	//
	// Default: none. A backend in any other namespace is refused: a refused
	// canary is held at weight 0, a refused primary stays in the route
	// without a grant (so the gateway refuses it), and the XR reports
	// ReferenceGrantsReady False with reason NotAllowedByPolicy; a
	// RequestMirror filter to a backend in any other namespace is refused
	// with a Fatal result naming the filter. Removing a
	// namespace from this list deletes the grants the function had composed
	// there.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	AllowedBackendNamespaces []string `json:"allowedBackendNamespaces,omitempty"`

	// AllowedRouteNamespaces lists the namespaces in which a cluster-scoped
	// CanaryRoute (one without a claim) may put its route and proxy
	// Services. "*" allows every namespace.
	//
	// Default: none. Anyone who may create a cluster-scoped CanaryRoute
	// could otherwise attach a route to a shared Gateway in any namespace
	// and expose any pods there. A namespaced CanaryRoute, or a claim,
	// always routes in its own namespace, which this list does not limit.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	AllowedRouteNamespaces []string `json:"allowedRouteNamespaces,omitempty"`

	// AllowedBackendKinds lists the group/kind pairs that a CanaryRoute may
	// reference, through a `backendRef` side or the backendRef of a
	// RequestMirror filter, in any namespace.
	//
	// Default: every kind (Service, ServiceImport, Istio Hostname,
	// InferencePool, Envoy Gateway Backend and any other).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AllowedBackendKinds []BackendKind `json:"allowedBackendKinds,omitempty"`

	// AllowedGateKinds lists the kinds of objects that `traffic.gates` may
	// read. Crossplane reads gate objects with its own, wide, rights, so the
	// list keeps a CanaryRoute from reading arbitrary kinds. Gates are only
	// read from the route's namespace.
	//
	// Default (the field absent): apps/v1 Deployment. An empty list allows
	// none: no CanaryRoute may have gates.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AllowedGateKinds []GateKind `json:"allowedGateKinds,omitempty"`

	// AllowedAnalysisKinds are the kinds of objects that the analysis
	// templates of a CanaryRoute (traffic.analysis) may compose, in the
	// route's namespace. An analysis of another kind is refused. Crossplane
	// composes them, so its ClusterRole must cover them too.
	//
	// A Job runs a Pod of the CanaryRoute author's choosing in the route's
	// namespace, with Crossplane's rights to create it: that namespace's Pod
	// Security admission is what bounds it.
	//
	// Default (the field absent): batch/v1 Job. An empty list allows none:
	// no CanaryRoute may have analysis templates.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	AllowedAnalysisKinds []GateKind `json:"allowedAnalysisKinds,omitempty"`

	// AllowedWorkloadKinds are the kinds of objects that a release's
	// workload (spec.release.workload) may name: the function reads them,
	// in the route's namespace only, for their ready replicas. Crossplane
	// reads them with its own, wide, rights.
	//
	// Default (the field absent): apps/v1 Deployment. An empty list allows
	// none: no release may name a workload.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	AllowedWorkloadKinds []GateKind `json:"allowedWorkloadKinds,omitempty"`

	// AllowExternalNames allows `externalName` sides, which compose an
	// ExternalName Service. Many gateways refuse ExternalName Services
	// (CVE-2021-25740), and a cluster-local name (*.svc, *.cluster.local or
	// an IP address) is always refused, since it would reach another
	// namespace without a ReferenceGrant.
	//
	// Default: false.
	// +optional
	AllowExternalNames bool `json:"allowExternalNames,omitempty"`

	// DeniedExternalNames are DNS suffixes that no externalName side and no
	// Istio Hostname backend may name, beside the names always refused
	// (cluster-local names, the localhost family, cloud metadata and
	// Docker host aliases). An entry such as corp.internal refuses
	// corp.internal and every name below it; a leading "*." or "." is
	// allowed and means the same.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	DeniedExternalNames []string `json:"deniedExternalNames,omitempty"`

	// DefaultParentRefs are the parents (usually the platform's shared
	// Gateway) of every route whose CanaryRoute names none.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	DefaultParentRefs []gwv1.ParentReference `json:"defaultParentRefs,omitempty"`

	// ReferenceGrantVersion is the version of the composed ReferenceGrants.
	//
	// Default: chosen from what the cluster serves, where Crossplane hands
	// the function the CRD schemas (v2.2 and later): v1 when served, else
	// v1beta1. Without schemas (older Crossplane, or crossplane render
	// without --required-schemas): v1beta1, served by every Gateway API
	// release since v0.6. Set it to override the choice.
	// +optional
	ReferenceGrantVersion ReferenceGrantVersion `json:"referenceGrantVersion,omitempty"`

	// GRPCRouteVersion is the version of a composed GRPCRoute.
	//
	// Default: v1 when served, else v1alpha2 (where Crossplane hands the
	// function the CRD schemas); v1 without schemas. Set it to override
	// the choice: Linkerd serves GRPCRoute v1alpha2 only.
	// +optional
	GRPCRouteVersion RouteVersion `json:"grpcRouteVersion,omitempty"`

	// TLSRouteVersion is the version of a composed TLSRoute. Gateway API
	// releases before v1.5 serve TLSRoute only as v1alpha2 (experimental
	// channel).
	//
	// Default: v1 when served, else v1alpha2 (where Crossplane hands the
	// function the CRD schemas); v1 without schemas. Set it to override
	// the choice.
	// +optional
	TLSRouteVersion RouteVersion `json:"tlsRouteVersion,omitempty"`

	// TCPRouteVersion is the version of a composed TCPRoute. Gateway API
	// releases before v1.6 serve TCPRoute only as v1alpha2 (experimental
	// channel).
	//
	// Default: v1 when served, else v1alpha2 (where Crossplane hands the
	// function the CRD schemas); v1 without schemas. Set it to override
	// the choice.
	// +optional
	TCPRouteVersion RouteVersion `json:"tcpRouteVersion,omitempty"`

	// UDPRouteVersion is the version of a composed UDPRoute. Gateway API
	// releases before v1.6 serve UDPRoute only as v1alpha2 (experimental
	// channel).
	//
	// Default: v1 when served, else v1alpha2 (where Crossplane hands the
	// function the CRD schemas); v1 without schemas. Set it to override
	// the choice.
	// +optional
	UDPRouteVersion RouteVersion `json:"udpRouteVersion,omitempty"`

	// MetricProviders are where the metrics of CanaryRoutes
	// (traffic.metrics) are queried: a CanaryRoute names a provider, never
	// an address or a credential, so the platform team decides where
	// queries go and with which rights.
	//
	// Default: none. A metric naming a provider not listed is refused.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	MetricProviders []MetricProvider `json:"metricProviders,omitempty"`

	// Webhooks are the addresses that the hooks of CanaryRoutes
	// (traffic.hooks) call: a hook names a webhook, never an address, so
	// the platform team decides what the function calls. They are the
	// only addresses, beside the metric providers', that the function
	// calls.
	//
	// Default: none. A hook naming a webhook not listed is refused.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Webhooks []Webhook `json:"webhooks,omitempty"`
}

// WebhookFormat is the body a webhook receives.
// +kubebuilder:validation:Enum=generic;slack;msteams;discord
type WebhookFormat string

// Webhook formats.
const (
	// WebhookGeneric is Flagger's JSON payload (name, namespace, phase,
	// metadata) with the revision, step, canaryWeight, reason, message
	// and timestamp added: what Flagger's loadtester and a gate service
	// read.
	WebhookGeneric WebhookFormat = "generic"
	// WebhookSlack is a Slack incoming webhook's message.
	WebhookSlack WebhookFormat = "slack"
	// WebhookMSTeams is a Microsoft Teams workflow webhook's message (an
	// Adaptive Card).
	WebhookMSTeams WebhookFormat = "msteams"
	// WebhookDiscord is a Discord webhook's message.
	WebhookDiscord WebhookFormat = "discord"
)

// Webhook is an address that hooks call: exactly one of url and urlFrom.
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.urlFrom)",message="a webhook has exactly one of url and urlFrom"
type Webhook struct {
	// Name of the webhook, as hooks name it: a DNS-1123 label.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// URL is the address called, http or https, such as
	// http://flagger-loadtester.test/. It holds no credentials: a URL
	// that is itself a secret (a Slack, Teams or Discord webhook's) goes
	// in urlFrom.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`

	// URLFrom reads the address from the pipeline step's credentials: a
	// chat service's incoming webhook URL is its credential. The function
	// never writes it into a status, an event or a log.
	// +optional
	URLFrom *WebhookURLSource `json:"urlFrom,omitempty"`

	// Timeout bounds each call, at most 10s. Default: 5s.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Timeout string `json:"timeout,omitempty"`

	// Format is the body the webhook receives: generic (default), or the
	// one-line message of a slack, msteams or discord incoming webhook.
	// +optional
	Format WebhookFormat `json:"format,omitempty"`
}

// WebhookURLSource names a key of the pipeline step's credentials.
type WebhookURLSource struct {
	// Credentials names the pipeline step's credentials (Crossplane hands
	// them to the function).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Credentials string `json:"credentials"`

	// Key is the key of the credentials that holds the URL.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// MetricProvider is a place where metrics are queried: exactly one of
// prometheus, datadog and web.
// +kubebuilder:validation:XValidation:rule="[has(self.prometheus), has(self.datadog), has(self.web)].filter(x, x).size() == 1",message="a provider is exactly one of prometheus, datadog and web"
type MetricProvider struct {
	// Name of the provider, as metrics name it: a DNS-1123 label.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Prometheus queries Prometheus's HTTP API (or one that speaks it:
	// Thanos, Mimir, VictoriaMetrics, Cortex). A metric's query is PromQL.
	// +optional
	Prometheus *PrometheusProvider `json:"prometheus,omitempty"`

	// Datadog queries Datadog's metrics query API (GET
	// https://api.<site>/api/v1/query) over the metric's interval; the
	// value is the last point of the one series the query gives. A
	// metric's query is Datadog's, such as
	// sum:trace.http.request.errors{service:{{service}}}.as_count().
	// +optional
	Datadog *DatadogProvider `json:"datadog,omitempty"`

	// Web queries an HTTP endpoint that answers JSON: a GET of its URL,
	// its placeholders filled, and a jsonPath that selects one number. A
	// metric's query fills the URL's {{query}}.
	// +optional
	Web *WebProvider `json:"web,omitempty"`
}

// DatadogProvider is a Datadog site's metrics query API.
type DatadogProvider struct {
	// Site is the Datadog site, such as datadoghq.eu or us5.datadoghq.com:
	// queries go to https://api.<site>. Default: datadoghq.com.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Site string `json:"site,omitempty"`

	// Credentials names the pipeline step's credentials (Crossplane hands
	// them to the function): a Secret with the keys apiKey and appKey,
	// sent as the DD-API-KEY and DD-APPLICATION-KEY headers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Credentials string `json:"credentials"`
}

// WebProvider is an HTTP endpoint that answers JSON.
type WebProvider struct {
	// URL is the endpoint, http or https, such as
	// http://slo.monitoring/api/v1/ratio?service={{service}}&window={{interval}}.
	// {{namespace}}, {{route}}, {{service}}, {{revision}}, {{interval}}
	// and {{query}} (the metric's query, its placeholders expanded) are
	// filled for the side measured, each escaped for where it stands: a
	// path segment or a query value. No placeholder may stand in the
	// scheme or the host, and the URL holds no credentials and no
	// fragment. At most 2048 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// JSONPath selects the one number of the answer, in kubectl's syntax,
	// such as {.data.ratio}: a JSON number, or a string that holds one.
	// Anything else (nothing, several values, a list, an object) is no
	// data. At most 1024 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	JSONPath string `json:"jsonPath"`

	// Credentials names the pipeline step's credentials that authenticate
	// the queries, as a Prometheus provider's: the key token (a bearer
	// token), or username and password (basic auth), and optionally
	// ca.crt. Default: none.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Credentials string `json:"credentials,omitempty"`
}

// PrometheusProvider is a Prometheus HTTP API endpoint.
type PrometheusProvider struct {
	// Address is the endpoint's URL, http or https, such as
	// http://prometheus.monitoring.svc:9090 (the function appends
	// /api/v1/query).
	// +kubebuilder:validation:MaxLength=2048
	Address string `json:"address"`

	// Timeout bounds each query, at most 5s. Default: 2s.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Timeout string `json:"timeout,omitempty"`

	// Credentials names the pipeline step's credentials (Crossplane hands
	// them to the function) that authenticate the queries: a Secret with
	// the key token (a bearer token), or username and password (basic
	// auth), and optionally ca.crt (the CA of an https endpoint).
	// Default: none.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Credentials string `json:"credentials,omitempty"`
}

// BackendKind is a group/kind pair of a Gateway API backend.
type BackendKind struct {
	// Group of the backend. "" is the core group (Service).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// Kind of the backend, such as Service, ServiceImport, Hostname,
	// InferencePool or Backend.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// GateKind is an apiVersion/kind pair of objects that rollout gates may read.
type GateKind struct {
	// APIVersion of the gate objects, such as apps/v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the gate objects, such as Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}
