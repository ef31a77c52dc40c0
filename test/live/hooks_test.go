package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// The live proof of traffic.hooks (API.md, "Webhooks, notifications and
// more metric providers"): the function, under a real Crossplane that
// calls it many times per reconcile, calls each hook's webhook (a stand-in
// in the test process) at the rollout's moments, once per transition.

// hookInterval is every hook's interval in these tests: the shortest the
// XRD admits.
const hookInterval = 5 * time.Second

// TestHooksLoadTestAndMetric: a rollout hook calls a loadtester (Flagger's
// protocol: a POST naming a hey command in metadata.cmd, answered 200
// "ok"), which then sends the load through the real gateway to the route's
// hostname; nothing else sends requests. The metric (a real Prometheus
// scraping the gateway) judges each step by the canary's share of that
// load, and the rollout Succeeds. The loadtester got exactly one call per
// step, at the step's weight, and the canary backend answered exactly the
// canary's share the loadtester counted.
func TestHooksLoadTestAndMetric(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	prom := startPrometheus(t)
	ns := newNamespace(t, "hookload")
	lt := startLoadTester(t)
	// The load lasts about a step's pause (10s), so that each of the
	// step's measurements (an interval, 5s, or more after it started)
	// has its requests in its window.
	cmd := fmt.Sprintf("hey -z 10s -q 25 http://%s/", hostname(ns))

	xr := trafficXR(t, ns, freePort(t), "")
	traffic := spec(t, fmt.Sprintf(`
steps: %s
progressDeadline: 1m
metrics: [{name: error-rate, provider: %s, interval: 5s, successWhen: "result <= 0.05", failureLimit: 2}]
hooks: [{name: load, webhook: loadtester, type: rollout, interval: 5s, metadata: {cmd: %q}}]
`, metricSteps, ns, cmd))
	metrics, _ := traffic["metrics"].([]any)
	m, _ := metrics[0].(map[string]any)
	m["query"] = errorRatio
	set(t, xr, traffic, "spec", "traffic")
	useComposition(t, xr, hooksComposition(t, "metrics", ns+"-hooks", func(in map[string]any) {
		in["metricProviders"] = []any{map[string]any{"name": ns, "prometheus": map[string]any{"address": prom, "timeout": "5s"}}}
		in["webhooks"] = []any{webhook("loadtester", lt.url("/"), "")}
	}, nil))
	rec := record(t, gvkHTTPRoute, ns, "web", "web-canary")
	start := time.Now()
	apply(t, xr)
	pri := serve(t, ns, "web-primary", primary)
	can := serve(t, ns, "web-canary", canary)

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	took := time.Since(start)
	lt.wait()
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}

	// One call per step, each at the step's weight, saying Flagger's
	// payload.
	calls := lt.received()
	weightsOfSteps := []float64{20, 50, 100}
	if len(calls) != len(weightsOfSteps) {
		t.Fatalf("the loadtester received %d calls, want one per step (%d):\n%s", len(calls), len(weightsOfSteps), lt.describe())
	}
	for i, c := range calls {
		p := c.p
		if p.Type != "rollout" || p.Step != int32(i) || p.CanaryWeight != weightsOfSteps[i] || p.Metadata["cmd"] != cmd ||
			p.Name != "web" || p.Namespace != ns || p.Revision != "v2" || p.Phase != "Progressing" || c.status != http.StatusOK {
			t.Errorf("call %d: %s %s, want type rollout, step %d at %g%%, route %s/web, revision v2, Progressing, metadata.cmd %q", i, c, c.body, i, weightsOfSteps[i], ns, cmd)
		}
	}

	// The gateway carried the load: the canary backend answered exactly
	// what the loadtester counted as the canary's (nothing else sent a
	// request yet), about the step's share of each call's load.
	loads := lt.answers()
	canaryAnswers, primaryAnswers := 0, 0
	for i, a := range loads {
		c, p := a[canary+" 200"], a[primary+" 200"]
		canaryAnswers, primaryAnswers = canaryAnswers+c, primaryAnswers+p
		total := 0
		for _, n := range a {
			total += n
		}
		t.Logf("the load of step %d (%g%%): %d requests answered %s", i, weightsOfSteps[i], total, describeCounts(a))
		// Traefik writes a new route's Accepted a moment before it serves
		// it (it applies configurations at most every 500 ms): the first
		// requests of step 0, the route's first configuration, may get
		// the gateway's own 404 (no route for the host yet), 500 (the
		// route, not yet its backends' Services) or 502 (a backend not
		// listening yet: the test serves the Services once they exist), at
		// most two seconds of them. Every later step's route replaces a
		// route it serves.
		byGateway := 0
		for who, n := range a {
			if i == 0 && strings.HasPrefix(who, "the gateway ") {
				byGateway += n
			}
		}
		if total < 100 || c+p+byGateway != total || byGateway > 50 {
			t.Errorf("the load of step %d: %s, want about 250 requests, each answered 200 by a backend", i, describeCounts(a))
			continue
		}
		share := 100 * float64(c) / float64(c+p)
		// The load outlasts its step's pause by a second or two: the next
		// step's weight may serve its last requests.
		if share < weightsOfSteps[i]-12 || share > weightsOfSteps[i]+12 {
			t.Errorf("the load of step %d: the canary answered %.0f%%, want about the step's %g%%", i, share, weightsOfSteps[i])
		}
	}
	if int64(canaryAnswers) != can.Requests() || int64(primaryAnswers) != pri.Requests() {
		t.Errorf("the backends answered canary %d, primary %d; the loadtester counted canary %d, primary %d: want the same", can.Requests(), pri.Requests(), canaryAnswers, primaryAnswers)
	}

	// (The recorder polls every 100 ms: it sees the route's acceptance up
	// to 100 ms after the function did.)
	if h := rec.history(); len(h) > 0 {
		t.Logf("the route at %d%% was first seen at %s, accepted at %s; the loadtester was called at %s", h[0].weight,
			h[0].seen.UTC().Format("15:04:05.000"), h[0].accepted.UTC().Format("15:04:05.000"), calls[0].at.UTC().Format("15:04:05.000"))
	}

	// The metric judged every step by that load, and passed it.
	ms := measurements(u)["error-rate"]
	t.Logf("error-rate measurements: %v", ms)
	byStep := verdicts(ms)
	for step := range int32(3) {
		if byStep[step]["Passed"] == 0 {
			t.Errorf("step %d: no passing measurement: %v", step, ms)
		}
	}
	checkQueries(t, ns, len(ms))
	// The transition names the revision and the step (and, since the
	// hooks' review, when the step started).
	if r := hookRecords(u)["load"]; r.Result != "Succeeded" || r.Status != 200 || !strings.HasPrefix(r.Transition, "v2/step-2") {
		t.Errorf("status.rollout.hooks of load: %+v, want Succeeded 200 for v2/step-2", r)
	}
	if got := weightsOf(rec.history()); len(got) != 3 || got[0] != 20 || got[1] != 50 || got[2] != 100 {
		t.Errorf("the route's canary weights, in order: %v, want [20 50 100]", got)
	}
	awaitAnswers(t, "succeeded", probe{host: hostname(ns)}, only(canary))
	t.Logf("the rollout succeeded %s after the XR was created", took.Round(100*time.Millisecond))
}

// TestHooksRollbackMidStep: a rollback hook answering 503 is asked at
// most once per interval while the rollout progresses, and changes
// nothing (no event, no hold);
// once it answers 200, mid-step (at 50%, the step's pause far from over),
// the rollout is Aborted (RollbackRequested) and every request through the
// real gateway reaches the primary. It stays Aborted however often
// Crossplane reconciles: nothing cleared restarts it, and the rollback
// hook, asked only while a rollout is active, is not called again.
//
// The abort follows the hook's 200 within the hook's interval (5s), not
// the step's TTL: a progressing rollout comes back when its rollback
// hooks are due (rollout.rollbackDue; found by this test, when the abort
// took a minute).
func TestHooksRollbackMidStep(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	rollbackMidStep(t, "hookrb", hookInterval+10*time.Second)
}

// rollbackMidStep runs TestHooksRollbackMidStep in a namespace of prefix;
// the abort must follow the hook's 200 within within.
func rollbackMidStep(t *testing.T, prefix string, within time.Duration) {
	t.Helper()
	ns := newNamespace(t, prefix)
	rb := startHookStandIn(t, "rollback", nil)
	rb.status.Store(http.StatusServiceUnavailable)

	xr := trafficXR(t, ns, freePort(t), `
traffic:
  steps: [{weight: 20, pause: 3s}, {weight: 50, pause: 10m}, {weight: 100}]
  hooks: [{name: stop, webhook: gate, type: rollback, interval: 5s}]
`)
	useComposition(t, xr, hooksComposition(t, "progressive", ns+"-hooks", func(in map[string]any) {
		in["webhooks"] = []any{webhook("gate", rb.url("/rollback"), "")}
	}, nil))
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	p := probe{host: hostname(ns)}

	await(t, settle, "step 1 (50%), its pause of 10m running", xrAt(gvkCanaryRoute, ns, "web", "Progressing", 1, 50))
	awaitAnswers(t, "step 1", p, split(50))
	// Asked at step 1, refused: the rollout goes on.
	await(t, settle, "the rollback hook asked at step 1", func(context.Context) (bool, string) {
		calls := rb.received()
		return len(calls) > 0 && calls[len(calls)-1].p.Step == 1, rb.describe()
	})
	if u, why := get(t.Context(), gvkCanaryRoute, ns, "web"); u == nil {
		t.Fatal(why)
	} else if r := rollout(u); r.Phase != "Progressing" {
		t.Fatalf("a rollback hook answering 503: %s, want Progressing", r)
	} else if rec := hookRecords(u)["stop"]; rec.Result != "Failed" || rec.Status != 503 {
		t.Errorf("status.rollout.hooks of stop: %+v, want Failed 503", rec)
	}

	rb.status.Store(http.StatusOK)
	flipped := time.Now()
	await(t, within+settle, "the rollout Aborted (RollbackRequested) at 0%", rolloutEnded(ns, "web", "Aborted", "RollbackRequested", 0))
	took := time.Since(flipped)
	awaitAnswers(t, "aborted", p, only(primary))
	calls := rb.received()
	if last := calls[len(calls)-1]; last.status != http.StatusOK || last.p.Type != "rollback" || last.p.Step != 1 || last.p.CanaryWeight != 50 {
		t.Errorf("the last call: %s, want a rollback call at step 1 (50%%) answered 200", last)
	}
	// The hook was asked at most once per interval (the status keeps
	// seconds: an interval less one second), whatever the reconcile rate.
	for i := 1; i < len(calls); i++ {
		if d := calls[i].at.Sub(calls[i-1].at); d < hookInterval-time.Second {
			t.Errorf("calls %d and %d of the rollback hook are %s apart, want its interval (%s) or more:\n%s", i-1, i, d, hookInterval, rb.describe())
		}
	}
	if took > within {
		t.Errorf("the rollout aborted %s after the rollback hook answered 200, want within %s; the hook's calls:\n%s", took.Round(100*time.Millisecond), within, rb.describe())
	}

	// Later reconciles: still Aborted, all traffic on the primary, no
	// call of the rollback hook.
	n := rb.count()
	poke(t, ns, "web", 5)
	time.Sleep(hookInterval + time.Second)
	poke(t, ns, "web", 1)
	u, why := get(t.Context(), gvkCanaryRoute, ns, "web")
	if u == nil {
		t.Fatal(why)
	}
	if r := rollout(u); r.Phase != "Aborted" || r.Reason != "RollbackRequested" || r.CanaryWeight != 0 {
		t.Errorf("after later reconciles: %s, want still Aborted (RollbackRequested) at 0%%", r)
	}
	if got := rb.count(); got != n {
		t.Errorf("the rollback hook was called %d more times after the abort, want none:\n%s", got-n, rb.describe())
	}
	mustAnswer(t, "aborted, after later reconciles", p, batch, primary)
	t.Logf("the rollout aborted %s after the rollback hook answered 200; it was called %d times", took.Round(100*time.Millisecond), len(calls))
}

// slackLine is a slack body's text: the route, the revision, the phase,
// (the reason: the message), the step and weights.
var slackLine = regexp.MustCompile(`^(\S+)/web: revision v2 (\w+) \((\w+): .*\); step (\d+), canary (\d+)%, primary (\d+)%$`)

// TestHooksEventEveryTransitionOnce: two event hooks, one calling a
// generic webhook, one a Slack incoming webhook whose secret URL the
// function reads from the pipeline step's credentials (a Secret), are
// each told every transition of a full rollout exactly once, though
// Crossplane calls the function many times per reconcile: the same
// events, in the same order, as the XR's Kubernetes events. The secret
// URL shows nowhere in the XR.
func TestHooksEventEveryTransitionOnce(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "hookev")
	gen := startHookStandIn(t, "generic", nil)
	chat := startHookStandIn(t, "slack", nil)
	const token = "T0000LIVE/B0000LIVE/x7Hq2m9KpR4tW8vZ3nYb6cLd"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns},
		StringData: map[string]string{"url": chat.url("/services/"+token) + "\n"},
	}
	if _, err := env.c.Kube.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	xr := trafficXR(t, ns, freePort(t), `
traffic:
  steps: [{weight: 20, pause: 3s}, {weight: 50, pause: 3s}, {weight: 100}]
  hooks:
    - {name: tell, webhook: events, type: event}
    - {name: tell-the-team, webhook: team-chat, type: event}
`)
	useComposition(t, xr, hooksComposition(t, "progressive", ns+"-hooks", func(in map[string]any) {
		in["webhooks"] = []any{
			webhook("events", gen.url("/events"), ""),
			map[string]any{"name": "team-chat", "urlFrom": map[string]any{"credentials": "chat", "key": "url"}, "format": "slack"},
		}
	}, []any{map[string]any{"name": "chat", "source": "Secret", "secretRef": map[string]any{"namespace": ns, "name": "chat"}}}))
	start := time.Now()
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)

	await(t, settle, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	took := time.Since(start)
	// The last event's calls are made in the run that said it; a later
	// run must not repeat any: let Crossplane reconcile a few times.
	poke(t, ns, "web", 3)

	calls := gen.received()
	told := make([]string, 0, len(calls))
	seen := map[string]int{}
	for i, c := range calls {
		p := c.p
		key := fmt.Sprintf("%s step %d %g%%", p.Reason, p.Step, p.CanaryWeight)
		told = append(told, key)
		seen[p.Reason+"\x00"+p.Message]++
		if seen[p.Reason+"\x00"+p.Message] > 1 {
			t.Errorf("call %d: %s %q told again", i, key, p.Message)
		}
		if p.Type != "event" || p.Name != "web" || p.Namespace != ns || p.Revision != "v2" || c.path != "/events" || c.status != http.StatusOK {
			t.Errorf("call %d: %s %s, want an event of revision v2 of %s/web at /events", i, c, c.body, ns)
		}
	}
	t.Logf("the generic webhook was told: %q", told)
	want := []string{"RolloutStarted step 0 20%", "StepAdvanced step 1 50%", "StepAdvanced step 2 100%", "RolloutSucceeded step 2 100%"}
	if strings.Join(told, "|") != strings.Join(want, "|") {
		t.Errorf("the generic webhook was told %q, want each transition once: %q", told, want)
	}

	// The Kubernetes events of the XR: the same transitions. Crossplane
	// records them after it applies the answer, and the API server serves
	// them a moment later: they are awaited.
	for _, reason := range []string{"RolloutStarted", "StepAdvanced", "RolloutSucceeded"} {
		var toldMsgs []string
		for _, c := range calls {
			if c.p.Reason == reason {
				toldMsgs = append(toldMsgs, c.p.Message)
			}
		}
		want := strings.Join(slices.Sorted(slices.Values(toldMsgs)), "|")
		await(t, settle, "the XR's "+reason+" events say what the webhook was told", func(ctx context.Context) (bool, string) {
			msgs, _, err := eventsOf(ctx, ns, "web", reason)
			if err != nil {
				return false, err.Error()
			}
			// Crossplane says which pipeline step an event came from.
			for i := range msgs {
				msgs[i] = strings.TrimPrefix(msgs[i], `Pipeline step "canary-route": `)
			}
			got := strings.Join(msgs, "|")
			return got == want, fmt.Sprintf("the XR's events say %q, the webhook was told %q", msgs, toldMsgs)
		})
	}

	// The Slack webhook: the same transitions, one line each, at the
	// secret URL.
	lines := chat.received()
	var chatTold []string
	for i, c := range lines {
		var msg struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c.body, &msg); err != nil || c.path != "/services/"+token {
			t.Errorf("slack call %d at %s: %s (%v), want {text} at the secret URL's path", i, c.path, c.body, err)
			continue
		}
		m := slackLine.FindStringSubmatch(msg.Text)
		if len(m) != 7 || m[1] != ns {
			t.Errorf("slack call %d: %q, want one line: %s/web: revision v2 PHASE (REASON: message); step N, canary W%%, primary P%%", i, msg.Text, ns)
			continue
		}
		chatTold = append(chatTold, fmt.Sprintf("%s step %s %s%%", m[3], m[4], m[5]))
	}
	if strings.Join(chatTold, "|") != strings.Join(want, "|") {
		t.Errorf("the slack webhook was told %q, want each transition once: %q", chatTold, want)
	}
	if u, why := get(t.Context(), gvkCanaryRoute, ns, "web"); u == nil {
		t.Fatal(why)
	} else if s := describe(u) + dump(t.Context(), ns); strings.Contains(s, "x7Hq2m9KpR4tW8vZ3nYb6cLd") {
		t.Errorf("the secret URL's token shows in the namespace's objects or events:\n%s", s)
	} else if recs := hookRecords(u); recs["tell"].Result != "Succeeded" || recs["tell-the-team"].Result != "Succeeded" {
		t.Errorf("status.rollout.hooks: %+v, want both Succeeded", recs)
	}
	t.Logf("the rollout succeeded %s after the XR was created; %d generic and %d slack calls", took.Round(100*time.Millisecond), len(calls), len(lines))
}

// TestHooksSteadyStateCallsNothing: hooks of every kind that is told or
// asked without holding (event, post-rollout, rollout, rollback) added to
// a CanaryRoute whose rollout already Succeeded are called on none of the
// reconciles that follow; a new revision's rollout calls them; once it
// Succeeds, post-rollout is called once and then, on the many steady-state
// reconciles, nothing is.
func TestHooksSteadyStateCallsNothing(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "hookidle")
	// Every hook answers 200 but the rollback hook, which answers 503: no
	// rollback.
	all := startHookStandIn(t, "all", func(p hookPayload) (int, string) {
		if p.Type == "rollback" {
			return http.StatusServiceUnavailable, "no rollback"
		}
		return http.StatusOK, "ok"
	})
	xr := trafficXR(t, ns, freePort(t), `
traffic:
  steps: [{weight: 50, pause: 3s}, {weight: 100}]
`)
	useComposition(t, xr, hooksComposition(t, "progressive", ns+"-hooks", func(in map[string]any) {
		in["webhooks"] = []any{webhook("all", all.url("/"), "")}
	}, nil))
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	await(t, settle, "revision v2 Succeeded at 100%, without hooks", rolloutEnded(ns, "web", "Succeeded", "", 100))

	// Before a rollout: the hooks added, Crossplane reconciling.
	patchTraffic(t, ns, "web", `{"hooks":[
  {"name":"tell","webhook":"all","type":"event"},
  {"name":"after","webhook":"all","type":"post-rollout"},
  {"name":"load","webhook":"all","type":"rollout","metadata":{"cmd":"hey -z 1s -q 1 http://example.test/"}},
  {"name":"stop","webhook":"all","type":"rollback","interval":"5s"}]}`)
	poke(t, ns, "web", 5)
	time.Sleep(hookInterval)
	poke(t, ns, "web", 1)
	if n := all.count(); n != 0 {
		t.Fatalf("steady state before a rollout: the hooks were called %d times, want none:\n%s", n, all.describe())
	}

	// A new revision rolls out: the hooks are called.
	r, err := env.c.Resource(t.Context(), gvkCanaryRoute, ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"canary":{"revision":"v3"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, settle, "revision v3 Succeeded at 100%", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, "web")
		if u == nil {
			return false, why
		}
		s := rollout(u)
		return s.Revision == "v3" && s.Phase == "Succeeded" && s.CanaryWeight == 100, xrState(u)
	})
	await(t, settle, "post-rollout called", func(context.Context) (bool, string) {
		for _, c := range all.received() {
			if c.p.Type == "post-rollout" {
				return true, ""
			}
		}
		return false, all.describe()
	})
	during := all.received()
	byType := map[string]int{}
	for _, c := range during {
		byType[c.p.Type]++
		if c.p.Revision != "v3" {
			t.Errorf("call %s: want revision v3's", c)
		}
	}
	t.Logf("revision v3's rollout called: %v", byType)
	if byType["post-rollout"] != 1 || byType["rollout"] != 2 || byType["event"] == 0 {
		t.Errorf("revision v3's rollout called %v, want post-rollout once, rollout once per step (2), events:\n%s", byType, all.describe())
	}

	// After it: steady-state reconciles call nothing.
	poke(t, ns, "web", 5)
	time.Sleep(hookInterval)
	poke(t, ns, "web", 1)
	if after := all.received(); len(after) != len(during) {
		t.Errorf("steady state after the rollout: %d more calls, want none:\n%s", len(after)-len(during), all.describe())
	}
}

// TestHooksRenderCallsNothing: a preview, as crossplane render makes one
// (the function started with --now, as hack/render.sh and test/e2e run
// it), of a rollout whose hooks would all be asked or told on this run
// (a rollout hook at its step's weight, a confirm-traffic-increase before
// the next step, a rollback, an event), calls none of their webhooks: the
// stand-in receives nothing, and the preview says which hook the rollout
// waits for. It needs no control plane: the real crossplane CLI and the
// function's binary, built from this tree.
func TestHooksRenderCallsNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cli, err := controlplane.Tool(ctx, env.root, "crossplane")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fn := filepath.Join(dir, "function")
	build := exec.CommandContext(ctx, "go", "build", "-o", fn, ".")
	build.Dir = env.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr, err := loopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	// The example's instant: step 1's pause has just ended.
	srv := exec.CommandContext(ctx, fn, "--insecure", "--address="+addr, "--metrics-address=", "--now=2026-12-02T10:07:00Z")
	var logs strings.Builder
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	await(t, settle, "the function listening on "+addr, func(context.Context) (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		_ = c.Close()
		return true, ""
	})

	all := startHookStandIn(t, "all", nil)
	xr := read(t, "progressive", "xr.yaml")
	set(t, xr, spec(t, `x:
- {name: load, webhook: all, type: rollout, metadata: {cmd: "hey -z 1m http://podinfo-canary.test:9898/"}}
- {name: go-ahead, webhook: all, type: confirm-traffic-increase}
- {name: stop, webhook: all, type: rollback}
- {name: tell, webhook: all, type: event}
- {name: after, webhook: all, type: post-rollout}`)["x"], "spec", "traffic", "hooks")
	comp := read(t, "progressive", "composition.yaml")
	setInput(t, comp, func(in map[string]any) { in["webhooks"] = []any{webhook("all", all.url("/"), "")} })
	fns := read(t, "progressive", "functions.yaml")
	fns.SetAnnotations(map[string]string{
		"render.crossplane.io/runtime":                    "Development",
		"render.crossplane.io/runtime-development-target": addr,
	})
	files := map[string]*unstructured.Unstructured{"xr.yaml": xr, "composition.yaml": comp, "functions.yaml": fns}
	for name, u := range files {
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ex := filepath.Join(env.root, "example", "progressive")
	args := []string{
		"render", filepath.Join(dir, "xr.yaml"), filepath.Join(dir, "composition.yaml"), filepath.Join(dir, "functions.yaml"),
		"--xrd", filepath.Join(env.root, "example", "definitions", "canaryroute-namespaced.yaml"),
		"--observed-resources", filepath.Join(ex, "observed.yaml"), "--required-resources", filepath.Join(ex, "required.yaml"),
		"--include-function-results",
	}
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crossplane %s: %v\n%s\nthe function's log:\n%s", strings.Join(args, " "), err, stderr.String(), logs.String())
	}
	// Every call the stand-in could get would have been made by now: the
	// render has answered.
	if n := all.count(); n != 0 {
		t.Errorf("a preview called the webhooks %d times, want none:\n%s", n, all.describe())
	}
	docs := strings.Split(string(out), "\n---\n")
	rendered := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(docs[0], "---\n")), &rendered.Object); err != nil {
		t.Fatalf("the rendered XR: %v\n%s", err, out)
	}
	r := rollout(rendered)
	t.Logf("the preview's rollout: %s", r)
	if r.Phase != "Progressing" || r.Step == nil || *r.Step != 1 || r.CanaryWeight != 25 || !strings.Contains(r.Message, "rollout hook load has not answered yet") {
		t.Errorf("the preview's rollout: %s; want step 1 held at 25%%, saying that the rollout hook load has not answered yet:\n%s", r, out)
	}
	if recs := hookRecords(rendered); len(recs) != 0 {
		t.Errorf("the preview recorded calls %v, want none", recs)
	}
}
