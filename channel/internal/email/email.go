// Package email is the EMAIL kind of channel: mail to a list of
// addresses, one message each.
//
// # Overview
//
// The address is a comma-separated list of 1 to 10 bare e-mail addresses,
// stored normalised: trimmed, each domain in lower case, duplicates
// dropped, joined by commas without spaces. A message goes to each address
// alone, so that recipients do not see one another, in the reader's
// language with a footer naming the channel; nothing is signed. Addresses
// are the tenant's own people, so they are never masked.
//
// # Errors
//
// A delivery fails for the addresses the mail server did not take; its
// retries, on the delivery's schedule, go to those alone. A temporary
// refusal, a timeout or a refused connection is worth a retry; the channel
// is never disabled for one answer.
package email

import (
	"embed"
	"errors"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// MaxAddrs is how many different addresses one channel may list.
const MaxAddrs = 10

// maxEmailBytes bounds one address: RFC 5321's limit of a path.
const maxEmailBytes = 254

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the EMAIL kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 20 e-mail channels a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "EMAIL", Quota: 20, Name: "e-mail",
		Label: deskkit.Textf("E-mail"),
		Field: deskkit.Textf("E-mail addresses"),
		Hint:  deskkit.Textf("1 to 10 e-mail addresses, separated by commas."),
		Doc: kind.Doc{
			Summary: "mail to 1 to 10 addresses",
			Address: "a comma-separated list of 1 to 10 bare e-mail addresses, stored normalised (domain in lower case, duplicates dropped, joined by commas without spaces)",
			Test:    "one message to each address, through the host's mail server",
		},
		Messages: messages,
	}
}

// Address checks and normalises a comma-separated list of addresses.
func (Kind) Address(_ *safehttp.Client, list string) (string, error) {
	var out []string
	seen := map[string]bool{}
	for i, a := range strings.Split(list, ",") {
		if strings.TrimSpace(a) == "" {
			return "", deskkit.Invalid("address", "the %s e-mail address is empty: separate addresses by single commas", ordinal(i+1))
		}
		n, err := addr.NormalizeEmail("address", a, maxEmailBytes)
		if err != nil {
			var ie *deskkit.InputError
			if errors.As(err, &ie) {
				return "", deskkit.Invalid("address", "the %s e-mail address %s", ordinal(i+1), ie.Rule)
			}
			return "", err
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		if len(out) > MaxAddrs {
			return "", deskkit.Invalid("address", "must hold at most %d different e-mail addresses", MaxAddrs)
		}
	}
	return strings.Join(out, ","), nil
}

// ordinal writes n as "1st", "2nd", "3rd", "4th", ..., "11th", "21st", a
// Text so that other languages write it their way.
func ordinal(n int) deskkit.Text {
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		return deskkit.Textf("%dst", n)
	case n%10 == 2:
		return deskkit.Textf("%dnd", n)
	case n%10 == 3:
		return deskkit.Textf("%drd", n)
	}
	return deskkit.Textf("%dth", n)
}

// Secret refuses a secret that is not empty: e-mail is not signed.
func (Kind) Secret(secret string) (*string, error) {
	if secret != "" {
		return nil, kind.ErrNoSecret
	}
	return nil, nil
}

// Mask is the list unchanged.
func (Kind) Mask(address string) string { return address }

// Hidden is the list whole.
func (Kind) Hidden(address string) []string { return []string{address} }

// NewSecret is "": e-mail is not signed.
func (Kind) NewSecret() (string, error) { return "", nil }

// Test sends one message to each address, unsigned.
func (Kind) Test(address, _ string, _ bool, _ *string) (kind.Test, error) {
	return kind.Test{Messages: strings.Count(address, ",") + 1}, nil
}

// Target is the channel's list of addresses.
func (Kind) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}

// Classify retries every failure.
func (Kind) Classify(*notify.Failure) kind.Verdict { return kind.Retry }
