package deskkit

import "context"

// Mail is one e-mail message to one recipient, as every service hands it
// to the host's Mailer: verify's codes and notices, and channel's e-mail
// channels. A message for several addresses goes out as one Mail each, so
// that no recipient sees the others.
type Mail struct {
	To      string // one bare address: "ann@example.com"
	Subject string
	Text    string // the plain-text body
	HTML    string // the HTML body; "" sends plain text only
	// BizKey names what the message is for, for logs and routing: verify's
	// bizKey ("LOGIN", "BIND_EMAIL"...); "" for a channel's message.
	BizKey string
	// Code is the one-time code inside the subject and bodies, "" if none,
	// so that a Mailer that logs (verify/logsender's Sender) can leave it out.
	Code string
}

// Mailer delivers e-mail; verify/smtp's Mailer is one. SendMail returns nil
// only when the mail server accepted the message for delivery; any error
// means it did not. The services never call it inside a database
// transaction. An error that wraps the SMTP client's (with an IsTemp() bool
// method, as go-mail's *SendError has) lets a channel tell a temporary
// refusal from a permanent one; one that wraps context.DeadlineExceeded is
// a timeout.
type Mailer interface {
	SendMail(ctx context.Context, m Mail) error
}
