package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// What each command writes: only the spec fields the contract defines for
// it (API.md, "Operator's tools"), decided from the CanaryRoute as it is.
// These functions are pure; apply.go sends what they decide.

const (
	errNoSteps            = "cannot %s: %s has no traffic.steps (%s acts on a progressive rollout)"
	errNotStarted         = "cannot %s: the rollout has not started (status.rollout has no revision and step yet)"
	errStepOutside        = "cannot %s: status.rollout.step %d is outside spec.traffic.steps (%d steps); wait for the function to write the status again"
	errFmtNothingTo       = "nothing to %s: the rollout is %s"
	errPromotedOnce       = "cannot promote: revision %s was promoted already (status.rollout.promoted); a promote acts once per revision"
	errAtLastStep         = "nothing to promote: step %d is the last step"
	errNoRelease          = "cannot roll back: %s has no spec.release; without a release, abort sends every request to the primary"
	errNoEarlier          = "cannot roll back: status.release has no earlier revision to roll back to"
	errBadRevision        = "invalid revision %q: 1 to 63 letters, digits, '.', '_' or '-'"
	errBadReleaseRevision = "invalid revision %q: a release's revision is the value of its revision label: %s"
	errRevisionIsSame     = "spec.canary.revision is %s already"
	errNoApprovalStep     = "nothing to approve: step %d of %s does not wait for an approval (no approval: true, nothing awaited)"
	errNeverReleased      = "cannot roll back to %s: it is neither the stable revision nor in status.release.history; set-revision %s rolls it out through the steps"
)

// revisionPattern is canary.revision's pattern in the XRDs.
var revisionPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)

// A fieldValue is one spec field a command sets: its path under spec and
// its value (JSON types: string, bool, int64, map[string]any).
type fieldValue struct {
	path  []string
	value any
}

// A change is what one command writes, and what it tells the operator.
type change struct {
	// verb says what was done, after the object's name ("approved").
	verb string
	// sets are the spec fields and their values.
	sets []fieldValue
	// notes are said before the change is sent.
	notes []string
	// unchanged, when set, says why nothing needs writing: the command
	// writes nothing and says so.
	unchanged string
}

// paths are the fields the change sets, written as spec.a.b.
func (c change) paths() []string {
	out := make([]string, 0, len(c.sets))
	for _, s := range c.sets {
		out = append(out, "spec."+strings.Join(s.path, "."))
	}
	return out
}

// summary is the change in one line: spec.traffic.approval: {revision: v2, step: 1}.
func (c change) summary() string {
	parts := make([]string, 0, len(c.sets))
	for _, s := range c.sets {
		parts = append(parts, "spec."+strings.Join(s.path, ".")+": "+flow(s.value))
	}
	return strings.Join(parts, ", ")
}

// flow writes a value as YAML's flow style, keys sorted.
func flow(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+": "+flow(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case string:
		if _, err := strconv.ParseFloat(v, 64); err == nil || v == "true" || v == "false" || v == "" {
			return strconv.Quote(v)
		}
		return v
	default:
		return fmt.Sprint(v)
	}
}

// A rollout is what the commands read from a CanaryRoute: its spec (of the
// object the operator edits, the claim for a claimed XR) and its status (of
// the XR, where the function writes it).
type rollout struct {
	name string

	// From spec.
	steps          []step
	canaryRevision string
	approval       *approval
	promote        string
	retry          string
	abort          bool
	paused         bool
	release        bool
	rollbackWindow int64

	// From status.rollout.
	phase            xr.Phase
	revision         string
	step             *int64
	awaitingApproval bool
	promoted         string
	statusRetry      string

	// From status.release.
	stable  string
	history []string
}

// A step is what the commands read of one of traffic.steps.
type step struct {
	approval bool
}

// An approval is traffic.approval.
type approval struct {
	revision string
	step     int64
}

// readRollout reads a rollout from a spec and a status (the objects'
// .spec and .status; either may be nil).
func readRollout(name string, spec, status map[string]any) rollout {
	tr := object(spec, "traffic")
	r := rollout{
		name:           name,
		canaryRevision: str(spec, "canary", "revision"),
		promote:        str(tr, "promote", "revision"),
		retry:          str(tr, "retry"),
		abort:          boolean(tr, "abort"),
		paused:         boolean(tr, "paused"),
		release:        object(spec, "release") != nil,

		phase:            xr.Phase(str(status, "rollout", "phase")),
		revision:         str(status, "rollout", "revision"),
		awaitingApproval: boolean(status, "rollout", "awaitingApproval"),
		promoted:         str(status, "rollout", "promoted"),
		statusRetry:      str(status, "rollout", "retry"),
		stable:           str(status, "release", "stable", "revision"),
	}
	r.rollbackWindow, _ = integer(tr, "rollbackWindow")
	for _, s := range objects(tr, "steps") {
		r.steps = append(r.steps, step{approval: boolean(s, "approval")})
	}
	if a := object(tr, "approval"); a != nil {
		s, _ := integer(a, "step")
		r.approval = &approval{revision: str(a, "revision"), step: s}
	}
	if s, ok := integer(status, "rollout", "step"); ok {
		r.step = &s
	}
	for _, h := range objects(status, "release", "history") {
		r.history = append(r.history, str(h, "revision"))
	}
	return r
}

// progressive says why a command that acts on steps cannot act, or "".
func (r rollout) progressive(verb string) error {
	if len(r.steps) == 0 {
		return fmt.Errorf(errNoSteps, verb, r.name, verb)
	}
	if r.revision == "" || r.step == nil {
		return fmt.Errorf(errNotStarted, verb)
	}
	// A status behind the spec (steps removed before the function ran
	// again) or forged names no step of the spec: nothing to act on until
	// the function writes the status again.
	if *r.step < 0 || *r.step >= int64(len(r.steps)) {
		return fmt.Errorf(errStepOutside, verb, *r.step, len(r.steps))
	}
	return nil
}

// lastStep is the index of the last step.
func (r rollout) lastStep() int64 {
	return int64(len(r.steps) - 1)
}

// approved says whether traffic.approval covers step i of the current
// revision.
func (r rollout) approved(i int64) bool {
	return r.approval != nil && r.approval.revision == r.revision && r.approval.step >= i
}

// approve writes traffic.approval for the current revision and step.
func approve(r rollout) (change, error) {
	if err := r.progressive("approve"); err != nil {
		return change{}, err
	}
	if r.phase != xr.PhaseProgressing && r.phase != xr.PhasePaused {
		return change{}, fmt.Errorf(errFmtNothingTo, "approve", r.phase)
	}
	cur := *r.step
	if r.approved(cur) {
		return change{unchanged: fmt.Sprintf("step %d of %s is approved already (spec.traffic.approval: %s)", cur, r.revision, flow(approvalValue(*r.approval)))}, nil
	}
	c := change{verb: "approved", sets: []fieldValue{{path: trafficPath("approval"), value: approvalValue(approval{revision: r.revision, step: cur})}}}
	if r.canaryRevision != "" && r.canaryRevision != r.revision {
		c.notes = append(c.notes, fmt.Sprintf("the rollout is still on revision %s, while canary.revision is %s: this approves %s's steps only", r.revision, r.canaryRevision, r.revision))
	}
	// An approval covers the steps up to its own: one of a step that waits
	// for none changes nothing, so it is refused like the other commands
	// that would do nothing.
	if int(cur) < len(r.steps) && !r.steps[cur].approval && !r.awaitingApproval {
		return change{}, fmt.Errorf(errNoApprovalStep, cur, r.revision)
	}
	if r.phase == xr.PhasePaused {
		c.notes = append(c.notes, "the rollout is paused: it moves on once resumed (kubectl canaryroute resume)")
	}
	return c, nil
}

// promote writes traffic.promote for the current revision, which moves it
// to its last step; with full, also traffic.approval up to the last step, so
// that no approval step waits for a person on the way.
func promote(r rollout, full bool) (change, error) {
	if err := r.progressive("promote"); err != nil {
		return change{}, err
	}
	if r.phase != xr.PhaseProgressing && r.phase != xr.PhasePaused {
		return change{}, fmt.Errorf(errFmtNothingTo, "promote", r.phase)
	}
	c := change{verb: "promoted"}
	last := r.lastStep()
	if *r.step < last {
		if r.promoted == r.revision {
			return change{}, fmt.Errorf(errPromotedOnce, r.revision)
		}
		c.sets = append(c.sets, fieldValue{path: trafficPath("promote"), value: map[string]any{"revision": r.revision}})
	} else if !full {
		return change{}, fmt.Errorf(errAtLastStep, last)
	}
	if full && !r.approved(last) && slices.ContainsFunc(r.steps[*r.step:], func(s step) bool { return s.approval }) {
		c.sets = append(c.sets, fieldValue{path: trafficPath("approval"), value: approvalValue(approval{revision: r.revision, step: last})})
	}
	if len(c.sets) == 0 {
		return change{unchanged: r.revision + " is at its last step, approved"}, nil
	}
	if !full && slices.ContainsFunc(r.steps[last:], func(s step) bool { return s.approval }) && !r.approved(last) {
		c.notes = append(c.notes, fmt.Sprintf("step %d, the last, waits for its approval (promote --full approves it too)", last))
	}
	if r.phase == xr.PhasePaused {
		c.notes = append(c.notes, "the rollout is paused: the promote acts once it is resumed (kubectl canaryroute resume)")
	}
	return c, nil
}

// abort writes traffic.abort: true.
func abort(r rollout) (change, error) {
	if r.abort {
		return change{unchanged: "spec.traffic.abort is true already"}, nil
	}
	return change{verb: "aborted", sets: []fieldValue{{path: trafficPath("abort"), value: true}}}, nil
}

// retry writes a traffic.retry value the rollout has not seen, which
// restarts a Failed or Aborted revision at step 0; an abort is cleared with
// it, since a retry restarts an aborted rollout only once abort is cleared.
func retry(r rollout) (change, error) {
	if err := r.progressive("retry"); err != nil {
		return change{}, err
	}
	if r.phase != xr.PhaseFailed && r.phase != xr.PhaseAborted {
		return change{}, fmt.Errorf(errFmtNothingTo+" (retry restarts a Failed or Aborted revision)", "retry", r.phase)
	}
	c := change{verb: "retried", sets: []fieldValue{{path: trafficPath("retry"), value: nextRetry(r.retry, r.statusRetry)}}}
	if r.abort {
		c.sets = append(c.sets, fieldValue{path: trafficPath("abort"), value: false})
	}
	if r.paused {
		c.notes = append(c.notes, "the rollout is paused: the retry acts once it is resumed (kubectl canaryroute resume)")
	}
	return c, nil
}

// nextRetry is a counter above every retry value written or recorded, so it
// is new to the function (status.rollout.retry) and to the spec.
func nextRetry(values ...string) string {
	var n int64
	for _, v := range values {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil && i > n {
			n = i
		}
	}
	next := strconv.FormatInt(n+1, 10)
	for slices.Contains(values, next) {
		n++
		next = strconv.FormatInt(n+1, 10)
	}
	return next
}

// pause writes traffic.paused: true.
func pause(r rollout) (change, error) {
	if r.paused {
		return change{unchanged: "spec.traffic.paused is true already"}, nil
	}
	return change{verb: "paused", sets: []fieldValue{{path: trafficPath("paused"), value: true}}}, nil
}

// resume writes traffic.paused: false.
func resume(r rollout) (change, error) {
	if !r.paused {
		return change{unchanged: "the rollout is not paused (spec.traffic.paused is not true)"}, nil
	}
	return change{verb: "resumed", sets: []fieldValue{{path: trafficPath("paused"), value: false}}}, nil
}

// rollback writes canary.revision of a release: to, else the stable
// revision while another one is the canary, else the one stable before it.
func rollback(r rollout, to string) (change, error) {
	if !r.release {
		return change{}, fmt.Errorf(errNoRelease, r.name)
	}
	switch {
	case to != "":
		// A rollback returns to what ran before: a revision never released
		// here is a new rollout, which set-revision says it is.
		if to != r.stable && !slices.Contains(r.history, to) {
			return change{}, fmt.Errorf(errNeverReleased, to, to)
		}
	case r.stable != "" && r.canaryRevision != r.stable:
		to = r.stable
	case len(r.history) > 0:
		to = r.history[0]
	default:
		return change{}, fmt.Errorf("%s", errNoEarlier)
	}
	c, err := setRevision(r, to)
	if err != nil || c.unchanged != "" {
		return c, err
	}
	c.verb = "rolled back to " + to
	return c, nil
}

// setRevision writes canary.revision: with a release, a new revision rolls
// out through the steps, and one of the rollback window goes straight to its
// promotion.
func setRevision(r rollout, rev string) (change, error) {
	if !revisionPattern.MatchString(rev) {
		return change{}, fmt.Errorf(errBadRevision, rev)
	}
	// A release's revision is also the value of its revision label: the
	// function refuses one that is not a label value (a Fatal that holds the
	// release until the spec changes again), so it is refused here first,
	// with the function's reason.
	if r.release {
		if msgs := validation.IsValidLabelValue(rev); len(msgs) > 0 {
			return change{}, fmt.Errorf(errBadReleaseRevision, rev, strings.Join(msgs, "; "))
		}
	}
	if rev == r.canaryRevision {
		return change{unchanged: fmt.Sprintf(errRevisionIsSame, rev)}, nil
	}
	c := change{verb: "set to revision " + rev, sets: []fieldValue{{path: []string{"canary", "revision"}, value: rev}}}
	switch i := slices.Index(r.history, rev); {
	case !r.release:
		// Without a release the function composes no workload and moves no
		// selector: the revision names the rollout, and a new one restarts
		// it at step 0 on the same sides.
		c.notes = append(c.notes, fmt.Sprintf("%s has no spec.release: the rollout of %s restarts at step 0 on the same sides (spec.canary's backend and selector do not change); deploy %s behind them yourself", r.name, rev, rev))
	case rev == r.stable:
		c.notes = append(c.notes, fmt.Sprintf("%s is the stable revision: the canary goes to 0%%, then its Service moves back to %s", rev, rev))
	case i >= 0 && int64(i) < r.rollbackWindow:
		c.notes = append(c.notes, fmt.Sprintf("%s is in the rollback window (%d): it goes straight to its promotion, without steps, if unchanged since", rev, r.rollbackWindow))
	case i >= 0:
		c.notes = append(c.notes, fmt.Sprintf("%s is outside the rollback window (%d): it rolls out through the steps", rev, r.rollbackWindow))
	default:
		c.notes = append(c.notes, rev+" rolls out through the steps")
	}
	if r.paused {
		c.notes = append(c.notes, "the rollout is paused: the new revision waits until it is resumed (kubectl canaryroute resume)")
	}
	return c, nil
}

// trafficPath is the path of a field of spec.traffic.
func trafficPath(field string) []string {
	return []string{"traffic", field}
}

// approvalValue is traffic.approval as JSON.
func approvalValue(a approval) map[string]any {
	return map[string]any{"revision": a.revision, "step": a.step}
}
