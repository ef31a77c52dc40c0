package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/metric"
)

// TestAttackMetricCredentialEchoedEndToEnd: what internal/metric's
// TestAttackCredentialEchoedInProviderEncodings finds reaches everything
// API.md (Safety round 4) names: the MetricNoData event, the function's log,
// status.rollout.metrics[].reason, the response. A bearer token of base64
// (random bytes are: '/', '+') echoed by a proxy whose JSON encoder escapes
// "/" as "\/", or in a 401 whose connection breaks mid-body.
func TestAttackMetricCredentialEchoedEndToEnd(t *testing.T) {
	const token = "c2VjcmV0/dG9rZW4+b2Yg/YSBwcm9t+aGV1c2/gZm9yLXRoZS1mdW5jdGlvbg"
	shapes := map[string]struct {
		reason  string
		handler http.HandlerFunc
	}{
		"JSONSlashEscaped": {
			reason: `Attack: a 401 JSON body whose encoder escapes "/" as "\/" (PHP's json_encode): the token, backslashes aside, is in the status, the event and the log.`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"message":"invalid `+strings.ReplaceAll(r.Header.Get("Authorization"), "/", `\/`)+`"}`)
			},
		},
		"ErrorBodyCutByBrokenConnection": {
			reason: "Attack: a 401 whose body repeats the header, its connection broken before the announced Content-Length: the part of the token that came is in the status, the event and the log.",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				body := "invalid " + r.Header.Get("Authorization")[:40]
				_, _ = fmt.Fprintf(buf, "HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s", len(body)+100, body)
				_ = buf.Flush()
			},
		},
	}
	for name, tc := range shapes {
		t.Run(name, func(t *testing.T) {
			provider := httptest.NewServer(tc.handler)
			t.Cleanup(provider.Close)
			input := emptyInput + "metricProviders: [{name: prometheus, prometheus: {address: \"" + provider.URL + "\", credentials: prometheus}}]\n"
			s := newSim(t, metricsXR("", ""), input)
			s.querier = &metric.Client{}
			s.credentials = map[string]*fnv1.Credentials{"prometheus": {Source: &fnv1.Credentials_CredentialData{CredentialData: &fnv1.CredentialData{Data: map[string][]byte{"token": []byte(token)}}}}}
			log := newRecordingLog()
			s.log = log
			said := map[string]string{}
			measured := false
			for i := range 10 {
				r := s.run(0)
				wire, err := protojson.Marshal(r.rsp)
				if err != nil {
					t.Fatal(err)
				}
				said[fmt.Sprint("response ", i)] = string(wire)
				for _, e := range r.events {
					measured = measured || strings.Contains(e, "MetricNoData")
					said[fmt.Sprint("event ", i)] += e
				}
			}
			if !measured {
				t.Fatalf("no MetricNoData event: the provider was not asked\n%s", s.describe())
			}
			status, err := json.Marshal(s.status)
			if err != nil {
				t.Fatal(err)
			}
			said["status"], said["log"] = string(status), log.String()
			var holders []string
			for where, text := range said {
				plain := strings.ReplaceAll(text, `\`, "")
				if i := strings.Index(plain, token[:16]); i >= 0 {
					holders = append(holders, fmt.Sprintf("%s: ...%s...", where, plain[max(0, i-60):min(len(plain), i+60)]))
				}
			}
			if len(holders) > 0 {
				slices.Sort(holders)
				t.Errorf("%s\nthe token (backslashes aside) is in:\n%s", tc.reason, strings.Join(holders, "\n"))
			}
		})
	}
}
