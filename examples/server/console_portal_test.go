package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// portalTenant is one tenant's data the console could show: a channel
// with a delivery, and a task in the trash, all named with marker so that
// a page showing any of it to another tenant is caught.
type portalTenant struct {
	p          deskkit.Principal
	token      string
	marker     string
	channelID  int64
	deliveryID int64
	trashID    int64
	project    int64
}

// seedPortalTenant gives the admin of token a channel, a trashed task
// (whose events make the channel's deliveries) in project.
func seedPortalTenant(t *testing.T, f *fixture, token, marker string, project int64) portalTenant {
	t.Helper()
	ctx := context.Background()
	p, err := f.app.dir.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	pt := portalTenant{p: p, token: token, marker: marker, project: project}
	ch, err := f.app.channels.Add(ctx, p, channel.Input{Type: "WEBHOOK", Name: marker + " hook", Address: "https://hooks.example.com/" + marker})
	if err != nil {
		t.Fatal(err)
	}
	pt.channelID = ch.ID
	var c struct{ ID int64 }
	f.ok(token, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": project, "name": marker + " task"}, &c)
	var d struct{ TrashID int64 }
	f.ok(token, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), nil, &d)
	pt.trashID = d.TrashID
	page, err := f.app.channels.Deliveries(ctx, p, ch.ID, channel.DeliveryFilter{}, 1, 10)
	if err != nil || len(page.List) == 0 {
		t.Fatalf("deliveries of %s: %v %+v", marker, err, page)
	}
	pt.deliveryID = page.List[0].ID
	return pt
}

// portalBrowser is an HTTP client with a cookie jar, as a browser holds a
// session, that follows no redirect.
type portalBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newPortalBrowser(t *testing.T, base string) *portalBrowser {
	jar, _ := cookiejar.New(nil)
	return &portalBrowser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfInPage = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *portalBrowser) send(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if m := csrfInPage.FindStringSubmatch(string(out)); m != nil {
		b.csrf = m[1]
	}
	return res.StatusCode, string(out)
}

// open follows a portal link: its page, then the POST its form makes.
func (b *portalBrowser) open(link string) (int, string) {
	b.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		b.t.Fatal(err)
	}
	if status, body := b.send(http.MethodGet, link, nil); status != http.StatusOK {
		return status, body
	}
	return b.send(http.MethodPost, u.Path, url.Values{"t": {u.Query().Get("t")}})
}

// TestConsolePortalIsolation opens a portal link of one tenant's admin
// and tries every page and form of the console with the other tenant's
// ids, in paths and in form fields: each is refused, no page shows the
// other tenant's names, and the other tenant's data is unchanged. Then a
// link for the trash alone cannot open the channels or the profile, and
// links expire and work once. Both databases.
func TestConsolePortalIsolation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		srv := httptest.NewServer(f.app.handler)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		ada := seedPortalTenant(t, f, f.admin, "Adamark", 1)
		eve := seedPortalTenant(t, f, f.outside, "Evemark", 1)

		link, err := f.app.console.PortalLink(ctx, ada.p, console.ScopeTrash, console.ScopeChannels, console.ScopeProfile)
		if err != nil {
			t.Fatal(err)
		}
		b := newPortalBrowser(t, srv.URL)
		if status, body := b.open(link); status != http.StatusSeeOther {
			t.Fatalf("open the link: %d\n%s", status, body)
		}
		// Ada's own pages show Ada's data, never Eve's.
		for _, path := range []string{"/console/", "/console/trash", "/console/trash?project=1", "/console/channels",
			fmt.Sprintf("/console/channels/%d", ada.channelID), fmt.Sprintf("/console/deliveries/%d", ada.deliveryID), "/console/profile"} {
			status, body := b.send(http.MethodGet, path, nil)
			if status != http.StatusOK || strings.Contains(body, eve.marker) {
				t.Errorf("GET %s: %d, Eve's data shown: %v", path, status, strings.Contains(body, eve.marker))
			}
		}
		if _, body := b.send(http.MethodGet, "/console/trash", nil); !strings.Contains(body, ada.marker+" task") {
			t.Error("Ada's trash does not show her task")
		}
		// Eve's ids in paths: every page refuses.
		for _, path := range []string{
			fmt.Sprintf("/console/trash/%d/restore", eve.trashID),
			fmt.Sprintf("/console/trash/%d/clear", eve.trashID),
			fmt.Sprintf("/console/channels/%d", eve.channelID),
			fmt.Sprintf("/console/channels/%d/edit", eve.channelID),
			fmt.Sprintf("/console/channels/%d/delete", eve.channelID),
			fmt.Sprintf("/console/channels/%d/disable", eve.channelID),
			fmt.Sprintf("/console/deliveries/%d", eve.deliveryID),
			fmt.Sprintf("/console/deliveries/%d?channel=%d", eve.deliveryID, eve.channelID),
		} {
			status, body := b.send(http.MethodGet, path, nil)
			if status != http.StatusNotFound && status != http.StatusForbidden || strings.Contains(body, eve.marker) {
				t.Errorf("GET %s: %d (want 403 or 404), Eve's data shown: %v", path, status, strings.Contains(body, eve.marker))
			}
		}
		// Eve's ids in forms: every form refuses and changes nothing.
		b.send(http.MethodGet, "/console/", nil) // the CSRF token
		for _, tc := range []struct {
			path string
			form url.Values
		}{
			{fmt.Sprintf("/console/trash/%d/restore", eve.trashID), url.Values{}},
			{fmt.Sprintf("/console/trash/%d/clear", eve.trashID), url.Values{}},
			{fmt.Sprintf("/console/channels/%d", eve.channelID), url.Values{"channelType": {"WEBHOOK"}, "name": {"taken"}, "address": {"https://evil.example/x"}, "do": {"save"}}},
			{fmt.Sprintf("/console/channels/%d/test", eve.channelID), url.Values{}},
			{fmt.Sprintf("/console/channels/%d/enable", eve.channelID), url.Values{}},
			{fmt.Sprintf("/console/channels/%d/disable", eve.channelID), url.Values{}},
			{fmt.Sprintf("/console/channels/%d/delete", eve.channelID), url.Values{}},
			{fmt.Sprintf("/console/channels/%d/recover", eve.channelID), url.Values{"since": {time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")}}},
			{fmt.Sprintf("/console/deliveries/%d/resend", eve.deliveryID), url.Values{}},
			// A form of Ada's page with Eve's channel in a field: the id in
			// the path is Ada's, and the field's id is not taken from the form.
			{fmt.Sprintf("/console/channels/%d", ada.channelID), url.Values{"id": {fmt.Sprint(eve.channelID)}, "channelType": {"WEBHOOK"}, "name": {ada.marker + " hook"}, "address": {"https://hooks.example.com/" + ada.marker}, "do": {"save"}}},
		} {
			tc.form.Set("csrf", b.csrf)
			status, body := b.send(http.MethodPost, tc.path, tc.form)
			if strings.Contains(body, eve.marker) {
				t.Errorf("POST %s shows Eve's data", tc.path)
			}
			if tc.form.Get("id") == "" && status != http.StatusNotFound && status != http.StatusForbidden {
				t.Errorf("POST %s: %d, want 403 or 404", tc.path, status)
			}
		}
		// Eve's data is as it was.
		evesTrash, err := f.app.trash.Get(ctx, eve.p, eve.trashID)
		if err != nil || evesTrash.TargetName != eve.marker+" task" {
			t.Errorf("Eve's trash entry: %v %+v", err, evesTrash)
		}
		evesHook, err := f.app.channels.Get(ctx, eve.p, eve.channelID)
		if err != nil || !evesHook.Enabled || evesHook.Name != eve.marker+" hook" {
			t.Errorf("Eve's channel: %v %+v", err, evesHook)
		}

		// A link for the trash alone: the channels and the profile are
		// refused and absent from the navigation.
		trashOnly, err := f.app.console.PortalLink(ctx, ada.p, console.ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		b2 := newPortalBrowser(t, srv.URL)
		if status, _ := b2.open(trashOnly); status != http.StatusSeeOther {
			t.Fatalf("trash link: %d", status)
		}
		_, home := b2.send(http.MethodGet, "/console/", nil)
		if !strings.Contains(home, `href="/console/trash"`) || strings.Contains(home, `href="/console/channels"`) || strings.Contains(home, `href="/console/profile"`) {
			t.Errorf("the trash link's navigation:\n%s", home)
		}
		for _, path := range []string{"/console/channels", fmt.Sprintf("/console/channels/%d", ada.channelID), "/console/channels/new", "/console/profile", "/console/profile/email"} {
			if status, _ := b2.send(http.MethodGet, path, nil); status != http.StatusForbidden {
				t.Errorf("trash link, GET %s: %d, want 403", path, status)
			}
		}
		b2.send(http.MethodGet, "/console/trash", nil)
		if status, _ := b2.send(http.MethodPost, fmt.Sprintf("/console/channels/%d/disable", ada.channelID), url.Values{"csrf": {b2.csrf}}); status != http.StatusForbidden {
			t.Errorf("trash link, disable a channel: %d, want 403", status)
		}
		// Used once: the same link again opens nothing.
		if status, _ := newPortalBrowser(t, srv.URL).open(trashOnly); status != http.StatusUnauthorized {
			t.Errorf("the link used again: %d, want 401", status)
		}
		// Expired: two minutes after it was made.
		late, err := f.app.console.PortalLink(ctx, ada.p, console.ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(console.DefaultPortalLinkTTL)
		if status, _ := newPortalBrowser(t, srv.URL).open(late); status != http.StatusUnauthorized {
			t.Errorf("an expired link: %d, want 401", status)
		}
		// Framing: nobody's pages may frame the reference server's.
		res, err := http.Get(srv.URL + "/console/signin")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "; frame-ancestors 'none'; ") || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("framing headers: %q, %q", csp, res.Header.Get("X-Frame-Options"))
		}
	})
}

// TestConsolePortalDemotedAdmin: a portal session acts for its user as the
// directory has them now. (a) An admin's link, redeemed, then the user
// demoted as token -admin=false does it: the channel pages no longer show
// the robot's full address and Disable answers 403. (b) A link minted for
// the admin, the user demoted, then redeemed: the admin pages are refused.
// Both databases.
func TestConsolePortalDemotedAdmin(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		srv := httptest.NewServer(f.app.handler)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		const key = "robotkey4711"
		ch, err := f.app.channels.Add(ctx, f.adminP, channel.Input{Type: "ENTERPRISE_CHAT", Name: "Team robot",
			Address: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + key})
		if err != nil {
			t.Fatal(err)
		}
		// What token -tenant demo -username demo -admin=BOOL calls.
		setAdmin := func(admin bool) {
			t.Helper()
			if _, err := f.app.dir.EnsureUserRole(ctx, f.adminP.TenantID, demoUsername, directory.Role{Admin: admin, Set: true}); err != nil {
				t.Fatal(err)
			}
		}
		channelPage := fmt.Sprintf("/console/channels/%d", ch.ID)
		showsKey := func(b *portalBrowser) (bool, int) {
			t.Helper()
			_, list := b.send(http.MethodGet, "/console/channels", nil)
			status, page := b.send(http.MethodGet, channelPage, nil)
			return strings.Contains(list, key) || strings.Contains(page, key), status
		}
		disable := func(b *portalBrowser) int {
			t.Helper()
			b.send(http.MethodGet, "/console/", nil) // the CSRF token
			status, _ := b.send(http.MethodPost, channelPage+"/disable", url.Values{"csrf": {b.csrf}})
			return status
		}
		open := func(link string) *portalBrowser {
			t.Helper()
			b := newPortalBrowser(t, srv.URL)
			if status, body := b.open(link); status != http.StatusSeeOther {
				t.Fatalf("open the link: %d\n%s", status, body)
			}
			return b
		}
		mint := func() string {
			t.Helper()
			link, err := f.app.console.PortalLink(ctx, f.adminP, console.ScopeChannels)
			if err != nil {
				t.Fatal(err)
			}
			return link
		}

		// (a) Redeemed as an admin, then demoted.
		b := open(mint())
		if shown, status := showsKey(b); !shown || status != http.StatusOK {
			t.Fatalf("the admin's channel page: %d, robot key shown %v", status, shown)
		}
		setAdmin(false)
		if shown, _ := showsKey(b); shown {
			t.Error("after the demotion the channel pages still show the robot's key")
		}
		if status := disable(b); status != http.StatusForbidden {
			t.Errorf("after the demotion, Disable: %d, want 403", status)
		}
		if got, err := f.app.channels.Get(ctx, f.adminP, ch.ID); err != nil || !got.Enabled {
			t.Errorf("the channel after the demoted Disable: %v %+v", err, got)
		}

		// (b) Minted for the admin, demoted, then redeemed.
		setAdmin(true)
		link := mint()
		setAdmin(false)
		b2 := open(link)
		if shown, status := showsKey(b2); shown || status != http.StatusForbidden {
			t.Errorf("a link minted before the demotion: channel page %d, robot key shown %v; want 403, hidden", status, shown)
		}
		if status := disable(b2); status != http.StatusForbidden {
			t.Errorf("a link minted before the demotion, Disable: %d, want 403", status)
		}
		for _, path := range []string{"/console/channels/new", fmt.Sprintf("/console/channels/%d/edit", ch.ID)} {
			if status, body := b2.send(http.MethodGet, path, nil); status == http.StatusOK && strings.Contains(body, key) {
				t.Errorf("a link minted before the demotion: %s shows the robot's key", path)
			}
		}
	})
}
