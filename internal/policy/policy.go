// Package policy holds the platform team's policy, read from the function's
// Input: which namespaces and kinds a CanaryRoute may reference, which gate
// objects it may read, and which API versions to compose.
package policy

import (
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/admission"
	"github.com/crossplane-contrib/function-canary-route/internal/bounds"
	"github.com/crossplane-contrib/function-canary-route/internal/decode"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
)

const (
	// errDecode is the context of an Input that does not decode.
	errDecode           = "cannot decode the Input"
	errTooManyFieldsFmt = "the Input has %d fields, more than an Input may have (%d)"
)

// AnyNamespace in allowedBackendNamespaces or allowedRouteNamespaces allows
// every namespace.
const AnyNamespace = "*"

// Policy is the validated, defaulted Input.
type Policy struct {
	backendNamespaces  namespaces
	routeNamespaces    namespaces
	kinds              map[schema.GroupKind]bool // nil: every kind
	gateKinds          map[schema.GroupVersionKind]bool
	analysisKinds      map[schema.GroupVersionKind]bool
	workloadKinds      map[schema.GroupVersionKind]bool
	deniedNames        []string
	AllowExternalNames bool
	DefaultParentRefs  []gwv1.ParentReference
	// GrantVersion and RouteVersions are the Input's version overrides;
	// empty (or absent) where the Input leaves the choice to the function.
	GrantVersion  v1beta1.ReferenceGrantVersion
	RouteVersions map[string]v1beta1.RouteVersion
	// MetricProviders are where metrics are queried, by name.
	MetricProviders map[string]MetricProvider
	// Webhooks are what hooks call, by name.
	Webhooks map[string]Webhook
}

// A MetricProvider is where metrics are queried (Prometheus's HTTP API,
// Datadog's, a web endpoint): the query client's provider (its name, kind,
// address and timeout), whose Auth a run sets from the pipeline step's
// credentials it names.
type MetricProvider struct {
	promql.Provider
	// Credentials names the pipeline step's credentials; "" for none.
	Credentials string
}

// DefaultGateKind is the gate kind allowed when the Input names none.
var DefaultGateKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// DefaultWorkloadKind is the workload kind allowed when the Input names
// none.
var DefaultWorkloadKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// DefaultAnalysisKind is the analysis kind allowed when the Input names
// none.
var DefaultAnalysisKind = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// inputLimits are the Input's sizes where they are not package bounds'
// defaults (64 items, 4096 characters).
var inputLimits = bounds.Limits{
	"defaultParentRefs": 32, "allowedAnalysisKinds": 16, "allowedWorkloadKinds": 16,
	"metricProviders": 8, "metricProviders[*].name": 63,
	"metricProviders[*].prometheus.address": 2048, "metricProviders[*].prometheus.timeout": 32, "metricProviders[*].prometheus.credentials": 253,
	"metricProviders[*].datadog.site": 253, "metricProviders[*].datadog.credentials": 253,
	"metricProviders[*].web.url": promql.MaxURLLength, "metricProviders[*].web.jsonPath": promql.MaxJSONPathLength, "metricProviders[*].web.credentials": 253,
	"webhooks": 16, "webhooks[*].name": 63, "webhooks[*].url": 2048, "webhooks[*].timeout": 32, "webhooks[*].format": 16,
	"webhooks[*].urlFrom.credentials": 253, "webhooks[*].urlFrom.key": 253,
}

// Parse decodes the Input from the function request, strictly (an unknown
// field is an error naming it, so a typo never silently keeps a default),
// and returns its policy. The decoding's messages are deterministic, so the
// same bad Input always gives the same Fatal result.
func Parse(input map[string]any) (*Policy, error) {
	key, bytes, cacheable := memo.Of(input)
	if cacheable {
		if p, ok := parsed.Get(key); ok {
			return p.policy, p.err
		}
	}
	pol, err := parse(input)
	if cacheable {
		parsed.Add(key, parsedInput{policy: pol, err: err}, 4*bytes)
	}
	return pol, err
}

// parsedInput is what an Input parses to: shared by every run that reads
// the same Input, and never modified.
type parsedInput struct {
	policy *Policy
	err    error
}

// parsed keeps the Inputs parsed last: a Composition's Input is the same on
// every run of every CanaryRoute it composes.
var parsed = memo.New[memo.Key, parsedInput](64, 16<<20)

func parse(input map[string]any) (*Policy, error) {
	// Nothing oversized reaches the decoder: see package bounds. The Input
	// has a dozen fields: thousands of keys are refused by their number,
	// before anything sorts or decodes them.
	if len(input) > bounds.DefaultItems {
		return nil, errors.Errorf(errTooManyFieldsFmt, len(input), bounds.DefaultItems)
	}
	errs := make(field.ErrorList, 0, len(input))
	for _, k := range slices.Sorted(maps.Keys(input)) {
		errs = append(errs, bounds.Check(field.NewPath(k), input[k], inputLimits)...)
	}
	if len(errs) > 0 {
		return nil, fielderr.Summarize(errs)
	}
	if errs := typeMeta(input); len(errs) > 0 {
		return nil, fielderr.Summarize(errs)
	}
	in := &v1beta1.Input{}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, errors.Wrap(err, errDecode)
	}
	// Strictly, and bounded: every unknown field is named, at most 20 of
	// them in the message.
	if errs := decode.Strict(nil, b, in); len(errs) > 0 {
		return nil, errors.Wrap(fielderr.Summarize(errs), errDecode)
	}
	return New(in)
}

// The Input's type, as Compositions write it.
const (
	inputAPIVersion = "canaryroute.fn.crossplane.io/v1beta1"
	inputKind       = "Input"
)

// typeMeta checks the Input's apiVersion and kind when it has them: another
// function's input, pasted into this step by mistake, would otherwise read as
// an empty Input, every default, and deny or allow what nobody meant.
func typeMeta(input map[string]any) field.ErrorList {
	var errs field.ErrorList
	if v, ok := input["apiVersion"]; ok && v != inputAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), v, []string{inputAPIVersion}))
	}
	if v, ok := input["kind"]; ok && v != inputKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), v, []string{inputKind}))
	}
	return errs
}

// New validates the Input and returns its policy. Errors name the Input
// field, since the Input is an opaque object nested in a Composition that no
// API server validates for us.
func New(in *v1beta1.Input) (*Policy, error) {
	var errs field.ErrorList
	p := &Policy{
		AllowExternalNames: in.AllowExternalNames,
		DefaultParentRefs:  in.DefaultParentRefs,
		GrantVersion:       in.ReferenceGrantVersion,
		RouteVersions:      map[string]v1beta1.RouteVersion{},
	}

	var nsErrs field.ErrorList
	p.backendNamespaces, nsErrs = newNamespaces(field.NewPath("allowedBackendNamespaces"), in.AllowedBackendNamespaces)
	errs = append(errs, nsErrs...)
	p.routeNamespaces, nsErrs = newNamespaces(field.NewPath("allowedRouteNamespaces"), in.AllowedRouteNamespaces)
	errs = append(errs, nsErrs...)

	if len(in.AllowedBackendKinds) > 0 {
		p.kinds = map[schema.GroupKind]bool{}
	}
	kindPath := field.NewPath("allowedBackendKinds")
	for i, k := range in.AllowedBackendKinds {
		errs = append(errs, backendKind(kindPath.Index(i), k)...)
		p.kinds[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = true
	}

	var kindErrs field.ErrorList
	p.gateKinds, kindErrs = objectKinds(field.NewPath("allowedGateKinds"), in.AllowedGateKinds, DefaultGateKind)
	errs = append(errs, kindErrs...)
	p.analysisKinds, kindErrs = objectKinds(field.NewPath("allowedAnalysisKinds"), in.AllowedAnalysisKinds, DefaultAnalysisKind)
	errs = append(errs, kindErrs...)
	p.workloadKinds, kindErrs = objectKinds(field.NewPath("allowedWorkloadKinds"), in.AllowedWorkloadKinds, DefaultWorkloadKind)
	errs = append(errs, kindErrs...)

	for i, n := range in.DeniedExternalNames {
		suffix := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(strings.ToLower(n), "."), "*"), ".")
		for _, msg := range validation.IsDNS1123Subdomain(suffix) {
			errs = append(errs, field.Invalid(field.NewPath("deniedExternalNames").Index(i), n, msg))
		}
		p.deniedNames = append(p.deniedNames, suffix)
	}

	errs = append(errs, admission.ParentReferences(field.NewPath("defaultParentRefs"), in.DefaultParentRefs)...)

	if p.GrantVersion != "" && p.GrantVersion != v1beta1.ReferenceGrantV1Beta1 && p.GrantVersion != v1beta1.ReferenceGrantV1 {
		errs = append(errs, field.NotSupported(field.NewPath("referenceGrantVersion"), p.GrantVersion,
			[]v1beta1.ReferenceGrantVersion{v1beta1.ReferenceGrantV1Beta1, v1beta1.ReferenceGrantV1}))
	}
	for _, v := range []struct {
		field, kind string
		version     v1beta1.RouteVersion
	}{
		{"grpcRouteVersion", "GRPCRoute", in.GRPCRouteVersion},
		{"tlsRouteVersion", "TLSRoute", in.TLSRouteVersion},
		{"tcpRouteVersion", "TCPRoute", in.TCPRouteVersion},
		{"udpRouteVersion", "UDPRoute", in.UDPRouteVersion},
	} {
		switch v.version {
		case "":
		case v1beta1.RouteV1, v1beta1.RouteV1Alpha2:
			p.RouteVersions[v.kind] = v.version
		default:
			errs = append(errs, field.NotSupported(field.NewPath(v.field), v.version, []v1beta1.RouteVersion{v1beta1.RouteV1, v1beta1.RouteV1Alpha2}))
		}
	}

	var providerErrs field.ErrorList
	p.MetricProviders, providerErrs = metricProviders(field.NewPath("metricProviders"), in.MetricProviders)
	errs = append(errs, providerErrs...)
	var webhookErrs field.ErrorList
	p.Webhooks, webhookErrs = webhooks(field.NewPath("webhooks"), in.Webhooks)
	errs = append(errs, webhookErrs...)

	if len(errs) > 0 {
		return nil, fielderr.Summarize(errs)
	}
	return p, nil
}

// metricProviders reads the metric providers: each exactly one of a
// Prometheus endpoint, a Datadog site and a web endpoint, with
// credentials of the pipeline step's (never of the Input, which anyone
// who reads the Composition reads).
func metricProviders(path *field.Path, in []v1beta1.MetricProvider) (map[string]MetricProvider, field.ErrorList) {
	var errs field.ErrorList
	out := make(map[string]MetricProvider, len(in))
	for i, mp := range in {
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(mp.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), mp.Name, msg))
		}
		if _, dup := out[mp.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), mp.Name))
		}
		var given []string
		for _, k := range []struct {
			name string
			set  bool
		}{{"prometheus", mp.Prometheus != nil}, {"datadog", mp.Datadog != nil}, {"web", mp.Web != nil}} {
			if k.set {
				given = append(given, k.name)
			}
		}
		var provider MetricProvider
		var kindErrs field.ErrorList
		switch {
		case len(given) == 0:
			errs = append(errs, field.Required(p, "a provider says where its queries go: one of prometheus, datadog and web"))
			continue
		case len(given) > 1:
			// The second names the field to remove.
			errs = append(errs, field.Forbidden(p.Child(given[1]), "a provider is exactly one of prometheus, datadog and web: this one also has "+given[0]))
			continue
		case mp.Prometheus != nil:
			provider, kindErrs = prometheusProvider(p.Child("prometheus"), mp.Name, mp.Prometheus)
		case mp.Datadog != nil:
			provider, kindErrs = datadogProvider(p.Child("datadog"), mp.Name, mp.Datadog)
		default:
			provider, kindErrs = webProvider(p.Child("web"), mp.Name, mp.Web)
		}
		errs = append(errs, kindErrs...)
		out[mp.Name] = provider
	}
	return out, errs
}

// prometheusProvider reads a Prometheus endpoint: an http or https URL
// without credentials, a query or a fragment of its own, a timeout of at
// most 5s.
func prometheusProvider(pp *field.Path, name string, in *v1beta1.PrometheusProvider) (MetricProvider, field.ErrorList) {
	var errs field.ErrorList
	provider := MetricProvider{Provider: promql.Provider{Name: name, Kind: promql.KindPrometheus, Address: in.Address, Timeout: promql.DefaultTimeout}, Credentials: in.Credentials}
	u, err := url.Parse(in.Address)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(pp.Child("address"), fielderr.Cut(in.Address, fielderr.MaxValue), "must be a URL: "+fielderr.Cut(err.Error(), fielderr.MaxValue)))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, field.Invalid(pp.Child("address"), fielderr.Cut(in.Address, fielderr.MaxValue), "must be an http or https URL"))
	case u.Host == "":
		errs = append(errs, field.Invalid(pp.Child("address"), fielderr.Cut(in.Address, fielderr.MaxValue), "must name a host"))
	case u.User != nil:
		errs = append(errs, field.Forbidden(pp.Child("address"), "must not hold credentials: name the pipeline step's credentials in credentials instead"))
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, field.Invalid(pp.Child("address"), fielderr.Cut(in.Address, fielderr.MaxValue), "must have no query or fragment: the function appends /api/v1/query"))
	}
	if t := in.Timeout; t != "" {
		d, err := time.ParseDuration(t)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(pp.Child("timeout"), t, "must be a duration such as 2s"))
		case d <= 0 || d > promql.MaxTimeout:
			errs = append(errs, field.Invalid(pp.Child("timeout"), t, "must be above 0 and at most "+promql.MaxTimeout.String()))
		default:
			provider.Timeout = d
		}
	}
	errs = append(errs, credentials(pp.Child("credentials"), in.Credentials)...)
	return provider, errs
}

// DefaultDatadogSite is the Datadog site queried when the Input names none.
const DefaultDatadogSite = "datadoghq.com"

// datadogProvider reads a Datadog site: a DNS name (queries go to
// https://api.<site>), and the credentials that hold its keys, which every
// query needs. A Datadog query crosses the internet to a SaaS: it may take
// MaxTimeout.
func datadogProvider(pp *field.Path, name string, in *v1beta1.DatadogProvider) (MetricProvider, field.ErrorList) {
	var errs field.ErrorList
	site := strings.TrimSuffix(strings.ToLower(in.Site), ".")
	if site == "" {
		site = DefaultDatadogSite
	}
	for _, msg := range validation.IsDNS1123Subdomain(site) {
		errs = append(errs, field.Invalid(pp.Child("site"), fielderr.Cut(in.Site, fielderr.MaxValue), msg))
	}
	if in.Credentials == "" {
		errs = append(errs, field.Required(pp.Child("credentials"), "Datadog's API needs the keys apiKey and appKey: name the pipeline step's credentials that hold them"))
	}
	errs = append(errs, credentials(pp.Child("credentials"), in.Credentials)...)
	return MetricProvider{
		Provider:    promql.Provider{Name: name, Kind: promql.KindDatadog, Address: promql.DatadogAddress(site), Timeout: promql.MaxTimeout},
		Credentials: in.Credentials,
	}, errs
}

// webProvider reads a web endpoint: a URL whose placeholders stand in its
// path or query only (promql.CheckURL), and a jsonPath in kubectl's
// syntax that selects one value.
func webProvider(pp *field.Path, name string, in *v1beta1.WebProvider) (MetricProvider, field.ErrorList) {
	var errs field.ErrorList
	if in.URL == "" {
		errs = append(errs, field.Required(pp.Child("url"), "the endpoint queried"))
	} else if err := promql.CheckURL(in.URL); err != nil {
		errs = append(errs, field.Invalid(pp.Child("url"), fielderr.Cut(in.URL, fielderr.MaxValue), "must be an http or https URL with placeholders in its path or query only: "+err.Error()))
	}
	switch {
	case in.JSONPath == "":
		errs = append(errs, field.Required(pp.Child("jsonPath"), "the answer's number, such as {.data.ratio}"))
	case len(in.JSONPath) > promql.MaxJSONPathLength:
		errs = append(errs, field.TooLong(pp.Child("jsonPath"), "", promql.MaxJSONPathLength))
	default:
		if _, err := promql.ParseJSONPath(in.JSONPath); err != nil {
			errs = append(errs, field.Invalid(pp.Child("jsonPath"), fielderr.Cut(in.JSONPath, fielderr.MaxValue), err.Error()))
		}
	}
	errs = append(errs, credentials(pp.Child("credentials"), in.Credentials)...)
	return MetricProvider{
		Provider:    promql.Provider{Name: name, Kind: promql.KindWeb, Address: in.URL, JSONPath: in.JSONPath, Timeout: promql.DefaultTimeout},
		Credentials: in.Credentials,
	}, errs
}

// credentials checks the name of the pipeline step's credentials, when
// given: a DNS-1123 subdomain, as Crossplane names them.
func credentials(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	if name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(path, name, msg))
		}
	}
	return errs
}

// objectKinds reads a list of apiVersion/kind pairs, or the default when
// the list is empty.
func objectKinds(path *field.Path, kinds []v1beta1.GateKind, def schema.GroupVersionKind) (map[schema.GroupVersionKind]bool, field.ErrorList) {
	out := map[schema.GroupVersionKind]bool{}
	var errs field.ErrorList
	for i, k := range kinds {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		switch {
		case err != nil || gv.Version == "":
			errs = append(errs, field.Invalid(path.Index(i).Child("apiVersion"), k.APIVersion, "must be group/version, or version for the core group"))
		case k.Kind == "":
			errs = append(errs, field.Required(path.Index(i).Child("kind"), "an entry names its kind"))
		default:
			out[gv.WithKind(k.Kind)] = true
		}
	}
	// Absent, the default; written empty, none: a platform team may turn
	// gates or analysis off.
	if kinds == nil {
		out[def] = true
	}
	return out, errs
}

// kindPattern is Gateway API's Kind pattern; a group is a DNS-1123
// subdomain or empty (the core group).
var kindPattern = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`)

// backendKind checks an allowedBackendKinds entry. A malformed entry could
// never match a backend, so the platform team would refuse a kind it meant
// to allow without noticing.
func backendKind(path *field.Path, k v1beta1.BackendKind) field.ErrorList {
	var errs field.ErrorList
	switch {
	case k.Kind == "":
		errs = append(errs, field.Required(path.Child("kind"), "a backend kind names its kind"))
	case len(k.Kind) > 63 || !kindPattern.MatchString(k.Kind):
		errs = append(errs, field.Invalid(path.Child("kind"), k.Kind, "must be a kind such as Service: at most 63 letters, digits and '-', starting with a letter"))
	}
	if k.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(k.Group) {
			errs = append(errs, field.Invalid(path.Child("group"), k.Group, msg))
		}
	}
	return errs
}

// namespaces is a list of namespaces from the Input, "*" for any.
type namespaces struct {
	any   bool
	names map[string]bool
}

func newNamespaces(path *field.Path, list []string) (namespaces, field.ErrorList) {
	n := namespaces{names: make(map[string]bool, len(list))}
	var errs field.ErrorList
	for i, ns := range list {
		if ns == AnyNamespace {
			n.any = true
			continue
		}
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(path.Index(i), ns, msg))
		}
		n.names[ns] = true
	}
	return n, errs
}

func (n namespaces) allows(ns string) bool { return n.any || n.names[ns] }

// AllowsNamespace reports whether a backend in namespace ns may be granted to
// a route in another namespace.
func (p *Policy) AllowsNamespace(ns string) bool {
	return p.backendNamespaces.allows(ns)
}

// AllowsRouteNamespace reports whether a cluster-scoped CanaryRoute without a
// claim may put its route in namespace ns.
func (p *Policy) AllowsRouteNamespace(ns string) bool {
	return p.routeNamespaces.allows(ns)
}

// AllowsKind reports whether a backendRef side may reference the kind.
func (p *Policy) AllowsKind(gk schema.GroupKind) bool {
	return p.kinds == nil || p.kinds[gk]
}

// AllowsAnalysis reports whether an analysis template may compose objects
// of the kind.
func (p *Policy) AllowsAnalysis(gvk schema.GroupVersionKind) bool {
	return p.analysisKinds[gvk]
}

// DeniedExternalName returns the deniedExternalNames entry that refuses an
// external host name (the name itself or a name above it), or "".
func (p *Policy) DeniedExternalName(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range p.deniedNames {
		if host == d || strings.HasSuffix(host, "."+d) {
			return d
		}
	}
	return ""
}

// AllowsGate reports whether a rollout gate may read objects of the kind.
func (p *Policy) AllowsGate(gvk schema.GroupVersionKind) bool {
	return p.gateKinds[gvk]
}

// AllowsWorkload reports whether a release's workload may be of a kind.
func (p *Policy) AllowsWorkload(gvk schema.GroupVersionKind) bool {
	return p.workloadKinds[gvk]
}
