package hooks

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
)

const (
	errFmtFormat = "unknown format %q"
	errEncode    = "cannot encode the body"
	// maxMessage bounds the rollout's message in a chat line, in
	// characters, so that the weights, at the line's end, stay in it: the
	// names and the revision are at most 253 characters each, and the
	// whole line stays within Discord's 2,000.
	maxMessage = 512
)

// Body is what a webhook of the format receives for the payload: the
// payload as JSON (generic), or the chat service's message of its one
// line (Line).
func Body(format Format, p Payload) ([]byte, error) {
	p.Timestamp = p.Timestamp.UTC().Truncate(time.Second)
	var body any
	switch format {
	case FormatGeneric, "":
		body = p
	case FormatSlack:
		body = slackMessage{Text: slackEscape(Line(p))}
	case FormatMSTeams:
		body = teamsMessage(Line(p))
	case FormatDiscord:
		body = discordMessage{Content: Line(p), AllowedMentions: discordMentions{Parse: []string{}}}
	default:
		return nil, errors.Errorf(errFmtFormat, format)
	}
	b, err := json.Marshal(body)
	return b, errors.Wrap(err, errEncode)
}

// Line is the payload as one line a person reads in a chat channel: the
// route, the revision, what happened, and the weights, such as
//
//	test/podinfo: revision v2 Progressing (StepAdvanced: step 2 of 3 at 50%); step 1, canary 50%, primary 50%
//
// It is one line (whatever a message holds of line ends or control
// characters is a space), its message cut to 512 characters.
func Line(p Payload) string {
	var b strings.Builder
	b.WriteString(p.Namespace + "/" + p.Name + ": revision " + p.Revision + " " + p.Phase)
	message := fielderr.Truncate(p.Message, maxMessage, fielderr.Characters, nil)
	switch {
	case p.Reason != "" && message != "":
		b.WriteString(" (" + p.Reason + ": " + message + ")")
	case p.Reason != "":
		b.WriteString(" (" + p.Reason + ")")
	case message != "":
		b.WriteString(" (" + message + ")")
	}
	b.WriteString("; step " + strconv.Itoa(int(p.Step)) + ", canary " + p.CanaryWeight.String() + "%, primary " + p.CanaryWeight.Rest().String() + "%")
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, b.String())
}

// slackMessage is a Slack incoming webhook's message.
type slackMessage struct {
	Text string `json:"text"`
}

// slackEscape escapes the three characters Slack's text formatting reads
// as control: a route's message then cannot mention a channel (<!here>)
// or a user, or hide a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// discordMessage is a Discord webhook's message. AllowedMentions parses
// none: an @everyone in a message pings no one.
type discordMessage struct {
	Content         string          `json:"content"`
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

type discordMentions struct {
	Parse []string `json:"parse"`
}

// teamsMessage is a Microsoft Teams workflow webhook's message: an
// Adaptive Card of one text block. (Decision: Teams' Office 365
// connectors, whose MessageCard Flagger sends, are retired; the workflows
// that replace them take Adaptive Cards.)
func teamsMessage(line string) any {
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    []any{map[string]any{"type": "TextBlock", "text": line, "wrap": true}},
			},
		}},
	}
}
