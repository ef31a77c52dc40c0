package live

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// The kubectl plugin (cmd/kubectl-canaryroute), live: built once, run as
// an operator runs it, a process of its own with the harness's kubeconfig,
// it alone steers each rollout once the CanaryRoute is created. After each
// command the test checks what the command wrote (the spec field, owned by
// the field manager kubectl-canaryroute), that the rollout moved as the
// contract says, what `get` draws of it, and how the real gateway splits
// the requests.

// pluginManager is the plugin's field manager.
const pluginManager = "kubectl-canaryroute"

// pluginTimeout bounds one command of the plugin.
const pluginTimeout = time.Minute

// A plugin is the plugin's binary, run against the control plane of the
// tests.
type plugin struct {
	bin string
	// cacheDir is its discovery cache: the test's own, not ~/.kube/cache.
	cacheDir string
}

// buildPlugin builds cmd/kubectl-canaryroute into a folder of the test.
func buildPlugin(t *testing.T) plugin {
	t.Helper()
	dir := t.TempDir()
	p := plugin{bin: filepath.Join(dir, "kubectl-canaryroute"), cacheDir: filepath.Join(dir, "cache")}
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", p.bin, "./cmd/kubectl-canaryroute")
	cmd.Dir = env.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kubectl-canaryroute: %v\n%s", err, out)
	}
	t.Logf("built kubectl-canaryroute in %s", time.Since(start).Round(100*time.Millisecond))
	return p
}

// run runs `kubectl canaryroute args...` with the harness's kubeconfig, and
// returns its stdout and stderr; the test fails if it fails.
func (p plugin) run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pluginTimeout)
	defer cancel()
	args = append([]string{"--kubeconfig", env.cp.Kubeconfig, "--cache-dir", p.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, p.bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl canaryroute %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// tree runs `get` and returns the fields of its head (Phase, Reason, ...)
// by name.
func (p plugin) tree(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	out, _ := p.run(t, "get", name, "-n", ns)
	fields := map[string]string{}
	for line := range strings.Lines(out) {
		if line == "\n" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if ok && !strings.HasPrefix(k, " ") {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// ownedBy lists the fields a manager owns by apply in an object, as
// managedFields paths (.spec.traffic.abort), sorted.
func ownedBy(u *unstructured.Unstructured, manager string) ([]string, error) {
	var out []string
	for _, e := range u.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("cannot read the managed fields of %s: %w", manager, err)
		}
		s.Leaves().Iterate(func(p fieldpath.Path) { out = append(out, p.String()) })
	}
	slices.Sort(out)
	return out, nil
}

// A pluginStep is one command of the plugin and what it must have done.
type pluginStep struct {
	// reason says what the step pins.
	reason string
	// args are the command and its arguments; the test adds the
	// CanaryRoute's name and namespace.
	args []string
	// stdout and stderr are the command's output, exactly.
	stdout, stderr string
	// path and value are the spec field the command writes, as the
	// XR holds it.
	path  []string
	value any
	// owned are the fields the plugin's field manager owns afterwards:
	// every field it wrote so far, since each apply repeats them.
	owned []string
	// rollout is the XR's rollout awaited after the command.
	rollout controlplane.Check
	// weight is the canary's weight in the route once the rollout moved.
	weight int64
	// tree are fields of `get`'s tree once the rollout moved.
	tree map[string]string
	// answers is how a batch of requests through the gateway is answered
	// once the rollout moved.
	answers map[string]int
	// wait bounds how long the rollout takes to get there; 0 is settle.
	wait time.Duration
}

// steer runs each step in order against the CanaryRoute name in ns, whose
// route is name too and whose canary's proxy Service is name-canary.
func steer(t *testing.T, p plugin, ns, name string, probe probe, steps []pluginStep) {
	t.Helper()
	for _, s := range steps {
		command := "kubectl canaryroute " + strings.Join(s.args, " ")
		args := append(slices.Clone(s.args[:1]), name, "-n", ns)
		args = append(args, s.args[1:]...)
		stdout, stderr := p.run(t, args...)
		if diff := cmp.Diff(s.stdout, stdout); diff != "" {
			t.Errorf("%s\n%s: stdout: -want, +got:\n%s", s.reason, command, diff)
		}
		if diff := cmp.Diff(s.stderr, stderr); diff != "" {
			t.Errorf("%s\n%s: stderr: -want, +got:\n%s", s.reason, command, diff)
		}

		u, why := get(t.Context(), gvkCanaryRoute, ns, name)
		if u == nil {
			t.Fatal(why)
		}
		got, _, err := unstructured.NestedFieldNoCopy(u.Object, append([]string{"spec"}, s.path...)...)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.value, got); diff != "" {
			t.Errorf("%s\n%s: spec.%s: -want, +got:\n%s", s.reason, command, strings.Join(s.path, "."), diff)
		}
		owned, err := ownedBy(u, pluginManager)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.owned, owned); diff != "" {
			t.Errorf("%s\n%s: the fields %s owns: -want, +got:\n%s", s.reason, command, pluginManager, diff)
		}

		wait := s.wait
		if wait == 0 {
			wait = settle
		}
		await(t, wait, s.reason+"\nafter "+command, s.rollout)
		await(t, settle, fmt.Sprintf("%s\nafter %s: the route at %d%% for the canary", s.reason, command, s.weight),
			routeAt(gvkHTTPRoute, ns, name, name+"-canary", s.weight))
		tree := p.tree(t, ns, name)
		for k, want := range s.tree {
			if tree[k] != want {
				t.Errorf("%s\n%s: kubectl canaryroute get draws %s: %q, want %q", s.reason, command, k, tree[k], want)
			}
		}
		awaitAnswers(t, command, probe, s.answers)
	}
}

// promotedAt checks that the XR's rollout Succeeded at 100% with a
// promote of revision.
func promotedAt(ns, name, revision string) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		promoted, _, _ := unstructured.NestedString(u.Object, "status", "rollout", "promoted")
		return r.Phase == "Succeeded" && r.CanaryWeight == 100 && promoted == revision, fmt.Sprintf("%s; promoted %q", xrState(u), promoted)
	}
}

// awaitingApprovalAt checks that the XR's rollout of a revision waits for
// an approval at a step and weight.
func awaitingApprovalAt(ns, name, revision string, step, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		awaiting, _, _ := unstructured.NestedBool(u.Object, "status", "rollout", "awaitingApproval")
		return r.Phase == "Progressing" && r.Reason == "AwaitingApproval" && awaiting && r.Revision == revision &&
			r.Step != nil && *r.Step == step && r.CanaryWeight == weight, xrState(u)
	}
}

// TestPlugin builds the plugin once and drives two rollouts with it alone:
// a progressive rollout through an approval step, a promote, a new revision
// and an abort; and a release promoted, then rolled back.
func TestPlugin(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	p := buildPlugin(t)

	t.Run("ApprovePromoteAbort", func(t *testing.T) {
		t.Parallel()
		pluginRollout(t, p)
	})
	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		pluginRollback(t, p)
	})
}

// pluginRollout approves step 0 of v2 (20%, an approval step) and promotes
// v2 from step 1 (50%, a pause of 10 minutes) to the end; then sets the
// revision to v3, whose step 0 waits for its own approval, and aborts it.
func pluginRollout(t *testing.T, p plugin) {
	ns := newNamespace(t, "plugin")
	xr := trafficXR(t, ns, freePort(t), "traffic: {steps: [{weight: 20, approval: true}, {weight: 50, pause: 10m}, {weight: 100}]}")
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	probe := probe{host: hostname(ns)}

	await(t, 2*time.Minute, "v2 awaiting approval at step 0 (20%)", awaitingApprovalAt(ns, "web", "v2", 0, 20))
	if tree := p.tree(t, ns, "web"); tree["Approval"] != "awaited: kubectl canaryroute approve web -n "+ns {
		t.Errorf("kubectl canaryroute get draws Approval: %q, want the command that approves", tree["Approval"])
	}
	awaitAnswers(t, "step 0 (20%)", probe, split(20))

	approval := []string{".spec.traffic.approval.revision", ".spec.traffic.approval.step"}
	promote := []string{".spec.traffic.promote.revision"}
	revision := []string{".spec.canary.revision"}
	abort := []string{".spec.traffic.abort"}
	owned := func(fields ...[]string) []string {
		out := slices.Concat(fields...)
		slices.Sort(out)
		return out
	}
	steer(t, p, ns, "web", probe, []pluginStep{
		{
			reason:  "approve writes traffic.approval for the current revision and step: step 0 passes, and step 1 holds on its pause",
			args:    []string{"approve"},
			stdout:  "canaryroute.platform.example.org/web approved: spec.traffic.approval: {revision: v2, step: 0}\n",
			path:    []string{"traffic", "approval"},
			value:   map[string]any{"revision": "v2", "step": int64(0)},
			owned:   owned(approval),
			rollout: xrAt(gvkCanaryRoute, ns, "web", "Progressing", 1, 50),
			weight:  50,
			tree:    map[string]string{"Phase": "Progressing", "Revision": "v2", "Weights": "primary 50%, canary 50%"},
			answers: split(50),
		},
		{
			reason:  "promote writes traffic.promote for the current revision: the rollout skips step 1's pause and ends at the last step; the approval stays",
			args:    []string{"promote"},
			stdout:  "canaryroute.platform.example.org/web promoted: spec.traffic.promote: {revision: v2}\n",
			path:    []string{"traffic", "promote"},
			value:   map[string]any{"revision": "v2"},
			owned:   owned(approval, promote),
			rollout: promotedAt(ns, "web", "v2"),
			weight:  100,
			tree:    map[string]string{"Phase": "Succeeded", "Revision": "v2", "Promoted": "v2", "Weights": "primary 0%, canary 100%"},
			answers: only(canary),
		},
		{
			reason:  "set-revision writes canary.revision, taken from the manager that created the XR: v3 starts at step 0 and waits for an approval of its own",
			args:    []string{"set-revision", "v3"},
			stdout:  "canaryroute.platform.example.org/web set to revision v3: spec.canary.revision: v3\n",
			stderr:  "Note: CanaryRoute " + ns + "/web has no spec.release: the rollout of v3 restarts at step 0 on the same sides (spec.canary's backend and selector do not change); deploy v3 behind them yourself.\n",
			path:    []string{"canary", "revision"},
			value:   "v3",
			owned:   owned(approval, promote, revision),
			rollout: awaitingApprovalAt(ns, "web", "v3", 0, 20),
			weight:  20,
			tree:    map[string]string{"Phase": "Progressing", "Reason": "AwaitingApproval", "Revision": "v3", "Weights": "primary 80%, canary 20%"},
			answers: split(20),
		},
		{
			reason:  "abort writes traffic.abort: the canary gets no request; the fields written before stay",
			args:    []string{"abort"},
			stdout:  "canaryroute.platform.example.org/web aborted: spec.traffic.abort: true\n",
			path:    []string{"traffic", "abort"},
			value:   true,
			owned:   owned(approval, promote, revision, abort),
			rollout: phase(ns, "web", "Aborted", 0),
			tree:    map[string]string{"Phase": "Aborted", "Revision": "v3", "Weights": "primary 100%, canary 0%"},
			answers: only(primary),
		},
	})
}

// pluginRollback releases v1, releases v2 through its steps with
// set-revision, then rolls back to v1 with rollback, which names the
// revision stable before v2: inside the rollback window, v1 goes straight
// to its promotion.
func pluginRollback(t *testing.T, p plugin) {
	ns := newNamespace(t, "pluginrb")
	log := watchLog(t, ns, gvkService)
	startKubelet(t, ns)
	xr := releaseXR(t, ns, freePort(t), "v1", `
release: {scaleDownDelay: 10m}
traffic:
  steps: [{weight: 50, pause: 1s}, {weight: 100}]
  rollbackWindow: 2`)
	apply(t, xr)
	serveRevisions(t, ns, releasePrimary, log)
	serveRevisions(t, ns, releaseCanary, log)
	probe := probe{host: hostname(ns)}

	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	awaitAnswers(t, "v1 released", probe, revisions(map[string]int{"v1": 100}))

	revision := []string{".spec.canary.revision"}
	steer(t, p, ns, releaseRoute, probe, []pluginStep{
		{
			reason:  "set-revision starts a release of v2, which goes through its steps to its promotion",
			args:    []string{"set-revision", "v2"},
			stdout:  "canaryroute.platform.example.org/web set to revision v2: spec.canary.revision: v2\n",
			stderr:  "Note: v2 rolls out through the steps.\n",
			path:    []string{"canary", "revision"},
			value:   "v2",
			owned:   revision,
			rollout: releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"),
			tree:    map[string]string{"Phase": "Succeeded", "Reason": "Promoted", "Revision": "v2"},
			answers: revisions(map[string]int{"v2": 100}),
		},
		{
			reason:  "rollback writes canary.revision back to the revision stable before, v1, which the rollback window promotes without a step",
			args:    []string{"rollback"},
			stdout:  "canaryroute.platform.example.org/web rolled back to v1: spec.canary.revision: v1\n",
			stderr:  "Note: v1 is in the rollback window (2): it goes straight to its promotion, without steps, if unchanged since.\n",
			path:    []string{"canary", "revision"},
			value:   "v1",
			owned:   revision,
			rollout: releaseAt(ns, "Succeeded", "RolledBack", -1, 0, "v1"),
			tree:    map[string]string{"Phase": "Succeeded", "Reason": "RolledBack", "Revision": "v1"},
			answers: revisions(map[string]int{"v1": 100}),
			// A rollback is a chain of moves, each on a reconcile of its
			// own (the canary Service to v1 once drained, the route to it,
			// the settle, the primary Service, the route back): in a full
			// parallel run Crossplane's watch circuit breaker spaces the
			// reconciles of a CanaryRoute written this often (Responsive
			// False, WatchCircuitOpen), and 90 s was seen to run out.
			wait: 3 * time.Minute,
		},
	})

	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	if diff := cmp.Diff(releaseStatus{Stable: "v1", History: []string{"v2"}, Retiring: "v2"}, releaseOf(u)); diff != "" {
		t.Errorf("status.release once rolled back: -want, +got:\n%s", diff)
	}
}
