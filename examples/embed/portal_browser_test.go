package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The host's pages and deskkit's console in headless Chromium: without a
// browser the test skips, and DESKKIT_REQUIRE_BROWSER=1 makes that a
// failure, as for the reference server's browser tests.

func findChromium() string {
	if p := os.Getenv("DESKKIT_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "chromium-headless-shell", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// cspViolations collects, in every document, the Content-Security-Policy
// violations it meets, for the test to read.
const cspViolations = `window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) { window.__csp.push(e.violatedDirective + " " + e.blockedURI); });`

// browser is one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findChromium()
	if path == "" {
		if os.Getenv("DESKKIT_REQUIRE_BROWSER") == "1" {
			t.Fatal("no Chromium found; DESKKIT_REQUIRE_BROWSER=1 requires one")
		}
		t.Skip("no Chromium found (apt-get install -y chromium): skipping")
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspViolations})
		return err
	}))
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return &browser{t: t, ctx: ctx}
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// until waits for the JavaScript condition js to hold in the page (a new
// document after a navigation included) and returns its value.
func until[T any](b *browser, js string) T {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			b.t.Fatalf("waited 30s for %s on %s", js, eval[string](b, "location.href"))
		}
		if v, err := chromedp.Run(b.ctx, chromedp.Poll[T](js, chromedp.WithPollingTimeout(left))); err == nil {
			return v
		}
	}
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// at waits until the page is the document at path (path and query, no
// autosubmitting form left) and sel is in it.
func (b *browser) at(path, sel string) {
	b.t.Helper()
	p, _ := json.Marshal(path)
	s, _ := json.Marshal(sel)
	until[bool](b, fmt.Sprintf(`document.readyState === "complete" && location.pathname + location.search === %s && !document.querySelector("form[data-autosubmit]") && !!document.querySelector(%s)`, p, s))
}

// text is the text of the page's first sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, _ := json.Marshal(sel)
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%s) || {innerText: ""}).innerText`, s))
}

// childFrame is the first frame inside the page's: its URL, and the URL it
// could not load when the browser refused or failed it.
func (b *browser) childFrame() (url, unreachable string) {
	b.t.Helper()
	var tree *page.FrameTree
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
		tree = res.FrameTree
		return err
	}))
	if tree == nil || len(tree.ChildFrames) == 0 {
		b.t.Fatal("the page has no frame")
	}
	f := tree.ChildFrames[0].Frame
	return f.URL, f.UnreachableURL
}

// framer serves a page of another origin that shows target in a frame and
// says when the frame has loaded (a refused frame loads the browser's
// error page).
func framer(t *testing.T, target string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>framer</title><iframe src="%s" onload="document.title='loaded'" width="600" height="400"></iframe>`, target)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPortalInChromium is the host application as its user meets it:
// signed in to the host, its "Trash" button opens deskkit's trash page
// through a portal link, limited to the trash, with the host's names and
// look; its "Webhooks" button opens the channels; a page of a listed
// origin may frame the console and one of any other origin may not; and
// signing out of the host ends the console's session.
func TestPortalInChromium(t *testing.T) {
	b := newBrowser(t)
	// The host's address is known before it is built, so that a partner's
	// page can frame the console and a stranger's cannot.
	host := httptest.NewUnstartedServer(nil)
	t.Cleanup(host.Close)
	base := "http://" + host.Listener.Addr().String()
	partner := framer(t, base+"/manage/signin")
	stranger := framer(t, base+"/manage/signin")
	db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, err := newApp(context.Background(), db, &appOptions{ConsoleFrameAncestors: []string{partner.URL}, AppURL: base})
	if err != nil {
		t.Fatal(err)
	}
	host.Config.Handler = app
	host.Start()

	// A deleted task, in the host's project 1 ("Launch").
	req, _ := http.NewRequest(http.MethodDelete, base+"/tasks/2", nil)
	req.Header.Set("Authorization", "Bearer key-ada")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	// Sign in to the host.
	b.do(chromedp.Navigate(base + "/app"))
	b.at("/app", "#key")
	b.do(chromedp.SendKeys(chromedp.CSS("#key"), "key-ada"), chromedp.Click(chromedp.CSS("#host-signin")))
	b.at("/app", "#open-trash")

	// "Trash": the portal link's page posts itself and the trash opens.
	b.do(chromedp.Click(chromedp.CSS("#open-trash")))
	b.at("/manage/trash", "#results")
	if who := b.text(".who"); who != "User: Ada Lovelace · Tenant: Acme · Role: administrator" {
		t.Errorf("the header names %q, want the host's names", who)
	}
	if title := eval[string](b, "document.title"); title != "Trash · Embed" {
		t.Errorf("title %q", title)
	}
	if accent := eval[string](b, `getComputedStyle(document.documentElement).getPropertyValue("--accent").trim()`); accent != "#6a1b9a" {
		t.Errorf("accent colour %q", accent)
	}
	if row := b.text("#results tbody tr"); !strings.Contains(row, "Book the venue") || !strings.Contains(row, "Launch") {
		t.Errorf("the trash's row: %q, want the task and its project's name", row)
	}
	if eval[bool](b, `!!document.querySelector('nav a[href="/manage/channels"], nav a[href="/manage/profile"]')`) {
		t.Error("a trash link's navigation offers other pages")
	}
	// The way back to the host, in the header.
	if href := eval[string](b, `document.querySelector("#back-to-host")?.getAttribute("href") ?? ""`); href != base+"/app" {
		t.Errorf("the header's way back leads to %q, want %q", href, base+"/app")
	}
	if txt := b.text("#back-to-host"); txt != "Back to Embed" {
		t.Errorf("the way back reads %q", txt)
	}
	// The channels are not part of a trash link.
	b.do(chromedp.Navigate(base + "/manage/channels"))
	b.at("/manage/channels", "[role=alert]")
	if msg := b.text("[role=alert]"); !strings.Contains(msg, "not part of what you were given access to") {
		t.Errorf("the channels with a trash link: %q", msg)
	}

	// "Webhooks": a link for the channels.
	b.do(chromedp.Navigate(base + "/app"))
	b.at("/app", "#open-channels")
	b.do(chromedp.Click(chromedp.CSS("#open-channels")))
	b.at("/manage/channels", "#add")
	// The add form asks for the type first and shows only its fields: no
	// DingTalk secret for a webhook; choosing DingTalk shows it.
	b.do(chromedp.Click(chromedp.CSS("#add")))
	b.at("/manage/channels/new", "#c-name")
	if eval[bool](b, `!!document.querySelector("#c-secret")`) {
		t.Error("the webhook form asks for a DingTalk secret")
	}
	b.do(chromedp.SetValue(chromedp.CSS("#c-type"), "WORKPLACE_CHAT"))
	b.at("/manage/channels/new?type=WORKPLACE_CHAT", "#c-secret")
	// The Trash tab still works after the Webhooks button: one session
	// holds both scopes, and its navigation offers both.
	b.do(chromedp.Navigate(base + "/manage/trash"))
	b.at("/manage/trash", "#results")
	if !eval[bool](b, `!!document.querySelector('nav a[href="/manage/channels"]') && !!document.querySelector('nav a[href="/manage/trash"]')`) {
		t.Error("after both buttons the navigation lacks a page")
	}
	// "Back to Embed" leads to the host's page.
	b.do(chromedp.Click(chromedp.CSS("#back-to-host")))
	b.at("/app", "#open-trash")
	if n := eval[int](b, `window.__csp.length`); n != 0 {
		t.Errorf("CSP violations: %v", eval[[]string](b, `window.__csp`))
	}

	// Framing: the listed partner's page shows the console; a stranger's
	// page gets the browser's refusal.
	b.do(chromedp.Navigate(partner.URL))
	until[bool](b, `document.title === "loaded"`)
	// (signed in, the sign-in page sends the frame on to the console's home)
	if url, unreachable := b.childFrame(); !strings.HasPrefix(url, base+"/manage/") || unreachable != "" {
		t.Errorf("the partner's frame: %q (unreachable %q), want the console", url, unreachable)
	}
	b.do(chromedp.Navigate(stranger.URL))
	until[bool](b, `document.title === "loaded"`)
	if url, unreachable := b.childFrame(); strings.HasPrefix(url, base) && unreachable == "" {
		t.Errorf("a stranger's page framed the console (%q)", url)
	} else {
		t.Logf("the stranger's frame: %q, unreachable %q", url, unreachable)
	}

	// Signing out of the host ends the console's session: the host's Allow
	// refuses, and the next console page says so.
	b.do(chromedp.Navigate(base + "/app"))
	b.at("/app", "#host-signout")
	b.do(chromedp.Click(chromedp.CSS("#host-signout")))
	b.at("/app", "#key")
	b.do(chromedp.Navigate(base + "/manage/channels"))
	b.at("/manage/channels", "#ended-message")
	if msg := b.text("#ended-message"); !strings.Contains(msg, "you may no longer use these pages") {
		t.Errorf("after signing out of the host: %q", msg)
	}
	// The ended page leads back to the host, not to a token sign-in.
	if href := eval[string](b, `document.querySelector("#back-to-host")?.getAttribute("href") ?? ""`); href != base+"/app" {
		t.Errorf("the ended page's way back leads to %q", href)
	}
	if eval[bool](b, `!!document.querySelector('a[href^="/manage/signin"], form[action="/manage/signin"]')`) {
		t.Error("the ended page offers the token sign-in")
	}
}
