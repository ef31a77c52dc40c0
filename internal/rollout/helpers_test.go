package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// t0 is when the rollouts under test start. Status times have second
// precision, so every "now" below is t0 plus whole seconds, unless a case
// pins the truncation.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// mt is at(d) as a status time.
func mt(d time.Duration) *metav1.Time { return &metav1.Time{Time: at(d)} }

func i32(v int32) *int32 { return &v }

// steps3 is the reference's example: 10% for 1m, 50% for 5m, then 100%.
func steps3() []xr.Step {
	return []xr.Step{
		{Weight: percent.Int(10), Pause: time.Minute},
		{Weight: percent.Int(50), Pause: 5 * time.Minute},
		{Weight: percent.Int(100)},
	}
}

// routeOK is a gateway that carries and accepts any weight asked about.
func routeOK(percent.Percent) (bool, string) { return true, "" }

// routeAt is a gateway whose observed route carries canary weight w, and
// whose every parent accepted it.
func routeAt(w int32) func(percent.Percent) (bool, string) { return routeAtP(percent.Int(w)) }

// routeAtP is routeAt of a percent with decimals.
func routeAtP(w percent.Percent) func(percent.Percent) (bool, string) {
	return func(asked percent.Percent) (bool, string) {
		if asked.Equal(w) {
			return true, ""
		}
		return false, fmt.Sprintf("the route carries %s%%, not %s%%", w, asked)
	}
}

// routeRefused is a gateway that never accepts the route.
func routeRefused(why string) func(percent.Percent) (bool, string) {
	return func(percent.Percent) (bool, string) { return false, why }
}

// gateDeployment is the gate of the reference's example with failAfter 5m.
func gateDeployment(name string) xr.Gate {
	return xr.Gate{APIVersion: "apps/v1", Kind: "Deployment", Name: name, ConditionType: "Available", FailAfter: 5 * time.Minute}
}

// gateObs is gate g found with its condition at status s, last changed at
// since (nil: no lastTransitionTime).
func gateObs(g xr.Gate, s metav1.ConditionStatus, reason string, since *time.Time) GateObservation {
	c := &metav1.Condition{Type: g.ConditionType, Status: s, Reason: reason}
	if since != nil {
		c.LastTransitionTime = metav1.Time{Time: *since}
	}
	return GateObservation{Gate: g, Found: true, Condition: c}
}

func tp(t time.Time) *time.Time { return &t }

// progressing is a status.rollout that a previous run left while holding
// step i of steps3 for revision v2, started at start.
func progressing(i int32, start time.Duration) *xr.RolloutStatus {
	w := steps3()[i].Weight
	return &xr.RolloutStatus{
		Phase:         xr.PhaseProgressing,
		Reason:        ReasonAdvanced,
		Revision:      "v2",
		Step:          i32(i),
		StepStartedAt: mt(start),
		NextStepAt:    mt(start + steps3()[i].Pause),
		CanaryWeight:  w,
		PrimaryWeight: w.Rest(),
		Message:       "an older message",
	}
}

// with returns a copy of s changed by f.
func with(s *xr.RolloutStatus, f func(s *xr.RolloutStatus)) *xr.RolloutStatus {
	c := *s
	f(&c)
	return &c
}
