package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// TestHookCallsRoundTrip: the records a call of a reconcile writes in the
// context are read back by the next call, whatever they hold within the
// XRD's bounds: sixteen hooks, each with a transition and a reason of 256
// characters that JSON escapes to six bytes each ('<' of an HTML error
// page, a control character). A record read back as nothing makes the
// next call repeat every call of the reconcile: a confirmation asked
// twice, an event told twice.
func TestHookCallsRoundTrip(t *testing.T) {
	cases := map[string]string{
		"plain":       "r",
		"html":        "<",
		"control":     "\x01",
		"multi-byte":  "日",
		"quoted html": `"<`,
	}
	for name, unit := range cases {
		t.Run(name, func(t *testing.T) {
			calls := map[string]xr.HookStatus{}
			for i := range xr.MaxHooks {
				n := fmt.Sprintf("h%02d-%s", i, strings.Repeat("x", 28))
				calls[n] = xr.HookStatus{
					Name: n, Transition: strings.Repeat(unit, 256), Time: metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)},
					Result: xr.HookFailed, Status: 500, Reason: strings.Repeat(unit, 256), Failures: 1000000,
				}
				// Within the XRD's bounds, as the run writes them.
				calls[n], _ = calls[n].Admitted()
			}
			rsp := &fnv1.RunFunctionResponse{}
			RecordHookCalls(rsp, calls)
			req := &fnv1.RunFunctionRequest{Context: rsp.GetContext()}
			if diff := cmp.Diff(calls, HookCalls(req)); diff != "" {
				t.Errorf("the records read back: -written +read:\n%.2000s", diff)
			}
		})
	}
}
