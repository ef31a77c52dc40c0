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
//     decision, unchanged;
//   - a read of a newer spec over a status older than the one answered is
//     decided afresh, on the remembered status;
//   - any other read is fresh, and so is every read of a composite the
//     memory does not know (the first after a restart, one evicted, one
//     without a UID or generation, as crossplane render sends).
//
// The package works on the status as JSON values (structpb); package
// pipeline reads them from Crossplane's request and writes the answers.
package freshness

import (
	"math"
	"sync/atomic"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Field names of what orders reads.
const (
	// FieldSequence is status.rollout's counter of decisions.
	FieldSequence = "sequence"
	fieldRollout  = "rollout"
	fieldRelease  = "release"
	// fieldCanaryMove is status.release.canaryMove.
	fieldCanaryMove = "canaryMove"
)

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

// StatusOf is the sequence and the digest of what a status says (its
// status.rollout but its sequence, and its status.release but a move under
// way), as the XR carries it.
func StatusOf(status *structpb.Value) (int64, memo.Key) {
	fields := status.GetStructValue().GetFields()
	rollout := fields[fieldRollout].GetStructValue()
	seq := Counter(rollout.GetFields()[FieldSequence])
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

// Counter reads a whole number (a sequence, a generation), clamped to
// 0..xr.MaxSequence; 0 for anything else (a status written by hand, with a
// fraction or of another type).
func Counter(v *structpb.Value) int64 {
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

// A Decision is the newest decision the function answered a composite:
// how it is ordered, and the answer (of whatever type the caller keeps).
type Decision[A any] struct {
	identity   string
	generation int64
	sequence   int64
	digest     memo.Key
	// Answer is what the function answered.
	Answer A
	bytes  uint64
	// warned is set once the function said that the composite's XRD prunes
	// the sequence: said once for a composite, not on every run.
	warned *atomic.Bool
}

// FirstPruned reports whether a read whose XRD prunes the sequence (see
// Read.Pruned) is the first the function sees of the composite since it
// remembers it: the one run that says so.
func (d *Decision[A]) FirstPruned(r Read) bool {
	return r.Pruned && d != nil && d.warned.CompareAndSwap(false, true)
}

// Current reports whether a run decides on the decision's status: the
// read's status is the decision's, or was replaced by it (see Restored).
// What the decision composed is then what the cluster holds, or will once
// Crossplane's apply lands, while the observed objects may lag.
func (d *Decision[A]) Current(r Read) bool {
	return d != nil && r.Status == d.digest && r.Sequence == d.sequence
}

// Restored is the read as a run sees it once the decision's status
// replaced the read's (a newer spec over an older status, or a status the
// XRD pruned).
func (d *Decision[A]) Restored(r Read) Read {
	r.Sequence, r.Status = d.sequence, d.digest
	return r
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
func (d *Decision[A]) order(r Read) Verdict {
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

// StampStatus writes the sequence of an answer's decision into the
// status.rollout of the status it answers (a JSON object, changed in
// place): the read's sequence when the answer's status says what the
// read's said, the next one when it records a new decision. A status
// without rollout (a Fatal's) records nothing, and a read that cannot be
// ordered is not stamped (see Read.Ordered): ok is false.
func StampStatus(status *structpb.Value, r Read) (Stamp, bool) {
	if !r.Ordered() {
		return Stamp{}, false
	}
	rollout := status.GetStructValue().GetFields()[fieldRollout].GetStructValue()
	if rollout == nil {
		return Stamp{}, false
	}
	_, digest := StatusOf(status)
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

// newerThan reports whether d records a later decision than o: a newer
// spec, or a later sequence of the same one.
func (d *Decision[A]) newerThan(o *Decision[A]) bool {
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
type Memory[A any] struct {
	decisions *memo.Cache[string, *Decision[A]]
}

// NewMemory returns a memory of at most entries composites and about bytes
// bytes of answers.
func NewMemory[A any](entries int, bytes uint64) *Memory[A] {
	return &Memory[A]{decisions: memo.New[string, *Decision[A]](entries, bytes)}
}

// Order orders a read against the decision remembered for its composite,
// which it returns (nil when it remembers none), with the read as the run
// answers it: a read whose status says what the remembered one says is
// that decision's, whatever sequence it carries (an older one whose
// status said the same, or one an XRD pruned), so its run counts on from
// the remembered sequence, never back.
func (m *Memory[A]) Order(r Read) (Read, Verdict, *Decision[A]) {
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

// Remember remembers the decision an answer to a read records (stamped
// st; see StampStatus), of about bytes bytes, unless the memory holds a
// later one for the composite.
func (m *Memory[A]) Remember(r Read, st Stamp, answer A, bytes uint64) {
	if m == nil || !r.Ordered() {
		return
	}
	d := &Decision[A]{identity: r.Identity, generation: r.Generation, sequence: st.Sequence, digest: st.Status, Answer: answer, bytes: bytes, warned: &atomic.Bool{}}
	m.decisions.Put(r.UID, d, d.bytes, func(old *Decision[A]) bool {
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
func (m *Memory[A]) Len() (int, uint64) {
	if m == nil {
		return 0, 0
	}
	return m.decisions.Len()
}
