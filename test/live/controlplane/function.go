package controlplane

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The kinds of Crossplane's package manager.
var (
	FunctionGVK         = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "Function"}
	FunctionRevisionGVK = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "FunctionRevision"}
)

const (
	// PackageRepository is where the harness pushes the function's package
	// in its registry.
	PackageRepository = "crossplane-contrib/function-canary-route"
	// PackageTag is the tag it pushes.
	PackageTag = "v0.0.0-live"
	// OtherRepository is where it pushes the packages of the other
	// Functions (Environment.Functions), under their names.
	OtherRepository = "live/"

	labelParentPackage  = "pkg.crossplane.io/package"
	conditionRuntime    = "RuntimeHealthy"
	reasonHealthy       = "HealthyPackageRevision"
	reasonUnhealthy     = "UnhealthyPackageRevision"
	runtimeSyncInterval = 500 * time.Millisecond

	errLoadPackage      = "cannot load the function's package"
	errPushPackage      = "cannot push the function's package to the registry"
	errExtractBinary    = "cannot extract the function's binary from its package"
	errFmtNoEntrypoint  = "the package's runtime image has no entrypoint %v"
	errFmtNoBinary      = "the package's runtime image has no file %s"
	errReadManifest     = "cannot read the Function manifest"
	errFmtFunctionReady = "the function is not listening on %s: %v (log: %s)"
)

// A Function is another function that the harness installs beside the
// function under test, from its own package and in the same way: pushed to
// the registry, named by a Function of its Name, its binary taken out of the
// package's runtime image and served with mTLS (PackageOf builds such a
// package from a binary and a package folder).
type Function struct {
	// Name is the Function's name, which Compositions' functionRef names.
	Name string
	// Package is its .xpkg, with a runtime image embedded.
	Package string
	// Args are its flags, beside --address and --tls-certs-dir.
	Args []string
}

// installFunction does what installing the function's package takes, with
// Crossplane's External package runtime: it pushes the .xpkg to a registry
// on loopback, applies the Function manifest naming it, and runs the
// function's binary from the package's own runtime image, with a serving
// certificate signed by Crossplane's CA, as an external runtime would.
func (e *Environment) installFunction(ctx context.Context) error {
	if err := e.startRegistry(); err != nil {
		return err
	}
	e.PackageRef = e.Registry + "/" + PackageRepository + ":" + PackageTag
	fn, err := e.functionManifest()
	if err != nil {
		return err
	}
	rt, err := e.installPackage(ctx, installation{
		manifest: fn, pkg: e.Package, ref: e.PackageRef, dir: filepath.Join(e.Dir, "function"), process: "function", runtimeLog: "runtime",
		// Its metrics server is off: nothing scrapes it, and it would bind
		// every interface.
		args: append([]string{"--metrics-address="}, e.FunctionArgs...),
	})
	e.function = rt
	return err
}

// installFunctions installs the other Functions, one after the other.
func (e *Environment) installFunctions(ctx context.Context) error {
	if err := e.startRegistry(); err != nil {
		return err
	}
	for _, f := range e.Functions {
		fn := &unstructured.Unstructured{}
		fn.SetGroupVersionKind(FunctionGVK)
		fn.SetName(f.Name)
		ref := e.Registry + "/" + OtherRepository + f.Name + ":" + PackageTag
		if err := unstructured.SetNestedField(fn.Object, ref, "spec", "package"); err != nil {
			return errors.Wrap(err, errReadManifest)
		}
		rt, err := e.installPackage(ctx, installation{
			manifest: fn, pkg: f.Package, ref: ref, dir: filepath.Join(e.Dir, "functions", f.Name), process: f.Name, runtimeLog: "runtime-" + f.Name,
			args: f.Args,
		})
		if rt != nil {
			e.functions = append(e.functions, rt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startRegistry starts the registry, once. It speaks plain HTTP:
// go-containerregistry, and so Crossplane's package manager, use HTTP for
// registries on loopback.
func (e *Environment) startRegistry() error {
	if e.registry != nil {
		return nil
	}
	regLog, err := os.Create(filepath.Join(e.logs, "registry.log"))
	if err != nil {
		return errors.Wrapf(err, errFmtCreateLog, "registry")
	}
	e.closers = append(e.closers, regLog.Close)
	e.registry = httptest.NewServer(registry.New(registry.Logger(log.New(regLog, "", log.LstdFlags))))
	e.Registry = strings.TrimPrefix(e.registry.URL, "http://")
	return nil
}

// An installation is one function package to install.
type installation struct {
	// manifest is the Function, naming ref.
	manifest *unstructured.Unstructured
	// pkg is the .xpkg, pushed to ref in the registry.
	pkg, ref string
	// dir holds the binary and its certificates; process names its log,
	// runtimeLog the log of its runtime's updates.
	dir, process, runtimeLog string
	args                     []string
}

// installPackage pushes a package, runs the binary of its runtime image as
// an external runtime would, applies its Function and waits until it is
// Installed and Healthy. The runtime it returns, once started, is stopped
// by Stop whatever the error.
func (e *Environment) installPackage(ctx context.Context, in installation) (*functionRuntime, error) {
	img, err := tarball.ImageFromPath(in.pkg, nil)
	if err != nil {
		return nil, errors.Wrap(err, errLoadPackage)
	}
	ref, err := name.ParseReference(in.ref, name.StrictValidation)
	if err != nil {
		return nil, errors.Wrap(err, errPushPackage)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return nil, errors.Wrap(err, errPushPackage)
	}

	if err := ensureDir(filepath.Join(in.dir, "tls")); err != nil {
		return nil, err
	}
	bin := filepath.Join(in.dir, "function")
	if err := extractEntrypoint(img, bin); err != nil {
		return nil, errors.Wrap(err, errExtractBinary)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	rt := &functionRuntime{
		name:       in.manifest.GetName(),
		process:    in.process,
		runtimeLog: in.runtimeLog,
		binary:     bin,
		certDir:    filepath.Join(in.dir, "tls"),
		address:    hostPort(port),
		args:       in.args,
		logs:       e.logs,
		client:     e.client,
	}
	if err := rt.writeCertificates(e.crossplaneCA); err != nil {
		return nil, err
	}
	if err := rt.Start(ctx); err != nil {
		return rt, err
	}

	rctx, cancel := context.WithCancel(context.Background())
	e.closers = append(e.closers, func() error { cancel(); return nil })
	go rt.sync(rctx)

	if _, err := e.client.Apply(ctx, in.manifest); err != nil {
		return rt, err
	}
	fn := in.manifest.GetName()
	return rt, Await(ctx, startTimeout, time.Second, "Function "+fn+" Installed and Healthy", func(ctx context.Context) (bool, string) {
		u, err := e.client.Get(ctx, FunctionGVK, "", fn)
		if err != nil {
			return false, err.Error()
		}
		return IsTrue(u, "Installed") && IsTrue(u, "Healthy"), DescribeConditions(u)
	})
}

// functionManifest is the Function the README installs
// (example/install/function.yaml), naming the package in the harness's
// registry.
func (e *Environment) functionManifest() (*unstructured.Unstructured, error) {
	manifest := e.FunctionManifest
	if manifest == "" {
		manifest = filepath.Join(e.Root, "example", "install", "function.yaml")
	}
	objs, err := ReadObjects(manifest)
	if err != nil {
		return nil, errors.Wrap(err, errReadManifest)
	}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == FunctionGVK.GroupKind() {
			if err := unstructured.SetNestedField(o.Object, e.PackageRef, "spec", "package"); err != nil {
				return nil, errors.Wrap(err, errReadManifest)
			}
			return o, nil
		}
	}
	return nil, errors.Errorf("%s: no Function", manifest)
}

// extractEntrypoint writes the file that the image's entrypoint names.
func extractEntrypoint(img v1.Image, dst string) error {
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cfg.Config.Entrypoint) == 0 {
		return errors.Errorf(errFmtNoEntrypoint, cfg.Config.Entrypoint)
	}
	want := path.Clean("/" + cfg.Config.Entrypoint[0])
	fs := mutate.Extract(img)
	defer fs.Close() //nolint:errcheck // Read-only.
	tr := tar.NewReader(fs)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return errors.Errorf(errFmtNoBinary, want)
		}
		if err != nil {
			return err
		}
		if path.Clean("/"+h.Name) != want || h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o700) //nolint:gosec // The harness's own file.
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, io.LimitReader(tr, 1<<30)); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
}

// functionRuntime runs the function's binary and tells Crossplane where it
// is, which with the External package runtime is the runtime's job: it
// writes the active FunctionRevision's status.endpoint, where Crossplane's
// function runner dials, and its RuntimeHealthy condition, which makes the
// Function Healthy.
type functionRuntime struct {
	name string
	// process names its log, runtimeLog the log of the runtime's updates.
	process    string
	runtimeLog string
	binary     string
	certDir    string
	address    string
	args       []string
	logs       string
	client     *Client

	// tls is the function's serving certificate, its key and Crossplane's
	// CA, as files and as the revision's TLS server Secret.
	tls map[string][]byte

	mu   sync.Mutex
	proc *process
}

// writeCertificates writes the function's serving certificate, signed by
// Crossplane's CA, and that CA, which verifies Crossplane's client
// certificate: the files a Deployment runtime mounts from the Secret it
// generates.
func (r *functionRuntime) writeCertificates(ca *CA) error {
	host, _, _ := net.SplitHostPort(r.address)
	kp, err := ca.Sign(CertOptions{
		CommonName: r.name,
		DNSNames:   []string{"localhost"},
		IPs:        []net.IP{net.ParseIP(host)},
		Server:     true,
	})
	if err != nil {
		return err
	}
	r.tls = map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM, "ca.crt": ca.CertPEM}
	for file, b := range r.tls {
		if err := writeFile(filepath.Join(r.certDir, file), b); err != nil {
			return err
		}
	}
	return nil
}

// Start starts the function and waits until it listens.
func (r *functionRuntime) Start(ctx context.Context) error {
	args := append([]string{"--address=" + r.address, "--tls-certs-dir=" + r.certDir}, r.args...)
	p, err := startProcess(r.process, r.logs, nil, r.binary, args...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	return p.waitReady(ctx, func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", r.address)
		if err != nil {
			return errors.Errorf(errFmtFunctionReady, r.address, err, p.log)
		}
		return c.Close()
	})
}

// Kill stops the function at once, like a crash.
func (r *functionRuntime) Kill() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	p.kill()
}

func (r *functionRuntime) stop() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	p.stop()
}

func (r *functionRuntime) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc != nil && r.proc.exited() == nil
}

// sync keeps the active revision's endpoint and runtime health up to date
// until ctx ends.
func (r *functionRuntime) sync(ctx context.Context) {
	f, err := os.OpenFile(filepath.Join(r.logs, r.runtimeLog+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		f = nil
	}
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	var last string
	for {
		// An error is retried on the next tick: the package manager
		// updates revisions too. The log says what went wrong, once.
		err := r.syncOnce(ctx)
		if msg := fmt.Sprint(err); err != nil && msg != last && f != nil {
			_, _ = fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339), msg)
		}
		last = fmt.Sprint(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(runtimeSyncInterval):
		}
	}
}

func (r *functionRuntime) syncOnce(ctx context.Context) error {
	res, err := r.client.Resource(ctx, FunctionRevisionGVK, "")
	if err != nil {
		return err
	}
	l, err := res.List(ctx, metav1.ListOptions{LabelSelector: labelParentPackage + "=" + r.name})
	if err != nil {
		return err
	}
	endpoint := "dns:///" + r.address
	healthy := r.running()
	for i := range l.Items {
		rev := &l.Items[i]
		if s, _, _ := unstructured.NestedString(rev.Object, "spec", "desiredState"); s != "Active" {
			continue
		}
		changed := setRuntimeHealth(rev, healthy)
		if got, _, _ := unstructured.NestedString(rev.Object, "status", "endpoint"); got != endpoint {
			_ = unstructured.SetNestedField(rev.Object, endpoint, "status", "endpoint")
			changed = true
		}
		// The package manager installs the package's objects (the Input
		// CRD) only once the runtime has published the revision's TLS
		// server Secret, where their conversion webhooks' CA bundle would
		// come from, and named it in status.tlsServerSecretName (the
		// "observed" name in Crossplane's code).
		// With the External runtime nobody names it in spec either: the
		// name is Crossplane's own convention, <function>-tls-server.
		secret, _, _ := unstructured.NestedString(rev.Object, "spec", "tlsServerSecretName")
		if secret == "" {
			secret = r.name + "-tls-server"
		}
		if err := r.ensureSecret(ctx, secret); err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(rev.Object, "status", "tlsServerSecretName"); got != secret {
			_ = unstructured.SetNestedField(rev.Object, secret, "status", "tlsServerSecretName")
			changed = true
		}
		if !changed {
			continue
		}
		if _, err := res.UpdateStatus(ctx, rev, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
	}
	return nil
}

// setRuntimeHealth sets the RuntimeHealthy condition, and reports whether
// it changed.
func setRuntimeHealth(rev *unstructured.Unstructured, healthy bool) bool {
	status, reason, msg := "True", reasonHealthy, "the function is serving"
	if !healthy {
		status, reason, msg = "False", reasonUnhealthy, "the function's process is not running"
	}
	conds, _, _ := unstructured.NestedSlice(rev.Object, "status", "conditions")
	for i, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != conditionRuntime {
			continue
		}
		if m["status"] == status && m["reason"] == reason {
			return false
		}
		conds[i] = runtimeCondition(status, reason, msg)
		_ = unstructured.SetNestedSlice(rev.Object, conds, "status", "conditions")
		return true
	}
	conds = append(conds, runtimeCondition(status, reason, msg))
	_ = unstructured.SetNestedSlice(rev.Object, conds, "status", "conditions")
	return true
}

func runtimeCondition(status, reason, msg string) map[string]any {
	return map[string]any{
		"type":               conditionRuntime,
		"status":             status,
		"reason":             reason,
		"message":            msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}
}

// DescribeConditions lists an object's conditions, for messages.
func DescribeConditions(u *unstructured.Unstructured) string {
	conds := Conditions(u)
	types := make([]string, 0, len(conds))
	for t := range conds {
		types = append(types, t)
	}
	sort.Strings(types)
	parts := make([]string, 0, len(types))
	for _, t := range types {
		c := conds[t]
		s := c.Type + "=" + c.Status
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			s += ": " + c.Message
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no conditions"
	}
	return strings.Join(parts, "; ")
}

// ensureSecret creates the revision's TLS server Secret with the function's
// certificate, unless it exists.
func (r *functionRuntime) ensureSecret(ctx context.Context, secret string) error {
	_, err := r.client.Kube.CoreV1().Secrets(CrossplaneNamespace).Get(ctx, secret, metav1.GetOptions{})
	if !kerrors.IsNotFound(err) {
		return err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: CrossplaneNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       r.tls,
	}
	_, err = r.client.Kube.CoreV1().Secrets(CrossplaneNamespace).Create(ctx, sec, metav1.CreateOptions{})
	if kerrors.IsAlreadyExists(err) {
		return nil
	}
	return errors.Wrapf(err, "cannot create the function's TLS server Secret %s", secret)
}
