package smtp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/smtptest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/smtp"
)

// The transport itself (TLS modes, AUTH, refusals, deadlines) is proved
// in internal/mailer; these tests prove what Mailer adds: its config
// reaches the mailer, a Mail becomes the right message, and errors come
// back wrapped so that callers can tell a deadline.

func TestMailerSendMail(t *testing.T) {
	serverTLS, clientTLS := smtptest.CA(t)
	srv := smtptest.StartConfig(t, &smtptest.Config{StartTLS: serverTLS, Users: map[string]string{"ann": "s3cret"}})
	m, err := smtp.New(smtp.Config{
		Addr:      srv.Addr,
		From:      "Deskkit <noreply@deskkit.test>",
		Username:  "ann",
		Password:  "s3cret",
		TLS:       smtp.TLSStartTLS,
		TLSConfig: clientTLS,
		HelloName: "client.deskkit.test",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.SendMail(context.Background(), deskkit.Mail{
		To:      "bob@example.com",
		Subject: "Bestätigung 验证码",
		Text:    "Code: 482913",
		HTML:    "<p>Code: <b>482913</b></p>",
		BizKey:  string(verify.BindEmail),
		Code:    "482913",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	envelope := got[0]
	envelope.Data = nil
	wantEnvelope := smtptest.Message{Helo: "client.deskkit.test", User: "ann", TLS: true, From: "noreply@deskkit.test", To: []string{"bob@example.com"}}
	if diff := cmp.Diff(wantEnvelope, envelope); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	p, err := got[0].Parse()
	if err != nil {
		t.Fatalf("%v\n%s", err, got[0].Data)
	}
	type view struct {
		From, To, Subject, AutoSubmitted, MediaType string
		Bodies                                      map[string]string
	}
	want := view{
		From:          `"Deskkit" <noreply@deskkit.test>`,
		To:            "<bob@example.com>",
		Subject:       "Bestätigung 验证码",
		AutoSubmitted: "auto-generated",
		MediaType:     "multipart/alternative",
		Bodies:        map[string]string{"text/plain": "Code: 482913", "text/html": "<p>Code: <b>482913</b></p>"},
	}
	gotView := view{
		From: p.Header.Get("From"), To: p.Header.Get("To"), Subject: p.Subject,
		AutoSubmitted: p.Header.Get("Auto-Submitted"), MediaType: p.MediaType, Bodies: p.Bodies(),
	}
	if diff := cmp.Diff(want, gotView); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestMailerErrors(t *testing.T) {
	_, clientTLS := smtptest.CA(t)
	plain := smtptest.Start(t)

	t.Run("starttls refused", func(t *testing.T) {
		m, err := smtp.New(smtp.Config{Addr: plain.Addr, From: "noreply@deskkit.test", TLSConfig: clientTLS})
		if err != nil {
			t.Fatal(err)
		}
		err = m.SendMail(context.Background(), deskkit.Mail{To: "bob@example.com", Subject: "s", Text: "t"})
		if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
			t.Fatalf("SendMail error = %v, want one about STARTTLS", err)
		}
		if n := len(plain.Messages()); n != 0 {
			t.Errorf("server received %d messages, want none", n)
		}
	})
	t.Run("ctx deadline", func(t *testing.T) {
		addr, _ := smtptest.StartSilent(t)
		m, err := smtp.New(smtp.Config{Addr: addr, From: "noreply@deskkit.test", TLS: smtp.TLSNone, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err = m.SendMail(ctx, deskkit.Mail{To: "bob@example.com", Subject: "s", Text: "t"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SendMail error = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     smtp.Config
		wantErr string // "" for valid
	}{
		{"starttls", smtp.Config{Addr: "mail.example.com:587", From: "noreply@example.com", Username: "ann", Password: "pw"}, ""},
		{"implicit", smtp.Config{Addr: "mail.example.com:465", From: "noreply@example.com", TLS: smtp.TLSImplicit, Username: "ann"}, ""},
		{"clear text to loopback", smtp.Config{Addr: "127.0.0.1:25", From: "noreply@example.com", TLS: smtp.TLSNone, Username: "ann"}, ""},
		{"password in clear text", smtp.Config{Addr: "mail.example.com:25", From: "noreply@example.com", TLS: smtp.TLSNone, Username: "ann", Password: "pw"}, "clear text"},
		{"unknown TLS", smtp.Config{Addr: "mail.example.com:25", From: "noreply@example.com", TLS: "ssl"}, "TLS"},
		{"no From", smtp.Config{Addr: "mail.example.com:25"}, "From"},
		{"no Addr", smtp.Config{From: "noreply@example.com"}, "Addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := smtp.New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
