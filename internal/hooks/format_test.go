package hooks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// payload is a rollout at its second step, as an event hook says it.
func payload() Payload {
	return Payload{
		Name: "podinfo", Namespace: "test", Phase: "Progressing", Type: Event,
		Metadata: map[string]string{"cmd": "hey -z 1m http://podinfo-canary.test:9898/"},
		Revision: "v2", Step: 1, CanaryWeight: percent.Int(50),
		Reason: "StepAdvanced", Message: "step 2 of 3 at 50%",
		Timestamp: time.Date(2026, 12, 2, 10, 7, 0, 123, time.FixedZone("CET", 3600)),
	}
}

func TestBody(t *testing.T) {
	line := "test/podinfo: revision v2 Progressing (StepAdvanced: step 2 of 3 at 50%); step 1, canary 50%, primary 50%"
	cases := map[string]struct {
		reason string
		format Format
		p      Payload
		want   any // the body, decoded
		err    string
	}{
		"Generic": {
			reason: "Flagger's payload (name, namespace, phase, type, metadata) with the revision, step, weight, reason, message and the time in UTC seconds.",
			format: FormatGeneric,
			p:      payload(),
			want: map[string]any{
				"name": "podinfo", "namespace": "test", "phase": "Progressing", "type": "event",
				"metadata": map[string]any{"cmd": "hey -z 1m http://podinfo-canary.test:9898/"},
				"revision": "v2", "step": 1.0, "canaryWeight": 50.0, "reason": "StepAdvanced", "message": "step 2 of 3 at 50%",
				"timestamp": "2026-12-02T09:07:00Z",
			},
		},
		"GenericDefault": {
			reason: "No format is generic; a fine weight is written as it is.",
			p:      Payload{Name: "r", Namespace: "n", Phase: "Progressing", Type: Rollout, Revision: "v3", CanaryWeight: percent.Hundredths(25)},
			want: map[string]any{
				"name": "r", "namespace": "n", "phase": "Progressing", "type": "rollout", "revision": "v3", "step": 0.0,
				"canaryWeight": 0.25, "timestamp": "0001-01-01T00:00:00Z",
			},
		},
		"Slack": {
			reason: "Slack's incoming webhook takes {\"text\": ...}: the one line.",
			format: FormatSlack,
			p:      payload(),
			want:   map[string]any{"text": line},
		},
		"SlackEscaped": {
			reason: "Attack: a message holding Slack's control characters mentions no channel and hides no link.",
			format: FormatSlack,
			p:      Payload{Name: "r", Namespace: "n", Phase: "Failed", Revision: "v2", Message: "<!channel> see <http://evil|docs> & more"},
			want:   map[string]any{"text": "n/r: revision v2 Failed (&lt;!channel&gt; see &lt;http://evil|docs&gt; &amp; more); step 0, canary 0%, primary 100%"},
		},
		"Discord": {
			reason: "Discord's webhook takes {\"content\": ...}, and mentions no one however the message reads.",
			format: FormatDiscord,
			p:      payload(),
			want:   map[string]any{"content": line, "allowed_mentions": map[string]any{"parse": []any{}}},
		},
		"MSTeams": {
			reason: "A Teams workflow webhook takes an Adaptive Card: one text block, the line.",
			format: FormatMSTeams,
			p:      payload(),
			want: map[string]any{
				"type": "message",
				"attachments": []any{map[string]any{
					"contentType": "application/vnd.microsoft.card.adaptive",
					"content": map[string]any{
						"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
						"body": []any{map[string]any{"type": "TextBlock", "text": line, "wrap": true}},
					},
				}},
			},
		},
		"Unknown": {
			reason: "A format the function does not know is an error, never a body.",
			format: "telegram",
			p:      payload(),
			err:    `unknown format "telegram"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Body(tc.format, tc.p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s\nBody(...) = %s, %v; want an error holding %q", tc.reason, b, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Body(...): %v", err)
			}
			var got any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("Body(...) = %s: not JSON: %v", b, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nBody(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLine(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      Payload
		want   string
	}{
		"ReasonAndMessage": {
			reason: "The route, the revision, what happened, the weights.",
			p:      payload(),
			want:   "test/podinfo: revision v2 Progressing (StepAdvanced: step 2 of 3 at 50%); step 1, canary 50%, primary 50%",
		},
		"ReasonOnly": {
			reason: "A reason without a message.",
			p:      Payload{Name: "r", Namespace: "n", Phase: "Succeeded", Revision: "v2", Reason: "Promoted", CanaryWeight: percent.Max},
			want:   "n/r: revision v2 Succeeded (Promoted); step 0, canary 100%, primary 0%",
		},
		"FineWeight": {
			reason: "A weight in hundredths, as the route carries it.",
			p:      Payload{Name: "r", Namespace: "n", Phase: "Progressing", Revision: "v2", Step: 2, CanaryWeight: percent.Hundredths(50)},
			want:   "n/r: revision v2 Progressing; step 2, canary 0.5%, primary 99.5%",
		},
		"OneLine": {
			reason: "Attack: line ends and control characters in a message would forge a second line in the channel.",
			p:      Payload{Name: "r", Namespace: "n", Phase: "Failed", Revision: "v2", Message: "bad\nn/r: revision v2 Succeeded\u2028\x1b[31m"},
			want:   "n/r: revision v2 Failed (bad n/r: revision v2 Succeeded  [31m); step 0, canary 0%, primary 100%",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Line(tc.p)); diff != "" {
				t.Errorf("%s\nLine(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("Bounded", func(t *testing.T) {
		// A message of 10,000 characters is cut, and the weights stay:
		// with the longest names, a chat line stays within Discord's
		// 2,000 characters.
		p := payload()
		p.Name, p.Namespace, p.Revision = strings.Repeat("n", 253), strings.Repeat("s", 63), strings.Repeat("r", 253)
		p.Message = strings.Repeat("é", 10000)
		got := Line(p)
		if n := utf8.RuneCountInString(got); n > 2000 {
			t.Errorf("Line(...) is %d characters, more than 2,000", n)
		}
		if !strings.HasSuffix(got, "…); step 1, canary 50%, primary 50%") {
			t.Errorf("Line(...) = ...%q: the message cut, the weights kept", got[len(got)-60:])
		}
	})
}

// FuzzBody: whatever a payload holds, each format's body is JSON, its chat
// line one line of at most 2,000 characters, and Slack's text holds no
// control character of Slack's (<, >).
func FuzzBody(f *testing.F) {
	f.Add("podinfo", "test", "v2", "StepAdvanced", "step 2 of 3 at 50%", int32(1), int32(5000))
	f.Add("r", "n", "<!channel>", "\u2028", "a\nb\r\x00\xff", int32(-1), int32(-7))
	f.Fuzz(func(t *testing.T, name, namespace, revision, reason, message string, step, hundredths int32) {
		p := Payload{
			Name: fielderr.Truncate(name, 253, fielderr.Characters, nil), Namespace: fielderr.Truncate(namespace, 63, fielderr.Characters, nil),
			Revision: fielderr.Truncate(revision, 253, fielderr.Characters, nil), Reason: fielderr.Truncate(reason, 64, fielderr.Characters, nil),
			Message: message, Phase: "Progressing", Step: step, CanaryWeight: percent.Hundredths(hundredths).Clamp(),
		}
		line := Line(p)
		if strings.ContainsAny(line, "\n\r\u2028\u2029") || utf8.RuneCountInString(line) > 2000 {
			t.Errorf("Line(...) = %q: not one line of at most 2,000 characters", line)
		}
		for _, format := range Formats {
			b, err := Body(format, p)
			if err != nil || !json.Valid(b) {
				t.Fatalf("Body(%s, ...) = %s, %v: not JSON", format, b, err)
			}
			if format == FormatSlack {
				var m slackMessage
				if err := json.Unmarshal(b, &m); err != nil || strings.ContainsAny(m.Text, "<>") {
					t.Errorf("Body(slack, ...) = %s: Slack's text holds < or >", b)
				}
			}
		}
	})
}
