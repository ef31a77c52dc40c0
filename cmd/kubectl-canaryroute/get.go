package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// get and list: reading CanaryRoutes.

const (
	errFmtList     = "cannot list %s: %w"
	errFmtWatch    = "cannot watch %s: %w"
	errWatchOutput = "--watch redraws the tree; -o prints the CanaryRoute once: use one of them"
)

// clearScreen moves a terminal's cursor home and clears it, so that --watch
// redraws the tree in place.
const clearScreen = "\x1b[H\x1b[2J"

// settle is how long --watch waits after a change for the changes that come
// with it (a status write, then the route's), before it redraws once.
const settle = 250 * time.Millisecond

// refresh is how often --watch on a terminal redraws without a change, so
// that the times it shows ("in 3m") stay true.
const refresh = 15 * time.Second

// newGetCommand is `get NAME [--watch]`.
func newGetCommand(o *options) *cobra.Command {
	var watchFlag bool
	pf := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show where a rollout stands, as a tree",
		Long: `Shows the CanaryRoute (phase, reason, revision, step of steps, weights, next
step at), each composed route with its parents' verdicts, the proxy Services
and what they select, the ReferenceGrants, the release (stable, canary,
retiring, replicas), the last measurement of each metric and the last
events. With --watch, redrawn on every change of the CanaryRoute, its
composed resources or its events. -o prints the CanaryRoute itself.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			if *pf.OutputFormat != "" {
				if watchFlag {
					return errors.New(errWatchOutput)
				}
				return o.printNamed(cmd.Context(), c, args[0], pf)
			}
			if watchFlag {
				return watchTree(cmd.Context(), c, args[0], o.streams.Out, o.now, isTerminal(o.streams.Out))
			}
			t, err := c.locate(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			s, err := c.read(cmd.Context(), t)
			if err != nil {
				return err
			}
			return renderTree(o.streams.Out, s, o.now())
		},
	}
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", false, "redraw the tree on every change")
	pf.AddFlags(cmd)
	return cmd
}

// printNamed prints the CanaryRoute arg names as -o says.
func (o *options) printNamed(ctx context.Context, c *clients, arg string, pf *genericclioptions.PrintFlags) error {
	t, err := c.locate(ctx, arg)
	if err != nil {
		return err
	}
	p, err := pf.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(t.named.obj, o.streams.Out)
}

// isTerminal says whether w is a terminal, where --watch redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// watchTree draws the tree of arg, then again whenever what it shows
// changes, until ctx ends. On a terminal each tree replaces the last;
// elsewhere each is written after a blank line.
func watchTree(ctx context.Context, c *clients, arg string, w io.Writer, now func() time.Time, terminal bool) error {
	out := &stream{w: w}
	tick := time.Duration(0)
	if terminal {
		tick = refresh
	}
	last := ""
	for ctx.Err() == nil && out.err == nil {
		tree, t, s, err := c.draw(ctx, arg, now())
		switch {
		case ctx.Err() != nil:
			// Interrupted: the watch ends as asked.
		case err != nil:
			return err
		case tree != last:
			switch {
			case terminal:
				out.printf("%s", clearScreen)
			case last != "":
				out.printf("\n")
			}
			out.printf("%s", tree)
			last = tree
		}
		if ctx.Err() != nil {
			break
		}
		if err := c.waitForChange(ctx, t, s, tick); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return out.err
}

// draw reads the CanaryRoute arg names and draws its tree as of now.
func (c *clients) draw(ctx context.Context, arg string, now time.Time) (string, target, snapshot, error) {
	t, err := c.locate(ctx, arg)
	if err != nil {
		return "", target{}, snapshot{}, err
	}
	s, err := c.read(ctx, t)
	if err != nil {
		return "", target{}, snapshot{}, err
	}
	b := &strings.Builder{}
	err = renderTree(b, s, now)
	return b.String(), t, s, err
}

// A watched object is one object (or, with no name, the events of one) that
// --watch follows.
type watched struct {
	gvr       schema.GroupVersionResource
	namespace string
	// selector selects it (metadata.name=..., involvedObject.uid=...).
	selector string
	// rv is the resource version to watch from; "" lists it first.
	rv string
}

// watchList is what the tree of s shows: the CanaryRoute's objects, its
// composed resources (found or not yet), the release's workloads and the
// events.
func (c *clients) watchList(t target, s snapshot) []watched {
	var out []watched
	add := func(m *meta.RESTMapping, namespace, name string, obj *unstructured.Unstructured) {
		if m == nil {
			return
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			namespace = ""
		}
		w := watched{gvr: m.Resource, namespace: namespace, selector: "metadata.name=" + name}
		if obj != nil {
			w.rv = obj.GetResourceVersion()
		}
		out = append(out, w)
	}
	for _, r := range []ref{t.named, t.xr, t.claim} {
		if r.obj != nil {
			add(r.mapping, r.obj.GetNamespace(), r.obj.GetName(), r.obj)
		}
	}
	all := slices.Concat(s.composed, s.workloads)
	for _, r := range slices.Concat(resourceRefs(s.xr), workloadRefs(s.xr, s.claim)) {
		gv, err := schema.ParseGroupVersion(r.apiVersion)
		if err != nil {
			continue
		}
		m, err := c.mapping(gv.WithKind(r.kind).GroupKind(), gv.Version)
		if err != nil {
			continue
		}
		var obj *unstructured.Unstructured
		if i := slices.IndexFunc(all, r.matches); i >= 0 {
			obj = all[i]
		}
		add(m, r.namespace, r.name, obj)
	}
	for _, r := range []ref{t.xr, t.claim} {
		if r.obj == nil {
			continue
		}
		ns := r.obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		sel := "involvedObject.name=" + r.obj.GetName()
		if uid := r.obj.GetUID(); uid != "" {
			sel = "involvedObject.uid=" + string(uid)
		}
		out = append(out, watched{gvr: eventsGVR, namespace: ns, selector: sel})
	}
	return out
}

// waitForChange returns once an object the tree of s shows changes (and
// the changes that come with it have settled), after tick when tick is not
// zero, or when ctx ends.
func (c *clients) waitForChange(ctx context.Context, t target, s snapshot, tick time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	for _, w := range c.watchList(t, s) {
		r := c.dynamic.Resource(w.gvr).Namespace(w.namespace)
		rv := w.rv
		if rv == "" {
			l, err := r.List(ctx, metav1.ListOptions{FieldSelector: w.selector})
			if err != nil {
				return fmt.Errorf(errFmtList, w.gvr.Resource, err)
			}
			rv = l.GetResourceVersion()
		}
		wi, err := r.Watch(ctx, metav1.ListOptions{FieldSelector: w.selector, ResourceVersion: rv})
		if err != nil {
			return fmt.Errorf(errFmtWatch, w.gvr.Resource, err)
		}
		go func() {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-wi.ResultChan():
					if ok && e.Type == watch.Bookmark {
						continue
					}
					// A change, or a watch the server ended: either way,
					// read again (and watch again).
					select {
					case changed <- struct{}{}:
					default:
					}
					if !ok {
						return
					}
				}
			}
		}()
	}
	var timer <-chan time.Time
	if tick > 0 {
		timer = time.After(tick)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer:
		return nil
	case <-changed:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
		return nil
	}
}

// newListCommand is `list [-A]`.
func newListCommand(o *options) *cobra.Command {
	var all bool
	pf := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List CanaryRoutes and where their rollouts stand",
		Long: `Lists the CanaryRoutes (namespaced XRs), CanaryRouteClaims and XCanaryRoutes
(cluster XRs) of a namespace, or of every namespace with -A: phase, step,
canary weight, revision, stable revision, reason. A claimed XCanaryRoute is
its claim's row; an unclaimed one is listed in the namespace it routes in.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.clients()
			if err != nil {
				return err
			}
			items, err := c.list(cmd.Context(), all)
			if err != nil {
				return err
			}
			if *pf.OutputFormat != "" {
				p, err := pf.ToPrinter()
				if err != nil {
					return err
				}
				l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
				for _, i := range items {
					l.Items = append(l.Items, *i)
				}
				return p.PrintObj(l, o.streams.Out)
			}
			if len(items) == 0 {
				where := "namespace " + c.namespace
				if all {
					where = "any namespace"
				}
				errOut := &stream{w: o.streams.ErrOut}
				errOut.printf("No CanaryRoutes found in %s.\n", where)
				return errOut.err
			}
			p := printers.NewTablePrinter(printers.PrintOptions{WithNamespace: all})
			return p.PrintObj(listTable(items, o.now()), o.streams.Out)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the CanaryRoutes of every namespace")
	pf.AddFlags(cmd)
	return cmd
}

// list lists the CanaryRoutes of every kind the cluster serves, in the
// namespace (cluster XRs: those routing in it), or in all.
func (c *clients) list(ctx context.Context, all bool) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, k := range canaryRouteKinds {
		m, err := c.mapping(schema.GroupKind{Group: c.group, Kind: k.kind})
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		ns := c.namespace
		if all {
			ns = metav1.NamespaceAll
		}
		l, err := c.resource(m, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf(errFmtList, k.kind, err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			if k.role == roleClusterXR && !all && routeNamespace(o, nil) != c.namespace {
				continue
			}
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()), cmp.Compare(a.GetKind(), b.GetKind()))
	})
	return out, nil
}
