package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestHeaderFields: the add form of a webhook offers rows of custom
// headers (none for an e-mail channel); the filled rows are stored, in
// order, blank rows dropped; the channel's page lists them (to an admin:
// a member may not read a channel's page, whose deliveries it shows, and
// the registry's tests check the masking); the edit form shows them with blank rows
// after; a bad name is the form again, 400, with the registry's message
// naming the field; saving the edit form with fewer rows replaces them; in
// English and Chinese.
func TestHeaderFields(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f, reg := setupChannels(t, db)
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		ck := f.signIn(f.token)
		csrf := f.csrf(ck)

		wantPage(t, "new webhook", f.get("/console/channels/new?type=WEBHOOK", "en", ck), http.StatusOK, "en",
			"Custom headers (optional)", `<label for="h-name-1">Header 1 name</label>`, `id="h-value-3"`)
		if a := f.get("/console/channels/new?type=EMAIL", "en", ck); strings.Contains(a.body, `name="headerName"`) {
			t.Error("the e-mail form offers custom headers")
		}
		wantPage(t, "new webhook zh", f.get("/console/channels/new?type=WEBHOOK", "zh-CN", ck), http.StatusOK, "zh-CN",
			"自定义请求头（可选）", "请求头 1 名称", "请求头 1 值")

		form := func(names, values []string) url.Values {
			return url.Values{"csrf": {csrf}, "do": {"save"}, "channelType": {"WEBHOOK"}, "name": {"Ops hook"},
				"address": {"https://hooks.example.com/ops"}, "headerName": names, "headerValue": values}
		}
		a := f.do(http.MethodPost, "/console/channels", form([]string{"host", "", ""}, []string{"evil", "", ""}), ck)
		wantPage(t, "bad name", a, http.StatusBadRequest, "en", "headers[0].name", "cannot be given", `value="host"`)
		a = f.do(http.MethodPost, "/console/channels",
			form([]string{"Authorization", "", "X-Tenant"}, []string{"Bearer s3cr3t-token", "", "acme"}), ck)
		if a.StatusCode != http.StatusCreated {
			t.Fatalf("add: %d\n%s", a.StatusCode, a.body)
		}
		list, err := reg.ListAll(ctx, ada)
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %+v %v", list, err)
		}
		ch := list[0]
		if got := headerText(ch.Headers); got != "Authorization=Bearer s3cr3t-token;X-Tenant=acme" {
			t.Errorf("stored headers %s", got)
		}
		page := fmt.Sprintf("/console/channels/%d", ch.ID)
		wantPage(t, "page", f.get(page, "en", ck), http.StatusOK, "en", "Custom headers", "<code>Authorization: Bearer s3cr3t-token</code>", "<code>X-Tenant: acme</code>")
		wantPage(t, "edit", f.get(page+"/edit", "en", ck), http.StatusOK, "en",
			`id="h-name-1" name="headerName" value="Authorization"`, `id="h-value-1" name="headerValue" value="Bearer s3cr3t-token"`, `id="h-name-5"`)

		a = f.do(http.MethodPost, page, form([]string{"X-Tenant", ""}, []string{"beta", ""}), ck)
		if a.StatusCode != http.StatusSeeOther {
			t.Fatalf("replace: %d\n%s", a.StatusCode, a.body)
		}
		got, err := reg.Get(ctx, ada, ch.ID)
		if err != nil || headerText(got.Headers) != "X-Tenant=beta" {
			t.Errorf("after the replace: %+v %v", got.Headers, err)
		}
		// An e-mail channel's page says nothing of headers.
		mail, err := reg.Add(ctx, ada, channel.Input{Type: "EMAIL", Name: "On call", Address: "ann@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if a := f.get(fmt.Sprintf("/console/channels/%d", mail.ID), "en", ck); strings.Contains(a.body, `id="headers"`) {
			t.Error("an e-mail channel's page lists custom headers")
		}
	})
}

// headerText writes hs as name=value pairs joined by ";".
func headerText(hs []channel.Header) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Name+"="+h.Value)
	}
	return strings.Join(parts, ";")
}
