package kind_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
)

// SendReply returns the reply's status and body on success and on
// failure, so that a delivery log can keep them.
func TestSendReply(t *testing.T) {
	secret, _ := notify.NewWebhookSecret()
	for _, c := range []struct {
		name   string
		status int
		body   string
		kind   kind.Kind
		path   string
		failed bool
	}{
		{"webhook 204", http.StatusNoContent, "", kindtest.KindWebhook, "/hook", false},
		{"webhook 200 with a body", http.StatusOK, "thanks", kindtest.KindWebhook, "/hook", false},
		{"webhook 500", http.StatusInternalServerError, "down for maintenance", kindtest.KindWebhook, "/hook", true},
		{"webhook 302", http.StatusFound, "moved", kindtest.KindWebhook, "/hook", true},
		{"robot errcode 0", http.StatusOK, `{"errcode":0,"errmsg":"ok"}`, kindtest.KindWeCom, "/cgi-bin/webhook/send?key=K", false},
		{"robot errcode 93000", http.StatusOK, `{"errcode":93000,"errmsg":"invalid webhook url"}`, kindtest.KindWeCom, "/cgi-bin/webhook/send?key=K", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, kindtest.Answer(c.status, c.body))
			target := kindtest.Dest{Kind: c.kind, Name: "ops", Address: far.URL + c.path}
			if c.kind == kindtest.KindWebhook {
				target.Secret = secret
			}
			rep, err := kindtest.NewSender(t).SendReply(context.Background(), target, kindtest.Message())
			if (err != nil) != c.failed {
				t.Fatalf("SendReply error %v, want failed %v", err, c.failed)
			}
			if rep.Status != c.status || string(rep.Body) != c.body || rep.Accepted != nil {
				t.Errorf("reply %d %q %v, want %d %q", rep.Status, rep.Body, rep.Accepted, c.status, c.body)
			}
		})
	}
	t.Run("no reply", func(t *testing.T) {
		rep, err := kindtest.NewSender(t).SendReply(context.Background(),
			kindtest.Dest{Kind: kindtest.KindWebhook, Address: kindtest.ClosedURL(t), Secret: secret}, kindtest.Message())
		if err == nil || rep.Status != 0 || rep.Body != nil {
			t.Errorf("reply %+v, %v", rep, err)
		}
	})
}

// An e-mail send reports the addresses the server took, and Target.Only
// limits it to some of the target's addresses.
func TestSendReplyEmail(t *testing.T) {
	var sent []string
	s := kindtest.NewSender(t)
	s.Mail = kindtest.MailerFunc(func(_ context.Context, m deskkit.Mail) error {
		sent = append(sent, m.To)
		if m.To == "bob@example.org" {
			return errors.New("mailbox full")
		}
		return nil
	})
	target := kindtest.Dest{Kind: kindtest.KindEmail, Name: "ops", Address: "ann@example.com,bob@example.org,cy@example.net"}
	rep, err := s.SendReply(context.Background(), target, kindtest.Message())
	f := kindtest.AsFailure(t, err)
	if f == nil || !slices.Equal(f.Recipients, []string{"bob@example.org"}) ||
		!slices.Equal(rep.Accepted, []string{"ann@example.com", "cy@example.net"}) || rep.Status != 0 {
		t.Fatalf("reply %+v, failure %+v", rep, f)
	}
	sent = nil
	target.Only = []string{"cy@example.net", "gone@example.com"}
	rep, err = s.SendReply(context.Background(), target, kindtest.Message())
	if err != nil || !slices.Equal(sent, []string{"cy@example.net"}) || !slices.Equal(rep.Accepted, sent) {
		t.Errorf("with Only: sent %v, reply %+v, %v", sent, rep, err)
	}
}
