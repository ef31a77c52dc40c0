package admission

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the package light: the function runs it on every
// pipeline run, so it must not pull in the API server or a CEL runtime.
func TestDependencies(t *testing.T) {
	forbidden := []string{
		"k8s.io/apiextensions-apiserver",
		"k8s.io/apiserver",
		"github.com/google/cel-go",
		"cel.dev/expr",
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("package admission depends on %s, which is forbidden (%s)", dep, f)
			}
		}
	}
}
