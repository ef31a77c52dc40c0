package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// Faults, live (API.md, "Fresh state: a rollout never moves back"): the
// function killed (SIGKILL) in the middle of a step and of a promotion,
// Crossplane restarted in the middle of a rollout, the metric provider
// unreachable for two intervals, the gateway restarted. Each runs under
// steady requests through the real gateway (a trafficLog keeps every
// answer and its time) and a watch of every write of the XR and its route
// (eventLog), neither of which asks the function anything, and checks:
//
//   - the route's canary weight, write after write, never moves back and
//     skips no step: exactly the steps' weights in order, then the
//     decision that says otherwise (an abort, the end of a promotion);
//   - the XR's status never moves back: status.rollout.sequence never
//     decreases, a revision's step never decreases while it progresses,
//     and an ended rollout never progresses again;
//   - a canary aborted during the fault gets no request once the gateway
//     serves the abort's route write;
//   - every request is answered, 200 from a backend, except while the
//     gateway itself is down.
//
// Each logs its figure (a line beginning "figure:"), which
// docs/testing.md ("Faults") quotes: how long the fault lasted, the
// requests sent and answered meanwhile, the longest time without an
// answer, and how soon the rollout moved again.
//
// The tests that stop a process of the shared control plane (the function,
// Crossplane, the gateway) are not parallel: Go runs them one after the
// other before any parallel test starts, as TestFunctionRestart. The
// metric provider's outage is the test's own (a proxy in front of the
// shared Prometheus), so it runs beside the others.

// trafficPace is the time between two requests of a trafficLog: 50 a
// second on each route under test.
const trafficPace = 20 * time.Millisecond

// faultSteps are the steps of the rollout that goes on through a fault: the
// fault comes at step 1, whose pause runs out while it lasts.
const faultSteps = "[{weight: 20, pause: 3s}, {weight: 50, pause: 4s}, {weight: 100}]"

// A trafficLog sends requests through the gateway at trafficPace until the
// test ends, on a connection of its own, and keeps every answer.
type trafficLog struct {
	p  probe
	mu sync.Mutex
	// sent are the requests in the order they were sent.
	sent []request
}

// A request is one request of a trafficLog: when it was sent and
// answered, who answered (the backend's name) with which status, or the
// error.
type request struct {
	at, done time.Time
	who      string
	code     int
	err      string
}

// answered reports whether a backend answered the request with 200.
func (r request) answered() bool { return r.err == "" && r.who != "" && r.code == http.StatusOK }

func (r request) String() string {
	switch {
	case r.err != "":
		return fmt.Sprintf("sent %s: %s", r.at.Format(time.StampMilli), r.err)
	case r.who == "":
		return fmt.Sprintf("sent %s: %d from no backend", r.at.Format(time.StampMilli), r.code)
	default:
		return fmt.Sprintf("sent %s: %d from %s", r.at.Format(time.StampMilli), r.code, r.who)
	}
}

// startTraffic starts a trafficLog for p, stopped when the test ends.
func startTraffic(t *testing.T, p probe) *trafficLog {
	l := &trafficLog{p: p}
	client := &http.Client{
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		client.CloseIdleConnections()
	})
	go func() {
		defer close(done)
		tick := time.NewTicker(trafficPace)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := l.send(ctx, client)
			if ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.sent = append(l.sent, r)
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *trafficLog) send(ctx context.Context, client *http.Client) request {
	r := request{at: time.Now()}
	defer func() { r.done = time.Now() }()
	u := url.URL{Scheme: "http", Host: env.cp.GatewayAddress, Path: "/"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		r.err = err.Error()
		return r
	}
	req.Host = l.p.host
	rsp, err := client.Do(req)
	if err != nil {
		r.err = err.Error()
		r.done = time.Now()
		return r
	}
	defer rsp.Body.Close()
	_, _ = io.Copy(io.Discard, rsp.Body)
	r.who, r.code, r.done = rsp.Header.Get(backends.Header), rsp.StatusCode, time.Now()
	return r
}

// requests returns the requests sent so far, in order.
func (l *trafficLog) requests() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.sent...)
}

// sentIn returns the requests sent in [from, to].
func (l *trafficLog) sentIn(from, to time.Time) []request {
	var out []request
	for _, r := range l.requests() {
		if !r.at.Before(from) && !r.at.After(to) {
			out = append(out, r)
		}
	}
	return out
}

// count says how many of some requests a backend answered with 200.
func count(rs []request) (answered int) {
	for _, r := range rs {
		if r.answered() {
			answered++
		}
	}
	return answered
}

// unanswered lists the requests not answered with 200 by a backend, a few
// of them and how many in all, for a failure message.
func unanswered(rs []request) string {
	var b strings.Builder
	n := 0
	for _, r := range rs {
		if r.answered() {
			continue
		}
		n++
		if n <= 10 {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	if n > 10 {
		fmt.Fprintf(&b, "  ... %d in all\n", n)
	}
	return b.String()
}

// longestGap is the longest time between two answers that overlaps [from,
// to]: how long the clients of the route were left without one.
func (l *trafficLog) longestGap(from, to time.Time) time.Duration {
	var gap time.Duration
	var last time.Time
	for _, r := range l.requests() {
		if !r.answered() {
			continue
		}
		if !last.IsZero() && !r.done.Before(from) && !last.After(to) {
			gap = max(gap, r.done.Sub(last))
		}
		last = r.done
	}
	return gap
}

// lastAnswers counts who answered the last n requests (a request not
// answered with 200 by a backend is counted as it went), and says whether
// there were n.
func (l *trafficLog) lastAnswers(n int) (map[string]int, bool) {
	rs := l.requests()
	got := map[string]int{}
	for _, r := range rs[max(0, len(rs)-n):] {
		if r.answered() {
			got[r.who]++
		} else {
			got[r.String()]++
		}
	}
	return got, len(rs) >= n
}

// answeredBy checks that the last n requests were all answered by one
// backend.
func (l *trafficLog) answeredBy(n int, who string) controlplane.Check {
	return func(context.Context) (bool, string) {
		got, enough := l.lastAnswers(n)
		return enough && got[who] == n, fmt.Sprintf("the last %d requests for %s answered %s", n, l.p, describeCounts(got))
	}
}

// served is the first request of the first run of n answers in a row by
// one backend sent at or after a time; ok false if there is none.
func (l *trafficLog) served(after time.Time, n int, who string) (request, bool) {
	run := 0
	rs := l.requests()
	for i, r := range rs {
		if r.at.Before(after) {
			continue
		}
		if !r.answered() || r.who != who {
			run = 0
			continue
		}
		run++
		if run == n {
			return rs[i-n+1], true
		}
	}
	return request{}, false
}

// A fault is what a test does to the control plane: start it, end it.
type fault struct {
	name  string
	start func(t *testing.T)
	end   func(t *testing.T)
}

// A faultFigure is what docs/testing.md says of a fault.
type faultFigure struct {
	fault string
	// from and to are when the fault started and ended.
	from, to time.Time
	// moved is when the route next moved (its canary's weight, or the
	// primary Service's selector in a promotion) after the fault began;
	// zero if it did not.
	moved time.Time
}

// logFigure logs a fault's figure from the requests of a trafficLog: how
// long it lasted, the requests sent and answered meanwhile, and the
// longest time without an answer.
func logFigure(t *testing.T, f faultFigure, l *trafficLog) {
	t.Helper()
	during := l.sentIn(f.from, f.to.Add(-time.Nanosecond))
	resumed := "the rollout did not move after it began"
	switch d := f.moved.Sub(f.to).Round(10 * time.Millisecond); {
	case f.moved.IsZero():
	case d >= 0:
		resumed = fmt.Sprintf("the rollout moved again %s after it ended", d)
	default:
		resumed = fmt.Sprintf("the rollout moved again %s before it was seen to end", -d)
	}
	t.Logf("figure: %s: lasted %s; %d requests for %s sent meanwhile, %d answered; the longest time without an answer %s; %s",
		f.fault, f.to.Sub(f.from).Round(10*time.Millisecond), len(during), l.p.host, count(during),
		l.longestGap(f.from, f.to).Round(time.Millisecond), resumed)
}

// A faultRoute is one route of a fault test: its namespace, the watch of
// its XR and route, and its requests.
type faultRoute struct {
	ns      string
	log     *eventLog
	traffic *trafficLog
}

// startFaultRoute applies an XR (the route "web" of a trafficXR) in its
// namespace, with the watch started first, serves both sides, and starts
// its steady requests once the gateway serves the route (every one of a
// batch answered by a backend, at whatever split).
func startFaultRoute(t *testing.T, xr *unstructured.Unstructured) faultRoute {
	t.Helper()
	r := faultRoute{ns: xr.GetNamespace()}
	r.log = watchLog(t, r.ns, gvkCanaryRoute, gvkHTTPRoute)
	apply(t, xr)
	serve(t, r.ns, "web-primary", primary)
	serve(t, r.ns, "web-canary", canary)
	p := probe{host: hostname(r.ns)}
	await(t, settle, fmt.Sprintf("%d requests for %s all answered by a backend", batch, p), func(ctx context.Context) (bool, string) {
		got := p.answers(ctx, batch)
		return got[primary]+got[canary] == batch, "answered " + describeCounts(got)
	})
	r.traffic = startTraffic(t, p)
	return r
}

// startTrafficRoute is startFaultRoute for a trafficXR with this spec in a
// new namespace.
func startTrafficRoute(t *testing.T, prefix, rest string) faultRoute {
	t.Helper()
	ns := newNamespace(t, prefix)
	return startFaultRoute(t, trafficXR(t, ns, freePort(t), rest))
}

// routeWrites are the versions of the route "web" in the log, in the
// order the API server wrote them, with the canary's weight in each.
func routeWrites(l *eventLog) []logEvent {
	var out []logEvent
	for _, e := range l.sorted() {
		if e.kind == gvkHTTPRoute.Kind && e.obj.GetName() == releaseRoute {
			out = append(out, e)
		}
	}
	return out
}

// checkWeights checks the route's canary weights, write after write: want
// exactly, which never moves back but where a decision says so. It names
// the first backward move and any step missing.
func checkWeights(t *testing.T, what string, l *eventLog, want []int64) {
	t.Helper()
	got := l.canaryWeights()
	if cmp.Equal(want, got) {
		return
	}
	var why []string
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			why = append(why, fmt.Sprintf("moved back from %d%% to %d%% (change %d)", got[i-1], got[i], i))
		}
	}
	for _, w := range want {
		if !containsWeight(got, w) {
			why = append(why, fmt.Sprintf("never at %d%%", w))
		}
	}
	t.Errorf("%s: the route's canary weights, write after write: want %v, got %v: %s\nthe route's writes:\n%s",
		what, want, got, strings.Join(why, "; "), describeWrites(routeWrites(l)))
}

func containsWeight(ws []int64, w int64) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func describeWrites(writes []logEvent) string {
	var b strings.Builder
	for _, e := range writes {
		fmt.Fprintf(&b, "  resourceVersion %d at %s: weights %v, accepted %t\n", e.rv, e.at.Format(time.StampMilli), weights(e.obj), accepted(e.obj))
	}
	return b.String()
}

// A statusWrite is the XR's status.rollout in one write.
type statusWrite struct {
	rv       int64
	sequence int64
	rollout  rolloutStatus
	revision string
}

func (s statusWrite) String() string {
	return fmt.Sprintf("resourceVersion %d: sequence %d, revision %s, %s", s.rv, s.sequence, s.revision, s.rollout)
}

// statusWrites are the XR's status.rollout writes in the log, in order,
// each change once, from the first the function answered.
func statusWrites(l *eventLog) []statusWrite {
	var out []statusWrite
	for _, e := range l.sorted() {
		if e.kind != gvkCanaryRoute.Kind || e.obj.GetName() != releaseRoute {
			continue
		}
		s := statusWrite{rv: e.rv, rollout: rollout(e.obj)}
		if s.rollout.Phase == "" {
			continue // The XR as written, before the function's first status.
		}
		s.sequence, _, _ = unstructured.NestedInt64(e.obj.Object, "status", "rollout", "sequence")
		s.revision, _, _ = unstructured.NestedString(e.obj.Object, "status", "rollout", "revision")
		if n := len(out); n > 0 && out[n-1].sequence == s.sequence && out[n-1].rollout.String() == s.rollout.String() {
			continue
		}
		out = append(out, s)
	}
	return out
}

// checkStatus checks that the XR's status never moved back, write after
// write: the sequence never decreases, a revision's step never decreases
// while it progresses, an ended rollout (Succeeded, Aborted, Failed) of a
// revision never progresses again, and no write failed the rollout.
func checkStatus(t *testing.T, what string, l *eventLog) {
	t.Helper()
	writes := statusWrites(l)
	ended := map[string]string{}
	var fail []string
	for i, s := range writes {
		r := s.rollout
		if s.sequence == 0 {
			fail = append(fail, fmt.Sprintf("no status.rollout.sequence in %s", s))
		}
		if r.Phase == "Failed" {
			fail = append(fail, fmt.Sprintf("failed: %s", s))
		}
		if r.Phase == "Progressing" && ended[s.revision] != "" {
			fail = append(fail, fmt.Sprintf("%s after the rollout of %s ended %s", s, s.revision, ended[s.revision]))
		}
		if r.Phase == "Succeeded" || r.Phase == "Aborted" || r.Phase == "Failed" {
			ended[s.revision] = r.Phase
		}
		if i == 0 {
			continue
		}
		p := writes[i-1]
		if s.sequence < p.sequence {
			fail = append(fail, fmt.Sprintf("the sequence moved back: %s after %s", s, p))
		}
		if s.revision == p.revision && r.Phase == "Progressing" && p.rollout.Phase == "Progressing" && r.Step != nil && p.rollout.Step != nil && *r.Step < *p.rollout.Step {
			fail = append(fail, fmt.Sprintf("the step moved back: %s after %s", s, p))
		}
	}
	if len(fail) == 0 {
		return
	}
	var all strings.Builder
	for _, s := range writes {
		fmt.Fprintf(&all, "  %s\n", s)
	}
	t.Errorf("%s: the XR's status moved back:\n  %s\nits writes:\n%s", what, strings.Join(fail, "\n  "), all.String())
}

// checkAnswered checks that a backend answered every request sent in
// [from, to] with 200.
func checkAnswered(t *testing.T, what string, l *trafficLog, from, to time.Time) {
	t.Helper()
	rs := l.sentIn(from, to)
	if n := count(rs); n != len(rs) || n == 0 {
		t.Errorf("%s: %d of %d requests for %s answered with 200 by a backend, want all (and some), sent from %s to %s; the others:\n%s",
			what, n, len(rs), l.p, from.Format(time.StampMilli), to.Format(time.StampMilli), unanswered(rs))
	}
}

// abortServed waits until the gateway serves an aborted route, which the
// abort wrote with the canary at 0%, and checks what the canary got from
// then on: after the write, every request goes to the primary once the
// gateway serves it (batch answers in a row by the primary, which the
// gateway's weighted round robin never gives while the canary has 50%),
// and none to the canary after that, for batch*2 more requests. It returns
// the abort's route write, and how long after it the canary's last answer
// came (the gateway's delay).
func abortServed(t *testing.T, r faultRoute) (logEvent, time.Duration) {
	t.Helper()
	var write logEvent
	await(t, settle, "the abort's route write in the log (the canary at 0%)", func(context.Context) (bool, string) {
		writes := routeWrites(r.log)
		for i := 1; i < len(writes); i++ {
			if weights(writes[i].obj)[releaseCanary] == 0 && weights(writes[i-1].obj)[releaseCanary] > 0 {
				write = writes[i]
				return true, ""
			}
		}
		return false, "the route's writes:\n" + describeWrites(writes)
	})
	await(t, settle, fmt.Sprintf("the gateway serving the abort: %d answers in a row by the primary", batch), r.traffic.answeredBy(batch, primary))
	served, ok := r.traffic.served(write.at, batch, primary)
	if !ok {
		t.Fatalf("no %d answers in a row by the primary after the abort's route write at %s", batch, write.at.Format(time.StampMilli))
	}
	await(t, settle, fmt.Sprintf("%d more requests after the gateway served the abort", 2*batch), func(context.Context) (bool, string) {
		n := len(r.traffic.sentIn(served.at, time.Now()))
		return n >= 3*batch, fmt.Sprintf("%d requests since %s", n, served.at.Format(time.StampMilli))
	})
	var last time.Time
	for _, q := range r.traffic.requests() {
		if q.who != canary {
			continue
		}
		if !q.at.Before(served.at) {
			t.Errorf("the aborted canary answered a request %s, after the gateway served the abort's route write (from %s)", q, served.at.Format(time.StampMilli))
		}
		last = q.done
	}
	lag := time.Duration(0)
	if last.After(write.at) {
		lag = last.Sub(write.at)
	}
	return write, lag
}

// nextStepDue is when the XR's current step's pause runs out, from its
// status.
func nextStepDue(t *testing.T, ns string) time.Time {
	t.Helper()
	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	r := rollout(u)
	due, err := time.Parse(time.RFC3339, r.NextStepAt)
	if err != nil {
		t.Fatalf("the XR's status.rollout.nextStepAt (%s): %v", r, err)
	}
	return due
}

// movedAfter is when the route's canary weight was next written changed
// after a time; zero if it was not. (A restarted process may serve before
// the harness sees it ready: the move may come before the fault's end.)
func movedAfter(l *eventLog, at time.Time) time.Time {
	writes := routeWrites(l)
	for i := 1; i < len(writes); i++ {
		if writes[i].at.After(at) && weights(writes[i].obj)[releaseCanary] != weights(writes[i-1].obj)[releaseCanary] {
			return writes[i].at
		}
	}
	return time.Time{}
}

// firstAnswered is the first request answered after the first one not
// answered sent at or after a time: when the clients of a route were
// answered again after an outage that began then. ok is false when no
// request failed, or none was answered again.
func (l *trafficLog) firstAnswered(after time.Time) (failed, again request, ok bool) {
	down := false
	for _, r := range l.requests() {
		switch {
		case r.at.Before(after):
		case !down && !r.answered():
			failed, down = r, true
		case down && r.answered():
			return failed, r, true
		}
	}
	return failed, request{}, false
}

// outage is a fault that stops a process of the shared control plane and
// starts it again; if the test ends first, it starts it again then, so
// that the tests after it find the control plane whole.
func outage(name string, stop func(), restart func(context.Context) error) fault {
	var once sync.Once
	var err error
	again := func(ctx context.Context) error {
		once.Do(func() { err = restart(ctx) })
		return err
	}
	return fault{
		name: name,
		start: func(t *testing.T) {
			t.Helper()
			t.Cleanup(func() { _ = again(context.Background()) })
			stop()
		},
		end: func(t *testing.T) {
			t.Helper()
			if err := again(t.Context()); err != nil {
				t.Fatalf("%s: cannot start it again: %v", name, err)
			}
		},
	}
}

// runFault runs a fault in the middle of a rollout's step, beside a second
// rollout that is aborted while the fault lasts:
//
//   - the rollout (faultSteps) reaches step 1 (50%), accepted by the
//     gateway; the fault starts; step 1's pause runs out while it lasts;
//     the fault ends; the rollout goes on to 100% and Succeeded, through
//     20%, 50%, 100% and nothing else;
//   - the other rollout holds at 50% (a pause of 10 minutes); its abort is
//     written while the fault lasts, and takes effect after it: 50%, then
//     0%, and its canary answers nothing once the gateway serves that.
//
// gatewayDown says that the fault stops the gateway: requests may fail
// from its start until the gateway answers again, and the fault lasts
// until then.
func runFault(t *testing.T, f fault, gatewayDown bool) {
	t.Helper()
	a := startTrafficRoute(t, "fault", "traffic: {steps: "+faultSteps+"}")
	b := startTrafficRoute(t, "faultabort", "traffic: {steps: [{weight: 50, pause: 10m}, {weight: 100}]}")
	start := time.Now()
	await(t, settle, "the second rollout held at step 0 (50%), its canary answering", func(ctx context.Context) (bool, string) {
		ok, seen := xrAt(gvkCanaryRoute, b.ns, "web", "Progressing", 0, 50)(ctx)
		got, enough := b.traffic.lastAnswers(batch / 5)
		return ok && enough && got[primary] > 0 && got[canary] > 0, fmt.Sprintf("%s; the last %d requests answered %s", seen, batch/5, describeCounts(got))
	})
	await(t, 2*time.Minute, "the rollout at step 1 (50%), accepted by the gateway", func(ctx context.Context) (bool, string) {
		ok, seen := xrAt(gvkCanaryRoute, a.ns, "web", "Progressing", 1, 50)(ctx)
		at, route := routeAt(gvkHTTPRoute, a.ns, "web", "web-canary", 50)(ctx)
		acc, status := acceptedByGateway(gvkHTTPRoute, a.ns, "web", "True", "")(ctx)
		return ok && at && acc, seen + "; " + route + "; " + status
	})
	due := nextStepDue(t, a.ns)

	from := time.Now()
	f.start(t)
	patchTraffic(t, b.ns, "web", `{"abort":true}`)
	await(t, settle, fmt.Sprintf("step 1's pause over (nextStepAt %s) during the fault: %s", due.UTC().Format(time.RFC3339), f.name), func(context.Context) (bool, string) {
		return time.Now().After(due.Add(time.Second)), "now " + time.Now().UTC().Format(time.RFC3339)
	})
	f.end(t)
	to := time.Now()
	restarted := to
	var failed, again request
	if gatewayDown {
		await(t, settle, "requests for "+a.traffic.p.host+" answered again", func(context.Context) (bool, string) {
			var ok bool
			failed, again, ok = a.traffic.firstAnswered(from)
			return ok, fmt.Sprintf("the last requests: %v", lastRequests(a.traffic, 3))
		})
		to = again.at
	}

	await(t, 2*time.Minute, "the rollout Succeeded at 100% after the fault", phase(a.ns, "web", "Succeeded", 100))
	await(t, settle, "the log saw the route at 100%", func(context.Context) (bool, string) {
		ws := a.log.canaryWeights()
		return len(ws) > 0 && ws[len(ws)-1] == 100, fmt.Sprintf("canary weights in the log: %v", ws)
	})
	await(t, settle, "the second rollout Aborted at 0%", phase(b.ns, "web", "Aborted", 0))
	write, lag := abortServed(t, b)
	end := time.Now()

	checkWeights(t, "the rollout", a.log, []int64{20, 50, 100})
	checkWeights(t, "the aborted rollout", b.log, []int64{50, 0})
	checkStatus(t, "the rollout", a.log)
	checkStatus(t, "the aborted rollout", b.log)
	for _, r := range []faultRoute{a, b} {
		if !gatewayDown {
			checkAnswered(t, "all along", r.traffic, start, end)
			continue
		}
		// The gateway is down from the first request it failed to the
		// first it answered after; the same for both routes, which one
		// gateway serves.
		f, again, ok := r.traffic.firstAnswered(from)
		if !ok {
			t.Errorf("requests for %s: none failed while the gateway was down, or none answered after", r.traffic.p)
			continue
		}
		checkAnswered(t, "before the gateway stopped", r.traffic, start, f.at.Add(-time.Nanosecond))
		checkAnswered(t, "once the gateway answered again", r.traffic, again.at, end)
	}
	logFigure(t, faultFigure{fault: f.name, from: from, to: to, moved: movedAfter(a.log, from)}, a.traffic)
	last := "before it (the gateway was down)"
	if lag > 0 {
		last = lag.Round(time.Millisecond).String() + " after it"
	}
	t.Logf("figure: %s: the abort written at %s; the aborted canary's last answer %s; %d requests for %s from then on, none to the canary once the gateway served the write",
		f.name, write.at.Format(time.StampMilli), last, len(b.traffic.sentIn(write.at, end)), b.traffic.p.host)
	if gatewayDown {
		t.Logf("figure: %s: the first request failed %s after the stop began; the first answered again was sent %s after it; RestartGateway returned %s after it",
			f.name, failed.at.Sub(from).Round(time.Millisecond), again.at.Sub(from).Round(time.Millisecond), restarted.Sub(from).Round(time.Millisecond))
	}
}

// lastRequests are a trafficLog's last n requests.
func lastRequests(l *trafficLog, n int) []string {
	rs := l.requests()
	out := make([]string, 0, n)
	for _, r := range rs[max(0, len(rs)-n):] {
		out = append(out, r.String())
	}
	return out
}

// TestFaultFunctionKilledMidStep kills the function with SIGKILL in the
// middle of step 1 and starts it again once the step's pause has run out:
// its memory of the newest decisions is gone, and the rollout goes on from
// the XR's status without a step back; the abort written meanwhile takes
// effect.
func TestFaultFunctionKilledMidStep(t *testing.T) {
	awaitEstablished(t)
	runFault(t, outage("the function killed (SIGKILL) at step 1", env.cp.KillFunction, env.cp.RestartFunction), false)
}

// TestFaultCrossplaneRestarted stops Crossplane core (SIGTERM) in the
// middle of step 1 and starts it again once the step's pause has run out:
// nothing is reconciled meanwhile, then every composite is, from fresh
// caches, while the function keeps its memory.
func TestFaultCrossplaneRestarted(t *testing.T) {
	awaitEstablished(t)
	runFault(t, outage("Crossplane restarted at step 1", env.cp.StopCrossplane, env.cp.RestartCrossplane), false)
}

// TestFaultGatewayRestarted stops the gateway (SIGTERM) in the middle of
// step 1 and starts it again once the step's pause has run out: requests
// fail meanwhile, and the route's status is not written; after, the new
// gateway serves the routes as the API server holds them, and the
// rollout goes on.
func TestFaultGatewayRestarted(t *testing.T) {
	awaitEstablished(t)
	runFault(t, outage("the gateway restarted at step 1", env.cp.StopGateway, env.cp.RestartGateway), true)
}

// TestFaultFunctionKilledMidPromotion kills the function with SIGKILL while
// a release promotes v2 (the release example's pipeline): the route sends
// every request to the canary, and the primary Service's move is due
// PromotionSettle later. The function comes back once the move is past
// due, without its memory, and the promotion completes in its order: the
// primary Service moves while the accepted route gives it no request, and
// gets requests again only after a later reconcile; no request reaches it
// meanwhile, and none moves back.
func TestFaultFunctionKilledMidPromotion(t *testing.T) {
	awaitEstablished(t)
	ns := newNamespace(t, "faultpromo")
	log := watchLog(t, ns, gvkCanaryRoute, gvkHTTPRoute, gvkService, gvkDeployment)
	startKubelet(t, ns)
	apply(t, releaseXR(t, ns, freePort(t), "v1", `
release: {scaleDownDelay: 10m}
traffic: {steps: [{weight: 50, pause: 2s}, {weight: 100}]}`))
	pri := serveRevisions(t, ns, releasePrimary, log)
	serveRevisions(t, ns, releaseCanary, log)
	p := probe{host: hostname(ns)}
	await(t, settle, "v1 released", releaseAt(ns, "Succeeded", "Released", -1, 0, "v1"))
	awaitAnswers(t, "v1 released", p, revisions(map[string]int{"v1": 100}))
	traffic := startTraffic(t, p)
	start := time.Now()

	patchRevision(t, ns, "v2")
	var due time.Time
	await(t, 2*time.Minute, "v2 promoting: every request to the canary, the primary Service's move due at nextStepAt", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		r := rollout(u)
		at, err := time.Parse(time.RFC3339, r.NextStepAt)
		due = at
		return r.Phase == "Promoting" && r.CanaryWeight == 100 && err == nil && log.selected(releasePrimary) == "v1", xrState(u)
	})
	f := outage("the function killed (SIGKILL) while promoting", env.cp.KillFunction, env.cp.RestartFunction)
	from := time.Now()
	f.start(t)
	await(t, settle, fmt.Sprintf("the primary Service's move past due (%s) while the function is down", due.UTC().Format(time.RFC3339)), func(context.Context) (bool, string) {
		return time.Now().After(due.Add(time.Second)), "now " + time.Now().UTC().Format(time.RFC3339)
	})
	f.end(t)
	to := time.Now()
	await(t, settle, "v2 promoted", releaseAt(ns, "Succeeded", "Promoted", -1, 0, "v2"))
	awaitLogBackOnPrimary(t, log, 1)
	awaitAnswers(t, "v2 promoted", p, revisions(map[string]int{"v2": 100}))
	end := time.Now()

	// Through its step to every request, then back to the primary, which
	// serves v2: the promotion's end, the one decision that lowers the
	// canary's weight.
	checkWeights(t, "the release", log, []int64{0, 50, 100, 0})
	checkStatus(t, "the release", log)
	moves := log.moves(releasePrimary)
	if len(moves) != 1 || moves[0].from != "v1" || moves[0].to != "v2" || moves[0].next.rv == 0 {
		t.Fatalf("the primary Service's moves: want one, v1 -> v2, then weighted again; got:\n%s", describeMoves(moves))
	}
	m := moves[0]
	if m.weight != 0 || !m.routeAccepted || !m.reconciled {
		t.Errorf("the primary Service moved %s: want while the accepted route gave it weight 0, weighted again after a reconcile", m)
	}
	if m.at.Before(to) {
		t.Errorf("the primary Service moved at %s, while the function was down (from %s to %s)", m.at.Format(time.StampMilli), from.Format(time.StampMilli), to.Format(time.StampMilli))
	}
	if n := pri.requestsBetween(m.at, m.next.at); n != 0 {
		t.Errorf("the primary Service got %d requests between its move (%s) and the route's move back (%s), want none", n, m.at.Format(time.StampMilli), m.next.at.Format(time.StampMilli))
	}
	for _, c := range log.moves(releaseCanary) {
		if c.weight != 0 || (c.next.rv != 0 && !c.reconciled) {
			t.Errorf("the canary Service moved %s: want while the route gave it weight 0, weighted again after a reconcile", c)
		}
	}
	checkAnswered(t, "all along", traffic, start, end)
	logFigure(t, faultFigure{fault: f.name, from: from, to: to, moved: m.at}, traffic)
	t.Logf("figure: %s: the primary Service moved %s after the restart, %s after it was due; %d requests sent while it moved, %s, %d of them to the primary",
		f.name, m.at.Sub(to).Round(10*time.Millisecond), m.at.Sub(due).Round(10*time.Millisecond),
		len(traffic.sentIn(m.at, m.next.at)), describeCounts(whoAnswered(traffic.sentIn(m.at, m.next.at))), pri.requestsBetween(m.at, m.next.at))
}

// whoAnswered counts who answered some requests.
func whoAnswered(rs []request) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		if r.answered() {
			out[r.who]++
		} else {
			out[r.String()]++
		}
	}
	return out
}

// A tcpProxy forwards the connections it accepts to an address, until the
// test ends. Down, it closes every connection it holds and every one it
// accepts: an address that answers nothing, as a provider that cannot be
// reached.
type tcpProxy struct {
	addr string
	to   string
	ln   net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	// closed counts the connections closed at once while down.
	closed int
}

// startProxy starts a tcpProxy to an address on a fresh loopback port.
func startProxy(t *testing.T, to string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: ln.Addr().String(), to: to, ln: ln, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.setDown(true)
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.forward(c) }()
		}
	}()
	return p
}

// setDown turns the proxy down (closing what it holds) or up.
func (p *tcpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if !down {
		return
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// hold keeps a connection to close when the proxy goes down; false if it
// is down.
func (p *tcpProxy) hold(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		p.closed++
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *tcpProxy) release(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	if !p.hold(c) {
		_ = c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.to, 5*time.Second)
	if err != nil {
		p.release(c)
		return
	}
	if !p.hold(up) {
		p.release(c, up)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	p.release(c, up)
	<-done
}

func (p *tcpProxy) closedWhileDown() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// TestFaultMetricProviderDown makes the metric provider unreachable for two
// intervals in the middle of step 1 (a proxy in front of the shared
// Prometheus, which the Input's provider names, closes every connection):
// the step holds past its pause, the XR's message naming the provider, and
// no measurement fails; then the provider answers again, the step passes
// and the rollout goes on to Succeeded, never moving back.
func TestFaultMetricProviderDown(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	prom := startPrometheus(t)
	proxy := startProxy(t, strings.TrimPrefix(prom, "http://"))
	ns := newNamespace(t, "faultprom")
	xr := metricsXR(t, ns, "http://"+proxy.addr, freePort(t), `[{name: error-rate, interval: 5s, successWhen: "result <= 0.05", failureLimit: 2}]`)
	const pause = 5 * time.Second
	set(t, xr, spec(t, "s: [{weight: 20, pause: 5s}, {weight: 50, pause: 5s}, {weight: 100}]")["s"], "spec", "traffic", "steps")
	// The steady requests are the metric's traffic too: 50 a second, 10
	// of them to the canary at 20%.
	r := startFaultRoute(t, xr)
	start := time.Now()

	var stepStart time.Time
	await(t, metricWait, "step 1 (50%)", func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		ro := rollout(u)
		at, err := time.Parse(time.RFC3339, ro.StepStartedAt)
		stepStart = at
		return ro.Phase == "Progressing" && ro.Step != nil && *ro.Step == 1 && ro.CanaryWeight == 50 && err == nil, xrState(u)
	})
	from := time.Now()
	proxy.setDown(true)
	down := true
	t.Cleanup(func() {
		if down {
			proxy.setDown(false)
		}
	})
	// Down for two intervals: until two of step 1's measurements found the
	// provider unreachable, the step held past its pause meanwhile, its
	// message naming the provider.
	provider := fmt.Sprintf("provider %q", ns)
	unreachableAt1 := func(ms []measurement) int {
		n := 0
		for _, m := range ms {
			if m.Step == 1 && m.Verdict == "NoData" && strings.Contains(m.Reason, provider) {
				n++
			}
		}
		return n
	}
	await(t, settle, "two measurements of step 1 finding the provider unreachable, the step held past its pause, its message naming the provider "+ns, func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		ro := rollout(u)
		held := ro.Phase == "Progressing" && ro.Step != nil && *ro.Step == 1 && strings.Contains(ro.Message, provider) && time.Now().After(stepStart.Add(pause))
		return held && unreachableAt1(measurements(u)["error-rate"]) >= 2, fmt.Sprintf("%s; measurements %v", xrState(u), measurements(u))
	})
	proxy.setDown(false)
	down = false
	to := time.Now()

	await(t, metricWait, "the rollout Succeeded at 100%", rolloutEnded(ns, "web", "Succeeded", "", 100))
	await(t, settle, "the log saw the route at 100%", func(context.Context) (bool, string) {
		ws := r.log.canaryWeights()
		return len(ws) > 0 && ws[len(ws)-1] == 100, fmt.Sprintf("canary weights in the log: %v", ws)
	})
	end := time.Now()

	checkWeights(t, "the rollout", r.log, []int64{20, 50, 100})
	checkStatus(t, "the rollout", r.log)
	checkAnswered(t, "all along", r.traffic, start, end)
	u, why := get(t.Context(), gvkCanaryRoute, ns, releaseRoute)
	if u == nil {
		t.Fatal(why)
	}
	ms := measurements(u)["error-rate"]
	t.Logf("error-rate measurements: %v", ms)
	unreachable, passedAfter := unreachableAt1(ms), false
	for _, m := range ms {
		switch {
		case m.Verdict == "Failed":
			t.Errorf("measurement %s failed: an unreachable provider holds, it never fails", m)
		case m.Step == 1 && m.Verdict == "Passed" && !m.Time.Time.Before(to.Truncate(time.Second)):
			passedAfter = true
		}
	}
	if unreachable < 2 || !passedAfter {
		t.Errorf("step 1's measurements: want two without data naming the %s (unreachable), then one passed after the outage: %v", provider, ms)
	}
	// Step 1 moved on only after the outage: no passing measurement came
	// while the provider was down.
	writes := routeWrites(r.log)
	var moved time.Time
	for _, e := range writes {
		if weights(e.obj)[releaseCanary] == 100 {
			moved = e.at
			break
		}
	}
	if moved.Before(to) {
		t.Errorf("the route moved to step 2 at %s, while the provider was down (until %s)", moved.Format(time.StampMilli), to.Format(time.StampMilli))
	}
	queries, err := functionQueries(t.Context(), ns)
	if err != nil {
		t.Fatalf("the function's metrics: %v", err)
	}
	logFigure(t, faultFigure{fault: "the metric provider unreachable for two intervals at step 1", from: from, to: to, moved: moved}, r.traffic)
	t.Logf("figure: the metric provider unreachable: %d measurements without data naming it, %d connections closed at once; the function's queries by result %v; step 1 (pause %s) held %s past its pause",
		unreachable, proxy.closedWhileDown(), queries, pause, moved.Sub(stepStart.Add(pause)).Round(100*time.Millisecond))
}
