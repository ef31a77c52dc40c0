package live

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
	"github.com/crossplane-contrib/function-canary-route/test/live/standin"
)

// The kinds the tests read and write.
var (
	gvkCanaryRoute  = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "CanaryRoute"}
	gvkXCanaryRoute = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "XCanaryRoute"}
	gvkClaim        = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "CanaryRouteClaim"}
	gvkXRD          = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v2", Kind: "CompositeResourceDefinition"}
	gvkHTTPRoute    = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}
	gvkGRPCRoute    = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GRPCRoute"}
	gvkGrant        = standin.ReferenceGrantGVK
	gvkService      = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	gvkDeployment   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// Timeouts of the waits. Crossplane calls the function again when a
// composed resource changes (realtime compositions) and when the TTL the
// function returned runs out (at most 1 minute, 30 s while a gate holds).
const (
	settle = 90 * time.Second
	poll   = 250 * time.Millisecond
)

// await polls check until it holds, or fails the test naming what it
// awaited and what it last saw.
func await(t *testing.T, timeout time.Duration, what string, check controlplane.Check) {
	t.Helper()
	start := time.Now()
	if err := controlplane.Await(t.Context(), timeout, poll, what, check); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: after %s", lastLine(what), time.Since(start).Round(10*time.Millisecond))
}

// firstLine is the last line of a wait's description: the first ones say
// why the test waits, the last one what for.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// newNamespace creates a namespace for one test, deleted when the test
// ends. A failed test first prints what the namespace held.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("live-%s-%s", prefix, suffix())
	ctx := t.Context()
	if _, err := env.c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if t.Failed() {
			t.Logf("namespace %s held:\n%s", ns, dump(ctx, ns))
		}
		_ = env.c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns
}

// suffix is a random name suffix of 5 lowercase letters and digits.
func suffix() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// dump describes the CanaryRoutes, claims, routes, grants, Services and
// events of a namespace, for a failure.
func dump(ctx context.Context, ns string) string {
	var b strings.Builder
	for _, gvk := range []schema.GroupVersionKind{gvkCanaryRoute, gvkClaim, gvkHTTPRoute, gvkGRPCRoute, gvkGrant, gvkService, gvkDeployment} {
		items, err := env.c.List(ctx, gvk, ns, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", gvk.Kind, err)
			continue
		}
		for i := range items {
			b.WriteString(describe(&items[i]))
		}
	}
	events, err := env.c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s/%s: %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// describe prints an object's spec and status, without the noise of its
// metadata.
func describe(u *unstructured.Unstructured) string {
	out := map[string]any{"spec": u.Object["spec"], "status": u.Object["status"], "generation": u.GetGeneration()}
	if u.GetDeletionTimestamp() != nil {
		out["deletionTimestamp"] = u.GetDeletionTimestamp().String()
	}
	b, _ := yaml.Marshal(out)
	return fmt.Sprintf("--- %s %s/%s\n%s", u.GetKind(), u.GetNamespace(), u.GetName(), b)
}

// dumpOnFailure prints a cluster-scoped object when the test fails.
func dumpOnFailure(t *testing.T, gvk schema.GroupVersionKind, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		u, err := env.c.Get(context.Background(), gvk, "", name)
		if err != nil {
			t.Logf("%s %s: %v", gvk.Kind, name, err)
			return
		}
		t.Logf("%s", describe(u))
	})
}

// read returns the first object of an example's file.
func read(t *testing.T, example, file string) *unstructured.Unstructured {
	t.Helper()
	objs, err := controlplane.ReadObjects(filepath.Join(env.root, "example", example, file))
	if err != nil || len(objs) == 0 {
		t.Fatalf("cannot read example/%s/%s: %v", example, file, err)
	}
	return objs[0]
}

// apply applies an object and deletes it when the test ends.
func apply(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := env.c.Apply(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.c.Delete(context.Background(), u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	})
	return out
}

// composition applies an example's Composition under a name of the test's
// own, with its function Input changed by input, and returns the name.
// Compositions are cluster-scoped: tests running side by side each need one.
func composition(t *testing.T, example, name string, input func(in map[string]any)) string {
	t.Helper()
	c := read(t, example, "composition.yaml")
	c.SetName(name)
	setInput(t, c, input)
	apply(t, c)
	return name
}

// setInput changes the Input of a Composition's first pipeline step.
func setInput(t *testing.T, c *unstructured.Unstructured, input func(in map[string]any)) {
	t.Helper()
	steps, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
	if len(steps) == 0 {
		t.Fatalf("composition %s has no pipeline", c.GetName())
	}
	step := steps[0].(map[string]any) //nolint:forcetypeassert // A YAML object.
	in, _ := step["input"].(map[string]any)
	if in == nil {
		in = map[string]any{}
	}
	if input != nil {
		input(in)
	}
	step["input"] = in
	if err := unstructured.SetNestedSlice(c.Object, steps, "spec", "pipeline"); err != nil {
		t.Fatal(err)
	}
}

// useComposition makes an XR or claim name its Composition: cluster-scoped
// XRs and claims (apiextensions.crossplane.io/v1) in spec.compositionRef,
// namespaced XRs (v2) in spec.crossplane.compositionRef.
func useComposition(t *testing.T, u *unstructured.Unstructured, name string) {
	t.Helper()
	path := []string{"spec", "compositionRef", "name"}
	if u.GroupVersionKind() == gvkCanaryRoute {
		path = []string{"spec", "crossplane", "compositionRef", "name"}
	}
	if err := unstructured.SetNestedField(u.Object, name, path...); err != nil {
		t.Fatal(err)
	}
}

func set(t *testing.T, u *unstructured.Unstructured, value any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		t.Fatal(err)
	}
}

// spec decodes YAML into a value for unstructured objects.
func spec(t *testing.T, s string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := yaml.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// get returns an object, or nil and what went wrong, for checks.
func get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, string) {
	u, err := env.c.Get(ctx, gvk, ns, name)
	if err != nil {
		return nil, err.Error()
	}
	return u, ""
}

// gone checks that an object does not exist.
func gone(gvk schema.GroupVersionKind, ns, name string) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, err := env.c.Get(ctx, gvk, ns, name)
		if kerrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("%s %s exists (deletionTimestamp %v, finalizers %v)", gvk.Kind, name, u.GetDeletionTimestamp(), u.GetFinalizers())
	}
}

// rolloutStatus is the XR's status.rollout.
type rolloutStatus struct {
	Phase         string `json:"phase"`
	Reason        string `json:"reason"`
	Revision      string `json:"revision"`
	Step          *int64 `json:"step"`
	StepStartedAt string `json:"stepStartedAt"`
	NextStepAt    string `json:"nextStepAt"`
	CanaryWeight  int64  `json:"canaryWeight"`
	PrimaryWeight int64  `json:"primaryWeight"`
	Message       string `json:"message"`
}

func rollout(u *unstructured.Unstructured) rolloutStatus {
	var r rolloutStatus
	m, _, _ := unstructured.NestedMap(u.Object, "status", "rollout")
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &r)
	return r
}

func (r rolloutStatus) String() string {
	step := "none"
	if r.Step != nil {
		step = strconv.FormatInt(*r.Step, 10)
	}
	return fmt.Sprintf("phase %s (reason %q), step %s, canary %d%%, primary %d%%: %q", r.Phase, r.Reason, step, r.CanaryWeight, r.PrimaryWeight, r.Message)
}

// xrState describes an XR for a wait's message: its rollout and conditions.
func xrState(u *unstructured.Unstructured) string {
	return fmt.Sprintf("rollout: %s; conditions: %s", rollout(u), controlplane.DescribeConditions(u))
}

// weights returns the weight of each backend of a route's first rule, by
// backend name.
func weights(u *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	if len(rules) == 0 {
		return out
	}
	refs, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs") //nolint:forcetypeassert // A JSON object.
	for _, r := range refs {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		w, ok := m["weight"].(int64)
		if !ok {
			w = 1 // Gateway API's default.
		}
		out[name] = w
	}
	return out
}

// accepted reports whether every parent of the route reported Accepted and
// ResolvedRefs True for its current generation.
func accepted(u *unstructured.Unstructured) bool {
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	if len(parents) == 0 {
		return false
	}
	for _, p := range parents {
		conds, _, _ := unstructured.NestedSlice(p.(map[string]any), "conditions") //nolint:forcetypeassert // A JSON object.
		ok := 0
		for _, c := range conds {
			m, _ := c.(map[string]any)
			g, _ := m["observedGeneration"].(int64)
			if (m["type"] == standin.TypeAccepted || m["type"] == standin.TypeResolvedRefs) && m["status"] == "True" && g == u.GetGeneration() {
				ok++
			}
		}
		if ok != 2 {
			return false
		}
	}
	return true
}

// routeAt checks that a route exists with a canary weight, and says what it
// saw.
func routeAt(gvk schema.GroupVersionKind, ns, name, canary string, weight int64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvk, ns, name)
		if u == nil {
			return false, why
		}
		w := weights(u)
		got, ok := w[canary]
		return ok && got == weight, fmt.Sprintf("%s %s/%s weights %v", gvk.Kind, ns, name, w)
	}
}

// A recorder follows a route's canary weight: every change, when it was
// first seen, and when the gateway first accepted the route at it.
type recorder struct {
	mu    sync.Mutex
	steps []step
}

type step struct {
	weight   int64
	seen     time.Time
	accepted time.Time
	// resourceVersion and managers are the route's when the weight was
	// first seen: which write brought it, should the order surprise.
	resourceVersion string
	managers        []string
}

// record polls a route every 100 ms until the test ends.
func record(t *testing.T, gvk schema.GroupVersionKind, ns, name, canary string) *recorder {
	r := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if u, err := env.c.Get(ctx, gvk, ns, name); err == nil {
				if w, ok := weights(u)[canary]; ok {
					r.observe(w, accepted(u), u)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return r
}

func (r *recorder) observe(w int64, acc bool, u *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if n := len(r.steps); n == 0 || r.steps[n-1].weight != w {
		fields := u.GetManagedFields()
		managers := make([]string, 0, len(fields))
		for _, m := range fields {
			managers = append(managers, fmt.Sprintf("%s %s %s at %s", m.Manager, m.Operation, m.Subresource, m.Time))
		}
		r.steps = append(r.steps, step{weight: w, seen: now, resourceVersion: u.GetResourceVersion(), managers: managers})
	}
	if s := &r.steps[len(r.steps)-1]; acc && s.accepted.IsZero() {
		s.accepted = now
	}
}

// reached checks that the recorder has seen the route at a weight, so that
// its history is complete up to there: it polls on its own.
func (r *recorder) reached(weight int64) controlplane.Check {
	return func(context.Context) (bool, string) {
		h := r.history()
		return len(h) > 0 && h[len(h)-1].weight == weight, fmt.Sprintf("recorded canary weights %v", weightsOf(h))
	}
}

// history returns the canary weights the route carried, in order.
func (r *recorder) history() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]step(nil), r.steps...)
}

func weightsOf(steps []step) []int64 {
	out := make([]int64, len(steps))
	for i, s := range steps {
		out[i] = s.weight
	}
	return out
}

// describeSteps tells each weight a recorder saw: when, in which version
// of the route, and the route's field managers then.
func describeSteps(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "%d%% seen %s in resourceVersion %s; managers %v\n", s.weight, s.seen.Format(time.StampMilli), s.resourceVersion, s.managers)
	}
	return b.String()
}
