// Package promql turns a metric's query into a measured number, bounded and
// safe: it checks a query as a CanaryRoute writes it, expands its
// placeholders for the side measured, and asks the provider (Prometheus's
// HTTP API, Datadog's metrics query API, or a web endpoint's JSON) for one
// number. Whatever the provider does (hang, redirect, answer gigabytes,
// NaN or a thousand series), a query ends within its timeout and the run's
// deadline, reads at most MaxAnswer bytes, and gives either a finite number
// or a short reason why there is none.
package promql

import (
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
)

const (
	// MaxQueryLength is the most bytes of a query as written.
	MaxQueryLength = 4096
	// MaxAnswer is the most bytes of an answer read.
	MaxAnswer = 1 << 20
	// MaxTimeout is the longest a query may take.
	MaxTimeout = 5 * time.Second
	// DefaultTimeout is how long a query may take when its provider does not
	// say. A healthy Prometheus answers an instant query in milliseconds; two
	// seconds leave room for a loaded one while keeping a run, which queries
	// all its metrics at once, far from Crossplane's function timeout.
	DefaultTimeout = 2 * time.Second
)

// Outcomes of a query, as the function's metric of queries labels them.
const (
	// OutcomeOK is an answer of one finite number.
	OutcomeOK = "ok"
	// OutcomeNoData is a valid answer without one number: no series,
	// several, NaN, ±Inf, a range vector or a string.
	OutcomeNoData = "no_data"
	// OutcomeError is no valid answer: the provider cannot be reached, timed
	// out, was redirected, answered an error, invalid JSON or too much.
	OutcomeError = "error"
)

// Kind is the API a provider speaks: it selects how a query is checked,
// expanded, sent and read.
type Kind string

// The kinds of providers.
const (
	// KindPrometheus is Prometheus's HTTP API (or one that speaks it). The
	// zero Kind is KindPrometheus: the one kind there was.
	KindPrometheus Kind = "prometheus"
	// KindDatadog is Datadog's metrics query API (GET /api/v1/query).
	KindDatadog Kind = "datadog"
	// KindWeb is an HTTP GET of a URL that answers JSON, read by a
	// jsonPath.
	KindWeb Kind = "web"
)

// A Provider is one of the Input's metricProviders, resolved: its kind,
// address, timeout and credentials. Request turns it, with a query and the
// side measured, into what one query sends.
type Provider struct {
	// Name names the provider in every reason a Result gives.
	Name string
	// Kind is the API the provider speaks; "" is KindPrometheus.
	Kind Kind
	// Address is where queries go. For KindPrometheus, the base URL of
	// Prometheus's HTTP API, such as http://prometheus.monitoring.svc:9090;
	// a path is kept as a prefix (http://thanos/prometheus queries
	// /prometheus/api/v1/query). For KindDatadog, the API's base URL,
	// https://api.<site>. For KindWeb, the URL itself: in the Input's
	// policy its template, placeholders and all; in a Request, filled.
	Address string
	// JSONPath selects the one number of a KindWeb provider's answer, in
	// kubectl's syntax, such as {.data.ratio}.
	JSONPath string
	// Window is how far back a KindDatadog query reaches from the instant
	// it is asked at: the metric's interval, which Request sets.
	Window time.Duration
	// Timeout bounds each query: zero is DefaultTimeout, more than
	// MaxTimeout is MaxTimeout.
	Timeout time.Duration
	// Auth is how queries authenticate.
	Auth Auth
}

// timeout is the provider's timeout, defaulted and bounded.
func (p Provider) timeout() time.Duration {
	return atonce.Timeout(p.Timeout, DefaultTimeout, MaxTimeout)
}

// A Result is one query's answer: a number, or why there is none.
type Result struct {
	// Value is the number measured, when NoData is empty.
	Value float64
	// NoData, when not empty, says why the answer is no number: the
	// provider cannot be reached, timed out, answered an error or something
	// else than one finite number (no series, several, NaN, ±Inf, a matrix,
	// a string), or more than MaxAnswer bytes. It names the provider, and
	// quotes at most 256 characters of anything.
	NoData string
	// Outcome labels the function's metric of queries: OutcomeOK,
	// OutcomeNoData or OutcomeError.
	Outcome string
	// Took is how long the query took; zero when not measured.
	Took time.Duration
}
