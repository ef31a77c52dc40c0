package egress

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/redact"
)

func TestFailure(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	live := context.Background()
	urlErr := &url.Error{Op: "Get", URL: "http://slo.monitoring/api?token=s3cr3t", Err: errors.New("connection refused")}
	cases := map[string]struct {
		reason    string
		run, call context.Context
		want      string
	}{
		"RunDeadline": {reason: "The run's deadline is said first.", run: expired, call: done, want: atonce.WhyRunDeadline},
		"RunCanceled": {reason: "A canceled run is said as such.", run: done, call: done, want: atonce.WhyRunCanceled},
		"Timeout":     {reason: "The call's own timeout names it.", run: live, call: done, want: "timed out after 5s"},
		"Unreachable": {reason: "Else the error, without the URL that holds the query or a secret.", run: live, call: live, want: "cannot be reached: connection refused"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Failure(tc.run, tc.call, 5*time.Second, urlErr, redact.Secrets{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nFailure(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRedirectsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
	}))
	defer srv.Close()
	brought := &http.Client{}
	for name, hc := range map[string]*http.Client{"Own": Client(Transport(nil, time.Second)), "Brought": WithoutRedirects(brought)} {
		t.Run(name, func(t *testing.T) {
			resp, err := hc.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				t.Errorf("a redirect is the answer, never followed: got HTTP %d", resp.StatusCode)
			}
		})
	}
	if brought.CheckRedirect != nil {
		t.Errorf("WithoutRedirects changed the client it was given")
	}
}
