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
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// The smallest headers of each executable format that debug/elf,
// debug/macho and debug/pe read: enough for the checks, which read nothing
// else.

// fakeELF is a 64-bit little-endian ELF header of a type for a machine,
// with one program header, PT_INTERP when it should look dynamically
// linked.
func fakeELF(t *testing.T, machine elf.Machine, typ elf.Type, dynamic bool) []byte {
	t.Helper()
	const headerSize, progSize = 64, 56
	hdr := elf.Header64{
		Type:      uint16(typ),
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
	return encode(t, hdr, prog)
}

// fakeMachO is a 64-bit Mach-O header of a type for a CPU, without load
// commands.
func fakeMachO(t *testing.T, cpu macho.Cpu, typ macho.Type) []byte {
	t.Helper()
	return encode(t, macho.FileHeader{Magic: macho.Magic64, Cpu: cpu, Type: typ}, uint32(0))
}

// fakePE is a DOS stub pointing at a PE header for a machine with these
// characteristics, without sections or an optional header.
func fakePE(t *testing.T, machine, characteristics uint16) []byte {
	t.Helper()
	// debug/pe reads the first 96 bytes as the DOS header.
	const peOffset = 0x80
	dos := make([]byte, peOffset)
	copy(dos, "MZ")
	binary.LittleEndian.PutUint32(dos[0x3c:], peOffset)
	return encode(t, dos, []byte("PE\x00\x00"), pe.FileHeader{Machine: machine, Characteristics: characteristics})
}

func encode(t *testing.T, values ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, v := range values {
		if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

var (
	created = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	opts    = Options{Version: "v1.2.3", URL: "https://example.org/releases/v1.2.3/", Homepage: "https://example.org", Created: created}
	license = []byte("Apache License\n")
	exe     = uint16(pe.IMAGE_FILE_EXECUTABLE_IMAGE | pe.IMAGE_FILE_LARGE_ADDRESS_AWARE)
)

// entry is what the test reads of an archive's entry.
type entry struct {
	Name    string
	Mode    os.FileMode
	ModTime time.Time
	Data    string
}

// entries reads an archive of Pack's.
func entries(t *testing.T, a Archive) []entry {
	t.Helper()
	var out []entry
	if strings.HasSuffix(a.Name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(a.Data), int64(len(a.Data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, entry{Name: f.Name, Mode: f.Mode(), ModTime: f.Modified.UTC(), Data: string(data)})
		}
		return out
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.Data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s is owned by %d:%d (%s:%s), want root", a.Name, h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{Name: h.Name, Mode: h.FileInfo().Mode(), ModTime: h.ModTime.UTC(), Data: string(data)})
	}
}

func TestPack(t *testing.T) {
	type want struct {
		name    string
		entries func(bin []byte) []entry
		err     string
	}
	unix := func(bin []byte) []entry {
		return []entry{
			{Name: "kubectl-canaryroute", Mode: 0o755, ModTime: created, Data: string(bin)},
			{Name: "LICENSE", Mode: 0o644, ModTime: created, Data: string(license)},
		}
	}
	windows := func(bin []byte) []entry {
		return []entry{
			{Name: "kubectl-canaryroute.exe", Mode: 0o755, ModTime: created, Data: string(bin)},
			{Name: "LICENSE", Mode: 0o644, ModTime: created, Data: string(license)},
		}
	}
	cases := map[string]struct {
		reason   string
		platform string
		binary   []byte
		want     want
	}{
		"LinuxAMD64": {
			reason:   "A static ELF executable for x86-64 is archived as a .tar.gz with the license.",
			platform: "linux/amd64",
			binary:   fakeELF(t, elf.EM_X86_64, elf.ET_EXEC, false),
			want:     want{name: "kubectl-canaryroute-v1.2.3-linux-amd64.tar.gz", entries: unix},
		},
		"LinuxARM64": {
			reason:   "And one for AArch64.",
			platform: "linux/arm64",
			binary:   fakeELF(t, elf.EM_AARCH64, elf.ET_EXEC, false),
			want:     want{name: "kubectl-canaryroute-v1.2.3-linux-arm64.tar.gz", entries: unix},
		},
		"DarwinAMD64": {
			reason:   "A Mach-O executable for x86-64.",
			platform: "darwin/amd64",
			binary:   fakeMachO(t, macho.CpuAmd64, macho.TypeExec),
			want:     want{name: "kubectl-canaryroute-v1.2.3-darwin-amd64.tar.gz", entries: unix},
		},
		"DarwinARM64": {
			reason:   "A Mach-O executable for Apple silicon.",
			platform: "darwin/arm64",
			binary:   fakeMachO(t, macho.CpuArm64, macho.TypeExec),
			want:     want{name: "kubectl-canaryroute-v1.2.3-darwin-arm64.tar.gz", entries: unix},
		},
		"WindowsAMD64": {
			reason:   "A PE executable for x86-64 is archived as a .zip, its binary named .exe.",
			platform: "windows/amd64",
			binary:   fakePE(t, pe.IMAGE_FILE_MACHINE_AMD64, exe),
			want:     want{name: "kubectl-canaryroute-v1.2.3-windows-amd64.zip", entries: windows},
		},
		"ELFOfAnotherMachine": {
			reason:   "An archive never claims a platform its binary cannot run on.",
			platform: "linux/arm64",
			binary:   fakeELF(t, elf.EM_X86_64, elf.ET_EXEC, false),
			want:     want{err: "the linux/arm64 binary: built for EM_X86_64, not EM_AARCH64"},
		},
		"DynamicELF": {
			reason:   "A binary built with cgo needs a loader and a libc that a machine may lack.",
			platform: "linux/amd64",
			binary:   fakeELF(t, elf.EM_X86_64, elf.ET_EXEC, true),
			want:     want{err: "dynamically linked"},
		},
		"SharedObject": {
			reason:   "A library is not a command.",
			platform: "linux/amd64",
			binary:   fakeELF(t, elf.EM_X86_64, elf.ET_DYN, false),
			want:     want{err: "not an executable (ET_DYN)"},
		},
		"LinuxBinaryForDarwin": {
			reason:   "macOS runs Mach-O only.",
			platform: "darwin/arm64",
			binary:   fakeELF(t, elf.EM_AARCH64, elf.ET_EXEC, false),
			want:     want{err: "the darwin/arm64 binary: cannot read it as Mach-O"},
		},
		"MachOOfAnotherCPU": {
			reason:   "An Intel binary is not an Apple silicon one.",
			platform: "darwin/arm64",
			binary:   fakeMachO(t, macho.CpuAmd64, macho.TypeExec),
			want:     want{err: "built for CpuAmd64, not CpuArm64"},
		},
		"MachODylib": {
			reason:   "A Mach-O library is not a command.",
			platform: "darwin/amd64",
			binary:   fakeMachO(t, macho.CpuAmd64, macho.TypeDylib),
			want:     want{err: "not an executable (Dylib)"},
		},
		"DLL": {
			reason:   "A DLL is not a command.",
			platform: "windows/amd64",
			binary:   fakePE(t, pe.IMAGE_FILE_MACHINE_AMD64, exe|pe.IMAGE_FILE_DLL),
			want:     want{err: "not an executable (PE characteristics 0x2022)"},
		},
		"PEOfAnotherMachine": {
			reason:   "An ARM64 binary is not an x86-64 one.",
			platform: "windows/amd64",
			binary:   fakePE(t, pe.IMAGE_FILE_MACHINE_ARM64, exe),
			want:     want{err: "built for PE machine 0xaa64, not PE machine 0x8664"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := platform(tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Pack([]Build{{Platform: p, Binary: tc.binary}}, license, opts)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("%s\nPack: want an error containing %q, got %v", tc.reason, tc.want.err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nPack: %v", tc.reason, err)
			}
			if len(got) != 1 {
				t.Fatalf("%s\nPack wrote %d archives, want 1", tc.reason, len(got))
			}
			a := got[0]
			if a.Name != tc.want.name {
				t.Errorf("%s\nthe archive's name: want %s, got %s", tc.reason, tc.want.name, a.Name)
			}
			if diff := cmp.Diff(tc.want.entries(tc.binary), entries(t, a)); diff != "" {
				t.Errorf("%s\nthe archive's entries: -want, +got:\n%s", tc.reason, diff)
			}
			sum := sha256.Sum256(a.Data)
			if a.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s\nthe archive's sha256 is %s, its bytes' %x", tc.reason, a.SHA256, sum)
			}
			again, err := Pack([]Build{{Platform: p, Binary: tc.binary}}, license, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again[0].Data, a.Data) {
				t.Errorf("%s\ntwo archives of the same binary differ: the release is not reproducible", tc.reason)
			}
		})
	}
}

func TestNewManifest(t *testing.T) {
	archives := []Archive{
		{Platform: platforms["linux/amd64"], Name: "kubectl-canaryroute-v1.2.3-linux-amd64.tar.gz", SHA256: "aa"},
		{Platform: platforms["windows/amd64"], Name: "kubectl-canaryroute-v1.2.3-windows-amd64.zip", SHA256: "bb"},
	}
	b, err := NewManifest(archives, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got KrewPlugin
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatalf("the manifest does not read back: %v\n%s", err, b)
	}
	want := KrewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   KrewMetadata{Name: "canaryroute"},
		Spec: KrewSpec{
			Version:          "v1.2.3",
			Homepage:         "https://example.org",
			ShortDescription: shortDescription,
			Description:      description + "\n",
			Caveats:          caveats + "\n",
			Platforms: []KrewPlatform{
				{
					Selector: KrewSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
					URI:      "https://example.org/releases/v1.2.3/kubectl-canaryroute-v1.2.3-linux-amd64.tar.gz",
					SHA256:   "aa",
					Files:    []KrewFile{{From: "kubectl-canaryroute", To: "."}, {From: "LICENSE", To: "."}},
					Bin:      "kubectl-canaryroute",
				},
				{
					Selector: KrewSelector{MatchLabels: map[string]string{"os": "windows", "arch": "amd64"}},
					URI:      "https://example.org/releases/v1.2.3/kubectl-canaryroute-v1.2.3-windows-amd64.zip",
					SHA256:   "bb",
					Files:    []KrewFile{{From: "kubectl-canaryroute.exe", To: "."}, {From: "LICENSE", To: "."}},
					Bin:      "kubectl-canaryroute.exe",
				},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the krew manifest: -want, +got:\n%s", diff)
	}
	// krew-index asks for a short description of at most 50 characters.
	if n := len(got.Spec.ShortDescription); n > 50 {
		t.Errorf("shortDescription is %d characters, want at most 50", n)
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	lic := filepath.Join(dir, "LICENSE")
	linux := filepath.Join(dir, "linux")
	macos := filepath.Join(dir, "macos")
	for path, data := range map[string][]byte{
		lic:   license,
		linux: fakeELF(t, elf.EM_X86_64, elf.ET_EXEC, false),
		macos: fakeMachO(t, macho.CpuArm64, macho.TypeExec),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flags := func(out string) []string {
		return []string{"-version=v1.2.3", "-url=https://example.org/v1.2.3", "-created=1796205600", "-license=" + lic, "-output=" + out}
	}
	cases := map[string]struct {
		reason string
		args   func(out string) []string
		want   []string
		err    string
	}{
		"Written": {
			reason: "Each archive, its sha256 and the manifest are written, and their paths printed.",
			args:   func(out string) []string { return append(flags(out), "linux/amd64="+linux, "darwin/arm64="+macos) },
			want: []string{
				"kubectl-canaryroute-v1.2.3-linux-amd64.tar.gz",
				"kubectl-canaryroute-v1.2.3-linux-amd64.tar.gz.sha256",
				"kubectl-canaryroute-v1.2.3-darwin-arm64.tar.gz",
				"kubectl-canaryroute-v1.2.3-darwin-arm64.tar.gz.sha256",
				"canaryroute.yaml",
			},
		},
		"UnknownPlatform": {
			reason: "Only the platforms whose binaries it can check.",
			args:   func(out string) []string { return append(flags(out), "plan9/amd64="+linux) },
			err:    `unsupported platform "plan9/amd64"`,
		},
		"Twice": {
			reason: "One archive a platform.",
			args:   func(out string) []string { return append(flags(out), "linux/amd64="+linux, "linux/amd64="+linux) },
			err:    "platform linux/amd64 given twice",
		},
		"NoBinary": {
			reason: "OS/ARCH=BINARY.",
			args:   func(out string) []string { return append(flags(out), "linux/amd64") },
			err:    `invalid argument "linux/amd64"`,
		},
		"NoPlatforms": {
			reason: "A release of nothing is a mistake.",
			args:   flags,
			err:    "no OS/ARCH=BINARY given",
		},
		"NoURL": {
			reason: "The manifest cannot name the archives without it.",
			args: func(out string) []string {
				return []string{"-version=v1.2.3", "-license=" + lic, "-output=" + out, "linux/amd64=" + linux}
			},
			err: "-url is required",
		},
		"WrongBinary": {
			reason: "Nothing is written when a binary is not of its platform.",
			args:   func(out string) []string { return append(flags(out), "linux/amd64="+macos) },
			err:    "the linux/amd64 binary: cannot read it as ELF",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			var stdout bytes.Buffer
			err := run(tc.args(out), &stdout)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s\nrun: want an error containing %q, got %v", tc.reason, tc.err, err)
				}
			} else if err != nil {
				t.Fatalf("%s\nrun: %v", tc.reason, err)
			}
			paths := strings.Fields(stdout.String())
			printed := make([]string, 0, len(paths))
			for _, p := range paths {
				printed = append(printed, strings.TrimPrefix(p, out+string(filepath.Separator)))
			}
			if diff := cmp.Diff(tc.want, printed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nthe paths printed: -want, +got:\n%s", tc.reason, diff)
			}
			files, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tc.want) {
				t.Errorf("%s\nwrote %d files into -output, want %d (%v)", tc.reason, len(files), len(tc.want), tc.want)
			}
			for _, name := range tc.want {
				if !strings.HasSuffix(name, ".sha256") {
					continue
				}
				b, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				archive, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(name, ".sha256")))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(archive)
				if want := hex.EncodeToString(sum[:]) + "  " + strings.TrimSuffix(name, ".sha256") + "\n"; string(b) != want {
					t.Errorf("%s\n%s: want %q (sha256sum -c reads it), got %q", tc.reason, name, want, b)
				}
			}
		})
	}
}
