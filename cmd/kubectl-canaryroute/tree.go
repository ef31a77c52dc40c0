package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// reasonAwaitingCapacity is the reason of a step held until the canary
// has the replicas it needs (internal/rollout's, which the plugin does not
// import: it would link the function's whole planner).
const reasonAwaitingCapacity = "AwaitingCapacity"

// The tree of `get`: where a rollout stands (API.md, "Operator's tools"),
// drawn from a snapshot's objects and the time it is drawn at, and nothing
// else: the golden tests of testdata/ pin it phase by phase.

// lastEvents is how many of the latest events the tree shows.
const lastEvents = 8

// The composed-resource annotation Crossplane writes the pipeline's key in.
const compositionResourceName = "crossplane.io/composition-resource-name"

// renderTree writes the tree of s, as of now.
func renderTree(w io.Writer, s snapshot, now time.Time) error {
	s = s.printable()
	b := &strings.Builder{}
	t := treeOf{s: s, now: now, b: b, spec: specOf(s.xr, s.claim), status: statusOf(s.xr, s.claim)}
	t.header()
	t.rollout()
	t.release()
	t.metrics()
	t.resources()
	t.events()
	// Tables end their rows with padding where the last cells are empty.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// treeOf draws one tree.
type treeOf struct {
	s            snapshot
	now          time.Time
	b            *strings.Builder
	spec, status map[string]any
}

// field writes one "Key: value" line of the summary.
func (t treeOf) field(key, value string) {
	if value == "" {
		return
	}
	fmt.Fprintf(t.b, "%-15s%s\n", key+":", value)
}

// at is a time for people: as written, and how far from now.
func (t treeOf) at(ts string) string {
	if ts == "" {
		return ""
	}
	p, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return ts
	}
	return ts + " (" + relative(p, t.now) + ")"
}

// relative is how far t is from now: "in 3m", "2m ago", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d >= time.Second:
		return "in " + duration.HumanDuration(d)
	case d <= -time.Second:
		return duration.HumanDuration(-d) + " ago"
	default:
		return "now"
	}
}

// header names the CanaryRoute and its kind.
func (t treeOf) header() {
	n := t.s.named
	t.field("Name", n.GetName())
	t.field("Namespace", n.GetNamespace())
	kind := n.GetKind() + "." + groupOf(n.GetAPIVersion())
	k, _ := kindOf(n.GetKind())
	switch {
	case k.role == roleClaim && t.s.xr != nil:
		kind += " (claim of " + describe(t.s.xr) + ")"
	case k.role == roleClaim:
		kind += " (claim, not bound to an XR yet)"
	case k.role == roleClusterXR && t.s.claim != nil:
		kind += " (cluster XR of " + describe(t.s.claim) + ")"
	case k.role == roleClusterXR:
		kind += " (cluster XR)"
	}
	t.field("Kind", kind)
	if ns := routeNamespace(t.s.xr, t.s.claim); ns != n.GetNamespace() {
		t.field("Routes in", ns)
	}
}

// rollout is the CanaryRoute's own line of the rollout: phase, reason,
// revision, step of steps, weights, next step, message; then the approval
// awaited, the analysis verdicts and the conditions.
func (t treeOf) rollout() {
	r := object(t.status, "rollout")
	steps := objects(t.spec, "traffic", "steps")
	phase := str(r, "phase")
	if phase == "" {
		phase = "Unknown (the function has not written status.rollout yet)"
	}
	t.field("Phase", phase)
	t.field("Reason", str(r, "reason"))
	t.field("Revision", str(r, "revision"))
	if rev := str(t.spec, "canary", "revision"); rev != "" && rev != str(r, "revision") {
		t.field("Next revision", rev+" (canary.revision, not started yet)")
	}
	if len(steps) == 0 {
		t.field("Mode", "manual (traffic.weight)")
	} else if i, ok := integer(r, "step"); ok {
		s := fmt.Sprintf("%d/%d", i, len(steps))
		// The status may be behind the spec (steps removed before the
		// function ran again) or forged: a step outside the steps is
		// drawn as such.
		if i >= 0 && int(i) < len(steps) {
			s += " (" + describeStep(steps[i]) + ")"
		}
		t.field("Step", s)
	}
	if r != nil {
		c, _ := number(r, "canaryWeight")
		p, _ := number(r, "primaryWeight")
		t.field("Weights", "primary "+percent(p)+", canary "+percent(c))
	}
	// A step's end (a promotion's settle time) is due only while the
	// rollout moves: Paused, ended or held for capacity, the recorded time
	// says nothing of what comes next (a resume restarts the pause).
	if phase := xr.Phase(str(r, "phase")); (phase == xr.PhaseProgressing || phase == xr.PhasePromoting) && str(r, "reason") != reasonAwaitingCapacity {
		t.field("Next step at", t.at(str(r, "nextStepAt")))
	}
	t.field("Message", str(r, "message"))
	if boolean(r, "awaitingApproval") {
		cmd := "kubectl canaryroute approve " + t.s.named.GetName()
		if ns := t.s.named.GetNamespace(); ns != "" {
			cmd += " -n " + ns
		}
		t.field("Approval", "awaited: "+cmd)
	}
	if v := str(r, "promoted"); v != "" {
		t.field("Promoted", v)
	}
	for i, a := range objects(r, "analysis") {
		key := ""
		if i == 0 {
			key = "Analysis:"
		}
		s, _ := integer(a, "step")
		fmt.Fprintf(t.b, "%-15s%s at step %d: %s, %s\n", key, str(a, "name"), s, str(a, "verdict"), t.at(str(a, "time")))
	}
	t.conditions()
}

// conditions lists the XR's conditions on one line: Crossplane's and the
// function's.
func (t treeOf) conditions() {
	conds := objects(t.status, "conditions")
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		s := str(c, "type") + " " + str(c, "status")
		if str(c, "status") != string(metav1.ConditionTrue) && str(c, "reason") != "" {
			s += " (" + str(c, "reason") + ")"
		}
		parts = append(parts, s)
	}
	t.field("Conditions", strings.Join(parts, ", "))
}

// describeStep is a step in a few words: its weight and what holds it.
func describeStep(s map[string]any) string {
	w, _ := number(s, "weight")
	parts := []string{percent(w)}
	if p := str(s, "pause"); p != "" {
		parts = append(parts, "pause "+p)
	}
	if a, ok := s["analysis"].([]any); ok && len(a) > 0 {
		names := make([]string, 0, len(a))
		for _, n := range a {
			names = append(names, fmt.Sprint(n))
		}
		parts = append(parts, "analysis "+strings.Join(names, ", "))
	}
	if boolean(s, "approval") {
		parts = append(parts, "approval")
	}
	return strings.Join(parts, ", ")
}

// percent writes a weight as written: 50%, 0.1%.
func percent(w float64) string {
	return strconv.FormatFloat(w, 'f', -1, 64) + "%"
}

// release is the release loop: stable, canary, retiring, and each
// revision's replicas.
func (t treeOf) release() {
	rel, st := object(t.spec, "release"), object(t.status, "release")
	if rel == nil && st == nil {
		return
	}
	t.b.WriteString("\nRelease:\n")
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(t.b, "  %-13s%s\n", k+":", v)
		}
	}
	if s := object(st, "stable"); s != nil {
		line("Stable", str(s, "revision")+", since "+t.at(str(s, "since")))
	}
	line("Canary", str(t.spec, "canary", "revision"))
	if r := object(st, "retiring"); r != nil {
		line("Retiring", str(r, "revision")+", no replicas from "+t.at(str(r, "at")))
	}
	history := objects(st, "history")
	revs := make([]string, 0, len(history))
	for _, h := range history {
		revs = append(revs, str(h, "revision"))
	}
	if len(revs) > 0 {
		window, _ := integer(t.spec, "traffic", "rollbackWindow")
		line("History", strings.Join(revs, ", ")+fmt.Sprintf(" (rollback window %d)", window))
	}
	if m := object(st, "canaryMove"); m != nil {
		line("Canary move", str(m, "from")+" to "+str(m, "to")+" at "+t.at(str(m, "at")))
	}
	replicas, ok := integer(rel, "replicas")
	if !ok {
		replicas = 1
	}
	if rel != nil {
		line("Replicas", fmt.Sprintf("%d at full traffic", replicas))
	}
	for _, r := range releaseRevisions(t.s.xr, t.s.claim) {
		w := t.workload(r.revision)
		desc := "no workload found"
		if ref, named := workloadRef(t.s.xr, t.s.claim, r.revision); w == nil && named {
			// A workload the operator may not read is not a missing one.
			if reason, denied := t.s.unreadable[ref.String()]; denied {
				desc = ref.String() + ": cannot read (" + reason + ")"
			}
		}
		if w != nil {
			desc = describe(w) + ": " + replicaCounts(w)
		}
		fmt.Fprintf(t.b, "    %-22s%s\n", r.revision+" ("+r.role+")", desc)
	}
}

// workload is the object that runs a revision: the one spec.release.workload
// names, else a composed object whose pods carry the revision label.
func (t treeOf) workload(rev string) *unstructured.Unstructured {
	all := slices.Concat(t.s.composed, t.s.workloads)
	if r, ok := workloadRef(t.s.xr, t.s.claim, rev); ok {
		if i := slices.IndexFunc(all, r.matches); i >= 0 {
			return all[i]
		}
		return nil
	}
	label := str(t.spec, "release", "revisionLabel")
	if label == "" {
		return nil
	}
	for _, o := range all {
		if str(o.Object, "spec", "template", "metadata", "labels", label) == rev {
			return o
		}
	}
	return nil
}

// replicaCounts are a workload's replicas: wanted and ready.
func replicaCounts(w *unstructured.Unstructured) string {
	want, _ := integer(w.Object, "spec", "replicas")
	ready, _ := integer(w.Object, "status", "readyReplicas")
	return fmt.Sprintf("%d replicas, %d ready", want, ready)
}

// metrics shows the last measurement of each metric.
func (t treeOf) metrics() {
	ms := objects(t.status, "rollout", "metrics")
	if len(ms) == 0 {
		return
	}
	t.b.WriteString("\nMetrics:\n")
	rows := &strings.Builder{}
	rows.WriteString("  NAME\tVALUE\tBASELINE\tVERDICT\tSTEP\tTIME\tREASON\n")
	for _, m := range ms {
		all := objects(m, "measurements")
		if len(all) == 0 {
			fmt.Fprintf(rows, "  %s\t-\t-\t-\t-\t-\t\n", str(m, "name"))
			continue
		}
		last := all[len(all)-1]
		s, _ := integer(last, "step")
		fmt.Fprintf(rows, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", str(m, "name"), dash(str(last, "value")), dash(str(last, "baseline")),
			str(last, "verdict"), s, t.at(str(last, "time")), str(last, "reason"))
	}
	t.b.WriteString(aligned(rows.String()))
}

// aligned aligns the tab-separated columns of rows.
func aligned(rows string) string {
	b := &strings.Builder{}
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, rows); err != nil {
		return rows
	}
	if err := tw.Flush(); err != nil {
		return rows
	}
	return b.String()
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// A node is a line of the resource tree and the lines under it.
type node struct {
	text     string
	children []node
}

// write draws n's children under prefix, with box-drawing branches.
func (n node) write(b *strings.Builder, prefix string) {
	for i, c := range n.children {
		branch, next := "├── ", "│   "
		if i == len(n.children)-1 {
			branch, next = "└── ", "    "
		}
		b.WriteString(prefix + branch + c.text + "\n")
		c.write(b, prefix+next)
	}
}

// resources are the composed resources, by what they are to the rollout:
// routes, proxy Services, ReferenceGrants, BackendTLSPolicies, analysis
// objects, then the rest (a later pipeline step's).
func (t treeOf) resources() {
	refs := resourceRefs(t.s.xr)
	t.b.WriteString("\nResources:\n")
	if len(refs) == 0 {
		t.b.WriteString("  none composed yet\n")
		return
	}
	key := func(r objectRef) string {
		if i := slices.IndexFunc(t.s.composed, r.matches); i >= 0 {
			return t.s.composed[i].GetAnnotations()[compositionResourceName]
		}
		return ""
	}
	slices.SortStableFunc(refs, func(a, b objectRef) int {
		return cmp.Or(cmp.Compare(kindRank(a.kind), kindRank(b.kind)), cmp.Compare(a.kind, b.kind),
			cmp.Compare(keyRank(key(a)), keyRank(key(b))), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	root := node{}
	for _, r := range refs {
		i := slices.IndexFunc(t.s.composed, r.matches)
		if reason, denied := t.s.unreadable[r.String()]; denied && i < 0 {
			root.children = append(root.children, node{text: r.String() + ": cannot read (" + reason + ")"})
			continue
		}
		if i < 0 {
			root.children = append(root.children, node{text: r.String() + ": not found"})
			continue
		}
		root.children = append(root.children, t.resource(t.s.composed[i]))
	}
	root.write(t.b, "")
}

// kindRank orders the kinds of the resource tree.
func kindRank(kind string) int {
	switch {
	case strings.HasSuffix(kind, "Route"):
		return 0
	case kind == "Service":
		return 1
	case kind == "ReferenceGrant":
		return 2
	case kind == "BackendTLSPolicy":
		return 3
	default:
		return 4
	}
}

// keyRank puts the primary's objects before the canary's, by their
// composed-resource keys (service-primary, backendtlspolicy-canary).
func keyRank(key string) int {
	switch {
	case strings.HasSuffix(key, "-primary"):
		return 0
	case strings.HasSuffix(key, "-canary"):
		return 1
	default:
		return 2
	}
}

// resource is one composed resource's node.
func (t treeOf) resource(o *unstructured.Unstructured) node {
	name := describe(o)
	if key := o.GetAnnotations()[compositionResourceName]; strings.HasPrefix(key, "analysis-") {
		name += " (analysis " + strings.TrimPrefix(key, "analysis-") + ")"
	}
	switch kind := o.GetKind(); {
	case strings.HasSuffix(kind, "Route") && groupOf(o.GetAPIVersion()) == "gateway.networking.k8s.io":
		return t.route(o, name)
	case kind == "Service":
		return node{text: name + ": " + serviceTarget(o)}
	case kind == "ReferenceGrant":
		return node{text: name + ": " + grantText(o)}
	case kind == "BackendTLSPolicy":
		return node{text: name + ": " + tlsText(o)}
	case kind == "Job":
		return node{text: name + ": " + jobText(o)}
	}
	if _, ok := object(o.Object, "spec")["replicas"]; ok {
		return node{text: name + ": " + replicaCounts(o)}
	}
	if p := str(o.Object, "status", "phase"); p != "" {
		return node{text: name + ": " + p}
	}
	return node{text: name}
}

// route is a route's node: its weights by backend, and each parent's
// verdict on it.
func (t treeOf) route(o *unstructured.Unstructured, name string) node {
	gen := o.GetGeneration()
	n := node{text: name}
	if b := t.backends(o); b != "" {
		n.children = append(n.children, node{text: "backends: " + b})
	}
	parents := objects(o.Object, "status", "parents")
	if len(parents) == 0 {
		n.children = append(n.children, node{text: "no parent has reported on the route yet"})
	}
	for _, p := range parents {
		pr := object(p, "parentRef")
		pn := str(pr, "name")
		if ns := str(pr, "namespace"); ns != "" {
			pn = ns + "/" + pn
		}
		if sn := str(pr, "sectionName"); sn != "" {
			pn += " (" + sn + ")"
		}
		verdicts := make([]string, 0, 2)
		stale := int64(-1)
		for _, ct := range []string{"Accepted", "ResolvedRefs"} {
			c := condition(objects(p, "conditions"), ct)
			if c == nil {
				verdicts = append(verdicts, ct+" Unknown (not reported)")
				continue
			}
			v := ct + " " + str(c, "status")
			if str(c, "status") != string(metav1.ConditionTrue) && str(c, "reason") != "" {
				v += " (" + str(c, "reason") + ")"
			}
			verdicts = append(verdicts, v)
			if og, ok := integer(c, "observedGeneration"); ok && gen > 0 && og < gen {
				stale = og
			}
		}
		v := "parent " + pn + ": " + strings.Join(verdicts, ", ")
		if stale >= 0 {
			v += fmt.Sprintf(" (of generation %d; the route is at %d)", stale, gen)
		}
		n.children = append(n.children, node{text: v})
	}
	return n
}

// condition is the condition of type ct, or nil.
func condition(conds []map[string]any, ct string) map[string]any {
	for _, c := range conds {
		if str(c, "type") == ct {
			return c
		}
	}
	return nil
}

// backends are the weights of the rollout's rule, the first whose backends
// include the canary (status.rollout.canaryBackends), else the first rule
// with backends: "podinfo-primary 50, podinfo-canary 50 (canary)".
func (t treeOf) backends(route *unstructured.Unstructured) string {
	canaries := objects(t.status, "rollout", "canaryBackends")
	isCanary := func(b map[string]any) bool {
		ns := str(b, "namespace")
		if ns == "" {
			ns = route.GetNamespace()
		}
		kind := str(b, "kind")
		if kind == "" {
			kind = "Service"
		}
		return slices.ContainsFunc(canaries, func(c map[string]any) bool {
			return str(c, "name") == str(b, "name") && str(c, "namespace") == ns && str(c, "kind") == kind
		})
	}
	var chosen []map[string]any
	for _, r := range objects(route.Object, "spec", "rules") {
		bs := objects(r, "backendRefs")
		if chosen == nil && len(bs) > 0 {
			chosen = bs
		}
		if slices.ContainsFunc(bs, isCanary) {
			chosen = bs
			break
		}
	}
	parts := make([]string, 0, len(chosen))
	for _, b := range chosen {
		s := str(b, "name")
		if ns := str(b, "namespace"); ns != "" && ns != route.GetNamespace() {
			s = ns + "/" + s
		}
		w, ok := number(b, "weight")
		if !ok {
			w = 1
		}
		s += " " + strconv.FormatFloat(w, 'f', -1, 64)
		if isCanary(b) {
			s += " (canary)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// serviceTarget is what a proxy Service sends to: its selector, or its
// external name.
func serviceTarget(o *unstructured.Unstructured) string {
	if en := str(o.Object, "spec", "externalName"); en != "" {
		return "ExternalName " + en
	}
	sel := object(o.Object, "spec", "selector")
	if len(sel) == 0 {
		return "selects nothing"
	}
	return "selects " + labelsText(sel)
}

// labelsText writes labels sorted, as k=v,k=v.
func labelsText(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// grantText says what a ReferenceGrant lets through: from which kinds and
// namespaces, to which objects.
func grantText(o *unstructured.Unstructured) string {
	froms, tos := objects(o.Object, "spec", "from"), objects(o.Object, "spec", "to")
	from, to := make([]string, 0, len(froms)), make([]string, 0, len(tos))
	for _, f := range froms {
		from = append(from, str(f, "kind")+" in "+str(f, "namespace"))
	}
	for _, x := range tos {
		s := str(x, "kind")
		if n := str(x, "name"); n != "" {
			s += " " + n
		}
		to = append(to, s)
	}
	return "from " + strings.Join(from, ", ") + " to " + strings.Join(to, ", ")
}

// tlsText says which Service a BackendTLSPolicy covers, and for which name.
func tlsText(o *unstructured.Unstructured) string {
	refs := objects(o.Object, "spec", "targetRefs")
	targets := make([]string, 0, len(refs))
	for _, r := range refs {
		targets = append(targets, str(r, "kind")+" "+str(r, "name"))
	}
	return "TLS to " + strings.Join(targets, ", ") + " as " + str(o.Object, "spec", "validation", "hostname")
}

// jobText is how far a Job is.
func jobText(o *unstructured.Unstructured) string {
	parts := make([]string, 0, 3)
	for _, k := range []string{"active", "succeeded", "failed"} {
		if n, ok := integer(o.Object, "status", k); ok && n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return "not started"
	}
	return strings.Join(parts, ", ")
}

// events shows the latest events of the XR and the claim, oldest first.
func (t treeOf) events() {
	for k, reason := range t.s.unreadable {
		if strings.HasPrefix(k, "Event ") {
			t.b.WriteString("\nEvents:\n  cannot read (" + reason + ")\n")
			return
		}
	}
	if len(t.s.events) == 0 {
		return
	}
	evs := slices.Clone(t.s.events)
	slices.SortStableFunc(evs, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(eventTime(a), eventTime(b)), cmp.Compare(a.GetName(), b.GetName()))
	})
	if len(evs) > lastEvents {
		evs = evs[len(evs)-lastEvents:]
	}
	t.b.WriteString("\nEvents:\n")
	rows := &strings.Builder{}
	rows.WriteString("  AGE\tTYPE\tREASON\tOBJECT\tMESSAGE\n")
	for _, e := range evs {
		age := "-"
		if ts := eventTime(e); ts != "" {
			if p, err := time.Parse(time.RFC3339, ts); err == nil {
				age = duration.HumanDuration(t.now.Sub(p))
			}
		}
		if n, ok := integer(e.Object, "count"); ok && n > 1 {
			age += fmt.Sprintf(" (x%d)", n)
		}
		involved := object(e.Object, "involvedObject")
		fmt.Fprintf(rows, "  %s\t%s\t%s\t%s\t%s\n", age, str(e.Object, "type"), str(e.Object, "reason"), str(involved, "kind"), oneLine(str(e.Object, "message")))
	}
	t.b.WriteString(aligned(rows.String()))
}

// eventTime is when an event was last seen, as RFC 3339.
func eventTime(e *unstructured.Unstructured) string {
	for _, p := range [][]string{{"lastTimestamp"}, {"series", "lastObservedTime"}, {"eventTime"}, {"firstTimestamp"}} {
		if ts := str(e.Object, p...); ts != "" {
			if p, err := time.Parse(time.RFC3339Nano, ts); err == nil {
				return p.UTC().Format(time.RFC3339)
			}
		}
	}
	return e.GetCreationTimestamp().UTC().Format(time.RFC3339)
}

// oneLine keeps a message on one line of the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
