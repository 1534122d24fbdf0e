// Package kind declares what the channel registry asks of a kind of
// channel (a webhook, e-mail, a chat robot), the values a kind and the
// registry exchange, and the address rules several kinds share. Each kind
// is a package of its own beside this one, and the registry lists them in
// one place: a new kind is one new package and one line in that list.
//
// # Overview
//
// A Kind says how it is named (its type, aliases, quota, who may add one),
// checks and normalises an address and a secret as a client sends them,
// masks an address for readers who may not see it whole and names the
// parts of it that a far end's answer must not echo, makes the secrets a
// channel or a test of one signs with, sends one message (already written
// in the reader's language), and classifies a failure: retry, give up or
// disable the channel.
//
// The kinds are deskkit's own: the interface names the SSRF-guarded HTTP
// client and the senders' values, which the module keeps to itself. A
// public interface through which a host adds kinds of its own is a later
// step.
//
// # Errors
//
// Address and Secret return *deskkit.InputError values naming "address"
// or "secret", or the SSRF guard's refusal of a literal address, which the
// registry reports as its address-blocked error. Send returns nil, the
// shared sending code's Failure saying what the far end answered, or a
// *deskkit.InputError for a malformed target or message.
package kind

import (
	"context"
	"errors"
	"io/fs"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// Kind is one kind of channel. Its methods keep no state, so one value
// serves every channel of the kind, concurrently.
type Kind interface {
	// Info names the kind.
	Info() Info
	Addresses
	Delivery
}

// Info names a kind and says how many of it a tenant may have and who may
// add one.
type Info struct {
	// Type is the canonical name, as answers write it: "WEBHOOK".
	Type string
	// Aliases are other names accepted on input ("WECHAT").
	Aliases []string
	// Quota is how many channels of the kind one tenant may have.
	Quota int
	// Name is the kind's name for people, in test messages: "webhook".
	Name string
	// Permission is who may add, replace or test a channel of the kind.
	Permission Permission
	// Label is the kind's name in a form or a list: "DingTalk robot".
	Label deskkit.Text
	// Field is the address field's label in a form: "Address (URL)".
	Field deskkit.Text
	// Hint is the address's shape, as a form shows it under the field and
	// a refusal names it: "a DingTalk robot URL: https://HOST/robot/...".
	Hint deskkit.Text
	// SecretHint says what secret a client may give a channel of the kind,
	// as a form shows it: "a DingTalk signing secret, SEC...". It is zero
	// for a kind that takes none from a client.
	SecretHint deskkit.Text
	// OwnSecret says that deskkit makes each channel's signing secret
	// (NewSecret), shown when it is added (and again to an admin who
	// reveals or rotates it) and never taken from a client at its add: a
	// channel added again gets a new one.
	OwnSecret bool
	// Headers says that the kind sends a channel's custom HTTP headers
	// (the channel's Input.Headers) with each of its messages, tests
	// included; the registry refuses headers for a kind without it.
	Headers bool
	// Doc is the kind in the API's reference, in English.
	Doc Doc
	// Messages are the kind's own catalogues (messages/zh-Hans.json):
	// the translations of the messages its package writes, keyed by
	// their English as the module's catalogues are.
	Messages fs.FS
}

// Doc is a kind in the API's reference: English sentences that the
// reference puts after the kind's type ("WORKPLACE_CHAT: ...").
type Doc struct {
	// Summary is what the kind is: "a DingTalk custom robot".
	Summary string
	// Address is the address's rules: "a DingTalk robot URL, ...".
	Address string
	// Secret is the secret a client may give, "" for none: "DingTalk's
	// signing secret (SEC...), which turns on signing".
	Secret string
	// Test is what a test message is: "the robot's markdown message ...".
	Test string
}

// Permission is who may add, replace or test a channel of a kind.
type Permission int

const (
	// Managers are admins and the principals the host's authorizer allows
	// the action.
	Managers Permission = iota
	// Admins are admins alone: the host's authorizer is not asked.
	Admins
)

// Addresses are a kind's rules for its addresses and secrets.
type Addresses interface {
	// Address checks an address, trimmed and not empty, and returns it as
	// stored. c is the SSRF guard, which checks a literal host.
	Address(c *safehttp.Client, address string) (string, error)
	// Secret checks a secret a client sent, trimmed: nil means none is
	// stored, "" that the stored one goes.
	Secret(secret string) (*string, error)
	// Mask is address as a reader who may not see addresses whole sees it.
	Mask(address string) string
	// Hidden are the parts of address that a far end's answer must not
	// show, in whatever spelling it echoes them.
	Hidden(address string) []string
}

// Delivery is how a kind signs, sends and judges its messages.
type Delivery interface {
	// NewSecret is the secret a new channel of the kind is given, "" for
	// none.
	NewSecret() (string, error)
	// Test says how a test of a channel at address signs its message:
	// stored is the stored channel's secret, own whether it may sign
	// (the address is the stored channel's), given the secret the client
	// sent, if any.
	Test(address, stored string, own bool, given *string) (Test, error)
	// Target is what Send sends a channel's messages to, with what the
	// sends of a batch share parsed once where it parses.
	Target(name, address, secret string) notify.Target
	// Send delivers m, checked and with compact data, to t once,
	// through s's HTTP client or mailer.
	Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error)
	// Classify says what becomes of a channel after the failure f.
	Classify(f *notify.Failure) Verdict
}

// Test is how a test message of a channel is signed and counted.
type Test struct {
	// Signing is the secret that signs the message; "" for none.
	Signing string
	// Shown is a throwaway secret made for the test, which the caller is
	// given so that the receiver can be checked; "" when none was made.
	Shown string
	// Messages is how many messages the test sends, for the throttle.
	Messages int
}

// Verdict is what a failure means for the delivery and its channel.
type Verdict int

const (
	// Retry: the delivery is tried again on its schedule.
	Retry Verdict = iota
	// GiveUp: no retry can help the delivery; the channel stays.
	GiveUp
	// Disable: no retry can help, and the channel is gone at the far end,
	// so it is disabled.
	Disable
)

// ErrNoSecret is the refusal of a secret by a kind that takes none: its
// secrets are made by deskkit, or it has none. The registry answers it
// with the kinds that take one.
var ErrNoSecret = errors.New("kind: the kind takes no secret")

// One is a test of one message, signed with nothing.
var One = Test{Messages: 1}

// ClientSigned is the test of a robot whose secret is the client's and
// whose signature covers only the time (DingTalk, Feishu): one message
// signed with the secret given, or else with the stored one when own, or
// not at all. A stored secret signing for an address the caller picks
// would let the caller post anything to that robot for an hour.
func ClientSigned(stored string, own bool, given *string) Test {
	switch {
	case given != nil && *given != "":
		return Test{Signing: *given, Messages: 1}
	case own:
		return Test{Signing: stored, Messages: 1}
	}
	return One
}
