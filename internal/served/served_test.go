package served

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/input/v1beta1"
	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

var self = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1alpha1", Kind: "XCanaryRoute"}

// cluster is a cluster's schemas: the kinds and versions it serves, each
// with the rule fields its route schema holds.
type cluster map[string][]string

// handed is what Crossplane hands for the requirements of a need, from a
// cluster: every requirement answered, nil for what the cluster does not
// serve.
func (c cluster) handed(need Need) func(string) (map[string]any, bool) {
	return func(name string) (map[string]any, bool) {
		if name == SelfKey {
			return map[string]any{"type": "object"}, true
		}
		for k, gvk := range Requirements(self, need) {
			if k != name {
				continue
			}
			fields, ok := c[gvk.Kind+"/"+gvk.Version]
			if !ok {
				return nil, true
			}
			rule := map[string]any{}
			for _, f := range fields {
				rule[f] = map[string]any{"type": "object"}
			}
			return map[string]any{"properties": map[string]any{"spec": map[string]any{"properties": map[string]any{
				"rules": map[string]any{"items": map[string]any{"properties": rule}},
			}}}}, true
		}
		return nil, false
	}
}

// Gateway API v1.6's channels, as far as the function composes them.
var (
	standard16 = cluster{
		"HTTPRoute/v1": {"matches"}, "GRPCRoute/v1": {"matches"}, "TLSRoute/v1": {"backendRefs"}, "TCPRoute/v1": {"backendRefs"},
		"UDPRoute/v1": {"backendRefs"}, "ReferenceGrant/v1": nil, "ReferenceGrant/v1beta1": nil, "BackendTLSPolicy/v1": nil,
	}
	experimental16 = cluster{
		"HTTPRoute/v1": {"matches", "retry", "sessionPersistence"}, "GRPCRoute/v1": {"matches", "sessionPersistence"},
		"TLSRoute/v1": {"backendRefs"}, "TLSRoute/v1alpha2": {"backendRefs"}, "TCPRoute/v1": {"backendRefs"}, "TCPRoute/v1alpha2": {"backendRefs"},
		"UDPRoute/v1": {"backendRefs"}, "UDPRoute/v1alpha2": {"backendRefs"}, "ReferenceGrant/v1": nil, "ReferenceGrant/v1beta1": nil, "BackendTLSPolicy/v1": nil,
	}
	experimental14 = cluster{
		"HTTPRoute/v1": {"matches", "retry", "sessionPersistence"}, "GRPCRoute/v1": {"matches"}, "TLSRoute/v1alpha2": {"backendRefs"},
		"TCPRoute/v1alpha2": {"backendRefs"}, "UDPRoute/v1alpha2": {"backendRefs"}, "ReferenceGrant/v1beta1": nil,
	}
	linkerd = cluster{"HTTPRoute/v1": {"matches"}, "GRPCRoute/v1alpha2": {"matches"}, "ReferenceGrant/v1beta1": nil}
)

func TestChoose(t *testing.T) {
	retry := RuleField{Name: "retry", Path: field.NewPath("spec", "rules").Index(0).Child("retry")}
	persistence := RuleField{Name: "sessionPersistence", Path: field.NewPath("spec", "traffic", "sessionAffinity", "mode")}
	type args struct {
		need      Need
		overrides Overrides
		cluster   cluster // nil: no schemas handed
	}
	type want struct {
		versions Versions
		errs     []xrtest.FieldErr
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NoSchemas": {
			reason: "Without schemas (an older Crossplane, crossplane render without --required-schemas) the defaults apply: v1 routes, v1beta1 grants.",
			args:   args{need: Need{RouteKind: "TCPRoute", Grants: true}},
			want:   want{versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceDefaults}},
		},
		"NoSchemasOverrides": {
			reason: "Without schemas the Input's versions are used as they are.",
			args:   args{need: Need{RouteKind: "TCPRoute", Grants: true}, overrides: Overrides{Route: v1beta1.RouteV1Alpha2, Grant: v1beta1.ReferenceGrantV1}},
			want:   want{versions: Versions{Route: "v1alpha2", Grant: "v1", TLS: "v1", Source: SourceDefaults, Overridden: true}},
		},
		"Standard16": {
			reason: "Gateway API v1.6 serves TCPRoute v1 and ReferenceGrant v1: the newest versions are chosen.",
			args:   args{need: Need{RouteKind: "TCPRoute", Grants: true}, cluster: standard16},
			want:   want{versions: Versions{Route: "v1", Grant: "v1", TLS: "v1", Source: SourceSchemas}},
		},
		"Experimental14": {
			reason: "An older experimental channel serves TCPRoute v1alpha2 and ReferenceGrant v1beta1 only: those are chosen, with no Input switch.",
			args:   args{need: Need{RouteKind: "TCPRoute", Grants: true}, cluster: experimental14},
			want:   want{versions: Versions{Route: "v1alpha2", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas}},
		},
		"Linkerd": {
			reason: "Linkerd serves GRPCRoute v1alpha2 only: the function composes that.",
			args:   args{need: Need{RouteKind: "GRPCRoute"}, cluster: linkerd},
			want:   want{versions: Versions{Route: "v1alpha2", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas}},
		},
		"OverrideServed": {
			reason: "An Input version the cluster serves is kept, even when a newer one is served.",
			args:   args{need: Need{RouteKind: "TLSRoute", Grants: true}, overrides: Overrides{Route: "v1alpha2", Grant: "v1beta1"}, cluster: experimental16},
			want:   want{versions: Versions{Route: "v1alpha2", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas, Overridden: true}},
		},
		"OverrideNotServed": {
			reason: "An Input version the cluster does not serve is a Fatal naming the Input's field and what the cluster serves.",
			args:   args{need: Need{RouteKind: "TCPRoute"}, overrides: Overrides{Route: "v1", RoutePath: field.NewPath("tcpRouteVersion")}, cluster: experimental14},
			want: want{
				versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas, Overridden: true},
				errs:     []xrtest.FieldErr{xrtest.Invalid("tcpRouteVersion", "(it serves v1alpha2)")},
			},
		},
		"KindNotServed": {
			reason: "A kind the cluster serves in no version the function composes is a Fatal naming spec.kind.",
			args:   args{need: Need{RouteKind: "UDPRoute"}, cluster: linkerd},
			want: want{
				versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas},
				errs:     []xrtest.FieldErr{xrtest.Invalid("spec.kind", "serves no UDPRoute version")},
			},
		},
		"GrantsNotServed": {
			reason: "Grants that the cluster has no CRD for are a Fatal naming spec.referenceGrants.",
			args:   args{need: Need{RouteKind: "HTTPRoute", Grants: true}, cluster: cluster{"HTTPRoute/v1": nil}},
			want: want{
				versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas},
				errs:     []xrtest.FieldErr{xrtest.Invalid("spec.referenceGrants", "serves no ReferenceGrant version")},
			},
		},
		"BackendTLSNotServed": {
			reason: "A tls side on a cluster without BackendTLSPolicy v1 is a Fatal naming the side's tls.",
			args:   args{need: Need{RouteKind: "HTTPRoute", BackendTLS: field.NewPath("spec", "primary", "tls")}, cluster: experimental14},
			want: want{
				versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas},
				errs:     []xrtest.FieldErr{xrtest.Invalid("spec.primary.tls", "serves no BackendTLSPolicy version")},
			},
		},
		"RetryOnStandard": {
			reason: "retry is of the experimental channel: on the standard channel the API server would drop it, so it is a Fatal naming the field.",
			args:   args{need: Need{RouteKind: "HTTPRoute", RuleFields: []RuleField{retry, persistence}}, cluster: standard16},
			want: want{
				versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas},
				errs: []xrtest.FieldErr{
					xrtest.Forbidden("spec.rules[0].retry", "has no rules[].retry"),
					xrtest.Forbidden("spec.traffic.sessionAffinity.mode", "has no rules[].sessionPersistence"),
				},
			},
		},
		"RetryOnExperimental": {
			reason: "The experimental channel holds retry and sessionPersistence.",
			args:   args{need: Need{RouteKind: "HTTPRoute", RuleFields: []RuleField{retry, persistence}}, cluster: experimental16},
			want:   want{versions: Versions{Route: "v1", Grant: "v1beta1", TLS: "v1", Source: SourceSchemas}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s Schemas
			if tc.args.cluster != nil {
				s = NewSchemas(self, tc.args.need, tc.args.cluster.handed(tc.args.need))
			}
			got, errs := Choose(tc.args.need, tc.args.overrides, s)
			if diff := cmp.Diff(tc.want.versions, got); diff != "" {
				t.Errorf("%s\nChoose(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := xrtest.Diff(tc.want.errs, errs); diff != "" {
				t.Errorf("%s\nChoose(...): -want errors, +got errors:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNewSchemas(t *testing.T) {
	need := Need{RouteKind: "HTTPRoute", Grants: true}
	cases := map[string]struct {
		reason string
		got    func(string) (map[string]any, bool)
		handed bool
	}{
		"NothingYet": {
			reason: "The first call of a reconcile has no schemas yet.",
			got:    func(string) (map[string]any, bool) { return nil, false },
		},
		"NoSelf": {
			reason: "Without the XR's own schema (crossplane render without --required-schemas answers every requirement empty) nothing can be concluded.",
			got:    func(string) (map[string]any, bool) { return nil, true },
		},
		"Partial": {
			reason: "A requirement not answered is as good as no schemas.",
			got: func(name string) (map[string]any, bool) {
				if name == SelfKey {
					return map[string]any{}, true
				}
				return nil, name == Key("HTTPRoute", "v1")
			},
		},
		"Handed": {
			reason: "Every requirement answered, the XR's own schema among them: the schemas say what is served.",
			got:    standard16.handed(need),
			handed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NewSchemas(self, need, tc.got).handed; got != tc.handed {
				t.Errorf("%s\nNewSchemas(...).handed = %v, want %v", tc.reason, got, tc.handed)
			}
		})
	}
}

func TestRequirements(t *testing.T) {
	got := Requirements(self, Need{RouteKind: "GRPCRoute", Grants: true, BackendTLS: field.NewPath("spec", "canary", "tls")})
	want := map[string]schema.GroupVersionKind{
		"schema-self":                   self,
		"schema-grpcroute-v1":           {Group: Group, Version: "v1", Kind: "GRPCRoute"},
		"schema-grpcroute-v1alpha2":     {Group: Group, Version: "v1alpha2", Kind: "GRPCRoute"},
		"schema-referencegrant-v1":      {Group: Group, Version: "v1", Kind: "ReferenceGrant"},
		"schema-referencegrant-v1beta1": {Group: Group, Version: "v1beta1", Kind: "ReferenceGrant"},
		"schema-backendtlspolicy-v1":    {Group: Group, Version: "v1", Kind: "BackendTLSPolicy"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Requirements(...): every candidate version of each kind composed, and the XR's own: -want, +got:\n%s", diff)
	}
}

func TestReuse(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	fresh := &Recorded{Kind: "TCPRoute", Route: "v1alpha2", Grant: "v1", CheckedAt: now.Add(-time.Minute)}
	tcp := Need{RouteKind: "TCPRoute", Grants: true}
	cases := map[string]struct {
		reason string
		need   Need
		o      Overrides
		r      *Recorded
		want   *Versions // nil: not reused
	}{
		"Fresh": {
			reason: "Versions read a minute ago are reused: Crossplane need not fetch and parse the schemas again.",
			need:   tcp, r: fresh,
			want: &Versions{Route: "v1alpha2", Grant: "v1", TLS: "v1", Source: SourceStatus, CheckedAt: fresh.CheckedAt},
		},
		"Stale": {
			reason: "Versions read RecheckAfter ago are read again: the cluster may serve others now.",
			need:   tcp, r: &Recorded{Kind: "TCPRoute", Route: "v1alpha2", Grant: "v1", CheckedAt: now.Add(-RecheckAfter)},
		},
		"Future": {
			reason: "A check time after now (another replica's clock, or a hand-written status) is not trusted.",
			need:   tcp, r: &Recorded{Kind: "TCPRoute", Route: "v1alpha2", Grant: "v1", CheckedAt: now.Add(time.Minute)},
		},
		"OtherKind": {
			reason: "Versions read for another route kind say nothing of this one.",
			need:   Need{RouteKind: "UDPRoute", Grants: true}, r: fresh,
		},
		"GrantsNotRead": {
			reason: "A run that now composes grants needs a grant version nobody read.",
			need:   tcp, r: &Recorded{Kind: "TCPRoute", Route: "v1alpha2", CheckedAt: now.Add(-time.Minute)},
		},
		"TLSNotRead": {
			reason: "Likewise a BackendTLSPolicy version.",
			need:   Need{RouteKind: "TCPRoute", Grants: true, BackendTLS: field.NewPath("spec", "primary", "tls")}, r: fresh,
		},
		"RuleFields": {
			reason: "Which fields the schema holds is not recorded: a spec with retries has the schemas read.",
			need:   Need{RouteKind: "TCPRoute", Grants: true, RuleFields: []RuleField{{Name: "retry"}}}, r: fresh,
		},
		"OverrideChanged": {
			reason: "An Input override other than what was read is checked against the schemas again.",
			need:   tcp, o: Overrides{Route: v1beta1.RouteV1}, r: fresh,
		},
		"ForgedRouteVersion": {
			reason: "A recorded route version the function never composes for the kind (a forged status) is not reused.",
			need:   tcp, r: &Recorded{Kind: "TCPRoute", Route: "v9", Grant: "v1", CheckedAt: now.Add(-time.Minute)},
		},
		"ForgedGrantVersion": {
			reason: "Likewise a grant version.",
			need:   tcp, r: &Recorded{Kind: "TCPRoute", Route: "v1", Grant: "v1alpha2", CheckedAt: now.Add(-time.Minute)},
		},
		"ForgedTLSVersion": {
			reason: "Likewise a BackendTLSPolicy version the function does not compose.",
			need:   Need{RouteKind: "TCPRoute", Grants: true, BackendTLS: field.NewPath("spec", "primary", "tls")},
			r:      &Recorded{Kind: "TCPRoute", Route: "v1", Grant: "v1", TLS: "v1alpha3", CheckedAt: now.Add(-time.Minute)},
		},
		"None": {
			reason: "Nothing recorded, nothing reused.",
			need:   tcp,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Reuse(tc.need, tc.o, tc.r, now)
			if tc.want == nil {
				if ok {
					t.Errorf("%s\nReuse(...) = %+v, want none", tc.reason, got)
				}
				return
			}
			if diff := cmp.Diff(*tc.want, got); !ok || diff != "" {
				t.Errorf("%s\nReuse(...): ok %v, -want, +got:\n%s", tc.reason, ok, diff)
			}
		})
	}
}
