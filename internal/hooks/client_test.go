package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreTook leaves out how long a call took, which no test asserts.
var ignoreTook = cmpopts.IgnoreFields(Result{}, "Took")

// serve serves h until the test ends.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// hanging never answers: it holds each request until the client gives up
// or the test ends. It reads the body first: net/http's server notices a
// client gone only once the body is read.
func hanging(t *testing.T) http.HandlerFunc {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

// within runs a call, and fails the test if it has not returned when the
// test's own deadline, guard from now, passes.
func within(t *testing.T, guard time.Duration, run func() Result) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- run() }()
	select {
	case r := <-done:
		return r
	case <-time.After(guard):
		t.Fatalf("the call had not returned when the test's deadline (%s) passed", guard)
		return Result{}
	}
}

// loadtester is a stand-in for Flagger's loadtester (flagger-loadtester,
// POST / with the webhook payload): it runs metadata.cmd when it is one it
// knows, answering 200, and answers 400 with its error otherwise, as the
// loadtester does for a command that fails; it records the payloads.
type loadtester struct {
	mu       sync.Mutex
	payloads []Payload
}

func (l *loadtester) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "expected a POST of JSON", http.StatusMethodNotAllowed)
		return
	}
	var p Payload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.payloads = append(l.payloads, p)
	l.mu.Unlock()
	cmd := p.Metadata["cmd"]
	switch {
	case cmd == "":
		http.Error(w, "cmd not found in metadata", http.StatusBadRequest)
	case strings.HasPrefix(cmd, "hey "):
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, "command "+cmd+" failed: exit status 1", http.StatusBadRequest)
	}
}

// slack is a stand-in for Slack's incoming webhook: a POST of JSON with a
// text to the hook's secret path, answered "ok"; Slack's own errors
// otherwise.
func slack(t *testing.T, path string, got chan<- map[string]any) *httptest.Server {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "no_service")
			return
		}
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m["text"] == nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "invalid_payload")
			return
		}
		got <- m
		_, _ = io.WriteString(w, "ok")
	})
}

func TestCallStandIns(t *testing.T) {
	lt := &loadtester{}
	loadtesterServer := serve(t, lt.ServeHTTP)
	slackGot := make(chan map[string]any, 4)
	slackServer := slack(t, "/services/T0001/B0001/"+strings.Repeat("x", 24), slackGot)
	discord := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if json.NewDecoder(r.Body).Decode(&m) != nil || m["content"] == nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"message": "Cannot send an empty message", "code": 50006}`)
			return
		}
		w.WriteHeader(http.StatusNoContent) // Discord's answer without ?wait=true.
	})
	teams := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted) // A Teams workflow's answer.
	})

	withCmd := func(cmd string) Payload {
		p := payload()
		p.Type, p.Metadata = Rollout, map[string]string{"cmd": cmd}
		return p
	}
	cases := map[string]struct {
		reason string
		w      Webhook
		p      Payload
		want   Result
	}{
		"LoadtesterRuns": {
			reason: "Flagger's loadtester reads the payload's metadata.cmd and answers 200: a 2xx.",
			w:      Webhook{Name: "loadtester", URL: loadtesterServer.URL + "/"},
			p:      withCmd("hey -z 1m http://podinfo-canary.test:9898/"),
			want:   Result{OK: true, Status: http.StatusOK},
		},
		"LoadtesterFails": {
			reason: "A command the loadtester cannot run is its 400, quoted.",
			w:      Webhook{Name: "loadtester", URL: loadtesterServer.URL + "/"},
			p:      withCmd("curl -sf http://podinfo-canary.test/"),
			want:   Result{Status: http.StatusBadRequest, Reason: `webhook "loadtester": HTTP 400: "command curl -sf http://podinfo-canary.test/ failed: exit status 1\n"`},
		},
		"Slack": {
			reason: "Slack's incoming webhook takes the text and answers ok.",
			w:      Webhook{Name: "team-chat", URL: slackServer.URL + "/services/T0001/B0001/" + strings.Repeat("x", 24), Secret: true, Format: FormatSlack},
			p:      payload(),
			want:   Result{OK: true, Status: http.StatusOK},
		},
		"SlackGone": {
			reason: "A Slack hook removed is Slack's 404 no_service; the secret URL is not quoted.",
			w:      Webhook{Name: "team-chat", URL: slackServer.URL + "/services/T0001/B0001/" + strings.Repeat("y", 24), Secret: true, Format: FormatSlack},
			p:      payload(),
			want:   Result{Status: http.StatusNotFound, Reason: `webhook "team-chat": HTTP 404: "no_service"`},
		},
		"Discord": {
			reason: "Discord answers 204: a 2xx.",
			w:      Webhook{Name: "discord", URL: discord.URL + "/api/webhooks/1/t", Secret: true, Format: FormatDiscord},
			p:      payload(),
			want:   Result{OK: true, Status: http.StatusNoContent},
		},
		"Teams": {
			reason: "A Teams workflow answers 202: a 2xx.",
			w:      Webhook{Name: "teams", URL: teams.URL + "/workflows/x/triggers/manual/paths/invoke", Secret: true, Format: FormatMSTeams},
			p:      payload(),
			want:   Result{OK: true, Status: http.StatusAccepted},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Call(t.Context(), tc.w, tc.p) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nCall(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	// The cases run in any order: the loadtester's payloads are compared
	// as a set, each as it read it.
	want := make([]Payload, 0, 2)
	for _, cmd := range []string{"hey -z 1m http://podinfo-canary.test:9898/", "curl -sf http://podinfo-canary.test/"} {
		p := withCmd(cmd)
		p.Timestamp = p.Timestamp.UTC().Truncate(time.Second)
		want = append(want, p)
	}
	byCmd := cmpopts.SortSlices(func(a, b Payload) bool { return a.Metadata["cmd"] < b.Metadata["cmd"] })
	if diff := cmp.Diff(want, lt.payloads, byCmd); diff != "" {
		t.Errorf("the loadtester read the payloads: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"text": Line(payload())}, <-slackGot); diff != "" {
		t.Errorf("Slack read: -want, +got:\n%s", diff)
	}
}

func TestCallBounds(t *testing.T) {
	followed := make(chan struct{}, 10)
	elsewhere := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		followed <- struct{}{}
		w.WriteHeader(http.StatusOK)
	})
	flood := func(status int, n int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			chunk := []byte(strings.Repeat("x", 64<<10))
			for sent := 0; sent < n; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	var calls atomic.Int32
	cases := map[string]struct {
		reason  string
		handler http.HandlerFunc
		want    Result
	}{
		"Huge": {
			reason:  "Attack: a 2xx of 64 MiB is read up to 64 KiB, then refused: no answer the function trusts.",
			handler: flood(http.StatusOK, 64<<20),
			want:    Result{Status: http.StatusOK, Reason: `webhook "w": an answer of more than 64 KiB`},
		},
		"JustFits": {
			reason:  "An answer of exactly 64 KiB is read.",
			handler: flood(http.StatusOK, 64<<10),
			want:    Result{OK: true, Status: http.StatusOK},
		},
		"HugeError": {
			reason:  "A 500 of 64 MiB is refused as too large as well.",
			handler: flood(http.StatusInternalServerError, 64<<20),
			want:    Result{Status: http.StatusInternalServerError, Reason: `webhook "w": an answer of more than 64 KiB`},
		},
		"Redirect": {
			reason: "Attack: a redirect to another host is never followed.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
			},
			want: Result{Status: http.StatusTemporaryRedirect, Reason: fmt.Sprintf(`webhook "w": redirected (HTTP 307 to %q); redirects are never followed: set the address the redirect names`, elsewhere.URL+"/steal")},
		},
		"Alternating": {
			reason: "Attack: a webhook answering 2xx then 5xx alternately: each call is judged by its own answer (this one the second, a 503).",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				if calls.Add(1)%2 == 0 {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, "busy")
					return
				}
				w.WriteHeader(http.StatusOK)
			},
			want: Result{Status: http.StatusServiceUnavailable, Reason: `webhook "w": HTTP 503: "busy"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			w := Webhook{Name: "w", URL: s.URL, Timeout: MaxTimeout}
			if name == "Alternating" {
				first := within(t, 30*time.Second, func() Result { return (&Client{}).Call(t.Context(), w, payload()) })
				if !first.OK {
					t.Fatalf("the first call = %+v, want a 2xx", first)
				}
			}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Call(t.Context(), w, payload()) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nCall(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	select {
	case <-followed:
		t.Errorf("a redirect was followed")
	default:
	}
}

func TestCallGivesUp(t *testing.T) {
	cases := map[string]struct {
		reason  string
		timeout time.Duration
		// run bounds the run's context: zero is none, less than zero
		// cancels it once the webhook has the request.
		run  time.Duration
		want Result
	}{
		"PastTimeout": {
			reason:  "Attack: a webhook that hangs is given up at its timeout.",
			timeout: 100 * time.Millisecond,
			want:    Result{Reason: `webhook "w": timed out after 100ms`},
		},
		"PastRunDeadline": {
			reason:  "The run's deadline ends a call before its timeout.",
			timeout: MaxTimeout,
			run:     100 * time.Millisecond,
			want:    Result{Reason: `webhook "w": the run's deadline passed before it answered`},
		},
		"Canceled": {
			reason:  "A canceled run ends its calls.",
			timeout: MaxTimeout,
			run:     -1,
			want:    Result{Reason: `webhook "w": the run was canceled before it answered`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			received := make(chan struct{}, 1)
			h := hanging(t)
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
			got := within(t, MaxTimeout-time.Second, func() Result {
				return (&Client{}).Call(ctx, Webhook{Name: "w", URL: s.URL, Timeout: tc.timeout}, payload())
			})
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nCall(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWebhookTimeout(t *testing.T) {
	cases := map[string]struct {
		timeout, want time.Duration
	}{
		"Unset":    {0, DefaultTimeout},
		"Negative": {-time.Second, DefaultTimeout},
		"Given":    {time.Second, time.Second},
		"AtBound":  {MaxTimeout, MaxTimeout},
		"Over":     {time.Minute, MaxTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (Webhook{Timeout: tc.timeout}).timeout(); got != tc.want {
				t.Errorf("timeout() = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCallNeverEchoesSecretURL: a chat service's webhook URL is its
// credential (the Input's urlFrom). Whatever the webhook, or a proxy in
// front of it, answers (its path in a 404, the URL in a redirect, an HTML
// page, a malformed status line that net/http quotes), the reason holds
// neither the URL nor its token.
func TestCallNeverEchoesSecretURL(t *testing.T) {
	token := "XoXb" + strings.Repeat("s3cr3tT0k3n", 4)
	path := "/services/T0001ABCD/B0002EFGH/" + token
	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
		says    string
	}{
		"NotFoundEchoesPath": {
			reason: "A 404 that names the path it did not find.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "no route for "+r.URL.Path)
			},
			says: `HTTP 404: "no route for `,
		},
		"TokenAlone": {
			reason: "A 403 that names the token alone.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_token", "token": r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]})
			},
			says: `HTTP 403: "{\"error\":\"invalid_token\",\"token\":\"`,
		},
		"RedirectLocation": {
			reason: "A redirect whose Location carries the URL, escaped.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://login.example/?next="+url.QueryEscape("https://"+r.Host+r.URL.Path))
				w.WriteHeader(http.StatusFound)
			},
			says: `redirected (HTTP 302 to "https://login.example/?next=`,
		},
		"HTMLPage": {
			reason: "A proxy's HTML page that shows the request line.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadGateway)
				_, _ = io.WriteString(w, "<html><pre>POST "+r.URL.String()+"</pre></html>")
			},
			says: `HTTP 502: "<html><pre>POST `,
		},
		"MalformedStatusLine": {
			reason: "An answer whose status line repeats the token: net/http's error quotes it.",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				_, _ = buf.WriteString("HTTP/1.1 " + token + "\r\n\r\n")
				_ = buf.Flush()
			},
			says: `cannot be reached: `,
		},
	}
	for name, tc := range shapes {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			w := Webhook{Name: "team-chat", URL: s.URL + path, Secret: true, Format: FormatSlack, Timeout: MaxTimeout}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Call(t.Context(), w, payload()) })
			if got.OK || !strings.Contains(got.Reason, tc.says) {
				t.Errorf("%s\nCall(...) = %+v, want a failure that says %q", tc.reason, got, tc.says)
			}
			for _, form := range []string{token, token[:16], url.QueryEscape(path), path} {
				if strings.Contains(got.Reason, form) {
					t.Errorf("%s\nthe reason holds the secret URL's %q: %s", tc.reason, form, got.Reason)
				}
			}
		})
	}
	t.Run("Unreachable", func(t *testing.T) {
		// net/http's errors name the URL: the reason never does.
		s := serve(t, func(http.ResponseWriter, *http.Request) {})
		s.Close()
		w := Webhook{Name: "team-chat", URL: s.URL + path, Secret: true}
		got := within(t, 30*time.Second, func() Result { return (&Client{}).Call(t.Context(), w, payload()) })
		if got.OK || !strings.Contains(got.Reason, "cannot be reached") || strings.Contains(got.Reason, token) || strings.Contains(got.Reason, "services") {
			t.Errorf("Call(...) = %+v, want a failure that names no part of the URL", got)
		}
	})
	t.Run("NotSecretQuoted", func(t *testing.T) {
		// A URL the Input writes is no secret: a reason may quote what
		// the webhook said of it.
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "no route for "+r.URL.Path)
		})
		w := Webhook{Name: "loadtester", URL: s.URL + "/hooks/" + token}
		got := (&Client{}).Call(t.Context(), w, payload())
		if !strings.Contains(got.Reason, token) {
			t.Errorf("Call(...) = %+v: the answer of a webhook whose URL is no secret is quoted as it is", got)
		}
	})
}

func TestCheckURL(t *testing.T) {
	cases := map[string]struct {
		address string
		want    string
	}{
		"HTTP":     {"http://flagger-loadtester.test/", ""},
		"Slack":    {"https://hooks.slack.com/services/T0/B0/x", ""},
		"Scheme":   {"ftp://x/", errScheme},
		"NoHost":   {"http:///x", errHost},
		"Userinfo": {"https://u:p@x/", errUserinfo},
		"Fragment": {"https://x/#f", errFragment},
		"NotAURL":  {"http://x y/", "it is not a URL"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := CheckURL(tc.address); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckURL(%q) = %q, want %q", tc.address, got, tc.want)
			}
		})
	}
}

func TestURLFrom(t *testing.T) {
	secret := "https://hooks.slack.com/services/T0/B0/" + strings.Repeat("z", 24)
	type want struct {
		URL, Err string
	}
	cases := map[string]struct {
		reason string
		data   map[string][]byte
		key    string
		want   want
	}{
		"Read":     {reason: "The key's value, one line end dropped.", data: map[string][]byte{"url": []byte(secret + "\n")}, key: "url", want: want{URL: secret}},
		"NoKey":    {reason: "A key the credentials lack is named.", data: map[string][]byte{"address": []byte(secret)}, key: "url", want: want{Err: `credentials hold no key "url"`}},
		"Empty":    {reason: "An empty value is refused.", data: map[string][]byte{"url": []byte("\n")}, key: "url", want: want{Err: "the URL in the credentials is empty"}},
		"NotHTTPS": {reason: "A value that is no http URL is refused without quoting it.", data: map[string][]byte{"url": []byte("file:///" + strings.Repeat("z", 24))}, key: "url", want: want{Err: `the URL in key "url": the scheme is not http or https`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := URLFrom(tc.data, tc.key)
			got := want{URL: u}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nURLFrom(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// callerFn is a Caller of a function.
type callerFn func(ctx context.Context, w Webhook, p Payload) Result

func (fn callerFn) Call(ctx context.Context, w Webhook, p Payload) Result { return fn(ctx, w, p) }

func TestCallAll(t *testing.T) {
	t.Run("AtOnce", func(t *testing.T) {
		// Every call is under way before any answers: a run waits about
		// one timeout, not one per hook. Results keep the calls' order.
		const n = 8
		var arrived sync.WaitGroup
		arrived.Add(n)
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		c := callerFn(func(ctx context.Context, w Webhook, _ Payload) Result {
			arrived.Done()
			select {
			case <-all:
				return Result{OK: true, Status: 200, Reason: w.Name}
			case <-ctx.Done():
				return Result{Reason: "not at once"}
			}
		})
		calls := make([]Call, 0, n)
		want := make([]Result, 0, n)
		for i := range n {
			name := fmt.Sprintf("w%d", i)
			calls = append(calls, Call{Webhook: Webhook{Name: name, Timeout: time.Second}})
			want = append(want, Result{OK: true, Status: 200, Reason: name})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if diff := cmp.Diff(want, CallAll(ctx, c, calls)); diff != "" {
			t.Errorf("CallAll(...): -want, +got:\n%s", diff)
		}
	})
	t.Run("LeavesStuckCallers", func(t *testing.T) {
		// A Caller that ignores its timeout is left behind after the
		// grace; the other's result stands.
		release := make(chan struct{})
		defer close(release)
		c := callerFn(func(_ context.Context, w Webhook, _ Payload) Result {
			if w.Name == "stuck" {
				<-release
			}
			return Result{OK: true, Status: 200}
		})
		calls := []Call{
			{Webhook: Webhook{Name: "stuck", Timeout: 50 * time.Millisecond}},
			{Webhook: Webhook{Name: "fine", Timeout: 50 * time.Millisecond}},
		}
		start := time.Now()
		got := CallAll(t.Context(), c, calls)
		want := []Result{{Reason: `webhook "stuck": no answer within its timeout`}, {OK: true, Status: 200}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CallAll(...): -want, +got:\n%s", diff)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("CallAll waited %s for a stuck caller", took)
		}
	})
}
