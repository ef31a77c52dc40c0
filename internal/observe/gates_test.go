package observe

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// fromYAML decodes YAML into the JSON types that Crossplane hands the
// function.
func fromYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad test YAML %q: %v", s, err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatalf("bad test YAML %q: %v", s, err)
	}
	return m
}

var (
	available = xr.Gate{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo", ConditionType: "Available", FailAfter: 5 * time.Minute}
	healthy   = xr.Gate{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "podinfo", ConditionType: "Healthy", FailAfter: time.Minute}
)

const availableDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: test}
status:
  conditions:
    - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
    - {type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability., lastTransitionTime: "2026-12-02T10:00:00Z"}
`

func TestGates(t *testing.T) {
	type args struct {
		gates   []xr.Gate
		fetched map[int][]string
	}
	at := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	availableTrue := &metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastTransitionTime: at}
	cases := map[string]struct {
		reason string
		args   args
		want   []rollout.GateObservation
	}{
		"NoGates": {
			reason: "Without gates there is nothing to observe.",
			args:   args{},
			want:   nil,
		},
		"NothingFetched": {
			reason: "On the first call Crossplane has fetched nothing: the gate is not found, which holds the rollout.",
			args:   args{gates: []xr.Gate{available}},
			want:   []rollout.GateObservation{{Gate: available}},
		},
		"Found": {
			reason: "The gate's object, found by name, namespace and kind, with its condition read.",
			args:   args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {availableDeployment}}},
			want:   []rollout.GateObservation{{Gate: available, Found: true, Condition: availableTrue}},
		},
		"FoundWithoutCondition": {
			reason: "An object found without the gate's condition is found, with no condition.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo, namespace: test}, status: {conditions: [{type: Progressing, status: "True"}]}}`,
			}}},
			want: []rollout.GateObservation{{Gate: available, Found: true}},
		},
		"FoundWithoutStatus": {
			reason: "An object without a status is found, with no condition.",
			args:   args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {`{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo, namespace: test}}`}}},
			want:   []rollout.GateObservation{{Gate: available, Found: true}},
		},
		"WrongKind": {
			reason: "An object of another kind of the same name (a StatefulSet) is not the gate's object.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: podinfo, namespace: test}, status: {conditions: [{type: Available, status: "True"}]}}`,
			}}},
			want: []rollout.GateObservation{{Gate: available}},
		},
		"WrongVersion": {
			reason: "The gate names a version too: apps/v1beta1 is not apps/v1.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1beta1, kind: Deployment, metadata: {name: podinfo, namespace: test}, status: {conditions: [{type: Available, status: "True"}]}}`,
			}}},
			want: []rollout.GateObservation{{Gate: available}},
		},
		"WrongNamespace": {
			reason: "A gate reads objects in the route's namespace only: one of the same name elsewhere is ignored.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo, namespace: other}, status: {conditions: [{type: Available, status: "True"}]}}`,
			}}},
			want: []rollout.GateObservation{{Gate: available}},
		},
		"WrongName": {
			reason: "An object of another name is ignored.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: checkout, namespace: test}, status: {conditions: [{type: Available, status: "True"}]}}`,
			}}},
			want: []rollout.GateObservation{{Gate: available}},
		},
		"FoundBesideOthers": {
			reason: "Among several fetched objects the gate's own is found.",
			args: args{gates: []xr.Gate{available}, fetched: map[int][]string{0: {
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: podinfo, namespace: other}}`,
				availableDeployment,
			}}},
			want: []rollout.GateObservation{{Gate: available, Found: true, Condition: availableTrue}},
		},
		"EachGateItsObjects": {
			reason: "Each gate reads the objects fetched for it (fetched(i) for gate i), in the order of the gates.",
			args: args{gates: []xr.Gate{available, healthy}, fetched: map[int][]string{
				0: {`{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: podinfo, namespace: test}, status: {conditions: [{type: Healthy, status: "False", reason: Degraded}]}}`},
				1: {`{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: podinfo, namespace: test}, status: {conditions: [{type: Healthy, status: "False", reason: Degraded}]}}`},
			}},
			want: []rollout.GateObservation{
				{Gate: available},
				{Gate: healthy, Found: true, Condition: &metav1.Condition{Type: "Healthy", Status: metav1.ConditionFalse, Reason: "Degraded"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fetched := func(i int) []*unstructured.Unstructured {
				out := make([]*unstructured.Unstructured, 0, len(tc.args.fetched[i]))
				for _, y := range tc.args.fetched[i] {
					out = append(out, &unstructured.Unstructured{Object: fromYAML(t, y)})
				}
				return out
			}
			got := Gates(context.Background(), nil, tc.args.gates, "test", fetched, func(string) *expr.Program { return nil })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nGates(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		reason string
		obj    map[string]any
		want   *metav1.Condition
	}{
		"Nil": {
			reason: "No object, no condition.",
			obj:    nil,
		},
		"NoStatus": {
			reason: "No status, no condition.",
			obj:    map[string]any{"kind": "Deployment"},
		},
		"StatusNotAnObject": {
			reason: "A status that is not an object counts as none.",
			obj:    map[string]any{"status": "Ready"},
		},
		"ConditionsNotAList": {
			reason: "Conditions that are not a list count as none.",
			obj:    map[string]any{"status": map[string]any{"conditions": map[string]any{"type": "Available", "status": "True"}}},
		},
		"ConditionsNotAnyList": {
			reason: "A typed list that JSON never yields counts as none, never a panic.",
			obj:    map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Available", "status": "True"}}}},
		},
		"Read": {
			reason: "A well-formed condition is read whole.",
			obj: map[string]any{"status": map[string]any{"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok", "lastTransitionTime": "2026-12-02T10:00:00Z"},
			}}},
			want: &metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "ok", LastTransitionTime: at},
		},
		"Absent": {
			reason: "Other conditions only: the gate's is absent.",
			obj:    map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "True"}}}},
		},
		"MalformedEntriesSkipped": {
			reason: "Entries that are not objects (a string, a number, null, a list) and entries whose type is not a string are skipped; the gate's condition after them is read.",
			obj: map[string]any{"status": map[string]any{"conditions": []any{
				"Available",
				3.0,
				nil,
				[]any{"Available"},
				map[string]any{"type": 7.0, "status": "False"},
				map[string]any{"type": []any{"Available"}, "status": "False"},
				map[string]any{"type": "Available", "status": "True"},
			}}},
			want: &metav1.Condition{Type: "Available", Status: metav1.ConditionTrue},
		},
		"OnlyMalformedEntries": {
			reason: "Malformed entries alone count as no condition.",
			obj:    map[string]any{"status": map[string]any{"conditions": []any{"Available", nil, map[string]any{"status": "True"}}}},
		},
		"StatusNotAString": {
			reason: "A status that is not a string (a boolean) is no status: neither True nor False, so the gate holds.",
			obj:    map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": true, "reason": 5.0, "message": map[string]any{}}}}},
			want:   &metav1.Condition{Type: "Available"},
		},
		"BadTransitionTime": {
			reason: "A lastTransitionTime that does not parse is the zero time.",
			obj:    map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "False", "lastTransitionTime": "yesterday"}}}},
			want:   &metav1.Condition{Type: "Available", Status: metav1.ConditionFalse},
		},
		"TransitionTimeNotAString": {
			reason: "A lastTransitionTime that is not a string is the zero time.",
			obj:    map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "False", "lastTransitionTime": 1764669600.0}}}},
			want:   &metav1.Condition{Type: "Available", Status: metav1.ConditionFalse},
		},
		"FirstOfDuplicates": {
			reason: "Of two conditions of the type, the first is read.",
			obj: map[string]any{"status": map[string]any{"conditions": []any{
				map[string]any{"type": "Available", "status": "False", "reason": "First"},
				map[string]any{"type": "Available", "status": "True", "reason": "Second"},
			}}},
			want: &metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "First"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Condition(tc.obj, "Available")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAnalysis(t *testing.T) {
	c, err := expr.NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	programs := func(text string) *expr.Program {
		if text == "" {
			return nil
		}
		p, err := c.Compile(text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	jobTemplate := map[string]any{"apiVersion": "batch/v1", "kind": "Job"}
	traffic := xr.Traffic{Analysis: []xr.AnalysisTemplate{
		{Name: "smoke", Template: jobTemplate, SuccessWhen: "object.status.succeeded > 0", FailWhen: "object.status.failed > 0"},
		{Name: "load", Template: jobTemplate, SuccessWhen: "object.status.succeeded > 0"},
	}}
	job := func(labels, status string) map[string]any {
		return fromYAML(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: test, labels: `+labels+`}, status: `+status+`}`)
	}
	labels := `{canaryroute.fn.crossplane.io/route: podinfo, canaryroute.fn.crossplane.io/revision: v2, canaryroute.fn.crossplane.io/canary-digest: v2-aaaa, canaryroute.fn.crossplane.io/step: "1", canaryroute.fn.crossplane.io/retry: "3"}`
	deleting := job(labels, `{succeeded: 1}`)
	(&unstructured.Unstructured{Object: deleting}).SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)})

	cases := map[string]struct {
		reason   string
		observed map[names.Key]map[string]any
		want     []rollout.AnalysisObservation
	}{
		"Judged": {
			reason:   "An analysis object is read with the revision, canary, attempt and step of its labels, and judged by its template's expressions.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): job(labels, `{succeeded: 1}`)},
			want:     []rollout.AnalysisObservation{{Name: "smoke", Revision: "v2", CanaryDigest: "v2-aaaa", Retry: "3", Step: 1, Check: rollout.Check{Success: true}}},
		},
		"Failed": {
			reason:   "failWhen true fails the analysis.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): job(labels, `{failed: 1}`)},
			want:     []rollout.AnalysisObservation{{Name: "smoke", Revision: "v2", CanaryDigest: "v2-aaaa", Retry: "3", Step: 1, Check: rollout.Check{Failed: true, Err: ""}}},
		},
		"Deleting": {
			reason:   "An object being deleted is not judged: its status says nothing of the step that replaces it.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): deleting},
			want:     []rollout.AnalysisObservation{{Name: "smoke", Revision: "v2", CanaryDigest: "v2-aaaa", Retry: "3", Step: 1, Deleting: true}},
		},
		"OtherRoute": {
			reason:   "An object labelled for another route is none of this rollout's business.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): job(`{canaryroute.fn.crossplane.io/route: other, canaryroute.fn.crossplane.io/step: "1"}`, `{succeeded: 1}`)},
		},
		"NoStep": {
			reason:   "An object without a step label is ignored.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("load"): job(`{canaryroute.fn.crossplane.io/route: podinfo}`, `{succeeded: 1}`)},
		},
		"OtherKind": {
			reason: "An object of another kind than its template's is an earlier template's (the kind changed): not judged by this one's expressions.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): func() map[string]any {
				o := job(labels, `{succeeded: 1}`)
				o["apiVersion"], o["kind"] = "example.org/v1", "Probe"
				return o
			}()},
		},
		"UnknownTemplate": {
			reason:   "An object under the key of a template the spec no longer has is ignored.",
			observed: map[names.Key]map[string]any{names.AnalysisKey("gone"): job(labels, `{succeeded: 1}`)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Analysis(context.Background(), &expr.Budget{}, traffic, "podinfo", tc.observed, programs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAnalysis(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestJudge: successWhen and failWhen, and what an evaluation error means.
// failWhen may read what the object does not have yet (a Job's
// status.failed, absent until a Pod fails); any other error of failWhen
// holds: a failure it could not see must never pass a step.
func TestJudge(t *testing.T) {
	c, err := expr.NewCompiler(0)
	if err != nil {
		t.Fatal(err)
	}
	compile := func(text string) *expr.Program {
		if text == "" {
			return nil
		}
		p, err := c.Compile(text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 40,000 samples, 4,000 of them errors: a filter over them is past the
	// cost limit.
	samples := make([]any, 40_000)
	for i := range samples {
		code := int64(200)
		if i%10 == 0 {
			code = 503
		}
		samples[i] = map[string]any{"code": code}
	}
	// The object of issue 25: patterns of 140 KB in its annotations.
	patterns := map[string]any{"metadata": map[string]any{"name": "podinfo", "annotations": map[string]any{
		"a": strings.Repeat("podinfo|", 17_500), "b": strings.Repeat("[a-z]", 28_000),
	}}}
	cases := map[string]struct {
		reason      string
		successWhen string
		failWhen    string
		object      map[string]any
		want        rollout.Check
		wantErr     string // a prefix of Check.Err
	}{
		"Success": {
			reason:      "successWhen true, failWhen false: success.",
			successWhen: "object.status.succeeded > 0", failWhen: "object.status.failed > 0",
			object: map[string]any{"status": map[string]any{"succeeded": int64(1), "failed": int64(0)}},
			want:   rollout.Check{Success: true},
		},
		"FailedWins": {
			reason:      "failWhen true fails, whatever successWhen says.",
			successWhen: "object.status.succeeded > 0", failWhen: "object.status.failed > 0",
			object: map[string]any{"status": map[string]any{"succeeded": int64(1), "failed": int64(1)}},
			want:   rollout.Check{Failed: true},
		},
		"FailWhenFieldNotThereYet": {
			reason:      "A failWhen reading a field the object does not have yet has not failed.",
			successWhen: "object.status.succeeded > 0", failWhen: "object.status.failed > 0",
			object: map[string]any{"status": map[string]any{"succeeded": int64(1)}},
			want:   rollout.Check{Success: true},
		},
		"FailWhenElementNotThereYet": {
			reason:      "Nor has a failWhen reading a list element that is not there yet.",
			successWhen: "true", failWhen: "object.status.conditions[0].status == 'False'",
			object: map[string]any{"status": map[string]any{"conditions": []any{}}},
			want:   rollout.Check{Success: true},
		},
		"FailWhenNotBool": {
			reason:      "A failWhen whose result is no bool cannot say whether the object failed: it holds.",
			successWhen: "true", failWhen: "object.status.failed",
			object:  map[string]any{"status": map[string]any{"failed": int64(3)}},
			wantErr: "failWhen cannot be evaluated: the expression returned int, not a bool",
		},
		"FailWhenOverCostLimit": {
			reason:      "A failWhen stopped by the cost limit holds: the failures it would have counted must not pass the step.",
			successWhen: "object.status.phase == 'Completed'", failWhen: "object.status.samples.filter(s, s.code >= 500).size() > 5",
			object:  map[string]any{"status": map[string]any{"phase": "Completed", "samples": samples}},
			wantErr: "failWhen cannot be evaluated:",
		},
		"SuccessWhenPatternTooLong": {
			reason:      "A successWhen matching with a pattern longer than the limit, read from the object, holds, naming the limit.",
			successWhen: "object.metadata.annotations.exists(k, object.metadata.name.matches(object.metadata.annotations[k]))",
			object:      patterns,
			wantErr:     "matches() cannot use a pattern longer than 1024 bytes",
		},
		"FailWhenPatternTooLong": {
			reason:      "So does such a failWhen: it cannot say whether the object failed.",
			successWhen: "true", failWhen: "object.metadata.name.matches(object.metadata.annotations.b)",
			object:  patterns,
			wantErr: "failWhen cannot be evaluated: matches() cannot use a pattern longer than 1024 bytes",
		},
		"SuccessWhenError": {
			reason:      "A successWhen that cannot be evaluated holds, with the error.",
			successWhen: "object.status.phase == 'Completed'", failWhen: "",
			object:  map[string]any{"status": map[string]any{}},
			wantErr: "no such key: phase",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Judge(context.Background(), &expr.Budget{}, compile(tc.successWhen), compile(tc.failWhen), tc.object)
			if tc.wantErr != "" {
				if got.Success || got.Failed || !strings.HasPrefix(got.Err, tc.wantErr) {
					t.Errorf("%s\nJudge(...) = %+v, want it to hold with an error starting %q", tc.reason, got, tc.wantErr)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nJudge(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
