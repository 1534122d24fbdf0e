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
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The console's browser tests drive the real reference server (run, as the
// command line starts it) in headless Chromium. Without a browser they skip;
// DESKKIT_REQUIRE_BROWSER=1, which CI sets, makes that a failure.
// Screenshots of every page at 360 and 1440 px go to DESKKIT_SCREENSHOTS
// when it names a directory, else to the test's temporary directory.
const (
	envRequireBrowser = "DESKKIT_REQUIRE_BROWSER"
	envScreenshots    = "DESKKIT_SCREENSHOTS"
	envBrowser        = "DESKKIT_BROWSER" // the browser's path, if not on PATH by a usual name
)

// browserTimeout bounds one test's browser: a hung page fails the test
// rather than the whole run.
const browserTimeout = 3 * time.Minute

// findBrowser returns the path of a Chromium, or "".
func findBrowser() string {
	if p := os.Getenv(envBrowser); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "chromium-headless-shell", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab is one headless browser tab on the console of the server at base.
// It records what the page writes to its console (CSP violations among
// it) and checks at the end of the test that nothing went wrong.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// cspProbe runs in every document before its own scripts (the
// DevTools protocol puts it there, outside the page's CSP) and reports
// each Content-Security-Policy violation to the console, where tab
// collects it.
const cspProbe = `document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});`

// newTab starts a browser for the test, or skips (fails with
// DESKKIT_REQUIRE_BROWSER=1) when there is none.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	path := findBrowser()
	if path == "" {
		msg := "no Chromium found (apt-get install -y chromium, or set " + envBrowser + "): skipping the browser tests"
		if os.Getenv(envRequireBrowser) == "1" {
			t.Fatal(msg + "; " + envRequireBrowser + "=1 requires them")
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	tb := &tab{t: t, ctx: ctx, base: base}
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspProbe})
		return err
	}))
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.messages = append(tb.messages, m)
			tb.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		<-done
	})
	return tb
}

// consoleErrors returns the messages that mean a page went wrong: a CSP
// violation, an exception, an error a script logged. The browser's own
// reports of HTTP statuses (source "network": the refusals the tests
// provoke) are left out.
func (tb *tab) consoleErrors() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for _, m := range tb.messages {
		csp := strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "CSP violation")
		bad := m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network")
		if csp || bad {
			out = append(out, m.String()+" ("+m.URL+")")
		}
	}
	return out
}

// noConsoleErrors fails the test if a page logged an error.
func (tb *tab) noConsoleErrors() {
	tb.t.Helper()
	// Messages travel asynchronously: a round trip through the page makes
	// sure those sent before it have arrived.
	_, _ = chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`true`))
	if errs := tb.consoleErrors(); len(errs) > 0 {
		tb.t.Errorf("the pages logged errors:\n  %s", strings.Join(errs, "\n  "))
	}
}

// do runs actions, failing the test on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v\nconsole: %v", err, tb.consoleErrors())
	}
}

// pollTimeout bounds one wait for a state of the page.
const pollTimeout = 30 * time.Second

// pollIn waits until the JavaScript expression js is truthy in the page (30 s
// at most, then the test fails) and returns its value. A navigation cuts a
// poll short (its document is gone): it is polled again in the new one.
func pollIn[T any](tb *tab, js string) T {
	tb.t.Helper()
	deadline := time.Now().Add(pollTimeout)
	var err error
	for {
		left := time.Until(deadline)
		if left <= 0 || tb.ctx.Err() != nil {
			tb.t.Fatalf("waited %v for %s: %v\nconsole: %v", pollTimeout, js, err, tb.consoleErrors())
		}
		var v T
		if v, err = chromedp.Run(tb.ctx, chromedp.Poll[T](js, chromedp.WithPollingTimeout(left))); err == nil {
			return v
		}
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always encodes
	}
	return string(b)
}

// visibleText is the text of the first element a selector matches, in a
// one-element array (truthy even when the text is empty), or null while
// there is none or it is not visible.
const visibleText = `(function (el) {
  if (!el || !(el.offsetWidth || el.offsetHeight || el.getClientRects().length)) { return null; }
  return [el.innerText];
})(document.querySelector(%s))`

// text is the text of the first element sel matches, once it is visible.
// The wait and the read are one evaluation in the page: a wait for the
// node, then a read of it, fails with "No node with given id found" when
// htmx replaces it in between.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return strings.TrimSpace(pollIn[[]string](tb, fmt.Sprintf(visibleText, jsString(sel)))[0])
}

// wantRefusal checks that the refusal sel shows says msg first, the API's
// message for the same error as a sentence, and the API's eKey key.
func (tb *tab) wantRefusal(sel, msg, key string) {
	tb.t.Helper()
	if got := tb.text(sel); !strings.HasPrefix(got, msg) {
		tb.t.Errorf("%s: %s says %q, want the API's message %q", tb.location(), sel, got, msg)
	}
	if got := tb.text(sel + " code[data-ekey]"); got != key {
		tb.t.Errorf("%s: %s shows the eKey %q, want %q", tb.location(), sel, got, key)
	}
}

// waitFor waits until the JavaScript condition js holds in the page (30 s
// at most, then the test fails).
func (tb *tab) waitFor(js string) {
	tb.t.Helper()
	pollIn[bool](tb, js)
}

// settled holds when the page has loaded and htmx is idle: no request in
// flight (htmx marks the element that asked with htmx-request until its
// answer is swapped in, and a queued request starts as the one before it
// ends) and no swap settling (htmx-swapping, htmx-settling and htmx-added
// stay on a swap's target and new content until it has settled and htmx
// has bound the new content's links and forms).
const settled = `document.readyState === "complete" && !document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added")`

// swap runs actions that replace region (a click on a link or a form's
// button: a new document, a body htmx swaps in, or region itself swapped in
// place) and waits until region is new, the page has settled and cond
// holds. region is marked first, so that cond holding on the page before
// is not taken for the answer, and no swap still to come can replace what
// the test reads next.
func (tb *tab) swap(region, cond string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	mark := fmt.Sprintf(`(function (el) { if (!el) { return false; } el.setAttribute("data-stale", ""); return true; })(document.querySelector(%s))`, jsString(region))
	if !evalIn[bool](tb, mark) {
		tb.t.Fatalf("no %s to mark on %s", region, tb.location())
	}
	tb.do(actions...)
	tb.waitFor(fmt.Sprintf(`!document.querySelector("[data-stale]") && %s && (%s)`, settled, cond))
}

// submit runs actions that leave the page (a click on a form's button or a
// link) and waits until another page (a new document, or a body htmx
// swapped in) shows sel: swap of the page's main.
func (tb *tab) submit(sel string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	tb.swap("main", fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel)), actions...)
}

// follow opens a one-time link, whose page posts its code at once, and
// waits for the page that answers it to show sel.
func (tb *tab) follow(link, sel string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(link))
	tb.waitFor(fmt.Sprintf(`!document.querySelector("form[data-autosubmit]") && %s && !!document.querySelector(%s)`, settled, jsString(sel)))
}

// eval runs JavaScript in the page and decodes its value.
func evalIn[T any](tb *tab, js string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// open navigates to path of the server and waits for sel.
func (tb *tab) open(path, sel string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// location is the page's path and query.
func (tb *tab) location() string {
	tb.t.Helper()
	loc, err := chromedp.Run(tb.ctx, chromedp.Location())
	if err != nil {
		tb.t.Fatal(err)
	}
	return strings.TrimPrefix(loc, tb.base)
}

// signIn signs in on the sign-in page with token and waits for the home
// page.
func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.open("/console/signin", "#token")
	tb.submit("form.signout",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
	)
}

// screenshots saves the page at 360 and 1440 px wide as NAME-360.png and
// NAME-1440.png, and checks that nothing is wider than the viewport.
func (tb *tab) screenshots(name string) {
	tb.t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		dir = filepath.Join(tb.t.TempDir(), "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	for _, w := range []int64{360, 1440} {
		tb.do(chromedp.EmulateViewport(w, 900))
		overflow := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`)
		if overflow > 0 {
			tb.t.Errorf("%s at %d px: the page is %d px wider than the window", name, w, overflow)
		}
		// The whole page, unless it is too tall for one picture (the API
		// reference): then what the window shows.
		shot := chromedp.FullScreenshot(100)
		if evalIn[int](tb, `document.documentElement.scrollHeight`) > 8000 {
			shot = chromedp.CaptureScreenshot()
		}
		png, err := chromedp.Run(tb.ctx, shot)
		if err != nil {
			tb.t.Fatalf("screenshot: %v", err)
		}
		if len(png) < 1000 || string(png[1:4]) != "PNG" {
			tb.t.Fatalf("screenshot of %s at %d px is not a PNG (%d bytes)", name, w, len(png))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w)), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	tb.do(chromedp.EmulateViewport(1440, 900))
}

// issueFor runs the token command against the database at rawURL with args
// and returns what it printed: a token, or with -console a link.
func issueFor(t *testing.T, rawURL string, args ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	err := run(context.Background(), append([]string{"token", "-database-url", rawURL}, args...), &stdout, &stderr, env(nil))
	if err != nil {
		t.Fatalf("token %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// startConsole runs the reference server on the database at rawURL and
// returns its base URL.
func startConsole(t *testing.T, rawURL string) string {
	t.Helper()
	base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL})
	return base
}

// TestConsoleSignIn signs in with a pasted token and with a one-time link,
// signs out, and sees a revoked token end its session, on both databases.
func TestConsoleSignIn(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startConsole(t, rawURL)
		token := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		tb := newTab(t, base)

		// Signed out, a console page leads to the sign-in page and back.
		tb.open("/console/", "#token")
		if loc := tb.location(); loc != "/console/signin?next=%2Fconsole%2F" {
			t.Errorf("signed out, /console/ went to %s", loc)
		}
		res, err := chromedp.Run(tb.ctx, chromedp.NavigateResponse(base+"/console/signin"))
		if err != nil {
			t.Fatal(err)
		}
		if csp, _ := res.Headers["Content-Security-Policy"].(string); !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("the sign-in page's Content-Security-Policy: %q", csp)
		}
		tb.waitFor(settled + ` && !!document.querySelector("#token")`)
		tb.inspect("signin")
		tb.submit(`[role=alert]`, chromedp.SendKeys(chromedp.CSS("#token"), "dk_not-a-token"), chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
		if msg := tb.text(`[role=alert]`); !strings.Contains(msg, "not valid") {
			t.Errorf("a wrong token: %q", msg)
		}
		tb.signIn(token)
		if who := tb.text(".who"); !strings.Contains(who, "admin") {
			t.Errorf("signed in as %q, want the admin", who)
		}
		tb.inspect("home")

		// Sign out: the session is gone from the database, so the cookie
		// the browser had is refused too.
		cookie := sessionCookie(t, tb)
		tb.submit("#token", chromedp.Click(chromedp.CSS("form.signout button")))
		if msg := tb.text(`[role=status]`); msg != "You are signed out." {
			t.Errorf("after sign-out: %q", msg)
		}
		if status := getWithCookie(t, base+"/console/", cookie); status != http.StatusSeeOther {
			t.Errorf("the signed-out session's cookie: %d, want 303 to the sign-in page", status)
		}

		// A one-time link signs in once.
		link := issueFor(t, rawURL, "-tenant", "demo", "-username", "bob", "-console", "-base-url", base)
		if !strings.HasPrefix(link, base+"/console/link?code=") {
			t.Fatalf("token -console printed %q", link)
		}
		tb.follow(link, "form.signout")
		if who := tb.text(".who"); strings.Contains(who, "admin") {
			t.Errorf("the link signed in as %q, want bob, no admin", who)
		}
		tb.submit("#token", chromedp.Click(chromedp.CSS("form.signout button")))
		tb.follow(link, `[role=alert]`)
		if msg := tb.text(`[role=alert]`); !strings.Contains(msg, "not valid") {
			t.Errorf("a used link: %q", msg)
		}

		// Revoking the token ends the session signed in with it.
		tb.signIn(token)
		if err := runStdin(context.Background(), []string{"token", "-revoke", "-database-url", rawURL}, strings.NewReader(token+"\n"), io.Discard, io.Discard, env(nil)); err != nil {
			t.Fatal(err)
		}
		tb.open("/console/", "#token")
		if msg := tb.text(`[role=status]`); !strings.Contains(msg, "revoked") {
			t.Errorf("after the token was revoked: %q", msg)
		}
		tb.noConsoleErrors()
	})
}

// TestConsoleRefusesForgedForms posts a form without the CSRF token from
// the console's own origin, and one from another origin, and sees both
// refused with the session intact.
func TestConsoleRefusesForgedForms(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startConsole(t, rawURL)
		token := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		tb := newTab(t, base)
		tb.signIn(token)

		// Same origin, no token: the form a script (or a careless page)
		// could build.
		tb.submit(`[role=alert]`, chromedp.Evaluate[chromedp.Void](`(function () {
  var f = document.createElement("form");
  f.method = "post"; f.action = "/console/signout";
  f.setAttribute("hx-boost", "false");
  document.body.appendChild(f); f.submit();
})()`))
		if msg := tb.text(`[role=alert]`); !strings.Contains(msg, "security token") {
			t.Errorf("a form without the CSRF token: %q", msg)
		}

		// Another origin (another port of this host: same site, so the
		// SameSite=Strict cookie goes along), with a guessed token.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>evil</title><form id="f" method="post" action="%s/console/signout"><input name="csrf" value="guess"><button>go</button></form>`, base)
		}))
		defer evil.Close()
		tb.do(chromedp.Navigate(evil.URL))
		tb.swap("#f", `!!document.querySelector("[role=alert]")`, chromedp.Click(chromedp.CSS("#f button")))
		if msg := tb.text(`[role=alert]`); !strings.Contains(msg, "another site") {
			t.Errorf("a form from another origin: %q", msg)
		}

		// Still signed in.
		tb.open("/console/", "form.signout")
		tb.noConsoleErrors()
	})
}

// sessionCookie is the value of the console's session cookie in the
// browser (HttpOnly: read through the DevTools protocol, not a script).
func sessionCookie(t *testing.T, tb *tab) string {
	t.Helper()
	res, err := chromedp.Run(tb.ctx, func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{tb.base + "/console/"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "deskkit-console" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Errorf("session cookie: HttpOnly %v, SameSite %q; want HttpOnly, Strict", c.HTTPOnly, c.SameSite)
			}
			return c.Value
		}
	}
	t.Fatal("no session cookie in the browser")
	return ""
}

// getWithCookie GETs url with the session cookie and no redirects, and
// returns the status.
func getWithCookie(t *testing.T, url, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Cookie", "deskkit-console="+cookie)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// a11yProbe lists what keeps a page from a person using a screen reader,
// a keyboard or weak eyes: inputs without a label, buttons and links
// without an accessible name, images without alt, text below WCAG AA
// contrast (4.5:1, 3:1 for large text), a page without lang or title.
const a11yProbe = `(function () {
  var problems = [];
  function short(el) { return el.outerHTML.slice(0, 120); }
  function visible(el) { var r = el.getBoundingClientRect(); var s = getComputedStyle(el); return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none"; }
  function byIds(ids) { return ids.split(/\s+/).map(function (id) { var e = document.getElementById(id); return e ? e.textContent : ""; }).join(" ").trim(); }
  document.querySelectorAll("input:not([type=hidden]), select, textarea").forEach(function (el) {
    var ok = (el.labels && Array.prototype.some.call(el.labels, function (l) { return l.textContent.trim() !== ""; })) ||
      (el.getAttribute("aria-label") || "").trim() !== "" || (el.getAttribute("aria-labelledby") && byIds(el.getAttribute("aria-labelledby")) !== "");
    if (!ok) { problems.push("input without a label: " + short(el)); }
  });
  document.querySelectorAll("button, a[href], [role=button], input[type=submit], input[type=button]").forEach(function (el) {
    var name = (el.getAttribute("aria-label") || "").trim() || (el.getAttribute("aria-labelledby") ? byIds(el.getAttribute("aria-labelledby")) : "") ||
      el.textContent.trim() || (el.value || "").trim() || (el.getAttribute("title") || "").trim();
    if (!name) { el.querySelectorAll("img[alt]").forEach(function (i) { name += i.alt.trim(); }); }
    if (!name) { problems.push("action without an accessible name: " + short(el)); }
  });
  document.querySelectorAll("img").forEach(function (el) { if (!el.hasAttribute("alt")) { problems.push("image without alt: " + short(el)); } });
  if (!document.documentElement.lang) { problems.push("html without lang"); }
  if (!document.title.trim()) { problems.push("page without a title"); }
  function rgba(s) { var m = s.match(/[\d.]+/g) || [0, 0, 0, 0]; return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; }
  function lum(c) { var a = [c[0], c[1], c[2]].map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * a[0] + 0.7152 * a[1] + 0.0722 * a[2]; }
  function background(el) { for (; el && el.nodeType === 1; el = el.parentElement) { var c = rgba(getComputedStyle(el).backgroundColor); if (c[3] > 0.5) { return c; } } return [255, 255, 255, 1]; }
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var seen = new Set();
  while (walker.nextNode()) {
    var t = walker.currentNode; var el = t.parentElement;
    if (!t.textContent.trim() || !el || seen.has(el) || !visible(el)) { continue; }
    seen.add(el);
    var s = getComputedStyle(el); var fg = rgba(s.color); var bg = background(el);
    var l1 = lum(fg), l2 = lum(bg); var ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    var size = parseFloat(s.fontSize); var bold = parseInt(s.fontWeight, 10) >= 700;
    var need = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    if (ratio < need) { problems.push("contrast " + ratio.toFixed(2) + " < " + need + ": " + short(el)); }
  }
  return problems;
})()`

// actionables lists the visible links, buttons and fields of the page,
// by a description unique enough to tell them apart.
const actionables = `(function () {
  var out = [];
  document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea").forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (el.disabled || r.width === 0 || r.height === 0 || el.closest("[hidden]") || el.classList.contains("skip")) { return; }
    out.push(el.outerHTML.slice(0, 160));
  });
  return out;
})()`

// goDurations finds, in the page's text, a Go duration written as Go
// writes one ("10m", "6m56s", "1m0s", "1.5s", "300ms") rather than for a
// person (deskkit.DurationText: "10 minutes", "6 分钟 56 秒").
const goDurations = `(function () {
  var main = document.querySelector("main") || document.body;
  var re = /(?<![\w.\/:+-])(?=\d)(\d+h)?(\d+m(?!s))?(\d+(\.\d+)?(s|ms|µs|ns))?(?<=[hmsµ])(?![\w\/:-]|\.\d)/g;
  return (main.innerText.match(re) || []).slice(0, 5);
})()`

// inspect screenshots the page at both widths, runs the accessibility
// probe, checks that no Go duration reaches the reader, and tabs through
// the page to see every action reached by the keyboard.
func (tb *tab) inspect(name string) {
	tb.t.Helper()
	if problems := evalIn[[]string](tb, a11yProbe); len(problems) > 0 {
		tb.t.Errorf("%s: accessibility:\n  %s", name, strings.Join(problems, "\n  "))
	}
	if found := evalIn[[]string](tb, goDurations); len(found) > 0 {
		tb.t.Errorf("%s: Go durations where a reader wants words: %q", name, found)
	}
	want := evalIn[[]string](tb, actionables)
	reached := map[string]bool{}
	evalIn[bool](tb, `document.activeElement && document.activeElement.blur(), window.focus(), true`)
	missing := func() []string {
		var out []string
		for _, el := range want {
			if !reached[el] {
				out = append(out, el)
			}
		}
		return out
	}
	// A date field takes a Tab per part (day, month, year): room for that.
	for i := 0; i < 3*len(want)+5 && len(missing()) > 0; i++ {
		tb.do(chromedp.KeyEvent(kb.Tab))
		reached[evalIn[string](tb, `document.activeElement ? document.activeElement.outerHTML.slice(0, 160) : ""`)] = true
	}
	for _, el := range missing() {
		tb.t.Errorf("%s: not reached by Tab: %s", name, el)
	}
	tb.screenshots(name)
}

// trashedTask creates a task in project through the API, deletes it into the
// trash, and returns its id and its trash entry's id.
func trashedTask(t *testing.T, base, token string, project int64, name string) (id, trashID int64) {
	t.Helper()
	var c struct{ ID int64 }
	ok(t, base, token, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": project, "name": name}, &c)
	var d struct{ ID, TrashID int64 }
	ok(t, base, token, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), nil, &d)
	return c.ID, d.TrashID
}

// TestConsoleTrash deletes demo tasks through the API, finds one in the
// console's search, restores it and sees the API answer it again, clears
// a project's trash through the confirmation that states the count, and
// sees the API's 403 and 404 as sentences, on both databases.
func TestConsoleTrash(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envRetention: "720h"})
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		member := issueFor(t, rawURL, "-tenant", "demo", "-username", "max", "-admin=false")
		alpha, _ := trashedTask(t, base, admin, 1, "Alpha report")
		trashedTask(t, base, admin, 1, "Beta plan")
		trashedTask(t, base, admin, 1, "Gamma notes")
		_, other := trashedTask(t, base, admin, 2, "Alpha in another project")
		tb := newTab(t, base)
		tb.signIn(admin)

		// Search: project 1, "alpha", deleted today.
		today := time.Now().UTC().Format("2006-01-02")
		tb.open("/console/trash", "#f-name")
		// Every filter shows its longest option whole ("Deleted, newest
		// first", not "Deleted, newe") and its label on one line.
		for _, w := range []int64{360, 1440} {
			tb.do(chromedp.EmulateViewport(w, 900))
			if cut := evalIn[[]string](tb, filtersCut); len(cut) > 0 {
				t.Errorf("at %d px: %v", w, cut)
			}
		}
		tb.do(chromedp.EmulateViewport(1440, 900))
		// The values are set without events, so that the live search (htmx,
		// on input and change) sends nothing and the click alone searches.
		// chromedp's SetValue dispatches input and change: each field would
		// start a search, and the answer to the name's already satisfies the
		// wait below while the click's is still to replace the rows.
		evalIn[bool](tb, `(function () {
  document.querySelector("#f-project").value = "1";
  document.querySelector("#f-name").value = "alpha";
  document.querySelector("#f-deleted").value = `+jsString(today)+`;
  return true;
})()`)
		// htmx swaps the results in place: wait for the click's.
		tb.swap("#results", `location.search.includes("name=alpha") && document.querySelector("#results .count").textContent === "1 entry matches."`,
			chromedp.Click(chromedp.CSS(".filters button[type=submit]")))
		if n := evalIn[int](tb, `document.querySelectorAll("#results tbody tr").length`); n != 1 {
			t.Errorf("the search found %d rows, want 1", n)
		}
		if got := tb.text("#results tbody tr td"); got != "Alpha report" {
			t.Errorf("the search found %q", got)
		}
		if who := tb.text(`#results td[data-label="Deleted by"]`); who != "ada" {
			t.Errorf("deleted by %q, want ada", who)
		}
		// With -retention 720h an entry is purged 30 days after its deletion.
		deleted, err1 := time.Parse("2006-01-02 15:04 UTC", tb.text(`#results td[data-label="Deleted"]`))
		purged, err2 := time.Parse("2006-01-02 15:04 UTC", tb.text(`#results td[data-label="Purged"]`))
		if err1 != nil || err2 != nil || purged.Sub(deleted) < 720*time.Hour || purged.Sub(deleted) > 720*time.Hour+time.Minute {
			t.Errorf("deleted %v, purged %v (%v, %v); want 30 days apart", deleted, purged, err1, err2)
		}
		tb.inspect("trash")

		// Restore it through the confirmation; the API answers the task.
		tb.submit("#confirm", chromedp.Click(chromedp.CSS(`#results tbody a[href*="/restore"]`)))
		if q := tb.text("#question"); !strings.Contains(q, "Restore task “Alpha report” to project Website?") {
			t.Errorf("confirmation: %q", q)
		}
		tb.inspect("trash-confirm")
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS("#confirm")))
		if msg := tb.text("[role=status]"); msg != "Restored task “Alpha report”." {
			t.Errorf("after restore: %q", msg)
		}
		if loc := tb.location(); !strings.HasPrefix(loc, "/console/trash?") || !strings.Contains(loc, "name=alpha") {
			t.Errorf("after restore the page is %s, want the search again", loc)
		}
		if status, _ := call(t, base, admin, http.MethodGet, fmt.Sprintf("/api/v1/demo/task/%d", alpha), nil); status != http.StatusOK {
			t.Errorf("the restored task: %d, want 200", status)
		}

		// Clear project 1's trash: the confirmation states the count.
		tb.open("/console/trash?project=1", "#clear-project")
		tb.submit("#confirm", chromedp.Click(chromedp.CSS("#clear-project")))
		if q := tb.text("#question"); !strings.Contains(q, "Clear all 2 entries") {
			t.Errorf("confirmation: %q, want the count 2", q)
		}
		if b := tb.text("#confirm"); b != "Clear 2 entries for good" {
			t.Errorf("button: %q", b)
		}
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS("#confirm")))
		if msg := tb.text("[role=status]"); msg != "Cleared 2 entries of project Website." {
			t.Errorf("after clear: %q", msg)
		}
		var page struct{ Total int64 }
		ok(t, base, admin, http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&projectId=1", nil, &page)
		if page.Total != 0 {
			t.Errorf("project 1's trash holds %d entries after the clear", page.Total)
		}

		// Live search: typing is enough (htmx asks after a pause), and the
		// address follows, so that the result can be bookmarked.
		trashedTask(t, base, admin, 2, "Delta")
		tb.open("/console/trash", "#f-name")
		if c := tb.text("#results .count"); c != "2 entries match." {
			t.Errorf("before the live search: %q", c)
		}
		tb.swap("#results", `location.search.includes("name=another") && document.querySelector("#results .count").textContent === "1 entry matches."`,
			chromedp.SendKeys(chromedp.CSS("#f-name"), "another"))

		// 404: an entry that is not there.
		tb.open("/console/trash/999999/restore", "[role=alert]")
		tb.wantRefusal("[role=alert]", "The resource does not exist.", "resource_not_found")
		tb.inspect("trash-not-found")

		// 403: a member may not clear an entry someone else deleted: the
		// confirmation says so and offers no button, and a form posted
		// anyway is refused as the API refuses it.
		tb.submit("#token", chromedp.Click(chromedp.CSS("form.signout button")))
		tb.signIn(member)
		tb.open(fmt.Sprintf("/console/trash/%d/clear", other), "#refusal")
		if evalIn[bool](tb, `!!document.querySelector("#confirm")`) {
			t.Error("the member is offered to clear an entry someone else deleted")
		}
		if msg := tb.text("#refusal"); !strings.HasPrefix(msg, "You may not do this: only the person who deleted or created it") {
			t.Errorf("the refused confirmation says %q", msg)
		}
		csrf := evalIn[string](tb, `document.querySelector('input[name="csrf"]').value`)
		tb.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function () {
  const f = document.createElement("form");
  f.method = "post"; f.action = %s;
  const i = document.createElement("input"); i.name = "csrf"; i.value = %s; f.appendChild(i);
  document.body.appendChild(f); f.submit();
})()`, jsString(fmt.Sprintf("/console/trash/%d/clear", other)), jsString(csrf))))
		tb.waitFor(`location.pathname.endsWith("/clear") && !!document.querySelector("[role=alert]")`)
		status, env := call(t, base, member, http.MethodDelete, fmt.Sprintf("/api/v1/task/trash/%d", other), nil)
		if status != http.StatusForbidden {
			t.Errorf("the API answers the member %d; the console must refuse what the API refuses", status)
		}
		if env.Msg != "you may not do this" {
			t.Errorf("the API refuses the member with %q", env.Msg)
		}
		tb.wantRefusal("[role=alert]", "You may not do this.", "forbidden")
		tb.noConsoleErrors()
	})
}

// TestConsoleDocs renders /docs with the vendored Redoc under the
// console's Content-Security-Policy, with no violation.
func TestConsoleDocs(t *testing.T) {
	base := startConsole(t, "sqlite:"+filepath.Join(t.TempDir(), "deskkit.db"))
	tb := newTab(t, base)
	res, err := chromedp.Run(tb.ctx, chromedp.NavigateResponse(base+"/docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "Referrer-Policy", "X-Content-Type-Options"} {
		if res.Headers[h] == nil {
			t.Errorf("/docs has no %s header", h)
		}
	}
	if title := tb.text("#redoc h1"); !strings.HasPrefix(title, "deskkit") {
		t.Errorf("Redoc's title: %q", title)
	}
	// An operation of the document, rendered.
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#redoc [id*="operation"]`)))
	tb.screenshots("docs")
	tb.noConsoleErrors()
}

// TestConsoleProbes checks the checks: a page that breaks the CSP, or
// lacks labels, names, alt text or contrast, is reported, so that the other
// tests finding none means something.
func TestConsoleProbes(t *testing.T) {
	base := startConsole(t, "sqlite:"+filepath.Join(t.TempDir(), "deskkit.db"))
	tb := newTab(t, base)
	tb.open("/console/signin", "#token")
	evalIn[bool](tb, `(function () { var s = document.createElement("script"); s.textContent = "window.x = 1"; document.body.appendChild(s); return true; })()`)
	evalIn[bool](tb, `true`)
	errs := tb.consoleErrors()
	if len(errs) == 0 || !strings.Contains(strings.Join(errs, " "), "script-src") {
		t.Errorf("an inline script was not reported as a CSP violation: %v", errs)
	}
	if v := evalIn[any](tb, `window.x === undefined`); v != true {
		t.Errorf("the inline script ran: %v", v)
	}

	// The accessibility probe finds what it is meant to.
	evalIn[bool](tb, `(function () {
  document.querySelector("main").insertAdjacentHTML("beforeend",
    '<input id="bad-input"><button id="bad-button"></button><img id="bad-img" src="data:,">' +
    '<p id="bad-contrast" style="color:#bbb;background:#fff">faint</p>');
  return true;
})()`)
	problems := strings.Join(evalIn[[]string](tb, a11yProbe), "\n")
	for _, want := range []string{"input without a label: <input id=\"bad-input\">", "action without an accessible name: <button id=\"bad-button\">",
		"image without alt: <img id=\"bad-img\"", "bad-contrast"} {
		if !strings.Contains(problems, want) {
			t.Errorf("the accessibility probe missed %q; it found:\n%s", want, problems)
		}
	}
}

// filtersCut lists the trash filters whose select is narrower than its
// longest option's text (plus room for the arrow) or whose label wraps.
const filtersCut = `(function () {
  var out = [];
  var ctx = document.createElement("canvas").getContext("2d");
  document.querySelectorAll(".filters select").forEach(function (s) {
    ctx.font = getComputedStyle(s).font;
    var longest = 0;
    Array.from(s.options).forEach(function (o) { longest = Math.max(longest, ctx.measureText(o.text).width); });
    if (s.clientWidth < longest + 28) { out.push(s.id + " is " + s.clientWidth + " px for " + Math.ceil(longest) + " px of text"); }
  });
  document.querySelectorAll(".filters label").forEach(function (l) {
    var lh = parseFloat(getComputedStyle(l).lineHeight) || 20;
    if (l.getBoundingClientRect().height > lh * 1.5) { out.push("the label " + JSON.stringify(l.textContent) + " wraps"); }
  });
  return out;
})()`
