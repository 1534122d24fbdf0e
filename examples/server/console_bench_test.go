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

	"github.com/deskkit/deskkit/internal/dbtest"
)

// benchConsoleTrash measures the console's trash page against the API
// call under it, the search of the same project and page, through the
// reference server's handler: one request of each per iteration, so that
// both see the same database state and machine load. It reports each one's
// time and the page's as a multiple of the API's (goal: at most 1.5).
//
// The page does what the API does (authenticate, search) plus finding the
// session (one indexed read) and rendering HTML instead of JSON.
func benchConsoleTrash(b *testing.B, db *bun.DB) {
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
	api := func() error { return benchJSON(a, token, http.MethodGet, apiPath, "", nil) }
	page := func() error {
		req := httptest.NewRequest(http.MethodGet, pagePath, nil)
		req.AddCookie(cookies[0])
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "200 entries match") {
			return fmt.Errorf("trash page: %d", rec.Code)
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
func BenchmarkConsoleTrashPageSQLite(b *testing.B) { benchConsoleTrash(b, dbtest.OpenSQLite(b)) }

// BenchmarkConsoleTrashPagePostgres is the same on PostgreSQL.
func BenchmarkConsoleTrashPagePostgres(b *testing.B) { benchConsoleTrash(b, dbtest.OpenPostgres(b)) }
