package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// The commands that steer a rollout: each decides its change from the
// CanaryRoute as it is (change.go), warns of GitOps (gitops.go), and applies
// it by server-side apply (apply.go), or prints it.

const (
	errFmtDryRun = `invalid --dry-run %q: one of "none", "client" or "server"`
	errFmtApply  = "cannot apply to %s: %w"
)

// The values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// A writer is one command that steers a rollout.
type writer struct {
	use, short, long string
	// args is how many arguments it takes after NAME.
	args int
	// flags adds its own flags, into w.
	flags func(cmd *cobra.Command, w *writeFlags)
	// decide is its change.
	decide func(r rollout, args []string, w *writeFlags) (change, error)
}

// writeFlags are the flags of the commands that steer.
type writeFlags struct {
	dryRun string
	print  *genericclioptions.PrintFlags
	full   bool
	to     string
}

var (
	writeApprove = writer{
		use: "approve NAME", short: "Approve the current step (traffic.approval)",
		long:   "Writes spec.traffic.approval: {revision, step} for the rollout's current revision and step (status.rollout), which lets an approval step move on once its pause, gates and analysis pass. An approval that already covers the step is left as it is.",
		decide: func(r rollout, _ []string, _ *writeFlags) (change, error) { return approve(r) },
	}
	writePromote = writer{
		use: "promote NAME", short: "Move the current revision to its last step (traffic.promote)",
		long: "Writes spec.traffic.promote: {revision} for the rollout's current revision: once the current step's route is accepted, it skips the pauses, analysis and approvals up to the last step, once per revision. The last step's own pause, analysis and approval, and every gate, still apply. " +
			"With --full, also writes spec.traffic.approval up to the last step, so that no approval step waits for a person.",
		flags: func(cmd *cobra.Command, w *writeFlags) {
			cmd.Flags().BoolVar(&w.full, "full", false, "also approve every approval step up to the last (traffic.approval)")
		},
		decide: func(r rollout, _ []string, w *writeFlags) (change, error) { return promote(r, w.full) },
	}
	writeAbort = writer{
		use: "abort NAME", short: "Send every request to the primary (traffic.abort)",
		long:   "Writes spec.traffic.abort: true: the canary gets weight 0 (phase Aborted). retry restarts the revision at step 0.",
		decide: func(r rollout, _ []string, _ *writeFlags) (change, error) { return abort(r) },
	}
	writeRetry = writer{
		use: "retry NAME", short: "Restart a Failed or Aborted revision at step 0 (traffic.retry)",
		long:   "Writes spec.traffic.retry with a counter the rollout has not seen (status.rollout.retry), which restarts a Failed or Aborted revision at step 0, once; on an aborted rollout it also writes spec.traffic.abort: false.",
		decide: func(r rollout, _ []string, _ *writeFlags) (change, error) { return retry(r) },
	}
	writePause = writer{
		use: "pause NAME", short: "Freeze the rollout at its current step (traffic.paused)",
		long:   "Writes spec.traffic.paused: true: the current step and its weight hold (phase Paused) until resume.",
		decide: func(r rollout, _ []string, _ *writeFlags) (change, error) { return pause(r) },
	}
	writeResume = writer{
		use: "resume NAME", short: "Resume a paused rollout (traffic.paused: false)",
		long:   "Writes spec.traffic.paused: false: the current step's pause starts again, then its gates, analysis and approval are checked again.",
		decide: func(r rollout, _ []string, _ *writeFlags) (change, error) { return resume(r) },
	}
	writeRollback = writer{
		use: "rollback NAME", short: "Roll a release back (canary.revision)",
		long: "Writes spec.canary.revision of a release (spec.release): --to REV, else the stable revision while another revision is the canary, else the revision that was stable before (status.release.history). " +
			"A revision of the rollback window that is unchanged since goes straight to its promotion; any other rolls out through the steps.",
		flags: func(cmd *cobra.Command, w *writeFlags) {
			cmd.Flags().StringVar(&w.to, "to", "", "the revision to roll back to")
		},
		decide: func(r rollout, _ []string, w *writeFlags) (change, error) { return rollback(r, w.to) },
	}
	writeSetRevision = writer{
		use: "set-revision NAME REV", short: "Start a release of another revision (canary.revision)",
		long: "Writes spec.canary.revision: REV. With a release, this is the one edit of a release: REV rolls out through the steps, and is promoted once they pass.",
		args: 1,
		decide: func(r rollout, args []string, _ *writeFlags) (change, error) {
			return setRevision(r, args[0])
		},
	}
)

// newWriteCommand is the command of w.
func newWriteCommand(o *options, w writer) *cobra.Command {
	f := &writeFlags{dryRun: dryRunNone, print: genericclioptions.NewPrintFlags("")}
	cmd := &cobra.Command{
		Use:   w.use,
		Short: w.short,
		Long:  w.long,
		Args:  cobra.ExactArgs(1 + w.args),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.write(cmd, args[0], args[1:], w, f)
		},
	}
	cmd.Flags().StringVar(&f.dryRun, "dry-run", f.dryRun, `"client" (or --dry-run alone) prints the apply patch and sends nothing; "server" sends it for the API server to check, and stores nothing`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunClient
	f.print.AddFlags(cmd)
	if w.flags != nil {
		w.flags(cmd, f)
	}
	return cmd
}

// check refuses flags that cannot be honoured before anything is written:
// an -o the printers do not know fails now, not after the change is made.
func (f *writeFlags) check() error {
	if f.dryRun != dryRunNone && f.dryRun != dryRunClient && f.dryRun != dryRunServer {
		return fmt.Errorf(errFmtDryRun, f.dryRun)
	}
	if *f.print.OutputFormat != "" {
		if _, err := f.print.ToPrinter(); err != nil {
			return err
		}
	}
	return nil
}

// write runs one steering command on the CanaryRoute arg names.
func (o *options) write(cmd *cobra.Command, arg string, args []string, w writer, f *writeFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	ctx := cmd.Context()
	c, err := o.clients()
	if err != nil {
		return err
	}
	t, err := c.locate(ctx, arg)
	if err != nil {
		return err
	}
	out, errOut := &stream{w: o.streams.Out}, &stream{w: o.streams.ErrOut}
	target := t.writable()
	name := resourceName(target.mapping, target.obj.GetName())
	if t.role == roleClusterXR && t.claim.obj != nil {
		errOut.printf("Note: %s is claimed by %s: writing the claim, whose spec Crossplane copies to the XR.\n", describe(t.xr.obj), describe(t.claim.obj))
	}
	r := readRollout(describe(target.obj), object(target.obj.Object, "spec"), t.status())
	ch, err := w.decide(r, args, f)
	if err != nil {
		return err
	}
	if ch.unchanged != "" {
		// With -o, the output stays what a script parses: the object as it
		// is, and the reason nothing was written on stderr.
		if *f.print.OutputFormat != "" {
			errOut.printf("%s unchanged: %s\n", name, ch.unchanged)
			return errors.Join(errOut.err, printObject(f.print, target.obj, o.streams.Out, nil))
		}
		out.printf("%s unchanged: %s\n", name, ch.unchanged)
		return errors.Join(out.err, errOut.err)
	}
	for _, n := range ch.notes {
		errOut.printf("Note: %s.\n", n)
	}
	for _, g := range gitOpsOwners(target.obj) {
		errOut.printf("%s", gitOpsWarning(target.obj, g, ch, describe(target.obj)))
	}
	if errOut.err != nil {
		return errOut.err
	}
	patch, err := applyPatch(target.obj, ch)
	if err != nil {
		return err
	}
	if f.dryRun == dryRunClient {
		return printObject(f.print, patch, o.streams.Out, &printers.YAMLPrinter{})
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if f.dryRun == dryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	res, err := c.resource(target.mapping, target.obj.GetNamespace()).Apply(ctx, target.obj.GetName(), patch, opts)
	if err != nil {
		return fmt.Errorf(errFmtApply, name, err)
	}
	if *f.print.OutputFormat != "" {
		return printObject(f.print, res, o.streams.Out, nil)
	}
	suffix := ""
	if f.dryRun == dryRunServer {
		suffix = " (server dry run)"
	}
	out.printf("%s %s%s: %s\n", name, ch.verb, suffix, ch.summary())
	return out.err
}

// printObject prints obj as -o says, else with def.
func printObject(f *genericclioptions.PrintFlags, obj runtime.Object, out io.Writer, def printers.ResourcePrinter) error {
	p := def
	if *f.OutputFormat != "" || def == nil {
		var err error
		if p, err = f.ToPrinter(); err != nil {
			return err
		}
	}
	return p.PrintObj(obj, out)
}
