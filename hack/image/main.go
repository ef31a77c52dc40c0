// Command image assembles the function's runtime image from scratch, without
// a Docker engine, and writes it as an image tarball (the `docker save`
// layout that `crossplane xpkg build --embed-runtime-image-tarball`, `docker
// load` and crane read). hack/release.sh runs it once per architecture:
//
//	go run ./hack/image -binary=function -arch=amd64 -version=v0.1.0 \
//	  -revision="$(git rev-parse HEAD)" -created="$(git log -1 --format=%ct)" \
//	  -output=runtime-amd64.tar
//
// The image holds one layer with the static binary at /function and nothing
// else. The function needs no CA certificates: it makes no outbound TLS
// calls. It serves gRPC to Crossplane, verifying Crossplane's client
// certificate against the ca.crt that Crossplane mounts with the server's own
// certificate (TLS_SERVER_CERTS_DIR), and reads everything else (gate objects,
// observed routes) from the request, so no system trust store is ever read.
// Nor does it need time zone data: every instant it parses is RFC 3339 with an
// offset.
//
// The image is reproducible: every timestamp (the file's, the config's and the
// history's) is the one given with -created, which the release script takes
// from the commit, so two builds of one commit give one digest.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// What the image promises to whoever runs it; test/release checks each.
const (
	// Entrypoint is where the binary sits in the image.
	Entrypoint = "/function"
	// User is distroless' nonroot user and group, by number so that a pod's
	// runAsNonRoot can verify it without an /etc/passwd.
	User = "65532:65532"
	// Port is the function's default gRPC address (--address=:9443), where
	// Crossplane connects.
	Port = "9443/tcp"
	// Repository names the image inside the tarball (docker load tags it so);
	// the tag is the version.
	Repository = "function-canary-route"
)

// The OCI annotation keys, as image labels
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelTitle    = "org.opencontainers.image.title"
)

// machines maps the architectures the image can be built for to the ELF
// machine their binary must be, so that a binary of the wrong architecture
// never ends up in an image that claims another.
var machines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
}

// Options describe one image.
type Options struct {
	// Arch is the image's architecture, a GOARCH (the OS is always linux).
	Arch string
	// Version, Revision and Source go into the OCI labels.
	Version  string
	Revision string
	Source   string
	// Created is the instant every timestamp in the image carries.
	Created time.Time
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static linux binary of the function (required)")
	output := fs.String("output", "", "the image tarball to write (required)")
	created := fs.Int64("created", 0, "Unix time of every timestamp in the image, e.g. the commit's (git log -1 --format=%ct)")
	var o Options
	fs.StringVar(&o.Arch, "arch", "", "the image's architecture, a GOARCH (required)")
	fs.StringVar(&o.Version, "version", "", "the version, for the label "+LabelVersion+" and the tag (required)")
	fs.StringVar(&o.Revision, "revision", "", "the commit, for the label "+LabelRevision+" (required)")
	fs.StringVar(&o.Source, "source", "https://github.com/crossplane-contrib/function-canary-route", "the repository, for the label "+LabelSource)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	required := []struct{ flag, value string }{
		{"binary", *binary}, {"output", *output}, {"arch", o.Arch}, {"version", o.Version}, {"revision", o.Revision},
	}
	for _, r := range required {
		if r.value == "" {
			return fmt.Errorf("-%s is required", r.flag)
		}
	}
	o.Created = time.Unix(*created, 0).UTC()

	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("cannot read the function's binary: %w", err)
	}
	img, err := Build(bin, o)
	if err != nil {
		return err
	}
	digest, err := Write(*output, img, o.Version)
	if err != nil {
		return err
	}
	// The digest alone, for the caller to log or compare.
	_, err = fmt.Fprintln(stdout, digest)
	return err
}

// Build assembles the runtime image around the binary.
func Build(binary []byte, o Options) (v1.Image, error) {
	if err := checkBinary(binary, o.Arch); err != nil {
		return nil, err
	}
	layer, err := binaryLayer(binary, o.Created)
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: o.Created}
	cfg := &v1.ConfigFile{
		Architecture: o.Arch,
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			Entrypoint:   []string{Entrypoint},
			User:         User,
			WorkingDir:   "/",
			ExposedPorts: map[string]struct{}{Port: {}},
			Labels: map[string]string{
				LabelSource:   o.Source,
				LabelVersion:  o.Version,
				LabelRevision: o.Revision,
				LabelCreated:  o.Created.Format(time.RFC3339),
				LabelLicenses: "Apache-2.0",
				LabelTitle:    Repository,
			},
		},
		// mutate.Append fills in the layer's diff ID.
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot set the image's config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: the function's static binary at " + Entrypoint,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot add the binary's layer: %w", err)
	}
	return img, nil
}

// checkBinary refuses what could not run in the image: a binary for another
// architecture, or one that needs a dynamic loader, which an image without a
// libc does not have (a build with CGO on).
func checkBinary(binary []byte, arch string) error {
	want, ok := machines[arch]
	if !ok {
		known := make([]string, 0, len(machines))
		for a := range machines {
			known = append(known, a)
		}
		slices.Sort(known)
		return fmt.Errorf("unsupported architecture %q (one of %v)", arch, known)
	}
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("the function's binary is not a linux executable: %w", err)
	}
	// No Close: a File made by NewFile holds nothing to release.
	if f.Machine != want {
		return fmt.Errorf("the function's binary is built for %s, not %s (%s)", f.Machine, arch, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("the function's binary is dynamically linked (build it with CGO_ENABLED=0): the image has no libc")
		}
	}
	return nil
}

// binaryLayer is a layer holding the binary at Entrypoint, owned by root and
// not writable, so the nonroot user can run it but not replace it.
func binaryLayer(binary []byte, modTime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     Entrypoint[1:], // tar paths are relative to the root
		Mode:     0o555,
		Size:     int64(len(binary)),
		ModTime:  modTime,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("cannot write the layer's tar header: %w", err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("cannot write the binary into the layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("cannot close the layer's tar: %w", err)
	}
	tarBytes := buf.Bytes()
	// gzip writes no timestamp of its own, so the compressed layer, and with
	// it the digest, depends on the bytes alone.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot make the binary's layer: %w", err)
	}
	return layer, nil
}

// Write writes the image as a tarball tagged Repository:version, through a
// temporary file so that an interrupted run never leaves a tarball that
// looks complete, and returns the image's digest as read back from the file.
func Write(path string, img v1.Image, version string) (v1.Hash, error) {
	tag, err := name.NewTag(Repository + ":" + version)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("cannot tag the image with version %q: %w", version, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return v1.Hash{}, fmt.Errorf("cannot create the image tarball: %w", err)
	}
	// Gone after the rename; otherwise a leftover to clean up.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tarball.Write(tag, img, tmp); err != nil {
		_ = tmp.Close()
		return v1.Hash{}, fmt.Errorf("cannot write the image tarball: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return v1.Hash{}, fmt.Errorf("cannot write the image tarball: %w", err)
	}
	// What the tarball holds is what counts: read it back, as crossplane
	// xpkg build will.
	written, err := tarball.ImageFromPath(tmp.Name(), nil)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("cannot read back the image tarball: %w", err)
	}
	digest, err := written.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("cannot compute the image's digest: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { //nolint:gosec // A release artefact, readable by all like any build output.
		return v1.Hash{}, fmt.Errorf("cannot make the image tarball readable: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return v1.Hash{}, fmt.Errorf("cannot move the image tarball into place: %w", err)
	}
	return digest, nil
}
