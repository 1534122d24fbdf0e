// Package dingtalk is the WORKPLACE_CHAT kind of channel: a DingTalk
// custom robot.
//
// # Overview
//
// The address is the robot's URL, https://HOST/robot/send?access_token=TOKEN,
// with that path and exactly one non-empty access_token, and without
// timestamp or sign; DINGTALK is an alias of the type. A message is the
// robot's markdown with the channel's name in its title and text, so that
// a robot in keyword mode finds it when the name is the keyword. The
// channel may hold DingTalk's signing secret ("SEC..."): each message's
// URL then gets a timestamp and sign, the base64 HMAC-SHA256 of
// timestamp + "\n" + secret. Masked, the URL shows "***" for every query
// value.
//
// # Errors
//
// Success is a JSON answer with errcode 0. A refused keyword, signature or
// timestamp is 310000; the rate limit (130101, 20 messages a minute,
// retried after a minute) and "busy" (-1) are worth a retry, as are
// timeouts, 429 and 5xx; a failure is retried on the delivery's schedule
// unless the SSRF guard refused the address, and the channel is never
// disabled for one answer.
package dingtalk

import (
	"embed"
	"net/url"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// The robot's path and key parameter.
const (
	path  = "/robot/send"
	token = "access_token"
)

// hint is the address's shape, as a form and a refusal say it.
var hint = deskkit.Textf("a DingTalk robot URL: https://HOST/robot/send?access_token=TOKEN")

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the WORKPLACE_CHAT kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 10 DingTalk robots a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "WORKPLACE_CHAT", Aliases: []string{"DINGTALK"}, Quota: 10, Name: "DingTalk robot",
		Label:      deskkit.Textf("DingTalk robot"),
		Field:      deskkit.Textf("Address (URL)"),
		Hint:       hint,
		SecretHint: deskkit.Textf("a DingTalk signing secret, SEC..."),
		Doc: kind.Doc{
			Summary: "a DingTalk custom robot",
			Address: "a DingTalk robot URL, https://HOST/robot/send?access_token=TOKEN, without timestamp or sign",
			Secret:  "DingTalk's signing secret (SEC...), which turns on signing",
			Test:    "the robot's markdown message, the channel name in title and text for DingTalk's keyword mode, signed with the secret in the body, or else with the stored one when the address is the stored channel's",
		},
		Messages: messages,
	}
}

// Address checks a DingTalk robot's URL; it is stored as sent.
func (Kind) Address(c *safehttp.Client, address string) (string, error) {
	u, err := kind.CheckURL(c, address)
	if err != nil {
		return "", err
	}
	if err := kind.CheckRobot(u, path, token, hint); err != nil {
		return "", err
	}
	q, _ := url.ParseQuery(u.RawQuery) // CheckRobot parsed it
	if q.Has("timestamp") || q.Has("sign") {
		return "", deskkit.Invalid("address", "must not carry timestamp or sign: they are added to each message when the channel has a secret")
	}
	return address, nil
}

// Secret checks DingTalk's signing secret; "" removes the stored one.
func (Kind) Secret(s string) (*string, error) {
	if s == "" {
		return &s, nil
	}
	if !strings.HasPrefix(s, "SEC") {
		return nil, deskkit.Invalid("secret", "must be a DingTalk signing secret, which starts with SEC")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return nil, deskkit.Invalid("secret", "must be printable ASCII without spaces, as DingTalk shows it")
		}
	}
	return &s, nil
}

// Mask is the URL with every query value as "***".
func (Kind) Mask(address string) string { return kind.MaskQuery(address) }

// Hidden are the query's values, the access_token among them.
func (Kind) Hidden(address string) []string { return kind.HiddenQuery(address) }

// NewSecret is "": a DingTalk secret is the client's to give.
func (Kind) NewSecret() (string, error) { return "", nil }

// Test signs as kind.ClientSigned says.
func (Kind) Test(_, stored string, own bool, given *string) (kind.Test, error) {
	return kind.ClientSigned(stored, own, given), nil
}

// Classify retries every failure.
func (Kind) Classify(*notify.Failure) kind.Verdict { return kind.Retry }
