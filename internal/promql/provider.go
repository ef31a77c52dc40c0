package promql

import (
	"net/http"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// An api is what differs between the kinds of providers once a query is
// expanded: where it goes, how it authenticates, and how the answer reads.
// Everything else of a query (its timeout and the run's deadline, the
// redirects refused, the answer read to MaxAnswer, the credentials
// redacted from whatever is quoted) is the Client's, the same for every
// kind.
type api interface {
	// endpoint is the URL of the query of p at the instant at.
	endpoint(p Provider, query string, at time.Time) (string, error)
	// authorize sets the request's credentials.
	authorize(req *http.Request, a Auth)
	// answer reads an answer of 200 OK: its one finite number, or why
	// there is none (which does not name the provider), and the outcome.
	answer(body []byte, secrets redact.Secrets) (float64, string, string)
	// httpError says what an answer of another status holds.
	httpError(status int, body []byte, secrets redact.Secrets) string
}

// api is the provider's kind's API.
func (p Provider) api() api {
	switch p.Kind {
	case KindDatadog:
		return datadogAPI{}
	case KindWeb:
		return webAPI{jsonPath: p.JSONPath}
	default:
		return prometheusAPI{}
	}
}

// Check checks a metric's query as the provider's kind reads it: PromQL
// for a Prometheus provider (CheckOnce: every bound of Check, once per
// text); for the others, whose query languages the function does not
// parse, CheckPlaceholders.
func (p Provider) Check(query string) error {
	switch p.Kind {
	case KindDatadog, KindWeb:
		return CheckPlaceholders(query)
	default:
		return CheckOnce(query)
	}
}

// CheckPlaceholders checks a query in a language the function does not
// parse (Datadog's, a web endpoint's): at most MaxQueryLength characters,
// as the XRD counts them, and only known placeholders, each closed. Where
// a placeholder stands does not matter: Request makes each value harmless
// wherever it lands (Datadog's tag characters; the whole query escaped for
// the URL of a web provider).
func CheckPlaceholders(query string) error {
	if n, long := tooLong(query); long {
		return errors.Errorf(errFmtTooLong, n, MaxQueryLength)
	}
	for i := 0; ; {
		j := strings.Index(query[i:], placeholderOpen)
		if j < 0 {
			return nil
		}
		_, end, err := placeholder(query, i+j)
		if err != nil {
			return err
		}
		i = end
	}
}

// Request is what one query of the provider sends for the side v
// measures: the query with its placeholders expanded as the provider's
// kind needs them, and the provider as that query uses it. Prometheus: the
// values escaped for PromQL strings (Expand). Datadog: the values in
// Datadog's tag characters (ExpandDatadog), and the metric's interval as
// the window queried. Web: the query's placeholders replaced by their
// values as they are, and the URL's, {{query}} among them, filled and
// escaped for where each stands in the URL (FillURL).
func (p Provider) Request(query string, v Values) Request {
	switch p.Kind {
	case KindDatadog:
		p.Window = v.Interval
		return Request{Provider: p, Query: ExpandDatadog(query, v)}
	case KindWeb:
		q := expand(query, func(name string) string { return raw(name, v) })
		p.Address = FillURL(p.Address, v, q)
		return Request{Provider: p, Query: q}
	default:
		return Request{Provider: p, Query: Expand(query, v)}
	}
}

// raw is a placeholder's value as it is: the interval as a PromQL duration
// ("1m", what Flagger's and Argo's templates give too).
func raw(name string, v Values) string {
	switch name {
	case PlaceholderNamespace:
		return v.Namespace
	case PlaceholderRoute:
		return v.Route
	case PlaceholderService:
		return v.Service
	case PlaceholderRevision:
		return v.Revision
	default: // PlaceholderInterval
		return Duration(v.Interval)
	}
}
