package promql

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// at is the instant the tests query at: 2023-11-14T22:13:20.123Z.
var at = time.UnixMilli(1700000000123)

// ignoreTook leaves out how long a query took, which no test asserts.
var ignoreTook = cmpopts.IgnoreFields(Result{}, "Took")

// serve serves h until the test ends.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// answering answers every request with status and body.
func answering(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// flooding answers status and then n bytes of c, or until the client goes.
func flooding(status int, c byte, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		chunk := []byte(strings.Repeat(string(c), 64<<10))
		for sent := 0; sent < n; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// hanging never answers: it holds each request until the client gives up
// or the test ends.
func hanging(t *testing.T) http.HandlerFunc {
	t.Helper()
	release := make(chan struct{})
	// Cleanups run last first: this one before the server's Close, which
	// waits for the handlers.
	t.Cleanup(func() { close(release) })
	return func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

// within runs c.Query, and fails the test if it has not returned when the
// test's own deadline, guard from now, passes.
func within(t *testing.T, guard time.Duration, run func() Result) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- run() }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		t.Fatalf("the query had not returned when the test's deadline (%s) passed", guard)
		return Result{}
	}
}

func TestClientAnswers(t *testing.T) {
	redirectTarget := make(chan *http.Request, 10)
	elsewhere := serve(t, func(w http.ResponseWriter, r *http.Request) {
		redirectTarget <- r
		answering(http.StatusOK, answerScalar)(w, r)
	})
	justFits := answerScalar + strings.Repeat(" ", MaxAnswer-len(answerScalar))

	cases := map[string]struct {
		reason  string
		handler http.HandlerFunc
		want    Result
	}{
		"OneSeries": {
			reason:  "One series is the value.",
			handler: answering(http.StatusOK, answerOne),
			want:    Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"Scalar": {
			reason:  "A scalar is the value.",
			handler: answering(http.StatusOK, answerScalar),
			want:    Result{Value: 42, Outcome: OutcomeOK},
		},
		"NoSeries": {
			reason:  "No series is no data, naming the provider.",
			handler: answering(http.StatusOK, answerNone),
			want:    Result{NoData: `provider "prom": no series`, Outcome: OutcomeNoData},
		},
		"TwoSeries": {
			reason:  "Two series are no one number.",
			handler: answering(http.StatusOK, answerTwo),
			want:    Result{NoData: `provider "prom": 2 series: the query must give one number (aggregate it, e.g. sum(...))`, Outcome: OutcomeNoData},
		},
		"NaN": {
			reason:  "NaN is no number.",
			handler: answering(http.StatusOK, answerNaN),
			want:    Result{NoData: `provider "prom": the value is NaN, not a number`, Outcome: OutcomeNoData},
		},
		"PlusInf": {
			reason:  "+Inf is no number.",
			handler: answering(http.StatusOK, answerPlusInf),
			want:    Result{NoData: `provider "prom": the value is +Inf, not a number`, Outcome: OutcomeNoData},
		},
		"Matrix": {
			reason:  "A matrix is no number.",
			handler: answering(http.StatusOK, answerMatrix),
			want:    Result{NoData: `provider "prom": a range vector (matrix): the query must give one number`, Outcome: OutcomeNoData},
		},
		"String": {
			reason:  "A string is no number.",
			handler: answering(http.StatusOK, answerString),
			want:    Result{NoData: `provider "prom": a string: the query must give one number`, Outcome: OutcomeNoData},
		},
		"ErrorStatus": {
			reason:  "Prometheus's error (HTTP 400 for a bad query) is named by its type and message.",
			handler: answering(http.StatusBadRequest, answerError),
			want:    Result{NoData: `provider "prom": HTTP 400: "bad_data": "invalid parameter \"query\": 1:1: parse error"`, Outcome: OutcomeError},
		},
		"ErrorStatus200": {
			reason:  "An error status is an error, whatever the HTTP status.",
			handler: answering(http.StatusOK, answerError),
			want:    Result{NoData: `provider "prom": an error: "bad_data": "invalid parameter \"query\": 1:1: parse error"`, Outcome: OutcomeError},
		},
		"Unavailable": {
			reason:  "An HTTP status other than 200 quotes the body's start.",
			handler: answering(http.StatusServiceUnavailable, "upstream \x1b[31mdown\n"),
			want:    Result{NoData: `provider "prom": HTTP 503: "upstream \x1b[31mdown\n"`, Outcome: OutcomeError},
		},
		"HugeError": {
			reason:  "A 500 with a huge body is read up to 64 KiB, and quoted up to 256 characters.",
			handler: flooding(http.StatusInternalServerError, 'x', 10<<20),
			want:    Result{NoData: `provider "prom": HTTP 500: "` + strings.Repeat("x", 256) + `...(65536 characters)"`, Outcome: OutcomeError},
		},
		"Huge": {
			reason:  "An answer of 10 MiB is read up to 1 MiB, then refused.",
			handler: flooding(http.StatusOK, ' ', 10<<20),
			want:    Result{NoData: `provider "prom": an answer of more than 1 MiB`, Outcome: OutcomeError},
		},
		"JustFits": {
			reason:  "An answer of exactly 1 MiB is read.",
			handler: answering(http.StatusOK, justFits),
			want:    Result{Value: 42, Outcome: OutcomeOK},
		},
		"OneByteTooMany": {
			reason:  "An answer of 1 MiB and one byte is refused.",
			handler: answering(http.StatusOK, justFits+" "),
			want:    Result{NoData: `provider "prom": an answer of more than 1 MiB`, Outcome: OutcomeError},
		},
		"WrongJSON": {
			reason:  "An answer that is not Prometheus's JSON is an error.",
			handler: answering(http.StatusOK, `{"status":`),
			want:    Result{NoData: `provider "prom": an invalid answer (not Prometheus's JSON: unexpected end of JSON input; it begins "{\"status\":")`, Outcome: OutcomeError},
		},
		"Redirect": {
			reason: "A redirect is never followed: the credentials stay with the provider's address.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/api/v1/query?"+r.URL.RawQuery, http.StatusFound)
			},
			want: Result{NoData: fmt.Sprintf(`provider "prom": redirected (HTTP 302 to %q); redirects are never followed, so that credentials go nowhere else: set the address the redirect names`, elsewhere.URL+"/api/v1/query?query=sum%28up%29&time=1700000000.123"), Outcome: OutcomeError},
		},
		"PermanentRedirect": {
			reason: "A permanent redirect is not followed either.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL, http.StatusPermanentRedirect)
			},
			want: Result{NoData: fmt.Sprintf(`provider "prom": redirected (HTTP 308 to %q); redirects are never followed, so that credentials go nowhere else: set the address the redirect names`, elsewhere.URL), Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			p := Provider{Name: "prom", Address: s.URL, Timeout: MaxTimeout, Auth: Auth{BearerToken: "s3cr3t"}}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum(up)", at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	select {
	case r := <-redirectTarget:
		t.Errorf("a redirect was followed to %s, with Authorization %q", r.URL, r.Header.Get("Authorization"))
	default:
	}
}

// seen is what a provider saw of a request.
type seen struct {
	Method        string
	Path          string
	Query         map[string][]string
	Authorization string
	Accept        string
}

func TestClientRequest(t *testing.T) {
	cases := map[string]struct {
		reason  string
		address string // the server's URL, then this
		auth    Auth
		at      time.Time
		want    seen
	}{
		"Bearer": {
			reason: "A token is sent as a bearer token; the query and the time (seconds, milliseconds) as parameters of a GET.",
			auth:   Auth{BearerToken: "s3cr3t"},
			at:     at,
			want: seen{
				Method: http.MethodGet, Path: "/api/v1/query", Authorization: "Bearer s3cr3t", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}, "time": {"1700000000.123"}},
			},
		},
		"Basic": {
			reason: "A username and password are sent as basic auth.",
			auth:   Auth{Username: "reader", Password: "p: ss"},
			at:     at,
			want: seen{
				Method: http.MethodGet, Path: "/api/v1/query", Authorization: "Basic cmVhZGVyOnA6IHNz", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}, "time": {"1700000000.123"}},
			},
		},
		"NoAuth": {
			reason: "No credentials, no Authorization header.",
			at:     at,
			want: seen{
				Method: http.MethodGet, Path: "/api/v1/query", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}, "time": {"1700000000.123"}},
			},
		},
		"PathPrefix": {
			reason:  "An address's path is a prefix (Thanos or a proxy under a path); a final slash is not doubled.",
			address: "/prometheus/",
			at:      at,
			want: seen{
				Method: http.MethodGet, Path: "/prometheus/api/v1/query", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}, "time": {"1700000000.123"}},
			},
		},
		"BeforeEpoch": {
			reason: "An instant before 1970 is negative seconds.",
			at:     time.UnixMilli(-1500),
			want: seen{
				Method: http.MethodGet, Path: "/api/v1/query", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}, "time": {"-1.500"}},
			},
		},
		"NoTime": {
			reason: "No instant, no time: Prometheus's now.",
			want: seen{
				Method: http.MethodGet, Path: "/api/v1/query", Accept: "application/json",
				Query: map[string][]string{"query": {`sum(x{rev="a\x22b"})`}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := make(chan seen, 1)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				got <- seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Authorization: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")}
				answering(http.StatusOK, answerScalar)(w, r)
			})
			p := Provider{Name: "prom", Address: s.URL + tc.address, Auth: tc.auth}
			r := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, `sum(x{rev="a\x22b"})`, tc.at) })
			if r.Outcome != OutcomeOK {
				t.Fatalf("Query(...) = %+v, want a value", r)
			}
			if diff := cmp.Diff(tc.want, <-got); diff != "" {
				t.Errorf("%s\nthe provider saw: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientAddress(t *testing.T) {
	cases := map[string]struct {
		reason  string
		address string
		want    Result
	}{
		"Scheme": {
			reason:  "Only http and https are queried.",
			address: "ftp://prometheus:9090",
			want:    Result{NoData: `provider "prom": an invalid address: the scheme is not http or https`, Outcome: OutcomeError},
		},
		"NoHost": {
			reason:  "An address names a host.",
			address: "http:///api",
			want:    Result{NoData: `provider "prom": an invalid address: no host`, Outcome: OutcomeError},
		},
		"Userinfo": {
			reason:  "Credentials belong in the provider's credentials, not in its address (which logs and errors show).",
			address: "http://user:pass@prometheus:9090",
			want:    Result{NoData: `provider "prom": an invalid address: it holds credentials: give them as the provider's credentials`, Outcome: OutcomeError},
		},
		"Query": {
			reason:  "An address with a query would mix with the query's parameters.",
			address: "http://prometheus:9090/?x=1",
			want:    Result{NoData: `provider "prom": an invalid address: it holds a query or a fragment`, Outcome: OutcomeError},
		},
		"Unparsable": {
			reason:  "An address that is no URL says why.",
			address: "http://prom etheus:9090",
			want:    Result{NoData: `provider "prom": an invalid address: invalid character " " in host name`, Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Provider{Name: "prom", Address: tc.address}
			got := (&Client{}).Query(t.Context(), p, "sum(up)", at)
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientUnreachable(t *testing.T) {
	s := httptest.NewServer(answering(http.StatusOK, answerScalar))
	address := s.URL
	s.Close()
	p := Provider{Name: "prom", Address: address}
	got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum(up)", at) })
	// The reason is the dialer's, without the URL (which holds the query).
	want := `provider "prom": cannot be reached: dial tcp ` + strings.TrimPrefix(address, "http://") + ": connect: connection refused"
	if diff := cmp.Diff(Result{NoData: want, Outcome: OutcomeError}, got, ignoreTook); diff != "" {
		t.Errorf("Query(...) of a closed port: -want, +got:\n%s", diff)
	}
}

func TestClientTLS(t *testing.T) {
	s := httptest.NewTLSServer(answering(http.StatusOK, answerScalar))
	t.Cleanup(s.Close)
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	const untrusted = `provider "prom": cannot be reached: tls: failed to verify certificate: x509: certificate signed by unknown authority`

	cases := map[string]struct {
		reason string
		ca     []byte
		want   Result
	}{
		"TrustedCA": {
			reason: "The provider's CA bundle is what its certificate must chain to.",
			ca:     serverCA,
			want:   Result{Value: 42, Outcome: OutcomeOK},
		},
		"SystemRoots": {
			reason: "Without a bundle, the system's roots, which do not know a test CA.",
			want:   Result{NoData: untrusted, Outcome: OutcomeError},
		},
		"OtherCA": {
			reason: "Another CA's bundle does not trust the provider.",
			ca:     testCAPEM(t),
			want:   Result{NoData: untrusted, Outcome: OutcomeError},
		},
		"NotPEM": {
			reason: "A bundle without a certificate is refused before any request.",
			ca:     []byte("nope"),
			want:   Result{NoData: `provider "prom": an unusable CA: no PEM certificate`, Outcome: OutcomeError},
		},
	}
	// One Client for all: its transports are kept per bundle, and a bundle
	// must never lend its pool to another.
	c := &Client{}
	for _, name := range []string{"TrustedCA", "SystemRoots", "OtherCA", "NotPEM", "TrustedCA"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			p := Provider{Name: "prom", Address: s.URL, Auth: Auth{CA: tc.ca}}
			got := within(t, 30*time.Second, func() Result { return c.Query(t.Context(), p, "sum(up)", at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientTransportsBounded(t *testing.T) {
	// Each CA bundle has its pool; rotations must not grow them forever.
	c := &Client{}
	for range 3 * maxTransports {
		if _, err := c.client(testCAPEM(t)); err != nil {
			t.Fatalf("client(...): %v", err)
		}
	}
	if got := len(c.transports); got > maxTransports {
		t.Errorf("after %d bundles, %d transports kept, want at most %d", 3*maxTransports, got, maxTransports)
	}
	a, _ := c.client(nil)
	b, _ := c.client(nil)
	if a != b {
		t.Errorf("client(nil) twice gave two clients: connections are not kept alive across queries")
	}
}

func TestClientOwnHTTPRefusesRedirects(t *testing.T) {
	// A caller's http.Client follows redirects by default: the Client
	// refuses them all the same.
	followed := make(chan struct{}, 1)
	elsewhere := serve(t, func(w http.ResponseWriter, r *http.Request) {
		followed <- struct{}{}
		answering(http.StatusOK, answerScalar)(w, r)
	})
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, elsewhere.URL, http.StatusFound) })
	c := &Client{HTTP: &http.Client{}}
	got := within(t, 30*time.Second, func() Result {
		return c.Query(t.Context(), Provider{Name: "prom", Address: s.URL, Auth: Auth{BearerToken: "t"}}, "sum(up)", at)
	})
	if got.Outcome != OutcomeError || !strings.Contains(got.NoData, "redirected (HTTP 302") {
		t.Errorf("Query(...) with the caller's http.Client = %+v, want a refused redirect", got)
	}
	select {
	case <-followed:
		t.Errorf("the caller's http.Client followed the redirect")
	default:
	}
}

func TestClientGivesUp(t *testing.T) {
	// Each provider never answers (or stops mid-answer): the query must
	// end by itself. The test's own deadline catches a query that does
	// not, and the reason says which bound ended it.
	cases := map[string]struct {
		reason  string
		handler func(t *testing.T) http.HandlerFunc
		timeout time.Duration
		// run bounds the run's context: zero is none, less than zero
		// cancels it once the provider has the request.
		run   time.Duration
		guard time.Duration
		want  Result
	}{
		"PastTimeout": {
			reason:  "A provider that never answers is given up at its timeout.",
			handler: hanging,
			timeout: 100 * time.Millisecond,
			guard:   30 * time.Second,
			want:    Result{NoData: `provider "prom": timed out after 100ms`, Outcome: OutcomeError},
		},
		"PastRunDeadline": {
			reason:  "The run's deadline ends a query before its provider's timeout (5s, past the test's guard).",
			handler: hanging,
			timeout: MaxTimeout,
			run:     100 * time.Millisecond,
			guard:   MaxTimeout - time.Second,
			want:    Result{NoData: `provider "prom": the run's deadline passed before it answered`, Outcome: OutcomeError},
		},
		"SlowBody": {
			reason: "A provider that sends headers and then a trickle is given up at its timeout too.",
			handler: func(t *testing.T) http.HandlerFunc {
				hang := hanging(t)
				return func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(http.StatusOK)
					_, _ = io.WriteString(w, `{"status":"success",`)
					w.(http.Flusher).Flush()
					hang(w, r)
				}
			},
			timeout: 100 * time.Millisecond,
			guard:   30 * time.Second,
			want:    Result{NoData: `provider "prom": timed out after 100ms`, Outcome: OutcomeError},
		},
		"Canceled": {
			reason:  "A canceled run ends its queries.",
			handler: hanging,
			timeout: MaxTimeout,
			run:     -1,
			guard:   MaxTimeout - time.Second,
			want:    Result{NoData: `provider "prom": the run was canceled before it answered`, Outcome: OutcomeError},
		},
		"TimeoutBounded": {
			reason:  "A timeout over MaxTimeout is MaxTimeout: the run's deadline (6s) is not the bound, nor the hour asked.",
			handler: hanging,
			timeout: time.Hour,
			run:     MaxTimeout + time.Second,
			guard:   30 * time.Second,
			want:    Result{NoData: `provider "prom": timed out after 5s`, Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			received := make(chan struct{}, 1)
			h := tc.handler(t)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				received <- struct{}{}
				h(w, r)
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			switch {
			case tc.run > 0:
				ctx, cancel = context.WithTimeout(ctx, tc.run)
				defer cancel()
			case tc.run < 0:
				go func() {
					<-received
					cancel()
				}()
			}
			p := Provider{Name: "prom", Address: s.URL, Timeout: tc.timeout}
			got := within(t, tc.guard, func() Result { return (&Client{}).Query(ctx, p, "sum(up)", at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientTook(t *testing.T) {
	// Took reads the stopwatch the Client is given, before and after.
	s := serve(t, answering(http.StatusOK, answerScalar))
	var mu sync.Mutex
	tick := time.Unix(0, 0)
	c := &Client{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(250 * time.Millisecond)
		return tick
	}}
	got := within(t, 30*time.Second, func() Result { return c.Query(t.Context(), Provider{Name: "prom", Address: s.URL}, "sum(up)", at) })
	if diff := cmp.Diff(Result{Value: 42, Outcome: OutcomeOK, Took: 250 * time.Millisecond}, got); diff != "" {
		t.Errorf("Query(...): -want, +got:\n%s", diff)
	}
}

func TestProviderTimeout(t *testing.T) {
	cases := map[string]struct {
		reason  string
		timeout time.Duration
		want    time.Duration
	}{
		"Unset":    {reason: "No timeout is the default.", timeout: 0, want: DefaultTimeout},
		"Negative": {reason: "A negative timeout is the default.", timeout: -time.Second, want: DefaultTimeout},
		"Given":    {reason: "A timeout within the bound is kept.", timeout: time.Second, want: time.Second},
		"AtBound":  {reason: "MaxTimeout is kept.", timeout: MaxTimeout, want: MaxTimeout},
		"Over":     {reason: "More than MaxTimeout is MaxTimeout.", timeout: time.Minute, want: MaxTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Provider{Timeout: tc.timeout}.timeout()); diff != "" {
				t.Errorf("%s\ntimeout(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestClientNeverEchoesCredentials: a provider (or a proxy in front of
// it) that repeats the request's Authorization header in its answer never
// puts the credentials into the reason, which reaches the CanaryRoute's
// status, its events and the function's log: each form the function sent
// (the token, the password, user:password and its base64) is redacted
// before the answer is quoted.
func TestClientNeverEchoesCredentials(t *testing.T) {
	// A token of 3 KB (JWTs of many claims are), longer than the 256
	// characters a reason quotes, so that a cut could split it, and a
	// password that JSON and Go escape.
	token := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("c2VjcmV0", 375) + ".sig"
	basic := Auth{Username: "reader", Password: `p"ss<w0rd\&`}
	secretsOf := map[string][]string{
		"Bearer": {token},
		"Basic":  {basic.Password, basic.Username + ":" + basic.Password, base64.StdEncoding.EncodeToString([]byte(basic.Username + ":" + basic.Password))},
	}
	auths := map[string]Auth{"Bearer": {BearerToken: token}, "Basic": basic}

	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
		// says is a part of the reason that must stay: the redaction
		// keeps the rest of what the provider said.
		says string
	}{
		"Unauthorized": {
			reason: "A 401 whose text body repeats the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, "invalid credentials: Authorization: "+r.Header.Get("Authorization"))
			},
			says: `HTTP 401: "invalid credentials: Authorization: `,
		},
		"BadRequestJSON": {
			reason: "A 400 JSON error of Prometheus's shape whose error repeats the header.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": "cannot authorize " + r.Header.Get("Authorization")})
			},
			says: `HTTP 400: "bad_data": "cannot authorize `,
		},
		"BadRequestOtherJSON": {
			reason: "A 400 JSON body of another shape, quoted as it is, with the header JSON-escaped (Go escapes < and &).",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]any{"message": "denied", "header": r.Header.Get("Authorization")})
			},
			says: `HTTP 400: "{\"header\":`,
		},
		"OKWithError": {
			reason: `A 200 with "status":"error" whose error and errorType repeat the header.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": r.Header.Get("Authorization"), "error": "token " + r.Header.Get("Authorization") + " expired"})
			},
			says: `an error: "`,
		},
		"HTMLPage": {
			reason: "A proxy's HTML page (not JSON) that shows the request's headers.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = io.WriteString(w, "<html><body><h1>Sign in</h1><pre>Authorization: "+r.Header.Get("Authorization")+"</pre></body></html>")
			},
			says: `not Prometheus's JSON: invalid character '<' looking for beginning of value; it begins "<html><body><h1>Sign in</h1><pre>Authorization: `,
		},
		"RedirectLocation": {
			reason: "A 302 whose Location carries the header, escaped in its query.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://login.example/?auth="+url.QueryEscape(r.Header.Get("Authorization")))
				w.WriteHeader(http.StatusFound)
			},
			says: `redirected (HTTP 302 to "https://login.example/?auth=`,
		},
		"HugeErrorCutInsideTheToken": {
			reason: "A 500 that repeats the credential past the 64 KiB read, which stops in the middle of a repeat: redacted, the repeats leave that first part within the 256 characters quoted, and it is redacted too.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, credential, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				_, _ = io.WriteString(w, strings.Repeat(credential+" ", maxErrorBody/len(credential)+1))
			},
			says: `HTTP 500: "`,
		},
		"MalformedStatusLine": {
			reason: "An answer whose status line repeats the header: net/http's error quotes it.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				_, credential, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				_, _ = buf.WriteString("HTTP/1.1 " + credential + "\r\n\r\n")
				_ = buf.Flush()
			},
			says: `cannot be reached: `,
		},
	}
	for authName, auth := range auths {
		for name, tc := range shapes {
			t.Run(authName+"/"+name, func(t *testing.T) {
				s := serve(t, tc.handler)
				p := Provider{Name: "prom", Address: s.URL, Timeout: MaxTimeout, Auth: auth}
				got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum(up)", at) })
				if got.Outcome != OutcomeError || !strings.Contains(got.NoData, tc.says) {
					t.Errorf("%s\nQuery(...) = %+v, want an error that says %q", tc.reason, got, tc.says)
				}
				for _, secret := range secretsOf[authName] {
					for _, form := range []string{secret, fmt.Sprintf("%q", secret), url.QueryEscape(secret), secret[:min(len(secret), 16)]} {
						if strings.Contains(got.NoData, strings.Trim(form, `"`)) {
							t.Errorf("%s\nthe reason holds the credential %q: %s", tc.reason, form, got.NoData)
						}
					}
				}
			})
		}
	}
}
