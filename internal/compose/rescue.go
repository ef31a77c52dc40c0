package compose

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/release"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	whyNamesPrimary = "%s, which carries the primary's traffic"
	whyNotBeside    = "%s, which no rule of the route holds beside the primary's backend"
	whyNoRules      = "%s, but spec.rules is no list, so the route's weighted rules cannot be told from rules of their own"

	// MsgRescuedAbort is status.rollout.message of a rescued abort.
	MsgRescuedAbort = "aborted: all traffic goes to the primary. The CanaryRoute cannot be composed, so the route is kept as last composed, with its canary at 0% and its canary-only rules removed, until the spec is fixed"
	msgRescueFmt    = "spec.traffic.abort is set: the canary is held at 0%% in the last composed route, although the CanaryRoute cannot be composed: %s"

	// reasonAbortNotApplied: the abort was asked for, but the canary could
	// not be told apart from the primary, so nothing was changed.
	reasonAbortNotApplied = "AbortNotApplied"
	msgCannotTellApartFmt = "spec.traffic.abort is set, but the canary cannot be told apart from the primary: status.rollout.canaryBackends names %s. Nothing was changed: fix the CanaryRoute, or set the canary's weight to 0 in the route by hand"
)

// A Rescue is what an emergency abort composes for a CanaryRoute that
// cannot be composed, and what it says.
type Rescue struct {
	// Applied is false when the recorded canary cannot be told apart from
	// the primary: nothing is composed, the Fatal stands, and the Warning
	// and RolloutHealthy say why the abort was not applied.
	Applied bool
	// Objects are what the previous run composed, as observed, but for
	// the route, where the canary gets nothing; Status is status.rollout.
	Objects []Object
	Status  xr.RolloutStatus
	// Warning, when set, is said on this run: once, when the rescue (or
	// its refusal) starts, since the runs after it change nothing and a
	// Warning on each would spend the XR's event budget.
	Warning *Warning
	// Healthy is the RolloutHealthy condition.
	Healthy xr.Condition
	// Record is what the pipeline's next step reads of a release, as far
	// as the XR tells it: the stable revision keeps its replicas, the
	// canary gets none. Nil without a release, or when the XR does not
	// tell the stable revision or the replicas.
	Record *release.Record
	// Release is status.release as read, written back unchanged: the
	// XR's status is applied whole, and a rescue that wrote none would
	// erase the stable revision, the history and the retiring revision.
	// Nil when status.release does not decode.
	Release *xr.ReleaseStatus
}

// RescueAbort is the emergency abort of a CanaryRoute that cannot be
// composed (bad spec, bad Input, a malformed status, a policy refusal) while
// its author asks for one (spec.traffic.abort): an abort must never be
// blocked by an unrelated mistake. composite is the observed XR's content,
// read leniently since it may not parse; observed are the objects the
// function composed earlier, by key; now is the run's time (a retiring
// revision keeps its replicas only until its time).
//
// It composes what the previous run composed, unchanged but for the route,
// where every canary backend goes to weight 0 and every canary-only rule
// (A/B, session) and mirror to the canary is removed, and the preview
// route, which is not composed (so Crossplane deletes it). The canary backends
// are the ones the last good run recorded in status.rollout.canaryBackends,
// never a guess by name, and only those that are not the primary's and that
// some rule of the route weighs against the primary: the record is status,
// which is not proof. Every object is decoded into its type and changed
// there.
//
// It reports false when it cannot rescue: no abort asked for, no canary
// backends recorded, no route composed yet (then nothing sends traffic to
// the canary, and a Fatal keeps it so), or a route that does not decode or
// that the API server would refuse once the canary is cut.
func RescueAbort(composite map[string]any, observed map[names.Key]map[string]any, cause error, now time.Time) (Rescue, bool) {
	return RescueAbortComposed(composite, observed, nil, cause, now)
}

// RescueAbortComposed is RescueAbort from what the newest decision the
// function answered composed (composed, by key; nil when none is known)
// rather than from the observed objects, which may lag it: a rescue that
// re-emitted a primary Service as observed seconds ago would move it under
// the traffic the newest route sends it. The route's readiness is still
// the gateway's, as observed.
func RescueAbortComposed(composite map[string]any, observed, composed map[names.Key]map[string]any, cause error, now time.Time) (Rescue, bool) {
	xrp := fieldpath.Pave(composite)
	if abort, _ := xrp.GetBool("spec.traffic.abort"); !abort {
		return Rescue{}, false
	}
	prior := lenientRollout(xrp)
	if len(prior.CanaryBackends) == 0 {
		return Rescue{}, false
	}
	held := observed
	if composed != nil {
		held = composed
	}
	decoded, routeNamespace, ok := decodeOurs(held)
	// Without a route, nothing sends the canary traffic: the Fatal stands.
	if !ok || !slices.ContainsFunc(slices.Collect(maps.Keys(decoded)), mainRoute) {
		return Rescue{}, false
	}
	canary, why := trustedCanary(xrp, decoded, prior.CanaryBackends, routeNamespace)
	if why != "" {
		msg := fmt.Sprintf(msgCannotTellApartFmt, why)
		r := Rescue{Healthy: xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: reasonAbortNotApplied, Message: msg}}
		// A Fatal leaves the status alone, but not the conditions the
		// function re-sends: RolloutHealthy says whether an earlier run
		// already warned.
		if c := ObservedConditions(composite)[ConditionRolloutHealthy]; c.Status != "False" || string(c.Reason) != reasonAbortNotApplied {
			r.Warning = &Warning{reasonAbortNotApplied, msg}
		}
		return r, true
	}
	objects, ok := rescuedObjects(decoded, observed, canary, routeNamespace)
	if !ok {
		return Rescue{}, false
	}
	r := Rescue{
		Applied: true,
		Objects: objects,
		Status:  prior,
		Healthy: xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: rollout.ReasonAborted, Message: MsgRescuedAbort},
	}
	r.Status.CanaryBackends = canary
	r.Status.Phase, r.Status.Reason, r.Status.NextStepAt = xr.PhaseAborted, rollout.ReasonAbortRescued, nil
	r.Status.CanaryWeight, r.Status.PrimaryWeight = percent.Zero, percent.Max
	r.Status.Message = MsgRescuedAbort
	r.Release = lenientRelease(xrp)
	r.Record = rescuedRecord(xrp, r.Status, r.Release, held[names.KeyServicePrimary], now)
	if prior.Phase != xr.PhaseAborted || prior.Reason != rollout.ReasonAbortRescued {
		r.Warning = &Warning{rollout.EventAborted, fmt.Sprintf(msgRescueFmt, cause.Error())}
	}
	return r, true
}

// mainRoute reports whether a key is a route's, not a preview route's.
func mainRoute(k names.Key) bool { return k.IsRoute() && !k.IsPreview() }

// decodeOurs decodes the observed objects that the function composes into
// their types, and finds the route's namespace. It reports false when one
// does not decode. A preview route is left out: it sends every request to
// the canary, and an abort ends it (no longer composed, Crossplane deletes
// it), as a run that aborts does.
func decodeOurs(observed map[names.Key]map[string]any) (map[names.Key]runtime.Object, string, bool) {
	decoded := make(map[names.Key]runtime.Object, len(observed))
	routeNamespace := ""
	for k, o := range observed {
		if !k.Ours() || k.IsPreview() {
			continue
		}
		obj, err := Decode(o)
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
func trustedCanary(xrp *fieldpath.Paved, decoded map[names.Key]runtime.Object, recorded []xr.BackendID, routeNamespace string) ([]xr.BackendID, string) {
	primaries := primaryBackends(xrp, decoded, routeNamespace)
	canary, refused := route.TrustedCanary(recorded, primaries)
	if len(canary) == 0 {
		return nil, fmt.Sprintf(whyNamesPrimary, DescribeBackends(refused))
	}
	// Each route's weighted rules are told by its own rules: spec.rules
	// for the shorthand's route, spec.routes[i].rules for an entry's. A
	// route that no entry of spec.routes names any longer bears nothing
	// out.
	entries, multi := routeEntries(xrp)
	spec, ok := specRules(xrp, "spec.rules")
	if !multi && !ok {
		return nil, fmt.Sprintf(whyNoRules, DescribeBackends(canary))
	}
	var beside []xr.BackendID
	for k, obj := range decoded {
		if !k.IsRoute() {
			continue
		}
		if multi {
			i, found := entries[k]
			if !found {
				continue
			}
			if spec, ok = specRules(xrp, fmt.Sprintf("spec.routes[%d].rules", i)); !ok {
				continue
			}
		}
		b, _ := route.BesidePrimary(obj, canary, primaries, spec, routeNamespace)
		beside = append(beside, b...)
	}
	if len(beside) == 0 {
		return nil, fmt.Sprintf(whyNotBeside, DescribeBackends(canary))
	}
	return slices.DeleteFunc(canary, func(c xr.BackendID) bool { return !slices.Contains(beside, c) }), ""
}

// rescuedObjects is what the rescue composes: the observed objects as they
// are, but for the routes, where the canary gets nothing. It reports false
// when there is no route, or a route the API server would refuse.
func rescuedObjects(decoded map[names.Key]runtime.Object, observed map[names.Key]map[string]any, canary []xr.BackendID, routeNamespace string) ([]Object, bool) {
	objects, routes := make([]Object, 0, len(decoded)), 0
	for k, obj := range decoded {
		ready := true // Services and grants are ready once they exist.
		if k.IsRoute() {
			// The canary is an object: it gets nothing on any port, in
			// every rule, the rules of their own too.
			if cutCanary(obj, canary, routeNamespace) != nil {
				return nil, false
			}
			// What the API server would refuse cannot take traffic from
			// the canary: the Fatal stands.
			if errs := route.Check(obj); len(errs) > 0 {
				return nil, false
			}
			obs, err := route.ObserveAsComposed(observed[k], routeNamespace)
			ready = err == nil && obs.AllReady()
			routes++
		}
		objects = append(objects, Object{Key: k, Object: obj, Ready: ready})
	}
	return objects, routes > 0
}

// primaryBackends are the primary's backends as far as they can be known
// from a CanaryRoute that cannot be composed: the proxy Service composed
// for it (service-primary, as observed), and spec.primary as the spec
// resolves it: its backendRef with Gateway API's defaults applied, or the
// proxy Service of a service or externalName side.
func primaryBackends(xrp *fieldpath.Paved, decoded map[names.Key]runtime.Object, routeNamespace string) []xr.BackendID {
	var out []xr.BackendID
	if svc, ok := decoded[names.KeyServicePrimary].(metav1.Object); ok {
		out = append(out, xr.BackendID{Kind: kindService, Namespace: svc.GetNamespace(), Name: svc.GetName()})
	}
	if proxy := primaryProxy(xrp); proxy != "" {
		out = append(out, xr.BackendID{Kind: kindService, Namespace: routeNamespace, Name: proxy})
	}
	var ref gwv1.BackendObjectReference
	if xrp.GetValueInto("spec.primary.backendRef", &ref) == nil && ref.Name != "" {
		gk := backend.GroupKindOf(ref)
		ns := routeNamespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		out = append(out, xr.BackendID{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: string(ref.Name)})
	}
	return out
}

// primaryProxy is the name of the primary's proxy Service as the spec
// resolves it, read leniently from a spec that may not parse: that of a
// service or externalName side; "" otherwise.
func primaryProxy(xrp *fieldpath.Paved) string {
	_, noService := xrp.GetValue("spec.primary.service")
	_, noExternal := xrp.GetValue("spec.primary.externalName")
	if noService != nil && noExternal != nil {
		return ""
	}
	return xr.ProxyServiceName(xr.RouteNameOf(xrp.UnstructuredContent()), xr.RolePrimary)
}

// routeEntries are the route keys of spec.routes' entries, each to its
// index, read leniently from a spec that may not parse (an entry without a
// name or with a kind that is no string names no route); it reports
// whether the spec has spec.routes at all.
func routeEntries(xrp *fieldpath.Paved) (map[names.Key]int, bool) {
	var list []any
	if xrp.GetValueInto("spec.routes", &list) != nil {
		return nil, false
	}
	out := make(map[names.Key]int, len(list))
	for i := range min(len(list), xr.MaxRoutes) {
		entry := fmt.Sprintf("spec.routes[%d]", i)
		name, err := xrp.GetString(entry + ".name")
		if err != nil || name == "" {
			continue
		}
		kind, err := xrp.GetString(entry + ".kind")
		if fieldpath.IsNotFound(err) {
			kind, err = string(xr.KindHTTPRoute), nil
		}
		if err != nil {
			continue
		}
		if _, dup := out[names.EntryRouteKey(kind, name)]; !dup {
			out[names.EntryRouteKey(kind, name)] = i
		}
	}
	return out, true
}

// specRules is what the spec tells of a route's rules at a path
// (spec.rules, or an entry's of spec.routes) (see route.SpecRule), read
// leniently from a spec that may not parse: a rule that does not decode
// counts as one of its own, which only makes the rescue trust less. It
// reports false when the rules are there but are no list: then the spec
// says nothing of which rules are weighted.
func specRules(xrp *fieldpath.Paved, at string) ([]route.SpecRule, bool) {
	if _, err := xrp.GetValue(at); err != nil {
		return nil, fieldpath.IsNotFound(err)
	}
	var rules []any
	if xrp.GetValueInto(at, &rules) != nil {
		return nil, false
	}
	type filter struct {
		Type string `json:"type"`
	}
	out := make([]route.SpecRule, 0, min(len(rules), xr.MaxRules))
	for i := range min(len(rules), xr.MaxRules) {
		path := fmt.Sprintf("%s[%d]", at, i)
		var r route.SpecRule
		if name, _ := xrp.GetString(path + ".name"); name != "" {
			r.Name = ptr.To(gwv1.SectionName(name))
		}
		var rule struct {
			BackendRefs []any    `json:"backendRefs"`
			Filters     []filter `json:"filters"`
		}
		r.Own = xrp.GetValueInto(path, &rule) != nil || len(rule.BackendRefs) > 0 ||
			slices.ContainsFunc(rule.Filters, func(f filter) bool { return f.Type == string(gwv1.HTTPRouteFilterRequestRedirect) })
		out = append(out, r)
	}
	return out, true
}

// DescribeBackends names backends as kind namespace/name, for messages.
func DescribeBackends(ids []xr.BackendID) string {
	described := make([]string, 0, len(ids))
	for _, id := range ids {
		described = append(described, backend.KindString(schema.GroupKind{Group: id.Group, Kind: id.Kind})+" "+id.Namespace+"/"+id.Name)
	}
	return strings.Join(described, ", ")
}

// lenientRollout reads status.rollout as well as it can, from a status that
// may not parse: the whole of it when it decodes, else only its
// canaryBackends.
func lenientRollout(xrp *fieldpath.Paved) xr.RolloutStatus {
	var s xr.RolloutStatus
	if xrp.GetValueInto("status.rollout", &s) == nil {
		return s
	}
	s = xr.RolloutStatus{}
	_ = xrp.GetValueInto("status.rollout.canaryBackends", &s.CanaryBackends)
	return s
}

// lenientReplicas is spec.release.replicas as read from a spec that may
// not parse: 1 to 1,000, else the default, 1.
func lenientReplicas(xrp *fieldpath.Paved) int32 {
	// Numbers come as float64 from the request, int64 from elsewhere.
	v, err := xrp.GetValue("spec.release.replicas")
	if err != nil {
		return 1
	}
	switch n := v.(type) {
	case float64:
		if n >= 1 && n <= 1000 && n == math.Trunc(n) {
			return int32(n)
		}
	case int64:
		if n >= 1 && n <= 1000 {
			return int32(n)
		}
	}
	return 1
}

// lenientRelease is status.release as read, within the XRD's limits, when
// it decodes; nil otherwise (then the rescue leaves it out, as a Fatal would).
func lenientRelease(xrp *fieldpath.Paved) *xr.ReleaseStatus {
	var st xr.ReleaseStatus
	if _, err := xrp.GetValue("status.release"); err != nil || xrp.GetValueInto("status.release", &st) != nil {
		return nil
	}
	// As the XRD admits it: one written under older limits is not a
	// reason for Crossplane to refuse the rescue.
	return ptr.To(st.Bounded())
}

// rescuedRecord is a release's record for a rescued abort, read leniently:
// the stable revision status.release names, and the one the rescued
// primary Service selects (a promotion may have moved it; the rescue sends
// it every request), keep spec.release.replicas (default 1), the canary
// gets none, and a retiring revision keeps its replicas until its time, as
// on any run (a rescue neither retires early nor brings a retired revision
// back). The pipeline's next step composes the pods from it: without a
// record it could scale the stable revision down.
func rescuedRecord(xrp *fieldpath.Paved, s xr.RolloutStatus, rs *xr.ReleaseStatus, primary map[string]any, now time.Time) *release.Record {
	if _, err := xrp.GetValue("spec.release"); err != nil {
		return nil
	}
	if rs == nil || rs.Stable == nil || rs.Stable.Revision == "" {
		return nil
	}
	st := *rs
	replicas := lenientReplicas(xrp)
	canary, _ := xrp.GetString("spec.canary.revision")
	r := &release.Record{Stable: st.Stable.Revision, Canary: canary, Phase: s.Phase, Step: s.Step, Replicas: map[string]int32{}}
	delay, _ := xrp.GetString("spec.release.scaleDownDelay")
	for revision, at := range release.Retirements(st, xr.LenientScaleDownDelay(delay)) {
		if revision == "" {
			continue
		}
		r.Replicas[revision] = 0
		if now.Before(at) {
			r.Replicas[revision] = replicas
		}
	}
	if canary != "" && canary == s.Revision {
		// Only a revision that a good run rolled out, which checked that
		// this XR composed its workload: the spec of a CanaryRoute that
		// cannot be composed may name any revision, another team's
		// Deployment among them, and the next step composes what the
		// record names.
		r.Replicas[canary] = 0
	}
	if label, _ := xrp.GetString("spec.release.revisionLabel"); label != "" {
		selector, _, _ := unstructured.NestedStringMap(primary, "spec", "selector")
		if served := selector[label]; served != "" && slices.Contains(append(st.Revisions(), canary), served) {
			r.Replicas[served] = replicas
		}
	}
	r.Replicas[st.Stable.Revision] = replicas
	return r
}
