package main

import (
	"context"
	"fmt"
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
		tb.follow(srv.URL+link, "[role=alert]")
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "not valid") {
			t.Errorf("the link used again: %q", msg)
		}
		// A link followed two minutes after it was made: dead.
		late, err := f.app.console.PortalLink(ctx, eve.p, console.ScopeChannels)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(console.DefaultPortalLinkTTL)
		tb.open(late, "[role=alert]")
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "not valid") {
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
