// Package smtp is a deskkit.Mailer that sends through an SMTP server: the
// mailer of the verification service's codes and notices, and of the
// channels' e-mail.
//
// # Overview
//
// New takes the server's host:port, the sender, optional credentials
// (SMTP AUTH, never in clear text but to a loopback host), and how the
// connection is secured: STARTTLS by default, implicit TLS, or none for a
// relay on the same host. Each message is one connection, bounded by
// Config.Timeout (10 seconds by default), and is marked Auto-Submitted so
// that no vacation notice answers it.
//
// # Errors
//
// SendMail returns nil once the server has accepted the message; any
// error means it was not accepted. A 5xx reply of the server is final
// for the Verifier's notices, which are not retried after it.
package smtp

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/mailer"
)

// TLSMode is how an Mailer secures its connection.
type TLSMode string

// The TLS modes of Config.
const (
	// TLSNone sends in clear text: for a relay on the same host.
	TLSNone TLSMode = "none"
	// TLSStartTLS upgrades the connection with STARTTLS (usually port
	// 587) and fails if the server does not offer it.
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit speaks TLS from the first byte (usually port 465).
	TLSImplicit TLSMode = "tls"
)

// Config is how an Mailer reaches its mail server.
type Config struct {
	// Addr is the server's host:port. Required.
	Addr string
	// From is the sender: "Deskkit <noreply@example.com>". Required.
	From string
	// Username and Password authenticate (SMTP AUTH) when Username is set.
	// A password never travels in clear text: with TLSNone a Username
	// is refused unless the host is loopback.
	Username string
	Password string
	// TLS is TLSNone, TLSStartTLS or TLSImplicit;
	// TLSStartTLS if "".
	TLS TLSMode
	// TLSConfig is the TLS client configuration, e.g. to trust a private
	// CA; optional.
	TLSConfig *tls.Config
	// Timeout bounds one message from dial to the server's answer; 10s if 0.
	Timeout time.Duration
	// HelloName is the name sent in EHLO; the machine's host name if "".
	HelloName string
}

// Mailer is a deskkit.Mailer that sends through an SMTP server, one connection
// per message. It is safe for concurrent use.
type Mailer struct {
	m *mailer.Mailer
}

var _ deskkit.Mailer = (*Mailer)(nil)

// New checks cfg and returns a mailer. It does not connect.
func New(cfg Config) (*Mailer, error) {
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
		return nil, fmt.Errorf("smtp: %w", err)
	}
	return &Mailer{m: m}, nil
}

// SendMail sends m as plain text, or as multipart/alternative when m.HTML
// is set, marked Auto-Submitted so that no vacation notice answers it. It
// returns nil once the server has accepted it, and an error otherwise: a bad
// address, a server that cannot be reached or refuses STARTTLS, the
// credentials or the recipient, or ctx or the Timeout ending first (the
// error then wraps context.Canceled or context.DeadlineExceeded).
func (s *Mailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return s.m.Send(ctx, mailer.Message{
		To:      []string{m.To},
		Subject: m.Subject,
		Text:    m.Text,
		HTML:    m.HTML,
		Headers: map[string]string{"Auto-Submitted": "auto-generated"},
	})
}
