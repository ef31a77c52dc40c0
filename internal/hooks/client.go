package hooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/egress"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

const (
	whyFmtURL      = "an invalid address: %s"
	whyFmtBody     = "cannot make the body: %s"
	whyFmtRedirect = "redirected (HTTP %d to %s); redirects are never followed: set the address the redirect names"
	whyFmtHTTP     = "HTTP %d: %s"
	whyTooLarge    = "an answer of more than 64 KiB"

	errScheme   = "the scheme is not http or https"
	errHost     = "no host"
	errUserinfo = "it holds credentials: give a secret URL as urlFrom"
	errFragment = "it holds a fragment, which is never sent"
	errFmtKey   = "credentials hold no key %s"
	errEmptyURL = "the URL in the credentials is empty"

	// secretPart is the shortest part of a secret URL (a path segment, a
	// query value) redacted on its own: Slack's token is 24 characters,
	// Discord's 68, a Teams workflow's signature 43, while the words of a
	// path (services, webhooks, workflows) are shorter and stay readable.
	secretPart = 16
)

// A Caller calls webhooks; Client calls them over HTTP, tests bring their
// own.
type Caller interface {
	// Call sends w the body of p in w's format, within w's timeout and
	// ctx.
	Call(ctx context.Context, w Webhook, p Payload) Result
}

// Client calls webhooks: a POST of the body as JSON, never following a
// redirect (a secret URL's answer must not send the call, or a chat
// message, elsewhere), reading at most MaxAnswer bytes, within the
// webhook's timeout and the context's deadline. Its zero value is ready;
// it keeps connections alive across runs. It must not be copied once
// used.
type Client struct {
	// HTTP, when not nil, makes the requests instead of the Client's own:
	// its redirects are never followed either.
	HTTP *http.Client
	// Now reads a stopwatch for Result.Took: main.go's wiring gives
	// time.Now. Nil leaves Took zero.
	Now func() time.Time

	once sync.Once
	own  *http.Client
}

var _ Caller = &Client{}

// Call sends w the body of p in w's format. It returns within w's timeout
// (DefaultTimeout when zero, at most MaxTimeout) and ctx's deadline,
// whatever w does. Its reason never holds w's URL when it is a secret,
// whatever w answers.
func (c *Client) Call(ctx context.Context, w Webhook, p Payload) Result {
	var start time.Time
	if c.Now != nil {
		start = c.Now()
	}
	status, why := c.call(ctx, w, p, secretsOf(w))
	r := Result{OK: why == "", Status: status}
	if why != "" {
		r.Reason = "webhook " + fielderr.Quote(w.Name) + ": " + why
	}
	if c.Now != nil {
		r.Took = c.Now().Sub(start)
	}
	return r
}

// call sends the body: the answer's status, and why it is no 2xx read
// whole ("" when it is).
func (c *Client) call(ctx context.Context, w Webhook, p Payload, secrets redact.Secrets) (int, string) {
	if err := CheckURL(w.URL); err != nil {
		return 0, fmt.Sprintf(whyFmtURL, secrets.Cut(err.Error()))
	}
	body, err := Body(w.Format, p)
	if err != nil {
		return 0, fmt.Sprintf(whyFmtBody, fielderr.Cut(err.Error(), fielderr.MaxValue))
	}
	timeout := w.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Sprintf(whyFmtURL, secrets.Cut(unwrap(err).Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return 0, egress.Failure(ctx, cctx, timeout, err, secrets)
	}
	defer resp.Body.Close() //nolint:errcheck // Nothing was written; the body was read as far as it matters.
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, fmt.Sprintf(whyFmtRedirect, resp.StatusCode, secrets.Quote(resp.Header.Get("Location")))
	}
	// The answer is read, within bounds, whatever its status: a 2xx of
	// more than MaxAnswer is no answer the function trusts, and another
	// status is quoted.
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	switch {
	case err != nil && len(answer) == 0:
		return resp.StatusCode, egress.Failure(ctx, cctx, timeout, err, secrets)
	case len(answer) > MaxAnswer:
		return resp.StatusCode, whyTooLarge
	case err != nil:
		// Cut short: it may have stopped inside a secret repeated.
		answer = secrets.Truncated(answer)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Sprintf(whyFmtHTTP, resp.StatusCode, secrets.Quote(string(answer)))
	}
	if err != nil {
		return resp.StatusCode, egress.Failure(ctx, cctx, timeout, err, secrets)
	}
	return resp.StatusCode, ""
}

// client is the Client's HTTP with redirects refused, or its own.
func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return egress.WithoutRedirects(c.HTTP)
	}
	// Calls of one run share it: made once.
	c.once.Do(func() {
		// No proxy from the environment: a secret URL goes to its host
		// only. Dials and handshakes are bounded by the call's context.
		c.own = egress.Client(egress.Transport(nil, MaxTimeout))
	})
	return c.own
}

// unwrap drops the URL that net/url's and net/http's errors name.
func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// secretsOf are what a reason must never quote of a webhook: nothing of a
// URL the Input writes; of a secret one, the URL, its path and query, and
// each path segment and query value of secretPart bytes or more (a chat
// service's token, which a proxy may repeat alone), as sent and as a path
// escapes it.
func secretsOf(w Webhook) redact.Secrets {
	if !w.Secret {
		return redact.Secrets{}
	}
	values := []string{w.URL}
	u, err := url.Parse(w.URL)
	if err != nil {
		return redact.New(values...)
	}
	values = append(values, strings.TrimPrefix(u.EscapedPath(), "/"), u.RawQuery)
	for _, segment := range strings.Split(u.EscapedPath(), "/") {
		if len(segment) >= secretPart {
			plain, _ := url.PathUnescape(segment)
			values = append(values, segment, plain)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= secretPart {
				values = append(values, v)
			}
		}
	}
	return redact.New(values...)
}

// CheckURL checks a webhook's address: an http or https URL of a host,
// without credentials or a fragment. Its errors never quote the URL,
// which may be a secret.
func CheckURL(address string) error {
	u, err := url.Parse(address)
	switch {
	case err != nil:
		return errors.New("it is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New(errScheme)
	case u.Host == "":
		return errors.New(errHost)
	case u.User != nil:
		return errors.New(errUserinfo)
	case u.Fragment != "":
		return errors.New(errFragment)
	}
	return nil
}

// URLFrom reads a secret webhook URL from credentials as Crossplane hands
// them to a function: the value of key, one line end that ends it dropped
// (echo writes one), checked by CheckURL. Its errors name the key, never
// the value.
func URLFrom(data map[string][]byte, key string) (string, error) {
	v, ok := data[key]
	if !ok {
		return "", errors.Errorf(errFmtKey, fielderr.Quote(key))
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(v), "\n"), "\r")
	if s == "" {
		return "", errors.New(errEmptyURL)
	}
	if err := CheckURL(s); err != nil {
		return "", errors.Wrapf(err, "the URL in key %s", fielderr.Quote(key))
	}
	return s, nil
}

// A Call is one hook's call: the webhook and what it says.
type Call struct {
	Webhook Webhook
	Payload Payload
}

// CallAll makes every call at once, one goroutine each (a CanaryRoute
// has few hooks), each within its webhook's timeout and ctx (the run's
// deadline), and returns their results in the order of the calls, when
// all have answered or given up. A Caller that overstays its timeout by
// more than a grace of 100 ms, or the run's deadline, is left behind: its
// result says there was no answer.
func CallAll(ctx context.Context, c Caller, calls []Call) []Result {
	return atonce.Do(ctx, len(calls),
		func(i int) time.Duration { return calls[i].Webhook.timeout() },
		func(ctx context.Context, i int) Result { return c.Call(ctx, calls[i].Webhook, calls[i].Payload) },
		func(i int, why string) Result {
			return Result{Reason: "webhook " + fielderr.Quote(calls[i].Webhook.Name) + ": " + why}
		})
}
