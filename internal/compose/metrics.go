package compose

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/expr"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// compileMetrics checks the metrics against the policy and compiles their
// successWhen: each names a provider the Input lists, its query is one the
// provider's kind takes (PromQL for prometheus) with known placeholders,
// its successWhen a bool over result (and baseline, which only a metric
// that compares to the primary measures). The errors name the fields. A
// PromQL query is checked once for the runs that read it
// (promql.CheckOnce): its check can cost tens of milliseconds.
func compileMetrics(cr *xr.CanaryRoute, pol *policy.Policy, compiler *expr.Compiler) (map[string]*expr.Program, field.ErrorList) {
	out := map[string]*expr.Program{}
	var errs field.ErrorList
	for i, m := range cr.Spec.Traffic.Metrics {
		p := field.NewPath("spec", "traffic", "metrics").Index(i)
		if _, ok := pol.MetricProviders[m.Provider]; !ok {
			errs = append(errs, field.NotFound(p.Child("provider"), fielderr.Cut(m.Provider, fielderr.MaxValue)))
		}
		// The provider's kind checks its query: PromQL once per text
		// (promql.CheckOnce) for Prometheus and a provider not listed,
		// placeholders and length for the others.
		if err := pol.MetricProviders[m.Provider].Check(m.Query); err != nil {
			errs = append(errs, field.Invalid(p.Child("query"), fielderr.Cut(m.Query, fielderr.MaxValue), err.Error()))
		}
		prg, err := compiler.CompileMetric(m.SuccessWhen)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("successWhen"), m.SuccessWhen, "must be a CEL expression over result (and baseline) that returns a bool: "+err.Error()))
		case prg.UsesBaseline() && !m.CompareToPrimary:
			errs = append(errs, field.Invalid(p.Child("successWhen"), m.SuccessWhen, "baseline is the primary's number, which only compareTo: primary measures"))
		case !prg.UsesBaseline() && m.CompareToPrimary:
			errs = append(errs, field.Invalid(p.Child("compareTo"), "primary", "measures the primary as baseline, which successWhen never reads: use baseline in it, or leave compareTo out"))
		default:
			out[m.SuccessWhen] = prg
		}
	}
	return out, errs
}

// MetricProgram is the compiled successWhen of a metric's text; nil for
// one the spec does not hold.
func (r *Resolved) MetricProgram(text string) *expr.Program { return r.metricPrograms[text] }

// checkHooks checks that each hook names a webhook of the Input (the
// Input's webhooks are the only addresses the function calls), and that a
// hook whose answer decides something does not name a chat's webhook: a
// chat service answers 200 to every message, so a confirmation would always
// pass and a rollback hook abort every rollout.
func checkHooks(cr *xr.CanaryRoute, pol *policy.Policy) field.ErrorList {
	var errs field.ErrorList
	for i, h := range cr.Spec.Traffic.Hooks {
		p := field.NewPath("spec", "traffic", "hooks").Index(i).Child("webhook")
		w, ok := pol.Webhooks[h.Webhook]
		switch {
		case !ok:
			errs = append(errs, field.NotFound(p, fielderr.Cut(h.Webhook, fielderr.MaxValue)))
		case w.Format != "" && w.Format != hooks.FormatGeneric && h.Type != hooks.Event && h.Type != hooks.PostRollout:
			errs = append(errs, field.Invalid(p, h.Webhook, fmt.Sprintf(
				"a %s webhook posts a chat message, whose service answers 200 to any message: it cannot answer a %s hook; use it for event and post-rollout hooks", w.Format, h.Type)))
		}
	}
	return errs
}
