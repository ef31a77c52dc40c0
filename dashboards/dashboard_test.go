package dashboards

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// scraped are the series names a function serves once it has decided a
// rollout with a measurement, queried a provider and called a hook's
// webhook: its registry as
// main.go wires it, scraped over HTTP in the exposition format.
func scraped(t *testing.T) map[string]bool {
	t.Helper()
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	runs, err := telemetry.NewRuns(reg, func() time.Time { return now }, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := telemetry.RegisterMemory(reg, func() (int, uint64) { return 1, 1024 }); err != nil {
		t.Fatal(err)
	}
	step := int32(0)
	runs.Record(telemetry.Outcome{
		Result: telemetry.ResultComposed, Applied: true, Stale: "status",
		Rollout: telemetry.RolloutOf("u1", "team", "web", 2, &xr.RolloutStatus{
			Phase: xr.PhaseProgressing, Step: &step, PrimaryWeight: percent.Int(90), CanaryWeight: percent.Int(10),
			Metrics: []xr.MetricStatus{{Name: "errors", Measurements: []xr.Measurement{{Value: "0.01", Verdict: xr.VerdictPassed}}}},
		}),
	}, now)
	runs.Query("prometheus", "ok", time.Second)
	runs.HookCall("rollout", telemetry.HookSucceeded, 100*time.Millisecond)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	rsp, err := http.Get(srv.URL) //nolint:noctx // A test's own loopback server.
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	families, err := Scrape(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Names(families)
}

func TestDashboardQueries(t *testing.T) {
	served := scraped(t)
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, f := range files {
		for where, q := range mustQueries(t, f) {
			names, err := SeriesNames(q)
			if err != nil {
				t.Errorf("%s %s: %q does not parse: %v", f, where, q, err)
				continue
			}
			if len(names) == 0 {
				t.Errorf("%s %s: %q selects no series", f, where, q)
			}
			for _, n := range names {
				if !served[n] {
					t.Errorf("%s %s: %q selects %s, which the function does not serve", f, where, q, n)
				}
			}
		}
	}
}

// TestDashboardCoversTheFunction keeps the dashboard whole: every series
// the function serves of its own (function_canary_route_*) is on it.
func TestDashboardCoversTheFunction(t *testing.T) {
	served := scraped(t)
	onDashboard := map[string]bool{}
	for where, q := range mustQueries(t, "function-canary-route.json") {
		names, err := SeriesNames(q)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for _, n := range names {
			onDashboard[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	var missing []string
	for n := range served {
		if !strings.HasPrefix(n, "function_canary_route_") {
			continue
		}
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suffix)
		}
		if !onDashboard[base] && !onDashboard[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("series the function serves that the dashboard does not show: -want, +got:\n%s", diff)
	}
}

func TestSeriesNamesOfQueries(t *testing.T) {
	cases := map[string]struct {
		query string
		want  []string
		err   bool
	}{
		"Rate":        {query: `sum by (result) (rate(function_canary_route_runs_total[$__rate_interval]))`, want: []string{"function_canary_route_runs_total"}},
		"Variable":    {query: `max by (name) (function_canary_route_rollout_step{namespace=~"$namespace"})`, want: []string{"function_canary_route_rollout_step"}},
		"LabelValues": {query: `label_values(function_canary_route_rollout_phase, namespace)`, want: []string{"function_canary_route_rollout_phase"}},
		"Broken":      {query: `sum by (result (rate(x[5m]))`, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SeriesNames(tc.query)
			if (err != nil) != tc.err {
				t.Fatalf("SeriesNames(%q): error %v, want error %t", tc.query, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SeriesNames(%q): -want, +got:\n%s", tc.query, diff)
			}
		})
	}
}

// mustQueries are the queries of a dashboard, or the test's end.
func mustQueries(t *testing.T, path string) map[string]string {
	t.Helper()
	q, err := Queries(path)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
