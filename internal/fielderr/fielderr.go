// Package fielderr bounds the field errors that end up in a Fatal result.
// Whatever the input, a message lists at most MaxErrors errors and quotes at
// most MaxValue characters of any value the user wrote, so that a spec with
// thousands of mistakes, or one huge value, gives a short message quickly:
// Crossplane puts it in an event and a condition, and aggregating thousands
// of errors costs seconds (the API machinery's aggregate joins them pairwise).
package fielderr

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// MaxErrors is the most errors a message lists.
	MaxErrors = 20
	// MaxValue is the most characters of a value, or of a field path, that
	// a message quotes.
	MaxValue = 256
	// maxDetail bounds an error's detail, which may quote values too.
	maxDetail = 4 * MaxValue
)

// Summarize returns the errors as one aggregate: duplicates dropped, at most
// MaxErrors of them, each with its field path, value and detail cut to a
// bounded length, and a note of how many more there were. Its Errors are the
// *field.Errors kept. It returns nil for no errors.
func Summarize(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	s := summary{}
	seen := make(map[string]bool, min(len(errs), MaxErrors))
	for _, e := range errs {
		if e == nil {
			continue
		}
		b := bounded(e)
		msg := b.Error()
		if seen[msg] {
			continue
		}
		if len(s.errs) == MaxErrors {
			s.more++
			continue
		}
		seen[msg] = true
		s.errs = append(s.errs, b)
	}
	if len(s.errs) == 0 {
		return nil
	}
	return s
}

// Quote quotes s with %q, cut to MaxValue characters.
func Quote(s string) string {
	return fmt.Sprintf("%q", Cut(s, MaxValue))
}

// Cut cuts s to at most n bytes on a character boundary, saying how long it
// was when it cuts.
func Cut(s string, n int) string {
	return Truncate(s, n, Bytes, characters)
}

// characters says how many characters a string cut by Cut had.
func characters(s string) string {
	return fmt.Sprintf("(%d characters)", utf8.RuneCountInString(s))
}

// A Unit is what a bound on a string counts.
type Unit int

const (
	// Bytes bound what a message quotes: the head kept has at most the
	// bound's bytes, and "..." (and the note) follow it, beyond the bound.
	Bytes Unit = iota
	// Characters bound a field of the XR's status, as the API server's
	// maxLength counts them: "…" (and the note) count within the bound,
	// and invalid UTF-8 is replaced first, since the API server refuses it.
	Characters
)

// Truncate is the function's one way to cut a string to a bound: s itself
// when it is at most n long, else its longest head that ends on a
// character boundary and fits the bound, then an ellipsis and what note
// says of the whole of s (nil: nothing). unit says what n counts, and where
// the ellipsis and the note go.
func Truncate(s string, n int, unit Unit, note func(whole string) string) string {
	mark := "..."
	if unit == Characters {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		mark = "…"
	} else if len(s) <= n {
		return s
	}
	if note != nil {
		mark += note(s)
	}
	if unit == Characters {
		return headRunes(s, n-utf8.RuneCountInString(mark)) + mark
	}
	end := n
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// headRunes is the head of s of at most n characters.
func headRunes(s string, n int) string {
	for i := range s {
		if n <= 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// List joins items with sep: at most MaxErrors of them, then how many more.
func List(items []string, sep string) string {
	if len(items) <= MaxErrors {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:MaxErrors], sep) + fmt.Sprintf("%s(and %d more)", sep, len(items)-MaxErrors)
}

// bounded is a copy of e whose field path, value and detail are cut.
func bounded(e *field.Error) *field.Error {
	c := *e
	c.Field = Cut(c.Field, MaxValue)
	c.Detail = Cut(c.Detail, maxDetail)
	switch v := c.BadValue.(type) {
	case nil, int, int32, int64, float32, float64, bool, field.OmitValueType:
	case string:
		c.BadValue = Cut(v, MaxValue)
	default:
		// A list or an object: quote its JSON, cut like a string.
		b, err := json.Marshal(v)
		if err != nil {
			c.BadValue = field.OmitValueType{}
			break
		}
		if len(b) > MaxValue {
			c.BadValue = Cut(string(b), MaxValue)
		}
	}
	return &c
}

// summary is a bounded aggregate of field errors.
type summary struct {
	errs []error
	more int
}

var _ utilerrors.Aggregate = summary{}

func (s summary) Error() string {
	msg := utilerrors.NewAggregate(s.errs).Error()
	if s.more > 0 {
		msg += fmt.Sprintf(" (and %d more errors)", s.more)
	}
	return msg
}

// Errors returns the errors kept.
func (s summary) Errors() []error { return s.errs }

// Is reports whether any error kept is target.
func (s summary) Is(target error) bool {
	for _, e := range s.errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}
