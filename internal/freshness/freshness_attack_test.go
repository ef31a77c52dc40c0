package freshness

import (
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestAttackSaturatedCounterOrdersNothing: once the counter sits at
// xr.MaxSequence (one status written by hand), every decision is stamped
// MaxSequence, so an older status of the same spec carries the same
// sequence as the newest decision and is trusted as another writer's: the
// memory orders nothing for that composite from then on.
func TestAttackSaturatedCounterOrdersNothing(t *testing.T) {
	m := NewMemory(DefaultEntries, DefaultBytes)
	top := float64(xr.MaxSequence)
	// The function answered step 1 over a forged status, then step 2.
	read := ReadOf(request(t, "u1", float64(3), rolloutAt(1, top)))
	rsp := answer(t, rolloutAt(2, 0))
	st, ok := StampAnswer(rsp, read)
	if !ok || st.Sequence != xr.MaxSequence {
		t.Fatalf("setup: StampAnswer() = %v, %t", st, ok)
	}
	m.Remember(read, st, &fnv1.RunFunctionRequest{}, rsp)
	// A cache that lags reads the status of step 1, as Crossplane wrote it.
	if _, got, _ := m.Order(ReadOf(request(t, "u1", float64(3), rolloutAt(1, top)))); got != StaleStatus {
		t.Errorf("Attack: a read of the older status (step 1) at the saturated sequence is %v, want StaleStatus: it is decided afresh and moves the rollout back from step 2", got)
	}
}
