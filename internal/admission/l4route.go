package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Limits of TLSRoute, TCPRoute and UDPRoute: v1 has exactly one rule,
// v1alpha2 up to 16.
const (
	maxL4RulesV1       = 1
	maxL4RulesV1Alpha2 = 16
)

// TLSRoute validates a TLSRoute v1 as both Gateway API channels would.
func TLSRoute(r *gwv1.TLSRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, true)...)
	errs = append(errs, TLSHostnames(spec.Child("hostnames"), r.Spec.Hostnames)...)
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1, true)...)
}

// TCPRoute validates a TCPRoute v1 as both Gateway API channels would.
func TCPRoute(r *gwv1.TCPRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, true)...)
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1, true)...)
}

// UDPRoute validates a UDPRoute v1 as both Gateway API channels would. Its
// schema is TCPRoute's.
func UDPRoute(r *gwv1.UDPRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, true)...)
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1, true)...)
}

// TLSRouteV1Alpha2 validates a TLSRoute v1alpha2, which only the
// experimental channel serves, against that version's schema: up to 16
// rules with unique names, and hostnames without the v1 CEL rules.
func TLSRouteV1Alpha2(r *gwv1alpha2.TLSRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, false)...)
	if n := len(r.Spec.Hostnames); n > maxTLSHostnames {
		errs = append(errs, field.TooMany(spec.Child("hostnames"), n, maxTLSHostnames))
	} else {
		p := spec.Child("hostnames")
		for i, h := range r.Spec.Hostnames {
			errs = append(errs, strHostname.checkIndex(p, i, string(h))...)
		}
	}
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	// rules has no omitempty: a nil list is sent as null, which the API
	// server drops, then finds the required field missing.
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1Alpha2, r.Spec.Rules == nil)...)
}

// TCPRouteV1Alpha2 validates a TCPRoute v1alpha2, which only the
// experimental channel serves, against that version's schema.
func TCPRouteV1Alpha2(r *gwv1alpha2.TCPRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, false)...)
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1Alpha2, true)...)
}

// UDPRouteV1Alpha2 validates a UDPRoute v1alpha2, which only the
// experimental channel serves, against that version's schema (TCPRoute
// v1alpha2's).
func UDPRouteV1Alpha2(r *gwv1alpha2.UDPRoute) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &r.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, commonRouteSpec(spec, &r.Spec.CommonRouteSpec, false)...)
	names, refs := make([]*gwv1.SectionName, len(r.Spec.Rules)), make([][]gwv1.BackendRef, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i], refs[i] = r.Spec.Rules[i].Name, r.Spec.Rules[i].BackendRefs
	}
	// Unlike TCPRoute v1alpha2's, rules has no omitempty: a nil list is
	// sent as null, which the API server drops, then finds the required
	// field missing; an empty one is sent as such.
	return append(errs, l4Rules(spec.Child("rules"), names, refs, maxL4RulesV1Alpha2, r.Spec.Rules == nil)...)
}

// l4Rules validates the rules of a TLSRoute, TCPRoute or UDPRoute, given as
// their names and backendRefs. emptyIsMissing tells whether an empty list is
// omitted (omitempty, or nil without it), so that the required field is
// missing, rather than sent as an empty list.
func l4Rules(path *field.Path, names []*gwv1.SectionName, refs [][]gwv1.BackendRef, maxItems int, emptyIsMissing bool) field.ErrorList {
	switch n := len(names); {
	case n == 0 && emptyIsMissing:
		return field.ErrorList{field.Required(path, "")}
	case n == 0:
		return field.ErrorList{field.Invalid(path, 0, "should have at least 1 items")}
	case n > maxItems:
		return field.ErrorList{field.TooMany(path, n, maxItems)}
	}
	var errs field.ErrorList
	for i := range names {
		p := path.Index(i)
		if names[i] != nil {
			errs = append(errs, strSectionName.check(p, "name", string(*names[i]))...)
		}
		errs = append(errs, BackendRefs(p.Child("backendRefs"), refs[i])...)
	}
	return append(errs, ruleNames(path, names)...)
}

// ReferenceGrant validates a ReferenceGrant v1.
func ReferenceGrant(g *gwv1.ReferenceGrant) field.ErrorList {
	errs := ObjectMeta(field.NewPath("metadata"), &g.ObjectMeta)
	spec := field.NewPath("spec")
	errs = append(errs, grantPeers(spec.Child("from"), len(g.Spec.From), g.Spec.From == nil)...)
	if n := len(g.Spec.From); n > 0 && n <= maxGrantPeers {
		p := spec.Child("from")
		for i := range g.Spec.From {
			f := &g.Spec.From[i]
			fp := p.Index(i)
			errs = append(errs, strGroup.check(fp, "group", string(f.Group))...)
			errs = append(errs, strKind.check(fp, "kind", string(f.Kind))...)
			errs = append(errs, strNamespace.check(fp, "namespace", string(f.Namespace))...)
		}
	}
	errs = append(errs, grantPeers(spec.Child("to"), len(g.Spec.To), g.Spec.To == nil)...)
	if n := len(g.Spec.To); n > 0 && n <= maxGrantPeers {
		p := spec.Child("to")
		for i := range g.Spec.To {
			t := &g.Spec.To[i]
			tp := p.Index(i)
			errs = append(errs, strGroup.check(tp, "group", string(t.Group))...)
			errs = append(errs, strKind.check(tp, "kind", string(t.Kind))...)
			if t.Name != nil {
				errs = append(errs, strObjectName.check(tp, "name", string(*t.Name))...)
			}
		}
	}
	return errs
}

// ReferenceGrantV1Beta1 validates a ReferenceGrant v1beta1, a distinct Go
// type with the same fields and the same schema as v1.
func ReferenceGrantV1Beta1(g *gwv1beta1.ReferenceGrant) field.ErrorList {
	return ReferenceGrant((*gwv1.ReferenceGrant)(g))
}

// grantPeers validates the length of from or to: required (a nil list is
// sent as null, which the API server drops) with 1 to 16 items.
func grantPeers(path *field.Path, n int, isNil bool) field.ErrorList {
	switch {
	case isNil:
		return field.ErrorList{field.Required(path, "")}
	case n == 0:
		return field.ErrorList{field.Invalid(path, 0, "should have at least 1 items")}
	case n > maxGrantPeers:
		return field.ErrorList{field.TooMany(path, n, maxGrantPeers)}
	}
	return nil
}
