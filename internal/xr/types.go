// Package xr holds the CanaryRoute composite resource as the function reads
// it: typed spec and status, parsed from the XR's unstructured content and
// validated up front, so that every later step works on values it can trust.
//
// The function never depends on the XR's group or kind: a platform team may
// publish CanaryRoute under its own API group.
//
// The spec and status types of api.go are also the XRDs' schema: a field of
// theirs is optional unless its markers say +required.
//
// +kubebuilder:validation:Optional
package xr

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// RouteKind is the kind of the composed route.
type RouteKind string

// Route kinds that can carry a canary.
const (
	KindHTTPRoute RouteKind = "HTTPRoute"
	KindGRPCRoute RouteKind = "GRPCRoute"
	KindTLSRoute  RouteKind = "TLSRoute"
	KindTCPRoute  RouteKind = "TCPRoute"
	KindUDPRoute  RouteKind = "UDPRoute"
)

// RouteKinds lists every supported route kind, in the order the docs list
// them.
var RouteKinds = []RouteKind{KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindTCPRoute, KindUDPRoute}

// Streams reports whether the kind routes connections or datagrams, not
// requests: one rule with the weighted backends and nothing else.
func (k RouteKind) Streams() bool {
	return k == KindTLSRoute || k == KindTCPRoute || k == KindUDPRoute
}

// GrantMode says whether the function composes ReferenceGrants.
// +kubebuilder:validation:Enum=Compose;Skip
type GrantMode string

// Grant modes.
const (
	GrantsCompose GrantMode = "Compose"
	GrantsSkip    GrantMode = "Skip"
)

// Role is the part a backend plays in the rollout.
type Role string

// Backend roles. A backend is always identified by its role, never by a
// naming convention, so any backend kind can play either part.
const (
	RolePrimary Role = "primary"
	RoleCanary  Role = "canary"
	// RoleMirror is the target of a RequestMirror filter that the user
	// wrote: it gets copies of requests, and passes the same policy.
	RoleMirror Role = "mirror"
	// RoleRule is a backend of a rule of its own, which the rollout does
	// not weigh: it passes the same policy.
	RoleRule Role = "rule"
)

// Scope is how the XR relates to namespaces, which decides the route's
// namespace.
type Scope string

// XR scopes.
const (
	// ScopeNamespaced is a Crossplane v2 namespaced XR: it composes only into
	// its own namespace.
	ScopeNamespaced Scope = "Namespaced"
	// ScopeClaim is a legacy cluster-scoped XR bound to a claim: it routes in
	// the claim's namespace.
	ScopeClaim Scope = "Claim"
	// ScopeCluster is a cluster-scoped XR without a claim: spec.namespace
	// names the route's namespace.
	ScopeCluster Scope = "Cluster"
)

// CanaryRoute is a parsed, validated CanaryRoute XR.
type CanaryRoute struct {
	// Name of the XR.
	Name string
	// Scope of the XR.
	Scope Scope
	// RouteNamespace is where the route and proxy Services live.
	RouteNamespace string
	// RouteName is the name of the composed route, and the prefix of the
	// names of every object the CanaryRoute composes (of its routes',
	// with spec.routes).
	RouteName string
	// Entry is the name of the entry of spec.routes that this view of the
	// CanaryRoute is about (see Views); "" for the CanaryRoute itself.
	Entry string
	// Claim is spec.claimRef of a claimed XR (ScopeClaim): the claim it
	// says it is bound to. A claim reference is proven, not believed: the
	// caller sets ClaimProven once it found that claim referencing this XR.
	Claim       *ClaimRef
	ClaimProven bool

	Spec   Spec
	Status Status

	specID SpecID
}

// A SpecID names the spec a CanaryRoute was parsed from, as the function
// parsed it (with its Input's default parents): CanaryRoutes with the same
// SpecID have the same Spec, whatever their names and status, until a run
// changes its own copy (a release's Service selectors). It lets what is
// derived from a spec alone be kept across runs. Its zero value names no
// spec: one parsed for a single run, or a CanaryRoute built by hand. It
// keeps the parsed spec alive while it is held.
type SpecID struct{ parsed *parsedSpec }

// SpecID names the spec the CanaryRoute was parsed from.
func (cr *CanaryRoute) SpecID() SpecID { return cr.specID }

// IsZero reports whether the SpecID names no spec.
func (id SpecID) IsZero() bool { return id.parsed == nil }

// Bytes is an estimate of the parsed spec's bytes in memory.
func (id SpecID) Bytes() uint64 {
	if id.parsed == nil {
		return 0
	}
	return id.parsed.bytes
}

// ClaimRef is the claim a cluster-scoped XR says it is bound to.
type ClaimRef struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
}

// Spec is the CanaryRoute's spec.
type Spec struct {
	Namespace  string
	RouteName  string
	Kind       RouteKind
	ParentRefs []gwv1.ParentReference
	Hostnames  []gwv1.Hostname
	// Port is the default port of proxy Services and of backends that need
	// one; 0 when unset.
	Port int32
	// RoutePort is the port an entry of spec.routes sets for its route (a
	// view's): it replaces a backendRef side's own port. 0 otherwise.
	RoutePort       int32
	Rules           []Rule
	Primary         Side
	Canary          Side
	Traffic         Traffic
	ReferenceGrants GrantMode
	// Release, when set, makes the sides revisions of one workload: they
	// are proxy Services of the release's selector, at the stable and the
	// canary's revisions.
	Release *Release
	// Entries are the routes of spec.routes; nil for the single-route
	// shorthand (see Views).
	Entries []Entry
}

// Rule is one routing rule. Only the fields of the route's kind are set.
type Rule struct {
	Name        *gwv1.SectionName
	HTTPMatches []gwv1.HTTPRouteMatch
	GRPCMatches []gwv1.GRPCRouteMatch
	HTTPFilters []gwv1.HTTPRouteFilter
	GRPCFilters []gwv1.GRPCRouteFilter
	Timeouts    *gwv1.HTTPRouteTimeouts
	Retry       *gwv1.HTTPRouteRetry
	// HTTPBackendRefs and GRPCBackendRefs are the backends of a rule of its
	// own: it is composed as written, and never weighted.
	HTTPBackendRefs []gwv1.HTTPBackendRef
	GRPCBackendRefs []gwv1.GRPCBackendRef
}

// Own reports whether the rule is one of its own, not the rollout's: it has
// backendRefs of its own, or redirects (a RequestRedirect takes no
// backend). It is composed as written and never weighted.
func (r Rule) Own() bool {
	if len(r.HTTPBackendRefs)+len(r.GRPCBackendRefs) > 0 {
		return true
	}
	for _, f := range r.HTTPFilters {
		if f.Type == gwv1.HTTPRouteFilterRequestRedirect {
			return true
		}
	}
	return false
}

// Side is the primary or the canary: where its traffic goes and the filters
// on its backendRef. Exactly one of Service, ExternalName and BackendRef is
// set.
type Side struct {
	Service      *ServiceSource
	ExternalName string
	BackendRef   *gwv1.BackendObjectReference
	HTTPFilters  []gwv1.HTTPRouteFilter
	GRPCFilters  []gwv1.GRPCRouteFilter
	// TLS, on a service or externalName side, composes a BackendTLSPolicy
	// for its proxy Service: how the gateway verifies the backend's
	// certificate.
	TLS *gwv1.BackendTLSPolicyValidation
	// Revision identifies the version behind the canary; only the canary
	// has one.
	Revision string
}

// ServiceSource composes a ClusterIP proxy Service that selects pods.
type ServiceSource struct {
	Selector    map[string]string
	TargetPort  *intstr.IntOrString
	AppProtocol string
}

// Traffic is the traffic policy: manual weight or progressive steps, and the
// shaping that applies while the rollout is active.
type Traffic struct {
	// Weight is the manual canary percent; nil in progressive mode.
	Weight      *percent.Percent
	Steps       []Step
	Paused      bool
	Abort       bool
	HTTPMatches []gwv1.HTTPRouteMatch
	GRPCMatches []gwv1.GRPCRouteMatch
	Mirror      *Mirror
	Affinity    *SessionAffinity
	Gates       []Gate
	// RequireAcceptedRoute holds a step until the gateway has accepted the
	// route with the step's weights. Default true.
	RequireAcceptedRoute bool
	// ProgressDeadline fails a rollout whose step is held for longer than
	// this past its pause; 0 means no deadline.
	ProgressDeadline time.Duration
	// Approval approves the approval steps of a revision up to a step.
	Approval *Approval
	// Promote moves a revision to its last step.
	Promote *Promote
	// Retry, when it is a value not yet recorded in status, restarts a
	// Failed or Aborted revision at step 0.
	Retry string
	// Analysis are the analysis templates that steps name, sorted by name.
	Analysis []AnalysisTemplate
	// Metrics judge the canary by its own traffic, in their steps.
	Metrics []Metric
	// Bake keeps measuring the metrics this long after the last step has
	// passed, before the rollout Succeeds; 0 for none.
	Bake time.Duration
	// RollbackWindow is how many of a release's last stable revisions roll
	// back without steps.
	RollbackWindow int32
	// Preview, when set, composes the preview route while a rollout is
	// active.
	Preview *Preview
	// Hooks call the Input's webhooks at the rollout's moments.
	Hooks []Hook
}

// DefaultHookInterval is how soon a hook that did not answer 2xx is asked
// again when the spec does not say.
const DefaultHookInterval = time.Minute

// A Hook is one of traffic.hooks: a webhook of the Input, called at one
// kind of moment of the rollout.
type Hook struct {
	Name    string
	Webhook string
	Type    hooks.Type
	// Metadata is sent as written.
	Metadata map[string]string
	// Interval is how soon a call that did not answer 2xx is made again.
	Interval time.Duration
	// FailureLimit is how many failed calls of a pre-rollout or rollout
	// hook for one transition fail the rollout.
	FailureLimit int32
}

// Preview is traffic.preview: a route of its own hostnames that sends every
// request to the canary while a rollout is active.
type Preview struct {
	Hostnames []gwv1.Hostname
}

// NoData is what a measurement without a number counts as.
type NoData string

// What a measurement without a number counts as.
const (
	NoDataHold NoData = "Hold"
	NoDataPass NoData = "Pass"
	NoDataFail NoData = "Fail"
)

// DefaultMetricInterval is a metric's interval when the spec gives none.
const DefaultMetricInterval = time.Minute

// A Metric is a query whose answer judges the canary.
type Metric struct {
	Name     string
	Provider string
	// Query is the PromQL as written, placeholders included.
	Query       string
	Interval    time.Duration
	SuccessWhen string
	// CompareToPrimary measures the query for the primary too, as the
	// baseline.
	CompareToPrimary bool
	FailureLimit     int32
	NoData           NoData
	// Steps are the indexes of the steps the metric counts in; nil counts
	// it in every step with a weight above 0 (below 100 with
	// CompareToPrimary).
	Steps  []int32
	DryRun bool
}

// CountsIn reports whether the metric counts in step i of steps. A metric
// compared with the primary never counts where the canary gets all the
// traffic: the primary gets none, so there is no baseline (Prometheus
// answers NaN, 0 of 0), and the step would hold until its deadline.
func (m Metric) CountsIn(steps []Step, i int32) bool {
	if i < 0 || int(i) >= len(steps) {
		return false
	}
	if m.CompareToPrimary && steps[i].Weight.Equal(percent.Max) {
		return false
	}
	if m.Steps == nil {
		return !steps[i].Weight.IsZero()
	}
	return slices.Contains(m.Steps, i)
}

// Approval approves every approval step of Revision up to Step.
type Approval struct {
	Revision string
	Step     int32
}

// Promote moves Revision to its last step.
type Promote struct {
	Revision string
}

// AnalysisTemplate is an object composed while a step that names it is
// current, and judged like an expression gate.
type AnalysisTemplate struct {
	Name string
	// Template is the object, as written: the function names it, places it
	// in the route's namespace and labels it.
	Template    map[string]any
	SuccessWhen string
	FailWhen    string
}

// Template returns the analysis template of a name.
func (t Traffic) Template(name string) (AnalysisTemplate, bool) {
	for _, a := range t.Analysis {
		if a.Name == name {
			return a, true
		}
	}
	return AnalysisTemplate{}, false
}

// RouteTotal is what the route's weights add up to when it carries the
// canary at weight: 100 (percent.WholeTotal) while every weight of the spec
// (traffic.weight, each step's) and the weight itself are whole, so a spec
// of whole weights composes the route it always did; 10,000
// (percent.FineTotal) otherwise, where 0.1% is 10. The weight counts too: a
// paused rollout holds the weight the previous run composed, which an edit
// of the spec may have left with decimals.
func (t Traffic) RouteTotal(weight percent.Percent) int32 {
	if !weight.Whole() || (t.Weight != nil && !t.Weight.Whole()) {
		return percent.FineTotal
	}
	for _, s := range t.Steps {
		if !s.Weight.Whole() {
			return percent.FineTotal
		}
	}
	return percent.WholeTotal
}

// Progressive reports whether the rollout runs through steps.
func (t Traffic) Progressive() bool { return len(t.Steps) > 0 }

// Step is one progressive step.
type Step struct {
	Weight percent.Percent
	Pause  time.Duration
	// Analysis names the analysis templates that must pass before the step
	// advances.
	Analysis []string
	// Approval holds the step, after its pause, gates and analysis, until
	// traffic.approval approves it.
	Approval bool
	// Matches, when set, replace traffic.matches while the step is current.
	Matches *Matches
	// Mirror, when set, replaces traffic.mirror while the step is current.
	Mirror *Mirror
}

// Matches are A/B or mirror matches, of the route's kind.
type Matches struct {
	HTTP []gwv1.HTTPRouteMatch
	GRPC []gwv1.GRPCRouteMatch
}

// Len is how many matches there are.
func (m *Matches) Len() int {
	if m == nil {
		return 0
	}
	return len(m.HTTP) + len(m.GRPC)
}

// Mirror copies a share of requests to the canary: of every request of the
// weighted rules, or, with matches, of the requests that match.
type Mirror struct {
	Percent int32
	Matches *Matches
}

// SessionAffinity keeps a client on the canary once it got there, and with
// PrimaryCookieName, on the primary too.
type SessionAffinity struct {
	CookieName string
	// PrimaryCookieName, when set, is the primary's own cookie: its users
	// stay on the primary as the weight grows.
	PrimaryCookieName string
	MaxAge            time.Duration
	Attributes        CookieAttributes
	Mode              AffinityMode
}

// CookieAttributes are the attributes written into the session cookies.
type CookieAttributes struct {
	// Path defaults to "/".
	Path     string
	Domain   string
	Secure   bool
	SameSite string
}

// AffinityMode is how session affinity is composed.
// +kubebuilder:validation:Enum=Cookie;SessionPersistence
type AffinityMode string

// Affinity modes.
const (
	// AffinityCookie sets the cookies with header filters and keeps their
	// clients on their side with companion rules.
	AffinityCookie AffinityMode = "Cookie"
	// AffinitySessionPersistence writes the Gateway API's own
	// sessionPersistence on the weighted rules: the gateway keeps each
	// session on the backend it chose.
	AffinitySessionPersistence AffinityMode = "SessionPersistence"
)

// Gate is a check on an object in the route namespace: a condition that
// must be True, or an expression.
type Gate struct {
	APIVersion    string
	Kind          string
	Name          string
	ConditionType string
	// SuccessWhen and FailWhen are CEL expressions over the object, in
	// place of ConditionType.
	SuccessWhen string
	FailWhen    string
	FailAfter   time.Duration
}

// GroupVersionKind of the gate's object; Parse validated its apiVersion.
func (g Gate) GroupVersionKind() schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(g.APIVersion)
	return gv.WithKind(g.Kind)
}
