package promql

import (
	"context"
	"time"

	"github.com/crossplane-contrib/function-canary-route/internal/atonce"
	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
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
	results := atonce.Do(ctx, len(reqs),
		func(i int) time.Duration { return reqs[i].Provider.timeout() },
		func(ctx context.Context, i int) Result { return q.Query(ctx, reqs[i].Provider, reqs[i].Query, at) },
		func(i int, why string) Result {
			return Result{NoData: "provider " + fielderr.Quote(reqs[i].Provider.Name) + ": " + why, Outcome: OutcomeError}
		})
	if observe != nil {
		for i, r := range reqs {
			observe(r.Provider.Name, results[i].Outcome, results[i].Took)
		}
	}
	return results
}
