package xr

// spec.release's workload names: every revision's must be an object name.

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// releaseObj is a namespaced CanaryRoute of a release with a workload, at
// a canary revision.
func releaseObj(t *testing.T, revision string) map[string]any {
	t.Helper()
	y := `
apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata: {name: podinfo, namespace: test}
spec:
  parentRefs: [{name: gateway}]
  port: 9898
  release:
    selector: {app: podinfo}
    revisionLabel: version
    replicas: 4
    workload: {name: "podinfo-{{revision}}"}
  canary: {revision: "` + revision + `"}
  traffic:
    steps: [{weight: 10, pause: 1m}, {weight: 100}]
`
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestWorkloadNameOfRevisionChecked: a revision that is a valid label
// value but no valid part of an object name (upper case, an underscore) is
// a Fatal naming spec.canary.revision when a workload is named after it:
// the function would look for an object no API server admits.
func TestWorkloadNameOfRevisionChecked(t *testing.T) {
	for _, revision := range []string{"V2", "v_2", "release_2026.12"} {
		t.Run(revision, func(t *testing.T) {
			_, err := Parse(releaseObj(t, revision), nil)
			if err == nil || !strings.Contains(err.Error(), "spec.canary.revision") {
				t.Errorf("canary.revision %q makes the workload name %q, which is no valid object name: got error %v, want a Fatal naming spec.canary.revision",
					revision, "podinfo-"+revision, err)
			}
		})
	}
}
