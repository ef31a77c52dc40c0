package main

// A rollout never moves back, whatever Crossplane reads: the simulated
// Crossplane reads the XR and the composed objects from caches that lag,
// one process answers every call (with its memory of the decisions it
// answered), and the cluster's history is checked against the contract
// ("Fresh state", ../shared/API.md) after every apply.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/metrics"
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
		s.fn.memory = freshness.NewMemory(freshness.DefaultEntries, freshness.DefaultBytes)
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
	if id, ok := s.keys["route-httproute"]; ok {
		c.weight = canaryWeightOf(s.objects[id])
	}
	return c
}

// canaryWeightOf is the weight of the canary backend (podinfo-canary) in
// the first rule of a route; 0 when it has none.
func canaryWeightOf(route map[string]any) int64 {
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	if len(rules) == 0 {
		return 0
	}
	refs, _ := rules[0].(map[string]any)["backendRefs"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if ref["name"] == "podinfo-canary" {
			w, _ := ref["weight"].(float64)
			return int64(w)
		}
	}
	return 0
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
	s := newLaggingSim(t, steppedXR(`[{weight: 10, pause: 1m}, {weight: 50, pause: 1m}, {weight: 100}]`, ""), seed, 4, remember)
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
			if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 100 {
				t.Errorf("The rollout of v3 must end Succeeded at 100%% once the caches catch up; it ended at %s\nhistory:\n%s", last, describeHistory(s.history))
			}
		})
	}
}

func TestFreshStateCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewRuns(reg, time.Now)
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
			if last := s.history[len(s.history)-1]; last.revision != "v3" || last.phase != "Succeeded" || last.weight != 100 {
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
			*wrong = append(*wrong, fmt.Sprintf("%s: %s moved %v -> %v while the route gave it %d%%", s.now.Format(time.TimeOnly), key, from, to, weight))
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
