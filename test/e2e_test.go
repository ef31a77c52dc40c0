// Package e2e runs the function the way platform teams do: the real
// crossplane CLI renders every example against the function, served over
// gRPC (and, for the release example, function-go-templating beside it),
// and `crossplane beta validate` checks the output against the Gateway API
// CRDs and the example XRDs.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// now is the instant at which the function evaluates rollouts, so that the
// golden files do not depend on the clock. hack/render.sh uses the same.
const now = "2026-12-02T10:07:00Z"

var update = flag.Bool("update", false, "rewrite the golden files (review the diff before committing)")

// The Functions that examples name, and the annotation by which crossplane
// render reaches a function that is already running.
const (
	functionCanaryRoute  = "function-canary-route"
	functionGoTemplating = "function-go-templating"
	annotationTarget     = "render.crossplane.io/runtime-development-target"
)

// env is what TestMain sets up once for every test.
var env struct {
	root       string
	crossplane string
	egctl      string
	// targets are the addresses of the running functions, by the name of
	// the Function that examples' functions.yaml give them.
	targets    map[string]string
	gatewayAPI string
	cacheDir   string
}

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return 0, err
	}
	env.root = root

	tmp, err := os.MkdirTemp("", "canary-route-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	// The crossplane CLI: built once from the pinned tools module and
	// cached (see hack/tool.sh crossplane), or taken from $CROSSPLANE.
	env.crossplane = os.Getenv("CROSSPLANE")
	if env.crossplane == "" {
		out, err := command(root, "bash", "hack/tool.sh", "crossplane").Output()
		if err != nil {
			return 0, fmt.Errorf("cannot build the crossplane CLI: %w", err)
		}
		env.crossplane = strings.TrimSpace(string(out))
	}

	// Envoy Gateway's egctl, for the translator test: built once (see
	// hack/tool.sh egctl) before the tests start, so that its long first build
	// does not count against go test's -timeout, or taken from $EGCTL.
	env.egctl = os.Getenv("EGCTL")
	if env.egctl == "" {
		out, err := command(root, "bash", "hack/tool.sh", "egctl").Output()
		if err != nil {
			return 0, fmt.Errorf("cannot build egctl: %w", err)
		}
		env.egctl = strings.TrimSpace(string(out))
	}

	out, err := command(root, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return 0, fmt.Errorf("cannot find the gateway-api module: %w", err)
	}
	env.gatewayAPI, err = gatewayCRDs(strings.TrimSpace(string(out)), filepath.Join(tmp, "gateway-api"))
	if err != nil {
		return 0, err
	}

	// beta validate wants the Crossplane image's own schemas, which it
	// downloads. Offline, an empty folder for a placeholder image stands in
	// for them: the XRDs and CRDs we pass are all it needs.
	env.cacheDir = filepath.Join(tmp, "validate-cache")
	if err := os.MkdirAll(filepath.Join(env.cacheDir, "placeholder", "crossplane@v0"), 0o755); err != nil {
		return 0, err
	}

	fn := filepath.Join(tmp, "function")
	if out, err := command(root, "go", "build", "-o", fn, ".").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cannot build the function: %w: %s", err, out)
	}
	// function-go-templating, the release example's second function: built
	// once from the pinned tools module (hack/tool.sh go-templating), or
	// taken from $GO_TEMPLATING.
	goTemplating := os.Getenv("GO_TEMPLATING")
	if goTemplating == "" {
		out, err := command(root, "bash", "hack/tool.sh", "go-templating").Output()
		if err != nil {
			return 0, fmt.Errorf("cannot build function-go-templating: %w", err)
		}
		goTemplating = strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	env.targets = map[string]string{}
	for _, f := range []struct {
		name string
		cmd  []string
	}{
		{functionCanaryRoute, []string{fn, "--metrics-address=", "--now=" + now}},
		{functionGoTemplating, []string{goTemplating}},
	} {
		addr, err := freeAddress()
		if err != nil {
			return 0, err
		}
		srv := exec.CommandContext(ctx, f.cmd[0], append(f.cmd[1:], "--insecure", "--address="+addr)...)
		w := prefixed(&logs, f.name+": ")
		srv.Stdout, srv.Stderr = w, w
		if err := srv.Start(); err != nil {
			return 0, err
		}
		if err := waitForListener(addr); err != nil {
			return 0, fmt.Errorf("%s: %w: %s", f.name, err, readLogs(&logs))
		}
		env.targets[f.name] = addr
	}

	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "functions' logs:\n%s\n", readLogs(&logs))
	}
	return code, nil
}

// TestRenderExamples renders every example with the real CLI and compares
// the output with its reviewed golden file. An example with a second
// pipeline step shows the pipeline context too, which is what passes
// between the steps (the release record).
func TestRenderExamples(t *testing.T) {
	for _, dir := range examples(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{"--include-function-results"}
			if len(functions(t, dir)) > 1 {
				args = append(args, "--include-context")
			}
			got := render(t, dir, args...)
			golden := filepath.Join(dir, "rendered.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("cannot read the golden file (run go test ./test -update, then review it): %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("crossplane render %s: -want (%s), +got:\n%s", dir, golden, diff)
			}

			// The same request must give byte-identical desired state.
			if again := render(t, dir, args...); !bytes.Equal(got, again) {
				t.Errorf("crossplane render %s is not deterministic:\n%s", dir, cmp.Diff(string(got), string(again)))
			}
		})
	}
}

// TestValidateExamples pipes each example's full output (the XR with its
// spec and status, and every composed resource) through `crossplane beta
// validate` with the Gateway API CRDs and the example XRDs.
func TestValidateExamples(t *testing.T) {
	for _, dir := range examples(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "rendered.yaml")
			if err := os.WriteFile(out, render(t, dir, "--include-full-xr"), 0o600); err != nil {
				t.Fatal(err)
			}
			// v1alpha2 routes, and the rules' retry and
			// sessionPersistence, are of the experimental channel only.
			channel := "standard"
			b, _ := os.ReadFile(filepath.Join(dir, "rendered.yaml"))
			for _, experimental := range []string{"gateway.networking.k8s.io/v1alpha2", "\n    retry:\n", "\n    sessionPersistence:\n"} {
				if bytes.Contains(b, []byte(experimental)) {
					channel = "experimental"
				}
			}
			extensions := filepath.Join(env.gatewayAPI, channel) + "," + filepath.Join(env.root, "example", "definitions")
			cmd := command(env.root, env.crossplane, "beta", "validate",
				"--cache-dir", env.cacheDir, "--crossplane-image", "placeholder/crossplane:v0",
				extensions, out)
			result, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(result, []byte(" 0 failure cases")) {
				t.Fatalf("crossplane beta validate %s: %v\n%s", dir, err, result)
			}
			// Only built-in kinds may lack a schema: crossplane beta
			// validate knows CRDs, not the API server's own types. The
			// proxy Services, the analysis Jobs and the release's
			// Deployments reach a real API server in test/live, which
			// validates them.
			for _, line := range strings.Split(string(result), "\n") {
				if strings.Contains(line, "could not find CRD/XRD") && !strings.Contains(line, "/v1, Kind=Service") &&
					!strings.Contains(line, "batch/v1, Kind=Job") && !strings.Contains(line, "apps/v1, Kind=Deployment") {
					t.Errorf("no schema checked %s", line)
				}
			}
		})
	}
}

// TestReleaseTemplateWithoutRecord renders the release example's pipeline
// for a CanaryRoute without spec.release: function-canary-route writes no
// release record, and the template of the second step fails loudly, a
// Fatal of that step (Crossplane then applies nothing, so the Deployments
// keep their replicas), instead of composing Deployments with no replicas.
func TestReleaseTemplateWithoutRecord(t *testing.T) {
	dir := filepath.Join(env.root, "example", "release")
	xr := filepath.Join(t.TempDir(), "xr.yaml")
	if err := os.WriteFile(xr, []byte(`apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata: {name: podinfo, namespace: test}
spec:
  crossplane: {compositionRef: {name: canaryroute-release}}
  parentRefs: [{name: gateway, namespace: istio-ingress}]
  port: 9898
  primary: {service: {selector: {app: podinfo, version: v1}}}
  canary: {service: {selector: {app: podinfo, version: v2}}}
  traffic: {weight: 10}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"render", xr, filepath.Join(dir, "composition.yaml"), functionsFile(t, dir), "--xrd", xrdFor(t, dir)}
	out, err := command(env.root, env.crossplane, args...).CombinedOutput()
	want := `pipeline step "deployments" returned a fatal result: cannot execute template`
	if err == nil || !bytes.Contains(out, []byte(want)) || !bytes.Contains(out, []byte("no release record under canaryroute.fn.crossplane.io/release")) {
		t.Errorf("crossplane %s: want an error with %q and the template's own message, got %v:\n%s", strings.Join(args, " "), want, err, out)
	}
}

// examples lists the example folders: each holds an xr.yaml.
func examples(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(env.root, "example", "*", "xr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no examples found")
	}
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

// render runs crossplane render on an example folder, with its observed and
// required resources and its schemas when it has them.
func render(t *testing.T, dir string, extra ...string) []byte {
	t.Helper()
	args := []string{
		"render",
		filepath.Join(dir, "xr.yaml"), filepath.Join(dir, "composition.yaml"), functionsFile(t, dir),
		"--xrd", xrdFor(t, dir),
	}
	// The CRD schemas a cluster would hand over, as required schemas.
	if _, err := os.Stat(filepath.Join(dir, "schemas")); err == nil {
		args = append(args, "--required-schemas", filepath.Join(dir, "schemas"))
	}
	for flagName, file := range map[string]string{"--observed-resources": "observed.yaml", "--required-resources": "required.yaml", "--function-credentials": "credentials.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
			args = append(args, flagName, filepath.Join(dir, file))
		}
	}
	args = append(args, extra...)
	var stderr bytes.Buffer
	cmd := command(env.root, env.crossplane, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crossplane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// functions reads an example's functions.yaml: the Functions its pipeline
// runs.
func functions(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "functions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s/functions.yaml: %v", dir, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// functionsFile writes a copy of an example's functions.yaml in which each
// Function names the address of the running function of its name:
// crossplane render's --function-annotations sets one value on every
// Function alike, so two functions need it written per Function.
func functionsFile(t *testing.T, dir string) string {
	t.Helper()
	fns := functions(t, dir)
	docs := make([]string, 0, len(fns))
	for _, fn := range fns {
		target, ok := env.targets[fn.GetName()]
		if !ok {
			t.Fatalf("%s/functions.yaml: no function %s runs in this test", dir, fn.GetName())
		}
		a := fn.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[annotationTarget] = target
		fn.SetAnnotations(a)
		b, err := yaml.Marshal(fn.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	out := filepath.Join(t.TempDir(), "functions.yaml")
	if err := os.WriteFile(out, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// xrdFor picks the XRD of the example's XR kind, so that render applies its
// defaults as the API server would.
func xrdFor(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "xr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name := "canaryroute-namespaced.yaml"
	if bytes.Contains(b, []byte("\nkind: XCanaryRoute\n")) {
		name = "canaryroute-cluster.yaml"
	}
	return filepath.Join(env.root, "example", "definitions", name)
}

// gatewayCRDs copies the Gateway API CRDs of both channels out of the
// module, leaving out the kustomization files that beta validate cannot
// read, and returns the folder that holds a folder per channel.
func gatewayCRDs(module, dst string) (string, error) {
	for _, channel := range []string{"standard", "experimental"} {
		files, err := filepath.Glob(filepath.Join(module, "config", "crd", channel, "gateway.networking.*.yaml"))
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Join(dst, channel), 0o755); err != nil {
			return "", err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(dst, channel, filepath.Base(f)), b, 0o600); err != nil {
				return "", err
			}
		}
	}
	return dst, nil
}

// prefixed writes each write to w with a prefix, so that two processes'
// logs in one buffer say whose they are.
func prefixed(w *bytes.Buffer, prefix string) *prefixWriter {
	return &prefixWriter{w: w, prefix: prefix}
}

type prefixWriter struct {
	w      *bytes.Buffer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	logsMu.Lock()
	defer logsMu.Unlock()
	p.w.WriteString(p.prefix)
	return p.w.Write(b)
}

// logsMu guards the functions' log buffer, which both processes write.
var logsMu sync.Mutex

func readLogs(b *bytes.Buffer) string {
	logsMu.Lock()
	defer logsMu.Unlock()
	return b.String()
}

func command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	return cmd
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitForListener(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return c.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the function did not listen on %s", addr)
}
