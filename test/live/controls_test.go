package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// reason checks the XR's rollout reason, and the weight.
func reason(ns, name, want string, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		return r.Reason == want && r.CanaryWeight == weight, xrState(u)
	}
}

// patchTraffic merges a patch into the XR's spec.traffic, as `kubectl
// patch --type merge` would.
func patchTraffic(t *testing.T, ns, name, traffic string) {
	t.Helper()
	r, err := env.c.Resource(t.Context(), gvkCanaryRoute, ns)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"traffic":%s}}`, traffic)
	if _, err := r.Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("kubectl patch canaryroute %s/%s --type merge -p %s: %v", ns, name, patch, err)
	}
}

// eventCounts are the events of an object, by reason: how many distinct
// events, and how many times each was sent in all (an event sent again is
// counted on the same Event object).
func eventCounts(ctx context.Context, ns, name string) (distinct, sent map[string]int, err error) {
	events, err := env.c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	distinct, sent = map[string]int{}, map[string]int{}
	for _, e := range events.Items {
		if e.InvolvedObject.Name != name || e.InvolvedObject.Kind != gvkCanaryRoute.Kind {
			continue
		}
		distinct[e.Reason]++
		sent[e.Reason] += int(max(e.Count, 1))
	}
	return distinct, sent, nil
}

// saidOnce reports whether a transition's event was sent as the function
// says it: once, or twice when Crossplane could not write the status of the
// run that made the transition (a conflict with another writer of the XR),
// so that the next run made it, and said it, again. A run that changes
// nothing says nothing, so never more (seen live: RolloutStarted twice on
// an XR's first reconciles).
func saidOnce(n int) bool { return n == 1 || n == 2 }

// TestApprovalStep holds an approval step until `kubectl patch` sets
// traffic.approval: the XR says it waits (reason AwaitingApproval,
// awaitingApproval true), nothing moves however long it waits, and the
// patch releases the step. The events say each transition once.
func TestApprovalStep(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "approve")
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s}, {weight: 50, approval: true}, {weight: 100}]", "")
	dumpOnFailure(t, gvkCanaryRoute, ns)
	apply(t, xr)

	await(t, 2*time.Minute, "step 1 awaiting approval", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		r := rollout(u)
		awaiting, _, _ := unstructured.NestedBool(u.Object, "status", "rollout", "awaitingApproval")
		return r.Reason == "AwaitingApproval" && awaiting && r.CanaryWeight == 50, xrState(u)
	})
	await(t, settle, "the route at 50% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 50))
	// Nobody approves for a while: nothing moves.
	time.Sleep(5 * time.Second)
	await(t, settle, "still awaiting approval at 50%", reason(ns, "podinfo", "AwaitingApproval", 50))

	patchTraffic(t, ns, "podinfo", `{"approval":{"revision":"v2","step":1}}`)
	await(t, 2*time.Minute, "the rollout Succeeded at 100% once approved", phase(ns, "podinfo", "Succeeded", 100))

	await(t, settle, "each transition's event, once", func(ctx context.Context) (bool, string) {
		distinct, sent, err := eventCounts(ctx, ns, "podinfo")
		if err != nil {
			return false, err.Error()
		}
		ok := true
		for _, r := range []string{"RolloutStarted", "StepAdvanced", "AwaitingApproval", "RolloutApproved", "RolloutSucceeded"} {
			ok = ok && saidOnce(sent[r])
		}
		return ok, fmt.Sprintf("events by reason (distinct %v, sent %v)", distinct, sent)
	})
}

// TestAnalysisJob composes a step's smoke test Job, which the test then
// plays the Job controller for: a Job that succeeds passes its step (the
// Job is deleted once the step has passed, its verdict stays in status); in
// the next revision one that fails fails the rollout, a Warning says so, and
// a retry restarts the revision at step 0 with a Job of its own.
func TestAnalysisJob(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "analysis")
	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s, analysis: [smoke]}, {weight: 100}]", "")
	set(t, xr, spec(t, `smoke:
  template:
    apiVersion: batch/v1
    kind: Job
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          containers: [{name: smoke, image: curlimages/curl:8.11.1, args: [-fsS, "http://podinfo-canary:9898/healthz"]}]
  successWhen: "has(object.status.succeeded) && object.status.succeeded > 0"
  failWhen: "has(object.status.failed) && object.status.failed > 0"`), "spec", "traffic", "analysis")
	dumpOnFailure(t, gvkCanaryRoute, ns)
	apply(t, xr)

	job := func(name string) *batchv1.Job {
		var got *batchv1.Job
		await(t, 2*time.Minute, "the analysis Job "+name, func(ctx context.Context) (bool, string) {
			j, err := env.c.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got = j
			return true, ""
		})
		return got
	}
	finish := func(j *batchv1.Job, succeeded bool) {
		t.Helper()
		// The test is the Job controller: no kubelet runs Pods here.
		now := metav1.NewTime(time.Now())
		j.Status.StartTime = &now
		if succeeded {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			}
		}
		if _, err := env.c.Kube.BatchV1().Jobs(ns).UpdateStatus(t.Context(), j, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("the Job controller's status update: %v", err)
		}
	}

	// Revision v2: the Job succeeds, the step passes.
	j := job("podinfo-v2-0-smoke")
	if j.Labels["canaryroute.fn.crossplane.io/step"] != "0" || j.Labels["canaryroute.fn.crossplane.io/revision"] != "v2" {
		t.Errorf("the Job's labels: %v", j.Labels)
	}
	finish(j, true)
	await(t, 2*time.Minute, "v2 Succeeded at 100%", phase(ns, "podinfo", "Succeeded", 100))
	await(t, settle, "the passed step's Job deleted", gone(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, ns, "podinfo-v2-0-smoke"))
	u, _ := get(t.Context(), gvkCanaryRoute, ns, "podinfo")
	verdicts, _, _ := unstructured.NestedSlice(u.Object, "status", "rollout", "analysis")
	if len(verdicts) != 1 || !strings.Contains(fmt.Sprint(verdicts[0]), "verdict:Passed") {
		t.Errorf("status.rollout.analysis: %v, want the smoke test Passed at step 0", verdicts)
	}

	// Revision v3: the Job fails, and so does the rollout.
	set(t, xr, "v3", "spec", "canary", "revision")
	apply(t, xr)
	finish(job("podinfo-v3-0-smoke"), false)
	await(t, 2*time.Minute, "v3 Failed at 0% (AnalysisFailed)", reason(ns, "podinfo", "AnalysisFailed", 0))
	await(t, settle, "the route back at 0% for the canary", routeAt(gvkHTTPRoute, ns, "podinfo", "podinfo-canary", 0))

	// A retry restarts v3 at step 0, with a Job of its own.
	patchTraffic(t, ns, "podinfo", `{"retry":"1"}`)
	await(t, 2*time.Minute, "v3 retried at step 0", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		r := rollout(u)
		retry, _, _ := unstructured.NestedString(u.Object, "status", "rollout", "retry")
		return r.Phase == "Progressing" && r.CanaryWeight == 10 && retry == "1", xrState(u)
	})
	jobs, err := env.c.Kube.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "canaryroute.fn.crossplane.io/retry=1"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, 2*time.Minute, "the retry's own Job", func(ctx context.Context) (bool, string) {
		jobs, err = env.c.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "canaryroute.fn.crossplane.io/retry=1"})
		if err != nil {
			return false, err.Error()
		}
		return len(jobs.Items) == 1 && jobs.Items[0].Name != "podinfo-v3-0-smoke", fmt.Sprintf("%d Jobs of the retry", len(jobs.Items))
	})
	finish(&jobs.Items[0], true)
	await(t, 2*time.Minute, "v3 Succeeded after the retry", phase(ns, "podinfo", "Succeeded", 100))

	// The recorder drops an object's Normal events past a burst of 25
	// (client-go's spam filter, Crossplane's own ComposeResources among
	// them): v3's AnalysisPassed, late in the test, may be one of them, so
	// only v2's is required. Failed is a Warning, counted apart.
	await(t, settle, "one Warning for the failure, one event for the retry", func(ctx context.Context) (bool, string) {
		distinct, sent, err := eventCounts(ctx, ns, "podinfo")
		if err != nil {
			return false, err.Error()
		}
		return saidOnce(sent["RolloutFailed"]) && saidOnce(sent["RolloutRetried"]) && distinct["AnalysisPassed"] >= 1 && distinct["AnalysisPassed"] <= 2,
			fmt.Sprintf("events by reason (distinct %v, sent %v)", distinct, sent)
	})
}

// gvkCheck is the kind of the CRD that TestExpressionGate installs.
var gvkCheck = schema.GroupVersionKind{Group: "checks.example.org", Version: "v1", Kind: "Check"}

// TestExpressionGate installs a CRD and gates a rollout on one of its
// objects with CEL: the step holds while the expression cannot be judged or
// is false, and moves on once it is true; a failWhen that turns true fails
// the next revision at once.
func TestExpressionGate(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "expr")
	crd := spec(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: checks.checks.example.org}
spec:
  group: checks.example.org
  names: {kind: Check, plural: checks, singular: check, listKind: CheckList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true`)
	if _, err := env.c.Apply(t.Context(), &unstructured.Unstructured{Object: crd}); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "the Check CRD served", func(ctx context.Context) (bool, string) {
		_, err := env.c.List(ctx, gvkCheck, ns, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	check := func(ready string) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: spec(t, `{apiVersion: checks.example.org/v1, kind: Check, metadata: {name: canary-ok}, spec: {ready: `+ready+`}}`)}
		obj.SetNamespace(ns)
		if _, err := env.c.Apply(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	check(`"no"`)

	xr := progressiveXR(t, ns, "[{weight: 10, pause: 2s}, {weight: 100}]",
		`[{apiVersion: checks.example.org/v1, kind: Check, name: canary-ok, successWhen: "object.spec.ready == 'yes'", failWhen: "object.spec.ready == 'broken'"}]`)
	comp := composition(t, "progressive", ns+"-expr", func(in map[string]any) {
		in["allowedGateKinds"] = []any{map[string]any{"apiVersion": "checks.example.org/v1", "kind": "Check"}}
	})
	useComposition(t, xr, comp)
	dumpOnFailure(t, gvkCanaryRoute, ns)
	apply(t, xr)

	await(t, 2*time.Minute, "step 0 held by the expression gate", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "podinfo")
		if u == nil {
			return false, why
		}
		r := rollout(u)
		return r.CanaryWeight == 10 && strings.Contains(r.Message, "does not match successWhen"), xrState(u)
	})
	check(`"yes"`)
	await(t, 2*time.Minute, "the rollout Succeeded once the expression is true", phase(ns, "podinfo", "Succeeded", 100))

	check(`"broken"`)
	set(t, xr, "v3", "spec", "canary", "revision")
	apply(t, xr)
	await(t, 2*time.Minute, "v3 Failed at once on failWhen", reason(ns, "podinfo", "GateFailed", 0))
}
