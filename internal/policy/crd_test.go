package policy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// TestInputCRDRules: the Input CRD's rules over the new kinds (package/input,
// generated from the Input type's markers) compile, and say what New
// says: a metric provider of exactly one kind, a webhook of exactly one of
// url and urlFrom. A reader of the CRD learns the rules the Fatal enforces.
func TestInputCRDRules(t *testing.T) {
	crds, err := crdschema.LoadFiles(filepath.Join("..", "..", "package", "input", "canaryroute.fn.crossplane.io_inputs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	input := func() map[string]any {
		return map[string]any{"apiVersion": "canaryroute.fn.crossplane.io/v1beta1", "kind": "Input", "metadata": map[string]any{"name": "x"}}
	}
	cases := map[string]struct {
		reason string
		fields map[string]any
		want   string // a part of the error; "" for none
	}{
		"Contract": {
			reason: "The contract's Input.",
			fields: map[string]any{
				"webhooks": []any{
					map[string]any{"name": "loadtester", "url": "http://flagger-loadtester.test/", "timeout": "5s"},
					map[string]any{"name": "team-chat", "urlFrom": map[string]any{"credentials": "chat", "key": "url"}, "format": "slack"},
				},
				"metricProviders": []any{
					map[string]any{"name": "datadog", "datadog": map[string]any{"site": "datadoghq.eu", "credentials": "datadog"}},
					map[string]any{"name": "status-api", "web": map[string]any{"url": "http://slo/r?s={{service}}", "jsonPath": "{.data.ratio}"}},
				},
			},
		},
		"TwoKinds": {
			reason: "A provider of two kinds.",
			fields: map[string]any{"metricProviders": []any{map[string]any{"name": "p", "prometheus": map[string]any{"address": "http://p"}, "web": map[string]any{"url": "http://w", "jsonPath": "{.v}"}}}},
			want:   "a provider is exactly one of prometheus, datadog and web",
		},
		"NoKind": {
			reason: "A provider of none.",
			fields: map[string]any{"metricProviders": []any{map[string]any{"name": "p"}}},
			want:   "a provider is exactly one of prometheus, datadog and web",
		},
		"WebhookBoth": {
			reason: "A webhook of both an address and a secret one.",
			fields: map[string]any{"webhooks": []any{map[string]any{"name": "w", "url": "http://w", "urlFrom": map[string]any{"credentials": "c", "key": "k"}}}},
			want:   "a webhook has exactly one of url and urlFrom",
		},
		"WebhookFormat": {
			reason: "A format the function cannot write.",
			fields: map[string]any{"webhooks": []any{map[string]any{"name": "w", "url": "http://w", "format": "telegram"}}},
			want:   "Unsupported value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := input()
			for k, v := range tc.fields {
				obj[k] = v
			}
			got := crds.Validate(obj).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("%s\nthe CRD refuses it: %v", tc.reason, got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("%s\nthe CRD says %v, want an error holding %q", tc.reason, got, tc.want)
			}
		})
	}
}
