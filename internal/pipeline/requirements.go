// Package pipeline is the function's side of Crossplane's function
// pipeline: the one package that reads its RunFunctionRequest and writes its
// RunFunctionResponse, through function-sdk-go. Package main hands it typed
// values; nothing else touches the protobuf.
//
// Crossplane's requirements loop (this file): within one reconcile,
// Crossplane calls a function again, with the context of its last response
// and the objects its requirements name, until two calls in a row make the
// same requirements (at most a few times), and applies the last response
// only. The function names its requirements here, records them in each
// response's pipeline context, and reads the record back: whether
// Crossplane applies a response (what the metrics count), and what the call
// before asked for (what a rescued abort asks for again).
package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/ownership"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Names of the function's resource requirements.
const (
	// Claim asks for the claim that a cluster-scoped XR says it is bound
	// to.
	Claim = "claim"
	// Workload asks for the object that runs the canary's revision of a
	// release.
	Workload = "workload-canary"
	// prefixExisting starts the name of the requirement of an object the
	// run is about to compose; prefixGate that of a gate's object.
	prefixExisting = "existing-"
	prefixGate     = "gate-"
)

// Existing is the name of the requirement of the object the run is about
// to compose under a key.
func Existing(key string) string { return prefixExisting + key }

// Gate is the name of the requirement of the i-th gate's object.
func Gate(i int) string { return prefixGate + strconv.Itoa(i) }

// ContextKey is the pipeline context key under which every response
// records the requirements it makes.
const ContextKey = "canaryroute.fn.crossplane.io/requirements"

// Record records the response's requirements in its context, which it
// copies first: response.To shares the request's, and the function never
// writes into the request it was given. The record is the requirements'
// protobuf encoding (deterministic, so that the same request gives the same
// response), in base64: a tenth of a run cheaper than their JSON as a
// Struct, and nobody reads it but the function.
func Record(rsp *fnv1.RunFunctionResponse) {
	var record *structpb.Value
	if r := rsp.GetRequirements(); r != nil {
		if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(r); err == nil {
			record = structpb.NewStringValue(base64.StdEncoding.EncodeToString(b))
		}
	}
	if record == nil && rsp.GetContext().GetFields()[ContextKey] == nil {
		return
	}
	setContext(rsp, map[string]*structpb.Value{ContextKey: record})
}

// Previous are the requirements the call before this one made in the same
// reconcile, as its response recorded them; nil on the first call. The key
// is the function's own: another step of the pipeline that writes it (a
// misconfiguration) can at worst make a rescued abort ask for what
// Crossplane cannot fetch, or a transition count on a response Crossplane
// discards, and Own keeps the rescue to requirements of the function's own
// names and shapes.
func Previous(req *fnv1.RunFunctionRequest) *fnv1.Requirements {
	v, ok := request.GetContextKey(req, ContextKey)
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

// Own keeps of recorded requirements those of the function's own names and
// shapes: objects asked for by name (the objects it composes, the gates'
// objects, the claim), and CRD schemas.
func Own(r *fnv1.Requirements) *fnv1.Requirements {
	if r == nil {
		return nil
	}
	out := &fnv1.Requirements{}
	for name, sel := range r.GetResources() {
		own := strings.HasPrefix(name, prefixExisting) || strings.HasPrefix(name, prefixGate) || name == Claim || name == Workload
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

// Settled reports whether Crossplane applies the response: it makes the
// requirements the call before made (none, on the first call), or ends in
// a Fatal result, so Crossplane calls no more in this reconcile.
func Settled(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) bool {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return true
		}
	}
	return proto.Equal(Previous(req), rsp.GetRequirements())
}

// Resources are the objects a run asks Crossplane for, by requirement
// name, each by name in its namespace: each gate's object, in the route
// namespace only; the claim that a cluster-scoped XR says it is bound to,
// where it may be asked for (see ownership.ClaimAskable); each object the
// run is about to compose (targets); and the workload of a release's
// canary revision, in the route namespace only. Crossplane calls the function
// again until the requirements stop changing, so they depend on the spec
// alone.
func Resources(cr *xr.CanaryRoute, self ownership.Ref, targets []names.Target) map[string]*fnv1.ResourceSelector {
	byName := func(apiVersion, kind, namespace, name string) *fnv1.ResourceSelector {
		return &fnv1.ResourceSelector{ApiVersion: apiVersion, Kind: kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: name}, Namespace: &namespace}
	}
	out := make(map[string]*fnv1.ResourceSelector, len(cr.Spec.Traffic.Gates)+len(targets)+1)
	for i, g := range cr.Spec.Traffic.Gates {
		out[Gate(i)] = byName(g.APIVersion, g.Kind, cr.RouteNamespace, g.Name)
	}
	if c := cr.Claim; ownership.ClaimAskable(c, self) {
		out[Claim] = byName(c.APIVersion, c.Kind, c.Namespace, c.Name)
	}
	for _, t := range targets {
		out[Existing(string(t.Key))] = byName(t.APIVersion, t.Kind, t.Namespace, t.Name)
	}
	if r := cr.Spec.Release; r != nil && r.Workload != nil {
		out[Workload] = byName(r.Workload.APIVersion, r.Workload.Kind, cr.RouteNamespace, r.Workload.NameOf(cr.Spec.Canary.Revision))
	}
	return out
}

// Targets are the objects that requirements ask for as objects a run is
// about to compose (see Resources): what a remembered answer composes,
// which must still not be another owner's.
func Targets(r *fnv1.Requirements) []names.Target {
	var out []names.Target
	for name, sel := range r.GetResources() {
		key, ok := strings.CutPrefix(name, prefixExisting)
		if !ok || sel.GetMatchName() == "" {
			continue
		}
		out = append(out, names.Target{Key: names.Key(key), APIVersion: sel.GetApiVersion(), Kind: sel.GetKind(), Namespace: sel.GetNamespace(), Name: sel.GetMatchName()})
	}
	return out
}

// MeasurementsKey is the pipeline context key under which a response
// records the measurements of traffic.metrics its reconcile took: the next
// call of the same reconcile takes them as its own rather than query again,
// so a metric is queried once an interval however often Crossplane calls.
const MeasurementsKey = "canaryroute.fn.crossplane.io/measurements"

// RecordMeasurements records the measurements of the reconcile in the
// response's context, which it copies first; none records nothing. The
// record is their JSON, whose map keys come out sorted.
func RecordMeasurements(rsp *fnv1.RunFunctionResponse, m map[string]xr.Measurement) {
	recordContext(rsp, MeasurementsKey, m)
}

// Measurements are the measurements an earlier call of this reconcile
// recorded; nil on the first call, or for a record that does not decode
// (another pipeline step writing the key, a misconfiguration: the run then
// measures again).
func Measurements(req *fnv1.RunFunctionRequest) map[string]xr.Measurement {
	return contextRecord[xr.Measurement](req, MeasurementsKey, maxMeasurementsRecord, xr.MaxMetrics)
}

// recordContext records a reconcile's map of records under a key of the
// response's context, as JSON (its keys sorted); none records nothing.
func recordContext[T any](rsp *fnv1.RunFunctionResponse, key string, m map[string]T) {
	if len(m) == 0 {
		return
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	setContext(rsp, map[string]*structpb.Value{key: structpb.NewStringValue(string(b))})
}

// contextRecord is the map of records an earlier call of the reconcile
// recorded under a key; nil for none, or for a record of more than
// maxBytes or maxEntries, or that does not decode: any pipeline step may
// write the key.
func contextRecord[T any](req *fnv1.RunFunctionRequest, key string, maxBytes, maxEntries int) map[string]T {
	v, ok := request.GetContextKey(req, key)
	if !ok || len(v.GetStringValue()) > maxBytes {
		return nil
	}
	var m map[string]T
	if json.Unmarshal([]byte(v.GetStringValue()), &m) != nil || len(m) > maxEntries {
		return nil
	}
	return m
}

// maxMeasurementsRecord bounds the record read back: ten measurements of a
// few hundred bytes each.
const maxMeasurementsRecord = 64 << 10

// HookCallsKey is the pipeline context key under which a response records
// the hooks' calls its reconcile made: the next call of the same reconcile
// knows them, so a hook is called once per transition however often
// Crossplane calls.
const HookCallsKey = "canaryroute.fn.crossplane.io/hook-calls"

// RecordHookCalls records the hooks' calls of the reconcile in the
// response's context; none records nothing.
func RecordHookCalls(rsp *fnv1.RunFunctionResponse, calls map[string]xr.HookStatus) {
	recordContext(rsp, HookCallsKey, calls)
}

// HookCalls are the hooks' calls an earlier call of this reconcile
// recorded; nil on the first call, or for a record that does not decode
// or is too large (another pipeline step writing the key: the run then
// goes by the status alone).
func HookCalls(req *fnv1.RunFunctionRequest) map[string]xr.HookStatus {
	m := contextRecord[xr.HookStatus](req, HookCallsKey, maxHookCallsRecord, xr.MaxHooks)
	for name, rec := range m {
		// A record is its hook's: one under another name is forged.
		if rec.Name != name {
			return nil
		}
		// What the run writes back to status must be what the XRD
		// admits, like the status's own records.
		admitted, ok := rec.Admitted()
		if !ok {
			delete(m, name)
			continue
		}
		m[name] = admitted
	}
	return m
}

// maxHookCallsRecord bounds the record read back: sixteen records whose
// transition and reason of 256 characters each JSON may escape to six
// bytes a character (an HTML error page's '<'), about 3 KiB a record.
const maxHookCallsRecord = 64 << 10
