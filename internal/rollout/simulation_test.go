package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	holdNotCreated = "the route has not been created yet"
	holdNotCarried = "the route does not carry the step's weights yet"
)

// row is what one run of a simulation shows: when it ran (since t0) and
// what it decided.
type row struct {
	At      time.Duration
	Phase   xr.Phase
	Step    int32
	Weight  percent.Percent
	Message string
	Requeue time.Duration
	Event   string
}

// simulation runs the engine the way Crossplane runs the function: each run
// reads the status the previous run wrote (through its JSON), at a fake
// clock that moves by the previous run's requeue, against a fake gateway
// that only ever carries the weight composed by the previous run (a route
// reaches the gateway after the run that composed it).
type simulation struct {
	t  *testing.T
	in Input // spec, gates, refusal; Now, Previous and RouteAtWeight are the simulation's

	now      time.Time
	prev     *xr.RolloutStatus
	composed percent.Percent
	created  bool
	// refusal, when set, is why the gateway does not accept the route.
	refusal string

	rows []row
}

func newSimulation(t *testing.T, in Input) *simulation {
	t.Helper()
	return &simulation{t: t, in: in, now: t0}
}

// gateway is the fake gateway's RouteAtWeight, as fn.go words it: the route
// must exist, carry the weight, and be accepted.
func (s *simulation) gateway(w percent.Percent) (bool, string) {
	switch {
	case !s.created:
		return false, holdNotCreated
	case !w.Equal(s.composed):
		return false, holdNotCarried
	case s.refusal != "":
		return false, s.refusal
	}
	return true, ""
}

// run runs the engine once, records the row, checks the invariants, and
// moves the clock by the requeue.
func (s *simulation) run() Decision {
	s.t.Helper()
	in := s.in
	in.Now, in.Previous, in.RouteAtWeight = s.now, s.prev, s.gateway
	d := Decide(in)
	for _, v := range append(violations(in, d), rerunViolations(in, d)...) {
		s.t.Errorf("run at %s: %s", s.now.Sub(t0), v)
	}
	prev, _, err := roundTrip(d.Status)
	if err != nil {
		s.t.Fatal(err)
	}
	r := row{At: s.now.Sub(t0), Phase: d.Status.Phase, Weight: d.CanaryWeight, Message: d.Status.Message, Requeue: d.Requeue, Event: moveEvent(d)}
	if d.Status.Step != nil {
		r.Step = *d.Status.Step
	}
	s.rows = append(s.rows, r)
	s.prev, s.composed, s.created = prev, d.CanaryWeight, true
	s.now = s.now.Add(d.Requeue)
	return d
}

// runs runs the engine n times.
func (s *simulation) runs(n int) {
	s.t.Helper()
	for range n {
		s.run()
	}
}

// holdingRow is a row of a run that holds step i of steps3.
func holdingRow(at time.Duration, i int32, hold string, requeue time.Duration, event string) row {
	w := steps3()[i].Weight
	return row{At: at, Phase: xr.PhaseProgressing, Step: i, Weight: w, Message: holdingAt(i, 0, hold, 0, "").Status.Message, Requeue: requeue, Event: event}
}

func pauseUntil(clock string) string { return "pause until 2026-12-02T" + clock + "Z" }

// happyStart is the first four runs of steps3: start, pause, advance to
// step 1, pause.
func happyStart() []row {
	return []row{
		holdingRow(0, 0, holdNotCreated, HoldRequeue, evStarted),
		holdingRow(30*time.Second, 0, pauseUntil("10:01:00"), 30*time.Second, ""),
		holdingRow(time.Minute, 1, holdNotCarried, HoldRequeue, evAdvanced1),
		holdingRow(90*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
	}
}

func TestSimulation(t *testing.T) {
	deploy := gateDeployment("podinfo-canary")
	gateTrue := gateObs(deploy, metav1.ConditionTrue, "MinimumReplicasAvailable", tp(at(-time.Hour)))
	succeeded := func(at time.Duration, event string) row {
		return row{At: at, Phase: xr.PhaseSucceeded, Step: 2, Weight: percent.Int(100), Message: msgSucceeded, Requeue: MaxRequeue, Event: event}
	}

	cases := map[string]struct {
		reason string
		play   func(s *simulation)
		want   []row
	}{
		"HappyPath": {
			reason: "10%/1m -> 50%/5m -> 100%: each step waits for the gateway to carry it, then for its pause; requeues follow the pause left; one event per move; Succeeded at 100% and then quiet.",
			play:   func(s *simulation) { s.runs(12) },
			want: append(happyStart(),
				holdingRow(150*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(210*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(270*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(330*time.Second, 1, pauseUntil("10:06:00"), 30*time.Second, ""),
				holdingRow(6*time.Minute, 2, holdNotCarried, HoldRequeue, evAdvanced2),
				succeeded(390*time.Second, evSucceeded),
				succeeded(450*time.Second, ""),
				succeeded(510*time.Second, ""),
			),
		},
		"GatewayRefuses": {
			reason: "A gateway that does not accept the route holds step 0 past its pause, with the gateway's reason in the message, the same status on every run and a 30s requeue; once it accepts, the rollout moves on.",
			play: func(s *simulation) {
				s.refusal = holdGatewayNoGo
				s.runs(6)
				s.refusal = ""
				s.runs(2)
			},
			want: []row{
				holdingRow(0, 0, holdNotCreated, HoldRequeue, evStarted),
				holdingRow(30*time.Second, 0, holdGatewayNoGo, HoldRequeue, ""),
				holdingRow(60*time.Second, 0, holdGatewayNoGo, HoldRequeue, ""),
				holdingRow(90*time.Second, 0, holdGatewayNoGo, HoldRequeue, ""),
				holdingRow(120*time.Second, 0, holdGatewayNoGo, HoldRequeue, ""),
				holdingRow(150*time.Second, 0, holdGatewayNoGo, HoldRequeue, ""),
				holdingRow(180*time.Second, 1, holdNotCarried, HoldRequeue, evAdvanced1),
				holdingRow(210*time.Second, 1, pauseUntil("10:08:00"), time.Minute, ""),
			},
		},
		"GateFails": {
			reason: "A gate that turns False mid-rollout holds step 1 after its pause and fails the rollout at 0% once False for longer than failAfter (5m from 10:02, so at the first run after 10:07); Failed stays when the gate recovers, until a new revision restarts at step 0.",
			play: func(s *simulation) {
				s.in.Traffic.Gates = []xr.Gate{deploy}
				s.in.Gates = []GateObservation{gateTrue}
				s.runs(4)
				s.in.Gates = []GateObservation{gateObs(deploy, metav1.ConditionFalse, reasonUnavailble, tp(at(2*time.Minute)))}
				s.runs(8)
				s.in.Gates = []GateObservation{gateTrue}
				s.runs(1)
				s.in.Revision = "v3"
				s.runs(1)
			},
			want: append(happyStart(),
				holdingRow(150*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(210*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(270*time.Second, 1, pauseUntil("10:06:00"), time.Minute, ""),
				holdingRow(330*time.Second, 1, pauseUntil("10:06:00"), 30*time.Second, ""),
				holdingRow(6*time.Minute, 1, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
				holdingRow(390*time.Second, 1, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
				// False for exactly failAfter: still holding.
				holdingRow(7*time.Minute, 1, "gate 0: Deployment podinfo-canary has Available False (MinimumReplicasUnavailable)", HoldRequeue, ""),
				row{
					At: 450 * time.Second, Phase: xr.PhaseFailed, Step: 1, Weight: percent.Int(0), Requeue: MaxRequeue,
					Message: "gate 0 failed: Deployment podinfo-canary has had Available False since 2026-12-02T10:02:00Z (MinimumReplicasUnavailable), longer than 5m0s",
				},
				row{
					At: 510 * time.Second, Phase: xr.PhaseFailed, Step: 1, Weight: percent.Int(0), Requeue: MaxRequeue,
					Message: "gate 0 failed: Deployment podinfo-canary has had Available False since 2026-12-02T10:02:00Z (MinimumReplicasUnavailable), longer than 5m0s",
				},
				row{
					At: 570 * time.Second, Phase: xr.PhaseProgressing, Step: 0, Weight: percent.Int(10), Requeue: HoldRequeue,
					Message: "holding step 0 (10%): " + holdNotCarried, Event: "rollout of revision v3 started at step 0 (10%)",
				},
			),
		},
		"PauseAndResume": {
			reason: "Pausing at step 1 freezes 50% (phase Paused, 1m requeue, no event); resuming restarts step 1's 5m pause at the resume (paused time never counts), with an event, and the rollout then ends as usual.",
			play: func(s *simulation) {
				s.runs(4)
				s.in.Traffic.Paused = true
				s.runs(3)
				s.in.Traffic.Paused = false
				s.runs(8)
			},
			want: append(happyStart(),
				row{At: 150 * time.Second, Phase: xr.PhasePaused, Step: 1, Weight: percent.Int(50), Message: "paused at step 1 (50%)", Requeue: MaxRequeue},
				row{At: 210 * time.Second, Phase: xr.PhasePaused, Step: 1, Weight: percent.Int(50), Message: "paused at step 1 (50%)", Requeue: MaxRequeue},
				row{At: 270 * time.Second, Phase: xr.PhasePaused, Step: 1, Weight: percent.Int(50), Message: "paused at step 1 (50%)", Requeue: MaxRequeue},
				holdingRow(330*time.Second, 1, pauseUntil("10:10:30"), time.Minute, "rollout resumed at step 1 (50%)"),
				holdingRow(390*time.Second, 1, pauseUntil("10:10:30"), time.Minute, ""),
				holdingRow(450*time.Second, 1, pauseUntil("10:10:30"), time.Minute, ""),
				holdingRow(510*time.Second, 1, pauseUntil("10:10:30"), time.Minute, ""),
				holdingRow(570*time.Second, 1, pauseUntil("10:10:30"), time.Minute, ""),
				holdingRow(630*time.Second, 2, holdNotCarried, HoldRequeue, evAdvanced2),
				succeeded(660*time.Second, evSucceeded),
				succeeded(720*time.Second, ""),
			),
		},
		"AbortAndClear": {
			reason: "Abort at step 1 sends everything to the primary (Aborted, 0%, no event) for as long as it is set; clearing it restarts the revision at step 0 with the start event, waiting for the gateway to carry 10% again and for the whole pause.",
			play: func(s *simulation) {
				s.runs(4)
				s.in.Traffic.Abort = true
				s.runs(2)
				s.in.Traffic.Abort = false
				s.runs(4)
			},
			want: append(happyStart(),
				row{At: 150 * time.Second, Phase: xr.PhaseAborted, Step: 1, Weight: percent.Int(0), Message: msgAborted, Requeue: MaxRequeue},
				row{At: 210 * time.Second, Phase: xr.PhaseAborted, Step: 1, Weight: percent.Int(0), Message: msgAborted, Requeue: MaxRequeue},
				holdingRow(270*time.Second, 0, holdNotCarried, HoldRequeue, evRestartedAfterAbort),
				holdingRow(300*time.Second, 0, pauseUntil("10:05:30"), 30*time.Second, ""),
				holdingRow(330*time.Second, 1, holdNotCarried, HoldRequeue, evAdvanced1),
				holdingRow(360*time.Second, 1, pauseUntil("10:10:30"), time.Minute, ""),
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSimulation(t, progIn(nil))
			tc.play(s)
			if diff := cmp.Diff(tc.want, s.rows); diff != "" {
				t.Errorf("%s\nruns: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
