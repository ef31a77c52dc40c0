package live

import (
	"testing"
)

// TestPreviewTraffic composes a preview route beside a blue/green rollout
// and counts, through the real gateway, who answers each hostname: while
// step 0 (0%) awaits its approval, the main hostname reaches the primary
// alone and the preview hostname the canary alone; once approved and
// Succeeded at 100%, the main hostname reaches the canary alone, the
// preview route web-preview is deleted, and the gateway no longer routes
// the preview hostname to any backend.
func TestPreviewTraffic(t *testing.T) {
	t.Parallel()
	awaitEstablished(t)
	ns := newNamespace(t, "preview")
	previewHost := "preview." + hostname(ns)
	xr := trafficXR(t, ns, freePort(t), `traffic:
  steps: [{weight: 0, approval: true}, {weight: 100}]
  preview: {hostnames: [`+previewHost+`]}`)
	apply(t, xr)
	serve(t, ns, "web-primary", primary)
	serve(t, ns, "web-canary", canary)
	www := probe{host: hostname(ns)}
	preview := probe{host: previewHost}

	await(t, settle, "step 0 (0%) awaiting approval", xrAt(gvkCanaryRoute, ns, "web", "Progressing", 0, 0))
	await(t, settle, "the preview route web-preview accepted by the real gateway", acceptedByGateway(gvkHTTPRoute, ns, "web-preview", "True", ""))
	awaitAnswers(t, "step 0: the main hostname", www, only(primary))
	awaitAnswers(t, "step 0: the preview hostname", preview, only(canary))
	mustAnswer(t, "step 0: the main hostname, the canary gets no request", www, batch, primary)
	mustAnswer(t, "step 0: the preview hostname, the primary gets no request", preview, batch, canary)

	patchTraffic(t, ns, "web", `{"approval":{"revision":"v2","step":0}}`)
	await(t, settle, "the rollout Succeeded at 100%", phase(ns, "web", "Succeeded", 100))
	awaitAnswers(t, "succeeded: the main hostname", www, only(canary))
	await(t, settle, "the preview route web-preview deleted", gone(gvkHTTPRoute, ns, "web-preview"))
	// No route has the preview hostname any more: Traefik answers 404
	// itself, no backend does.
	awaitAnswers(t, "succeeded: the preview hostname routed nowhere", preview, map[string]int{"404": batch})
	mustAnswer(t, "succeeded: the main hostname", www, batch, canary)
	mustAnswer(t, "succeeded: the preview hostname", preview, batch, "404")
}
