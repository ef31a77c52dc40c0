package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
)

// TestTrafficMetrics measures a canary by its own traffic, as metric
// analysis will: a real Prometheus scrapes the real gateway's request
// metrics, and PromQL over them returns the canary's requests and its 5xx
// ratio (a canary answering 500s), exactly as many as the backends
// answered. Prometheus runs only for this test
// (controlplane.Environment.StartPrometheus).
func TestTrafficMetrics(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	prom, err := env.cp.StartPrometheus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "metrics")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the gateway's metrics of %s:\n%s", ns, gatewayMetrics(ns))
		}
	})
	port := freePort(t)
	// Services of the test's own (backendRef sides), served before the
	// route exists: the gateway never sends them a request that no
	// backend answers.
	service(t, ns, "web-v1", port, "")
	service(t, ns, "web-v2", port, "")
	pri := serve(t, ns, "web-v1", primary)
	can := serve(t, ns, "web-v2", canary, backends.WithStatus(http.StatusInternalServerError))
	xr := trafficXR(t, ns, port, fmt.Sprintf(`
primary: {backendRef: {name: web-v1, port: %d}}
canary: {backendRef: {name: web-v2, port: %d}, revision: v2}
traffic: {weight: 50}`, port, port))
	apply(t, xr)
	awaitAnswers(t, "50%, the canary answering 500", probe{host: hostname(ns)}, split(50))

	// Traefik counts the requests of each backend of a route in
	// traefik_service_requests_total{service,code}, whose service label is
	// httproute-<ns>-<route>-gw-<gateway ns>-<gateway>-ep-<entry point>-
	// <rule>-<hash>-svc-<backend ns>-<backend>-<index in the rule>
	// @kubernetesgateway; the weighted service itself has none. A side
	// without 5xx has no series with such a code: "or vector(0)" makes its
	// count 0 instead of no answer.
	series := func(backend, codes string) string {
		return fmt.Sprintf(`traefik_service_requests_total{service=~"httproute-%s-web-gw-.*-svc-%s-%s-[0-9]+@kubernetesgateway", code=~%q}`, ns, ns, backend, codes)
	}
	count := func(backend, codes string) string {
		return fmt.Sprintf("(sum(%s) or vector(0))", series(backend, codes))
	}
	ratio := func(backend string) string { return count(backend, "5..") + " / " + count(backend, ".*") }
	// The shape of metric analysis's error-rate query: a ratio of rates.
	rateRatio := func(backend string) string {
		return fmt.Sprintf("(sum(rate(%s[1m])) or vector(0)) / sum(rate(%s[1m]))", series(backend, "5.."), series(backend, ".*"))
	}
	want := func(query string, value func() float64) {
		t.Helper()
		await(t, settle, "Prometheus answers "+query+" with what the backends counted", func(ctx context.Context) (bool, string) {
			got, err := promQuery(ctx, prom, query)
			if err != nil {
				return false, err.Error()
			}
			w := value()
			return got == w, fmt.Sprintf("%v, the backends counted %v", got, w)
		})
	}
	want(count("web-v2", ".*"), func() float64 { return float64(can.Requests()) })
	want(count("web-v2", "5.."), func() float64 { return float64(can.Requests()) })
	want(count("web-v1", ".*"), func() float64 { return float64(pri.Requests()) })
	want(count("web-v1", "5.."), func() float64 { return 0 })
	want(ratio("web-v2"), func() float64 { return 1 })
	want(ratio("web-v1"), func() float64 { return 0 })
	// A rate needs the counter to grow between two scrapes: Prometheus saw
	// the counts above, now a second batch.
	awaitAnswers(t, "a second batch", probe{host: hostname(ns)}, split(50))
	want(count("web-v2", ".*"), func() float64 { return float64(can.Requests()) })
	want(rateRatio("web-v2"), func() float64 { return 1 })
	want(rateRatio("web-v1"), func() float64 { return 0 })
	t.Logf("the canary answered %d requests, the primary %d; Prometheus counted as many", can.Requests(), pri.Requests())
}

// promQuery runs an instant PromQL query and returns its one sample.
func promQuery(ctx context.Context, prom, query string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := prom + "/api/v1/query?" + url.Values{"query": {query}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return 0, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(rsp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%s: %w", body, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %s: %s %s", query, r.Status, r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("query %s: %d samples, want 1: %s", query, len(r.Data.Result), body)
	}
	s, ok := r.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("query %s: no value: %s", query, body)
	}
	return strconv.ParseFloat(s, 64)
}

// gatewayMetrics returns the lines of the gateway's own metrics that name a
// namespace, for a failure.
func gatewayMetrics(ns string) string {
	rsp, err := http.Get("http://" + env.cp.GatewayMetrics + "/metrics") //nolint:noctx // A failure's report.
	if err != nil {
		return err.Error()
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(rsp.Body, 8<<20))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, ns) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
