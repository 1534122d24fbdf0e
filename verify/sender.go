package verify

import "context"

// SMS is one text message to a mobile number.
type SMS struct {
	To     string // E.164: "+8613800138000"
	Text   string // the rendered template, code included
	BizKey BizKey
	// Code is the verification code inside Text, or "" for a notice, so
	// that a sender which logs (LogSender) can leave it out.
	Code string
}

// SMSSender delivers text messages. SendSMS returns nil only when the
// provider accepted the message; any error (a refused number, a gateway
// that is down or answers non-2xx, ctx done) means it was not accepted. The
// Verifier never calls it inside a database transaction.
type SMSSender interface {
	SendSMS(ctx context.Context, m SMS) error
}

// Mail is one e-mail message to one recipient: a code sent to several
// addresses goes out as one message each, so that no recipient sees the
// others.
type Mail struct {
	To      string // one address: "ann@example.com"
	Subject string
	Text    string // the plain-text body
	HTML    string // the HTML body; "" sends plain text only
	BizKey  BizKey
	// Code is the verification code inside the bodies, or "" for a notice;
	// see SMS.Code.
	Code string
}

// Mailer delivers e-mail. SendMail returns nil only when the mail server
// accepted the message for delivery; any error means it did not. The
// Verifier never calls it inside a database transaction.
type Mailer interface {
	SendMail(ctx context.Context, m Mail) error
}
