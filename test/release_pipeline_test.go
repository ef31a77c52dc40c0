package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The release example's pipeline attacked at its seams: the release
// example (mid-release, 6.7.0 stable, 6.7.1 at step 0) rendered with one
// thing changed, through both functions, as Crossplane would run them.

// releaseOutcome is what a render of the release pipeline composed: the
// revision each proxy Service selects, each Deployment's replicas by
// revision, the XR's rollout phase and reason and its stable revision; or
// the Fatal that stopped it.
type releaseOutcome struct {
	Fatal    string
	Primary  string
	Canary   string
	Replicas map[string]int64
	Phase    string
	Reason   string
	Stable   string
}

// TestReleaseHostileEdits renders the release example with one thing changed
// and checks what the pipeline would apply.
func TestReleaseHostileEdits(t *testing.T) {
	type change struct {
		xr       func(xr *unstructured.Unstructured)
		observed func(objs []*unstructured.Unstructured)
		required func(objs []*unstructured.Unstructured)
	}
	cases := map[string]struct {
		reason string
		// bug, when set, skips the case: it names an engine bug that the
		// case shows, for whoever fixes it to unskip.
		bug    string
		change change
		want   releaseOutcome
	}{
		"AsRendered": {
			reason: "The example as it is: step 0 held for step 1's capacity, 6.6.0 retired at 0, 6.7.0 stable at 4, 6.7.1 scaled ahead to 2.",
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4, "6.7.1": 2},
				Phase: "Progressing", Reason: "AwaitingCapacity", Stable: "6.7.0",
			},
		},
		"RevisionLabelInSelector": {
			reason: "Attack: a revision label that is one of the selector's keys would make every revision's Service select the same pods (the primary's among them): a Fatal naming spec.release.revisionLabel, so nothing is applied.",
			change: change{xr: func(xr *unstructured.Unstructured) {
				mustSet(xr.Object, "app", "spec", "release", "revisionLabel")
			}},
			want: releaseOutcome{Fatal: "spec.release.revisionLabel"},
		},
		"ForgedStable": {
			reason: "Attack: status.release naming a stable revision that never rolled out (9.9.9) is memory, not proof: the observed primary Service selects 6.7.0, which stays stable and keeps its replicas; 9.9.9 gets none.",
			change: change{xr: func(xr *unstructured.Unstructured) {
				mustSet(xr.Object, "9.9.9", "status", "release", "stable", "revision")
			}},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4, "6.7.1": 2},
				Phase: "Progressing", Reason: "AwaitingCapacity", Stable: "6.7.0",
			},
		},
		"RollbackOfAnotherDigest": {
			reason: "Attack: a history entry whose digest is not the revision's as written now (edited status, or the revision's side changed since) rolls back nothing: setting canary.revision to 6.6.0 rolls it out through the steps, from step 0.",
			change: change{xr: func(xr *unstructured.Unstructured) {
				mustSet(xr.Object, "6.6.0", "spec", "canary", "revision")
				history, _, _ := unstructured.NestedSlice(xr.Object, "status", "release", "history")
				history[0].(map[string]any)["digest"] = "v2-0000000000000000" //nolint:forcetypeassert // The example's YAML.
				mustSet(xr.Object, history, "status", "release", "history")
			}},
			// The route gives 6.7.1 10%: the canary Service keeps selecting
			// it, with the replica its weight needed, until the route sends
			// it nothing; 6.6.0 is scaled ahead of its first step.
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.7.0": 4, "6.6.0": 2, "6.7.1": 1},
				Phase: "Progressing", Reason: "AwaitingCapacity", Stable: "6.7.0",
			},
		},
		"WorkloadKindNotAllowed": {
			reason: "Attack: a workload of a kind the Input's allowedWorkloadKinds does not list (a Secret, to learn whether it exists) is never read: a Fatal naming spec.release.workload.kind.",
			change: change{xr: func(xr *unstructured.Unstructured) {
				mustSet(xr.Object, map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "db-{{revision}}"}, "spec", "release", "workload")
			}},
			want: releaseOutcome{Fatal: "spec.release.workload.kind"},
		},
		"WorkloadOfAnotherOwner": {
			reason: "Attack: workload.name can name any object of an allowed kind in the route namespace (another team's Deployment, by choosing the revision), and the pipeline's next step composes the Deployments by that name, so Crossplane would adopt it (server-side apply, forced, a controller reference added where none is) and delete it once the revision leaves the record. A canary workload that this XR did not compose must be a Fatal naming spec.release.workload.",
			change: change{required: func(objs []*unstructured.Unstructured) {
				// Another team's Deployment: no crossplane.io/composite label.
				objs[0].SetLabels(map[string]string{"app": "payments", "team": "payments"})
			}},
			want: releaseOutcome{Fatal: "spec.release.workload"},
		},
		"RescuedAbortKeepsTheRelease": {
			reason: "An emergency abort of a CanaryRoute that cannot be composed (here a workload kind the Input does not allow) keeps the stable revision at spec.release.replicas (4), leaves the retired 6.6.0 at 0, and keeps status.release.",
			change: change{xr: func(xr *unstructured.Unstructured) {
				mustSet(xr.Object, true, "spec", "traffic", "abort")
				mustSet(xr.Object, "StatefulSet", "spec", "release", "workload", "kind")
				mustSet(xr.Object, []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": int64(9898)}}, "status", "rollout", "canaryBackends")
			}},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4, "6.7.1": 0},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
		"RescuedAbortDuringPromotion": {
			reason: "An emergency abort that is rescued while a promotion has moved the primary Service to 6.7.1 re-emits that Service as observed and sends it every request: the revision it selects must keep its replicas, not go to 0 as the canary's.",
			change: change{
				xr: func(xr *unstructured.Unstructured) {
					mustSet(xr.Object, true, "spec", "traffic", "abort")
					mustSet(xr.Object, "StatefulSet", "spec", "release", "workload", "kind")
					mustSet(xr.Object, map[string]any{
						"phase": "Promoting", "reason": "PromotionStarted", "revision": "6.7.1", "canaryDigest": "v2-d94caf669a1718ba",
						"step": int64(2), "stepStartedAt": "2026-12-02T10:05:00Z", "canaryWeight": int64(100), "primaryWeight": int64(0),
						"message":        "promoting revision 6.7.1: the primary Service moves to it",
						"canaryBackends": []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": int64(9898)}},
					}, "status", "rollout")
				},
				observed: func(objs []*unstructured.Unstructured) {
					for _, o := range objs {
						switch {
						case o.GetKind() == "HTTPRoute":
							rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
							refs := rules[0].(map[string]any)["backendRefs"].([]any) //nolint:forcetypeassert // The example's YAML.
							refs[0].(map[string]any)["weight"] = int64(0)            //nolint:forcetypeassert // The example's YAML.
							refs[1].(map[string]any)["weight"] = int64(100)          //nolint:forcetypeassert // The example's YAML.
							mustSet(o.Object, rules, "spec", "rules")
						case o.GetKind() == "Service" && o.GetName() == "podinfo-primary":
							mustSet(o.Object, "6.7.1", "spec", "selector", "version")
						}
					}
				},
			},
			want: releaseOutcome{
				Primary: "6.7.1", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4, "6.7.1": 4},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.bug != "" {
				t.Skip("engine bug: " + tc.bug)
			}
			got := renderRelease(t, tc.change.xr, tc.change.observed, tc.change.required)
			if tc.want.Fatal != "" && strings.Contains(got.Fatal, tc.want.Fatal) {
				got.Fatal = tc.want.Fatal
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncrossplane render: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReleaseRescueHostileEdits attacks the release loop's fixes at their seams
// with the rescued abort: the rescue composes a release record of its own,
// outside the checks of a composing run.
func TestReleaseRescueHostileEdits(t *testing.T) {
	canaryBackends := []any{map[string]any{"group": "", "kind": "Service", "name": "podinfo-canary", "namespace": "test", "port": int64(9898)}}
	// Two promotions 10 s apart: 6.5.0 -> 6.6.0 at 10:06:40, 6.6.0 ->
	// 6.7.0 at 10:06:50, scaleDownDelay 30s. At 10:07 (NOW) 6.5.0 keeps its
	// replicas until 10:07:10 (history dates it), 6.6.0 until 10:07:20.
	twoPromotions := func(xr *unstructured.Unstructured) {
		mustSet(xr.Object, map[string]any{
			"stable": map[string]any{"revision": "6.7.0", "digest": "v2-895b4639d9f00794", "since": "2026-12-02T10:06:50Z"},
			"history": []any{
				map[string]any{"revision": "6.6.0", "digest": "v2-999db937c91b6bfb", "succeededAt": "2026-12-02T10:06:40Z"},
				map[string]any{"revision": "6.5.0", "digest": "v2-0000000000000000", "succeededAt": "2026-12-02T09:00:00Z"},
			},
			"retiring": map[string]any{"revision": "6.6.0", "at": "2026-12-02T10:07:20Z"},
		}, "status", "release")
	}
	rescue := func(xr *unstructured.Unstructured) {
		mustSet(xr.Object, true, "spec", "traffic", "abort")
		mustSet(xr.Object, canaryBackends, "status", "rollout", "canaryBackends")
	}
	type change struct {
		xr       func(xr *unstructured.Unstructured)
		observed func(objs []*unstructured.Unstructured)
		required func(objs []*unstructured.Unstructured)
	}
	cases := map[string]struct {
		reason string
		change change
		want   releaseOutcome
	}{
		"SecondRetireeKeepsItsReplicas": {
			reason: "Control: on a composing run, the revision the promotion before the last retired (6.5.0, dated by history) keeps its replicas until its scaleDownDelay has passed.",
			change: change{xr: twoPromotions},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 2},
				Phase: "Progressing", Reason: "AwaitingCapacity", Stable: "6.7.0",
			},
		},
		"RescueKeepsTheSecondRetiree": {
			reason: "A rescue retires nothing early (docs/rollout.md, compose.rescuedRecord): the second retiree 6.5.0 keeps its replicas until 10:07:10, as on a composing run, instead of leaving the record (its Deployment deleted 10 s early while the gateway may still drain to it).",
			change: change{xr: func(xr *unstructured.Unstructured) {
				twoPromotions(xr)
				rescue(xr)
				mustSet(xr.Object, "StatefulSet", "spec", "release", "workload", "kind")
			}},
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 0},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
		"RescueNeverComposesAForeignWorkload": {
			reason: "Attack: a canary workload of another owner is a Fatal naming spec.release.workload, but with spec.traffic.abort set that Fatal is rescued, and the rescue's record still lists the canary's revision (at 0): the template then composes the other team's Deployment podinfo-6.7.1 at 0 replicas, which Crossplane adopts (scaling it to 0) and deletes once the revision leaves the record. The takeover refusal must hold through a rescue: nothing is composed for 6.7.1.",
			change: change{
				xr: rescue,
				required: func(objs []*unstructured.Unstructured) {
					objs[0].SetLabels(map[string]string{"app": "payments", "team": "payments"})
				},
			},
			// The rescue may stand (the route cut) or the Fatal may: either
			// way 6.7.1 gets no Deployment. This is the rescue's outcome
			// without one.
			want: releaseOutcome{
				Primary: "6.7.0", Canary: "6.7.1", Replicas: map[string]int64{"6.6.0": 0, "6.7.0": 4},
				Phase: "Aborted", Reason: "AbortRescued", Stable: "6.7.0",
			},
		},
		"ForeignWorkloadWithAnotherControllerStays": {
			reason: "Control: a workload labelled crossplane.io/composite=podinfo whose controller is another object (UID) is not this XR's: the Fatal names spec.release.workload.",
			change: change{
				xr: func(xr *unstructured.Unstructured) { xr.SetUID("11111111-1111-1111-1111-111111111111") },
				required: func(objs []*unstructured.Unstructured) {
					mustSet(objs[0].Object, []any{map[string]any{
						"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute", "name": "podinfo",
						"uid": "22222222-2222-2222-2222-222222222222", "controller": true,
					}}, "metadata", "ownerReferences")
				},
			},
			want: releaseOutcome{Fatal: "spec.release.workload"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := renderRelease(t, tc.change.xr, tc.change.observed, tc.change.required)
			if tc.want.Fatal != "" && strings.Contains(got.Fatal, tc.want.Fatal) {
				got.Fatal = tc.want.Fatal
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncrossplane render: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// renderRelease renders the release example with its XR, observed and
// required resources changed, and reads what the pipeline composed.
func renderRelease(t *testing.T, xr func(*unstructured.Unstructured), observed, required func([]*unstructured.Unstructured)) releaseOutcome {
	t.Helper()
	dir := filepath.Join(env.root, "example", "release")
	tmp := t.TempDir()
	files := map[string]string{}
	for file, change := range map[string]func([]*unstructured.Unstructured){
		"xr.yaml": func(objs []*unstructured.Unstructured) {
			if xr != nil {
				xr(objs[0])
			}
		},
		"observed.yaml": observed,
		"required.yaml": required,
	} {
		objs := readYAML(t, filepath.Join(dir, file))
		if change != nil {
			change(objs)
		}
		files[file] = filepath.Join(tmp, file)
		writeYAML(t, files[file], objs)
	}
	args := []string{
		"render", files["xr.yaml"], filepath.Join(dir, "composition.yaml"), functionsFile(t, dir),
		"--xrd", xrdFor(t, dir), "--observed-resources", files["observed.yaml"], "--required-resources", files["required.yaml"],
	}
	var stderr bytes.Buffer
	cmd := command(env.root, env.crossplane, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if !strings.Contains(stderr.String(), "returned a fatal result") {
			t.Fatalf("crossplane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return releaseOutcome{Fatal: stderr.String()}
	}
	var o releaseOutcome
	for _, u := range decodeYAML(t, out) {
		switch u.GetKind() {
		case "CanaryRoute":
			o.Phase, _, _ = unstructured.NestedString(u.Object, "status", "rollout", "phase")
			o.Reason, _, _ = unstructured.NestedString(u.Object, "status", "rollout", "reason")
			o.Stable, _, _ = unstructured.NestedString(u.Object, "status", "release", "stable", "revision")
		case "Service":
			rev, _, _ := unstructured.NestedString(u.Object, "spec", "selector", "version")
			if strings.HasSuffix(u.GetName(), "-primary") {
				o.Primary = rev
			} else {
				o.Canary = rev
			}
		case "Deployment":
			if o.Replicas == nil {
				o.Replicas = map[string]int64{}
			}
			// sigs.k8s.io/yaml decodes numbers as float64.
			n, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
			f, _ := n.(float64)
			o.Replicas[u.GetLabels()["version"]] = int64(f)
		}
	}
	return o
}

func mustSet(obj map[string]any, value any, path ...string) {
	if err := unstructured.SetNestedField(obj, value, path...); err != nil {
		panic(err)
	}
}

func readYAML(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeYAML(t, b)
}

func decodeYAML(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

func writeYAML(t *testing.T, path string, objs []*unstructured.Unstructured) {
	t.Helper()
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}
