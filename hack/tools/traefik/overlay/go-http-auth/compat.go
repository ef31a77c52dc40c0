package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The two functions that Traefik's fork of this module adds, and that
// Traefik's basic and digest auth middlewares call. Neither matters to the
// live tests, which configure no auth middleware; they make the module
// build, and behave as the fork's do.

// CheckSecret reports whether password matches secret, a hash in one of the
// formats BasicAuth reads (MD5 crypt, {SHA}, bcrypt).
func CheckSecret(password, secret string) bool {
	compare := compareFuncs[0].compare
	for _, cmp := range compareFuncs[1:] {
		if strings.HasPrefix(secret, cmp.prefix) {
			compare = cmp.compare
			break
		}
	}
	return compare([]byte(secret), []byte(password)) == nil
}

// RequireAuthStale is RequireAuth with stale=true in the challenge: the
// client's nonce was out of order, so it may retry with a new one without
// asking the user again (RFC 7616, section 3.3).
func (a *DigestAuth) RequireAuthStale(w http.ResponseWriter, r *http.Request) {
	if len(a.clients) > a.ClientCacheSize+a.ClientCacheTolerance {
		a.Purge(a.ClientCacheTolerance * 2)
	}
	nonce := RandomKey()
	a.clients[nonce] = &digest_client{nc: 0, last_seen: time.Now().UnixNano()}
	w.Header().Set(contentType, a.Headers.V().UnauthContentType)
	w.Header().Set(a.Headers.V().Authenticate,
		fmt.Sprintf(`Digest realm="%s", nonce="%s", opaque="%s", algorithm="MD5", qop="auth", stale=true`,
			a.Realm, nonce, a.Opaque))
	w.WriteHeader(a.Headers.V().UnauthCode)
	_, _ = w.Write([]byte(a.Headers.V().UnauthResponse))
}
