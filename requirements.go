package main

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// errNoRequiredResources is the Fatal of a caller that advertises its
// capabilities, but not required resources.
const errNoRequiredResources = "the caller advertises its capabilities but not CAPABILITY_REQUIRED_RESOURCES, which the function needs: it reads the objects it is about to compose (never to compose over another owner's), the gate objects and the claim through required resources. Run it under Crossplane v2.0 or later"

// errTLSWithoutSchemas refuses tls to a caller that hands no CRD schemas.
const errTLSWithoutSchemas = "a BackendTLSPolicy needs a caller that hands the function CRD schemas (CAPABILITY_REQUIRED_SCHEMAS, Crossplane v2.2 or later), so that it composes one only where the cluster serves BackendTLSPolicy v1 (Gateway API v1.4 or later); under an older Crossplane, remove tls and create the BackendTLSPolicy for the proxy Service yourself"

// checkCapabilities refuses a caller that advertises its capabilities
// without one the function needs. A caller that advertises none predates
// capability advertisement (Crossplane before v2.0): it may still answer
// required resources, as Crossplane v1.15 and later do, so it is not
// refused.
func checkCapabilities(req *fnv1.RunFunctionRequest) error {
	if request.AdvertisesCapabilities(req) && !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES) {
		return errors.New(errNoRequiredResources)
	}
	return nil
}

// chooseVersions chooses the versions a run composes: from the schemas
// Crossplane handed, where it offers them; else, while they are fresh, as an
// earlier run read them (status.route.versions), so that Crossplane need
// not fetch and parse the schemas on every reconcile; else the Input's
// overrides and the defaults, and the run asks for the schemas.
func chooseVersions(req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, prev *xr.RouteStatus, observed map[resource.Name]resource.ObservedComposed, now time.Time) compose.Chooser {
	return func(need served.Need, o served.Overrides) (served.Versions, field.ErrorList) {
		if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) {
			if need.BackendTLS != nil && request.AdvertisesCapabilities(req) {
				// Crossplane v2.0 and v2.1. The run asks for the
				// BackendTLSPolicy it is about to compose; on a cluster
				// that does not serve its version, Crossplane fails every
				// reconcile on that request, an emergency abort's too, and
				// no Input setting can say another version. (A caller that
				// advertises nothing is judged as checkCapabilities does.)
				return served.Versions{}, field.ErrorList{field.Forbidden(need.BackendTLS, errTLSWithoutSchemas)}
			}
			return served.Choose(need, o, served.Schemas{})
		}
		schemas := served.NewSchemas(self, need, func(name string) (map[string]any, bool) {
			s, ok := request.GetRequiredSchema(req, name)
			if !ok || s == nil {
				return nil, ok
			}
			return s.AsMap(), true
		})
		if schemas.Handed() {
			return served.Choose(need, o, schemas)
		}
		if v, ok := served.Reuse(need, o, recorded(prev), now); ok && borneOut(v, need, observed) {
			return v, nil
		}
		return served.Choose(need, o, schemas)
	}
}

// borneOut reports whether the composed objects as observed bear out the
// versions a status records: the route exists at the recorded version, and
// so does every grant and BackendTLSPolicy observed, at least one of each
// where the run composes them. Status is anyone's to write who may write
// the XR's status, and a version it names that the cluster does not serve
// would make Crossplane fail every reconcile on the requirement for the
// object at that version, an emergency abort's too, for ten minutes; a
// kind not composed yet has the schemas read.
func borneOut(v served.Versions, need served.Need, observed map[resource.Name]resource.ObservedComposed) bool {
	var routeSeen, grantSeen, tlsSeen bool
	for name, o := range observed {
		k, apiVersion := compose.Key(name), o.Resource.GetAPIVersion()
		var want string
		switch {
		case k == compose.RouteKey(xr.RouteKind(need.RouteKind)):
			want, routeSeen = string(v.Route), true
		case k.IsGrant():
			want, grantSeen = string(v.Grant), true
		case k.IsBackendTLSPolicy():
			want, tlsSeen = v.TLS, true
		default:
			continue
		}
		if apiVersion != served.Group+"/"+want {
			return false
		}
	}
	return routeSeen && (grantSeen || !need.Grants) && (tlsSeen || need.BackendTLS == nil)
}

// recorded are the versions status.route records.
func recorded(prev *xr.RouteStatus) *served.Recorded {
	if prev == nil || prev.Versions == nil {
		return nil
	}
	v := prev.Versions
	return &served.Recorded{Kind: string(prev.Kind), Route: v.Route, Grant: v.ReferenceGrant, TLS: v.BackendTLSPolicy, CheckedAt: v.CheckedAt.Time}
}

// requireSchemas asks Crossplane for the schemas of the kinds the run
// composes, at every version the function composes, and for the XR's own,
// where Crossplane offers them and the run does not reuse the versions an
// earlier run read. Once asked, they are asked on every call of the
// reconcile, so that the requirements settle.
func requireSchemas(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, plan *compose.Plan) {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || plan.Versions.Source == served.SourceStatus {
		return
	}
	for name, gvk := range served.Requirements(self, plan.Need) {
		apiVersion, kind := gvk.ToAPIVersionAndKind()
		response.RequireSchema(rsp, name, apiVersion, kind)
	}
}

// schemasPending reports whether the run waits for the schemas it asks
// for: Crossplane offers them, no earlier run's versions are reused, and
// this call has not had them yet (the first call of a reconcile). Such a
// call asks for the schemas alone. Crossplane fetches required resources
// before schemas and fails the reconcile on a kind and version the cluster
// does not serve, so asking for the objects about to be composed at the
// default versions would stop the reconcile, on a cluster that serves other
// versions, before the schemas that tell the versions are ever handed. The
// call's response is never applied: its requirements send Crossplane back
// for another call.
func schemasPending(req *fnv1.RunFunctionRequest, plan *compose.Plan) bool {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || plan.Versions.Source != served.SourceDefaults {
		return false
	}
	_, answered := request.GetRequiredSchema(req, served.SelfKey)
	return !answered
}

// requirementClaim asks Crossplane for the claim that a cluster-scoped XR
// says it is bound to.
const requirementClaim = "claim"

// prefixExisting starts the name of the requirement that asks Crossplane
// for an object the run is about to compose.
const prefixExisting = "existing-"

// prefixGate starts the name of the requirement of a gate's object.
const prefixGate = "gate-"

// gateKey is the name of a gate's resource requirement.
func gateKey(i int) string { return prefixGate + strconv.Itoa(i) }

// require asks Crossplane for each gate's object, by name, in the route
// namespace only, and for each object the run is about to compose, by name.
// Crossplane calls the function again until the requirements stop changing,
// so they depend on the spec alone.
func require(rsp *fnv1.RunFunctionResponse, cr *xr.CanaryRoute, self ownership.Ref, targets []compose.Target) {
	if rsp.GetRequirements() == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = make(map[string]*fnv1.ResourceSelector, len(cr.Spec.Traffic.Gates)+len(targets))
	}
	for i, g := range cr.Spec.Traffic.Gates {
		rsp.Requirements.Resources[gateKey(i)] = &fnv1.ResourceSelector{
			ApiVersion: g.APIVersion,
			Kind:       g.Kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: g.Name},
			Namespace:  ptr.To(cr.RouteNamespace),
		}
	}
	if c := cr.Claim; claimAskable(c, self) {
		rsp.Requirements.Resources[requirementClaim] = &fnv1.ResourceSelector{
			ApiVersion: c.APIVersion,
			Kind:       c.Kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: c.Name},
			Namespace:  ptr.To(c.Namespace),
		}
	}
	for _, t := range targets {
		rsp.Requirements.Resources[prefixExisting+string(t.Key)] = &fnv1.ResourceSelector{
			ApiVersion: t.APIVersion,
			Kind:       t.Kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: t.Name},
			Namespace:  ptr.To(t.Namespace),
		}
	}
}

// claimProven reports whether the claim a cluster-scoped XR says it is bound
// to exists and references the XR. On the first call of a reconcile
// Crossplane has fetched nothing yet: that call's response is never applied,
// since the requirement it makes sends Crossplane back for the claim and a
// second call, so it proceeds as if proven.
func claimProven(required map[string][]resource.Required, cr *xr.CanaryRoute, self ownership.Ref) bool {
	c := cr.Claim
	items, answered := required[requirementClaim]
	if !claimAskable(c, self) {
		return false
	}
	if !answered {
		return true
	}
	for _, r := range items {
		if r.Resource.GetAPIVersion() == c.APIVersion && r.Resource.GetKind() == c.Kind && ownership.ClaimProven(r.Resource, c.Name, c.Namespace, self) {
			return true
		}
	}
	return false
}

// claimAskable reports whether the function asks Crossplane for the claim a
// claimRef names: a claim is of the XR's own API group (an XRD defines both
// in one group), so a hand-written claimRef cannot make Crossplane read a
// Secret, or fail its reconcile on a kind that does not exist.
func claimAskable(c *xr.ClaimRef, self ownership.Ref) bool {
	if c == nil || c.Kind == "" || c.Name == "" {
		return false
	}
	claim, err := schema.ParseGroupVersion(c.APIVersion)
	if err != nil || claim.Version == "" {
		return false
	}
	composite, err := schema.ParseGroupVersion(self.APIVersion)
	return err == nil && claim.Group == composite.Group && claim.Group != ""
}

// existing returns the objects Crossplane fetched for a target.
func existing(required map[string][]resource.Required) func(compose.Key) []metav1.Object {
	return func(k compose.Key) []metav1.Object {
		items := required[prefixExisting+string(k)]
		out := make([]metav1.Object, 0, len(items))
		for _, r := range items {
			out = append(out, r.Resource)
		}
		return out
	}
}

// gateObjects returns the objects Crossplane fetched for a gate.
func gateObjects(required map[string][]resource.Required) func(int) []*unstructured.Unstructured {
	return func(i int) []*unstructured.Unstructured {
		items := required[gateKey(i)]
		out := make([]*unstructured.Unstructured, 0, len(items))
		for _, r := range items {
			out = append(out, r.Resource)
		}
		return out
	}
}

// analysisObjects are the observed analysis objects, by key.
func analysisObjects(observed map[resource.Name]resource.ObservedComposed) map[compose.Key]map[string]any {
	out := map[compose.Key]map[string]any{}
	for name, o := range observed {
		if k := compose.Key(name); k.IsAnalysis() {
			out[k] = o.Resource.Object
		}
	}
	return out
}

// ours are the observed composed resources that the function composes, as
// their unstructured content; the others are other functions' business.
func ours(observed map[resource.Name]resource.ObservedComposed) map[compose.Key]map[string]any {
	out := make(map[compose.Key]map[string]any, len(observed))
	for name, o := range observed {
		if k := compose.Key(name); k.Ours() {
			out[k] = o.Resource.Object
		}
	}
	return out
}

// contextRequirements is the pipeline context key under which every
// response records the requirements it makes. Crossplane calls a function
// again, with the context of its last response, until two calls in a row
// make the same requirements, and applies the last response: the record
// tells a run whether Crossplane applies its response (metrics.go), and lets
// a rescued abort make the requirements of the call before it (rescue.go).
const contextRequirements = "canaryroute.fn.crossplane.io/requirements"

// recordRequirements records the response's requirements in its context,
// which it copies first: response.To shares the request's, and the function
// never writes into the request it was given. The record is the
// requirements' protobuf encoding (deterministic, so that the same request
// gives the same response), in base64: a tenth of a run cheaper than their
// JSON as a Struct, and nobody reads it but the function.
func recordRequirements(rsp *fnv1.RunFunctionResponse) {
	c := &structpb.Struct{}
	if rsp.GetContext() != nil {
		c = proto.Clone(rsp.GetContext()).(*structpb.Struct) //nolint:forcetypeassert // A clone has the type of its original.
	}
	if c.Fields == nil {
		c.Fields = map[string]*structpb.Value{}
	}
	delete(c.Fields, contextRequirements)
	if r := rsp.GetRequirements(); r != nil {
		if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(r); err == nil {
			c.Fields[contextRequirements] = structpb.NewStringValue(base64.StdEncoding.EncodeToString(b))
		}
	}
	if len(c.Fields) == 0 && rsp.GetContext() == nil {
		return
	}
	rsp.Context = c
}

// previousRequirements are the requirements the call before this one made in
// the same reconcile, as its response recorded them; nil on the first call.
// The key is the function's own: another step of the pipeline that writes
// it (a misconfiguration) can at worst make a rescued abort ask for what
// Crossplane cannot fetch, or a transition count on a response Crossplane
// discards, and ownRequirements keeps the rescue to requirements of the
// function's own names and shapes.
func previousRequirements(req *fnv1.RunFunctionRequest) *fnv1.Requirements {
	v, ok := request.GetContextKey(req, contextRequirements)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(v.GetStringValue())
	if err != nil {
		return nil
	}
	r := &fnv1.Requirements{}
	if proto.Unmarshal(b, r) != nil {
		return nil
	}
	return r
}

// ownRequirements keeps of recorded requirements those of the function's
// own names and shapes: objects asked for by name (the objects it composes,
// the gates' objects, the claim), and CRD schemas.
func ownRequirements(r *fnv1.Requirements) *fnv1.Requirements {
	if r == nil {
		return nil
	}
	out := &fnv1.Requirements{}
	for name, sel := range r.GetResources() {
		own := strings.HasPrefix(name, prefixExisting) || strings.HasPrefix(name, prefixGate) || name == requirementClaim
		if own && sel.GetMatchName() != "" {
			if out.Resources == nil {
				out.Resources = map[string]*fnv1.ResourceSelector{}
			}
			out.Resources[name] = sel
		}
	}
	for name, sel := range r.GetSchemas() {
		if strings.HasPrefix(name, served.SchemaPrefix) {
			if out.Schemas == nil {
				out.Schemas = map[string]*fnv1.SchemaSelector{}
			}
			out.Schemas[name] = sel
		}
	}
	return out
}

// settled reports whether Crossplane applies the response: it makes the
// requirements the call before made (none, on the first call), or ends in
// a Fatal result, so Crossplane calls no more in this reconcile.
func settled(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) bool {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return true
		}
	}
	return proto.Equal(previousRequirements(req), rsp.GetRequirements())
}
