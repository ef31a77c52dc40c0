package promql

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

const (
	whyNoAnswer = "no answer within its timeout"
	// grace is how long Measure waits, past a query's timeout, for a
	// Querier to say why it gave up before it says so itself.
	grace = 100 * time.Millisecond
)

// A Request is one query to measure: the provider to ask, and the query,
// its placeholders expanded.
type Request struct {
	Provider Provider
	Query    string
}

// Measure runs every request at once, one goroutine each (the caller keeps
// them few: a CanaryRoute has at most 10 metrics, each measured for at most
// two sides), each within its provider's timeout and ctx (the run's
// deadline). It returns when all have answered or given up, their results
// in the order of the requests, and then calls observe, when not nil, for
// each in that order. A Querier that overstays its timeout by more than a
// grace of 100 ms, or the run's deadline, is left behind: its result says
// there was no answer, with Took zero.
func Measure(ctx context.Context, q Querier, at time.Time, reqs []Request, observe func(provider, outcome string, took time.Duration)) []Result {
	answers := make([]chan Result, len(reqs))
	guards := make([]context.Context, len(reqs))
	cancels := make([]context.CancelFunc, len(reqs))
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for i, r := range reqs {
		guards[i], cancels[i] = context.WithTimeout(ctx, r.Provider.timeout()+grace)
		// Buffered: a Querier left behind still finishes, and is freed.
		answers[i] = make(chan Result, 1)
		go func() { answers[i] <- q.Query(ctx, r.Provider, r.Query, at) }()
	}
	results := make([]Result, len(reqs))
	for i, r := range reqs {
		select {
		case results[i] = <-answers[i]:
		case <-guards[i].Done():
			select {
			case results[i] = <-answers[i]:
			default:
				why := whyNoAnswer
				switch {
				case errors.Is(ctx.Err(), context.DeadlineExceeded):
					why = whyRunDeadline
				case ctx.Err() != nil:
					why = whyRunCanceled
				}
				results[i] = Result{NoData: "provider " + fielderr.Quote(r.Provider.Name) + ": " + why, Outcome: OutcomeError}
			}
		}
	}
	if observe != nil {
		for i, r := range reqs {
			observe(r.Provider.Name, results[i].Outcome, results[i].Took)
		}
	}
	return results
}
