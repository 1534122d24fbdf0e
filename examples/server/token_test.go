package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

var tokenLine = regexp.MustCompile(`^dk_[A-Za-z0-9_-]{43}\n$`)

// issue runs the token command with args and returns the token it prints
// and its log.
func issue(t *testing.T, rawURL string, args ...string) (token, logs string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"token", "-database-url", rawURL}, args...)
	if err := run(context.Background(), args, &stdout, &stderr, env(nil)); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, stderr.String())
	}
	if !tokenLine.MatchString(stdout.String()) {
		t.Fatalf("%q printed %q, want a token alone", args, stdout.String())
	}
	return strings.TrimSpace(stdout.String()), stderr.String()
}

// principalAt authenticates token against the database at rawURL by the
// clock reading now (the zero time for the real clock).
func principalAt(t *testing.T, rawURL, token string, now time.Time) (deskkit.Principal, error) {
	t.Helper()
	db, err := database.Open(rawURL, database.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := &directory.Config{}
	if !now.IsZero() {
		cfg.Now = func() time.Time { return now }
	}
	dir, err := directory.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dir.Authenticate(context.Background(), token)
}

func mustPrincipal(t *testing.T, rawURL, token string) deskkit.Principal {
	t.Helper()
	p, err := principalAt(t, rawURL, token, time.Time{})
	if err != nil {
		t.Fatalf("token does not authenticate: %v", err)
	}
	return p
}

// Fault 11: token without -admin demoted an existing admin.
func TestTokenKeepsRole(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		first, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
		ann := mustPrincipal(t, rawURL, first)
		if !ann.Admin {
			t.Fatalf("-admin made %+v", ann)
		}
		steps := []struct {
			name      string
			args      []string
			wantAdmin bool
		}{
			{"no -admin keeps the admin", nil, true},
			{"-admin=false demotes", []string{"-admin=false"}, false},
			{"no -admin keeps the non-admin", nil, false},
			{"-admin promotes", []string{"-admin"}, true},
			{"-admin=true promotes too", []string{"-admin=true"}, true},
		}
		for _, s := range steps {
			token, logs := issue(t, rawURL, append([]string{"-tenant", "acme", "-username", "ann"}, s.args...)...)
			p := mustPrincipal(t, rawURL, token)
			if p.Admin != s.wantAdmin || p.UserID != ann.UserID || p.TenantID != ann.TenantID {
				t.Errorf("%s: principal %+v, want user %d with admin %v", s.name, p, ann.UserID, s.wantAdmin)
			}
			// The role belongs to the user, so every token of it follows.
			if p := mustPrincipal(t, rawURL, first); p.Admin != s.wantAdmin {
				t.Errorf("%s: the first token acts with admin %v", s.name, p.Admin)
			}
			if want := `"admin":` + map[bool]string{true: "true", false: "false"}[s.wantAdmin]; !strings.Contains(logs, want) {
				t.Errorf("%s: log lacks %s:\n%s", s.name, want, logs)
			}
		}
		// A new user without -admin is a non-admin.
		bob, _ := issue(t, rawURL, "-tenant", "acme", "-username", "bob")
		if p := mustPrincipal(t, rawURL, bob); p.Admin || p.UserID == ann.UserID {
			t.Errorf("new user without -admin: %+v", p)
		}
	})
}

func TestTokenTTL(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		before := time.Now()
		token, logs := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-ttl", "720h")
		after := time.Now()
		if _, err := principalAt(t, rawURL, token, after.Add(719*time.Hour)); err != nil {
			t.Errorf("a 720h token within its life: %v", err)
		}
		if _, err := principalAt(t, rawURL, token, before.Add(721*time.Hour)); !errors.Is(err, deskkit.ErrUnauthenticated) {
			t.Errorf("a 720h token after 721h: err = %v, want ErrUnauthenticated", err)
		}
		// The log says how long and until when, readably, as JSON.
		var entry struct {
			Msg       string `json:"msg"`
			TTL       string `json:"ttl"`
			ExpiresAt string `json:"expiresAt"`
		}
		if err := jsonLine(logs, "token issued", &entry); err != nil {
			t.Fatal(err)
		}
		exp, err := time.Parse(time.RFC3339, entry.ExpiresAt)
		if err != nil || entry.TTL != "720h" || exp.Before(before.Add(720*time.Hour).Truncate(time.Second)) || exp.After(after.Add(720*time.Hour+time.Second)) {
			t.Errorf("log %+v (%v), want ttl 720h and the expiry", entry, err)
		}
		if _, err := principalAt(t, rawURL, token, exp.Add(-time.Nanosecond)); err != nil {
			t.Errorf("just before the logged expiry: %v", err)
		}
		if _, err := principalAt(t, rawURL, token, exp); !errors.Is(err, deskkit.ErrUnauthenticated) {
			t.Errorf("at the logged expiry: err = %v, want ErrUnauthenticated", err)
		}

		forever, logs := issue(t, rawURL, "-tenant", "acme", "-username", "ann")
		if _, err := principalAt(t, rawURL, forever, after.Add(100000*time.Hour)); err != nil {
			t.Errorf("a token without -ttl expired: %v", err)
		}
		if !strings.Contains(logs, `"ttl":"never"`) || strings.Contains(logs, "expiresAt") {
			t.Errorf("log of a token without -ttl: %s", logs)
		}
	})
}

// jsonLine decodes the first log line whose msg is msg.
func jsonLine(logs, msg string, v any) error {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `"msg":"`+msg+`"`) {
			return json.Unmarshal([]byte(line), v)
		}
	}
	return errors.New("no log line " + msg + " in:\n" + logs)
}

func TestTokenRevoke(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		ctx := context.Background()
		token, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
		other, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann")
		ann := mustPrincipal(t, rawURL, token)

		revoke := func(stdin string, extra ...string) (stdout, stderr string, err error) {
			var out, errOut bytes.Buffer
			args := append([]string{"token", "-revoke", "-database-url", rawURL}, extra...)
			err = runStdin(ctx, args, strings.NewReader(stdin), &out, &errOut, env(nil))
			return out.String(), errOut.String(), err
		}
		stdout, stderr, err := revoke(token + "\n")
		if err != nil {
			t.Fatalf("revoke: %v\n%s", err, stderr)
		}
		if stdout != "" || strings.Contains(stderr, token) {
			t.Errorf("revoke printed stdout %q, stderr %q; want nothing on stdout and no token anywhere", stdout, stderr)
		}
		var entry struct {
			UserID   int64  `json:"userId"`
			TenantID int64  `json:"tenantId"`
			Username string `json:"username"`
		}
		if err := jsonLine(stderr, "token revoked", &entry); err != nil || entry.UserID != ann.UserID || entry.TenantID != ann.TenantID || entry.Username != "ann" {
			t.Errorf("log %+v, %v; want ann's ids", entry, err)
		}
		if _, err := principalAt(t, rawURL, token, time.Time{}); !errors.Is(err, deskkit.ErrUnauthenticated) {
			t.Errorf("revoked token: err = %v, want ErrUnauthenticated", err)
		}
		mustPrincipal(t, rawURL, other) // the user's other token still works

		// Unknown tokens fail clearly, and never echo what they were given.
		for name, stdin := range map[string]string{
			"revoked already": token + "\n",
			"never issued":    "dk_" + strings.Repeat("A", 43),
			"not a token":     "hunter2\n",
		} {
			stdout, stderr, err := revoke(stdin)
			if err == nil || !strings.Contains(err.Error(), "no such token") || errors.Is(err, errUsage) {
				t.Errorf("%s: err = %v, want a no-such-token error", name, err)
			}
			secret := strings.TrimSpace(stdin)
			if err != nil && strings.Contains(err.Error(), secret) || strings.Contains(stdout+stderr, secret) {
				t.Errorf("%s: the input is echoed: %v / %q / %q", name, err, stdout, stderr)
			}
		}
		for name, c := range map[string]struct {
			stdin string
			extra []string
			want  string
		}{
			"empty stdin":   {"", nil, "no token on stdin"},
			"blank line":    {"  \n" + other, nil, "no token on stdin"},
			"with -tenant":  {other, []string{"-tenant", "acme"}, "no -tenant"},
			"with -admin":   {other, []string{"-admin=false"}, "no -admin"},
			"with -ttl":     {other, []string{"-ttl", "1h"}, "no -ttl"},
			"with username": {other, []string{"-username", "ann"}, "no -username"},
		} {
			if _, _, err := revoke(c.stdin, c.extra...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want one mentioning %q", name, err, c.want)
			}
		}
		mustPrincipal(t, rawURL, other) // none of those revoked it
	})
}

func TestTokenCommandLineErrors(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"token", "-tenant", "a", "-username", "b", "-ttl", "soon"},
		{"token", "-tenant", "a", "-username", "b", "-ttl", "-1h"},
		{"token", "-revoke", "dk_secret"}, // a token on the command line is refused
	} {
		var stderr bytes.Buffer
		if err := run(ctx, args, io.Discard, &stderr, env(nil)); !errors.Is(err, errUsage) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
		if strings.Contains(stderr.String(), "dk_secret") {
			t.Errorf("%q: the token is echoed: %s", args, stderr.String())
		}
	}
}

func TestReadableDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "never",
		720 * time.Hour:                   "720h",
		time.Hour + 30*time.Minute:        "1h30m",
		10 * time.Minute:                  "10m",
		time.Hour + 5*time.Second:         "1h0m5s",
		1500 * time.Millisecond:           "1.5s",
		10*time.Hour + 10*time.Minute:     "10h10m",
		2*time.Hour + 30*time.Millisecond: "2h0m0.03s",
	} {
		if got := readableDuration(d); got != want {
			t.Errorf("readableDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// demoApp is an app over a fresh database of backend b.
func demoApp(t *testing.T, db *bun.DB) *app {
	t.Helper()
	if err := migrateAll(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The server minted a demo token on every start; now only on the first.
func TestDemoTokenOnFirstStartOnly(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		a := demoApp(t, db)
		first, err := a.demoToken(ctx)
		if err != nil || first == "" {
			t.Fatalf("first start: %q, %v; want a token", first, err)
		}
		p, err := a.dir.Authenticate(ctx, first)
		if err != nil || !p.Admin {
			t.Fatalf("first token: %+v, %v; want an admin", p, err)
		}
		// Later starts, also of a new app over the same database.
		for i, b := range []*app{a, demoApp(t, db)} {
			if again, err := b.demoToken(ctx); err != nil || again != "" {
				t.Errorf("start %d: %q, %v; want no token", i+2, again, err)
			}
		}
		var n int
		if err := db.NewSelect().Table("deskkit_tokens").ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d tokens stored after three starts, want 1", n)
		}

		// An operator's demotion survives a restart.
		tn, _ := a.dir.EnsureTenant(ctx, demoTenant)
		if _, err := a.dir.EnsureUser(ctx, tn.ID, demoUsername, false); err != nil {
			t.Fatal(err)
		}
		if _, err := a.demoToken(ctx); err != nil {
			t.Fatal(err)
		}
		if p, _ := a.dir.Authenticate(ctx, first); p.Admin {
			t.Error("a restart promoted the demoted demo user again")
		}

		// With its token revoked, the demo user gets a new one on the next start.
		if _, err := a.dir.RevokeToken(ctx, first); err != nil {
			t.Fatal(err)
		}
		if next, err := a.demoToken(ctx); err != nil || next == "" {
			t.Errorf("after revocation: %q, %v; want a token", next, err)
		}
	})
}

func TestPrintDemoAccess(t *testing.T) {
	const base = "http://127.0.0.1:8080"
	token := "dk_" + strings.Repeat("x", 43)
	var with, without bytes.Buffer
	printDemoAccess(&with, demoAccess{base: base, token: token, databaseURL: defaultDatabaseURL, program: goRun})
	printDemoAccess(&without, demoAccess{base: base, databaseURL: defaultDatabaseURL, program: goRun})

	if !strings.Contains(with.String(), "curl -H 'Authorization: Bearer "+token+"' '"+base+"/api/v1/task/trash/search?targetType=TASK'") {
		t.Errorf("with a token:\n%s", with.String())
	}
	out := without.String()
	for _, want := range []string{
		"TOKEN=$(go run ./examples/server token -tenant demo -username demo)",
		`curl -H "Authorization: Bearer $TOKEN" '` + base + `/api/v1/task/trash/search?targetType=TASK'`,
		`curl -H "Authorization: Bearer $TOKEN" -X DELETE '` + base + `/api/v1/demo/task/1'`,
		`curl -H "Authorization: Bearer $TOKEN" '` + base + `/api/v1/user/current'`,
		base + "/docs",
		base + "/console/",
		"token -tenant demo -username demo -console\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("without a token, output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "dk_") {
		t.Errorf("without a token, output shows one:\n%s", out)
	}
}

// The token commands the server prints reach the server that printed them:
// they repeat its -database-url when it is not the default (on PostgreSQL,
// a command without it would create deskkit.db and issue a token there),
// and -console's its address, without a password the URL holds.
func TestPrintDemoAccessRepeatsServer(t *testing.T) {
	token := "dk_" + strings.Repeat("t", 43) // no "xxxxx": that is the redacted password
	for _, c := range []struct {
		name, base, token, dbURL string
		want                     []string // lines, each whole
		absent                   []string
	}{{
		name: "defaults", base: "http://127.0.0.1:8080", dbURL: defaultDatabaseURL,
		want: []string{
			"  TOKEN=$(go run ./examples/server token -tenant demo -username demo)",
			"  go run ./examples/server token -tenant demo -username demo -console",
		},
		absent: []string{"-database-url", "-base-url", "xxxxx"},
	}, {
		name: "postgres elsewhere, first start", base: "http://127.0.0.1:9090", token: token,
		dbURL: "postgres://ann@db.example:5432/app?sslmode=disable",
		want: []string{
			"  go run ./examples/server token -tenant demo -username demo -console -database-url 'postgres://ann@db.example:5432/app?sslmode=disable' -base-url 'http://127.0.0.1:9090'",
			"  go run ./examples/server token -tenant demo -username demo -portal trash -database-url 'postgres://ann@db.example:5432/app?sslmode=disable' -base-url 'http://127.0.0.1:9090'",
		},
		absent: []string{"xxxxx"},
	}, {
		name: "postgres, later start", base: "http://127.0.0.1:8080",
		dbURL: "postgres://ann@db.example:5432/app?sslmode=disable",
		want: []string{
			"  TOKEN=$(go run ./examples/server token -tenant demo -username demo -database-url 'postgres://ann@db.example:5432/app?sslmode=disable')",
			"  go run ./examples/server token -tenant demo -username demo -console -database-url 'postgres://ann@db.example:5432/app?sslmode=disable'",
		},
		absent: []string{"-base-url"},
	}, {
		name: "a password", base: "http://127.0.0.1:8080",
		dbURL: "postgres://ann:s3cret@db.example/app",
		want: []string{
			"  TOKEN=$(go run ./examples/server token -tenant demo -username demo -database-url 'postgres://ann:xxxxx@db.example/app')",
			"(Write the database password where the commands above read xxxxx; it is not printed.)",
		},
		absent: []string{"s3cret"},
	}, {
		name: "a quote in an SQLite path", base: "http://127.0.0.1:8080", dbURL: "sqlite:ann's.db",
		want: []string{
			`  TOKEN=$(go run ./examples/server token -tenant demo -username demo -database-url 'sqlite:ann'\''s.db')`,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printDemoAccess(&b, demoAccess{base: c.base, token: c.token, databaseURL: c.dbURL, program: goRun})
			lines := strings.Split(b.String(), "\n")
			for _, w := range c.want {
				if !slices.Contains(lines, w) {
					t.Errorf("output lacks the line\n%s\n%s", w, b.String())
				}
			}
			for _, a := range c.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("output holds %q:\n%s", a, b.String())
				}
			}
		})
	}
}

// TestServeTwice starts the server twice on one database: the first start
// prints a token, the second how to get one.
func TestServeTwice(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		first := serveOutput(t, rawURL)
		if !regexp.MustCompile(`Bearer dk_[A-Za-z0-9_-]{43}`).MatchString(first) {
			t.Errorf("first start printed no token:\n%s", first)
		}
		// The server listens on a port of its own and a database of the
		// test's: the -console line names both.
		dbArgs, _ := databaseArgs(rawURL)
		if dbArgs == "" || !regexp.MustCompile(`(?m)^  go run \./examples/server token -tenant demo -username demo -console`+
			regexp.QuoteMeta(dbArgs)+` -base-url 'http://127\.0\.0\.1:[0-9]+'$`).MatchString(first) {
			t.Errorf("first start's -console line does not name the server's database (%s) and address:\n%s", dbArgs, first)
		}
		second := serveOutput(t, rawURL)
		if strings.Contains(second, "dk_") || !strings.Contains(second, "token -tenant demo -username demo") {
			t.Errorf("second start:\n%s\nwant how to get a token, and none", second)
		}
	})
}

// serveOutput starts the server on rawURL, reads what it prints up to the
// -console line, and stops it.
func serveOutput(t *testing.T, rawURL string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-database-url", rawURL}, outW, &stderr, env(nil))
		outW.Close()
	}()
	var out strings.Builder
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), " -console") {
			break
		}
	}
	go io.Copy(io.Discard, outR) //nolint:errcheck // drain whatever else is printed
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	return out.String()
}

// Issue 28, faults 8 and 10: token -locale klingon was taken without a
// word. A locale that is no valid BCP 47 tag is refused, naming the flag
// and the rule; a valid one the server has no messages in is stored, with
// a warning that says what its readers get.
func TestTokenLocale(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		for _, c := range []struct {
			flag, locale, want string
		}{
			{"-locale", "klingon", "-locale: locale must be a valid BCP 47 language tag, such as en or zh-CN: registered subtags, in the order language, script, region, variants"},
			{"-tenant-locale", "klingon", "-tenant-locale: tenantLocale must be a valid BCP 47 language tag, such as en or zh-CN: registered subtags, in the order language, script, region, variants"},
			{"-locale", "zh-Hanz", "-locale: locale must be a valid BCP 47 language tag, such as en or zh-CN: Hanz is no registered subtag"},
			{"-tenant-locale", "zh_CN", "-tenant-locale: tenantLocale must be a BCP 47 language tag of at most 35 characters, such as en or zh-CN"},
		} {
			var stdout, stderr bytes.Buffer
			args := []string{"token", "-database-url", rawURL, "-tenant", "acme", "-username", "ann", c.flag, c.locale}
			err := run(context.Background(), args, &stdout, &stderr, env(nil))
			if err == nil || err.Error() != c.want {
				t.Errorf("%s %s: %v, want %q", c.flag, c.locale, err, c.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("%s %s printed %q", c.flag, c.locale, stdout.String())
			}
		}
		// Refused means not stored: ann has no locale yet.
		token, logs := issue(t, rawURL, "-tenant", "acme", "-username", "ann")
		if strings.Contains(logs, "locale") {
			t.Errorf("a refused locale was stored: %s", logs)
		}
		for _, c := range []struct {
			args []string
			warn string // the flag warned of; "" for none
		}{
			{[]string{"-locale", "tlh"}, "-locale"},
			// Traditional Chinese is no Simplified Chinese: warned of.
			{[]string{"-tenant-locale", "zh-tw"}, "-tenant-locale"},
			{[]string{"-locale", "zh-cn", "-tenant-locale", "en-GB"}, ""},
		} {
			_, logs := issue(t, rawURL, append([]string{"-tenant", "acme", "-username", "ann"}, c.args...)...)
			warned := strings.Contains(logs, `"level":"WARN"`)
			switch {
			case c.warn == "" && warned:
				t.Errorf("%q warned: %s", c.args, logs)
			case c.warn != "" && (!strings.Contains(logs, `"msg":"`+c.warn+` names a language the server has no messages in`) ||
				!strings.Contains(logs, `"languages":"en, zh-Hans"`)):
				t.Errorf("%q: no warning of %s: %s", c.args, c.warn, logs)
			}
		}
		p := mustPrincipal(t, rawURL, token)
		db, err := database.Open(rawURL, database.Options{MaxOpenConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dir, err := directory.New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		user, tenant, err := dir.Locales(context.Background(), p)
		if err != nil || user != "zh-CN" || tenant != "en-GB" {
			t.Errorf("stored locales %q %q (%v), want zh-CN en-GB", user, tenant, err)
		}
	})
}
