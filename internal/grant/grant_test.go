package grant

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/backend"
	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/policy"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// be is a resolved backend. An empty group and kind is a core Service; a
// backendRef side sets fromRef.
func be(role xr.Role, group, kind, name, namespace string, fromRef bool) backend.Backend {
	ref := gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To[gwv1.PortNumber](80)}
	if kind != "" {
		ref.Group, ref.Kind = ptr.To(gwv1.Group(group)), ptr.To(gwv1.Kind(kind))
	}
	if fromRef {
		ref.Namespace = ptr.To(gwv1.Namespace(namespace))
	}
	return backend.Backend{Role: role, Ref: ref, Namespace: namespace, FromBackendRef: fromRef}
}

// proxy is a side's proxy Service in the route namespace test.
func proxy(role xr.Role) backend.Backend {
	b := be(role, "", "Service", "podinfo-"+string(role), "test", false)
	return b
}

// to is a ReferenceGrantTo.
func to(group, kind, name string) gwv1.ReferenceGrantTo {
	return gwv1.ReferenceGrantTo{Group: gwv1.Group(group), Kind: gwv1.Kind(kind), Name: ptr.To(gwv1.ObjectName(name))}
}

// grantIn is the grant of the route podinfo (in namespace test) in the
// target namespace ns.
func grantIn(ns string, version v1beta1.ReferenceGrantVersion, kind xr.RouteKind, tos ...gwv1.ReferenceGrantTo) *gwv1.ReferenceGrant {
	return &gwv1.ReferenceGrant{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/" + string(version), Kind: "ReferenceGrant"},
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(string(kind)) + ".podinfo.test", Namespace: ns},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: "gateway.networking.k8s.io", Kind: gwv1.Kind(kind), Namespace: "test"}},
			To:   tos,
		},
	}
}

func mustPolicy(t testing.TB, in *v1beta1.Input) *policy.Policy {
	t.Helper()
	p, err := policy.New(in)
	if err != nil {
		t.Fatalf("policy.New: %v", err)
	}
	return p
}

// validateGrants checks grants against the Gateway API CRDs of both
// channels, as v1 and as v1beta1: the spec is the same in both versions, so
// each grant must pass in either.
func validateGrants(t *testing.T, grants ...*gwv1.ReferenceGrant) {
	t.Helper()
	for _, ch := range crdschema.Channels {
		set := crdschema.GatewayAPI(t, ch)
		for _, g := range grants {
			for _, v := range []v1beta1.ReferenceGrantVersion{v1beta1.ReferenceGrantV1, v1beta1.ReferenceGrantV1Beta1} {
				c := g.DeepCopy()
				c.APIVersion = "gateway.networking.k8s.io/" + string(v)
				if errs := set.Validate(c); len(errs) > 0 {
					t.Errorf("%s channel rejects %s as %s: %v", ch, Describe(g), v, errs)
				}
			}
		}
	}
}

func TestPlan(t *testing.T) {
	const (
		v1b1 = v1beta1.ReferenceGrantV1Beta1
		v1   = v1beta1.ReferenceGrantV1
	)
	primary, canary := xr.RolePrimary, xr.RoleCanary
	allow := func(ns ...string) *v1beta1.Input { return &v1beta1.Input{AllowedBackendNamespaces: ns} }
	request := func(scope xr.Scope, mode xr.GrantMode, bs ...backend.Backend) Request {
		return Request{
			RouteKind: xr.KindHTTPRoute, RouteNamespace: "test", RouteName: "podinfo",
			Scope: scope, Mode: mode, Backends: bs,
		}
	}
	cluster := func(bs ...backend.Backend) Request { return request(xr.ScopeCluster, xr.GrantsCompose, bs...) }
	canaryProxy := be(canary, "", "", "canary-proxy", "monitoring", true)
	nsRefusal := func(role xr.Role, b backend.Backend) Refusal {
		return Refusal{Role: role, Ref: b.Ref, Reason: fmt.Sprintf("namespace %q is not in the Input's allowedBackendNamespaces", b.Namespace)}
	}

	type args struct {
		req Request
		in  *v1beta1.Input
		// version of the grants; default v1beta1.
		version v1beta1.ReferenceGrantVersion
	}
	cases := map[string]struct {
		reason string
		args   args
		want   Result
	}{
		"SameNamespace": {
			reason: "Backends in the route's namespace need no grant, whatever the policy.",
			args:   args{req: cluster(proxy(primary), be(canary, "", "", "podinfo-v2", "test", true)), in: allow()},
			want:   Result{},
		},
		"CrossNamespaceAllowed": {
			reason: "A backend in an allowed namespace gets one grant there: from the route kind in the route namespace, to exactly the Service by name.",
			args:   args{req: cluster(proxy(primary), canaryProxy), in: allow("monitoring")},
			want:   Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"AnyNamespace": {
			reason: `"*" allows every namespace.`,
			args:   args{req: cluster(proxy(primary), canaryProxy), in: allow("*")},
			want:   Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"VersionV1": {
			reason: "The Input's grant version is the grant's apiVersion.",
			args:   args{req: cluster(proxy(primary), canaryProxy), in: allow("monitoring"), version: v1},
			want:   Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"RouteKindGRPC": {
			reason: "from names the route's kind: a GRPCRoute.",
			args: args{req: func() Request {
				r := cluster(proxy(primary), canaryProxy)
				r.RouteKind = xr.KindGRPCRoute
				return r
			}(), in: allow("monitoring")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindGRPCRoute, to("", "Service", "canary-proxy"))}},
		},
		"RouteKindTLS": {
			reason: "from names the route's kind: a TLSRoute.",
			args: args{req: func() Request {
				r := cluster(proxy(primary), canaryProxy)
				r.RouteKind = xr.KindTLSRoute
				return r
			}(), in: allow("monitoring")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindTLSRoute, to("", "Service", "canary-proxy"))}},
		},
		"RouteKindTCP": {
			reason: "from names the route's kind: a TCPRoute.",
			args: args{req: func() Request {
				r := cluster(proxy(primary), canaryProxy)
				r.RouteKind = xr.KindTCPRoute
				return r
			}(), in: allow("monitoring")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindTCPRoute, to("", "Service", "canary-proxy"))}},
		},
		"TwoNamespaces": {
			reason: "One grant per target namespace, sorted by namespace.",
			args: args{req: cluster(
				be(primary, "", "", "podinfo", "zeta", true),
				be(canary, "", "", "podinfo", "alpha", true),
			), in: allow("zeta", "alpha")},
			want: Result{Grants: []*gwv1.ReferenceGrant{
				grantIn("alpha", v1b1, xr.KindHTTPRoute, to("", "Service", "podinfo")),
				grantIn("zeta", v1b1, xr.KindHTTPRoute, to("", "Service", "podinfo")),
			}},
		},
		"OneNamespaceTwoObjects": {
			reason: "Two objects in one namespace share its grant, whose to lists both, sorted by group, kind and name.",
			args: args{req: cluster(
				be(primary, "multicluster.x-k8s.io", "ServiceImport", "podinfo", "shared", true),
				be(canary, "", "", "podinfo-canary", "shared", true),
				be(canary, "", "", "podinfo-beta", "shared", true),
			), in: allow("shared")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("shared", v1b1, xr.KindHTTPRoute,
				to("", "Service", "podinfo-beta"),
				to("", "Service", "podinfo-canary"),
				to("multicluster.x-k8s.io", "ServiceImport", "podinfo"),
			)}},
		},
		"Deduplicated": {
			reason: "An object referenced twice (primary and canary, or as a mirror target) is named once.",
			args: args{req: cluster(
				be(primary, "", "", "podinfo", "shared", true),
				be(canary, "", "", "podinfo", "shared", true),
				be(canary, "", "", "podinfo", "shared", true),
			), in: allow("shared")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("shared", v1b1, xr.KindHTTPRoute, to("", "Service", "podinfo"))}},
		},
		"SameNameOtherKind": {
			reason: "A Service and an InferencePool of one name are two objects, both named.",
			args: args{req: cluster(
				be(primary, "inference.networking.k8s.io", "InferencePool", "llama", "models", true),
				be(canary, "", "", "llama", "models", true),
			), in: allow("models")},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("models", v1b1, xr.KindHTTPRoute,
				to("", "Service", "llama"),
				to("inference.networking.k8s.io", "InferencePool", "llama"),
			)}},
		},
		"NamespaceRefused": {
			reason: "A namespace outside allowedBackendNamespaces gets no grant, and a refusal names the role and the reference.",
			args:   args{req: cluster(proxy(primary), canaryProxy), in: allow("keda")},
			want:   Result{Refused: []Refusal{nsRefusal(canary, canaryProxy)}},
		},
		"DefaultPolicyRefuses": {
			reason: "The default policy allows no other namespace.",
			args:   args{req: cluster(proxy(primary), canaryProxy), in: &v1beta1.Input{}},
			want:   Result{Refused: []Refusal{nsRefusal(canary, canaryProxy)}},
		},
		"PrimaryRefusedCanaryGranted": {
			reason: "Each reference is judged on its own: a refused primary does not cost the canary its grant.",
			args: args{req: cluster(
				be(primary, "", "", "podinfo", "legacy", true),
				canaryProxy,
			), in: allow("monitoring")},
			want: Result{
				Grants:  []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))},
				Refused: []Refusal{nsRefusal(primary, be(primary, "", "", "podinfo", "legacy", true))},
			},
		},
		"RefusedOncePerRole": {
			reason: "A role is refused once, even when its backend is listed again as a mirror target.",
			args:   args{req: cluster(proxy(primary), canaryProxy, canaryProxy), in: allow()},
			want:   Result{Refused: []Refusal{nsRefusal(canary, canaryProxy)}},
		},
		"KindRefused": {
			reason: "A backendRef kind outside allowedBackendKinds is refused, even in the route's own namespace.",
			args: args{
				req: cluster(proxy(primary), be(canary, "inference.networking.k8s.io", "InferencePool", "llama", "test", true)),
				in:  &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "Service"}}},
			},
			want: Result{Refused: []Refusal{{
				Role:   canary,
				Ref:    be(canary, "inference.networking.k8s.io", "InferencePool", "llama", "test", true).Ref,
				Reason: "backend kind InferencePool.inference.networking.k8s.io is not in the Input's allowedBackendKinds",
			}}},
		},
		"KindRefusedNoGrant": {
			reason: "A refused kind in an allowed namespace gets no grant.",
			args: args{
				req: cluster(proxy(primary), be(canary, "gateway.envoyproxy.io", "Backend", "edge", "monitoring", true)),
				in:  &v1beta1.Input{AllowedBackendNamespaces: []string{"monitoring"}, AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "Service"}}},
			},
			want: Result{Refused: []Refusal{{
				Role:   canary,
				Ref:    be(canary, "gateway.envoyproxy.io", "Backend", "edge", "monitoring", true).Ref,
				Reason: "backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds",
			}}},
		},
		"KindAllowed": {
			reason: "An allowed kind in an allowed namespace gets its grant.",
			args: args{
				req: cluster(proxy(primary), be(canary, "gateway.envoyproxy.io", "Backend", "edge", "monitoring", true)),
				in: &v1beta1.Input{AllowedBackendNamespaces: []string{"monitoring"}, AllowedBackendKinds: []v1beta1.BackendKind{
					{Kind: "Service"}, {Group: "gateway.envoyproxy.io", Kind: "Backend"},
				}},
			},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("gateway.envoyproxy.io", "Backend", "edge"))}},
		},
		"KindPolicySparesProxies": {
			reason: "allowedBackendKinds applies to backendRef sides only: the proxy Services the function composes are never refused.",
			args: args{
				req: cluster(proxy(primary), proxy(canary)),
				in:  &v1beta1.Input{AllowedBackendKinds: []v1beta1.BackendKind{{Group: "inference.networking.k8s.io", Kind: "InferencePool"}}},
			},
			want: Result{},
		},
		"KindPolicyCoreServiceRef": {
			reason: "A backendRef Service written without group and kind matches an allowed core Service.",
			args: args{
				req: cluster(proxy(primary), canaryProxy),
				in:  &v1beta1.Input{AllowedBackendNamespaces: []string{"monitoring"}, AllowedBackendKinds: []v1beta1.BackendKind{{Kind: "Service"}}},
			},
			want: Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"Namespaced": {
			reason: "A namespaced XR cannot compose a grant in another namespace: the grant it needs is reported NotComposable instead.",
			args:   args{req: request(xr.ScopeNamespaced, xr.GrantsCompose, proxy(primary), canaryProxy), in: allow("monitoring")},
			want:   Result{NotComposable: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"NamespacedRefused": {
			reason: "A namespaced XR's refused reference is refused, never reported as a grant to create.",
			args:   args{req: request(xr.ScopeNamespaced, xr.GrantsCompose, proxy(primary), canaryProxy), in: allow()},
			want:   Result{Refused: []Refusal{nsRefusal(canary, canaryProxy)}},
		},
		"ClaimComposes": {
			reason: "A claim-bound cluster XR composes its grants.",
			args:   args{req: request(xr.ScopeClaim, xr.GrantsCompose, proxy(primary), canaryProxy), in: allow("monitoring")},
			want:   Result{Grants: []*gwv1.ReferenceGrant{grantIn("monitoring", v1b1, xr.KindHTTPRoute, to("", "Service", "canary-proxy"))}},
		},
		"Skip": {
			reason: "referenceGrants Skip composes no grant.",
			args:   args{req: request(xr.ScopeCluster, xr.GrantsSkip, proxy(primary), canaryProxy), in: allow("monitoring")},
			want:   Result{},
		},
		"SkipNamespaced": {
			reason: "Skip on a namespaced XR reports no NotComposable grant.",
			args:   args{req: request(xr.ScopeNamespaced, xr.GrantsSkip, proxy(primary), canaryProxy), in: allow("monitoring")},
			want:   Result{},
		},
		"SkipStillRefuses": {
			reason: "Skip never widens the policy: a refused reference is still refused.",
			args:   args{req: request(xr.ScopeCluster, xr.GrantsSkip, proxy(primary), canaryProxy), in: allow()},
			want:   Result{Refused: []Refusal{nsRefusal(canary, canaryProxy)}},
		},
		"NamelessNoGrant": {
			reason: "A grant never opens every object of a kind: a reference without a name gets none.",
			args:   args{req: cluster(proxy(primary), be(canary, "", "", "", "monitoring", true)), in: allow("monitoring")},
			want:   Result{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Plan(tc.args.req, mustPolicy(t, tc.args.in))
			if tc.args.version != "" {
				got = got.AtVersion(tc.args.version)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPlan(...): -want, +got:\n%s", tc.reason, diff)
			}
			validateGrants(t, append(slices.Clone(got.Grants), got.NotComposable...)...)
			for _, g := range append(slices.Clone(got.Grants), got.NotComposable...) {
				for _, to := range g.Spec.To {
					if to.Name == nil || *to.Name == "" {
						t.Errorf("%s\nPlan(...): %s has a to without a name", tc.reason, Describe(g))
					}
				}
			}
		})
	}
}

// TestPlanDeterministic pins that the output does not depend on the order of
// the backends: an unchanged input gives byte-identical desired state.
func TestPlanDeterministic(t *testing.T) {
	bs := []backend.Backend{
		be(xr.RolePrimary, "", "", "b", "ns2", true),
		be(xr.RoleCanary, "", "", "a", "ns2", true),
		be(xr.RoleCanary, "multicluster.x-k8s.io", "ServiceImport", "a", "ns1", true),
		be(xr.RolePrimary, "", "", "a", "ns1", true),
		be(xr.RoleCanary, "", "", "a", "ns2", true),
	}
	p := mustPolicy(t, &v1beta1.Input{AllowedBackendNamespaces: []string{"*"}})
	req := Request{RouteKind: xr.KindHTTPRoute, RouteNamespace: "test", RouteName: "podinfo", Scope: xr.ScopeCluster, Mode: xr.GrantsCompose}
	req.Backends = slices.Clone(bs)
	want := Plan(req, p)
	if len(want.Grants) != 2 {
		t.Fatalf("Plan(...): want 2 grants, got %d", len(want.Grants))
	}
	for i := range 10 {
		// Every rotation and its reverse.
		req.Backends = append(slices.Clone(bs[i%len(bs):]), bs[:i%len(bs)]...)
		if i >= len(bs) {
			slices.Reverse(req.Backends)
		}
		if diff := cmp.Diff(want, Plan(req, p)); diff != "" {
			t.Errorf("Plan(...) with backends in another order: -first, +got:\n%s", diff)
		}
	}
}

func TestCanaryRefused(t *testing.T) {
	cases := map[string]struct {
		reason string
		res    Result
		want   bool
	}{
		"None":    {reason: "Nothing refused.", res: Result{}, want: false},
		"Primary": {reason: "A refused primary does not hold the canary.", res: Result{Refused: []Refusal{{Role: xr.RolePrimary}}}, want: false},
		"Canary":  {reason: "A refused canary is reported.", res: Result{Refused: []Refusal{{Role: xr.RolePrimary}, {Role: xr.RoleCanary}}}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.res.CanaryRefused()); diff != "" {
				t.Errorf("%s\nCanaryRefused(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestName(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	type args struct{ namespace, name string }
	type want struct {
		name   string
		length int
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Readable": {
			reason: "The grant is named <kind>.<route>.<route namespace>: a reader sees whose grant it is.",
			args:   args{"test", "podinfo"},
			want:   want{name: "httproute.podinfo.test", length: 22},
		},
		"DottedRouteName": {
			reason: "A dotted route name stays readable; the kind and the namespace (labels without dots) frame it, so names never collide.",
			args:   args{"test", "pod.info"},
			want:   want{name: "httproute.pod.info.test", length: 23},
		},
		"Limit": {
			reason: "A name of exactly 253 characters is kept.",
			args:   args{"test", long(238)},
			want:   want{name: "httproute." + long(238) + ".test", length: 253},
		},
		"TooLong": {
			reason: "One character more gets a readable prefix and a hash suffix, 253 characters in all.",
			args:   args{"test", long(239)},
			want:   want{length: 253},
		},
		"Longest": {
			reason: "The longest route name in the longest namespace fits in 253 characters.",
			args:   args{long(63), long(253)},
			want:   want{length: 253},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Name(xr.KindHTTPRoute, tc.args.namespace, tc.args.name)
			if tc.want.name != "" {
				if diff := cmp.Diff(tc.want.name, got); diff != "" {
					t.Errorf("%s\nName(...): -want, +got:\n%s", tc.reason, diff)
				}
			} else if !strings.HasPrefix(got, "httproute."+tc.args.name[:200]) {
				t.Errorf("%s\nName(...) = %q: want a readable prefix of the route name", tc.reason, got)
			}
			if diff := cmp.Diff(tc.want.length, len(got)); diff != "" {
				t.Errorf("%s\nlen(Name(...)): -want, +got:\n%s", tc.reason, diff)
			}
			if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
				t.Errorf("%s\nName(...) = %q is not a DNS-1123 subdomain: %v", tc.reason, got, msgs)
			}
		})
	}
}

// TestNameValidAndUnique checks, over route names of every length up to the
// limit and cut points that fall on '.' and '-', that every grant name is a
// valid object name and that distinct routes get distinct names.
func TestNameValidAndUnique(t *testing.T) {
	seen := map[string]string{}
	for _, ns := range []string{"t", "test", strings.Repeat("n", 63)} {
		for n := 1; n <= 253; n++ {
			for _, pattern := range []string{"a", "a.", "a-", "ab.c-"} {
				name := strings.Repeat(pattern, n/len(pattern)+1)[:n]
				name = strings.TrimRight(name, ".-")
				if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
					continue
				}
				got := Name(xr.KindHTTPRoute, ns, name)
				if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
					t.Fatalf("Name(%q, %q) = %q is not a DNS-1123 subdomain: %v", ns, name, got, msgs)
				}
				if got != Name(xr.KindHTTPRoute, ns, name) {
					t.Fatalf("Name(%q, %q) is not stable", ns, name)
				}
				route := ns + "/" + name
				if other, ok := seen[got]; ok && other != route {
					t.Fatalf("Name(...) = %q for both %s and %s", got, other, route)
				}
				seen[got] = route
			}
		}
	}
}

// TestLongNameGrantValid checks a grant of a route with a very long name
// against the CRDs.
func TestLongNameGrantValid(t *testing.T) {
	p := mustPolicy(t, &v1beta1.Input{AllowedBackendNamespaces: []string{"monitoring"}})
	res := Plan(Request{
		RouteKind: xr.KindHTTPRoute, RouteNamespace: strings.Repeat("n", 63), RouteName: strings.Repeat("r", 120) + "." + strings.Repeat("s", 132),
		Scope: xr.ScopeCluster, Mode: xr.GrantsCompose,
		Backends: []backend.Backend{be(xr.RoleCanary, "", "", "canary-proxy", "monitoring", true)},
	}, p).AtVersion(v1beta1.ReferenceGrantV1)
	if len(res.Grants) != 1 {
		t.Fatalf("Plan(...): want one grant, got %+v", res)
	}
	validateGrants(t, res.Grants...)
}

func TestDescribe(t *testing.T) {
	g := grantIn("monitoring", v1beta1.ReferenceGrantV1Beta1, xr.KindHTTPRoute,
		to("", "Service", "canary-proxy"), to("multicluster.x-k8s.io", "ServiceImport", "podinfo"))
	want := "ReferenceGrant httproute.podinfo.test in namespace monitoring from HTTPRoute in namespace test to Service canary-proxy, ServiceImport.multicluster.x-k8s.io podinfo"
	if diff := cmp.Diff(want, Describe(g)); diff != "" {
		t.Errorf("Describe names the grant, its namespace, from and every to: -want, +got:\n%s", diff)
	}
}
