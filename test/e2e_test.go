// Package e2e runs the function the way platform teams do: the real
// crossplane CLI renders every example against the function, served over
// gRPC, and `crossplane beta validate` checks the output against the Gateway
// API CRDs and the example XRDs.
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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// now is the instant at which the function evaluates rollouts, so that the
// golden files do not depend on the clock. hack/render.sh uses the same.
const now = "2026-12-02T10:07:00Z"

var update = flag.Bool("update", false, "rewrite the golden files (review the diff before committing)")

// env is what TestMain sets up once for every test.
var env struct {
	root       string
	crossplane string
	egctl      string
	target     string
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
	addr, err := freeAddress()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, fn, "--insecure", "--address="+addr, "--metrics-address=", "--now="+now)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return 0, err
	}
	if err := waitForListener(addr); err != nil {
		return 0, fmt.Errorf("%w: %s", err, logs.String())
	}
	env.target = addr

	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "function logs:\n%s\n", logs.String())
	}
	return code, nil
}

// TestRenderExamples renders every example with the real CLI and compares
// the output with its reviewed golden file.
func TestRenderExamples(t *testing.T) {
	for _, dir := range examples(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := render(t, dir, "--include-function-results")
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
			if again := render(t, dir, "--include-function-results"); !bytes.Equal(got, again) {
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
			// proxy Services and the analysis Jobs reach a real API
			// server in test/live, which validates them.
			for _, line := range strings.Split(string(result), "\n") {
				if strings.Contains(line, "could not find CRD/XRD") && !strings.Contains(line, "/v1, Kind=Service") && !strings.Contains(line, "batch/v1, Kind=Job") {
					t.Errorf("no schema checked %s", line)
				}
			}
		})
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
		filepath.Join(dir, "xr.yaml"), filepath.Join(dir, "composition.yaml"), filepath.Join(dir, "functions.yaml"),
		"--function-annotations", "render.crossplane.io/runtime-development-target=" + env.target,
		"--xrd", xrdFor(t, dir),
	}
	// The CRD schemas a cluster would hand over, as required schemas.
	if _, err := os.Stat(filepath.Join(dir, "schemas")); err == nil {
		args = append(args, "--required-schemas", filepath.Join(dir, "schemas"))
	}
	for flagName, file := range map[string]string{"--observed-resources": "observed.yaml", "--required-resources": "required.yaml"} {
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
