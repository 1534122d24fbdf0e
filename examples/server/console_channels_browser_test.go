package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// hookReceiver is a webhook receiver on loopback whose answer the test
// switches: 200 "ok" while up, 500 "down for the test" while down.
type hookReceiver struct {
	mu   sync.Mutex
	down bool
	hits int
	*httptest.Server
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.hits++
		down := h.down
		h.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok") //nolint:errcheck // the server reads what it can
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

// startChannelConsole runs the reference server for the channel pages:
// channels may reach loopback (the receiver), and a failed delivery is
// tried three times at once (retry schedule 0,0,0), so that a failure is
// final within a moment rather than hours.
func startChannelConsole(t *testing.T, rawURL string) string {
	t.Helper()
	base, _ := startServer(t, map[string]string{
		envDatabaseURL: rawURL, envChannelAllowPrivate: "true", envEventRetrySchedule: "0,0,0",
	})
	return base
}

// waitPage opens path again and again until the JavaScript predicate cond
// holds on the page, for at most 30 s: the state it waits for (a delivery
// made by the server's worker) comes from outside the page.
func (tb *tab) waitPage(path, sel, cond, what string) {
	tb.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tb.open(path, sel)
		if evalIn[bool](tb, cond) {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("waited 30 s for %s on %s; the page says:\n%s", what, path, evalIn[string](tb, `document.querySelector("main").innerText`))
		}
	}
}

// grantClipboard lets the console's origin write and read the clipboard,
// as a person's click on Copy would.
func (tb *tab) grantClipboard() {
	tb.t.Helper()
	for _, name := range []string{"clipboard-write", "clipboard-read"} {
		err := chromedp.Do(tb.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, browser.SetPermission, browser.SetPermissionParams{
				Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: tb.base,
			})
			return err
		}))
		if err != nil {
			tb.t.Fatalf("grant %s: %v", name, err)
		}
	}
}

// deliveryStatus is the predicate "delivery row n (1 = newest) shows
// status".
// The status is read from the badge's data-status, the stored value; the
// badge's text is its word in the page's language.
func deliveryStatus(n int, status string) string {
	return fmt.Sprintf(`(function () { var r = document.querySelectorAll("#delivery-list tbody tr")[%d]; var b = r && r.querySelector(".status [data-status]"); return !!b && b.dataset.status === %q; })()`, n-1, status)
}

// TestConsoleChannels adds a webhook channel pointing at a loopback
// receiver in the console, tests it, publishes an event through the API
// and watches its delivery reach SUCCEEDED; makes the receiver fail, sees
// the attempts with their status and reply, resends after it recovers and
// sees SUCCEEDED; recovers failures since a date; edits the subscription,
// disables, enables and deletes the channel through confirmations; and
// sees a non-admin get no channel management, on both databases.
func TestConsoleChannels(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startChannelConsole(t, rawURL)
		recv := startHookReceiver(t)
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		member := issueFor(t, rawURL, "-tenant", "demo", "-username", "max", "-admin=false")
		tb := newTab(t, base)
		tb.signIn(admin)

		// An admin is offered the channels and the profile, and gets to the
		// channels through the navigation.
		for _, href := range []string{"/console/channels", "/console/profile"} {
			if !evalIn[bool](tb, `!!document.querySelector('nav a[href="`+href+`"]')`) {
				t.Errorf("the admin's navigation lacks %s", href)
			}
		}
		tb.submit("#add", chromedp.Click(chromedp.CSS(`nav a[href="/console/channels"]`)))

		// Add: the form lists the registered event types.
		tb.inspect("channels-empty")
		tb.submit("#c-name", chromedp.Click(chromedp.CSS("#add")))
		if n := evalIn[int](tb, `document.querySelectorAll("input[name=events]").length`); n < 3 {
			t.Errorf("the form offers %d event types, want the registry's catalogue", n)
		}
		if !evalIn[bool](tb, `!!document.querySelector("input[name=events][value='channel.disabled']")`) {
			t.Errorf("the form does not offer channel.disabled")
		}
		tb.inspect("channels-new")
		// An address the registry refuses is shown with the form kept.
		tb.submit("[role=alert]",
			chromedp.SendKeys(chromedp.CSS("#c-name"), "ops"),
			chromedp.SendKeys(chromedp.CSS("#c-address"), "ftp://example.com/x"),
			chromedp.Click(chromedp.CSS("#save")),
		)
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "address must be") {
			t.Errorf("a bad address: %q", msg)
		}
		if v := evalIn[string](tb, `document.querySelector("#c-name").value`); v != "ops" {
			t.Errorf("the form lost its name: %q", v)
		}
		// Test before saving: the far end's answer is shown.
		hook := recv.URL + "/hook"
		tb.submit("#test-result",
			chromedp.SetValue(chromedp.CSS("#c-address"), hook),
			chromedp.Click(chromedp.CSS("#test")),
		)
		if got := tb.text("#test-result"); !strings.Contains(got, "The far end took the test message") || !strings.Contains(got, "whsec_") {
			t.Errorf("test of the unsaved channel: %q", got)
		}
		tb.submit("#secret", chromedp.Click(chromedp.CSS("#save")))
		secret := evalIn[string](tb, `document.querySelector("#secret").value`)
		if !strings.HasPrefix(secret, "whsec_") {
			t.Errorf("the secret shown after the add: %q", secret)
		}
		// The copy button puts it on the clipboard.
		tb.grantClipboard()
		tb.do(chromedp.Click(chromedp.CSS("#copy")), chromedp.Poll[chromedp.Void](`document.querySelector("#copy").textContent === "Copied"`, chromedp.WithPollingTimeout(10*time.Second)))
		if got := evalIn[string](tb, `navigator.clipboard.readText()`); got != secret {
			t.Errorf("the clipboard holds %q after Copy, want the secret", got)
		}
		tb.inspect("channels-added")
		tb.submit("#deliveries", chromedp.Click(chromedp.CSS("#continue")))
		chPath := tb.location()
		if strings.Contains(evalIn[string](tb, `document.body.innerHTML`), secret) {
			t.Errorf("the channel's page shows the secret again")
		}
		// Test the stored channel: signed with its own secret.
		tb.submit("#test-result", chromedp.Click(chromedp.CSS("#test")))
		if got := tb.text("#test-result"); !strings.Contains(got, "The far end took the test message") {
			t.Errorf("test of the stored channel: %q", got)
		}

		// An event published through the API reaches the receiver.
		ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "hello"}, nil)
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "SUCCEEDED"), "the first delivery to succeed")
		if n := evalIn[int](tb, `document.querySelectorAll("figure.chart svg rect.ok").length`); n != 1 {
			t.Errorf("the chart has %d bars of successes, want 1", n)
		}
		if got := evalIn[string](tb, `document.querySelector("#chart-desc").textContent`); !strings.Contains(got, "1 deliveries succeeded, 0 failed") {
			t.Errorf("the chart's description: %q", got)
		}

		// The receiver fails: three attempts at once, then FAILED.
		recv.setDown(true)
		ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "while down"}, nil)
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "FAILED"), "the second delivery to fail")
		tb.inspect("channels-channel")
		tb.submit("#attempts", chromedp.Click(chromedp.CSS(`#delivery-list tbody tr:first-child a[href^="/console/deliveries/"]`)))
		codes := evalIn[[]string](tb, `Array.from(document.querySelectorAll("#attempts .code[data-code]")).map(function (p) { return p.dataset.code; })`)
		if strings.Join(codes, ",") != "500,500,500" {
			t.Errorf("attempts answered %v, want three 500s", codes)
		}
		if reply := tb.text("#attempts pre.reply"); !strings.Contains(reply, "down for the test") {
			t.Errorf("the attempt's reply: %q", reply)
		}
		tb.inspect("channels-delivery")

		// It recovers; a resend succeeds.
		recv.setDown(false)
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS("#resend")))
		if msg := tb.text("[role=status]"); !strings.Contains(msg, "due now") {
			t.Errorf("after resend: %q", msg)
		}
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "SUCCEEDED"), "the resent delivery to succeed")
		tb.open(chPath+"?status=FAILED", "#deliveries")
		if n := evalIn[int](tb, `document.querySelectorAll("#delivery-list tbody tr").length`); n != 0 {
			t.Errorf("the FAILED filter shows %d deliveries, want none", n)
		}

		// Recover: a failure while down, queued again since a date.
		recv.setDown(true)
		ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "down again"}, nil)
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "FAILED"), "the third delivery to fail")
		recv.setDown(false)
		tb.submit("[role=status]",
			chromedp.SetValue(chromedp.CSS("#r-since"), time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")),
			chromedp.Click(chromedp.CSS("#recover")),
		)
		if msg := tb.text("[role=status]"); !strings.HasPrefix(msg, "Queued 1 failed delivery since") {
			t.Errorf("after recover: %q", msg)
		}
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "SUCCEEDED"), "the recovered delivery to succeed")
		if n := evalIn[int](tb, `document.querySelectorAll("#delivery-list tbody tr").length`); n != 3 {
			t.Errorf("the channel lists %d deliveries, want 3", n)
		}

		// Replace: subscribe to channel.disabled only.
		tb.open(chPath+"/edit", "#c-name")
		tb.submit("[role=status]",
			chromedp.Click(chromedp.CSS("input[name=events][value='channel.disabled']")),
			chromedp.Click(chromedp.CSS("#save")),
		)
		if got := tb.text(".facts"); !strings.Contains(got, "channel.disabled") {
			t.Errorf("after the replace the channel shows %q", got)
		}
		if got := tb.text("#rate-limit"); !strings.Contains(got, "None of its own") {
			t.Errorf("the rate limit of a channel without one: %q", got)
		}
		if got := evalIn[string](tb, `document.querySelector("#in-flight").dataset.limit`); got != "4" {
			t.Errorf("the in-flight limit shown: %q, want the floor 4", got)
		}
		// A rate limit: a text that is no number is refused naming the
		// field, with the form kept; a number is stored and shown.
		tb.open(chPath+"/edit", "#c-rate")
		tb.submit("[role=alert]",
			chromedp.SetValue(chromedp.CSS("#c-rate"), "fast"),
			chromedp.Click(chromedp.CSS("#save")),
		)
		if msg := tb.text("[role=alert]"); !strings.Contains(strings.ToLower(msg), "ratelimit must be between 0") {
			t.Errorf("a rate limit that is no number: %q", msg)
		}
		tb.submit("[role=status]",
			chromedp.SetValue(chromedp.CSS("#c-rate"), "2.5"),
			chromedp.Click(chromedp.CSS("#save")),
		)
		if got := tb.text("#rate-limit"); got != "2.5 messages a second" {
			t.Errorf("the rate limit after the replace: %q", got)
		}
		var api struct {
			RateLimit     float64
			InFlightLimit int
		}
		ok(t, base, admin, http.MethodGet, "/api/v1/event/channel/"+path.Base(chPath), nil, &api)
		if api.RateLimit != 2.5 || api.InFlightLimit < 4 {
			t.Errorf("the API's channel after the console's replace: %+v", api)
		}

		// Disable and enable: the list shows the state and the reason.
		tb.submit("#confirm", chromedp.Click(chromedp.CSS("#disable")))
		tb.inspect("channels-confirm")
		tb.submit("#enable", chromedp.Click(chromedp.CSS("#confirm")))
		tb.open("/console/channels", "#channels")
		if st := tb.text("#channels td.state"); !strings.Contains(st, "Disabled") || !strings.Contains(st, "disabled by user") {
			t.Errorf("the disabled channel's state: %q", st)
		}
		if got := tb.text(`#channels td[data-label="Last 24 h"]`); got != "3 succeeded, 0 failed, 0 pending" {
			t.Errorf("the list's day: %q", got)
		}
		tb.inspect("channels")
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS(`#channels button[aria-label^="Enable"]`)))
		if st := tb.text("#channels td.state"); st != "Healthy" {
			t.Errorf("the enabled channel's state: %q", st)
		}

		// A non-admin: no channel management, and the URLs answer the
		// registry's 403 as the API does.
		tb.submit("#token", chromedp.Click(chromedp.CSS("form.signout button")))
		tb.signIn(member)
		if evalIn[bool](tb, `!!document.querySelector('nav a[href="/console/channels"], .cards a[href="/console/channels"]')`) {
			t.Errorf("a non-admin is offered the channels")
		}
		if !evalIn[bool](tb, `!!document.querySelector('nav a[href="/console/profile"]')`) {
			t.Errorf("a non-admin is not offered the profile")
		}
		for _, path := range []string{"/console/channels", chPath} {
			tb.open(path, "[role=alert]")
			tb.wantRefusal("[role=alert]", "You may not do this.", "forbidden")
			if evalIn[bool](tb, `!!document.querySelector("#add, #test, #disable, #delete, #recover")`) {
				t.Errorf("a non-admin on %s sees channel actions", path)
			}
		}
		// A form the non-admin reaches by its URL is refused by the registry
		// when sent, and nothing changes.
		tb.open(chPath+"/delete", "#confirm")
		tb.submit("p.error", chromedp.Click(chromedp.CSS("#confirm")))
		tb.wantRefusal("p.error", "You may not do this.", "forbidden")
		var still []map[string]any
		ok(t, base, admin, http.MethodGet, "/api/v1/event/channel", nil, &still)
		if len(still) != 1 {
			t.Errorf("after the non-admin's delete the API lists %v", still)
		}
		id := strings.TrimPrefix(chPath, "/console/channels/")
		if status, _ := call(t, base, member, http.MethodGet, "/api/v1/event/channel/"+id+"/deliveries", nil); status != http.StatusForbidden {
			t.Errorf("the API answers the non-admin %d; the console must refuse what the API refuses", status)
		}

		// Delete, as the admin, through the confirmation.
		tb.submit("#token", chromedp.Click(chromedp.CSS("form.signout button")))
		tb.signIn(admin)
		tb.open(chPath, "#delete")
		tb.submit("#confirm", chromedp.Click(chromedp.CSS("#delete")))
		if q := tb.text("#question"); !strings.Contains(q, "Delete channel “ops” for good?") {
			t.Errorf("delete confirmation: %q", q)
		}
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS("#confirm")))
		if msg := tb.text("[role=status]"); msg != "Deleted channel “ops”." {
			t.Errorf("after delete: %q", msg)
		}
		var list []map[string]any
		ok(t, base, admin, http.MethodGet, "/api/v1/event/channel", nil, &list)
		if len(list) != 0 {
			t.Errorf("the API lists %v after the delete", list)
		}
		tb.noConsoleErrors()
	})
}
