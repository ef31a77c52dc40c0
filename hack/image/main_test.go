package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fakeELF is the smallest ELF executable header that debug/elf reads: a
// 64-bit little-endian header for the machine, with one program header,
// PT_INTERP when the binary should look dynamically linked.
func fakeELF(t *testing.T, machine elf.Machine, dynamic bool) []byte {
	t.Helper()
	const headerSize, progSize = 64, 56
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     headerSize,
		Ehsize:    headerSize,
		Phentsize: progSize,
		Phnum:     1,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	prog := elf.Prog64{Type: uint32(elf.PT_LOAD)}
	if dynamic {
		prog.Type = uint32(elf.PT_INTERP)
	}
	var buf bytes.Buffer
	for _, v := range []any{hdr, prog} {
		if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func options(arch string) Options {
	return Options{
		Arch:     arch,
		Version:  "v1.2.3",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Source:   "https://github.com/crossplane-contrib/function-canary-route",
		Created:  time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
	}
}

func TestBuild(t *testing.T) {
	cases := map[string]struct {
		reason  string
		binary  []byte
		arch    string
		wantErr string
	}{
		"StaticAMD64": {reason: "A static binary of the image's architecture is what the image holds.", binary: fakeELF(t, elf.EM_X86_64, false), arch: "amd64"},
		"StaticARM64": {reason: "Likewise for arm64.", binary: fakeELF(t, elf.EM_AARCH64, false), arch: "arm64"},
		"WrongArch":   {reason: "An amd64 binary in an arm64 image would not start.", binary: fakeELF(t, elf.EM_X86_64, false), arch: "arm64", wantErr: "built for EM_X86_64, not arm64"},
		"Dynamic":     {reason: "The image has no dynamic loader or libc.", binary: fakeELF(t, elf.EM_X86_64, true), arch: "amd64", wantErr: "dynamically linked"},
		"NotELF":      {reason: "Only a linux executable can be the entrypoint.", binary: []byte("#!/bin/sh\n"), arch: "amd64", wantErr: "not a linux executable"},
		"UnknownArch": {reason: "Only the architectures the image knows.", binary: fakeELF(t, elf.EM_MIPS, false), arch: "mips", wantErr: "unsupported architecture"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, err := Build(tc.binary, options(tc.arch))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nBuild: want an error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nBuild: %v", tc.reason, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			created := v1.Time{Time: options(tc.arch).Created}
			want := v1.ConfigFile{
				Architecture: tc.arch,
				OS:           "linux",
				Created:      created,
				Config: v1.Config{
					Entrypoint:   []string{"/function"},
					User:         "65532:65532",
					WorkingDir:   "/",
					ExposedPorts: map[string]struct{}{"9443/tcp": {}},
					Labels: map[string]string{
						"org.opencontainers.image.source":   "https://github.com/crossplane-contrib/function-canary-route",
						"org.opencontainers.image.version":  "v1.2.3",
						"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
						"org.opencontainers.image.created":  "2026-12-02T10:00:00Z",
						"org.opencontainers.image.licenses": "Apache-2.0",
						"org.opencontainers.image.title":    "function-canary-route",
					},
				},
				History: []v1.History{{Created: created, CreatedBy: "hack/image: the function's static binary at /function"}},
			}
			// The diff ID is the layer's, checked by the round trip below.
			cf.RootFS = v1.RootFS{}
			if diff := cmp.Diff(want, *cf); diff != "" {
				t.Errorf("%s\nconfig: -want, +got:\n%s", tc.reason, diff)
			}

			// Written and read back, as crossplane xpkg build reads it.
			path := filepath.Join(t.TempDir(), "image.tar")
			digest, err := Write(path, img, "v1.2.3")
			if err != nil {
				t.Fatal(err)
			}
			back, err := tarball.ImageFromPath(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := back.Digest(); err != nil || got != digest {
				t.Errorf("Write returned digest %s, the tarball holds %s (%v)", digest, got, err)
			}
			layers, err := back.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("want one layer, got %d (%v)", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got, tc.binary) {
				t.Errorf("the layer does not hold the binary")
			}
		})
	}
}

// TestBuildIsReproducible checks that the digest depends on the inputs
// alone: the same binary and options give the same digest at any time, and
// another creation time another digest.
func TestBuildIsReproducible(t *testing.T) {
	bin := fakeELF(t, elf.EM_X86_64, false)
	digest := func(o Options) v1.Hash {
		t.Helper()
		img, err := Build(bin, o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Write(filepath.Join(t.TempDir(), "image.tar"), img, o.Version)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest(options("amd64"))
	if again := digest(options("amd64")); again != first {
		t.Errorf("two builds of the same inputs: %s and %s", first, again)
	}
	later := options("amd64")
	later.Created = later.Created.Add(time.Second)
	if other := digest(later); other == first {
		t.Errorf("builds at two creation times share digest %s: a timestamp is not set", first)
	}
}

func TestRunFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "missing")
	cases := map[string]struct {
		reason  string
		args    []string
		wantErr string
	}{
		"NoBinary":   {reason: "The binary is required.", args: []string{"-output=x", "-arch=amd64", "-version=v1.0.0", "-revision=abc"}, wantErr: "-binary is required"},
		"NoRevision": {reason: "The revision label is required.", args: []string{"-binary=" + bin, "-output=x", "-arch=amd64", "-version=v1.0.0"}, wantErr: "-revision is required"},
		"Extra":      {reason: "No positional arguments.", args: []string{"extra"}, wantErr: "unexpected arguments"},
		"Missing":    {reason: "A binary that does not exist.", args: []string{"-binary=" + bin, "-output=x", "-arch=amd64", "-version=v1.0.0", "-revision=abc"}, wantErr: "cannot read the function's binary"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nrun(%q): want an error containing %q, got %v", tc.reason, tc.args, tc.wantErr, err)
			}
		})
	}
}
