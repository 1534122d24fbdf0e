package kind_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
)

// TestSendRefusesMalformedInput: a bad target or message is the caller's
// bug, an InputError naming the field, and nothing is sent.
func TestSendRefusesMalformedInput(t *testing.T) {
	far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
	secret, _ := notify.NewWebhookSecret()
	webhook := kindtest.Dest{Kind: kindtest.KindWebhook, Name: "ops", Address: far.URL, Secret: secret}
	tests := []struct {
		name   string
		target kindtest.Dest
		edit   func(m *notify.Message)
		field  string
	}{
		{"id without prefix", webhook, func(m *notify.Message) { m.ID = "01hx3v9k" }, "id"},
		{"id prefix only", webhook, func(m *notify.Message) { m.ID = "msg_" }, "id"},
		{"id with a dot", webhook, func(m *notify.Message) { m.ID = "msg_a.b" }, "id"},
		{"id with a line break", webhook, func(m *notify.Message) { m.ID = "msg_a\r\nX-Evil: 1" }, "id"},
		{"id too long", webhook, func(m *notify.Message) { m.ID = "msg_" + strings.Repeat("a", 100) }, "id"},
		{"no type", webhook, func(m *notify.Message) { m.Type = "" }, "type"},
		{"no time", webhook, func(m *notify.Message) { m.Time = time.Time{} }, "time"},
		{"no title", webhook, func(m *notify.Message) { m.Title = " " }, "title"},
		{"title of two lines", webhook, func(m *notify.Message) { m.Title = "a\nBcc: x@y.z" }, "title"},
		{"text not UTF-8", webhook, func(m *notify.Message) { m.Text = "\xff" }, "message"},
		{"data not JSON", webhook, func(m *notify.Message) { m.Data = json.RawMessage(`{`) }, "data"},
		{"data an array", webhook, func(m *notify.Message) { m.Data = json.RawMessage(`[1]`) }, "data"},
		{"data null", webhook, func(m *notify.Message) { m.Data = json.RawMessage(`null`) }, "data"},
		{"webhook without secret", kindtest.Dest{Kind: kindtest.KindWebhook, Address: far.URL}, nil, "secret"},
		{"webhook relative URL", kindtest.Dest{Kind: kindtest.KindWebhook, Address: "/hook", Secret: secret}, nil, "address"},
		{"webhook ftp URL", kindtest.Dest{Kind: kindtest.KindWebhook, Address: "ftp://example.com/x", Secret: secret}, nil, "address"},
		{"webhook URL with password", kindtest.Dest{Kind: kindtest.KindWebhook, Address: "http://u:p@example.com/", Secret: secret}, nil, "address"},
		{"WeCom without host", kindtest.Dest{Kind: kindtest.KindWeCom, Address: "https:///cgi-bin/webhook/send?key=K"}, nil, "address"},
		{"DingTalk secret with a space", kindtest.Dest{Kind: kindtest.KindDingTalk, Address: far.URL + "/robot/send?access_token=T", Secret: "SEC a"}, nil, "secret"},
		{"e-mail with a display name", kindtest.Dest{Kind: kindtest.KindEmail, Address: "Ann <ann@example.com>"}, nil, "address"},
		{"e-mail list with a hole", kindtest.Dest{Kind: kindtest.KindEmail, Address: "ann@example.com,,bob@example.org"}, nil, "address"},
		{"e-mail not an address", kindtest.Dest{Kind: kindtest.KindEmail, Address: "ann"}, nil, "address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := kindtest.Message()
			if tt.edit != nil {
				tt.edit(&m)
			}
			s := kindtest.NewSender(t)
			s.Mail = kindtest.MailerFunc(func(context.Context, deskkit.Mail) error {
				t.Error("mail sent")
				return nil
			})
			err := s.Send(context.Background(), tt.target, m)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Fatalf("Send = %v, want an InputError for %s", err, tt.field)
			}
			if !errors.Is(err, deskkit.ErrInvalid) || errors.Is(err, notify.ErrFailed) {
				t.Errorf("Send = %v: want deskkit.ErrInvalid, not ErrFailed", err)
			}
		})
	}
	if n := len(far.Requests()); n != 0 {
		t.Errorf("far end received %d requests, want 0", n)
	}
}

func TestSendWithoutHTTPClient(t *testing.T) {
	s := kindtest.Sender{Sender: &notify.Sender{}}
	err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindWeCom, Address: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K"}, kindtest.Message())
	var f *notify.Failure
	if err == nil || errors.As(err, &f) {
		t.Fatalf("Send = %v, want an error that is not a Failure", err)
	}
}
