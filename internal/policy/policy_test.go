package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/bounds"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

// view is what a test observes of a Policy: its exported fields and its
// answers to a fixed set of questions.
type view struct {
	AllowExternalNames bool
	DefaultParentRefs  []gwv1.ParentReference
	// GrantVersion and RouteVersions are the Input's overrides: empty
	// where it leaves the choice to the function.
	GrantVersion  v1beta1.ReferenceGrantVersion
	RouteVersions map[string]v1beta1.RouteVersion
	// Namespaces allowed among monitoring, keda, kube-system.
	Namespaces []string
	// RouteNamespaces allowed among the same.
	RouteNamespaces []string
	// Kinds allowed among Service, ServiceImport, InferencePool, a
	// custom kind.
	Kinds []string
	// GateKinds allowed among apps/v1 Deployment, apps/v1 StatefulSet,
	// argoproj.io/v1alpha1 Rollout, apps/v1beta1 Deployment.
	GateKinds []string
	// DeniedNames are the external names denied among probeNames.
	DeniedNames []string
	// AnalysisKinds allowed among batch/v1 Job and argoproj.io/v1alpha1
	// AnalysisRun.
	AnalysisKinds []string
}

var (
	probeNamespaces = []string{"monitoring", "keda", "kube-system"}
	probeKinds      = []schema.GroupKind{
		{Kind: "Service"},
		{Group: "multicluster.x-k8s.io", Kind: "ServiceImport"},
		{Group: "inference.networking.k8s.io", Kind: "InferencePool"},
		{Group: "example.com", Kind: "Proxy"},
	}
	probeNames    = []string{"corp.internal", "api.corp.internal.", "xcorp.internal", "evil.example", "a.evil.example", "example.com"}
	probeAnalysis = []schema.GroupVersionKind{
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "AnalysisRun"},
	}
	probeGates = []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"},
		{Group: "apps", Version: "v1beta1", Kind: "Deployment"},
	}
)

func viewOf(p *Policy) *view {
	if p == nil {
		return nil
	}
	v := &view{
		AllowExternalNames: p.AllowExternalNames,
		DefaultParentRefs:  p.DefaultParentRefs,
		GrantVersion:       p.GrantVersion,
		RouteVersions:      p.RouteVersions,
		Namespaces:         []string{},
		RouteNamespaces:    []string{},
		Kinds:              []string{},
		GateKinds:          []string{},
		DeniedNames:        []string{},
		AnalysisKinds:      []string{},
	}
	for _, gvk := range probeAnalysis {
		if p.AllowsAnalysis(gvk) {
			v.AnalysisKinds = append(v.AnalysisKinds, gvk.String())
		}
	}
	for _, n := range probeNames {
		if p.DeniedExternalName(n) != "" {
			v.DeniedNames = append(v.DeniedNames, n)
		}
	}
	for _, ns := range probeNamespaces {
		if p.AllowsNamespace(ns) {
			v.Namespaces = append(v.Namespaces, ns)
		}
	}
	for _, ns := range probeNamespaces {
		if p.AllowsRouteNamespace(ns) {
			v.RouteNamespaces = append(v.RouteNamespaces, ns)
		}
	}
	for _, gk := range probeKinds {
		if p.AllowsKind(gk) {
			v.Kinds = append(v.Kinds, gk.String())
		}
	}
	for _, gvk := range probeGates {
		if p.AllowsGate(gvk) {
			v.GateKinds = append(v.GateKinds, gvk.String())
		}
	}
	return v
}

func TestNew(t *testing.T) {
	allKinds := []string{"Service", "ServiceImport.multicluster.x-k8s.io", "InferencePool.inference.networking.k8s.io", "Proxy.example.com"}
	deployment := []string{"apps/v1, Kind=Deployment"}
	defaults := func(v view) *view {
		if v.RouteVersions == nil {
			v.RouteVersions = map[string]v1beta1.RouteVersion{}
		}
		if v.Namespaces == nil {
			v.Namespaces = []string{}
		}
		if v.RouteNamespaces == nil {
			v.RouteNamespaces = []string{}
		}
		if v.Kinds == nil {
			v.Kinds = allKinds
		}
		if v.GateKinds == nil {
			v.GateKinds = deployment
		}
		if v.DeniedNames == nil {
			v.DeniedNames = []string{}
		}
		if v.AnalysisKinds == nil {
			v.AnalysisKinds = []string{"batch/v1, Kind=Job"}
		}
		return &v
	}
	type want struct {
		policy *view
		errs   []xrtest.FieldErr
	}
	cases := map[string]struct {
		reason string
		in     *v1beta1.Input
		want   want
	}{
		"Defaults": {
			reason: "An empty Input: no other namespace, no route namespace for cluster-scoped CanaryRoutes, every backend kind, apps/v1 Deployment gates, no ExternalNames, grants v1beta1, TLS/TCP routes v1.",
			in:     &v1beta1.Input{},
			want:   want{policy: defaults(view{})},
		},
		"Namespaces": {
			reason: "Listed namespaces are allowed, others are not.",
			in:     &v1beta1.Input{AllowedBackendNamespaces: []string{"monitoring", "keda"}},
			want:   want{policy: defaults(view{Namespaces: []string{"monitoring", "keda"}})},
		},
		"AnyNamespace": {
			reason: `"*" allows every namespace.`,
			in:     &v1beta1.Input{AllowedBackendNamespaces: []string{"*"}},
			want:   want{policy: defaults(view{Namespaces: probeNamespaces})},
		},
		"AnyNamespaceAmongOthers": {
			reason: `"*" among other namespaces still allows every namespace.`,
			in:     &v1beta1.Input{AllowedBackendNamespaces: []string{"keda", "*"}},
			want:   want{policy: defaults(view{Namespaces: probeNamespaces})},
		},
		"InvalidNamespace": {
			reason: "A namespace that is no DNS-1123 label is named by index.",
			in:     &v1beta1.Input{AllowedBackendNamespaces: []string{"keda", "Monitoring"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("allowedBackendNamespaces[1]", "RFC 1123 label")}},
		},
		"WildcardPattern": {
			reason: `Only "*" is a wildcard: "team-*" is an invalid namespace, not a pattern.`,
			in:     &v1beta1.Input{AllowedBackendNamespaces: []string{"team-*"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("allowedBackendNamespaces[0]", "RFC 1123 label")}},
		},
		"RouteNamespaces": {
			reason: "Listed route namespaces are allowed, others are not, and they open no backend namespace.",
			in:     &v1beta1.Input{AllowedRouteNamespaces: []string{"keda"}},
			want:   want{policy: defaults(view{RouteNamespaces: []string{"keda"}})},
		},
		"AnyRouteNamespace": {
			reason: `"*" allows every route namespace.`,
			in:     &v1beta1.Input{AllowedRouteNamespaces: []string{"*"}},
			want:   want{policy: defaults(view{RouteNamespaces: probeNamespaces})},
		},
		"InvalidRouteNamespace": {
			reason: "A route namespace that is no DNS-1123 label is named by index.",
			in:     &v1beta1.Input{AllowedRouteNamespaces: []string{"test", "Team_A"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("allowedRouteNamespaces[1]", "RFC 1123 label")}},
		},
		"Kinds": {
			reason: "Listed kinds are allowed, matched by group and kind; others are not.",
			in: &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{
				{Kind: "Service"}, {Group: "inference.networking.k8s.io", Kind: "InferencePool"},
			}},
			want: want{policy: defaults(view{Kinds: []string{"Service", "InferencePool.inference.networking.k8s.io"}})},
		},
		"KindWrongGroup": {
			reason: "A kind in another group is another kind: ServiceImport in the core group does not allow multicluster ServiceImports.",
			in:     &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "ServiceImport"}}},
			want:   want{policy: defaults(view{Kinds: []string{}})},
		},
		"KindRequired": {
			reason: "An allowedBackendKinds entry names its kind.",
			in:     &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "Service"}, {Group: "example.com"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("allowedBackendKinds[1].kind", "names its kind")}},
		},
		"KindInvalid": {
			reason: "A kind that no object could have (Gateway API's Kind pattern) is refused, not silently never matched.",
			in:     &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "Service "}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("allowedBackendKinds[0].kind", "a kind such as Service")}},
		},
		"GroupInvalid": {
			reason: "A group is a DNS-1123 subdomain or empty.",
			in:     &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Group: "Example.com", Kind: "Proxy"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("allowedBackendKinds[0].group", "RFC 1123 subdomain")}},
		},
		"GateKinds": {
			reason: "Listed gate kinds replace the default: Deployment is no longer allowed unless listed.",
			in: &v1beta1.Input{AllowedGateKinds: []v1beta1.GateKind{
				{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"}, {APIVersion: "apps/v1", Kind: "StatefulSet"},
			}},
			want: want{policy: defaults(view{GateKinds: []string{"apps/v1, Kind=StatefulSet", "argoproj.io/v1alpha1, Kind=Rollout"}})},
		},
		"GateKindVersionMatters": {
			reason: "A gate kind is matched with its version: apps/v1beta1 Deployment is not apps/v1 Deployment.",
			in:     &v1beta1.Input{AllowedGateKinds: []v1beta1.GateKind{{APIVersion: "apps/v1beta1", Kind: "Deployment"}}},
			want:   want{policy: defaults(view{GateKinds: []string{"apps/v1beta1, Kind=Deployment"}})},
		},
		"GateKindAPIVersion": {
			reason: "A gate kind's apiVersion is group/version.",
			in:     &v1beta1.Input{AllowedGateKinds: []v1beta1.GateKind{{APIVersion: "apps/v1/x", Kind: "Deployment"}, {Kind: "Pod"}}},
			want: want{errs: []xrtest.FieldErr{
				xrtest.Invalid("allowedGateKinds[0].apiVersion", "group/version"),
				xrtest.Invalid("allowedGateKinds[1].apiVersion", "group/version"),
			}},
		},
		"GateKindsNone": {
			reason: "An empty list allows no gate kind at all; only an absent one gets the default.",
			in:     &v1beta1.Input{AllowedGateKinds: []v1beta1.GateKind{}},
			want:   want{policy: defaults(view{GateKinds: []string{}})},
		},
		"GateKindRequired": {
			reason: "A gate kind names its kind.",
			in:     &v1beta1.Input{AllowedGateKinds: []v1beta1.GateKind{{APIVersion: "apps/v1"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("allowedGateKinds[0].kind", "names its kind")}},
		},
		"ExternalNames": {
			reason: "allowExternalNames is passed on.",
			in:     &v1beta1.Input{AllowExternalNames: true},
			want:   want{policy: defaults(view{AllowExternalNames: true})},
		},
		"DefaultParentRefs": {
			reason: "defaultParentRefs are passed on.",
			in:     &v1beta1.Input{DefaultParentRefs: []gwv1.ParentReference{{Name: "shared", Namespace: ptr.To[gwv1.Namespace]("gateways")}}},
			want:   want{policy: defaults(view{DefaultParentRefs: []gwv1.ParentReference{{Name: "shared", Namespace: ptr.To[gwv1.Namespace]("gateways")}}})},
		},
		"DefaultParentRefsInvalid": {
			reason: "defaultParentRefs follow Gateway API's rules; errors name the Input field.",
			in: &v1beta1.Input{DefaultParentRefs: []gwv1.ParentReference{
				{Name: "shared", Namespace: ptr.To[gwv1.Namespace]("Gateways")},
			}},
			want: want{errs: []xrtest.FieldErr{xrtest.Invalid("defaultParentRefs[0].namespace", "Gateways")}},
		},
		"DefaultParentRefsDuplicate": {
			reason: "The same parent twice needs distinct sectionNames.",
			in:     &v1beta1.Input{DefaultParentRefs: []gwv1.ParentReference{{Name: "shared"}, {Name: "shared"}}},
			want: want{errs: []xrtest.FieldErr{
				xrtest.Invalid("defaultParentRefs", "sectionName must be unique"),
				xrtest.Invalid("defaultParentRefs", "sectionName or port must be unique"),
			}},
		},
		"GrantVersionV1": {
			reason: "referenceGrantVersion v1 is kept.",
			in:     &v1beta1.Input{ReferenceGrantVersion: v1beta1.ReferenceGrantV1},
			want:   want{policy: defaults(view{GrantVersion: v1beta1.ReferenceGrantV1})},
		},
		"GrantVersionUnknown": {
			reason: "referenceGrantVersion is an enum.",
			in:     &v1beta1.Input{ReferenceGrantVersion: "v1alpha2"},
			want:   want{errs: []xrtest.FieldErr{xrtest.NotSupported("referenceGrantVersion", "v1alpha2")}},
		},
		"RouteVersionsUnset": {
			reason: "No version set leaves the choice to the function: no override at all, so the cluster's schemas (or the defaults) decide.",
			in:     &v1beta1.Input{},
			want:   want{policy: defaults(view{})},
		},
		"RouteVersionsV1Alpha2": {
			reason: "Route versions are overrides, by kind, kept as written.",
			in:     &v1beta1.Input{GRPCRouteVersion: v1beta1.RouteV1Alpha2, TLSRouteVersion: v1beta1.RouteV1Alpha2, TCPRouteVersion: v1beta1.RouteV1, UDPRouteVersion: v1beta1.RouteV1Alpha2},
			want: want{policy: defaults(view{RouteVersions: map[string]v1beta1.RouteVersion{
				"GRPCRoute": v1beta1.RouteV1Alpha2, "TLSRoute": v1beta1.RouteV1Alpha2, "TCPRoute": v1beta1.RouteV1, "UDPRoute": v1beta1.RouteV1Alpha2,
			}})},
		},
		"RouteVersionsUnknown": {
			reason: "Route versions are enums; each error names its field.",
			in:     &v1beta1.Input{GRPCRouteVersion: "v1beta1", TLSRouteVersion: "v1beta1", TCPRouteVersion: "v2", UDPRouteVersion: "v3"},
			want: want{errs: []xrtest.FieldErr{
				xrtest.NotSupported("grpcRouteVersion", "v1beta1"),
				xrtest.NotSupported("tlsRouteVersion", "v1beta1"),
				xrtest.NotSupported("tcpRouteVersion", "v2"),
				xrtest.NotSupported("udpRouteVersion", "v3"),
			}},
		},
		"AnalysisKinds": {
			reason: "Listed analysis kinds replace the default: a Job is no longer allowed unless listed.",
			in:     &v1beta1.Input{AllowedAnalysisKinds: []v1beta1.GateKind{{APIVersion: "argoproj.io/v1alpha1", Kind: "AnalysisRun"}}},
			want:   want{policy: defaults(view{AnalysisKinds: []string{"argoproj.io/v1alpha1, Kind=AnalysisRun"}})},
		},
		"AnalysisKindInvalid": {
			reason: "An analysis kind's apiVersion is group/version, and it names its kind.",
			in:     &v1beta1.Input{AllowedAnalysisKinds: []v1beta1.GateKind{{APIVersion: "/"}, {APIVersion: "batch/v1"}}},
			want: want{errs: []xrtest.FieldErr{
				xrtest.Invalid("allowedAnalysisKinds[0].apiVersion", "group/version"),
				xrtest.Required("allowedAnalysisKinds[1].kind", "names its kind"),
			}},
		},
		"DeniedExternalNames": {
			reason: "Each deniedExternalNames entry refuses its name and every name below it, trailing dot or not; a leading *. or . means the same; a name that merely ends with the same letters is another name.",
			in:     &v1beta1.Input{DeniedExternalNames: []string{"corp.internal", "*.evil.example"}},
			want:   want{policy: defaults(view{DeniedNames: []string{"corp.internal", "api.corp.internal.", "evil.example", "a.evil.example"}})},
		},
		"DeniedExternalNameInvalid": {
			reason: "A deniedExternalNames entry that is no DNS name could never match: refused, not silently useless.",
			in:     &v1beta1.Input{DeniedExternalNames: []string{"Not A Name"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("deniedExternalNames[0]", "RFC 1123 subdomain")}},
		},
		"EveryError": {
			reason: "Every invalid field is named at once.",
			in: &v1beta1.Input{
				AllowedBackendNamespaces: []string{"A"},
				AllowedBackendKinds:      []v1beta1.BackendKind{{}},
				AllowedGateKinds:         []v1beta1.GateKind{{APIVersion: "apps/v1"}},
				ReferenceGrantVersion:    "v2",
			},
			want: want{errs: []xrtest.FieldErr{
				xrtest.Invalid("allowedBackendNamespaces[0]", "RFC 1123 label"),
				xrtest.Required("allowedBackendKinds[0].kind", "names its kind"),
				xrtest.Required("allowedGateKinds[0].kind", "names its kind"),
				xrtest.NotSupported("referenceGrantVersion", "v2"),
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(tc.in)
			if diff := cmp.Diff(tc.want.policy, viewOf(p)); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := xrtest.Diff(tc.want.errs, xrtest.FieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nNew(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		reason string
		input  map[string]any
		want   string // the error; "" for none
	}{
		"Empty": {
			reason: "A Composition without input gets every default.",
			input:  nil,
		},
		"TypeMeta": {
			reason: "apiVersion, kind and metadata belong to the Input.",
			input:  map[string]any{"apiVersion": "canaryroute.fn.crossplane.io/v1beta1", "kind": "Input", "allowExternalNames": true},
		},
		"UnknownField": {
			reason: "A misspelt field is an error naming it, and its message is the same on every run.",
			input:  map[string]any{"allowedBackendNamespace": []any{"monitoring"}},
			want:   "cannot decode the Input: allowedBackendNamespace: Invalid value: unknown field",
		},
		"WrongKind": {
			reason: "Another function's input pasted into this step is refused, not read as an empty Input.",
			input:  map[string]any{"apiVersion": "gotemplating.fn.crossplane.io/v1beta1", "kind": "GoTemplate", "source": "Inline"},
			want:   `[apiVersion: Unsupported value: "gotemplating.fn.crossplane.io/v1beta1": supported values: "canaryroute.fn.crossplane.io/v1beta1", kind: Unsupported value: "GoTemplate": supported values: "Input"]`,
		},
		"Oversized": {
			reason: "A list longer than any Input list may be is refused by its length, before it is decoded.",
			input: map[string]any{"allowedBackendNamespaces": func() []any {
				out := make([]any, 10000)
				for i := range out {
					out[i] = "Not A Namespace"
				}
				return out
			}()},
			want: "allowedBackendNamespaces: Too many: 10000: must have at most 64 items",
		},
		"ManyUnknownFieldsAreBounded": {
			reason: "An Input with many bad entries is a Fatal of at most 20 errors, then how many more: the message ends up in an event and a condition.",
			input: func() map[string]any {
				in := map[string]any{}
				for i := range 60 {
					in[fmt.Sprintf("unknown%03d", i)] = true
				}
				return in
			}(),
			want: func() string {
				errs := make([]string, 0, 20)
				for i := range 20 {
					errs = append(errs, fmt.Sprintf("unknown%03d: Invalid value: unknown field", i))
				}
				return "cannot decode the Input: [" + strings.Join(errs, ", ") + "] (and 40 more errors)"
			}(),
		},
		"ThousandsOfKeys": {
			reason: "An Input with more keys than any Input has is refused by their number, before anything sorts or decodes them: a short Fatal, quickly.",
			input: func() map[string]any {
				in := map[string]any{}
				for i := range 150000 {
					in[fmt.Sprintf("unknown%06d", i)] = true
				}
				return in
			}(),
			want: "the Input has 150000 fields, more than an Input may have (64)",
		},
		"WrongType": {
			reason: "A value of the wrong type is an error naming the field.",
			input:  map[string]any{"allowExternalNames": "yes"},
			want:   "cannot decode the Input: allowExternalNames: Invalid value: must be a boolean, not string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.input)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
			for range 3 {
				if _, again := Parse(tc.input); (again == nil) != (err == nil) || (again != nil && again.Error() != got) {
					t.Errorf("%s\nParse(...) is not deterministic: %v, then %v", tc.reason, err, again)
				}
			}
		})
	}
}

// TestParseEmptyKindLists: through Crossplane, an Input's list written
// empty stays a list: it allows no kind, where an absent one allows the
// default, so a platform team can turn gates or analysis off.
func TestParseEmptyKindLists(t *testing.T) {
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cases := map[string]struct {
		reason   string
		input    map[string]any
		analysis bool
		gates    bool
	}{
		"Absent":        {reason: "Absent lists allow the defaults.", input: map[string]any{}, analysis: true, gates: true},
		"EmptyAnalysis": {reason: "An empty allowedAnalysisKinds allows no analysis kind.", input: map[string]any{"allowedAnalysisKinds": []any{}}, gates: true},
		"EmptyGates":    {reason: "An empty allowedGateKinds allows no gate kind.", input: map[string]any{"allowedGateKinds": []any{}}, analysis: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.AllowsAnalysis(job); got != tc.analysis {
				t.Errorf("%s\nAllowsAnalysis(batch/v1 Job) = %v, want %v", tc.reason, got, tc.analysis)
			}
			if got := p.AllowsGate(deployment); got != tc.gates {
				t.Errorf("%s\nAllowsGate(apps/v1 Deployment) = %v, want %v", tc.reason, got, tc.gates)
			}
		})
	}
}

// TestLimitsMatchTheInputCRD holds the sizes that Parse checks before
// decoding to those the Input's CRD states (package/input, generated from
// the Input type): an Input that the CRD admits must never be refused for
// its size, nor the reverse.
func TestLimitsMatchTheInputCRD(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "package", "input", "canaryroute.fn.crossplane.io_inputs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Type     string `json:"type"`
							MaxItems *int   `json:"maxItems"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for name, p := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties {
		if p.Type != "array" {
			continue
		}
		limit, ok := inputLimits[name]
		if !ok {
			limit = bounds.DefaultItems
		}
		if p.MaxItems == nil || *p.MaxItems != limit {
			t.Errorf("%s: the Input CRD says maxItems %v, Parse limits it to %d", name, p.MaxItems, limit)
		}
	}
}
