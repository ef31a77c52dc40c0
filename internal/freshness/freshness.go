// Package freshness orders Crossplane's reads of a composite, so that a
// rollout never moves back.
//
// Crossplane composes from informer caches and applies the answer with
// server-side apply, which has no precondition on what it read: under load a
// reconcile reads an XR (its spec, its status) seconds old, and a function
// that answered it from scratch would decide an old step again, and
// Crossplane would write that old decision over the newer one. The function
// keeps, per composite UID, the newest decision it answered (a Memory), and
// orders every read against it by the XR's metadata.generation, the counter
// status.rollout.sequence that the function increments on every decision it
// records, and what the status says:
//
//   - a read of an older spec, or of the same spec with a status older than
//     the one answered, is stale: it is answered with the remembered
//     decision, unchanged (see Decision.Answer);
//   - a read of a newer spec over a status older than the one answered is
//     decided afresh, on the remembered status (see Decision.Substitute);
//   - any other read is fresh, and so is every read of a composite the
//     memory does not know (the first after a restart, one evicted, one
//     without a UID or generation, as crossplane render sends).
package freshness

import (
	"math"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Field names of what orders reads.
const (
	// FieldSequence is status.rollout's counter of decisions.
	FieldSequence = "sequence"
	fieldRollout  = "rollout"
	fieldRelease  = "release"
	fieldRoute    = "route"
	// fieldCanaryMove is status.release.canaryMove.
	fieldCanaryMove = "canaryMove"
	fieldStatus     = "status"
	fieldMetadata   = "metadata"
)

// ownStatus are the status fields the function writes, which a stale read
// is answered with and a newer spec decided on.
var ownStatus = []string{fieldRollout, fieldRoute, fieldRelease}

// A Read is what orders one request's read of its composite.
type Read struct {
	// Restore is set by Memory.Order when the read's status says what the
	// remembered decision's says, but not as it was written: without the
	// fields beside (its sequence, a move under way), which an XRD from
	// before them prunes, or an older status that said the same. The run
	// decides on the remembered status (see Substitute), which keeps them.
	Restore bool
	// Pruned says that the read's status lacks the sequence the decision
	// wrote: its XRD prunes it.
	Pruned bool
	// UID and Identity (apiVersion, kind, namespace and name) name the
	// composite: a UID found under another identity is another
	// composite's.
	UID, Identity string
	// Generation is the XR's metadata.generation.
	Generation int64
	// Sequence is status.rollout.sequence, 0 when there is none, clamped
	// to 0..xr.MaxSequence.
	Sequence int64
	// Status is a digest of what status.rollout (but its sequence) and
	// status.release say.
	Status memo.Key
}

// Ordered reports whether the read can be ordered at all: a composite
// without a UID, or without a generation, as crossplane render sends, is
// never remembered nor compared, so offline output stays a pure function
// of its input.
func (r Read) Ordered() bool { return r.UID != "" && r.Generation > 0 }

// ReadOf reads what orders a request's read of its composite, from the
// request's own encoding of the observed XR (nothing is converted).
func ReadOf(req *fnv1.RunFunctionRequest) Read {
	obj := req.GetObserved().GetComposite().GetResource().GetFields()
	md := obj[fieldMetadata].GetStructValue().GetFields()
	r := Read{
		UID:        md["uid"].GetStringValue(),
		Identity:   obj["apiVersion"].GetStringValue() + "/" + obj["kind"].GetStringValue() + "/" + md["namespace"].GetStringValue() + "/" + md["name"].GetStringValue(),
		Generation: integer(md["generation"]),
	}
	r.Sequence, r.Status = statusOf(obj[fieldStatus])
	return r
}

// statusOf is the sequence and the digest of a status as its XR carries it.
func statusOf(status *structpb.Value) (int64, memo.Key) {
	fields := status.GetStructValue().GetFields()
	rollout := fields[fieldRollout].GetStructValue()
	seq := integer(rollout.GetFields()[FieldSequence])
	// An absent field and a null one read alike; both differ from any
	// object.
	var r, rel memo.Key
	if rollout != nil {
		r = memo.OfProtoObject(rollout.GetFields(), FieldSequence)
	}
	if release := fields[fieldRelease].GetStructValue(); release != nil {
		// A move of the canary Service under way says nothing the
		// rollout's status does not say too (its message), and an XRD from
		// before it existed prunes it: a status read back without it is
		// still the decision's.
		rel = memo.OfProtoObject(release.GetFields(), fieldCanaryMove)
	}
	return seq, memo.Key{r[0]*31 + rel[0], r[1]*31 + rel[1]}
}

// integer reads a whole number, clamped to 0..xr.MaxSequence; 0 for anything
// else (a status written by hand, with a fraction or of another type).
func integer(v *structpb.Value) int64 {
	n, ok := v.GetKind().(*structpb.Value_NumberValue)
	switch {
	case !ok || n.NumberValue < 0 || n.NumberValue != math.Trunc(n.NumberValue):
		// Negative, fractional, NaN: none.
		return 0
	case n.NumberValue >= xr.MaxSequence:
		return xr.MaxSequence
	}
	return int64(n.NumberValue)
}

// A Verdict says how a run answers a read.
type Verdict int

const (
	// Fresh is a read that is the newest the function knows of: decide on
	// it.
	Fresh Verdict = iota
	// StaleSpec is a read whose spec is older than one answered: answer
	// with the remembered decision.
	StaleSpec
	// StaleStatus is a read of the spec answered with an older status:
	// answer with the remembered decision.
	StaleStatus
	// StatusBehind is a read whose spec is newer than the one answered, its
	// status older: decide on the spec and the remembered status.
	StatusBehind
)

// String is the verdict as the function's metrics label it.
func (v Verdict) String() string {
	switch v {
	case StaleSpec:
		return "spec"
	case StaleStatus:
		return "status"
	case StatusBehind:
		return "status_under_newer_spec"
	case Fresh:
	}
	return "fresh"
}

// Answered reports whether a run answers the read with the remembered
// decision, unchanged.
func (v Verdict) Answered() bool { return v == StaleSpec || v == StaleStatus }

// A Decision is the newest answer the function gave a composite: what it
// composed, its status, its conditions, its requirements and its record in
// the pipeline context.
type Decision struct {
	identity   string
	generation int64
	sequence   int64
	digest     memo.Key

	resources    map[string]*fnv1.Resource
	status       map[string]*structpb.Value
	conditions   []*fnv1.Condition
	requirements *fnv1.Requirements
	context      map[string]*structpb.Value
	ttl          *durationpb.Duration
	bytes        uint64
	// warned is set once the function said that the composite's XRD prunes
	// the sequence: said once for a composite, not on every run.
	warned *atomic.Bool
}

// FirstPruned reports whether a read whose XRD prunes the sequence (see
// Read.Pruned) is the first the function sees of the composite since it
// remembers it: the one run that says so.
func (d *Decision) FirstPruned(r Read) bool {
	return r.Pruned && d != nil && d.warned.CompareAndSwap(false, true)
}

// order tells a read of the composite that answered d apart.
//
// A status that says what the remembered one says is fresh whatever its
// sequence (an XRD that prunes the counter still orders reads by it). Else
// the sequence orders them: one at or above the remembered counter was
// written by another (a replica of the function, a process before a
// restart, or a person): status is memory, the function trusts it, and
// decides on. A counter at its largest value orders nothing by itself: a
// read there is fresh only when it says what the decision says.
func (d *Decision) order(r Read) Verdict {
	switch {
	case r.Generation < d.generation:
		return StaleSpec
	case r.Status == d.digest || r.Sequence > d.sequence || (r.Sequence == d.sequence && d.sequence < xr.MaxSequence):
		return Fresh
	case r.Generation == d.generation:
		return StaleStatus
	default:
		return StatusBehind
	}
}

// A Stamp is the order of an answer's decision: its sequence, and the
// digest of its status.
type Stamp struct {
	Sequence int64
	Status   memo.Key
}

// StampAnswer writes the sequence of an answer's decision into the
// status.rollout it desires: the read's sequence when the answer's status
// says what the read's said, the next one when it records a new decision.
// An answer without status.rollout (a Fatal) records nothing, and a read
// that cannot be ordered is not stamped (see Read.Ordered): ok is false.
func StampAnswer(rsp *fnv1.RunFunctionResponse, r Read) (Stamp, bool) {
	if !r.Ordered() {
		return Stamp{}, false
	}
	status := rsp.GetDesired().GetComposite().GetResource().GetFields()[fieldStatus]
	rollout := status.GetStructValue().GetFields()[fieldRollout].GetStructValue()
	if rollout == nil {
		return Stamp{}, false
	}
	_, digest := statusOf(status)
	st := Stamp{Sequence: r.Sequence, Status: digest}
	if digest != r.Status {
		st.Sequence = min(r.Sequence+1, xr.MaxSequence)
	}
	if rollout.Fields == nil {
		rollout.Fields = map[string]*structpb.Value{}
	}
	// Written as the typed status writes it: omitted when 0.
	delete(rollout.Fields, FieldSequence)
	if st.Sequence > 0 {
		rollout.Fields[FieldSequence] = structpb.NewNumberValue(float64(st.Sequence))
	}
	return st, true
}

// Substitute writes the remembered decision's status into an observed XR's
// (a copy of the request's, as the run decodes it), for a run that decides a
// newer spec over an older status: the run then starts from the newest
// status the function answered. It returns the read as the run now sees it.
func (d *Decision) Substitute(obj map[string]any, r Read) Read {
	status, _ := obj[fieldStatus].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj[fieldStatus] = status
	}
	for _, k := range ownStatus {
		if v, ok := d.status[k]; ok {
			status[k] = v.AsInterface()
		} else {
			delete(status, k)
		}
	}
	r.Sequence, r.Status = d.sequence, d.digest
	return r
}

// Answer is the remembered decision as the answer to a request: what the
// request's pipeline desired so far (earlier steps' resources and status),
// and the function's own composed resources, status, conditions, context
// record and requirements as they were answered. No result: a stale read
// says nothing new.
func (d *Decision) Answer(req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	desired := req.GetDesired()
	composite := proto.CloneOf(desired.GetComposite())
	if composite == nil {
		composite = &fnv1.Resource{}
	}
	if composite.Resource == nil {
		composite.Resource = &structpb.Struct{}
	}
	if composite.Resource.Fields == nil {
		composite.Resource.Fields = map[string]*structpb.Value{}
	}
	status := composite.Resource.Fields[fieldStatus].GetStructValue()
	if status == nil {
		status = &structpb.Struct{}
		composite.Resource.Fields[fieldStatus] = structpb.NewStructValue(status)
	}
	if status.Fields == nil {
		status.Fields = map[string]*structpb.Value{}
	}
	for k, v := range d.status {
		status.Fields[k] = v
	}
	rsp := &fnv1.RunFunctionResponse{
		Meta:         &fnv1.ResponseMeta{Tag: req.GetMeta().GetTag(), Ttl: d.ttl},
		Desired:      &fnv1.State{Composite: composite, Resources: make(map[string]*fnv1.Resource, len(desired.GetResources())+len(d.resources))},
		Conditions:   d.conditions,
		Requirements: d.requirements,
		Context:      req.GetContext(),
	}
	for k, v := range desired.GetResources() {
		rsp.Desired.Resources[k] = v
	}
	for k, v := range d.resources {
		rsp.Desired.Resources[k] = v
	}
	if len(d.context) > 0 {
		c := proto.CloneOf(req.GetContext())
		if c == nil {
			c = &structpb.Struct{}
		}
		if c.Fields == nil {
			c.Fields = map[string]*structpb.Value{}
		}
		for k, v := range d.context {
			c.Fields[k] = v
		}
		rsp.Context = c
	}
	return rsp
}

// decisionOf is the decision an answer to a read records, stamped st.
// The function's own composed resources are those the answer desires
// that the request did not (earlier steps' pass through by pointer); its
// own context keys are named.
func decisionOf(r Read, st Stamp, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, contextKeys []string) *Decision {
	d := &Decision{
		identity: r.Identity, generation: r.Generation, sequence: st.Sequence, digest: st.Status,
		resources: map[string]*fnv1.Resource{}, status: map[string]*structpb.Value{},
		conditions: rsp.GetConditions(), requirements: rsp.GetRequirements(), ttl: rsp.GetMeta().GetTtl(),
	}
	// What a decision holds is counted as memo.Bytes estimates it: in
	// memory, not encoded (proto.Size allocates for every map entry, a
	// tenth of a 16-rule run). A route that runs share (compose.Wire) is
	// counted in full, though the cache of routes holds it too.
	passed := req.GetDesired().GetResources()
	for k, v := range rsp.GetDesired().GetResources() {
		if passed[k] != v {
			d.resources[k] = v
			d.bytes += 128 + uint64(len(k)) + memo.Bytes(v.GetResource())
		}
	}
	status := rsp.GetDesired().GetComposite().GetResource().GetFields()[fieldStatus].GetStructValue().GetFields()
	for _, k := range ownStatus {
		if v, ok := status[k]; ok {
			d.status[k] = v
			d.bytes += 64 + memo.Bytes(v.GetStructValue())
		}
	}
	for _, k := range contextKeys {
		if v, ok := rsp.GetContext().GetFields()[k]; ok {
			if d.context == nil {
				d.context = map[string]*structpb.Value{}
			}
			d.context[k] = v
			d.bytes += 64 + memo.Bytes(v.GetStructValue())
		}
	}
	// Conditions and requirements: a few hundred bytes each.
	d.bytes += 512 + 512*uint64(len(d.conditions)+len(d.requirements.GetResources())+len(d.requirements.GetSchemas()))
	return d
}

// newerThan reports whether d records a later decision than o: a newer
// spec, or a later sequence of the same one.
func (d *Decision) newerThan(o *Decision) bool {
	return d.generation > o.generation || (d.generation == o.generation && d.sequence > o.sequence)
}

// Bounds of a Memory, the CLI's defaults.
const (
	// DefaultEntries is how many composites a Memory remembers.
	DefaultEntries = 10000
	// DefaultBytes bounds what it remembers, as memo.Bytes estimates it:
	// 12 to 40 KiB a CanaryRoute on the heap, counted a little above.
	DefaultBytes = 64 << 20
)

// A Memory remembers, per composite UID, the newest decision the function
// answered, within a number of composites and of bytes; the least
// recently used composite is forgotten first (its next read is fresh, as
// after a restart). A nil *Memory remembers nothing: every read is fresh.
// It is safe for concurrent use.
type Memory struct {
	decisions *memo.Cache[string, *Decision]
}

// NewMemory returns a memory of at most entries composites and about bytes
// bytes of answers.
func NewMemory(entries int, bytes uint64) *Memory {
	return &Memory{decisions: memo.New[string, *Decision](entries, bytes)}
}

// Order orders a read against the decision remembered for its composite,
// which it returns (nil when it remembers none), with the read as the run
// answers it: a read whose status says what the remembered one says is
// that decision's, whatever sequence it carries (an older one whose
// status said the same, or one an XRD pruned), so its run counts on from
// the remembered sequence, never back.
func (m *Memory) Order(r Read) (Read, Verdict, *Decision) {
	if m == nil || !r.Ordered() {
		return r, Fresh, nil
	}
	d, ok := m.decisions.Get(r.UID)
	if !ok || d.identity != r.Identity {
		return r, Fresh, nil
	}
	v := d.order(r)
	if v == Fresh && r.Status == d.digest && r.Sequence != d.sequence {
		r.Restore, r.Pruned = true, r.Sequence == 0
		r.Sequence = max(r.Sequence, d.sequence)
	}
	return r, v, d
}

// Requirements are the requirements the decision's answer made: the
// objects it composes among them.
func (d *Decision) Requirements() *fnv1.Requirements { return d.requirements }

// Composed is what the decision composed, when a run decides on its status
// (the read's status is the decision's, or was replaced by it: see
// Substitute); nil otherwise. It is what the cluster holds, or will once
// Crossplane's apply lands, while the observed objects may lag: a hold
// re-emits it, and a Service keeps selecting what it was composed to.
func (d *Decision) Composed(r Read) *Composition {
	if d == nil || r.Status != d.digest || r.Sequence != d.sequence {
		return nil
	}
	return &Composition{resources: d.resources}
}

// A Composition is the objects a decision composed, by composed resource
// name, converted when asked for (a hold being rare); the maps returned
// are the caller's.
type Composition struct {
	resources map[string]*fnv1.Resource
}

// Object is the object composed under a name; nil for none.
func (c *Composition) Object(name string) map[string]any {
	r, ok := c.resources[name]
	if !ok {
		return nil
	}
	return r.GetResource().AsMap()
}

// All are every object composed, by name.
func (c *Composition) All() map[string]map[string]any {
	out := make(map[string]map[string]any, len(c.resources))
	for k, v := range c.resources {
		out[k] = v.GetResource().AsMap()
	}
	return out
}

// Remember remembers the decision that an answer to a read records (see
// StampAnswer), unless the memory holds a later one for the composite;
// contextKeys are the pipeline context keys the function writes.
func (m *Memory) Remember(r Read, st Stamp, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, contextKeys ...string) {
	if m == nil || !r.Ordered() {
		return
	}
	d := decisionOf(r, st, req, rsp, contextKeys)
	d.warned = &atomic.Bool{}
	m.decisions.Put(r.UID, d, d.bytes, func(old *Decision) bool {
		if old.identity != d.identity || !old.newerThan(d) {
			if old.identity == d.identity {
				d.warned = old.warned
			}
			return true
		}
		return false
	})
}

// Len is how many composites the memory remembers, and the bytes it counts
// for them.
func (m *Memory) Len() (int, uint64) {
	if m == nil {
		return 0, 0
	}
	return m.decisions.Len()
}
