package compose

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

func TestNew(t *testing.T) {
	type args struct {
		input   string
		patches []patch
		// served, when set, are the kinds/versions the cluster's schemas
		// say it serves.
		served []string
	}
	// want is what a test observes of New: the context of the error (which
	// says whether the spec or the Input refuses it), the fields it names,
	// and, when it plans, which roles the policy refused and why the canary.
	type want struct {
		context string
		errs    []xrtest.FieldErr
		refused []xr.Role
		refusal string
	}
	const notAllowed = "CanaryRoute not allowed by the function's Input"
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Allowed": {
			reason: "The Flagger scenario under a policy that allows its route and backend namespaces plans without refusals.",
			args:   args{input: allowMonitoring},
			want:   want{},
		},
		"StepMirrorCompanionsBreakTheLimit": {
			reason: "A step's mirror limited to GETs beside A/B matches and both sides' cookies gives each of three rules five companions (the primary's session companion that mirrors among them): 18 rules, a Fatal naming the step.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{name: a}, {name: b}, {name: c}]`),
				set("spec.canary.revision", "v2"),
				set("spec.traffic", `{steps: [{weight: 0}, {weight: 20, mirror: {matches: [{method: GET}]}}, {weight: 100}], matches: [{queryParams: [{name: canary, value: "1"}]}], sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}}`),
			}},
			want: want{context: "the composed route would be rejected by the Gateway API", errs: []xrtest.FieldErr{
				xrtest.Invalid("spec.rules", "in step 1: the composed route would have 18 rules, 2 more than the Gateway API allows (16)"),
				xrtest.TooMany("spec.rules", 16),
			}},
		},
		"TrafficShapeBreaksTheLimit": {
			reason: "Step 0 has matches and a mirror of its own; the steps after it take traffic.matches and traffic.mirror limited to GETs, with both cookies: 18 rules. Refused before the rollout starts, naming the steps that take spec.traffic's shape, not when step 0 is left.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{name: a}, {name: b}, {name: c}]`),
				set("spec.canary.revision", "v2"),
				set("spec.traffic", `{steps: [{weight: 5, matches: [{headers: [{name: x-tester, value: "1"}]}], mirror: {percent: 100}}, {weight: 10}, {weight: 100}], matches: [{queryParams: [{name: canary, value: "1"}]}], mirror: {percent: 10, matches: [{method: GET}]}, sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h}}`),
			}},
			want: want{context: "the composed route would be rejected by the Gateway API", errs: []xrtest.FieldErr{
				xrtest.Invalid("spec.rules", "in the steps that take spec.traffic's matches and mirror (step 1 is the first): the composed route would have 18 rules, 2 more than the Gateway API allows (16)"),
				xrtest.TooMany("spec.rules", 16),
			}},
		},
		"RouteNamespaceNotAllowed": {
			reason: "A cluster-scoped CanaryRoute may only route in the Input's allowedRouteNamespaces: anyone who may create one could otherwise put a route in any namespace.",
			args:   args{input: `allowedBackendNamespaces: [monitoring]`},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.namespace", `namespace "test" is not in the function Input's allowedRouteNamespaces`),
			}},
		},
		"NamespacedXRNeedsNoRouteNamespace": {
			reason: "A namespaced CanaryRoute routes in its own namespace, which Crossplane enforces: allowedRouteNamespaces does not apply to it.",
			args:   args{input: `allowedBackendNamespaces: [monitoring]`, patches: namespaced},
			want:   want{},
		},
		"ExternalNameNotAllowed": {
			reason: "An externalName side without allowExternalNames is refused (CVE-2021-25740), and the error names the side's field.",
			args:   args{input: allowMonitoring, patches: []patch{set("spec.canary", `{externalName: canary.example.net}`)}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.canary.externalName", "does not set allowExternalNames"),
			}},
		},
		"ExternalNamesAllowed": {
			reason: "With allowExternalNames, externalName sides plan.",
			args: args{input: allowMonitoring + "allowExternalNames: true\n", patches: []patch{
				set("spec.primary", `{externalName: primary.example.net}`), set("spec.canary", `{externalName: canary.example.net}`),
			}},
			want: want{},
		},
		"EveryRefusalAtOnce": {
			reason: "Every policy refusal is listed at once, each naming its field, so the user fixes them in one go.",
			args: args{input: `allowedBackendNamespaces: [monitoring]`, patches: []patch{
				set("spec.primary", `{externalName: primary.example.net}`), set("spec.canary", `{externalName: canary.example.net}`),
				set("spec.traffic.gates", `[{apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: podinfo, conditionType: Healthy}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.namespace", "allowedRouteNamespaces"),
				xrtest.Forbidden("spec.primary.externalName", "does not set allowExternalNames"),
				xrtest.Forbidden("spec.canary.externalName", "does not set allowExternalNames"),
				xrtest.Forbidden("spec.traffic.gates[0].kind", `gates on "Rollout" ("argoproj.io/v1alpha1") are not in the function Input's allowedGateKinds`),
			}},
		},
		"PrimaryKindNotAllowed": {
			reason: "A primary of a kind that allowedBackendKinds does not list is an error: unlike a canary it cannot be held at weight 0.",
			args: args{
				input:   allowMonitoring + "allowedBackendKinds: [{kind: Service}]\n",
				patches: []patch{set("spec.primary", `{backendRef: {group: multicluster.x-k8s.io, kind: ServiceImport, name: podinfo, port: 9898}}`)},
			},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.primary.backendRef.kind", "backend kind ServiceImport.multicluster.x-k8s.io is not in the function Input's allowedBackendKinds"),
			}},
		},
		"PrimaryKindAllowed": {
			reason: "A primary of a listed kind plans.",
			args: args{
				input:   allowMonitoring + "allowedBackendKinds: [{kind: Service}, {group: multicluster.x-k8s.io, kind: ServiceImport}]\n",
				patches: []patch{set("spec.primary", `{backendRef: {group: multicluster.x-k8s.io, kind: ServiceImport, name: podinfo, port: 9898}}`)},
			},
			want: want{},
		},
		"CanaryKindNotAllowedIsHeld": {
			reason: "A canary of a kind the Input does not list is no error: it is refused, held at weight 0, and the refusal says why.",
			args: args{
				input:   allowMonitoring + "allowedBackendKinds: [{kind: Service}]\n",
				patches: []patch{set("spec.canary", `{backendRef: {group: multicluster.x-k8s.io, kind: ServiceImport, name: podinfo-canary, port: 9898}}`)},
			},
			want: want{refused: []xr.Role{xr.RoleCanary}, refusal: "backend kind ServiceImport.multicluster.x-k8s.io is not in the Input's allowedBackendKinds"},
		},
		"CanaryNamespaceNotAllowedIsHeld": {
			reason: "A canary in a namespace the Input does not allow is no error either: the plan records the refusal, which CanaryRefusal reports.",
			args:   args{input: `allowedRouteNamespaces: [test]`},
			want:   want{refused: []xr.Role{xr.RoleCanary}, refusal: `namespace "monitoring" is not in the Input's allowedBackendNamespaces`},
		},
		"PrimaryNamespaceNotAllowedIsNoCanaryRefusal": {
			reason: "A primary refused by namespace is recorded as the primary's: CanaryRefusal stays empty, so the canary is not blamed.",
			args: args{input: `allowedRouteNamespaces: [test]`, patches: []patch{
				set("spec.primary", `{backendRef: {name: podinfo, namespace: apps, port: 9898}}`),
				set("spec.canary", `{service: {selector: {app: podinfo-canary}}}`),
			}},
			want: want{refused: []xr.Role{xr.RolePrimary}},
		},
		"GateKindNotAllowed": {
			reason: "A gate on a kind that allowedGateKinds does not list is refused, naming the gate's kind; the default allows apps/v1 Deployment only.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.traffic.gates", `[{apiVersion: apps/v1, kind: Deployment, name: podinfo, conditionType: Available}, {apiVersion: apps/v1, kind: StatefulSet, name: podinfo, conditionType: Ready}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.traffic.gates[1].kind", `gates on "StatefulSet" ("apps/v1")`),
			}},
		},
		"GateKindAllowed": {
			reason: "A gate kind listed in allowedGateKinds plans.",
			args: args{input: allowMonitoring + "allowedGateKinds: [{apiVersion: argoproj.io/v1alpha1, kind: Rollout}]\n", patches: []patch{
				set("spec.traffic.gates", `[{apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: podinfo, conditionType: Healthy}]`),
			}},
			want: want{},
		},
		"MirrorNotAllowed": {
			reason: "A RequestMirror filter to a backend the policy refuses is an error naming the filter: a mirror copies every request it sees, and cannot be held at 0 like a canary.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{filters: [{type: RequestMirror, requestMirror: {backendRef: {name: shadow, namespace: other, port: 80}}}]}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.rules[0].filters[0].requestMirror.backendRef", `the mirror's backend Service other/shadow:80 is refused: namespace "other" is not in the Input's allowedBackendNamespaces`),
			}},
		},
		"MirrorOnSideNotAllowed": {
			reason: "A mirror written in a side's filters passes the same policy, and the error names that side's filter.",
			args: args{input: allowMonitoring + "allowedBackendKinds: [{kind: Service}]\n", patches: []patch{
				set("spec.canary.filters", `[{type: RequestMirror, requestMirror: {backendRef: {group: example.com, kind: Proxy, name: shadow, namespace: monitoring}}}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.canary.filters[0].requestMirror.backendRef", "the mirror's backend Proxy.example.com monitoring/shadow is refused: backend kind Proxy.example.com"),
			}},
		},
		"MirrorAllowed": {
			reason: "A mirror to an allowed namespace plans.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{filters: [{type: RequestMirror, requestMirror: {backendRef: {name: shadow, namespace: monitoring, port: 80}}}]}]`),
			}},
			want: want{},
		},
		"RuleBackendNotAllowed": {
			reason: "A backend of a rule of its own passes the same policy as the sides: one the policy refuses is an error naming the rule's backendRef (no weight can fall back to it).",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{backendRefs: [{name: cdn-cache, namespace: cdn, port: 80}]}, {}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.rules[0].backendRefs[0]", `the rule's backend Service cdn/cdn-cache:80 is refused: namespace "cdn" is not in the Input's allowedBackendNamespaces`),
			}},
		},
		"RuleBackendKindNotAllowed": {
			reason: "A rule's backend of a kind the Input does not allow is refused the same way.",
			args: args{input: allowMonitoring + "allowedBackendKinds: [{kind: Service}]\n", patches: []patch{
				set("spec.rules", `[{backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: cdn}]}, {}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.rules[0].backendRefs[0]", "backend kind Backend.gateway.envoyproxy.io is not in the Input's allowedBackendKinds"),
			}},
		},
		"RuleBackendHostname": {
			reason: "An Istio Hostname of a rule of its own is checked like a Hostname side: never a cluster-local host.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{backendRefs: [{group: networking.istio.io, kind: Hostname, name: api.internal.svc.cluster.local, port: 80}]}, {}]`),
			}},
			want: want{context: "invalid CanaryRoute", errs: []xrtest.FieldErr{
				xrtest.Invalid("spec.rules[0].backendRefs[0].name", "cluster-local"),
			}},
		},
		"RuleMirrorNotAllowed": {
			reason: "A mirror in a rule of its own's backendRef filters passes the policy too.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.rules", `[{backendRefs: [{name: cdn-cache, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: shadow, namespace: other, port: 80}}}]}]}, {}]`),
			}},
			want: want{context: notAllowed, errs: []xrtest.FieldErr{
				xrtest.Forbidden("spec.rules[0].backendRefs[0].filters[0].requestMirror.backendRef", `namespace "other" is not in the Input's allowedBackendNamespaces`),
			}},
		},
		"VersionNotServed": {
			reason: "A version the Input asks for that the cluster does not serve is an error naming the Input's field.",
			args: args{
				input: allowMonitoring + "tcpRouteVersion: v1\n", patches: []patch{set("spec.kind", "TCPRoute"), del("spec.hostnames")},
				served: []string{"TCPRoute/v1alpha2", "ReferenceGrant/v1beta1"},
			},
			want: want{context: "the cluster cannot hold what the CanaryRoute composes", errs: []xrtest.FieldErr{
				xrtest.Invalid("tcpRouteVersion", "does not serve TCPRoute"),
			}},
		},
		"BackendPortMissing": {
			reason: "A Service backendRef without a port when spec.port is unset is a mistake in the spec, not the policy: the error says the CanaryRoute is invalid.",
			args: args{input: allowMonitoring, patches: []patch{
				del("spec.port"), set("spec.primary", `{backendRef: {name: podinfo}}`),
			}},
			want: want{context: "invalid CanaryRoute", errs: []xrtest.FieldErr{
				xrtest.Required("spec.primary.backendRef.port", "needs a port"),
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pol := inputPolicy(t, tc.args.input)
			p, err := newPlan(canaryRoute(t, pol, tc.args.patches...), pol, testCompiler(t), servedOnly(tc.args.served...))
			var got want
			if err != nil {
				got.context, _, _ = strings.Cut(err.Error(), ": ")
				if diff := xrtest.Diff(tc.want.errs, xrtest.FieldErrors(t, err)); diff != "" {
					t.Errorf("%s\nNew(...): errors: -want, +got:\n%s", tc.reason, diff)
				}
				got.errs = tc.want.errs
			} else {
				for _, r := range p.Grants.Refused {
					got.refused = append(got.refused, r.Role)
				}
				got.refusal = p.CanaryRefusal()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// servedOnly chooses versions from schemas that say the cluster serves the
// kinds/versions given (Kind/version); none given: no schemas at all.
func servedOnly(kinds ...string) chooser {
	if len(kinds) == 0 {
		return nil
	}
	self := schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "XCanaryRoute"}
	return func(need served.Need, o served.Overrides) (served.Versions, field.ErrorList) {
		keys := map[string]bool{}
		for _, k := range kinds {
			kind, version, _ := strings.Cut(k, "/")
			keys[served.Key(kind, version)] = true
		}
		s := served.NewSchemas(self, need, func(name string) (map[string]any, bool) {
			if name == "schema-self" || keys[name] {
				return map[string]any{"type": "object"}, true
			}
			return nil, true
		})
		return served.Choose(need, o, s)
	}
}

func TestTargets(t *testing.T) {
	type args struct {
		input   string
		patches []patch
		served  []string
	}
	const gw = "gateway.networking.k8s.io/"
	routeTarget := func(kind, apiVersion string) names.Target {
		return names.Target{Key: names.RouteKey(kind), APIVersion: apiVersion, Kind: kind, Namespace: "test", Name: "podinfo"}
	}
	primarySvc := names.Target{Key: names.KeyServicePrimary, APIVersion: "v1", Kind: "Service", Namespace: "test", Name: "podinfo-primary"}
	canarySvc := names.Target{Key: names.KeyServiceCanary, APIVersion: "v1", Kind: "Service", Namespace: "test", Name: "podinfo-canary"}
	grantIn := func(ns, apiVersion, kind string) names.Target {
		return names.Target{Key: names.GrantKey(ns), APIVersion: apiVersion, Kind: "ReferenceGrant", Namespace: ns, Name: strings.ToLower(kind) + ".podinfo.test"}
	}
	tcp := []patch{set("spec.kind", "TCPRoute"), del("spec.hostnames")}
	cases := map[string]struct {
		reason string
		args   args
		want   []names.Target
	}{
		"Flagger": {
			reason: "The route, the primary's proxy Service (the canary is a backendRef, so it has none), and the grant in the canary's namespace, at the Input's default grant version v1beta1.",
			args:   args{input: allowMonitoring},
			want:   []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1beta1", "HTTPRoute")},
		},
		"GrantVersionV1": {
			reason: "The grant comes at the version the Input asks for.",
			args:   args{input: allowMonitoring + "referenceGrantVersion: v1\n"},
			want:   []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1", "HTTPRoute")},
		},
		"ProxyServiceForEachServiceOrExternalNameSide": {
			reason: "A service side and an externalName side both compose a proxy Service; no cross-namespace backend, no grant.",
			args: args{input: allowMonitoring + "allowExternalNames: true\n", patches: []patch{
				set("spec.canary", `{externalName: canary.example.net}`),
			}},
			want: []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc, canarySvc},
		},
		"NoServiceForBackendRefs": {
			reason: "backendRef sides compose no Service.",
			args: args{input: allowMonitoring, patches: []patch{
				set("spec.primary", `{backendRef: {name: podinfo, port: 9898}}`),
				set("spec.canary", `{backendRef: {name: podinfo-canary, port: 9898}}`),
			}},
			want: []names.Target{routeTarget("HTTPRoute", gw+"v1")},
		},
		"OneGrantPerNamespace": {
			reason: "Backends in two namespaces need two grants; a mirror in the canary's namespace shares its grant.",
			args: args{input: `{allowedRouteNamespaces: [test], allowedBackendNamespaces: [apps, monitoring]}`, patches: []patch{
				set("spec.primary", `{backendRef: {name: podinfo, namespace: apps, port: 9898}}`),
				set("spec.rules", `[{filters: [{type: RequestMirror, requestMirror: {backendRef: {name: shadow, namespace: monitoring, port: 80}}}]}]`),
			}},
			want: []names.Target{routeTarget("HTTPRoute", gw+"v1"), grantIn("apps", gw+"v1beta1", "HTTPRoute"), grantIn("monitoring", gw+"v1beta1", "HTTPRoute")},
		},
		"RefusedCanaryNoGrant": {
			reason: "A canary the policy refuses gets no grant: the route is still composed, with the canary held at 0.",
			args:   args{input: `allowedRouteNamespaces: [test]`},
			want:   []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc},
		},
		"GrantsSkipped": {
			reason: "referenceGrants: Skip composes no grant.",
			args:   args{input: allowMonitoring, patches: []patch{set("spec.referenceGrants", "Skip")}},
			want:   []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc},
		},
		"NamespacedXRComposesNoGrant": {
			reason: "A namespaced XR cannot compose into another namespace: its grants are not composable, so they are no target.",
			args:   args{input: `allowedBackendNamespaces: [monitoring]`, patches: namespaced},
			want:   []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc},
		},
		"GRPCRouteIsV1": {
			reason: "A GRPCRoute is composed as v1 whatever the Input says of TLSRoute and TCPRoute versions; its key names its kind.",
			args: args{input: allowMonitoring + "tlsRouteVersion: v1alpha2\ntcpRouteVersion: v1alpha2\n", patches: []patch{
				set("spec.kind", "GRPCRoute"),
			}},
			want: []names.Target{routeTarget("GRPCRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1beta1", "GRPCRoute")},
		},
		"TLSRouteDefaultV1": {
			reason: "A TLSRoute is v1 unless the Input says otherwise.",
			args:   args{input: allowMonitoring, patches: []patch{set("spec.kind", "TLSRoute")}},
			want:   []names.Target{routeTarget("TLSRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1beta1", "TLSRoute")},
		},
		"TLSRouteV1Alpha2": {
			reason: "A TLSRoute comes at the Input's tlsRouteVersion.",
			args:   args{input: allowMonitoring + "tlsRouteVersion: v1alpha2\n", patches: []patch{set("spec.kind", "TLSRoute")}},
			want:   []names.Target{routeTarget("TLSRoute", gw+"v1alpha2"), primarySvc, grantIn("monitoring", gw+"v1beta1", "TLSRoute")},
		},
		"TCPRouteV1Alpha2": {
			reason: "A TCPRoute comes at the Input's tcpRouteVersion, not the TLSRoute's.",
			args:   args{input: allowMonitoring + "tcpRouteVersion: v1alpha2\n", patches: tcp},
			want:   []names.Target{routeTarget("TCPRoute", gw+"v1alpha2"), primarySvc, grantIn("monitoring", gw+"v1beta1", "TCPRoute")},
		},
		"TCPRouteIgnoresTLSVersion": {
			reason: "tlsRouteVersion says nothing of TCPRoutes.",
			args:   args{input: allowMonitoring + "tlsRouteVersion: v1alpha2\n", patches: tcp},
			want:   []names.Target{routeTarget("TCPRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1beta1", "TCPRoute")},
		},
		"RuleBackendGrant": {
			reason: "A rule of its own's backend in another namespace gets its grant, like a side's.",
			args: args{input: `{allowedRouteNamespaces: [test], allowedBackendNamespaces: [monitoring, cdn]}`, patches: []patch{
				set("spec.rules", `[{backendRefs: [{name: cdn-cache, namespace: cdn, port: 80}]}, {}]`),
			}},
			want: []names.Target{routeTarget("HTTPRoute", gw+"v1"), primarySvc, grantIn("cdn", gw+"v1beta1", "HTTPRoute"), grantIn("monitoring", gw+"v1beta1", "HTTPRoute")},
		},
		"BackendTLSPolicies": {
			reason: "A side with tls composes a BackendTLSPolicy of its proxy Service's name, which is a target like the Service.",
			args: args{input: allowMonitoring + "allowExternalNames: true\n", patches: []patch{
				set("spec.primary.tls", `{hostname: podinfo.internal, wellKnownCACertificates: System}`),
				set("spec.canary", `{externalName: canary.example.net, tls: {hostname: canary.example.net, wellKnownCACertificates: System}}`),
			}},
			want: []names.Target{
				routeTarget("HTTPRoute", gw+"v1"), primarySvc,
				{Key: names.KeyTLSPrimary, APIVersion: gw + "v1", Kind: "BackendTLSPolicy", Namespace: "test", Name: "podinfo-primary"},
				canarySvc,
				{Key: names.KeyTLSCanary, APIVersion: gw + "v1", Kind: "BackendTLSPolicy", Namespace: "test", Name: "podinfo-canary"},
			},
		},
		"UDPRoute": {
			reason: "A UDPRoute has a key of its own, and is v1 without schemas.",
			args:   args{input: allowMonitoring, patches: []patch{set("spec.kind", "UDPRoute"), del("spec.hostnames")}},
			want:   []names.Target{routeTarget("UDPRoute", gw+"v1"), primarySvc, grantIn("monitoring", gw+"v1beta1", "UDPRoute")},
		},
		"ServedVersions": {
			reason: "With the cluster's schemas, the versions it serves: TCPRoute v1alpha2 and ReferenceGrant v1 on an older experimental channel, no Input switch needed.",
			args:   args{input: allowMonitoring, patches: tcp, served: []string{"TCPRoute/v1alpha2", "ReferenceGrant/v1", "ReferenceGrant/v1beta1"}},
			want:   []names.Target{routeTarget("TCPRoute", gw+"v1alpha2"), primarySvc, grantIn("monitoring", gw+"v1", "TCPRoute")},
		},
		"RouteName": {
			reason: "The route and the proxy Services are named after spec.routeName.",
			args:   args{input: allowMonitoring + "referenceGrantVersion: v1\n", patches: []patch{set("spec.routeName", "shop")}},
			want: []names.Target{
				{Key: "route-httproute", APIVersion: gw + "v1", Kind: "HTTPRoute", Namespace: "test", Name: "shop"},
				{Key: "service-primary", APIVersion: "v1", Kind: "Service", Namespace: "test", Name: "shop-primary"},
				{Key: "referencegrant-monitoring", APIVersion: gw + "v1", Kind: "ReferenceGrant", Namespace: "monitoring", Name: "httproute.shop.test"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pol := inputPolicy(t, tc.args.input)
			p, err := newPlan(canaryRoute(t, pol, tc.args.patches...), pol, testCompiler(t), servedOnly(tc.args.served...))
			if err != nil {
				t.Fatalf("New(...): %v", err)
			}
			got := p.Targets()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nTargets(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTargetString(t *testing.T) {
	got := names.Target{Kind: "HTTPRoute", Namespace: "test", Name: "podinfo"}.String()
	if diff := cmp.Diff("HTTPRoute test/podinfo", got); diff != "" {
		t.Errorf("names.Target.String() names the object as Kind namespace/name, as error messages show it: -want, +got:\n%s", diff)
	}
}

func TestDesired(t *testing.T) {
	type args struct {
		patches  []patch
		route    func(t *testing.T, p *Plan) string
		observed []names.Key
	}
	// composed is what a test observes of a desired object.
	type composed struct {
		Key    names.Key
		Object string
		Ready  bool
	}
	accepted := func(t *testing.T, p *Plan) string { return routeAt(t, p, 20, parentStatus("True", "True")) }
	refused := func(t *testing.T, p *Plan) string { return routeAt(t, p, 20, parentStatus("False", "True")) }
	unresolved := func(t *testing.T, p *Plan) string { return routeAt(t, p, 20, parentStatus("True", "False")) }
	unreported := func(t *testing.T, p *Plan) string { return routeAt(t, p, 20, "") }
	noWait := set("spec.traffic.requireAcceptedRoute", "false")
	objects := func(route, svc, grant bool) []composed {
		return []composed{
			{Key: "route-httproute", Object: "HTTPRoute test/podinfo", Ready: route},
			{Key: "service-primary", Object: "Service test/podinfo-primary", Ready: svc},
			{Key: "referencegrant-monitoring", Object: "ReferenceGrant monitoring/httproute.podinfo.test", Ready: grant},
		}
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []composed
	}{
		"NothingObserved": {
			reason: "On the first run nothing exists: nothing is ready.",
			args:   args{},
			want:   objects(false, false, false),
		},
		"EverythingAccepted": {
			reason: "The route is ready once every parent accepted it with its references resolved; the Service and the grant once they exist.",
			args:   args{route: accepted, observed: []names.Key{"route-httproute", names.KeyServicePrimary, "referencegrant-monitoring"}},
			want:   objects(true, true, true),
		},
		"RouteRefused": {
			reason: "A route its parent does not accept is not ready, although it exists.",
			args:   args{route: refused, observed: []names.Key{"route-httproute", names.KeyServicePrimary, "referencegrant-monitoring"}},
			want:   objects(false, true, true),
		},
		"RouteRefsUnresolved": {
			reason: "A route whose references its parent cannot resolve is not ready either.",
			args:   args{route: unresolved, observed: []names.Key{"route-httproute"}},
			want:   objects(false, false, false),
		},
		"RouteUnreported": {
			reason: "A route that no parent has reported on yet is not ready.",
			args:   args{route: unreported},
			want:   objects(false, false, false),
		},
		"NotWaitingForTheGateway": {
			reason: "With requireAcceptedRoute: false the route is ready once it exists, even refused.",
			args:   args{patches: []patch{noWait}, route: refused},
			want:   objects(true, false, false),
		},
		"NotWaitingButNotCreated": {
			reason: "With requireAcceptedRoute: false a route that does not exist yet is still not ready.",
			args:   args{patches: []patch{noWait}},
			want:   objects(false, false, false),
		},
		"ServiceObservedOnly": {
			reason: "Each Service and grant is ready on its own key: an observed Service says nothing of the grant.",
			args:   args{observed: []names.Key{names.KeyServicePrimary}},
			want:   objects(false, true, false),
		},
		"BothProxyServices": {
			reason: "A canary proxy Service is composed under its own key and is ready once observed; no grant without a cross-namespace backend.",
			args: args{
				patches:  []patch{set("spec.canary", `{service: {selector: {app: podinfo-canary}}}`)},
				observed: []names.Key{names.KeyServiceCanary},
			},
			want: []composed{
				{Key: "route-httproute", Object: "HTTPRoute test/podinfo"},
				{Key: "service-primary", Object: "Service test/podinfo-primary"},
				{Key: "service-canary", Object: "Service test/podinfo-canary", Ready: true},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, tc.args.patches...)
			routeYAML := ""
			if tc.args.route != nil {
				routeYAML = tc.args.route(t, p)
			}
			obs := observe(t, p, routeYAML)
			built, errs := p.BuildRoute(percent.Int(20), true, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			observed := map[names.Key]bool{}
			for _, k := range tc.args.observed {
				observed[k] = true
			}
			var got []composed
			for _, o := range p.Desired(built, obs, func(k names.Key) bool { return observed[k] }) {
				m := o.Object.(interface {
					GetNamespace() string
					GetName() string
				})
				kind := o.Object.GetObjectKind().GroupVersionKind().Kind
				got = append(got, composed{Key: o.Key, Object: kind + " " + m.GetNamespace() + "/" + m.GetName(), Ready: o.Ready})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDesired(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDesiredComposesTheBuiltRoute(t *testing.T) {
	p := plan(t, allowMonitoring)
	built, errs := p.BuildRoute(percent.Int(20), true, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := p.Desired(built, route.Observation{}, func(names.Key) bool { return false })
	if len(got) == 0 || got[0].Object != built {
		t.Errorf("Desired(...): the route's object must be the built route itself, got %+v", got)
	}
}

func TestBuildRoute(t *testing.T) {
	type args struct {
		patches []patch
		weight  int32
		active  bool
	}
	type want struct {
		weights []string
		errs    []xrtest.FieldErr
	}
	rules := func(n int) patch { return set("spec.rules", "["+strings.TrimSuffix(strings.Repeat("{},", n), ",")+"]") }
	ab := set("spec.traffic.matches", `[{headers: [{name: X-Beta, value: "yes"}]}]`)
	affinity := set("spec.traffic.sessionAffinity", `{cookieName: canary, maxAge: 1h}`)
	// The route package explains the limit, and its admission check, the
	// CRDs' own rule, says it again.
	tooManyRules := []xrtest.FieldErr{
		xrtest.Invalid("spec.rules", "18 rules, 2 more than the Gateway API allows (16): the 9 rules of the spec gain 9 A/B, session or mirror companion rules while the rollout is active"),
		xrtest.TooMany("spec.rules", 16),
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"AtWeight": {
			reason: "The route carries the primary and the canary at the decided weights.",
			args:   args{weight: 20, active: true},
			want:   want{weights: []string{"podinfo-primary=80 canary-proxy=20"}},
		},
		"Finished": {
			reason: "At 100 the canary takes everything and the primary stays in the rule at 0.",
			args:   args{weight: 100},
			want:   want{weights: []string{"podinfo-primary=0 canary-proxy=100"}},
		},
		"ABCompanionsWhileActive": {
			reason: "While active, each rule gets its A/B companion rule first.",
			args:   args{patches: []patch{ab}, weight: 20, active: true},
			want:   want{weights: []string{"canary-proxy=1", "podinfo-primary=80 canary-proxy=20"}},
		},
		"ABCompanionsFit": {
			reason: "Eight rules with A/B companions make sixteen rules, the Gateway API's limit: allowed.",
			args:   args{patches: []patch{rules(8), ab}, weight: 0},
			want: want{weights: []string{
				"podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0",
				"podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0", "podinfo-primary=100 canary-proxy=0",
			}},
		},
		"ABCompanionsBreakTheLimitWhileActive": {
			reason: "Nine rules with A/B companions make eighteen rules while the rollout is active: refused.",
			args:   args{patches: []patch{rules(9), ab}, weight: 20, active: true},
			want:   want{errs: tooManyRules},
		},
		"ABCompanionsRefusedEvenAtZero": {
			reason: "The same spec is refused at weight 0, inactive, where the route itself would fit: it would be rejected halfway through a rollout, so it is refused up front.",
			args:   args{patches: []patch{rules(9), ab}, weight: 0},
			want:   want{errs: tooManyRules},
		},
		"SessionCompanionsRefusedEvenAtZero": {
			reason: "Session companion rules only appear while the canary gets traffic; the check at weight 0 still counts them.",
			args:   args{patches: []patch{rules(9), affinity}, weight: 0},
			want:   want{errs: tooManyRules},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, tc.args.patches...)
			built, errs := p.BuildRoute(percent.Int(tc.args.weight), tc.args.active, nil)
			var got want
			if r, ok := built.(*gwv1.HTTPRoute); ok && len(errs) == 0 {
				for _, rule := range r.Spec.Rules {
					var s []string
					for _, b := range rule.BackendRefs {
						s = append(s, string(b.Name)+"="+strconv.Itoa(int(ptr.Deref(b.Weight, 1))))
					}
					got.weights = append(got.weights, strings.Join(s, " "))
				}
			}
			if diff := xrtest.Diff(tc.want.errs, errs); diff != "" {
				t.Errorf("%s\nBuildRoute(%d, %v): errors: -want, +got:\n%s", tc.reason, tc.args.weight, tc.args.active, diff)
			}
			if diff := cmp.Diff(tc.want.weights, got.weights); diff != "" {
				t.Errorf("%s\nBuildRoute(%d, %v): weights: -want, +got:\n%s", tc.reason, tc.args.weight, tc.args.active, diff)
			}
		})
	}
}

func TestRouteAtWeight(t *testing.T) {
	type args struct {
		patches []patch
		// route is the observed route: the plan's at a weight, with a
		// status.
		route  func(t *testing.T, p *Plan) string
		weight int32
	}
	type want struct {
		ok  bool
		msg string
	}
	at := func(weight int32, status string) func(t *testing.T, p *Plan) string {
		return func(t *testing.T, p *Plan) string { return routeAt(t, p, weight, status) }
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NotCreated": {
			reason: "A route that does not exist is not at any weight.",
			args:   args{weight: 20},
			want:   want{msg: "the route has not been created yet"},
		},
		"AcceptedAtWeight": {
			reason: "A route that carries the step's weights and that every parent accepted is at the weight.",
			args:   args{route: at(20, parentStatus("True", "True")), weight: 20},
			want:   want{ok: true},
		},
		"OlderWeights": {
			reason: "A route still at the previous step's weights is not at this step's, whatever its parents say: Crossplane patches the status even when applying the route failed.",
			args:   args{route: at(10, parentStatus("True", "True")), weight: 20},
			want:   want{msg: "the route does not carry the step's weights yet"},
		},
		"NotAccepted": {
			reason: "A route at the weight that its parent does not accept holds the step, naming the parent and its reason.",
			args:   args{route: at(20, parentStatus("False", "True")), weight: 20},
			want:   want{msg: "istio-ingress/gateway has not accepted the route (NotAllowedByListeners)"},
		},
		"RefsNotResolved": {
			reason: "A parent that accepted the route without resolving its references holds it too, and the message says so.",
			args:   args{route: at(20, parentStatus("True", "False")), weight: 20},
			want:   want{msg: "istio-ingress/gateway has not resolved the route's references (RefNotPermitted)"},
		},
		"Unreported": {
			reason: "A parent that has not reported holds the step as Pending.",
			args:   args{route: at(20, ""), weight: 20},
			want:   want{msg: "istio-ingress/gateway has not accepted the route (Pending)"},
		},
		"Finished": {
			reason: "At 100 the route is compared with the inactive route at 100.",
			args:   args{route: at(100, parentStatus("True", "True")), weight: 100},
			want:   want{ok: true},
		},
		"FinishedWithABMatches": {
			reason: "At 100 the rollout is no longer active: the route compared has no A/B companion rule, as the one composed at 100 has none.",
			args:   args{patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Beta, value: "yes"}]}]`)}, route: at(100, parentStatus("True", "True")), weight: 100},
			want:   want{ok: true},
		},
		"ActiveCompanions": {
			reason: "While active, the route with its A/B companion rule is the one compared, rule by rule.",
			args:   args{patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Beta, value: "yes"}]}]`)}, route: at(20, parentStatus("True", "True")), weight: 20},
			want:   want{ok: true},
		},
		"InactiveRouteIsNotActiveWeight": {
			reason: "The inactive route at 0 (no A/B companion) is not the route at 0 while active, which has one.",
			args: args{
				patches: []patch{set("spec.traffic.matches", `[{headers: [{name: X-Beta, value: "yes"}]}]`)},
				route: func(t *testing.T, p *Plan) string {
					built, errs := p.BuildRoute(percent.Int(0), false, nil)
					if len(errs) > 0 {
						t.Fatal(errs)
					}
					return toYAML(t, built) + parentStatus("True", "True")
				},
				weight: 0,
			},
			want: want{msg: "the route does not carry the step's weights yet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, tc.args.patches...)
			routeYAML := ""
			if tc.args.route != nil {
				routeYAML = tc.args.route(t, p)
			}
			ok, msg := p.RouteAtStep(observe(t, p, routeYAML))(0, percent.Int(tc.args.weight))
			if diff := cmp.Diff(tc.want, want{ok: ok, msg: msg}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRouteAtWeight(...)(%d): -want, +got:\n%s", tc.reason, tc.args.weight, diff)
			}
		})
	}
}

func TestRouteAtWeightLeavesThePlanAlone(t *testing.T) {
	p := plan(t, allowMonitoring)
	before := p.Route
	p.RouteAtStep(observe(t, p, routeAt(t, p, 20, "")))(0, percent.Int(50))
	if diff := cmp.Diff(before, p.Route); diff != "" {
		t.Errorf("RouteAtWeight(...): asking about a weight must not change the plan's route: -before, +after:\n%s", diff)
	}
}

func TestCanaryBackends(t *testing.T) {
	cases := map[string]struct {
		reason  string
		patches []patch
		want    []xr.BackendID
	}{
		"BackendRef": {
			reason:  "The canary backendRef with Gateway API's defaults applied (core group, kind Service) and its namespace.",
			patches: nil,
			want:    []xr.BackendID{{Group: "", Kind: "Service", Namespace: "monitoring", Name: "canary-proxy", Port: ptr.To[int32](3456)}},
		},
		"ProxyService": {
			reason:  "A service canary is its proxy Service in the route's namespace, on spec.port.",
			patches: []patch{set("spec.canary", `{service: {selector: {app: podinfo-canary}}}`)},
			want:    []xr.BackendID{{Group: "", Kind: "Service", Namespace: "test", Name: "podinfo-canary", Port: ptr.To[int32](9898)}},
		},
		"PortFromSpec": {
			reason:  "A Service backendRef without a port gets spec.port, and is recorded with it.",
			patches: []patch{set("spec.canary", `{backendRef: {name: canary-proxy, namespace: monitoring}}`)},
			want:    []xr.BackendID{{Group: "", Kind: "Service", Namespace: "monitoring", Name: "canary-proxy", Port: ptr.To[int32](9898)}},
		},
		"PortlessKind": {
			reason:  "A kind that takes no port is recorded without one.",
			patches: []patch{set("spec.canary", `{backendRef: {group: inference.networking.k8s.io, kind: InferencePool, name: pool, namespace: monitoring}}`)},
			want:    []xr.BackendID{{Group: "inference.networking.k8s.io", Kind: "InferencePool", Namespace: "monitoring", Name: "pool"}},
		},
		"SameAsPrimary": {
			reason: "When the primary and the canary are one backend, the route carries it once, as the primary: there is no canary backend to record, and an abort must not zero it.",
			patches: []patch{
				set("spec.primary", `{backendRef: {name: podinfo, port: 9898}}`),
				set("spec.canary", `{backendRef: {group: "", kind: Service, name: podinfo, namespace: test}}`),
			},
			want: nil,
		},
		"SameNameOtherPort": {
			reason: "The same Service on another port is another backend.",
			patches: []patch{
				set("spec.primary", `{backendRef: {name: podinfo, port: 9898}}`),
				set("spec.canary", `{backendRef: {name: podinfo, port: 9899}}`),
			},
			want: []xr.BackendID{{Group: "", Kind: "Service", Namespace: "test", Name: "podinfo", Port: ptr.To[int32](9899)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := plan(t, allowMonitoring, tc.patches...).CanaryBackends()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCanaryBackends(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDescribeRef(t *testing.T) {
	cases := map[string]struct {
		reason string
		ref    gwv1.BackendObjectReference
		want   string
	}{
		"Defaults": {
			reason: "A reference without group and kind is a Service; without namespace or port, just its name.",
			ref:    gwv1.BackendObjectReference{Name: "shadow"},
			want:   "Service shadow",
		},
		"Full": {
			reason: "A reference of another kind names its group, its namespace and its port.",
			ref: gwv1.BackendObjectReference{
				Group: ptr.To[gwv1.Group]("multicluster.x-k8s.io"), Kind: ptr.To[gwv1.Kind]("ServiceImport"),
				Name: "shadow", Namespace: ptr.To[gwv1.Namespace]("other"), Port: ptr.To[gwv1.PortNumber](80),
			},
			want: "ServiceImport.multicluster.x-k8s.io other/shadow:80",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DescribeRef(tc.ref)); diff != "" {
				t.Errorf("%s\nDescribeRef(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTrafficMirrorMatches(t *testing.T) {
	type args struct {
		patches []patch
		step    *int32
	}
	progressive := func(traffic string) []patch {
		return []patch{set("spec.canary.revision", "v2"), set("spec.traffic", traffic)}
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"Manual": {
			reason: "traffic.mirror.matches limit the mirror to the requests that meet them: a mirror companion carries it, the weighted rule mirrors nothing.",
			args:   args{patches: []patch{set("spec.traffic.mirror", `{percent: 100, matches: [{method: GET}]}`)}},
			want: []string{
				"podinfo-primary=80 canary-proxy=20 | GET | mirror",
				"podinfo-primary=80 canary-proxy=20 | - |",
			},
		},
		"ProgressiveStepWithoutMirror": {
			reason: "A step without a mirror of its own uses the traffic's, matches included.",
			args: args{
				patches: progressive(`{steps: [{weight: 20, pause: 1h}, {weight: 100}], mirror: {percent: 100, matches: [{method: GET}]}}`),
				step:    ptr.To[int32](0),
			},
			want: []string{
				"podinfo-primary=80 canary-proxy=20 | GET | mirror",
				"podinfo-primary=80 canary-proxy=20 | - |",
			},
		},
		"StepMirrorReplacesMatches": {
			reason: "A step's mirror without matches replaces the traffic's mirror and its matches: every weighted request is mirrored.",
			args: args{
				patches: progressive(`{steps: [{weight: 20, pause: 1h, mirror: {percent: 10}}, {weight: 100}], mirror: {percent: 100, matches: [{method: GET}]}}`),
				step:    ptr.To[int32](0),
			},
			want: []string{"podinfo-primary=80 canary-proxy=20 | - | mirror"},
		},
		"GRPCRoute": {
			reason: "The same for a GRPCRoute's mirror matches.",
			args: args{patches: []patch{
				set("spec.kind", "GRPCRoute"),
				set("spec.traffic.mirror", `{percent: 100, matches: [{headers: [{name: x-mirror, value: "1"}]}]}`),
			}},
			want: []string{
				"podinfo-primary=80 canary-proxy=20 | x-mirror | mirror",
				"podinfo-primary=80 canary-proxy=20 | - |",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(t, allowMonitoring, tc.args.patches...)
			built, errs := p.BuildRoute(percent.Int(20), true, tc.args.step)
			if len(errs) > 0 {
				t.Fatalf("BuildRoute(...): %v", errs)
			}
			for _, c := range []crdschema.Channel{crdschema.Standard, crdschema.Experimental} {
				if errs := crdschema.GatewayAPI(t, c).Validate(built); len(errs) > 0 {
					t.Fatalf("the %s Gateway API CRDs reject the composed route: %v", c, errs)
				}
			}
			summary := func(refs []gwv1.BackendRef, conditions []string, mirror bool) string {
				s := make([]string, 0, len(refs))
				for _, b := range refs {
					s = append(s, string(b.Name)+"="+strconv.Itoa(int(ptr.Deref(b.Weight, 1))))
				}
				c := strings.Join(conditions, ",")
				if c == "" {
					c = "-"
				}
				m := ""
				if mirror {
					m = " mirror"
				}
				return strings.Join(s, " ") + " | " + c + " |" + m
			}
			var got []string
			switch r := built.(type) {
			case *gwv1.HTTPRoute:
				for _, rule := range r.Spec.Rules {
					var refs []gwv1.BackendRef
					for _, b := range rule.BackendRefs {
						refs = append(refs, b.BackendRef)
					}
					var conditions []string
					for _, m := range rule.Matches {
						if m.Method != nil {
							conditions = append(conditions, string(*m.Method))
						}
					}
					mirror := slices.ContainsFunc(rule.Filters, func(f gwv1.HTTPRouteFilter) bool { return f.Type == gwv1.HTTPRouteFilterRequestMirror })
					got = append(got, summary(refs, conditions, mirror))
				}
			case *gwv1.GRPCRoute:
				for _, rule := range r.Spec.Rules {
					var refs []gwv1.BackendRef
					for _, b := range rule.BackendRefs {
						refs = append(refs, b.BackendRef)
					}
					var conditions []string
					for _, m := range rule.Matches {
						for _, h := range m.Headers {
							conditions = append(conditions, string(h.Name))
						}
					}
					mirror := slices.ContainsFunc(rule.Filters, func(f gwv1.GRPCRouteFilter) bool { return f.Type == gwv1.GRPCRouteFilterRequestMirror })
					got = append(got, summary(refs, conditions, mirror))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBuildRoute(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
