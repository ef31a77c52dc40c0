package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The commands against a fake cluster (client-go's fake dynamic client): what
// each one sends, with which field manager, and that --dry-run sends
// nothing. The clusters are the golden tests' snapshots (testdata/*.yaml).

// testKinds are the kinds the fake cluster serves, and their scopes.
var testKinds = []struct {
	gvk   schema.GroupVersionKind
	scope meta.RESTScope
}{
	{schema.GroupVersionKind{Group: defaultGroup, Version: "v1alpha1", Kind: "CanaryRoute"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Group: defaultGroup, Version: "v1alpha1", Kind: "CanaryRouteClaim"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Group: defaultGroup, Version: "v1alpha1", Kind: "XCanaryRoute"}, meta.RESTScopeRoot},
	{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1beta1", Kind: "ReferenceGrant"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Version: "v1", Kind: "Event"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, meta.RESTScopeNamespace},
}

// fakeCluster is a fake dynamic client holding the objects of the files, and
// a RESTMapper of testKinds.
func fakeCluster(t *testing.T, files ...string) (*dynamicfake.FakeDynamicClient, meta.RESTMapper) {
	t.Helper()
	gvs := make([]schema.GroupVersion, 0, len(testKinds))
	for _, k := range testKinds {
		gvs = append(gvs, k.gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(gvs)
	lists := map[schema.GroupVersionResource]string{}
	for _, k := range testKinds {
		mapper.Add(k.gvk, k.scope)
		m, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		lists[m.Resource] = k.gvk.Kind + "List"
	}
	var objs []runtime.Object
	for _, f := range files {
		for _, o := range loadObjects(t, filepath.Join("testdata", f)) {
			objs = append(objs, o)
		}
	}
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
	// The fake tracker cannot apply to unstructured objects: answer an
	// apply with the patch sent, which the test reads from the actions.
	c.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		return true, u, nil
	})
	return c, mapper
}

// runCommand runs `kubectl canaryroute args...` against c, and returns what
// it wrote to stdout and stderr.
func runCommand(t *testing.T, c dynamic.Interface, mapper meta.RESTMapper, args ...string) (string, string, error) {
	t.Helper()
	// An empty kubeconfig: the namespace is -n's, else "default".
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	o := newOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func() time.Time { return treeNow })
	o.connect = func() (dynamic.Interface, meta.RESTMapper, error) { return c, mapper, nil }
	cmd := newRootCommand(o)
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// sent is a patch action: where it went, and what it sent.
type sent struct {
	Resource     string
	Namespace    string
	Name         string
	PatchType    types.PatchType
	FieldManager string
	Force        bool
	DryRun       []string
	Patch        map[string]any
}

// patches are the patch actions c received.
func patches(t *testing.T, c *dynamicfake.FakeDynamicClient) []sent {
	t.Helper()
	var out []sent
	for _, a := range c.Actions() {
		p, ok := a.(k8stesting.PatchActionImpl)
		if !ok {
			continue
		}
		s := sent{
			Resource: p.GetResource().Resource, Namespace: p.GetNamespace(), Name: p.GetName(), PatchType: p.GetPatchType(),
			FieldManager: p.PatchOptions.FieldManager, DryRun: p.PatchOptions.DryRun,
		}
		if p.PatchOptions.Force != nil {
			s.Force = *p.PatchOptions.Force
		}
		if err := json.Unmarshal(p.GetPatch(), &s.Patch); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// applied is the apply of the plugin's field manager, forced, sending spec
// to the CanaryRoute (kind, resource) namespace/name.
func applied(kind, resource, namespace, name string, spec map[string]any) sent {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return sent{
		Resource: resource, Namespace: namespace, Name: name, PatchType: types.ApplyPatchType, FieldManager: fieldManager, Force: true,
		Patch: map[string]any{"apiVersion": defaultGroup + "/v1alpha1", "kind": kind, "metadata": md, "spec": spec},
	}
}

// traffic is spec.traffic holding fields.
func traffic(fields map[string]any) map[string]any {
	return map[string]any{"traffic": fields}
}

func TestCommands(t *testing.T) {
	type want struct {
		sent   []sent
		out    string
		errOut string
		err    string
	}
	cases := map[string]struct {
		reason  string
		cluster string
		args    []string
		want    want
	}{
		"Approve": {
			reason:  "approve applies traffic.approval for the current revision and step, and nothing else.",
			cluster: "awaiting-approval.yaml",
			args:    []string{"approve", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"approval": map[string]any{"revision": "v2", "step": float64(1)}}))},
				out:  "canaryroute.platform.example.org/web approved: spec.traffic.approval: {revision: v2, step: 1}\n",
			},
		},
		"ApproveDryRun": {
			reason:  "--dry-run prints the apply patch and sends nothing.",
			cluster: "awaiting-approval.yaml",
			args:    []string{"approve", "web", "-n", "demo", "--dry-run"},
			want: want{out: `apiVersion: platform.example.org/v1alpha1
kind: CanaryRoute
metadata:
  name: web
  namespace: demo
spec:
  traffic:
    approval:
      revision: v2
      step: 1
`},
		},
		"ApproveDryRunJSON": {
			reason:  "--dry-run=client -o json prints the apply patch as JSON, and sends nothing.",
			cluster: "awaiting-approval.yaml",
			args:    []string{"approve", "web", "-n", "demo", "--dry-run=client", "-o", "json"},
			want: want{out: `{
    "apiVersion": "platform.example.org/v1alpha1",
    "kind": "CanaryRoute",
    "metadata": {
        "name": "web",
        "namespace": "demo"
    },
    "spec": {
        "traffic": {
            "approval": {
                "revision": "v2",
                "step": 1
            }
        }
    }
}
`},
		},
		"ApproveServerDryRun": {
			reason:  "--dry-run=server sends the apply for the API server to check, marked as a dry run, so it stores nothing.",
			cluster: "awaiting-approval.yaml",
			args:    []string{"approve", "web", "-n", "demo", "--dry-run=server"},
			want: want{
				sent: []sent{func() sent {
					s := applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"approval": map[string]any{"revision": "v2", "step": float64(1)}}))
					s.DryRun = []string{metav1.DryRunAll}
					return s
				}()},
				out: "canaryroute.platform.example.org/web approved (server dry run): spec.traffic.approval: {revision: v2, step: 1}\n",
			},
		},
		"Promote": {
			reason:  "promote applies traffic.promote for the current revision.",
			cluster: "progressing.yaml",
			args:    []string{"promote", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"promote": map[string]any{"revision": "v2"}}))},
				out:  "canaryroute.platform.example.org/web promoted: spec.traffic.promote: {revision: v2}\n",
			},
		},
		"PromoteFull": {
			reason:  "promote --full applies traffic.promote and the approval of every step up to the last.",
			cluster: "awaiting-approval.yaml",
			args:    []string{"promote", "web", "-n", "demo", "--full"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{
					"promote":  map[string]any{"revision": "v2"},
					"approval": map[string]any{"revision": "v2", "step": float64(2)},
				}))},
				out: "canaryroute.platform.example.org/web promoted: spec.traffic.promote: {revision: v2}, spec.traffic.approval: {revision: v2, step: 2}\n",
			},
		},
		"Abort": {
			reason:  "abort applies traffic.abort: true.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"abort": true}))},
				out:  "canaryroute.platform.example.org/web aborted: spec.traffic.abort: true\n",
			},
		},
		"RetryClaim": {
			reason:  "retry of a claimed CanaryRoute applies to the claim, whose spec Crossplane copies to the XR, a retry value new to the XR's status.",
			cluster: "failed.yaml",
			args:    []string{"retry", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRouteClaim", "canaryrouteclaims", "demo", "web", traffic(map[string]any{"retry": "1"}))},
				out:  "canaryrouteclaim.platform.example.org/web retried: spec.traffic.retry: \"1\"\n",
			},
		},
		"RetryClusterXR": {
			reason:  "Naming the claimed cluster XR still writes the claim, and says so.",
			cluster: "failed.yaml",
			args:    []string{"retry", "xcanaryroute/web-7xk2p"},
			want: want{
				sent:   []sent{applied("CanaryRouteClaim", "canaryrouteclaims", "demo", "web", traffic(map[string]any{"retry": "1"}))},
				out:    "canaryrouteclaim.platform.example.org/web retried: spec.traffic.retry: \"1\"\n",
				errOut: "Note: XCanaryRoute web-7xk2p is claimed by CanaryRouteClaim demo/web: writing the claim, whose spec Crossplane copies to the XR.\n",
			},
		},
		"RetryAborted": {
			reason:  "retry of an aborted rollout also clears abort.",
			cluster: "aborted.yaml",
			args:    []string{"retry", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"retry": "1", "abort": false}))},
				out:  "canaryroute.platform.example.org/web retried: spec.traffic.retry: \"1\", spec.traffic.abort: false\n",
			},
		},
		"Pause": {
			reason:  "pause applies traffic.paused: true.",
			cluster: "progressing.yaml",
			args:    []string{"pause", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"paused": true}))},
				out:  "canaryroute.platform.example.org/web paused: spec.traffic.paused: true\n",
			},
		},
		"Resume": {
			reason:  "resume applies traffic.paused: false.",
			cluster: "paused.yaml",
			args:    []string{"resume", "web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"paused": false}))},
				out:  "canaryroute.platform.example.org/web resumed: spec.traffic.paused: false\n",
			},
		},
		"ResumeNotPaused": {
			reason:  "A command with nothing to change sends nothing, and says why.",
			cluster: "progressing.yaml",
			args:    []string{"resume", "web", "-n", "demo"},
			want:    want{out: "canaryroute.platform.example.org/web unchanged: the rollout is not paused (spec.traffic.paused is not true)\n"},
		},
		"Rollback": {
			reason:  "rollback of a release while promoting returns canary.revision to the stable revision.",
			cluster: "promoting.yaml",
			args:    []string{"rollback", "podinfo", "-n", "shop"},
			want: want{
				sent:   []sent{applied("CanaryRoute", "canaryroutes", "shop", "podinfo", map[string]any{"canary": map[string]any{"revision": "v1"}})},
				out:    "canaryroute.platform.example.org/podinfo rolled back to v1: spec.canary.revision: v1\n",
				errOut: "Note: v1 is the stable revision: the canary goes to 0%, then its Service moves back to v1.\n",
			},
		},
		"RollbackTo": {
			reason:  "rollback --to writes that revision: one in the rollback window goes straight to its promotion.",
			cluster: "retiring.yaml",
			args:    []string{"rollback", "podinfo", "-n", "shop", "--to", "v1"},
			want: want{
				sent:   []sent{applied("CanaryRoute", "canaryroutes", "shop", "podinfo", map[string]any{"canary": map[string]any{"revision": "v1"}})},
				out:    "canaryroute.platform.example.org/podinfo rolled back to v1: spec.canary.revision: v1\n",
				errOut: "Note: v1 is in the rollback window (3): it goes straight to its promotion, without steps, if unchanged since.\n",
			},
		},
		"SetRevision": {
			reason:  "set-revision applies canary.revision.",
			cluster: "retiring.yaml",
			args:    []string{"set-revision", "podinfo", "v4", "-n", "shop"},
			want: want{
				sent:   []sent{applied("CanaryRoute", "canaryroutes", "shop", "podinfo", map[string]any{"canary": map[string]any{"revision": "v4"}})},
				out:    "canaryroute.platform.example.org/podinfo set to revision v4: spec.canary.revision: v4\n",
				errOut: "Note: v4 rolls out through the steps.\n",
			},
		},
		"Refused": {
			reason:  "A command the rollout's state refuses sends nothing, and fails with the reason.",
			cluster: "succeeded.yaml",
			args:    []string{"promote", "web", "-n", "demo"},
			want:    want{err: "nothing to promote: the rollout is Succeeded", errOut: "Error: nothing to promote: the rollout is Succeeded\n"},
		},
		"NotFound": {
			reason:  "A name that is no CanaryRoute of any kind fails, naming the kinds looked in.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "nope", "-n", "demo"},
			want: want{
				err:    `no CanaryRoute, CanaryRouteClaim, XCanaryRoute named "nope" in namespace "demo" (API group platform.example.org)`,
				errOut: `Error: no CanaryRoute, CanaryRouteClaim, XCanaryRoute named "nope" in namespace "demo" (API group platform.example.org)` + "\n",
			},
		},
		"KindVersionGroup": {
			reason:  "KIND.VERSION.GROUP/NAME, as kubectl takes it, names the kind of the plugin's group.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "canaryroute.v1alpha1.platform.example.org/web", "-n", "demo"},
			want: want{
				sent: []sent{applied("CanaryRoute", "canaryroutes", "demo", "web", traffic(map[string]any{"abort": true}))},
				out:  "canaryroute.platform.example.org/web aborted: spec.traffic.abort: true\n",
			},
		},
		"OtherGroup": {
			reason:  "KIND.GROUP/NAME of another group than the plugin's is not one of its kinds, not the same kind of its group.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "canaryroute.other.io/web", "-n", "demo"},
			want: want{
				err:    `invalid name "canaryroute.other.io/web": NAME or KIND[.GROUP]/NAME, KIND one of canaryroute, canaryrouteclaim, xcanaryroute, GROUP platform.example.org (--api-group)`,
				errOut: `Error: invalid name "canaryroute.other.io/web": NAME or KIND[.GROUP]/NAME, KIND one of canaryroute, canaryrouteclaim, xcanaryroute, GROUP platform.example.org (--api-group)` + "\n",
			},
		},
		"BadOutput": {
			reason:  "An -o the printers do not know is refused before anything is sent.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "web", "-n", "demo", "-o", "yml"},
			want: want{
				err:    `unable to match a printer suitable for the output format "yml", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml`,
				errOut: `Error: unable to match a printer suitable for the output format "yml", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml` + "\n",
			},
		},
		"UnchangedAsJSON": {
			reason:  "With -o, a command that changes nothing prints the object as it is (what a script parses), and why nothing was written on stderr.",
			cluster: "paused.yaml",
			args:    []string{"pause", "web", "-n", "demo", "-o", "jsonpath={.spec.traffic.paused}"},
			want: want{
				out:    "true",
				errOut: "canaryroute.platform.example.org/web unchanged: spec.traffic.paused is true already\n",
			},
		},
		"BadDryRun": {
			reason:  "--dry-run takes kubectl's values only.",
			cluster: "progressing.yaml",
			args:    []string{"abort", "web", "-n", "demo", "--dry-run=maybe"},
			want: want{
				err:    `invalid --dry-run "maybe": one of "none", "client" or "server"`,
				errOut: `Error: invalid --dry-run "maybe": one of "none", "client" or "server"` + "\n",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, mapper := fakeCluster(t, tc.cluster)
			out, errOut, err := runCommand(t, c, mapper, tc.args...)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nerror: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.sent, patches(t, c)); diff != "" {
				t.Errorf("%s\nsent: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.out, out); diff != "" {
				t.Errorf("%s\nstdout: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.errOut, errOut); diff != "" {
				t.Errorf("%s\nstderr: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCommandsGitOps pins that a command on an object Argo CD applies warns,
// and still writes (an abort must not wait for a commit).
func TestCommandsGitOps(t *testing.T) {
	c, mapper := fakeCluster(t, "progressing.yaml")
	gvr := schema.GroupVersionResource{Group: defaultGroup, Version: "v1alpha1", Resource: "canaryroutes"}
	xr, err := c.Resource(gvr).Namespace("demo").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	xr.SetAnnotations(map[string]string{argoTrackingID: "web:platform.example.org/CanaryRoute:demo/web"})
	xr.SetManagedFields([]metav1.ManagedFieldsEntry{managedBy("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:traffic":{"f:steps":{}}}}`)})
	if _, err := c.Resource(gvr).Namespace("demo").Update(t.Context(), xr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	_, errOut, err := runCommand(t, c, mapper, "abort", "web", "-n", "demo")
	if err != nil {
		t.Fatal(err)
	}
	want := `Warning: Argo CD (Application web) applies CanaryRoute demo/web from Git (annotation argocd.argoproj.io/tracking-id).
  Git does not set spec.traffic.abort: a sync keeps this edit until a commit sets it.
  To make it in Git, set in the manifest:
    spec.traffic.abort: true
  then commit, push and run: argocd app sync web
  To leave these fields to kubectl canaryroute, remove them from the manifest and add to the Application's
  spec.ignoreDifferences the jsonPointers /spec/traffic/abort, with the sync option RespectIgnoreDifferences=true.
`
	if diff := cmp.Diff(want, errOut); diff != "" {
		t.Errorf("abort on an object Argo CD applies: stderr: -want, +got:\n%s", diff)
	}
	if got := len(patches(t, c)); got != 1 {
		t.Errorf("abort on an object Argo CD applies: %d applies sent, want 1: the warning does not stop an abort", got)
	}
}

// TestGet pins that get reads from the cluster what the golden trees are
// drawn from: the XR (or the claim and its cluster XR), the objects its
// resourceRefs name, and its events (and no other object's).
func TestGet(t *testing.T) {
	cases := map[string]struct {
		reason  string
		cluster []string
		args    []string
		golden  string
	}{
		"NamespacedXR": {
			reason:  "A namespaced XR's composed resources are in its namespace (spec.crossplane.resourceRefs).",
			cluster: []string{"progressing.yaml", "awaiting-approval.yaml"},
			args:    []string{"get", "web", "-n", "demo"},
			golden:  "progressing.golden",
		},
		"Claim": {
			reason:  "A claim's tree is drawn from its cluster XR (spec.resourceRef), whose composed resources name their namespaces (spec.resourceRefs), and the events of both.",
			cluster: []string{"failed.yaml"},
			args:    []string{"get", "web", "-n", "demo"},
			golden:  "failed.golden",
		},
		"Release": {
			reason:  "A release's workloads are found by spec.release.workload's name.",
			cluster: []string{"promoting.yaml"},
			args:    []string{"get", "canaryroute/podinfo", "-n", "shop"},
			golden:  "promoting.golden",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Two CanaryRoutes named web in demo cannot be told apart:
			// each case reads one cluster at a time.
			c, mapper := fakeCluster(t, tc.cluster[0])
			out, _, err := runCommand(t, c, mapper, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("%s\nget: -%s, +got:\n%s", tc.reason, tc.golden, diff)
			}
		})
	}
}

// TestGetForbidden: an object the operator may not read (RBAC) is drawn
// as such, and the rest of the tree is drawn.
func TestGetForbidden(t *testing.T) {
	c, mapper := fakeCluster(t, "progressing.yaml")
	c.PrependReactor("get", "jobs", func(_ k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "web-v2-1-smoke", errors.New("RBAC: denied"))
	})
	c.PrependReactor("list", "events", func(_ k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC: denied"))
	})
	out, _, err := runCommand(t, c, mapper, "get", "web", "-n", "demo")
	if err != nil {
		t.Fatalf("get with a kind it may not read: %v", err)
	}
	for _, want := range []string{"Phase:         Progressing", "Service demo/web-primary: selects", "Job demo/web-v2-1-smoke: cannot read (Forbidden)", "Events:\n  cannot read (Forbidden)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("get with jobs forbidden: the tree lacks %q:\n%s", want, out)
		}
	}
}

// TestGetForbiddenWorkload: a release's workload the operator may not read
// is drawn as such, not as a workload that does not exist.
func TestGetForbiddenWorkload(t *testing.T) {
	c, mapper := fakeCluster(t, "promoting.yaml")
	c.PrependReactor("get", "deployments", func(_ k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "podinfo-v2", errors.New("RBAC: denied"))
	})
	out, _, err := runCommand(t, c, mapper, "get", "podinfo", "-n", "shop")
	if err != nil {
		t.Fatalf("get with deployments forbidden: %v", err)
	}
	for _, want := range []string{"v2 (canary)           Deployment shop/podinfo-v2: cannot read (Forbidden)"} {
		if !strings.Contains(out, want) {
			t.Errorf("get with deployments forbidden: the tree lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no workload found") {
		t.Errorf("get with deployments forbidden says a workload was not found:\n%s", out)
	}
}

func TestGetOutput(t *testing.T) {
	c, mapper := fakeCluster(t, "progressing.yaml")
	out, _, err := runCommand(t, c, mapper, "get", "web", "-n", "demo", "-o", "jsonpath={.status.rollout.phase}")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("Progressing", out); diff != "" {
		t.Errorf("get -o jsonpath prints the CanaryRoute itself: -want, +got:\n%s", diff)
	}
}

func TestVersion(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		want   string
	}{
		"Version": {
			reason: "--version prints the version that hack/release.sh stamps, alone on a line, without reaching the cluster.",
			args:   []string{"--version"},
			want:   version + "\n",
		},
		"NoShorthand": {
			reason: "-v is not --version: kubectl keeps it for verbosity.",
			args:   []string{"-v"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, mapper := fakeCluster(t)
			out, _, err := runCommand(t, c, mapper, tc.args...)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("%s\n%v: want an error, got none; stdout:\n%s", tc.reason, tc.args, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("%s\n%v: -want, +got:\n%s", tc.reason, tc.args, diff)
			}
		})
	}
}

func TestList(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		want   string
	}{
		"Namespace": {
			reason: "list shows a namespace's CanaryRoutes and claims, not the claims' cluster XRs.",
			args:   []string{"list", "-n", "demo"},
			want: `NAME   KIND               PHASE    STEP   CANARY   REVISION   STABLE   REASON         AGE
web    CanaryRouteClaim   Failed   1/3    0%       v2         -        MetricFailed   24h
`,
		},
		"AllNamespaces": {
			reason: "list -A shows every namespace's, with a NAMESPACE column.",
			args:   []string{"list", "-A"},
			want: `NAMESPACE   NAME      KIND               PHASE       STEP   CANARY   REVISION   STABLE   REASON             AGE
demo        web       CanaryRouteClaim   Failed      1/3    0%       v2         -        MetricFailed       24h
shop        podinfo   CanaryRoute        Promoting   2/3    100%     v2         v1       PromotionStarted   30d
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, mapper := fakeCluster(t, "failed.yaml", "promoting.yaml")
			out, _, err := runCommand(t, c, mapper, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("%s\nlist: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that a watch writes to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatch pins that get --watch draws the tree, then draws it again when
// the CanaryRoute changes.
func TestWatch(t *testing.T) {
	c, mapper := fakeCluster(t, "progressing.yaml")
	cl := &clients{dynamic: c, mapper: mapper, group: defaultGroup, namespace: "demo"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- watchTree(ctx, cl, "web", out, func() time.Time { return treeNow }, false) }()

	gvr := schema.GroupVersionResource{Group: defaultGroup, Version: "v1alpha1", Resource: "canaryroutes"}
	wait := func(what string, ok func(string) bool, each func()) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("get --watch: waited 10s for %s; it wrote:\n%s", what, out.String())
			}
			if each != nil {
				each()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("the first tree", func(s string) bool { return strings.Contains(s, "Phase:         Progressing") }, nil)
	// The fake client's watches start when the watch asks: write until one
	// sees it.
	wait("the tree redrawn after the abort", func(s string) bool { return strings.Contains(s, "Phase:         Aborted") }, func() {
		xr, err := c.Resource(gvr).Namespace("demo").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(xr.Object, "Aborted", "status", "rollout", "phase")
		if _, err := c.Resource(gvr).Namespace("demo").Update(ctx, xr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("get --watch ended with %v, want nil once its context ends", err)
	}
	if n := strings.Count(out.String(), "Name:          web\n"); n != 2 {
		t.Errorf("get --watch drew %d trees, want 2: one, and one after the change (a redraw that changes nothing is not drawn)", n)
	}
}
