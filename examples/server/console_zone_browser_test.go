package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// inBrowserZone makes tb's browser run in the IANA time zone name, as a
// reader there has it.
func (tb *tab) inBrowserZone(name string) {
	tb.t.Helper()
	tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: name})
		return err
	}))
}

// TestConsoleTimeZone: a reader in Shanghai whose host gives no zone sees
// times in UTC, said so, with the picker preselecting the browser's zone;
// one click shows them at UTC+8, kept for the next page, in English and
// Chinese; a user whose zone the directory holds (token -time-zone) sees
// that zone named and no picker. The footer fits 390 and 1440 px. Both
// databases.
func TestConsoleTimeZone(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envRetention: "720h"})
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		trashedTask(t, base, admin, 1, "Zoned report")
		tb := newTab(t, base)
		tb.inBrowserZone("Asia/Shanghai")
		tb.signIn(admin)

		tb.open("/console/trash?project=1", "#zone")
		if got := tb.text("#zone .note"); got != "Times are shown in UTC." {
			t.Errorf("the footer says %q", got)
		}
		// The script preselects the browser's zone; nothing is kept yet.
		if got := pollIn[string](tb, `document.querySelector("#tz").value === "Asia/Shanghai" && document.querySelector("#tz").value`); got != "Asia/Shanghai" {
			t.Errorf("the picker shows %q", got)
		}
		if cell := tb.text(`#results tbody time`); !strings.HasSuffix(cell, " UTC") {
			t.Errorf("the deletion time %q is not in UTC", cell)
		}
		for _, w := range []int64{390, 1440} {
			tb.do(chromedp.EmulateViewport(w, 900))
			if overflow := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
				t.Errorf("the trash page with the zone picker at %d px is %d px wider than the window", w, overflow)
			}
		}
		tb.screenshots("zone-picker")

		tb.submit("#results tbody time", chromedp.Click(chromedp.CSS(`#zone button[type=submit]`)))
		if got := tb.text("#zone .note"); got != "Times are shown in Asia/Shanghai (UTC+8)." {
			t.Errorf("after the pick the footer says %q", got)
		}
		// Kept in the cookie: the next page, and its Chinese, too.
		tb.open("/console/trash?project=1&lang=zh-CN", "#results tbody time")
		if got := tb.text("#zone .note"); got != "时间按 Asia/Shanghai (UTC+8) 显示。" {
			t.Errorf("the Chinese footer says %q", got)
		}
		if cell := tb.text(`#results tbody time`); !strings.HasSuffix(cell, " UTC+8") {
			t.Errorf("the deletion time %q is not at UTC+8", cell)
		}
		tb.open("/console/trash?project=1&lang=en", "#results tbody time")

		// A user whose zone the directory holds: named, no picker.
		grace := issueFor(t, rawURL, "-tenant", "demo", "-username", "grace", "-admin", "-time-zone", "America/New_York")
		tb2 := newTab(t, base)
		tb2.signIn(grace)
		tb2.open("/console/trash?project=1&tz=Asia/Tokyo", "#zone")
		// New York's offset today: -5, or -4 in summer time.
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		_, off := time.Now().In(ny).Zone()
		offset := fmt.Sprintf("UTC-%d", -off/3600)
		if got, want := tb2.text("#zone .note"), "Times are shown in America/New_York ("+offset+"), the time zone of your account."; got != want {
			t.Errorf("the directory's zone: the footer says %q, want %q", got, want)
		}
		if n := evalIn[int](tb2, `document.querySelectorAll("#tz").length`); n != 0 {
			t.Errorf("%d pickers where the directory gives the zone", n)
		}
		if cell := tb2.text(`#results tbody time`); !strings.HasSuffix(cell, " "+offset) {
			t.Errorf("the deletion time %q is not at %s", cell, offset)
		}
		tb.noConsoleErrors()
		tb2.noConsoleErrors()
	})
}
