package promql

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

// Answers of Datadog's metrics query API (GET /api/v1/query), as it
// writes them: series of points [time in ms, value], null where a rollup's
// bucket has no data; errors as {"errors": [...]}.
const (
	datadogOne = `{"status":"ok","res_type":"time_series","resp_version":1,"query":"sum:trace.http.request.errors{service:web}.as_count()",` +
		`"from_date":1699999940000,"to_date":1700000000000,"series":[{"unit":null,"query_index":0,"aggr":"sum","metric":"trace.http.request.errors",` +
		`"tag_set":[],"expression":"sum:trace.http.request.errors{service:web}.as_count()","scope":"service:web","interval":20,"length":3,` +
		`"start":1699999940000,"end":1700000000000,"pointlist":[[1699999940000.0,0.5],[1699999960000.0,0.25],[1699999980000.0,0.0125]],"display_name":"trace.http.request.errors"}],` +
		`"values":[],"times":[],"message":"","group_by":[]}`
	datadogTrailingNull = `{"status":"ok","series":[{"pointlist":[[1699999940000.0,0.5],[1699999960000.0,0.75],[1699999980000.0,null]]}]}`
	datadogAllNull      = `{"status":"ok","series":[{"pointlist":[[1699999940000.0,null],[1699999960000.0,null]]}]}`
	datadogNoPoints     = `{"status":"ok","series":[{"pointlist":[]}]}`
	datadogNoSeries     = `{"status":"ok","res_type":"time_series","series":[],"values":[],"times":[]}`
	datadogTwo          = `{"status":"ok","series":[{"scope":"service:a","pointlist":[[1,1]]},{"scope":"service:b","pointlist":[[1,2]]}]}`
	datadogErrors       = `{"errors":["Error parsing query: \n unable to parse sum:x{: Rule 'scope_expr' didn't match"]}`
	datadogForbidden    = `{"errors":["Forbidden"]}`
	datadogStatusError  = `{"status":"error","error":"Rate limit of 300 requests in 3600 seconds reached"}`
)

// datadogStandIn is a stand-in for Datadog's API: it answers its
// metrics query API only, with the keys it accepts, as Datadog does (403
// {"errors":["Forbidden"]} without them), and answers body otherwise.
func datadogStandIn(t *testing.T, apiKey, appKey, body string, seen chan<- *http.Request) *httptest.Server {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen <- r.Clone(context.Background())
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/api/v1/query" || r.Method != http.MethodGet:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"errors":["Not found"]}`)
		case r.Header.Get("DD-API-KEY") != apiKey || r.Header.Get("DD-APPLICATION-KEY") != appKey:
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, datadogForbidden)
		default:
			_, _ = io.WriteString(w, body)
		}
	})
}

func TestDatadogAnswers(t *testing.T) {
	cases := map[string]struct {
		reason  string
		handler http.HandlerFunc
		want    Result
	}{
		"OneSeries": {
			reason:  "The last point of the one series is the value.",
			handler: answering(http.StatusOK, datadogOne),
			want:    Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"TrailingNull": {
			reason:  "A null point (a rollup bucket without data, the newest often) is skipped: the last point that has a value is the value.",
			handler: answering(http.StatusOK, datadogTrailingNull),
			want:    Result{Value: 0.75, Outcome: OutcomeOK},
		},
		"AllNull": {
			reason:  "A series whose every point is null has no value.",
			handler: answering(http.StatusOK, datadogAllNull),
			want:    Result{NoData: `provider "dd": a series whose every point is null`, Outcome: OutcomeNoData},
		},
		"NoPoints": {
			reason:  "A series without points has no value.",
			handler: answering(http.StatusOK, datadogNoPoints),
			want:    Result{NoData: `provider "dd": a series without points`, Outcome: OutcomeNoData},
		},
		"NoSeries": {
			reason:  "No series (nothing reported in the window) is no data.",
			handler: answering(http.StatusOK, datadogNoSeries),
			want:    Result{NoData: `provider "dd": no series`, Outcome: OutcomeNoData},
		},
		"TwoSeries": {
			reason:  "Several series (a query grouped by a tag) are no one number: no data, saying how to aggregate.",
			handler: answering(http.StatusOK, datadogTwo),
			want:    Result{NoData: `provider "dd": 2 series: the query must give one series (aggregate it, e.g. sum:metric{...})`, Outcome: OutcomeNoData},
		},
		"BadQuery": {
			reason:  "Datadog's 400 is named by its errors.",
			handler: answering(http.StatusBadRequest, datadogErrors),
			want:    Result{NoData: `provider "dd": HTTP 400: "Error parsing query: \n unable to parse sum:x{: Rule 'scope_expr' didn't match"`, Outcome: OutcomeError},
		},
		"Forbidden": {
			reason:  "Keys Datadog refuses are its 403.",
			handler: answering(http.StatusForbidden, datadogForbidden),
			want:    Result{NoData: `provider "dd": HTTP 403: "Forbidden"`, Outcome: OutcomeError},
		},
		"ErrorsOn200": {
			reason:  "Errors in an answer of 200 are an error all the same.",
			handler: answering(http.StatusOK, datadogErrors),
			want:    Result{NoData: `provider "dd": errors: "Error parsing query: \n unable to parse sum:x{: Rule 'scope_expr' didn't match"`, Outcome: OutcomeError},
		},
		"StatusError": {
			reason:  `A "status":"error" answer is an error naming its message.`,
			handler: answering(http.StatusOK, datadogStatusError),
			want:    Result{NoData: `provider "dd": an error: "Rate limit of 300 requests in 3600 seconds reached"`, Outcome: OutcomeError},
		},
		"UnknownStatus": {
			reason:  "A status other than ok is no answer.",
			handler: answering(http.StatusOK, `{"status":"pending","series":[]}`),
			want:    Result{NoData: `provider "dd": an unknown status "pending"`, Outcome: OutcomeError},
		},
		"NotAPoint": {
			reason:  "A point that is not [time, value] is an invalid answer.",
			handler: answering(http.StatusOK, `{"status":"ok","series":[{"pointlist":[[1,2,3]]}]}`),
			want:    Result{NoData: `provider "dd": an invalid answer (a point is not [time, value])`, Outcome: OutcomeError},
		},
		"ValueNotANumber": {
			reason:  "A point whose value is a string is an invalid answer.",
			handler: answering(http.StatusOK, `{"status":"ok","series":[{"pointlist":[[1,"0.5"]]}]}`),
			want:    Result{NoData: `provider "dd": an invalid answer (not Datadog's JSON: json: cannot unmarshal string into Go struct field datadogSeriesJSON.pointlist of type float64)`, Outcome: OutcomeError},
		},
		"NotJSON": {
			reason:  "An answer that is no JSON (a proxy's page) quotes its start.",
			handler: answering(http.StatusOK, `<html>Bad gateway</html>`),
			want:    Result{NoData: `provider "dd": an invalid answer (not Datadog's JSON: invalid character '<' looking for beginning of value; it begins "<html>Bad gateway</html>")`, Outcome: OutcomeError},
		},
		"Huge": {
			reason:  "An answer of 10 MiB is read up to 1 MiB, then refused.",
			handler: flooding(http.StatusOK, ' ', 10<<20),
			want:    Result{NoData: `provider "dd": an answer of more than 1 MiB`, Outcome: OutcomeError},
		},
		"Redirect": {
			reason: "A redirect is never followed: the keys stay with the site's API.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://api.elsewhere.example/api/v1/query", http.StatusFound)
			},
			want: Result{NoData: `provider "dd": redirected (HTTP 302 to "https://api.elsewhere.example/api/v1/query"); redirects are never followed, so that credentials go nowhere else: set the address the redirect names`, Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Timeout: MaxTimeout, Window: time.Minute, Auth: Auth{APIKey: "api-k3y-0123456789", AppKey: "app-k3y-0123456789"}}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum:x{*}", at) })
			if diff := cmp.Diff(tc.want, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDatadogRequest(t *testing.T) {
	// The stand-in answers only its API's path, with the keys it was
	// given: a request it answers is one Datadog would.
	cases := map[string]struct {
		reason string
		window time.Duration
		at     time.Time
		want   url.Values
		result Result
	}{
		"Window": {
			reason: "The window is the metric's interval, ending at the run's time, in whole seconds; the query as expanded.",
			window: 90 * time.Second,
			at:     at,
			want:   url.Values{"from": {"1699999910"}, "to": {"1700000000"}, "query": {"sum:trace.http.request.errors{service:web}.as_count()"}},
			result: Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"SubSecondWindow": {
			reason: "A window of a fraction of a second reaches back a whole second: a window of none would ask for no point.",
			window: 500 * time.Millisecond,
			at:     at,
			want:   url.Values{"from": {"1699999999"}, "to": {"1700000000"}, "query": {"sum:trace.http.request.errors{service:web}.as_count()"}},
			result: Result{Value: 0.0125, Outcome: OutcomeOK},
		},
		"NoWindow": {
			reason: "A provider used without a window (made by hand) reads the default interval, 1m.",
			at:     at,
			want:   url.Values{"from": {"1699999940"}, "to": {"1700000000"}, "query": {"sum:trace.http.request.errors{service:web}.as_count()"}},
			result: Result{Value: 0.0125, Outcome: OutcomeOK},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			seen := make(chan *http.Request, 1)
			s := datadogStandIn(t, "api-k3y", "app-k3y", datadogOne, seen)
			p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Window: tc.window, Auth: Auth{APIKey: "api-k3y", AppKey: "app-k3y"}}
			got := within(t, 30*time.Second, func() Result {
				return (&Client{}).Query(t.Context(), p, "sum:trace.http.request.errors{service:web}.as_count()", tc.at)
			})
			if diff := cmp.Diff(tc.result, got, ignoreTook); diff != "" {
				t.Errorf("%s\nQuery(...): -want, +got:\n%s", tc.reason, diff)
			}
			r := <-seen
			if diff := cmp.Diff(tc.want, r.URL.Query()); diff != "" {
				t.Errorf("%s\nthe query's parameters: -want, +got:\n%s", tc.reason, diff)
			}
			if a := r.Header.Get("Authorization"); a != "" {
				t.Errorf("%s\nAuthorization %q: Datadog's keys go in their own headers only", tc.reason, a)
			}
		})
	}
	t.Run("WrongKeys", func(t *testing.T) {
		s := datadogStandIn(t, "api-k3y", "app-k3y", datadogOne, nil)
		p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Auth: Auth{APIKey: "api-k3y", AppKey: "other"}}
		got := (&Client{}).Query(t.Context(), p, "sum:x{*}", at)
		if diff := cmp.Diff(Result{NoData: `provider "dd": HTTP 403: "Forbidden"`, Outcome: OutcomeError}, got, ignoreTook); diff != "" {
			t.Errorf("keys the API refuses: -want, +got:\n%s", diff)
		}
	})
	t.Run("NoInstant", func(t *testing.T) {
		s := datadogStandIn(t, "k", "a", datadogOne, nil)
		p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Auth: Auth{APIKey: "k", AppKey: "a"}}
		got := (&Client{}).Query(t.Context(), p, "sum:x{*}", time.Time{})
		if got.Outcome != OutcomeError || !strings.Contains(got.NoData, "no instant") {
			t.Errorf("a query at no instant = %+v, want an error: the window ends at the run's time", got)
		}
	})
}

func TestDatadogGivesUp(t *testing.T) {
	// A Datadog provider is bounded as a Prometheus one: its timeout.
	s := serve(t, hanging(t))
	p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Timeout: 100 * time.Millisecond, Auth: Auth{APIKey: "k", AppKey: "a"}}
	got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum:x{*}", at) })
	if diff := cmp.Diff(Result{NoData: `provider "dd": timed out after 100ms`, Outcome: OutcomeError}, got, ignoreTook); diff != "" {
		t.Errorf("Query(...): -want, +got:\n%s", diff)
	}
}

// TestDatadogNeverEchoesKeys: Datadog's keys, sent in their own headers,
// are redacted from whatever its API (or a proxy in front) answers, as a
// Prometheus provider's credentials are (TestClientNeverEchoesCredentials).
func TestDatadogNeverEchoesKeys(t *testing.T) {
	apiKey := "0123456789abcdef0123456789abcdef"
	appKey := "fedcba9876543210fedcba9876543210fedcba98"
	echo := func(r *http.Request) string {
		return "DD-API-KEY=" + r.Header.Get(headerDatadogAPIKey) + " DD-APPLICATION-KEY=" + r.Header.Get(headerDatadogAppKey)
	}
	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
		says    string
	}{
		"ForbiddenErrors": {
			reason: "A 403 of Datadog's shape whose errors repeat the keys.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(map[string][]string{"errors": {"invalid keys: " + echo(r)}})
			},
			says: `HTTP 403: "invalid keys: DD-API-KEY=`,
		},
		"ErrorsOn200": {
			reason: "Errors in a 200 that repeat the keys.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string][]string{"errors": {echo(r)}})
			},
			says: `errors: "DD-API-KEY=`,
		},
		"StatusError": {
			reason: `A "status":"error" whose error repeats the keys.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": echo(r)})
			},
			says: `an error: "DD-API-KEY=`,
		},
		"UnknownStatus": {
			reason: "A status that is a key.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"status": r.Header.Get(headerDatadogAppKey)})
			},
			says: `an unknown status "`,
		},
		"HTMLPage": {
			reason: "A proxy's HTML page that shows the request's headers.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "<html><pre>"+echo(r)+"</pre></html>")
			},
			says: `not Datadog's JSON`,
		},
		"RedirectLocation": {
			reason: "A redirect whose Location carries the keys.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://login.example/?k="+url.QueryEscape(echo(r)))
				w.WriteHeader(http.StatusTemporaryRedirect)
			},
			says: `redirected (HTTP 307 to "https://login.example/?k=`,
		},
		"HugeErrorCutInsideAKey": {
			reason: "A 500 repeating a key past the 64 KiB read, cut inside a repeat.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				k := r.Header.Get(headerDatadogAppKey)
				_, _ = io.WriteString(w, strings.Repeat(k+" ", maxErrorBody/len(k)+1))
			},
			says: `HTTP 500: "`,
		},
	}
	for name, tc := range shapes {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			p := Provider{Name: "dd", Kind: KindDatadog, Address: s.URL, Timeout: MaxTimeout, Auth: Auth{APIKey: apiKey, AppKey: appKey}}
			got := within(t, 30*time.Second, func() Result { return (&Client{}).Query(t.Context(), p, "sum:x{*}", at) })
			if got.Outcome != OutcomeError || !strings.Contains(got.NoData, tc.says) {
				t.Errorf("%s\nQuery(...) = %+v, want an error that says %q", tc.reason, got, tc.says)
			}
			for _, key := range []string{apiKey, appKey} {
				for _, form := range []string{key, url.QueryEscape(key), key[:16]} {
					if strings.Contains(got.NoData, form) {
						t.Errorf("%s\nthe reason holds a key %q: %s", tc.reason, form, got.NoData)
					}
				}
			}
		})
	}
}

func TestDatadogAuthFrom(t *testing.T) {
	type want struct {
		Auth Auth
		Err  string
	}
	cases := map[string]struct {
		reason string
		data   map[string][]byte
		want   want
	}{
		"Keys": {
			reason: "Both keys, one line end each dropped.",
			data:   map[string][]byte{"apiKey": []byte("api\n"), "appKey": []byte("app")},
			want:   want{Auth: Auth{APIKey: "api", AppKey: "app"}},
		},
		"NoAppKey": {
			reason: "Datadog's query API needs both keys.",
			data:   map[string][]byte{"apiKey": []byte("api")},
			want:   want{Err: "credentials hold no appKey: a Datadog provider's hold apiKey and appKey"},
		},
		"Typo": {
			reason: "A key of another name (a typo) is named, never its value.",
			data:   map[string][]byte{"apiKey": []byte("api"), "appKey": []byte("app"), "api-key": []byte("v4lue")},
			want:   want{Err: `credentials hold unknown keys "api-key"; a Datadog provider's hold apiKey and appKey`},
		},
		"Token": {
			reason: "A bearer token is no Datadog key.",
			data:   map[string][]byte{"token": []byte("t")},
			want:   want{Err: `credentials hold unknown keys "token"; a Datadog provider's hold apiKey and appKey`},
		},
		"Empty": {
			reason: "An empty key is refused.",
			data:   map[string][]byte{"apiKey": []byte("\n"), "appKey": []byte("app")},
			want:   want{Err: "credentials' apiKey is empty"},
		},
		"ControlCharacter": {
			reason: "A key a header cannot carry is refused, naming it, never its value.",
			data:   map[string][]byte{"apiKey": []byte("a\x00b"), "appKey": []byte("app")},
			want:   want{Err: "credentials' apiKey holds a control character, which an HTTP header cannot carry"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := Provider{Kind: KindDatadog}.AuthFrom(tc.data)
			got := want{Auth: a}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAuthFrom(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestExpandDatadog(t *testing.T) {
	v := Values{Namespace: "test", Route: "web", Service: "podinfo-canary", Revision: "v2.1", Interval: 90 * time.Second}
	cases := map[string]struct {
		reason string
		query  string
		values Values
		want   string
	}{
		"Names": {
			reason: "Kubernetes names are tag values as they are; the interval a duration.",
			query:  "sum:trace.http.request.errors{service:{{service}},env:{{namespace}},version:{{revision}}}.rollup(sum, {{interval}})",
			values: v,
			want:   "sum:trace.http.request.errors{service:podinfo-canary,env:test,version:v2.1}.rollup(sum, 90s)",
		},
		"Hostile": {
			reason: "Attack: a value that would close the scope, add a tag or a function is only tag characters.",
			query:  "sum:x{version:{{revision}}}",
			values: Values{Revision: "v2},sum:secret.metric{*} , {a:b"},
			want:   "sum:x{version:v2__sum:secret.metric_______a:b}",
		},
		"NotExpandedAgain": {
			reason: "A value that reads as a placeholder is not expanded again.",
			query:  "{{revision}}",
			values: Values{Revision: "{{namespace}}", Namespace: "ns"},
			want:   "__namespace__",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ExpandDatadog(tc.query, tc.values)); diff != "" {
				t.Errorf("%s\nExpandDatadog(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func FuzzDatadogAnswer(f *testing.F) {
	for _, seed := range []string{
		datadogOne, datadogTrailingNull, datadogAllNull, datadogNoPoints, datadogNoSeries, datadogTwo,
		datadogErrors, datadogForbidden, datadogStatusError, `{}`, `null`, `[]`, ``, `{"status":"ok","series":null}`,
		`{"status":"ok","series":[{"pointlist":[[1,1e308],[2,-1e308]]}]}`, `{"status":"ok","series":[{"pointlist":[[1,1e400]]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, why, outcome := datadogAPI{}.answer(body, redact.Secrets{})
		switch outcome {
		case OutcomeOK:
			if why != "" || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("answer(%q) = %v, %q: a value must be finite and without a reason", body, v, why)
			}
		case OutcomeNoData, OutcomeError:
			if why == "" || v != 0 || len(why) > 4096 {
				t.Errorf("answer(%q) = %v, %q, %s: no value needs a short reason, and no value", body, v, why, outcome)
			}
		default:
			t.Errorf("answer(%q): outcome %q", body, outcome)
		}
	})
}

// ExampleExpandDatadog shows a query as Datadog receives it.
func ExampleExpandDatadog() {
	fmt.Println(ExpandDatadog("avg:trace.http.request.duration{service:{{service}}}", Values{Service: "podinfo-canary"}))
	// Output: avg:trace.http.request.duration{service:podinfo-canary}
}
