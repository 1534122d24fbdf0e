package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestConsolePortalBrowser follows portal links in Chromium, on both
// databases: a link of one tenant shows its own trash and none of the
// other tenant's, whose pages it is refused by id; a link for the trash
// cannot open the channels; a link works once and dies after two minutes
// (the app's clock); and a page of another origin cannot frame the
// console.
func TestConsolePortalBrowser(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		srv := httptest.NewServer(f.app.handler)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		ada := seedPortalTenant(t, f, f.admin, "Adamark", 1)
		eve := seedPortalTenant(t, f, f.outside, "Evemark", 1)
		tb := newTab(t, srv.URL)

		link, err := f.app.console.PortalLink(ctx, ada.p, console.ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		tb.follow(srv.URL+link, "#results")
		if loc := tb.location(); loc != "/console/trash" {
			t.Errorf("the trash link opened %s", loc)
		}
		if body := evalIn[string](tb, `document.body.innerText`); !strings.Contains(body, ada.marker+" task") || strings.Contains(body, eve.marker) {
			t.Errorf("Ada's trash through her link:\n%s", body)
		}
		if evalIn[bool](tb, `!!document.querySelector('nav a[href="/console/channels"], nav a[href="/console/profile"], nav a[href="/docs"]')`) {
			t.Error("the trash link's navigation offers more than the trash")
		}
		tb.inspect("portal-trash")
		// Eve's entry by id, and the channels, are refused.
		tb.open(fmt.Sprintf("/console/trash/%d/clear", eve.trashID), "[role=alert]")
		tb.wantRefusal("[role=alert]", "The resource does not exist.", "resource_not_found")
		tb.open("/console/channels", "[role=alert]")
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "not part of what you were given access to") {
			t.Errorf("the channels through a trash link: %q", msg)
		}
		// The link again: used up.
		tb.follow(srv.URL+link, "#ended-message")
		if msg := tb.text("#ended-message"); !strings.Contains(msg, "used already") {
			t.Errorf("the link used again: %q", msg)
		}
		// A link followed two minutes after it was made: dead.
		late, err := f.app.console.PortalLink(ctx, eve.p, console.ScopeChannels)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(console.DefaultPortalLinkTTL)
		tb.open(late, "#ended-message")
		if msg := tb.text("#ended-message"); !strings.Contains(msg, "has expired") {
			t.Errorf("an expired link: %q", msg)
		}
		// Eve's channels link: her channel, not Ada's.
		fresh, err := f.app.console.PortalLink(ctx, eve.p, console.ScopeChannels)
		if err != nil {
			t.Fatal(err)
		}
		tb.follow(srv.URL+fresh, "#add")
		if body := evalIn[string](tb, `document.body.innerText`); !strings.Contains(body, eve.marker+" hook") || strings.Contains(body, ada.marker) {
			t.Errorf("Eve's channels through her link:\n%s", body)
		}
		tb.open(fmt.Sprintf("/console/channels/%d", ada.channelID), "[role=alert]")
		tb.wantRefusal("[role=alert]", "The resource does not exist.", "resource_not_found")
		tb.noConsoleErrors()

		// Framing: a page of another origin gets the browser's refusal.
		stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>framer</title><iframe src="%s/console/signin" onload="document.title='loaded'"></iframe>`, srv.URL)
		}))
		t.Cleanup(stranger.Close)
		tb.do(chromedp.Navigate(stranger.URL))
		tb.waitFor(`document.title === "loaded"`)
		var tree *page.FrameTree
		tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			res, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
			tree = res.FrameTree
			return err
		}))
		if tree == nil || len(tree.ChildFrames) != 1 {
			t.Fatal("the stranger's page has no frame")
		}
		if fr := tree.ChildFrames[0].Frame; strings.HasPrefix(fr.URL, srv.URL) || fr.UnreachableURL == "" {
			t.Errorf("a page of another origin framed the console: %q (unreachable %q)", fr.URL, fr.UnreachableURL)
		}
	})
}

// TestConsolePortalProductBrowser is a host's portal as its non-admin user
// meets it in Chromium, on both databases, in English and Chinese, at 390
// and 1440 px: the trash offers Restore… and Clear… only on the entries
// the user deleted, names the demo host's projects, and a project's
// actions count the user's own entries; a second link (the profile) in the
// same browser keeps the trash open; the header leads back to the host's
// page (the link's return URL, on the server's host origins), and so do
// the pages of a used link and of an expired session.
func TestConsolePortalProductBrowser(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		hostPage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>host</title><h1 id="host-app">The host</h1>`)
		}))
		t.Cleanup(hostPage.Close)
		// The server as run with -host-origins naming the host.
		a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler), Now: f.clock.Now, Retention: retention, HostOrigins: []string{hostPage.URL}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.handler)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		trashedTask(t, srv.URL, f.admin, 1, "Admin's task")
		trashedTask(t, srv.URL, f.member, 1, "Member's task")
		member, err := a.dir.Authenticate(ctx, f.member)
		if err != nil {
			t.Fatal(err)
		}
		back := hostPage.URL + "/app"
		mint := func(s console.Scope) string {
			t.Helper()
			l, err := a.console.PortalLinkFor(ctx, console.PortalRequest{Principal: member, Scopes: []console.Scope{s}, ReturnURL: back})
			if err != nil {
				t.Fatal(err)
			}
			return srv.URL + l
		}
		tb := newTab(t, srv.URL)
		link := mint(console.ScopeTrash)
		tb.follow(link, "#results")
		row := func(name string) string {
			return evalIn[string](tb, fmt.Sprintf(`[...document.querySelectorAll("#results tbody tr")].map(r => r.outerHTML).find(h => h.includes(%s)) ?? ""`, jsString(name)))
		}
		if r := row("Admin's task"); r == "" || strings.Contains(r, "/restore") || strings.Contains(r, "/clear") || !strings.Contains(r, "no-actions") {
			t.Errorf("the admin's entry offers the member actions: %s", r)
		}
		if r := row("Member's task"); !strings.Contains(r, "/restore") || !strings.Contains(r, "/clear") || !strings.Contains(r, ">Website<") {
			t.Errorf("the member's entry: %s", r)
		}
		if got := evalIn[string](tb, `document.querySelector('#f-project option[value="1"]')?.textContent ?? ""`); got != "Website (2 entries)" {
			t.Errorf("the project picker offers %q", got)
		}
		if href := evalIn[string](tb, `document.querySelector("#back-to-host")?.getAttribute("href") ?? ""`); href != back {
			t.Errorf("the header leads back to %q, want %q", href, back)
		}
		if who := tb.text(".who"); !strings.HasPrefix(who, "User: member · Tenant: demo") || strings.Contains(who, "Role") {
			t.Errorf("the header reads %q", who)
		}
		tb.open("/console/trash?project=1", "#restore-project")
		if txt := tb.text("#restore-project"); txt != "Restore your entries of project Website's trash…" {
			t.Errorf("the project's action reads %q", txt)
		}
		tb.submit("#question", chromedp.Click(chromedp.CSS("#clear-project")))
		if q := tb.text("#question"); !strings.Contains(q, "Clear all 1 entry (tasks and sprints) of project Website's trash for good?") {
			t.Errorf("the member's project confirmation: %q", q)
		}
		wide(tb, "portal-member-trash")

		// The profile link in the same browser: the trash stays open.
		tb.follow(mint(console.ScopeProfile), "main")
		tb.open("/console/trash", "#results")
		if !evalIn[bool](tb, `!!document.querySelector('nav a[href="/console/profile"]') && !!document.querySelector('nav a[href="/console/trash"]')`) {
			t.Error("after two links the navigation lacks one")
		}
		// The used link's page leads back to the host.
		tb.follow(link, "#ended-message")
		if msg := tb.text("#ended-message"); !strings.Contains(msg, "used already") {
			t.Errorf("the used link says %q", msg)
		}
		if txt := tb.text("#back-to-host"); txt != "Back to deskkit" {
			t.Errorf("the used link's way back reads %q", txt)
		}
		wide(tb, "portal-link-used")

		// In Chinese.
		tb.open("/console/trash?lang=zh-CN", "#results")
		tb.wantChinese("#back-to-host", "返回deskkit")
		tb.wantChinese(".who", "用户：member · 租户：demo")
		tb.wantChinese(".no-actions", "仅删除人、创建人或项目管理员可恢复或彻底删除。")
		wide(tb, "portal-member-trash-zh")

		// The session expires: the page says so and leads back.
		f.clock.Advance(console.DefaultSessionTTL)
		tb.open("/console/trash", "#ended-message")
		tb.wantChinese("#ended-message", "您的会话已过期。")
		wide(tb, "portal-ended-zh")
		tb.do(chromedp.Click(chromedp.CSS("#back-to-host")))
		tb.waitFor(`!!document.querySelector("#host-app")`)
		if loc := evalIn[string](tb, "location.href"); loc != back {
			t.Errorf("the way back led to %s", loc)
		}
		tb.noConsoleErrors()
	})
}

// wide checks the page at 390 px (no sideways scrolling) and inspects it
// (accessibility, keyboard, screenshots at 360 and 1440 px).
func wide(tb *tab, name string) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(390, 900))
	if overflow := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		tb.t.Errorf("%s at 390 px: the page is %d px wider than the window", name, overflow)
	}
	tb.do(chromedp.EmulateViewport(1440, 900))
	tb.inspect(name)
}
