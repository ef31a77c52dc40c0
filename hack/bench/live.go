package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane-contrib/function-canary-route/hack/bench/scale"
	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
)

// liveOptions are the flags of the live scale run.
type liveOptions struct {
	n          int
	crossplane string
	xpkg       string
	timeout    time.Duration
	keep       bool
	trace      string
	pprof      string
	abortEvery int
}

// runLive starts a control plane of its own, as test/live does (the
// function installed from its own package, the Gateway API CRDs, the
// CanaryRoute XRDs, the gateway stand-in), runs the scale scenario of
// hack/bench/scale on it and prints its figures.
func runLive(o liveOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "example", "definitions")); err != nil {
		return fmt.Errorf("run it from the repository's root: %w", err)
	}

	xpkg := o.xpkg
	if xpkg == "" {
		xpkg = os.Getenv("CANARY_ROUTE_XPKG")
	}
	if xpkg == "" {
		tmp, err := os.MkdirTemp("", "canary-route-bench-release-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp) //nolint:errcheck // A temporary folder.
		started := time.Now()
		if xpkg, err = controlplane.ReleasePackage(ctx, root, tmp); err != nil {
			return err
		}
		logf("live: released the function's package in %s: %s", time.Since(started).Round(time.Second), xpkg)
	}

	cp, err := scale.Start(ctx, scale.Setup{
		Root:           root,
		Package:        xpkg,
		CrossplaneArgs: strings.Fields(o.crossplane),
		Profiling:      o.pprof != "",
		KeepDir:        o.keep,
		Logf:           logf,
	})
	if err != nil {
		return err
	}
	defer cp.Stop() //nolint:errcheck // The run's figures are out by then.
	so, err := cp.Prepare(ctx, "scale", o.n)
	if err != nil {
		return err
	}
	so.Timeout, so.Trace, so.AbortEvery = o.timeout, o.trace, o.abortEvery
	if o.pprof != "" {
		so.DuringRollout = func(ctx context.Context) {
			if err := cp.Profile(ctx, o.pprof, 30*time.Second); err != nil {
				logf("live: profiles: %v", err)
				return
			}
			logf("live: 30 s CPU profiles of kube-apiserver, crossplane and the harness in %s", o.pprof)
		}
	}
	logf("live: %d CanaryRoutes; Crossplane flags: %s; processes %v", o.n, cp.Flags(), cp.Env.PIDs())
	res, err := scale.Run(ctx, so)
	if err != nil {
		cp.Env.KeepDir = true
		return err
	}
	cp.StopStandIn()

	fmt.Printf("\nlive scale run: %d CanaryRoutes; Crossplane flags: %s\n\n", o.n, cp.Flags())
	res.Report(os.Stdout)
	fmt.Printf("\ngateway stand-in: %s\n", cp.StandIn)
	logs := cp.Env.Logs()
	for _, name := range []string{"crossplane", "kube-apiserver", "function"} {
		if fi, err := os.Stat(logs[name]); err == nil {
			fmt.Printf("log of %s: %.1f MiB\n", name, float64(fi.Size())/(1<<20))
		}
	}
	_, goal := res.Goal()
	fmt.Printf("\n%s\n", goal)
	return nil
}
