package promql

import (
	"bufio"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// Encodings a provider, or a proxy in front of it, writes a credential in
// that the function never produced itself.

// jsonSlashed is a JSON string's content as PHP's json_encode (and other
// encoders) writes it by default: "/" escaped as "\/".
func jsonSlashed(s string) string {
	b, _ := json.Marshal(s) //nolint:errchkjson // A string always encodes.
	return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
}

// jsonASCII is a JSON string's content as Python's json.dumps writes it by
// default (ensure_ascii): every non-ASCII character a \u escape, and no
// HTML escapes.
func jsonASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= utf8.RuneSelf:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// userinfo is a password as net/url writes it in a URL's userinfo.
func userinfo(s string) string {
	return strings.TrimPrefix(url.UserPassword("x", s).String(), "x:")
}

// goQuotedText is s as a reason quotes it (fielderr.Quote), without the
// quotes.
func goQuotedText(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// An encoding is a name and what it writes a text as.
type encoding struct {
	name   string
	encode func(string) string
}

// leaked finds a secret in a reason, in one of the encodings, whole or its
// first 16 bytes, as written or as the reason quotes it: the encoding's
// name and the form found; "" when none is.
func leaked(reason, secret string, encodings []encoding) (string, string) {
	for _, enc := range encodings {
		e := enc.encode(secret)
		for _, form := range []string{e, goQuotedText(e), e[:min(len(e), 16)], goQuotedText(e[:min(len(e), 16)])} {
			if strings.Contains(reason, form) {
				return enc.name, form
			}
		}
	}
	return "", ""
}

// TestClientNeverEchoesEncodedCredentials: API.md (Safety round 4) says a
// credential the function sent never appears in a status, an event, a log
// line or an error, "whatever a provider answers", and docs/metrics.md
// names the answers it has in mind: a 401 page, a JSON error, an HTML
// sign-in page, a redirect's Location. A redaction that knew the credential
// only as sent and as Go would escape it (URL query and path, Go's JSON
// encoder, Go's quoting) let through a reason that quotes a provider's
// answer read only in part, or written by another language's JSON encoder,
// an HTML page or a URL's userinfo (TestClientNeverEchoesCredentials tries
// the shapes Go's own encoders write).
func TestClientNeverEchoesEncodedCredentials(t *testing.T) {
	// A bearer token of base64 (random bytes are: '+', '/', '=') and a
	// password with non-ASCII, '/', '&', '<', ':' and ';'.
	token := "c2VjcmV0/dG9rZW4+b2Yg/YSBwcm9t+aGV1c2/g" + strings.Repeat("x", 24)
	basic := Auth{Username: "reader", Password: "pä/ss&w<0rd:x;y"}
	b64 := base64.StdEncoding.EncodeToString([]byte(basic.Username + ":" + basic.Password))
	secretsOf := map[string][]string{
		"Bearer": {token},
		"Basic":  {basic.Password, basic.Username + ":" + basic.Password, b64},
	}
	auths := map[string]Auth{"Bearer": {BearerToken: token}, "Basic": basic}
	// credentialOf is what a proxy that checks the request reads of it:
	// the token, or the user and password decoded.
	credentialOf := func(r *http.Request) string {
		if u, p, ok := r.BasicAuth(); ok {
			return u + ":" + p
		}
		_, c, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		return c
	}
	// partial is the first three quarters of the Authorization header's
	// credential: what a provider had sent when its connection broke.
	partial := func(r *http.Request) string {
		_, c, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		return c[:len(c)*3/4]
	}

	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
	}{
		"ErrorBodyCutByBrokenConnection": {
			reason: "Attack: a 401 whose body repeats the header, its connection broken before the Content-Length it announced: io.ReadAll returns what came with an error, and httpError quoted that part of the credential (secrets.Truncated ran only when the 64 KiB limit stopped the read).",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				body := "invalid credentials: " + partial(r)
				_, _ = fmt.Fprintf(buf, "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body)+64, body)
				_ = buf.Flush()
			},
		},
		"ErrorBodyCutInsideGzip": {
			reason: "Attack: the same inside a gzip body (Go's transport decompresses it): a stream that ends early gives what it had decompressed, and the reason quoted that part of the credential.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				_, _ = buf.WriteString("HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n")
				gz := gzip.NewWriter(buf)
				_, _ = io.WriteString(gz, "invalid credentials: "+partial(r))
				_ = gz.Flush() // no Close: the stream ends without its trailer
				_ = buf.Flush()
			},
		},
		"JSONSlashEscaped": {
			reason: `Attack: a 401 JSON body (not Prometheus's shape, so quoted as it is) whose encoder escapes "/" as "\/" (PHP's json_encode, many Java and Lua encoders): a token of base64, or a basic auth's base64 holding "/", is quoted whole.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"message":"invalid Authorization header: `+jsonSlashed(r.Header.Get("Authorization"))+`"}`)
			},
		},
		"JSONNonASCIIEscaped": {
			reason: `Attack: a 401 JSON body written by Python's json.dumps (ensure_ascii, its default): a password with a non-ASCII character comes as p\u00e4..., which no form matches.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"detail":"invalid credentials `+jsonASCII(credentialOf(r))+`"}`)
			},
		},
		"HTMLEscaped": {
			reason: "Attack: an HTML sign-in page that shows the credentials it refused, escaped for HTML as every template engine does: a password with & or < comes as &amp; and &lt;, which no form matches.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, "<html><body><p>Sign in refused for "+html.EscapeString(credentialOf(r))+"</p></body></html>")
			},
		},
		"RedirectWithUserinfo": {
			reason: "Attack: a 302 whose Location carries the user and password as a URL's userinfo (net/url's escaping): ':' is escaped there and ';' is not, unlike a path or a query, so no form matches.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				u, p, ok := r.BasicAuth()
				if !ok {
					u, p = credentialOf(r), ""
				}
				w.Header().Set("Location", (&url.URL{Scheme: "https", User: url.UserPassword(u, p), Host: "login.example", Path: "/"}).String())
				w.WriteHeader(http.StatusFound)
			},
		},
	}
	encodings := []encoding{
		{"as sent", func(s string) string { return s }},
		{`JSON with \/`, jsonSlashed},
		{"JSON ASCII", jsonASCII},
		{"HTML", html.EscapeString},
		{"userinfo", userinfo},
	}
	for authName, auth := range auths {
		for name, tc := range shapes {
			t.Run(authName+"/"+name, func(t *testing.T) {
				s := serve(t, tc.handler)
				p := Provider{Name: "prom", Address: s.URL, Timeout: 2 * time.Second, Auth: auth}
				got := within(t, 30*time.Second, func() Result {
					return (&Client{}).Query(t.Context(), p, "sum(up)", at)
				})
				if got.Outcome != OutcomeError {
					t.Fatalf("Query(...) = %+v, want an error", got)
				}
				for _, secret := range secretsOf[authName] {
					if encName, form := leaked(got.NoData, secret, encodings); form != "" {
						t.Errorf("%s\nthe reason holds the credential %q (%s) as %q: %s", tc.reason, secret, encName, form, got.NoData)
					}
				}
			})
		}
	}
}

// TestClientCutErrorBodyNeverQuotesACredential: the same as
// ErrorBodyCutByBrokenConnection, at the level of the read: an error answer
// cut short by the timeout (the provider sends the start of the body, then
// stalls) is made safe like one cut at 64 KiB (secrets.Truncated).
func TestClientCutErrorBodyNeverQuotesACredential(t *testing.T) {
	const reason = "Attack: a 401 that sends the first 20 characters of the token, flushes, and stalls past the provider's timeout: the body read so far was quoted, and with it the start of the token."
	token := "tok-" + strings.Repeat("s3cr3t", 10)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(http.StatusUnauthorized)
		_, c, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		bw := bufio.NewWriter(w)
		_, _ = bw.WriteString("bad token " + c[:20])
		_ = bw.Flush()
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	p := Provider{Name: "prom", Address: s.URL, Timeout: 500 * time.Millisecond, Auth: Auth{BearerToken: token}}
	got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum(up)", at) })
	if strings.Contains(got.NoData, token[:16]) {
		t.Errorf("%s\nQuery(...) = %q", reason, got.NoData)
	}
}

// TestClientNeverEchoesNestedEncodings: a credential is found behind
// encodings nested in any order, a kind in itself too: an answer that nests
// one kind in itself (a URL in a URL's query, a JSON error quoting a JSON
// error), a JSON string in a URL, or a query's + inside an HTML page once
// kept the credential, encoded, in the reason (redact decoded each kind
// once, in one order, and a query's + for a space only at the top).
func TestClientNeverEchoesNestedEncodings(t *testing.T) {
	// A password as people choose them: words, a space, a slash, a quote.
	auth := Auth{Username: "reader", Password: `correct horse/battery "staple"`}
	basic := auth.Username + ":" + auth.Password
	b64 := base64.StdEncoding.EncodeToString([]byte(basic))
	jsonString := func(s string) string {
		b, _ := json.Marshal(s) //nolint:errchkjson // A string always encodes.
		return string(b[1 : len(b)-1])
	}
	phpJSON := func(s string) string { return strings.ReplaceAll(jsonString(s), "/", `\/`) }
	cases := map[string]struct {
		reason  string
		secret  string
		encoded func(password, b64 string) string
		write   func(w http.ResponseWriter, encoded string)
	}{
		"URLInURLQuery": {
			reason: "Attack: a 302 whose Location sends the client to a sign-in page with the refused request's URL in its query (rd=, next=, redirect_uri=), that URL's own query holding the Authorization header: the header is percent-encoded twice (%2520 for its space, %253D for base64's padding): the reason must not quote the base64 of user:password.",
			secret: b64,
			encoded: func(_, b64 string) string {
				inner := "https://prom.example/api/v1/query?authorization=" + url.QueryEscape("Basic "+b64)
				return "https://login.example/start?rd=" + url.QueryEscape(inner)
			},
			write: func(w http.ResponseWriter, encoded string) {
				w.Header().Set("Location", encoded)
				w.WriteHeader(http.StatusFound)
			},
		},
		"JSONErrorInJSONError": {
			reason: `Attack: a gateway's 502 JSON whose message quotes its upstream's JSON error (a string holding JSON, escaped again): the password's quote comes as \\\": the reason must not quote the password.`,
			secret: auth.Password,
			encoded: func(password, _ string) string {
				upstream := `{"error":"bad credentials ` + jsonString(password) + `"}`
				return `{"message":"upstream said: ` + jsonString(upstream) + `"}`
			},
			write: func(w http.ResponseWriter, encoded string) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = io.WriteString(w, encoded)
			},
		},
		"JSONInURLQuery": {
			reason: `Attack: a 302 to an error page whose query carries a JSON error (PHP's urlencode(json_encode(...)), which writes / as \/): percent-encoding outside, JSON inside: the reason must not quote the password.`,
			secret: auth.Password,
			encoded: func(password, _ string) string {
				return "https://login.example/error?e=" + url.QueryEscape(`{"refused":"`+phpJSON(password)+`"}`)
			},
			write: func(w http.ResponseWriter, encoded string) {
				w.Header().Set("Location", encoded)
				w.WriteHeader(http.StatusFound)
			},
		},
		"QueryPlusInHTML": {
			reason: "Attack: a 401 sign-in page (Go's html/template, which writes + as &#43;) that shows a link whose query holds the refused password (url.Values.Encode: a space is +): the reason must not quote \"correct&#43;horse%2Fbattery...\".",
			secret: auth.Password,
			encoded: func(password, _ string) string {
				q := url.Values{"password": {password}}.Encode()
				return `<a href="/retry?` + strings.ReplaceAll(q, "+", "&#43;") + `">retry</a>`
			},
			write: func(w http.ResponseWriter, encoded string) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, "<html><body>"+encoded+"</body></html>")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			encoded := tc.encoded(auth.Password, b64)
			s := serve(t, func(w http.ResponseWriter, _ *http.Request) { tc.write(w, encoded) })
			p := Provider{Name: "prom", Address: s.URL, Timeout: 2 * time.Second, Auth: auth}
			got := within(t, 30*time.Second, func() Result {
				return (&Client{}).Query(t.Context(), p, "sum(up)", at)
			})
			if got.Outcome != OutcomeError {
				t.Fatalf("Query(...) = %+v, want an error", got)
			}
			for _, form := range encodedForms(encoded, tc.secret) {
				if strings.Contains(got.NoData, form) || strings.Contains(got.NoData, goQuotedText(form)) {
					t.Errorf("%s\nthe reason holds the credential %q encoded as %q: %s", tc.reason, tc.secret, form, got.NoData)
					return
				}
			}
		})
	}
}

// encodedForms is the stretch of an encoded answer where the secret's
// encoding begins (at its first 4 characters, which no encoding here
// changes), 24 bytes of it: what a reader decodes back to the secret.
func encodedForms(encoded, secret string) []string {
	if i := strings.Index(encoded, secret[:4]); i >= 0 {
		return []string{encoded[i:min(len(encoded), i+24)]}
	}
	return nil
}

// TestQuotedAnswerHeadOnly: an answer that is not Prometheus's JSON is
// quoted from its start, and only its head is redacted to quote it: an
// answer of MaxAnswer bytes dense with escapes of every kind costs what its
// head costs, not the 100 ms its whole redaction would.
func TestQuotedAnswerHeadOnly(t *testing.T) {
	secrets := redact.New("c2VjcmV0/dG9rZW4+b2Yg")
	unit := `<%2525&amp;amp;\\\\++ `
	hostile := []byte(strings.Repeat(unit, MaxAnswer/len(unit)))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, why, outcome := answer(hostile, secrets)
	runtime.ReadMemStats(&after)
	if outcome != OutcomeError || !strings.Contains(why, "it begins") {
		t.Fatalf("answer(hostile) = %q, %q: want an error quoting its start", why, outcome)
	}
	// The whole answer's redaction allocated some 40 MB; its head's, and
	// the JSON decoder's error, well under 4 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("quoting a %d-byte answer allocated %d bytes, want at most %d: only its head is redacted", len(hostile), got, 4<<20)
	}
}
