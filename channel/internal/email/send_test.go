package email_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/mailer"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/smtptest"
)

// smtpMailer is the real SMTP client as a deskkit.Mailer, as the channel
// package adapts it.
type smtpMailer struct{ m *mailer.Mailer }

var _ deskkit.Mailer = smtpMailer{}

func (s smtpMailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return s.m.Send(ctx, mailer.Message{To: []string{m.To}, Subject: m.Subject, Text: m.Text, HTML: m.HTML})
}

// newMailer returns an SMTP client of the server at addr.
func newMailer(t *testing.T, addr string, timeout time.Duration) smtpMailer {
	t.Helper()
	m, err := mailer.New(mailer.Config{Addr: addr, From: "noreply@deskkit.test", TLS: mailer.TLSNone, Timeout: timeout, HelloName: "client.deskkit.test"})
	if err != nil {
		t.Fatal(err)
	}
	return smtpMailer{m}
}

// routeMailer sends mail to each address through its own mailer, so that
// one send can meet servers that answer differently.
type routeMailer map[string]deskkit.Mailer

func (r routeMailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return r[m.To].SendMail(ctx, m)
}

func TestEmailSend(t *testing.T) {
	srv := smtptest.Start(t)
	s := kindtest.NewSender(t)
	s.Mail = newMailer(t, srv.Addr, 5*time.Second)
	s.AppName = "Acme Desk"
	m := kindtest.Message()
	m.Title = "Disk almost full 磁盘"
	m.Text = "Volume /data is at 93%."
	err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindEmail, Name: "ops team", Address: "ann@example.com,bob@example.org"}, m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	type view struct {
		To       []string
		HeaderTo string
		Subject  string
		Bodies   map[string]string
	}
	var got []view
	for _, msg := range srv.Messages() {
		p, err := msg.Parse()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, view{To: msg.To, HeaderTo: p.Header.Get("To"), Subject: p.Subject, Bodies: p.Bodies()})
	}
	body := "Volume /data is at 93%.\n\n-- \nSent by Acme Desk to the e-mail channel \"ops team\"."
	want := []view{
		{To: []string{"ann@example.com"}, HeaderTo: "<ann@example.com>", Subject: "[Acme Desk] Disk almost full 磁盘", Bodies: map[string]string{"text/plain": body}},
		{To: []string{"bob@example.org"}, HeaderTo: "<bob@example.org>", Subject: "[Acme Desk] Disk almost full 磁盘", Bodies: map[string]string{"text/plain": body}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestEmailDefaultAppNameAndNoText(t *testing.T) {
	srv := smtptest.Start(t)
	s := kindtest.NewSender(t)
	s.Mail = newMailer(t, srv.Addr, 5*time.Second)
	m := kindtest.Message()
	m.Text = ""
	if err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindEmail, Name: "ops", Address: "ann@example.com"}, m); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	p, err := msgs[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	got := []string{p.Subject, p.Bodies()["text/plain"]}
	want := []string{"[deskkit] Test message", "-- \nSent by deskkit to the e-mail channel \"ops\"."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subject and body (-want +got):\n%s", diff)
	}
}

func TestEmailFailures(t *testing.T) {
	silentAddr, _ := smtptest.StartSilent(t)
	tests := []struct {
		name     string
		setup    func(t *testing.T) (deskkit.Mailer, *smtptest.Server)
		address  string
		want     *notify.Failure
		wantSent []string // recipients the good server got mail for
	}{{
		name:    "no mail server",
		setup:   func(*testing.T) (deskkit.Mailer, *smtptest.Server) { return nil, nil },
		address: "ann@example.com,bob@example.org",
		want:    &notify.Failure{Reason: deskkit.Plain("no mail server is configured"), Recipients: []string{"ann@example.com", "bob@example.org"}},
	}, {
		name: "one recipient refused, permanently",
		setup: func(t *testing.T) (deskkit.Mailer, *smtptest.Server) {
			good, bad := smtptest.Start(t), smtptest.Start(t)
			bad.Reject(550, "mailbox unavailable")
			return routeMailer{
				"ann@example.com": newMailer(t, good.Addr, 5*time.Second),
				"bob@example.org": newMailer(t, bad.Addr, 5*time.Second),
				"cat@example.net": newMailer(t, good.Addr, 5*time.Second),
			}, good
		},
		address: "ann@example.com,bob@example.org,cat@example.net",
		want: &notify.Failure{
			Reason:     deskkit.Plain("the mail to 1 of 3 addresses failed: bob@example.org: the mail server refused it with SMTP 550"),
			Recipients: []string{"bob@example.org"},
		},
		wantSent: []string{"ann@example.com", "cat@example.net"},
	}, {
		name: "only recipient refused, temporarily",
		setup: func(t *testing.T) (deskkit.Mailer, *smtptest.Server) {
			srv := smtptest.Start(t)
			srv.Reject(451, "try again later")
			return newMailer(t, srv.Addr, 5*time.Second), srv
		},
		address: "ann@example.com",
		want: &notify.Failure{
			Reason:     deskkit.Plain("the mail to ann@example.com: the mail server refused it with SMTP 451"),
			Recipients: []string{"ann@example.com"}, Retryable: true,
		},
	}, {
		name: "mail server refuses connections",
		setup: func(t *testing.T) (deskkit.Mailer, *smtptest.Server) {
			return newMailer(t, strings.TrimPrefix(kindtest.ClosedURL(t), "http://"), 5*time.Second), nil
		},
		address: "ann@example.com,bob@example.org",
		want: &notify.Failure{
			Reason: deskkit.Plain("the mail to 2 of 2 addresses failed: ann@example.com: the mail server refused the connection; " +
				"bob@example.org: the mail server refused the connection"),
			Recipients: []string{"ann@example.com", "bob@example.org"}, Retryable: true,
		},
	}, {
		name: "mail server never answers",
		setup: func(t *testing.T) (deskkit.Mailer, *smtptest.Server) {
			return newMailer(t, silentAddr, 200*time.Millisecond), nil
		},
		address: "ann@example.com",
		want:    &notify.Failure{Reason: deskkit.Plain("the mail to ann@example.com: timed out"), Recipients: []string{"ann@example.com"}, Retryable: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kindtest.NewSender(t)
			var good *smtptest.Server
			s.Mail, good = tt.setup(t)
			err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindEmail, Name: "ops", Address: tt.address}, kindtest.Message())
			if diff := cmp.Diff(tt.want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if !errors.Is(err, notify.ErrFailed) || !errors.Is(err, deskkit.ErrUnavailable) {
				t.Errorf("Send = %v, want it to match ErrFailed", err)
			}
			if good != nil {
				var sent []string
				for _, m := range good.Messages() {
					sent = append(sent, m.To...)
				}
				if diff := cmp.Diff(tt.wantSent, sent); diff != "" {
					t.Errorf("mail delivered (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestEmailStopsAfterCancel: once the caller's ctx has ended no further
// connection is tried, and every address left is reported.
func TestEmailStopsAfterCancel(t *testing.T) {
	srv := smtptest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	real := newMailer(t, srv.Addr, 5*time.Second)
	s := kindtest.NewSender(t)
	s.Mail = kindtest.MailerFunc(func(ctx context.Context, m deskkit.Mail) error {
		calls++
		err := real.SendMail(ctx, m)
		cancel() // the caller gives up after the first mail
		return err
	})
	err := s.Send(ctx, kindtest.Dest{Kind: kindtest.KindEmail, Name: "ops", Address: "ann@example.com,bob@example.org,cat@example.net"}, kindtest.Message())
	want := &notify.Failure{
		Reason:     deskkit.Plain("the mail to 2 of 3 addresses failed: bob@example.org: cancelled; cat@example.net: cancelled"),
		Recipients: []string{"bob@example.org", "cat@example.net"}, Retryable: true,
	}
	if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
		t.Errorf("Send (-want +got):\n%s", diff)
	}
	if calls != 1 || len(srv.Messages()) != 1 {
		t.Errorf("%d SendMail calls, %d messages delivered; want 1 and 1", calls, len(srv.Messages()))
	}
}
