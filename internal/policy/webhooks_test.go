package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

func TestWebhooks(t *testing.T) {
	type want struct {
		webhooks map[string]Webhook
		errs     []xrtest.FieldErr
	}
	chat := &v1beta1.WebhookURLSource{Credentials: "chat", Key: "url"}
	cases := map[string]struct {
		reason string
		in     []v1beta1.Webhook
		want   want
	}{
		"None": {
			reason: "Without webhooks no hook can call anything.",
			want:   want{webhooks: map[string]Webhook{}},
		},
		"Contract": {
			reason: "The contract's two webhooks: an address with its timeout, generic; a secret URL in Slack's format, 5s.",
			in: []v1beta1.Webhook{
				{Name: "loadtester", URL: "http://flagger-loadtester.test/", Timeout: "5s"},
				{Name: "team-chat", URLFrom: chat, Format: v1beta1.WebhookSlack},
			},
			want: want{webhooks: map[string]Webhook{
				"loadtester": {Webhook: hooks.Webhook{Name: "loadtester", URL: "http://flagger-loadtester.test/", Timeout: 5 * time.Second, Format: hooks.FormatGeneric}},
				"team-chat":  {Webhook: hooks.Webhook{Name: "team-chat", Timeout: hooks.DefaultTimeout, Format: hooks.FormatSlack}, URLFrom: chat},
			}},
		},
		"Neither": {
			reason: "A webhook says where it calls.",
			in:     []v1beta1.Webhook{{Name: "w"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Required("webhooks[0]", "exactly one of url and urlFrom")}},
		},
		"Both": {
			reason: "An address and a secret one would be ambiguous: urlFrom is named, to be removed or kept alone.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "http://w/", URLFrom: chat}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Forbidden("webhooks[0].urlFrom", "exactly one of url and urlFrom")}},
		},
		"URLWithCredentials": {
			reason: "Credentials in an address the Input writes would be read by anyone who reads the Composition.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "https://u:p@w/"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("webhooks[0].url", "urlFrom")}},
		},
		"URLNotHTTP": {
			reason: "Only http and https are called.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "file:///etc/passwd"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("webhooks[0].url", "http or https")}},
		},
		"TimeoutTooLong": {
			reason: "A call may take at most 10s.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "http://w/", Timeout: "11s"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("webhooks[0].timeout", "at most 10s")}},
		},
		"TimeoutNotADuration": {
			reason: "A timeout that does not parse.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "http://w/", Timeout: "soon"}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("webhooks[0].timeout", "duration")}},
		},
		"UnknownFormat": {
			reason: "A format the function cannot write.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "http://w/", Format: "telegram"}},
			want:   want{errs: []xrtest.FieldErr{{Field: "webhooks[0].format", Type: field.ErrorTypeNotSupported}}},
		},
		"URLFromIncomplete": {
			reason: "A secret URL names its credentials and key.",
			in:     []v1beta1.Webhook{{Name: "w", URLFrom: &v1beta1.WebhookURLSource{}}},
			want: want{errs: []xrtest.FieldErr{
				xrtest.Required("webhooks[0].urlFrom.credentials", "credentials"),
				xrtest.Required("webhooks[0].urlFrom.key", "key"),
			}},
		},
		"URLFromBadKey": {
			reason: "A key is a Secret's key.",
			in:     []v1beta1.Webhook{{Name: "w", URLFrom: &v1beta1.WebhookURLSource{Credentials: "chat", Key: "a/b"}}},
			want:   want{errs: []xrtest.FieldErr{xrtest.Invalid("webhooks[0].urlFrom.key", "valid config key")}},
		},
		"Duplicate": {
			reason: "Hooks name webhooks: two of one name would be ambiguous.",
			in:     []v1beta1.Webhook{{Name: "w", URL: "http://a/"}, {Name: "w", URL: "http://b/"}},
			want:   want{errs: []xrtest.FieldErr{{Field: "webhooks[1].name", Type: field.ErrorTypeDuplicate}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(&v1beta1.Input{Webhooks: tc.in})
			var got want
			if p != nil {
				got.webhooks = p.Webhooks
			}
			if diff := cmp.Diff(tc.want.webhooks, got.webhooks, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...).Webhooks: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := xrtest.Diff(tc.want.errs, xrtest.FieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nNew(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWebhookResolve(t *testing.T) {
	secret := "https://hooks.slack.com/services/T0/B0/0123456789abcdefghijklmn"
	plain := Webhook{Webhook: hooks.Webhook{Name: "loadtester", URL: "http://flagger-loadtester.test/", Timeout: time.Second}}
	chat := Webhook{Webhook: hooks.Webhook{Name: "chat", Format: hooks.FormatSlack}, URLFrom: &v1beta1.WebhookURLSource{Credentials: "chat", Key: "url"}}
	type want struct {
		Webhook hooks.Webhook
		Err     string
	}
	cases := map[string]struct {
		reason      string
		w           Webhook
		credentials func(string) (map[string][]byte, error)
		want        want
	}{
		"Plain": {
			reason: "An address the Input writes is called as it is, no secret.",
			w:      plain,
			want:   want{Webhook: plain.Webhook},
		},
		"Secret": {
			reason: "A secret URL is read from the step's credentials, and marked secret so that no reason quotes it.",
			w:      chat,
			credentials: func(string) (map[string][]byte, error) {
				return map[string][]byte{"url": []byte(secret + "\n")}, nil
			},
			want: want{Webhook: hooks.Webhook{Name: "chat", Format: hooks.FormatSlack, URL: secret, Secret: true}},
		},
		"NoCredentials": {
			reason: "A step without credentials calls nothing.",
			w:      chat,
			want:   want{Err: `the pipeline step hands no credentials "chat"`},
		},
		"CredentialsMissing": {
			reason: "Credentials the step does not hand are an error naming them (the Input's webhook removed mid-rollout reads the same).",
			w:      chat,
			credentials: func(name string) (map[string][]byte, error) {
				return nil, errors.New(name + ": credential not found")
			},
			want: want{Err: `credentials "chat": chat: credential not found`},
		},
		"NotAURL": {
			reason: "A value that is no http URL is refused, never quoted.",
			w:      chat,
			credentials: func(string) (map[string][]byte, error) {
				return map[string][]byte{"url": []byte("gopher://0123456789abcdefghijklmn")}, nil
			},
			want: want{Err: `credentials "chat": the URL in key "url": the scheme is not http or https`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w, err := tc.w.Resolve(tc.credentials)
			got := want{Webhook: w}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResolve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestParseContract: the contract's Input, as a Composition writes it (the
// JSON field names, the sizes package bounds checks before decoding),
// parses into its providers and webhooks; an oversized new field is
// refused by its size, naming it.
func TestParseContract(t *testing.T) {
	contract := map[string]any{
		"apiVersion": "canaryroute.fn.crossplane.io/v1beta1", "kind": "Input",
		"webhooks": []any{
			map[string]any{"name": "loadtester", "url": "http://flagger-loadtester.test/", "timeout": "5s"},
			map[string]any{"name": "team-chat", "urlFrom": map[string]any{"credentials": "chat", "key": "url"}, "format": "slack"},
		},
		"metricProviders": []any{
			map[string]any{"name": "datadog", "datadog": map[string]any{"site": "datadoghq.eu", "credentials": "datadog"}},
			map[string]any{"name": "status-api", "web": map[string]any{
				"url": "http://slo.monitoring/api/v1/ratio?service={{service}}&window={{interval}}", "jsonPath": "{.data.ratio}", "credentials": "slo",
			}},
		},
	}
	p, err := Parse(contract)
	if err != nil {
		t.Fatalf("Parse(the contract's Input): %v", err)
	}
	if got := []string{string(p.MetricProviders["datadog"].Kind), p.MetricProviders["datadog"].Address, string(p.MetricProviders["status-api"].Kind), string(p.Webhooks["team-chat"].Format), p.Webhooks["team-chat"].URLFrom.Key}; !cmp.Equal(got, []string{"datadog", "https://api.datadoghq.eu", "web", "slack", "url"}) {
		t.Errorf("Parse(the contract's Input) read %q", got)
	}

	long := map[string]any{"webhooks": []any{map[string]any{"name": "w", "url": "http://w/" + strings.Repeat("x", 2048)}}}
	if _, err := Parse(long); err == nil || !strings.Contains(err.Error(), "webhooks[0].url") {
		t.Errorf("Parse(a webhook's URL of 2,057 characters) = %v, want an error naming webhooks[0].url", err)
	}
}
