package rollout

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// source is where generated inputs come from: a seeded math/rand/v2
// generator in the property tests, the fuzzer's bytes in FuzzDecide.
type source interface {
	IntN(n int) int
	Int64() int64
}

// byteSource reads choices from fuzz bytes; once they run out every choice
// is 0, so any byte string is a valid input.
type byteSource struct{ b []byte }

func (s *byteSource) IntN(n int) int {
	if n <= 1 || len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 && len(s.b) > 0 {
		v = v<<8 | int(s.b[0])
		s.b = s.b[1:]
	}
	return v % n
}

func (s *byteSource) Int64() int64 {
	var buf [8]byte
	n := copy(buf[:], s.b)
	s.b = s.b[n:]
	return int64(binary.LittleEndian.Uint64(buf[:]))
}

// pick returns one of vs.
func pick[T any](src source, vs ...T) T { return vs[src.IntN(len(vs))] }

// chance is true about once in n.
func chance(src source, n int) bool { return src.IntN(n) == 0 }

// genSpan is a time offset from t0 within about a day either way, in whole
// seconds or, once in a while, with a fraction as a hand-written status may
// carry.
func genSpan(src source) time.Duration {
	d := time.Duration(src.IntN(2*86400)-86400) * time.Second
	d = pick(src, d, d/60, d/600, 0, time.Minute, -time.Minute)
	if chance(src, 8) {
		d += time.Duration(src.IntN(1000)) * time.Millisecond
	}
	return d
}

// genDuration is a pause or failAfter as xr.Parse lets through: never
// negative, from 0 to about 292 years.
func genDuration(src source) time.Duration {
	switch src.IntN(6) {
	case 0:
		return 0
	case 1:
		return time.Duration(src.IntN(120)) * time.Second
	case 2:
		return time.Duration(src.IntN(30)) * time.Minute
	case 3:
		return time.Duration(src.IntN(1000)) * time.Millisecond
	case 4:
		return time.Duration(math.MaxInt64)
	default:
		return pick(src, time.Second, time.Minute, 5*time.Minute, time.Hour)
	}
}

// genSteps are steps as xr.Parse lets through: 1 to 32, weights 0..100 that
// never go down.
func genSteps(src source) []xr.Step {
	n := 1 + src.IntN(pick(src, 3, 6, 32))
	steps := make([]xr.Step, n)
	w := 0
	for i := range steps {
		if !chance(src, 3) {
			w += src.IntN(101 - w)
		}
		steps[i] = xr.Step{Weight: percent.Int(int32(w)), Pause: genDuration(src), Approval: chance(src, 6)}
		if chance(src, 5) {
			steps[i].Analysis = []string{"smoke"}
		}
	}
	return steps
}

// genControls sets the rollout controls: an approval, a promote, a retry,
// the smoke template, and observations of its objects.
func genControls(src source, in *Input) {
	in.Traffic.Analysis = []xr.AnalysisTemplate{{Name: "smoke", SuccessWhen: "object.status.succeeded > 0", FailWhen: "object.status.failed > 0"}}
	if chance(src, 3) {
		in.Traffic.Approval = &xr.Approval{Revision: pick(src, "v2", "v1"), Step: int32(src.IntN(8))}
	}
	if chance(src, 6) {
		in.Traffic.Promote = &xr.Promote{Revision: pick(src, "v2", "v1")}
	}
	if chance(src, 4) {
		in.Traffic.Retry = pick(src, "1", "2")
	}
	for range src.IntN(3) {
		in.Analysis = append(in.Analysis, AnalysisObservation{
			Name: "smoke", Revision: pick(src, "v2", "v1"), Retry: pick(src, "", "1"), Step: int32(src.IntN(4)),
			Check: pick(src, Check{}, Check{Success: true}, Check{Failed: true}, Check{Err: "no such key: succeeded"}),
		})
	}
}

// genRawSteps are steps that xr.Parse would refuse: weights that are not
// percents or go down, negative pauses, more than 32 steps.
func genRawSteps(src source) []xr.Step {
	steps := make([]xr.Step, 1+src.IntN(40))
	for i := range steps {
		steps[i] = xr.Step{
			Weight: anyPercent(pick(src, int32(src.Int64()), int32(src.IntN(101)), -1, 101)),
			Pause:  pick(src, time.Duration(src.Int64()), -time.Minute, time.Duration(math.MinInt64), genDuration(src)),
		}
	}
	return steps
}

func genGates(src source) []GateObservation {
	n := src.IntN(4)
	out := make([]GateObservation, n)
	for i := range out {
		g := xr.Gate{
			APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("gate%d", i),
			ConditionType: "Available", FailAfter: genDuration(src),
		}
		o := GateObservation{Gate: g, Found: !chance(src, 6)}
		if chance(src, 4) {
			o.Gate.ConditionType, o.Gate.SuccessWhen, o.Gate.FailWhen = "", "object.status.phase == 'Successful'", "object.status.phase == 'Failed'"
			o.Check = pick(src, Check{}, Check{Success: true}, Check{Failed: true}, Check{Err: "no such key: phase"})
			out[i] = o
			continue
		}
		if o.Found && !chance(src, 6) {
			c := &metav1.Condition{
				Type:   g.ConditionType,
				Status: pick(src, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown, "Bogus"),
				Reason: pick(src, "", "MinimumReplicasUnavailable", strings.Repeat("Long", 1250)),
			}
			if !chance(src, 4) {
				c.LastTransitionTime = metav1.Time{Time: at(genSpan(src))}
			}
			o.Condition = c
		}
		out[i] = o
	}
	return out
}

// genRoute is a RouteAtWeight: not observed, accepting anything, refusing
// everything, or carrying one weight.
// anyPercent is a whole percent, or any count of hundredths where the
// percent would not fit an int32: the generator's values, sane or not.
func anyPercent(v int32) percent.Percent {
	if v > -1000 && v < 1000 {
		return percent.Int(v)
	}
	return percent.Hundredths(v)
}

func genRoute(src source, steps []xr.Step) func(percent.Percent) (bool, string) {
	switch src.IntN(5) {
	case 0:
		return nil
	case 1:
		return routeOK
	case 2:
		return routeRefused(pick(src, holdGatewayNoGo, strings.Repeat("NotAllowedByListeners", 250)))
	default:
		if len(steps) > 0 && !chance(src, 4) {
			return routeAtP(pick(src, steps...).Weight)
		}
		return routeAt(int32(src.IntN(101)))
	}
}

// genTime is a status time: missing, around t0, the zero time, or the last
// second date-time admits.
func genTime(src source) *metav1.Time {
	switch src.IntN(7) {
	case 0:
		return nil
	case 1:
		return &metav1.Time{}
	case 2:
		return &metav1.Time{Time: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}
	default:
		return mt(genSpan(src))
	}
}

// genPrevious is status.rollout as a previous run may have left it, or as a
// user may have written it: any phase (and some that are none), steps
// beyond the list or negative, weights that are not percents, missing times.
func genPrevious(src source, steps []xr.Step) *xr.RolloutStatus {
	if chance(src, 5) {
		return nil
	}
	p := &xr.RolloutStatus{
		Phase: pick(src, xr.PhaseStable, xr.PhaseProgressing, xr.PhasePaused, xr.PhaseSucceeded,
			xr.PhaseAborted, xr.PhaseFailed, "", "Bogus"),
		Reason: pick(src, "", ReasonGateFailed, ReasonNotAllowedByPolicy, ReasonProgressDeadlineExceeded,
			ReasonAdvanced, ReasonAborted, ReasonPaused, "Bogus"),
		Revision:     pick(src, "v2", "v2", "v1", ""),
		CanaryDigest: pick(src, "", "d1", "d1", "d2"),
		Message: pick(src, "", "gate 0 failed: x", "canary refused: namespace monitoring is not allowed",
			"holding step 0 (10%): "+holdDue, "canary refused"),
		StepStartedAt: genTime(src),
		NextStepAt:    genTime(src),
	}
	switch src.IntN(5) {
	case 0:
	case 1:
		p.Step = i32(int32(src.IntN(len(steps)+6) - 3))
	case 2:
		p.Step = i32(pick[int32](src, math.MaxInt32, math.MinInt32, -1, 32, 33))
	default:
		if len(steps) > 0 {
			p.Step = i32(int32(src.IntN(len(steps))))
		} else {
			p.Step = i32(0)
		}
	}
	p.Promoted = pick(src, "", "", "v2")
	p.Retry = pick(src, "", "", "1")
	p.AwaitingApproval = chance(src, 6)
	if chance(src, 3) {
		p.Analysis = []xr.AnalysisVerdict{{Name: "smoke", Step: int32(src.IntN(4)) - 1, Verdict: pick(src, xr.VerdictPassed, xr.VerdictFailed, "Bogus"), Time: metav1.Time{Time: at(genSpan(src))}}}
	}
	p.CanaryWeight = anyPercent(pick[int32](src, int32(src.IntN(101)), -50, 250, math.MaxInt32, math.MinInt32))
	p.PrimaryWeight = pick(src, p.CanaryWeight.Rest(), percent.Zero, percent.Int(-1))
	if len(steps) > 0 && p.Step != nil && *p.Step >= 0 && int(*p.Step) < len(steps) && !chance(src, 4) {
		p.CanaryWeight = steps[*p.Step].Weight
		p.PrimaryWeight = p.CanaryWeight.Rest()
	}
	return p
}

// genRawInput is genInput with a spec that xr.Parse would refuse.
func genRawInput(src source) Input {
	in := genInput(src)
	in.Traffic.Steps = nil
	if !chance(src, 4) {
		in.Traffic.Steps = genRawSteps(src)
	}
	if in.Traffic.Weight != nil || chance(src, 3) {
		in.Traffic.Weight = ptr.To(anyPercent(pick(src, int32(src.Int64()), -1, 101)))
	}
	for i := range in.Gates {
		in.Gates[i].Gate.FailAfter = pick(src, -time.Minute, time.Duration(src.Int64()), time.Duration(math.MinInt64))
	}
	genControls(src, &in)
	in.Previous = genPrevious(src, in.Traffic.Steps)
	genMetrics(src, &in)
	return in
}

// genInput is an input as fn.go may hand the engine: a spec that xr.Parse
// accepted, and anything in the previous status and the observations.
func genInput(src source) Input {
	in := Input{Revision: "v2", CanaryDigest: pick(src, "d1", "d1", "d1", "d2", ""), Now: at(genSpan(src))}
	in.Traffic.RequireAcceptedRoute = !chance(src, 3)
	if chance(src, 4) {
		in.Traffic.ProgressDeadline = pick(src, time.Minute, 10*time.Minute, 24*time.Hour)
	}
	in.Traffic.Paused = chance(src, 5)
	in.Traffic.Abort = chance(src, 7)
	if chance(src, 4) {
		if !chance(src, 4) {
			in.Traffic.Weight = ptr.To(percent.Int(int32(src.IntN(101))))
		}
		if chance(src, 3) {
			in.Revision = ""
		}
	} else {
		in.Traffic.Steps = genSteps(src)
		in.Traffic.Gates = nil
	}
	in.Gates = genGates(src)
	for _, g := range in.Gates {
		in.Traffic.Gates = append(in.Traffic.Gates, g.Gate)
	}
	in.RouteAtWeight = genRoute(src, in.Traffic.Steps)
	in.RouteMissing = chance(src, 6)
	if chance(src, 8) {
		in.CanaryRefused = true
		in.CanaryRefusedReason = pick(src, "namespace monitoring is not allowed", "")
	}
	genControls(src, &in)
	in.Previous = genPrevious(src, in.Traffic.Steps)
	genMetrics(src, &in)
	genHooks(src, &in)
	return in
}

// genHooks adds hooks of any type, and their records as the status and
// the earlier calls of a reconcile may hold them: of this rollout's
// transitions or another's, any result (some the XRD refuses), any
// failures, dated anywhere (the future included).
func genHooks(src source, in *Input) {
	if len(in.Traffic.Steps) == 0 || chance(src, 3) {
		return
	}
	for i := range 1 + src.IntN(4) {
		h := xr.Hook{
			Name: fmt.Sprintf("h%d", i), Webhook: "wh", Type: pick(src, hooks.Types...),
			Interval: pick(src, 5*time.Second, time.Minute), FailureLimit: int32(1 + src.IntN(3)),
		}
		in.Traffic.Hooks = append(in.Traffic.Hooks, h)
		if chance(src, 3) {
			continue
		}
		if in.Hooks == nil {
			in.Hooks = map[string]xr.HookStatus{}
		}
		in.Hooks[h.Name] = xr.HookStatus{
			Name: h.Name,
			Transition: pick(src, "v2/start", "v2/step-0", "v2/step-1", "v2/step-1-at-50", "v2/step-2-at-100",
				"v2/promotion-at-100", "v2/rollback", "v2@1/rollback", "v2@1/start", "v1/start", "bogus"),
			Time:     metav1.Time{Time: at(genSpan(src))},
			Result:   pick(src, xr.HookSucceeded, xr.HookSucceeded, xr.HookFailed, "Bogus"),
			Status:   pick[int32](src, 0, 200, 503),
			Failures: pick[int32](src, 0, 1, 2, 5),
		}
	}
}

// genMetrics adds metrics, a bake, measurements (recorded, and taken this
// run at the previous step, or anywhere) and a capacity gate to an input.
func genMetrics(src source, in *Input) {
	if len(in.Traffic.Steps) == 0 || chance(src, 3) {
		return
	}
	verdicts := []string{xr.VerdictPassed, xr.VerdictFailed, xr.VerdictNoData}
	n := 1 + src.IntN(2)
	for i := range n {
		m := xr.Metric{
			Name: []string{"errors", "latency"}[i], Provider: "p", Query: "q",
			Interval:     pick(src, 5*time.Second, time.Minute, 5*time.Minute),
			SuccessWhen:  "result < 1",
			FailureLimit: int32(1 + src.IntN(3)),
			NoData:       pick(src, xr.NoDataHold, xr.NoDataPass, xr.NoDataFail),
			DryRun:       chance(src, 4),
		}
		if chance(src, 3) {
			m.Steps = []int32{int32(src.IntN(len(in.Traffic.Steps)))}
		}
		in.Traffic.Metrics = append(in.Traffic.Metrics, m)
	}
	if chance(src, 3) {
		in.Traffic.Bake = pick(src, time.Minute, 10*time.Minute)
	}
	measurement := func() xr.Measurement {
		step := int32(src.IntN(len(in.Traffic.Steps)+1)) - 1
		if p := in.Previous; p != nil && p.Step != nil && !chance(src, 4) {
			step = *p.Step
		}
		return xr.Measurement{Time: metav1.Time{Time: at(genSpan(src))}, Step: step, Verdict: pick(src, verdicts...), Value: "0.1"}
	}
	if p := in.Previous; p != nil && chance(src, 2) {
		for _, m := range in.Traffic.Metrics {
			ms := xr.MetricStatus{Name: m.Name}
			for range src.IntN(4) {
				ms.Measurements = append(ms.Measurements, measurement())
			}
			p.Metrics = append(p.Metrics, ms)
		}
		if chance(src, 4) {
			p.BakeStartedAt = genTime(src)
		}
	}
	if chance(src, 2) {
		in.Measured = map[string]xr.Measurement{}
		for _, m := range in.Traffic.Metrics {
			if !chance(src, 3) {
				ms := measurement()
				ms.Time = metav1.Time{Time: in.Now.Truncate(time.Second)}
				in.Measured[m.Name] = ms
			}
		}
	}
	if chance(src, 4) {
		ready := int32(src.IntN(5))
		in.Capacity = func(weight percent.Percent) (bool, string) {
			if weight.CeilReplicas(4) <= ready {
				return true, ""
			}
			return false, "not enough ready replicas"
		}
	}
}
