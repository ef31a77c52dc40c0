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
				"prometheus": {Provider: promql.Provider{Name: "prometheus", Address: "http://prometheus.monitoring.svc:9090", Timeout: 2 * time.Second}},
			}},
		},
		"TimeoutAndCredentials": {
			reason: "The timeout and the credentials' name are kept as written.",
			in:     []v1beta1.MetricProvider{prom("thanos", "https://thanos.example.com/prefix", "4500ms", "thanos-reader")},
			want: want{providers: map[string]MetricProvider{
				"thanos": {Provider: promql.Provider{Name: "thanos", Address: "https://thanos.example.com/prefix", Timeout: 4500 * time.Millisecond}, Credentials: "thanos-reader"},
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
		"NoPrometheus": {
			reason: "A provider says where its queries go.",
			in:     []v1beta1.MetricProvider{{Name: "p"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("metricProviders[0].prometheus", "prometheus")}},
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
