package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPrintableText(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Plain": {
			reason: "Text without control characters is unchanged, non-ASCII letters included.",
			in:     "revision v2 promoted: the primary serves every request (ü, 日本)",
			want:   "revision v2 promoted: the primary serves every request (ü, 日本)",
		},
		"Escapes": {
			reason: "Escape sequences (a retitled window, a cleared screen, colours, OSC 52 to the clipboard) are written out, not sent to the terminal.",
			in:     "ok\x1b]0;pwned\a\x1b[2J\x1b[31mFAKE\x1b[0m\x1b]52;c;ZWNobw==\a",
			want:   `ok\x1b]0;pwned\x07\x1b[2J\x1b[31mFAKE\x1b[0m\x1b]52;c;ZWNobw==\x07`,
		},
		"ForgedLine": {
			reason: "A newline cannot forge a line of the tree: line breaks and tabs become spaces.",
			in:     "ok\nConditions:    all good\r\tx",
			want:   "ok Conditions:    all good  x",
		},
		"C1AndFormat": {
			reason: "C1 controls (a one-byte CSI), bidirectional overrides and zero-width characters are written out.",
			in:     "a\u009b2Jb\u202etxt.exe\u200b",
			want:   `a\u009b2Jb\u202etxt.exe\u200b`,
		},
		"NotUTF8": {
			reason: "Bytes that are not UTF-8 are written as bytes.",
			in:     "a\xffb",
			want:   `a\xffb`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, printableText(tc.in)); diff != "" {
				t.Errorf("%s\nprintableText(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

// TestTreeOfAForgedStatus: what anyone who may write the status or an
// event puts there reaches the terminal as text.
func TestTreeOfAForgedStatus(t *testing.T) {
	xr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
		"metadata": map[string]any{"name": "web", "namespace": "demo", "uid": "u1"},
		"spec":     map[string]any{"traffic": map[string]any{"steps": []any{map[string]any{"weight": int64(10)}}}},
		"status": map[string]any{"rollout": map[string]any{
			"phase": "Progressing", "revision": "v2", "step": int64(-1),
			"message": "ok\x1b]0;pwned\a\x1b[2J\nConditions:    all good",
		}},
	}}
	event := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "X\x1b[8m",
		"metadata":       map[string]any{"name": "e", "namespace": "demo", "creationTimestamp": "2026-12-02T10:00:00Z"},
		"involvedObject": map[string]any{"kind": "CanaryRoute", "name": "web", "uid": "u1"},
		"message":        "\x1b[8mhidden\x1b[0m",
		"lastTimestamp":  "2026-12-02T10:00:00Z",
	}}
	var b strings.Builder
	if err := renderTree(&b, snapshot{named: xr, xr: xr, events: []*unstructured.Unstructured{event}}, time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.ContainsAny(got, "\x1b\a\r") {
		t.Errorf("the tree of a forged status carries control characters:\n%q", got)
	}
	if n := strings.Count(got, "Conditions:"); n > 1 {
		t.Errorf("a newline in the status forged a line: %d Conditions lines\n%s", n, got)
	}
	if xr.Object["status"].(map[string]any)["rollout"].(map[string]any)["message"] != "ok\x1b]0;pwned\a\x1b[2J\nConditions:    all good" { //nolint:forcetypeassert // The test's own object.
		t.Error("renderTree changed the snapshot's objects; it must draw a copy")
	}
}
