// Package egress is how the function calls the outside (a metric
// provider, a webhook): the HTTP client of such calls (no proxy from the
// environment, redirects never followed, dials, handshakes and headers
// bounded) and why a call ended without an answer, said without the URL
// or a credential.
package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// Why a call ended without an answer, beside atonce's reasons.
const (
	WhyFmtUnreachable = "cannot be reached: %s"
	WhyFmtTimedOut    = "timed out after %s"
)

const (
	maxResponseHeader   = 64 << 10
	idleConnTimeout     = 90 * time.Second
	maxIdleConnsPerHost = 4
	maxIdleConns        = 32
	keepAlive           = 30 * time.Second
)

// Transport makes the calls to an endpoint the platform names: no proxy
// from the environment (the address is reached directly, and a secret
// one goes to its host only), dials and handshakes bounded by dial (the
// call's context bounds them too), headers bounded, keep-alives kept.
// roots are the CAs its TLS trusts; nil for the system's.
func Transport(roots *x509.CertPool, dial time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: dial, KeepAlive: keepAlive}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
		MaxResponseHeaderBytes: maxResponseHeader,
	}
}

// Client is an HTTP client over t that never follows a redirect.
func Client(t http.RoundTripper) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: RefuseRedirect}
}

// WithoutRedirects is a copy of hc that never follows a redirect: a
// client a test or a caller brings is held to the rule too.
func WithoutRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = RefuseRedirect
	return &c
}

// RefuseRedirect leaves a redirect as the answer: credentials, and a
// secret URL's call, go to the address the platform named only.
func RefuseRedirect(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}

// Failure says why a call ended without an answer: the run's end (run's
// context), the call's own timeout (call's context), or the error without
// the URL that net/url's and net/http's errors name (it may hold a query
// or a secret), cut through secrets (net/http quotes a malformed status
// line, which is the endpoint's).
func Failure(run, call context.Context, timeout time.Duration, err error, secrets redact.Secrets) string {
	switch {
	case errors.Is(run.Err(), context.DeadlineExceeded):
		return atonce.WhyRunDeadline
	case run.Err() != nil:
		return atonce.WhyRunCanceled
	case call.Err() != nil:
		return fmt.Sprintf(WhyFmtTimedOut, timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Sprintf(WhyFmtUnreachable, secrets.Cut(err.Error()))
}
