package live

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// The release tests run the release example's pipeline (example/release):
// function-canary-route, then function-go-templating composing a
// Deployment per revision from the release record. Nothing runs pods here,
// so the tests stand in for what would:
//
//   - the Deployment controller and the kubelet (kubelet): each composed
//     Deployment's status follows its spec.replicas at once, all of them
//     ready, unless the test caps a Deployment's ready replicas, which is
//     how a test holds a step on capacity for as long as it measures;
//   - the pods behind each proxy Service (revisionBackend): a backend on the
//     Service's clusterIP and port answers every request with the revision
//     that the Service selects at that moment, so that a batch of requests
//     through the real gateway shows the split between revisions.
//
// Every write to the XR, the route, the proxy Services and the Deployments
// is recorded by a watch (eventLog), which is how the tests check the order
// of the release's moves.

// The release's revision label and its Services, as releaseXR writes them.
const (
	revisionLabel  = "version"
	releaseRoute   = "web"
	releasePrimary = "web-primary"
	releaseCanary  = "web-canary"
)

// releaseXR is a namespaced CanaryRoute "web" with spec.release, attached to
// the real gateway under the test's own hostname: revisions of the pods
// labelled app: web, 4 replicas at full traffic in Deployments
// web-<revision>, this canary revision, and the rest of the spec (YAML:
// traffic, release.scaleDownDelay, ...), merged over it. It runs the release
// example's Composition, under the test's own name.
func releaseXR(t *testing.T, ns string, port int, revision, rest string) *unstructured.Unstructured {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(gvkCanaryRoute)
	xr.SetNamespace(ns)
	xr.SetName(releaseRoute)
	s := spec(t, fmt.Sprintf(`
parentRefs: [{name: %s, namespace: %s, sectionName: %s}]
hostnames: [%s]
port: %d
release:
  selector: {app: web}
  revisionLabel: %s
  replicas: 4
  workload: {name: "web-{{revision}}"}
canary: {revision: %s}
`, controlplane.GatewayName, controlplane.GatewayNamespace, controlplane.GatewayListener, hostname(ns), port, revisionLabel, revision))
	merge(s, spec(t, rest))
	set(t, xr, s, "spec")
	useComposition(t, xr, composition(t, "release", ns, nil))
	return xr
}

// merge writes src over dst, object by object.
func merge(dst, src map[string]any) {
	for k, v := range src {
		d, dok := dst[k].(map[string]any)
		s, sok := v.(map[string]any)
		if dok && sok {
			merge(d, s)
			continue
		}
		dst[k] = v
	}
}

// patchRevision sets canary.revision, the one edit of a release, as
// kubectl patch --type merge does.
func patchRevision(t *testing.T, ns, revision string) {
	t.Helper()
	r, err := env.c.Resource(t.Context(), gvkCanaryRoute, ns)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"canary":{"revision":%q}}}`, revision)
	if _, err := r.Patch(t.Context(), releaseRoute, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("kubectl patch canaryroute %s/%s --type merge -p %s: %v", ns, releaseRoute, patch, err)
	}
}

// releaseStatus is the XR's status.release.
type releaseStatus struct {
	Stable   string
	History  []string
	Retiring string
}

func releaseOf(u *unstructured.Unstructured) releaseStatus {
	var r releaseStatus
	r.Stable, _, _ = unstructured.NestedString(u.Object, "status", "release", "stable", "revision")
	r.Retiring, _, _ = unstructured.NestedString(u.Object, "status", "release", "retiring", "revision")
	history, _, _ := unstructured.NestedSlice(u.Object, "status", "release", "history")
	for _, h := range history {
		m, _ := h.(map[string]any)
		rev, _ := m["revision"].(string)
		r.History = append(r.History, rev)
	}
	return r
}

// releaseAt checks the XR's rollout (phase, reason, step, canary weight;
// a step of -1 is any) and its stable revision.
func releaseAt(ns, phase, reason string, step, weight int64, stable string) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, releaseRoute)
		if u == nil {
			return false, why
		}
		r, rel := rollout(u), releaseOf(u)
		ok := r.Phase == phase && r.Reason == reason && r.CanaryWeight == weight && rel.Stable == stable &&
			(step < 0 || (r.Step != nil && *r.Step == step))
		return ok, fmt.Sprintf("%s; release: %+v", xrState(u), rel)
	}
}

// replicasOf checks a Deployment's spec.replicas.
func replicasOf(ns, name string, want int32) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		d, err := env.c.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := int32(1)
		if d.Spec.Replicas != nil {
			got = *d.Spec.Replicas
		}
		return got == want, fmt.Sprintf("Deployment %s/%s: spec.replicas %d, status.readyReplicas %d", ns, name, got, d.Status.ReadyReplicas)
	}
}

// A kubelet stands in for the Deployment controller and the kubelet of a
// namespace: it writes each Deployment's status as if its pods started at
// once (replicas, updated, ready and available all spec.replicas), but for
// the ready replicas the test caps.
type kubelet struct {
	ns string
	mu sync.Mutex
	// caps are the most ready replicas a Deployment reports, by name.
	caps map[string]int32
}

// startKubelet writes the status of the namespace's Deployments every
// 100 ms until the test ends.
func startKubelet(t *testing.T, ns string) *kubelet {
	k := &kubelet{ns: ns, caps: map[string]int32{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var last string
		for ctx.Err() == nil {
			// An error (a conflict with a write of Crossplane's) is
			// retried on the next tick, and logged once.
			if err := k.sync(ctx); err != nil && err.Error() != last && ctx.Err() == nil {
				t.Logf("kubelet stand-in: %v", err)
				last = err.Error()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return k
}

// capReady makes a Deployment report at most n ready replicas.
func (k *kubelet) capReady(name string, n int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.caps[name] = n
}

// uncap makes a Deployment's replicas all ready.
func (k *kubelet) uncap(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.caps, name)
}

func (k *kubelet) sync(ctx context.Context) error {
	l, err := env.c.Kube.AppsV1().Deployments(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range l.Items {
		d := &l.Items[i]
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		ready := want
		k.mu.Lock()
		if c, ok := k.caps[d.Name]; ok {
			ready = min(ready, c)
		}
		k.mu.Unlock()
		s := appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want,
			ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: want - ready,
		}
		if d.Status.ObservedGeneration == s.ObservedGeneration && d.Status.Replicas == s.Replicas && d.Status.UpdatedReplicas == s.UpdatedReplicas &&
			d.Status.ReadyReplicas == s.ReadyReplicas && d.Status.AvailableReplicas == s.AvailableReplicas && d.Status.UnavailableReplicas == s.UnavailableReplicas {
			continue
		}
		d.Status = s
		if _, err := env.c.Kube.AppsV1().Deployments(k.ns).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kubelet-stand-in"}); err != nil {
			return err
		}
	}
	return nil
}

// An eventLog records every version of the objects of some kinds in a
// namespace, from watches, with the resource version the API server wrote
// it at. One etcd backs the control plane, so resource versions are its
// revisions, one sequence for every kind: sorting by them orders the
// writes of the XR, the route, the Services and the Deployments as the
// API server made them, whenever each watch delivered them. (Clients must
// not compare resource versions in general; the test relies on the one
// control plane it runs.)
type eventLog struct {
	mu     sync.Mutex
	events []logEvent
}

type logEvent struct {
	rv   int64
	at   time.Time
	kind string
	obj  *unstructured.Unstructured
}

// watchLog starts watches on the kinds in a namespace, recording until the
// test ends. The first version of each object is its state when the watch
// started.
func watchLog(t *testing.T, ns string, gvks ...schema.GroupVersionKind) *eventLog {
	t.Helper()
	l := &eventLog{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, gvk := range gvks {
		res, err := env.c.Resource(t.Context(), gvk, ns)
		if err != nil {
			t.Fatal(err)
		}
		list, err := res.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			l.add(gvk.Kind, &list.Items[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.follow(ctx, t, gvk.Kind, res, list.GetResourceVersion())
		}()
	}
	return l
}

// follow records the watch events of a kind from a resource version until
// ctx ends, watching again from the last one seen when a watch ends (the
// API server ends them now and then), and listing again if that version is
// gone.
func (l *eventLog) follow(ctx context.Context, t *testing.T, kind string, res dynamic.ResourceInterface, rv string) {
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			// Backing off a failed watch until ctx ends, not a wait for a
			// state.
			if ctx.Err() == nil {
				t.Logf("watch of %s: %v", kind, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for e := range w.ResultChan() {
			if e.Type == watch.Error {
				// Gone: the version is compacted away. List again.
				if list, err := res.List(ctx, metav1.ListOptions{}); err == nil {
					for i := range list.Items {
						l.add(kind, &list.Items[i])
					}
					rv = list.GetResourceVersion()
				}
				break
			}
			if u, ok := e.Object.(*unstructured.Unstructured); ok {
				rv = u.GetResourceVersion()
				if e.Type != watch.Bookmark {
					l.add(kind, u)
				}
			}
		}
		w.Stop()
	}
}

func (l *eventLog) add(kind string, u *unstructured.Unstructured) {
	rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, logEvent{rv: rv, at: time.Now(), kind: kind, obj: u.DeepCopy()})
}

// sorted returns the events in the order the API server wrote them, each
// version once.
func (l *eventLog) sorted() []logEvent {
	l.mu.Lock()
	out := slices.Clone(l.events)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].rv < out[j].rv })
	return slices.CompactFunc(out, func(a, b logEvent) bool {
		return a.rv == b.rv && a.kind == b.kind && a.obj.GetName() == b.obj.GetName()
	})
}

// selected is the revision that a Service selects in its latest version
// the log holds; "" for none.
func (l *eventLog) selected(svc string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rv int64 = -1
	rev := ""
	for _, e := range l.events {
		if e.kind == gvkService.Kind && e.obj.GetName() == svc && e.rv > rv {
			rv = e.rv
			rev, _, _ = unstructured.NestedString(e.obj.Object, "spec", "selector", revisionLabel)
		}
	}
	return rev
}

// A selectorMove is a write that changed the revision a proxy Service
// selects.
type selectorMove struct {
	from, to string
	rv       int64
	at       time.Time
	// weight is the Service's weight in the route as the API server held
	// it when the Service moved; routeAccepted whether the gateway had
	// accepted that generation of the route.
	weight        int64
	routeAccepted bool
	// next is the route's first later version that gives the Service a
	// weight again (rv 0: none yet), and reconciled whether an XR write
	// (the end of a reconcile: Crossplane writes the XR's status after
	// applying every composed resource) came between the move and it.
	next       logEvent
	reconciled bool
}

func (m selectorMove) String() string {
	return fmt.Sprintf("%s -> %s at resource version %d (its route weight then %d, accepted %t; weight again at %d, after a reconcile %t)",
		m.from, m.to, m.rv, m.weight, m.routeAccepted, m.next.rv, m.reconciled)
}

// moves lists the changes of the revision a Service selects, each with
// the route's state around it.
func (l *eventLog) moves(svc string) []selectorMove {
	events := l.sorted()
	var out []selectorMove
	var route *unstructured.Unstructured
	selected := ""
	for i, e := range events {
		switch {
		case e.kind == gvkHTTPRoute.Kind && e.obj.GetName() == releaseRoute:
			route = e.obj
		case e.kind == gvkService.Kind && e.obj.GetName() == svc:
			rev, _, _ := unstructured.NestedString(e.obj.Object, "spec", "selector", revisionLabel)
			if selected != "" && rev != selected {
				m := selectorMove{from: selected, to: rev, rv: e.rv, at: e.at}
				if route != nil {
					m.weight, m.routeAccepted = weights(route)[svc], accepted(route)
				}
				m.next, m.reconciled = l.weightAgain(events[i+1:], svc)
				out = append(out, m)
			}
			selected = rev
		}
	}
	return out
}

// weightAgain finds the first route version that gives a Service a weight,
// and whether an XR write came before it.
func (l *eventLog) weightAgain(events []logEvent, svc string) (logEvent, bool) {
	reconciled := false
	for _, e := range events {
		switch {
		case e.kind == gvkCanaryRoute.Kind:
			reconciled = true
		case e.kind == gvkHTTPRoute.Kind && e.obj.GetName() == releaseRoute && weights(e.obj)[svc] > 0:
			return e, reconciled
		}
	}
	return logEvent{}, reconciled
}

// canaryWeights lists the route's canary weights, each change once, in
// the order the API server wrote them.
func (l *eventLog) canaryWeights() []int64 {
	var out []int64
	for _, e := range l.sorted() {
		if e.kind != gvkHTTPRoute.Kind || e.obj.GetName() != releaseRoute {
			continue
		}
		if w, ok := weights(e.obj)[releaseCanary]; ok && (len(out) == 0 || out[len(out)-1] != w) {
			out = append(out, w)
		}
	}
	return out
}

// replicas lists a Deployment's spec.replicas, each change once, in order.
func (l *eventLog) replicas(name string) []int64 {
	var out []int64
	for _, e := range l.sorted() {
		if e.kind != gvkDeployment.Kind || e.obj.GetName() != name {
			continue
		}
		n, found, _ := unstructured.NestedInt64(e.obj.Object, "spec", "replicas")
		if !found {
			n = 1
		}
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

// A revisionBackend stands in for the pods behind a proxy Service: it
// listens on the Service's clusterIP and port, where the gateway sends the
// Service's requests, and answers each with the revision that the Service
// selects at that moment (as the log last saw it). It keeps when each
// request came.
type revisionBackend struct {
	svc string
	log *eventLog
	srv *http.Server

	mu    sync.Mutex
	times []time.Time
}

// serveRevisions starts a revisionBackend for a Service once it has a
// clusterIP, stopped when the test ends.
func serveRevisions(t *testing.T, ns, svc string, l *eventLog) *revisionBackend {
	t.Helper()
	addr := serviceAddress(t, ns, svc)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b := &revisionBackend{svc: svc, log: l}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = b.srv.Serve(ln) }()
	t.Cleanup(func() { _ = b.srv.Close(); <-done })
	return b
}

func (b *revisionBackend) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	b.mu.Lock()
	b.times = append(b.times, now)
	b.mu.Unlock()
	rev := b.log.selected(b.svc)
	w.Header().Set(backends.Header, rev)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, rev)
}

// requestsBetween counts the requests that came in [from, to].
func (b *revisionBackend) requestsBetween(from, to time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, at := range b.times {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// A steadyProbe sends requests through the gateway one after another until
// stopped, and keeps who answered each and when.
type steadyProbe struct {
	stop func()
	mu   sync.Mutex
	sent []probeAnswer
}

type probeAnswer struct {
	at  time.Time
	who string
}

func startSteadyProbe(t *testing.T, p probe) *steadyProbe { return startProbeEvery(t, p, 0) }

// startProbeEvery is a steadyProbe that sends a request every pace at
// most (0: one after another, as fast as they are answered).
func startProbeEvery(t *testing.T, p probe, pace time.Duration) *steadyProbe {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := &steadyProbe{}
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(s.stop)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			at := time.Now()
			if next := s.lastSent().Add(pace); pace > 0 && at.Before(next) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(next.Sub(at)):
				}
				at = time.Now()
			}
			who := p.answer(ctx)
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			s.sent = append(s.sent, probeAnswer{at: at, who: who})
			s.mu.Unlock()
		}
	}()
	return s
}

// lastSent is when the last request was sent; zero before the first.
func (s *steadyProbe) lastSent() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) == 0 {
		return time.Time{}
	}
	return s.sent[len(s.sent)-1].at
}

// between counts who answered the requests sent in [from, to].
func (s *steadyProbe) between(from, to time.Time) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, a := range s.sent {
		if !a.at.Before(from) && !a.at.After(to) {
			out[a.who]++
		}
	}
	return out
}

// revisions is what a batch of requests should get: so many answers of
// each revision, in percent of the batch.
func revisions(percent map[string]int) map[string]int {
	out := map[string]int{}
	for rev, p := range percent {
		if n := batch * p / 100; n > 0 {
			out[rev] = n
		}
	}
	return out
}

// describeMoves prints moves, one a line.
func describeMoves(moves []selectorMove) string {
	parts := make([]string, 0, len(moves))
	for _, m := range moves {
		parts = append(parts, m.String())
	}
	return strings.Join(parts, "\n")
}

// awaitLogBackOnPrimary waits until the log holds the primary Service's
// moves and the route's move back to the primary after the last of them.
// The checks read the log, which a watch fills behind the API server's
// answers: a status read from the API server may be ahead of it.
func awaitLogBackOnPrimary(t *testing.T, log *eventLog, moves int) {
	t.Helper()
	await(t, settle, "the log saw the route weight the primary again", func(context.Context) (bool, string) {
		weights, seen := log.canaryWeights(), log.moves(releasePrimary)
		back := len(weights) > 0 && weights[len(weights)-1] == 0 && len(seen) >= moves && seen[len(seen)-1].next.rv != 0
		return back, fmt.Sprintf("canary weights in the log: %v; the primary's moves:\n%s", weights, describeMoves(seen))
	})
}

// canaryMoveRecorded is the first XR write that records a move of the
// canary Service (status.release.canaryMove) from one revision to
// another, the settle's start (the route found sending it nothing), and
// when the move is due (canaryMove.at). ok is false if none did.
func (l *eventLog) canaryMoveRecorded(from, to string) (logEvent, time.Time, bool) {
	for _, e := range l.sorted() {
		if e.kind != gvkCanaryRoute.Kind || e.obj.GetName() != releaseRoute {
			continue
		}
		move, _, _ := unstructured.NestedStringMap(e.obj.Object, "status", "release", "canaryMove")
		if move["from"] != from || move["to"] != to {
			continue
		}
		due, err := time.Parse(time.RFC3339, move["at"])
		return e, due, err == nil
	}
	return logEvent{}, time.Time{}, false
}

// zeroedBefore is the route's write, before a resource version, that took
// a Service's weight to 0 (from more); ok false if none did.
func (l *eventLog) zeroedBefore(rv int64, svc string) (logEvent, bool) {
	var out logEvent
	ok := false
	last := int64(-1)
	for _, e := range l.sorted() {
		if e.rv >= rv {
			break
		}
		if e.kind != gvkHTTPRoute.Kind || e.obj.GetName() != releaseRoute {
			continue
		}
		w := weights(e.obj)[svc]
		if w == 0 && last > 0 {
			out, ok = e, true
		}
		last = w
	}
	return out, ok
}

// editTo is the resource version of the first XR write after a resource
// version whose spec.canary.revision is a revision: the edit that asked
// for it; 0 if none.
func (l *eventLog) editTo(after int64, revision string) int64 {
	for _, e := range l.sorted() {
		if e.kind != gvkCanaryRoute.Kind || e.rv <= after {
			continue
		}
		if r, _, _ := unstructured.NestedString(e.obj.Object, "spec", "canary", "revision"); r == revision {
			return e.rv
		}
	}
	return 0
}

// rolloutMessages lists the XR's status.rollout writes in [from, to)
// (resource versions; to 0: to the end), each change once: when the log
// saw it, its reason and message.
func (l *eventLog) rolloutMessages(from, to int64) string {
	var b strings.Builder
	last := ""
	for _, e := range l.sorted() {
		if e.kind != gvkCanaryRoute.Kind || e.rv < from || (to != 0 && e.rv >= to) {
			continue
		}
		r := rollout(e.obj)
		if s := r.Reason + r.Message; s != last {
			last = s
			fmt.Fprintf(&b, "  %s %s: %s\n", e.at.Format(time.StampMilli), r.Reason, r.Message)
		}
	}
	return b.String()
}

// requestTimes are the times of the requests that came in [from, to].
func (b *revisionBackend) requestTimes(from, to time.Time) []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []time.Time
	for _, at := range b.times {
		if !at.Before(from) && !at.After(to) {
			out = append(out, at)
		}
	}
	return out
}

// run finds a steadyProbe's first n answers in a row by one backend sent
// at or after a time: when the first and the last of them were sent; ok
// false if there is none. The gateway's weighted round robin never
// answers a route's only client 100 times in a row from one side while
// the other has 25% or more: such a run says the gateway serves a route
// that sends the other side nothing.
func (s *steadyProbe) run(after time.Time, n int, who string) (first, last time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count := 0
	for i, a := range s.sent {
		if a.at.Before(after) {
			continue
		}
		if a.who != who {
			count = 0
			continue
		}
		count++
		if count == n {
			return s.sent[i-n+1].at, a.at, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// firstAnswer is when a steadyProbe first got an answer of a backend; ok
// false if it never did.
func (s *steadyProbe) firstAnswer(who string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.sent {
		if a.who == who {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// answeredLast checks that a steadyProbe's last n requests were answered
// as want (the gateway's weighted round robin is deterministic: with no
// other client of the route, n requests in a row at w% give exactly w% of
// n to the canary).
func (s *steadyProbe) answeredLast(n int, want map[string]int) controlplane.Check {
	return func(context.Context) (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		got := map[string]int{}
		for _, a := range s.sent[max(0, len(s.sent)-n):] {
			got[a.who]++
		}
		return len(s.sent) >= n && cmp.Equal(want, got), fmt.Sprintf("the last %d requests answered %s", n, describeCounts(got))
	}
}
