package rollout

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// propertySeed seeds the property tests. It is fixed, so a failure
// reproduces; change it locally to explore.
const propertySeed = 20261202

// describe prints an input for a failure message (RouteAtWeight is a
// function, so it is shown by what it says about each step's weight).
func describe(in Input) string {
	prev, _ := json.Marshal(in.Previous)
	var route strings.Builder
	if in.RouteAtWeight == nil {
		route.WriteString("not observed")
	} else {
		for _, w := range []int32{0, 10, 50, 100} {
			ok, why := in.RouteAtWeight(percent.Int(w))
			fmt.Fprintf(&route, "%d%%:%t(%s) ", w, ok, why)
		}
	}
	var gates strings.Builder
	for _, g := range in.Gates {
		fmt.Fprintf(&gates, "{found %t failAfter %s cond %+v} ", g.Found, g.Gate.FailAfter, g.Condition)
	}
	weight := "nil"
	if in.Traffic.Weight != nil {
		weight = in.Traffic.Weight.String()
	}
	return fmt.Sprintf("now %s revision %q weight %s steps %+v paused %t abort %t requireRoute %t refused %t\nprevious %s\nroute %s\ngates %s",
		in.Now.Format(time.RFC3339Nano), in.Revision, weight, in.Traffic.Steps, in.Traffic.Paused, in.Traffic.Abort,
		in.Traffic.RequireAcceptedRoute, in.CanaryRefused, prev, route.String(), gates.String())
}

// TestPropertiesOneRun checks, over many seeded pseudo-random inputs
// (previous statuses included, sane or not), the invariants of every run:
// weights add up to 100, Failed and Aborted send nothing to the canary, a
// progressing weight is its step's and at most the last step's, Decide is
// deterministic, and a run with nothing changed and nothing due leaves the
// status byte for byte as it was.
func TestPropertiesOneRun(t *testing.T) {
	t.Logf("seed %d", propertySeed)
	r := rand.New(rand.NewPCG(propertySeed, 1))
	const runs = 20000
	failures := 0
	phases := map[xr.Phase]int{}
	defer func() { t.Logf("phases over %d runs: %v", runs, phases) }()
	for i := range runs {
		whole := genInput(r)
		// Each input twice: as generated, and with finer weights (every
		// whole weight between 0 and 100 a hundredth lower).
		for _, in := range []Input{whole, finer(whole)} {
			d := Decide(in)
			phases[d.Status.Phase]++
			v := violations(in, d)
			if diff := cmp.Diff(d, Decide(in)); diff != "" {
				v = append(v, "not deterministic: -first, +second:\n"+diff)
			}
			v = append(v, rerunViolations(in, d)...)
			if len(v) > 0 {
				failures++
				t.Errorf("input %d: %s\ndecision %+v\n%v", i, describe(in), d.Status, v)
				if failures > 5 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}

// finer is an input with finer weights: every whole weight strictly
// between 0 and 100 (the steps', the manual weight, the previous status's)
// a hundredth lower, so 10 is 9.99; the order of the weights, and which are
// equal, stay as they were. The gateway and the capacity gate answer for a
// weight as they did for the whole one it stands for.
func finer(in Input) Input {
	f := func(p percent.Percent) percent.Percent {
		if p.Whole() && percent.Zero.Less(p) && p.Less(percent.Max) {
			return percent.Hundredths(p.Hundredths() - 1)
		}
		return p
	}
	g := func(p percent.Percent) percent.Percent {
		if h := p.Hundredths(); h > 0 && h < percent.Max.Hundredths() && h%percent.Scale == percent.Scale-1 {
			return percent.Hundredths(h + 1)
		}
		return p
	}
	out := in
	out.Traffic.Steps = slices.Clone(in.Traffic.Steps)
	for i := range out.Traffic.Steps {
		out.Traffic.Steps[i].Weight = f(out.Traffic.Steps[i].Weight)
	}
	if in.Traffic.Weight != nil {
		out.Traffic.Weight = ptr.To(f(*in.Traffic.Weight))
	}
	if in.Previous != nil {
		p := *in.Previous
		if p.CanaryWeight.Hundredths()+p.PrimaryWeight.Hundredths() == percent.Max.Hundredths() {
			p.PrimaryWeight = f(p.CanaryWeight).Rest()
		}
		p.CanaryWeight = f(p.CanaryWeight)
		out.Previous = &p
	}
	if at := in.RouteAtWeight; at != nil {
		out.RouteAtWeight = func(w percent.Percent) (bool, string) { return at(g(w)) }
	}
	if at := in.RouteAtStep; at != nil {
		out.RouteAtStep = func(i int32, w percent.Percent) (bool, string) { return at(i, g(w)) }
	}
	if c := in.Capacity; c != nil {
		out.Capacity = func(w percent.Percent) (bool, string) { return c(g(w)) }
	}
	return out
}

// TestPropertiesRuns plays many seeded pseudo-random rollouts run after
// run: a clock that moves by the requeue or by surprise (now and then
// backwards, as with skew between replicas), a gateway that takes a while to
// carry and accept what the previous run composed, gates that flip, and a
// user who pauses, resumes, aborts and clears abort. Each run's status feeds
// the next run through its JSON. Beyond the invariants of every run: while a
// rollout progresses its weight never goes down, a failed rollout stays
// failed and a succeeded one succeeded for the revision.
func TestPropertiesRuns(t *testing.T) {
	t.Logf("seed %d", propertySeed)
	r := rand.New(rand.NewPCG(propertySeed, 2))
	const rollouts, runsEach = 400, 80
	phases := map[xr.Phase]int{}
	defer func() { t.Logf("phases over %d runs: %v", rollouts*runsEach, phases) }()
	for n := range rollouts {
		if !playRollout(t, r, n, runsEach, phases) {
			return
		}
	}
}

// playRollout plays one random rollout and reports whether it went without
// failure.
func playRollout(t *testing.T, r *rand.Rand, n, runs int, phases map[xr.Phase]int) bool {
	t.Helper()
	steps := genSteps(r)
	in := Input{Traffic: xr.Traffic{Steps: steps, RequireAcceptedRoute: !chance(r, 4)}, Revision: "v2"}
	gates := genGates(r)
	for i := range gates {
		gates[i].Gate.FailAfter = pick(r, 0, 30*time.Second, 5*time.Minute, time.Hour)
		in.Traffic.Gates = append(in.Traffic.Gates, gates[i].Gate)
	}
	now := at(0)
	var prev *xr.RolloutStatus
	composed, observed, accepted := percent.Zero, false, true

	for run := range runs {
		// The world moves between runs.
		// Switches go on now and then, and off again soon.
		toggle := func(b *bool, on int) {
			if (*b && chance(r, 4)) || (!*b && chance(r, on)) {
				*b = !*b
			}
		}
		toggle(&in.Traffic.Paused, 15)
		toggle(&in.Traffic.Abort, 40)
		toggle(&in.CanaryRefused, 60)
		if chance(r, 10) {
			accepted = !accepted
		}
		if chance(r, 40) {
			in.Revision = pick(r, "v2", "v3", "v4")
		}
		for i := range gates {
			if chance(r, 8) {
				c := &metav1.Condition{
					Type: "Available", Status: pick(r, metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionTrue,
						metav1.ConditionFalse, metav1.ConditionUnknown),
					LastTransitionTime: metav1.Time{Time: now.Add(-time.Duration(r.IntN(300)) * time.Second)},
				}
				gates[i].Found, gates[i].Condition = true, c
			}
		}
		in.Gates = gates
		c, o, a := composed, observed, accepted
		in.RouteAtWeight = func(w percent.Percent) (bool, string) {
			switch {
			case !o:
				return false, "the route has not been created yet"
			case !w.Equal(c):
				return false, "the route does not carry the step's weights yet"
			case !a:
				return false, holdGatewayNoGo
			}
			return true, ""
		}
		in.Now, in.Previous = now, prev

		d := Decide(in)
		phases[d.Status.Phase]++
		v := violations(in, d)
		v = append(v, rerunViolations(in, d)...)
		if p := prev; p != nil {
			v = append(v, sequenceViolations(in, *p, d)...)
		}
		if len(v) > 0 {
			t.Errorf("rollout %d run %d: %s\ndecision %+v\n%v", n, run, describe(in), d.Status, v)
			return false
		}

		next, _, err := roundTrip(d.Status)
		if err != nil {
			t.Errorf("rollout %d run %d: %v", n, run, err)
			return false
		}
		prev = next
		// The gateway picks up the composed route, sometimes only later.
		if !chance(r, 4) {
			composed, observed = d.CanaryWeight, true
		}
		switch r.IntN(6) {
		case 0:
			now = now.Add(-time.Duration(r.IntN(120)) * time.Second)
		case 1:
			now = now.Add(time.Duration(r.IntN(600)) * time.Second)
		default:
			now = now.Add(d.Requeue)
		}
	}
	return true
}

// sequenceViolations are the invariants between two runs of one revision
// with the same steps.
func sequenceViolations(in Input, prev xr.RolloutStatus, d Decision) []string {
	var v []string
	s := d.Status
	if prev.Revision != in.Revision {
		return nil
	}
	moving := func(p xr.Phase) bool { return p == xr.PhaseProgressing || p == xr.PhasePaused }
	if moving(prev.Phase) && (moving(s.Phase) || s.Phase == xr.PhaseSucceeded) && s.CanaryWeight.Less(prev.CanaryWeight) {
		v = append(v, fmt.Sprintf("weight went down from %s%% (%s) to %s%% (%s)", prev.CanaryWeight, prev.Phase, s.CanaryWeight, s.Phase))
	}
	if in.Traffic.Abort || in.CanaryRefused {
		return v
	}
	if prev.Phase == xr.PhaseSucceeded && (s.Phase != xr.PhaseSucceeded || s.CanaryWeight != prev.CanaryWeight) {
		v = append(v, fmt.Sprintf("Succeeded at %s%% became %s at %s%%", prev.CanaryWeight, s.Phase, s.CanaryWeight))
	}
	if prev.Phase == xr.PhaseFailed && prev.Message != "" && prev.Reason != ReasonNotAllowedByPolicy &&
		(s.Phase != xr.PhaseFailed || s.Message != prev.Message || d.Reason != failedReason(prev.Reason)) {
		v = append(v, fmt.Sprintf("Failed (%q) became %s (%q, %s)", prev.Message, s.Phase, s.Message, d.Reason))
	}
	return v
}
