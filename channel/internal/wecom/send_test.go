package wecom_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/channel/internal/wecom"
)

func TestWeComRequest(t *testing.T) {
	far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0,"errmsg":"ok"}`))
	err := kindtest.NewSender(t).Send(context.Background(),
		kindtest.Dest{Kind: kindtest.KindWeCom, Name: "ops", Address: far.URL + "/cgi-bin/webhook/send?key=693a91f6-7xxx"}, kindtest.Message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := kindtest.RobotView{
		Method: "POST", Path: "/cgi-bin/webhook/send", RawQuery: "key=693a91f6-7xxx", ContentType: "application/json",
		Body: map[string]any{"msgtype": "markdown", "markdown": map[string]any{
			"content": "**Test message**\n\nThis is a **test** from <deskkit> & friends.",
		}},
	}
	if diff := cmp.Diff(want, kindtest.ViewOf(t, far.Only(t))); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestWeComCut sends texts around WeCom's limit: the content is cut to
// MaxBytes on a character boundary, and only when it must be.
func TestWeComCut(t *testing.T) {
	const heading = "**Test message**\n\n"
	fits := heading + strings.Repeat("a", wecom.MaxBytes-len(heading))
	tests := []struct {
		name, text string
		want       func(content string) bool
	}{
		{"exactly the limit", strings.Repeat("a", wecom.MaxBytes-len(heading)), func(c string) bool { return c == fits }},
		{"one byte over", strings.Repeat("a", wecom.MaxBytes-len(heading)+1), func(c string) bool {
			return c == fits[:wecom.MaxBytes-len("…")]+"…"
		}},
		{"three-byte characters", strings.Repeat("验", 2000), func(c string) bool {
			// 18 + 3*1359 + 3 = 4098 > 4096, so 1358 fit before "…".
			return c == heading+strings.Repeat("验", 1358)+"…"
		}},
		{"no text", "", func(c string) bool { return c == "**Test message**" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
			m := kindtest.Message()
			m.Text = tt.text
			if err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindWeCom, Address: far.URL + "/cgi-bin/webhook/send?key=K"}, m); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Markdown struct{ Content string } `json:"markdown"`
			}
			if err := json.Unmarshal(far.Only(t).Body, &body); err != nil {
				t.Fatal(err)
			}
			c := body.Markdown.Content
			if len(c) > wecom.MaxBytes || !utf8.ValidString(c) || !tt.want(c) {
				t.Errorf("content of %d bytes (valid UTF-8: %v) is not as wanted; ends %q", len(c), utf8.ValidString(c), c[max(0, len(c)-12):])
			}
		})
	}
}
