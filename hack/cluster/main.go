// Command cluster runs the live tests' control plane for people, in the
// foreground until it gets SIGTERM or SIGINT; hack/cluster.sh up starts it in
// the background and hack/cluster.sh down stops it. It starts etcd,
// kube-apiserver, kube-controller-manager and Crossplane with the function
// installed from its package (test/live/controlplane), installs the Gateway
// API CRDs, the CanaryRoute XRDs and the ClusterRole of example/, and runs the
// gateway stand-in of the live tests, so that routes get accepted as a
// gateway would accept them. It writes <dir>/ready once everything is up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
	"github.com/crossplane-contrib/function-canary-route/test/live/standin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", ".cache/cluster", "the folder of the control plane's files; it must not hold a running one")
	pkg := flag.String("package", "", "the function's .xpkg (hack/release.sh writes it; required)")
	standIn := flag.Bool("gateway-stand-in", true, "write route status as a Gateway API implementation would")
	flag.Parse()
	if *pkg == "" {
		return errors.New("-package is required")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	crds, err := controlplane.GatewayAPICRDs(ctx, root, "standard")
	if err != nil {
		return err
	}
	env := &controlplane.Environment{
		Root:              root,
		Dir:               filepath.Join(abs, "controlplane"),
		Package:           *pkg,
		CRDDirectoryPaths: []string{crds},
		FunctionArgs:      []string{"--debug"},
		Logf:              func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	defer env.Stop() //nolint:errcheck // The folder is hack/cluster.sh down's to remove.
	if err := env.Start(ctx); err != nil {
		return fmt.Errorf("%w\nlogs:\n%s", err, env.DescribeLogs())
	}
	for _, pattern := range []string{"example/definitions/*.yaml", "example/install/clusterrole.yaml"} {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return err
		}
		for _, f := range files {
			objs, err := controlplane.ReadObjects(f)
			if err != nil {
				return err
			}
			for _, o := range objs {
				if _, err := env.Client().Apply(ctx, o); err != nil {
					return err
				}
			}
		}
	}
	if *standIn {
		s := &standin.StandIn{Client: env.Client(), Errorf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }}
		go s.Run(ctx)
	}
	kubeconfig := filepath.Join(abs, "kubeconfig")
	if err := os.Symlink(env.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(abs, "ready"), []byte(kubeconfig+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ready: export KUBECONFIG=%s\nlogs:\n%s", kubeconfig, env.DescribeLogs())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
	return nil
}
