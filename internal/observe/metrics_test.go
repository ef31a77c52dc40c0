package observe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// querier answers by the side a query names, and records the auth it got.
// Metrics sends a run's queries at once: the record is locked.
type querier struct {
	canary, primary promql.Result
	mu              sync.Mutex
	auth            []promql.Auth
}

func (q *querier) Query(_ context.Context, p promql.Provider, query string, _ time.Time) promql.Result {
	q.mu.Lock()
	q.auth = append(q.auth, p.Auth)
	q.mu.Unlock()
	if strings.Contains(query, `"canary"`) {
		return q.canary
	}
	return q.primary
}

func TestMetrics(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 30, 500, time.UTC)
	at := metav1.Time{Time: now.Truncate(time.Second)}
	m := xr.Metric{Name: "errors", Provider: "prom", Query: `x{service="{{service}}"}`, Interval: time.Minute, SuccessWhen: "result <= baseline * 2", CompareToPrimary: true}
	ok := func(v float64) promql.Result { return promql.Result{Value: v, Outcome: promql.OutcomeOK} }
	cases := map[string]struct {
		reason      string
		providers   map[string]policy.MetricProvider
		credentials func(string) (map[string][]byte, error)
		q           *querier
		want        xr.Measurement
		wantAuth    []promql.Auth
	}{
		"Passed": {
			reason:    "Both sides answer; successWhen passes with the canary's result and the primary's baseline, both recorded.",
			providers: map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}}},
			q:         &querier{canary: ok(0.015), primary: ok(0.01)},
			want:      xr.Measurement{Time: at, Step: 1, Value: "0.015", Baseline: "0.01", Verdict: xr.VerdictPassed},
			wantAuth:  []promql.Auth{{}, {}},
		},
		"Failed": {
			reason:    "A canary worse than successWhen admits fails.",
			providers: map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}}},
			q:         &querier{canary: ok(0.5), primary: ok(0.01)},
			want:      xr.Measurement{Time: at, Step: 1, Value: "0.5", Baseline: "0.01", Verdict: xr.VerdictFailed},
			wantAuth:  []promql.Auth{{}, {}},
		},
		"CanaryNoData": {
			reason:    "A canary without a number is no data, saying why.",
			providers: map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}}},
			q:         &querier{canary: promql.Result{NoData: "prom: no series", Outcome: promql.OutcomeNoData}, primary: ok(0.01)},
			want:      xr.Measurement{Time: at, Step: 1, Verdict: xr.VerdictNoData, Reason: "prom: no series"},
			wantAuth:  []promql.Auth{{}, {}},
		},
		"BaselineNoData": {
			reason:    "Without the primary's number there is nothing to compare to: no data, naming the baseline.",
			providers: map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}}},
			q:         &querier{canary: ok(0.01), primary: promql.Result{NoData: "prom: timed out after 2s", Outcome: promql.OutcomeError}},
			want:      xr.Measurement{Time: at, Step: 1, Value: "0.01", Verdict: xr.VerdictNoData, Reason: "baseline: prom: timed out after 2s"},
			wantAuth:  []promql.Auth{{}, {}},
		},
		"Credentials": {
			reason:      "The provider's credentials come from the pipeline step, by name.",
			providers:   map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}, Credentials: "reader"}},
			credentials: func(string) (map[string][]byte, error) { return map[string][]byte{"token": []byte("t0k")}, nil },
			q:           &querier{canary: ok(0), primary: ok(0)},
			want:        xr.Measurement{Time: at, Step: 1, Value: "0", Baseline: "0", Verdict: xr.VerdictPassed},
			wantAuth:    []promql.Auth{{BearerToken: "t0k"}, {BearerToken: "t0k"}},
		},
		"CredentialsMissing": {
			reason:      "Credentials the step does not hand are no data, and nothing is sent without them.",
			providers:   map[string]policy.MetricProvider{"prom": {Provider: promql.Provider{Name: "prom", Address: "http://p:9090"}, Credentials: "reader"}},
			credentials: func(string) (map[string][]byte, error) { return nil, errors.New("reader: credential not found") },
			q:           &querier{},
			want:        xr.Measurement{Time: at, Step: 1, Verdict: xr.VerdictNoData, Reason: "provider prom: reader: credential not found"},
		},
		"ProviderGone": {
			reason:    "A provider the Input no longer lists is no data, saying so.",
			providers: map[string]policy.MetricProvider{},
			q:         &querier{},
			want:      xr.Measurement{Time: at, Step: 1, Verdict: xr.VerdictNoData, Reason: `provider "prom" is not in the function Input's metricProviders`},
		},
	}
	c, err := expr.NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	prg, err := c.CompileMetric(m.SuccessWhen)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Metrics(context.Background(), MetricsIn{
				Metrics: []xr.Metric{m}, Providers: tc.providers, Credentials: tc.credentials, Querier: tc.q,
				Program: func(string) *expr.Program { return prg }, Budget: &expr.Budget{},
				Canary: promql.Values{Service: "canary"}, Primary: promql.Values{Service: "primary"},
				Step: 1, Now: now,
			})
			if diff := cmp.Diff(map[string]xr.Measurement{"errors": tc.want}, got); diff != "" {
				t.Errorf("%s\nMetrics(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantAuth, tc.q.auth); diff != "" {
				t.Errorf("%s\nauth sent: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if got := Metrics(context.Background(), MetricsIn{Metrics: []xr.Metric{m}}); got != nil {
		t.Errorf("a preview (no querier) measures nothing, got %v", got)
	}
}

// TestMetricsProviderKinds: a metric of a Datadog or web provider is
// judged as a Prometheus one is (successWhen over result and baseline);
// only the requests differ, each built by its provider's kind: the query
// expanded for the side, Datadog's window the metric's interval, the web
// URL filled, the provider's own kind of credentials. The providers are
// stand-ins that speak each API.
func TestMetricsProviderKinds(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 30, 500, time.UTC)
	at := metav1.Time{Time: now.Truncate(time.Second)}
	// datadog answers Datadog's query API: the canary's errors 0.02, the
	// primary's 0.01, with the keys it accepts.
	datadog := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path != "/api/v1/query" || r.Header.Get("DD-API-KEY") != "api-k3y" || r.Header.Get("DD-APPLICATION-KEY") != "app-k3y":
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"errors":["Forbidden"]}`)
		case q.Get("to") != "1796205630" || q.Get("from") != "1796205510":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":["window `+q.Get("from")+`..`+q.Get("to")+`"]}`)
		case q.Get("query") == "sum:errors{service:podinfo-canary}":
			_, _ = io.WriteString(w, `{"status":"ok","series":[{"pointlist":[[1764669600000.0,0.5],[1764669620000.0,0.02]]}]}`)
		case q.Get("query") == "sum:errors{service:podinfo-primary}":
			_, _ = io.WriteString(w, `{"status":"ok","series":[{"pointlist":[[1764669600000.0,0.01],[1764669620000.0,null]]}]}`)
		default:
			_, _ = io.WriteString(w, `{"status":"ok","series":[]}`)
		}
	}))
	defer datadog.Close()
	// web answers an SLO API: the ratio of the service the path names.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ratio := map[string]string{"/slo/podinfo-canary": "0.97", "/slo/podinfo-primary": "0.999"}[r.URL.Path]
		if r.Header.Get("Authorization") != "Bearer t0k" || r.URL.Query().Get("window") != "2m" || r.URL.Query().Get("q") != "ratio(podinfo-canary)" && r.URL.Query().Get("q") != "ratio(podinfo-primary)" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"data":{"ratio":"`+ratio+`"}}`)
	}))
	defer web.Close()

	providers := map[string]policy.MetricProvider{
		"dd":  {Provider: promql.Provider{Name: "dd", Kind: promql.KindDatadog, Address: datadog.URL}, Credentials: "datadog"},
		"slo": {Provider: promql.Provider{Name: "slo", Kind: promql.KindWeb, Address: web.URL + "/slo/{{service}}?window={{interval}}&q={{query}}", JSONPath: "{.data.ratio}"}, Credentials: "slo"},
	}
	credentials := func(name string) (map[string][]byte, error) {
		switch name {
		case "datadog":
			return map[string][]byte{"apiKey": []byte("api-k3y"), "appKey": []byte("app-k3y")}, nil
		case "slo":
			return map[string][]byte{"token": []byte("t0k")}, nil
		}
		return nil, errors.New(name + ": credential not found")
	}
	metrics := []xr.Metric{
		{Name: "dd-errors", Provider: "dd", Query: "sum:errors{service:{{service}}}", Interval: 2 * time.Minute, SuccessWhen: "result <= baseline * 3", CompareToPrimary: true},
		{Name: "dd-strict", Provider: "dd", Query: "sum:errors{service:{{service}}}", Interval: 2 * time.Minute, SuccessWhen: "result <= 0.01"},
		{Name: "slo", Provider: "slo", Query: "ratio({{service}})", Interval: 2 * time.Minute, SuccessWhen: "result >= baseline - 0.05", CompareToPrimary: true},
	}
	c, err := expr.NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]*expr.Program{}
	for _, m := range metrics {
		if programs[m.SuccessWhen], err = c.CompileMetric(m.SuccessWhen); err != nil {
			t.Fatal(err)
		}
	}
	got := Metrics(t.Context(), MetricsIn{
		Metrics: metrics, Providers: providers, Credentials: credentials, Querier: &promql.Client{},
		Program: func(text string) *expr.Program { return programs[text] }, Budget: &expr.Budget{},
		Canary: promql.Values{Service: "podinfo-canary"}, Primary: promql.Values{Service: "podinfo-primary"},
		Step: 1, Now: now,
	})
	want := map[string]xr.Measurement{
		"dd-errors": {Time: at, Step: 1, Value: "0.02", Baseline: "0.01", Verdict: xr.VerdictPassed},
		"dd-strict": {Time: at, Step: 1, Value: "0.02", Verdict: xr.VerdictFailed},
		"slo":       {Time: at, Step: 1, Value: "0.97", Baseline: "0.999", Verdict: xr.VerdictPassed},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Metrics(...): -want, +got:\n%s", diff)
	}

	t.Run("DatadogCredentialsOfAnotherKind", func(t *testing.T) {
		// A Datadog provider whose Secret holds a bearer token is no
		// data naming the keys, and nothing is sent.
		got := Metrics(t.Context(), MetricsIn{
			Metrics: metrics[1:2], Providers: providers, Querier: &promql.Client{},
			Credentials: func(string) (map[string][]byte, error) { return map[string][]byte{"token": []byte("t0k")}, nil },
			Program:     func(text string) *expr.Program { return programs[text] }, Budget: &expr.Budget{},
			Step: 1, Now: now,
		})
		want := map[string]xr.Measurement{"dd-strict": {Time: at, Step: 1, Verdict: xr.VerdictNoData, Reason: `provider dd: credentials "datadog": credentials hold unknown keys "token"; a Datadog provider's hold apiKey and appKey`}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Metrics(...): -want, +got:\n%s", diff)
		}
	})
}
