package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestRequirementsRecorded: every response records its requirements in its
// context, the next call reads them back, and a response is settled (the
// one Crossplane applies) when it makes the requirements of the call
// before, or is a Fatal.
func TestRequirementsRecorded(t *testing.T) {
	gate := &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		"gate-0": {ApiVersion: "apps/v1", Kind: "Deployment", Match: &fnv1.ResourceSelector_MatchName{MatchName: "podinfo"}},
	}}
	nextStep := &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		"gate-0": {ApiVersion: "apps/v1", Kind: "Deployment", Match: &fnv1.ResourceSelector_MatchName{MatchName: "podinfo-v2"}},
	}}
	other := structpb.NewStringValue("another function's")
	fatal := []*fnv1.Result{{Severity: fnv1.Severity_SEVERITY_FATAL, Message: "bad"}}

	cases := map[string]struct {
		reason   string
		previous *fnv1.Requirements // made by the call before; nil: none, or the first call
		context  map[string]*structpb.Value
		rsp      *fnv1.RunFunctionResponse
		settled  bool
	}{
		"FirstCallWithout": {
			reason:  "The first call of a reconcile making no requirements is applied.",
			rsp:     &fnv1.RunFunctionResponse{},
			settled: true,
		},
		"FirstCallWith": {
			reason: "The first call making requirements sends Crossplane back for them.",
			rsp:    &fnv1.RunFunctionResponse{Requirements: gate},
		},
		"Same": {
			reason:   "Requirements equal to the call before's settle.",
			previous: gate,
			rsp:      &fnv1.RunFunctionResponse{Requirements: proto.Clone(gate).(*fnv1.Requirements)},
			settled:  true,
		},
		"SameNamesOtherObject": {
			reason:   "The same requirement names asking for another object (the next step's) do not settle.",
			previous: gate,
			rsp:      &fnv1.RunFunctionResponse{Requirements: nextStep},
		},
		"NoneAfterSome": {
			reason:   "No requirements after a call that made some do not settle.",
			previous: gate,
			rsp:      &fnv1.RunFunctionResponse{},
		},
		"EmptyIsNotNone": {
			reason: "Empty requirements on the first call are not none to Crossplane's proto.Equal.",
			rsp:    &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{}},
		},
		"Fatal": {
			reason:  "A Fatal ends the reconcile's calls.",
			rsp:     &fnv1.RunFunctionResponse{Requirements: gate, Results: fatal},
			settled: true,
		},
		"OtherKeysKept": {
			reason:   "Another function's context keys stay as they are.",
			previous: gate,
			context:  map[string]*structpb.Value{"example.org/key": other},
			rsp:      &fnv1.RunFunctionResponse{Requirements: gate},
			settled:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The call before: its response recorded its requirements, and
			// Crossplane hands its context to this call.
			before := &fnv1.RunFunctionResponse{Requirements: tc.previous}
			if tc.context != nil {
				before.Context = &structpb.Struct{Fields: tc.context}
			}
			Record(before)
			req := &fnv1.RunFunctionRequest{Context: before.GetContext()}
			if tc.previous == nil && tc.context == nil && req.Context != nil {
				t.Errorf("%s\na response without requirements or context got a context: %v", tc.reason, req.Context)
			}
			if diff := cmp.Diff(tc.previous, Previous(req), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nPrevious(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got := Settled(req, tc.rsp); got != tc.settled {
				t.Errorf("%s\nSettled(...) = %v, want %v", tc.reason, got, tc.settled)
			}
			// This call's response: as response.To makes it, sharing the
			// request's context, which it must not write into.
			sent := proto.Clone(req).(*fnv1.RunFunctionRequest)
			tc.rsp.Context = req.GetContext()
			Record(tc.rsp)
			if diff := cmp.Diff(sent, req, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrecordRequirements wrote into the request's context: -before, +after:\n%s", tc.reason, diff)
			}
			next := &fnv1.RunFunctionRequest{Context: tc.rsp.GetContext()}
			if diff := cmp.Diff(tc.rsp.GetRequirements(), Previous(next), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nthe next call reads back: -want, +got:\n%s", tc.reason, diff)
			}
			for k, v := range tc.context {
				if got := tc.rsp.GetContext().GetFields()[k]; !proto.Equal(got, v) {
					t.Errorf("%s\ncontext key %s = %v, want %v", tc.reason, k, got, v)
				}
			}
		})
	}
}

// TestOwnRequirements: a rescued abort makes the requirements the call
// before recorded, but only those of the function's own names and shapes:
// another pipeline step that writes the key (a misconfiguration) cannot
// make the rescue ask for a Secret by label, or for anything under a name
// the function never uses.
func TestOwnRequirements(t *testing.T) {
	byName := func(apiVersion, kind, name string) *fnv1.ResourceSelector {
		return &fnv1.ResourceSelector{ApiVersion: apiVersion, Kind: kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: name}}
	}
	cases := map[string]struct {
		reason string
		in     *fnv1.Requirements
		want   *fnv1.Requirements
	}{
		"None": {reason: "No record, no requirements.", in: nil, want: nil},
		"Own": {
			reason: "The objects about to be composed, the gates' objects, the claim and the schemas are kept.",
			in: &fnv1.Requirements{
				Resources: map[string]*fnv1.ResourceSelector{
					"existing-route-httproute": byName("gateway.networking.k8s.io/v1", "HTTPRoute", "podinfo"),
					"gate-0":                   byName("apps/v1", "Deployment", "podinfo"),
					"claim":                    byName("platform.example.org/v1alpha1", "CanaryRouteClaim", "podinfo"),
				},
				Schemas: map[string]*fnv1.SchemaSelector{"schema-self": {ApiVersion: "platform.example.org/v1alpha1", Kind: "CanaryRoute"}},
			},
			want: &fnv1.Requirements{
				Resources: map[string]*fnv1.ResourceSelector{
					"existing-route-httproute": byName("gateway.networking.k8s.io/v1", "HTTPRoute", "podinfo"),
					"gate-0":                   byName("apps/v1", "Deployment", "podinfo"),
					"claim":                    byName("platform.example.org/v1alpha1", "CanaryRouteClaim", "podinfo"),
				},
				Schemas: map[string]*fnv1.SchemaSelector{"schema-self": {ApiVersion: "platform.example.org/v1alpha1", Kind: "CanaryRoute"}},
			},
		},
		"Foreign": {
			reason: "Names the function never uses, and objects asked for by label, are dropped.",
			in: &fnv1.Requirements{
				Resources: map[string]*fnv1.ResourceSelector{
					"secrets":  byName("v1", "Secret", "admin"),
					"gate-all": {ApiVersion: "v1", Kind: "Secret", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"a": "b"}}}},
				},
				Schemas: map[string]*fnv1.SchemaSelector{"other": {ApiVersion: "v1", Kind: "Secret"}},
			},
			want: &fnv1.Requirements{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Own(tc.in), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nOwn(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
