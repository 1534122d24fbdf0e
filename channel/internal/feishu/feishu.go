// Package feishu is the FEISHU kind of channel: a Feishu (Lark) custom
// robot.
//
// # Overview
//
// The address is the robot's URL, https://HOST/open-apis/bot/v2/hook/TOKEN,
// with that path, one non-empty token and no query; LARK is an alias of
// the type, and Lark's host (open.larksuite.com) is as good as Feishu's
// (open.feishu.cn). An event is a card: its header the channel's name and
// the title, its body the text as Feishu's card markdown. A test message is
// plain text. The channel's name leads both, so that a robot in keyword
// mode finds it when the name is the keyword. The channel may hold the
// robot's signing secret: each message's body then carries timestamp (Unix
// seconds) and sign, the base64 HMAC-SHA256 keyed by timestamp + "\n" +
// secret over an empty message, as Feishu's open platform documents it.
// Masked, the URL shows "***" for the token.
//
// # Errors
//
// Feishu answers HTTP 200 to its refusals: success is a JSON answer with
// code 0. A refused signature or timestamp is 19021, a missing keyword
// 19024, an address outside the IP allowlist 19022. Its rate limit (9499 or
// 11232, 100 messages a minute and 5 a second) is retried after a minute,
// and timeouts, 429 and 5xx are worth a retry; a failure is retried on the
// delivery's schedule unless the SSRF guard refused the address, and the
// channel is never disabled for one answer.
package feishu

import (
	"embed"
	"net/url"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// hookPath is the robot's path before its token.
const hookPath = "/open-apis/bot/v2/hook/"

// hint is the address's shape, as a form and a refusal say it.
var hint = deskkit.Textf("a Feishu or Lark robot URL: https://HOST/open-apis/bot/v2/hook/TOKEN")

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the FEISHU kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 10 Feishu robots a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "FEISHU", Aliases: []string{"LARK"}, Quota: 10, Name: "Feishu robot",
		Label:      deskkit.Textf("Feishu (Lark) robot"),
		Field:      deskkit.Textf("Address (URL)"),
		Hint:       hint,
		SecretHint: deskkit.Textf("the signing secret of the robot's security settings"),
		Doc: kind.Doc{
			Summary: "a Feishu (Lark) custom robot",
			Address: "a Feishu or Lark robot URL, https://HOST/open-apis/bot/v2/hook/TOKEN, without query",
			Secret:  "the robot's signing secret (its security settings), which turns on signing",
			Test: "a text message with the channel name, for Feishu's keyword mode (events go as a card), signed with the secret in the body, " +
				"or else with the stored one when the address is the stored channel's",
		},
		Messages: messages,
	}
}

// Address checks a Feishu robot's URL; it is stored as sent.
func (Kind) Address(c *safehttp.Client, address string) (string, error) {
	u, err := kind.CheckURL(c, address)
	if err != nil {
		return "", err
	}
	if _, ok := token(u); !ok || u.RawQuery != "" || u.ForceQuery {
		return "", deskkit.Invalid("address", "must be %s", hint)
	}
	return address, nil
}

// token is the robot's token in u's path, and whether the path is a
// robot's: the hook path and one non-empty segment.
func token(u *url.URL) (string, bool) {
	t, ok := strings.CutPrefix(u.EscapedPath(), hookPath)
	return t, ok && t != "" && !strings.Contains(t, "/")
}

// Secret checks a Feishu signing secret; "" removes the stored one.
func (Kind) Secret(s string) (*string, error) {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return nil, deskkit.Invalid("secret", "must be printable ASCII without spaces, as Feishu shows it")
		}
	}
	return &s, nil
}

// Mask is the URL with its token as "***".
func (Kind) Mask(address string) string {
	u, err := url.Parse(address)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return notify.Masked
	}
	return u.Scheme + "://" + u.Host + hookPath + notify.Masked
}

// Hidden is the token, as written and unescaped; an address that is not
// a URL, whole.
func (Kind) Hidden(address string) []string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return []string{address}
	}
	t, _ := strings.CutPrefix(u.EscapedPath(), hookPath)
	out := []string{t}
	if p, err := url.PathUnescape(t); err == nil && p != t {
		out = append(out, p)
	}
	return out
}

// NewSecret is "": a Feishu secret is the client's to give.
func (Kind) NewSecret() (string, error) { return "", nil }

// Test signs as kind.ClientSigned says.
func (Kind) Test(_, stored string, own bool, given *string) (kind.Test, error) {
	return kind.ClientSigned(stored, own, given), nil
}

// Classify retries every failure.
func (Kind) Classify(*notify.Failure) kind.Verdict { return kind.Retry }
