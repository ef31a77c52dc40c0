package crdschema

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	errGoEnv        = "cannot find the module root with go env GOMOD"
	errNotInModule  = "not inside a Go module"
	errGoList       = "cannot find sigs.k8s.io/gateway-api with go list -m"
	errModuleNotDL  = "sigs.k8s.io/gateway-api is not in the module cache; run go mod download sigs.k8s.io/gateway-api"
	errFmtChannel   = "unknown Gateway API channel %q"
	errFmtLoadGWAPI = "cannot load the Gateway API CRDs of the %s channel"
)

// gatewayAPIModule is the module whose CRDs Gateway API objects are checked
// against: the one go.mod requires, so the CRDs always match the Go types.
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// A Channel is a Gateway API release channel. The experimental channel
// serves more versions and fields than the standard one, and some of its
// rules differ.
type Channel string

// Gateway API release channels, named as their CRD folders.
const (
	Standard     Channel = "standard"
	Experimental Channel = "experimental"
)

// Channels are both Gateway API release channels.
var Channels = []Channel{Standard, Experimental} //nolint:gochecknoglobals // A constant list.

var (
	moduleDirOnce sync.Once
	moduleDir     string
	errModuleDir  error

	// channels is never written after init, so concurrent loads of
	// different channels only touch their own state.
	channels = map[Channel]*channelState{Standard: {}, Experimental: {}} //nolint:gochecknoglobals // Load once per process.
)

type channelState struct {
	once sync.Once
	set  *Set
	err  error
}

// GatewayAPIDir returns the directory of the sigs.k8s.io/gateway-api module
// that go.mod requires, found once per process with `go list -m` run from the
// module root.
func GatewayAPIDir() (string, error) {
	moduleDirOnce.Do(func() {
		moduleDir, errModuleDir = findModuleDir(gatewayAPIModule)
	})
	return moduleDir, errModuleDir
}

func findModuleDir(module string) (string, error) {
	gomod, err := run("", "go", "env", "GOMOD")
	if err != nil {
		return "", fmt.Errorf(errGoEnv+": %w", err)
	}
	if gomod == "" || gomod == "/dev/null" {
		return "", fmt.Errorf(errGoEnv+": %s", errNotInModule)
	}
	dir, err := run(filepath.Dir(gomod), "go", "list", "-m", "-f", "{{.Dir}}", module)
	if err != nil {
		return "", fmt.Errorf(errGoList+": %w", err)
	}
	if dir == "" {
		return "", fmt.Errorf("%s", errModuleNotDL)
	}
	return dir, nil
}

func run(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...) //nolint:gosec // Runs the go command with fixed arguments.
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// LoadGatewayAPI returns the CRDs of a Gateway API release channel, from
// config/crd/<channel> of the module that go.mod requires. They are loaded
// once per process and channel; the Set is shared.
func LoadGatewayAPI(c Channel) (*Set, error) {
	st, ok := channels[c]
	if !ok {
		return nil, fmt.Errorf(errFmtChannel, c)
	}
	st.once.Do(func() {
		dir, err := GatewayAPIDir()
		if err != nil {
			st.err = err
			return
		}
		st.set, st.err = LoadDir(filepath.Join(dir, "config", "crd", string(c)))
	})
	if st.err != nil {
		return nil, fmt.Errorf(errFmtLoadGWAPI+": %w", c, st.err)
	}
	return st.set, nil
}

// GatewayAPI is LoadGatewayAPI for tests: it fails the test on error.
func GatewayAPI(t testing.TB, c Channel) *Set {
	t.Helper()
	s, err := LoadGatewayAPI(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
