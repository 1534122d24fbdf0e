// Package logsender has Sender, a verify.SMSSender and deskkit.Mailer
// that logs each message instead of sending it: for development and
// tests, and for a deployment that has no gateway yet. Hand the one value
// to verify.New as both senders:
//
//	s := logsender.Sender{Logger: logger}
//	v, err := verify.New(db, dir, s, s, secret, nil)
//
// Without ShowCodes no line holds a code, so a production log does not
// let its readers pass checks.
package logsender

import (
	"context"
	"log/slog"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// Sender is both a verify.SMSSender and a deskkit.Mailer that sends
// nothing: it logs one Info line per message, with the recipient, the
// bizKey and, for mail, the subject.
type Sender struct {
	// Logger receives the lines; slog.Default() if nil.
	Logger *slog.Logger
	// ShowCodes adds the message text and the code, as the attribute
	// "code", to each line of a message that carries one. It is a
	// development switch: with it, anyone who reads the log can pass any
	// check. Without it the text is left out and the code is cut out of a
	// subject that carries it.
	ShowCodes bool
}

var (
	_ verify.SMSSender = Sender{}
	_ deskkit.Mailer   = Sender{}
)

// SendSMS logs m. It returns only ctx's error, when ctx is done.
func (l Sender) SendSMS(ctx context.Context, m verify.SMS) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	attrs := []slog.Attr{slog.String("to", m.To), slog.String("bizKey", string(m.BizKey))}
	if l.ShowCodes {
		attrs = append(attrs, slog.String("text", m.Text))
		if m.Code != "" {
			attrs = append(attrs, slog.String("code", m.Code))
		}
	}
	l.logger().LogAttrs(ctx, slog.LevelInfo, "verify: SMS not sent, logged", attrs...)
	return nil
}

// SendMail logs m. It returns only ctx's error, when ctx is done.
func (l Sender) SendMail(ctx context.Context, m deskkit.Mail) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	subject := m.Subject
	if !l.ShowCodes && m.Code != "" {
		subject = strings.ReplaceAll(subject, m.Code, "[code]")
	}
	attrs := []slog.Attr{slog.String("to", m.To), slog.String("bizKey", m.BizKey), slog.String("subject", subject)}
	if l.ShowCodes {
		attrs = append(attrs, slog.String("text", m.Text))
		if m.Code != "" {
			attrs = append(attrs, slog.String("code", m.Code))
		}
	}
	l.logger().LogAttrs(ctx, slog.LevelInfo, "verify: mail not sent, logged", attrs...)
	return nil
}

func (l Sender) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}
