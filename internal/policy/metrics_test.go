package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

func TestMetricProviders(t *testing.T) {
	prom := func(name, address, timeout, credentials string) v1beta1.MetricProvider {
		return v1beta1.MetricProvider{Name: name, Prometheus: &v1beta1.PrometheusProvider{Address: address, Timeout: timeout, Credentials: credentials}}
	}
	type want struct {
		providers map[string]MetricProvider
		errs      []xrtest.FieldErr
	}
	cases := map[string]struct {
		reason string
		in     []v1beta1.MetricProvider
		want   want
	}{
		"None": {
			reason: "Without providers no metric can be queried: the map is empty, never nil-dereferenced.",
			want:   want{providers: map[string]MetricProvider{}},
		},
		"Defaults": {
			reason: "A provider without a timeout queries within 2s, without credentials.",
			in:     []v1beta1.MetricProvider{prom("prometheus", "http://prometheus.monitoring.svc:9090", "", "")},
			want: want{providers: map[string]MetricProvider{
				"prometheus": {Provider: promql.Provider{Name: "prometheus", Kind: promql.KindPrometheus, Address: "http://prometheus.monitoring.svc:9090", Timeout: 2 * time.Second}},
			}},
		},
		"TimeoutAndCredentials": {
			reason: "The timeout and the credentials' name are kept as written.",
			in:     []v1beta1.MetricProvider{prom("thanos", "https://thanos.example.com/prefix", "4500ms", "thanos-reader")},
			want: want{providers: map[string]MetricProvider{
				"thanos": {Provider: promql.Provider{Name: "thanos", Kind: promql.KindPrometheus, Address: "https://thanos.example.com/prefix", Timeout: 4500 * time.Millisecond}, Credentials: "thanos-reader"},
			}},
		},
		"TimeoutTooLong": {
			reason: "A query may take at most 5s: a run never waits longer for a provider.",
			in:     []v1beta1.MetricProvider{prom("p", "http://p:9090", "6s", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].prometheus.timeout", "at most 5s")}},
		},
		"TimeoutNotADuration": {
			reason: "A timeout that does not parse is refused.",
			in:     []v1beta1.MetricProvider{prom("p", "http://p:9090", "soon", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].prometheus.timeout", "duration")}},
		},
		"AddressNotHTTP": {
			reason: "Only http and https endpoints are queried.",
			in:     []v1beta1.MetricProvider{prom("p", "file:///etc/passwd", "", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].prometheus.address", "http or https")}},
		},
		"AddressWithUserInfo": {
			reason: "Credentials come from the pipeline step's credentials, never from the Input, which anyone who reads the Composition reads.",
			in:     []v1beta1.MetricProvider{prom("p", "http://admin:secret@p:9090", "", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Forbidden("metricProviders[0].prometheus.address", "must not hold credentials")}},
		},
		"AddressWithQuery": {
			reason: "The function appends the API's path and query: an address with its own query would be ambiguous.",
			in:     []v1beta1.MetricProvider{prom("p", "http://p:9090/?x=1", "", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].prometheus.address", "no query")}},
		},
		"NoKind": {
			reason: "A provider says where its queries go: one of the three kinds.",
			in:     []v1beta1.MetricProvider{{Name: "p"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("metricProviders[0]", "one of prometheus, datadog and web")}},
		},
		"TwoKinds": {
			reason: "A provider of two kinds would be ambiguous: the second is named, to be removed.",
			in: []v1beta1.MetricProvider{{
				Name: "p", Prometheus: &v1beta1.PrometheusProvider{Address: "http://p:9090"},
				Web: &v1beta1.WebProvider{URL: "http://w/", JSONPath: "{.v}"},
			}},
			want: want{errs: []xrtest.FieldErr{xrtest.Forbidden("metricProviders[0].web", "exactly one of prometheus, datadog and web")}},
		},
		"DatadogDefaults": {
			reason: "A Datadog provider without a site queries datadoghq.com's API, within MaxTimeout (a SaaS across the internet).",
			in:     []v1beta1.MetricProvider{{Name: "dd", Datadog: &v1beta1.DatadogProvider{Credentials: "datadog"}}},
			want: want{providers: map[string]MetricProvider{
				"dd": {Provider: promql.Provider{Name: "dd", Kind: promql.KindDatadog, Address: "https://api.datadoghq.com", Timeout: promql.MaxTimeout}, Credentials: "datadog"},
			}},
		},
		"DatadogSite": {
			reason: "A site is the host below api., as written (lower case, without a final dot).",
			in:     []v1beta1.MetricProvider{{Name: "dd", Datadog: &v1beta1.DatadogProvider{Site: "Datadoghq.EU.", Credentials: "datadog"}}},
			want: want{providers: map[string]MetricProvider{
				"dd": {Provider: promql.Provider{Name: "dd", Kind: promql.KindDatadog, Address: "https://api.datadoghq.eu", Timeout: promql.MaxTimeout}, Credentials: "datadog"},
			}},
		},
		"DatadogSiteNotAHost": {
			reason: "Attack: a site that is no DNS name (a path, a port, a user) could send the keys elsewhere than api.<site>.",
			in:     []v1beta1.MetricProvider{{Name: "dd", Datadog: &v1beta1.DatadogProvider{Site: "evil.example/x@datadoghq.com", Credentials: "datadog"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].datadog.site", "RFC 1123 subdomain")}},
		},
		"DatadogWithoutCredentials": {
			reason: "Datadog's API answers nothing without its keys: a provider without credentials is refused up front.",
			in:     []v1beta1.MetricProvider{{Name: "dd", Datadog: &v1beta1.DatadogProvider{}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("metricProviders[0].datadog.credentials", "apiKey and appKey")}},
		},
		"Web": {
			reason: "A web provider keeps its URL as a template, filled per query, its jsonPath, and the default timeout.",
			in: []v1beta1.MetricProvider{{Name: "slo", Web: &v1beta1.WebProvider{
				URL: "http://slo.monitoring/api/v1/ratio?service={{service}}&window={{interval}}", JSONPath: "{.data.ratio}", Credentials: "slo",
			}}},
			want: want{providers: map[string]MetricProvider{
				"slo": {Provider: promql.Provider{
					Name: "slo", Kind: promql.KindWeb, Address: "http://slo.monitoring/api/v1/ratio?service={{service}}&window={{interval}}",
					JSONPath: "{.data.ratio}", Timeout: promql.DefaultTimeout,
				}, Credentials: "slo"},
			}},
		},
		"WebPlaceholderInHost": {
			reason: "Attack: a placeholder in the host would let a CanaryRoute's names choose where the credentials go.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://{{service}}.example/x", JSONPath: "{.v}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.url", "stands in the URL's scheme or host")}},
		},
		"WebUnknownPlaceholder": {
			reason: "Only the metrics' placeholders and {{query}} are filled: another is a typo.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/x?pod={{pod}}", JSONPath: "{.v}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.url", `unknown placeholder "{{pod}}"`)}},
		},
		"WebUserInfo": {
			reason: "Credentials come from the pipeline step's, never from the Input.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "https://u:p@w/x", JSONPath: "{.v}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.url", "holds credentials")}},
		},
		"WebFragment": {
			reason: "A fragment is never sent: a URL that has one means something the request would not ask.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "https://w/x#{{query}}", JSONPath: "{.v}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.url", "fragment")}},
		},
		"WebNotHTTP": {
			reason: "Only http and https endpoints are queried.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "file:///etc/passwd", JSONPath: "{.v}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.url", "scheme is not http or https")}},
		},
		"WebJSONPathMissing": {
			reason: "A web provider says which number of its answer is the value.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("metricProviders[0].web.jsonPath", "{.data.ratio}")}},
		},
		"WebJSONPathInvalid": {
			reason: "A jsonPath that kubectl's parser refuses is refused here, not on every query.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/", JSONPath: "{.data[}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.jsonPath", "kubectl's JSONPath")}},
		},
		"WebJSONPathText": {
			reason: "Text around the expression, or a range, would be values of their own: one expression selects one value.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/", JSONPath: "ratio: {.data.ratio}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.jsonPath", "one {...} expression")}},
		},
		"WebJSONPathRecursive": {
			reason: "A recursive descent walks every value of a 1 MiB answer at ten times its decoding's cost: refused up front.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/", JSONPath: "{..ratio}"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.jsonPath", "recursive descent")}},
		},
		"WebBadCredentialsName": {
			reason: "Credentials are named as Crossplane names them.",
			in:     []v1beta1.MetricProvider{{Name: "w", Web: &v1beta1.WebProvider{URL: "http://w/", JSONPath: "{.v}", Credentials: "Not_A_Name"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].web.credentials", "RFC 1123 subdomain")}},
		},
		"Duplicate": {
			reason: "Metrics name providers: two of one name would be ambiguous.",
			in:     []v1beta1.MetricProvider{prom("p", "http://a:9090", "", ""), prom("p", "http://b:9090", "", "")},
			want:   want{errs: []xrtest.FieldErr{{Field: "metricProviders[1].name", Type: field.ErrorTypeDuplicate}}},
		},
		"BadName": {
			reason: "A provider's name is a DNS-1123 label, as metrics write it.",
			in:     []v1beta1.MetricProvider{prom("Prom_1", "http://a:9090", "", "")},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("metricProviders[0].name", "RFC 1123 label")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(&v1beta1.Input{MetricProviders: tc.in})
			var got want
			if p != nil {
				got.providers = p.MetricProviders
			}
			if diff := cmp.Diff(tc.want.providers, got.providers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...).MetricProviders: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := xrtest.Diff(tc.want.errs, xrtest.FieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nNew(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}
