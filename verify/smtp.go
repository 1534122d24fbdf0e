package verify

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/mailer"
)

// SMTPTLS is how an SMTPMailer secures its connection.
type SMTPTLS string

// The TLS modes of SMTPConfig.
const (
	// SMTPTLSNone sends in clear text: for a relay on the same host.
	SMTPTLSNone SMTPTLS = "none"
	// SMTPTLSStartTLS upgrades the connection with STARTTLS (usually port
	// 587) and fails if the server does not offer it.
	SMTPTLSStartTLS SMTPTLS = "starttls"
	// SMTPTLSImplicit speaks TLS from the first byte (usually port 465).
	SMTPTLSImplicit SMTPTLS = "tls"
)

// SMTPConfig is how an SMTPMailer reaches its mail server.
type SMTPConfig struct {
	// Addr is the server's host:port. Required.
	Addr string
	// From is the sender: "Deskkit <noreply@example.com>". Required.
	From string
	// Username and Password authenticate (SMTP AUTH) when Username is set.
	// A password never travels in clear text: with SMTPTLSNone a Username
	// is refused unless the host is loopback.
	Username string
	Password string
	// TLS is SMTPTLSNone, SMTPTLSStartTLS or SMTPTLSImplicit;
	// SMTPTLSStartTLS if "".
	TLS SMTPTLS
	// TLSConfig is the TLS client configuration, e.g. to trust a private
	// CA; optional.
	TLSConfig *tls.Config
	// Timeout bounds one message from dial to the server's answer; 10s if 0.
	Timeout time.Duration
	// HelloName is the name sent in EHLO; the machine's host name if "".
	HelloName string
}

// SMTPMailer is a deskkit.Mailer that sends through an SMTP server, one connection
// per message. It is safe for concurrent use.
type SMTPMailer struct {
	m *mailer.Mailer
}

var _ deskkit.Mailer = (*SMTPMailer)(nil)

// NewSMTPMailer checks cfg and returns a mailer. It does not connect.
func NewSMTPMailer(cfg SMTPConfig) (*SMTPMailer, error) {
	m, err := mailer.New(mailer.Config{
		Addr:      cfg.Addr,
		From:      cfg.From,
		Username:  cfg.Username,
		Password:  cfg.Password,
		TLS:       mailer.TLSMode(cfg.TLS),
		TLSConfig: cfg.TLSConfig,
		Timeout:   cfg.Timeout,
		HelloName: cfg.HelloName,
	})
	if err != nil {
		return nil, fmt.Errorf("verify: SMTP: %w", err)
	}
	return &SMTPMailer{m: m}, nil
}

// SendMail sends m as plain text, or as multipart/alternative when m.HTML
// is set, marked Auto-Submitted so that no vacation notice answers it. It
// returns nil once the server has accepted it, and an error otherwise: a bad
// address, a server that cannot be reached or refuses STARTTLS, the
// credentials or the recipient, or ctx or the Timeout ending first (the
// error then wraps context.Canceled or context.DeadlineExceeded).
func (s *SMTPMailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return s.m.Send(ctx, mailer.Message{
		To:      []string{m.To},
		Subject: m.Subject,
		Text:    m.Text,
		HTML:    m.HTML,
		Headers: map[string]string{"Auto-Submitted": "auto-generated"},
	})
}
