package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// headerReceiver is a webhook receiver on loopback that keeps the custom
// headers (Authorization, X-Tenant) of every request it gets.
type headerReceiver struct {
	mu  sync.Mutex
	got []string // "Authorization|X-Tenant" of each request
	*httptest.Server
}

func startHeaderReceiver(t *testing.T) *headerReceiver {
	t.Helper()
	h := &headerReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.got = append(h.got, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Tenant"))
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *headerReceiver) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// TestConsoleHeadersAndFilters adds a webhook with two custom headers in
// the console's form (no script needed: rows of name and value), sees them
// on its page, and checks that its test message and a delivery carry them
// to a loopback receiver; then filters the channel's deliveries by event
// type and by a creation range typed in the reader's zone (named beside
// the fields), and sees a range whose start is after its end refused with
// the form kept; in English and Chinese, on both databases, each page
// through the accessibility, keyboard and width checks (360 and 1440 px),
// and at 390 px wide without overflow.
func TestConsoleHeadersAndFilters(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startChannelConsole(t, rawURL)
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		for _, lang := range []struct{ name, header, suffix, headers, zone, none, before string }{
			{"en", "en", "", "Custom headers", "Times are in the time zone UTC.", "No delivery matches the filter.", "from must be before to"},
			{"zh-CN", "zh-CN,zh;q=0.9,en;q=0.5", "-zh-CN", "自定义请求头", "时间按时区 UTC 填写。", "没有符合筛选条件的推送。", "必须早于 to"},
		} {
			t.Run(lang.name, func(t *testing.T) {
				recv := startHeaderReceiver(t)
				tb := newTabIn(t, base, lang.header)
				tb.signIn(admin)
				tb.open("/console/channels/new?type=WEBHOOK", "#h-name-1")
				tb.inspect("channels-new-headers" + lang.suffix)
				tb.submit("#secret",
					chromedp.SendKeys(chromedp.CSS("#c-name"), "Headers "+lang.name),
					chromedp.SendKeys(chromedp.CSS("#c-address"), recv.URL+"/hook"),
					chromedp.SendKeys(chromedp.CSS("#h-name-1"), "Authorization"),
					chromedp.SendKeys(chromedp.CSS("#h-value-1"), "Bearer t0ken-"+lang.name),
					chromedp.SendKeys(chromedp.CSS("#h-name-3"), "X-Tenant"),
					chromedp.SendKeys(chromedp.CSS("#h-value-3"), "acme"),
					chromedp.Click(chromedp.CSS("#save")),
				)
				tb.submit("#deliveries", chromedp.Click(chromedp.CSS("#continue")))
				chPath := tb.location()
				want := "Bearer t0ken-" + lang.name + "|acme"
				if got := tb.text("#headers"); !strings.Contains(got, "Authorization: Bearer t0ken-"+lang.name) || !strings.Contains(got, "X-Tenant: acme") {
					t.Errorf("the channel's page lists the headers as %q", got)
				}
				if !strings.Contains(tb.text("main"), lang.headers) {
					t.Errorf("the channel's page does not say %q", lang.headers)
				}

				// The test message and a delivery carry them.
				tb.submit("#test-result", chromedp.Click(chromedp.CSS("#test")))
				if got := recv.requests(); len(got) != 1 || got[0] != want {
					t.Errorf("the test carried %q, want %q", got, want)
				}
				ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "hello " + lang.name}, nil)
				tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "SUCCEEDED"), "the delivery to succeed")
				if got := recv.requests(); len(got) != 2 || got[1] != want {
					t.Errorf("the delivery carried %q, want %q", got, want)
				}

				// Filters: the zone is named; a type and a range keep the
				// delivery, another type does not.
				if got := tb.text("#d-zone"); got != lang.zone {
					t.Errorf("the zone note says %q, want %q", got, lang.zone)
				}
				now := time.Now().UTC()
				from, to := now.Add(-time.Hour).Format("2006-01-02T15:04"), now.Add(time.Hour).Format("2006-01-02T15:04")
				tb.submit("#delivery-list",
					chromedp.SetValue(chromedp.CSS("#d-type"), "demo.hello"),
					chromedp.SetValue(chromedp.CSS("#d-from"), from),
					chromedp.SetValue(chromedp.CSS("#d-to"), to),
					chromedp.Click(chromedp.CSS("#filter")),
				)
				if n := evalIn[int](tb, `document.querySelectorAll("#delivery-list tbody tr").length`); n != 1 {
					t.Errorf("filtered by type and range: %d deliveries, want 1", n)
				}
				if loc := tb.location(); !strings.Contains(loc, "type=demo.hello") || !strings.Contains(loc, "from=") {
					t.Errorf("the filter is not in the address: %s", loc)
				}
				tb.inspect("channel-filtered" + lang.suffix)
				tb.do(chromedp.EmulateViewport(390, 900))
				if overflow := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
					t.Errorf("the filtered page at 390 px is %d px wider than the window", overflow)
				}
				tb.do(chromedp.EmulateViewport(1440, 900))
				tb.submit("#no-delivery",
					chromedp.SetValue(chromedp.CSS("#d-type"), "channel.disabled"),
					chromedp.Click(chromedp.CSS("#filter")),
				)
				if got := tb.text("#no-delivery"); got != lang.none {
					t.Errorf("another type: %q, want %q", got, lang.none)
				}

				// A start after the end: refused, the form kept.
				tb.submit("[role=alert]",
					chromedp.SetValue(chromedp.CSS("#d-from"), to),
					chromedp.SetValue(chromedp.CSS("#d-to"), from),
					chromedp.Click(chromedp.CSS("#filter")),
				)
				if msg := tb.text("[role=alert]"); !strings.Contains(msg, lang.before) {
					t.Errorf("a reversed range: %q, want %q", msg, lang.before)
				}
				if v := evalIn[string](tb, `document.querySelector("#d-from").value`); v != to {
					t.Errorf("the refused form lost its start: %q", v)
				}
				tb.inspect("channel-filter-refused" + lang.suffix)

				// The edit form shows the headers, with blank rows after.
				tb.open(chPath+"/edit", "#h-name-1")
				names := evalIn[[]string](tb, `Array.from(document.querySelectorAll("input[name=headerName]")).map(function (i) { return i.value; })`)
				if strings.Join(names, ",") != "Authorization,X-Tenant,,," {
					t.Errorf("the edit form's header names: %q", names)
				}
				tb.inspect("channels-edit-headers" + lang.suffix)
				tb.noConsoleErrors()
			})
		}
	})
}
