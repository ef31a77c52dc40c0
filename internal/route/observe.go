package route

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Reasons a parent gives, or that the function gives on its behalf, when the
// route is not accepted.
const (
	// ReasonPending: the parent has not reported on the route yet.
	ReasonPending = "Pending"
	// ReasonStale: the parent's report is about an older generation of the
	// route.
	ReasonStale = "Stale"
)

// observed is the part of a route, of any kind, that the function reads
// back: every kind shares the JSON shape of these fields.
type observed struct {
	Metadata struct {
		Generation int64 `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		ParentRefs []gwv1.ParentReference `json:"parentRefs"`
		Rules      []struct {
			BackendRefs []gwv1.BackendRef `json:"backendRefs"`
		} `json:"rules"`
	} `json:"spec"`
	Status gwv1.RouteStatus `json:"status"`
}

// Observation is what the gateway made of the route the function composed
// on an earlier run.
type Observation struct {
	// Exists is false until Crossplane has created the route.
	Exists bool
	// Generation is the route's metadata.generation.
	Generation int64
	// Parents holds the verdict of each of the route's parents, in the
	// order of the route's parentRefs.
	Parents []ParentVerdict

	weights [][]refWeight
}

// ParentVerdict is one parent's verdict on the current generation of the
// route.
type ParentVerdict struct {
	Ref          gwv1.ParentReference
	Accepted     bool
	ResolvedRefs bool
	// Reason and Message come from the first condition that is not True,
	// or say that the parent has not reported (Pending) or reported on an
	// older generation (Stale).
	Reason  string
	Message string
}

// Ready reports whether the parent accepted the route and resolved all its
// references.
func (v ParentVerdict) Ready() bool { return v.Accepted && v.ResolvedRefs }

// Describe names the parent as namespace/name[/section], for messages.
func (v ParentVerdict) Describe() string {
	s := string(v.Ref.Name)
	if v.Ref.Namespace != nil {
		s = string(*v.Ref.Namespace) + "/" + s
	}
	if v.Ref.SectionName != nil {
		s += "/" + string(*v.Ref.SectionName)
	}
	return s
}

// Observe reads an observed route. parentRefs are the route's parents as the
// function composes them; a parent that the status does not mention has not
// accepted the route.
func Observe(obj map[string]any, routeNamespace string, parentRefs []gwv1.ParentReference) (Observation, error) {
	if obj == nil {
		return Observation{Parents: verdicts(observed{}, routeNamespace, parentRefs)}, nil
	}
	o, err := decodeObserved(obj)
	if err != nil {
		return Observation{}, err
	}
	return Observation{
		Exists:     true,
		Generation: o.Metadata.Generation,
		Parents:    verdicts(o, routeNamespace, parentRefs),
		weights:    o.weights(routeNamespace),
	}, nil
}

// ObserveAsComposed reads an observed route against the parents it names
// itself: for a route the function keeps as it is, when the spec cannot say
// what the parents should be.
func ObserveAsComposed(obj map[string]any, routeNamespace string) (Observation, error) {
	o, err := decodeObserved(obj)
	if err != nil {
		return Observation{}, err
	}
	return Observe(obj, routeNamespace, o.Spec.ParentRefs)
}

// AllReady reports whether every parent accepted the current generation of
// the route with all references resolved.
func (o Observation) AllReady() bool {
	if !o.Exists || len(o.Parents) == 0 {
		return false
	}
	for _, p := range o.Parents {
		if !p.Ready() {
			return false
		}
	}
	return true
}

// FirstHold is the first parent that is not ready, for messages.
func (o Observation) FirstHold() (ParentVerdict, bool) {
	for _, p := range o.Parents {
		if !p.Ready() {
			return p, true
		}
	}
	return ParentVerdict{}, false
}

// Carries reports whether the observed route carries the backends and
// weights of a route the function composed: rule by rule, the same
// references with the same shares of the rule's traffic. Backends are
// compared by what they are (group, kind, namespace, name, port), never by a
// naming convention, so any backend kind works. Weights are compared as
// ratios, never as numbers: a route out of 100 (90/10, composed before the
// spec had a weight with decimals, or by an older release) carries what the
// same route out of 10,000 (9000/1000) does.
func (o Observation) Carries(route runtime.Object, routeNamespace string) bool {
	if !o.Exists {
		return false
	}
	v := viewOf(route)
	if v == nil {
		return false
	}
	want := make([][]refWeight, 0, v.len())
	for i := range v.len() {
		refs := v.backends(i)
		rule := make([]refWeight, 0, len(refs))
		for _, b := range refs {
			rule = append(rule, weightOf(b, routeNamespace))
		}
		want = append(want, rule)
	}
	return slices.EqualFunc(o.weights, want, sameShares)
}

// sameShares reports whether two rules have the same backends, in the same
// order, each with the same share of the rule's traffic: a/ta == b/tb,
// compared as a*tb == b*ta, exactly. A rule whose weights are all 0 sends
// nothing, and carries only a rule that sends nothing.
func sameShares(a, b []refWeight) bool {
	if len(a) != len(b) {
		return false
	}
	var ta, tb int64
	for i := range a {
		x, y := a[i], b[i]
		x.weight, y.weight = 0, 0
		if x != y {
			return false
		}
		ta += int64(a[i].weight)
		tb += int64(b[i].weight)
	}
	if ta == 0 || tb == 0 {
		return slices.Equal(a, b)
	}
	for i := range a {
		if int64(a[i].weight)*tb != int64(b[i].weight)*ta {
			return false
		}
	}
	return true
}

func decodeObserved(obj map[string]any) (observed, error) {
	var o observed
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &o); err != nil {
		return observed{}, errors.Wrap(err, "cannot read the observed route")
	}
	return o, nil
}

// refWeight is a backend reference with Gateway API's defaults applied, and
// its weight.
type refWeight struct {
	group, kind, namespace, name string
	port                         int32
	weight                       int32
}

func (o observed) weights(routeNamespace string) [][]refWeight {
	out := make([][]refWeight, 0, len(o.Spec.Rules))
	for _, r := range o.Spec.Rules {
		rule := make([]refWeight, 0, len(r.BackendRefs))
		for i := range r.BackendRefs {
			rule = append(rule, weightOf(&r.BackendRefs[i], routeNamespace))
		}
		out = append(out, rule)
	}
	return out
}

// weightOf is a backendRef with Gateway API's defaults applied, and its
// weight (Gateway API's default weight is 1).
func weightOf(b *gwv1.BackendRef, routeNamespace string) refWeight {
	id := identify(b.BackendObjectReference, routeNamespace)
	return refWeight{
		group:     id.Group,
		kind:      id.Kind,
		namespace: id.Namespace,
		name:      id.Name,
		port:      ptr.Deref(id.Port, 0),
		weight:    ptr.Deref(b.Weight, 1),
	}
}

func verdicts(o observed, routeNamespace string, parentRefs []gwv1.ParentReference) []ParentVerdict {
	out := make([]ParentVerdict, 0, len(parentRefs))
	for _, ref := range parentRefs {
		v := ParentVerdict{Ref: *ref.DeepCopy(), Reason: ReasonPending, Message: "the parent has not reported on the route yet"}
		if v.Ref.Namespace == nil {
			v.Ref.Namespace = ptr.To(gwv1.Namespace(routeNamespace))
		}
		var reports []gwv1.RouteParentStatus
		for _, s := range o.Status.Parents {
			if sameParent(s.ParentRef, ref, routeNamespace) {
				reports = append(reports, s)
			}
		}
		if len(reports) > 0 {
			judge(&v, reports, o.Metadata.Generation)
		}
		out = append(out, v)
	}
	return out
}

// judge sets the verdict from every controller's report on the parent: all
// of them must accept the current generation.
func judge(v *ParentVerdict, reports []gwv1.RouteParentStatus, generation int64) {
	v.Accepted, v.ResolvedRefs = true, true
	v.Reason, v.Message = "", ""
	for _, r := range reports {
		for _, typ := range []gwv1.RouteConditionType{gwv1.RouteConditionAccepted, gwv1.RouteConditionResolvedRefs} {
			ok, reason, msg := conditionHolds(r.Conditions, string(typ), generation)
			if ok {
				continue
			}
			if typ == gwv1.RouteConditionAccepted {
				v.Accepted = false
			} else {
				v.ResolvedRefs = false
			}
			if v.Reason == "" {
				v.Reason, v.Message = reason, msg
			}
		}
	}
}

func conditionHolds(conds []metav1.Condition, typ string, generation int64) (ok bool, reason, message string) {
	for _, c := range conds {
		if c.Type != typ {
			continue
		}
		// observedGeneration is optional in Gateway API: a gateway that does
		// not set it cannot tell generations apart, so its verdict is taken
		// as one on the current generation. The route carrying the step's
		// weights is checked on the spec itself either way.
		if c.ObservedGeneration != 0 && c.ObservedGeneration < generation {
			return false, ReasonStale, fmt.Sprintf("%s was reported for generation %d, the route is at generation %d", typ, c.ObservedGeneration, generation)
		}
		if c.Status != metav1.ConditionTrue {
			return false, c.Reason, c.Message
		}
		return true, "", ""
	}
	return false, ReasonPending, fmt.Sprintf("the parent has not reported %s yet", typ)
}

// sameParent compares parent references with Gateway API's defaults applied.
func sameParent(a, b gwv1.ParentReference, routeNamespace string) bool {
	def := func(r gwv1.ParentReference) [6]string {
		port := ""
		if r.Port != nil {
			port = strconv.Itoa(int(*r.Port))
		}
		return [6]string{
			string(ptr.Deref(r.Group, gwv1.GroupName)),
			string(ptr.Deref(r.Kind, "Gateway")),
			string(ptr.Deref(r.Namespace, gwv1.Namespace(routeNamespace))),
			string(r.Name),
			string(ptr.Deref(r.SectionName, "")),
			port,
		}
	}
	return def(a) == def(b)
}
