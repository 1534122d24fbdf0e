package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// A change of a tenant's locale shows in its events once the registry's
// copy of it is older than -event-language-ttl, and not before: the
// reference server's wiring (newApp: the directory's locale behind
// TenantLanguage), its worker running, a test clock, on both databases.
func TestEventLanguageTTLEndToEnd(t *testing.T) {
	const ttl = time.Hour
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := migrateAll(ctx, db); err != nil {
			t.Fatal(err)
		}
		clk := clocktest.New(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
		a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler), Now: clk.Now,
			Channel: channelConfig{allowPrivate: true, languageTTL: ttl}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.handler)
		t.Cleanup(srv.Close)
		robot := startRobot(t)
		tenant, err := a.dir.EnsureTenant(ctx, "huaxia")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.dir.SetTenantLocale(ctx, tenant.ID, "zh-CN"); err != nil {
			t.Fatal(err)
		}
		wei, err := a.dir.EnsureUser(ctx, tenant.ID, "wei", true)
		if err != nil {
			t.Fatal(err)
		}
		token, err := a.dir.IssueToken(ctx, wei)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.channels.Add(ctx, deskkit.Principal{TenantID: tenant.ID, UserID: wei.ID, Admin: true}, channel.Input{
			Type: "WORKPLACE_CHAT", Name: "ding", Address: robot.URL + "/robot/send?access_token=t", Events: []string{"task.*"},
		}); err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- a.channels.Run(runCtx) }()
		t.Cleanup(func() {
			stop()
			if err := <-ran; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		trashTask := func(name string) {
			t.Helper()
			var task struct{ ID int64 }
			ok(t, srv.URL, token, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": name}, &task)
			ok(t, srv.URL, token, http.MethodDelete, "/api/v1/demo/task/"+strconv.FormatInt(task.ID, 10), nil, nil)
		}

		trashTask("one")
		if title, _ := robot.await(t, "one"); !strings.Contains(title, "已移入回收站") {
			t.Fatalf("the first event: %q, want it in Chinese", title)
		}
		if err := a.dir.SetTenantLocale(ctx, tenant.ID, "en"); err != nil {
			t.Fatal(err)
		}
		// Within the TTL, before the point where it is read again: the
		// locale the registry read.
		clk.Advance(ttl / 4)
		trashTask("two")
		if title, _ := robot.await(t, "two"); !strings.Contains(title, "已移入回收站") {
			t.Errorf("within the TTL: %q, want the locale read before, Chinese", title)
		}
		// Past the TTL: the new locale.
		clk.Advance(ttl)
		trashTask("three")
		if title, _ := robot.await(t, "three"); !strings.Contains(title, "moved to the trash") {
			t.Errorf("past the TTL: %q, want the new locale, English", title)
		}
	})
}

// -event-language-ttl and its variable reach the registry (the start log
// says what it runs with); 0 is the default; a negative or malformed
// value stops the server, naming the flag.
func TestEventLanguageTTLFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ value, want string }{{"90s", `"languageTTL":"1m30s"`}, {"0", `"languageTTL":"1m0s"`}} {
		_, logs := startServer(t, map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/d.db", envEventLanguageTTL: c.value})
		if !strings.Contains(logs.String(), c.want) {
			t.Errorf("%s=%s: the start log does not say %s:\n%s", envEventLanguageTTL, c.value, c.want, logs.String())
		}
	}
	for _, bad := range []string{"-1s", "soon"} {
		var stderr strings.Builder
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-demo=false", "-event-language-ttl", bad}, io.Discard, &stderr,
			env(map[string]string{envDatabaseURL: "sqlite:" + dir + "/d.db"}))
		if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), "-event-language-ttl") {
			t.Errorf("-event-language-ttl %s: %v (%q), want a usage error naming it", bad, err, stderr.String())
		}
	}
	// The variable is checked as the flag is, and named.
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-demo=false"}, io.Discard, io.Discard,
		env(map[string]string{envDatabaseURL: "sqlite:" + dir + "/d.db", envEventLanguageTTL: "-1m"}))
	if err == nil || !strings.Contains(err.Error(), envEventLanguageTTL) {
		t.Errorf("%s=-1m: %v, want an error naming it", envEventLanguageTTL, err)
	}
}
