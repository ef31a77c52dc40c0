package xr

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Several routes, one rollout (spec.routes). Each entry is parsed as the
// single-route shorthand would be with that entry's kind, parents,
// hostnames, port and rules, so that every check of one route holds for
// each; what depends on the route's kind (a side's filters, the traffic's
// matches, mirror, session affinity and preview) is the entry's own. A
// run works on one view of the CanaryRoute per route (Views): the
// CanaryRoute with that route's fields, the same sides, weights and status.

// MaxRoutes is the most routes spec.routes holds.
var MaxRoutes = limit("spec.routes")

// An Entry is one route of spec.routes, parsed.
type Entry struct {
	// Name is the entry's name: the route is named <routeName>-<name>.
	Name       string
	Kind       RouteKind
	ParentRefs []gwv1.ParentReference
	Hostnames  []gwv1.Hostname
	// Port is the route's port on the sides (spec.port unless the entry
	// sets its own; PortSet then).
	Port    int32
	PortSet bool
	Rules   []Rule
	// Primary, Canary and Traffic are the spec's, parsed for this route's
	// kind: a view takes their kind's fields (filters, matches, mirror,
	// session affinity, preview).
	Primary, Canary Side
	Traffic         Traffic
}

// EntryRouteName is the name of the route of an entry of spec.routes;
// the route name itself for the shorthand's route (entry "").
func EntryRouteName(routeName, entry string) string {
	if entry == "" {
		return routeName
	}
	return routeName + "-" + entry
}

// ComposedRouteName is the name of the route this CanaryRoute (or this
// view of it) composes.
func (cr *CanaryRoute) ComposedRouteName() string { return EntryRouteName(cr.RouteName, cr.Entry) }

// MultiRoute reports whether the spec is written with spec.routes.
func (s Spec) MultiRoute() bool { return len(s.Entries) > 0 }

// Views are the CanaryRoute as each of its routes sees it, in spec.routes'
// order: the CanaryRoute itself for the shorthand. A view shares
// everything but its route's fields with the CanaryRoute: its sides'
// selectors (a release's revisions), its traffic's steps and weights, its
// status.
func (cr *CanaryRoute) Views() []*CanaryRoute {
	if !cr.Spec.MultiRoute() {
		return []*CanaryRoute{cr}
	}
	out := make([]*CanaryRoute, 0, len(cr.Spec.Entries))
	for _, e := range cr.Spec.Entries {
		out = append(out, cr.view(e))
	}
	return out
}

// view is the CanaryRoute with an entry's route fields.
func (cr *CanaryRoute) view(e Entry) *CanaryRoute {
	v := *cr
	v.Entry = e.Name
	s := cr.Spec
	s.Kind, s.ParentRefs, s.Hostnames, s.Rules = e.Kind, e.ParentRefs, e.Hostnames, e.Rules
	s.Port, s.RoutePort = e.Port, 0
	if e.PortSet {
		s.RoutePort = e.Port
	}
	// The sides' sources (a release's selectors) and their tls are the
	// spec's: one proxy Service and one BackendTLSPolicy serve every route.
	s.Primary.HTTPFilters, s.Primary.GRPCFilters = e.Primary.HTTPFilters, e.Primary.GRPCFilters
	s.Canary.HTTPFilters, s.Canary.GRPCFilters = e.Canary.HTTPFilters, e.Canary.GRPCFilters
	t := s.Traffic
	t.HTTPMatches, t.GRPCMatches, t.Mirror, t.Affinity, t.Preview = e.Traffic.HTTPMatches, e.Traffic.GRPCMatches, e.Traffic.Mirror, e.Traffic.Affinity, e.Traffic.Preview
	t.Steps = e.Traffic.Steps
	s.Traffic = t
	v.Spec = s
	return &v
}

// DigestView is the view of the CanaryRoute that the canary's digest is
// taken on (a change of the digest restarts a progressive rollout): the
// CanaryRoute itself for the shorthand; with spec.routes, the first
// HTTPRoute's view (else the first GRPCRoute's, else the first route's),
// at spec.port rather than a route's own port. The digest then says what
// the canary is, never the routes' order nor their ports: reordering
// spec.routes, adding a route or moving a route to a port of its own is no
// new canary; and an HTTPRoute written as the shorthand or as an entry has
// the same digest.
func (cr *CanaryRoute) DigestView() *CanaryRoute {
	if !cr.Spec.MultiRoute() {
		return cr
	}
	entries := cr.Spec.Entries
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.Kind == KindHTTPRoute })
	if i < 0 {
		i = max(0, slices.IndexFunc(entries, func(e Entry) bool { return e.Kind == KindGRPCRoute }))
	}
	v := cr.view(entries[i])
	// spec.port is every route's that has no port of its own; when every
	// route has one, no route reaches the sides on spec.port.
	v.Spec.Port, v.Spec.RoutePort = 0, 0
	if j := slices.IndexFunc(entries, func(e Entry) bool { return !e.PortSet }); j >= 0 {
		v.Spec.Port = entries[j].Port
	}
	return v
}

// parseRoutes parses a spec written with spec.routes: each entry as the
// shorthand with the entry's route fields, the spec's other fields for
// the kind of the first HTTPRoute or GRPCRoute (else of the first route),
// whose parse the Spec is. Where a route's kind has no such field (a
// TCPRoute has no matches, filters or preview), that route goes without;
// an error of another route's parse names the route.
func parseRoutes(path *field.Path, raw *rawSpec, defaultParentRefs []gwv1.ParentReference) (Spec, field.ErrorList) {
	routesPath := path.Child("routes")
	var errs field.ErrorList
	if (raw.Kind != "" && raw.Kind != KindHTTPRoute) || len(raw.ParentRefs) > 0 || len(raw.Hostnames) > 0 || len(raw.Rules) > 0 {
		errs = append(errs, field.Forbidden(routesPath, "set either routes or the single route's kind, parentRefs, hostnames and rules, not both"))
	}
	if len(raw.Routes) > MaxRoutes {
		return Spec{}, append(errs, field.TooMany(routesPath, len(raw.Routes), MaxRoutes))
	}
	main := 0
	for i, r := range raw.Routes {
		if k := r.Kind; k == "" || k == KindHTTPRoute || k == KindGRPCRoute {
			main = i
			break
		}
	}
	seen := map[string]bool{}
	specs := make([]Spec, len(raw.Routes))
	var mainErrs field.ErrorList
	for i, r := range raw.Routes {
		errs = append(errs, entryName(routesPath.Index(i).Child("name"), r.Name, seen)...)
		one := entryRaw(raw, r, i != main)
		s, oneErrs := parseOne(path, one, defaultParentRefs)
		oneErrs = repath(oneErrs, routesPath.Index(i), r.Port != nil)
		specs[i] = s
		if i == main {
			mainErrs = oneErrs
		}
		if len(oneErrs) > 0 && !slices.Contains(RouteKinds, s.Kind) {
			return Spec{}, append(errs, oneErrs...)
		}
		if i != main {
			// What the main route's parse says already, said once.
			for _, e := range oneErrs {
				if !slices.ContainsFunc(mainErrs, func(m *field.Error) bool { return sameError(m, e) }) {
					c := *e
					c.Detail = fmt.Sprintf("for route %q (%s): %s", r.Name, s.Kind, c.Detail)
					errs = append(errs, &c)
				}
			}
		}
	}
	// Errors in spec.routes' order, the main route's first.
	errs = append(mainErrs, errs...)
	s := specs[main]
	s.Entries = make([]Entry, len(raw.Routes))
	for i, r := range raw.Routes {
		e := specs[i]
		s.Entries[i] = Entry{
			Name: r.Name, Kind: e.Kind, ParentRefs: e.ParentRefs, Hostnames: e.Hostnames,
			Port: e.Port, PortSet: r.Port != nil, Rules: e.Rules,
			Primary: e.Primary, Canary: e.Canary, Traffic: e.Traffic,
		}
	}
	// The spec's own route fields are the main route's; spec.port is the
	// spec's.
	s.Port = 0
	if raw.Port != nil {
		s.Port = *raw.Port
	}
	return s, errs
}

// entryRaw is an entry of spec.routes as the shorthand would write it: the
// spec with the entry's route fields. strip drops what the entry's kind
// does not have (a stream route has no filters, matches, mirror, session
// affinity or backend TLS; a TCPRoute or UDPRoute no preview, a GRPCRoute
// no cookies of the function's): the main route's parse checks them.
func entryRaw(raw *rawSpec, r rawRoute, strip bool) *rawSpec {
	one := *raw
	one.Routes = nil
	one.Kind, one.ParentRefs, one.Hostnames, one.Rules = r.Kind, r.ParentRefs, r.Hostnames, r.Rules
	if r.Port != nil {
		one.Port = r.Port
	}
	if !strip {
		return &one
	}
	kind := r.Kind
	if kind == "" {
		kind = KindHTTPRoute
	}
	if kind.Streams() {
		one.Primary, one.Canary = stripSide(raw.Primary), stripSide(raw.Canary)
	}
	if t := raw.Traffic; t != nil {
		c := *t
		if kind.Streams() {
			c.Matches, c.Mirror, c.SessionAffinity = nil, nil, nil
			c.Steps = slices.Clone(c.Steps)
			for i := range c.Steps {
				c.Steps[i].Matches, c.Steps[i].Mirror = nil, nil
			}
		}
		if kind == KindTCPRoute || kind == KindUDPRoute {
			c.Preview = nil
		}
		if a := c.SessionAffinity; a != nil && kind != KindHTTPRoute && a.Mode != AffinitySessionPersistence {
			c.SessionAffinity = nil
		}
		one.Traffic = &c
	}
	return &one
}

// stripSide is a side without what only HTTPRoutes and GRPCRoutes carry.
func stripSide(s *rawSide) *rawSide {
	if s == nil {
		return nil
	}
	c := *s
	c.Filters, c.TLS = nil, nil
	return &c
}

// entryName checks an entry's name: a DNS-1123 label, unique, and not a
// preview route's.
func entryName(path *field.Path, name string, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if name == "preview" || strings.HasSuffix(name, previewSuffix) {
		errs = append(errs, field.Invalid(path, name, "preview and names ending in -preview are the preview routes' names"))
	}
	if seen[name] {
		errs = append(errs, field.Duplicate(path, name))
	}
	seen[name] = true
	return errs
}

// entryFields are the fields of spec an entry of spec.routes writes.
var entryFields = []string{"kind", "parentRefs", "hostnames", "rules"}

// repath names an entry's fields in the errors of its parse:
// spec.rules[0] is spec.routes[i].rules[0], and spec.port the entry's when
// it sets one.
func repath(errs field.ErrorList, entry *field.Path, ownPort bool) field.ErrorList {
	fields := entryFields
	if ownPort {
		fields = append(slices.Clip(fields), "port")
	}
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		for _, f := range fields {
			if rest, ok := strings.CutPrefix(c.Field, "spec."+f); ok && (rest == "" || rest[0] == '[' || rest[0] == '.') {
				c.Field = entry.Child(f).String() + rest
				break
			}
		}
		// A detail that names another of the entry's fields (a preview
		// hostname "is also spec.hostnames[0]") names the entry's.
		for _, f := range fields {
			c.Detail = strings.ReplaceAll(c.Detail, "spec."+f+"[", entry.Child(f).String()+"[")
		}
		out = append(out, &c)
	}
	return out
}

// sameError reports whether two errors say the same of the same field.
func sameError(a, b *field.Error) bool {
	return a.Type == b.Type && a.Field == b.Field && a.Detail == b.Detail
}

// routeNames refuses route names that are not valid names: an entry's
// <routeName>-<name> longer than a DNS-1123 subdomain, or its preview
// route's. path is spec's.
func routeNames(path *field.Path, routeName string, s Spec) field.ErrorList {
	var errs field.ErrorList
	for i, e := range s.Entries {
		name := EntryRouteName(routeName, e.Name)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(path.Child("routes").Index(i).Child("name"), e.Name,
				fmt.Sprintf("the route would be named %q (<route name>-<name>), which is invalid: %s", name, msg)))
		}
		if e.Traffic.Preview == nil {
			continue
		}
		if preview := PreviewRouteName(name); len(preview) > validation.DNS1123SubdomainMaxLength {
			errs = append(errs, field.Invalid(path.Child("routes").Index(i).Child("name"), e.Name, fmt.Sprintf(
				"with spec.traffic.preview, its preview route would be named <route name>-<name>%s, %d characters, more than the %d a route's name holds",
				previewSuffix, len(preview), validation.DNS1123SubdomainMaxLength)))
		}
	}
	return errs
}

// RepathErrors names, in the errors of a view's checks, the fields of its
// entry of spec.routes where they say spec's: spec.rules[0] is
// spec.routes[i].rules[0]. The CanaryRoute itself's errors are as they are.
func (cr *CanaryRoute) RepathErrors(errs field.ErrorList) field.ErrorList {
	if cr.Entry == "" || len(errs) == 0 {
		return errs
	}
	i := slices.IndexFunc(cr.Spec.Entries, func(e Entry) bool { return e.Name == cr.Entry })
	if i < 0 {
		return errs
	}
	return repath(errs, field.NewPath("spec", "routes").Index(i), cr.Spec.Entries[i].PortSet)
}
