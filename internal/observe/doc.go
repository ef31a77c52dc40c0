// Package observe reads what a run's rollout engine judges: for each gate
// of the spec, the object Crossplane fetched for it and the condition that
// must be True on it, or what its expressions say of it; the analysis
// objects composed for the current step, judged like expression gates; and
// the measurements of traffic.metrics, each due metric's query expanded for
// the canary (and for the primary it is compared to), sent to its provider
// with the pipeline step's credentials, all at once, and each answer judged
// by the metric's successWhen. Whatever a provider does, a measurement is
// taken: an answer without a number is a NoData measurement that says why.
// The engine (internal/rollout) decides from these observations; nothing
// here decides.
package observe
