package names

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeys(t *testing.T) {
	cases := map[string]struct {
		reason string
		key    Key
		want   [3]bool // IsRoute, IsGrant, Ours
	}{
		"HTTPRoute":      {reason: "A route's key names its kind in lower case.", key: RouteKey("HTTPRoute"), want: [3]bool{true, false, true}},
		"TCPRoute":       {reason: "Each route kind has a key of its own, so changing spec.kind deletes the old route.", key: RouteKey("TCPRoute"), want: [3]bool{true, false, true}},
		"Grant":          {reason: "A grant's key names its namespace.", key: GrantKey("monitoring"), want: [3]bool{false, true, true}},
		"PrimaryService": {reason: "The primary's proxy Service is ours.", key: KeyServicePrimary, want: [3]bool{false, false, true}},
		"CanaryService":  {reason: "The canary's proxy Service is ours.", key: KeyServiceCanary, want: [3]bool{false, false, true}},
		"BackendTLS":     {reason: "A side's BackendTLSPolicy is ours: a hold re-emits it.", key: KeyTLSCanary, want: [3]bool{false, false, true}},
		"OtherFunction":  {reason: "Another function's resource in the pipeline is none of ours.", key: "bucket", want: [3]bool{false, false, false}},
		"OtherService":   {reason: "A Service key of another function is not ours: only the two proxy Services are.", key: "service-cache", want: [3]bool{false, false, false}},
		"PrefixInside":   {reason: "The prefixes count only at the start of a key.", key: "my-route-httproute", want: [3]bool{false, false, false}},
		"Empty":          {reason: "An empty key is nobody's.", key: "", want: [3]bool{false, false, false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := [3]bool{tc.key.IsRoute(), tc.key.IsGrant(), tc.key.Ours()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n%q: [IsRoute, IsGrant, Ours]: -want, +got:\n%s", tc.reason, tc.key, diff)
			}
		})
	}
}
