package main

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	// reasonAbortNotApplied: the abort was asked for, but the canary could
	// not be told apart from the primary, so nothing was changed.
	reasonAbortNotApplied = "AbortNotApplied"

	msgCannotTellApartFmt = "spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names %s. Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand"

	whyNamesPrimary = "%s, which carries the primary's traffic"
	whyNotBeside    = "%s, which no rule of the route holds beside the primary's backend"
	whyNoRules      = "%s, but spec.rules is no list, so the route's weighted rules cannot be told from rules of their own"

	msgRescuedAbort = "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"
	msgRescueFmt    = "spec.traffic.abort is set: the canary is held at 0%% in the last composed route, although the CanaryRoute cannot be composed: %s"
)

// rescueAbort answers a run that cannot compose the CanaryRoute (bad spec,
// bad Input, a malformed status, a policy refusal) while the user asks for an
// emergency abort: an abort must never be blocked by an unrelated mistake.
// It composes what the previous run composed, unchanged but for the route,
// where every canary backend goes to weight 0 and every canary-only rule (A/B,
// session) and mirror to the canary is removed. The canary backends are the
// ones the last good run recorded in status.rollout.canaryBackends, never a
// guess by name. Every object is decoded into its type, changed there, and
// converted once.
//
// It reports false, and answers nothing, when it cannot do that: no abort
// asked for, no canary backends recorded, or no route composed yet (then
// nothing sends traffic to the canary, and a Fatal keeps it so).
func rescueAbort(req *fnv1.RunFunctionRequest, oxr *resource.Composite, cause error) (*fnv1.RunFunctionResponse, bool) {
	if abort, _ := oxr.Resource.GetBool("spec.traffic.abort"); !abort {
		return nil, false
	}
	prev := lenientRollout(oxr.Resource.GetValueInto)
	if len(prev.CanaryBackends) == 0 {
		return nil, false
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		return nil, false
	}
	decoded, routeNamespace, ok := decodeOurs(observed)
	if !ok {
		return nil, false
	}

	// Only canary backends that are not the primary's are zeroed, and only
	// where the primary can be found beside them: the record is status,
	// which is not proof.
	canary, why := trustedCanary(oxr, decoded, prev.CanaryBackends, routeNamespace)
	if why != "" {
		return cannotTellApart(req, oxr, cause, why), true
	}
	objects, ok := zeroCanary(decoded, observed, canary, routeNamespace)
	if !ok {
		return nil, false
	}

	status := prev
	status.CanaryBackends = canary
	status.Phase, status.Reason, status.NextStepAt = xr.PhaseAborted, rollout.ReasonAbortRescued, nil
	status.CanaryWeight, status.PrimaryWeight = 0, 100
	status.Message = msgRescuedAbort
	rsp := newResponse(req, rollout.MaxRequeue)
	// The requirements of the call before: Crossplane applies a response
	// once its requirements stop changing, and a rescue with none after a
	// call that made some would send it back for a call that composes
	// again, and so on until it gives up the reconcile.
	rsp.Requirements = ownRequirements(previousRequirements(req))
	if setDesired(rsp, objects) != nil || setStatus(rsp, req, status, nil) != nil {
		return nil, false
	}
	// Said once, on the run that rescues the abort: the runs after it
	// change nothing, and a Warning on each would spend the XR's event
	// budget.
	if prev.Phase != xr.PhaseAborted || prev.Reason != rollout.ReasonAbortRescued {
		response.Warning(rsp, errors.Errorf(msgRescueFmt, cause.Error())).WithReason(rollout.EventAborted).TargetCompositeAndClaim()
	}
	resendConditions(rsp, oxr, conditionRolloutHealthy)
	response.ConditionFalse(rsp, conditionRolloutHealthy, rollout.ReasonAborted).WithMessage(msgRescuedAbort).TargetCompositeAndClaim()
	setRefused(rsp, cause.Error())
	return rsp, true
}

// decodeOurs decodes the observed objects that the function composes into
// their types, and finds the route's namespace. It reports false when one
// does not decode.
func decodeOurs(observed map[resource.Name]resource.ObservedComposed) (map[compose.Key]runtime.Object, string, bool) {
	decoded := map[compose.Key]runtime.Object{}
	routeNamespace := ""
	for k, o := range ours(observed) {
		obj, err := compose.Decode(o)
		if err != nil {
			return nil, "", false
		}
		decoded[k] = obj
		if m, ok := obj.(metav1.Object); ok && k.IsRoute() {
			routeNamespace = m.GetNamespace()
		}
	}
	return decoded, routeNamespace, true
}

// trustedCanary are the recorded canary backends that the rescue may zero:
// none that is the primary's, and only those that some rule of the route
// weighs against the primary. When none is left, it says why.
func trustedCanary(oxr *resource.Composite, decoded map[compose.Key]runtime.Object, recorded []xr.BackendID, routeNamespace string) ([]xr.BackendID, string) {
	primaries := primaryBackends(oxr, decoded, routeNamespace)
	canary, refused := route.TrustedCanary(recorded, primaries)
	if len(canary) == 0 {
		return nil, fmt.Sprintf(whyNamesPrimary, describeBackends(refused))
	}
	spec, ok := specRules(oxr)
	if !ok {
		return nil, fmt.Sprintf(whyNoRules, describeBackends(canary))
	}
	var beside []xr.BackendID
	for k, obj := range decoded {
		if k.IsRoute() {
			b, _ := route.BesidePrimary(obj, canary, primaries, spec, routeNamespace)
			beside = append(beside, b...)
		}
	}
	if len(beside) == 0 {
		return nil, fmt.Sprintf(whyNotBeside, describeBackends(canary))
	}
	return slices.DeleteFunc(canary, func(c xr.BackendID) bool { return !slices.Contains(beside, c) }), ""
}

// zeroCanary is what the rescue composes: the observed objects as they are,
// but for the routes, where the canary gets nothing. It reports false when
// there is no route, or a route the API server would refuse.
func zeroCanary(decoded map[compose.Key]runtime.Object, observed map[resource.Name]resource.ObservedComposed, canary []xr.BackendID, routeNamespace string) ([]compose.Object, bool) {
	objects, routes := make([]compose.Object, 0, len(decoded)), 0
	for k, obj := range decoded {
		ready := true // Services and grants are ready once they exist.
		if k.IsRoute() {
			// The canary is an object: it gets nothing on any port, in
			// every rule, the rules of their own too.
			if !route.ZeroCanary(obj, route.AnyPort(canary), routeNamespace) {
				return nil, false
			}
			// What the API server would refuse cannot take traffic from
			// the canary: the Fatal stands.
			if errs := route.Check(obj); len(errs) > 0 {
				return nil, false
			}
			obs, err := route.ObserveAsComposed(observed[resource.Name(k)].Resource.Object, routeNamespace)
			ready = err == nil && obs.AllReady()
			routes++
		}
		objects = append(objects, compose.Object{Key: k, Object: obj, Ready: ready})
	}
	return objects, routes > 0
}

// cannotTellApart answers an abort whose recorded canary backends name the
// primary: the Fatal stands (Crossplane applies nothing, so nothing changes),
// and a Warning and RolloutHealthy say why the abort was not applied.
func cannotTellApart(req *fnv1.RunFunctionRequest, oxr *resource.Composite, cause error, what string) *fnv1.RunFunctionResponse {
	msg := fmt.Sprintf(msgCannotTellApartFmt, what)
	rsp := response.To(req, response.DefaultTTL)
	// A Fatal leaves the status alone, but not the conditions the function
	// re-sends: RolloutHealthy says whether an earlier run already warned.
	if !saidAbortNotApplied(oxr) {
		response.Warning(rsp, errors.New(msg)).WithReason(reasonAbortNotApplied).TargetCompositeAndClaim()
	}
	response.Fatal(rsp, cause)
	resendConditions(rsp, oxr, conditionRolloutHealthy)
	response.ConditionFalse(rsp, conditionRolloutHealthy, reasonAbortNotApplied).WithMessage(msg).TargetCompositeAndClaim()
	setRefused(rsp, cause.Error())
	return rsp
}

// saidAbortNotApplied reports whether the XR's RolloutHealthy condition
// already says that the abort was not applied.
func saidAbortNotApplied(oxr *resource.Composite) bool {
	c := priorCondition(oxr, conditionRolloutHealthy)
	return c.Status == corev1.ConditionFalse && string(c.Reason) == reasonAbortNotApplied
}

// primaryBackends are the primary's backends as far as they can be known
// from a CanaryRoute that cannot be composed: the proxy Service composed
// for it (service-primary, as observed), and spec.primary as the spec
// resolves it: its backendRef with Gateway API's defaults applied, or the
// proxy Service <routeName>-primary of a service or externalName side.
func primaryBackends(oxr *resource.Composite, decoded map[compose.Key]runtime.Object, routeNamespace string) []xr.BackendID {
	var out []xr.BackendID
	if svc, ok := decoded[compose.KeyServicePrimary].(metav1.Object); ok {
		out = append(out, xr.BackendID{Kind: "Service", Namespace: svc.GetNamespace(), Name: svc.GetName()})
	}
	if proxy := proxyOf(oxr); proxy != "" {
		out = append(out, xr.BackendID{Kind: "Service", Namespace: routeNamespace, Name: proxy})
	}
	var ref gwv1.BackendObjectReference
	if oxr.Resource.GetValueInto("spec.primary.backendRef", &ref) == nil && ref.Name != "" {
		gk := backend.GroupKindOf(ref)
		ns := routeNamespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		out = append(out, xr.BackendID{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: string(ref.Name)})
	}
	return out
}

// proxyOf is the name of the primary's proxy Service as the spec resolves
// it, read leniently from a spec that may not parse: <routeName>-primary for
// a service or externalName side; "" otherwise.
func proxyOf(oxr *resource.Composite) string {
	_, noService := oxr.Resource.GetValue("spec.primary.service")
	_, noExternal := oxr.Resource.GetValue("spec.primary.externalName")
	if noService != nil && noExternal != nil {
		return ""
	}
	name, _ := oxr.Resource.GetString("spec.routeName")
	if name == "" {
		name, _ = oxr.Resource.GetString("spec.claimRef.name")
	}
	if name == "" {
		name = oxr.Resource.GetName()
	}
	return xr.ProxyServiceName(name, xr.RolePrimary)
}

// specRules is what the spec tells of its rules (see route.SpecRule), read
// leniently from a spec that may not parse: a rule that does not decode
// counts as one of its own, which only makes the rescue trust less. It
// reports false when spec.rules is there but is no list: then the spec says
// nothing of which rules are weighted.
func specRules(oxr *resource.Composite) ([]route.SpecRule, bool) {
	if _, err := oxr.Resource.GetValue("spec.rules"); err != nil {
		return nil, fieldpath.IsNotFound(err)
	}
	var rules []any
	if oxr.Resource.GetValueInto("spec.rules", &rules) != nil {
		return nil, false
	}
	type filter struct {
		Type string `json:"type"`
	}
	out := make([]route.SpecRule, 0, min(len(rules), xr.MaxRules))
	for i := range min(len(rules), xr.MaxRules) {
		path := fmt.Sprintf("spec.rules[%d]", i)
		var r route.SpecRule
		if name, _ := oxr.Resource.GetString(path + ".name"); name != "" {
			r.Name = ptr.To(gwv1.SectionName(name))
		}
		var rule struct {
			BackendRefs []any    `json:"backendRefs"`
			Filters     []filter `json:"filters"`
		}
		r.Own = oxr.Resource.GetValueInto(path, &rule) != nil || len(rule.BackendRefs) > 0 ||
			slices.ContainsFunc(rule.Filters, func(f filter) bool { return f.Type == string(gwv1.HTTPRouteFilterRequestRedirect) })
		out = append(out, r)
	}
	return out, true
}

// describeBackends names backends as kind namespace/name, for messages.
func describeBackends(ids []xr.BackendID) string {
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		names = append(names, backend.KindString(schema.GroupKind{Group: id.Group, Kind: id.Kind})+" "+id.Namespace+"/"+id.Name)
	}
	return strings.Join(names, ", ")
}

// lenientRollout reads status.rollout as well as it can, from a status that
// may not parse: the whole of it when it decodes, else only its
// canaryBackends.
func lenientRollout(getValueInto func(path string, into any) error) xr.RolloutStatus {
	var s xr.RolloutStatus
	if getValueInto("status.rollout", &s) == nil {
		return s
	}
	s = xr.RolloutStatus{}
	_ = getValueInto("status.rollout.canaryBackends", &s.CanaryBackends)
	return s
}
