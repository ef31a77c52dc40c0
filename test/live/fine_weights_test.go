package live

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// fineBatch is how many requests a finer weight is counted over: 0.5% of
// 1,000 is 5.
const fineBatch = 1000

// TestFineWeights rolls out with a first step of 0.5% and counts, through
// the real gateway, who answers: the route's weights are out of 10,000
// (primary 9950, canary 50), the status shows 0.5 as written, and of 1,000
// requests exactly 5 reach the canary (the gateway's weighted round robin
// is exact over a whole number of its periods: one canary request in 200,
// in a batch that no configuration reload of the gateway interrupts).
// Once approved, the rollout Succeeds at 100% and the canary answers every
// request.
func TestFineWeights(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "fine")
	xr := trafficXR(t, ns, freePort(t), `traffic:
  steps: [{weight: 0.5, approval: true}, {weight: 100}]`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	www := probe{host: hostname(ns)}

	await(t, settle, "step 0 at 0.5% awaiting approval, the weights as written", canaryPercent(ns, "web", "Progressing", 0.5, 99.5))
	await(t, settle, "the route out of 10,000: the canary at 50", routeAt(gvkHTTPRoute, ns, "web", "web-canary", 50))
	await(t, settle, "the route out of 10,000: the primary at 9950", routeAt(gvkHTTPRoute, ns, "web", "web-primary", 9950))
	// Polled as every count of the live tests is: the gateway's round robin
	// starts its period again whenever it applies a configuration, which
	// the other tests' routes make it do at any moment, so a batch that
	// spans such a reload is off by a request or two; a batch served
	// without one is exact.
	want := map[string]int{primary: 995, canary: 5}
	await(t, settle, fmt.Sprintf("step 0: %d requests answered %s", fineBatch, describeCounts(want)), www.answeredIn(fineBatch, want))

	patchTraffic(t, ns, "web", `{"approval":{"revision":"v2","step":0}}`)
	await(t, settle, "the rollout Succeeded at 100%", phase(ns, "web", "Succeeded", 100))
	awaitAnswers(t, "succeeded", www, only(canary))
	mustAnswer(t, "succeeded", www, batch, canary)
}

// answeredIn checks that n requests are answered exactly as want, polled
// as answered is.
func (p probe) answeredIn(n int, want map[string]int) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		got := p.answers(ctx, n)
		return cmp.Equal(want, got), fmt.Sprintf("%d requests for %s answered %s", n, p, describeCounts(got))
	}
}

// canaryPercent checks a CanaryRoute's phase and its weights as the status
// writes them, decimals included (0.5, 99.5).
func canaryPercent(ns, name, phase string, canaryWeight, primaryWeight float64) controlplane.Check {
	return func(ctx context.Context) (bool, string) {
		u, why := get(ctx, gvkCanaryRoute, ns, name)
		if u == nil {
			return false, why
		}
		got, _, _ := unstructured.NestedString(u.Object, "status", "rollout", "phase")
		c, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "rollout", "canaryWeight")
		p, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "rollout", "primaryWeight")
		return got == phase && c == canaryWeight && p == primaryWeight,
			fmt.Sprintf("phase %s, canaryWeight %v (%T), primaryWeight %v (%T); %s", got, c, c, p, p, xrState(u))
	}
}
