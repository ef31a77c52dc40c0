package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/grant"
	"github.com/crossplane-contrib/function-canary-route/internal/rollout"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// XR condition types that the function owns.
const (
	conditionRouteAccepted        = "RouteAccepted"
	conditionReferenceGrantsReady = "ReferenceGrantsReady"
	conditionRolloutHealthy       = "RolloutHealthy"
)

// Condition reasons of the function's own, beside the gateway's and the
// grant package's.
const (
	reasonAccepted = "Accepted"
	reasonReady    = "Ready"
	reasonSkipped  = "Skipped"
)

// ownConditions are re-sent with a Fatal result, so they keep their last
// value instead of turning Unknown.
var ownConditions = []string{conditionRouteAccepted, conditionReferenceGrantsReady, conditionRolloutHealthy}

// fatal returns a response with a Fatal result: Crossplane then applies
// nothing, so the route keeps its last good weights. The function's
// conditions are re-sent as the XR last had them.
func fatal(rsp *fnv1.RunFunctionResponse, prior map[string]any, err error) *fnv1.RunFunctionResponse {
	response.Fatal(rsp, err)
	resendConditions(rsp, prior)
	return rsp
}

// resendConditions sets the function's conditions as the XR last had them,
// but for those in skip, so that they keep their value instead of turning
// Unknown in a run that does not compute them.
func resendConditions(rsp *fnv1.RunFunctionResponse, prior map[string]any, skip ...string) {
	status, _ := prior["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, typ := range ownConditions {
		if slices.Contains(skip, typ) {
			continue
		}
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if t, _ := m["type"].(string); t != typ {
				continue
			}
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			var opt *response.ConditionOption
			switch s, _ := m["status"].(string); s {
			case "True":
				opt = response.ConditionTrue(rsp, typ, reason)
			case "False":
				opt = response.ConditionFalse(rsp, typ, reason)
			default:
				opt = response.ConditionUnknown(rsp, typ, reason)
			}
			if msg != "" {
				opt = opt.WithMessage(msg)
			}
			opt.TargetCompositeAndClaim()
		}
	}
}

// setStatus writes the status fields that the function owns onto the
// response's desired XR, leaving whatever earlier functions in the pipeline
// set.
func setStatus(rsp *fnv1.RunFunctionResponse, rs xr.RolloutStatus, rts xr.RouteStatus) error {
	routeStatus, err := valueOf(&rts)
	if err != nil {
		return err
	}
	if err := setRollout(rsp, rs); err != nil {
		return err
	}
	statusOf(rsp).Fields["route"] = routeStatus
	return nil
}

// setRollout writes status.rollout onto the response's desired XR.
func setRollout(rsp *fnv1.RunFunctionResponse, rs xr.RolloutStatus) error {
	rolloutStatus, err := valueOf(&rs)
	if err != nil {
		return err
	}
	statusOf(rsp).Fields["rollout"] = rolloutStatus
	return nil
}

// statusOf is the status of the response's desired XR, created when
// missing.
func statusOf(rsp *fnv1.RunFunctionResponse) *structpb.Struct {
	if rsp.GetDesired() == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.Desired.GetComposite() == nil {
		rsp.Desired.Composite = &fnv1.Resource{}
	}
	composite := rsp.Desired.Composite
	if composite.GetResource() == nil {
		composite.Resource = &structpb.Struct{}
	}
	if composite.Resource.Fields == nil {
		composite.Resource.Fields = map[string]*structpb.Value{}
	}
	status := composite.Resource.Fields["status"].GetStructValue()
	if status == nil {
		status = &structpb.Struct{}
		composite.Resource.Fields["status"] = structpb.NewStructValue(status)
	}
	if status.Fields == nil {
		status.Fields = map[string]*structpb.Value{}
	}
	return status
}

// routeStatus is status.route: the composed route and its parents' verdicts.
func routeStatus(cr *xr.CanaryRoute, obs route.Observation) xr.RouteStatus {
	s := xr.RouteStatus{Kind: cr.Spec.Kind, Name: cr.RouteName, Namespace: cr.RouteNamespace}
	for _, v := range obs.Parents {
		p := xr.ParentStatus{
			Name:         string(v.Ref.Name),
			Namespace:    string(ptr.Deref(v.Ref.Namespace, "")),
			SectionName:  string(ptr.Deref(v.Ref.SectionName, "")),
			Port:         ptr.Deref(v.Ref.Port, 0),
			Accepted:     v.Accepted,
			ResolvedRefs: v.ResolvedRefs,
		}
		if !v.Ready() {
			p.Reason = v.Reason
		}
		s.Parents = append(s.Parents, p)
	}
	return s
}

// setConditions sets the function's XR conditions, and a Warning for every
// reference the policy refused or grant the XR cannot compose.
func setConditions(rsp *fnv1.RunFunctionResponse, cr *xr.CanaryRoute, obs route.Observation, grants grant.Result, d rollout.Decision) {
	if v, held := obs.FirstHold(); held || !obs.Exists {
		reason, msg := route.ReasonPending, "the route has not been created yet"
		if obs.Exists {
			reason, msg = v.Reason, explainHold(v)
		}
		response.ConditionFalse(rsp, conditionRouteAccepted, reason).WithMessage(msg).TargetCompositeAndClaim()
	} else {
		response.ConditionTrue(rsp, conditionRouteAccepted, reasonAccepted).
			WithMessage("every parent accepted the route and resolved its references").TargetCompositeAndClaim()
	}

	problems := make([]string, 0, len(grants.Refused)+len(grants.NotComposable))
	reason := ""
	for _, r := range grants.Refused {
		msg := fmt.Sprintf("the %s backend %s is refused: %s", r.Role, describeRef(r.Ref), r.Reason)
		problems = append(problems, msg)
		reason = grant.ReasonNotAllowedByPolicy
		if cr.Spec.ReferenceGrants != xr.GrantsSkip {
			response.Warning(rsp, errors.New(msg)).WithReason(grant.ReasonNotAllowedByPolicy).TargetCompositeAndClaim()
		}
	}
	for _, g := range grants.NotComposable {
		msg := "a namespaced CanaryRoute cannot compose into another namespace; the platform team must create " + grant.Describe(g)
		problems = append(problems, msg)
		if reason == "" {
			reason = grant.ReasonGrantNotComposable
		}
		response.Warning(rsp, errors.New(msg)).WithReason(grant.ReasonGrantNotComposable).TargetCompositeAndClaim()
	}
	switch {
	case cr.Spec.ReferenceGrants == xr.GrantsSkip:
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonSkipped).
			WithMessage("spec.referenceGrants is Skip: grants are managed outside this CanaryRoute").TargetCompositeAndClaim()
	case len(problems) > 0:
		response.ConditionFalse(rsp, conditionReferenceGrantsReady, reason).
			WithMessage(strings.Join(problems, "; ")).TargetCompositeAndClaim()
	case len(grants.Grants) == 0:
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonReady).
			WithMessage("no backend in another namespace needs a ReferenceGrant").TargetCompositeAndClaim()
	default:
		namespaces := make([]string, 0, len(grants.Grants))
		for _, g := range grants.Grants {
			namespaces = append(namespaces, g.Namespace)
		}
		response.ConditionTrue(rsp, conditionReferenceGrantsReady, reasonReady).
			WithMessage("ReferenceGrants composed in namespaces: " + strings.Join(namespaces, ", ")).TargetCompositeAndClaim()
	}

	if d.Healthy {
		response.ConditionTrue(rsp, conditionRolloutHealthy, string(d.Status.Phase)).
			WithMessage(rolloutMessage(d.Status)).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, conditionRolloutHealthy, d.Reason).
			WithMessage(rolloutMessage(d.Status)).TargetCompositeAndClaim()
	}
}

func rolloutMessage(s xr.RolloutStatus) string {
	if s.Message != "" {
		return s.Message
	}
	return fmt.Sprintf("%s: canary %d%%, primary %d%%", s.Phase, s.CanaryWeight, s.PrimaryWeight)
}

// describeHold says in a few words why a parent does not accept the route,
// as the rollout message shows it.
func describeHold(v route.ParentVerdict) string {
	what := "has not accepted the route"
	if v.Accepted {
		what = "has not resolved the route's references"
	}
	return fmt.Sprintf("%s %s (%s)", v.Describe(), what, v.Reason)
}

// explainHold is describeHold with the parent's own message, for the
// RouteAccepted condition.
func explainHold(v route.ParentVerdict) string {
	if v.Message == "" {
		return describeHold(v)
	}
	return describeHold(v) + ": " + v.Message
}

// describeRef names a backend as kind namespace/name:port.
func describeRef(ref gwv1.BackendObjectReference) string {
	s := backend.KindString(backend.GroupKindOf(ref)) + " "
	if ref.Namespace != nil {
		s += string(*ref.Namespace) + "/"
	}
	s += string(ref.Name)
	if ref.Port != nil {
		s += fmt.Sprintf(":%d", *ref.Port)
	}
	return s
}
