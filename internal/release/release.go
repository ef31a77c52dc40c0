// Package release is the release loop: on top of the rollout engine, it
// decides which revision of a release is stable, promotes a revision that
// completed its steps (the primary Service moves to it while the canary
// carries every request, then the route moves back to the primary), rolls
// back to an earlier revision without steps, and says how many replicas
// each revision needs, for the pipeline step that runs the pods.
//
// Like the engine it is a pure function of the spec, the status the last
// run wrote, what was observed and the clock; status.release is its memory.
package release

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Reasons of the release's phases and events.
const (
	// ReasonReleased: the first revision of a release is stable at once.
	ReasonReleased = "Released"
	// ReasonPromotionStarted: a revision completed its steps (or is rolled
	// back to): the route sends every request to it while the primary
	// Service moves to it.
	ReasonPromotionStarted = "PromotionStarted"
	// ReasonPromoted: the primary serves the new stable revision.
	ReasonPromoted = "Promoted"
	// ReasonRolledBack: the primary serves an earlier stable revision
	// again, which skipped the steps.
	ReasonRolledBack = "RolledBack"
)

// EventReasons are the release's transitions, as the metrics count them.
var EventReasons = []string{ReasonReleased, ReasonPromotionStarted, ReasonPromoted, ReasonRolledBack}

// PromotionSettle is how long a promotion waits, once the route is found
// sending every request to the canary (and accepted, unless the CanaryRoute
// does not wait for its gateway), before it moves the primary Service. A
// gateway reports a route Accepted when it is valid, not when its data
// plane serves it: Traefik writes the status, then applies configurations
// at most every half second, and Envoy's xDS is eventually consistent too.
// Requests sent to the primary while its selector changes would reach the
// new revision's pods before they are stable, or none. Ten seconds covers
// the gateways here with a wide margin; a promotion is not in a hurry.
const PromotionSettle = 10 * time.Second

// Input is what the release loop decides from.
type Input struct {
	// Rollout is the engine's input: the spec's traffic, the canary's
	// revision and digest, status.rollout as the last run left it, the
	// observed route, gates, analysis, measurements and the clock.
	Rollout rollout.Input
	Release *xr.Release
	// Status is status.release as the last run left it; nil for none.
	Status *xr.ReleaseStatus
	// ObservedPrimary is the revision that the observed primary Service
	// selects; "" when none is observed. It is the cluster's evidence of
	// which revision is stable: status can be written by hand.
	ObservedPrimary string
	// ObservedCanary is the revision that the observed canary Service
	// selects; "" when none is observed. A canary Service that does not
	// select the canary's revision yet is moving: it gets no request.
	ObservedCanary string
	// Ready is the ready replicas of a revision's workload, and whether it
	// was found; nil when the release names no workload.
	Ready func(revision string) (int32, bool)
	// ComposedPrimary and ComposedCanary are the revisions the Services
	// were composed to select by the newest decision the function
	// answered; "" when none is known (after a restart). Crossplane
	// applies them on every reconcile, so they are what the Services
	// select, or will, while the observed ones may lag: the stable
	// revision is read from the primary's, and a move of the canary starts
	// from the canary's.
	ComposedPrimary, ComposedCanary string
	// RouteWithoutCanary reports whether the observed route sends the
	// canary nothing (and, if not, why); nil when the route is not
	// observed. The canary Service moves to another revision only then.
	RouteWithoutCanary func() (bool, string)
}

// A Decision is the release's verdict on a run.
type Decision struct {
	// Rollout is the engine's decision as the release makes it: a promotion
	// and a stable release decide the weights themselves.
	Rollout rollout.Decision
	// Status is the new status.release.
	Status xr.ReleaseStatus
	// PrimaryRevision is the revision the primary Service selects.
	PrimaryRevision string
	// CanaryRevision is the revision the canary Service selects when it is
	// not the canary's: while a promotion is left, the canary Service keeps
	// the promoted revision, which carries every request until the primary
	// Service is back at the stable one. "" is the canary's revision.
	CanaryRevision string
	// Record is what the pipeline's next step reads: the replicas of each
	// revision.
	Record Record
	// draining is set when CanaryRevision is the revision the canary
	// Service keeps selecting while the route takes it to 0%: it needs
	// the replicas of the weight it had, not every replica.
	draining bool
}

// Record is the pipeline context record of a release: the stable and the
// canary revisions, the rollout's phase, step and weight, and how many
// replicas each revision's workload runs.
type Record struct {
	Stable       string           `json:"stable"`
	Canary       string           `json:"canary"`
	Phase        xr.Phase         `json:"phase"`
	Step         *int32           `json:"step,omitempty"`
	CanaryWeight percent.Percent  `json:"canaryWeight"`
	Replicas     map[string]int32 `json:"replicas"`
}

// Decide runs the release loop for one pipeline run.
func Decide(in Input) Decision {
	in.Rollout.Now = in.Rollout.Now.Truncate(time.Second)
	ri := in.Rollout
	st := status(in)
	prev := ri.Previous
	revision, digest := ri.Revision, ri.CanaryDigest
	var d Decision
	switch {
	case st.Stable == nil:
		d = released(in, st)
	case prev != nil && prev.Phase == xr.PhasePromoting && prev.Revision == revision && prev.CanaryDigest == digest:
		d = promoting(in, st)
	case prev != nil && prev.Phase == xr.PhasePromoting && movedPrimary(in, st):
		// A new revision, or a changed canary, leaves a promotion whose
		// primary Service moved already: it moves back first.
		d = unwinding(in, st, fmt.Sprintf("revision %s waits", revision))
	case revision == st.Stable.Revision && digest == st.Stable.Digest:
		d = stable(in, st)
	case rollbackOf(in, st):
		d = startPromotion(in, st, true)
	default:
		d = rollingOut(in, st)
	}
	d = canaryServiceMove(in, d)
	d.Status = d.Status.Bounded()
	d.Rollout.Status = d.Rollout.Status.Bounded()
	d.Record = record(in, d)
	// Called again when a retired revision's replicas are due to go.
	for _, at := range Retirements(d.Status, in.Release.ScaleDownDelay) {
		if wait := at.Sub(in.Rollout.Now); wait > 0 && wait < d.Rollout.Requeue {
			d.Rollout.Requeue = max(wait, rollout.MinRequeue)
		}
	}
	return d
}

// canaryServiceMove keeps the canary Service on the revision it is observed
// selecting until the route sends it nothing, whatever moves it (a new
// revision in the middle of a step, a return to the stable revision, a
// rollback, a new revision during a promotion or its unwinding): the
// route first takes the canary to 0% and drops its canary-only rules; once
// the observed route carries that, accepted, the move is due
// PromotionSettle later (the gateway's data plane follows its route a
// moment after accepting it), and the Service moves then, if the route
// still sends it nothing. status.release.canaryMove records the move under
// way. A hold (paused) moves nothing and re-emits the Service as it was.
func canaryServiceMove(in Input, d Decision) Decision {
	to := d.CanaryRevision
	if to == "" {
		to = in.Rollout.Revision
	}
	from, now := in.ObservedCanary, in.Rollout.Now
	if in.ComposedCanary != "" && from != "" {
		from = in.ComposedCanary
	}
	pending := d.Status.CanaryMove
	d.Status.CanaryMove = nil
	if from == "" || from == to || d.Rollout.HoldPrevious {
		return d
	}
	drained, why := false, "the route has not been observed yet"
	if in.RouteWithoutCanary != nil {
		drained, why = in.RouteWithoutCanary()
	}
	if !d.Rollout.CanaryWeight.IsZero() {
		drained, why = false, "the route is taken to 0% for the canary first"
	}
	msg := fmt.Sprintf("the canary Service keeps selecting revision %s until the route sends it nothing (%s); then it moves to revision %s", from, why, to)
	requeue := rollout.MinRequeue
	if drained {
		at := now.Add(PromotionSettle)
		if pending != nil && pending.From == from && pending.To == to && !pending.At.After(at) {
			at = pending.At.Time
		}
		if !now.Before(at) {
			// The route has sent it nothing long enough: it moves on this
			// run, and the next run soon after finds it moved (the new
			// revision's step waits for that), whatever the decision's own
			// wait. A message that named the move's time is the move's.
			// A step under way at 0% (the decision is active: its A/B
			// rules, its mirror) gets its canary-only rules from the next
			// run on: the route of the run that moves the Service sends
			// it nothing. (Counting such a decision as not drained would
			// hold it at 0% for ever: it is active on every run.)
			d.Rollout.Requeue = rollout.MinRequeue
			d.Rollout.Active = false
			if pending != nil && d.Rollout.Status.Phase == xr.PhaseSucceeded {
				d.Rollout.Status.Message = fmt.Sprintf("revision %s is stable: the primary serves every request; the canary Service moved from revision %s to %s", d.Status.Stable.Revision, from, to)
			}
			return d
		}
		d.Status.CanaryMove = &xr.CanaryMove{From: from, To: to, At: metav1.Time{Time: at}}
		msg = fmt.Sprintf("the route sends the canary nothing: its Service moves from revision %s to %s at %s, once the gateway serves the route", from, to, at.UTC().Format(time.RFC3339))
		requeue = max(at.Sub(now), rollout.MinRequeue)
	}
	d.CanaryRevision, d.draining = from, true
	d.Rollout.CanaryWeight, d.Rollout.Active = percent.Zero, false
	d.Rollout.Status = withWeights(d.Rollout.Status, percent.Zero)
	d.Rollout.Status.Message = msg
	d.Rollout.Requeue = min(d.Rollout.Requeue, requeue)
	if d.Rollout.Requeue <= 0 {
		d.Rollout.Requeue = requeue
	}
	return d
}

// Retirements are the revisions that a promotion retired and keep their
// replicas until a time: the one status.release.retiring names, and the
// one the promotion before it retired, which history dates (the revision
// after it became stable at its succeededAt). A second promotion within
// scaleDownDelay of the first so never cuts the first one's delay short.
func Retirements(st xr.ReleaseStatus, scaleDownDelay time.Duration) map[string]time.Time {
	out := map[string]time.Time{}
	if h := st.History; len(h) >= 2 {
		out[h[1].Revision] = h[0].SucceededAt.Add(scaleDownDelay)
	}
	if rt := st.Retiring; rt != nil {
		out[rt.Revision] = rt.At.Time
	}
	return out
}

// status is status.release as this run trusts it: the stable revision is
// the one the primary Service selects (as the function composed it last,
// else as observed), whatever status says, when one is observed and no
// promotion is under way (which moves it).
func status(in Input) xr.ReleaseStatus {
	var st xr.ReleaseStatus
	if in.Status != nil {
		st = *in.Status
	}
	prev := in.Rollout.Previous
	selected := in.ObservedPrimary
	if in.ComposedPrimary != "" && selected != "" {
		// An observation older than the function's own composition (a
		// cache that lags) is no evidence against it.
		selected = in.ComposedPrimary
	}
	if selected == "" || (prev != nil && prev.Phase == xr.PhasePromoting) {
		return st
	}
	if st.Stable == nil || st.Stable.Revision != selected {
		// The record does not match the cluster: the primary serves what
		// it selects, and a digest nobody can vouch for rolls nothing
		// back. Status is memory, not proof: anyone who may write it may
		// name any revision, and moving the primary Service on its word
		// would move every request the primary gets. (The Service is the
		// evidence: protect it as the CanaryRoute itself.)
		since := metav1.Time{Time: in.Rollout.Now}
		if st.Stable != nil {
			since = st.Stable.Since
		}
		st.Stable = &xr.StableRevision{Revision: selected, Since: since}
	}
	return st
}

// movedPrimary reports whether the primary Service selects the revision a
// promotion moved it to, not the stable revision: as observed, or as the
// newest decision composed it (an observation may lag a move already
// applied; until both say it is back, it may still select the promoted
// revision).
func movedPrimary(in Input, st xr.ReleaseStatus) bool {
	prev := in.Rollout.Previous
	return primarySelects(in, prev.Revision) && prev.Revision != st.Stable.Revision
}

// primarySelects reports whether the primary Service selects a revision,
// as observed or as the newest decision composed it.
func primarySelects(in Input, revision string) bool {
	return revision != "" && (in.ObservedPrimary == revision || in.ComposedPrimary == revision)
}

// unwinding leaves a promotion whose primary Service moved to the promoted
// revision: the primary Service moves back to the stable revision while
// the route keeps every request on the canary Service, which keeps
// selecting the promoted revision; no request reaches a Service whose
// selector changes. The next run, with the primary observed back, goes on
// with what left the promotion (an abort, a failure, a new revision).
func unwinding(in Input, st xr.ReleaseStatus, what string) Decision {
	prev := *in.Rollout.Previous
	s := withWeights(prev, percent.Max)
	s.NextStepAt, s.AwaitingApproval = nil, false
	s.Message = fmt.Sprintf("leaving the promotion of revision %s (%s): every request stays on the canary, which selects it, while the primary Service moves back to the stable revision %s",
		prev.Revision, what, st.Stable.Revision)
	return Decision{
		Rollout:         rollout.Decision{CanaryWeight: percent.Max, Active: true, Status: s, Requeue: rollout.MinRequeue, Healthy: true},
		Status:          st,
		PrimaryRevision: st.Stable.Revision,
		CanaryRevision:  prev.Revision,
	}
}

// released is the first run of a release: its revision is stable at once,
// with nothing to compare it to.
func released(in Input, st xr.ReleaseStatus) Decision {
	ri := in.Rollout
	st.Stable = &xr.StableRevision{Revision: ri.Revision, Digest: ri.CanaryDigest, Since: metav1.Time{Time: ri.Now}}
	d := settled(in, st, fmt.Sprintf("revision %s is stable: the first release needs no rollout", ri.Revision))
	d.Rollout.Status.Reason = ReasonReleased
	d.Rollout.Events = []rollout.Event{{Reason: ReasonReleased, Message: fmt.Sprintf("revision %s released: the first revision is stable at once", ri.Revision)}}
	return d
}

// stable is a release whose canary is its stable revision: nothing to roll
// out, the primary serves every request.
func stable(in Input, st xr.ReleaseStatus) Decision {
	d := settled(in, st, fmt.Sprintf("revision %s is stable: the primary serves every request", st.Stable.Revision))
	switch prev := in.Rollout.Previous; {
	case prev != nil && prev.Revision != "" && prev.Revision != st.Stable.Revision:
		// canary.revision set back to the stable revision while another
		// one rolled out: a rollback, said as one (reason, message, event)
		// on the run that makes it so; the runs after keep it.
		msg := fmt.Sprintf("rolled back to revision %s: the primary serves every request; revision %s gets none", st.Stable.Revision, prev.Revision)
		d.Rollout.Status.Reason, d.Rollout.Status.Message = ReasonRolledBack, msg
		d.Rollout.Events = []rollout.Event{{Reason: ReasonRolledBack, Message: msg}}
	case prev != nil:
		// Said once, on the run that made it so: a stable release's status
		// does not change from one run to the next.
		d.Rollout.Status.Reason = prev.Reason
		if prev.Phase == xr.PhaseSucceeded && prev.Revision == st.Stable.Revision {
			d.Rollout.Status.Message = prev.Message
		}
	}
	if in.Rollout.Traffic.Abort {
		d.Rollout.Status.Phase, d.Rollout.Status.Reason = xr.PhaseAborted, rollout.ReasonAborted
		d.Rollout.Status.Message = "aborted: all traffic goes to the primary, which serves the stable revision " + st.Stable.Revision
		d.Rollout.Healthy, d.Rollout.Reason = false, rollout.ReasonAborted
	}
	return d
}

// settled is a release that sends every request to its stable revision.
func settled(in Input, st xr.ReleaseStatus, msg string) Decision {
	ri := in.Rollout
	last := int32(len(ri.Traffic.Steps) - 1) //nolint:gosec // At most 32 steps.
	s := xr.RolloutStatus{
		Phase: xr.PhaseSucceeded, Reason: ReasonPromoted, Revision: st.Stable.Revision, Step: ptr.To(last),
		CanaryDigest: st.Stable.Digest, CanaryWeight: percent.Zero, PrimaryWeight: percent.Max, Message: msg,
	}
	if p := ri.Previous; p != nil {
		s.StepStartedAt, s.Retry, s.Promoted, s.Attempt = p.StepStartedAt, p.Retry, p.Promoted, p.Attempt
		if p.Revision == s.Revision {
			// What judged the stable revision stays on record, the same
			// from one run to the next.
			s.Metrics, s.Analysis, s.BakeStartedAt = p.Metrics, p.Analysis, p.BakeStartedAt
		}
	}
	if s.StepStartedAt == nil {
		s.StepStartedAt = &metav1.Time{Time: ri.Now}
	}
	return Decision{
		Rollout:         rollout.Decision{CanaryWeight: percent.Zero, Status: s, Requeue: rollout.MaxRequeue, Healthy: true},
		Status:          st,
		PrimaryRevision: st.Stable.Revision,
	}
}

// rollbackOf reports whether the canary's revision is one of the last
// rollbackWindow stable revisions, unchanged since (its digest), which
// rolls back without steps: on the run that sets it, not once a rollout of
// it is under way, failed or aborted.
func rollbackOf(in Input, st xr.ReleaseStatus) bool {
	ri := in.Rollout
	window := int(ri.Traffic.RollbackWindow)
	if window == 0 || (ri.Previous != nil && ri.Previous.Revision == ri.Revision) {
		return false
	}
	return slices.ContainsFunc(st.History[:min(window, len(st.History))], func(h xr.ReleasedRevision) bool {
		return h.Revision == ri.Revision && h.Digest == ri.CanaryDigest && h.Digest != ""
	})
}

// rollingOut is a revision rolling out through its steps, the canary
// scaled ahead of its traffic; once it completed them (and its bake), its
// promotion starts.
func rollingOut(in Input, st xr.ReleaseStatus) Decision {
	ri := in.Rollout
	if p := ri.Previous; p != nil && settledStatus(p) {
		// A release that settled on a revision finished its rollout: this
		// one starts at step 0, whatever the status says of its revision
		// (a stable revision the cluster does not bear out rolls out).
		fresh := *p
		fresh.Revision = ""
		ri.Previous = &fresh
	}
	ri.Capacity = func(weight percent.Percent) (bool, string) {
		if !weight.IsZero() && in.ObservedCanary != ri.Revision {
			// The canary Service moves to the revision on this run, or was
			// not applied yet: it gets requests once it selects it.
			return false, fmt.Sprintf("the canary Service does not select revision %s yet", ri.Revision)
		}
		return carries(in, ri.Revision, need(in.Release.Replicas, weight))
	}
	rd := rollout.Decide(ri)
	d := Decision{Rollout: rd, Status: st, PrimaryRevision: st.Stable.Revision}
	if rd.Status.Phase != xr.PhaseSucceeded {
		return d
	}
	// The revision completed its steps: its promotion starts on this run,
	// said instead of the rollout's success, which the promotion's end
	// says.
	in.Rollout.Previous = &rd.Status
	p := startPromotion(in, st, false)
	p.Rollout.Events = append(slices.DeleteFunc(slices.Clone(rd.Events), func(e rollout.Event) bool { return e.Reason == rollout.ReasonSucceeded }), p.Rollout.Events...)
	return p
}

// settledStatus reports whether status.rollout is one of a settled
// release: every request to the primary, after a release, promotion or
// rollback.
func settledStatus(s *xr.RolloutStatus) bool {
	return s.Phase == xr.PhaseSucceeded && s.CanaryWeight.IsZero() &&
		(s.Reason == ReasonReleased || s.Reason == ReasonPromoted || s.Reason == ReasonRolledBack)
}

// startPromotion starts promoting the canary's revision: the route sends
// it every request, once it can carry them, and then the primary Service
// moves to it. A rollback starts here, without steps.
func startPromotion(in Input, st xr.ReleaseStatus, rollback bool) Decision {
	ri := in.Rollout
	what := "completed its steps"
	if rollback {
		what = "is rolled back to, without steps"
	}
	s := xr.RolloutStatus{
		Phase: xr.PhasePromoting, Reason: ReasonPromotionStarted, Revision: ri.Revision, CanaryDigest: ri.CanaryDigest,
		Step: ptr.To(int32(len(ri.Traffic.Steps) - 1)), StepStartedAt: &metav1.Time{Time: ri.Now}, //nolint:gosec // At most 32 steps.
	}
	if p := ri.Previous; p != nil {
		s.Retry, s.Attempt, s.Promoted, s.Metrics, s.Analysis, s.BakeStartedAt = p.Retry, p.Attempt, p.Promoted, p.Metrics, p.Analysis, p.BakeStartedAt
		if p.Revision == ri.Revision && !rollback {
			s.CanaryWeight = p.CanaryWeight
		}
	}
	s = withWeights(s, s.CanaryWeight)
	ri.Previous = &s
	in.Rollout = ri
	d := promoting(in, st)
	d.Rollout.Events = append([]rollout.Event{{
		Reason:  ReasonPromotionStarted,
		Message: fmt.Sprintf("revision %s %s: its promotion started; the stable revision %s keeps its replicas until it ends", ri.Revision, what, st.Stable.Revision),
	}}, d.Rollout.Events...)
	return d
}

// promoting moves the release to the canary's revision, in an order that
// never routes a request to a Service whose selector is changing: first
// every request to the canary (once it can carry them), then the primary
// Service to the new revision, then, once the primary is observed
// selecting it (and its workload can carry every request), the route
// back to the primary, and the revision is stable.
func promoting(in Input, st xr.ReleaseStatus) Decision {
	ri := in.Rollout
	s := *ri.Previous
	// While promoting, nextStepAt is when the primary Service moves (see
	// PromotionSettle); it is set from the run that finds the route
	// carrying every request to the canary.
	movesAt := s.NextStepAt
	s.NextStepAt, s.AwaitingApproval = nil, false
	revision, replicas := ri.Revision, in.Release.Replicas
	d := Decision{Status: st, PrimaryRevision: st.Stable.Revision}
	s = promotionClock(ri, s)
	deadline := !ri.Traffic.Paused && ri.Traffic.ProgressDeadline > 0 && s.StepStartedAt != nil && !ri.Now.Before(s.StepStartedAt.Add(ri.Traffic.ProgressDeadline))
	switch {
	case (ri.Traffic.Abort || deadline) && movedPrimary(in, st):
		// The primary Service moves back first, the canary carrying every
		// request meanwhile.
		what := "aborted"
		if !ri.Traffic.Abort {
			what = "held past its progressDeadline"
		}
		return unwinding(in, st, what)
	case ri.Traffic.Abort:
		// The stable revision takes every request back.
		rd := rollout.Decision{
			Status: withWeights(s, percent.Zero), Requeue: rollout.MaxRequeue, Healthy: false, Reason: rollout.ReasonAborted,
			Events: []rollout.Event{{Reason: rollout.EventAborted, Warning: true, Message: fmt.Sprintf("promotion of revision %s aborted: all traffic goes back to the stable revision %s", revision, st.Stable.Revision)}},
		}
		rd.Status.Phase, rd.Status.Reason = xr.PhaseAborted, rollout.ReasonAborted
		rd.Status.Message = "aborted during the promotion: all traffic goes to the primary, which serves the stable revision " + st.Stable.Revision
		d.Rollout = rd
		return d
	case deadline:
		// A promotion that cannot end (a primary Service never observed at
		// the new revision, a workload never ready) fails like a held step.
		msg := fmt.Sprintf("the promotion of revision %s was held past its progressDeadline (%s): all traffic goes back to the stable revision %s; it was %s",
			revision, ri.Traffic.ProgressDeadline, st.Stable.Revision, s.Message)
		rd := rollout.Decision{
			Status: withWeights(s, percent.Zero), Requeue: rollout.MaxRequeue, Healthy: false, Reason: rollout.ReasonProgressDeadlineExceeded,
			Events: []rollout.Event{{Reason: rollout.EventFailed, Warning: true, Message: msg}},
		}
		rd.Status.Phase, rd.Status.Reason, rd.Status.Message = xr.PhaseFailed, rollout.ReasonProgressDeadlineExceeded, msg
		d.Rollout = rd
		return d
	case ri.Traffic.Paused:
		// Nothing moves: the weight and the primary stay as they were.
		if s.CanaryWeight.Equal(percent.Max) && primarySelects(in, revision) {
			d.PrimaryRevision = revision
		}
		s.Reason = rollout.ReasonPaused
		s.Message = fmt.Sprintf("paused while promoting revision %s at %s%%", revision, s.CanaryWeight)
		d.Rollout = rollout.Decision{CanaryWeight: s.CanaryWeight, Status: s, Requeue: rollout.MaxRequeue, Healthy: true}
		return d
	}

	// The canary carries every request first.
	if s.CanaryWeight.Less(percent.Max) {
		return toCanary(in, s, d)
	}
	// The route carries it, accepted: the primary Service moves.
	if ok, why := routeAtFull(ri); !ok {
		if primarySelects(in, revision) {
			// The primary moved already: it stays, as it would without
			// evidence of what the gateway sends it either way.
			d.PrimaryRevision = revision
		}
		s.Message = fmt.Sprintf("promoting revision %s: waiting for the route to send every request to the canary: %s", revision, why)
		d.Rollout = rollout.Decision{CanaryWeight: percent.Max, Status: s, Requeue: rollout.HoldRequeue, Healthy: true}
		return d
	}
	if in.ObservedPrimary != revision {
		return movePrimary(in, s, movesAt, d)
	}
	d.PrimaryRevision = revision
	if ok, why := carries(in, revision, replicas); !ok {
		s.Reason = rollout.ReasonAwaitingCapacity
		s.Message = fmt.Sprintf("promoting revision %s: the primary selects it, waiting for it to carry every request: %s", revision, why)
		d.Rollout = rollout.Decision{CanaryWeight: percent.Max, Status: s, Requeue: rollout.HoldRequeue, Healthy: true}
		return d
	}
	return promoted(in, st)
}

// promotionClock restarts a promotion's clock (stepStartedAt, which its
// progressDeadline counts from) where it must: on resuming, since paused
// time never counts toward the deadline, and at a time to come (a status
// written by hand, a replica's clock ahead), which counts as now, as in
// the engine: a deadline is never put off.
func promotionClock(ri rollout.Input, s xr.RolloutStatus) xr.RolloutStatus {
	if !ri.Traffic.Paused && s.Reason == rollout.ReasonPaused {
		s.StepStartedAt, s.Reason = &metav1.Time{Time: ri.Now}, ReasonPromotionStarted
	}
	if s.StepStartedAt != nil && s.StepStartedAt.After(ri.Now) {
		s.StepStartedAt = &metav1.Time{Time: ri.Now}
	}
	return s
}

// toCanary is a promotion's first move: every request to the canary, once
// its Service selects the revision and its workload can carry them.
func toCanary(in Input, s xr.RolloutStatus, d Decision) Decision {
	revision := in.Rollout.Revision
	if in.ObservedCanary != revision {
		// A rollback moves the canary Service to the earlier revision on
		// this run: it gets requests once it is observed selecting it,
		// never while its selector changes.
		s.Reason = rollout.ReasonAwaitingCapacity
		s.Message = fmt.Sprintf("promoting revision %s: the canary Service does not select it yet", revision)
		d.Rollout = rollout.Decision{CanaryWeight: s.CanaryWeight, Active: !s.CanaryWeight.IsZero(), Status: s, Requeue: rollout.MinRequeue, Healthy: true}
		return d
	}
	if ok, why := carries(in, revision, in.Release.Replicas); !ok {
		s.Reason = rollout.ReasonAwaitingCapacity
		s.Message = fmt.Sprintf("promoting revision %s: the canary cannot carry every request yet: %s", revision, why)
		d.Rollout = rollout.Decision{CanaryWeight: s.CanaryWeight, Active: !s.CanaryWeight.IsZero(), Status: s, Requeue: rollout.HoldRequeue, Healthy: true}
		return d
	}
	s = withWeights(s, percent.Max)
	s.Reason = ReasonPromotionStarted
	s.Message = fmt.Sprintf("promoting revision %s: every request goes to the canary while the primary Service moves to it", revision)
	d.Rollout = rollout.Decision{CanaryWeight: percent.Max, Status: s, Requeue: rollout.MinRequeue, Healthy: true}
	return d
}

// movePrimary moves the primary Service to the promoted revision once the
// route has carried every request to the canary for PromotionSettle: a
// gateway says a route is accepted before its data plane serves it, and no
// request may still be on its way to the primary when its selector
// changes. movesAt is the time an earlier run set; a time further than
// PromotionSettle away (a status written by hand) is brought back to it.
func movePrimary(in Input, s xr.RolloutStatus, movesAt *metav1.Time, d Decision) Decision {
	ri := in.Rollout
	if latest := ri.Now.Add(PromotionSettle); movesAt == nil || movesAt.After(latest) {
		movesAt = &metav1.Time{Time: latest}
	}
	s.NextStepAt = movesAt
	if wait := movesAt.Sub(ri.Now); wait > 0 {
		s.Message = fmt.Sprintf("promoting revision %s: the route sends every request to the canary; the primary Service moves to it at %s, once the gateway serves the route",
			ri.Revision, movesAt.UTC().Format(time.RFC3339))
		d.Rollout = rollout.Decision{CanaryWeight: percent.Max, Status: s, Requeue: max(wait, rollout.MinRequeue), Healthy: true}
		return d
	}
	d.PrimaryRevision = ri.Revision
	s.Message = fmt.Sprintf("promoting revision %s: the primary Service moves to it", ri.Revision)
	d.Rollout = rollout.Decision{CanaryWeight: percent.Max, Status: s, Requeue: rollout.MinRequeue, Healthy: true}
	return d
}

// promoted ends a promotion: the revision is stable, the one before it
// goes to history and retires after scaleDownDelay, and the route sends
// every request to the primary.
func promoted(in Input, st xr.ReleaseStatus) Decision {
	ri := in.Rollout
	old := *st.Stable
	rollback := slices.ContainsFunc(st.History, func(h xr.ReleasedRevision) bool { return h.Revision == ri.Revision })
	st.History = slices.DeleteFunc(slices.Clone(st.History), func(h xr.ReleasedRevision) bool {
		return h.Revision == ri.Revision || h.Revision == old.Revision
	})
	st.History = append([]xr.ReleasedRevision{{Revision: old.Revision, Digest: old.Digest, SucceededAt: old.Since}}, st.History...)
	st.Stable = &xr.StableRevision{Revision: ri.Revision, Digest: ri.CanaryDigest, Since: metav1.Time{Time: ri.Now}}
	retires := ""
	if old.Revision != ri.Revision {
		st.Retiring = &xr.RetiringRevision{Revision: old.Revision, At: metav1.Time{Time: ri.Now.Add(in.Release.ScaleDownDelay)}}
		retires = fmt.Sprintf("; revision %s retires at %s", old.Revision, st.Retiring.At.UTC().Format(time.RFC3339))
	}
	reason, msg := ReasonPromoted, fmt.Sprintf("revision %s promoted: the primary serves every request%s", ri.Revision, retires)
	if rollback {
		reason, msg = ReasonRolledBack, fmt.Sprintf("rolled back to revision %s: the primary serves every request%s", ri.Revision, retires)
	}
	d := settled(in, st, msg)
	d.Rollout.Status.Reason = reason
	d.Rollout.Status.Metrics, d.Rollout.Status.Analysis, d.Rollout.Status.BakeStartedAt = ri.Previous.Metrics, ri.Previous.Analysis, ri.Previous.BakeStartedAt
	d.Rollout.Events = []rollout.Event{{Reason: reason, Message: msg}}
	return d
}

// routeAtFull reports whether the observed route sends every request to
// the canary, accepted by its parents (unless the CanaryRoute does not wait
// for the gateway).
func routeAtFull(ri rollout.Input) (bool, string) {
	if !ri.Traffic.RequireAcceptedRoute {
		return true, ""
	}
	last := int32(len(ri.Traffic.Steps) - 1) //nolint:gosec // At most 32 steps.
	switch {
	case ri.RouteAtStep != nil:
		return ri.RouteAtStep(last, percent.Max)
	case ri.RouteAtWeight != nil:
		return ri.RouteAtWeight(percent.Max)
	default:
		return false, "the route has not been observed yet"
	}
}

// need is how many replicas carry a weight: the release's replicas, in
// proportion, rounded up (0.1% of 10 replicas needs 1).
func need(replicas int32, weight percent.Percent) int32 {
	return weight.CeilReplicas(replicas)
}

// carries reports whether a revision's workload has the ready replicas it
// needs; true without a workload to read.
func carries(in Input, revision string, n int32) (bool, string) {
	if in.Ready == nil || n == 0 {
		return true, ""
	}
	ready, found := in.Ready(revision)
	switch {
	case !found:
		return false, fmt.Sprintf("%s %s not found", in.Release.Workload.Kind, in.Release.Workload.NameOf(revision))
	case ready < n:
		return false, fmt.Sprintf("%s %s has %d ready replicas of the %d needed", in.Release.Workload.Kind, in.Release.Workload.NameOf(revision), ready, n)
	}
	return true, ""
}

func withWeights(s xr.RolloutStatus, canary percent.Percent) xr.RolloutStatus {
	s.CanaryWeight, s.PrimaryWeight = canary, canary.Rest()
	return s
}

// record is the pipeline context record of a decision. The canary is
// scaled ahead of its traffic: to the larger of its weight and the next
// step's, at least one replica while it rolls out, all of them from its
// last step on and through its promotion; the stable revision keeps its
// replicas until the promotion ends; a retired one keeps them until its
// scaleDownDelay passed. A failed or aborted canary gets none once the
// observed route sends it none. And whatever the decision, a revision of
// the release that an observed Service selects keeps what its Service may
// still be sent until no Service selects it: a Service whose selector is
// moving serves the old revision until the new selector is applied.
func record(in Input, d Decision) Record {
	ri, s := in.Rollout, d.Rollout.Status
	replicas := in.Release.Replicas
	r := Record{
		Stable: d.Status.Stable.Revision, Canary: ri.Revision, Phase: s.Phase, Step: s.Step,
		CanaryWeight: d.Rollout.CanaryWeight, Replicas: map[string]int32{},
	}
	for revision, at := range Retirements(d.Status, in.Release.ScaleDownDelay) {
		switch {
		case revision == r.Stable || revision == r.Canary:
		case ri.Now.Before(at):
			r.Replicas[revision] = replicas
		case d.Status.Retiring != nil && revision == d.Status.Retiring.Revision:
			// The last one retired stays on record at 0; the one before
			// leaves the record.
			r.Replicas[revision] = 0
		}
	}
	r.Replicas[r.Stable] = replicas
	if r.Canary != r.Stable {
		r.Replicas[r.Canary] = canaryReplicas(in, d)
	}
	// The revisions that Services select, as observed and as composed.
	prevWeight := percent.Zero
	if p := ri.Previous; p != nil {
		prevWeight = p.CanaryWeight
	}
	type selected struct {
		revision string
		replicas int32
	}
	held := replicas
	if d.draining {
		// The route takes it to 0%: it keeps what its weight needed.
		held = max(need(replicas, prevWeight), 1)
	}
	served := []selected{
		{in.ObservedPrimary, replicas},
		{d.PrimaryRevision, replicas},
		{d.CanaryRevision, held},
	}
	if in.ObservedCanary != r.Canary {
		// The canary Service moves away from a revision, which keeps
		// what it had until the move is applied. (The canary's own
		// Service, selecting it, is sized above.)
		served = append(served, selected{in.ObservedCanary, max(need(replicas, percent.Greater(prevWeight, d.Rollout.CanaryWeight)), 1)})
	}
	known := append(d.Status.Revisions(), r.Canary)
	if p := ri.Previous; p != nil {
		known = append(known, p.Revision)
	}
	for _, sel := range served {
		if sel.revision != "" && slices.Contains(known, sel.revision) {
			r.Replicas[sel.revision] = max(r.Replicas[sel.revision], sel.replicas)
		}
	}
	return r
}

// canaryReplicas are the replicas of the canary's revision.
func canaryReplicas(in Input, d Decision) int32 {
	ri, s := in.Rollout, d.Rollout.Status
	replicas := in.Release.Replicas
	switch s.Phase {
	case xr.PhaseFailed, xr.PhaseAborted:
		// Once the route sends it nothing: as observed, and as the run
		// before composed it (an observation may lag the weight that run
		// composed, which the gateway still sends).
		if ri.Previous == nil {
			return 0
		}
		if ok, _ := observedAt(ri, s.Step, percent.Zero); ok && ri.Previous.CanaryWeight.IsZero() {
			return 0
		}
		// The route sends it requests until the new route is applied.
		return max(need(replicas, ri.Previous.CanaryWeight), 1)
	case xr.PhasePromoting:
		return replicas
	case xr.PhaseStable, xr.PhaseProgressing, xr.PhasePaused, xr.PhaseSucceeded:
		// Sized for its weight, below.
	}
	if p := ri.Traffic.Promote; p != nil && p.Revision == ri.Revision && s.Promoted != ri.Revision {
		// promote waits until the canary can carry the last step.
		return replicas
	}
	w := d.Rollout.CanaryWeight
	steps := ri.Traffic.Steps
	if s.Step != nil && int(*s.Step) < len(steps) {
		i := *s.Step
		w = percent.Greater(w, steps[i].Weight)
		if int(i)+1 < len(steps) {
			w = percent.Greater(w, steps[i+1].Weight)
		}
		if int(i) == len(steps)-1 {
			w = percent.Max
		}
	}
	return max(need(replicas, w), 1)
}

// observedAt reports whether the observed route sends the canary weight.
func observedAt(ri rollout.Input, step *int32, weight percent.Percent) (bool, string) {
	switch {
	case ri.RouteAtStep != nil && step != nil:
		return ri.RouteAtStep(*step, weight)
	case ri.RouteAtWeight != nil:
		return ri.RouteAtWeight(weight)
	default:
		return false, "the route has not been observed yet"
	}
}
