// Package atonce runs a run's slow calls to the outside (metric queries,
// webhooks) at once, each bounded by its own timeout and by the run's
// deadline, so that a run waits for the slowest call, never for their sum,
// and never past its deadline.
package atonce

import (
	"context"
	"errors"
	"time"
)

// Why a call gave no answer, as its result says.
const (
	WhyNoAnswer    = "no answer within its timeout"
	WhyRunDeadline = "the run's deadline passed before it answered"
	WhyRunCanceled = "the run was canceled before it answered"
)

// Grace is how long Do waits, past a call's timeout, for the call to say
// why it gave up before Do says so itself.
const Grace = 100 * time.Millisecond

// Timeout is a call's timeout as its caller configured it: zero (or less)
// is def, more than most is most.
func Timeout(configured, def, most time.Duration) time.Duration {
	switch {
	case configured <= 0:
		return def
	case configured > most:
		return most
	default:
		return configured
	}
}

// MaxReserve is the most of a run's time Do leaves for the rest of the run.
const MaxReserve = 2 * time.Second

// Do makes n calls at once, one goroutine each (the callers keep n small:
// a CanaryRoute has few metrics and hooks), call(ctx, i) within
// timeout(i) and ctx, and returns their results in order once all have
// answered or given up. A call that overstays its timeout by more than
// Grace, or the run's deadline, is left behind (its goroutine still
// finishes, and is freed): its result is late(i, why), why one of the
// Why* reasons.
//
// The calls end a reserve before ctx's deadline (a quarter of the time
// left, at most MaxReserve): a run whose calls take all its time would
// answer nothing, not even that they gave no answer, and make the same
// calls again on every run.
func Do[R any](ctx context.Context, n int, timeout func(i int) time.Duration, call func(ctx context.Context, i int) R, late func(i int, why string) R) []R {
	if deadline, ok := ctx.Deadline(); ok {
		reserve := min(time.Until(deadline)/4, MaxReserve)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-reserve))
		defer cancel()
	}
	answers := make([]chan R, n)
	guards := make([]context.Context, n)
	cancels := make([]context.CancelFunc, n)
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for i := range n {
		guards[i], cancels[i] = context.WithTimeout(ctx, timeout(i)+Grace)
		// Buffered: a call left behind still finishes, and is freed.
		answers[i] = make(chan R, 1)
		go func() { answers[i] <- call(ctx, i) }()
	}
	results := make([]R, n)
	for i := range n {
		select {
		case results[i] = <-answers[i]:
		case <-guards[i].Done():
			select {
			case results[i] = <-answers[i]:
			default:
				why := WhyNoAnswer
				switch {
				case errors.Is(ctx.Err(), context.DeadlineExceeded):
					why = WhyRunDeadline
				case ctx.Err() != nil:
					why = WhyRunCanceled
				}
				results[i] = late(i, why)
			}
		}
	}
	return results
}
