package compose

import (
	"testing"

	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

func TestResolveMetrics(t *testing.T) {
	const provider = allowMonitoring + `metricProviders: [{name: prometheus, prometheus: {address: "http://prometheus:9090"}}]
`
	steps := set("spec.traffic", `{steps: [{weight: 10}, {weight: 100}]}`)
	canary := set("spec.canary.revision", "v2")
	metric := func(m string) patch { return set("spec.traffic.metrics", "["+m+"]") }
	cases := map[string]struct {
		reason  string
		input   string
		patches []patch
		want    []xrtest.FieldErr
	}{
		"Valid": {
			reason:  "A metric of a listed provider, with PromQL and a successWhen over result, resolves.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: 'sum(rate(x{service="{{service}}"}[{{interval}}]))', successWhen: "result < 0.01"}`)},
		},
		"UnknownProvider": {
			reason:  "Authors choose queries, never endpoints: a provider the Input does not list is refused, naming the field.",
			input:   allowMonitoring,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: "up", successWhen: "result > 0"}`)},
			want:    []xrtest.FieldErr{{Field: "spec.traffic.metrics[0].provider", Type: "FieldValueNotFound"}},
		},
		"NotPromQL": {
			reason:  "A query that does not parse as PromQL is refused up front, not held forever as no data.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: "sum(rate(", successWhen: "result > 0"}`)},
			want:    []xrtest.FieldErr{xrtest.Invalid("spec.traffic.metrics[0].query", "")},
		},
		"UnknownPlaceholder": {
			reason:  "A placeholder the function does not know is refused.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: 'up{pod="{{pod}}"}', successWhen: "result > 0"}`)},
			want:    []xrtest.FieldErr{xrtest.Invalid("spec.traffic.metrics[0].query", "pod")},
		},
		"SuccessWhenNotBool": {
			reason:  "successWhen must return a bool.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: "up", successWhen: "result + 1"}`)},
			want:    []xrtest.FieldErr{xrtest.Invalid("spec.traffic.metrics[0].successWhen", "bool")},
		},
		"BaselineWithoutCompareTo": {
			reason:  "baseline is the primary's number, which only compareTo measures.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: "up", successWhen: "result <= baseline"}`)},
			want:    []xrtest.FieldErr{xrtest.Invalid("spec.traffic.metrics[0].successWhen", "compareTo")},
		},
		"CompareToUnused": {
			reason:  "compareTo measures the primary for nothing if successWhen never reads baseline.",
			input:   provider,
			patches: []patch{canary, steps, metric(`{name: errors, provider: prometheus, query: "up", successWhen: "result < 1", compareTo: primary}`)},
			want:    []xrtest.FieldErr{xrtest.Invalid("spec.traffic.metrics[0].compareTo", "never reads")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pol := inputPolicy(t, tc.input)
			_, err := Resolve(canaryRoute(t, pol, tc.patches...), pol, testCompiler(t))
			if diff := xrtest.Diff(tc.want, xrtest.FieldErrors(t, err)); diff != "" {
				t.Errorf("%s\nResolve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
