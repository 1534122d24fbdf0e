// Package wecom is the ENTERPRISE_CHAT kind of channel: a WeCom (WeChat
// Work) group robot.
//
// # Overview
//
// The address is the robot's URL, https://HOST/cgi-bin/webhook/send?key=KEY,
// with that path and exactly one non-empty key; WECHAT is an alias of the
// type. A message is the robot's markdown, the title in bold and the text,
// cut to 4096 bytes; nothing is signed, the key is the credential. Masked,
// the URL shows "***" for every query value.
//
// # Errors
//
// WeCom answers HTTP 200 to its refusals: success is a JSON answer with
// errcode 0. Its rate limit (45009, 20 messages a minute, retried after a
// minute) and "busy" (-1) are worth a retry, as are timeouts, 429 and 5xx;
// a failure is retried on the delivery's schedule unless the SSRF guard
// refused the address, and the channel is never disabled for one answer.
package wecom

import (
	"embed"
	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// The robot's path and key parameter.
const (
	path = "/cgi-bin/webhook/send"
	key  = "key"
)

// hint is the address's shape, as a form and a refusal say it.
var hint = deskkit.Textf("a WeCom group-robot URL: https://HOST/cgi-bin/webhook/send?key=KEY")

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the ENTERPRISE_CHAT kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 10 WeCom robots a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "ENTERPRISE_CHAT", Aliases: []string{"WECHAT"}, Quota: 10, Name: "WeCom group robot",
		Label: deskkit.Textf("WeCom robot"),
		Field: deskkit.Textf("Address (URL)"),
		Hint:  hint,
		Doc: kind.Doc{
			Summary: "a WeCom (WeChat Work) group robot",
			Address: "a WeCom group-robot URL, https://HOST/cgi-bin/webhook/send?key=KEY",
			Test:    "the robot's markdown message, the title in bold and the text",
		},
		Messages: messages,
	}
}

// Address checks a WeCom robot's URL; it is stored as sent.
func (Kind) Address(c *safehttp.Client, address string) (string, error) {
	u, err := kind.CheckURL(c, address)
	if err != nil {
		return "", err
	}
	if err := kind.CheckRobot(u, path, key, hint); err != nil {
		return "", err
	}
	return address, nil
}

// Secret refuses a secret that is not empty: the key is the credential.
func (Kind) Secret(secret string) (*string, error) {
	if secret != "" {
		return nil, kind.ErrNoSecret
	}
	return nil, nil
}

// Mask is the URL with every query value as "***".
func (Kind) Mask(address string) string { return kind.MaskQuery(address) }

// Hidden are the query's values, the key among them.
func (Kind) Hidden(address string) []string { return kind.HiddenQuery(address) }

// NewSecret is "": nothing is signed.
func (Kind) NewSecret() (string, error) { return "", nil }

// Test sends one unsigned message.
func (Kind) Test(string, string, bool, *string) (kind.Test, error) { return kind.One, nil }

// Classify retries every failure.
func (Kind) Classify(*notify.Failure) kind.Verdict { return kind.Retry }
