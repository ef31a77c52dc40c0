package xr

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// previewCases are the cases of TestParsePreview: traffic.preview on the
// base XR turned progressive.
func previewCases() map[string]specCase {
	type args = specArgs
	type want = specWant
	progressive := []patch{del("spec.traffic.weight"), set("spec.traffic.steps", "[{weight: 0, approval: true}, {weight: 100}]"), set("spec.canary.revision", "v2")}
	with := func(more ...patch) []patch { return append(append([]patch{}, progressive...), more...) }
	preview := func(hostnames string) patch { return set("spec.traffic.preview", "{hostnames: "+hostnames+"}") }
	pickPreview := func(cr *CanaryRoute) any { return cr.Spec.Traffic.Preview }
	duplicate := func(path string) fieldErr { return fieldErr{Field: path, Type: field.ErrorTypeDuplicate} }

	return map[string]specCase{
		"None": {
			reason: "Without traffic.preview there is no preview.",
			args:   args{patches: progressive, pick: pickPreview},
			want:   want{value: (*Preview)(nil)},
		},
		"Hostnames": {
			reason: "The preview's hostnames are kept as written, in their order.",
			args:   args{patches: with(preview("[preview.example.com, '*.preview.example.com']")), pick: pickPreview},
			want:   want{value: &Preview{Hostnames: []gwv1.Hostname{"preview.example.com", "*.preview.example.com"}}},
		},
		"RouteWithoutHostnames": {
			reason: "A route that names no hostnames takes every host: a preview hostname is more specific, and the preview's.",
			args:   args{patches: with(del("spec.hostnames"), preview("[preview.example.com]")), pick: pickPreview},
			want:   want{value: &Preview{Hostnames: []gwv1.Hostname{"preview.example.com"}}},
		},
		"WildcardOfTheRoute": {
			reason: "A preview hostname under a wildcard of the main route's is more specific, and the preview's.",
			args:   args{patches: with(set("spec.hostnames", "['*.example.com']"), preview("[preview.example.com]")), pick: pickPreview},
			want:   want{value: &Preview{Hostnames: []gwv1.Hostname{"preview.example.com"}}},
		},
		"GRPCRoute": {
			reason: "A GRPCRoute has hostnames, so a preview.",
			args:   args{patches: with(set("spec.kind", "GRPCRoute"), preview("[preview.example.com]")), pick: pickPreview},
			want:   want{value: &Preview{Hostnames: []gwv1.Hostname{"preview.example.com"}}},
		},
		"TLSRoute": {
			reason: "A TLSRoute routes by SNI: its preview is a hostname of its own.",
			args:   args{patches: with(set("spec.kind", "TLSRoute"), preview("[preview.example.com]")), pick: pickPreview},
			want:   want{value: &Preview{Hostnames: []gwv1.Hostname{"preview.example.com"}}},
		},
		"TCPRoute": {
			reason: "A TCPRoute has no hostnames: a preview is a Fatal naming the field.",
			args:   args{patches: with(set("spec.kind", "TCPRoute"), del("spec.hostnames"), preview("[preview.example.com]"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.preview", "a TCPRoute has no hostnames")}},
		},
		"UDPRoute": {
			reason: "A UDPRoute has no hostnames, like a TCPRoute.",
			args:   args{patches: with(set("spec.kind", "UDPRoute"), del("spec.hostnames"), preview("[preview.example.com]"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.preview", "a UDPRoute has no hostnames")}},
		},
		"HostnameOfTheRoute": {
			reason: "A hostname the main route names would be the main route's: a Fatal naming the preview's hostname and the route's.",
			args:   args{patches: with(set("spec.hostnames", "[www.example.com, api.example.com]"), preview("[preview.example.com, api.example.com]"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.preview.hostnames[1]", "is also spec.hostnames[1]")}},
		},
		"Duplicates": {
			reason: "A hostname twice is refused, as the XRD's list set does.",
			args:   args{patches: with(preview("[preview.example.com, preview.example.com]"))},
			want:   want{errs: []fieldErr{duplicate("spec.traffic.preview.hostnames[1]")}},
		},
		"Empty": {
			reason: "A preview names at least one hostname.",
			args:   args{patches: with(preview("[]"))},
			want:   want{errs: []fieldErr{required("spec.traffic.preview.hostnames", "1 to 16 hostnames")}},
		},
		"TooMany": {
			reason: "A preview names at most 16 hostnames, as spec.hostnames.",
			args:   args{patches: with(preview(listf(17, "p%d.example.com")))},
			want:   want{errs: []fieldErr{tooMany("spec.traffic.preview.hostnames", 16)}},
		},
		"BadHostname": {
			reason: "A preview hostname is a Gateway API hostname, checked as the CRDs would.",
			args:   args{patches: with(preview("[Preview_Example]"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.preview.hostnames[0]", "")}},
		},
		"ManualMode": {
			reason: "A preview shows the canary while a rollout is active: manual mode has no rollout.",
			args:   args{patches: []patch{preview("[preview.example.com]")}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.preview", "it needs traffic.steps")}},
		},
		"LongRouteName": {
			reason: "The preview route is <routeName>-preview: a route name that leaves no room for the suffix is a Fatal naming it.",
			args:   args{patches: with(set("spec.routeName", strings.Repeat("a", 246)), set("spec.primary", "{backendRef: {name: primary, port: 80}}"), preview("[preview.example.com]"))},
			want:   want{errs: []fieldErr{invalid("spec.routeName", "the preview route would be named <route name>-preview, 254 characters")}},
		},
		"LongRouteNameWithoutPreview": {
			reason: "Without a preview, the route's name may be as long as a name holds.",
			args:   args{patches: with(set("spec.routeName", strings.Repeat("a", 253)), set("spec.primary", "{backendRef: {name: primary, port: 80}}")), pick: pickPreview},
			want:   want{value: (*Preview)(nil)},
		},
	}
}

func TestParsePreview(t *testing.T) {
	runParseCases(t, previewCases())
}

func TestPreviewRouteName(t *testing.T) {
	if got, want := PreviewRouteName("podinfo"), "podinfo-preview"; got != want {
		t.Errorf("PreviewRouteName(%q): got %q, want %q", "podinfo", got, want)
	}
}
