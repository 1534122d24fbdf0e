package channel

import (
	"context"
	"slices"
	"strings"

	"github.com/deskkit/deskkit"

	"github.com/deskkit/deskkit/channel/internal/dingtalk"
	"github.com/deskkit/deskkit/channel/internal/email"
	"github.com/deskkit/deskkit/channel/internal/feishu"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/slack"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/channel/internal/wecom"
	"github.com/deskkit/deskkit/internal/i18n"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// registered are the kinds of channel, in the order the documentation
// gives them: the one place that lists them.
var registered = [...]kind.Kind{webhook.Kind{}, email.Kind{}, wecom.Kind{}, dingtalk.Kind{}, feishu.Kind{}, slack.Kind{}}

// The kinds' own catalogues join every deskkit.Messages made after this
// package is loaded: their messages are written only by this package.
func init() {
	for _, k := range registered {
		if m := k.Info().Messages; m != nil {
			i18n.Register(m)
		}
	}
}

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
func (u unknown) Send(context.Context, *notify.Sender, notify.Target, notify.Message) (notify.Reply, error) {
	return notify.Reply{}, deskkit.Invalid("kind", "must be one of %s, not %q", typeList(), string(u.t))
}
func (unknown) Classify(*notify.Failure) kind.Verdict { return kind.Retry }

func errUnknown(t Type) error { _, err := ParseType(string(t)); return err }

// TypeInfo describes a type of channel for a form, a list or a reference:
// what TypeInfos answers for each registered kind.
type TypeInfo struct {
	Type Type
	// Aliases are other names a client may write for the type (WECHAT).
	Aliases []string
	// Quota is how many channels of the type one tenant may have.
	Quota int
	// Label is the type's name in a form or a list: "DingTalk robot".
	Label deskkit.Text
	// Field is the address field's label in a form: "Address (URL)".
	Field deskkit.Text
	// Hint is the address's shape, as a form shows it under the field.
	Hint deskkit.Text
	// SecretHint is the secret a client may give a channel of the type
	// (Input.Secret), as a form shows it; zero when the type takes none.
	SecretHint deskkit.Text
	// OwnSecret says that deskkit makes each channel's signing secret,
	// shown by Add (Added.Secret) and again only by RevealSecret and
	// RotateSecret, which only such types have: a channel added again gets
	// a new one.
	OwnSecret bool
	// Headers says that channels of the type send custom HTTP headers
	// (Input.Headers); only such types take them.
	Headers bool
	// Summary, AddressDoc, SecretDoc and TestDoc are English sentences for
	// an API reference: what the type is, its address's rules, the secret
	// a client may give ("" for none), and what a test of it sends.
	Summary, AddressDoc, SecretDoc, TestDoc string
}

// TypeInfos describes the channel types in the order of Types, in a new
// slice each time.
func TypeInfos() []TypeInfo {
	out := make([]TypeInfo, len(registered))
	for i, k := range registered {
		in := k.Info()
		out[i] = TypeInfo{
			Type: Type(in.Type), Aliases: slices.Clone(in.Aliases), Quota: in.Quota,
			Label: in.Label, Field: in.Field, Hint: in.Hint, SecretHint: in.SecretHint, OwnSecret: in.OwnSecret, Headers: in.Headers,
			Summary: in.Doc.Summary, AddressDoc: in.Doc.Address, SecretDoc: in.Doc.Secret, TestDoc: in.Doc.Test,
		}
	}
	return out
}

// TypeInfoOf describes t, and false if no registered kind has it.
func TypeInfoOf(t Type) (TypeInfo, bool) {
	for _, ti := range TypeInfos() {
		if ti.Type == t {
			return ti, true
		}
	}
	return TypeInfo{}, false
}

// typeList names the registered types with their aliases, for a
// refusal: "WEBHOOK, EMAIL, ENTERPRISE_CHAT (alias WECHAT), ...".
func typeList() deskkit.Text {
	var items []deskkit.Text
	for _, k := range registered {
		in := k.Info()
		if len(in.Aliases) == 0 {
			items = append(items, deskkit.Plain(in.Type))
			continue
		}
		items = append(items, deskkit.Textf("%s (alias %s)", in.Type, strings.Join(in.Aliases, ", ")))
	}
	return listOf(items)
}

// errNoSecret is the refusal of a secret by type t, which takes none: it
// names the types that take one.
func errNoSecret(t Type) error {
	var items []deskkit.Text
	for _, k := range registered {
		if in := k.Info(); !in.SecretHint.IsZero() {
			items = append(items, deskkit.Textf("%s (%s)", in.Type, in.SecretHint))
		}
	}
	return deskkit.Invalid("secret", "is taken only by channels of type %s; %s channels take none", listOf(items), string(t))
}

// listOf joins items as a list in the reader's language: "a, b, c" in
// English, "a、b、c" in Chinese.
func listOf(items []deskkit.Text) deskkit.Text {
	if len(items) == 0 {
		return deskkit.Text{}
	}
	out := items[0]
	for _, it := range items[1:] {
		out = deskkit.Textf("%s, %s", out, it)
	}
	return out
}
