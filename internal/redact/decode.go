package redact

import (
	"html"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// What the escapes of a view decode.
const (
	// backslash: the escapes of string literals: JSON's (\", \\, \/,
	// \n, \u00e4 and surrogate pairs), and those of Go, JavaScript and
	// Python (\x41, \U0001F600, \u{1F600}, \' and any escaped
	// punctuation).
	backslash = 1 << iota
	// entity: HTML's character references (&amp;, &lt;, &#39;, &#x2F;).
	entity
	// percent: a URL's percent-encoding (%2F).
	percent
	// plus: a URL query's + for a space.
	plus
)

// maxEntity bounds a character reference's length: the longest of HTML's
// names is 32 characters with its & and ;.
const maxEntity = 33

// A view is a text with the escapes of some encoders decoded, and where
// each of its bytes came from.
type view struct {
	text string
	// edits are the escapes decoded, in the order of the text.
	edits []edit
	// of is the view this one decodes further, nil for the text itself.
	of *view
}

// An edit is one escape decoded: the view's bytes [at, at+n) are the text's
// bytes [src, src+size). Texts are at most an answer read (a few MiB).
type edit struct {
	at, src int32
	n, size uint8
}

// Bounds of the decoding: an answer nests a few encodings at most (a
// JSON error quoting an upstream's JSON error, a redirect whose query
// holds a URL whose query holds the header), and a hostile one must not
// make the views many. No decode lengthens a text, so the views of a text
// of n bytes are at most maxViews*n bytes, decoded in at most
// maxDecodes*n steps: linear in the answer (64 KiB, 1 MiB at most).
const (
	// maxRounds bounds the decodes one after the other from the text
	// to a view: the encodings an answer nests.
	maxRounds = 4
	// maxViews bounds the views of a text, the text itself included.
	maxViews = 24
	// maxDecodes bounds the decodes tried, those whose view was found
	// already included.
	maxDecodes = 48
)

// layers are the kinds of escape an encoder writes, each decoded alone in
// one round: an encoding nested in another is decoded by the later round.
var layers = []int{entity, backslash, percent, percent | plus}

// views are the views of text a secret is looked for in: as it is, and
// decoded to a fixed point over every combination of the kinds of escape
// it holds, one kind per round, in any order and any kind again (a URL in
// a URL's query, a JSON error in a JSON error, JSON in a URL's query, a
// query's + for a space on an HTML page), for at most maxRounds rounds.
// Each round's views are kept, not only the last: decoding a kind that is
// not nested would mangle a secret that holds its escape (a password with
// %41 in a JSON error on an HTML page), and some view decodes only the
// kinds that are. A view found already is not decoded again, so a text
// whose escapes are all decoded is a fixed point; the views are the
// shallowest first, at most maxViews.
func views(text string) []*view {
	out := []*view{{text: text}}
	seen := map[string]bool{text: true}
	decodes := 0
	for level, round := out, 0; round < maxRounds && len(level) > 0; round++ {
		var next []*view
		for _, of := range level {
			for _, kind := range layers {
				if len(out) == maxViews || decodes == maxDecodes {
					return out
				}
				// A + is a plus in a token of base64, a space
				// in a query: both are looked for, the space
				// only when there is a +.
				opener := openers(kind)
				if kind == percent|plus {
					opener = "+"
				}
				if !strings.ContainsAny(of.text, opener) {
					continue
				}
				decodes++
				v := decode(of, kind)
				if len(v.edits) == 0 || seen[v.text] {
					continue
				}
				seen[v.text] = true
				out = append(out, v)
				next = append(next, v)
			}
		}
		level = next
	}
	return out
}

// decode decodes the escapes of kinds in the text of a view.
func decode(of *view, kinds int) *view {
	text := of.text
	var b strings.Builder
	b.Grow(len(text))
	// At most one escape per introducer: one allocation.
	open := openers(kinds)
	edits := make([]edit, 0, introducers(text, open))
	for i := 0; i < len(text); {
		at := b.Len()
		if size := escapeAt(&b, text[i:], kinds); size > 0 {
			edits = append(edits, edit{at: int32(at), n: uint8(b.Len() - at), src: int32(i), size: uint8(size)}) //nolint:gosec // Escapes are a few bytes, texts far below 2 GiB.
			i += size
			continue
		}
		// Up to the next byte that may open an escape, in one copy.
		next := len(text)
		if j := strings.IndexAny(text[i+1:], open); j >= 0 {
			next = i + 1 + j
		}
		b.WriteString(text[i:next])
		i = next
	}
	return &view{text: b.String(), edits: edits, of: of}
}

// openers are the bytes that open the escapes of kinds.
func openers(kinds int) string {
	var b strings.Builder
	for _, k := range []struct {
		kind   int
		opener byte
	}{{backslash, '\\'}, {entity, '&'}, {percent, '%'}, {plus, '+'}} {
		if kinds&k.kind != 0 {
			b.WriteByte(k.opener)
		}
	}
	return b.String()
}

// introducers counts the bytes of text that may open an escape: those of
// open.
func introducers(text, open string) int {
	n := 0
	for i := range len(open) {
		n += strings.Count(text, open[i:i+1])
	}
	return n
}

// source is where the view's bytes [from, to) came from in the text: an
// escape that holds either end is taken whole.
func (v view) source(from, to int) (int, int) {
	from, to = v.local(from, to)
	if v.of == nil || v.of.of == nil {
		return from, to
	}
	return v.of.source(from, to)
}

// local is where the view's bytes [from, to) came from in the view it
// decodes.
func (v view) local(from, to int) (int, int) {
	start := from
	if e, ok := v.editOf(from); ok {
		at, n, src, size := int(e.at), int(e.n), int(e.src), int(e.size)
		if from < at+n {
			start = src
		} else {
			start = src + size + (from - at - n)
		}
	}
	end := to
	if e, ok := v.editOf(to - 1); to > 0 && ok {
		at, n, src, size := int(e.at), int(e.n), int(e.src), int(e.size)
		if to-1 < at+n {
			end = src + size
		} else {
			end = src + size + (to - at - n)
		}
	}
	return start, end
}

// editOf is the last escape decoded at or before the view's byte i.
func (v view) editOf(i int) (edit, bool) {
	n := sort.Search(len(v.edits), func(k int) bool { return int(v.edits[k].at) > i })
	if n == 0 {
		return edit{}, false
	}
	return v.edits[n-1], true
}

// escapeAt decodes the escape of kinds that begins s into b: its length,
// 0 (and nothing written) when s begins none.
func escapeAt(b *strings.Builder, s string, kinds int) int {
	switch {
	case s[0] == '\\' && kinds&backslash != 0:
		return backslashEscape(b, s)
	case s[0] == '&' && kinds&entity != 0:
		dec, size := entityEscape(s)
		b.WriteString(dec)
		return size
	case s[0] == '%' && kinds&percent != 0 && len(s) >= 3:
		if v, err := strconv.ParseUint(s[1:3], 16, 8); err == nil {
			b.WriteByte(byte(v))
			return 3
		}
	case s[0] == '+' && kinds&plus != 0:
		b.WriteByte(' ')
		return 1
	}
	return 0
}

// controls are the one-letter escapes of control characters.
var controls = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', 'v': '\v', 'a': '\a', '0': 0}

// backslashEscape decodes the backslash escape that begins s into b.
func backslashEscape(b *strings.Builder, s string) int {
	if len(s) < 2 {
		return 0
	}
	c := s[1]
	switch {
	case c == 'u' && len(s) > 2 && s[2] == '{':
		// JavaScript's \u{1F600}.
		end := strings.IndexByte(s, '}')
		if end < 0 || end > 9 {
			return 0
		}
		return hexRune(b, s[3:end], end+1)
	case c == 'u':
		return utf16Escape(b, s)
	case c == 'U' && len(s) >= 10:
		return hexRune(b, s[2:10], 10)
	case c == 'x' && len(s) >= 4:
		// Go's byte escape: a byte, of UTF-8 or not.
		if v, err := strconv.ParseUint(s[2:4], 16, 8); err == nil {
			b.WriteByte(byte(v))
			return 4
		}
		return 0
	}
	if ctl, ok := controls[c]; ok {
		b.WriteByte(ctl)
		return 2
	}
	if c < utf8.RuneSelf && !isAlnum(c) {
		// \", \\, \/, \' and any escaped punctuation is itself.
		b.WriteByte(c)
		return 2
	}
	return 0
}

// utf16Escape decodes the \uXXXX that begins s into b, with the \uXXXX
// that follows when the two are a surrogate pair; a lone surrogate is
// U+FFFD, as JSON's decoders read it.
func utf16Escape(b *strings.Builder, s string) int {
	if len(s) < 6 {
		return 0
	}
	v, err := strconv.ParseUint(s[2:6], 16, 16)
	if err != nil {
		return 0
	}
	r := rune(v)
	if !utf16.IsSurrogate(r) {
		b.WriteRune(r)
		return 6
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if low, err := strconv.ParseUint(s[8:12], 16, 16); err == nil {
			if pair := utf16.DecodeRune(r, rune(low)); pair != utf8.RuneError {
				b.WriteRune(pair)
				return 12
			}
		}
	}
	b.WriteRune(utf8.RuneError)
	return 6
}

// hexRune decodes the character of hexadecimal digits into b, as an
// escape of size bytes.
func hexRune(b *strings.Builder, digits string, size int) int {
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0
	}
	b.WriteRune(rune(v))
	return size
}

// commonEntities are the references HTML's escapers write (Go's
// html.EscapeString and html/template, Jinja, ERB), decoded without an
// allocation.
var commonEntities = map[string]string{
	"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": `"`, "&apos;": "'", "&#39;": "'", "&#34;": `"`, "&#43;": "+", "&#x2F;": "/", "&#x27;": "'",
}

// entityEscape decodes the HTML character reference that begins s: &name;
// or &#decimal; or &#xhex;, the numeric ones with or without their ;.
func entityEscape(s string) (string, int) {
	end := 1
	numeric := len(s) > 1 && s[1] == '#'
	if numeric {
		end = 2
		if len(s) > 2 && (s[2] == 'x' || s[2] == 'X') {
			end = 3
		}
	}
	for end < len(s) && end < maxEntity && isAlnum(s[end]) {
		end++
	}
	switch {
	case end < len(s) && s[end] == ';':
		end++
	case !numeric:
		return "", 0
	}
	ref := s[:end]
	if dec, ok := commonEntities[ref]; ok {
		return dec, end
	}
	dec := html.UnescapeString(ref)
	if dec == ref {
		return "", 0
	}
	return dec, end
}

// partialEscape is the length of an escape cut short that ends text: "\",
// "\u00", "&am", "&#3", "%C", and the first half of a surrogate pair
// before it or alone ("\ud83d\u"); 0 when text ends otherwise.
func partialEscape(text string) int {
	n := partialEscapeAlone(text)
	if rest := text[:len(text)-n]; len(rest) >= 6 {
		high := rest[len(rest)-6:]
		if v, err := strconv.ParseUint(strings.TrimPrefix(high, `\u`), 16, 16); err == nil && strings.HasPrefix(high, `\u`) &&
			utf16.IsSurrogate(rune(v)) && v < 0xdc00 && !escapedAt(rest, len(rest)-6) {
			n += 6
		}
	}
	return n
}

// escapedAt reports whether the backslash at byte i of text is escaped by
// the backslashes before it.
func escapedAt(text string, i int) bool {
	n := len(text[:i]) - len(strings.TrimRight(text[:i], `\`))
	return n%2 == 1
}

// partialEscapeAlone is partialEscape without surrogates.
func partialEscapeAlone(text string) int {
	k := strings.LastIndexAny(text[max(0, len(text)-maxEntity):], `\&%`)
	if k < 0 {
		return 0
	}
	k += max(0, len(text)-maxEntity)
	rest := text[k+1:]
	switch text[k] {
	case '\\':
		// An escaped backslash ends nothing.
		if escapedAt(text, k) {
			return 0
		}
		switch {
		case rest == "",
			len(rest) < 5 && rest[0] == 'u' && isHex(rest[1:]),
			rest[0] == 'u' && strings.HasPrefix(rest, "u{") && isHex(rest[2:]),
			len(rest) < 9 && rest[0] == 'U' && isHex(rest[1:]),
			len(rest) < 3 && rest[0] == 'x' && isHex(rest[1:]):
			return len(text) - k
		}
	case '&':
		body := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(rest, "#"), "x"), "X")
		if isAlnumString(body) {
			return len(text) - k
		}
	case '%':
		if len(rest) < 2 && isHex(rest) {
			return len(text) - k
		}
	}
	return 0
}

func isAlnum(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isAlnumString(s string) bool {
	for i := range len(s) {
		if !isAlnum(s[i]) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := range len(s) {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s[i])) {
			return false
		}
	}
	return true
}
