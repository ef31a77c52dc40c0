package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// requestOf is a request whose observed XR has a UID, a generation and a
// status.rollout of a step at a sequence (nil: no status at all).
func requestOf(t *testing.T, uid string, generation any, rollout map[string]any) *fnv1.RunFunctionRequest {
	t.Helper()
	md := map[string]any{"name": "podinfo", "namespace": "test"}
	if uid != "" {
		md["uid"] = uid
	}
	if generation != nil {
		md["generation"] = generation
	}
	obj := map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute", "metadata": md}
	if rollout != nil {
		obj["status"] = map[string]any{"rollout": rollout}
	}
	s, err := structpb.NewStruct(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}}}
}

// rolloutAt is a status.rollout at a step, with a sequence (0: none).
func rolloutAt(step, sequence float64) map[string]any {
	r := map[string]any{"phase": "Progressing", "revision": "v2", "step": step, "canaryWeight": step * 10}
	if sequence != 0 {
		r["sequence"] = sequence
	}
	return r
}

// answer is a response that desires a route and a status.rollout.
func answer(t *testing.T, rollout map[string]any) *fnv1.RunFunctionResponse {
	t.Helper()
	composite, err := structpb.NewStruct(map[string]any{"status": map[string]any{"rollout": rollout, "route": map[string]any{"name": "podinfo"}}})
	if err != nil {
		t.Fatal(err)
	}
	route, err := structpb.NewStruct(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "spec": map[string]any{"weight": rollout["canaryWeight"]}})
	if err != nil {
		t.Fatal(err)
	}
	return &fnv1.RunFunctionResponse{
		Meta:       &fnv1.ResponseMeta{Ttl: durationpb.New(30e9)},
		Desired:    &fnv1.State{Composite: &fnv1.Resource{Resource: composite}, Resources: map[string]*fnv1.Resource{"route-httproute": {Resource: route}}},
		Conditions: []*fnv1.Condition{{Type: "RolloutHealthy", Status: fnv1.Status_STATUS_CONDITION_TRUE, Reason: "Progressing"}},
	}
}

func TestReadOf(t *testing.T) {
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   freshness.Read
		// ordered: whether the read can be ordered at all.
		ordered bool
	}{
		"Cluster": {
			reason:  "A read from a cluster carries a UID, a generation and the sequence of its status.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, 7)),
			want:    freshness.Read{UID: "u1", Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Generation: 3, Sequence: 7},
			ordered: true,
		},
		"Render": {
			reason: "crossplane render sends no UID: the read is never ordered.",
			req:    requestOf(t, "", float64(3), rolloutAt(1, 7)),
			want:   freshness.Read{Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Generation: 3, Sequence: 7},
		},
		"NoGeneration": {
			reason: "An XR without a generation (a file) is never ordered.",
			req:    requestOf(t, "u1", nil, rolloutAt(1, 7)),
			want:   freshness.Read{UID: "u1", Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Sequence: 7},
		},
		"NegativeSequence": {
			reason:  "A forged negative sequence reads as none.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, -5)),
			want:    freshness.Read{UID: "u1", Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Generation: 3},
			ordered: true,
		},
		"FractionalSequence": {
			reason:  "A sequence with a fraction, written by hand, reads as none.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, 2.5)),
			want:    freshness.Read{UID: "u1", Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Generation: 3},
			ordered: true,
		},
		"HugeSequence": {
			reason:  "A sequence beyond what a JSON number holds exactly reads as the largest one.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, 1e300)),
			want:    freshness.Read{UID: "u1", Identity: "platform.example.org/v1alpha1/CanaryRoute/test/podinfo", Generation: 3, Sequence: xr.MaxSequence},
			ordered: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ReadOf(tc.req)
			got.Status = freshness.Read{}.Status
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReadOf(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.Ordered() != tc.ordered {
				t.Errorf("%s\nOrdered() = %t", tc.reason, got.Ordered())
			}
		})
	}
}

func TestReadOfStatusDigest(t *testing.T) {
	base := ReadOf(requestOf(t, "u1", float64(1), rolloutAt(1, 7))).Status
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		same   bool
	}{
		"OtherSequence": {
			reason: "The sequence is not part of what a status says.",
			req:    requestOf(t, "u1", float64(2), rolloutAt(1, 9)),
			same:   true,
		},
		"NoSequence": {
			reason: "Nor is its absence (an XRD that prunes it).",
			req:    requestOf(t, "u1", float64(2), rolloutAt(1, 0)),
			same:   true,
		},
		"OtherStep": {
			reason: "Any other field is.",
			req:    requestOf(t, "u1", float64(1), rolloutAt(2, 7)),
		},
		"NoStatus": {
			reason: "No status says something else than a status.",
			req:    requestOf(t, "u1", float64(1), nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ReadOf(tc.req).Status == base; got != tc.same {
				t.Errorf("%s\ndigest equal: %t, want %t", tc.reason, got, tc.same)
			}
		})
	}
}

func TestOrder(t *testing.T) {
	// The memory answered generation 3 with the status of step 2 at
	// sequence 8.
	remembered := func() *freshness.Memory[Answer] {
		m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
		read := ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, 7)))
		rsp := answer(t, rolloutAt(2, 0))
		st, ok := StampAnswer(rsp, read)
		if !ok || st.Sequence != 8 {
			t.Fatalf("setup: StampAnswer() = %v, %t; want sequence 8", st, ok)
		}
		remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)
		return m
	}
	cases := map[string]struct {
		reason  string
		req     *fnv1.RunFunctionRequest
		want    freshness.Verdict
		wantSeq int64
	}{
		"SameDecision": {
			reason:  "A read of the decision answered is fresh.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(2, 8)),
			want:    freshness.Fresh,
			wantSeq: 8,
		},
		"OlderStatus": {
			reason:  "A read of the same spec with an older status is stale.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, 7)),
			want:    freshness.StaleStatus,
			wantSeq: 7,
		},
		"OlderSpec": {
			reason:  "A read of an older spec is stale, whatever its status.",
			req:     requestOf(t, "u1", float64(2), rolloutAt(2, 8)),
			want:    freshness.StaleSpec,
			wantSeq: 8,
		},
		"NewerSpecOlderStatus": {
			reason:  "A newer spec over an older status is decided on the remembered status.",
			req:     requestOf(t, "u1", float64(4), rolloutAt(1, 7)),
			want:    freshness.StatusBehind,
			wantSeq: 7,
		},
		"NewerSpecSameStatus": {
			reason:  "A newer spec over the status answered is fresh.",
			req:     requestOf(t, "u1", float64(4), rolloutAt(2, 8)),
			want:    freshness.Fresh,
			wantSeq: 8,
		},
		"SameStatusOlderSequence": {
			reason:  "A status that says what the remembered one says is that decision's: its run counts on from the remembered sequence.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(2, 5)),
			want:    freshness.Fresh,
			wantSeq: 8,
		},
		"PrunedSequence": {
			reason:  "An XRD that prunes the sequence: the status answered reads back without it, and is fresh.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(2, 0)),
			want:    freshness.Fresh,
			wantSeq: 8,
		},
		"PrunedSequenceStale": {
			reason:  "An XRD that prunes the sequence: an older status is still stale.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(1, 0)),
			want:    freshness.StaleStatus,
			wantSeq: 0,
		},
		"ForgedAhead": {
			reason:  "A sequence ahead of the memory was written by another (a replica, a person): status is memory, trusted.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(0, 1e15)),
			want:    freshness.Fresh,
			wantSeq: 1e15,
		},
		"SameSequenceOtherStatus": {
			reason:  "Another writer at the same sequence is trusted too: two replicas never undo each other.",
			req:     requestOf(t, "u1", float64(3), rolloutAt(3, 8)),
			want:    freshness.Fresh,
			wantSeq: 8,
		},
		"OtherUID": {
			reason:  "Another composite is fresh.",
			req:     requestOf(t, "u2", float64(1), rolloutAt(0, 1)),
			want:    freshness.Fresh,
			wantSeq: 1,
		},
		"NoUID": {
			reason:  "A read without a UID is never compared.",
			req:     requestOf(t, "", float64(1), rolloutAt(0, 1)),
			want:    freshness.Fresh,
			wantSeq: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			read, got, _ := remembered().Order(ReadOf(tc.req))
			if got != tc.want || read.Sequence != tc.wantSeq {
				t.Errorf("%s\nOrder(...) = %v at sequence %d, want %v at %d", tc.reason, got, read.Sequence, tc.want, tc.wantSeq)
			}
		})
	}
}

func TestOrderReusedUID(t *testing.T) {
	// Attack: a UID that names another composite (a render with a fixed
	// uid, a restore) never answers with the first one's decision.
	m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	read := ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, 7)))
	rsp := answer(t, rolloutAt(2, 0))
	st, _ := StampAnswer(rsp, read)
	remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)

	other := requestOf(t, "u1", float64(1), rolloutAt(0, 1))
	other.Observed.Composite.Resource.Fields["metadata"].GetStructValue().Fields["name"] = structpb.NewStringValue("another")
	if _, v, d := m.Order(ReadOf(other)); v != freshness.Fresh || d != nil {
		t.Errorf("A UID under another name must be fresh and find no decision: got %v, %v", v, d)
	}
}

// TestOrderSaturatedCounter: once the counter sits at xr.MaxSequence (one
// status written by hand), every decision is stamped MaxSequence, so an
// older status of the same spec carries the same sequence as the newest
// decision and is trusted as another writer's: the memory orders nothing
// for that composite from then on.
func TestOrderSaturatedCounter(t *testing.T) {
	m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	top := float64(xr.MaxSequence)
	// The function answered step 1 over a forged status, then step 2.
	read := ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, top)))
	rsp := answer(t, rolloutAt(2, 0))
	st, ok := StampAnswer(rsp, read)
	if !ok || st.Sequence != xr.MaxSequence {
		t.Fatalf("setup: StampAnswer() = %v, %t", st, ok)
	}
	remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)
	// A cache that lags reads the status of step 1, as Crossplane wrote it.
	if _, got, _ := m.Order(ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, top)))); got != freshness.StaleStatus {
		t.Errorf("Attack: a read of the older status (step 1) at the saturated sequence is %v, want freshness.StaleStatus: it is decided afresh and moves the rollout back from step 2", got)
	}
}

func TestStampAnswer(t *testing.T) {
	cases := map[string]struct {
		reason string
		read   freshness.Read
		answer map[string]any
		want   int64
		ok     bool
	}{
		"Changed": {
			reason: "A decision that changes the status takes the next sequence.",
			read:   ReadOf(requestOf(t, "u1", float64(1), rolloutAt(1, 7))),
			answer: rolloutAt(2, 0),
			want:   8,
			ok:     true,
		},
		"Unchanged": {
			reason: "A run that changes nothing keeps the sequence: the status is byte for byte the same.",
			read:   ReadOf(requestOf(t, "u1", float64(1), rolloutAt(1, 7))),
			answer: rolloutAt(1, 3),
			want:   7,
			ok:     true,
		},
		"First": {
			reason: "The first decision of a status without a sequence is 1.",
			read:   ReadOf(requestOf(t, "u1", float64(1), nil)),
			answer: rolloutAt(0, 0),
			want:   1,
			ok:     true,
		},
		"AtTheTop": {
			reason: "A counter at the largest sequence stays there.",
			read:   ReadOf(requestOf(t, "u1", float64(1), rolloutAt(1, xr.MaxSequence))),
			answer: rolloutAt(2, 0),
			want:   xr.MaxSequence,
			ok:     true,
		},
		"Render": {
			reason: "A read that is never ordered is not stamped: render's output stays as it was.",
			read:   ReadOf(requestOf(t, "", float64(1), rolloutAt(1, 7))),
			answer: rolloutAt(2, 0),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := answer(t, tc.answer)
			st, ok := StampAnswer(rsp, tc.read)
			if ok != tc.ok || st.Sequence != tc.want {
				t.Errorf("%s\nStampAnswer(...) = %d, %t; want %d, %t", tc.reason, st.Sequence, ok, tc.want, tc.ok)
			}
			got := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().GetFields()["rollout"].GetStructValue().GetFields()[freshness.FieldSequence]
			switch {
			case !tc.ok && got != nil && got.GetNumberValue() != tc.answer["sequence"]:
				t.Errorf("%s\nan answer not stamped must keep its status: sequence %v", tc.reason, got)
			case tc.ok && tc.want == 0 && got != nil:
				t.Errorf("%s\nsequence 0 must be omitted, got %v", tc.reason, got)
			case tc.ok && tc.want != 0 && got.GetNumberValue() != float64(tc.want):
				t.Errorf("%s\nthe answer's status.rollout.sequence = %v, want %d", tc.reason, got, tc.want)
			}
		})
	}
	t.Run("Fatal", func(t *testing.T) {
		if _, ok := StampAnswer(&fnv1.RunFunctionResponse{}, ReadOf(requestOf(t, "u1", float64(1), nil))); ok {
			t.Error("An answer without status.rollout (a Fatal) records no decision")
		}
	})
}

func TestAnswer(t *testing.T) {
	// The newest decision, remembered from an answer whose pipeline had an
	// earlier step's resource and context.
	first := requestOf(t, "u1", float64(3), rolloutAt(1, 7))
	first.Desired = &fnv1.State{Resources: map[string]*fnv1.Resource{"earlier": {Resource: &structpb.Struct{}}}}
	rsp := answer(t, rolloutAt(2, 0))
	rsp.Desired.Resources["earlier"] = first.Desired.Resources["earlier"]
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{"existing-route": {ApiVersion: "v1", Kind: "Service"}}}
	record := structpb.NewStringValue("release record")
	rsp.Context = &structpb.Struct{Fields: map[string]*structpb.Value{"mine": record, "other": structpb.NewStringValue("an earlier step's")}}
	m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	read := ReadOf(first)
	st, _ := StampAnswer(rsp, read)
	remember(m, read, st, first, rsp, "mine")

	// A stale read in another reconcile, whose pipeline's earlier step
	// desires something else.
	stale := requestOf(t, "u1", float64(3), rolloutAt(1, 7))
	earlier, _ := structpb.NewStruct(map[string]any{"kind": "Other"})
	stale.Desired = &fnv1.State{Resources: map[string]*fnv1.Resource{"earlier": {Resource: earlier}}}
	stale.Context = &structpb.Struct{Fields: map[string]*structpb.Value{"other": structpb.NewStringValue("this reconcile's")}}
	_, v, d := m.Order(ReadOf(stale))
	if v != freshness.StaleStatus {
		t.Fatalf("setup: Order() = %v", v)
	}
	got := d.Answer.Respond(stale)

	wantStatus, _ := structpb.NewStruct(map[string]any{"status": map[string]any{"rollout": map[string]any{
		"phase": "Progressing", "revision": "v2", "step": float64(2), "canaryWeight": float64(20), "sequence": float64(8),
	}, "route": map[string]any{"name": "podinfo"}}})
	want := &fnv1.RunFunctionResponse{
		Meta: &fnv1.ResponseMeta{Ttl: durationpb.New(30e9)},
		Desired: &fnv1.State{
			Composite: &fnv1.Resource{Resource: wantStatus},
			Resources: map[string]*fnv1.Resource{"route-httproute": rsp.Desired.Resources["route-httproute"], "earlier": {Resource: earlier}},
		},
		Conditions:   rsp.Conditions,
		Requirements: rsp.Requirements,
		Context:      &structpb.Struct{Fields: map[string]*structpb.Value{"other": structpb.NewStringValue("this reconcile's"), "mine": record}},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("A stale read is answered with the newest decision's own resources, status, conditions, requirements and context record, beside what this reconcile's earlier steps desire and no result:\n-want, +got:\n%s", diff)
	}
}

func TestSubstitute(t *testing.T) {
	m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	read := ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, 7)))
	rsp := answer(t, rolloutAt(2, 0))
	SetConditions(rsp, xr.Condition{Type: "RouteAccepted", Status: metav1.ConditionTrue, Reason: "Accepted"}, xr.Condition{Type: "RolloutHealthy", Status: metav1.ConditionTrue, Reason: "Progressing", Message: "step 2"})
	st, _ := StampAnswer(rsp, read)
	remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)

	// A newer spec over an older status, which also has a release.
	req := requestOf(t, "u1", float64(4), rolloutAt(1, 7))
	r, v, d := m.Order(ReadOf(req))
	if v != freshness.StatusBehind {
		t.Fatalf("setup: Order() = %v", v)
	}
	synced := map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-12-02T10:00:00Z"}
	obj := map[string]any{"status": map[string]any{"rollout": rolloutAt(1, 7), "release": map[string]any{"stable": "v1"}, "conditions": []any{
		synced,
		map[string]any{"type": "RouteAccepted", "status": "False", "reason": "Pending", "message": "the route has not been created yet", "lastTransitionTime": "2026-12-02T09:59:00Z"},
		map[string]any{"type": "RolloutHealthy", "status": "True", "reason": "Progressing", "message": "step 1", "lastTransitionTime": "2026-12-02T09:58:00Z"},
	}}}
	d.Answer.Substitute(obj)
	r = d.Restored(r)
	want := map[string]any{"status": map[string]any{
		"rollout": map[string]any{"phase": "Progressing", "revision": "v2", "step": float64(2), "canaryWeight": float64(20), "sequence": float64(8)},
		"route":   map[string]any{"name": "podinfo"},
		"conditions": []any{
			synced,
			map[string]any{"type": "RouteAccepted", "status": "True", "reason": "Accepted"},
			map[string]any{"type": "RolloutHealthy", "status": "True", "reason": "Progressing", "message": "step 2", "lastTransitionTime": "2026-12-02T09:58:00Z"},
		},
	}}
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("Substitute writes the remembered rollout, route, release (none: removed) and the function's conditions (a status unchanged keeps its transition time), and keeps the rest (Crossplane's conditions):\n-want, +got:\n%s", diff)
	}
	if r.Sequence != 8 || r.Generation != 4 {
		t.Errorf("the read decided on is the remembered status's (sequence 8) at the new spec (generation 4): got %d at %d", r.Sequence, r.Generation)
	}
	if !d.Current(r) || d.Answer.All()["route-httproute"] == nil || d.Answer.Object("route-httproute") == nil {
		t.Error("a run on the remembered status holds what it composed")
	}
}

func TestRememberNeverGoesBack(t *testing.T) {
	m := freshness.NewMemory[Answer](freshness.DefaultEntries, freshness.DefaultBytes)
	remember := func(gen, seq float64, step float64) {
		read := ReadOf(requestOf(t, "u1", gen, rolloutAt(step-1, seq)))
		rsp := answer(t, rolloutAt(step, 0))
		st, _ := StampAnswer(rsp, read)
		remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)
	}
	remember(3, 7, 2) // sequence 8
	remember(3, 4, 1) // sequence 5, answered by a run that finished late
	if _, v, _ := m.Order(ReadOf(requestOf(t, "u1", float64(3), rolloutAt(1, 5)))); v != freshness.StaleStatus {
		t.Errorf("A run that finishes after a newer one must not replace its decision: a read at sequence 5 is %v", v)
	}
}

func TestMemoryBounds(t *testing.T) {
	t.Run("Entries", func(t *testing.T) {
		m := freshness.NewMemory[Answer](2, freshness.DefaultBytes)
		for _, uid := range []string{"a", "b", "c"} {
			read := ReadOf(requestOf(t, uid, float64(1), nil))
			rsp := answer(t, rolloutAt(1, 0))
			st, _ := StampAnswer(rsp, read)
			remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)
		}
		if n, _ := m.Len(); n != 2 {
			t.Errorf("a memory of 2 composites holds %d", n)
		}
		if _, _, d := m.Order(ReadOf(requestOf(t, "a", float64(1), rolloutAt(0, 0)))); d != nil {
			t.Error("the least recently used composite must be forgotten first")
		}
	})
	t.Run("TooLargeForgetsTheOlder", func(t *testing.T) {
		// Attack: a decision too large to keep must take the older one
		// away, or a stale read would get the older decision.
		m := freshness.NewMemory[Answer](10, 8<<10)
		read := ReadOf(requestOf(t, "a", float64(1), rolloutAt(0, 1)))
		rsp := answer(t, rolloutAt(1, 0))
		st, _ := StampAnswer(rsp, read)
		remember(m, read, st, &fnv1.RunFunctionRequest{}, rsp)
		big := answer(t, rolloutAt(2, 0))
		big.Desired.Resources["large"] = &fnv1.Resource{Resource: &structpb.Struct{Fields: map[string]*structpb.Value{"data": structpb.NewStringValue(string(make([]byte, 4<<10)))}}}
		next := ReadOf(requestOf(t, "a", float64(1), rolloutAt(1, 2)))
		st, _ = StampAnswer(big, next)
		remember(m, next, st, &fnv1.RunFunctionRequest{}, big)
		if _, v, d := m.Order(ReadOf(requestOf(t, "a", float64(1), rolloutAt(1, 2)))); v != freshness.Fresh || d != nil {
			t.Errorf("after a decision too large to keep, the composite must be forgotten: %v, %v", v, d)
		}
		if n, b := m.Len(); n != 0 || b != 0 {
			t.Errorf("the memory must hold nothing: %d composites, %d bytes", n, b)
		}
	})
	t.Run("Nil", func(t *testing.T) {
		var m *freshness.Memory[Answer]
		read := ReadOf(requestOf(t, "a", float64(1), nil))
		remember(m, read, freshness.Stamp{}, &fnv1.RunFunctionRequest{}, answer(t, rolloutAt(1, 0)))
		if _, v, d := m.Order(read); v != freshness.Fresh || d != nil {
			t.Errorf("a nil memory remembers nothing: %v, %v", v, d)
		}
	})
}

// remember remembers the answer a response gives a request.
func remember(m *freshness.Memory[Answer], r freshness.Read, st freshness.Stamp, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, contextKeys ...string) {
	a := Capture(req, rsp, contextKeys...)
	m.Remember(r, st, a, a.Bytes)
}
