package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The golden files are reviewed output, not a snapshot to refresh: after a
// change that should alter the tree, run
//
//	go test ./cmd/kubectl-canaryroute -run TestTree -update
//
// and read every line of git diff cmd/kubectl-canaryroute/testdata before
// committing.
var update = flag.Bool("update", false, "rewrite testdata/*.golden with the trees drawn")

// treeNow is when the golden trees are drawn.
var treeNow = time.Date(2026, 12, 2, 10, 3, 0, 0, time.UTC)

func TestTree(t *testing.T) {
	cases := map[string]struct {
		reason string
	}{
		"progressing": {
			reason: "A rollout at a step: step of steps with the step's weight, pause and analysis, the weights, when the next step is due, the analysis verdict so far, the running analysis Job, the route's weights by backend (the canary by status.rollout.canaryBackends) and its parent's verdict, what each proxy Service selects, the last measurement of the metric, the events.",
		},
		"awaiting-approval": {
			reason: "An approval step that waits says so, with the command that approves it.",
		},
		"paused": {
			reason: "A paused rollout shows the phase Paused at its step, and the weight it holds.",
		},
		"promoting": {
			reason: "A release promoting: every request on the canary, the primary Service still on the stable revision until the settle time, both revisions at full replicas.",
		},
		"succeeded": {
			reason: "A rollout that succeeded at its last step, without a release.",
		},
		"failed": {
			reason: "A claim whose metric failed the rollout: the claim names its cluster XR, the canary at 0, the failed measurements, the ReferenceGrant the cross-namespace canary needed, the Warning event.",
		},
		"aborted": {
			reason: "An aborted rollout: weight 0 and the reason; a parent that has not yet reported on the route's current generation says so.",
		},
		"retiring": {
			reason: "A release just promoted: the new stable revision, the retiring one with when it gets no replicas, the history and the rollback window, each revision's Deployment.",
		},
		"fine-weights": {
			reason: "Finer weights show as written: the step at 0.1%, the weights 99.9 and 0.1, the route's weights out of 10,000 (9990 and 10).",
		},
		"fresh": {
			reason: "A CanaryRoute the function has not run on yet: no status, nothing composed.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := loadSnapshot(t, filepath.Join("testdata", name+".yaml"))
			var b bytes.Buffer
			if err := renderTree(&b, s, treeNow); err != nil {
				t.Fatalf("%s\nrenderTree(): %v", tc.reason, err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it, then review it)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s\nrenderTree(): -%s, +got:\n%s", tc.reason, golden, diff)
			}
		})
	}
}

// loadSnapshot reads a snapshot from a file of YAML documents: the first is
// the object the operator named; the CanaryRoute kinds are the XR and the
// claim, Events the events, and every other object is composed.
func loadSnapshot(t *testing.T, path string) snapshot {
	t.Helper()
	objs := loadObjects(t, path)
	s := snapshot{named: objs[0]}
	for _, o := range objs {
		k, ok := kindOf(o.GetKind())
		switch {
		case ok && k.role == roleClaim:
			s.claim = o
		case ok:
			s.xr = o
		case o.GetKind() == "Event":
			s.events = append(s.events, o)
		default:
			s.composed = append(s.composed, o)
		}
	}
	return s
}

// loadObjects reads the objects of a file of YAML documents, decoded as
// client-go decodes them (whole numbers are int64).
func loadObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(j) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no object", path)
	}
	return out
}

func TestRelative(t *testing.T) {
	cases := map[string]struct {
		reason string
		at     time.Time
		want   string
	}{
		"Future": {reason: "A time to come is in so long.", at: treeNow.Add(3 * time.Minute), want: "in 3m"},
		"Past":   {reason: "A time gone is so long ago.", at: treeNow.Add(-90 * time.Second), want: "90s ago"},
		"Now":    {reason: "Within a second is now, never 'in 0s'.", at: treeNow.Add(300 * time.Millisecond), want: "now"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, relative(tc.at, treeNow)); diff != "" {
				t.Errorf("%s\nrelative(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTreeNamesEveryReference pins that a reference whose object is gone
// is drawn as not found, never left out.
func TestTreeNamesEveryReference(t *testing.T) {
	s := loadSnapshot(t, filepath.Join("testdata", "progressing.yaml"))
	s.composed = s.composed[1:] // The route is gone.
	var b strings.Builder
	if err := renderTree(&b, s, treeNow); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "HTTPRoute demo/web: not found") {
		t.Errorf("renderTree() of a snapshot without its route:\n%s\nwant the line HTTPRoute demo/web: not found", b.String())
	}
}

// TestTreeInDocs pins that the tree docs/kubectl-plugin.md shows is the
// golden tree of testdata/progressing.golden, as get draws it.
func TestTreeInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "kubectl-plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "```\nName:")
	if !ok {
		t.Fatal("docs/kubectl-plugin.md holds no tree (a fenced block starting with Name:)")
	}
	shown, _, _ := strings.Cut("Name:"+after, "```")
	want, err := os.ReadFile(filepath.Join("testdata", "progressing.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), shown); diff != "" {
		t.Errorf("docs/kubectl-plugin.md's tree: -testdata/progressing.golden, +docs:\n%s", diff)
	}
}
