package promql

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// QuerierFn adapts a function to a Querier.
type QuerierFn func(ctx context.Context, p Provider, query string, at time.Time) Result

// Query calls fn.
func (fn QuerierFn) Query(ctx context.Context, p Provider, query string, at time.Time) Result {
	return fn(ctx, p, query, at)
}

// observation is one call of Measure's observe.
type observation struct {
	Provider, Outcome string
	Took              time.Duration
}

func TestMeasureAtOnce(t *testing.T) {
	// Every query waits until all have started: only queries that run at
	// once all answer; one after the other, the first waits for the others
	// until its timeout.
	const n = 10
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() {
		started.Wait()
		close(all)
	}()
	q := QuerierFn(func(ctx context.Context, _ Provider, query string, got time.Time) Result {
		started.Done()
		select {
		case <-all:
		case <-ctx.Done():
			return Result{NoData: "the others never started", Outcome: OutcomeError}
		}
		if !got.Equal(at) {
			return Result{NoData: "queried at " + got.String(), Outcome: OutcomeError}
		}
		v, _ := strconv.Atoi(query)
		return Result{Value: float64(v), Outcome: OutcomeOK, Took: time.Duration(v) * time.Millisecond}
	})
	reqs := make([]Request, n)
	want := make([]Result, n)
	wantObserved := make([]observation, n)
	for i := range n {
		name := "p" + strconv.Itoa(i)
		reqs[i] = Request{Provider: Provider{Name: name, Timeout: time.Second}, Query: strconv.Itoa(i)}
		want[i] = Result{Value: float64(i), Outcome: OutcomeOK, Took: time.Duration(i) * time.Millisecond}
		wantObserved[i] = observation{Provider: name, Outcome: OutcomeOK, Took: time.Duration(i) * time.Millisecond}
	}
	var observed []observation
	got := within2(t, 30*time.Second, func() []Result {
		return Measure(t.Context(), q, at, reqs, func(provider, outcome string, took time.Duration) {
			observed = append(observed, observation{Provider: provider, Outcome: outcome, Took: took})
		})
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure(...): -want, +got (in the order of the requests):\n%s", diff)
	}
	if diff := cmp.Diff(wantObserved, observed); diff != "" {
		t.Errorf("Measure(...) observed: -want, +got (in the order of the requests):\n%s", diff)
	}
}

// within2 is within for Measure.
func within2(t *testing.T, guard time.Duration, run func() []Result) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	done := make(chan []Result, 1)
	go func() { done <- run() }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		t.Fatalf("Measure had not returned when the test's deadline (%s) passed", guard)
		return nil
	}
}

func TestMeasureSlowProviders(t *testing.T) {
	// Ten providers that never answer, 300ms timeout each, in a run of
	// 2.5s: at once, each gives up at its own timeout; one after the other,
	// the last ones would meet the run's deadline instead.
	const n = 10
	const timeout = 300 * time.Millisecond
	reqs := make([]Request, n)
	want := make([]Result, n)
	for i := range n {
		s := serve(t, hanging(t))
		reqs[i] = Request{Provider: Provider{Name: "slow" + strconv.Itoa(i), Address: s.URL, Timeout: timeout}, Query: "sum(up)"}
		want[i] = Result{NoData: `provider "slow` + strconv.Itoa(i) + `": timed out after 300ms`, Outcome: OutcomeError}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
	defer cancel()
	got := within2(t, 30*time.Second, func() []Result { return Measure(ctx, &Client{}, at, reqs, nil) })
	if diff := cmp.Diff(want, got, ignoreTook); diff != "" {
		t.Errorf("Measure(...): -want, +got:\n%s", diff)
	}
}

func TestMeasureLeavesStuckQueriers(t *testing.T) {
	// A Querier that ignores its context is left behind at its timeout
	// (and a grace), or at the run's deadline.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := QuerierFn(func(context.Context, Provider, string, time.Time) Result {
		<-release
		return Result{Value: 1, Outcome: OutcomeOK}
	})
	cases := map[string]struct {
		reason  string
		timeout time.Duration
		run     time.Duration
		guard   time.Duration
		want    Result
	}{
		"Timeout": {
			reason:  "Past its timeout and the grace, a Querier is left behind.",
			timeout: 50 * time.Millisecond,
			guard:   30 * time.Second,
			want:    Result{NoData: `provider "stuck": no answer within its timeout`, Outcome: OutcomeError},
		},
		"RunDeadline": {
			reason:  "At the run's deadline, a Querier is left behind, whatever its timeout (5s, past the test's guard).",
			timeout: MaxTimeout,
			run:     50 * time.Millisecond,
			guard:   MaxTimeout - time.Second,
			want:    Result{NoData: `provider "stuck": the run's deadline passed before it answered`, Outcome: OutcomeError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if tc.run > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.run)
				defer cancel()
			}
			reqs := []Request{{Provider: Provider{Name: "stuck", Timeout: tc.timeout}, Query: "sum(up)"}}
			got := within2(t, tc.guard, func() []Result { return Measure(ctx, stuck, at, reqs, nil) })
			if diff := cmp.Diff([]Result{tc.want}, got); diff != "" {
				t.Errorf("%s\nMeasure(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMeasureNothing(t *testing.T) {
	observed := false
	got := Measure(t.Context(), QuerierFn(func(context.Context, Provider, string, time.Time) Result {
		t.Error("a query without requests")
		return Result{}
	}), at, nil, func(string, string, time.Duration) { observed = true })
	if len(got) != 0 || observed {
		t.Errorf("Measure(no requests) = %v, observed %v: want nothing", got, observed)
	}
}
