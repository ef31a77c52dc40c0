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
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
)

// TestHooksForgedContextWithinTheXRD: attack: another pipeline step (or a
// forged context) writes the hook-calls key with records the XRD refuses:
// a result outside its enum, a transition and a reason past 256
// characters, a status past 999, negative failures. The records read from
// status are checked and bounded; those read from the context were
// written to status as they came, and the API server would then refuse
// every later status of the XR.
func TestHooksForgedContextWithinTheXRD(t *testing.T) {
	x := withUID(steppedXR(`[{weight: 10, pause: 1m}, {weight: 100}]`, `
    hooks:
      - {name: go, webhook: gate, type: confirm-rollout}
      - {name: load, webhook: gate, type: rollout}
`))
	input := hooksInput("http://gate.test/", "http://gate.test/")
	future := testNow.Add(time.Hour).UTC().Format(time.RFC3339)
	cases := map[string]map[string]any{
		"result outside the enum": {"go": map[string]any{"name": "go", "transition": "v2/start", "time": future, "result": "Maybe"}},
		"long transition and reason": {"go": map[string]any{
			"name": "go", "transition": "v2/start" + strings.Repeat("t", 2000), "time": future,
			"result": "Failed", "reason": strings.Repeat("r", 4000), "status": 5000, "failures": -3,
		}},
		"empty result": {"load": map[string]any{"name": "load", "transition": "v2/step-0", "time": future, "result": ""}},
	}
	for name, forged := range cases {
		t.Run(name, func(t *testing.T) {
			req := testRequest(t, x, input, nil)
			b, err := json.Marshal(forged)
			if err != nil {
				t.Fatal(err)
			}
			req.Context = &structpb.Struct{Fields: map[string]*structpb.Value{pipeline.HookCallsKey: structpb.NewStringValue(string(b))}}
			// No caller (a preview): nothing overwrites the records read.
			rsp, err := functionAt(testNow).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("a Fatal: %s", msg)
			}
			assertXRDAccepts(t, req, rsp)
		})
	}
}

// recorder answers 200 and keeps each payload's type and reason.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var p flaggerPayload
	_ = json.NewDecoder(req.Body).Decode(&p)
	r.mu.Lock()
	r.got = append(r.got, p.Type+" "+p.Reason)
	r.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestHooksToldNothingOfAFatalRun: a run that decides to advance and then
// is a Fatal (step 1's analysis Job is another team's: the takeover rule)
// advanced nothing: Crossplane applies nothing of it, and the next
// reconcile decides the same again. An event hook told "StepAdvanced" on
// each of those runs tells the team, over and over, of an advance that
// never happened; it is told of a transition only once a run answers it.
func TestHooksToldNothingOfAFatalRun(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	s := newSim(t, withUID(analysisXR(`[{weight: 10}, {weight: 50, analysis: [smoke]}, {weight: 100}]`, `
    hooks:
      - {name: chat, webhook: chat, type: event}
`)), emptyInput+fmt.Sprintf("webhooks:\n  - {name: chat, url: %q}\n", srv.URL))
	s.caller = &hooks.Client{}
	s.add(`{apiVersion: batch/v1, kind: Job, metadata: {name: podinfo-v2-1-smoke, namespace: test, labels: {team: other}}, spec: {x: 1}}`)
	fatals := 0
	for range 8 {
		if r := s.run(0); r.fatal != "" {
			fatals++
		}
	}
	if fatals < 3 {
		t.Fatalf("setup: want the runs reaching step 1 to be Fatals, got %d\n%s", fatals, s.describe())
	}
	if diff := cmp.Diff([]string{"event RolloutStarted"}, rec.calls()); diff != "" {
		t.Errorf("the event hook's calls, of transitions answered only: -want +got:\n%s", diff)
	}
}

// TestHooksDeterministic: the same request, with the same webhooks'
// answers, gives byte-identical desired state and context: hooks of every
// type, some answering 200 and some 503, records in status.
func TestHooksDeterministic(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/no") {
			http.Error(w, "<html>not yet</html>", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	x := withUID(steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, `
    hooks:
      - {name: a, webhook: ok, type: confirm-rollout}
      - {name: b, webhook: ok, type: pre-rollout}
      - {name: c, webhook: ko, type: rollout}
      - {name: d, webhook: ko, type: rollback}
      - {name: e, webhook: ok, type: event}
      - {name: f, webhook: ko, type: event}
      - {name: g, webhook: ok, type: post-rollout}
      - {name: h, webhook: ko, type: confirm-promotion}
      - {name: i, webhook: ko, type: confirm-traffic-increase}
`))
	input := emptyInput + fmt.Sprintf("webhooks:\n  - {name: ok, url: %q}\n  - {name: ko, url: %q}\n", srv.URL+"/yes", srv.URL+"/no")
	outs := make([]string, 0, 3)
	for range 3 {
		f := functionAt(testNow)
		f.caller = &hooks.Client{}
		// A reconcile's two calls: the second, with the first's context,
		// is the one Crossplane applies (and the one that tells).
		var rsp *fnv1.RunFunctionResponse
		for call := range 2 {
			req := testRequest(t, x, input, nil)
			if call == 1 {
				req.Context = rsp.GetContext()
			}
			var err error
			if rsp, err = f.RunFunction(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if msg := fatalOf(rsp); msg != "" {
				t.Fatalf("a Fatal: %s", msg)
			}
		}
		b, err := protojson.Marshal(&fnv1.RunFunctionResponse{Desired: rsp.GetDesired(), Context: rsp.GetContext(), Results: rsp.GetResults()})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
	}
	if !strings.Contains(outs[0], `\"name\":\"e\"`) {
		t.Fatalf("setup: no webhook's answer recorded: %.1000s", outs[0])
	}
	for i := range outs[1:] {
		if diff := cmp.Diff(outs[0], outs[i+1]); diff != "" {
			t.Errorf("run %d differs from the first: -first +this:\n%s", i+1, diff)
		}
	}
}

// TestHooksCallEventsReachTheCluster: a hook's call whose result changes
// is said in an event (HookFailed, HookSucceeded), once. Crossplane calls
// the function again within a reconcile until its requirements settle and
// applies only the last response: the calls are made on the first call,
// whose events Crossplane drops, and the later calls, which find the
// call's record in the context, said nothing.
func TestHooksCallEventsReachTheCluster(t *testing.T) {
	// A gate that is down (503, a server's error, which warns; its 403
	// would be its ordinary "not yet", which does not), then open.
	gate := &gateService{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.mu.Lock()
		open := gate.open
		gate.mu.Unlock()
		if !open {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		gate.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := newSim(t, withUID(steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, `
    hooks:
      - {name: go-ahead, webhook: gate, type: confirm-promotion, interval: 10s}
`)), hooksInput(srv.URL, srv.URL))
	s.caller = &hooks.Client{}
	var events []string
	for i := range 30 {
		if i == 20 {
			gate.set(true)
		}
		r := s.run(5 * time.Second)
		if r.fatal != "" {
			t.Fatalf("a Fatal: %s", r.fatal)
		}
		for _, e := range r.events {
			if strings.Contains(e, "Hook") {
				events = append(events, e)
			}
		}
	}
	var reasons []string
	for _, e := range events {
		for _, r := range []string{"HookFailed", "HookSucceeded"} {
			if strings.Contains(e, r) {
				reasons = append(reasons, r)
			}
		}
	}
	if diff := cmp.Diff([]string{"HookFailed", "HookSucceeded"}, reasons); diff != "" {
		t.Errorf("the hook's events, once per change: -want +got:\n%s\n%q\n%s", diff, events, s.describe())
	}
}
