package ownership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crossplane-contrib/function-canary-route/internal/names"
)

const (
	xrUID    = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	otherUID = "11111111-2222-4333-8444-555555555555"
)

// podinfo is the XR that composes in these tests.
var podinfo = Composite{Name: "podinfo", UID: xrUID}

// obj is an object as Crossplane fetched it: kind namespace/name, with
// labels and owner references.
func obj(kind, namespace, name string, labels map[string]string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetOwnerReferences(owners)
	return u
}

// controller is an owner reference that makes an XR of that UID the
// object's controller.
func controller(uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "platform.example.org/v1alpha1", Kind: "XCanaryRoute", Name: "podinfo", UID: types.UID(uid), Controller: ptr.To(true)}
}

func ours() map[string]string   { return map[string]string{LabelComposite: "podinfo"} }
func theirs() map[string]string { return map[string]string{LabelComposite: "checkout"} }

func TestCheck(t *testing.T) {
	routeTarget := names.Target{Key: "route-httproute", APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Namespace: "test", Name: "podinfo"}
	serviceTarget := names.Target{Key: names.KeyServicePrimary, APIVersion: "v1", Kind: "Service", Namespace: "test", Name: "podinfo-primary"}
	targets := []names.Target{routeTarget, serviceTarget}
	const (
		notOurRoute   = "HTTPRoute test/podinfo exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"
		notOurService = "Service test/podinfo-primary exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object crossplane.io/composite=podinfo to hand it over)"
		takeover      = "cannot compose over objects that other owners manage: "
	)
	type args struct {
		xr       Composite
		existing map[names.Key][]*unstructured.Unstructured
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"NothingFetched": {
			reason: "Before Crossplane has fetched anything (the first call of a reconcile) every target passes: that response is never applied.",
			args:   args{xr: podinfo},
		},
		"OwnObjects": {
			reason: "Objects labelled with this XR's name and controlled by it are its own.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute":       {obj("HTTPRoute", "test", "podinfo", ours(), controller(xrUID))},
				names.KeyServicePrimary: {obj("Service", "test", "podinfo-primary", ours(), controller(xrUID))},
			}},
		},
		"Unlabelled": {
			reason: "An object without the composite label was created by someone else: refused, naming Kind namespace/name and how to hand it over.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute": {obj("HTTPRoute", "test", "podinfo", nil)},
			}},
			want: takeover + notOurRoute,
		},
		"AnotherXRsLabel": {
			reason: "An object that another XR composed is refused.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				names.KeyServicePrimary: {obj("Service", "test", "podinfo-primary", theirs())},
			}},
			want: takeover + notOurService,
		},
		"AnotherControllersUID": {
			reason: "Two XRs of one name (a namespaced and a cluster-scoped one) label alike: the controller's UID settles it.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute": {obj("HTTPRoute", "test", "podinfo", ours(), controller(otherUID))},
			}},
			want: takeover + notOurRoute,
		},
		"EveryProblemListed": {
			reason: "Every object that is not ours is listed, in the order of the targets.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				names.KeyServicePrimary: {obj("Service", "test", "podinfo-primary", nil)},
				"route-httproute":       {obj("HTTPRoute", "test", "podinfo", theirs())},
			}},
			want: takeover + notOurRoute + "; " + notOurService,
		},
		"OtherNameIgnored": {
			reason: "An object of another name than the target's (a requirement resolved to another object) says nothing about the target.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute": {obj("HTTPRoute", "test", "checkout", nil)},
			}},
		},
		"OtherNamespaceIgnored": {
			reason: "Nor does an object of the target's name in another namespace.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				names.KeyServicePrimary: {obj("Service", "other", "podinfo-primary", theirs())},
			}},
		},
		"ClusterScoped": {
			reason: "An object of the target's name without a namespace is the target, of a kind that is cluster-scoped: Crossplane fetches such a kind by name whatever namespace it was asked for, and composing it would take it over.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute": {obj("HTTPRoute", "", "podinfo", nil)},
			}},
			want: takeover + notOurRoute,
		},
		"KeyOfNoTarget": {
			reason: "Objects fetched under a key that is no target are not looked at.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				names.KeyServiceCanary: {obj("Service", "test", "podinfo-canary", nil)},
			}},
		},
		"IgnoredBesideTheTarget": {
			reason: "Among several fetched objects, the target's own is judged and the others ignored.",
			args: args{xr: podinfo, existing: map[names.Key][]*unstructured.Unstructured{
				"route-httproute": {obj("HTTPRoute", "other", "podinfo", nil), obj("HTTPRoute", "test", "podinfo", nil)},
			}},
			want: takeover + notOurRoute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			existing := func(k names.Key) []metav1.Object {
				var out []metav1.Object
				for _, u := range tc.args.existing[k] {
					out = append(out, u)
				}
				return out
			}
			got := ""
			if err := Check(tc.args.xr, targets, existing); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOwnedBy(t *testing.T) {
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		xr     Composite
		want   bool
	}{
		"NoLabel": {
			reason: "An object without the composite label is nobody's XR's.",
			obj:    obj("Service", "test", "podinfo-primary", nil),
			xr:     podinfo,
			want:   false,
		},
		"OtherLabels": {
			reason: "Other labels say nothing.",
			obj:    obj("Service", "test", "podinfo-primary", map[string]string{"app": "podinfo"}),
			xr:     podinfo,
			want:   false,
		},
		"AnotherXR": {
			reason: "The label of another XR is not ours.",
			obj:    obj("Service", "test", "podinfo-primary", theirs(), controller(xrUID)),
			xr:     podinfo,
			want:   false,
		},
		"OurLabelAndController": {
			reason: "Our label and our UID as controller: ours.",
			obj:    obj("Service", "test", "podinfo-primary", ours(), controller(xrUID)),
			xr:     podinfo,
			want:   true,
		},
		"OurLabelNoOwners": {
			reason: "Our label without owner references: ours, as Crossplane hands over an object by label.",
			obj:    obj("Service", "test", "podinfo-primary", ours()),
			xr:     podinfo,
			want:   true,
		},
		"AnotherController": {
			reason: "Our label but another XR's UID as controller: the other XR of the same name composed it.",
			obj:    obj("Service", "test", "podinfo-primary", ours(), controller(otherUID)),
			xr:     podinfo,
			want:   false,
		},
		"AnotherOwnerNotController": {
			reason: "An owner that is not the controller (controller unset or false) does not decide.",
			obj: obj("Service", "test", "podinfo-primary", ours(),
				metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: otherUID},
				metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: otherUID, Controller: ptr.To(false)},
				controller(xrUID)),
			xr:   podinfo,
			want: true,
		},
		"UIDUnknown": {
			reason: "When the XR's UID is unknown, the label decides alone.",
			obj:    obj("Service", "test", "podinfo-primary", ours(), controller(otherUID)),
			xr:     Composite{Name: "podinfo"},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, OwnedBy(tc.obj, tc.xr)); diff != "" {
				t.Errorf("%s\nOwnedBy(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
