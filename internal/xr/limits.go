package xr

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/crossplane-contrib/function-canary-route/internal/bounds"
)

// The limits of the CanaryRoute's fields are its schema's: the markers of
// api.go state each once, hack/xrdgen writes the schema they make into the
// XRDs and into zz_generated.schema.json, and the function reads them from
// there, once, when it starts. The XRDs, package bounds and the checks of
// this package cannot disagree, and a field added to api.go with a limit is
// bounded before decoding without another edit.

// generatedSchema is the openAPIV3Schema of the cluster-scoped XRD (spec and
// status), as hack/xrdgen generates it from api.go.
//
//go:embed zz_generated.schema.json
var generatedSchema []byte

// A size is a limit the schema states: maxItems of a list, maxProperties of
// a map (a map's values are additionalProperties; a map without
// maxProperties has bounds.DefaultItems), maxLength of a string.
type size struct {
	limit    int
	isString bool
}

// sizes are the schema's sizes, by bounds pattern (spec.rules[*].filters).
var sizes = statedSizes(generatedSchema)

// specLimits are the sizes of the spec, exactly the schema's: a limit the
// XRD admits and the function refuses would make a valid-looking
// CanaryRoute a Fatal, and the reverse would let the API server store what
// no run can compose. Package bounds measures strings in bytes where the
// API server counts characters, which differ outside ASCII only: the
// spec's names, hostnames and paths hold ASCII (the function's own checks
// refuse anything else in most of them), and its expressions are measured
// in bytes by their evaluator too.
var specLimits = limits("spec.", func(s size) int { return s.limit })

// statusLimits are the sizes of the status the function reads back: at
// least the schema's, so that no status the API server admits makes every
// later run a Fatal, which never updates status. A list or map holds at
// least bounds.DefaultItems; a string of n characters may hold n times
// utf8.UTFMax bytes.
var statusLimits = limits("status.", func(s size) int {
	if s.isString {
		return max(s.limit*utf8.UTFMax, bounds.DefaultString)
	}
	return max(s.limit, bounds.DefaultItems)
})

// Limits that the checks of this package use by name.
var (
	maxParentRefs = limit("spec.parentRefs")
	maxHostnames  = limit("spec.hostnames")
	// MaxRules is the most rules spec.rules holds.
	MaxRules             = limit("spec.rules")
	maxSteps             = limit("spec.traffic.steps")
	maxGates             = limit("spec.traffic.gates")
	maxAnalysisTemplates = limit("spec.traffic.analysis")
	maxStepAnalysis      = limit("spec.traffic.steps[*].analysis")
	// maxAnalysisName is the most characters of an analysis name, as
	// steps name them; the names of traffic.analysis are the same.
	maxAnalysisName = limit("spec.traffic.steps[*].analysis[*]")
	maxSelector     = limit("spec.primary.service.selector")
	// MaxMetrics is the most metrics traffic.metrics holds.
	MaxMetrics    = limit("spec.traffic.metrics")
	maxMetricName = limit("spec.traffic.metrics[*].name")
	// MaxMeasurements is how many measurements of each metric
	// status.rollout.metrics keeps.
	MaxMeasurements = limit("status.rollout.metrics[*].measurements")
	// MaxMeasurementValue is the most characters of a measurement's value
	// and baseline: a number as Prometheus writes one holds at most 24.
	MaxMeasurementValue = limit("status.rollout.metrics[*].measurements[*].value")
	maxConditionType    = limit("spec.traffic.gates[*].conditionType")

	// MaxHooks is the most hooks traffic.hooks holds, and records
	// status.rollout.hooks.
	MaxHooks                   = limit("spec.traffic.hooks")
	maxHookName                = limit("spec.traffic.hooks[*].name")
	maxHookMetadata            = limit("spec.traffic.hooks[*].metadata")
	maxHookMetadataKey         = 63
	maxHookMetadataValue       = 1024
	maxHookTransition          = limit("status.rollout.hooks[*].transition")
	maxHookFailures      int32 = 1000000

	// MaxVerdicts is the most verdicts status.rollout.analysis holds.
	MaxVerdicts = limit("status.rollout.analysis")
	// MaxStatusMessage is the most characters of status.rollout.message.
	MaxStatusMessage = limit("status.rollout.message")
	// MaxStatusValue is the most characters of a value the status quotes
	// from elsewhere, such as a gate's reason in status.rollout.reason.
	MaxStatusValue = limit("status.rollout.reason")
	// maxParentReason is the most characters of a parent's reason in
	// status.route.
	maxParentReason = limit("status.route.parents[*].reason")
)

// limit is the size the schema states at a pattern. Every pattern named
// above is in the schema: a missing one is a bug that any test finds, as
// the package fails to start.
func limit(pattern string) int {
	s, ok := sizes[pattern]
	if !ok {
		panic(fmt.Sprintf("the generated schema states no size of %s: run go generate ./...", pattern))
	}
	return s.limit
}

// limits are the bounds of the sizes below a prefix, with the limit that
// of says of each size. A map is always named, so that package bounds walks
// its keys as data.
func limits(prefix string, of func(size) int) bounds.Limits {
	out := bounds.Limits{}
	for pattern, s := range sizes {
		if len(pattern) > len(prefix) && pattern[:len(prefix)] == prefix {
			out[pattern] = of(s)
		}
	}
	return out
}

// schemaNode is what the sizes are read from in an OpenAPI v3 schema.
type schemaNode struct {
	Properties           map[string]*schemaNode `json:"properties"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties *schemaNode            `json:"additionalProperties"`
	MaxItems             *int                   `json:"maxItems"`
	MaxProperties        *int                   `json:"maxProperties"`
	MaxLength            *int                   `json:"maxLength"`
}

// statedSizes returns the sizes that a generated schema states, by bounds
// pattern below spec and status.
func statedSizes(b []byte) map[string]size {
	var root schemaNode
	if err := json.Unmarshal(b, &root); err != nil {
		panic(fmt.Sprintf("cannot read the generated schema: %v", err))
	}
	out := map[string]size{}
	for _, k := range []string{"spec", "status"} {
		s, ok := root.Properties[k]
		if !ok {
			panic("the generated schema has no " + k)
		}
		s.walk(k, out)
	}
	return out
}

// walk records the sizes of s, at pattern, and of what it holds.
func (s *schemaNode) walk(pattern string, out map[string]size) {
	switch {
	case s.MaxItems != nil:
		out[pattern] = size{limit: *s.MaxItems}
	case s.MaxLength != nil:
		out[pattern] = size{limit: *s.MaxLength, isString: true}
	case s.AdditionalProperties != nil:
		out[pattern] = size{limit: bounds.DefaultItems}
		if s.MaxProperties != nil {
			out[pattern] = size{limit: *s.MaxProperties}
		}
	case s.MaxProperties != nil:
		// Package bounds counts the keys of a map, whose keys are data;
		// an object of named fields has as many keys as it has fields.
		panic(fmt.Sprintf("the generated schema bounds the fields of %s, which package bounds cannot check", pattern))
	}
	for name, p := range s.Properties {
		p.walk(pattern+"."+name, out)
	}
	if s.Items != nil {
		s.Items.walk(pattern+"[*]", out)
	}
	if s.AdditionalProperties != nil {
		s.AdditionalProperties.walk(pattern+"[*]", out)
	}
}
