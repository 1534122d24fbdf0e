package verify

import "context"

// SMS is one text message to a mobile number.
type SMS struct {
	To     string // E.164: "+8613800138000"
	Text   string // the rendered template, code included
	BizKey BizKey
	// Code is the code inside Text, or "" for a notice: a sender that logs
	// leaves it out, a template provider sends it as its parameter.
	Code string
	// NewAddress is, in a notice (Code ""), the new number masked as Text
	// shows it, "+86*******8000": a template provider's notice parameter.
	NewAddress string
	// Locale is the language of Text ("zh-CN", "en"), "" for the sender's
	// default; a template provider picks its template by it (sms.Templates).
	Locale string
}

// SMSSender delivers text messages. SendSMS returns nil only when the
// provider accepted the message; any error (a refused number, a gateway
// that is down or answers non-2xx, ctx done) means it was not accepted;
// an *sms.Error in it tells the Verifier a throttle or a final refusal.
// The Verifier never calls it inside a database transaction.
type SMSSender interface {
	SendSMS(ctx context.Context, m SMS) error
}

// E-mail goes through the host's deskkit.Mailer (verify/smtp's Mailer is
// one), as a deskkit.Mail whose BizKey is the bizKey and whose Code is the
// code, "" for a notice; see SMS.Code.
