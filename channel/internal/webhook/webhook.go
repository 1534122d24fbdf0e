// Package webhook is the WEBHOOK kind of channel: a signed HTTP POST to
// any http or https URL.
//
// # Overview
//
// The address is an absolute http or https URL of printable ASCII,
// without user information or fragment, stored as sent. Each channel gets
// a "whsec_" secret when it is added, and every message is signed with it
// as Standard Webhooks lays out (webhook-id, webhook-timestamp and
// webhook-signature headers over {"type", "timestamp", "data"}); a
// webhook may sign with an ed25519 key ("v1a,") instead of its secret or
// beside it; during a rotation's overlap, with the previous secret and
// key too, the signatures space-separated in webhook-signature, the new
// ones first; a test
// of an address other than the stored channel's is signed with a
// throwaway secret, returned to the caller. Masked, an address shows its
// scheme and host and "/***". A channel's custom headers (Target.Headers,
// checked by the registry) go with every request, before the webhook's
// own, which they can never replace.
//
// # Errors
//
// Any 2xx answer is success. A 410 Gone means the receiver is gone: the
// delivery ends and the channel is disabled. Other failures are retried
// on the delivery's schedule (a 429's or 503's Retry-After heeded), unless
// the SSRF guard refused the address.
package webhook

import (
	"embed"
	"github.com/deskkit/deskkit"
	"net/http"
	"net/url"
	"strings"

	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the WEBHOOK kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 5 webhooks a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "WEBHOOK", Quota: 5, Name: "webhook", OwnSecret: true, Headers: true,
		Label: deskkit.Textf("Webhook"),
		Field: deskkit.Textf("Address (URL)"),
		Hint:  deskkit.Textf("An http or https URL that gets a signed POST (Standard Webhooks)."),
		Doc: kind.Doc{
			Summary: "a signed HTTP POST (Standard Webhooks)",
			Address: "an absolute http or https URL of printable ASCII, without user information or fragment",
			Test: "a Standard Webhooks POST of an event of type channel.test, signed with the stored secret of the channel named by id, or else of the tenant's webhook of this name, " +
				"when the body's address is that channel's address; otherwise with a throwaway secret returned in data (a stored secret never signs a message to another address, which could replay it to the real receiver)",
		},
		Messages: messages,
	}
}

// Address checks a webhook's URL; it is stored as sent.
func (Kind) Address(c *safehttp.Client, address string) (string, error) {
	if _, err := kind.CheckURL(c, address); err != nil {
		return "", err
	}
	return address, nil
}

// Secret refuses a secret that is not empty: deskkit makes a webhook's.
func (Kind) Secret(secret string) (*string, error) {
	if secret != "" {
		return nil, kind.ErrNoSecret
	}
	return nil, nil
}

// Mask is the scheme and host, with its port, and "/***".
func (Kind) Mask(address string) string { return notify.MaskURL(address) }

// minSegment is the shortest path segment hidden on its own: a long
// segment is likely a token; a short one ("hooks", "v2") is likely not, and
// the path as a whole is hidden anyway.
const minSegment = 16

// Hidden is everything after the host, as Mask hides it: the address, its
// path and query together (a server's "Cannot POST /hook?token=..."), its
// query, its path, its long path segments and each query value.
func (Kind) Hidden(address string) []string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return []string{address}
	}
	out := []string{address, requestURI(address), u.RawQuery, u.EscapedPath()}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if len(seg) >= minSegment {
			out = append(out, seg)
		}
	}
	return append(out, kind.QueryValues(u)...)
}

// requestURI is the path and query of a URL as written: what follows its
// host.
func requestURI(address string) string {
	_, rest, ok := strings.Cut(address, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		return rest[i:]
	}
	return ""
}

// NewSecret is a new "whsec_" signing secret.
func (Kind) NewSecret() (string, error) { return notify.NewWebhookSecret() }

// Test signs with the stored secret when own, and otherwise with a
// throwaway secret that the caller is shown.
func (Kind) Test(address, stored string, own bool, given *string) (kind.Test, error) {
	if own {
		return kind.Test{Signing: stored, Messages: 1}, nil
	}
	s, err := notify.NewWebhookSecret()
	if err != nil {
		return kind.Test{}, err
	}
	return kind.Test{Signing: s, Shown: s, Messages: 1}, nil
}

// Classify disables the channel on a 410 Gone.
func (Kind) Classify(f *notify.Failure) kind.Verdict {
	if f.Status == http.StatusGone {
		return kind.Disable
	}
	return kind.Retry
}
