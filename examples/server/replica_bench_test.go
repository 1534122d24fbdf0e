package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// BenchmarkReadReplicaSearch measures a trash search through the API in
// the steady state (no write of the tenant pending), in turn on an app
// that reads the primary alone and on one that reads the streaming
// standby (-database-read-url) with the real clock, so that the router
// checks the lag every 100 ms as in production: the ratio of the two is
// what routing costs a read (or saves it, with a busy primary).
func BenchmarkReadReplicaSearch(b *testing.B) {
	r := dbtest.StartReplica(b)
	ctx := context.Background()
	o := database.Options{MaxOpenConns: 8}
	primary, err := openServeDB(ctx, serveConfig{databaseURL: r.PrimaryURL, db: o})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { primary.Close() })
	standby, err := database.Open(r.StandbyURL, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { standby.Close() })
	secret := verifyConfig{secret: []byte("0123456789abcdef0123456789abcdef-replica")}
	direct, err := newApp(primary, appConfig{Logger: slog.New(slog.DiscardHandler), Verify: secret})
	if err != nil {
		b.Fatal(err)
	}
	token, err := direct.demoToken(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// Entries to find: 50 deleted tasks.
	call := func(method, path, body string) string {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		direct.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	for i := range 50 {
		var res struct {
			Data created `json:"data"`
		}
		if err := json.Unmarshal([]byte(call(http.MethodPost, "/api/v1/demo/task", fmt.Sprintf(`{"projectId":1,"name":"Bench %d"}`, i))), &res); err != nil {
			b.Fatal(err)
		}
		call(http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", res.Data.ID), "")
	}
	if err := r.WaitReplayed(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	routed, err := newApp(primary, appConfig{Logger: slog.New(slog.DiscardHandler), Verify: secret, ReadDB: standby})
	if err != nil {
		b.Fatal(err)
	}
	for _, arm := range []struct {
		name string
		a    *app
	}{{"primary", direct}, {"standby", routed}} {
		b.Run(arm.name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&targetName=bench&pageSize=20", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				arm.a.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("search: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
