package main

// Attacks on the fresh-state contract ("Fresh state: a rollout never moves
// back", ../shared/API.md) at its seams with the older contracts: the
// release loop's order across objects, the takeover rule, the sequence as
// the XRD bounds it.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
)

// laggingPromotion drives a release of v1 then v2 (one process with its
// memory, caches that do not lag) until the cluster's primary Service
// selects v2 while the route sends every request to the canary; it returns
// the sim and the composed objects as the cluster held them just before
// the primary Service moved (primary at v1, route at 100% canary): what a
// cache that lags one apply still holds.
func laggingPromotion(t *testing.T) (*laggingSim, cacheView) {
	t.Helper()
	s := newLaggingSim(t, releaseXR("v1"), 0, 0, true)
	for range 3 {
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(5 * time.Second)
	}
	s.edit("canary.revision", "v2")
	for range 60 {
		n := len(s.objVersions)
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(5 * time.Second)
		before, after := s.objVersions[n-1], s.objVersions[n]
		if selectsIn(before, "service-primary") == "v1" && selectsIn(after, "service-primary") == "v2" {
			if w := canaryWeightOf(before.objects[before.keys["route-httproute"]]); w != 100 {
				t.Fatalf("setup: the primary Service moved while the route gave the canary %d%%", w)
			}
			return s, before
		}
	}
	t.Fatalf("setup: the promotion never moved the primary Service:\n%s", describeHistory(s.history))
	return nil, cacheView{}
}

// selectsIn is the revision a Service of a cache view selects.
func selectsIn(v cacheView, key string) any {
	o := v.objects[v.keys[key]]
	spec, _ := o["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	return sel["version"]
}

// TestAttackLeavingPromotionUnderLaggingServiceCache: a promotion moved the
// primary Service to v2 (the function composed it, the cluster holds it);
// the next reconcile reads the newest spec and status, but its cache of
// composed objects lags one apply (the primary Service still selects v1,
// the route sends every request to the canary). Whatever leaves the
// promotion (an abort, a new revision, the route found not accepted, a
// pause) must not give the primary Service requests in the same answer
// that moves its selector back: without the lag the function unwinds
// first (every request stays on the canary while the primary moves back).
func TestAttackLeavingPromotionUnderLaggingServiceCache(t *testing.T) {
	for name, edit := range map[string]func(s *laggingSim){
		"abort":        func(s *laggingSim) { s.edit("traffic.abort", true) },
		"new revision": func(s *laggingSim) { s.edit("canary.revision", "v3") },
		"paused":       func(s *laggingSim) { s.edit("traffic.paused", true) },
		"route found not accepted": func(s *laggingSim) {
			s.gateway = func(time.Time) (string, string) { return "False", "Pending" }
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, lagged := laggingPromotion(t)
			edit(s)
			// Control: the same read on caches that do not lag leaves the
			// primary Service where the function composed it, or moves it
			// while the route sends it nothing.
			ctl, _ := laggingPromotion(t)
			edit(ctl)
			crc, _, _ := ctl.answer(read{xr: ctl.xrVersions[len(ctl.xrVersions)-1], objects: ctl.objVersions[len(ctl.objVersions)-1], at: ctl.now})
			if p := desiredSelector(crc.rsp, "service-primary"); p != "v2" && primaryWeightOf(crc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()) > 0 {
				t.Fatalf("setup: control without lag moved the primary Service to %v under traffic", p)
			}
			r := read{xr: s.xrVersions[len(s.xrVersions)-1], objects: lagged, at: s.now}
			rc, _, wrong := s.answer(r)
			if len(wrong) > 0 {
				t.Fatalf("%v", wrong)
			}
			route := rc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
			primary := desiredSelector(rc.rsp, "service-primary")
			if primary != "v2" && primaryWeightOf(route) > 0 {
				t.Errorf("Attack: %s during a promotion whose primary Service the function moved to v2, read with a cache of Services one apply behind: the answer moves the primary Service v2 -> %v and gives it %d%% in the same apply (the route's move and the selector's land together: requests reach a Service whose selector changes); the newest decision composed it at v2, which an observation that lags is no evidence against. Rollout answered: %v",
					name, primary, primaryWeightOf(route), rolloutOf(rc.rsp))
			}
			if (name == "paused" || name == "route found not accepted") && primary != "v2" {
				t.Errorf("Attack: %s during a promotion whose primary Service the function moved to v2 (cache of Services one apply behind): paused means nothing moves, and once the primary Service has moved it stays even if the route is then found stale (docs/rollout.md, The phases); the answer moves the primary Service v2 -> %v", name, primary)
			}
		})
	}
}

// olderStatus is an XR version the sim's cluster held whose status is older
// than the cluster's now (a lower sequence, saying something else), with
// the newest spec: what a cache that lags reads.
func (s *laggingSim) olderStatus(t *testing.T) cacheView {
	t.Helper()
	cur, _ := s.status["rollout"].(map[string]any)
	seq, _ := cur["sequence"].(float64)
	for i := len(s.xrVersions) - 1; i >= 0; i-- {
		v := s.xrVersions[i]
		r, _ := v.status["rollout"].(map[string]any)
		if q, _ := r["sequence"].(float64); q > 0 && q < seq && !sameBeside(r, cur, "sequence") &&
			v.xr["metadata"].(map[string]any)["generation"] == s.xr["metadata"].(map[string]any)["generation"] {
			return v
		}
	}
	t.Fatalf("setup: no older status of the newest spec")
	return cacheView{}
}

// reconcileRead runs one reconcile of an XR as a cache held it, against the
// composed and required objects as the cluster holds them now; it applies
// nothing.
func (s *laggingSim) reconcileRead(v cacheView) reconciled {
	s.t.Helper()
	x, st := s.xr, s.status
	s.xr, s.status = deepCopyMap(v.xr), deepCopyMap(v.status)
	defer func() { s.xr, s.status = x, st }()
	rc := s.reconcile()
	if rc.err != nil {
		s.t.Fatalf("Crossplane fails the reconcile: %v", rc.err)
	}
	return rc
}

// TestAttackStaleReadComposesOverAnotherOwnersObject: the takeover rule
// ("No takeover of objects the XR did not compose") is checked on fresh
// runs only. The route the CanaryRoute composed is deleted and another
// team creates an HTTPRoute of the same name: a fresh read is refused with
// a Fatal (which the memory does not remember), but a stale read of the
// same spec is answered with the remembered decision, which composes the
// route over the other team's, in the same reconcile whose required
// resources show it.
func TestAttackStaleReadComposesOverAnotherOwnersObject(t *testing.T) {
	s := newLaggingSim(t, steppedXR(`[{weight: 10, pause: 30s}, {weight: 50, pause: 30s}, {weight: 100}]`, ""), 0, 0, true)
	for range 5 {
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(30 * time.Second)
	}
	older := s.olderStatus(t)
	delete(s.objects, s.keys["route-httproute"])
	delete(s.keys, "route-httproute")
	s.add(`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: podinfo, namespace: test, labels: {team: other}}, spec: {parentRefs: [{name: other}], rules: [{backendRefs: [{name: theirs, port: 80}]}]}}`)
	s.push()

	if f := fatalOf(s.reconcileRead(s.xrVersions[len(s.xrVersions)-1]).rsp); f == "" {
		t.Fatal("setup: a fresh read did not refuse to compose over the other team's route")
	}
	rc := s.reconcileRead(older)
	if f := fatalOf(rc.rsp); f == "" {
		if _, ok := rc.rsp.GetDesired().GetResources()["route-httproute"]; ok {
			t.Errorf("Attack: a stale read (an older status) is answered with the remembered decision, which composes HTTPRoute test/podinfo over the route another team created meanwhile (its required resources show it, a fresh read of the same spec is a Fatal): the takeover rule holds on every answer Crossplane applies")
		}
	}
}

// TestAttackRescuedAbortUnderLaggingServiceCache: the emergency abort of a
// spec that cannot be composed (compose.RescueAbort) re-emits the composed
// objects as observed, never as the newest decision composed them. A
// promotion moved the primary Service to v2; the spec breaks and the user
// aborts; the reconcile's cache of Services lags one apply (primary at
// v1): the rescue sends every request to the primary and moves its
// selector v2 -> v1 in the same answer. Without the lag it keeps v2.
func TestAttackRescuedAbortUnderLaggingServiceCache(t *testing.T) {
	ctlSim, _ := laggingPromotion(t)
	ctlSim.edit("hostnames", []any{"NOT A HOST"})
	ctlSim.edit("traffic.abort", true)
	ctl := ctlSim.reconcileRead(ctlSim.xrVersions[len(ctlSim.xrVersions)-1])
	if rolloutOf(ctl.rsp)["reason"] != "AbortRescued" || desiredSelector(ctl.rsp, "service-primary") != "v2" {
		t.Fatalf("setup: control without lag: reason %v, primary %v", rolloutOf(ctl.rsp)["reason"], desiredSelector(ctl.rsp, "service-primary"))
	}
	s, lagged := laggingPromotion(t)
	s.edit("hostnames", []any{"NOT A HOST"})
	s.edit("traffic.abort", true)
	objects, keys := s.objects, s.keys
	s.objects, s.keys = lagged.objects, lagged.keys
	rc := s.reconcileRead(s.xrVersions[len(s.xrVersions)-1])
	s.objects, s.keys = objects, keys
	if rolloutOf(rc.rsp)["reason"] != "AbortRescued" {
		t.Fatalf("setup: the abort was not rescued: %s", fatalOf(rc.rsp))
	}
	route := rc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
	if p := desiredSelector(rc.rsp, "service-primary"); p != "v2" && primaryWeightOf(route) > 0 {
		t.Errorf("Attack: the rescued abort, read with a cache of Services one apply behind, moves the primary Service v2 -> %v (the newest decision composed v2) in the answer that gives it %d%%: the rescue re-emits what was observed, not what the newest decision composed", p, primaryWeightOf(route))
	}
}

// TestAttackSaturatedSequenceDisablesTheMemory: a sequence at the XRD's
// maximum (2^53-1, or 1e300 read as it) written by hand is trusted, as the
// docs say, and the counter then stays there: every later decision is
// stamped 2^53-1. From then on a stale read carries the same sequence as
// the newest decision, "at or above" it, and is decided afresh: the
// rollout moves back on any stale read, for good, not once. A forged
// sequence must give the forger no more than writing the status always
// gave (one decision), not switch the memory off for the composite.
func TestAttackSaturatedSequenceDisablesTheMemory(t *testing.T) {
	for name, forged := range map[string]float64{"2^53-1": 1<<53 - 1} {
		t.Run(name, func(t *testing.T) {
			s := newLaggingSim(t, steppedXR(`[{weight: 10, pause: 30s}, {weight: 50, pause: 30s}, {weight: 80, pause: 30s}, {weight: 100}]`, ""), 0, 0, true)
			for range 2 {
				if w := s.reconcileLagging(); len(w) > 0 {
					t.Fatalf("setup: %v", w)
				}
				s.now = s.now.Add(10 * time.Second)
			}
			s.status["rollout"].(map[string]any)["sequence"] = forged
			s.push()
			for range 8 {
				if w := s.reconcileLagging(); len(w) > 0 {
					t.Fatalf("setup: %v", w)
				}
				s.now = s.now.Add(20 * time.Second)
			}
			newest := s.history[len(s.history)-1]
			if newest.step < 2 {
				t.Fatalf("setup: the rollout did not advance after the forged sequence:\n%s", describeHistory(s.history))
			}
			// A cache that lags reads a status written after the forgery,
			// at an earlier step.
			var older cacheView
			for i := len(s.xrVersions) - 1; i >= 0; i-- {
				r, _ := s.xrVersions[i].status["rollout"].(map[string]any)
				if step, _ := r["step"].(float64); r["sequence"] != nil && int64(step) < newest.step {
					older = s.xrVersions[i]
					break
				}
			}
			if older.xr == nil {
				t.Fatal("setup: no older status")
			}
			rc := s.reconcileRead(older)
			got := answerState(rc, read{xr: older}, false, nil)
			if got.step < newest.step || got.weight < newest.weight {
				t.Errorf("Attack: after a sequence of %s was written by hand, a stale read (step %v, sequence %v) is answered afresh at step %d, %d%%, below the newest decision's step %d, %d%%: the saturated counter orders nothing, and every later stale read moves the rollout back",
					name, older.status["rollout"].(map[string]any)["step"], older.status["rollout"].(map[string]any)["sequence"], got.step, got.weight, newest.step, newest.weight)
			}
		})
	}
}

// TestAttackForgedSequenceReadAsDocumented: docs/rollout.md ("Fresh
// state", Decisions) says a sequence written by hand "is read as an integer
// from 0 to 2^53-1: a negative or fractional one reads as none, a larger one
// as the largest". package freshness reads it so, but the XR's status
// parser refuses it: every run is a Fatal, which writes no status, so the
// forged value stays and the CanaryRoute is stuck until a person repairs
// its status. (The generated XRD bounds the field, so the API server
// refuses these values; an XRD without the bounds, as the docs allow for
// "an XRD from before sequence existed" that does not prune, lets them in.)
func TestAttackForgedSequenceReadAsDocumented(t *testing.T) {
	for name, forged := range map[string]string{"1e300": "1e300", "fractional": "2.5", "negative": "-3", "a string": `"7"`} {
		t.Run(name, func(t *testing.T) {
			xrYAML := steppedXR(`[{weight: 10, pause: 30s}, {weight: 100}]`, "") + `status:
  rollout: {revision: v2, phase: Progressing, step: 0, canaryWeight: 10, primaryWeight: 90, sequence: ` + forged + `}
`
			_, rsp := runFunction(t, xrYAML, emptyInput, nil, nil)
			if f := fatalOf(rsp); f != "" {
				t.Errorf("Attack: status.rollout.sequence: %s written by hand must read as the docs say (none, or the largest), not refuse the CanaryRoute on every run: %s", forged, f)
			}
		})
	}
}

// TestAttackStaleReadQueriesNothing: a stale read, at a time its metric is
// due, sends no query (counted by the provider) and says nothing; a fresh
// read at the same time does query (control).
func TestAttackStaleReadQueriesNothing(t *testing.T) {
	s := newLaggingSim(t, metricsXR("", ""), 0, 0, true)
	s.input = metricsInput
	q := &fakeProvider{answer: value(0, 0)}
	s.fn.querier = q
	for range 5 {
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(20 * time.Second)
	}
	s.now = s.now.Add(2 * time.Minute) // every metric due
	q.mu.Lock()
	before := len(q.got)
	q.mu.Unlock()
	if before == 0 {
		t.Fatal("setup: no query was sent")
	}
	rc := s.reconcileRead(s.olderStatus(t))
	q.mu.Lock()
	after := len(q.got)
	q.mu.Unlock()
	if after != before || len(rc.rsp.GetResults()) > 0 {
		t.Errorf("Attack: a stale read sent %d queries and %d results", after-before, len(rc.rsp.GetResults()))
	}
	s.reconcileRead(s.xrVersions[len(s.xrVersions)-1])
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.got) == after {
		t.Error("control: a fresh read with the metric due sent no query")
	}
}

// TestAttackMemoryConcurrentRuns: many goroutines run one Function with a
// tiny memory (evictions on every run) for several composites at once,
// fresh and stale reads of each mixed: run it with -race.
func TestAttackMemoryConcurrentRuns(t *testing.T) {
	// The reads of one rollout, recorded on a sim that does not lag.
	rec := newLaggingSim(t, gatedXR, 0, 0, true)
	rec.setAvailable("True", rec.now.Add(-time.Hour))
	reqs := make([]*fnv1.RunFunctionRequest, 0, 12)
	for i := range 12 {
		if i == 5 {
			rec.edit("traffic.approval", map[string]any{"revision": "v2", "step": float64(1)})
		}
		// The request of the call Crossplane applies: its requirements
		// settled, so its answer is remembered.
		rc := rec.reconcile()
		if rc.err != nil || isFatal(rc.rsp) {
			t.Fatalf("setup: %v %s", rc.err, fatalOf(rc.rsp))
		}
		reqs = append(reqs, rc.req)
		rec.apply(rc.rsp)
		rec.push()
		rec.now = rec.now.Add(10 * time.Second)
	}
	for _, bound := range []struct {
		entries int
		bytes   uint64
	}{{1, 1 << 20}, {3, 200 << 10}, {100, 1 << 30}} {
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return rec.now }), memory: freshness.NewMemory(bound.entries, bound.bytes)}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 60 {
					req := proto.Clone(reqs[(g*7+i*5)%len(reqs)]).(*fnv1.RunFunctionRequest)
					md := req.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue()
					md.Fields["uid"] = structpb.NewStringValue(fmt.Sprintf("uid-%d", (g+i)%5))
					rsp, err := f.RunFunction(context.Background(), req)
					if err != nil || rsp == nil {
						t.Errorf("RunFunction: %v", err)
						return
					}
					_, _ = proto.Marshal(rsp)
				}
			}()
		}
		wg.Wait()
		n, b := f.memory.Len()
		if n == 0 {
			t.Fatal("setup: the memory remembered nothing")
		}
		if n > bound.entries || b > bound.bytes {
			t.Errorf("Attack: the memory holds %d decisions of %d bytes, beyond its bounds %d and %d", n, b, bound.entries, bound.bytes)
		}
	}
}

// TestAttackLaggingReleaseStatusWithinXRD: every status answered through a
// release under caches that lag (sequence, status.release.canaryMove, a
// rollback in the middle of a step) passes the XRD, as the API server
// checks it.
func TestAttackLaggingReleaseStatusWithinXRD(t *testing.T) {
	s := newLaggingSim(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 30s}, {weight: 50, pause: 1m}, {weight: 100}]
    bake: 30s
    rollbackWindow: 2`), 5, 3, true)
	moves := 0
	for i := range 120 {
		switch i {
		case 2:
			s.edit("canary.revision", "v2")
		case 50:
			s.edit("canary.revision", "v3")
		case 70:
			s.edit("canary.revision", "v1")
		}
		pick := func(n int) int { return n - 1 - s.rng.IntN(min(s.maxLag, n-1)+1) }
		r := read{xr: s.xrVersions[pick(len(s.xrVersions))], objects: s.objVersions[pick(len(s.objVersions))], at: s.now}
		rc, _, _ := s.answer(r)
		assertXRDAccepts(t, rc.req, rc.rsp)
		if rel, _ := rc.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["release"].(map[string]any); rel["canaryMove"] != nil {
			moves++
		}
		s.apply(rc.rsp)
		s.push()
		s.now = s.now.Add(5 * time.Second)
	}
	if moves == 0 {
		t.Error("setup: no answer recorded a canaryMove")
	}
}

// TestAttackDeterministicAndRenderUntouched: the same request to two fresh
// processes gives byte-identical answers; a request without a UID (as
// crossplane render sends), after requests of the same XR with its UID
// were remembered, is answered as by a process without memory, stamped
// with no sequence.
func TestAttackDeterministicAndRenderUntouched(t *testing.T) {
	rec := newLaggingSim(t, gatedXR, 0, 0, true)
	rec.setAvailable("True", rec.now.Add(-time.Hour))
	reqs := make([]*fnv1.RunFunctionRequest, 0, 6)
	for range 6 {
		rc := rec.reconcile()
		reqs = append(reqs, rc.req)
		rec.apply(rc.rsp)
		rec.push()
		rec.now = rec.now.Add(20 * time.Second)
	}
	at := ClockFunc(func() time.Time { return rec.now })
	newFn := func(mem bool) *Function {
		f := &Function{log: logging.NewNopLogger(), clock: at}
		if mem {
			f.memory = freshness.NewMemory(10, 1<<30)
		}
		return f
	}
	marshal := func(rsp *fnv1.RunFunctionResponse) []byte {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i, req := range reqs {
		a, _ := newFn(true).RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		b, _ := newFn(true).RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if !bytes.Equal(marshal(a), marshal(b)) {
			t.Errorf("Attack: request %d to two fresh processes: answers differ", i)
		}
	}
	withMemory := newFn(true)
	for _, req := range reqs {
		_, _ = withMemory.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
	}
	for i, req := range reqs {
		render := proto.Clone(req).(*fnv1.RunFunctionRequest)
		delete(render.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue().GetFields(), "uid")
		got, _ := withMemory.RunFunction(context.Background(), proto.Clone(render).(*fnv1.RunFunctionRequest))
		want, _ := newFn(false).RunFunction(context.Background(), proto.Clone(render).(*fnv1.RunFunctionRequest))
		if !bytes.Equal(marshal(got), marshal(want)) {
			t.Errorf("Attack: render-like request %d (no UID) to a process that remembered the XR by its UID is answered differently from a process without memory", i)
		}
		st, _ := render.GetObserved().GetComposite().GetResource().AsMap()["status"].(map[string]any)
		in, _ := st["rollout"].(map[string]any)
		if q := rolloutOf(got)["sequence"]; q != nil && q != in["sequence"] {
			t.Errorf("Attack: render-like request %d was stamped with a sequence: read %v, answered %v", i, in["sequence"], rolloutOf(got)["sequence"])
		}
	}
}

// TestAttackXRDFromBeforeSequencePrunesCanaryMove: the docs say an XRD from
// before status.rollout.sequence existed still orders reads by what the
// status says, and "the rollouts still complete and never move back"
// (TestFreshStatePrunedSequence). status.release.canaryMove came in the
// same round: such an XRD prunes it too. The first rollout of a release
// (v1 released, then canary.revision v2) records a canaryMove before the
// canary Service moves from v1 to v2; it never reads back. Before the fix,
// every later read's status differed from the remembered one and carried
// no sequence: it read as stale and was answered with the remembered
// decision for good, and the canary Service never moved. Now the digest
// leaves the move out, and a run decides on the remembered status, which
// keeps it. (Without the memory, `--remember-entries=0`, nothing keeps the
// move's time under such an XRD: documented, docs/rollout.md.)
func TestAttackXRDFromBeforeSequencePrunesCanaryMove(t *testing.T) {
	for name, remember := range map[string]bool{"with the memory": true} {
		t.Run(name, func(t *testing.T) {
			s := newLaggingSim(t, releaseXR("v1"), 0, 0, remember)
			step := func() {
				rc, _, _ := s.answer(read{xr: s.xrVersions[len(s.xrVersions)-1], objects: s.objVersions[len(s.objVersions)-1], at: s.now})
				s.apply(rc.rsp)
				// What an XRD from before this round keeps of the status.
				if r, ok := s.status["rollout"].(map[string]any); ok {
					delete(r, "sequence")
				}
				if r, ok := s.status["release"].(map[string]any); ok {
					delete(r, "canaryMove")
				}
				s.push()
				s.now = s.now.Add(5 * time.Second)
			}
			for range 3 {
				step()
			}
			s.edit("canary.revision", "v2")
			for range 60 {
				step()
			}
			rollout, _ := s.status["rollout"].(map[string]any)
			release, _ := s.status["release"].(map[string]any)
			stable, _ := release["stable"].(map[string]any)
			if s.observedSelector("service-canary") != "v2" || (s.state(0, false).weight == 0 && stable["revision"] != "v2") {
				t.Errorf("Attack: under an XRD that prunes status.rollout.sequence and status.release.canaryMove (one from before both), the rollout of v2 never starts (5 minutes, caches that do not lag): the canary Service selects %v, the route gives v2 %d%%, the rollout is %v/%v at step %v: %v",
					s.observedSelector("service-canary"), s.state(0, false).weight, rollout["phase"], rollout["reason"], rollout["step"], rollout["message"])
			}
		})
	}
}

// TestAttackAbortScalesCanaryAwayUnderLaggingRouteCache: the record gives
// an aborted canary no replicas "once the observed route sends it none".
// v2 is at its first step (10%, the route the newest decision composed and
// the cluster holds); the abort's reconcile reads a cache of composed
// objects from before that step (the canary Service already at v2, the
// route at 0%): the record scales v2 to 0 in the same apply that takes its
// 10% away, so the pods go while the gateway still sends them requests.
// Without the lag, v2 keeps its replicas until the route is observed at 0.
func TestAttackAbortScalesCanaryAwayUnderLaggingRouteCache(t *testing.T) {
	run := func(lag bool) (map[string]any, int64) {
		s := newLaggingSim(t, releaseXR("v1"), 0, 0, true)
		for range 3 {
			s.reconcileLagging()
			s.now = s.now.Add(5 * time.Second)
		}
		s.edit("canary.revision", "v2")
		var before cacheView
		found := false
		for range 40 {
			n := len(s.objVersions)
			s.reconcileLagging()
			s.now = s.now.Add(5 * time.Second)
			prev, cur := s.objVersions[n-1], s.objVersions[n]
			if selectsIn(prev, "service-canary") == "v2" && canaryWeightOf(prev.objects[prev.keys["route-httproute"]]) == 0 &&
				canaryWeightOf(cur.objects[cur.keys["route-httproute"]]) > 0 {
				before, found = prev, true
				break
			}
		}
		if !found {
			t.Fatalf("setup: v2 never got its first step:\n%s", describeHistory(s.history))
		}
		s.edit("traffic.abort", true)
		objects := s.objVersions[len(s.objVersions)-1]
		if lag {
			objects = before
		}
		rc, _, wrong := s.answer(read{xr: s.xrVersions[len(s.xrVersions)-1], objects: objects, at: s.now})
		if len(wrong) > 0 {
			t.Fatalf("setup: %v", wrong)
		}
		rec := releaseRecord(t, rc.rsp)
		replicas, _ := rec["replicas"].(map[string]any)
		return replicas, s.state(0, false).weight
	}
	if replicas, _ := run(false); replicas["v2"] == float64(0) {
		t.Fatalf("setup: control without lag scales the aborted v2 to 0 at once: %v", replicas)
	}
	replicas, weight := run(true)
	if replicas["v2"] == float64(0) && weight > 0 {
		t.Errorf("Attack: an abort read with a cache of composed objects from before the step (route at 0%%) scales v2 to 0 in the apply that takes away the %d%% the cluster's route gives it: the record trusts a lagging route over the newest decision's (replicas %v)", weight, replicas)
	}
}

// TestAttackLaggingAnalysisRetry: step analysis under caches that lag: the
// first Job fails the rollout, a retry runs it again and it passes; an
// abort and its clearing midway. The rollout never moves back, a failed
// canary gets no weight before the retry, and v2 completes.
func TestAttackLaggingAnalysisRetry(t *testing.T) {
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s := newLaggingSim(t, analysisXR(`[{weight: 10, analysis: [smoke]}, {weight: 50, pause: 20s, analysis: [smoke]}, {weight: 100}]`, ""), seed, 4, true)
			s.jobStatus = func(n int, _ map[string]any) map[string]any {
				if n == 0 {
					return map[string]any{"failed": float64(1)}
				}
				return map[string]any{"succeeded": float64(1)}
			}
			var wrong []string
			failedAt := -1
			for i := range 140 {
				switch i {
				case 40:
					s.edit("traffic.retry", "1")
				case 70:
					s.edit("traffic.abort", true)
				case 80:
					s.edit("traffic.abort", nil)
				case 120:
					s.maxLag = 0
				}
				wrong = append(wrong, s.reconcileLagging()...)
				cur := s.history[len(s.history)-1]
				if cur.phase == "Failed" && failedAt < 0 {
					failedAt = i
				}
				if failedAt >= 0 && i < 40 && cur.weight > 0 {
					wrong = append(wrong, fmt.Sprintf("a failed canary got %d%% before the retry: %s", cur.weight, cur))
				}
				s.now = s.now.Add(10 * time.Second)
			}
			if failedAt < 0 {
				t.Fatalf("setup: the first Job never failed the rollout:\n%s", describeHistory(s.history))
			}
			if last := s.history[len(s.history)-1]; last.phase != "Succeeded" || last.weight != 100 {
				wrong = append(wrong, "v2 did not complete: "+last.String())
			}
			if len(wrong) > 0 {
				t.Errorf("Attack: step analysis under caches that lag:\n%s\nhistory:\n%s", strings.Join(wrong, "\n"), describeHistory(s.history))
			}
		})
	}
}
