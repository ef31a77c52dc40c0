package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/dashboards"
	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// Metric analysis against the real gateway: a real Prometheus scrapes
// Traefik's request metrics (controlplane.Environment.StartPrometheus),
// the function queries it itself (it runs out of cluster, so Prometheus's
// loopback address is reachable), and a load generator sends requests
// through the gateway all along, so that every window the function
// measures holds traffic.

// errorRatio is docs/metrics.md's Traefik recipe: a side's 5xx ratio over
// the metric's interval, from the requests the gateway sent to that side's
// Service ({{service}}: the proxy Service web-primary or web-canary). A
// side without any 5xx has no such series: "or vector(0)" makes it 0. A
// side without requests in the window is 0/0, no data: the step holds.
// While Traefik has not seen a side's Service yet, it answers that side's
// share with 500s itself (Gateway API's rule for a backendRef it cannot
// resolve), from the route's weighted service: those are not counted
// under the side's own service, so a side's ratio is its backend's.
const errorRatio = `(sum(rate(traefik_service_requests_total{service=~".*-svc-{{namespace}}-{{service}}-[0-9]+@kubernetesgateway", code=~"5.."}[{{interval}}])) or vector(0))
/ sum(rate(traefik_service_requests_total{service=~".*-svc-{{namespace}}-{{service}}-[0-9]+@kubernetesgateway"}[{{interval}}]))`

// Figures of the metric tests: short steps, the shortest interval the XRD
// admits, a load that puts about 5 canary requests a second into the
// window at 20%.
const (
	metricInterval = 5 * time.Second
	loadPerSecond  = 25
	// metricSteps are every metric test's steps: each with a weight above
	// 0, so a metric without steps counts in all three.
	metricSteps = "[{weight: 20, pause: 10s}, {weight: 50, pause: 10s}, {weight: 100}]"
	// metricWait bounds a metric test's rollout: about 40 s when nothing
	// lags; progressDeadline (1m) fails a rollout held longer first.
	metricWait = 3 * time.Minute
)

// startPrometheus starts the Prometheus that scrapes the gateway (one for every
// test that asks) and returns its URL.
func startPrometheus(t *testing.T) string {
	t.Helper()
	prom, err := env.cp.StartPrometheus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return prom
}

// metricsRollout is a rollout judged by metrics, under load through the
// gateway: the namespace, the steps and the route's canary weights as they
// were written, when the XR was applied, the canary's backend, and the
// probe of its hostname.
type metricsRollout struct {
	ns     string
	steps  *stepWatch
	rec    *recorder
	start  time.Time
	canary *backends.Server
	p      probe
}

// startMetricsRollout applies a metricsXR with the metrics given (YAML) in a
// new namespace named after prefix, serves both sides with the options
// given, and sends the probe's load; the watches start before the XR.
func startMetricsRollout(t *testing.T, prefix, metrics string, primaryOpts, canaryOpts []backends.Option) metricsRollout {
	t.Helper()
	prom := startPrometheus(t)
	r := metricsRollout{ns: newNamespace(t, prefix)}
	xr := metricsXR(t, r.ns, prom, freePort(t), metrics)
	r.steps = watchSteps(t, r.ns, "web")
	r.rec = record(t, gvkHTTPRoute, r.ns, "web", "web-canary")
	r.start = time.Now()
	apply(t, xr)
	serve(t, r.ns, "web-primary", primary, primaryOpts...)
	r.canary = serve(t, r.ns, "web-canary", canary, canaryOpts...)
	r.p = probe{host: hostname(r.ns)}
	load(t, r.p, loadPerSecond)
	return r
}

// metricsXR is trafficXR with metricSteps, a progressDeadline of 1m, and
// the metrics of traffic (YAML of a list, each without provider and
// query, which are the Input's provider and errorRatio), composed by the
// metrics example's Composition (named after the namespace) whose Input
// lists one provider querying prom. The provider is named after the
// namespace, so that the function's own metrics, by provider, count this
// test's queries alone.
func metricsXR(t *testing.T, ns, prom string, port int, metrics string) *unstructured.Unstructured {
	t.Helper()
	xr := trafficXR(t, ns, port, "")
	traffic := spec(t, fmt.Sprintf("steps: %s\nprogressDeadline: 1m\nmetrics: %s", metricSteps, metrics))
	list, _ := traffic["metrics"].([]any)
	for _, m := range list {
		mm, _ := m.(map[string]any)
		mm["provider"], mm["query"] = ns, errorRatio
	}
	set(t, xr, traffic, "spec", "traffic")
	useComposition(t, xr, composition(t, "metrics", ns+"-metrics", func(in map[string]any) {
		in["metricProviders"] = []any{map[string]any{
			"name": ns,
			// The longest a query may take: a loaded machine's Prometheus
			// is better waited for than held.
			"prometheus": map[string]any{"address": prom, "timeout": "5s"},
		}}
	}))
	return xr
}

// A loader sends requests through the gateway at a steady rate until the
// test ends, on a connection of its own, and counts who answered with
// which status.
type loader struct {
	mu      sync.Mutex
	answers map[string]int
	// first and last are when each answer was first and last seen.
	first, last map[string]time.Time
}

// load starts a loader for p, once both sides are served: a request the
// gateway sends to a Service nobody serves yet would count as a 5xx of
// that side.
func load(t *testing.T, p probe, perSecond int) *loader {
	l := &loader{answers: map[string]int{}, first: map[string]time.Time{}, last: map[string]time.Time{}}
	client := &http.Client{
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		client.CloseIdleConnections()
		t.Logf("the load generator's %d requests for %s were answered %s", l.total(), p, l)
	})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			who := send(ctx, client, p)
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			l.mu.Lock()
			l.answers[who]++
			if _, ok := l.first[who]; !ok {
				l.first[who] = now
			}
			l.last[who] = now
			l.mu.Unlock()
		}
	}()
	return l
}

// send sends one request and says who answered with which status.
func send(ctx context.Context, client *http.Client, p probe) string {
	u := url.URL{Scheme: "http", Host: env.cp.GatewayAddress, Path: "/"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return "error: " + err.Error()
	}
	req.Host = p.host
	rsp, err := client.Do(req)
	if err != nil {
		return "error"
	}
	defer rsp.Body.Close()
	_, _ = io.Copy(io.Discard, rsp.Body)
	who := rsp.Header.Get(backends.Header)
	if who == "" {
		who = "the gateway"
	}
	return fmt.Sprintf("%s %d", who, rsp.StatusCode)
}

func (l *loader) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.answers {
		n += c
	}
	return n
}

// String counts the answers, and says when each was seen.
func (l *loader) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.answers))
	for k := range l.answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d from %s to %s", k, l.answers[k], l.first[k].UTC().Format("15:04:05.0"), l.last[k].UTC().Format("15:04:05.0")))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// measurement is one of status.rollout.metrics[].measurements.
type measurement struct {
	Time     metav1.Time `json:"time"`
	Step     int32       `json:"step"`
	Value    string      `json:"value"`
	Baseline string      `json:"baseline"`
	Verdict  string      `json:"verdict"`
	Reason   string      `json:"reason"`
}

func (m measurement) String() string {
	s := fmt.Sprintf("%s step %d %s", m.Time.UTC().Format("15:04:05"), m.Step, m.Verdict)
	if m.Value != "" {
		s += " " + m.Value
	}
	if m.Baseline != "" {
		s += " (baseline " + m.Baseline + ")"
	}
	if m.Reason != "" {
		s += ": " + m.Reason
	}
	return s
}

// measurements are the XR's recorded measurements, by metric.
func measurements(u *unstructured.Unstructured) map[string][]measurement {
	var list []struct {
		Name         string        `json:"name"`
		Measurements []measurement `json:"measurements"`
	}
	m, _, _ := unstructured.NestedSlice(u.Object, "status", "rollout", "metrics")
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &list)
	out := map[string][]measurement{}
	for _, x := range list {
		out[x.Name] = x.Measurements
	}
	return out
}

// verdicts counts a metric's measurements by verdict, by step.
func verdicts(ms []measurement) map[int32]map[string]int {
	out := map[int32]map[string]int{}
	for _, m := range ms {
		if out[m.Step] == nil {
			out[m.Step] = map[string]int{}
		}
		out[m.Step][m.Verdict]++
	}
	return out
}

// A stepWatch follows the XR's status.rollout: when each step started, as
// the status said while it was current.
type stepWatch struct {
	mu      sync.Mutex
	started map[int64]time.Time
}

// watchSteps polls the XR every 250 ms until the test ends.
func watchSteps(t *testing.T, ns, name string) *stepWatch {
	w := &stepWatch{started: map[int64]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if u, err := env.c.Get(ctx, gvkCanaryRoute, ns, name); err == nil {
				r := rollout(u)
				if at, err := time.Parse(time.RFC3339, r.StepStartedAt); err == nil && r.Step != nil && r.Phase == "Progressing" {
					w.mu.Lock()
					if _, ok := w.started[*r.Step]; !ok {
						w.started[*r.Step] = at
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}()
	return w
}

func (w *stepWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	parts := make([]string, 0, len(w.started))
	for i := range int64(len(w.started)) {
		if at, ok := w.started[i]; ok {
			parts = append(parts, fmt.Sprintf("step %d at %s", i, at.UTC().Format("15:04:05")))
		}
	}
	return strings.Join(parts, ", ")
}

// startOf is when a step started, if the watch saw it current.
func (w *stepWatch) startOf(step int32) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.started[int64(step)]
	return at, ok
}

// checkSpacing checks what docs/metrics.md says of when a metric is
// measured: an interval or more after its step started (as the status
// said while the step was current), and an interval or more after the
// metric's previous measurement, so at most once per interval whatever the
// reconcile rate.
func checkSpacing(t *testing.T, w *stepWatch, metric string, ms []measurement) {
	t.Helper()
	t.Logf("metric %s: %s", metric, w)
	for i, m := range ms {
		if start, ok := w.startOf(m.Step); !ok {
			t.Errorf("metric %s: measurement %s at step %d, which the status never showed current", metric, m, m.Step)
		} else if d := m.Time.Sub(start); d < metricInterval {
			t.Errorf("metric %s: measurement %s taken %s after its step started at %s, want an interval (%s) or more", metric, m, d, start.UTC().Format("15:04:05"), metricInterval)
		}
		if i > 0 {
			if d := m.Time.Sub(ms[i-1].Time.Time); d < metricInterval {
				t.Errorf("metric %s: measurements %s and %s are %s apart, want an interval (%s) or more", metric, ms[i-1], m, d, metricInterval)
			}
		}
	}
}

// functionQueries are the queries the function sent to a provider, by
// result, from its own metric function_canary_route_metric_queries_total.
func functionQueries(ctx context.Context, provider string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.functionMetrics+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	rsp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close()
	families, err := dashboards.Scrape(io.LimitReader(rsp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, m := range families["function_canary_route_metric_queries_total"].GetMetric() {
		var ofProvider bool
		var result string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "provider":
				ofProvider = l.GetValue() == provider
			case "result":
				result = l.GetValue()
			}
		}
		if ofProvider {
			out[result] += int(m.GetCounter().GetValue())
		}
	}
	return out, nil
}

// checkQueries checks that the function sent a provider exactly the
// queries that the recorded measurements took (sides per measurement: 2
// with compareTo), so that none was sent again within its interval.
func checkQueries(t *testing.T, provider string, want int) {
	t.Helper()
	got, err := functionQueries(t.Context(), provider)
	if err != nil {
		t.Fatalf("the function's metrics: %v", err)
	}
	n := 0
	for _, c := range got {
		n += c
	}
	if n != want {
		t.Errorf("function_canary_route_metric_queries_total{provider=%q}: %d queries %v, want %d, one per side of each recorded measurement", provider, n, got, want)
	}
	t.Logf("function_canary_route_metric_queries_total{provider=%q}: %v", provider, got)
}

// eventsOf are an XR's events with a reason: their messages and how many
// times each was sent.
func eventsOf(ctx context.Context, ns, name, reason string) ([]string, int, error) {
	events, err := env.c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var msgs []string
	sent := 0
	for _, e := range events.Items {
		if e.InvolvedObject.Name != name || e.InvolvedObject.Kind != gvkCanaryRoute.Kind || e.Reason != reason {
			continue
		}
		msgs = append(msgs, e.Message)
		sent += int(max(e.Count, 1))
	}
	sort.Strings(msgs)
	return msgs, sent, nil
}

// rolloutEnded checks that the XR's rollout reached a phase with a reason and
// a canary weight.
func rolloutEnded(ns, name, phase, reason string, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		return r.Phase == phase && (reason == "" || r.Reason == reason) && r.CanaryWeight == weight,
			fmt.Sprintf("%s; measurements %v", xrState(u), measurements(u))
	}
}

// checkDashboardSeries scrapes the function, running under Crossplane,
// after a measured rollout of the CanaryRoute web in ns: every series the
// dashboard of dashboards/ selects is served, and the rollout's own series
// say it Succeeded at 100% with its metric's latest measurement.
func checkDashboardSeries(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.functionMetrics+"/metrics", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatalf("cannot scrape the function: %v", err)
	}
	defer rsp.Body.Close()
	families, err := dashboards.Scrape(io.LimitReader(rsp.Body, 8<<20))
	if err != nil {
		t.Fatalf("cannot read the function's metrics: %v", err)
	}
	served := dashboards.Names(families)
	// The rollout's own series, as "name{label=value,...} value" in the
	// order of their labels, for the messages and the checks below.
	var rollout []string
	for name, f := range families {
		if !strings.HasPrefix(name, "function_canary_route_rollout_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			inNamespace := false
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				inNamespace = inNamespace || (l.GetName() == "namespace" && l.GetValue() == ns)
			}
			if inNamespace {
				rollout = append(rollout, fmt.Sprintf("%s{%s} %g", name, strings.Join(labels, ","), m.GetGauge().GetValue()))
			}
		}
	}
	queries, err := dashboards.Queries(filepath.Join(env.root, "dashboards", "function-canary-route.json"))
	if err != nil {
		t.Fatal(err)
	}
	for where, q := range queries {
		names, err := dashboards.SeriesNames(q)
		if err != nil {
			t.Errorf("dashboard %s: %v", where, err)
			continue
		}
		for _, n := range names {
			if !served[n] {
				t.Errorf("dashboard %s selects %s, which the function under Crossplane does not serve", where, n)
			}
		}
	}
	slices.Sort(rollout)
	want := []string{
		fmt.Sprintf(`function_canary_route_rollout_phase{name="web",namespace=%q,phase="Succeeded"} 1`, ns),
		fmt.Sprintf(`function_canary_route_rollout_weight_percent{name="web",namespace=%q,side="canary"} 100`, ns),
	}
	for _, w := range want {
		if !slices.Contains(rollout, w) {
			t.Errorf("the function's series of the rollout lack %s:\n%s", w, strings.Join(rollout, "\n"))
		}
	}
	if !slices.ContainsFunc(rollout, func(l string) bool {
		return strings.HasPrefix(l, "function_canary_route_rollout_measurement{") && strings.Contains(l, `metric="error-rate"`)
	}) {
		t.Errorf("the function's series of the rollout have no measurement of error-rate:\n%s", strings.Join(rollout, "\n"))
	}
}
