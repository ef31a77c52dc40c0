// Command cluster runs the live tests' control plane for people, in the
// foreground until it gets SIGTERM or SIGINT; hack/cluster.sh up starts it in
// the background and hack/cluster.sh down stops it. It starts etcd,
// kube-apiserver, kube-controller-manager and Crossplane with the function
// installed from its package (test/live/controlplane), and
// function-go-templating (the release example's second step), installs the Gateway
// API CRDs, the CanaryRoute XRDs and the ClusterRole of example/, and runs the
// real gateway of the live tests (Traefik, hack/tool.sh gateway) with its
// GatewayClass and Gateway. A demo backend answers on every Service's
// clusterIP and port with the Service's name (test/live/backends), so that
// requests through the gateway show which side of a route answered. Routes
// attached to other parents are accepted by the gateway stand-in of the live
// tests, as a gateway would accept them. It writes <dir>/gateway (the
// gateway's host:port) and then <dir>/ready once everything is up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane-contrib/function-canary-route/test/live/backends"
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
	standIn := flag.Bool("gateway-stand-in", true, "write the status of routes that are not attached to the real gateway, as a Gateway API implementation would")
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
	// function-go-templating, the release example's second step, built
	// from its pinned module as the live tests build it.
	goTemplating, err := controlplane.GoTemplatingPackage(ctx, root, abs)
	if err != nil {
		return err
	}
	env := &controlplane.Environment{
		Root:              root,
		Dir:               filepath.Join(abs, "controlplane"),
		Package:           *pkg,
		CRDDirectoryPaths: []string{crds},
		FunctionArgs:      []string{"--debug"},
		Functions:         []controlplane.Function{{Name: "function-go-templating", Package: goTemplating, Args: []string{"--debug"}}},
		Gateway:           true,
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
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	if *standIn {
		s := &standin.StandIn{Client: env.Client(), Errorf: logf, RealControllers: []string{controlplane.GatewayControllerName}}
		go s.Run(ctx)
	}
	demo := &backends.Set{}
	defer demo.Close()
	go serveServices(ctx, env.Client(), demo, logf)
	if err := os.WriteFile(filepath.Join(abs, "gateway"), []byte(env.GatewayAddress+"\n"), 0o600); err != nil {
		return err
	}
	kubeconfig := filepath.Join(abs, "kubeconfig")
	if err := os.Symlink(env.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(abs, "ready"), []byte(kubeconfig+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ready: export KUBECONFIG=%s\nthe gateway: http://%s (Gateway %s/%s)\nlogs:\n%s",
		kubeconfig, env.GatewayAddress, controlplane.GatewayNamespace, controlplane.GatewayName, env.DescribeLogs())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
	return nil
}

// serveServices keeps a demo backend on every Service port of the control
// plane, at the Service's clusterIP, named namespace/name, until ctx ends.
func serveServices(ctx context.Context, c *controlplane.Client, set *backends.Set, logf func(string, ...any)) {
	_, cidr, err := net.ParseCIDR(controlplane.ServiceCIDR)
	if err != nil {
		logf("demo backends: %v", err)
		return
	}
	reported := ""
	for {
		want := map[string]string{}
		list, err := c.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, s := range list.Items {
				ip := net.ParseIP(s.Spec.ClusterIP)
				if ip == nil || !cidr.Contains(ip) || s.Namespace == metav1.NamespaceDefault {
					continue
				}
				for _, p := range s.Spec.Ports {
					if p.Protocol == corev1.ProtocolTCP || p.Protocol == "" {
						want[net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(p.Port)))] = s.Namespace + "/" + s.Name
					}
				}
			}
			err = set.Serve(want)
		}
		// Each error once, not every second.
		if msg := fmt.Sprint(err); err != nil && msg != reported {
			logf("demo backends: %v", err)
			reported = msg
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
