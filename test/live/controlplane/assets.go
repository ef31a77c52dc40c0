package controlplane

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PackageVersion is the version the harness releases the function as.
const PackageVersion = "v0.0.0-live"

// GoTemplatingModulePath is the module of function-go-templating, which
// hack/tools/go-templating pins.
const GoTemplatingModulePath = "github.com/crossplane-contrib/function-go-templating"

const (
	errFmtXpkgBuild  = "crossplane xpkg build failed: %v\n%s"
	errFmtModule     = "cannot find the module %s (go list -m in hack/tools/%s)"
	errRuntimeImage  = "cannot write the function's runtime image"
	errFmtRelease    = "hack/release.sh failed: %v\n%s"
	errFmtNoPackage  = "hack/release.sh wrote no %s"
	errGatewayModule = "cannot find the gateway-api module (go list -m sigs.k8s.io/gateway-api)"
)

// ReleasePackage builds the function's package the way a release does,
// with hack/release.sh for linux/amd64 into dir, and returns the .xpkg. It
// builds no plugin (PLUGIN_PLATFORMS=none): the tests build theirs.
func ReleasePackage(ctx context.Context, root, dir string) (string, error) {
	script := filepath.Join(root, "hack", "release.sh")
	if _, err := os.Stat(script); err != nil {
		return "", errors.Wrap(err, "the live tests install the function from the package that hack/release.sh builds")
	}
	cmd := exec.CommandContext(ctx, "bash", script, PackageVersion) //nolint:gosec // The repository's own release script.
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OUTPUT="+dir, "ARCHS=amd64", "PLUGIN_PLATFORMS=none")
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

// GoTemplatingPackage builds the package of function-go-templating, the
// second function of the release example, into dir: its binary (built once
// by hack/tool.sh go-templating from the pinned module) in a runtime image,
// and the package metadata that its module ships (package/crossplane.yaml
// and the Input CRD), packed by crossplane xpkg build as a release would.
// It returns the .xpkg.
func GoTemplatingPackage(ctx context.Context, root, dir string) (string, error) {
	bin, err := Tool(ctx, root, "go-templating")
	if err != nil {
		return "", err
	}
	crossplane := os.Getenv("CROSSPLANE")
	if crossplane == "" {
		if crossplane, err = Tool(ctx, root, "crossplane"); err != nil {
			return "", err
		}
	}
	mod, err := ModuleDir(ctx, root, "go-templating", GoTemplatingModulePath)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "function-go-templating-"+PackageVersion+".xpkg")
	return out, PackageOf(ctx, crossplane, bin, filepath.Join(mod, "package"), out)
}

// ModuleDir returns the folder of a module that a tools module of
// hack/tools pins, in the module cache.
func ModuleDir(ctx context.Context, root, tools, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module) //nolint:gosec // A module of the harness's own.
	cmd.Dir = filepath.Join(root, "hack", "tools", tools)
	b, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return "", errors.Wrapf(err, errFmtModule, module, tools)
	}
	return strings.TrimSpace(string(b)), nil
}

// PackageOf builds a function's .xpkg at out with the crossplane CLI: the
// package folder (crossplane.yaml and CRDs) on a runtime image that holds
// the binary at /function, its entrypoint, for this machine's
// architecture.
func PackageOf(ctx context.Context, crossplane, binary, packageRoot, out string) error {
	work, err := os.MkdirTemp(filepath.Dir(out), ".xpkg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work) //nolint:errcheck // A temporary folder.
	image := filepath.Join(work, "image.tar")
	if err := runtimeImage(binary, image); err != nil {
		return errors.Wrap(err, errRuntimeImage)
	}
	// Run in the empty work folder: xpkg build would add ./examples.
	cmd := exec.CommandContext(ctx, crossplane, "xpkg", "build", //nolint:gosec // The pinned crossplane CLI.
		"--package-root="+packageRoot, "--embed-runtime-image-tarball="+image, "--package-file="+out)
	cmd.Dir = work
	if b, err := cmd.CombinedOutput(); err != nil {
		return errors.Errorf(errFmtXpkgBuild, err, b)
	}
	return nil
}

// runtimeImage writes an image tarball with one layer, the binary at
// /function, which is its entrypoint (what the harness takes out of a
// package and runs).
func runtimeImage(binary, out string) error {
	b, err := os.ReadFile(binary) //nolint:gosec // A tool the harness built.
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "function", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(b); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = []string{"/function"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tag, err := name.NewTag("live/function:" + PackageVersion)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}
