package names

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeys(t *testing.T) {
	cases := map[string]struct {
		reason string
		key    Key
		want   [4]bool // IsRoute, IsGrant, Ours, IsPreview
	}{
		"HTTPRoute":      {reason: "A route's key names its kind in lower case.", key: RouteKey("HTTPRoute"), want: [4]bool{true, false, true, false}},
		"TCPRoute":       {reason: "Each route kind has a key of its own, so changing spec.kind deletes the old route.", key: RouteKey("TCPRoute"), want: [4]bool{true, false, true, false}},
		"Grant":          {reason: "A grant's key names its namespace.", key: GrantKey("monitoring"), want: [4]bool{false, true, true, false}},
		"PrimaryService": {reason: "The primary's proxy Service is ours.", key: KeyServicePrimary, want: [4]bool{false, false, true, false}},
		"CanaryService":  {reason: "The canary's proxy Service is ours.", key: KeyServiceCanary, want: [4]bool{false, false, true, false}},
		"BackendTLS":     {reason: "A side's BackendTLSPolicy is ours: a hold re-emits it.", key: KeyTLSCanary, want: [4]bool{false, false, true, false}},
		"OtherFunction":  {reason: "Another function's resource in the pipeline is none of ours.", key: "bucket", want: [4]bool{false, false, false, false}},
		"OtherService":   {reason: "A Service key of another function is not ours: only the two proxy Services are.", key: "service-cache", want: [4]bool{false, false, false, false}},
		"PrefixInside":   {reason: "The prefixes count only at the start of a key.", key: "my-route-httproute", want: [4]bool{false, false, false, false}},
		"Empty":          {reason: "An empty key is nobody's.", key: "", want: [4]bool{false, false, false, false}},
		"Preview":        {reason: "The preview route's key is a route's key, of its kind, and ours: a hold re-emits it.", key: PreviewKey("HTTPRoute"), want: [4]bool{true, false, true, true}},
		"PreviewGRPC":    {reason: "Each kind has a preview key of its own.", key: PreviewKey("GRPCRoute"), want: [4]bool{true, false, true, true}},
		"PreviewOfNone":  {reason: "A preview key names a kind.", key: "route--preview", want: [4]bool{true, false, true, false}},
		"EntryPreview":   {reason: "The preview of an entry of spec.routes is route-<kind>-<name>-preview: no entry's name ends in -preview.", key: EntryPreviewKey("HTTPRoute", "web"), want: [4]bool{true, false, true, true}},
		"EntryRoute":     {reason: "An entry's route is a route, not a preview.", key: EntryRouteKey("GRPCRoute", "grpc"), want: [4]bool{true, false, true, false}},
		"EntryGrant":     {reason: "An entry's grant is a grant.", key: EntryGrantKey("apps", "web"), want: [4]bool{false, true, true, false}},
		"PreviewPrefix":  {reason: "The preview's suffix counts only after the route's prefix.", key: "service-preview", want: [4]bool{false, false, false, false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := [4]bool{tc.key.IsRoute(), tc.key.IsGrant(), tc.key.Ours(), tc.key.IsPreview()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n%q: [IsRoute, IsGrant, Ours, IsPreview]: -want, +got:\n%s", tc.reason, tc.key, diff)
			}
		})
	}
}

func TestRouteKeys(t *testing.T) {
	cases := map[string]struct {
		reason string
		got    Key
		want   Key
	}{
		"Route":          {reason: "The contract's key of an HTTPRoute.", got: RouteKey("HTTPRoute"), want: "route-httproute"},
		"Preview":        {reason: "The preview route's key is the route's and -preview.", got: PreviewKey("HTTPRoute"), want: "route-httproute-preview"},
		"PreviewTLS":     {reason: "A TLSRoute's preview is keyed by its kind.", got: PreviewKey("TLSRoute"), want: "route-tlsroute-preview"},
		"Entry":          {reason: "The contract's key of an entry of spec.routes: route-<kind>-<name>.", got: EntryRouteKey("GRPCRoute", "grpc"), want: "route-grpcroute-grpc"},
		"EntryShorthand": {reason: "The shorthand's route keeps its key.", got: EntryRouteKey("HTTPRoute", ""), want: "route-httproute"},
		"EntryPreview":   {reason: "An entry's preview is its route's key and -preview.", got: EntryPreviewKey("HTTPRoute", "web"), want: "route-httproute-web-preview"},
		"EntryGrant":     {reason: "An entry's grant key names the namespace and the entry.", got: EntryGrantKey("apps", "web"), want: "referencegrant-apps.web"},
		"AnalysisObject": {reason: "An analysis object's key names its template.", got: AnalysisKey("smoke"), want: "analysis-smoke"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s\ngot %q, want %q", tc.reason, tc.got, tc.want)
			}
		})
	}
}
