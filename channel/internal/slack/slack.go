// Package slack is the SLACK kind of channel: a Slack incoming webhook.
//
// # Overview
//
// The address is the webhook's URL, https://hooks.slack.com/services/T.../B.../XXXX:
// an absolute URL whose path is /services/ and exactly three non-empty
// parts of letters, digits, "-" or "_", without query or fragment. The
// host is not pinned to hooks.slack.com: Slack Enterprise Grid and
// GovSlack (hooks.slack-gov.com) give their webhooks other hosts, and the
// SSRF guard checks whatever host it is. Nothing is signed and no secret
// is taken: the URL's three parts are the credential. Masked, the URL
// shows https://HOST/services/***.
//
// A message is Block Kit JSON: a section with the title in bold, a
// section with the text, and a context block with the channel's name;
// the top-level "text", the title and the text, is what a notification
// shows. &, < and > are escaped as Slack asks (&amp; &lt; &gt;), so that
// the text cannot mention @channel or forge a link. Each text is cut to
// Slack's limits, counted in characters as UTF-16 counts them (an emoji
// outside the Basic Multilingual Plane counts two, so the cut holds
// whichever way Slack counts), escapes included, with "…" where cut: the
// title to 150, the text, the channel's name and the notification's text
// to 3000.
//
// # Errors
//
// Success is HTTP 200 with the body "ok"; any other answer is a failure
// whose reason quotes Slack's error word (no_service, invalid_payload,
// ...). 404 (no_service, channel_not_found) and 410 (channel_is_archived)
// mean the webhook or its Slack channel is gone: the delivery ends and
// the channel is disabled. Other 4xx answers (400 invalid_payload, 403
// action_prohibited, ...) end the delivery, and the channel stays. 408,
// 429 (its Retry-After heeded), 5xx, timeouts and connection failures are
// retried on the delivery's schedule, unless the SSRF guard refused the
// address.
package slack

import (
	"embed"
	"net/http"
	"net/url"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// prefix is what an incoming webhook's path starts with.
const prefix = "/services/"

// hint is the address's shape, as a form and a refusal say it.
var hint = deskkit.Textf("a Slack incoming-webhook URL: https://hooks.slack.com/services/T.../B.../XXXX")

// messages are the kind's catalogues.
//
//go:embed messages/*.json
var messages embed.FS

// Kind is the SLACK kind.
type Kind struct{}

var _ kind.Kind = Kind{}

// Info names the kind: 10 Slack webhooks a tenant.
func (Kind) Info() kind.Info {
	return kind.Info{
		Type: "SLACK", Quota: 10, Name: "Slack incoming webhook",
		Label: deskkit.Textf("Slack webhook"),
		Field: deskkit.Textf("Address (URL)"),
		Hint:  hint,
		Doc: kind.Doc{
			Summary: "a Slack incoming webhook",
			Address: "a Slack incoming-webhook URL, https://hooks.slack.com/services/T.../B.../XXXX: the path /services/ and three non-empty parts of letters, digits, - or _, without query; " +
				"the host is not pinned (Enterprise Grid and GovSlack webhooks have others)",
			Test: "a Block Kit message with the title in bold, the text, and the channel name in a context block; the title and text are the notification's text. Success is 200 with the body ok; a failure's msg quotes Slack's error word (no_service, invalid_payload...)",
		},
		Messages: messages,
	}
}

// Address checks a Slack incoming webhook's URL; it is stored as sent.
func (Kind) Address(c *safehttp.Client, address string) (string, error) {
	u, err := kind.CheckURL(c, address)
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", deskkit.Invalid("address", "must be %s, without a query (?...)", hint)
	}
	if _, ok := parts(u); !ok {
		return "", deskkit.Invalid("address", "must be %s: the path /services/ and three non-empty parts of letters, digits, - or _", hint)
	}
	return address, nil
}

// parts are the three parts of u's path after /services/, and whether
// it has exactly three, each non-empty and of letters, digits, "-" or
// "_": characters that no spelling of the URL writes otherwise, so that
// Hidden's list is the whole of it.
func parts(u *url.URL) ([]string, bool) {
	rest, ok := strings.CutPrefix(u.EscapedPath(), prefix)
	if !ok {
		return nil, false
	}
	p := strings.Split(rest, "/")
	if len(p) != 3 {
		return nil, false
	}
	for _, s := range p {
		if s == "" || strings.ContainsFunc(s, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_')
		}) {
			return nil, false
		}
	}
	return p, true
}

// Secret refuses a secret that is not empty: the URL is the credential.
func (Kind) Secret(secret string) (*string, error) {
	if secret != "" {
		return nil, kind.ErrNoSecret
	}
	return nil, nil
}

// Mask is the scheme and host, with its port, and "/services/***"; "***"
// for what is not an absolute URL.
func (Kind) Mask(address string) string {
	u, err := url.Parse(address)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return notify.Masked
	}
	return u.Scheme + "://" + u.Host + prefix + notify.Masked
}

// Hidden is everything after the host, as Mask hides it: the address,
// its path, the path's three parts together and each of them (and a
// query's values, which a stored address has none of); an address that
// is not a URL, whole.
func (Kind) Hidden(address string) []string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return []string{address}
	}
	out := []string{address, u.EscapedPath()}
	if rest, ok := strings.CutPrefix(u.EscapedPath(), prefix); ok {
		out = append(out, rest)
		out = append(out, strings.Split(rest, "/")...)
	}
	if u.RawQuery != "" {
		out = append(out, kind.QueryValues(u)...)
	}
	return out
}

// NewSecret is "": nothing is signed.
func (Kind) NewSecret() (string, error) { return "", nil }

// Test sends one unsigned message.
func (Kind) Test(string, string, bool, *string) (kind.Test, error) { return kind.One, nil }

// Classify decides by the HTTP status alone, as the registry's flush
// classifies again with nothing else: 404 (no_service, channel_not_found)
// and 410 (channel_is_archived) disable the channel, whose webhook or
// Slack channel is gone; another 4xx but 408 and 429 gives the delivery
// up; anything else is retried.
func (Kind) Classify(f *notify.Failure) kind.Verdict {
	switch s := f.Status; {
	case s == http.StatusNotFound, s == http.StatusGone:
		return kind.Disable
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
		return kind.GiveUp
	}
	return kind.Retry
}
