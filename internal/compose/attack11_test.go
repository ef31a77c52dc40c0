package compose

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestRescuedReleaseAttacks attacks what a rescued abort writes of a
// release: status.release written back as read, and the record the
// pipeline's next step composes the workloads from.
func TestRescuedReleaseAttacks(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 7, 0, 0, time.UTC)
	primary := map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "podinfo", "version": "6.7.0"}}}
	history := func(n int) string {
		entries := make([]string, 0, n)
		entries = append(entries, `{revision: "6.6.0", digest: d6, succeededAt: "2026-12-02T10:06:40Z"}`, `{revision: "6.5.0", digest: d5, succeededAt: "2026-12-02T09:00:00Z"}`)
		for i := len(entries); i < n; i++ {
			entries = append(entries, fmt.Sprintf(`{revision: "6.%d.0", digest: d%d, succeededAt: "2026-12-01T09:00:00Z"}`, 4-i+2, i))
		}
		return "[" + strings.Join(entries, ", ") + "]"
	}
	const releaseFmt = `{stable: {revision: "6.7.0", digest: d7, since: "2026-12-02T10:06:50Z"}, history: %s, retiring: {revision: "6.6.0", at: "2026-12-02T10:07:20Z"}}`
	type want struct {
		replicas map[string]int32
		history  int
	}
	cases := map[string]struct {
		reason  string
		release string
		want    want
	}{
		"SecondRetireeKeepsItsReplicas": {
			reason:  "A rescue retires nothing early: 6.5.0, retired by the promotion before the last one at 10:06:40, keeps its replicas until 10:07:10 as release.retirements keeps them on a composing run (history dates it), not leave the record (its Deployment deleted).",
			release: fmt.Sprintf(releaseFmt, history(2)),
			want:    want{replicas: map[string]int32{"6.5.0": 4, "6.6.0": 4, "6.7.0": 4, "6.7.1": 0}, history: 2},
		},
		"WrittenBackBounded": {
			reason:  "status.release is written back as the XRD admits it (release.Decide bounds it: at most maxHistory entries), not as read: a status that an older XRD admitted, read back, is not a reason for Crossplane to fail applying the rescue.",
			release: fmt.Sprintf(releaseFmt, history(maxHistoryForTest()+1)),
			// Only the history is asked of this case.
			want: want{history: maxHistoryForTest()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			composite := map[string]any{}
			set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, replicas: 4, scaleDownDelay: 30s, workload: {name: "podinfo-{{revision}}"}}`)(t, composite)
			set("spec.canary.revision", `"6.7.1"`)(t, composite)
			set("status.release", tc.release)(t, composite)
			xrp := fieldpath.Pave(composite)
			rs := lenientRelease(xrp)
			if rs == nil {
				t.Fatalf("%s\nlenientRelease(...): status.release not read", tc.reason)
			}
			rec := rescuedRecord(xrp, xr.RolloutStatus{Phase: xr.PhaseAborted, Revision: "6.7.1"}, rs, primary, now)
			got := want{replicas: rec.Replicas, history: len(rs.History)}
			if tc.want.replicas == nil {
				got.replicas = nil
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nrescuedRecord(...), lenientRelease(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// maxHistoryForTest is the XRD's maxItems of status.release.history, as
// xr.ReleaseStatus.Bounded applies it.
func maxHistoryForTest() int {
	h := make([]xr.ReleasedRevision, 64)
	return len(xr.ReleaseStatus{History: h}.Bounded().History)
}
