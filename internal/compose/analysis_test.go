package compose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
)

func TestAnalysisObjects(t *testing.T) {
	analysisSpec := []patch{
		del("spec.traffic.weight"),
		set("spec.canary.revision", "v2"),
		set("spec.traffic.steps", `[{weight: 10, analysis: [smoke]}, {weight: 50, analysis: [smoke]}, {weight: 100}]`),
		set("spec.traffic.analysis", `{smoke: {template: {apiVersion: batch/v1, kind: Job, metadata: {labels: {team: web}}, spec: {backoffLimit: 0}}, successWhen: "object.status.succeeded > 0"}}`),
	}
	p := plan(t, "", append(namespaced, analysisSpec...)...)
	// fresh is the object the plan composes for a step and attempt.
	fresh := func(step int32, retry string) map[string]any {
		objs := p.AnalysisObjects(step, []string{"smoke"}, retry, nil)
		if len(objs) != 1 {
			t.Fatalf("AnalysisObjects(%d, %q): %d objects, want 1", step, retry, len(objs))
		}
		return objs[0].Object.(*unstructured.Unstructured).Object //nolint:forcetypeassert // Analysis objects are unstructured.
	}
	probe := fresh(0, "")
	probe["apiVersion"], probe["kind"] = "example.org/v1", "Probe"
	deleting := unstructured.Unstructured{Object: fresh(0, "")}
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)})

	type want struct {
		name   string
		labels map[string]string
		ready  bool
	}
	labels := func(step, retry string) map[string]string {
		l := map[string]string{
			"team": "web", names.LabelRoute: "podinfo", names.LabelRevision: "v2", names.LabelStep: step,
			names.LabelCanary: p.CanaryDigest(),
		}
		if retry != "" {
			l[names.LabelRetry] = retry
		}
		return l
	}
	cases := map[string]struct {
		reason   string
		step     int32
		retry    string
		observed map[names.Key]map[string]any
		want     []want
	}{
		"New": {
			reason: "A step's analysis object is named after the route, revision, step and template, labelled, and not ready until it exists.",
			step:   0,
			want:   []want{{name: "podinfo-v2-0-smoke", labels: labels("0", "")}},
		},
		"Observed": {
			reason: "The same object observed is composed again, ready: its verdict is the rollout's business.",
			step:   0, observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): fresh(0, "")},
			want: []want{{name: "podinfo-v2-0-smoke", labels: labels("0", ""), ready: true}},
		},
		"EarlierStep": {
			reason: "The key observed with the object of another step is left out, so Crossplane deletes it, instead of keeping its name and status for this step.",
			step:   1, observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): fresh(0, "")},
		},
		"EarlierAttempt": {
			reason: "The object of an earlier attempt is replaced the same way.",
			step:   0, retry: "1", observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): fresh(0, "")},
		},
		"Retried": {
			reason: "A retried attempt's object has a name of its own, hashed, and its retry label.",
			step:   0, retry: "1",
			want: []want{{name: AnalysisName("podinfo", "v2", 0, "smoke", "1"), labels: labels("0", "1")}},
		},
		"KindChanged": {
			reason: "The object of a template whose kind changed (a Job, now a Probe) is left out the same way: under the same key, Crossplane would otherwise keep the old object and compose the new one beside it.",
			step:   0, observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): probe},
		},
		"Deleting": {
			reason: "An object being deleted is not composed over: the next run composes the new one once it is gone.",
			step:   0, observed: map[names.Key]map[string]any{names.AnalysisKey("smoke"): deleting.Object},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []want
			for _, o := range p.AnalysisObjects(tc.step, []string{"smoke"}, tc.retry, tc.observed) {
				u := o.Object.(*unstructured.Unstructured) //nolint:forcetypeassert // Analysis objects are unstructured.
				if o.Key != names.AnalysisKey("smoke") || u.GetNamespace() != "test" {
					t.Errorf("%s\nkey %q, namespace %q: want analysis-smoke in the route's namespace", tc.reason, o.Key, u.GetNamespace())
				}
				got = append(got, want{name: u.GetName(), labels: u.GetLabels(), ready: o.Ready})
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nAnalysisObjects(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAnalysisName(t *testing.T) {
	type args struct {
		route, revision string
		step            int32
		name, retry     string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"Plain":     {reason: "route-revision-step-name, lowercased.", args: args{"podinfo", "V2", 1, "smoke", ""}, want: "podinfo-v2-1-smoke"},
		"Dots":      {reason: "Characters a name cannot hold become dashes.", args: args{"podinfo", "1.2_3", 0, "smoke", ""}, want: "podinfo-1-2-3-0-smoke"},
		"Different": {reason: "Another step gives another name.", args: args{"podinfo", "v2", 2, "smoke", ""}, want: "podinfo-v2-2-smoke"},
		// The hashes are part of the names objects have in clusters: a
		// change would rename the analysis objects of rollouts under way.
		"Retry":   {reason: "A retried attempt gets a hashed name of its own.", args: args{"podinfo", "v2", 0, "smoke", "1"}, want: "podinfo-v2-0-smoke-04cf8c50"},
		"TooLong": {reason: "A name longer than 63 characters is cut and hashed.", args: args{"a-very-long-route-name-for-a-service", "release-2026-12-02-rc1", 12, "smoke-test", ""}, want: "a-very-long-route-name-for-a-service-release-2026-12-0-ab0a9e8e"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AnalysisName(tc.args.route, tc.args.revision, tc.args.step, tc.args.name, tc.args.retry)
			if len(got) > 63 {
				t.Errorf("%s\nAnalysisName(...) = %q: longer than 63 characters", tc.reason, got)
			}
			if got != tc.want {
				t.Errorf("%s\nAnalysisName(...) = %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}
