package compose

import (
	"fmt"
	"slices"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// XR condition types that the function owns.
const (
	ConditionRouteAccepted        = "RouteAccepted"
	ConditionReferenceGrantsReady = "ReferenceGrantsReady"
	ConditionRolloutHealthy       = "RolloutHealthy"
	// ConditionComposed says whether the function composes the
	// CanaryRoute or refuses it (a Fatal). Crossplane's Synced says so on
	// the XR only; a claim carries this one too.
	ConditionComposed = "Composed"
)

// Condition reasons of the function's own, beside the gateway's and the
// grant package's.
const (
	reasonAccepted = "Accepted"
	reasonReady    = "Ready"
	reasonSkipped  = "Skipped"
	reasonComposed = "Composed"
	reasonRefused  = "Refused"
)

// A Warning is a Warning result (and event) on the XR and its claim.
type Warning struct {
	Reason  string
	Message string
}

// Conditions are the XR's conditions that a run that composes sets, in
// order, and the Warnings it emits for every reference the policy refused
// and every grant the XR cannot compose. prior are the XR's conditions as
// observed: a refusal that persists is said once.
func Conditions(prior map[xpv2.ConditionType]xpv2.Condition, cr *xr.CanaryRoute, obs route.Observation, grants grant.Result, d rollout.Decision) ([]xr.Condition, []Warning) {
	conditions := make([]xr.Condition, 0, 4)
	if v, held := obs.FirstHold(); held || !obs.Exists {
		reason, msg := route.ReasonPending, "the route has not been created yet"
		if obs.Exists {
			// The gateway's own reason and message, bounded like any
			// status the function writes.
			reason, msg = fielderr.Truncate(v.Reason, xr.MaxStatusValue, fielderr.Characters, nil), fielderr.Truncate(explainHold(v), xr.MaxStatusMessage, fielderr.Characters, nil)
		}
		conditions = append(conditions, xr.Condition{Type: ConditionRouteAccepted, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	} else {
		conditions = append(conditions, xr.Condition{
			Type: ConditionRouteAccepted, Status: metav1.ConditionTrue, Reason: reasonAccepted,
			Message: "every parent accepted the route and resolved its references",
		})
	}

	grantsReady, warnings := grantsCondition(prior[ConditionReferenceGrantsReady], cr, grants)
	conditions = append(conditions, grantsReady, xr.Condition{Type: ConditionComposed, Status: metav1.ConditionTrue, Reason: reasonComposed})
	if d.Healthy {
		conditions = append(conditions, xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionTrue, Reason: string(d.Status.Phase), Message: rolloutMessage(d.Status)})
	} else {
		conditions = append(conditions, xr.Condition{Type: ConditionRolloutHealthy, Status: metav1.ConditionFalse, Reason: d.Reason, Message: rolloutMessage(d.Status)})
	}
	return conditions, warnings
}

// grantsCondition is ReferenceGrantsReady, and the Warnings of the
// references refused and the grants not composable, unless prior, the
// condition as observed, already says the same.
func grantsCondition(prior xpv2.Condition, cr *xr.CanaryRoute, grants grant.Result) (xr.Condition, []Warning) {
	problems := make([]string, 0, len(grants.Refused)+len(grants.NotComposable))
	var warnings []Warning
	reason := ""
	for _, r := range grants.Refused {
		msg := fmt.Sprintf("the %s backend %s is refused: %s", r.Role, DescribeRef(r.Ref), r.Reason)
		problems = append(problems, msg)
		reason = grant.ReasonNotAllowedByPolicy
		if cr.Spec.ReferenceGrants != xr.GrantsSkip {
			warnings = append(warnings, Warning{grant.ReasonNotAllowedByPolicy, msg})
		}
	}
	for _, g := range grants.NotComposable {
		msg := "a namespaced CanaryRoute cannot compose into another namespace; the platform team must create " + grant.Describe(g)
		problems = append(problems, msg)
		if reason == "" {
			reason = grant.ReasonGrantNotComposable
		}
		warnings = append(warnings, Warning{grant.ReasonGrantNotComposable, msg})
	}
	// Bounded like every status the function writes, and every Fatal.
	problemsMsg := fielderr.Truncate(fielderr.List(problems, "; "), xr.MaxStatusMessage, fielderr.Characters, nil)
	// A refusal that persists is said once, when it starts: the XR's
	// condition already says it, and a Warning on every reconcile would use
	// up the XR's event budget, hiding the rollout's transitions.
	if prior.Status == "False" && string(prior.Reason) == reason && prior.Message == problemsMsg {
		warnings = nil
	}
	if len(warnings) > fielderr.MaxErrors {
		more := Warning{warnings[fielderr.MaxErrors].Reason, fmt.Sprintf("and %d more references refused or grants not composable: see the ReferenceGrantsReady condition", len(warnings)-fielderr.MaxErrors)}
		warnings = append(warnings[:fielderr.MaxErrors], more)
	}
	switch {
	case cr.Spec.ReferenceGrants == xr.GrantsSkip:
		return xr.Condition{
			Type: ConditionReferenceGrantsReady, Status: metav1.ConditionTrue, Reason: reasonSkipped,
			Message: "spec.referenceGrants is Skip: grants are managed outside this CanaryRoute",
		}, warnings
	case len(problems) > 0:
		return xr.Condition{Type: ConditionReferenceGrantsReady, Status: metav1.ConditionFalse, Reason: reason, Message: problemsMsg}, warnings
	case len(grants.Grants) == 0:
		return xr.Condition{
			Type: ConditionReferenceGrantsReady, Status: metav1.ConditionTrue, Reason: reasonReady,
			Message: "no backend in another namespace needs a ReferenceGrant",
		}, warnings
	default:
		namespaces := make([]string, 0, len(grants.Grants))
		for _, g := range grants.Grants {
			// Each route of spec.routes has a grant of its own in a
			// namespace: the namespace is said once.
			if !slices.Contains(namespaces, g.Namespace) {
				namespaces = append(namespaces, g.Namespace)
			}
		}
		return xr.Condition{
			Type: ConditionReferenceGrantsReady, Status: metav1.ConditionTrue, Reason: reasonReady,
			Message: fielderr.Truncate("ReferenceGrants composed in namespaces: "+fielderr.List(namespaces, ", "), xr.MaxStatusMessage, fielderr.Characters, nil),
		}, warnings
	}
}

// rolloutMessage is RolloutHealthy's message.
func rolloutMessage(s xr.RolloutStatus) string {
	if s.Message != "" {
		return s.Message
	}
	return fmt.Sprintf("%s: canary %s%%, primary %s%%", s.Phase, s.CanaryWeight, s.PrimaryWeight)
}

// explainHold says why a parent does not accept the route, with the
// parent's own message, for the RouteAccepted condition.
func explainHold(v route.ParentVerdict) string {
	if v.Message == "" {
		return DescribeHold(v)
	}
	return DescribeHold(v) + ": " + v.Message
}

// ownConditions are the conditions a run that does not compute them (a
// Fatal, a rescued abort) re-sends as the XR has them, so that they keep
// their value instead of turning Unknown.
var ownConditions = []string{ConditionRouteAccepted, ConditionReferenceGrantsReady, ConditionRolloutHealthy}

// Kept are the function's conditions as the XR has them (observed), but
// for those in skip: what a run that does not compute them re-sends.
func Kept(observed map[xpv2.ConditionType]xpv2.Condition, skip ...string) []xr.Condition {
	var out []xr.Condition
	for _, typ := range ownConditions {
		c := observed[xpv2.ConditionType(typ)]
		// A condition the XR does not carry comes back Unknown without a
		// reason; the function always gives one.
		if c.Reason == "" || slices.Contains(skip, typ) {
			continue
		}
		out = append(out, xr.Condition{Type: typ, Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message})
	}
	return out
}

// ObservedConditions reads the XR's conditions one by one, the first of
// each type: a condition that does not decode (written by another writer
// with a time the API machinery does not read back) is skipped, and keeps
// none of the others from being re-sent.
func ObservedConditions(composite map[string]any) map[xpv2.ConditionType]xpv2.Condition {
	items, _, _ := unstructured.NestedFieldNoCopy(composite, "status", "conditions")
	list, _ := items.([]any)
	out := make(map[xpv2.ConditionType]xpv2.Condition, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var c xpv2.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			continue
		}
		if _, seen := out[c.Type]; !seen {
			out[c.Type] = c
		}
	}
	return out
}

// Refused is the Composed condition of a CanaryRoute the function refuses,
// saying why, bounded like every status it writes.
func Refused(why string) xr.Condition {
	return xr.Condition{Type: ConditionComposed, Status: metav1.ConditionFalse, Reason: reasonRefused, Message: fielderr.Truncate(why, xr.MaxStatusMessage, fielderr.Characters, nil)}
}
