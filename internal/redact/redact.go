// Package redact keeps the credentials the function sends out of what it
// says about the answers. A provider, a proxy in front of it, or any other
// endpoint the function calls may repeat a request's Authorization header
// in its answer (a 401 page, a JSON error, a redirect's Location), and the
// function quotes answers into a CanaryRoute's status, its events and the
// function's log, which the CanaryRoute's author reads: every quote of an
// answer goes through Secrets first.
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

// Redacted stands in for a secret in a text.
const Redacted = "[redacted]"

// Secrets are the credentials that one request sent, each in every form
// an answer may repeat it in: as sent, and escaped as a URL's query or
// path, a JSON string and a Go-quoted string would escape it. Its zero
// value redacts nothing. It is safe for concurrent use.
type Secrets struct {
	// forms are the texts to redact, longest first, none empty.
	forms []string
}

// New returns the Secrets of the values a request sent, each as the
// request carried it: a caller that encodes a credential (basic auth's
// base64 of user:password) gives the encoding too, and a header value such
// as "Bearer <token>" is redacted by its token. Empty values are left out.
func New(values ...string) Secrets {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		forms = append(forms, v, url.QueryEscape(v), url.PathEscape(v), goQuoted(v), jsonQuoted(v, true), jsonQuoted(v, false))
	}
	// Longest first, and each once: equal forms sort side by side.
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return Secrets{forms: slices.Compact(forms)}
}

// goQuoted is v as fmt's %q writes it, without the quotes: how
// fielderr.Quote, and Go's errors that quote what they read (a malformed
// HTTP status line), show it.
func goQuoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

// jsonQuoted is v as a JSON string's content, with or without the HTML
// escapes of Go's encoder (\u003c for <).
func jsonQuoted(v string, html bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if err := e.Encode(v); err != nil {
		return v // A string always encodes.
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// Redact returns text with every secret, in each of its forms, replaced by
// Redacted. Overlapping repeats are one run of secrets, replaced once, so
// that no piece of one is left beside the marker.
func (s Secrets) Redact(text string) string {
	var covered []bool
	for _, f := range s.forms {
		// end is how far this form's matches cover already: marking each
		// byte once keeps the walk linear however the matches overlap.
		end := 0
		for start := 0; start < len(text); {
			i := strings.Index(text[start:], f)
			if i < 0 {
				break
			}
			if covered == nil {
				covered = make([]bool, len(text))
			}
			from := start + i
			for j := max(from, end); j < from+len(f); j++ {
				covered[j] = true
			}
			end = from + len(f)
			start = from + 1
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

// Truncated makes a text read up to a limit safe to redact: the read may
// have stopped inside a secret, whose first part Redact would not know. An
// end of text that begins a secret's form is replaced by Redacted; the rest
// is as it was read.
func (s Secrets) Truncated(text []byte) []byte {
	// The longest end that begins a form wins, whichever form it
	// begins.
	cut := 0
	for _, f := range s.forms {
		form := []byte(f)
		for at := max(0, len(text)-len(form)+1); at < len(text)-cut; at++ {
			if text[at] == form[0] && bytes.HasPrefix(form, text[at:]) {
				cut = len(text) - at
				break
			}
		}
	}
	if cut == 0 {
		return text
	}
	return append(text[:len(text)-cut:len(text)-cut], Redacted...)
}
