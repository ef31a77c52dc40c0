package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

// flaggerPayload is the body Flagger's loadtester decodes
// (flaggerv1.CanaryWebhookPayload), and what a CanaryRoute adds.
type flaggerPayload struct {
	Name         string            `json:"name"`
	Namespace    string            `json:"namespace"`
	Phase        string            `json:"phase"`
	Type         string            `json:"type"`
	Metadata     map[string]string `json:"metadata"`
	Revision     string            `json:"revision"`
	Step         int32             `json:"step"`
	CanaryWeight float64           `json:"canaryWeight"`
	Reason       string            `json:"reason"`
}

// loadTester is a stand-in for Flagger's loadtester: it takes a payload
// whose metadata has a cmd (400 "cmd not found" otherwise, as the
// loadtester answers), answers 200 "ok", and keeps each payload.
type loadTester struct {
	mu  sync.Mutex
	got []flaggerPayload
}

func (l *loadTester) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p flaggerPayload
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&p) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if p.Metadata["cmd"] == "" {
		http.Error(w, "cmd not found", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.got = append(l.got, p)
	l.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (l *loadTester) calls() []flaggerPayload {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// slackHook is a stand-in for a Slack incoming webhook at its secret path:
// a JSON body with text (400 "invalid_payload" otherwise), "ok" on 200;
// another path is 404 "no_service", as Slack answers.
type slackHook struct {
	path string
	mu   sync.Mutex
	text []string
}

func (s *slackHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.Error(w, "no_service", http.StatusNotFound)
		return
	}
	var m struct {
		Text string `json:"text"`
	}
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&m) != nil || m.Text == "" {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.text = append(s.text, m.Text)
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (s *slackHook) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.text)
}

// gateService answers a confirm hook: 403 until opened, then 200.
type gateService struct {
	mu    sync.Mutex
	open  bool
	calls int
}

func (g *gateService) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if !g.open {
		http.Error(w, "not yet", http.StatusForbidden)
		return
	}
	_, _ = io.WriteString(w, "approved")
}

func (g *gateService) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
}

// hooksInput lists the stand-ins as the Input's webhooks; the chat's URL
// is a secret of the pipeline step's credentials.
func hooksInput(loadtester, gate string) string {
	return emptyInput + fmt.Sprintf(`webhooks:
  - {name: loadtester, url: %q, timeout: 2s}
  - {name: gate, url: %q}
  - {name: team-chat, urlFrom: {credentials: chat, key: url}, format: slack}
`, loadtester, gate)
}

// withUID gives a namespaced XR the UID the API server gives every
// object: a run on an XR without one (crossplane render) calls no webhook.
func withUID(xr string) string {
	return strings.Replace(xr, "metadata: {name: podinfo, namespace: test}", "metadata: {name: podinfo, namespace: test, uid: 5b1f0c2e-3d4a-4e5f-8a9b-0c1d2e3f4a5b}", 1)
}

// hooksXR rolls out through 10% and 50% for 30s each, then 100%, driving
// the loadtester at each step, asking the gate before Succeeded and
// telling the chat every transition.
const hooksXR = `
    hooks:
      - {name: load, webhook: loadtester, type: rollout, metadata: {cmd: "hey -z 30s http://podinfo-canary.test:9898/"}}
      - {name: go-ahead, webhook: gate, type: confirm-promotion, interval: 10s}
      - {name: tell-the-team, webhook: team-chat, type: event}
`

// TestHooksAgainstStandIns: a rollout drives Flagger's loadtester once
// per step, waits for its gate before Succeeded, and tells Slack each
// transition once, however often Crossplane calls (several calls per
// reconcile, a reconcile every 5s); the chat's secret URL appears nowhere
// the cluster or the log would show.
func TestHooksAgainstStandIns(t *testing.T) {
	lt := &loadTester{}
	ltSrv := httptest.NewServer(lt)
	defer ltSrv.Close()
	gate := &gateService{}
	gateSrv := httptest.NewServer(gate)
	defer gateSrv.Close()
	const secretPath = "/services/T0001/B0001/s3cr3tS1ackT0kenXYZ"
	slack := &slackHook{path: secretPath}
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()

	s := newSim(t, withUID(steppedXR(`[{weight: 10, pause: 30s}, {weight: 50, pause: 30s}, {weight: 100}]`, hooksXR)), hooksInput(ltSrv.URL, gateSrv.URL))
	s.caller = &hooks.Client{}
	s.credentials = map[string]*fnv1.Credentials{"chat": {Source: &fnv1.Credentials_CredentialData{CredentialData: &fnv1.CredentialData{
		Data: map[string][]byte{"url": []byte(slackSrv.URL + secretPath + "\n")},
	}}}}
	log := newRecordingLog()
	s.log = log
	s.tick = time.Second
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewRuns(reg, time.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = m

	var last simRun
	events := make([]string, 0, 64)
	for i := range 40 {
		if i == 30 {
			gate.set(true)
		}
		last = s.run(5 * time.Second)
		if last.fatal != "" {
			t.Fatalf("a run is a Fatal: %s", last.fatal)
		}
		events = append(events, last.events...)
		if i == 29 {
			if got := str(last.out["reason"]); got != "AwaitingConfirmation" {
				t.Errorf("before the gate opens, the rollout waits for it: reason %q (%s)", got, str(last.out["message"]))
			}
		}
	}
	if got := str(last.out["phase"]); got != "Succeeded" {
		t.Fatalf("phase %q, want Succeeded once the gate opened: %s\n%s", got, str(last.out["message"]), s.describe())
	}

	// The loadtester: one call per step, at the step's weight, with the
	// hook's cmd.
	calls := lt.calls()
	steps := make([]string, 0, len(calls))
	for _, p := range calls {
		steps = append(steps, fmt.Sprintf("%s %s/%s %s step %d at %g%% cmd=%q", p.Type, p.Namespace, p.Name, p.Revision, p.Step, p.CanaryWeight, p.Metadata["cmd"]))
	}
	const cmd = "hey -z 30s http://podinfo-canary.test:9898/"
	want := []string{
		fmt.Sprintf("rollout test/podinfo v2 step 0 at 10%% cmd=%q", cmd),
		fmt.Sprintf("rollout test/podinfo v2 step 1 at 50%% cmd=%q", cmd),
		fmt.Sprintf("rollout test/podinfo v2 step 2 at 100%% cmd=%q", cmd),
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("the loadtester's calls: -want +got:\n%s", diff)
	}

	// The chat: each transition once, as one line.
	msgs := slack.messages()
	var reasons []string
	for _, m := range msgs {
		for _, r := range []string{"RolloutStarted", "StepAdvanced", "AwaitingConfirmation", "RolloutSucceeded"} {
			if strings.Contains(m, r) {
				reasons = append(reasons, r)
			}
		}
		if strings.Contains(m, "\n") || !strings.Contains(m, "podinfo") || !strings.Contains(m, "v2") {
			t.Errorf("a chat message is one line naming the route and the revision: %q", m)
		}
	}
	if len(reasons) != len(msgs) {
		t.Errorf("every chat message says a transition: %q", msgs)
	}
	wantReasons := []string{"RolloutStarted", "StepAdvanced", "StepAdvanced", "AwaitingConfirmation", "RolloutSucceeded"}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("the chat's messages, each transition once: -want +got:\n%s\n%q", diff, msgs)
	}

	// The gate: asked at most once per interval (10s), at each reconcile
	// where it is due, and never before the last step.
	gate.mu.Lock()
	gateCalls := gate.calls
	gate.mu.Unlock()
	if gateCalls < 2 || gateCalls > 12 {
		t.Errorf("the gate was asked %d times in the 100s it held the rollout; want one call per 10s interval at most", gateCalls)
	}

	// The function's own metrics count each call.
	for _, c := range []struct {
		hookType, result string
		want             float64
	}{
		{"rollout", telemetry.HookSucceeded, 3},
		{"confirm-promotion", telemetry.HookRefused, float64(gateCalls - 1)},
		{"confirm-promotion", telemetry.HookSucceeded, 1},
		{"event", telemetry.HookSucceeded, float64(len(msgs))},
		{"rollback", telemetry.HookError, 0},
	} {
		got := seriesValue(t, reg, "function_canary_route_hook_calls_total", map[string]string{"type": c.hookType, "result": c.result})
		if got == nil || *got != c.want {
			t.Errorf("hook_calls_total{type=%q, result=%q} = %v, want %v", c.hookType, c.result, got, c.want)
		}
	}

	// The records.
	hs, _ := last.out["hooks"].([]any)
	if len(hs) != 3 {
		t.Errorf("status.rollout.hooks holds a record per hook, got %v", hs)
	}

	// The secret URL, whole or its token, appears nowhere.
	seen := make([]string, 0, 3+len(s.runs))
	seen = append(seen, log.String(), fmt.Sprint(events), fmt.Sprint(last.out))
	for _, r := range s.runs {
		b, _ := protojson.Marshal(r.rsp)
		seen = append(seen, string(b))
	}
	for _, where := range seen {
		if strings.Contains(where, "s3cr3tS1ackT0kenXYZ") {
			t.Fatalf("the chat's secret URL leaked: %.300s", where[strings.Index(where, "s3cr3t")-100:])
		}
	}
}

// TestHooksPreviewCallsNothing: a preview (no caller, as --now and
// crossplane render run) calls no webhook: the rollout waits at 0% for its
// confirm-rollout, and says so.
func TestHooksPreviewCallsNothing(t *testing.T) {
	gate := &gateService{open: true}
	srv := httptest.NewServer(gate)
	defer srv.Close()
	s := newSim(t, steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, `
    hooks:
      - {name: go, webhook: gate, type: confirm-rollout}
      - {name: chat, webhook: gate, type: event}
`), hooksInput(srv.URL, srv.URL))
	var last simRun
	for range 5 {
		last = s.run(10 * time.Second)
	}
	if got, want := str(last.out["message"]), "waiting at 0% to enter step 0: confirm-rollout hook go has not answered yet"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	// crossplane render without --now: the function calls webhooks, but
	// the XR render hands over has no UID, so this run calls none either.
	s.caller = &hooks.Client{}
	for range 3 {
		last = s.run(10 * time.Second)
	}
	if got, want := str(last.out["message"]), "waiting at 0% to enter step 0: confirm-rollout hook go has not answered yet"; got != want {
		t.Errorf("a render: message %q, want %q", got, want)
	}
	if gate.calls != 0 {
		t.Errorf("a preview or a render called the webhook %d times", gate.calls)
	}
}

// TestHooksWebhookRemovedMidRollout: the platform removes a webhook a
// hook names: a Fatal naming the hook's field; the cluster keeps its last
// route (Crossplane applies nothing of a Fatal).
func TestHooksWebhookRemovedMidRollout(t *testing.T) {
	lt := &loadTester{}
	srv := httptest.NewServer(lt)
	defer srv.Close()
	s := newSim(t, withUID(steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, `
    hooks:
      - {name: load, webhook: loadtester, type: rollout, metadata: {cmd: hey}}
`)), hooksInput(srv.URL, srv.URL))
	s.caller = &hooks.Client{}
	for range 3 {
		if r := s.run(10 * time.Second); r.fatal != "" {
			t.Fatalf("a run is a Fatal: %s", r.fatal)
		}
	}
	s.input = emptyInput
	r := s.run(10 * time.Second)
	if want := `spec.traffic.hooks[0].webhook: Not found: "loadtester"`; !strings.Contains(r.fatal, want) {
		t.Errorf("fatal %q, want it to say %q", r.fatal, want)
	}
}

// TestHooksHangingWebhookWithinDeadline: a webhook that never answers
// costs a run no more than its deadline: the run composes, and the record
// says there was no answer.
func TestHooksHangingWebhookWithinDeadline(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	s := newSim(t, withUID(steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, `
    hooks:
      - {name: go, webhook: gate, type: confirm-rollout}
`)), hooksInput(srv.URL, srv.URL))
	s.caller = &hooks.Client{}
	req := s.request(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	f := &Function{log: newRecordingLog(), clock: ClockFunc(func() time.Time { return s.now }), caller: s.caller}
	rsp, err := f.RunFunction(ctx, req)
	if err != nil {
		t.Fatalf("RunFunction: %v", err)
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("a hanging webhook is a Fatal: %s", r.GetMessage())
		}
	}
	status := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["rollout"].(map[string]any)
	hs, _ := status["hooks"].([]any)
	if len(hs) != 1 {
		t.Fatalf("want the call recorded, got %v", status)
	}
	rec := hs[0].(map[string]any)
	if rec["result"] != "Failed" || !strings.Contains(fmt.Sprint(rec["reason"]), "gate") {
		t.Errorf("the record of a call without an answer: %v", rec)
	}
}

// TestHooksStatusWithinTheXRD: attack: sixteen hooks at every limit of
// the XRD (names, metadata), a status whose records were written by hand
// (more than sixteen, results the XRD refuses, reasons of thousands of
// characters, failures past the maximum) and webhooks answering 500 with
// a long multi-byte body: the XR the XRD admits is read, and the status
// the run writes is one the XRD admits.
func TestHooksStatusWithinTheXRD(t *testing.T) {
	long := strings.Repeat("ü日本\u200b", 3000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, long, http.StatusInternalServerError)
	}))
	defer srv.Close()
	types := []string{"confirm-rollout", "pre-rollout", "rollout", "confirm-traffic-increase", "confirm-promotion", "post-rollout", "rollback", "event"}
	var hs, recs strings.Builder
	for i := range 16 {
		name := fmt.Sprintf("h%02d-%s", i, strings.Repeat("x", 28))
		md := make([]string, 0, 16)
		for k := range 16 {
			md = append(md, fmt.Sprintf("%q: %q", fmt.Sprintf("k%02d%s", k, strings.Repeat("k", 60)), strings.Repeat("v", 1024)))
		}
		fmt.Fprintf(&hs, "      - {name: %s, webhook: gate, type: %s, interval: 5s, failureLimit: 10, metadata: {%s}}\n", name, types[i%len(types)], strings.Join(md, ", "))
	}
	for i := range 20 {
		result := []string{"Succeeded", "Failed"}[i%2]
		fmt.Fprintf(&recs, "      - {name: h%02d-%s, transition: %q, time: \"2026-12-02T09:59:00Z\", result: %s, status: 999, failures: 1000000, reason: %q}\n",
			i%16, strings.Repeat("x", 28), strings.Repeat("t", 256), result, strings.Repeat("r", 256))
	}
	x := withUID(steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, "    hooks:\n"+hs.String())) + `
status:
  rollout:
    phase: Progressing
    reason: StepAdvanced
    revision: v2
    step: 1
    stepStartedAt: "2026-12-02T09:58:00Z"
    canaryWeight: 50
    primaryWeight: 50
    hooks:
` + recs.String()
	input := hooksInput(srv.URL, srv.URL)
	req := testRequest(t, x, input, nil)
	composite := req.GetObserved().GetComposite().GetResource().AsMap()
	st := composite["status"].(map[string]any)["rollout"].(map[string]any)
	st["hooks"] = st["hooks"].([]any)[:16] // the XRD holds 16; the read is checked with 20 below
	if errs := crdschema.XRDs(t, xrdFiles...).Validate(composite); len(errs) > 0 {
		t.Fatalf("setup: the XRD refuses the XR: %v", errs)
	}
	f := functionAt(testNow)
	f.caller = &hooks.Client{}
	for _, all := range []bool{false, true} {
		req := testRequest(t, x, input, nil)
		if !all {
			req = testRequest(t, x, input, nil)
			c := req.GetObserved().GetComposite().GetResource().AsMap()
			c["status"].(map[string]any)["rollout"].(map[string]any)["hooks"] = st["hooks"]
			req.Observed.Composite.Resource = mustStruct(t, c)
		}
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if msg := fatalOf(rsp); msg != "" {
			t.Fatalf("a Fatal: %s", msg)
		}
		assertXRDAccepts(t, req, rsp)
		out := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["rollout"].(map[string]any)
		called := 0
		for _, r := range out["hooks"].([]any) {
			if rec := r.(map[string]any); rec["status"] == float64(500) {
				called++
			}
		}
		if called == 0 {
			t.Errorf("no webhook answered 500 in the records: the run called none: %v", out["message"])
		}
	}
}

// TestHooksChatWebhookDecidesNothing: a chat's webhook (format slack,
// msteams, discord) answers 200 to any message: a hook whose answer
// decides (a confirmation, a rollback, a load test) naming one is a Fatal
// naming the hook; event and post-rollout hooks may use it.
func TestHooksChatWebhookDecidesNothing(t *testing.T) {
	for _, tc := range []struct {
		hookType string
		fatal    bool
	}{
		{"confirm-rollout", true},
		{"pre-rollout", true},
		{"rollout", true},
		{"confirm-traffic-increase", true},
		{"confirm-promotion", true},
		{"rollback", true},
		{"event", false},
		{"post-rollout", false},
	} {
		t.Run(tc.hookType, func(t *testing.T) {
			x := steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, "    hooks:\n      - {name: h, webhook: team-chat, type: "+tc.hookType+"}\n")
			req := testRequest(t, x, hooksInput("http://loadtester.test/", "http://gate.test/"), nil)
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			msg := fatalOf(rsp)
			want := "spec.traffic.hooks[0].webhook: Invalid value: \"team-chat\": a slack webhook posts a chat message"
			if !tc.fatal && msg != "" {
				t.Errorf("a %s hook on a slack webhook: Fatal %q, want none", tc.hookType, msg)
			}
			if got := strings.Contains(msg, want); got != tc.fatal {
				t.Errorf("a %s hook on a slack webhook: Fatal %q, want a Fatal saying %q: %v", tc.hookType, msg, want, tc.fatal)
			}
		})
	}
}

// eventHook is a stand-in of a generic webhook that keeps the reason of
// each event it is told.
type eventHook struct {
	mu      sync.Mutex
	reasons map[string]int
}

func (e *eventHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p flaggerPayload
	if json.NewDecoder(r.Body).Decode(&p) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.reasons[p.Reason]++
	e.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

// TestHooksLaggingCaches: the fresh-state schedules (a rollout of v2, an
// abort and its clearing, then v3, a reconcile every 10s on caches that
// lag by up to 4 versions) with an event hook: every transition the
// cluster was told (the results of the answers Crossplane applied) is told
// to the hook exactly once; a stale read, answered with the newest
// decision, tells nothing again.
func TestHooksLaggingCaches(t *testing.T) {
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			chat := &eventHook{reasons: map[string]int{}}
			srv := httptest.NewServer(chat)
			defer srv.Close()
			s, wrong := freshScenarioXR(t, steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, `
    hooks:
      - {name: chat, webhook: gate, type: event}
`), seed, true, func(s *laggingSim) {
				s.input = hooksInput(srv.URL, srv.URL)
				s.fn.caller = &hooks.Client{}
			})
			if len(wrong) > 0 {
				t.Fatalf("the fresh-state checks failed:\n%s", strings.Join(wrong, "\n"))
			}
			chat.mu.Lock()
			defer chat.mu.Unlock()
			for _, reason := range rollout.EventReasons {
				if told, said := chat.reasons[reason], s.reasons[reason]; told != said {
					t.Errorf("%s: told the event hook %d times, said to the cluster %d times", reason, told, said)
				}
			}
			if chat.reasons["RolloutSucceeded"] == 0 {
				t.Errorf("the event hook was never told the rollout succeeded: %v", chat.reasons)
			}
		})
	}
}
