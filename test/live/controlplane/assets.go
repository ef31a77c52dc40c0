package controlplane

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PackageVersion is the version the harness releases the function as.
const PackageVersion = "v0.0.0-live"

const (
	errFmtRelease    = "hack/release.sh failed: %v\n%s"
	errFmtNoPackage  = "hack/release.sh wrote no %s"
	errGatewayModule = "cannot find the gateway-api module (go list -m sigs.k8s.io/gateway-api)"
)

// ReleasePackage builds the function's package the way a release does,
// with hack/release.sh for linux/amd64 into dir, and returns the .xpkg.
func ReleasePackage(ctx context.Context, root, dir string) (string, error) {
	script := filepath.Join(root, "hack", "release.sh")
	if _, err := os.Stat(script); err != nil {
		return "", errors.Wrap(err, "the live tests install the function from the package that hack/release.sh builds")
	}
	cmd := exec.CommandContext(ctx, "bash", script, PackageVersion) //nolint:gosec // The repository's own release script.
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OUTPUT="+dir, "ARCHS=amd64")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", errors.Errorf(errFmtRelease, err, out)
	}
	want := "function-canary-route-" + PackageVersion + "-linux-amd64.xpkg"
	found, err := filepath.Glob(filepath.Join(dir, "*", want))
	if err == nil {
		top, _ := filepath.Glob(filepath.Join(dir, want))
		found = append(top, found...)
	}
	if len(found) == 0 {
		return "", errors.Errorf(errFmtNoPackage, want)
	}
	return found[0], nil
}

// GatewayAPICRDs returns the folder of the Gateway API CRDs of a channel
// (standard or experimental) in the gateway-api module this module
// requires.
func GatewayAPICRDs(ctx context.Context, root, channel string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Wrap(err, errGatewayModule)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", channel), nil
}
