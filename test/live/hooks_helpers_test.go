package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Hooks against stand-ins of the webhooks they call: each an HTTP server
// in the test process, on loopback, which the function reaches as it
// reaches the tests' Prometheus (it runs out of cluster, as a local
// process). Each records every call it receives.

// hookPayload is the generic body of a hook's call: Flagger's payload and
// what a CanaryRoute adds.
type hookPayload struct {
	Name         string            `json:"name"`
	Namespace    string            `json:"namespace"`
	Phase        string            `json:"phase"`
	Type         string            `json:"type"`
	Metadata     map[string]string `json:"metadata"`
	Revision     string            `json:"revision"`
	Step         int32             `json:"step"`
	CanaryWeight float64           `json:"canaryWeight"`
	Reason       string            `json:"reason"`
	Message      string            `json:"message"`
	Timestamp    time.Time         `json:"timestamp"`
}

// hookCall is one call a stand-in received.
type hookCall struct {
	at     time.Time
	path   string
	body   []byte
	p      hookPayload
	status int
}

func (c hookCall) String() string {
	return fmt.Sprintf("%s %s %s type %s step %d at %g%% phase %s reason %s (answered %d)",
		c.at.UTC().Format("15:04:05.000"), c.path, c.p.Revision, c.p.Type, c.p.Step, c.p.CanaryWeight, c.p.Phase, c.p.Reason, c.status)
}

// A hookStandIn is a webhook: it answers each POST with its current status
// (200 "ok" unless set), and records the call.
type hookStandIn struct {
	name   string
	srv    *httptest.Server
	status atomic.Int32
	// onCall, when set, runs for each call before it is answered, and may
	// change the status it answers.
	onCall func(p hookPayload) (int, string)

	mu    sync.Mutex
	calls []hookCall
}

// startHookStandIn starts a stand-in webhook, closed when the test ends.
// onCall, when not nil, answers each call instead.
func startHookStandIn(t *testing.T, name string, onCall func(p hookPayload) (int, string)) *hookStandIn {
	t.Helper()
	h := &hookStandIn{name: name, onCall: onCall}
	h.status.Store(http.StatusOK)
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		h.srv.Close()
		if t.Failed() {
			t.Logf("the stand-in %s received:\n%s", name, h.describe())
		}
	})
	return h
}

func (h *hookStandIn) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	c := hookCall{at: time.Now(), path: r.URL.Path, body: body}
	_ = json.Unmarshal(body, &c.p)
	status, answer := int(h.status.Load()), "ok"
	if status >= 300 {
		answer = http.StatusText(status)
	}
	switch {
	case r.Method != http.MethodPost:
		status, answer = http.StatusMethodNotAllowed, "POST only"
	case h.onCall != nil:
		status, answer = h.onCall(c.p)
	}
	c.status = status
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

// url is the stand-in's address, with a path.
func (h *hookStandIn) url(path string) string { return h.srv.URL + path }

// received are the calls so far, in order.
func (h *hookStandIn) received() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookCall(nil), h.calls...)
}

func (h *hookStandIn) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

func (h *hookStandIn) describe() string {
	var b strings.Builder
	for _, c := range h.received() {
		fmt.Fprintf(&b, "%s: %s\n", c, c.body)
	}
	return b.String()
}

// A loadTester stands in for Flagger's loadtester: it takes a hook's call
// whose metadata.cmd is a hey command line (hey -z DURATION -q RATE URL),
// answers 200 "ok" at once, and then sends the load through the real
// gateway, to the URL's host, as hey would: RATE requests a second for
// DURATION. It counts who answered the load of each call.
type loadTester struct {
	*hookStandIn

	ctx  context.Context
	wg   sync.WaitGroup
	mu   sync.Mutex
	load []map[string]int // by call, who answered
}

func startLoadTester(t *testing.T) *loadTester {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &loadTester{ctx: ctx}
	t.Cleanup(func() { cancel(); l.wg.Wait() })
	// Registered first, run last: the server closes before the loads are
	// waited for.
	l.hookStandIn = startHookStandIn(t, "loadtester", l.accept)
	return l
}

// accept is the loadtester's answer: 400 without a command it can run,
// else 200 "ok" and the load, in the background.
func (l *loadTester) accept(p hookPayload) (int, string) {
	cmd := p.Metadata["cmd"]
	if cmd == "" {
		return http.StatusBadRequest, "cmd not found"
	}
	d, rate, target, err := parseHey(cmd)
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	l.mu.Lock()
	i := len(l.load)
	l.load = append(l.load, map[string]int{})
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		client := &http.Client{
			Timeout:       5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true},
		}
		defer client.CloseIdleConnections()
		p := probe{host: target.Host}
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		end := time.After(d)
		for {
			select {
			case <-l.ctx.Done():
				return
			case <-end:
				return
			case <-tick.C:
			}
			who := send(l.ctx, client, p)
			if l.ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.load[i][who]++
			l.mu.Unlock()
		}
	}()
	return http.StatusOK, "ok"
}

// wait waits for the load of every call so far to end.
func (l *loadTester) wait() { l.wg.Wait() }

// answers are who answered the load of each call, by call.
func (l *loadTester) answers() []map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]map[string]int, len(l.load))
	for i, m := range l.load {
		out[i] = map[string]int{}
		for k, v := range m {
			out[i][k] = v
		}
	}
	return out
}

// parseHey reads hey's command line: -z duration, -q rate, the URL.
func parseHey(cmd string) (time.Duration, int, *url.URL, error) {
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "hey" {
		return 0, 0, nil, fmt.Errorf("unknown command %q", cmd)
	}
	d, rate := 10*time.Second, 10
	var target *url.URL
	for i := 1; i < len(f); i++ {
		var err error
		switch {
		case f[i] == "-z" && i+1 < len(f):
			i++
			d, err = time.ParseDuration(f[i])
		case f[i] == "-q" && i+1 < len(f):
			i++
			rate, err = strconv.Atoi(f[i])
		case strings.HasPrefix(f[i], "http://"):
			target, err = url.Parse(f[i])
		}
		if err != nil {
			return 0, 0, nil, err
		}
	}
	if target == nil || rate <= 0 {
		return 0, 0, nil, fmt.Errorf("no URL or rate in %q", cmd)
	}
	return d, rate, target, nil
}

// hooksComposition applies an example's Composition under a name of the
// test's own, with its function Input changed by input and the pipeline
// step's credentials (Crossplane v2's FunctionCredentials) set, when given.
func hooksComposition(t *testing.T, example, name string, input func(in map[string]any), credentials []any) string {
	t.Helper()
	c := read(t, example, "composition.yaml")
	c.SetName(name)
	setInput(t, c, input)
	if credentials != nil {
		steps, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
		step, _ := steps[0].(map[string]any)
		step["credentials"] = credentials
		if err := unstructured.SetNestedSlice(c.Object, steps, "spec", "pipeline"); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, c)
	return name
}

// webhook is an Input's webhook of a URL.
func webhook(name, address, format string) map[string]any {
	w := map[string]any{"name": name, "url": address, "timeout": "5s"}
	if format != "" {
		w["format"] = format
	}
	return w
}

// hookRecord is one of status.rollout.hooks.
type hookRecord struct {
	Name       string      `json:"name"`
	Transition string      `json:"transition"`
	Time       metav1.Time `json:"time"`
	Result     string      `json:"result"`
	Status     int32       `json:"status"`
	Reason     string      `json:"reason"`
	Failures   int32       `json:"failures"`
}

// hookRecords are the XR's status.rollout.hooks, by name.
func hookRecords(u *unstructured.Unstructured) map[string]hookRecord {
	var list []hookRecord
	m, _, _ := unstructured.NestedSlice(u.Object, "status", "rollout", "hooks")
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &list)
	out := map[string]hookRecord{}
	for _, r := range list {
		out[r.Name] = r
	}
	return out
}

// functionLogLines counts the lines of the function's log that name a
// namespace: each run of the function for an XR of it logs at least one
// (--debug: the route it composed), so their growth shows that Crossplane
// called the function.
func functionLogLines(ns string) int {
	p, ok := env.cp.Logs()["function"]
	if !ok {
		return 0
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Composed route") && strings.Contains(l, ns) {
			n++
		}
	}
	return n
}

// poke makes Crossplane reconcile the XR n times, one after another, by
// writing an annotation (no change of its spec), and waits each time for
// the function to be called for it: steady-state reconciles, as many as a
// long-lived XR sees.
func poke(t *testing.T, ns, name string, n int) {
	t.Helper()
	r, err := env.c.Resource(t.Context(), gvkCanaryRoute, ns)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		before := functionLogLines(ns)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.example.org/poke":"%d-%s"}}}`, i, suffix())
		if _, err := r.Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		await(t, settle, fmt.Sprintf("reconcile %d of %d: the function called for %s/%s", i+1, n, ns, name), func(context.Context) (bool, string) {
			got := functionLogLines(ns)
			return got > before, fmt.Sprintf("%d runs logged, %d before the annotation", got, before)
		})
	}
}
