package promql

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestProbeNestedEncodingsNeverEchoed: docs/metrics.md says a credential is
// found "behind any of JSON's and the other string escapes ..., HTML's
// character references, a URL's percent-encoding (a query's + for a space
// too), and those nested". views() nests each kind at most once and only
// in the order HTML > backslash > percent, and a query's + for a space only
// at the top: an answer that nests one kind in itself (a URL in a URL's
// query, a JSON error quoting a JSON error), a JSON string in a URL, or a
// query's + inside an HTML page keeps the credential, encoded, in the reason.
func TestProbeNestedEncodingsNeverEchoed(t *testing.T) {
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
			reason: "Attack: a 302 whose Location sends the client to a sign-in page with the refused request's URL in its query (rd=, next=, redirect_uri=), that URL's own query holding the Authorization header: the header is percent-encoded twice (%2520 for its space, %253D for base64's padding), and views() decodes percent-encoding once. The reason quotes the base64 of user:password whole.",
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
			reason: `Attack: a gateway's 502 JSON whose message quotes its upstream's JSON error (a string holding JSON, escaped again): the password's quote comes as \\\" and views() decodes backslash escapes once, leaving \" where the password has ". The reason quotes the password.`,
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
			reason: `Attack: a 302 to an error page whose query carries a JSON error (PHP's urlencode(json_encode(...)), which writes / as \/): percent-encoding outside, JSON inside, the reverse of the one order views() nests them in. The reason quotes the password.`,
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
			reason: "Attack: a 401 sign-in page (Go's html/template, which writes + as &#43;) that shows a link whose query holds the refused password (url.Values.Encode: a space is +): views() decodes a query's + only at the top, never after HTML's references, so \"correct&#43;horse%2Fbattery...\" is quoted.",
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
