package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// The kubectl plugin's release: an archive per platform holding the binary
// and the LICENSE, its sha256 beside it, and the krew manifest.

// pluginPlatforms are the script's default plugin platforms.
var pluginPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// krewManifest is the krew manifest's file, as krew-index names it.
const krewManifest = "canaryroute.yaml"

// pluginArchive is the archive of a platform, OS/ARCH.
func pluginArchive(platform string) string {
	goos, goarch, _ := strings.Cut(platform, "/")
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return "kubectl-canaryroute-" + version + "-" + goos + "-" + goarch + ext
}

// pluginBin is the binary's name on a platform.
func pluginBin(platform string) string {
	if strings.HasPrefix(platform, "windows/") {
		return "kubectl-canaryroute.exe"
	}
	return "kubectl-canaryroute"
}

// An executable is what the test reads of a binary's headers.
type executable struct {
	// Format is ELF, Mach-O or PE.
	Format string
	// Machine is the architecture it runs on, as its format names it.
	Machine string
	// Type is what the headers say it is: an executable, a library, ...
	Type string
	// Interpreter is the dynamic loader an ELF binary asks for, "" for a
	// static binary.
	Interpreter string
}

// wantExecutables are what each platform's binary must be: an executable
// of its machine, static where the format can say so.
var wantExecutables = map[string]executable{
	"linux/amd64":   {Format: "ELF", Machine: elf.EM_X86_64.String(), Type: elf.ET_EXEC.String()},
	"linux/arm64":   {Format: "ELF", Machine: elf.EM_AARCH64.String(), Type: elf.ET_EXEC.String()},
	"darwin/amd64":  {Format: "Mach-O", Machine: macho.CpuAmd64.String(), Type: macho.TypeExec.String()},
	"darwin/arm64":  {Format: "Mach-O", Machine: macho.CpuArm64.String(), Type: macho.TypeExec.String()},
	"windows/amd64": {Format: "PE", Machine: peMachine(pe.IMAGE_FILE_MACHINE_AMD64), Type: "executable image"},
	"windows/arm64": {Format: "PE", Machine: peMachine(pe.IMAGE_FILE_MACHINE_ARM64), Type: "executable image"},
}

func peMachine(m uint16) string { return fmt.Sprintf("PE machine %#x", m) }

// readExecutable reads a binary's headers in the format its first bytes
// say.
func readExecutable(b []byte) (executable, error) {
	r := bytes.NewReader(b)
	switch {
	case bytes.HasPrefix(b, []byte(elf.ELFMAG)):
		f, err := elf.NewFile(r)
		if err != nil {
			return executable{}, fmt.Errorf("cannot read the ELF headers: %w", err)
		}
		e := executable{Format: "ELF", Machine: f.Machine.String(), Type: f.Type.String()}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				interp, err := io.ReadAll(p.Open())
				if err != nil {
					return executable{}, fmt.Errorf("cannot read PT_INTERP: %w", err)
				}
				e.Interpreter = strings.TrimRight(string(interp), "\x00")
			}
		}
		return e, nil
	case bytes.HasPrefix(b, []byte("MZ")):
		f, err := pe.NewFile(r)
		if err != nil {
			return executable{}, fmt.Errorf("cannot read the PE headers: %w", err)
		}
		typ := fmt.Sprintf("characteristics %#x", f.Characteristics)
		if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE != 0 && f.Characteristics&pe.IMAGE_FILE_DLL == 0 {
			typ = "executable image"
		}
		return executable{Format: "PE", Machine: peMachine(f.Machine), Type: typ}, nil
	default:
		f, err := macho.NewFile(r)
		if err != nil {
			return executable{}, fmt.Errorf("neither ELF, PE nor Mach-O: %w", err)
		}
		return executable{Format: "Mach-O", Machine: f.Cpu.String(), Type: f.Type.String()}, nil
	}
}

// archiveEntry is what the test reads of an entry of a plugin's archive.
type archiveEntry struct {
	Name    string
	Mode    fs.FileMode
	ModTime time.Time
	data    []byte
}

// readArchive reads a .tar.gz or a .zip.
func readArchive(t *testing.T, path string) []archiveEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []archiveEntry
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s is not a zip: %v", path, err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
			out = append(out, archiveEntry{Name: f.Name, Mode: f.Mode(), ModTime: f.Modified.UTC(), data: data})
		}
		return out
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not gzipped: %v", path, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s is not a tar: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		out = append(out, archiveEntry{Name: h.Name, Mode: h.FileInfo().Mode(), ModTime: h.ModTime.UTC(), data: data})
	}
}

// krewPlugin is what the test reads of the krew manifest.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Files  []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
	Bin string `json:"bin"`
}

// A platformEntry is a platform of the manifest, as the test compares it.
type platformEntry struct {
	OS, Arch, URI, SHA256, Bin string
	Files                      []string
}

// checkPlugin opens the plugin's archives of the platforms in dir, and the
// krew manifest that names them under url.
func checkPlugin(t *testing.T, root, dir string, platforms []string, url string) {
	t.Helper()
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	commitTime, err := git(root, "log", "-1", "--format=%ct")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(commitTime), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(secs, 0).UTC()

	want := make([]platformEntry, 0, len(platforms))
	for _, p := range platforms {
		name := pluginArchive(p)
		archive, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(archive)
		digest := hex.EncodeToString(sum[:])
		goos, goarch, _ := strings.Cut(p, "/")
		want = append(want, platformEntry{
			OS: goos, Arch: goarch, URI: url + "/" + name, SHA256: digest,
			Bin: pluginBin(p), Files: []string{pluginBin(p) + " -> .", "LICENSE -> ."},
		})

		t.Run(strings.ReplaceAll(p, "/", "-"), func(t *testing.T) {
			// The sum beside the archive, as sha256sum -c reads it.
			got, err := os.ReadFile(filepath.Join(dir, name+".sha256"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(digest+"  "+name+"\n", string(got)); diff != "" {
				t.Errorf("%s.sha256: -want, +got:\n%s", name, diff)
			}

			// The binary, executable, and the license, every timestamp
			// the commit's.
			entries := readArchive(t, filepath.Join(dir, name))
			wantEntries := []archiveEntry{
				{Name: pluginBin(p), Mode: 0o755, ModTime: created},
				{Name: "LICENSE", Mode: 0o644, ModTime: created},
			}
			if diff := cmp.Diff(wantEntries, entries, cmpopts.IgnoreUnexported(archiveEntry{})); diff != "" {
				t.Fatalf("%s's entries: -want, +got:\n%s", name, diff)
			}
			if !bytes.Equal(entries[1].data, license) {
				t.Errorf("%s's LICENSE is not the repository's", name)
			}
			bin := entries[0].data
			exe, err := readExecutable(bin)
			if err != nil {
				t.Fatalf("%s's %s: %v", name, pluginBin(p), err)
			}
			if diff := cmp.Diff(wantExecutables[p], exe); diff != "" {
				t.Errorf("%s's %s is not an executable for %s: -want, +got:\n%s", name, pluginBin(p), p, diff)
			}
			// -trimpath: no path of the machine that built it.
			if bytes.Contains(bin, []byte(root+"/")) {
				t.Errorf("%s's binary holds the build machine's path %s (want -trimpath)", name, root)
			}
			if p != runtime.GOOS+"/"+runtime.GOARCH {
				return
			}
			// The binary runs here: it prints the version the script
			// stamped, and its commands.
			path := filepath.Join(t.TempDir(), pluginBin(p))
			if err := os.WriteFile(path, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(path, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl-canaryroute --version: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != version {
				t.Errorf("kubectl-canaryroute --version: want %q, got %q", version, got)
			}
			help, err := exec.Command(path, "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl-canaryroute --help: %v\n%s", err, help)
			}
			for _, cmd := range []string{"get", "approve", "promote", "abort", "rollback"} {
				if !bytes.Contains(help, []byte("\n  "+cmd+" ")) {
					t.Errorf("kubectl-canaryroute --help lists no %s command:\n%s", cmd, help)
				}
			}
		})
	}

	t.Run("KrewManifest", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(dir, krewManifest))
		if err != nil {
			t.Fatal(err)
		}
		var m krewPlugin
		if err := yaml.UnmarshalStrict(b, &m); err != nil {
			t.Fatalf("%s: %v\n%s", krewManifest, err, b)
		}
		head := []string{m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version, m.Spec.Homepage}
		wantHead := []string{"krew.googlecontainertools.github.com/v1alpha2", "Plugin", "canaryroute", version, "https://github.com/crossplane-contrib/function-canary-route"}
		if diff := cmp.Diff(wantHead, head); diff != "" {
			t.Errorf("%s: apiVersion, kind, name, version and homepage: -want, +got:\n%s", krewManifest, diff)
		}
		for what, text := range map[string]string{"shortDescription": m.Spec.ShortDescription, "description": m.Spec.Description} {
			if strings.TrimSpace(text) == "" {
				t.Errorf("%s has no %s, which krew-index requires", krewManifest, what)
			}
		}
		got := make([]platformEntry, 0, len(m.Spec.Platforms))
		for _, p := range m.Spec.Platforms {
			e := platformEntry{OS: p.Selector.MatchLabels["os"], Arch: p.Selector.MatchLabels["arch"], URI: p.URI, SHA256: p.SHA256, Bin: p.Bin}
			if len(p.Selector.MatchLabels) != 2 {
				t.Errorf("%s: a platform selects on %v, want os and arch alone", krewManifest, p.Selector.MatchLabels)
			}
			for _, f := range p.Files {
				e.Files = append(e.Files, f.From+" -> "+f.To)
			}
			got = append(got, e)
		}
		// Each platform's sha256 is its archive's, and its uri the
		// archive's name under the release's URL.
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s's platforms: -want, +got:\n%s", krewManifest, diff)
		}
	})
}
