package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestRedact(t *testing.T) {
	const token = "s3cr3t-t0ken"
	basic := base64.StdEncoding.EncodeToString([]byte("user:p+ss/w=rd"))
	cases := map[string]struct {
		reason  string
		secrets Secrets
		text    string
		want    string
	}{
		"NoSecrets": {
			reason: "Without secrets a text is as it was, byte for byte.",
			text:   "HTTP 401: Bearer s3cr3t-t0ken",
			want:   "HTTP 401: Bearer s3cr3t-t0ken",
		},
		"NotInText": {
			reason:  "A text that holds no secret is as it was.",
			secrets: New(token),
			text:    "HTTP 401: unauthorized",
			want:    "HTTP 401: unauthorized",
		},
		"BearerHeaderEchoed": {
			reason:  "The header value a 401 page repeats is redacted by its token, the scheme kept.",
			secrets: New(token),
			text:    "missing scope for Authorization: Bearer s3cr3t-t0ken (read)",
			want:    "missing scope for Authorization: Bearer [redacted] (read)",
		},
		"EveryRepeat": {
			reason:  "Every repeat of a secret goes, not only the first.",
			secrets: New(token),
			text:    "s3cr3t-t0ken and s3cr3t-t0ken",
			want:    "[redacted] and [redacted]",
		},
		"BasicAuthBase64": {
			reason:  "Basic auth's base64 of user:password, the form the function sent, is redacted as given.",
			secrets: New("p+ss/w=rd", "user:p+ss/w=rd", basic),
			text:    "bad credentials: Basic " + basic,
			want:    "bad credentials: Basic [redacted]",
		},
		"QueryEscaped": {
			reason:  "A secret escaped in a URL's query (a redirect to a login page that carries it) is redacted.",
			secrets: New(basic),
			text:    "https://login.example/?next=%2F&auth=" + strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(basic),
			want:    "https://login.example/?next=%2F&auth=[redacted]",
		},
		"PathEscaped": {
			reason:  "A secret escaped in a URL's path is redacted.",
			secrets: New("a b/c"),
			text:    "/login/a%20b%2Fc",
			want:    "/login/[redacted]",
		},
		"JSONEscaped": {
			reason:  `A password with a quote, a backslash and "<" repeated inside a JSON string, with or without Go's HTML escapes, is redacted.`,
			secrets: New(`pa"ss\w<rd`),
			text:    `{"error":"user admin:pa\"ss\\w\u003crd denied","hint":"pa\"ss\\w<rd"}`,
			want:    `{"error":"user admin:[redacted] denied","hint":"[redacted]"}`,
		},
		"GoQuoted": {
			reason:  "A secret as Go quotes it (an error of net/http quoting a malformed answer) is redacted.",
			secrets: New("tab\there"),
			text:    `malformed HTTP response "Bearer tab\there"`,
			want:    `malformed HTTP response "Bearer [redacted]"`,
		},
		"Overlapping": {
			reason:  "Repeats that overlap are one run, replaced once: no piece of the secret is left beside the marker.",
			secrets: New("abcab"),
			text:    "x abcabcab y",
			want:    "x [redacted] y",
		},
		"EmptyValueIgnored": {
			reason:  "An empty value redacts nothing (it would match everywhere).",
			secrets: New(""),
			text:    "HTTP 401",
			want:    "HTTP 401",
		},
		"JSONSlashEscaped": {
			reason:  `A JSON encoder that escapes "/" as "\/" (PHP's json_encode, many Java and Lua encoders) hides no token of base64.`,
			secrets: New("c2Vj/cmV0+dG9r"),
			text:    `{"message":"invalid Bearer c2Vj\/cmV0+dG9r"}`,
			want:    `{"message":"invalid Bearer [redacted]"}`,
		},
		"JSONNonASCIIEscaped": {
			reason:  `Python's json.dumps writes every non-ASCII character as a \u escape: p\u00e4ss is the password pässs.`,
			secrets: New("pä/ss"),
			text:    `{"detail":"invalid credentials reader:p\u00e4\/ss"}`,
			want:    `{"detail":"invalid credentials reader:[redacted]"}`,
		},
		"JSONSurrogatePair": {
			reason:  `A character beyond the BMP comes as a surrogate pair of \u escapes.`,
			secrets: New("key😀x"),
			text:    `"key\ud83d\ude00x"`,
			want:    `"[redacted]"`,
		},
		"JavaScriptAndGoEscapes": {
			reason:  `JavaScript's \u{...}, Go's \U and \x escapes decode too.`,
			secrets: New("aé😀b"),
			text:    `1 a\u{e9}\U0001F600b 2 a\xc3\xa9😀b`,
			want:    `1 [redacted] 2 [redacted]`,
		},
		"HTMLNamedAndNumeric": {
			reason:  "An HTML page escapes & and < by name, a quote by number; a template may escape any character by number.",
			secrets: New(`p&w<'d`),
			text:    `<p>refused p&amp;w&lt;&#39;d and p&#x26;w&#60;&#x27;d</p>`,
			want:    `<p>refused [redacted] and [redacted]</p>`,
		},
		"URLUserinfo": {
			reason:  "A redirect's Location carries user and password as a URL's userinfo, whose escaping is a path's and a query's neither (':' escaped, ';' not).",
			secrets: New("pä/ss&w<0rd:x;y"),
			text:    "https://reader:p%C3%A4%2Fss&w%3C0rd%3Ax;y@login.example/",
			want:    "https://reader:[redacted]@login.example/",
		},
		"QueryPlusForSpace": {
			reason:  "A query writes a space as +, while a token of base64 holds + as itself: both are found.",
			secrets: New("pass word", "a+b"),
			text:    "?p=pass+word&t=a+b",
			want:    "?p=[redacted]&t=[redacted]",
		},
		"MixedEscapes": {
			reason:  "An HTML page that shows a JSON error mixes both escapes: found all the same.",
			secrets: New(`ä<"`),
			text:    `<pre>{"e":"\u00e4&lt;\&quot;"}</pre>`,
			want:    `<pre>{"e":"[redacted]"}</pre>`,
		},
		"LiteralEscapeCharacters": {
			reason:  "A secret that holds what looks like an escape (%41, &amp;) is found as it is, not only decoded.",
			secrets: New("a%41&amp;"),
			text:    "x a%41&amp; y",
			want:    "x [redacted] y",
		},
		"EscapeAtTheEdgeTakenWhole": {
			reason:  "An escape that holds a secret's last character is redacted whole: no piece of it is left beside the marker.",
			secrets: New("ab/"),
			text:    `x ab\/ y`,
			want:    "x [redacted] y",
		},
		"PercentInPercent": {
			reason:  "A URL in a URL's query (a sign-in redirect's rd=) is percent-encoded twice: decoded to the end, the secret is found.",
			secrets: New("a b/c="),
			text:    "https://login.example/?rd=https%3A%2F%2Fp%2F%3Fa%3Da%252Bb%252Fc%253D",
			want:    "https://login.example/?rd=https%3A%2F%2Fp%2F%3Fa%3D[redacted]",
		},
		"JSONInJSON": {
			reason:  `A JSON error quoting an upstream's JSON error escapes the password's quote twice (\\\"): found.`,
			secrets: New(`p"w`),
			text:    `{"m":"upstream: {\"e\":\"p\\\"w\"}"}`,
			want:    `{"m":"upstream: {\"e\":\"[redacted]\"}"}`,
		},
		"JSONInQuery": {
			reason:  `JSON in a URL's query: percent-encoding outside, JSON's \/ inside, the reverse of an HTML page showing JSON.`,
			secrets: New("a b/c"),
			text:    "?e=%7B%22p%22%3A%22a+b%5C%2Fc%22%7D",
			want:    "?e=%7B%22p%22%3A%22[redacted]%22%7D",
		},
		"QueryPlusInHTML": {
			reason:  "html/template writes a query's + (a space) as &#43;: decoded as a reference, then as a query.",
			secrets: New("a b/c"),
			text:    `<a href="/retry?p=a&#43;b%2Fc">`,
			want:    `<a href="/retry?p=[redacted]">`,
		},
		"Base64Unpadded": {
			reason:  "The base64 of user:password without its padding, or in the URL alphabet, is redacted: Base64 gives every form.",
			secrets: New(Base64("user:pass?>~x")...),
			text:    "a dXNlcjpwYXNzPz5-eA b dXNlcjpwYXNzPz5+eA, c dXNlcjpwYXNzPz5-eA== d",
			want:    "a [redacted] b [redacted], c [redacted] d",
		},
		"OtherEscapesKept": {
			reason:  "Escapes around a secret are as they were: only the secret's own bytes go.",
			secrets: New("tok"),
			text:    `a\/b tok &amp; %2F`,
			want:    `a\/b [redacted] &amp; %2F`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.secrets.Redact(tc.text)); diff != "" {
				t.Errorf("%s\nRedact(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	const token = "0123456789abcdefghijklmnopqrstuvwxyz"
	cases := map[string]struct {
		reason string
		text   string
		want   string
	}{
		"SecretAcrossTheCut": {
			reason: "A secret that a cut at 256 characters would split is redacted before the cut, so that no first part of it is quoted.",
			text:   strings.Repeat("x", 240) + token,
			want:   `"` + strings.Repeat("x", 240) + `[redacted]"`,
		},
		"QuotedAfterRedaction": {
			reason: "A text is quoted as fielderr.Quote quotes it, once redacted.",
			text:   "token \"" + token + "\"\n",
			want:   `"token \"[redacted]\"\n"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, New(token).Quote(tc.text)); diff != "" {
				t.Errorf("%s\nQuote(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	const token = "0123456789"
	cases := map[string]struct {
		reason  string
		secrets Secrets
		text    string
		want    string
	}{
		"FirstPartRedacted": {
			reason:  "A read that stopped inside a secret leaves its first part at the end: it is redacted too.",
			secrets: New(token),
			text:    "Bearer 0123456789 Bearer 01234",
			want:    "Bearer [redacted] Bearer [redacted]",
		},
		"OtherEndKept": {
			reason:  "A text whose end begins no secret is as it was read, its length too.",
			secrets: New(token),
			text:    "Bearer 0123456789 Bearer xxx",
			want:    "Bearer [redacted] Bearer xxx",
		},
		"NoSecrets": {
			reason: "Without secrets a text read is as it was.",
			text:   "Bearer 01234",
			want:   "Bearer 01234",
		},
		"FirstPartEscaped": {
			reason:  "The first part of a secret, escaped, at the end of a text cut short is redacted too.",
			secrets: New("ab/cd/ef"),
			text:    `{"e":"Bearer ab\/cd`,
			want:    `{"e":"Bearer [redacted]`,
		},
		"EscapeCutShort": {
			reason:  "A text cut inside an escape (&l of &lt;) after the first part of a secret: the escape's start goes with it.",
			secrets: New("pw<x"),
			text:    "refused pw&l",
			want:    "refused [redacted]",
		},
		"EscapeCutShortAlone": {
			reason:  "An escape cut short at the end may begin a secret, which nothing else of the text shows: it goes.",
			secrets: New("<pw"),
			text:    "refused %3",
			want:    "refused [redacted]",
		},
		"EscapedBackslashEndsNothing": {
			reason:  "A text that ends with an escaped backslash ends with no escape cut short.",
			secrets: New("zzz"),
			text:    `path c:\\`,
			want:    `path c:\\`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.secrets.Redact(string(tc.secrets.Truncated([]byte(tc.text))))); diff != "" {
				t.Errorf("%s\nRedact(Truncated(...)): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// encoders are the ways an answer may write a secret: as Go's, PHP's and
// Python's JSON encoders, an HTML template, a URL's query, path and
// userinfo, and Go's quoting write it.
var encoders = map[string]func(string) string{
	"Raw":  func(s string) string { return s },
	"JSON": func(s string) string { return jsonContent(s, true) },
	"JSONNoHTMLEscapes": func(s string) string {
		return jsonContent(s, false)
	},
	"JSONSlashEscaped": func(s string) string { return strings.ReplaceAll(jsonContent(s, false), "/", `\/`) },
	"JSONASCII": func(s string) string {
		var b strings.Builder
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r >= utf8.RuneSelf:
				for _, u := range utf16.Encode([]rune{r}) {
					fmt.Fprintf(&b, `\u%04x`, u)
				}
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	},
	"HTML":       html.EscapeString,
	"URLQuery":   url.QueryEscape,
	"URLPath":    url.PathEscape,
	"URLUser":    func(s string) string { return strings.TrimPrefix(url.UserPassword("u", s).String(), "u:") },
	"GoQuoted":   func(s string) string { q := strconv.Quote(s); return q[1 : len(q)-1] },
	"HTMLOfJSON": func(s string) string { return html.EscapeString(jsonContent(s, false)) },
}

// jsonContent is s as a JSON string's content, with or without Go's HTML
// escapes.
func jsonContent(s string, escapeHTML bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(escapeHTML)
	_ = e.Encode(s) //nolint:errchkjson // A string always encodes.
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// FuzzRedactEncodings: whatever a secret holds, and whatever surrounds it,
// no encoder's form of it survives Redact, and no first part of it the
// end of a text cut short.
func FuzzRedactEncodings(f *testing.F) {
	f.Add("c2Vj/cmV0+dG9r", "Bearer ", `"}`)
	f.Add(`pä/ss&w<0rd:x;y`, "reader:", "@login")
	f.Add("a b%41&amp;\\u0041", "", "")
	f.Add("😀\t\"'", "&", "%")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		if secret == "" || !utf8.ValidString(secret) || strings.ContainsRune(secret, 0) || partialEscape(before) > 0 {
			// A text before the secret that ends in an escape cut
			// short (a lone backslash, "%0") takes the secret's first
			// characters into it: the two are no answer any encoder
			// writes.
			return
		}
		s := New(secret)
		for name, encode := range encoders {
			enc := encode(secret)
			got := strings.ReplaceAll(s.Redact(before+enc+after), Redacted, "\x00")
			if strings.Contains(got, enc) {
				t.Errorf("%s: Redact(%q) = %q: the secret %q is in it", name, before+enc+after, got, secret)
			}
			// Cut anywhere in the secret's form: nothing of the form
			// that was read is left.
			for cut := 1; cut < len(enc); cut++ {
				got := string(s.Truncated([]byte(before + enc[:cut])))
				if !strings.HasSuffix(got, Redacted) {
					t.Errorf("%s: Truncated(%q) = %q: the first part of the secret %q is in it", name, before+enc[:cut], got, secret)
				}
			}
		}
	})
}

// BenchmarkRedact redacts an error answer of 64 KiB, the most the client
// reads, dense with escapes of every kind.
func BenchmarkRedact(b *testing.B) {
	s := New("c2VjcmV0/dG9rZW4+b2Yg", "pä/ss&w<0rd:x;y")
	unit := `{"e":"a\/b \u00e4 &amp; %2F + x"} `
	text := strings.Repeat(unit, (64<<10)/len(unit))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Redact(text)
	}
}
