package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// envCertsDir is the environment variable that --tls-certs-dir reads.
const envCertsDir = "TLS_SERVER_CERTS_DIR"

// cliNow is the instant the servers under test evaluate rollouts at, with
// --now, so that their responses can be compared with in-process runs.
const cliNow = "2026-12-02T10:07:00Z"

// startTimeout bounds the wait for a server to listen or exit: a failure
// message, not a speed requirement.
const startTimeout = time.Minute

// parseCLI parses a command line as main does, flags and environment.
func parseCLI(t *testing.T, args ...string) *CLI {
	t.Helper()
	cli := &CLI{}
	parser, err := kong.New(cli, kong.Exit(func(code int) { t.Fatalf("the CLI exited with code %d on %q", code, args) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(args); err != nil {
		t.Fatalf("cannot parse %q: %v", args, err)
	}
	return cli
}

// startCLI runs the CLI's Run, as main does, on a free loopback address,
// without a metrics server. It returns the address once the server listens,
// or Run's error if Run returns first.
//
// The SDK's function.Serve (v0.7.1) has no way to stop: no context, and it
// opens the listener itself. A server started here lives until the test
// binary exits, idle once the test closed its connections.
func startCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return startServing(t, func(addr string) error {
		return parseCLI(t, append(args, "--address="+addr, "--metrics-address=")...).Run()
	})
}

// startServing runs serve(addr) in the background on a free loopback
// address and waits until something listens there (it returns the address)
// or serve returns (it returns serve's error). A port that another process
// took between the test finding it free and serve listening is retried.
func startServing(t *testing.T, serve func(addr string) error) (string, error) {
	t.Helper()
	for range 3 {
		addr := freeLoopbackAddress(t)
		done := make(chan error, 1)
		go func() { done <- serve(addr) }()
		err := waitListening(addr, done)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if errors.Is(err, errNotListening) {
			t.Fatalf("the server neither listened at %s nor returned within %s", addr, startTimeout)
		}
		return addr, err
	}
	t.Fatal("three free ports in a row were taken before the server could listen")
	return "", nil
}

var errNotListening = errors.New("not listening")

// waitListening polls addr until it accepts a connection (nil), or done
// delivers the server's error.
func waitListening(addr string, done <-chan error) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			if err == nil {
				return errors.New("the server returned without an error")
			}
			return err
		case <-time.After(10 * time.Millisecond):
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return c.Close()
		}
	}
	return errNotListening
}

func freeLoopbackAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// dial connects a client to addr; the connection closes with the test.
func dial(t *testing.T, addr string, creds credentials.TransportCredentials) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return fnv1.NewFunctionRunnerServiceClient(conn)
}

// exampleRequest is the request that crossplane render sends for the
// Flagger example, evaluated at cliNow: the request the servers answer in
// these tests, and its expected response from an in-process run.
func exampleRequest(t *testing.T) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse) {
	t.Helper()
	reqs := exampleRequests(t)
	req := reqs["example/flagger"]
	if req == nil {
		t.Fatal("no example/flagger request")
	}
	return req, runInProcess(t, req)
}

// A pki is a CA and the certificates it signs, generated for one test.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *pki {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{cert: cert, key: key}
}

// issue signs a leaf certificate from tmpl; a nil CA signs it with its own
// key (self-signed).
func (ca *pki) issue(t *testing.T, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *pki) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writeServerCerts writes the server's tls.crt and tls.key and the CA that
// verifies clients, ca.crt, where --tls-certs-dir expects them.
func writeServerCerts(t *testing.T, dir string, ca *pki, server tls.Certificate) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(server.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: server.Certificate[0]},
		"tls.key": {Type: "PRIVATE KEY", Bytes: keyDER},
		"ca.crt":  {Type: "CERTIFICATE", Bytes: ca.cert.Raw},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeMTLS starts the function as its command line says, with a CA and
// certificates generated here, and calls it as clients with and without a
// certificate the CA signed.
func TestServeMTLS(t *testing.T) {
	ca := newCA(t, "crossplane-root-ca")
	otherCA := newCA(t, "another-root-ca")
	dir := t.TempDir()
	writeServerCerts(t, dir, ca, ca.issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "function-canary-route"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}))
	clientCert := func(signer *pki, usage x509.ExtKeyUsage, notAfter time.Time) tls.Certificate {
		return signer.issue(t, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "crossplane"},
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
			NotBefore:   notAfter.Add(-2 * time.Hour),
			NotAfter:    notAfter,
		})
	}
	valid := time.Now().Add(time.Hour)
	// Every client verifies the server against the CA, so that a refusal
	// can only be the server's refusal of the client.
	mtls := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.pool(), Certificates: certs})
	}

	req, want := exampleRequest(t)

	servers := map[string]func(t *testing.T) (string, error){
		"Flag": func(t *testing.T) (string, error) {
			t.Setenv(envCertsDir, "")
			return startCLI(t, "--tls-certs-dir="+dir, "--now="+cliNow)
		},
		"EnvironmentVariable": func(t *testing.T) (string, error) {
			t.Setenv(envCertsDir, dir)
			return startCLI(t, "--now="+cliNow)
		},
	}
	cases := map[string]struct {
		reason string
		client credentials.TransportCredentials
		want   codes.Code
	}{
		"Plaintext": {
			reason: "A client without TLS is refused: the server speaks mTLS only.",
			client: insecure.NewCredentials(),
			want:   codes.Unavailable,
		},
		"NoClientCertificate": {
			reason: "A TLS client without a certificate is refused.",
			client: mtls(),
			want:   codes.Unavailable,
		},
		"CertificateOfAnotherCA": {
			reason: "A client certificate that another CA signed is refused.",
			client: mtls(clientCert(otherCA, x509.ExtKeyUsageClientAuth, valid)),
			want:   codes.Unavailable,
		},
		"SelfSignedCertificate": {
			reason: "A self-signed client certificate is refused.",
			client: mtls(clientCert(nil, x509.ExtKeyUsageClientAuth, valid)),
			want:   codes.Unavailable,
		},
		"ExpiredCertificate": {
			reason: "A client certificate of the CA that has expired is refused.",
			client: mtls(clientCert(ca, x509.ExtKeyUsageClientAuth, time.Now().Add(-time.Hour))),
			want:   codes.Unavailable,
		},
		"ServerOnlyCertificate": {
			reason: "A certificate of the CA for server authentication only does not authenticate a client.",
			client: mtls(clientCert(ca, x509.ExtKeyUsageServerAuth, valid)),
			want:   codes.Unavailable,
		},
		"CertificateOfTheCA": {
			reason: "A client with a certificate that the CA signed gets the function's response.",
			client: mtls(clientCert(ca, x509.ExtKeyUsageClientAuth, valid)),
			want:   codes.OK,
		},
	}
	for sname, start := range servers {
		t.Run(sname, func(t *testing.T) {
			addr, err := start(t)
			if err != nil {
				t.Fatalf("the function did not start: %v", err)
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					rsp, err := dial(t, addr, tc.client).RunFunction(t.Context(), req)
					if diff := cmp.Diff(tc.want, status.Code(err)); diff != "" {
						t.Errorf("%s\nRunFunction(...): -want code, +got code:\n%s\nerror: %v", tc.reason, diff, err)
					}
					if tc.want != codes.OK {
						t.Logf("refused as it should be: %v", err)
						return
					}
					if diff := cmp.Diff(want, rsp, protocmp.Transform()); diff != "" {
						t.Errorf("%s\nRunFunction(...): -want (in process), +got (over mTLS):\n%s", tc.reason, diff)
					}
				})
			}
		})
	}
}

// TestServePlaintextOnlyWithInsecure: the function serves plaintext when
// told to with --insecure, and refuses to start, naming the flags, when it
// has neither certificates nor --insecure.
func TestServePlaintextOnlyWithInsecure(t *testing.T) {
	certs := t.TempDir()
	ca := newCA(t, "crossplane-root-ca")
	writeServerCerts(t, certs, ca, ca.issue(t, &x509.Certificate{
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}))
	missing := filepath.Join(t.TempDir(), "missing")
	req, want := exampleRequest(t)

	type args struct {
		flags []string
		env   *string // TLS_SERVER_CERTS_DIR, unset when nil
	}
	cases := map[string]struct {
		reason string
		args   args
		// wantErr is Run's error; empty when the function serves, in
		// plaintext.
		wantErr string
	}{
		"NoCertificatesNoInsecure": {
			reason:  "Without certificates or --insecure the function refuses to start, naming the flag and the variable, instead of an error in the SDK's terms.",
			wantErr: errNoCredentials,
		},
		"EmptyEnvironmentVariable": {
			reason:  "An empty TLS_SERVER_CERTS_DIR is no certificates.",
			args:    args{env: ptr.To("")},
			wantErr: errNoCredentials,
		},
		"EmptyFlag": {
			reason:  "An empty --tls-certs-dir is no certificates.",
			args:    args{flags: []string{"--tls-certs-dir="}},
			wantErr: errNoCredentials,
		},
		"MissingCertificates": {
			reason:  "A certificates directory without certificates stops the function: it never falls back to plaintext.",
			args:    args{flags: []string{"--tls-certs-dir=" + missing}},
			wantErr: "cannot apply ServeOption: cannot load X509 keypair: open " + filepath.Join(missing, "tls.crt") + ": no such file or directory",
		},
		"Insecure": {
			reason: "--insecure serves plaintext.",
			args:   args{flags: []string{"--insecure"}},
		},
		"InsecureOverCertificates": {
			reason: "--insecure serves plaintext even with certificates, as its help says.",
			args:   args{flags: []string{"--insecure"}, env: &certs},
		},
		"InsecureIgnoresCertificatesDirectory": {
			reason: "--insecure ignores --tls-certs-dir, as its help says: a directory it cannot read does not stop it.",
			args:   args{flags: []string{"--insecure", "--tls-certs-dir=" + missing}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.args.env != nil {
				t.Setenv(envCertsDir, *tc.args.env)
			} else {
				// t.Setenv restores the variable after the test.
				t.Setenv(envCertsDir, "")
				os.Unsetenv(envCertsDir)
			}
			addr, err := startCLI(t, append(tc.args.flags, "--now="+cliNow)...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Fatalf("%s\nRun(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if tc.wantErr != "" {
				return
			}
			rsp, err := dial(t, addr, insecure.NewCredentials()).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...) in plaintext: %v", tc.reason, err)
			}
			if diff := cmp.Diff(want, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want (in process), +got (plaintext):\n%s", tc.reason, diff)
			}
		})
	}
}

// onceClock panics the first time it is read, then tells the time.
type onceClock struct {
	read atomic.Bool
	now  time.Time
}

func (c *onceClock) Now() time.Time {
	if !c.read.Swap(true) {
		panic("the clock broke")
	}
	return c.now
}

// TestServeRecoversPanics: a run that panics gets a Fatal result through
// the real server, and the server answers the next run.
func TestServeRecoversPanics(t *testing.T) {
	now, err := time.Parse(time.RFC3339, cliNow)
	if err != nil {
		t.Fatal(err)
	}
	fn := &Function{log: logging.NewNopLogger(), clock: &onceClock{now: now}}
	addr, err := startServing(t, func(addr string) error {
		return parseCLI(t, "--insecure", "--address="+addr, "--metrics-address=").serve(fn, logging.NewNopLogger())
	})
	if err != nil {
		t.Fatalf("the function did not start: %v", err)
	}
	client := dial(t, addr, insecure.NewCredentials())
	req, want := exampleRequest(t)

	first, err := client.RunFunction(t.Context(), req)
	if err != nil {
		t.Fatalf("a run that panicked must be a Fatal result, not a gRPC error: %v", err)
	}
	fatals := []string{}
	for _, r := range first.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			fatals = append(fatals, r.GetMessage())
		}
	}
	wantFatals := []string{"internal error: the function panicked (a bug, please report it): the clock broke"}
	if diff := cmp.Diff(wantFatals, fatals); diff != "" {
		t.Errorf("a run that panicked: -want Fatal results, +got:\n%s", diff)
	}
	if strings.Contains(first.String(), "goroutine") {
		t.Errorf("the response carries a stack trace:\n%s", first)
	}

	second, err := client.RunFunction(t.Context(), req)
	if err != nil {
		t.Fatalf("the server must keep serving after a panic: %v", err)
	}
	if diff := cmp.Diff(want, second, protocmp.Transform()); diff != "" {
		t.Errorf("the run after a panic: -want (in process), +got (served):\n%s", diff)
	}
}

// TestServeMetrics scrapes --metrics-address after runs of each result: the
// function's own metrics sit beside the gRPC server's.
func TestServeMetrics(t *testing.T) {
	now, err := time.Parse(time.RFC3339, cliNow)
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := freeLoopbackAddress(t)
	fn := &Function{log: logging.NewNopLogger(), clock: &onceClock{now: now}}
	addr, err := startServing(t, func(addr string) error {
		return parseCLI(t, "--insecure", "--address="+addr, "--metrics-address="+metricsAddr).serve(fn, logging.NewNopLogger())
	})
	if err != nil {
		t.Fatalf("the function did not start: %v", err)
	}
	client := dial(t, addr, insecure.NewCredentials())
	req, _ := exampleRequest(t)
	bad := proto.Clone(req).(*fnv1.RunFunctionRequest) //nolint:forcetypeassert // A clone of a request.
	bad.GetObserved().GetComposite().GetResource().GetFields()["spec"].GetStructValue().GetFields()["port"] = structpb.NewNumberValue(70000)
	for _, r := range []*fnv1.RunFunctionRequest{req, req, bad} { // A panic (the clock's first read), a composition, a Fatal.
		if _, err := client.RunFunction(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}

	rsp, err := http.Get("http://" + metricsAddr + "/metrics") //nolint:noctx // A test's scrape.
	if err != nil {
		t.Fatalf("cannot scrape the metrics: %v", err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for line := range strings.SplitSeq(string(body), "\n") {
		got[line] = true
	}
	for _, want := range []string{
		`function_canary_route_runs_total{result="composed"} 1`,
		`function_canary_route_runs_total{result="fatal"} 1`,
		`function_canary_route_runs_total{result="panic"} 1`,
		`function_canary_route_runs_total{result="abort_rescued"} 0`,
		`function_canary_route_run_duration_seconds_count 3`,
		`function_canary_route_rollout_transitions_total{reason="RolloutSucceeded"} 0`,
	} {
		if !got[want] {
			t.Errorf("the scrape has no line %q", want)
		}
	}
	if !strings.Contains(string(body), "grpc_server_handled_total") {
		t.Error("the gRPC server's metrics are not served beside the function's")
	}
}
