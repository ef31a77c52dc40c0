// Package release tests hack/release.sh the way CI and the live tests use
// it: it runs the script into temporary folders and opens what it wrote, the
// runtime image (its config, and the binary in its layer, which it runs),
// the Crossplane package (its metadata, the Input CRD and the embedded
// runtime image), and the kubectl plugin's archives (the executable each
// holds, by its headers) and krew manifest (the sha256 of each archive).
package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// version is what the test releases: a pre-release nobody would push.
const version = "v0.0.0-releasetest"

// archs are the script's default architectures.
var archs = []string{"amd64", "arm64"}

// releaseURL is where the test says the plugin's archives are downloaded
// from (RELEASE_URL), and defaultReleaseURL where they are without it: the
// GitHub release of the version.
const (
	releaseURL        = "https://downloads.example.org/canaryroute/" + version
	defaultReleaseURL = "https://github.com/crossplane-contrib/function-canary-route/releases/download/" + version
)

// What the runtime image and the package must say.
const (
	entrypoint = "/function"
	user       = "65532:65532"
	port       = "9443/tcp"
	inputCRD   = "inputs.canaryroute.fn.crossplane.io"
	// xpkgLabelPrefix marks, in a package's config labels, the layer that
	// holds package.yaml (crossplane xpkg build; the push turns it into a
	// layer annotation).
	xpkgLabelPrefix = "io.crossplane.xpkg:"
	xpkgBase        = "base"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// releaseEnv is the test's environment with the script's variables set as
// given and every other one of them unset, so that a developer's own OUTPUT,
// ARCHS or SOURCE_DATE_EPOCH cannot change what the test checks.
func releaseEnv(set map[string]string) []string {
	own := []string{"OUTPUT", "ARCHS", "PLUGIN_PLATFORMS", "RELEASE_URL", "SOURCE_DATE_EPOCH", "CROSSPLANE"}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(own, name)
	})
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// crossplaneCLI builds (once, cached) or finds the crossplane CLI, so that
// the script runs below do not both ask for it.
func crossplaneCLI(t *testing.T, root string) string {
	t.Helper()
	if cli := os.Getenv("CROSSPLANE"); cli != "" {
		return cli
	}
	cmd := exec.Command("bash", "hack/tool.sh", "crossplane")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/tool.sh crossplane: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestReleaseUsage checks that the script refuses what it cannot release
// before it builds anything.
func TestReleaseUsage(t *testing.T) {
	r := root(t)
	cases := map[string]struct {
		reason  string
		args    []string
		archs   string
		plugins string
		want    string
	}{
		"NoVersion":     {reason: "The version is required.", want: "usage:"},
		"TwoVersions":   {reason: "One version at a time.", args: []string{"v0.1.0", "v0.2.0"}, want: "usage:"},
		"NoLeadingV":    {reason: "Crossplane package tags are versions with a leading v.", args: []string{"0.1.0"}, want: "not a semantic version"},
		"BuildMetadata": {reason: "An OCI tag cannot carry '+'.", args: []string{"v0.1.0+abc"}, want: "not a semantic version"},
		"Partial":       {reason: "Major, minor and patch are required.", args: []string{"v0.1"}, want: "not a semantic version"},
		"UnknownArch":   {reason: "Only architectures Go builds for linux.", args: []string{"v0.1.0"}, archs: "amd64 vax", want: "linux/vax"},
		"NoArch":        {reason: "ARCHS set but naming none.", args: []string{"v0.1.0"}, archs: " ", want: "ARCHS names no architecture"},
		"UnknownPluginPlatform": {
			reason: "Only the platforms whose binaries hack/krew checks.", args: []string{"v0.1.0"}, plugins: "linux/amd64 plan9/amd64",
			want: "the plugin is not released for plan9/amd64",
		},
		"NoPluginPlatform": {
			reason: "PLUGIN_PLATFORMS set but naming none: none says so.", args: []string{"v0.1.0"}, plugins: " ",
			want: "PLUGIN_PLATFORMS names no platform",
		},
		"NoneAndAPlatform": {
			reason: "none stands alone.", args: []string{"v0.1.0"}, plugins: "none linux/amd64",
			want: "the plugin is not released for none",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command("bash", append([]string{"hack/release.sh"}, tc.args...)...)
			cmd.Dir = r
			set := map[string]string{"OUTPUT": out, "CROSSPLANE": "/nonexistent/crossplane"}
			if tc.archs != "" {
				set["ARCHS"] = tc.archs
			}
			if tc.plugins != "" {
				set["PLUGIN_PLATFORMS"] = tc.plugins
			}
			cmd.Env = releaseEnv(set)
			got, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("%s\nhack/release.sh %q: want exit status 2, got %v\n%s", tc.reason, tc.args, err, got)
			}
			if !strings.Contains(string(got), tc.want) {
				t.Errorf("%s\nhack/release.sh %q: want a message containing %q, got:\n%s", tc.reason, tc.args, tc.want, got)
			}
			if entries, _ := os.ReadDir(out); len(entries) > 0 {
				t.Errorf("%s\nhack/release.sh %q wrote %d files into OUTPUT, want none", tc.reason, tc.args, len(entries))
			}
		})
	}
}

// TestRelease runs the script twice at once into two folders, as two test
// suites might: once for the default architectures and plugin platforms,
// with a RELEASE_URL of its own; and once for amd64 alone, and the plugin
// for linux/amd64 alone. Then it opens every artefact, and checks that the
// two runs built the same bytes for amd64 and linux/amd64 and that the
// second built nothing else.
func TestRelease(t *testing.T) {
	r := root(t)
	cli := crossplaneCLI(t, r)
	runs := []struct {
		name    string
		archs   string // empty: the default
		plugins string // empty: the default
		url     string // empty: the default
		dir     string
	}{
		{name: "default", url: releaseURL, dir: t.TempDir()},
		{name: "amd64", archs: "amd64", plugins: "linux/amd64", dir: t.TempDir()},
	}
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, run := range runs {
		wg.Go(func() {
			set := map[string]string{"OUTPUT": run.dir, "CROSSPLANE": cli}
			if run.archs != "" {
				set["ARCHS"] = run.archs
			}
			if run.plugins != "" {
				set["PLUGIN_PLATFORMS"] = run.plugins
			}
			if run.url != "" {
				set["RELEASE_URL"] = run.url
			}
			cmd := exec.Command("bash", "hack/release.sh", version)
			cmd.Dir = r
			cmd.Env = releaseEnv(set)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			t.Logf("hack/release.sh %s (ARCHS=%q) took %s", version, run.archs, time.Since(start).Round(time.Second))
			if err != nil {
				errs[i] = fmt.Errorf("hack/release.sh %s (ARCHS=%q): %w\n%s", version, run.archs, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	all, amd64Only := runs[0].dir, runs[1].dir
	for _, arch := range archs {
		t.Run(arch, func(t *testing.T) {
			a := openArtefacts(t, all, arch)
			a.inLayer = checkImage(t, r, a)
			checkBinary(t, r, a)
			checkPackage(t, r, a)
		})
	}
	t.Run("Plugin", func(t *testing.T) {
		checkPlugin(t, r, all, pluginPlatforms, releaseURL)
	})
	t.Run("PluginOfOnePlatform", func(t *testing.T) {
		checkPlugin(t, r, amd64Only, []string{"linux/amd64"}, defaultReleaseURL)
	})

	t.Run("TheDefaults", func(t *testing.T) {
		want := make([]string, 0, 3*len(archs)+2*len(pluginPlatforms)+1)
		for _, arch := range archs {
			want = append(want, artefact(arch, ""), artefact(arch, ".image.tar"), artefact(arch, ".xpkg"))
		}
		for _, p := range pluginPlatforms {
			want = append(want, pluginArchive(p), pluginArchive(p)+".sha256")
		}
		want = append(want, krewManifest)
		checkWritten(t, all, want)
	})

	t.Run("OnlyTheArchsAsked", func(t *testing.T) {
		want := []string{
			artefact("amd64", ""),
			artefact("amd64", ".image.tar"),
			artefact("amd64", ".xpkg"),
			pluginArchive("linux/amd64"),
			pluginArchive("linux/amd64") + ".sha256",
			krewManifest,
		}
		checkWritten(t, amd64Only, want)
	})

	t.Run("Reproducible", func(t *testing.T) {
		for _, name := range []string{artefact("amd64", ""), artefact("amd64", ".image.tar"), artefact("amd64", ".xpkg"), pluginArchive("linux/amd64")} {
			a, b := fileDigest(t, filepath.Join(all, name)), fileDigest(t, filepath.Join(amd64Only, name))
			if a != b {
				t.Errorf("two builds of one commit differ: %s is %s in one run and %s in the other", name, a, b)
			}
		}
	})
}

// checkWritten checks that a run wrote these files into dir, and nothing
// else: no folder of its work left behind.
func checkWritten(t *testing.T, dir string, want []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(entries))
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("%s holds -want, +got:\n%s", dir, diff)
	}
}

func artefact(arch, suffix string) string {
	return "function-canary-route-" + version + "-linux-" + arch + suffix
}

// artefacts are what the script wrote for one architecture.
type artefacts struct {
	arch    string
	binary  []byte   // the standalone binary
	image   v1.Image // the runtime image tarball
	pkg     v1.Image // the .xpkg
	inLayer []byte   // the binary as the image's layer holds it
}

func openArtefacts(t *testing.T, dir, arch string) artefacts {
	t.Helper()
	a := artefacts{arch: arch}
	var err error
	if a.binary, err = os.ReadFile(filepath.Join(dir, artefact(arch, ""))); err != nil {
		t.Fatal(err)
	}
	if a.image, err = tarball.ImageFromPath(filepath.Join(dir, artefact(arch, ".image.tar")), nil); err != nil {
		t.Fatalf("cannot open the runtime image: %v", err)
	}
	if a.pkg, err = tarball.ImageFromPath(filepath.Join(dir, artefact(arch, ".xpkg")), nil); err != nil {
		t.Fatalf("cannot open the package: %v", err)
	}
	return a
}

// imageFacts are the parts of an image config a runtime acts on.
type imageFacts struct {
	OS, Architecture string
	Entrypoint, Cmd  []string
	User, WorkingDir string
	ExposedPorts     map[string]struct{}
	Env              []string
}

func factsOf(cf *v1.ConfigFile) imageFacts {
	return imageFacts{
		OS: cf.OS, Architecture: cf.Architecture,
		Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd,
		User: cf.Config.User, WorkingDir: cf.Config.WorkingDir,
		ExposedPorts: cf.Config.ExposedPorts,
		Env:          cf.Config.Env,
	}
}

// checkImage checks the runtime image and returns the binary its layer holds.
func checkImage(t *testing.T, root string, a artefacts) []byte {
	t.Helper()
	cf, err := a.image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := imageFacts{
		OS: "linux", Architecture: a.arch,
		Entrypoint: []string{entrypoint},
		User:       user, WorkingDir: "/",
		ExposedPorts: map[string]struct{}{port: {}},
	}
	if diff := cmp.Diff(want, factsOf(cf)); diff != "" {
		t.Errorf("image config: -want, +got:\n%s", diff)
	}

	// The labels name the commit the image was built from, which another
	// commit may have followed by now: it must be HEAD or an ancestor.
	labels := cf.Config.Labels
	revision := labels["org.opencontainers.image.revision"]
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(revision) {
		t.Fatalf("label org.opencontainers.image.revision %q is not a commit", revision)
	}
	if out, err := git(root, "merge-base", "--is-ancestor", revision, "HEAD"); err != nil {
		t.Fatalf("label org.opencontainers.image.revision %s is not HEAD or an ancestor: %v\n%s", revision, err, out)
	}
	commitTime, err := git(root, "log", "-1", "--format=%ct", revision)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(commitTime), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(secs, 0).UTC()
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/crossplane-contrib/function-canary-route",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "function-canary-route",
	}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("image labels: -want, +got:\n%s", diff)
	}
	// Reproducible: every timestamp is the commit's, never the build's.
	if !cf.Created.Equal(created) {
		t.Errorf("image created %s, want the commit's time %s", cf.Created.Time, created)
	}
	for i, h := range cf.History {
		if !h.Created.Equal(created) {
			t.Errorf("history entry %d created %s, want the commit's time %s", i, h.Created.Time, created)
		}
	}

	// One layer, holding the binary and nothing else: no shell, no CA
	// bundle, nothing to exploit.
	layers, err := a.image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("the image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	type entry struct {
		Name     string
		Mode     int64
		UID, GID int
		ModTime  time.Time
	}
	var got []entry
	var inLayer []byte
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{Name: h.Name, Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.UTC()})
		if h.Name == strings.TrimPrefix(entrypoint, "/") {
			if inLayer, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantEntries := []entry{{Name: "function", Mode: 0o555, ModTime: created}}
	if diff := cmp.Diff(wantEntries, got); diff != "" {
		t.Errorf("the image's layer: -want, +got:\n%s", diff)
	}
	if !bytes.Equal(inLayer, a.binary) {
		t.Errorf("the binary in the image's layer (%d bytes) is not the release's binary (%d bytes)", len(inLayer), len(a.binary))
	}
	return inLayer
}

// elfMachines are the ELF machines of the release's architectures.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func checkBinary(t *testing.T, root string, a artefacts) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(a.binary))
	if err != nil {
		t.Fatalf("the binary is not an ELF file: %v", err)
	}
	if f.Machine != elfMachines[a.arch] {
		t.Errorf("the %s binary is built for %s", a.arch, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the %s binary is dynamically linked: the image has no libc", a.arch)
		}
	}
	// -trimpath: no path of the machine that built it.
	if bytes.Contains(a.binary, []byte(root+"/")) {
		t.Errorf("the %s binary holds the build machine's path %s (want -trimpath)", a.arch, root)
	}

	if runtime.GOOS != "linux" || runtime.GOARCH != a.arch {
		return
	}
	// Run the binary exactly as the image's layer holds it.
	bin := filepath.Join(t.TempDir(), "function")
	if err := os.WriteFile(bin, a.inLayer, 0o755); err != nil {
		t.Fatal(err)
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("function --help: %v\n%s", err, help)
	}
	for _, want := range []string{"function-canary-route", "--address", "--tls-certs-dir", "--insecure"} {
		if !bytes.Contains(help, []byte(want)) {
			t.Errorf("function --help does not mention %s:\n%s", want, help)
		}
	}

	t.Run("Version", func(t *testing.T) {
		// hack/release.sh stamps main.version through -ldflags; the
		// binary prints it with --version.
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("function --version: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != version {
			t.Errorf("function --version: want %q, got %q", version, got)
		}
	})
}

// object is what the test reads of each object in package.yaml.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

func checkPackage(t *testing.T, root string, a artefacts) {
	t.Helper()
	pkgCfg, err := a.pkg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	imgCfg, err := a.image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// Crossplane runs the package's own image, and crossplane xpkg push
	// files each package in the multi-arch index under its config's
	// platform: the package must say what the runtime image says.
	if diff := cmp.Diff(factsOf(imgCfg), factsOf(pkgCfg)); diff != "" {
		t.Errorf("the package's config differs from the runtime image's: -image, +package:\n%s", diff)
	}

	// The runtime image's layers come first, the package's own after.
	imgLayers, err := a.image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	pkgLayers, err := a.pkg.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgLayers) <= len(imgLayers) {
		t.Fatalf("the package has %d layers, want the runtime image's %d and its own", len(pkgLayers), len(imgLayers))
	}
	for i, l := range imgLayers {
		want, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		got, err := pkgLayers[i].DiffID()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("package layer %d is %s, want the runtime image's %s", i, got, want)
		}
	}
	// And the flattened package holds the binary where the entrypoint is.
	if got := fileInImage(t, a.pkg, strings.TrimPrefix(entrypoint, "/")); !bytes.Equal(got, a.binary) {
		t.Errorf("the package's %s (%d bytes) is not the release's binary (%d bytes)", entrypoint, len(got), len(a.binary))
	}

	objects := packageObjects(t, pkgCfg, pkgLayers)
	want := readObjects(t, filepath.Join(root, "package", "crossplane.yaml"), filepath.Join(root, "package", "input", "canaryroute.fn.crossplane.io_inputs.yaml"))
	if len(objects) != 2 {
		t.Fatalf("package.yaml holds %d objects, want the Function's metadata and the Input CRD", len(objects))
	}

	meta := objects[0]
	if meta.Kind != "Function" || meta.Metadata.Name != "function-canary-route" {
		t.Errorf("the package's metadata is %s %q, want Function function-canary-route", meta.Kind, meta.Metadata.Name)
	}
	if diff := cmp.Diff(want[0].Metadata.Annotations, meta.Metadata.Annotations); diff != "" {
		t.Errorf("the package's annotations differ from package/crossplane.yaml's: -want, +got:\n%s", diff)
	}
	for _, key := range []string{"description", "source", "license", "maintainer", "readme"} {
		if strings.TrimSpace(meta.Metadata.Annotations["meta.crossplane.io/"+key]) == "" {
			t.Errorf("the package's metadata has no meta.crossplane.io/%s", key)
		}
	}
	if got := meta.Metadata.Annotations["meta.crossplane.io/license"]; got != "Apache-2.0" {
		t.Errorf("meta.crossplane.io/license: want Apache-2.0, got %q", got)
	}
	// A maintainer is someone to reach: "Name <contact>".
	if m := meta.Metadata.Annotations["meta.crossplane.io/maintainer"]; !regexp.MustCompile(`^[^<>]+ <[^<>\s]+>$`).MatchString(m) {
		t.Errorf("meta.crossplane.io/maintainer %q is not \"Name <contact>\"", m)
	}

	crd := objects[1]
	if crd.Kind != "CustomResourceDefinition" || crd.Metadata.Name != inputCRD {
		t.Errorf("the package's second object is %s %q, want CustomResourceDefinition %s", crd.Kind, crd.Metadata.Name, inputCRD)
	}
	if diff := cmp.Diff(want[1].Spec, crd.Spec); diff != "" {
		t.Errorf("the package's Input CRD differs from package/input's: -want, +got:\n%s", diff)
	}
}

// packageObjects reads package.yaml from the layer that the package's config
// labels mark as the package's base layer.
func packageObjects(t *testing.T, cf *v1.ConfigFile, layers []v1.Layer) []object {
	t.Helper()
	var base v1.Layer
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.Labels[xpkgLabelPrefix+d.String()] == xpkgBase {
			base = l
		}
	}
	if base == nil {
		t.Fatalf("no layer of the package is labelled %s<digest>: %s", xpkgLabelPrefix, xpkgBase)
	}
	rc, err := base.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the package's base layer holds no package.yaml")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "package.yaml" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return decodeObjects(t, b)
		}
	}
}

func readObjects(t *testing.T, files ...string) []object {
	t.Helper()
	objs := make([]object, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeObjects(t, b)...)
	}
	return objs
}

func decodeObjects(t *testing.T, b []byte) []object {
	t.Helper()
	var objs []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "---" {
			continue
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("cannot decode %s: %v", doc, err)
		}
		if o.Kind == "" {
			continue
		}
		objs = append(objs, o)
	}
}

// fileInImage returns a file of the image's flattened filesystem.
func fileInImage(t *testing.T, img v1.Image, name string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the image holds no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
