package channel

import (
	"context"
	"strings"

	"github.com/deskkit/deskkit"

	"github.com/deskkit/deskkit/channel/internal/dingtalk"
	"github.com/deskkit/deskkit/channel/internal/email"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/channel/internal/wecom"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// registered are the kinds of channel, in the order the documentation
// gives them: the one place that lists them.
var registered = [...]kind.Kind{webhook.Kind{}, email.Kind{}, wecom.Kind{}, dingtalk.Kind{}}

// byType finds the registered kinds by canonical name and alias.
var byType, byAlias = func() (map[Type]kind.Kind, map[string]kind.Kind) {
	types, aliases := map[Type]kind.Kind{}, map[string]kind.Kind{}
	for _, k := range registered {
		i := k.Info()
		types[Type(i.Type)] = k
		for _, a := range i.Aliases {
			aliases[a] = k
		}
	}
	return types, aliases
}()

// kindOf is t's kind, or for a type no kind has (a row written by hand)
// one that masks its address whole and fails its sends.
func kindOf(t Type) kind.Kind {
	if k, ok := byType[t]; ok {
		return k
	}
	return unknown{t}
}

// unknown is the kind of a type that no registered kind has. Its
// channels cannot be added (ParseType refuses the type), so only reading
// and sending see it: it masks the address whole and fails every send as
// a malformed target.
type unknown struct{ t Type }

func (u unknown) Info() kind.Info {
	return kind.Info{Type: string(u.t), Name: strings.ToLower(string(u.t)), Permission: kind.Admins}
}

func (u unknown) Address(*safehttp.Client, string) (string, error) { return "", errUnknown(u.t) }
func (u unknown) Secret(string) (*string, error)                   { return nil, errUnknown(u.t) }
func (unknown) Mask(string) string                                 { return masked }
func (unknown) Hidden(address string) []string                     { return kind.HiddenQuery(address) }
func (unknown) NewSecret() (string, error)                         { return "", nil }
func (unknown) Test(string, string, bool, *string) (kind.Test, error) {
	return kind.One, nil
}
func (unknown) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}
func (unknown) Send(context.Context, *notify.Sender, notify.Target, notify.Message) (notify.Reply, error) {
	return notify.Reply{}, deskkit.Invalid("kind", "must be one of webhook, wecom, dingtalk, email, not %q", "")
}
func (unknown) Classify(*notify.Failure) kind.Verdict { return kind.Retry }

func errUnknown(t Type) error { _, err := ParseType(string(t)); return err }
