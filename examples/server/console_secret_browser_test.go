package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleSecret reveals a webhook's signing secret through its
// confirmation and rotates it from the channel's page, to ed25519 beside
// HMAC, in a browser, in English and in Chinese (Accept-Language zh-CN),
// on both databases: each page through the accessibility, keyboard and
// width checks (screenshots at 360 and 1440 px, kept with
// DESKKIT_SCREENSHOTS=DIR). The secret is on the reveal's page, the public
// key on the rotation's; no page shows a signing key.
func TestConsoleSecret(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startChannelConsole(t, rawURL)
		recv := startHookReceiver(t)
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		for _, lang := range []struct{ name, header, suffix, revealed, rotated string }{
			{"en", "en", "", "The reveal is recorded", "Your receiver verifies the v1a signatures"},
			{"zh-CN", "zh-CN,zh;q=0.9,en;q=0.5", "-zh-CN", "此次查看已被记录", "您的接收端用此公钥校验 v1a 签名"},
		} {
			t.Run(lang.name, func(t *testing.T) {
				var added struct {
					ID     int64  `json:"id"`
					Secret string `json:"secret"`
				}
				ok(t, base, admin, http.MethodPost, "/api/v1/event/channel",
					map[string]any{"channelType": "WEBHOOK", "name": "Ops " + lang.name, "address": recv.URL + "/hook"}, &added)
				page := fmt.Sprintf("/console/channels/%d", added.ID)
				tb := newTabIn(t, base, lang.header)
				tb.signIn(admin)

				tb.open(page, "#rotate")
				tb.inspect("channel-secret" + lang.suffix)
				tb.submit("#confirm", chromedp.Click(chromedp.CSS("#reveal")))
				tb.inspect("secret-reveal-confirm" + lang.suffix)
				tb.submit("#secret", chromedp.Click(chromedp.CSS("#confirm")))
				if got := evalIn[string](tb, `document.querySelector("#secret").value`); got != added.Secret {
					t.Errorf("the reveal shows %.12q..., want the add's secret", got)
				}
				if !strings.Contains(tb.text("main"), lang.revealed) {
					t.Errorf("the reveal's page says %q, want %q", tb.text("main"), lang.revealed)
				}
				tb.inspect("secret-revealed" + lang.suffix)

				tb.open(page, "#rotate")
				tb.submit("#public-key",
					chromedp.SetValue(chromedp.CSS("#rot-signing"), "hmac+ed25519"),
					chromedp.SetValue(chromedp.CSS("#rot-overlap"), "3600"),
					chromedp.Click(chromedp.CSS("#rotate")))
				pk := evalIn[string](tb, `document.querySelector("#public-key").value`)
				secret := evalIn[string](tb, `document.querySelector("#secret").value`)
				if !strings.HasPrefix(pk, "whpk_") || !strings.HasPrefix(secret, "whsec_") || secret == added.Secret {
					t.Errorf("the rotation shows public key %q and secret %.12q...; want a whpk_ key and a new secret", pk, secret)
				}
				if body := evalIn[string](tb, `document.documentElement.outerHTML`); strings.Contains(body, "whsk_") {
					t.Error("the rotation's page shows a signing key")
				}
				if !strings.Contains(tb.text("main"), lang.rotated) {
					t.Errorf("the rotation's page says %q, want %q", tb.text("main"), lang.rotated)
				}
				tb.inspect("secret-rotated" + lang.suffix)

				tb.open(page, "#public-key")
				if got := tb.text("#public-key"); got != pk {
					t.Errorf("the channel's page shows public key %q, want %q", got, pk)
				}
				tb.inspect("channel-rotating" + lang.suffix)
				tb.noConsoleErrors()
			})
		}
	})
}
