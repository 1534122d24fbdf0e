package addr

import (
	"net/mail"
	"strings"

	"github.com/deskkit/deskkit"
)

// NormalizeEmail checks an e-mail address, named field in errors, and
// returns it as stored: trimmed, the domain in lower case (domains are case
// blind; the local part belongs to the receiving system, which may not be).
// It takes a bare address only, without a display name or comments, of at
// most maxLen characters. Errors are *deskkit.InputError values naming field.
// verify and channel both check addresses with it, so that an address one
// accepts the other does too.
func NormalizeEmail(field, email string, maxLen int) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", deskkit.Invalid(field, "is required")
	}
	if err := deskkit.CheckText(field, email, maxLen); err != nil {
		return "", err
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Name != "" || a.Address != email {
		return "", deskkit.Invalid(field, "must be an e-mail address such as ann@example.com, without a name or brackets")
	}
	at := strings.LastIndexByte(email, '@')
	local, domain := email[:at], strings.ToLower(email[at+1:])
	if strings.ContainsAny(local, "\"\\ ") {
		// Quoted local parts are legal but no real mailbox needs one, and
		// they would make one address look like many.
		return "", deskkit.Invalid(field, "must be an e-mail address without quotes or spaces")
	}
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") {
		return "", deskkit.Invalid(field, "must have a domain name such as example.com")
	}
	return local + "@" + domain, nil
}
