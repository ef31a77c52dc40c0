package run

import (
	"context"
	"maps"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// maxAskRounds bounds the rounds of calls a run makes for the hooks the
// engine asks about: a confirm-rollout's 2xx lets it ask the pre-rollout
// hooks; a step's rollout hook's 2xx lets it ask the
// confirm-traffic-increase hooks of the next. Each round's calls are made
// at once; the next run asks what is left.
const maxAskRounds = 3

// hookRun carries the hooks' records through one run: the records known
// (the status's, the earlier calls' of the reconcile, this run's), the
// status's own, and the calls this run made.
type hookRun struct {
	ctx     context.Context
	in      In
	records map[string]xr.HookStatus
	// status are the status's records: what the calls of this reconcile
	// are said against (callEvents).
	status map[string]xr.HookStatus
	// called are the hooks this run called: never twice in a run.
	called map[string]bool
	// outOfTime stops the rounds once a round ran close to the deadline.
	outOfTime bool
	// decided is the input of the last decision, its records included.
	decided rollout.Input
}

// newHookRun starts a run's records from the status and the earlier calls
// of the reconcile, the newer record of a hook winning.
func newHookRun(ctx context.Context, in In, status *xr.RolloutStatus) *hookRun {
	h := &hookRun{ctx: ctx, in: in}
	h.records = xr.HookRecords(status)
	h.status = maps.Clone(h.records)
	for name, rec := range in.HookCalls {
		if h.records == nil {
			h.records = map[string]xr.HookStatus{}
		}
		if old, ok := h.records[name]; !ok || !rec.Time.Before(&old.Time) {
			h.records[name] = rec
		}
	}
	return h
}

// decide decides, calls the hooks the decision asks about and decides
// again with their answers, up to maxAskRounds rounds. Before any call,
// composable checks that the run can compose what the decision says: a
// run that ends in a Fatal calls nothing. A preview (no Caller) calls
// nothing: the decision says which hooks it waits for.
func (h *hookRun) decide(ri rollout.Input, composable func(rollout.Decision) error, decide func(rollout.Input) rollout.Decision) (rollout.Decision, error) {
	ri.Hooks = h.records
	d := decide(ri)
	if d.Restarted && len(ri.Traffic.Hooks) > 0 {
		// The rollout starts over: the status's records are the rollout
		// before's; the calls of this reconcile (made for this start)
		// stay.
		h.records = maps.Clone(h.in.HookCalls)
		ri.Hooks = h.records
		d = decide(ri)
	}
	h.decided = ri
	if len(ri.Traffic.Hooks) == 0 || h.in.Caller == nil || len(d.Asks) == 0 {
		return d, nil
	}
	if err := composable(d); err != nil {
		return d, err
	}
	for range maxAskRounds {
		if !h.call(ri, d, d.Asks) {
			break
		}
		ri.Hooks = h.records
		d = decide(ri)
		h.decided = ri
	}
	return d, nil
}

// Told tells the event and post-rollout hooks what the decision did, and
// keeps their records and events in the answer. The caller calls it once
// it knows Crossplane applies the answer (its requirements settled, no
// Fatal): a call of a reconcile that Crossplane calls again, or whose next
// call is a Fatal, applies nothing, and a transition told then would be
// told again on every reconcile that decides it, though it never happens.
func (o Out) Told() Out {
	h := o.hooks
	if h == nil || len(h.decided.Traffic.Hooks) == 0 || h.in.Caller == nil {
		return o
	}
	h.call(h.decided, o.Decision, rollout.Tells(h.decided, o.Decision))
	o.Rollout.Hooks = rollout.HookStatuses(o.hookSpec, h.records)
	o.Decision.Status.Hooks = o.Rollout.Hooks
	o.Events = append(o.Events, h.callEvents()...)
	o.HookCalls = h.carried()
	return o
}

// call makes the calls of hooks not called yet on this run, at once, and
// records their answers; it reports whether it made any.
func (h *hookRun) call(ri rollout.Input, d rollout.Decision, want []rollout.HookCall) bool {
	var calls []rollout.HookCall
	for _, c := range want {
		// An event hook is called once per event of the decision.
		if !h.called[c.Hook.Name] || c.Event != nil && len(calls) > 0 && calls[len(calls)-1].Hook.Name == c.Hook.Name {
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 || h.ctx.Err() != nil || h.outOfTime {
		return false
	}
	defer func() {
		// A round that ran into the reserve atonce keeps for the rest of
		// the run leaves the next round to the next run.
		if deadline, ok := h.ctx.Deadline(); ok && time.Until(deadline) <= atonce.MaxReserve {
			h.outOfTime = true
		}
	}()
	answers := h.answers(ri, d, calls)
	if h.records == nil {
		h.records = map[string]xr.HookStatus{}
	}
	if h.called == nil {
		h.called = map[string]bool{}
	}
	for i, c := range calls {
		old := h.records[c.Hook.Name]
		rec := rollout.Record(old, c, answers[i], h.in.Now)
		// An event hook told several events keeps its worst answer.
		if h.called[c.Hook.Name] && old.Transition == rec.Transition && old.Result == xr.HookFailed {
			rec = old
		}
		h.records[c.Hook.Name] = rec
		h.called[c.Hook.Name] = true
	}
	return true
}

// answers makes the calls at once and gives their answers, in order: a
// webhook whose address cannot be read (its credentials) is called not at
// all, and answers why.
func (h *hookRun) answers(ri rollout.Input, d rollout.Decision, calls []rollout.HookCall) []rollout.HookAnswer {
	out := make([]rollout.HookAnswer, len(calls))
	resolved := make([]hooks.Call, 0, len(calls))
	// at are the indexes in calls of the calls resolved.
	at := make([]int, 0, len(calls))
	for i, c := range calls {
		w, err := h.in.Plan.Policy.Webhooks[c.Hook.Webhook].Resolve(h.in.Credentials)
		if err != nil {
			out[i] = rollout.HookAnswer{Reason: "webhook " + fielderr.Quote(c.Hook.Webhook) + ": " + err.Error()}
			h.observe(c, out[i], 0)
			continue
		}
		resolved = append(resolved, hooks.Call{Webhook: w, Payload: h.payload(ri, d, c)})
		at = append(at, i)
	}
	for k, r := range hooks.CallAll(h.ctx, h.in.Caller, resolved) {
		i := at[k]
		out[i] = rollout.HookAnswer{OK: r.OK, Status: r.Status, Reason: r.Reason}
		h.observe(calls[i], out[i], r.Took)
	}
	return out
}

// observe counts a call in the function's metrics.
func (h *hookRun) observe(c rollout.HookCall, a rollout.HookAnswer, took time.Duration) {
	if h.in.ObserveHook != nil {
		h.in.ObserveHook(string(c.Hook.Type), outcome(a), took)
	}
}

// payload is what a call says: Flagger's payload of the route, with the
// rollout as the decision leaves it (an event hook: the event's reason and
// message).
func (h *hookRun) payload(ri rollout.Input, d rollout.Decision, c rollout.HookCall) hooks.Payload {
	cr := h.in.Plan.CR
	s := d.Status
	p := hooks.Payload{
		Name: cr.RouteName, Namespace: cr.RouteNamespace, Phase: string(s.Phase), Type: c.Hook.Type,
		Metadata: c.Hook.Metadata, Revision: ri.Revision, CanaryWeight: s.CanaryWeight,
		Reason: s.Reason, Message: s.Message, Timestamp: h.in.Now.UTC().Truncate(time.Second),
	}
	if s.Step != nil {
		p.Step = *s.Step
	}
	if c.Event != nil {
		p.Reason, p.Message = c.Event.Reason, c.Event.Message
	}
	return p
}

// carried are the records to hand to the next call of the reconcile: the
// calls of this reconcile, this run's included.
func (h *hookRun) carried() map[string]xr.HookStatus {
	if len(h.called) == 0 {
		return h.in.HookCalls
	}
	out := maps.Clone(h.in.HookCalls)
	if out == nil {
		out = map[string]xr.HookStatus{}
	}
	for name := range h.called {
		out[name] = h.records[name]
	}
	return out
}

// callEvents are the events of the calls of this reconcile (this run's and
// the earlier calls'), each said against the status's record: Crossplane
// applies only the last call of a reconcile, and drops the events of the
// calls before, which make most calls; said against the status, every call
// of the reconcile says the same, the last one included.
func (h *hookRun) callEvents() []rollout.Event {
	var out []rollout.Event
	for _, hk := range h.decided.Traffic.Hooks {
		_, earlier := h.in.HookCalls[hk.Name]
		rec, ok := h.records[hk.Name]
		if !ok || !h.called[hk.Name] && !earlier {
			continue
		}
		if ev, ok := rollout.HookEvent(h.status[hk.Name], rec, hk.Type); ok {
			out = append(out, ev)
		}
	}
	return out
}

// outcome is how the function's metrics count an answer.
func outcome(a rollout.HookAnswer) string {
	switch {
	case a.OK:
		return telemetry.HookSucceeded
	case a.Status != 0:
		return telemetry.HookRefused
	default:
		return telemetry.HookError
	}
}
