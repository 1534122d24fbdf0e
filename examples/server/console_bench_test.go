package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// benchConsoleTrash measures the console's trash page against the API
// call under it, the search of the same project and page, through the
// reference server's handler: one request of each per iteration, so that
// both see the same database state and machine load. It reports each one's
// time and the page's as a multiple of the API's (goal: at most 1.5).
//
// The page does what the API does (authenticate, search) plus finding the
// session (one indexed read), asking the directory who its user is now
// (one more, by primary key) and rendering HTML instead of JSON. portal
// opens the session with a portal link instead of a token.
func benchConsoleTrash(b *testing.B, db *bun.DB, portal bool) {
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	tn, err := a.dir.EnsureTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	u, err := a.dir.EnsureUser(ctx, tn.ID, "ann", true)
	if err != nil {
		b.Fatal(err)
	}
	token, err := a.dir.IssueToken(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	// 200 deleted tasks in project 1, so a page of 20 is a real page.
	for i := range 200 {
		var c struct{ ID int64 }
		if err := benchJSON(a, token, http.MethodPost, "/api/v1/demo/task", fmt.Sprintf(`{"projectId":1,"name":"Task %d"}`, i), &c); err != nil {
			b.Fatal(err)
		}
		if err := benchJSON(a, token, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), "", nil); err != nil {
			b.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/console/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if portal {
		// A portal session, as a host's button opens it.
		link, err := a.console.PortalLink(ctx, u.Principal(), console.ScopeTrash)
		if err != nil {
			b.Fatal(err)
		}
		lu, _ := url.Parse(link)
		req = httptest.NewRequest(http.MethodPost, lu.Path, strings.NewReader(url.Values{"t": {lu.Query().Get("t")}}.Encode()))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) == 0 {
		b.Fatalf("sign-in: %d", rec.Code)
	}
	const (
		apiPath  = "/api/v1/task/trash/search?targetType=TASK&projectId=1&pageSize=20&orderBy=deletedDate&orderSort=DESC"
		pagePath = "/console/trash?project=1&type=TASK&size=20&sort=deleted-desc"
	)
	benchPageVsAPI(b, a, token, cookies[0], pagePath, "200 entries match", apiPath)
}

// benchPageVsAPI measures the console page at pagePath (its body holding
// want) against the API calls under it, one of each per iteration, and
// reports both times and their ratio.
func benchPageVsAPI(b *testing.B, a *app, token string, cookie *http.Cookie, pagePath, want string, apiPaths ...string) {
	api := func() error {
		for _, p := range apiPaths {
			if err := benchJSON(a, token, http.MethodGet, p, "", nil); err != nil {
				return err
			}
		}
		return nil
	}
	page := func() error {
		req := httptest.NewRequest(http.MethodGet, pagePath, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			return fmt.Errorf("%s: %d", pagePath, rec.Code)
		}
		return nil
	}
	// Warm both (prepared statements, template buffers).
	for range 20 {
		if err := api(); err != nil {
			b.Fatal(err)
		}
		if err := page(); err != nil {
			b.Fatal(err)
		}
	}
	var apiTime, pageTime time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always finds the other's
		// rows in the cache.
		first, second, ft, st := api, page, &apiTime, &pageTime
		if i%2 == 1 {
			first, second, ft, st = page, api, &pageTime, &apiTime
		}
		start := time.Now()
		if err := first(); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := second(); err != nil {
			b.Fatal(err)
		}
		*ft += mid.Sub(start)
		*st += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(apiTime.Microseconds())/n, "api-µs/op")
	b.ReportMetric(float64(pageTime.Microseconds())/n, "page-µs/op")
	b.ReportMetric(float64(pageTime)/float64(apiTime), "page/api")
}

// benchJSON is benchCall decoding data into out (nil: not decoded).
func benchJSON(a *app, token, method, target, body string, out any) error {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
	}
	if out == nil {
		return nil
	}
	var env struct{ Data any }
	env.Data = out
	return json.Unmarshal(rec.Body.Bytes(), &env)
}

// BenchmarkConsoleTrashPageSQLite is the trash page against its API call
// on SQLite.
func BenchmarkConsoleTrashPageSQLite(b *testing.B) { benchConsoleTrash(b, dbtest.OpenSQLite(b), false) }

// BenchmarkConsoleTrashPagePostgres is the same on PostgreSQL.
func BenchmarkConsoleTrashPagePostgres(b *testing.B) {
	benchConsoleTrash(b, dbtest.OpenPostgres(b), false)
}

// BenchmarkConsolePortalTrashPageSQLite is the trash page of a portal
// session against its API call on SQLite: the session's user is asked of
// the directory on every request, as a token session's token is.
func BenchmarkConsolePortalTrashPageSQLite(b *testing.B) {
	benchConsoleTrash(b, dbtest.OpenSQLite(b), true)
}

// BenchmarkConsolePortalTrashPagePostgres is the same on PostgreSQL.
func BenchmarkConsolePortalTrashPagePostgres(b *testing.B) {
	benchConsoleTrash(b, dbtest.OpenPostgres(b), true)
}

// benchConsoleSetup is an app over db with an admin's token and a console
// session signed in with it.
func benchConsoleSetup(b *testing.B, db *bun.DB) (*app, string, *http.Cookie) {
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	tn, err := a.dir.EnsureTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	u, err := a.dir.EnsureUser(ctx, tn.ID, "ann", true)
	if err != nil {
		b.Fatal(err)
	}
	token, err := a.dir.IssueToken(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/console/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther || len(rec.Result().Cookies()) == 0 {
		b.Fatalf("sign-in: %d", rec.Code)
	}
	return a, token, rec.Result().Cookies()[0]
}

// benchConsoleChannels measures the channel list (15 channels, 200 events
// each queued for every channel) against the API's list of channels:
// the page adds the last day's counts of every channel, in one query.
func benchConsoleChannels(b *testing.B, db *bun.DB, withCounts bool) {
	a, token, cookie := benchConsoleSetup(b, db)
	// 15 channels: the most of three types (5 each).
	for i := range 15 {
		body := fmt.Sprintf(`{"channelType":"WEBHOOK","name":"hook %d","address":"https://hooks.example.com/%d"}`, i, i)
		switch i / 5 {
		case 1:
			body = fmt.Sprintf(`{"channelType":"ENTERPRISE_CHAT","name":"hook %d","address":"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k%d"}`, i, i)
		case 2:
			body = fmt.Sprintf(`{"channelType":"WORKPLACE_CHAT","name":"hook %d","address":"https://oapi.dingtalk.com/robot/send?access_token=t%d"}`, i, i)
		}
		if err := benchJSON(a, token, http.MethodPost, "/api/v1/event/channel", body, nil); err != nil {
			b.Fatal(err)
		}
	}
	for range 200 {
		if err := benchJSON(a, token, http.MethodPost, "/api/v1/demo/event/publish", `{"type":"demo.hello","title":"hello"}`, nil); err != nil {
			b.Fatal(err)
		}
	}
	if withCounts {
		// The API calls that give what the page shows: the list and each
		// channel's counts of the last day.
		paths := []string{"/api/v1/event/channel"}
		for id := 1; id <= 15; id++ {
			paths = append(paths, fmt.Sprintf("/api/v1/event/channel/%d/deliveries/hourly", id))
		}
		benchPageVsAPI(b, a, token, cookie, "/console/channels", "hook 14", paths...)
		return
	}
	benchPageVsAPI(b, a, token, cookie, "/console/channels", "hook 14", "/api/v1/event/channel")
}

// benchConsoleProfile measures the profile page against GET
// /api/v1/user/current, the one service call under it.
func benchConsoleProfile(b *testing.B, db *bun.DB) {
	a, token, cookie := benchConsoleSetup(b, db)
	benchPageVsAPI(b, a, token, cookie, "/console/profile", "profile-form", "/api/v1/user/current")
}

// BenchmarkConsoleChannelsPageSQLite is the channel list against the API's
// list of channels on SQLite.
func BenchmarkConsoleChannelsPageSQLite(b *testing.B) {
	benchConsoleChannels(b, dbtest.OpenSQLite(b), false)
}

// BenchmarkConsoleChannelsPagePostgres is the same on PostgreSQL.
func BenchmarkConsoleChannelsPagePostgres(b *testing.B) {
	benchConsoleChannels(b, dbtest.OpenPostgres(b), false)
}

// BenchmarkConsoleChannelsPageVsCountsSQLite is the channel list against
// the API calls that give all it shows (the list and each channel's hourly
// counts) on SQLite.
func BenchmarkConsoleChannelsPageVsCountsSQLite(b *testing.B) {
	benchConsoleChannels(b, dbtest.OpenSQLite(b), true)
}

// BenchmarkConsoleChannelsPageVsCountsPostgres is the same on PostgreSQL.
func BenchmarkConsoleChannelsPageVsCountsPostgres(b *testing.B) {
	benchConsoleChannels(b, dbtest.OpenPostgres(b), true)
}

// BenchmarkConsoleProfilePageSQLite is the profile page against its API
// call on SQLite.
func BenchmarkConsoleProfilePageSQLite(b *testing.B) { benchConsoleProfile(b, dbtest.OpenSQLite(b)) }

// BenchmarkConsoleProfilePagePostgres is the same on PostgreSQL.
func BenchmarkConsoleProfilePagePostgres(b *testing.B) {
	benchConsoleProfile(b, dbtest.OpenPostgres(b))
}
