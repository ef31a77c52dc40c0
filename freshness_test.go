package main

// A rollout never moves back, whatever Crossplane reads: the simulated
// Crossplane reads the XR and the composed objects from caches that lag,
// one process answers every call (with its memory of the decisions it
// answered), and the cluster's history is checked against the contract
// ("Fresh state", ../shared/API.md) after every apply.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

// A cacheView is what a cache holds of the cluster at one time: the XR
// (spec and status), or the composed objects.
type cacheView struct {
	xr, status map[string]any
	objects    map[string]map[string]any
	keys       map[string]string
	gen        map[string]int64
}

// laggingSim is an xpSim whose reconciles read the XR and the composed
// objects from caches that lag (each by up to maxLag versions of what the
// cluster held, independently), and apply their answer to what the
// cluster holds now: server-side apply has no precondition on what the
// reconcile read.
type laggingSim struct {
	*xpSim
	rng    *rand.Rand
	maxLag int
	// xrVersions and objVersions are what the cluster held, oldest first.
	xrVersions, objVersions []cacheView
	generation              int64
	// history is what the cluster held after each apply.
	history []clusterState
	// newestGen and newestSeq order the newest decision applied.
	newestGen, newestSeq int64
	newestStatus         map[string]any
	stale                int
	// prune drops status.rollout.sequence from what is applied, as an XRD
	// from before it existed does.
	prune bool
	// reads are what each reconcile read, in order; reasons count the
	// results of the answers applied, by reason.
	reads   []read
	reasons map[string]int
	// routeKey is the key of the route the checks read the weights of:
	// route-httproute unless set (a route of spec.routes).
	routeKey string
}

// key is the route the checks read.
func (s *laggingSim) key() string {
	if s.routeKey == "" {
		return "route-httproute"
	}
	return s.routeKey
}

// clusterState is what the cluster held after an apply, as the checks
// read it, and what the reconcile had read.
type clusterState struct {
	at                      time.Time
	readGen, latestGen      int64
	revision, phase, reason string
	step, weight            int64
	abortInSpec             bool
	stale                   bool
}

func (c clusterState) String() string {
	stale := ""
	if c.stale {
		stale = " (stale read)"
	}
	return fmt.Sprintf("%s read gen %d of %d: %s %s/%s step %d at %d%%%s", c.at.Format(time.TimeOnly), c.readGen, c.latestGen, c.revision, c.phase, c.reason, c.step, c.weight, stale)
}

func newLaggingSim(t *testing.T, xrYAML string, seed uint64, maxLag int, remember bool) *laggingSim {
	t.Helper()
	s := &laggingSim{xpSim: newSim(t, xrYAML, emptyInput), rng: rand.New(rand.NewPCG(seed, 7)), maxLag: maxLag, generation: 1}
	md := s.xr["metadata"].(map[string]any)
	md["uid"], md["generation"] = "9d2f6c4e-0000-4000-8000-000000000001", float64(1)
	s.fn = &Function{log: logging.NewNopLogger()}
	if remember {
		s.fn.memory = freshness.NewMemory[pipeline.Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	}
	s.push()
	return s
}

// push records what the cluster holds now as the newest version the
// caches may read.
func (s *laggingSim) push() {
	s.xrVersions = append(s.xrVersions, cacheView{xr: deepCopyMap(s.xr), status: deepCopyMap(s.status)})
	s.objVersions = append(s.objVersions, s.objectsNow())
}

// objectsNow is a copy of the composed objects the cluster holds.
func (s *laggingSim) objectsNow() cacheView {
	v := cacheView{objects: map[string]map[string]any{}, keys: map[string]string{}, gen: map[string]int64{}}
	for id, o := range s.objects {
		v.objects[id] = deepCopyMap(o)
	}
	for k, id := range s.keys {
		v.keys[k] = id
	}
	for id, g := range s.gen {
		v.gen[id] = g
	}
	return v
}

// edit changes the XR's spec, as a person does: a new generation.
func (s *laggingSim) edit(path string, v any) {
	s.setSpec(path, v)
	s.generation++
	s.xr["metadata"].(map[string]any)["generation"] = float64(s.generation)
	s.push()
}

// A read is what one reconcile read: the XR and the composed objects as
// its caches held them, at a time.
type read struct {
	xr, objects cacheView
	at          time.Time
}

// answer runs one reconcile on a read, as one process (s.fn) answers it,
// and classifies the read against the newest decision answered: it returns
// the reconcile, whether the read was stale, and what was wrong with the
// answer (a stale read must be answered with the newest decision, and say
// nothing).
func (s *laggingSim) answer(r read) (reconciled, bool, []string) {
	t := s.t
	t.Helper()
	now := cacheView{xr: s.xr, status: s.status, objects: s.objects, keys: s.keys, gen: s.gen}
	clock := s.now
	s.xr, s.status, s.now = deepCopyMap(r.xr.xr), deepCopyMap(r.xr.status), r.at
	lagged := cacheView{objects: map[string]map[string]any{}, keys: map[string]string{}, gen: map[string]int64{}}
	for id, o := range r.objects.objects {
		lagged.objects[id] = deepCopyMap(o)
	}
	for k, id := range r.objects.keys {
		lagged.keys[k] = id
	}
	for id, g := range r.objects.gen {
		lagged.gen[id] = g
	}
	s.objects, s.keys, s.gen = lagged.objects, lagged.keys, lagged.gen
	rc := s.reconcile()
	s.xr, s.status, s.objects, s.keys, s.gen, s.now = now.xr, now.status, now.objects, now.keys, now.gen, clock
	if rc.err != nil {
		t.Fatalf("at %s: Crossplane fails the reconcile after %d calls: %v", r.at.Format(time.RFC3339), rc.calls, rc.err)
	}
	if f := fatalOf(rc.rsp); f != "" {
		t.Fatalf("at %s: Fatal: %s", r.at.Format(time.RFC3339), f)
	}

	readGen := int64(r.xr.xr["metadata"].(map[string]any)["generation"].(float64))
	readRollout, _ := r.xr.status["rollout"].(map[string]any)
	readSeq, _ := readRollout["sequence"].(float64)
	// A read whose status says what the newest decision's says is that
	// decision's, whatever its sequence (see freshness.Memory.Order).
	stale := readGen < s.newestGen || (readGen == s.newestGen && int64(readSeq) < s.newestSeq && !sameBeside(readRollout, s.newestStatus, "sequence"))

	var wrong []string
	answered, _ := rc.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	answeredRollout, _ := answered["rollout"].(map[string]any)
	if stale {
		s.stale++
		if len(rc.rsp.GetResults()) > 0 {
			wrong = append(wrong, fmt.Sprintf("%s: a stale read (generation %d, sequence %v) emitted %d results", r.at.Format(time.TimeOnly), readGen, readSeq, len(rc.rsp.GetResults())))
		}
		if s.fn.memory != nil && !cmp.Equal(answeredRollout, s.newestStatus) {
			wrong = append(wrong, fmt.Sprintf("%s: a stale read was not answered with the newest decision:\n%s", r.at.Format(time.TimeOnly), cmp.Diff(s.newestStatus, answeredRollout)))
		}
	} else {
		seq, _ := answeredRollout["sequence"].(float64)
		s.newestGen, s.newestSeq, s.newestStatus = readGen, int64(seq), answeredRollout
	}
	return rc, stale, wrong
}

// reconcileLagging runs one reconcile on caches that lag, applies its
// answer to the cluster as it is now, and checks the contract; it returns
// what the checks found wrong.
func (s *laggingSim) reconcileLagging() []string {
	pick := func(n int) int { return n - 1 - s.rng.IntN(min(s.maxLag, n-1)+1) }
	r := read{xr: s.xrVersions[pick(len(s.xrVersions))], objects: s.objVersions[pick(len(s.objVersions))], at: s.now}
	s.reads = append(s.reads, r)
	rc, stale, wrong := s.answer(r)
	for _, res := range rc.rsp.GetResults() {
		if s.reasons == nil {
			s.reasons = map[string]int{}
		}
		s.reasons[res.GetReason()]++
	}
	s.apply(rc.rsp)
	if rollout, ok := s.status["rollout"].(map[string]any); ok && s.prune {
		delete(rollout, "sequence")
	}
	s.push()
	readGen := int64(r.xr.xr["metadata"].(map[string]any)["generation"].(float64))
	cur := s.state(readGen, stale)
	if len(s.history) > 0 {
		wrong = append(wrong, checkFresh(s.history[len(s.history)-1], cur)...)
	}
	s.history = append(s.history, cur)
	return wrong
}

// state is what the cluster holds now, as the checks read it.
func (s *laggingSim) state(readGen int64, stale bool) clusterState {
	rollout, _ := s.status["rollout"].(map[string]any)
	c := clusterState{at: s.now, readGen: readGen, latestGen: s.generation, stale: stale}
	c.revision, _ = rollout["revision"].(string)
	c.phase, _ = rollout["phase"].(string)
	c.reason, _ = rollout["reason"].(string)
	step, _ := rollout["step"].(float64)
	c.step = int64(step)
	traffic, _ := s.xr["spec"].(map[string]any)["traffic"].(map[string]any)
	c.abortInSpec, _ = traffic["abort"].(bool)
	c.weight = -1
	if id, ok := s.keys[s.key()]; ok {
		c.weight = canaryWeightOf(s.objects[id])
	}
	return c
}

// canaryWeightOf is the share of the canary backend (podinfo-canary) in
// the first rule of a route, in hundredths of a percent (10,000 for every
// request); 0 when it has none.
func canaryWeightOf(route map[string]any) int64 {
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	if len(rules) == 0 {
		return 0
	}
	// The canary's share of the rule in hundredths of a percent: a route
	// out of 100 and one out of 10,000 (finer weights) read alike, so an
	// edit between whole and fine weights is no move.
	refs, _ := rules[0].(map[string]any)["backendRefs"].([]any)
	var canary, total float64
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		w, _ := ref["weight"].(float64)
		total += w
		if ref["name"] == "podinfo-canary" {
			canary = w
		}
	}
	if total == 0 {
		return 0
	}
	return int64(canary * 10000 / total)
}

// restartReasons are the reasons of decisions that take a revision's
// rollout back on purpose: to step 0, or, at the end of a release's
// promotion, its weight to the primary.
var restartReasons = []string{"RolloutStarted", "RolloutRestarted", "RolloutRetried", "StepsChanged", "CanaryChanged", "Promoted", "RolledBack"}

// checkFresh checks an apply against the one before, by the contract:
// within one revision, the step and the canary's weight never go below
// what the cluster held, but by a decision that says so (an abort or a
// failure, or a restart decided on the newest spec); a terminal phase
// never returns to Progressing but by such a restart; an aborted canary
// gets nothing while the spec says abort.
func checkFresh(prev, cur clusterState) []string {
	var wrong []string
	said := slices.Contains([]string{"Aborted", "Failed"}, cur.phase) ||
		(slices.Contains(restartReasons, cur.reason) && cur.readGen == cur.latestGen && !cur.stale)
	if cur.revision == prev.revision && (cur.step < prev.step || cur.weight < prev.weight) && !said {
		wrong = append(wrong, fmt.Sprintf("moved back:\n  %s\n  %s", prev, cur))
	}
	terminal := slices.Contains([]string{"Succeeded", "Aborted", "Failed"}, prev.phase)
	if cur.revision == prev.revision && terminal && cur.phase == "Progressing" && !said {
		wrong = append(wrong, fmt.Sprintf("left %s for Progressing without a newer spec:\n  %s\n  %s", prev.phase, prev, cur))
	}
	if prev.phase == "Aborted" && cur.abortInSpec && cur.weight > 0 {
		wrong = append(wrong, fmt.Sprintf("an aborted canary got weight again:\n  %s\n  %s", prev, cur))
	}
	return wrong
}

// freshScenario drives a rollout of v2 through its steps, aborts it at
// step 1, clears the abort, then starts v3, with a reconcile every 10
// seconds on caches that lag; it returns what the checks found wrong.
func freshScenario(t *testing.T, seed uint64, remember bool, opts ...func(*laggingSim)) (*laggingSim, []string) {
	return freshScenarioOf(t, `[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, seed, remember, opts...)
}

// freshScenarioOf is freshScenario over other steps.
func freshScenarioOf(t *testing.T, steps string, seed uint64, remember bool, opts ...func(*laggingSim)) (*laggingSim, []string) {
	return freshScenarioXR(t, steppedXR(steps, ""), seed, remember, opts...)
}

// freshScenarioXR is freshScenario of another CanaryRoute.
func freshScenarioXR(t *testing.T, xrYAML string, seed uint64, remember bool, opts ...func(*laggingSim)) (*laggingSim, []string) {
	s := newLaggingSim(t, xrYAML, seed, 4, remember)
	for _, o := range opts {
		o(s)
	}
	wrong := make([]string, 0, 8)
	for i := range 120 {
		switch i {
		case 12:
			s.edit("traffic.abort", true)
		case 30:
			s.edit("traffic.abort", nil)
		case 60:
			s.edit("canary.revision", "v3")
		case 100:
			s.maxLag = 0 // The caches catch up.
		}
		wrong = append(wrong, s.reconcileLagging()...)
		s.now = s.now.Add(10 * time.Second)
	}
	return s, wrong
}

// seeds is how many random schedules of lagging reads a test tries.
func seeds() uint64 {
	if testing.Short() {
		return 6
	}
	return 24
}

func TestFreshStateLaggingCaches(t *testing.T) {
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, wrong := freshScenario(t, seed, true)
			if len(wrong) > 0 {
				t.Errorf("Under caches that lag, the rollout must never move back, an aborted canary never get weight again, a stale read never say anything:\n%s\nhistory:\n%s",
					strings.Join(wrong, "\n"), describeHistory(s.history))
			}
			// Liveness: the caches caught up, and v3 completed its steps.
			if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 10000 {
				t.Errorf("The rollout of v3 must end Succeeded at 100%% once the caches catch up; it ended at %s\nhistory:\n%s", last, describeHistory(s.history))
			}
		})
	}
}

// TestFreshStateLaggingCachesFineWeights: the same schedules with a first
// step of 0.5% (the route out of 10,000): the shares never move back
// either, and v3 ends at 100%.
func TestFreshStateLaggingCachesFineWeights(t *testing.T) {
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, wrong := freshScenarioOf(t, `[{weight: 0.5, pause: 1m}, {weight: 50.25, pause: 1m}, {weight: 100}]`, seed, true)
			if len(wrong) > 0 {
				t.Errorf("Under caches that lag, a rollout of finer weights must never move back either:\n%s\nhistory:\n%s",
					strings.Join(wrong, "\n"), describeHistory(s.history))
			}
			if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 10000 {
				t.Errorf("The rollout of v3 must end Succeeded at 100%% once the caches catch up; it ended at %s\nhistory:\n%s", last, describeHistory(s.history))
			}
			if !slices.ContainsFunc(s.history, func(c clusterState) bool { return c.weight == 50 }) {
				t.Errorf("The route never carried 0.5%% (50 of 10,000):\n%s", describeHistory(s.history))
			}
		})
	}
}

func TestFreshStateCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewRuns(reg, time.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, wrong := freshScenario(t, 3, true, func(s *laggingSim) { s.metrics, s.fn.metrics = m, m })
	if len(wrong) > 0 {
		t.Fatalf("setup: %v", wrong)
	}
	got := counterValue(t, reg, "function_canary_route_stale_reads_total", "read", "spec") +
		counterValue(t, reg, "function_canary_route_stale_reads_total", "read", "status")
	if s.stale == 0 || got != float64(s.stale) {
		t.Errorf("stale_reads_total{read=spec|status} = %v, but %d reconciles read a stale XR (each counted once, on the call Crossplane applies)", got, s.stale)
	}
	// Each advance the cluster saw is counted once: never again by a
	// stale read answered with it.
	advances := 0
	for i := 1; i < len(s.history); i++ {
		cur, prev := s.history[i], s.history[i-1]
		if cur.reason == "StepAdvanced" && (cur.step != prev.step || cur.revision != prev.revision) {
			advances++
		}
	}
	if transitions := counterValue(t, reg, "function_canary_route_rollout_transitions_total", "reason", "StepAdvanced"); advances == 0 || transitions != float64(advances) {
		t.Errorf("transitions_total{reason=StepAdvanced} = %v, but the cluster saw %d advances", transitions, advances)
	}
}

func TestFreshStatePrunedSequence(t *testing.T) {
	// An XRD from before status.rollout.sequence prunes it from every
	// status written: the memory still orders reads by what the status
	// says, and the rollouts complete.
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, wrong := freshScenario(t, seed, true, func(s *laggingSim) { s.prune = true })
			if len(wrong) > 0 {
				t.Errorf("With the sequence pruned, the rollout must still never move back:\n%s\nhistory:\n%s", strings.Join(wrong, "\n"), describeHistory(s.history))
			}
			if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 10000 {
				t.Errorf("With the sequence pruned, v3 must still end Succeeded at 100%%; it ended at %s", last)
			}
			if n := s.reasons["XRDOutdated"]; n != 1 {
				t.Errorf("An XRD that prunes the sequence is said once, as a Warning; it was said %d times", n)
			}
		})
	}
}

func TestFreshStateControl(t *testing.T) {
	// Control: without the memory (every call a process of its own, as
	// before), the same lagging caches move rollouts back. If this stops
	// failing, the scenario no longer tests anything.
	for seed := range seeds() {
		if _, wrong := freshScenario(t, seed, false); len(wrong) > 0 {
			t.Logf("without the memory, seed %d broke the contract first: %s", seed, wrong[0])
			return
		}
	}
	t.Error("Control: without the function's memory, no seed moved a rollout back: the lagging caches test nothing")
}

// gatedXR is a progressive CanaryRoute with an approval step and a gate on
// the canary's Deployment: every kind of decision the engine makes.
var gatedXR = steppedXR(`[{weight: 10, pause: 30s}, {weight: 30, approval: true}, {weight: 60, pause: 30s}, {weight: 100}]`,
	`    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-canary, conditionType: Available, failAfter: 1m}]`)

// setAvailable gives the canary's Deployment its Available condition, as
// its controller would, since a time.
func (s *laggingSim) setAvailable(status string, since time.Time) {
	s.objects["apps/v1|Deployment|test|podinfo-canary"] = map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo-canary", "namespace": "test"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": "Test", "lastTransitionTime": since.Format(time.RFC3339),
		}}},
	}
	s.push()
}

// recordGated records the reads of a rollout through every kind of
// decision, on caches that do not lag: approvals, an abort and its
// clearing, a promotion, a new revision, a gate that fails it, a retry, and
// an edit of the steps. It returns the reads and, by name, the index of the
// read after each edit.
func recordGated(t *testing.T) (*laggingSim, map[string]int) {
	s := newLaggingSim(t, gatedXR, 0, 0, true)
	s.setAvailable("True", s.now.Add(-time.Hour))
	edits := map[int]struct {
		name string
		do   func()
	}{
		6:  {"approval", func() { s.edit("traffic.approval", map[string]any{"revision": "v2", "step": float64(1)}) }},
		10: {"abort", func() { s.edit("traffic.abort", true) }},
		13: {"abort cleared", func() { s.edit("traffic.abort", nil) }},
		20: {"promote", func() { s.edit("traffic.promote", map[string]any{"revision": "v2"}) }},
		26: {"new revision", func() { s.edit("canary.revision", "v3") }},
		30: {"gate False", func() { s.setAvailable("False", s.now) }},
		42: {"retry", func() { s.setAvailable("True", s.now); s.edit("traffic.retry", "1") }},
		48: {"steps edited", func() {
			s.edit("traffic.steps", []any{
				map[string]any{"weight": float64(10), "pause": "30s"},
				map[string]any{"weight": float64(60), "pause": "30s"},
				map[string]any{"weight": float64(100)},
			})
		}},
	}
	at := map[string]int{}
	for i := range 64 {
		if e, ok := edits[i]; ok {
			e.do()
			at[e.name] = len(s.reads)
		}
		if wrong := s.reconcileLagging(); len(wrong) > 0 {
			t.Fatalf("setup: the recording broke the contract: %v", wrong)
		}
		s.now = s.now.Add(10 * time.Second)
	}
	return s, at
}

func TestFreshStatePermutations(t *testing.T) {
	rec, at := recordGated(t)
	phases := map[string]bool{}
	for _, h := range rec.history {
		phases[h.phase+"/"+h.reason] = true
	}
	for _, want := range []string{
		"Progressing/AwaitingApproval", "Progressing/RolloutApproved", "Aborted/Aborted", "Progressing/RolloutRestarted",
		"Progressing/RolloutPromoted", "Failed/GateFailed", "Progressing/RolloutRetried", "Progressing/StepsChanged", "Succeeded/RolloutSucceeded",
	} {
		if !phases[want] {
			t.Fatalf("setup: the recorded rollout never went through %s:\n%s", want, describeHistory(rec.history))
		}
	}
	// Five reads around each edit (four under -short), fed to one process
	// in every order.
	window := 5
	if testing.Short() {
		window = 4
	}
	replay := func(t *testing.T, reads []read, remember bool) []string {
		for _, order := range permutations(len(reads)) {
			r := newLaggingSim(t, gatedXR, 0, 0, remember)
			var answers []clusterState
			var wrong []string
			for _, k := range order {
				rc, stale, w := r.answer(reads[k])
				wrong = append(wrong, w...)
				answers = append(answers, answerState(rc, reads[k], stale, answers))
			}
			for j := 1; j < len(answers); j++ {
				wrong = append(wrong, checkFresh(answers[j-1], answers[j])...)
			}
			if len(wrong) > 0 {
				return append([]string{fmt.Sprintf("reads %v of the recording, in this order:", order)}, append(wrong, "answers:", describeHistory(answers))...)
			}
		}
		return nil
	}
	t.Run("control", func(t *testing.T) {
		// Without the memory, a process answers stale reads afresh: if this
		// stops failing, the windows test nothing.
		if wrong := replay(t, rec.reads[at["promote"]-2:at["promote"]-2+window], false); wrong == nil {
			t.Error("Control: without the function's memory, every order of the reads around the promotion kept the contract")
		}
	})
	for name, i := range at {
		t.Run(name, func(t *testing.T) {
			if wrong := replay(t, rec.reads[i-2:i-2+window], true); wrong != nil {
				t.Errorf("Every order of the reads must never move the rollout back, and a stale read must be answered with the newest decision, saying nothing:\n%s", strings.Join(wrong, "\n"))
			}
		})
	}
}

// answerState is an answer, as the checks read it: its status, its route's
// canary weight, and the newest spec the process has read.
func answerState(rc reconciled, r read, stale bool, before []clusterState) clusterState {
	status, _ := rc.rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	rollout, _ := status["rollout"].(map[string]any)
	c := clusterState{at: r.at, stale: stale}
	c.readGen = int64(r.xr.xr["metadata"].(map[string]any)["generation"].(float64))
	c.latestGen = c.readGen
	traffic, _ := r.xr.xr["spec"].(map[string]any)["traffic"].(map[string]any)
	c.abortInSpec, _ = traffic["abort"].(bool)
	for _, b := range before {
		if b.latestGen > c.latestGen {
			c.latestGen, c.abortInSpec = b.latestGen, b.abortInSpec
		}
	}
	c.revision, _ = rollout["revision"].(string)
	c.phase, _ = rollout["phase"].(string)
	c.reason, _ = rollout["reason"].(string)
	step, _ := rollout["step"].(float64)
	c.step = int64(step)
	c.weight = canaryWeightOf(rc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap())
	return c
}

// permutations lists every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func describeHistory(h []clusterState) string {
	lines := make([]string, 0, len(h))
	for _, c := range h {
		lines = append(lines, "  "+c.String())
	}
	return strings.Join(lines, "\n")
}

// sameBeside reports whether two objects are equal but for one member.
func sameBeside(a, b map[string]any, member string) bool {
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, member)
	delete(b, member)
	return cmp.Equal(a, b)
}

// releaseScenario releases v1, rolls v2 out and promotes it (with a bake),
// rolls v3 out, rolls back to v2 in the middle of v3's step 1, all on
// caches that lag; it returns what the checks found wrong.
func releaseScenario(t *testing.T, seed uint64) (*laggingSim, []string) {
	s := newLaggingSim(t, namespacedXR(`
  parentRefs: [{name: gateway}]
  port: 9898
  release: {selector: {app: podinfo}, revisionLabel: version, replicas: 4}
  canary: {revision: v1}
  traffic:
    steps: [{weight: 10, pause: 30s}, {weight: 50, pause: 1m}, {weight: 100}]
    bake: 30s
    rollbackWindow: 2`), seed, 4, true)
	wrong := make([]string, 0, 8)
	for i := range 180 {
		switch i {
		case 2:
			s.edit("canary.revision", "v2")
		case 70:
			s.edit("canary.revision", "v3")
		case 96:
			s.edit("canary.revision", "v1") // a rollback, in the middle of v3's step 1
		case 160:
			s.maxLag = 0
		}
		wrong = append(wrong, s.reconcileLagging()...)
		s.wrongMoves(&wrong)
		s.now = s.now.Add(5 * time.Second)
	}
	return s, wrong
}

// wrongMoves checks the last apply: a proxy Service whose selector it
// changed was given no weight by the route the cluster held before.
func (s *laggingSim) wrongMoves(wrong *[]string) {
	n := len(s.objVersions)
	if n < 2 {
		return
	}
	before, after := s.objVersions[n-2], s.objVersions[n-1]
	selects := func(v cacheView, key string) any {
		o := v.objects[v.keys[key]]
		spec, _ := o["spec"].(map[string]any)
		sel, _ := spec["selector"].(map[string]any)
		return sel["version"]
	}
	routeBefore := before.objects[before.keys["route-httproute"]]
	for key, weight := range map[string]int64{"service-canary": canaryWeightOf(routeBefore), "service-primary": primaryWeightOf(routeBefore)} {
		from, to := selects(before, key), selects(after, key)
		if from != nil && to != nil && from != to && weight > 0 {
			*wrong = append(*wrong, fmt.Sprintf("%s: %s moved %v -> %v while the route gave it %d (of its total)", s.now.Format(time.TimeOnly), key, from, to, weight))
		}
	}
}

// primaryWeightOf is the weight of the primary backend (podinfo-primary)
// in the first rule of a route; 0 when it has none.
func primaryWeightOf(route map[string]any) int64 {
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	if len(rules) == 0 {
		return 0
	}
	refs, _ := rules[0].(map[string]any)["backendRefs"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if ref["name"] == "podinfo-primary" {
			w, _ := ref["weight"].(float64)
			return int64(w)
		}
	}
	return 0
}

func TestFreshStateReleaseLaggingCaches(t *testing.T) {
	for seed := range seeds() {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, wrong := releaseScenario(t, seed)
			if len(wrong) > 0 {
				t.Errorf("A release under caches that lag (a promotion with a bake, a rollback in the middle of a step) must never move back nor move a Service under traffic:\n%s\nhistory:\n%s",
					strings.Join(wrong, "\n"), describeHistory(s.history))
			}
			if last := s.history[len(s.history)-1]; last.revision != "v1" || last.phase != "Succeeded" || last.reason != "RolledBack" {
				t.Errorf("The rollback to v1 must end Succeeded (RolledBack) once the caches catch up; it ended at %s\nhistory:\n%s", last, describeHistory(s.history))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Attacks on the fresh-state contract at its seams with the older
// contracts: the release loop's order across objects, the takeover rule,
// the sequence as the XRD bounds it.

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
			if w := canaryWeightOf(before.objects[before.keys["route-httproute"]]); w != 10000 {
				t.Fatalf("setup: the primary Service moved while the route gave the canary %d hundredths of a percent", w)
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

// TestFreshStateLeavingPromotionUnderLaggingServiceCache: a promotion moved
// the primary Service to v2 (the function composed it, the cluster holds
// it); the next reconcile reads the newest spec and status, but its cache
// of composed objects lags one apply (the primary Service still selects v1,
// the route sends every request to the canary). Whatever leaves the
// promotion (an abort, a new revision, the route found not accepted, a
// pause) must not give the primary Service requests in the same answer that
// moves its selector back: without the lag the function unwinds first
// (every request stays on the canary while the primary moves back).
func TestFreshStateLeavingPromotionUnderLaggingServiceCache(t *testing.T) {
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

// TestFreshStateStaleReadComposesOverAnotherOwnersObject: the takeover rule
// ("No takeover of objects the XR did not compose") is checked on fresh
// runs only. The route the CanaryRoute composed is deleted and another
// team creates an HTTPRoute of the same name: a fresh read is refused with
// a Fatal (which the memory does not remember), but a stale read of the
// same spec is answered with the remembered decision, which composes the
// route over the other team's, in the same reconcile whose required
// resources show it.
func TestFreshStateStaleReadComposesOverAnotherOwnersObject(t *testing.T) {
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

// TestFreshStateRescuedAbortUnderLaggingServiceCache: the emergency abort
// of a spec that cannot be composed (compose.RescueAbort) re-emits the
// composed objects as observed, never as the newest decision composed them.
// A promotion moved the primary Service to v2; the spec breaks and the user
// aborts; the reconcile's cache of Services lags one apply (primary at v1):
// the rescue sends every request to the primary and moves its selector
// v2 -> v1 in the same answer. Without the lag it keeps v2.
func TestFreshStateRescuedAbortUnderLaggingServiceCache(t *testing.T) {
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

// TestFreshStateSaturatedSequenceDisablesTheMemory: a sequence at the XRD's
// maximum (2^53-1, or 1e300 read as it) written by hand is trusted, as the
// docs say, and the counter then stays there: every later decision is
// stamped 2^53-1. From then on a stale read carries the same sequence as
// the newest decision, "at or above" it, and is decided afresh: the
// rollout moves back on any stale read, for good, not once. A forged
// sequence must give the forger no more than writing the status always
// gave (one decision), not switch the memory off for the composite.
func TestFreshStateSaturatedSequenceDisablesTheMemory(t *testing.T) {
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

// TestFreshStateForgedSequenceReadAsDocumented: docs/rollout.md ("Fresh
// state", Decisions) says a sequence written by hand "is read as an integer
// from 0 to 2^53-1: a negative or fractional one reads as none, a larger one
// as the largest". package freshness reads it so, but the XR's status
// parser refuses it: every run is a Fatal, which writes no status, so the
// forged value stays and the CanaryRoute is stuck until a person repairs
// its status. (The generated XRD bounds the field, so the API server
// refuses these values; an XRD without the bounds, as the docs allow for
// "an XRD from before sequence existed" that does not prune, lets them in.)
func TestFreshStateForgedSequenceReadAsDocumented(t *testing.T) {
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

// TestFreshStateStaleReadQueriesNothing: a stale read, at a time its metric
// is due, sends no query (counted by the provider) and says nothing; a
// fresh read at the same time does query (control).
func TestFreshStateStaleReadQueriesNothing(t *testing.T) {
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

// TestFreshStateMemoryConcurrentRuns: many goroutines run one Function with a
// tiny memory (evictions on every run) for several composites at once,
// fresh and stale reads of each mixed: run it with -race.
func TestFreshStateMemoryConcurrentRuns(t *testing.T) {
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
		f := &Function{log: logging.NewNopLogger(), clock: ClockFunc(func() time.Time { return rec.now }), memory: freshness.NewMemory[pipeline.Answer](bound.entries, bound.bytes)}
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

// TestFreshStateLaggingReleaseStatusWithinXRD: every status answered
// through a release under caches that lag (sequence,
// status.release.canaryMove, a rollback in the middle of a step) passes the
// XRD, as the API server checks it.
func TestFreshStateLaggingReleaseStatusWithinXRD(t *testing.T) {
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

// TestFreshStateDeterministicAndRenderUntouched: the same request to two
// fresh processes gives byte-identical answers; a request without a UID (as
// crossplane render sends), after requests of the same XR with its UID were
// remembered, is answered as by a process without memory, stamped with no
// sequence.
func TestFreshStateDeterministicAndRenderUntouched(t *testing.T) {
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
			f.memory = freshness.NewMemory[pipeline.Answer](10, 1<<30)
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

// TestFreshStateXRDFromBeforeSequencePrunesCanaryMove: the docs say an XRD
// from before status.rollout.sequence existed still orders reads by what
// the status says, and "the rollouts still complete and never move back"
// (TestFreshStatePrunedSequence). status.release.canaryMove came in the
// same round: such an XRD prunes it too. The first rollout of a release (v1
// released, then canary.revision v2) records a canaryMove before the canary
// Service moves from v1 to v2; it never reads back. Before the fix, every
// later read's status differed from the remembered one and carried no
// sequence: it read as stale and was answered with the remembered decision
// for good, and the canary Service never moved. Now the digest leaves the
// move out, and a run decides on the remembered status, which keeps it.
// (Without the memory, `--remember-entries=0`, nothing keeps the move's
// time under such an XRD: documented, docs/rollout.md.)
func TestFreshStateXRDFromBeforeSequencePrunesCanaryMove(t *testing.T) {
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

// TestFreshStateAbortScalesCanaryAwayUnderLaggingRouteCache: the record gives
// an aborted canary no replicas "once the observed route sends it none".
// v2 is at its first step (10%, the route the newest decision composed and
// the cluster holds); the abort's reconcile reads a cache of composed
// objects from before that step (the canary Service already at v2, the
// route at 0%): the record scales v2 to 0 in the same apply that takes its
// 10% away, so the pods go while the gateway still sends them requests.
// Without the lag, v2 keeps its replicas until the route is observed at 0.
func TestFreshStateAbortScalesCanaryAwayUnderLaggingRouteCache(t *testing.T) {
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

// TestFreshStateLaggingAnalysisRetry: step analysis under caches that lag:
// the first Job fails the rollout, a retry runs it again and it passes; an
// abort and its clearing midway. The rollout never moves back, a failed
// canary gets no weight before the retry, and v2 completes.
func TestFreshStateLaggingAnalysisRetry(t *testing.T) {
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
			if last := s.history[len(s.history)-1]; last.phase != "Succeeded" || last.weight != 10000 {
				wrong = append(wrong, "v2 did not complete: "+last.String())
			}
			if len(wrong) > 0 {
				t.Errorf("Attack: step analysis under caches that lag:\n%s\nhistory:\n%s", strings.Join(wrong, "\n"), describeHistory(s.history))
			}
		})
	}
}
