package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestSecretPages: an admin reveals a webhook's signing secret through a
// confirmation, in English and Chinese, and rotates it from the channel's
// page, with an overlap (the page then says until when the old one signs)
// and without; the secret is in the POST's answer only. A user who is not
// an admin is offered neither, and refused both.
func TestSecretPages(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f, reg := setupChannels(t, db)
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		added, err := reg.Add(ctx, ada, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: "https://hooks.example.com/ops"})
		if err != nil {
			t.Fatal(err)
		}
		mail, err := reg.Add(ctx, ada, channel.Input{Type: "EMAIL", Name: "On call", Address: "ann@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		ck := f.signIn(f.token)
		csrf := f.csrf(ck)
		page := fmt.Sprintf("/console/channels/%d", added.ID)

		wantPage(t, "channel page", f.get(page, "en", ck), http.StatusOK, "en",
			`id="reveal" href="/console/channels/`, `action="/console/channels/`+fmt.Sprint(added.ID)+`/rotate"`,
			"One secret signs each request", `<option value="86400" selected>1 day</option>`)
		if a := f.get(fmt.Sprintf("/console/channels/%d", mail.ID), "en", ck); strings.Contains(a.body, `id="reveal"`) || strings.Contains(a.body, "/rotate") {
			t.Errorf("an e-mail channel's page offers its secret:\n%s", a.body)
		}
		wantPage(t, "confirm reveal", f.get(page+"/reveal", "en", ck), http.StatusOK, "en",
			"Reveal the signing secret of webhook “Ops hook”?", "Reveal the secret</button>")
		wantPage(t, "confirm reveal zh", f.get(page+"/reveal", "zh-CN", ck), http.StatusOK, "zh-CN",
			"确定查看 Webhook“Ops hook”的签名密钥吗？", "查看签名密钥</button>")
		if a := f.get(page, "en", ck); strings.Contains(a.body, strings.TrimPrefix(added.Secret, "whsec_")) {
			t.Error("the channel's page shows the secret")
		}

		// shows reports whether a page shows secret in its field.
		shows := func(a answer, secret string) bool {
			return strings.Contains(html.UnescapeString(a.body), `value="`+secret+`"`)
		}
		a := f.do(http.MethodPost, page+"/reveal", url.Values{"csrf": {csrf}}, ck)
		wantPage(t, "revealed", a, http.StatusOK, "en", "The reveal is recorded")
		if !shows(a, added.Secret) {
			t.Errorf("the reveal's page does not show the secret:\n%s", a.body)
		}
		if cc := a.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the revealed secret's page is Cache-Control %q", cc)
		}

		a = f.do(http.MethodPost, page+"/rotate", url.Values{"csrf": {csrf}, "overlap": {"86400"}}, ck)
		if a.StatusCode != http.StatusOK || !strings.Contains(a.body, "Until 2026-11-25 09:00 UTC the old secret signs beside the new one") {
			t.Fatalf("rotate with a day's overlap: %d\n%s", a.StatusCode, a.body)
		}
		shown, err := reg.RevealSecret(ctx, ada, added.ID)
		if err != nil || shown.Secret == added.Secret || !shows(a, shown.Secret) {
			t.Errorf("the rotation's page does not show the new secret %.12s... (%v)", shown.Secret, err)
		}
		wantPage(t, "channel page during the overlap", f.get(page, "zh-CN", ck), http.StatusOK, "zh-CN", "轮换中", "2026-11-25 09:00 UTC 之前")

		given := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="
		a = f.do(http.MethodPost, page+"/rotate", url.Values{"csrf": {csrf}, "overlap": {"0"}, "secret": {" " + given + " "}}, ck)
		wantPage(t, "rotated at once", a, http.StatusOK, "en", "The old secret no longer signs")
		if !shows(a, given) {
			t.Errorf("the rotation's page does not show the secret given:\n%s", a.body)
		}
		a = f.do(http.MethodPost, page+"/rotate", url.Values{"csrf": {csrf}, "secret": {"SECnot"}}, ck)
		wantPage(t, "bad secret", a, http.StatusBadRequest, "en", `secret must start with &#34;whsec_&#34;`)

		// To ed25519 alone: the public key is shown, no secret, no signing
		// key; the channel's page says so.
		a = f.do(http.MethodPost, page+"/rotate", url.Values{"csrf": {csrf}, "overlap": {"0"}, "signing": {"ed25519"}}, ck)
		wantPage(t, "rotated to ed25519", a, http.StatusOK, "en", `id="public-key"`, "Your receiver verifies the v1a signatures with this public key.")
		ed, err := reg.RevealSecret(ctx, ada, added.ID)
		if err != nil || ed.Signing != channel.SigningEd25519 || !shows(a, ed.PublicKey) || strings.Contains(a.body, `id="secret"`) || strings.Contains(a.body, "whsk_") {
			t.Errorf("the page of a rotation to ed25519 (%+v, %v):\n%s", ed, err, a.body)
		}
		a = f.get(page, "zh-CN", ck)
		wantPage(t, "channel page of an ed25519 webhook", a, http.StatusOK, "zh-CN", "Ed25519：接收端持有公钥（v1a）", `<option value="ed25519" selected>`)
		if !strings.Contains(html.UnescapeString(a.body), `<code id="public-key">`+ed.PublicKey) {
			t.Errorf("the channel's page does not show its public key:\n%s", a.body)
		}
		a = f.do(http.MethodPost, page+"/reveal", url.Values{"csrf": {csrf}}, ck)
		if !shows(a, ed.PublicKey) || strings.Contains(a.body, `id="secret"`) {
			t.Errorf("the reveal of an ed25519 webhook:\n%s", a.body)
		}

		// A user who is not an admin.
		bob := f.signIn(f.issue("bob", false))
		bobCSRF := f.csrf(bob)
		if a := f.get(page, "en", bob); strings.Contains(a.body, `id="reveal"`) || strings.Contains(a.body, "/rotate") {
			t.Errorf("a user who is not an admin is offered the secret:\n%s", a.body)
		}
		for _, action := range []string{"/reveal", "/rotate"} {
			if a := f.do(http.MethodPost, page+action, url.Values{"csrf": {bobCSRF}}, bob); a.StatusCode != http.StatusForbidden || strings.Contains(a.body, "whsec_") {
				t.Errorf("POST %s by a user who is not an admin: %d\n%s", action, a.StatusCode, a.body)
			}
		}
	})
}
