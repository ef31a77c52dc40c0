package crdschema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
)

// httpRoute is a typical valid HTTPRoute; each case mutates a copy.
func httpRoute() *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "test"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{
				{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress"), SectionName: ptr.To[gwv1.SectionName]("http")},
				{Name: "gateway", Namespace: ptr.To[gwv1.Namespace]("istio-ingress"), SectionName: ptr.To[gwv1.SectionName]("https")},
			}},
			Hostnames: []gwv1.Hostname{"www.example.com", "*.example.org"},
			Rules: []gwv1.HTTPRouteRule{{
				Matches: []gwv1.HTTPRouteMatch{{
					Path:    &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")},
					Headers: []gwv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}},
				}},
				Filters: []gwv1.HTTPRouteFilter{{
					Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
					RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-route", Value: "podinfo"}}},
				}},
				BackendRefs: []gwv1.HTTPBackendRef{
					{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "podinfo-primary", Port: ptr.To[gwv1.PortNumber](9898)}, Weight: ptr.To[int32](90)}},
					{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "podinfo-canary", Port: ptr.To[gwv1.PortNumber](9898)}, Weight: ptr.To[int32](10)}},
				},
			}},
		},
	}
}

func tlsRouteV1Alpha2() *gwv1alpha2.TLSRoute {
	return &gwv1alpha2.TLSRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1alpha2.GroupVersion.String(), Kind: "TLSRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "test"},
		Spec: gwv1alpha2.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gateway"}}},
			Hostnames:       []gwv1.Hostname{"tls.example.com"},
			Rules: []gwv1alpha2.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{
				{BackendObjectReference: gwv1.BackendObjectReference{Name: "podinfo", Port: ptr.To[gwv1.PortNumber](443)}},
			}}},
		},
	}
}

// summary reduces errors to what a reader checks: the path, the type and,
// for invalid values, the detail.
func summary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+string(e.Type)+": "+e.Detail)
	}
	return out
}

func TestValidateGatewayAPI(t *testing.T) {
	type args struct {
		channel Channel
		obj     any
	}
	type want struct {
		// errs are substrings of summary(errs), one for each error.
		errs []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ValidHTTPRouteStandard": {
			reason: "A typical HTTPRoute is accepted by the standard channel.",
			args:   args{channel: Standard, obj: httpRoute()},
		},
		"ValidHTTPRouteExperimental": {
			reason: "A typical HTTPRoute is accepted by the experimental channel.",
			args:   args{channel: Experimental, obj: httpRoute()},
		},
		"StatusIsIgnored": {
			reason: "Composed objects never carry status, so an invalid one is dropped, not reported.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Status.Parents = []gwv1.RouteParentStatus{{}}
				return r
			}()},
		},
		"ServiceWithoutPort": {
			reason: "A backendRef to a Service needs a port (CEL rule, after defaulting kind to Service).",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Spec.Rules[0].BackendRefs[1].Port = nil
				return r
			}()},
			want: want{errs: []string{"spec.rules[0].backendRefs[1]: FieldValueInvalid: Must have port for Service reference"}},
		},
		"RepeatedRequestHeaderModifier": {
			reason: "A RequestHeaderModifier filter cannot be repeated (list-level CEL rule).",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, r.Spec.Rules[0].Filters[0])
				return r
			}()},
			want: want{errs: []string{"spec.rules[0].filters: FieldValueInvalid: RequestHeaderModifier filter cannot be repeated"}},
		},
		"BadHostname": {
			reason: "Hostnames must match the Hostname pattern (OpenAPI schema).",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Spec.Hostnames[1] = "Example.COM"
				return r
			}()},
			want: want{errs: []string{"spec.hostnames[1]: FieldValueInvalid: spec.hostnames[1] in body should match"}},
		},
		"DuplicateHeaderMatch": {
			reason: "Header matches are a list map keyed by name: only ValidateListSetsAndMaps catches a duplicate.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				m := &r.Spec.Rules[0].Matches[0]
				m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: "x-canary", Value: "never"})
				return r
			}()},
			want: want{errs: []string{"spec.rules[0].matches[0].headers[1]: FieldValueDuplicate: "}},
		},
		"ExperimentalHeaderValuePattern": {
			reason: "Only the experimental channel restricts header values to visible characters.",
			args: args{channel: Experimental, obj: func() any {
				r := httpRoute()
				r.Spec.Rules[0].Matches[0].Headers[0].Value = " leading space"
				return r
			}()},
			want: want{errs: []string{"spec.rules[0].matches[0].headers[0].value: FieldValueInvalid: "}},
		},
		"StandardHeaderValueWithoutPattern": {
			reason: "The standard channel accepts the same header value.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Spec.Rules[0].Matches[0].Headers[0].Value = " leading space"
				return r
			}()},
		},
		"TLSRouteV1Alpha2Standard": {
			reason: "The standard channel of v1.6 defines TLSRoute v1alpha2 but does not serve it.",
			args:   args{channel: Standard, obj: tlsRouteV1Alpha2()},
			want:   want{errs: []string{"apiVersion: FieldValueInvalid: version v1alpha2 of TLSRoute.gateway.networking.k8s.io is not served"}},
		},
		"TLSRouteV1Alpha2Experimental": {
			reason: "The experimental channel serves TLSRoute v1alpha2.",
			args:   args{channel: Experimental, obj: tlsRouteV1Alpha2()},
		},
		"UnknownKind": {
			reason: "A kind that no CRD of the set defines is an error.",
			args: args{channel: Standard, obj: map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Nope", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{},
			}},
			want: want{errs: []string{"kind: FieldValueInvalid: no CustomResourceDefinition in this set defines Nope.gateway.networking.k8s.io"}},
		},
		"BadName": {
			reason: "metadata.name must be a DNS-1123 subdomain, as the API server requires of custom resources.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Name = "Podinfo_1"
				return r
			}()},
			want: want{errs: []string{"metadata.name: FieldValueInvalid: a lowercase RFC 1123 subdomain"}},
		},
		"BadNamespace": {
			reason: "metadata.namespace must be a DNS-1123 label.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Namespace = "a.b"
				return r
			}()},
			want: want{errs: []string{"metadata.namespace: FieldValueInvalid: must not contain dots"}},
		},
		"EmptyNameAndNamespace": {
			reason: "Crossplane names composed resources and sets their namespace, so empty ones are accepted.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Name, r.Namespace = "", ""
				return r
			}()},
		},
		"Defaults": {
			reason: "Defaults apply before CEL rules: an empty path match defaults to PathPrefix /, which a ReplacePrefixMatch rewrite needs.",
			args: args{channel: Standard, obj: func() any {
				r := httpRoute()
				r.Spec.Rules[0].Matches = nil
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{
					Type: gwv1.HTTPRouteFilterURLRewrite,
					URLRewrite: &gwv1.HTTPURLRewriteFilter{Path: &gwv1.HTTPPathModifier{
						Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/v2"),
					}},
				}}
				return r
			}()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summary(GatewayAPI(t, tc.args.channel).Validate(tc.args.obj))
			if len(got) != len(tc.want.errs) {
				t.Fatalf("\n%s\nValidate(...): want %d errors, got %d:\n%s", tc.reason, len(tc.want.errs), len(got), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want.errs[i]) {
					t.Errorf("\n%s\nValidate(...): error %d: want it to contain %q, got %q", tc.reason, i, tc.want.errs[i], got[i])
				}
			}
		})
	}
}

func TestValidateIsPure(t *testing.T) {
	r := httpRoute()
	r.Spec.Rules[0].BackendRefs[0].Kind = nil
	before := r.DeepCopy()
	_ = GatewayAPI(t, Standard).Validate(r)
	if diff := cmp.Diff(before, r); diff != "" {
		t.Errorf("Validate(...) changed its argument: -before, +after:\n%s", diff)
	}
}

func BenchmarkValidateHTTPRoute(b *testing.B) {
	s := GatewayAPI(b, Standard)
	r := httpRoute()
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(r); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func canaryRoute() map[string]any {
	return map[string]any{
		"apiVersion": "example.org/v1alpha1",
		"kind":       "CanaryRoute",
		"metadata":   map[string]any{"name": "podinfo", "namespace": "test"},
		"spec": map[string]any{
			"port":      9898,
			"routeName": "podinfo",
			"crossplane": map[string]any{
				"compositionRef":  map[string]any{"name": "canary-route"},
				"resourceRefs":    []any{map[string]any{"apiVersion": "v1", "kind": "Service", "name": "x"}},
				"somethingNewer":  true,
				"compositionMode": "Pipeline",
			},
		},
		"status": map[string]any{
			"canaryWeight": 20,
			"phase":        "Progressing",
			"conditions":   []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available"}},
		},
	}
}

func TestValidateXRD(t *testing.T) {
	type args struct {
		mutate func(xr map[string]any)
	}
	type want struct {
		errs []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Valid": {
			reason: "An XR with Crossplane's own fields and a valid status is accepted.",
			args:   args{mutate: func(map[string]any) {}},
		},
		"LegacyCrossplaneFields": {
			reason: "Crossplane's legacy top-level spec fields are tolerated.",
			args: args{mutate: func(xr map[string]any) {
				spec := xr["spec"].(map[string]any)
				spec["claimRef"] = map[string]any{"name": "podinfo", "namespace": "test"}
				spec["compositionUpdatePolicy"] = "Automatic"
				spec["resourceRefs"] = []any{}
			}},
		},
		"StatusCELRule": {
			reason: "The XRD's CEL rules on status apply: status is kept for XRs.",
			args: args{mutate: func(xr map[string]any) {
				xr["status"].(map[string]any)["canaryWeight"] = 120
			}},
			want: want{errs: []string{"status: FieldValueInvalid: canaryWeight must be at most 100"}},
		},
		"StatusEnum": {
			reason: "The XRD's OpenAPI schema applies to status.",
			args: args{mutate: func(xr map[string]any) {
				xr["status"].(map[string]any)["phase"] = "Done"
			}},
			want: want{errs: []string{"status.phase: FieldValueNotSupported: ", "some validation rules were not checked"}},
		},
		"SpecRequired": {
			reason: "The XRD's required spec fields apply.",
			args: args{mutate: func(xr map[string]any) {
				delete(xr["spec"].(map[string]any), "port")
			}},
			want: want{errs: []string{"spec.port: FieldValueRequired: ", "some validation rules were not checked"}},
		},
		"NameTooLong": {
			reason: "Crossplane limits XR names to 63 characters because they become label values.",
			args: args{mutate: func(xr map[string]any) {
				xr["metadata"].(map[string]any)["name"] = strings.Repeat("a", 64)
			}},
			want: want{errs: []string{"metadata.name: FieldValueTooLong: ", "some validation rules were not checked"}},
		},
		"UnservedVersion": {
			reason: "A version the XRD does not serve is refused.",
			args: args{mutate: func(xr map[string]any) {
				xr["apiVersion"] = "example.org/v1alpha0"
			}},
			want: want{errs: []string{"apiVersion: FieldValueInvalid: version v1alpha0 of CanaryRoute.example.org is not served"}},
		},
	}
	s := XRDs(t, "testdata/xrd.yaml")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := canaryRoute()
			tc.args.mutate(xr)
			got := summary(s.Validate(xr))
			if len(got) != len(tc.want.errs) {
				t.Fatalf("\n%s\nValidate(...): want %d errors, got %d:\n%s", tc.reason, len(tc.want.errs), len(got), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want.errs[i]) {
					t.Errorf("\n%s\nValidate(...): error %d: want it to contain %q, got %q", tc.reason, i, tc.want.errs[i], got[i])
				}
			}
		})
	}
}
