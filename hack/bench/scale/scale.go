// Package scale is the live scale scenario, shared by test/live's TestScale
// and `go run ./hack/bench -live N`: N namespaced CanaryRoutes on a real
// control plane (test/live/controlplane), each composing its own HTTPRoute
// and two proxy Services, rolled out through three steps
// ([{weight: 10, pause: 10s}, {weight: 50, pause: 10s}, {weight: 100}]) at
// revision v1 until every one is Ready and Succeeded, then moved to revision
// v2 all at once, which restarts every rollout at step 0. It records when
// each reached Succeeded at 100% again, the CPU time and resident set of the
// control plane's processes, and every Fatal, Synced False or Warning event.
//
// Start starts the control plane for it, as test/live does, with the
// gateway stand-in (test/live/standin) accepting the routes, several at a
// time from watch caches (gateway.go). Run runs the scenario on it.
package scale

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// The kinds the scenario writes and reads.
var (
	CanaryRouteGVK = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "CanaryRoute"}
	HTTPRouteGVK   = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}
)

// Steps are the rollout's steps: 20 s of pauses, three acceptances by the
// gateway.
const Steps = "[{weight: 10, pause: 10s}, {weight: 50, pause: 10s}, {weight: 100}]"

// Revisions of the canary: the first rollout, then the bump.
const (
	RevisionFirst = "v1"
	RevisionBump  = "v2"
)

// Phases of the run that Usage and Counters split.
const (
	PhaseCompose = iota // from the first create until every rollout of v1 Succeeded
	PhaseRollout        // from the bump until every rollout of v2 Succeeded
	phases
)

// PhaseNames name the phases in reports.
var PhaseNames = [phases]string{"compose (create to all v1 Succeeded)", "rollout (bump to all v2 Succeeded)"}

// Options of a run.
type Options struct {
	// Client writes and watches the CanaryRoutes. Its rate limits are the
	// scenario's own: give it a client of its own.
	Client *controlplane.Client
	// Root is the repository, for example/progressive.
	Root string
	// Namespace holds the CanaryRoutes; it must exist.
	Namespace string
	// Composition is the name of a Composition for CanaryRoutes that runs
	// the function (see Composition).
	Composition string
	// N is how many CanaryRoutes. Default 200.
	N int
	// Writers is how many creates or updates run at once. Default 10.
	Writers int
	// Timeout bounds each phase. Default 5 minutes.
	Timeout time.Duration
	// PIDs returns the processes to measure, by name (see
	// controlplane.Environment.PIDs). Optional.
	PIDs func() map[string]int
	// Metrics are Prometheus endpoints to read counters and gauges from,
	// by process name (function, crossplane, kube-apiserver). Optional.
	Metrics map[string]Endpoint
	// Logf reports progress. Optional.
	Logf func(format string, args ...any)
	// DuringRollout, if set, runs while the rollouts of v2 run, from 20 s
	// after the bump (to take profiles, say); the run waits for it.
	DuringRollout func(ctx context.Context)
	// Trace names a CanaryRoute (such as scale-0000) whose every write is
	// logged, with the fields it changed. Optional.
	Trace string
	// AbortEvery aborts every AbortEvery-th CanaryRoute (scale-0000,
	// scale-0010, ... for 10) in the middle of its rollout of v2, once its
	// route gives the canary a weight: from then on its canary must get no
	// weight (DefaultAbortEvery; negative: none).
	AbortEvery int
}

// DefaultAbortEvery aborts a tenth of the CanaryRoutes.
const DefaultAbortEvery = 10

// Aborted reports whether the i-th CanaryRoute is aborted under an
// AbortEvery.
func Aborted(i, every int) bool { return every > 0 && i%every == 0 }

// Usage is what one process used.
type Usage struct {
	// CPU is the user and system time it spent in each phase.
	CPU [phases]time.Duration
	// PeakRSS is the largest resident set Linux saw (VmHWM, since the
	// process started); MaxRSS the largest sampled during the run (VmRSS,
	// every second).
	PeakRSS, MaxRSS int64
}

// Result is what a run measured. Durations of the compose phase count from
// the first create, those of the rollout phase from the bump's first write.
type Result struct {
	N int
	// Created is how long writing the N CanaryRoutes took.
	Created time.Duration
	// Ready and Stable are when each CanaryRoute was first Ready, and first
	// Succeeded at 100% at v1, sorted.
	Ready, Stable []time.Duration
	// Bumped is how long writing v2 to every CanaryRoute took.
	Bumped time.Duration
	// Completion is when each rollout of v2 Succeeded at 100%, sorted.
	Completion []time.Duration
	// Usage of each process measured, by name.
	Usage map[string]*Usage
	// Counters are the growth of the counters read from Metrics in each
	// phase, by process and series; Gauges the largest sampled value of
	// the gauges, by process and series.
	Counters map[string]map[string][phases]float64
	Gauges   map[string]map[string]float64
	// Fatal counts the function's Fatal results: runs with result fatal
	// (from its metrics) or, without metrics, CanaryRoutes seen Synced
	// False with a fatal result.
	Fatal int
	// Writes counts the versions of the CanaryRoutes seen after their
	// first; Churn how many of them changed each field (list items by
	// index, conditions by type), resourceVersion and managedFields left
	// out.
	Writes int
	Churn  map[string]int
	// Back counts the writes of a CanaryRoute that moved its rollout back
	// a step within a revision; Restarted those that restarted its step (a
	// new stepStartedAt for the same step). Neither happens in a run
	// whose every decision saw the latest CanaryRoute.
	Back, Restarted int
	// RouteWrites counts the versions of the routes a watch saw, apart
	// from the function's view; RouteBack those that gave the canary less
	// than the version before within a revision (but the restart of v2 and
	// an abort); AbortedWeight those that gave an aborted canary a weight
	// after the version that took it to 0. BackExamples show a few, as the
	// route's weights in the order the API server wrote them.
	RouteWrites, RouteBack, AbortedWeight int
	BackExamples                          []string
	// Aborted is how many CanaryRoutes were aborted mid-rollout.
	Aborted int
	// RouteGenerations is the routes' metadata.generation at the end,
	// summed: how often their spec changed (3 steps a revision).
	RouteGenerations int64
	// Problems are what went wrong, each once with how often: Synced False
	// messages, Failed or Aborted rollouts, Warning events, routes not at
	// 100% at the end.
	Problems []string
}

// Composition returns the progressive example's Composition under a name:
// the function with the default Input.
func Composition(root, name string) (*unstructured.Unstructured, error) {
	objs, err := controlplane.ReadObjects(filepath.Join(root, "example", "progressive", "composition.yaml"))
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, errors.New("example/progressive/composition.yaml holds no object")
	}
	objs[0].SetName(name)
	return objs[0], nil
}

// Name is the name of the i-th CanaryRoute.
func Name(i int) string { return fmt.Sprintf("scale-%04d", i) }

// RouteName is the name of the i-th CanaryRoute's route.
func RouteName(i int) string { return fmt.Sprintf("app-%04d", i) }

// CanaryRoute is the i-th CanaryRoute at a revision: the progressive
// example's, without gates, with its own route name, hostname and pods
// (which need not exist: only the proxy Services select them).
func CanaryRoute(root, ns, composition string, i int, revision string) (*unstructured.Unstructured, error) {
	objs, err := controlplane.ReadObjects(filepath.Join(root, "example", "progressive", "xr.yaml"))
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, errors.New("example/progressive/xr.yaml holds no object")
	}
	xr := objs[0]
	unstructured.RemoveNestedField(xr.Object, "status")
	xr.SetName(Name(i))
	xr.SetNamespace(ns)
	var steps []any
	if err := yaml.Unmarshal([]byte(Steps), &steps); err != nil {
		return nil, err
	}
	app := RouteName(i)
	for _, f := range []struct {
		value any
		path  []string // below spec
	}{
		{composition, []string{"crossplane", "compositionRef", "name"}},
		{app, []string{"routeName"}},
		{[]any{app + ".example.com"}, []string{"hostnames"}},
		{map[string]any{"app": app, "version": "primary"}, []string{"primary", "service", "selector"}},
		{map[string]any{"app": app, "version": "canary"}, []string{"canary", "service", "selector"}},
		{revision, []string{"canary", "revision"}},
		{map[string]any{"steps": steps}, []string{"traffic"}},
	} {
		if err := unstructured.SetNestedField(xr.Object, f.value, append([]string{"spec"}, f.path...)...); err != nil {
			return nil, err
		}
	}
	return xr, nil
}

// xrState is what the scenario follows of a CanaryRoute.
type xrState struct {
	ready, stable, done time.Time
	// last is the last version seen, to tell what each write changed.
	last *unstructured.Unstructured
	// bumpRV and abortRV are the resource versions of the writes of v2 and
	// of the abort (0 until written); abort says it is to be aborted, and
	// aborting that its write is under way.
	bumpRV, abortRV int64
	abort, aborting bool
	// v2, succeeded and aborted say where its rollout stood when last
	// seen: at v2 (spec and status), Succeeded at 100%, Aborted.
	v2, succeeded, aborted bool
	// route is its route's canary weight in each version the watch saw, in
	// the order the API server wrote them.
	route []routeVersion
}

// routeVersion is a version of a route, as the watch saw it.
type routeVersion struct {
	rv, weight int64
}

// progress is where a CanaryRoute's rollout stands, to tell when a write
// moved it back.
type progress struct {
	revision, started string
	step              int64
}

// run is one run's bookkeeping.
type run struct {
	o Options

	mu  sync.Mutex
	xrs map[string]*xrState
	// routes are the same states by route name.
	routes   map[string]*xrState
	problems map[string]int
	fatalXRs map[string]bool
	routeGen int64
	// writes counts the versions of the CanaryRoutes seen, churn the
	// fields each changed: a field that changes on every write makes
	// Crossplane reconcile again at once (the CanaryRoute is watched).
	writes int
	churn  map[string]int
	// back counts writes that moved a rollout back a step, or restarted
	// its step (a new stepStartedAt), within one revision.
	back, restarted int
	// aborts names the CanaryRoutes to abort now.
	aborts chan string

	start, bump time.Time
	marks       [phases + 1]map[string]controlplane.ProcessStats
	counters    [phases + 1]map[string]map[string]float64
	maxRSS      map[string]int64
	gauges      map[string]map[string]float64
}

// Run runs the scenario.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.N == 0 {
		o.N = 200
	}
	if o.Writers == 0 {
		o.Writers = 10
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	r := &run{
		o: o, xrs: map[string]*xrState{}, problems: map[string]int{}, fatalXRs: map[string]bool{}, churn: map[string]int{},
		maxRSS: map[string]int64{}, gauges: map[string]map[string]float64{}, aborts: make(chan string, o.N),
	}
	if o.AbortEvery == 0 {
		o.AbortEvery = DefaultAbortEvery
	}
	r.o = o
	r.routes = map[string]*xrState{}
	for i := range o.N {
		s := &xrState{abort: Aborted(i, o.AbortEvery)}
		r.xrs[Name(i)], r.routes[RouteName(i)] = s, s
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	synced, err := r.watch(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-synced:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var sampling sync.WaitGroup
	sampling.Go(func() { r.sample(ctx) })
	sampling.Go(func() { r.abortAll(ctx) })
	defer func() { cancel(); sampling.Wait() }()

	res := &Result{N: o.N}

	// Compose: N CanaryRoutes at v1, until each Succeeded.
	r.mark(ctx, PhaseCompose)
	r.mu.Lock()
	r.start = time.Now()
	r.mu.Unlock()
	if err := r.write(ctx, RevisionFirst); err != nil {
		return nil, err
	}
	res.Created = time.Since(r.start)
	o.Logf("scale: created %d CanaryRoutes in %s", o.N, res.Created.Round(100*time.Millisecond))
	if err := r.await(ctx, "every CanaryRoute Ready and its rollout of v1 Succeeded at 100%", func(s *xrState) bool {
		return !s.ready.IsZero() && !s.stable.IsZero()
	}); err != nil {
		return nil, err
	}

	// Rollout: v2 on every one, until each Succeeded again.
	r.mark(ctx, PhaseRollout)
	r.mu.Lock()
	r.bump = time.Now()
	r.mu.Unlock()
	if err := r.write(ctx, RevisionBump); err != nil {
		return nil, err
	}
	res.Bumped = time.Since(r.bump)
	o.Logf("scale: wrote revision %s to %d CanaryRoutes in %s", RevisionBump, o.N, res.Bumped.Round(100*time.Millisecond))
	var during sync.WaitGroup
	if o.DuringRollout != nil {
		during.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(r.bump.Add(20 * time.Second))):
			}
			o.DuringRollout(ctx)
		})
	}
	if err := r.await(ctx, "every rollout of v2 Succeeded at 100%, or Aborted at 0%", func(s *xrState) bool { return !s.done.IsZero() }); err != nil {
		return nil, err
	}
	during.Wait()
	r.mark(ctx, phases)

	r.checkRoutes(ctx)
	r.checkEvents(ctx)
	r.result(res)
	return res, nil
}

// write applies every CanaryRoute at a revision, Writers at a time.
func (r *run) write(ctx context.Context, revision string) error {
	idx := make(chan int)
	errs := make(chan error, r.o.Writers)
	var wg sync.WaitGroup
	for range r.o.Writers {
		wg.Go(func() {
			for i := range idx {
				xr, err := CanaryRoute(r.o.Root, r.o.Namespace, r.o.Composition, i, revision)
				var u *unstructured.Unstructured
				if err == nil {
					u, err = r.o.Client.Apply(ctx, xr)
				}
				if err != nil {
					errs <- err
					return
				}
				if revision == RevisionBump {
					rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
					r.mu.Lock()
					r.xrs[Name(i)].bumpRV = rv
					r.mu.Unlock()
				}
			}
		})
	}
	var err error
feed:
	for i := range r.o.N {
		select {
		case idx <- i:
		case err = <-errs:
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// watch follows the namespace's CanaryRoutes with a list and a watch (a
// mirror), so that every transition is seen when the API server reports
// it, without polling (client-go's informers would need a module this one
// does not require). The channel closes once the first list is in.
func (r *run) watch(ctx context.Context) (<-chan struct{}, error) {
	res, err := r.o.Client.Resource(ctx, CanaryRouteGVK, r.o.Namespace)
	if err != nil {
		return nil, err
	}
	routes, err := r.o.Client.Resource(ctx, HTTPRouteGVK, r.o.Namespace)
	if err != nil {
		return nil, err
	}
	xrs, rs := startMirror(ctx, res, r.observe).synced, startMirror(ctx, routes, r.observeRoute).synced
	synced := make(chan struct{})
	go func() {
		for _, c := range []<-chan struct{}{xrs, rs} {
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
		close(synced)
	}()
	return synced, nil
}

// observeRoute records a route's version: its canary's weight, in the
// order the API server wrote the versions (a list after a watch ended
// sees versions already recorded, which are skipped).
func (r *run) observeRoute(u *unstructured.Unstructured) {
	rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	w := canaryWeight(u, u.GetName()+"-canary")
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.routes[u.GetName()]
	if s == nil || r.start.IsZero() {
		return
	}
	if n := len(s.route); n > 0 && s.route[n-1].rv >= rv {
		return
	}
	s.route = append(s.route, routeVersion{rv: rv, weight: w})
	s.settle(time.Now())
}

// observe records a CanaryRoute's transitions, and what went wrong.
func (r *run) observe(u *unstructured.Unstructured) {
	now := time.Now()
	conds := controlplane.Conditions(u)
	ro, _, _ := unstructured.NestedMap(u.Object, "status", "rollout")
	phase, _ := ro["phase"].(string)
	revision, _ := ro["revision"].(string)
	weight, _ := ro["canaryWeight"].(int64)
	spec, _, _ := unstructured.NestedString(u.Object, "spec", "canary", "revision")

	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.xrs[u.GetName()]
	if s == nil || r.start.IsZero() {
		return
	}
	if s.last != nil && s.last.GetResourceVersion() != u.GetResourceVersion() {
		r.recordWrite(s.last, u, now)
	}
	s.last = u
	if c := conds["Synced"]; c.Status == "False" {
		r.problems["Synced False: "+c.Reason+": "+firstLine(c.Message)]++
		if strings.Contains(strings.ToLower(c.Message), "fatal") {
			r.fatalXRs[u.GetName()] = true
		}
	}
	if phase == "Failed" || phase == "Aborted" && !s.abort {
		r.problems[fmt.Sprintf("rollout %s: %v", phase, ro["message"])]++
	}
	if s.ready.IsZero() && conds["Ready"].Status == "True" {
		s.ready = now
	}
	succeeded := phase == "Succeeded" && weight == 100
	if s.stable.IsZero() && succeeded && revision == RevisionFirst {
		s.stable = now
	}
	s.v2 = !r.bump.IsZero() && revision == RevisionBump && spec == RevisionBump
	s.succeeded, s.aborted = succeeded, phase == "Aborted"
	r.abortMidRollout(u.GetName(), s, phase, weight)
	s.settle(now)
}

// abortMidRollout aborts a CanaryRoute chosen to be, once its rollout of v2
// gives the canary weight. The caller holds r.mu.
func (r *run) abortMidRollout(name string, s *xrState, phase string, weight int64) {
	if s.abort && s.v2 && !s.aborting && phase == "Progressing" && weight > 0 {
		s.aborting = true
		r.aborts <- name
	}
}

// settle marks a CanaryRoute done once its rollout of v2 Succeeded at
// 100%, or, if it was aborted, once it is Aborted and its route gives the
// canary nothing.
func (s *xrState) settle(now time.Time) {
	atZero := s.abortRV > 0 && len(s.route) > 0 && s.route[len(s.route)-1].weight == 0
	if s.done.IsZero() && s.v2 && (s.succeeded && !s.abort || s.aborted && atZero) {
		s.done = now
	}
}

// abort writes traffic.abort to a CanaryRoute, again after a transient
// error of an overloaded API server (a timeout, a throttle), as a person's
// or a pipeline's client would.
func (r *run) abort(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	err := retry.OnError(wait.Backoff{Steps: 6, Duration: time.Second, Factor: 2, Cap: 30 * time.Second},
		func(err error) bool {
			if ctx.Err() != nil {
				return false // The run is over: no retry outlives it.
			}
			return Transient("cannot abort a CanaryRoute: "+err.Error()) || kerrors.IsServerTimeout(err) || kerrors.IsTimeout(err) || kerrors.IsTooManyRequests(err)
		},
		func() error {
			res, err := r.o.Client.Resource(ctx, CanaryRouteGVK, r.o.Namespace)
			if err != nil {
				return err
			}
			u, err = res.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"traffic":{"abort":true}}}`), metav1.PatchOptions{})
			return err
		})
	return u, err
}

// abortAll writes traffic.abort to the CanaryRoutes the channel names, one
// at a time, recording the resource version of each write.
func (r *run) abortAll(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-r.aborts:
			u, err := r.abort(ctx, name)
			if err != nil {
				r.problem("cannot abort a CanaryRoute: " + err.Error())
				continue
			}
			rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
			r.mu.Lock()
			r.xrs[name].abortRV = rv
			r.xrs[name].settle(time.Now())
			r.mu.Unlock()
		}
	}
}

// recordWrite records a new version of a CanaryRoute: a step moved back or
// restarted within a revision, the fields it changed, and, for the traced
// CanaryRoute, what they now hold. The caller holds r.mu.
func (r *run) recordWrite(last, u *unstructured.Unstructured, now time.Time) {
	r.writes++
	ro, _, _ := unstructured.NestedMap(u.Object, "status", "rollout")
	revision, _ := ro["revision"].(string)
	step, hasStep := ro["step"].(int64)
	started, _ := ro["stepStartedAt"].(string)
	if prev := progressOf(last); hasStep && prev.revision == revision && revision != "" {
		switch {
		case step < prev.step:
			r.back++
		case step == prev.step && started != prev.started && prev.started != "":
			r.restarted++
		}
	}
	paths := changed("", last.Object, u.Object)
	for _, p := range paths {
		r.churn[p]++
	}
	if u.GetName() != r.o.Trace {
		return
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		if strings.HasSuffix(p, "lastTransitionTime") {
			continue
		}
		fmt.Fprintf(&b, "\n    %s: %v", p, lookup(u.Object, p))
	}
	r.o.Logf("scale: trace %s at %s (rv %s, generation %d, rollout %v/%v/%v):%s", u.GetName(), now.Sub(r.start).Round(10*time.Millisecond),
		u.GetResourceVersion(), u.GetGeneration(), ro["phase"], revision, ro["canaryWeight"], b.String())
}

// await waits until every CanaryRoute is done by a phase's measure,
// logging progress every 10 seconds.
func (r *run) await(ctx context.Context, what string, done func(*xrState) bool) error {
	start := time.Now()
	deadline := time.NewTimer(r.o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		n, ready, stable := r.count(done)
		if n == r.o.N {
			r.o.Logf("scale: %s after %s", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			r.o.Logf("scale: %d/%d done (%d Ready, %d v1 Succeeded) after %s", n, r.o.N, ready, stable, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%s: %d of %d within %s; problems seen: %v", what, n, r.o.N, r.o.Timeout, r.problemList())
		case <-tick.C:
		}
	}
}

func (r *run) count(done func(*xrState) bool) (n, ready, stable int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.xrs {
		if done(s) {
			n++
		}
		if !s.ready.IsZero() {
			ready++
		}
		if !s.stable.IsZero() {
			stable++
		}
	}
	return n, ready, stable
}

// sample reads the processes' resident sets and the gauges every second.
func (r *run) sample(ctx context.Context) {
	for {
		if r.o.PIDs != nil {
			for name, pid := range r.o.PIDs() {
				s, err := controlplane.ProcessStatsOf(pid)
				if err != nil {
					continue
				}
				r.mu.Lock()
				r.maxRSS[name] = max(r.maxRSS[name], s.RSS)
				r.mu.Unlock()
			}
		}
		for name, ep := range r.o.Metrics {
			m, err := scrape(ctx, ep)
			if err != nil {
				continue
			}
			r.mu.Lock()
			for series, v := range m {
				if !gauge(series) {
					continue
				}
				if r.gauges[name] == nil {
					r.gauges[name] = map[string]float64{}
				}
				r.gauges[name][series] = max(r.gauges[name][series], v)
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// mark records the processes' CPU time and the counters where a phase
// begins (or, for phases, where the last ends).
func (r *run) mark(ctx context.Context, at int) {
	stats := map[string]controlplane.ProcessStats{}
	if r.o.PIDs != nil {
		for name, pid := range r.o.PIDs() {
			if s, err := controlplane.ProcessStatsOf(pid); err == nil {
				stats[name] = s
			}
		}
	}
	counters := map[string]map[string]float64{}
	for name, ep := range r.o.Metrics {
		m, err := scrape(ctx, ep)
		if err != nil {
			r.o.Logf("scale: cannot read the metrics of %s: %v", name, err)
			continue
		}
		counters[name] = map[string]float64{}
		for series, v := range m {
			if key, ok := counter(series); ok {
				counters[name][key] += v
			}
		}
	}
	r.mu.Lock()
	r.marks[at], r.counters[at] = stats, counters
	r.mu.Unlock()
}

// counter says whether a series is reported, and under which key: the
// function's runs and transitions, Crossplane's reconciles of CanaryRoutes
// and its function runner's calls, the queue of its CanaryRoute
// controller; the API server's requests and the time they took, summed by
// verb and resource.
func counter(series string) (string, bool) {
	switch {
	case strings.HasPrefix(series, "function_canary_route_runs_total"),
		strings.HasPrefix(series, "function_canary_route_rollout_transitions_total"),
		strings.HasPrefix(series, "function_canary_route_stale_reads_total"):
		return series, true
	case strings.HasPrefix(series, "controller_runtime_reconcile_total"),
		strings.HasPrefix(series, "workqueue_adds_total"):
		return series, strings.Contains(series, "canaryroutes.platform.example.org")
	case strings.HasPrefix(series, "function_run_function_request_total"):
		return "function_run_function_request_total", true
	case strings.HasPrefix(series, "apiserver_request_total{"):
		return "apiserver_request_total" + labels(series, "verb", "resource", "subresource"), true
	case strings.HasPrefix(series, "apiserver_request_duration_seconds_sum{") && !strings.Contains(series, `verb="WATCH"`):
		return "apiserver_request_duration_seconds_sum" + labels(series, "verb", "resource", "subresource"), true
	}
	return "", false
}

// labels keeps some labels of a series, in this order: {verb="GET",...}.
func labels(series string, keep ...string) string {
	i := strings.IndexByte(series, '{')
	if i < 0 {
		return ""
	}
	all := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(series[i+1:], "}"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			all[k] = v
		}
	}
	var out []string
	for _, k := range keep {
		if v := all[k]; v != "" && v != `""` {
			out = append(out, k+"="+v)
		}
	}
	return "{" + strings.Join(out, ",") + "}"
}

func gauge(series string) bool {
	if strings.HasPrefix(series, "function_canary_route_decisions_remembered") {
		return true
	}
	return (strings.HasPrefix(series, "workqueue_depth") || strings.HasPrefix(series, "controller_runtime_active_workers") ||
		strings.HasPrefix(series, "controller_runtime_max_concurrent_reconciles")) &&
		strings.Contains(series, "canaryroutes.platform.example.org")
}

// An Endpoint serves Prometheus metrics.
type Endpoint struct {
	URL string
	// Client reaches it. Empty: http.DefaultClient.
	Client *http.Client
}

// scrape reads a Prometheus text endpoint: every sample by its series
// (name and labels, as written), histograms' buckets left out.
func scrape(ctx context.Context, ep Endpoint) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL, http.NoBody)
	if err != nil {
		return nil, err
	}
	hc := ep.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	rsp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", ep.URL, rsp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(rsp.Body, 64<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.Contains(line, "_bucket{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// checkRoutes checks that every route ended at 100% for its canary,
// accepted by the gateway.
func (r *run) checkRoutes(ctx context.Context) {
	routes, err := r.o.Client.List(ctx, HTTPRouteGVK, r.o.Namespace, metav1.ListOptions{})
	if err != nil {
		r.problem("cannot list the routes: " + err.Error())
		return
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range routes {
		byName[routes[i].GetName()] = &routes[i]
	}
	for i := range r.o.N {
		name := RouteName(i)
		u := byName[name]
		if u == nil {
			r.problem("a route is missing at the end")
			continue
		}
		r.mu.Lock()
		r.routeGen += u.GetGeneration()
		r.mu.Unlock()
		want := int64(100)
		if Aborted(i, r.o.AbortEvery) {
			want = 0
		}
		if w := canaryWeight(u, name+"-canary"); w != want {
			r.problem(fmt.Sprintf("a route carries %d%% for its canary at the end, not %d%%", w, want))
		}
	}
}

// canaryWeight is the weight of a backend in a route's first rule, -1
// without it.
func canaryWeight(u *unstructured.Unstructured, backend string) int64 {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	if len(rules) == 0 {
		return -1
	}
	rule, _ := rules[0].(map[string]any)
	refs, _ := rule["backendRefs"].([]any)
	for _, ref := range refs {
		m, _ := ref.(map[string]any)
		if m["name"] != backend {
			continue
		}
		if w, ok := m["weight"].(int64); ok {
			return w
		}
		return 1
	}
	return -1
}

// checkEvents records the namespace's Warning events.
func (r *run) checkEvents(ctx context.Context) {
	events, err := r.o.Client.Kube.CoreV1().Events(r.o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.problem("cannot list events: " + err.Error())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		n := int(e.Count)
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		r.problems[fmt.Sprintf("Warning event %s on %s: %s", e.Reason, e.InvolvedObject.Kind, firstLine(e.Message))] += max(n, 1)
	}
}

func (r *run) problem(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems[p]++
}

func (r *run) problemList() []string {
	out := make([]string, 0, len(r.problems))
	for p, n := range r.problems {
		out = append(out, fmt.Sprintf("%s (%dx)", p, n))
	}
	sort.Strings(out)
	return out
}

func (r *run) result(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.xrs {
		res.Ready = append(res.Ready, s.ready.Sub(r.start))
		res.Stable = append(res.Stable, s.stable.Sub(r.start))
		res.Completion = append(res.Completion, s.done.Sub(r.bump))
	}
	for _, d := range [][]time.Duration{res.Ready, res.Stable, res.Completion} {
		slices.Sort(d)
	}
	res.Usage = map[string]*Usage{}
	for name, end := range r.marks[phases] {
		u := &Usage{PeakRSS: end.PeakRSS, MaxRSS: max(r.maxRSS[name], end.RSS)}
		for p := range phases {
			from, ok := r.marks[p][name]
			to, ok2 := r.marks[p+1][name]
			if ok && ok2 {
				u.CPU[p] = to.CPU - from.CPU
			}
		}
		res.Usage[name] = u
	}
	res.Counters = map[string]map[string][phases]float64{}
	for name, end := range r.counters[phases] {
		res.Counters[name] = map[string][phases]float64{}
		for series := range end {
			var d [phases]float64
			for p := range phases {
				d[p] = r.counters[p+1][name][series] - r.counters[p][name][series]
			}
			if d != [phases]float64{} {
				res.Counters[name][series] = d
			}
		}
	}
	res.Gauges = r.gauges
	if fn, ok := res.Counters["function"]; ok {
		d := fn[`function_canary_route_runs_total{result="fatal"}`]
		res.Fatal = int(d[PhaseCompose] + d[PhaseRollout])
	} else {
		res.Fatal = len(r.fatalXRs)
	}
	res.Problems = r.problemList()
	res.Writes, res.Churn, res.RouteGenerations = r.writes, r.churn, r.routeGen
	res.Back, res.Restarted = r.back, r.restarted
	for _, name := range sortedKeys(r.routes) {
		s := r.routes[name]
		m := routeMoves(s)
		res.RouteWrites += len(s.route)
		res.RouteBack += m.back
		res.AbortedWeight += m.abortedWeight
		if s.abort {
			res.Aborted++
		}
		if (m.back > 0 || m.abortedWeight > 0) && len(res.BackExamples) < 5 {
			ws := make([]string, 0, len(s.route))
			for _, v := range s.route {
				ws = append(ws, strconv.FormatInt(v.weight, 10))
			}
			res.BackExamples = append(res.BackExamples, fmt.Sprintf("%s: %s (v2 written at resource version %d, abort at %d)", name, strings.Join(ws, " "), s.bumpRV, s.abortRV))
		}
	}
}

// moves are what a route's versions did wrong.
type moves struct {
	back, abortedWeight int
}

// routeMoves reads a route's versions, in the order the API server wrote
// them, against the contract: the canary's weight never goes below what a
// version before gave it, but for the restart of the rollout at v2 (once,
// after v2 was written) and an abort (to 0, after it was written), and an
// aborted canary gets no weight after the version that took it to 0.
func routeMoves(s *xrState) moves {
	var m moves
	restarted, aborted := false, false
	for i := 1; i < len(s.route); i++ {
		prev, cur := s.route[i-1], s.route[i]
		switch {
		case aborted && cur.weight > 0:
			m.abortedWeight++
		case cur.weight >= prev.weight:
		case !restarted && s.bumpRV > 0 && cur.rv > s.bumpRV:
			restarted = true
		case s.abortRV > 0 && cur.rv > s.abortRV && cur.weight == 0:
			aborted = true
		default:
			m.back++
		}
	}
	return m
}

// changed lists the leaf paths where two JSON values differ. Conditions
// are matched by type, so that a path names one condition's field.
func changed(path string, a, b any) []string {
	skip := map[string]bool{".metadata.resourceVersion": true, ".metadata.managedFields": true}
	if skip[path] {
		return nil
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range av {
			out = append(out, changed(path+"."+k, v, bv[k])...)
		}
		for k, v := range bv {
			if _, ok := av[k]; !ok {
				out = append(out, changed(path+"."+k, nil, v)...)
			}
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return []string{path}
		}
		if strings.HasSuffix(path, ".conditions") {
			byType := func(l []any) map[string]any {
				m := map[string]any{}
				for _, c := range l {
					if cm, ok := c.(map[string]any); ok {
						t, _ := cm["type"].(string)
						m[t] = cm
					}
				}
				return m
			}
			return changed(path, byType(av), byType(bv))
		}
		if len(av) != len(bv) {
			return []string{path + "[]"}
		}
		var out []string
		for i := range av {
			out = append(out, changed(path+"[]", av[i], bv[i])...)
		}
		return out
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return []string{path}
		}
		return nil
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Quantile returns the q-quantile (0..1) of sorted durations, by the
// nearest rank.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Report writes the result as Markdown tables.
func (res *Result) Report(w io.Writer) {
	spread := func(d []time.Duration) string {
		return fmt.Sprintf("%s | %s | %s | %s", sec(Quantile(d, 0)), sec(Quantile(d, 0.5)), sec(Quantile(d, 0.9)), sec(Quantile(d, 1)))
	}
	_, _ = fmt.Fprintf(w, "%d CanaryRoutes, steps %s; created in %s, v2 written to all in %s\n\n", res.N, Steps, sec(res.Created), sec(res.Bumped))
	_, _ = fmt.Fprintf(w, "| measure | min | median | p90 | max |\n|---|---|---|---|---|\n")
	_, _ = fmt.Fprintf(w, "| Ready, from the first create | %s |\n", spread(res.Ready))
	_, _ = fmt.Fprintf(w, "| v1 Succeeded at 100%%, from the first create | %s |\n", spread(res.Stable))
	_, _ = fmt.Fprintf(w, "| v2 Succeeded at 100%%, from the bump | %s |\n\n", spread(res.Completion))

	names := make([]string, 0, len(res.Usage))
	for n := range res.Usage {
		names = append(names, n)
	}
	sort.Strings(names)
	_, _ = fmt.Fprintf(w, "| process | CPU, %s | CPU, %s | peak RSS (VmHWM) | largest sampled RSS |\n|---|---|---|---|---|\n", PhaseNames[0], PhaseNames[1])
	for _, n := range names {
		u := res.Usage[n]
		_, _ = fmt.Fprintf(w, "| %s | %.1f s | %.1f s | %.1f MiB | %.1f MiB |\n", n, u.CPU[0].Seconds(), u.CPU[1].Seconds(), mib(u.PeakRSS), mib(u.MaxRSS))
	}
	if len(res.Counters) > 0 || len(res.Gauges) > 0 {
		_, _ = fmt.Fprintf(w, "\n| process | series | compose | rollout |\n|---|---|---|---|\n")
		for _, n := range sortedKeys(res.Counters) {
			series := sortedKeys(res.Counters[n])
			if n == "kube-apiserver" {
				series = topSeries(res.Counters[n], 12)
			}
			for _, s := range series {
				d := res.Counters[n][s]
				f := "%.0f"
				if strings.Contains(s, "_seconds") {
					f = "%.1f s"
				}
				_, _ = fmt.Fprintf(w, "| %s | `%s` | "+f+" | "+f+" |\n", n, s, d[0], d[1])
			}
		}
		for _, n := range sortedKeys(res.Gauges) {
			for _, s := range sortedKeys(res.Gauges[n]) {
				_, _ = fmt.Fprintf(w, "| %s | max `%s` | %.0f (whole run) | |\n", n, s, res.Gauges[n][s])
			}
		}
	}
	if res.RouteGenerations > 0 {
		_, _ = fmt.Fprintf(w, "\nroutes' metadata.generation at the end: %.1f a route (6 if the spec changed only with the weights: 3 steps, 2 revisions)\n",
			float64(res.RouteGenerations)/float64(res.N))
	}
	_, _ = fmt.Fprintf(w, "\nwrites that moved a rollout back a step: %d; that restarted a step (new stepStartedAt): %d\n", res.Back, res.Restarted)
	_, _ = fmt.Fprintf(w, "route versions a watch saw: %d; that moved a canary's weight back: %d; that gave an aborted canary weight again: %d (%d CanaryRoutes aborted mid-rollout)\n",
		res.RouteWrites, res.RouteBack, res.AbortedWeight, res.Aborted)
	for _, e := range res.BackExamples {
		_, _ = fmt.Fprintf(w, "- %s\n", e)
	}
	if res.Writes > 0 {
		_, _ = fmt.Fprintf(w, "\n%d writes of the CanaryRoutes seen (%.1f per CanaryRoute); the fields they changed, most often first:\n\n| field | writes that changed it |\n|---|---|\n",
			res.Writes, float64(res.Writes)/float64(res.N))
		fields := sortedKeys(res.Churn)
		sort.SliceStable(fields, func(i, j int) bool { return res.Churn[fields[i]] > res.Churn[fields[j]] })
		for _, f := range fields[:min(len(fields), 15)] {
			_, _ = fmt.Fprintf(w, "| `%s` | %d |\n", f, res.Churn[f])
		}
	}
	_, _ = fmt.Fprintf(w, "\nFatal results: %d\n", res.Fatal)
	if len(res.Problems) == 0 {
		_, _ = fmt.Fprintf(w, "Problems: none\n")
		return
	}
	_, _ = fmt.Fprintf(w, "Problems:\n")
	for _, p := range res.Problems {
		if Transient(p) {
			p = "(transient, the control plane's) " + p
		}
		_, _ = fmt.Fprintf(w, "- %s\n", p)
	}
}

// topSeries are the n largest series of each metric, by their sum over
// the phases, metric by metric.
func topSeries(m map[string][phases]float64, n int) []string {
	byMetric := map[string][]string{}
	for s := range m {
		name, _, _ := strings.Cut(s, "{")
		byMetric[name] = append(byMetric[name], s)
	}
	var out []string
	for _, name := range sortedKeys(byMetric) {
		l := byMetric[name]
		total := func(s string) float64 { d := m[s]; return d[0] + d[1] }
		sort.Slice(l, func(i, j int) bool { return total(l[i]) > total(l[j]) })
		out = append(out, l[:min(n, len(l))]...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sec(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// The goal on the 2-core machine: every rollout of the bump Succeeded
// within 30 s + 60 s of it, no Fatal, the function's resident set at most
// 64 MiB.
const (
	GoalCompletion = 90 * time.Second
	GoalRSS        = 64 << 20
)

// Goal says whether the run met the goal, and by what figures.
func (res *Result) Goal() (bool, string) {
	last := Quantile(res.Completion, 1)
	var peak int64
	if fn := res.Usage["function"]; fn != nil {
		peak = fn.PeakRSS
	}
	ok := last <= GoalCompletion && res.Fatal == 0 && peak <= GoalRSS
	verdict := "met"
	if !ok {
		verdict = "NOT met"
	}
	return ok, fmt.Sprintf("goal (every rollout Succeeded within %s of the bump, no Fatal, the function's RSS at most 64 MiB) %s: the last rollout after %.1f s, %d Fatal, the function's peak RSS %.1f MiB",
		GoalCompletion, verdict, last.Seconds(), res.Fatal, mib(peak))
}

// lookup reads a path that changed, for traces: conditions by type; at a
// list of anything else, the whole list.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, k := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[strings.TrimSuffix(k, "[]")]
			if strings.HasSuffix(k, "[]") {
				return cur
			}
		case []any:
			var found any
			for _, e := range c {
				if m, ok := e.(map[string]any); ok && m["type"] == k {
					found = m
				}
			}
			cur = found
		default:
			return cur
		}
	}
	return cur
}

func progressOf(u *unstructured.Unstructured) progress {
	ro, _, _ := unstructured.NestedMap(u.Object, "status", "rollout")
	var p progress
	p.revision, _ = ro["revision"].(string)
	p.started, _ = ro["stepStartedAt"].(string)
	p.step, _ = ro["step"].(int64)
	return p
}

// Errors are the problems that make a run wrong, not just slow: all but
// Warning events on Services (the API server's ClusterIP repair loop
// reports Services allocated while it runs, and repairs them) and the
// control plane's own transient errors (see Transient).
func (res *Result) Errors() []string {
	var out []string
	if res.Back > 0 || res.RouteBack > 0 || res.AbortedWeight > 0 {
		out = append(out, fmt.Sprintf("rollouts moved back: %d status writes a step back, %d route versions a weight back, %d route versions gave an aborted canary weight again; for example %v",
			res.Back, res.RouteBack, res.AbortedWeight, res.BackExamples))
	}
	for _, p := range res.Problems {
		if strings.HasPrefix(p, "Warning event ") && strings.Contains(p, " on Service: ") || Transient(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// transientErrors are what an API server, or a client of it, says of a
// request it could not serve in time or that lost a race: an overloaded
// control plane's, which Crossplane retries on its next reconcile. They
// say nothing of the function's answers, which the watches judge.
var transientErrors = []string{
	"context deadline exceeded",
	"Timeout: request did not complete",
	"the server was unable to return a response in the time allotted",
	"etcdserver: request timed out",
	"etcdserver: leader changed",
	"the object has been modified; please apply your changes to the latest version",
	"client rate limiter Wait returned an error",
	"the server has received too many requests",
	"http2: client connection lost",
	"TLS handshake timeout",
	"i/o timeout",
}

// Transient reports whether a problem is the control plane's transient
// error (Synced False or a Warning event saying so, or the harness's own
// request failing so), not a defect of the function. The report still
// lists it.
func Transient(problem string) bool {
	// Only what Crossplane reports of its own requests: the harness's own
	// reads end the checks they serve (a failure there stays one), a
	// rollout's message is the function's, and a pipeline step that ran
	// out of time is the function being too slow.
	if !strings.HasPrefix(problem, "Synced False: ") && !strings.HasPrefix(problem, "Warning event ") && !strings.HasPrefix(problem, "cannot abort a CanaryRoute: ") {
		return false
	}
	for _, own := range []string{"pipeline step", "rpc error", "DeadlineExceeded"} {
		if strings.Contains(problem, own) {
			return false
		}
	}
	for _, e := range transientErrors {
		if strings.Contains(problem, e) {
			return true
		}
	}
	return false
}
