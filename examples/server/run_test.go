package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// eachURL runs fn once per backend with the URL of a fresh database, for
// tests that drive run() as the command line would. A PostgreSQL URL names a
// database of its own (not just a schema, as dbtest gives), since the URL is
// all that run() takes.
func eachURL(t *testing.T, fn func(t *testing.T, rawURL string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		fn(t, "sqlite:"+filepath.Join(t.TempDir(), "deskkit.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, dbtest.Database(t))
	})
}

// env is a getenv over a map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func authenticate(t *testing.T, rawURL, token string) (p struct {
	UserID, TenantID int64
	Admin            bool
}) {
	t.Helper()
	db, err := database.Open(rawURL, database.Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir, err := directory.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := dir.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("token %q does not authenticate: %v", token, err)
	}
	p.UserID, p.TenantID, p.Admin = pr.UserID, pr.TenantID, pr.Admin
	return p
}

func TestTokenCommand(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		ctx := context.Background()
		var stdout, stderr bytes.Buffer
		// The URL comes from the environment, as in a deployment.
		err := run(ctx, []string{"token", "-tenant", "acme", "-username", "ada", "-admin"}, &stdout, &stderr, env(map[string]string{envDatabaseURL: rawURL}))
		if err != nil {
			t.Fatalf("token: %v\n%s", err, stderr.String())
		}
		token := strings.TrimSuffix(stdout.String(), "\n")
		if !regexp.MustCompile(`^dk_[A-Za-z0-9_-]{43}$`).MatchString(token) {
			t.Fatalf("stdout = %q, want a token alone", stdout.String())
		}
		if !strings.Contains(stderr.String(), `"msg":"token issued"`) {
			t.Errorf("stderr = %s, want a JSON log line", stderr.String())
		}
		p := authenticate(t, rawURL, token)
		if !p.Admin || p.UserID < 1 || p.TenantID < 1 {
			t.Errorf("principal = %+v, want an admin", p)
		}

		// Again with -admin=false: the same user, now not an admin (without
		// the flag the role stays; see TestTokenKeepsRole).
		stdout.Reset()
		if err := run(ctx, []string{"token", "-tenant", "acme", "-username", "ada", "-admin=false", "-database-url", rawURL}, &stdout, io.Discard, env(nil)); err != nil {
			t.Fatal(err)
		}
		q := authenticate(t, rawURL, strings.TrimSpace(stdout.String()))
		if q.Admin || q.UserID != p.UserID || q.TenantID != p.TenantID {
			t.Errorf("second principal = %+v, want %+v without admin", q, p)
		}
		if authenticate(t, rawURL, token).Admin {
			t.Error("the first token still acts as an admin")
		}
	})
}

func TestCommandLineErrors(t *testing.T) {
	ctx := context.Background()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string // in the error; "" for errUsage
	}{
		{"unknown command", []string{"frobnicate"}, nil, ""},
		{"unknown flag", []string{"-nope"}, nil, ""},
		{"stray argument", []string{"token", "-tenant", "a", "-username", "b", "extra"}, nil, ""},
		{"token without tenant", []string{"token", "-username", "b", "-database-url", dbURL}, nil, "-tenant is required"},
		{"token without username", []string{"token", "-tenant", "a", "-database-url", dbURL}, nil, "-username is required"},
		{"token with a bad tenant", []string{"token", "-tenant", "a\tb", "-username", "b", "-database-url", dbURL}, nil, "-tenant: name must not contain control characters"},
		{"bad retention flag", []string{"-retention", "soon"}, nil, ""},
		{"negative retention flag", []string{"-retention", "-1h"}, nil, ""},
		{"bad retention variable", nil, map[string]string{envRetention: "forever"}, envRetention},
		{"negative pool size", []string{"-db-max-conns", "-1"}, nil, ""},
		{"bad pool size variable", nil, map[string]string{envDBMaxConns: "many"}, envDBMaxConns},
		{"bad statement timeout", []string{"-db-statement-timeout", "1 minute"}, nil, ""},
		{"bad request timeout variable", nil, map[string]string{envRequestTimeout: "-5s"}, envRequestTimeout},
		{"bad database URL", []string{"-database-url", "mysql://x"}, nil, "database URL must start with"},
		{"seed without entries", []string{"seed", "-entries", "0", "-database-url", dbURL}, nil, "-entries must be a positive integer"},
		{"seed without projects", []string{"seed", "-projects", "-3", "-database-url", dbURL}, nil, "-projects must be a positive integer"},
	}
	for _, c := range cases {
		err := run(ctx, c.args, io.Discard, io.Discard, env(c.env))
		switch {
		case c.want == "" && !errors.Is(err, errUsage):
			t.Errorf("%s: err = %v, want a usage error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if err := run(ctx, []string{"-h"}, io.Discard, io.Discard, env(nil)); err != nil {
		t.Errorf("-h: %v, want nil", err)
	}
}

// TestServe starts the server for real on a free port, follows the curl
// line it prints, and stops it by cancelling the context.
func TestServe(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		outR, outW := io.Pipe()
		var stderr lockedBuffer
		done := make(chan error, 1)
		go func() {
			// The flag wins over the environment's unusable address.
			done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-retention", "720h", "-db-max-conns", "4", "-request-timeout", "5s"}, outW, &stderr,
				env(map[string]string{envAddr: "256.0.0.1:1", envDatabaseURL: rawURL, envDBStatementTimeout: "3s"}))
			outW.Close()
		}()

		curl := regexp.MustCompile(`curl -H 'Authorization: Bearer (dk_[A-Za-z0-9_-]{43})' '(http://127\.0\.0\.1:\d+)(/api/v1/task/trash/search\?targetType=TASK)'`)
		sc := bufio.NewScanner(outR)
		var m []string
		for m == nil && sc.Scan() {
			m = curl.FindStringSubmatch(sc.Text())
		}
		if m == nil {
			t.Fatalf("no curl line printed; run returned %v\n%s", <-done, stderr.String())
		}
		go io.Copy(io.Discard, outR) //nolint:errcheck // drain whatever else is printed
		token, base, path := m[1], m[2], m[3]

		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"code":"S"`)) {
			t.Errorf("curl line answered %d %s", res.StatusCode, body)
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			res, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s = %d", p, res.StatusCode)
			}
		}

		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		logs := stderr.String()
		for _, want := range []string{`"msg":"listening"`, `"msg":"request"`, `"msg":"stopped"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %s:\n%s", want, logs)
			}
		}
		if _, err := http.Get(base + "/healthz"); err == nil {
			t.Error("server still answers after shutdown")
		}
	})
}

// lockedBuffer is a bytes.Buffer that the server's goroutines may write
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
