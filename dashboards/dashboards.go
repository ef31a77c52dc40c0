// Package dashboards holds the Grafana dashboards of function-canary-route
// (JSON) and reads their queries, for the tests that check them: every
// query parses with Prometheus's parser and names only series the function
// serves (dashboard_test.go against its registry, test/live against the
// function running under Crossplane).
package dashboards

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// dashboard is what is read of a Grafana dashboard.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// grafanaVariables stand in for what Grafana substitutes before a query
// reaches Prometheus.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "${namespace}", ".*")

// labelValues is Grafana's variable query, which is not PromQL.
var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// Queries are every query of the dashboard at path, by where it is written
// (a panel's title and its target's letter, or a variable's $name).
func Queries(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // A dashboard of the repository, named by its tests.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the dashboard")
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, errors.Wrapf(err, "cannot decode the dashboard %s", path)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[p.Title+"#"+string(rune('A'+i))] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out["$"+v.Name] = v.Definition
		}
	}
	return out, nil
}

// SeriesNames are the metric names a query selects, read by Prometheus's
// parser once Grafana's variables are substituted.
func SeriesNames(query string) ([]string, error) {
	if m := labelValues.FindStringSubmatch(query); m != nil {
		return []string{m[1]}, nil
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(query))
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the query")
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}

// Scrape reads an exposition in Prometheus's text format, as the function's
// metrics server writes it, into its metric families by name.
func Scrape(exposition io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(exposition)
	return families, errors.Wrap(err, "cannot read the exposition")
}

// Names are the series names that families serve, as a query selects them:
// each family's own, and a histogram's _bucket, _sum and _count.
func Names(families map[string]*dto.MetricFamily) map[string]bool {
	out := make(map[string]bool, len(families))
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = true
			}
		}
	}
	return out
}
