// Package backends serves the backends that the real gateway sends requests
// to, in the live tests and in hack/cluster.sh. The gateway reaches a
// Service at its clusterIP and port, and the control plane's Service range is
// inside loopback: a backend listens on its Service's clusterIP and port, on
// this machine, with no pod, kubelet or kube-proxy.
//
// A backend answers every request with its name: in the body and in the
// X-Backend header over HTTP/1.1 and h2c, and in the x-backend header of
// gRPC health checks (grpc.health.v1.Health/Check) over h2c, which is how
// Gateway API implementations reach a Service port whose appProtocol is
// kubernetes.io/h2c.
package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// Header names the backend that answered, in HTTP responses and (lower
// case) in gRPC response headers.
const Header = "X-Backend"

// A Server is one backend.
type Server struct {
	// Name is what the backend answers.
	Name string
	// Addr is the host:port it listens on.
	Addr string

	status   int
	every    int64
	requests atomic.Int64
	http     *http.Server
	grpc     *grpc.Server
	done     chan struct{}
}

// An Option changes a backend.
type Option func(*Server)

// WithStatus makes the backend answer HTTP requests with this status code
// (default 200), as a failing canary does.
func WithStatus(code int) Option { return func(s *Server) { s.status = code } }

// WithErrorsEvery makes every nth request (the nth, the 2nth, ...) answer
// 500, and the others as usual: a steady error ratio of 1/n, as a version
// with a rare bug has. n below 1 changes nothing.
func WithErrorsEvery(n int) Option { return func(s *Server) { s.every = int64(n) } }

// Start starts a backend named name on addr (host:port).
func Start(addr, name string, opts ...Option) (*Server, error) {
	s := &Server{Name: name, status: http.StatusOK, done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	s.Addr = l.Addr().String()
	s.grpc = grpc.NewServer()
	grpc_health_v1.RegisterHealthServer(s.grpc, health{s: s})
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	s.http = &http.Server{Handler: s, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(l)
	}()
	return s, nil
}

// ServeHTTP answers a request with the backend's name, or passes a gRPC
// call to the gRPC server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		s.grpc.ServeHTTP(w, r)
		return
	}
	code := s.status
	if n := s.requests.Add(1); s.every > 0 && n%s.every == 0 {
		code = http.StatusInternalServerError
	}
	w.Header().Set(Header, s.Name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, s.Name)
}

// Requests returns how many requests (HTTP or gRPC) the backend answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Close stops the backend.
func (s *Server) Close() error {
	s.grpc.Stop()
	err := s.http.Close()
	<-s.done
	return err
}

// health answers gRPC health checks with the backend's name.
type health struct {
	grpc_health_v1.UnimplementedHealthServer

	s *Server
}

func (h health) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	h.s.requests.Add(1)
	if err := grpc.SetHeader(ctx, metadata.Pairs(strings.ToLower(Header), h.s.Name)); err != nil {
		return nil, err
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// A Set is backends that follow what should be served: hack/cluster.sh
// serves one for every Service port of the control plane with it.
type Set struct {
	mu      sync.Mutex
	servers map[string]*Server
}

// Serve makes the set serve exactly these backends, name by address
// (host:port): it starts the new ones, keeps those already running under
// the same name, and stops the others. It returns the errors of backends
// that could not start; the others run.
func (set *Set) Serve(want map[string]string) error {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.servers == nil {
		set.servers = map[string]*Server{}
	}
	for addr, s := range set.servers {
		if want[addr] != s.Name {
			_ = s.Close()
			delete(set.servers, addr)
		}
	}
	var errs []error
	for addr, name := range want {
		if set.servers[addr] != nil {
			continue
		}
		s, err := Start(addr, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set.servers[addr] = s
	}
	return errors.Join(errs...)
}

// Close stops every backend of the set.
func (set *Set) Close() {
	_ = set.Serve(nil)
}
