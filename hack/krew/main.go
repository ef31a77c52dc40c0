// Command krew packs the kubectl plugin's release (cmd/kubectl-canaryroute)
// from its binaries, one per platform: an archive per platform (.tar.gz, or
// .zip for windows) holding the binary and the LICENSE, the archive's sha256
// beside it, and the krew manifest that names every archive by its URL and
// sha256 (krew-index's plugins/canaryroute.yaml). hack/release.sh runs it
// once the binaries are built:
//
//	go run ./hack/krew -version=v0.1.0 -created="$(git log -1 --format=%ct)" \
//	  -url=https://github.com/crossplane-contrib/function-canary-route/releases/download/v0.1.0 \
//	  -license=LICENSE -output=_output \
//	  linux/amd64=bin/linux-amd64/kubectl-canaryroute \
//	  windows/amd64=bin/windows-amd64/kubectl-canaryroute.exe
//
// It refuses a binary that is not an executable of its platform (ELF,
// Mach-O or PE, by machine), so an archive never claims a platform its
// binary cannot run on. The archives are reproducible: their entries are in
// one order, owned by root, and every timestamp is -created's.
package main

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
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The plugin, as krew installs it.
const (
	// Plugin is the plugin's name in krew's index: `kubectl krew install
	// canaryroute`.
	Plugin = "canaryroute"
	// Binary is the binary's name, and the archives' prefix.
	Binary = "kubectl-canaryroute"
	// License is the license's name in each archive.
	License = "LICENSE"
	// Manifest is the krew manifest's file name, as krew-index names it
	// under plugins/.
	Manifest = Plugin + ".yaml"
)

// The krew manifest's kind.
const (
	APIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	Kind       = "Plugin"
)

const (
	errFmtPlatform    = "unsupported platform %q (one of %s)"
	errFmtBinary      = "the %s binary: %w"
	errFmtNotExec     = "cannot read it as %s: %w"
	errFmtMachine     = "built for %v, not %v"
	errFmtNotExecType = "not an executable (%v)"
	errDynamic        = "dynamically linked (build it with CGO_ENABLED=0)"
	errFmtRead        = "cannot read %s: %w"
	errFmtWrite       = "cannot write %s: %w"
	errFmtArchive     = "cannot archive %s: %w"
	errFmtBadArg      = "invalid argument %q: want OS/ARCH=BINARY"
	errFmtTwice       = "platform %s given twice"
)

// A Platform is one platform the plugin is released for: how krew selects
// it, and what its binary must be.
type Platform struct {
	OS, Arch string
	// check refuses a binary that is not an executable of the platform.
	check func(binary []byte) error
}

// windows is the OS whose archives are zips, and whose binary ends in .exe.
const windows = "windows"

// platforms are the platforms the release may build, by OS/ARCH.
var platforms = map[string]Platform{
	"linux/amd64":   {OS: "linux", Arch: "amd64", check: elfCheck(elf.EM_X86_64)},
	"linux/arm64":   {OS: "linux", Arch: "arm64", check: elfCheck(elf.EM_AARCH64)},
	"darwin/amd64":  {OS: "darwin", Arch: "amd64", check: machoCheck(macho.CpuAmd64)},
	"darwin/arm64":  {OS: "darwin", Arch: "arm64", check: machoCheck(macho.CpuArm64)},
	"windows/amd64": {OS: windows, Arch: "amd64", check: peCheck(pe.IMAGE_FILE_MACHINE_AMD64)},
	"windows/arm64": {OS: windows, Arch: "arm64", check: peCheck(pe.IMAGE_FILE_MACHINE_ARM64)},
}

// String is OS/ARCH.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Bin is the binary's name on the platform.
func (p Platform) Bin() string {
	if p.OS == windows {
		return Binary + ".exe"
	}
	return Binary
}

// Archive is the name of the platform's archive of a version.
func (p Platform) Archive(version string) string {
	ext := ".tar.gz"
	if p.OS == windows {
		ext = ".zip"
	}
	return fmt.Sprintf("%s-%s-%s-%s%s", Binary, version, p.OS, p.Arch, ext)
}

// Options describe one release of the plugin.
type Options struct {
	// Version is the release's version, krew's spec.version.
	Version string
	// URL is where the archives are downloaded from: each archive's uri is
	// URL/ARCHIVE.
	URL string
	// Homepage is the plugin's homepage.
	Homepage string
	// Created is the instant every timestamp in the archives carries.
	Created time.Time
}

// A Build is one platform's binary.
type Build struct {
	Platform Platform
	Binary   []byte
}

// An Archive is one platform's archive, written.
type Archive struct {
	Platform Platform
	Name     string
	Data     []byte
	SHA256   string
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("krew", flag.ContinueOnError)
	output := flags.String("output", "", "the folder to write the archives, their sha256 and the manifest to (required)")
	license := flags.String("license", "", "the license file each archive holds (required)")
	created := flags.Int64("created", 0, "Unix time of every timestamp in the archives, e.g. the commit's (git log -1 --format=%ct)")
	var o Options
	flags.StringVar(&o.Version, "version", "", "the release's version (required)")
	flags.StringVar(&o.URL, "url", "", "where the archives are downloaded from, without the archive's name (required)")
	flags.StringVar(&o.Homepage, "homepage", "https://github.com/crossplane-contrib/function-canary-route", "the plugin's homepage")
	flags.Usage = func() {
		_, _ = fmt.Fprintf(flags.Output(), "usage: krew [flags] OS/ARCH=BINARY...\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	for _, r := range []struct{ flag, value string }{{"output", *output}, {"license", *license}, {"version", o.Version}, {"url", o.URL}} {
		if r.value == "" {
			return fmt.Errorf("-%s is required", r.flag)
		}
	}
	if flags.NArg() == 0 {
		return errors.New("no OS/ARCH=BINARY given")
	}
	o.Created = time.Unix(*created, 0).UTC()

	lic, err := os.ReadFile(*license)
	if err != nil {
		return fmt.Errorf(errFmtRead, *license, err)
	}
	builds, err := readBuilds(flags.Args())
	if err != nil {
		return err
	}
	archives, err := Pack(builds, lic, o)
	if err != nil {
		return err
	}
	manifest, err := NewManifest(archives, o)
	if err != nil {
		return err
	}
	for _, a := range archives {
		sum := a.SHA256 + "  " + a.Name + "\n"
		if err := write(*output, a.Name, a.Data, stdout); err != nil {
			return err
		}
		if err := write(*output, a.Name+".sha256", []byte(sum), stdout); err != nil {
			return err
		}
	}
	return write(*output, Manifest, manifest, stdout)
}

// readBuilds reads the OS/ARCH=BINARY arguments, in the order given.
func readBuilds(args []string) ([]Build, error) {
	builds := make([]Build, 0, len(args))
	for _, arg := range args {
		name, path, ok := strings.Cut(arg, "=")
		if !ok || path == "" {
			return nil, fmt.Errorf(errFmtBadArg, arg)
		}
		p, err := platform(name)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(builds, func(b Build) bool { return b.Platform.String() == name }) {
			return nil, fmt.Errorf(errFmtTwice, name)
		}
		bin, err := os.ReadFile(path) //nolint:gosec // The release script names the binaries it built.
		if err != nil {
			return nil, fmt.Errorf(errFmtRead, path, err)
		}
		builds = append(builds, Build{Platform: p, Binary: bin})
	}
	return builds, nil
}

// platform is the Platform of OS/ARCH.
func platform(name string) (Platform, error) {
	p, ok := platforms[name]
	if !ok {
		known := make([]string, 0, len(platforms))
		for k := range platforms {
			known = append(known, k)
		}
		slices.Sort(known)
		return Platform{}, fmt.Errorf(errFmtPlatform, name, strings.Join(known, ", "))
	}
	return p, nil
}

// write writes a file into dir through a temporary file, so that an
// interrupted run never leaves one that looks complete, and prints its path.
func write(dir, name string, data []byte, stdout io.Writer) error {
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf(errFmtWrite, path, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // Gone once renamed.
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf(errFmtWrite, path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf(errFmtWrite, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf(errFmtWrite, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf(errFmtWrite, path, err)
	}
	_, err = fmt.Fprintln(stdout, path)
	return err
}

// Pack checks each binary and archives it with the license.
func Pack(builds []Build, license []byte, o Options) ([]Archive, error) {
	out := make([]Archive, 0, len(builds))
	for _, b := range builds {
		if err := b.Platform.check(b.Binary); err != nil {
			return nil, fmt.Errorf(errFmtBinary, b.Platform, err)
		}
		files := []file{
			{name: b.Platform.Bin(), mode: 0o755, data: b.Binary},
			{name: License, mode: 0o644, data: license},
		}
		pack := tarGz
		if b.Platform.OS == windows {
			pack = zipArchive
		}
		name := b.Platform.Archive(o.Version)
		data, err := pack(files, o.Created)
		if err != nil {
			return nil, fmt.Errorf(errFmtArchive, name, err)
		}
		sum := sha256.Sum256(data)
		out = append(out, Archive{Platform: b.Platform, Name: name, Data: data, SHA256: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// A file is one entry of an archive.
type file struct {
	name string
	mode fs.FileMode
	data []byte
}

// tarGz writes the files into a gzipped tar: owned by root, every timestamp
// modTime, and gzip's header without a name or time.
func tarGz(files []file, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.name,
			Mode:     int64(f.mode),
			Size:     int64(len(f.data)),
			ModTime:  modTime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipArchive writes the files into a zip, deflated, every timestamp
// modTime, with their Unix modes.
func zipArchive(files []file, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: modTime}
		hdr.SetMode(f.mode)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// elfCheck wants a static ELF executable for the machine.
func elfCheck(machine elf.Machine) func([]byte) error {
	return func(b []byte) error {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf(errFmtNotExec, "ELF", err)
		}
		if f.Machine != machine {
			return fmt.Errorf(errFmtMachine, f.Machine, machine)
		}
		if f.Type != elf.ET_EXEC {
			return fmt.Errorf(errFmtNotExecType, f.Type)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return errors.New(errDynamic)
			}
		}
		return nil
	}
}

// machoCheck wants a (thin) Mach-O executable for the CPU.
func machoCheck(cpu macho.Cpu) func([]byte) error {
	return func(b []byte) error {
		f, err := macho.NewFile(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf(errFmtNotExec, "Mach-O", err)
		}
		if f.Cpu != cpu {
			return fmt.Errorf(errFmtMachine, f.Cpu, cpu)
		}
		if f.Type != macho.TypeExec {
			return fmt.Errorf(errFmtNotExecType, f.Type)
		}
		return nil
	}
}

// peCheck wants a PE executable (not a DLL) for the machine.
func peCheck(machine uint16) func([]byte) error {
	return func(b []byte) error {
		f, err := pe.NewFile(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf(errFmtNotExec, "PE", err)
		}
		if f.Machine != machine {
			return fmt.Errorf(errFmtMachine, fmt.Sprintf("PE machine %#x", f.Machine), fmt.Sprintf("PE machine %#x", machine))
		}
		if f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 || f.Characteristics&pe.IMAGE_FILE_DLL != 0 {
			return fmt.Errorf(errFmtNotExecType, fmt.Sprintf("PE characteristics %#x", f.Characteristics))
		}
		return nil
	}
}

// A KrewPlugin is krew's manifest of a plugin (krew's pkg/index Plugin, with
// the fields this release sets).
type KrewPlugin struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   KrewMetadata `json:"metadata"`
	Spec       KrewSpec     `json:"spec"`
}

// KrewMetadata names the plugin.
type KrewMetadata struct {
	Name string `json:"name"`
}

// KrewSpec is the plugin's release.
type KrewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Caveats          string         `json:"caveats,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// A KrewPlatform is one platform's archive: how krew selects it, where it
// is downloaded from, its sha256, and what krew installs of it.
type KrewPlatform struct {
	Selector KrewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Files    []KrewFile   `json:"files"`
	Bin      string       `json:"bin"`
}

// KrewSelector selects a platform by krew's labels os and arch.
type KrewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// A KrewFile is a file krew copies out of the archive.
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// The manifest's texts.
const (
	shortDescription = "See and steer CanaryRoute rollouts"
	description      = `Shows where a CanaryRoute's rollout stands (function-canary-route, a
Crossplane composition function for progressive delivery over the Gateway
API): phase, step, weights, the route and its parents' verdicts, the proxy
Services, the release's revisions, the last measurements and events, redrawn
on change with get --watch. Steers it without editing YAML: approve, promote,
abort, retry, pause, resume, rollback and set-revision each write only their
spec fields, by server-side apply with the field manager kubectl-canaryroute.`
	caveats = `The commands that steer need patch on the CanaryRoute kinds (server-side
apply is a patch); get and list read the kinds a CanaryRoute composes and
events. A CanaryRoute that Argo CD or Flux applies from Git gets Git's
values back at the next sync: the commands say so, and what to commit.`
)

// NewManifest is the krew manifest of the archives.
func NewManifest(archives []Archive, o Options) ([]byte, error) {
	m := KrewPlugin{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata:   KrewMetadata{Name: Plugin},
		Spec: KrewSpec{
			Version:          o.Version,
			Homepage:         o.Homepage,
			ShortDescription: shortDescription,
			Description:      description + "\n",
			Caveats:          caveats + "\n",
		},
	}
	for _, a := range archives {
		m.Spec.Platforms = append(m.Spec.Platforms, KrewPlatform{
			Selector: KrewSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      strings.TrimSuffix(o.URL, "/") + "/" + a.Name,
			SHA256:   a.SHA256,
			Files:    []KrewFile{{From: a.Platform.Bin(), To: "."}, {From: License, To: "."}},
			Bin:      a.Platform.Bin(),
		})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cannot write the krew manifest: %w", err)
	}
	return b, nil
}
