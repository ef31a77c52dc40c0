// Package main implements function-canary-route, a Crossplane composition
// function that composes Gateway API routes, ReferenceGrants and proxy
// Services from a CanaryRoute, recomputing the canary's weight on every run.
package main

// The CanaryRoute XRDs of example/definitions, from the API types of internal/xr.
//go:generate go run ./hack/xrdgen

import (
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/crossplane/function-sdk-go"

	"github.com/crossplane-contrib/function-canary-route/internal/freshness"
	"github.com/crossplane-contrib/function-canary-route/internal/hooks"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/promql"
	"github.com/crossplane-contrib/function-canary-route/internal/telemetry"
)

const errNoCredentials = "refusing to serve gRPC without mTLS: set --tls-certs-dir (or the environment variable TLS_SERVER_CERTS_DIR) to a directory holding tls.crt, tls.key and ca.crt, or pass --insecure to serve plaintext"

// version is the release, stamped by hack/release.sh with
// -ldflags "-X main.version=VERSION".
var version = "dev"

// CLI of this Function.
type CLI struct {
	Version kong.VersionFlag `help:"Print the version and exit."`
	Debug   bool             `help:"Emit debug logs in addition to info logs." short:"d"`

	Network            string    `default:"tcp"   help:"Network on which to listen for gRPC connections."`
	Address            string    `default:":9443" help:"Address at which to listen for gRPC connections."`
	TLSCertsDir        string    `env:"TLS_SERVER_CERTS_DIR" help:"Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt)."`
	Insecure           bool      `help:"Run without mTLS credentials. If you supply this flag --tls-certs-dir will be ignored."`
	MaxRecvMessageSize int       `default:"4"     help:"Maximum size of received messages in MB."`
	MetricsAddress     string    `default:":8080" help:"Address at which to serve Prometheus metrics; empty turns the metrics server off." placeholder:"127.0.0.1:8080"`
	Now                time.Time `help:"Evaluate rollouts at this instant (RFC 3339) instead of the current time, and query no metric, e.g. to preview a rollout with crossplane render." placeholder:"2026-12-02T10:00:00Z"`
	RememberEntries    int       `default:"10000" help:"How many CanaryRoutes' newest decisions to remember, to answer Crossplane's stale reads with them (0 remembers none: every read is trusted)."`
	RememberMiB        int       `default:"64"    help:"The memory, in MiB, that the remembered decisions may take (about 12 to 40 KiB a CanaryRoute)."`
}

// rolloutSeriesWithoutMemory bounds the rollouts' series when the memory
// is off (--remember-entries=0): as many as its default would remember.
const rolloutSeriesWithoutMemory = 10000

// Run this Function.
func (c *CLI) Run() error {
	log, err := function.NewLogger(c.Debug)
	if err != nil {
		return err
	}

	fn := &Function{log: log, clock: ClockFunc(time.Now), querier: &promql.Client{Now: time.Now}, caller: &hooks.Client{Now: time.Now}}
	if c.RememberEntries > 0 && c.RememberMiB > 0 {
		fn.memory = freshness.NewMemory[pipeline.Answer](c.RememberEntries, uint64(c.RememberMiB)<<20)
	}
	if !c.Now.IsZero() {
		// A preview: every rollout at one instant, no metric queried (the
		// recorded measurements stand, and say when one is due), no
		// webhook called (a hook without an answer says it waits), and no
		// memory of earlier answers: its output is a function of its input.
		fixed := c.Now
		fn.clock, fn.querier, fn.caller, fn.memory = ClockFunc(func() time.Time { return fixed }), nil, nil, nil
		log.Info("Evaluating rollouts at a fixed instant, querying no metric and calling no webhook", "now", fixed.Format(time.RFC3339))
	}
	return c.serve(fn, log)
}

// serve serves fn as the flags say, and blocks. A panic in fn becomes a
// Fatal result instead of ending the process and every run in flight; with
// a metrics address, runs are counted and timed.
func (c *CLI) serve(fn *Function, log logging.Logger) error {
	// The SDK refuses this too, but in terms of its own options; a person
	// deploying the function needs the flag and the variable to set.
	if c.TLSCertsDir == "" && !c.Insecure {
		return errors.New(errNoCredentials)
	}
	// --insecure ignores --tls-certs-dir, as its help says: the SDK would
	// still load the certificates, and fail on a directory it cannot read.
	certs := c.TLSCertsDir
	if c.Insecure {
		certs = ""
	}
	// A registry of the function's own, so that its metrics and the gRPC
	// server's are all that --metrics-address serves.
	reg := prometheus.NewRegistry()
	if c.MetricsAddress != "" {
		// The rollouts' series are bounded as the memory is: as many
		// CanaryRoutes as it remembers.
		series := c.RememberEntries
		if series <= 0 {
			series = rolloutSeriesWithoutMemory
		}
		m, err := telemetry.NewRuns(reg, time.Now, series)
		if err != nil {
			return errors.Wrap(err, "cannot register the metrics")
		}
		fn.metrics = m
		if err := telemetry.RegisterMemory(reg, fn.memory.Len); err != nil {
			return errors.Wrap(err, "cannot register the metrics")
		}
	}
	return function.Serve(withRecover(fn, log, fn.metrics),
		function.Listen(c.Network, c.Address),
		function.WithMetricsRegistry(reg),
		function.MTLSCertificates(certs),
		function.Insecure(c.Insecure),
		function.MaxRecvMessageSize(c.MaxRecvMessageSize*1024*1024),
		// The SDK binds :8080 on every interface unless told otherwise, so
		// two functions (two Development-runtime steps of one crossplane
		// render, or tests beside a person's own) could not run on one host.
		function.WithMetricsServer(c.MetricsAddress))
}

func main() {
	ctx := kong.Parse(&CLI{},
		kong.Description("function-canary-route: progressive delivery through Gateway API routes."),
		kong.Vars{"version": version})
	ctx.FatalIfErrorf(ctx.Run())
}
