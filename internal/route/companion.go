package route

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// Companion rules and the Gateway API's precedence.
//
// A weighted rule's companions each narrow its matches with conditions of
// one intent: the A/B matches (to the canary), the canary's session cookie
// (to the canary), the primary's session cookie (to the primary), the
// mirror's matches (the weighted backends, mirrored). A request may meet
// the conditions of several intents; the gateway then picks the match that
// ranks first (HTTPRoute: path, then method, then the number of header
// matches, then of query parameter matches; GRPCRoute: the characters of
// the service and of the method, then the number of header matches), and on
// a tie the first rule. There is no negative match, so the ranks of the
// conditions, not their intent, would decide: a mirror limited to GETs
// outranks a session cookie (a method outranks any number of headers).
//
// The intents rank, from first to last: A/B, the canary's cookie, the
// primary's cookie, the mirror; a request gets the fate of the first intent
// it meets, and it is mirrored when it meets the mirror's matches (or the
// mirror has none) unless it goes to the canary alone, which serves it
// anyway. So that the ranks never overturn that order, the companion of an
// intent also carries the matches of the requests that meet it together
// with a later intent: each such match has the conditions of both, so it
// ranks at least as high as either, and the companion of the earlier intent
// comes first in the route. A combination that cannot rank higher than the
// earlier intent's own match is left out: it would change nothing.
//
//   - the A/B companion: A/B x mirror, A/B x primary cookie, and A/B x
//     primary cookie x mirror;
//   - the canary's session companion: cookie x mirror;
//   - the primary's session companion that mirrors (composed only when the
//     mirror has matches): primary cookie x mirror.
//
// A request with both cookies meets two matches of one rank (each adds one
// Cookie header condition), and the canary's session companion comes first.

// matchOps are what the companions need of a route kind's matches.
type matchOps[M any] struct {
	// both is the match of the requests that meet a and b: ok is false
	// when no request meets both; why says why one match cannot say it.
	both func(a, b M) (m M, ok bool, why string)
	// rank is a match's rank in the Gateway API's precedence, for matches
	// of one path (of one rule's match).
	rank func(M) rank
}

// rank is a match's rank after its path, first criterion first (HTTPRoute:
// a method match, header matches, query parameter matches; GRPCRoute: the
// characters of the service and of the method, header matches), and the
// criterion that a header match counts toward.
type rank struct {
	of     [3]int
	header int
	// unknown is set where the Gateway API leaves the rank to the
	// implementation (a regular expression of a GRPCRoute method).
	unknown bool
}

// withCookie is the rank of a match with a session cookie condition: one
// header match more.
func (r rank) withCookie() rank {
	r.of[r.header]++
	return r
}

// atLeast reports whether r certainly ranks at or above o.
func (r rank) atLeast(o rank) bool {
	if r.unknown || o.unknown {
		return false
	}
	for i := range r.of {
		if r.of[i] != o.of[i] {
			return r.of[i] > o.of[i]
		}
	}
	return true
}

// crossInput is what the companions of one weighted rule are made of.
type crossInput[M any] struct {
	// base are the rule's matches: one match without conditions for a
	// GRPCRoute rule without matches.
	base []M
	// ab is base x the A/B matches (nil without an A/B companion), at
	// i*nAB+j; mirror is base x the mirror's matches (nil without a mirror
	// companion), at i*nMirror+k.
	ab       []M
	nAB      int
	mirror   []M
	nMirror  int
	abPath   *field.Path
	mirrorTo *field.Path
	// canaryCookie and primaryCookie add the session cookie condition of
	// a side: nil without that side's session companion.
	canaryCookie, primaryCookie func(M) M
}

// crossed are the matches that the companions carry for requests that meet
// the conditions of two intents or more.
type crossed[M any] struct {
	// ab joins the A/B companion, session the canary's session companion,
	// primaryMirror makes the primary's session companion that mirrors.
	ab, session, primaryMirror []M
	// abBeyond counts the crossed matches of the A/B companion that were
	// not built: it had more than a rule may hold already.
	abBeyond int
}

// cross computes the crossed matches of a weighted rule's companions. Its
// work is bounded: whether a crossed match is needed is decided on ranks,
// and the A/B companion's (the rule's matches times the A/B matches times
// the mirror's) are built only up to what a rule may hold.
func cross[M any](ops matchOps[M], in crossInput[M]) (crossed[M], field.ErrorList) {
	c := crosser[M]{ops: ops, in: in, reported: map[[2]int]bool{}}
	for i := range in.base {
		for j := 0; in.ab != nil && j < in.nAB; j++ {
			c.withAB(i, j)
		}
		for k := 0; in.mirror != nil && k < in.nMirror; k++ {
			c.withMirror(i, k)
		}
	}
	return c.out, c.errs
}

// crosser computes crossed matches, one rule's match at a time.
type crosser[M any] struct {
	ops  matchOps[M]
	in   crossInput[M]
	out  crossed[M]
	errs field.ErrorList
	// reported are the pairs of A/B and mirror matches already refused.
	reported map[[2]int]bool
}

// needed reports whether a crossed match is needed: whether a match of
// another fate (zs) that the same requests meet could outrank every match
// of its own fate (ys) that they meet. Plain loops over small arrays: it
// runs for every combination of the rule's, the A/B and the mirror's
// matches.
func needed(zs []rank, ys ...rank) bool {
	for _, z := range zs {
		dominated := false
		for _, y := range ys {
			if y.atLeast(z) {
				dominated = true
				break
			}
		}
		if !dominated {
			return true
		}
	}
	return false
}

// full reports whether the A/B companion holds more matches than a rule
// may already: the crossed matches after that are counted, not built.
func (c *crosser[M]) full() bool {
	if len(c.out.ab)+len(c.in.ab) > maxMatchesPerRule {
		c.out.abBeyond++
		return true
	}
	return false
}

// both is the match of the requests that meet the A/B match j and the
// mirror match k, at the rule's match of y and z: ok is false when no
// request meets both, or one match cannot say it (an error, reported once
// per pair).
func (c *crosser[M]) both(y, z M, j, k int) (M, bool) {
	x, ok, why := c.ops.both(y, z)
	if why != "" && !c.reported[[2]int{j, k}] {
		c.reported[[2]int{j, k}] = true
		c.errs = append(c.errs, field.Forbidden(c.in.mirrorTo.Index(k), fmt.Sprintf(
			"a request may meet both this mirror match and %s, and the companion rule that keeps it on the canary would need one match for both: %s", c.in.abPath.Index(j), why)))
	}
	return x, ok && why == ""
}

// withAB adds the A/B companion's crossed matches of the rule's match i and
// the A/B match j: with each mirror match, with the primary's cookie, and
// with both.
func (c *crosser[M]) withAB(i, j int) {
	in := c.in
	m, y := in.base[i], in.ab[i*in.nAB+j]
	rm, ry := c.ops.rank(m), c.ops.rank(y)
	// A/B x mirror, by mirror match: built where needed; the ranks of
	// those built.
	var built map[int]rank
	for k := 0; in.mirror != nil && k < in.nMirror; k++ {
		z := in.mirror[i*in.nMirror+k]
		if !needed([]rank{c.ops.rank(z)}, ry) || c.full() {
			continue
		}
		if x, ok := c.both(y, z, j, k); ok {
			c.out.ab = append(c.out.ab, x)
			if built == nil {
				built = map[int]rank{}
			}
			built[k] = c.ops.rank(x)
		}
	}
	if in.primaryCookie == nil {
		return
	}
	keptPrimary := needed([]rank{rm.withCookie()}, ry)
	if keptPrimary && !c.full() {
		c.out.ab = append(c.out.ab, in.primaryCookie(y))
	}
	for k := 0; in.mirror != nil && k < in.nMirror; k++ {
		z := in.mirror[i*in.nMirror+k]
		rz := c.ops.rank(z)
		ys := [3]rank{ry, ry, ry}
		if r, ok := built[k]; ok {
			ys[1] = r
		}
		if keptPrimary {
			ys[2] = ry.withCookie()
		}
		if !needed([]rank{rm.withCookie(), rz, rz.withCookie()}, ys[:]...) || c.full() {
			continue
		}
		if x, ok := c.both(y, z, j, k); ok {
			c.out.ab = append(c.out.ab, in.primaryCookie(x))
		}
	}
}

// withMirror adds the session companions' crossed matches of the rule's
// match i and the mirror match k: the canary's cookie with it, where it
// could outrank the cookie alone (or tie with the primary's cookie and the
// mirror match), and the primary's cookie with it, which mirrors.
func (c *crosser[M]) withMirror(i, k int) {
	in := c.in
	m, z := in.base[i], in.mirror[i*in.nMirror+k]
	rm, rz := c.ops.rank(m), c.ops.rank(z)
	if in.canaryCookie != nil {
		zs := []rank{rz}
		if in.primaryCookie != nil {
			zs = append(zs, rm.withCookie(), rz.withCookie())
		}
		if needed(zs, rm.withCookie()) {
			c.out.session = append(c.out.session, in.canaryCookie(z))
		}
	}
	if in.primaryCookie != nil {
		c.out.primaryMirror = append(c.out.primaryMirror, in.primaryCookie(z))
	}
}

// bothHTTP is the HTTPRouteMatch of the requests that meet a and b, two
// matches of one rule's match (same path) narrowed by conditions of two
// intents.
func bothHTTP(a, b gwv1.HTTPRouteMatch) (gwv1.HTTPRouteMatch, bool, string) {
	var out gwv1.HTTPRouteMatch
	a.DeepCopyInto(&out)
	b = *b.DeepCopy()
	if !equality.Semantic.DeepEqual(a.Path, b.Path) {
		return out, false, "they match different paths"
	}
	var ok bool
	var why string
	if out.Headers, ok, why = bothConditions(out.Headers, b.Headers, func(h gwv1.HTTPHeaderMatch) (string, string, bool) {
		return strings.ToLower(string(h.Name)), h.Value, ptr.Deref(h.Type, gwv1.HeaderMatchExact) == gwv1.HeaderMatchExact
	}, "header"); !ok || why != "" {
		return out, ok, why
	}
	if out.QueryParams, ok, why = bothConditions(out.QueryParams, b.QueryParams, func(q gwv1.HTTPQueryParamMatch) (string, string, bool) {
		return string(q.Name), q.Value, ptr.Deref(q.Type, gwv1.QueryParamMatchExact) == gwv1.QueryParamMatchExact
	}, "query parameter"); !ok || why != "" {
		return out, ok, why
	}
	switch {
	case b.Method == nil:
	case out.Method == nil:
		out.Method = ptr.To(*b.Method)
	case *out.Method != *b.Method:
		return out, false, ""
	}
	return out, true, ""
}

// bothGRPC is the GRPCRouteMatch of the requests that meet a and b.
func bothGRPC(a, b gwv1.GRPCRouteMatch) (gwv1.GRPCRouteMatch, bool, string) {
	var out gwv1.GRPCRouteMatch
	a.DeepCopyInto(&out)
	b = *b.DeepCopy()
	var ok bool
	var why string
	if out.Headers, ok, why = bothConditions(out.Headers, b.Headers, func(h gwv1.GRPCHeaderMatch) (string, string, bool) {
		return strings.ToLower(string(h.Name)), h.Value, ptr.Deref(h.Type, gwv1.GRPCHeaderMatchExact) == gwv1.GRPCHeaderMatchExact
	}, "header"); !ok || why != "" {
		return out, ok, why
	}
	if b.Method == nil {
		return out, true, ""
	}
	if out.Method == nil {
		out.Method = b.Method.DeepCopy()
		return out, true, ""
	}
	method, ok, why := bothGRPCMethods(*out.Method, *b.Method)
	out.Method = method
	return out, ok, why
}

// bothGRPCMethods is the method match of the requests that meet a and b:
// two exact matches narrow each other (a service, a method or both); a
// regular expression joins only itself.
func bothGRPCMethods(a, b gwv1.GRPCMethodMatch) (*gwv1.GRPCMethodMatch, bool, string) {
	if equalGRPCMethod(a, b) {
		return a.DeepCopy(), true, ""
	}
	exact := func(m gwv1.GRPCMethodMatch) bool {
		return ptr.Deref(m.Type, gwv1.GRPCMethodMatchExact) == gwv1.GRPCMethodMatchExact
	}
	if !exact(a) || !exact(b) {
		return nil, false, "two different method matches, one of them a regular expression, which the Gateway API cannot join in one match"
	}
	out := a.DeepCopy()
	for _, f := range []struct{ mine, theirs **string }{{&out.Service, &b.Service}, {&out.Method, &b.Method}} {
		switch {
		case *f.theirs == nil:
		case *f.mine == nil:
			*f.mine = ptr.To(**f.theirs)
		case **f.mine != **f.theirs:
			return nil, false, ""
		}
	}
	return out, true, ""
}

// bothConditions joins two lists of header or query parameter conditions,
// keyed by name: a condition that both lists hold is written once; two
// exact values of one name are met by no request; anything else on one
// name cannot be written, since the Gateway API takes one condition per
// name.
func bothConditions[C any](a, b []C, key func(C) (name, value string, exact bool), what string) ([]C, bool, string) {
	out := a
	for _, c := range b {
		name, value, exact := key(c)
		found := false
		for _, e := range a {
			n, v, x := key(e)
			if n != name {
				continue
			}
			found = true
			switch {
			case x == exact && v == value:
			case x && exact:
				return out, false, ""
			default:
				return out, false, fmt.Sprintf("two conditions on %s %s, which the Gateway API cannot join in one match", what, fieldValue(name))
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out, true, ""
}

// fieldValue quotes a name for a message, bounded.
func fieldValue(s string) string {
	const limit = 64
	return fmt.Sprintf("%q", fielderr.Truncate(s, limit, fielderr.Bytes, nil))
}

// httpRank is an HTTPRouteMatch's rank after its path: a method match,
// then the number of header matches, then of query parameter matches.
func httpRank(m gwv1.HTTPRouteMatch) rank {
	r := rank{header: 1}
	if m.Method != nil {
		r.of[0] = 1
	}
	r.of[1], r.of[2] = len(m.Headers), len(m.QueryParams)
	return r
}

// grpcRank is a GRPCRouteMatch's rank after its hostname: the characters
// of the service and of the method it matches, then the number of header
// matches; unknown for a regular expression, whose characters the Gateway
// API leaves to the implementation.
func grpcRank(m gwv1.GRPCRouteMatch) rank {
	r := rank{header: 2}
	if m.Method != nil {
		if ptr.Deref(m.Method.Type, gwv1.GRPCMethodMatchExact) != gwv1.GRPCMethodMatchExact {
			r.unknown = true
		}
		r.of[0], r.of[1] = len(ptr.Deref(m.Method.Service, "")), len(ptr.Deref(m.Method.Method, ""))
	}
	r.of[2] = len(m.Headers)
	return r
}

var (
	httpOps = matchOps[gwv1.HTTPRouteMatch]{both: bothHTTP, rank: httpRank}
	grpcOps = matchOps[gwv1.GRPCRouteMatch]{both: bothGRPC, rank: grpcRank}
)
