package route

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

const (
	setCookieHeader = "Set-Cookie"
	cookieHeader    = "Cookie"

	cookieCollisionFmt = "collides with the session affinity cookie of spec.traffic.sessionAffinity: " +
		"the function sets that header on the %s; remove one of them"
	ruleCookieCollision = "collides with the session affinity cookies of spec.traffic.sessionAffinity: a rule's ResponseHeaderModifier " +
		"applies to the responses of every backend, after the Set-Cookie header that the function adds to the sides, and would replace or remove it; remove one of them"
	ruleCookieNameCollision = "collides with the session affinity cookies of spec.traffic.sessionAffinity: it sets a cookie of the same name, " +
		"which would replace the function's in the client; remove one of them"
	cookieMatchCollision = "collides with the session affinity match of spec.traffic.sessionAffinity: " +
		"the function matches the Cookie header to keep sessions on the canary; remove one of them"

	// cookieValueLength is the number of hex digits of the cookie value:
	// 64 bits, plenty to tell revisions apart.
	cookieValueLength = 16
)

// CookieValue is the session cookie's value for a route and revision: stable
// across runs and restarts of the function, a valid cookie value (hex
// digits), and different for a new revision, which drops the sessions of
// the old one.
func CookieValue(namespace, name, revision string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + revision))
	return hex.EncodeToString(sum[:])[:cookieValueLength]
}

// setCookie is the Set-Cookie header value that a side sends for its
// cookie, with the attributes of the CanaryRoute; the defaults give what
// earlier releases sent.
func (a *Affinity) setCookie(name, value string) string {
	path := a.Attributes.Path
	if path == "" {
		path = "/"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%s; Max-Age=%d; Path=%s", name, value, int64(a.MaxAge.Seconds()), path)
	if a.Attributes.Domain != "" {
		b.WriteString("; Domain=" + a.Attributes.Domain)
	}
	if a.Attributes.Secure {
		b.WriteString("; Secure")
	}
	b.WriteString("; HttpOnly")
	if a.Attributes.SameSite != "" {
		b.WriteString("; SameSite=" + a.Attributes.SameSite)
	}
	return b.String()
}

// cookiePattern matches a Cookie header that carries a session cookie,
// wherever it stands among the client's other cookies. It is anchored and
// escaped, so no other cookie's name or value can match it by accident.
func cookiePattern(name, value string) string {
	return `^(?:.*;\s*)?` + regexp.QuoteMeta(name) + `=` + regexp.QuoteMeta(value) + `(?:;.*)?$`
}

// withCookieMatch adds a session cookie condition to each match.
func withCookieMatch(matches []gwv1.HTTPRouteMatch, name, value string) []gwv1.HTTPRouteMatch {
	out := deepCopy(matches)
	for i := range out {
		out[i].Headers = append(out[i].Headers, gwv1.HTTPHeaderMatch{
			Type:  ptr.To(gwv1.HeaderMatchRegularExpression),
			Name:  cookieHeader,
			Value: cookiePattern(name, value),
		})
	}
	return out
}

// sessionPersistence is the Gateway API's own session persistence of the
// weighted rules, while it applies: a permanent cookie of the CanaryRoute's
// name, for its maxAge.
func sessionPersistence(p Params) *gwv1.SessionPersistence {
	if !p.persistence() {
		return nil
	}
	return &gwv1.SessionPersistence{
		SessionName:     ptr.To(p.Affinity.CookieName),
		AbsoluteTimeout: ptr.To(gwv1.Duration(gatewayDuration(p.Affinity.MaxAge))),
		Type:            ptr.To(gwv1.CookieBasedSessionPersistence),
		CookieConfig:    &gwv1.CookieConfig{LifetimeType: ptr.To(gwv1.PermanentCookieLifetimeType)},
	}
}

// gatewayDuration writes a duration of whole seconds the way Gateway API's
// Duration pattern wants it: hours, minutes and seconds, each at most five
// digits (xr.Parse bounds maxAge to 99999h).
func gatewayDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}

// setCookieCollisions finds a user's Set-Cookie in the ResponseHeaderModifier
// of a side that sets a session cookie. Header names are case-insensitive;
// add and set are lists keyed by name, so both would fight over the same
// header, and remove would drop the cookie that the function adds to this
// very filter.
func setCookieCollisions(path *field.Path, role xr.Role, m *gwv1.HTTPHeaderFilter) field.ErrorList {
	cookieCollision := fmt.Sprintf(cookieCollisionFmt, role)
	var errs field.ErrorList
	for j, h := range m.Set {
		if strings.EqualFold(string(h.Name), setCookieHeader) {
			errs = append(errs, field.Invalid(path.Child("set").Index(j).Child("name"), h.Name, cookieCollision))
		}
	}
	for j, h := range m.Add {
		if strings.EqualFold(string(h.Name), setCookieHeader) {
			errs = append(errs, field.Invalid(path.Child("add").Index(j).Child("name"), h.Name, cookieCollision))
		}
	}
	for j, name := range m.Remove {
		if strings.EqualFold(name, setCookieHeader) {
			errs = append(errs, field.Invalid(path.Child("remove").Index(j), name, cookieCollision))
		}
	}
	return errs
}

// ruleSetCookieCollisions finds, in a weighted rule's own filters, a
// ResponseHeaderModifier that would undo the session cookies: the gateway
// applies a rule's response headers to the responses of every backend,
// after the backend's own (Envoy applies the route's header mutations after
// the weighted cluster's), so a set replaces the cookie and a remove drops
// it. An add of another cookie is harmless; an add of a cookie of the same
// name as a session cookie replaces it in the client.
func ruleSetCookieCollisions(path *field.Path, filters []gwv1.HTTPRouteFilter, a *Affinity) field.ErrorList {
	var errs field.ErrorList
	for i, f := range filters {
		m := f.ResponseHeaderModifier
		if f.Type != gwv1.HTTPRouteFilterResponseHeaderModifier || m == nil {
			continue
		}
		at := path.Index(i).Child("responseHeaderModifier")
		for j, h := range m.Set {
			if strings.EqualFold(string(h.Name), setCookieHeader) {
				errs = append(errs, field.Invalid(at.Child("set").Index(j).Child("name"), h.Name, ruleCookieCollision))
			}
		}
		for j, name := range m.Remove {
			if strings.EqualFold(name, setCookieHeader) {
				errs = append(errs, field.Invalid(at.Child("remove").Index(j), name, ruleCookieCollision))
			}
		}
		for j, h := range m.Add {
			if !strings.EqualFold(string(h.Name), setCookieHeader) {
				continue
			}
			name, _, _ := strings.Cut(h.Value, "=")
			name = strings.TrimSpace(name)
			if name == a.CookieName || (a.PrimaryCookieName != "" && name == a.PrimaryCookieName) {
				errs = append(errs, field.Invalid(at.Child("add").Index(j).Child("value"), h.Value, ruleCookieNameCollision))
			}
		}
	}
	return errs
}

// cookieMatchCollisions finds a user's match on the Cookie header, which the
// session companion rule needs for itself.
func cookieMatchCollisions(path *field.Path, matches []gwv1.HTTPRouteMatch) field.ErrorList {
	var errs field.ErrorList
	for i, m := range matches {
		for j, h := range m.Headers {
			if strings.EqualFold(string(h.Name), cookieHeader) {
				errs = append(errs, field.Invalid(path.Index(i).Child("headers").Index(j).Child("name"), h.Name, cookieMatchCollision))
			}
		}
	}
	return errs
}
