package backends

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// answer is what a client sees of one HTTP request.
type answer struct {
	Status  int
	Backend string
	Body    string
}

func get(t *testing.T, addr string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/any/path?q=1", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{Status: rsp.StatusCode, Backend: rsp.Header.Get(Header), Body: string(b)}
}

func TestServerHTTP(t *testing.T) {
	type want struct {
		answer   answer
		requests int64
	}
	cases := map[string]struct {
		reason string
		opts   []Option
		want   want
	}{
		"Answers": {
			reason: "A backend answers every request with its name, in the body and the header, and counts it.",
			want:   want{answer: answer{Status: http.StatusOK, Backend: "canary", Body: "canary\n"}, requests: 1},
		},
		"Fails": {
			reason: "A backend WithStatus answers that status, still naming itself, as a failing canary does.",
			opts:   []Option{WithStatus(http.StatusInternalServerError)},
			want:   want{answer: answer{Status: http.StatusInternalServerError, Backend: "canary", Body: "canary\n"}, requests: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := Start("127.0.0.1:0", "canary", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			got := want{answer: get(t, s.Addr)}
			got.requests = s.Requests()
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestServerErrorsEvery counts the answers of a backend that fails every
// fifth request: exactly one in five, the fifth and the tenth.
func TestServerErrorsEvery(t *testing.T) {
	s, err := Start("127.0.0.1:0", "canary", WithErrorsEvery(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	got := make([]int, 0, 10)
	for range 10 {
		a := get(t, s.Addr)
		if a.Backend != "canary" {
			t.Errorf("answered by %q, want canary", a.Backend)
		}
		got = append(got, a.Status)
	}
	want := []int{200, 200, 200, 200, 500, 200, 200, 200, 200, 500}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the statuses of 10 requests: -want, +got:\n%s", diff)
	}
}

// TestServerGRPC calls the health service over h2c, as a gateway does for
// a Service port whose appProtocol is kubernetes.io/h2c.
func TestServerGRPC(t *testing.T) {
	s, err := Start("127.0.0.1:0", "primary")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	var md metadata.MD
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	rsp, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{}, grpc.Header(&md))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Status   grpc_health_v1.HealthCheckResponse_ServingStatus
		Backend  []string
		Requests int64
	}
	want := result{Status: grpc_health_v1.HealthCheckResponse_SERVING, Backend: []string{"primary"}, Requests: 1}
	got := result{Status: rsp.GetStatus(), Backend: md.Get("x-backend"), Requests: s.Requests()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a health check answers SERVING with the backend's name in the x-backend header: -want, +got:\n%s", diff)
	}
}

// TestSet follows what should be served: new addresses start, renamed ones
// restart, missing ones stop.
func TestSet(t *testing.T) {
	addrs := make([]string, 2)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = l.Addr().String()
		_ = l.Close()
	}
	set := &Set{}
	t.Cleanup(set.Close)

	steps := []struct {
		reason string
		serve  map[string]string
		want   map[string]string // address: the backend answering, or "refused"
	}{
		{
			reason: "Both addresses start, each under its name.",
			serve:  map[string]string{addrs[0]: "shop/web-primary", addrs[1]: "shop/web-canary"},
			want:   map[string]string{addrs[0]: "shop/web-primary", addrs[1]: "shop/web-canary"},
		},
		{
			reason: "A renamed address answers with its new name; a missing one stops.",
			serve:  map[string]string{addrs[0]: "shop/checkout-primary"},
			want:   map[string]string{addrs[0]: "shop/checkout-primary", addrs[1]: "refused"},
		},
	}
	for i, s := range steps {
		if err := set.Serve(s.serve); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := map[string]string{}
		for _, a := range addrs {
			got[a] = probe(t, a)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("step %d: %s\n-want, +got:\n%s", i, s.reason, diff)
		}
	}
}

// probe returns the backend answering on addr, or "refused".
func probe(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "refused"
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	return get(t, addr).Backend
}
