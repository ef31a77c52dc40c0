package redact

import (
	"encoding/base64"
	"strings"
	"testing"

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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.secrets.Redact(string(tc.secrets.Truncated([]byte(tc.text))))); diff != "" {
				t.Errorf("%s\nRedact(Truncated(...)): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
