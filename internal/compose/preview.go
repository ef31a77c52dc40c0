package compose

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// The preview route (spec.traffic.preview): one more route of the route's
// kind, <routeName>-preview, on the same parents, with the preview's
// hostnames, whose every rule that carries the rollout sends every request
// to the canary alone. It is composed while the rollout is active, and
// only then: Crossplane deletes it once a run no longer composes it. It
// gates nothing: the steps wait for the main route alone.

// PreviewKey is the key of the preview route of the spec's kind.
func (r *Resolved) PreviewKey() names.Key {
	return names.EntryPreviewKey(string(r.CR.Spec.Kind), r.CR.Entry)
}

// previewParams are the preview route's Params: the route's rules,
// parents and backends, the preview's name and hostnames, the canary alone
// and none of the rollout's shaping. The weight and activity do not
// change it.
func (p *Plan) previewParams() route.Params {
	params := p.Route
	params.Name = xr.PreviewRouteName(p.Route.Name)
	params.Hostnames = p.CR.Spec.Traffic.PreviewHostnames()
	params.CanaryOnly = true
	params.CanaryWeight, params.Total, params.Active = percent.Max, percent.WholeTotal, false
	params.ABHTTPMatches, params.ABGRPCMatches, params.ABPath = nil, nil, nil
	params.MirrorPercent, params.MirrorHTTPMatches, params.MirrorGRPCMatches, params.MirrorPath = nil, nil, nil, nil
	params.Affinity = nil
	return params
}

// checkPreview builds the preview route of a spec that has one, and says
// what the Gateway API would refuse of it, named after the CanaryRoute's
// fields: a spec whose preview cannot be composed is refused before any
// rollout reaches it.
func (p *Plan) checkPreview() field.ErrorList {
	if p.CR.Spec.Traffic.Preview == nil {
		return nil
	}
	errs := p.preview().errs()
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		if rest, ok := strings.CutPrefix(c.Field, "spec.hostnames"); ok {
			c.Field = "spec.traffic.preview.hostnames" + rest
		}
		c.Detail = "in the preview route: " + c.Detail
		out = append(out, &c)
	}
	return out
}

// PreviewState is what a run knows of the preview route beside the
// engine's decision.
type PreviewState struct {
	// Observed is what the gateway made of the preview route.
	Observed route.Observation
	// CanaryMoving is set while a release's canary Service, as observed,
	// does not select the revision this run composes it to select: it is
	// moving, or not applied yet, and the preview sends it nothing until
	// it is observed selecting it (no request reaches a Service whose
	// selector changes).
	CanaryMoving bool
}

// previewOn reports whether a decision composes the preview route: while
// the rollout is active (Progressing, Paused or Promoting) with the canary
// in the route (at a weight, or at 0% in a step under way), and a
// release's canary Service is where the run composes it. Never in manual
// mode, once the rollout ended (Succeeded, Aborted, Failed), nor while a
// hold keeps the canary at 0% (a canary nobody tested, one the Input
// refuses, a canary Service that moves).
func (p *Plan) previewOn(d rollout.Decision, st PreviewState) bool {
	if p.CR.Spec.Traffic.Preview == nil || st.CanaryMoving {
		return false
	}
	switch d.Status.Phase {
	case xr.PhaseProgressing, xr.PhasePaused, xr.PhasePromoting:
		return !d.CanaryWeight.IsZero() || d.Active
	default:
		return false
	}
}

// previewObject is the preview route composed, with its readiness: the
// route's rule (every parent accepted it, or it exists when the
// CanaryRoute does not wait for its gateway).
func (p *Plan) previewObject(st PreviewState) Object {
	b := p.preview()
	return Object{Key: p.PreviewKey(), Object: b.obj, Ready: RouteReady(p.CR, st.Observed), Wire: b.wire}
}

// heldPreview is the preview route a hold re-emits, under the current
// Input, or false when it goes: it sends every request to the canary, so a
// recorded canary backend that the Input now refuses takes the whole
// preview away (a hold holds the main route's canary at 0% then); a
// refused backend of a rule of its own, or a mirror to a refused backend,
// goes as from the main route, and the preview with it when no rule is
// left.
func (p *Plan) heldPreview(obj runtime.Object, refused refusedRefs) bool {
	if len(refused.zero) > 0 {
		return false
	}
	ns := p.CR.RouteNamespace
	if !route.DropBackends(obj, refused.dropped, ns) {
		return false
	}
	route.DropMirrors(obj, refused.mirrors, ns)
	return true
}
