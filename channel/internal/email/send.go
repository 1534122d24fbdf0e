package email

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"syscall"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// maxEmailAddrs bounds the addresses of one e-mail target, as a guard
// against a malformed list (a channel holds at most MaxAddrs).
const maxEmailAddrs = 100

// Send mails m to each address of t (or of t.Only), one message each, so
// that the recipients do not see one another. The messages go one after
// another: a relay may limit the connections of one client, and there are
// at most ten addresses.
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	addrs, err := splitAddresses(t.Address)
	if err != nil {
		return notify.Reply{}, err
	}
	if t.Only != nil {
		addrs = slices.DeleteFunc(addrs, func(a string) bool { return !slices.Contains(t.Only, a) })
	}
	if s.Mail == nil {
		return notify.Reply{}, &notify.Failure{Reason: deskkit.Textf("no mail server is configured"), Recipients: addrs}
	}
	app := s.App()
	msg := deskkit.Mail{
		Subject: "[" + app + "] " + m.Title,
		Text: strings.TrimLeft(m.Text+"\n\n", "\n") +
			// "-- " opens a signature: mail readers set it apart.
			"-- \n" + deskkit.Textf("Sent by %s to the e-mail channel %q.", app, t.Name).LocalizedMessage(m.Messages, m.Lang),
	}
	f := &notify.Failure{}
	// The same message goes to every address: the request is its
	// subject and text.
	rep := notify.Reply{Request: &notify.Request{Method: "SMTP", Body: []byte("Subject: " + msg.Subject + "\n\n" + msg.Text)}}
	var whys deskkit.Text // "a: why; b: why"
	var failed int
	var errs []error
	for _, a := range addrs {
		msg.To = a
		err := ctx.Err() // once ctx has ended, do not dial for the rest
		if err == nil {
			err = s.Mail.SendMail(ctx, msg)
		}
		if err == nil {
			rep.Accepted = append(rep.Accepted, a)
			continue
		}
		why, retry := mailReason(err)
		f.Recipients = append(f.Recipients, a)
		if why = deskkit.Textf("%s: %s", a, why); failed == 0 {
			whys = why
		} else {
			whys = deskkit.Textf("%s; %s", whys, why)
		}
		failed++
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		f.Retryable = f.Retryable || retry
	}
	if len(f.Recipients) == 0 {
		return rep, nil
	}
	f.Err = errors.Join(errs...)
	if len(addrs) == 1 {
		f.Reason = deskkit.Textf("the mail to %s", whys)
	} else {
		f.Reason = deskkit.Textf("the mail to %d of %d addresses failed: %s", failed, len(addrs), whys)
	}
	return rep, f
}

// splitAddresses reads t.Address for e-mail: bare addresses separated by
// commas.
func splitAddresses(list string) ([]string, error) {
	var addrs []string
	for i, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		p, err := mail.ParseAddress(a)
		if err != nil || p.Address != a || p.Name != "" {
			return nil, deskkit.Invalid("address", "e-mail address %d must be a bare address like a@example.com", i+1)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) > maxEmailAddrs {
		return nil, deskkit.Invalid("address", "must list at most %d e-mail addresses", maxEmailAddrs)
	}
	return addrs, nil
}

// smtpError is go-mail's *SendError as the mailer returns it, without
// importing go-mail here.
type smtpError interface {
	ErrorCode() int // the server's reply code; 0 when the server said nothing
	IsTemp() bool
}

// mailReason says why one mail failed, for the client, and whether a
// retry may help.
func mailReason(err error) (deskkit.Text, bool) {
	var se smtpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return deskkit.Textf("timed out"), true
	case errors.Is(err, context.Canceled):
		return deskkit.Textf("cancelled"), true
	case errors.As(err, &se) && se.ErrorCode() != 0:
		// Only the code: the server's text describes the host's relay,
		// not the tenant's business.
		return deskkit.Textf("the mail server refused it with SMTP %d", se.ErrorCode()), se.IsTemp()
	case errors.Is(err, syscall.ECONNREFUSED):
		return deskkit.Textf("the mail server refused the connection"), true
	}
	return deskkit.Textf("the mail server could not take it"), true
}
