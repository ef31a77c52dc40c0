// Package redact keeps the credentials the function sends out of what it
// says about the answers. A provider, a proxy in front of it, or any other
// endpoint the function calls may repeat a request's Authorization header
// in its answer (a 401 page, a JSON error, an HTML sign-in page, a
// redirect's Location), escaped as its own encoder escapes text, and the
// function quotes answers into a CanaryRoute's status, its events and the
// function's log, which the CanaryRoute's author reads: every quote of an
// answer goes through Secrets first.
package redact

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// Redacted stands in for a secret in a text.
const Redacted = "[redacted]"

// Secrets are the credentials that one request sent. A text is searched
// for each as sent, and as the encoders of the answers that may repeat it
// escape it: JSON's and the other backslash escapes of string literals
// (\", \/, \u00e4, Go's \x), HTML's character references (&amp;, &#39;)
// and a URL's percent-encoding (%2F, and + for a space in a query). The
// text is decoded, not the secret encoded: no list of encoders can know
// which of a character's escapes an encoder picks (\/ or /, \u00e4 or ä,
// %3A or :), but each escape decodes to one character. Its zero value
// redacts nothing. It is safe for concurrent use.
type Secrets struct {
	// values are the secrets, longest first, none empty.
	values []string
	// longest is the length of the longest.
	longest int
}

// New returns the Secrets of the values a request sent, each as the
// request carried it: a caller that encodes a credential (basic auth's
// base64 of user:password) gives the encoding too, and a header value such
// as "Bearer <token>" is redacted by its token. Empty values are left out.
func New(values ...string) Secrets {
	var s Secrets
	for _, v := range values {
		if v != "" {
			s.values = append(s.values, v)
			s.longest = max(s.longest, len(v))
		}
	}
	// Longest first, and each once: equal values sort side by side.
	slices.SortFunc(s.values, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	s.values = slices.Compact(s.values)
	return s
}

// Base64 is s in the forms of base64 an answer may repeat it in: standard
// and URL alphabets, padded and not (a decoder that echoes what it read
// without its padding, a token minted from it in the URL alphabet). Basic
// auth sends the first. An unpadded form is a prefix of its padded one:
// both are given, so that no padding is left beside the marker.
func Base64(s string) []string {
	b := []byte(s)
	return []string{
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	}
}

// Redact returns text with every secret, as sent or escaped, replaced by
// Redacted. Overlapping repeats are one run of secrets, replaced once, so
// that no piece of one is left beside the marker; an escape that holds a
// secret's first or last character is replaced whole.
func (s Secrets) Redact(text string) string {
	if len(s.values) == 0 {
		return text
	}
	var covered []bool
	for _, v := range views(text) {
		for _, secret := range s.values {
			// end is how far this secret's matches in this view cover
			// already: marking each byte once keeps the walk linear
			// however the matches overlap.
			end := 0
			for start := 0; start < len(v.text); {
				i := strings.Index(v.text[start:], secret)
				if i < 0 {
					break
				}
				if covered == nil {
					covered = make([]bool, len(text))
				}
				from, to := v.source(start+i, start+i+len(secret))
				for j := max(from, end); j < to; j++ {
					covered[j] = true
				}
				end = max(end, to)
				start += i + 1
			}
		}
	}
	if covered == nil {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && covered[j] == covered[i] {
			j++
		}
		if covered[i] {
			b.WriteString(Redacted)
		} else {
			b.WriteString(text[i:j])
		}
		i = j
	}
	return b.String()
}

// Quote is text redacted, then cut and quoted as fielderr.Quote does: how
// a reason quotes an answer.
func (s Secrets) Quote(text string) string {
	return fielderr.Quote(s.Redact(text))
}

// Cut is text redacted, then cut as fielderr.Cut does to fielderr.MaxValue:
// how a reason says an error that may repeat what an answer held.
func (s Secrets) Cut(text string) string {
	return fielderr.Cut(s.Redact(text), fielderr.MaxValue)
}

// Truncated makes a text that was cut short safe to redact: a read that
// stopped at a limit, on a broken connection or at a timeout may have
// stopped inside a secret, whose first part Redact would not know. An end
// of text that begins a secret, as sent or escaped, is replaced by
// Redacted, and so is an escape cut short at the very end, which may be
// the start of one; the rest is as it was read.
func (s Secrets) Truncated(text []byte) []byte {
	if len(s.values) == 0 || len(text) == 0 {
		return text
	}
	whole := string(text)
	partial := partialEscape(whole)
	cut := len(text) - partial
	for _, v := range views(whole[:len(text)-partial]) {
		for _, secret := range s.values {
			// The longest end that begins a secret wins, whichever it
			// begins.
			for at := max(0, len(v.text)-len(secret)+1); at < len(v.text); at++ {
				if v.text[at] == secret[0] && strings.HasPrefix(secret, v.text[at:]) {
					from, _ := v.source(at, at+1)
					cut = min(cut, from)
					break
				}
			}
		}
	}
	if cut == len(text) {
		return text
	}
	return append(text[:cut:cut], Redacted...)
}
