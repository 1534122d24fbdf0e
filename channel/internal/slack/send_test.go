package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/channel/internal/slack"
	"github.com/deskkit/deskkit/internal/notify"
)

func TestSlackRequest(t *testing.T) {
	far := startSlack(t)
	rep, err := kindtest.NewSender(t).SendReply(context.Background(),
		kindtest.Dest{Kind: kindtest.KindSlack, Name: "ops alerts", Address: far.Hook}, kindtest.Message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if rep.Status != 200 || string(rep.Body) != "ok" {
		t.Errorf("reply = %d %q, want 200 ok", rep.Status, rep.Body)
	}
	want := kindtest.RobotView{
		Method: "POST", Path: hookPath, ContentType: "application/json",
		Body: map[string]any{
			"text": "Test message\n\nThis is a **test** from &lt;deskkit&gt; &amp; friends.",
			"blocks": []any{
				map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "*Test message*"}},
				map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "This is a **test** from &lt;deskkit&gt; &amp; friends."}},
				map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn", "text": "ops alerts"}}},
			},
		},
	}
	if diff := cmp.Diff(want, kindtest.ViewOf(t, far.Only(t))); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// sent is what a test reads of the JSON the fake received.
type sent struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type     string
		Text     *struct{ Text string }
		Elements []struct{ Text string }
	} `json:"blocks"`
}

// sendOne sends m to a fake Slack as channel name and returns what it
// received; the fake has checked it as Slack does.
func sendOne(t *testing.T, name string, m notify.Message) sent {
	t.Helper()
	far := startSlack(t)
	if err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindSlack, Name: name, Address: far.Hook}, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	var s sent
	if err := json.Unmarshal(far.Only(t).Body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSlackEscape: <, > and & are escaped in every text Slack reads as
// markup (title, text, channel name, the notification's text), an escape
// already written among them, so that a text cannot mention @channel or
// forge a link; blocks without text are left out.
func TestSlackEscape(t *testing.T) {
	m := kindtest.Message()
	m.Title = "  <!channel> & <https://evil.example|bank>  "
	m.Text = "a &amp; b > c"
	got := sendOne(t, "<@U123> & co", m)
	want := sent{Text: "&lt;!channel&gt; &amp; &lt;https://evil.example|bank&gt;\n\na &amp;amp; b &gt; c"}
	if got.Text != want.Text {
		t.Errorf("text = %q, want %q", got.Text, want.Text)
	}
	texts := []string{got.Blocks[0].Text.Text, got.Blocks[1].Text.Text, got.Blocks[2].Elements[0].Text}
	wantTexts := []string{"*&lt;!channel&gt; &amp; &lt;https://evil.example|bank&gt;*", "a &amp;amp; b &gt; c", "&lt;@U123&gt; &amp; co"}
	if diff := cmp.Diff(wantTexts, texts); diff != "" {
		t.Errorf("block texts (-want +got):\n%s", diff)
	}

	t.Run("no text, no name", func(t *testing.T) {
		m := kindtest.Message()
		m.Text = "  "
		got := sendOne(t, "", m)
		if len(got.Blocks) != 1 || got.Text != "Test message" {
			t.Errorf("sent %+v, want the title alone", got)
		}
	})
}

// TestSlackCut sends texts around Slack's limits: cut only when they must
// be, to the limit in UTF-16 units with "…", never inside an escape or a
// character; the fake refuses any text over its limit.
func TestSlackCut(t *testing.T) {
	tests := []struct {
		name, title, text string
		wantTitle         string // the title block's text
		wantText          string // the text block's
	}{
		{"text at the limit", "T", strings.Repeat("a", slack.MaxText), "*T*", strings.Repeat("a", slack.MaxText)},
		{"text one over", "T", strings.Repeat("a", slack.MaxText+1), "*T*", strings.Repeat("a", slack.MaxText-1) + "…"},
		{"escapes at the limit", "T", strings.Repeat("&", slack.MaxText/5), "*T*", strings.Repeat("&amp;", slack.MaxText/5)},
		{"escapes one over", "T", strings.Repeat("&", slack.MaxText/5+1), "*T*", strings.Repeat("&amp;", slack.MaxText/5-1) + "…"},
		{"astral characters count two", "T", strings.Repeat("😀", slack.MaxText/2+1), "*T*", strings.Repeat("😀", slack.MaxText/2-1) + "…"},
		{"three-byte characters count one", "T", strings.Repeat("验", slack.MaxText), "*T*", strings.Repeat("验", slack.MaxText)},
		{"title at the limit", strings.Repeat("t", slack.MaxTitle), "x", "*" + strings.Repeat("t", slack.MaxTitle) + "*", "x"},
		{"title one over", strings.Repeat("t", slack.MaxTitle+1), "x", "*" + strings.Repeat("t", slack.MaxTitle-1) + "…*", "x"},
		{"title of escapes", strings.Repeat("<", slack.MaxTitle), "x", "*" + strings.Repeat("&lt;", (slack.MaxTitle-1)/4) + "…*", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := kindtest.Message()
			m.Title, m.Text = tt.title, tt.text
			got := sendOne(t, "ops", m)
			if g := got.Blocks[0].Text.Text; g != tt.wantTitle {
				t.Errorf("title block of %d runes, want %d: ends %q", utf8.RuneCountInString(g), utf8.RuneCountInString(tt.wantTitle), g[max(0, len(g)-12):])
			}
			if g := got.Blocks[1].Text.Text; g != tt.wantText {
				t.Errorf("text block of %d runes, want %d: ends %q", utf8.RuneCountInString(g), utf8.RuneCountInString(tt.wantText), g[max(0, len(g)-12):])
			}
		})
	}
}

// TestSlackFailures: each answer Slack gives, as the Failure it becomes
// and the verdict on it; the HTTP status alone gives the verdict's
// Disable, as the registry's flush classifies again with it alone.
func TestSlackFailures(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		retryAfter string
		want       notify.Failure
		verdict    kind.Verdict
	}{
		{"invalid payload", 400, "invalid_payload", "", notify.Failure{Status: 400, Errmsg: "invalid_payload",
			Reason: deskkit.Plain("Slack answered 400 Bad Request (invalid_payload): it refused the message as malformed, and will refuse it again")}, kind.GiveUp},
		{"no text", 400, "no_text", "", notify.Failure{Status: 400, Errmsg: "no_text",
			Reason: deskkit.Plain("Slack answered 400 Bad Request (no_text): it refused the message as malformed, and will refuse it again")}, kind.GiveUp},
		{"invalid blocks", 400, "invalid_blocks", "", notify.Failure{Status: 400, Errmsg: "invalid_blocks",
			Reason: deskkit.Plain("Slack answered 400 Bad Request (invalid_blocks): it refused the message as malformed, and will refuse it again")}, kind.GiveUp},
		{"action prohibited", 403, "action_prohibited", "", notify.Failure{Status: 403, Errmsg: "action_prohibited",
			Reason: deskkit.Plain("Slack answered 403 Forbidden (action_prohibited): an admin of the workspace has restricted posting to the webhook's Slack channel")}, kind.GiveUp},
		{"general channel", 403, "posting_to_general_channel_denied", "", notify.Failure{Status: 403, Errmsg: "posting_to_general_channel_denied",
			Reason: deskkit.Plain("Slack answered 403 Forbidden (posting_to_general_channel_denied): only some members may post to the workspace's general Slack channel")}, kind.GiveUp},
		{"invalid token", 403, "invalid_token", "", notify.Failure{Status: 403, Errmsg: "invalid_token",
			Reason: deskkit.Plain("Slack answered 403 Forbidden (invalid_token): the incoming webhook was removed, or its URL is wrong")}, kind.GiveUp},
		{"webhook removed", 404, "no_service", "", notify.Failure{Status: 404, Errmsg: "no_service",
			Reason: deskkit.Plain("Slack answered 404 Not Found (no_service): the incoming webhook was removed, or its URL is wrong")}, kind.Disable},
		{"channel deleted", 404, "channel_not_found", "", notify.Failure{Status: 404, Errmsg: "channel_not_found",
			Reason: deskkit.Plain("Slack answered 404 Not Found (channel_not_found): the webhook's Slack channel was deleted")}, kind.Disable},
		{"channel archived", 410, "channel_is_archived", "", notify.Failure{Status: 410, Errmsg: "channel_is_archived",
			Reason: deskkit.Plain("Slack answered 410 Gone (channel_is_archived): the webhook's Slack channel is archived")}, kind.Disable},
		{"404 without a word", 404, "", "", notify.Failure{Status: 404,
			Reason: deskkit.Plain("Slack answered 404 Not Found")}, kind.Disable},
		{"rate limited", 429, "rate_limited", "30", notify.Failure{Status: 429, Errmsg: "rate_limited", Retryable: true, RetryAfter: 30 * time.Second,
			Reason: deskkit.Plain("Slack answered 429 Too Many Requests: rate_limited")}, kind.Retry},
		{"request timeout", 408, "", "", notify.Failure{Status: 408, Retryable: true,
			Reason: deskkit.Plain("Slack answered 408 Request Timeout")}, kind.Retry},
		{"server error", 500, "", "", notify.Failure{Status: 500, Retryable: true,
			Reason: deskkit.Plain("Slack answered 500 Internal Server Error")}, kind.Retry},
		{"unavailable", 503, "service_unavailable", "120", notify.Failure{Status: 503, Errmsg: "service_unavailable", Retryable: true, RetryAfter: 2 * time.Minute,
			Reason: deskkit.Plain("Slack answered 503 Service Unavailable: service_unavailable")}, kind.Retry},
		{"an unknown word, cleaned", 400, "bad\n\x1b[31mthing\u202e " + strings.Repeat("x", 300), "", notify.Failure{Status: 400,
			Errmsg: "bad [31mthing " + strings.Repeat("x", 200-len("bad [31mthing ")) + "…",
			Reason: deskkit.Plain("Slack answered 400 Bad Request: bad [31mthing " + strings.Repeat("x", 200-len("bad [31mthing ")) + "…")}, kind.GiveUp},
		{"200 but not ok", 200, "<html>welcome</html>", "", notify.Failure{Status: 200,
			Reason: deskkit.Plain(`Slack answered 200 OK but not "ok": is the address a Slack incoming webhook?`)}, kind.Retry},
		{"redirect", 302, "", "", notify.Failure{Status: 302,
			Reason: deskkit.Plain("Slack answered a redirect (302), which is not followed: use the final URL")}, kind.Retry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindSlack, Address: far.URL + hookPath}, kindtest.Message())
			f := kindtest.AsFailure(t, err)
			if f == nil {
				t.Fatal("Send succeeded, want a failure")
			}
			if diff := cmp.Diff(&tt.want, f, kindtest.IgnoreErr); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
			if v := kindtest.KindSlack.Classify(f); v != tt.verdict {
				t.Errorf("Classify = %v, want %v", v, tt.verdict)
			}
			if v := kindtest.KindSlack.Classify(&notify.Failure{Status: f.Status}); (v == kind.Disable) != (tt.verdict == kind.Disable) {
				t.Errorf("Classify of the status alone = %v, want Disable only when %v is", v, tt.verdict)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindSlack, Address: kindtest.ClosedURL(t) + hookPath}, kindtest.Message())
		f := kindtest.AsFailure(t, err)
		if f == nil || !f.Retryable || !errors.Is(f, syscall.ECONNREFUSED) || kindtest.KindSlack.Classify(f) != kind.Retry {
			t.Errorf("Send = %v, want a retryable connection refusal", err)
		}
	})
}
