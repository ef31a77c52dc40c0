package promql

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// sloAnswer is an SLO API's answer, the shape of the contract's example
// (http://slo.monitoring/api/v1/ratio).
const sloAnswer = `{"status":"ok","data":{"ratio":0.9975,"window":"1m","objective":"0.999","series":[{"v":1},{"v":2}],"text":"n/a","ok":true,"none":null,"big":"1e400"}}`

func TestWebAnswers(t *testing.T) {
	tooMany := "[" + strings.Repeat("0,", maxWebValues) + "0]"
	cases := map[string]struct {
		reason   string
		handler  http.HandlerFunc
		jsonPath string
		want     Result
	}{
		"Number": {
			reason:   "A JSON number the jsonPath selects is the value.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.ratio}",
			want:     Result{Value: 0.9975, Outcome: OutcomeOK},
		},
		"StringNumber": {
			reason:   "A string that holds a number is the number (many APIs write them so).",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.objective}",
			want:     Result{Value: 0.999, Outcome: OutcomeOK},
		},
		"Indexed": {
			reason:   "An index selects one item of a list.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.series[1].v}",
			want:     Result{Value: 2, Outcome: OutcomeOK},
		},
		"PrometheusShape": {
			reason:   "A web provider reads any JSON: Prometheus's own answer too, its value a string.",
			handler:  answering(http.StatusOK, answerOne),
			jsonPath: "{.data.result[0].value[1]}",
			want:     Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"List": {
			reason:   "A list is no number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.series}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.series}" selects a list, not a number`, Outcome: OutcomeNoData},
		},
		"Object": {
			reason:   "An object is no number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data}" selects an object, not a number`, Outcome: OutcomeNoData},
		},
		"Boolean": {
			reason:   "A boolean is no number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.ok}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.ok}" selects a boolean, not a number`, Outcome: OutcomeNoData},
		},
		"Null": {
			reason:   "null is no number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.none}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.none}" selects null, not a number`, Outcome: OutcomeNoData},
		},
		"StringNotANumber": {
			reason:   "A string of no number is no data, quoting it.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.text}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.text}" selects the string "n/a", not a number`, Outcome: OutcomeNoData},
		},
		"StringInfinite": {
			reason:   "A string of a number beyond float64 is +Inf: no number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.big}",
			want:     Result{NoData: `provider "web": the value is +Inf, not a number`, Outcome: OutcomeNoData},
		},
		"StringNaN": {
			reason:   "NaN written as a string is no number.",
			handler:  answering(http.StatusOK, `{"v":"NaN"}`),
			jsonPath: "{.v}",
			want:     Result{NoData: `provider "web": the value is NaN, not a number`, Outcome: OutcomeNoData},
		},
		"Several": {
			reason:   "A jsonPath that selects several values selects no one number.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.series[*].v}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.series[*].v}" selects 2 values; it must select one number`, Outcome: OutcomeNoData},
		},
		"Nothing": {
			reason:   "A filter that matches nothing selects no value.",
			handler:  answering(http.StatusOK, sloAnswer),
			jsonPath: "{.data.series[?(@.v==3.0)].v}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.series[?(@.v==3.0)].v}" selects 0 values; it must select one number`, Outcome: OutcomeNoData},
		},
		"MissingKey": {
			reason:   "A key the answer lacks is no data, saying which.",
			handler:  answering(http.StatusOK, `{"data":{}}`),
			jsonPath: "{.data.ratio}",
			want:     Result{NoData: `provider "web": the jsonPath "{.data.ratio}" finds no value: ratio is not found`, Outcome: OutcomeNoData},
		},
		"NotJSON": {
			reason:   "An answer that is no JSON is an error quoting its start.",
			handler:  answering(http.StatusOK, "ok 0.5\n"),
			jsonPath: "{.v}",
			want:     Result{NoData: `provider "web": an invalid answer (not JSON: invalid character 'o' looking for beginning of value; it begins "ok 0.5\n")`, Outcome: OutcomeError},
		},
		"TooManyValues": {
			reason:   "An answer of more values than maxWebValues is refused before it is decoded whole.",
			handler:  answering(http.StatusOK, tooMany),
			jsonPath: "{[0]}",
			want:     Result{NoData: fmt.Sprintf(`provider "web": an answer of more than %d JSON values`, maxWebValues), Outcome: OutcomeError},
		},
		"Huge": {
			reason:   "An answer of 10 MiB is read up to 1 MiB, then refused.",
			handler:  flooding(http.StatusOK, ' ', 10<<20),
			jsonPath: "{.v}",
			want:     Result{NoData: `provider "web": an answer of more than 1 MiB`, Outcome: OutcomeError},
		},
		"HTTPError": {
			reason:   "An HTTP status other than 200 quotes the body's start.",
			handler:  answering(http.StatusServiceUnavailable, `{"message":"warming up"}`),
			jsonPath: "{.v}",
			want:     Result{NoData: `provider "web": HTTP 503: "{\"message\":\"warming up\"}"`, Outcome: OutcomeError},
		},
		"Redirect": {
			reason: "A redirect is never followed: the credentials stay with the URL the Input writes.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://elsewhere.example/ratio", http.StatusMovedPermanently)
			},
			jsonPath: "{.v}",
			want:     Result{NoData: `provider "web": redirected (HTTP 301 to "http://elsewhere.example/ratio"); redirects are never followed, so that credentials go nowhere else: set the address the redirect names`, Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			p := Provider{Name: "web", Kind: KindWeb, Address: s.URL + "/ratio?q={{query}}", JSONPath: tc.jsonPath, Timeout: MaxTimeout}
			r := p.Request("x", Values{})
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), r.Provider, r.Query, at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWebGivesUp(t *testing.T) {
	// A web provider is bounded as a Prometheus one: its timeout.
	s := serve(t, hanging(t))
	p := Provider{Name: "web", Kind: KindWeb, Address: s.URL, JSONPath: "{.v}", Timeout: 100 * time.Millisecond}
	got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "", at) })
	if diff := cmp.Diff(Result{NoData: `provider "web": timed out after 100ms`, Outcome: OutcomeError}, got, ignoreTook); diff != "" {
		t.Errorf("Query(...): -want, +got:\n%s", diff)
	}
}

func TestWebRequest(t *testing.T) {
	// What the endpoint sees: the URL filled for the side, each value
	// escaped for where it stands, and the credentials as a Prometheus
	// provider sends them.
	type sawRequest struct {
		Method, EscapedPath, Path, Authorization string
		Query                                    url.Values
	}
	values := Values{Namespace: "test", Route: "web", Service: "podinfo-canary", Revision: "v2", Interval: 90 * time.Second}
	cases := map[string]struct {
		reason   string
		template string // after the server's URL
		query    string
		values   Values
		auth     Auth
		want     sawRequest
	}{
		"Contract": {
			reason:   "The contract's example: the values in the query; a bearer token.",
			template: "/api/v1/ratio?service={{service}}&window={{interval}}",
			values:   values,
			auth:     Auth{BearerToken: "s3cr3t"},
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/api/v1/ratio", Path: "/api/v1/ratio", Authorization: "Bearer s3cr3t",
				Query: url.Values{"service": {"podinfo-canary"}, "window": {"90s"}},
			},
		},
		"QueryWithPlaceholders": {
			reason:   "{{query}} is the metric's query, its own placeholders expanded as they are, then escaped as one query value.",
			template: "/q?expr={{query}}&ns={{namespace}}",
			query:    `errors{svc="{{service}}"} / total & more=1 #x`,
			values:   values,
			auth:     Auth{Username: "reader", Password: "pw"},
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/q", Path: "/q", Authorization: "Basic " + base64.StdEncoding.EncodeToString([]byte("reader:pw")),
				Query: url.Values{"expr": {`errors{svc="podinfo-canary"} / total & more=1 #x`}, "ns": {"test"}},
			},
		},
		"PathSegments": {
			reason:   "Values in the path are path segments: a route and a revision.",
			template: "/routes/{{namespace}}/{{route}}/revisions/{{revision}}",
			values:   values,
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/routes/test/web/revisions/v2", Path: "/routes/test/web/revisions/v2",
				Query: url.Values{},
			},
		},
		"HostilePath": {
			reason:   "Attack: a value in the path holding slashes, dots, a query and a fragment stays one segment; a value of dots climbs nothing.",
			template: "/api/{{revision}}/x/{{service}}/y",
			values:   Values{Revision: "../../admin?drop=1#f", Service: ".."},
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/api/..%2F..%2Fadmin%3Fdrop=1%23f/x/%2E%2E/y", Path: "/api/../../admin?drop=1#f/x/../y",
				Query: url.Values{},
			},
		},
		"HostileQuery": {
			reason:   "Attack: a value in the query holding &, =, # and + adds no parameter and ends nothing.",
			template: "/q?rev={{revision}}&fixed=1",
			values:   Values{Revision: "a&fixed=2#x+y z"},
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/q", Path: "/q",
				Query: url.Values{"rev": {"a&fixed=2#x+y z"}, "fixed": {"1"}},
			},
		},
		"NotExpandedAgain": {
			reason:   "A value that reads as a placeholder is not filled again.",
			template: "/q?rev={{revision}}&ns={{namespace}}",
			values:   Values{Revision: "{{namespace}}", Namespace: "ns"},
			want: sawRequest{
				Method: http.MethodGet, EscapedPath: "/q", Path: "/q",
				Query: url.Values{"rev": {"{{namespace}}"}, "ns": {"ns"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			saw := make(chan sawRequest, 1)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				saw <- sawRequest{Method: r.Method, EscapedPath: r.URL.EscapedPath(), Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Query: r.URL.Query()}
				answering(http.StatusOK, `{"v":1}`)(w, r)
			})
			template := s.URL + tc.template
			if err := CheckURL(template); err != nil {
				t.Fatalf("CheckURL(%q): %v", template, err)
			}
			p := Provider{Name: "web", Kind: KindWeb, Address: template, JSONPath: "{.v}", Auth: tc.auth}
			r := p.Request(tc.query, tc.values)
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), r.Provider, r.Query, at) })
			if got.Outcome != OutcomeOK {
				t.Fatalf("Query(...) = %+v, want a value", got)
			}
			if diff := cmp.Diff(tc.want, <-saw); diff != "" {
				t.Errorf("%s\nthe endpoint saw: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	cases := map[string]struct {
		reason   string
		template string
		want     string // a part of the error; "" for none
	}{
		"Contract":      {reason: "The contract's example.", template: "http://slo.monitoring/api/v1/ratio?service={{service}}&window={{interval}}"},
		"Query":         {reason: "{{query}} stands in a web URL.", template: "https://api.example/v1/q?expr={{query}}"},
		"Path":          {reason: "Placeholders may stand in the path.", template: "https://api.example/{{namespace}}/{{route}}"},
		"NoPlaceholder": {reason: "A URL of no placeholder is one endpoint for every side.", template: "https://api.example:8443/ratio"},
		"InHost": {
			reason: "Attack: a placeholder in the host would choose where the credentials go.", template: "https://{{namespace}}.example/x",
			want: `placeholder "{{namespace}}" at byte 8 stands in the URL's scheme or host`,
		},
		"InPort": {
			reason: "Nor in the port.", template: "https://api.example:{{revision}}/x",
			want: "stands in the URL's scheme or host",
		},
		"InUserinfo": {
			reason: "Nor in a userinfo.", template: "https://{{service}}@api.example/x",
			want: "stands in the URL's scheme or host",
		},
		"HostOnlyPlaceholder": {
			reason: "Nor after a host with no path.", template: "https://api.example{{service}}",
			want: "stands in the URL's scheme or host",
		},
		"Unknown": {
			reason: "A placeholder the function does not fill is a typo.", template: "https://api.example/?p={{pod}}",
			want: `unknown placeholder "{{pod}}" at byte 23`,
		},
		"Unclosed": {
			reason: "A placeholder that no }} closes.", template: "https://api.example/?p={{service",
			want: `"{{" at byte 23 opens a placeholder that no "}}" closes`,
		},
		"Scheme":    {reason: "Only http and https.", template: "gopher://api.example/", want: "scheme is not http or https"},
		"NoHost":    {reason: "A host is named.", template: "http:///x", want: "no host"},
		"Userinfo":  {reason: "No credentials in the URL.", template: "http://u:p@api.example/", want: "holds credentials"},
		"Fragment":  {reason: "A fragment is never sent.", template: "http://api.example/x#y", want: "fragment"},
		"TooLong":   {reason: "At most MaxURLLength bytes.", template: "http://api.example/" + strings.Repeat("x", MaxURLLength), want: "more than 2048"},
		"NotAURL":   {reason: "A text that is no URL.", template: "http://api example/", want: "invalid character"},
		"NoSchemes": {reason: "A text without a scheme.", template: "api.example/{{service}}", want: "scheme is not http or https"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := CheckURL(tc.template); err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s\nCheckURL(%q) = %q, want an error holding %q", tc.reason, tc.template, got, tc.want)
			}
		})
	}
}

func TestCheckPlaceholders(t *testing.T) {
	cases := map[string]struct {
		reason string
		query  string
		want   string
	}{
		"NotPromQL": {reason: "A Datadog query is no PromQL: only its placeholders are checked.", query: "sum:trace.errors{service:{{service}}}.as_count()"},
		"Anywhere":  {reason: "A placeholder may stand anywhere: its value is made harmless where it lands.", query: "{{revision}}{{interval}}"},
		"Unknown":   {reason: "An unknown placeholder is a typo.", query: "x{pod:{{pod}}}", want: `unknown placeholder "{{pod}}" at byte 6`},
		"Query":     {reason: "{{query}} is the web URL's, never a query's own.", query: "{{query}}", want: `unknown placeholder "{{query}}"`},
		"Unclosed":  {reason: "An open placeholder.", query: "a{{service", want: `"{{" at byte 1 opens a placeholder`},
		"TooLong": {
			reason: "At most MaxQueryLength characters, as the XRD counts them.", query: strings.Repeat("é", MaxQueryLength+1),
			want: "query is 4097 characters, more than 4096",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, kind := range []Kind{KindDatadog, KindWeb} {
				got := ""
				if err := (Provider{Kind: kind}).Check(tc.query); err != nil {
					got = err.Error()
				}
				if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
					t.Errorf("%s\n%s: Check(%q) = %q, want an error holding %q", tc.reason, kind, tc.query, got, tc.want)
				}
			}
		})
	}
	t.Run("PrometheusParses", func(t *testing.T) {
		// The same Datadog query is refused by a Prometheus provider,
		// which parses its queries: the kind decides the check.
		if err := (Provider{}).Check("sum:trace.errors{service:{{service}}}.as_count()"); err == nil {
			t.Errorf("a Prometheus provider accepted a Datadog query")
		}
	})
}

func TestParseJSONPath(t *testing.T) {
	cases := map[string]struct {
		reason string
		text   string
		want   string
	}{
		"Field":     {reason: "A field.", text: "{.data.ratio}"},
		"Index":     {reason: "An index.", text: "{.data.result[0].value[1]}"},
		"Filter":    {reason: "A filter.", text: `{.items[?(@.name=="errors")].value}`},
		"Text":      {reason: "Text around the expression would be a value of its own.", text: "x{.a}", want: "one {...} expression"},
		"Two":       {reason: "Two expressions are two values.", text: "{.a}{.b}", want: "one {...} expression"},
		"Range":     {reason: "A range is no one value.", text: "{range .items[*]}{.v}{end}", want: "one {...} expression"},
		"NoBraces":  {reason: "Without braces, kubectl's JSONPath is text.", text: ".data.ratio", want: "one {...} expression"},
		"Recursive": {reason: "A recursive descent copies every value it walks: refused.", text: "{..ratio}", want: "recursive descent"},
		"RecursiveInFilter": {
			reason: "Nor in a filter's operand.", text: "{.items[?(@..v==1.0)].v}", want: "recursive descent",
		},
		"Union":     {reason: "A union selects several values, which the answer refuses, not the policy.", text: "{.data['ratio','window']}"},
		"Unclosed":  {reason: "A JSONPath that does not parse.", text: "{.data[", want: "is not kubectl's JSONPath"},
		"Emptiness": {reason: "Nothing.", text: "", want: "one {...} expression"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if _, err := ParseJSONPath(tc.text); err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s\nParseJSONPath(%q) = %q, want an error holding %q", tc.reason, tc.text, got, tc.want)
			}
		})
	}
}

// TestWebNeverEchoesCredentials: a web endpoint's credentials are sent as
// a Prometheus provider's are, and redacted from whatever it answers,
// the values a jsonPath selects among them.
func TestWebNeverEchoesCredentials(t *testing.T) {
	token := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("c2VjcmV0", 40) + ".sig"
	shapes := map[string]struct {
		reason   string
		handler  http.HandlerFunc
		jsonPath string
		says     string
	}{
		"Unauthorized": {
			reason:   "A 401 whose body repeats the header.",
			jsonPath: "{.v}",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":"bad `+r.Header.Get("Authorization")+`"}`)
			},
			says: `HTTP 401: "{\"error\":\"bad `,
		},
		"SelectedString": {
			reason:   "Attack: a jsonPath that selects a string holding the token quotes it redacted.",
			jsonPath: "{.v}",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"v":"`+r.Header.Get("Authorization")+`"}`)
			},
			says: `selects the string "Bearer `,
		},
		"NotJSON": {
			reason:   "An HTML page that shows the header.",
			jsonPath: "{.v}",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "<pre>"+r.Header.Get("Authorization")+"</pre>")
			},
			says: `not JSON`,
		},
		"Redirect": {
			reason:   "A redirect whose Location carries the header.",
			jsonPath: "{.v}",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://login.example/?a="+url.QueryEscape(r.Header.Get("Authorization")))
				w.WriteHeader(http.StatusFound)
			},
			says: `redirected (HTTP 302`,
		},
		"MissingKeyNamedAfterToken": {
			reason:   "Attack: an answer whose keys are the token, which a jsonPath error would list.",
			jsonPath: "{.v[0]}",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"v":{"`+r.Header.Get("Authorization")+`":1}}`)
			},
			says: `the jsonPath "{.v[0]}" finds no value`,
		},
	}
	for name, tc := range shapes {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			p := Provider{Name: "web", Kind: KindWeb, Address: s.URL + "/x", JSONPath: tc.jsonPath, Timeout: MaxTimeout, Auth: Auth{BearerToken: token}}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "", at) })
			if got.Outcome == OutcomeOK || !strings.Contains(got.NoData, tc.says) {
				t.Errorf("%s\nQuery(...) = %+v, want no value, and a reason that says %q", tc.reason, got, tc.says)
			}
			for _, form := range []string{token, url.QueryEscape(token), token[:16]} {
				if strings.Contains(got.NoData, form) {
					t.Errorf("%s\nthe reason holds the token %q: %s", tc.reason, form, got.NoData)
				}
			}
		})
	}
}

// FuzzFillURL: whatever the values and the query, a filled URL keeps the
// template's scheme, host and the path up to the first placeholder, and
// each of the template's query parameters once with its written value; a
// value is one path segment or one parameter's value.
func FuzzFillURL(f *testing.F) {
	f.Add("podinfo", "v2", "sum(x)")
	f.Add("../..", "a&b=c#d", "{{service}}?x=/y")
	f.Add("%2e%2e", "\x00\r\n", "é\xff")
	template := "https://api.example:8443/base/{{service}}/x?fixed=1&rev={{revision}}&q={{query}}"
	f.Fuzz(func(t *testing.T, service, revision, query string) {
		filled := FillURL(template, Values{Service: service, Revision: revision}, query)
		u, err := url.Parse(filled)
		if err != nil {
			t.Fatalf("FillURL(...) = %q: not a URL: %v", filled, err)
		}
		if u.Scheme != "https" || u.Host != "api.example:8443" || u.Fragment != "" || u.User != nil {
			t.Errorf("FillURL(...) = %q: scheme %q, host %q, fragment %q, user %v", filled, u.Scheme, u.Host, u.Fragment, u.User)
		}
		segments := strings.Split(u.EscapedPath(), "/")
		if len(segments) != 4 || segments[1] != "base" || segments[3] != "x" {
			t.Errorf("FillURL(...) = %q: the path's segments are %q", filled, segments)
		}
		if seg, _ := url.PathUnescape(segments[2]); seg != service {
			t.Errorf("FillURL(...) = %q: the service's segment reads %q, want %q", filled, seg, service)
		}
		if segments[2] == "." || segments[2] == ".." {
			t.Errorf("FillURL(...) = %q: a segment of dots, which climbs the path", filled)
		}
		want := url.Values{"fixed": {"1"}, "rev": {revision}, "q": {query}}
		if diff := cmp.Diff(want, u.Query()); diff != "" {
			t.Errorf("FillURL(...) = %q: the query's parameters: -want, +got:\n%s", filled, diff)
		}
	})
}

func FuzzWebAnswer(f *testing.F) {
	for _, seed := range []string{sloAnswer, `{"v":1}`, `{"v":"1"}`, `{"v":[1]}`, `{"v":null}`, `[]`, ``, `{"v":"0x1p-2"}`, `{"v":1e400}`} {
		f.Add([]byte(seed), "{.v}")
	}
	f.Add([]byte(sloAnswer), "{.data.series[*].v}")
	f.Add([]byte(sloAnswer), "{.data.series[-1:].v}")
	f.Fuzz(func(t *testing.T, body []byte, jsonPath string) {
		if _, err := ParseJSONPath(jsonPath); err != nil {
			return // The policy refuses it.
		}
		v, why, outcome := webAPI{jsonPath: jsonPath}.answer(body, redact.Secrets{})
		switch outcome {
		case OutcomeOK:
			if why != "" || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("answer(%q, %q) = %v, %q: a value must be finite and without a reason", body, jsonPath, v, why)
			}
		case OutcomeNoData, OutcomeError:
			if why == "" || v != 0 || len(why) > 8192 {
				t.Errorf("answer(%q, %q) = %v, %q, %s: no value needs a short reason, and no value", body, jsonPath, v, why, outcome)
			}
		default:
			t.Errorf("answer(%q, %q): outcome %q", body, jsonPath, outcome)
		}
	})
}

// TestWebRecipes: the jsonPaths that docs/metrics.md gives for Graphite,
// InfluxDB and Dynatrace select the number from each API's answer, as the
// API writes it.
func TestWebRecipes(t *testing.T) {
	cases := map[string]struct {
		reason   string
		answer   string
		jsonPath string
		want     Result
	}{
		"Graphite": {
			reason:   "Graphite's render API: a list of targets, each datapoints [value, time]; the newest point.",
			answer:   `[{"target":"errors","tags":{"name":"errors"},"datapoints":[[0.5,1700000000],[0.25,1700000060]]}]`,
			jsonPath: "{[0].datapoints[-1:][0]}",
			want:     Result{Value: 0.25, Outcome: OutcomeOK},
		},
		"GraphiteNull": {
			reason:   "Graphite's null for a point without data is no data.",
			answer:   `[{"target":"errors","datapoints":[[0.5,1700000000],[null,1700000060]]}]`,
			jsonPath: "{[0].datapoints[-1:][0]}",
			want:     Result{NoData: `provider "web": the jsonPath "{[0].datapoints[-1:][0]}" selects null, not a number`, Outcome: OutcomeNoData},
		},
		"InfluxDB": {
			reason:   "InfluxDB's /query: results, series, values [time, value].",
			answer:   `{"results":[{"statement_id":0,"series":[{"name":"requests","columns":["time","mean"],"values":[["2026-12-02T10:00:00Z",0.0125]]}]}]}`,
			jsonPath: "{.results[0].series[0].values[0][1]}",
			want:     Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"Dynatrace": {
			reason:   "Dynatrace's Metrics API v2 with resolution=Inf: one value per series.",
			answer:   `{"totalCount":1,"nextPageKey":null,"resolution":"Inf","result":[{"metricId":"builtin:service.errors.total.rate","dataPointCountRatio":0.0001,"dimensionCountRatio":0.01,"data":[{"dimensions":[],"dimensionMap":{},"timestamps":[1700000000000],"values":[1.5]}]}]}`,
			jsonPath: "{.result[0].data[0].values[0]}",
			want:     Result{Value: 1.5, Outcome: OutcomeOK},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, answering(http.StatusOK, tc.answer))
			p := Provider{Name: "web", Kind: KindWeb, Address: s.URL, JSONPath: tc.jsonPath}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "", at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
