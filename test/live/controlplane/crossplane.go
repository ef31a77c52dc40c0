package controlplane

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Crossplane's namespace and the Secrets that crossplane core init fills.
const (
	CrossplaneNamespace = "crossplane-system"
	secretRootCA        = "crossplane-root-ca"
	secretTLSClient     = "crossplane-tls-client"

	errFmtInit        = "crossplane core init failed: %v (log: %s)"
	errFmtGetSecret   = "cannot read the Secret %s/%s that crossplane core init fills"
	errCreateNS       = "cannot create Crossplane's namespace"
	errFindCRDs       = "cannot find Crossplane's CRDs (go list -m github.com/crossplane/crossplane/v2 in hack/tools/crossplane)"
	crossplaneModPath = "github.com/crossplane/crossplane/v2"
	initAttempts      = 5
)

// crossplaneCRDs finds cluster/crds of the Crossplane module that
// hack/tools/crossplane pins, the CRDs of the binary it builds.
func (e *Environment) crossplaneCRDs(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", crossplaneModPath)
	cmd.Dir = filepath.Join(e.Root, "hack", "tools", "crossplane")
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Wrap(err, errFindCRDs)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "cluster", "crds"), nil
}

// startCrossplane runs crossplane core init, which installs Crossplane's
// CRDs and generates its CA and client certificate into Secrets, then
// crossplane core start out of cluster with the External package runtime:
// the package manager installs packages, but runs nothing; the harness runs
// the function (see function.go).
func (e *Environment) startCrossplane(ctx context.Context) error {
	if _, err := e.client.Kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CrossplaneNamespace}}, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrap(err, errCreateNS)
	}
	crds := e.CrossplaneCRDs
	if crds == "" {
		var err error
		if crds, err = e.crossplaneCRDs(ctx); err != nil {
			return err
		}
	}

	// Kong derives some flag names oddly from Go names (CRDsPath is
	// --cr-ds-path), so the settings go in Crossplane's documented
	// environment variables.
	env := []string{
		"KUBECONFIG=" + e.Kubeconfig,
		"POD_NAMESPACE=" + CrossplaneNamespace,
		"POD_SERVICE_ACCOUNT=crossplane",
		"CRDS_PATH=" + crds,
		// No webhook: Crossplane validates its own types with CEL, and the
		// only webhook left (Usages) needs a Service to be reached through.
		"ENABLE_WEBHOOKS=false",
		"TLS_CA_SECRET_NAME=" + secretRootCA,
		"TLS_CLIENT_SECRET_NAME=" + secretTLSClient,
	}
	if err := runInit(ctx, e.logs, env, e.Crossplane); err != nil {
		return err
	}

	// Crossplane reads its client certificate from files, as mounted from
	// the Secret in a pod.
	client, err := e.secret(ctx, secretTLSClient)
	if err != nil {
		return err
	}
	clientDir := filepath.Join(e.Dir, "crossplane", "tls-client")
	if err := ensureDir(clientDir); err != nil {
		return err
	}
	for _, k := range []string{"ca.crt", corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if err := writeFile(filepath.Join(clientDir, k), client.Data[k]); err != nil {
			return err
		}
	}
	root, err := e.secret(ctx, secretRootCA)
	if err != nil {
		return err
	}
	if e.crossplaneCA, err = CAFromPEM(root.Data[corev1.TLSCertKey], root.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return errors.Wrap(err, "cannot load Crossplane's CA")
	}

	// Crossplane binds these on every interface (its flags take a port,
	// not an address); fresh ports keep two control planes apart.
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	// The package cache must exist: Crossplane does not create it, and
	// unpacking into a missing folder fails with "read/write on closed
	// pipe".
	cache := filepath.Join(e.Dir, "crossplane", "xpkg-cache")
	if err := ensureDir(cache); err != nil {
		return err
	}
	start := append(env[:len(env):len(env)], "TLS_CLIENT_CERTS_DIR="+clientDir) //nolint:gocritic // A copy of env with one more.
	p, err := startProcess("crossplane", e.logs, start, e.Crossplane, withArgs(e.CrossplaneArgs,
		"--debug", "core", "start",
		"--package-runtime=External",
		"--xpkg-cache-dir="+cache,
		"--enable-realtime-compositions",
		"--metrics-port="+strconv.Itoa(ports[0]),
		"--health-probe-port="+strconv.Itoa(ports[1]),
		"--webhook-port="+strconv.Itoa(ports[2]),
	)...)
	if err != nil {
		return err
	}
	// Ready once its readiness probe answers, at Start and after
	// RestartCrossplane.
	hc := &http.Client{Timeout: 2 * time.Second}
	ready := func(ctx context.Context, p *process) error {
		return p.waitReady(ctx, func(ctx context.Context) error {
			return getOK(ctx, hc, "http://"+hostPort(ports[1])+"/readyz")
		})
	}
	e.keep(&e.crossplane, p, ready)
	return ready(ctx, p)
}

func (e *Environment) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	s, err := e.client.Kube.CoreV1().Secrets(CrossplaneNamespace).Get(ctx, name, metav1.GetOptions{})
	return s, errors.Wrapf(err, errFmtGetSecret, CrossplaneNamespace, name)
}

// runInit runs crossplane core init until it succeeds. It does not wait for
// the CRDs it applies to be served before it creates objects of them (the
// Lock), so a first run can fail where a pod's init container would be
// restarted.
func runInit(ctx context.Context, logs string, env []string, bin string) error {
	var err error
	for range initAttempts {
		var p *process
		if p, err = startProcess("crossplane-init", logs, env, bin, "core", "init"); err != nil {
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			p.kill()
			return ctx.Err()
		}
		if p.err == nil {
			return nil
		}
		err = errors.Errorf(errFmtInit, p.err, p.log)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return err
}
