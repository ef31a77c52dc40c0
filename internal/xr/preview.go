package xr

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// previewSuffix ends the name of the preview route.
const previewSuffix = "-preview"

// PreviewRouteName is the name of the preview route of a route: the
// route's name and -preview.
func PreviewRouteName(routeName string) string { return routeName + previewSuffix }

// maxPreviewHostnames is the most hostnames traffic.preview holds.
var maxPreviewHostnames = limit("spec.traffic.preview.hostnames")

// parsePreview reads traffic.preview. Its hostnames are the preview route's
// own: a route kind without hostnames (TCPRoute, UDPRoute) has no preview,
// and a hostname of the main route would be the main route's (Gateway API
// gives a request to the route with the most specific matching hostname,
// and between two alike, to the older route), so none may be one of
// spec.hostnames. The preview shows the canary while a rollout is active:
// it needs steps.
func parsePreview(path *field.Path, s Spec, raw *rawPreview) (*Preview, field.ErrorList) {
	if raw == nil {
		return nil, nil
	}
	if s.Kind == KindTCPRoute || s.Kind == KindUDPRoute {
		return nil, field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"a %s has no hostnames: the preview route is a route of its own hostnames (HTTPRoute, GRPCRoute, TLSRoute)", s.Kind))}
	}
	var errs field.ErrorList
	if !s.Traffic.Progressive() {
		errs = append(errs, field.Forbidden(path, "a preview shows the canary while a rollout is active: it needs traffic.steps"))
	}
	hostsPath := path.Child("hostnames")
	switch n := len(raw.Hostnames); {
	case n == 0:
		return nil, append(errs, field.Required(hostsPath, "name 1 to 16 hostnames of the preview route"))
	case n > maxPreviewHostnames:
		return nil, append(errs, field.TooMany(hostsPath, n, maxPreviewHostnames))
	}
	errs = append(errs, validateHostnames(hostsPath, s.Kind, raw.Hostnames)...)
	for i, h := range raw.Hostnames {
		if j := slices.Index(raw.Hostnames[:i], h); j >= 0 {
			errs = append(errs, field.Duplicate(hostsPath.Index(i), h))
			continue
		}
		if j := slices.Index(s.Hostnames, h); j >= 0 {
			errs = append(errs, field.Invalid(hostsPath.Index(i), h, fmt.Sprintf(
				"is also spec.hostnames[%d]: the main route would take its requests; a preview hostname is one the main route does not name", j)))
		}
	}
	return &Preview{Hostnames: slices.Clone(raw.Hostnames)}, errs
}

// previewName refuses a route name whose preview route's name would not be
// a valid name: longer than a DNS-1123 subdomain holds. path is spec's.
func previewName(path *field.Path, routeName string, s Spec) field.ErrorList {
	if s.Traffic.Preview == nil || s.MultiRoute() {
		return nil // spec.routes: see routeNames.
	}
	name := PreviewRouteName(routeName)
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("routeName"), routeName, fmt.Sprintf(
		"with spec.traffic.preview, the preview route would be named <route name>%s, %d characters, more than the %d a route's name holds: shorten the route name (spec.routeName, else the claim's or the CanaryRoute's name)",
		previewSuffix, len(name), validation.DNS1123SubdomainMaxLength))}
}

// PreviewHostnames are the hostnames of the preview route; nil without a
// preview.
func (t Traffic) PreviewHostnames() []gwv1.Hostname {
	if t.Preview == nil {
		return nil
	}
	return t.Preview.Hostnames
}
