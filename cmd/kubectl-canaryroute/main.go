// Command kubectl-canaryroute is a kubectl plugin for CanaryRoutes: `kubectl
// canaryroute get NAME --watch` shows where a rollout stands, `list` the
// table of them, and approve, promote, abort, retry, pause, resume, rollback
// and set-revision each write only the spec fields the contract defines for
// them, by server-side apply with the plugin's own field manager
// (docs/kubectl-plugin.md).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
)

// version is the release, stamped by hack/release.sh with
// -ldflags "-X main.version=VERSION"; --version prints it.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := newOptions(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, time.Now)
	if err := newRootCommand(o).ExecuteContext(ctx); err != nil {
		stop()
		os.Exit(1) //nolint:gocritic // stop has run; nothing else is deferred.
	}
}

// options are what every command shares: the streams, kubectl's connection
// flags, the CanaryRoute's API group, the clock, and how to reach the
// cluster (tests give a fake one).
type options struct {
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags
	group   string
	now     func() time.Time
	// connect returns the clients of the cluster the flags name.
	connect func() (dynamic.Interface, meta.RESTMapper, error)
}

// newOptions are the options of a run against the cluster that kubectl's
// flags name.
func newOptions(streams genericiooptions.IOStreams, now func() time.Time) *options {
	o := &options{streams: streams, config: genericclioptions.NewConfigFlags(true), group: defaultGroup, now: now}
	o.connect = func() (dynamic.Interface, meta.RESTMapper, error) {
		cfg, err := o.config.ToRESTConfig()
		if err != nil {
			return nil, nil, err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		mapper, err := o.config.ToRESTMapper()
		if err != nil {
			return nil, nil, err
		}
		return dyn, mapper, nil
	}
	return o
}

// clients connects, in the namespace of -n or the kubeconfig's context.
func (o *options) clients() (*clients, error) {
	dyn, mapper, err := o.connect()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	return &clients{dynamic: dyn, mapper: mapper, group: o.group, namespace: ns}, nil
}

// newRootCommand is `kubectl canaryroute` and its commands.
func newRootCommand(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-canaryroute",
		Short: "See and steer CanaryRoute rollouts",
		Long: `See where a CanaryRoute's rollout stands, and steer it.

Each command that steers writes only the spec fields it is about, by
server-side apply with the field manager "kubectl-canaryroute"; --dry-run
prints the apply patch instead. A CanaryRoute that Argo CD or Flux applies
from Git gets Git's values back at the next sync: the commands say so, and
what to commit instead.

NAME is a CanaryRoute (namespaced XR), a CanaryRouteClaim or an
XCanaryRoute (cluster XR), or KIND/NAME to say which.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl canaryroute"},
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetOut(o.streams.Out)
	root.SetErr(o.streams.ErrOut)
	// --version without cobra's -v, which kubectl keeps for verbosity.
	root.Version = version
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the plugin's version and exit")
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.group, "api-group", o.group, "API group of the CanaryRoute XRDs (a platform team may publish them under its own)")
	root.AddCommand(
		newGetCommand(o),
		newListCommand(o),
		newWriteCommand(o, writeApprove),
		newWriteCommand(o, writePromote),
		newWriteCommand(o, writeAbort),
		newWriteCommand(o, writeRetry),
		newWriteCommand(o, writePause),
		newWriteCommand(o, writeResume),
		newWriteCommand(o, writeRollback),
		newWriteCommand(o, writeSetRevision),
	)
	return root
}

// A stream writes to an output, keeping the first error: a command whose
// output cannot be written fails with it.
type stream struct {
	w   io.Writer
	err error
}

// printf writes to the stream, unless a write failed before.
func (s *stream) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

// resourceName names an object as kubectl does: kind.group/name.
func resourceName(m *meta.RESTMapping, name string) string {
	r := strings.ToLower(m.GroupVersionKind.Kind)
	if g := m.GroupVersionKind.Group; g != "" {
		r += "." + g
	}
	return r + "/" + name
}
