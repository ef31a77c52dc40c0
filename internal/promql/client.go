package promql

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/egress"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

const (
	whyFmtAddress        = "an invalid address: %s"
	whyFmtRedirect       = "redirected (HTTP %d to %s); redirects are never followed, so that credentials go nowhere else: set the address the redirect names"
	whyFmtHTTP           = "HTTP %d: %s"
	whyFmtHTTPError      = "HTTP %d: %s: %s"
	whyTooLarge          = "an answer of more than 1 MiB"
	whyFmtCA             = "an unusable CA: %s"
	errAddressScheme     = "the scheme is not http or https"
	errAddressHost       = "no host"
	errAddressUserinfo   = "it holds credentials: give them as the provider's credentials"
	errAddressQuery      = "it holds a query or a fragment"
	errCANoCertificate   = "no PEM certificate"
	queryPath            = "/api/v1/query"
	maxErrorBody         = 64 << 10
	maxTransports        = 8
	headerAuthorization  = "Authorization"
	prometheusErrorState = "error"
)

// A Querier answers queries; Client asks the providers, tests bring their
// own.
type Querier interface {
	// Query asks p for the number query gives at the instant at, within
	// p's timeout and ctx.
	Query(ctx context.Context, p Provider, query string, at time.Time) Result
}

// Client queries a provider: for Prometheus, GET <address>/api/v1/query
// with the query and the time (an instant query); for Datadog, its metrics
// query API over the window; for a web provider, a GET of its URL. It
// sends the provider's auth, never following a redirect (credentials must
// not leave the platform's endpoint), reading at most MaxAnswer bytes,
// within the provider's timeout and the context's deadline. Its zero value
// is ready; it keeps connections alive across runs, one pool per CA
// bundle. It must not be copied once used.
type Client struct {
	// HTTP, when not nil, makes the requests instead of the Client's own:
	// its redirects are never followed either, and a provider's CA is then
	// its transport's business.
	HTTP *http.Client
	// Now reads a stopwatch for Result.Took: main.go's wiring gives
	// time.Now. Nil leaves Took zero.
	Now func() time.Time

	mu         sync.Mutex
	transports map[[sha256.Size]byte]*http.Client
}

var _ Querier = &Client{}

// Query asks p for the number query gives at the instant at. It returns
// within p's timeout (DefaultTimeout when zero, at most MaxTimeout) and
// ctx's deadline, whatever p does. Its reason never holds p's credentials,
// whatever p answers: whatever it quotes of the answer is redacted first
// (redact.Secrets).
func (c *Client) Query(ctx context.Context, p Provider, query string, at time.Time) Result {
	var start time.Time
	if c.Now != nil {
		start = c.Now()
	}
	value, why, outcome := c.query(ctx, p, query, at, p.Auth.Secrets())
	r := Result{Value: value, Outcome: outcome}
	if why != "" {
		r = Result{NoData: "provider " + fielderr.Quote(p.Name) + ": " + why, Outcome: outcome}
	}
	if c.Now != nil {
		r.Took = c.Now().Sub(start)
	}
	return r
}

// query asks p for the number: the number, or why there is none, and the
// outcome. What it quotes of the answer goes through secrets, the
// credentials it sends. The provider's kind says where the query goes, how
// it authenticates and how its answer reads; the bounds are the same for
// every kind.
func (c *Client) query(ctx context.Context, p Provider, query string, at time.Time, secrets redact.Secrets) (float64, string, string) {
	kind := p.api()
	u, err := kind.endpoint(p, query, at)
	switch {
	case errors.Is(err, errNoInstant):
		return 0, whyNoInstant, OutcomeError
	case err != nil:
		return 0, fmt.Sprintf(whyFmtAddress, err), OutcomeError
	}
	hc, err := c.client(p.Auth.CA)
	if err != nil {
		return 0, fmt.Sprintf(whyFmtCA, err), OutcomeError
	}
	timeout := p.timeout()
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(qctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return 0, fmt.Sprintf(whyFmtAddress, secrets.Cut(err.Error())), OutcomeError
	}
	req.Header.Set("Accept", "application/json")
	kind.authorize(req, p.Auth)

	resp, err := hc.Do(req)
	if err != nil {
		return 0, egress.Failure(ctx, qctx, timeout, err, secrets), OutcomeError
	}
	defer resp.Body.Close() //nolint:errcheck // Nothing was written; the body was read as far as it matters.
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return 0, fmt.Sprintf(whyFmtRedirect, resp.StatusCode, secrets.Quote(resp.Header.Get("Location"))), OutcomeError
	case resp.StatusCode != http.StatusOK:
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err != nil && len(body) == 0 {
			return 0, egress.Failure(ctx, qctx, timeout, err, secrets), OutcomeError
		}
		if err != nil || len(body) == maxErrorBody {
			// The read stopped short, at the limit, on a broken
			// connection, a compressed stream cut off or the timeout:
			// it may have stopped inside a credential repeated.
			body = secrets.Truncated(body)
		}
		return 0, kind.httpError(resp.StatusCode, body, secrets), OutcomeError
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return 0, egress.Failure(ctx, qctx, timeout, err, secrets), OutcomeError
	}
	if len(body) > MaxAnswer {
		return 0, whyTooLarge, OutcomeError
	}
	return kind.answer(body, secrets)
}

// prometheusAPI is Prometheus's HTTP API: an instant query.
type prometheusAPI struct{}

func (prometheusAPI) endpoint(p Provider, query string, at time.Time) (string, error) {
	return endpoint(p.Address, query, at)
}

// authorize sends the bearer token, or basic auth.
func (prometheusAPI) authorize(req *http.Request, a Auth) {
	switch {
	case a.BearerToken != "":
		req.Header.Set(headerAuthorization, "Bearer "+a.BearerToken)
	case a.Username != "":
		req.SetBasicAuth(a.Username, a.Password)
	}
}

func (prometheusAPI) answer(body []byte, secrets redact.Secrets) (float64, string, string) {
	return answer(body, secrets)
}

func (prometheusAPI) httpError(status int, body []byte, secrets redact.Secrets) string {
	return httpError(status, body, secrets)
}

// endpoint is the URL of an instant query of p at the instant at: at in
// seconds with milliseconds, Prometheus's precision, so that previews and
// tests are reproducible; none when at is zero (Prometheus's now).
func endpoint(address, query string, at time.Time) (string, error) {
	u, err := base(address)
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", errors.New(errAddressQuery)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + queryPath
	u.RawPath = ""
	v := url.Values{"query": {query}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	u.RawQuery = v.Encode()
	return u.String(), nil
}

// base reads a provider's address: an http or https URL of a host, without
// credentials of its own.
func base(address string) (*url.URL, error) {
	u, err := url.Parse(address)
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, errors.New(fielderr.Cut(err.Error(), fielderr.MaxValue))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New(errAddressScheme)
	case u.Host == "":
		return nil, errors.New(errAddressHost)
	case u.User != nil:
		return nil, errors.New(errAddressUserinfo)
	}
	return u, nil
}

// httpError says what an answer other than 200 OK holds: Prometheus's error
// when it is one, else the start of the body, quoted through secrets.
func httpError(status int, body []byte, secrets redact.Secrets) string {
	var a answerJSON
	if err := json.Unmarshal(body, &a); err == nil && a.Status == prometheusErrorState {
		return fmt.Sprintf(whyFmtHTTPError, status, secrets.Quote(a.ErrorType), secrets.Quote(a.Error))
	}
	return fmt.Sprintf(whyFmtHTTP, status, secrets.Quote(string(body)))
}

// client is the HTTP client for providers whose CA bundle is ca: the
// Client's HTTP with redirects refused, or one of its own, kept per bundle.
func (c *Client) client(ca []byte) (*http.Client, error) {
	if c.HTTP != nil {
		return egress.WithoutRedirects(c.HTTP), nil
	}
	key := sha256.Sum256(ca)
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.transports[key]; ok {
		return hc, nil
	}
	var roots *x509.CertPool // nil: the system's roots
	if len(ca) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			return nil, errors.New(errCANoCertificate)
		}
	}
	if c.transports == nil {
		c.transports = make(map[[sha256.Size]byte]*http.Client, 1)
	}
	if len(c.transports) >= maxTransports {
		// Providers are few, and their bundles fewer: this many bundles
		// come from rotations. Drop one; requests under way keep theirs.
		for k, old := range c.transports {
			old.CloseIdleConnections()
			delete(c.transports, k)
			break
		}
	}
	hc := egress.Client(egress.Transport(roots, MaxTimeout))
	c.transports[key] = hc
	return hc, nil
}
