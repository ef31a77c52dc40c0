// Package hooks calls the webhooks of a rollout's hooks (traffic.hooks):
// the body each receives (Flagger's payload, or a chat service's one-line
// message), and the call, bounded and safe. Whatever the webhook does
// (hang, redirect, answer megabytes, echo its own secret URL), a call ends
// within its timeout and the run's deadline, reads at most MaxAnswer
// bytes, and gives either a 2xx or a short reason why not that never
// quotes a secret. It decides nothing: what an answer means for the
// rollout (hold, advance, abort) is the engine's.
package hooks

import (
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

const (
	// MaxTimeout is the longest a call may take.
	MaxTimeout = 10 * time.Second
	// DefaultTimeout is how long a call may take when its webhook does
	// not say.
	DefaultTimeout = 5 * time.Second
	// MaxAnswer is the most bytes of an answer read.
	MaxAnswer = 64 << 10
)

// Type is a hook's type: when it runs and what its answer does, as
// Flagger's webhooks mean them.
type Type string

// The hook types.
const (
	// ConfirmRollout runs before the first step gets weight, and holds the
	// rollout until it answers 2xx.
	ConfirmRollout Type = "confirm-rollout"
	// PreRollout runs once, before the first step; a failure counts toward
	// the hook's failure limit.
	PreRollout Type = "pre-rollout"
	// Rollout runs once per step, before the step's metrics are judged; a
	// failure holds the step.
	Rollout Type = "rollout"
	// ConfirmTrafficIncrease runs before each step's weight.
	ConfirmTrafficIncrease Type = "confirm-traffic-increase"
	// ConfirmPromotion runs before the promotion or Succeeded.
	ConfirmPromotion Type = "confirm-promotion"
	// PostRollout runs once after Succeeded, Failed or Aborted; its
	// answer is recorded, nothing else.
	PostRollout Type = "post-rollout"
	// Rollback is asked while a rollout is active: a 2xx aborts it.
	Rollback Type = "rollback"
	// Event runs once per transition.
	Event Type = "event"
)

// Types are the hook types, in the order of a rollout.
var Types = []Type{ConfirmRollout, PreRollout, Rollout, ConfirmTrafficIncrease, ConfirmPromotion, PostRollout, Rollback, Event}

// Format is the body a webhook receives.
type Format string

// The formats.
const (
	// FormatGeneric is the Payload as JSON.
	FormatGeneric Format = "generic"
	// FormatSlack is a Slack incoming webhook's message: {"text": line}.
	FormatSlack Format = "slack"
	// FormatMSTeams is a Microsoft Teams workflow webhook's message: an
	// Adaptive Card of one text block.
	FormatMSTeams Format = "msteams"
	// FormatDiscord is a Discord webhook's message: {"content": line},
	// mentioning no one.
	FormatDiscord Format = "discord"
)

// Formats are the formats a webhook may have.
var Formats = []Format{FormatGeneric, FormatSlack, FormatMSTeams, FormatDiscord}

// Payload is what a hook's call says: Flagger's webhook payload (name,
// namespace, phase, type, metadata), so that Flagger's loadtester and the
// gate services written for Flagger read it, with what a CanaryRoute adds:
// the revision, the step, the canary's weight, the reason, the message and
// the time.
type Payload struct {
	// Name and Namespace are the route's (the CanaryRoute's route name,
	// in the route's namespace), as Flagger's are the Canary's.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Phase is the rollout's phase: Progressing, Paused, Succeeded,
	// Failed, Aborted.
	Phase string `json:"phase"`
	// Type is the hook's type.
	Type Type `json:"type"`
	// Metadata is the hook's metadata, as the CanaryRoute writes it (the
	// loadtester reads its cmd).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Revision is the canary's revision.
	Revision string `json:"revision"`
	// Step is the index of the current step.
	Step int32 `json:"step"`
	// CanaryWeight is the canary's share of the traffic, in percent.
	CanaryWeight percent.Percent `json:"canaryWeight"`
	// Reason and Message are the rollout's, as its status says them.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Timestamp is the run's time, RFC 3339 in seconds.
	Timestamp time.Time `json:"timestamp"`
}

// A Webhook is one of the Input's webhooks, resolved: its address (read
// from the pipeline step's credentials when it is a secret), timeout and
// format.
type Webhook struct {
	// Name names the webhook in every reason a Result gives.
	Name string
	// URL is the address called.
	URL string
	// Secret says that URL is a credential (the Input's urlFrom): it is
	// redacted, whole and in its parts, from whatever a reason quotes.
	Secret bool
	// Timeout bounds each call: zero is DefaultTimeout, more than
	// MaxTimeout is MaxTimeout.
	Timeout time.Duration
	// Format is the body's; "" is FormatGeneric.
	Format Format
}

// timeout is the webhook's timeout, defaulted and bounded.
func (w Webhook) timeout() time.Duration {
	return atonce.Timeout(w.Timeout, DefaultTimeout, MaxTimeout)
}

// A Result is one call's answer.
type Result struct {
	// OK is an answer of 2xx, read whole within MaxAnswer.
	OK bool
	// Status is the answer's HTTP status; 0 when there was none.
	Status int
	// Reason, when OK is false, says why: the webhook cannot be reached,
	// timed out, redirected, answered another status (quoting the start
	// of its body) or more than MaxAnswer bytes. It names the webhook, and
	// quotes at most 256 characters of anything, never a secret URL.
	Reason string
	// Took is how long the call took; zero when not measured.
	Took time.Duration
}
