package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/promql"
)

// A fakeProvider answers the metrics' queries as a Prometheus would: by the
// backend the expanded query names, and records every query it gets.
type fakeProvider struct {
	mu sync.Mutex
	// answer is the number (or the reason there is none) for the side a
	// query names, by its {{service}}.
	answer func(service string, at time.Time) promql.Result
	got    []providerCall
}

// A providerCall is one query a provider got.
type providerCall struct {
	provider, query string
	at              time.Time
}

func (f *fakeProvider) Query(_ context.Context, p promql.Provider, query string, at time.Time) promql.Result {
	f.mu.Lock()
	f.got = append(f.got, providerCall{provider: p.Name, query: query, at: at})
	f.mu.Unlock()
	for _, service := range []string{"podinfo-canary", "podinfo"} {
		if strings.Contains(query, `service="`+service+`"`) {
			return f.answer(service, at)
		}
	}
	return promql.Result{NoData: "no series", Outcome: promql.OutcomeNoData}
}

// calls are the queries made, by the side they name.
func (f *fakeProvider) calls(side string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, c := range f.got {
		if strings.Contains(c.query, `service="`+side+`"`) {
			out = append(out, c.at)
		}
	}
	return out
}

// value is a provider that answers a number for each side.
func value(canary, primary float64) func(string, time.Time) promql.Result {
	return func(service string, _ time.Time) promql.Result {
		if service == "podinfo-canary" {
			return promql.Result{Value: canary, Outcome: promql.OutcomeOK}
		}
		return promql.Result{Value: primary, Outcome: promql.OutcomeOK}
	}
}

// metricsInput lists the provider the metrics name.
const metricsInput = emptyInput + `metricProviders: [{name: prometheus, prometheus: {address: "http://prometheus.monitoring.svc:9090"}}]
`

// metricsXR rolls out through 10% and 50% for a minute each, then 100%,
// judged by an error rate measured every 30s against the primary's; extra
// is added to the metric.
func metricsXR(extra, traffic string) string {
	return steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, `    metrics:
      - name: error-rate
        provider: prometheus
        query: 'sum(rate(requests_total{namespace="{{namespace}}", service="{{service}}", revision="{{revision}}", code=~"5.."}[{{interval}}]))'
        interval: 30s
        successWhen: "result <= 0.01 || result <= baseline * 1.5"
        compareTo: primary
`+extra+traffic)
}

func TestMetricAnalysis(t *testing.T) {
	type want struct {
		phase, reason string
		weight        float64
		// events are the reasons of the events the rollout said, in
		// order, each once.
		events []string
	}
	cases := map[string]struct {
		reason string
		xr     string
		answer func(string, time.Time) promql.Result
		runs   int
		want   want
	}{
		"HealthyCanaryPromoted": {
			reason: "A canary whose errors stay at the primary's passes a measurement in each step and reaches 100%.",
			xr:     metricsXR("", ""),
			answer: value(0.002, 0.002),
			runs:   20,
			want: want{
				phase: "Succeeded", reason: "RolloutSucceeded", weight: 100,
				events: []string{"RolloutStarted", "MetricPassed", "StepAdvanced", "RolloutSucceeded"},
			},
		},
		"FailingCanaryFails": {
			reason: "A canary answering errors fails failureLimit measurements in a row and then gets nothing: phase Failed, reason MetricFailed.",
			xr:     metricsXR("        failureLimit: 2\n", ""),
			answer: value(0.5, 0.001),
			runs:   20,
			want: want{
				phase: "Failed", reason: "MetricFailed", weight: 0,
				events: []string{"RolloutStarted", "MetricFailing", "RolloutFailed"},
			},
		},
		"DryRunOnlyRecords": {
			reason: "A dry-run metric that fails is recorded and announced once, and the rollout carries on to 100%.",
			xr:     metricsXR("        dryRun: true\n", ""),
			answer: value(0.5, 0.001),
			runs:   20,
			want: want{
				phase: "Succeeded", reason: "RolloutSucceeded", weight: 100,
				events: []string{"RolloutStarted", "MetricFailing", "StepAdvanced", "RolloutSucceeded"},
			},
		},
		"ProviderDownHolds": {
			reason: "A provider that cannot be reached holds the step: no failure, no progress; the deadline is what fails a rollout that cannot be judged.",
			xr:     metricsXR("", "    progressDeadline: 2m\n"),
			answer: func(string, time.Time) promql.Result {
				return promql.Result{NoData: "prometheus: connection refused", Outcome: promql.OutcomeError}
			},
			runs: 20,
			want: want{
				phase: "Failed", reason: "ProgressDeadlineExceeded", weight: 0,
				events: []string{"RolloutStarted", "MetricNoData", "RolloutFailed"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &fakeProvider{answer: tc.answer}
			s := newSim(t, tc.xr, metricsInput)
			s.querier = p
			var events []string
			var last simRun
			for range tc.runs {
				last = s.run(0)
				if last.fatal != "" {
					t.Fatalf("%s\na run is a Fatal: %s", tc.reason, last.fatal)
				}
				for _, e := range last.events {
					_, rest, _ := strings.Cut(e, " ")
					reason, _, _ := strings.Cut(rest, ":")
					if !slices.Contains(events, reason) {
						events = append(events, reason)
					}
				}
			}
			got := want{phase: str(last.out["phase"]), reason: str(last.out["reason"]), events: events}
			got.weight, _ = last.out["canaryWeight"].(float64)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s\n%s", tc.reason, diff, s.describe())
			}
			// At most one query per side and interval, whatever the
			// reconcile rate and the calls of each reconcile.
			for _, side := range []string{"podinfo-canary", "podinfo"} {
				at := p.calls(side)
				for i := 1; i < len(at); i++ {
					if at[i].Sub(at[i-1]) < 30*time.Second {
						t.Errorf("%s\n%s was queried at %s and again at %s, less than an interval apart", tc.reason, side, at[i-1], at[i])
					}
				}
				if len(at) == 0 {
					t.Errorf("%s\n%s was never queried", tc.reason, side)
				}
			}
		})
	}
}

// str is a value as a string, "" for none.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestMetricQueriesAsWritten: the query goes out as written but for its
// placeholders, each replaced by the side's value; nothing else changes.
func TestMetricQueriesAsWritten(t *testing.T) {
	p := &fakeProvider{answer: value(0, 0)}
	s := newSim(t, metricsXR("", ""), metricsInput)
	s.querier = p
	for range 4 {
		s.run(0)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	want := []string{
		`sum(rate(requests_total{namespace="test", service="podinfo-canary", revision="v2", code=~"5.."}[30s]))`,
		`sum(rate(requests_total{namespace="test", service="podinfo", revision="", code=~"5.."}[30s]))`,
	}
	if len(p.got) < 2 {
		t.Fatalf("want the canary and the primary queried, got %d queries", len(p.got))
	}
	got := make([]string, 0, 2)
	for _, c := range p.got[:2] {
		got = append(got, c.query)
		if c.provider != "prometheus" {
			t.Errorf("queried provider %q, want prometheus", c.provider)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the queries of one measurement: -want, +got:\n%s", diff)
	}
}

// TestPreviewNeverQueries: a function started with --now (a preview, or
// crossplane render) queries nothing: the step holds, and says when a
// measurement is due.
func TestPreviewNeverQueries(t *testing.T) {
	s := newSim(t, metricsXR("", ""), metricsInput)
	var last simRun
	for range 6 {
		last = s.run(30 * time.Second)
	}
	msg := str(last.out["message"])
	if !strings.Contains(msg, "metric error-rate: no measurement yet, the first is due at") {
		t.Errorf("a preview's rollout says a measurement is due, got %q", msg)
	}
}

// TestAwaitingCapacityQueriesNothing: a release whose canary waits at 0%
// to enter its first step is not measured, however often Crossplane calls:
// no query, no measurement.
func TestAwaitingCapacityQueriesNothing(t *testing.T) {
	xrYAML := namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 2, workload: {name: "podinfo-{{revision}}"}}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 100}]
    metrics:
      - name: error-rate
        provider: prometheus
        query: 'sum(rate(http_requests_total{namespace="{{namespace}}", service="{{service}}", code=~"5.."}[{{interval}}]))'
        interval: 30s
        successWhen: "result <= 0.01"
`)
	p := &fakeProvider{answer: func(string, time.Time) promql.Result {
		return promql.Result{NoData: `provider "prometheus": the value is NaN, not a number`, Outcome: promql.OutcomeNoData}
	}}
	s := newSim(t, xrYAML, metricsInput)
	s.querier = p
	s.run(0) // v1 is released: stable at once.
	s.setSpec("canary.revision", "v2")
	var last simRun
	for range 12 {
		last = s.run(5 * time.Second) // a busy controller: a reconcile every 5s
	}
	if got := str(last.out["reason"]); got != "AwaitingCapacity" {
		t.Fatalf("want the rollout waiting at 0%% for capacity, got reason %q: %s\n%s", got, str(last.out["message"]), s.describe())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) > 2 {
		at := make([]string, 0, len(p.got))
		for _, c := range p.got {
			at = append(at, c.at.Format(time.TimeOnly))
		}
		t.Errorf("a canary waiting at 0%% was queried %d times in a minute (at %s); want none, and never more than once an interval (30s)", len(p.got), strings.Join(at, ", "))
	}
}

// recordingLog is a function log that keeps every line, with its values.
type recordingLog struct {
	mu     *sync.Mutex
	lines  *[]string
	values []any
}

func newRecordingLog() recordingLog {
	return recordingLog{mu: &sync.Mutex{}, lines: &[]string{}}
}

func (l recordingLog) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l recordingLog) Debug(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l recordingLog) WithValues(kv ...any) logging.Logger {
	return recordingLog{mu: l.mu, lines: l.lines, values: append(slices.Clone(l.values), kv...)}
}

func (l recordingLog) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.lines = append(*l.lines, fmt.Sprint(level, " ", msg, " ", append(slices.Clone(l.values), kv...)))
}

func (l recordingLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(*l.lines, "\n")
}

// TestMetricCredentialsNeverEchoed: a provider that repeats the request's
// Authorization header in its answer, in each shape an answer takes, never
// gets the pipeline step's credentials into the CanaryRoute's status, an
// event, a condition, the response or the function's log: the whole run is
// checked, not only the reason the client gives.
func TestMetricCredentialsNeverEchoed(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLWZvci1wcm9tZXRoZXVz.sig"
	const password = "s3cr3t-p4ssw0rd"
	basic := base64.StdEncoding.EncodeToString([]byte("reader:" + password))
	auths := map[string]struct {
		data    map[string][]byte
		secrets []string
	}{
		"Bearer": {data: map[string][]byte{"token": []byte(token)}, secrets: []string{token}},
		"Basic":  {data: map[string][]byte{"username": []byte("reader"), "password": []byte(password)}, secrets: []string{password, basic}},
	}
	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
		// says is what the measurement's reason says of the answer.
		says string
	}{
		"Unauthorized": {
			reason: "A 401 whose body repeats the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, "invalid "+r.Header.Get("Authorization"))
			},
			says: "HTTP 401",
		},
		"BadRequestJSON": {
			reason: "A 400 JSON error whose error repeats the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": "denied " + r.Header.Get("Authorization")})
			},
			says: "HTTP 400",
		},
		"OKWithError": {
			reason: `A 200 with "status":"error" whose error repeats the header.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "auth", "error": r.Header.Get("Authorization")})
			},
			says: "an error",
		},
		"HTMLPage": {
			reason: "A proxy's HTML page that shows the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "<html><pre>"+r.Header.Get("Authorization")+"</pre></html>")
			},
			says: "not Prometheus's JSON",
		},
		"RedirectLocation": {
			reason: "A 302 whose Location carries the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://login.example/?auth="+url.QueryEscape(r.Header.Get("Authorization")))
				w.WriteHeader(http.StatusFound)
			},
			says: "redirected (HTTP 302",
		},
	}
	for authName, auth := range auths {
		for name, tc := range shapes {
			t.Run(authName+"/"+name, func(t *testing.T) {
				provider := httptest.NewServer(tc.handler)
				t.Cleanup(provider.Close)
				input := emptyInput + "metricProviders: [{name: prometheus, prometheus: {address: \"" + provider.URL + "\", credentials: prometheus}}]\n"
				s := newSim(t, metricsXR("", ""), input)
				s.querier = &promql.Client{}
				s.credentials = map[string]*fnv1.Credentials{"prometheus": {Source: &fnv1.Credentials_CredentialData{CredentialData: &fnv1.CredentialData{Data: auth.data}}}}
				log := newRecordingLog()
				s.log = log
				const runs = 10
				said := make([]string, 0, runs+2) // the responses, the status and the log
				measured := false
				for range runs {
					r := s.run(0)
					wire, err := protojson.Marshal(r.rsp)
					if err != nil {
						t.Fatal(err)
					}
					said = append(said, string(wire))
					for _, e := range r.events {
						measured = measured || strings.Contains(e, "MetricNoData") && strings.Contains(e, tc.says)
					}
				}
				if !measured {
					t.Fatalf("%s\nno MetricNoData event says %q: the provider was not asked\n%s", tc.reason, tc.says, s.describe())
				}
				status, err := json.Marshal(s.status)
				if err != nil {
					t.Fatal(err)
				}
				said = append(said, string(status), log.String())
				for _, secret := range auth.secrets {
					for _, form := range []string{secret, url.QueryEscape(secret)} {
						for _, text := range said {
							if strings.Contains(text, form) {
								t.Errorf("%s\nthe credential %q reached the response, the status or the log:\n%s", tc.reason, form, text)
							}
						}
					}
				}
			})
		}
	}
}

// TestMetricCredentialsNeverEchoedEscapedOrCut: what internal/promql's
// TestClientNeverEchoesEncodedCredentials tries would reach everything
// API.md (Safety round 4) names: the MetricNoData event, the function's log,
// status.rollout.metrics[].reason, the response. A bearer token of base64
// (random bytes are: '/', '+') echoed by a proxy whose JSON encoder escapes
// "/" as "\/", or in a 401 whose connection breaks mid-body.
func TestMetricCredentialsNeverEchoedEscapedOrCut(t *testing.T) {
	const token = "c2VjcmV0/dG9rZW4+b2Yg/YSBwcm9t+aGV1c2/gZm9yLXRoZS1mdW5jdGlvbg"
	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
	}{
		"JSONSlashEscaped": {
			reason: `Attack: a 401 JSON body whose encoder escapes "/" as "\/" (PHP's json_encode): the token, backslashes aside, was in the status, the event and the log.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"message":"invalid `+strings.ReplaceAll(r.Header.Get("Authorization"), "/", `\/`)+`"}`)
			},
		},
		"ErrorBodyCutByBrokenConnection": {
			reason: "Attack: a 401 whose body repeats the header, its connection broken before the announced Content-Length: the part of the token that came was in the status, the event and the log.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				body := "invalid " + r.Header.Get("Authorization")[:40]
				_, _ = fmt.Fprintf(buf, "HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s", len(body)+100, body)
				_ = buf.Flush()
			},
		},
	}
	for name, tc := range shapes {
		t.Run(name, func(t *testing.T) {
			provider := httptest.NewServer(tc.handler)
			t.Cleanup(provider.Close)
			input := emptyInput + "metricProviders: [{name: prometheus, prometheus: {address: \"" + provider.URL + "\", credentials: prometheus}}]\n"
			s := newSim(t, metricsXR("", ""), input)
			s.querier = &promql.Client{}
			s.credentials = map[string]*fnv1.Credentials{"prometheus": {Source: &fnv1.Credentials_CredentialData{CredentialData: &fnv1.CredentialData{Data: map[string][]byte{"token": []byte(token)}}}}}
			log := newRecordingLog()
			s.log = log
			said := map[string]string{}
			measured := false
			for i := range 10 {
				r := s.run(0)
				wire, err := protojson.Marshal(r.rsp)
				if err != nil {
					t.Fatal(err)
				}
				said[fmt.Sprint("response ", i)] = string(wire)
				for _, e := range r.events {
					measured = measured || strings.Contains(e, "MetricNoData")
					said[fmt.Sprint("event ", i)] += e
				}
			}
			if !measured {
				t.Fatalf("no MetricNoData event: the provider was not asked\n%s", s.describe())
			}
			status, err := json.Marshal(s.status)
			if err != nil {
				t.Fatal(err)
			}
			said["status"], said["log"] = string(status), log.String()
			var holders []string
			for where, text := range said {
				plain := strings.ReplaceAll(text, `\`, "")
				if i := strings.Index(plain, token[:16]); i >= 0 {
					holders = append(holders, fmt.Sprintf("%s: ...%s...", where, plain[max(0, i-60):min(len(plain), i+60)]))
				}
			}
			if len(holders) > 0 {
				slices.Sort(holders)
				t.Errorf("%s\nthe token (backslashes aside) is in:\n%s", tc.reason, strings.Join(holders, "\n"))
			}
		})
	}
}

// TestMetricQueryLengthInCharacters: the XRD's maxLength counts a query's
// characters, and so does the function, from the first size check to the
// PromQL check: a query in Greek the XRD admits is no Fatal, though it is
// longer than 4,096 bytes.
func TestMetricQueryLengthInCharacters(t *testing.T) {
	xrOf := func(value string) string {
		return steppedXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, `    metrics:
      - {name: greek, provider: prometheus, successWhen: "result <= 0.01", query: 'sum(x{service="{{service}}", team="`+value+`"})'}
`)
	}
	prefix := len([]rune(`sum(x{service="{{service}}", team="`)) + len(`"})`)
	cases := map[string]struct {
		reason string
		value  string
		want   string // a part of the Fatal; "" for none
	}{
		"GreekWithinTheLimit": {
			reason: "Attack: 2,138 characters, 4,238 bytes: the XRD admits it, and so does the function.",
			value:  strings.Repeat("α", 2100),
		},
		"GreekAtTheLimit": {
			reason: "4,096 characters, twice as many bytes.",
			value:  strings.Repeat("α", 4096-prefix),
		},
		"GreekOverTheLimit": {
			reason: "4,097 characters are a Fatal naming the field, as the XRD would refuse them.",
			value:  strings.Repeat("α", 4097-prefix),
			want:   "spec.traffic.metrics[0].query: Too long: may not be more than 4096 characters",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := functionAt(testNow).RunFunction(context.Background(), testRequest(t, xrOf(tc.value), metricsInput, nil))
			if err != nil {
				t.Fatal(err)
			}
			got := fatalOf(rsp)
			if tc.want == "" {
				if diff := cmp.Diff("", got); diff != "" {
					t.Errorf("%s\nthe Fatal: -want, +got:\n%s", tc.reason, diff)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s\nthe Fatal %q does not say %q", tc.reason, got, tc.want)
			}
		})
	}
}
