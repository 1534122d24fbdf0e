package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTokenConsoleLink checks what token -console prints and refuses: a
// link on the server's address, never the token, and -base-url only with
// -console.
func TestTokenConsoleLink(t *testing.T) {
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "deskkit.db")
	ctx := context.Background()
	link := func(vars map[string]string, args ...string) (string, error) {
		var stdout, stderr strings.Builder
		err := run(ctx, append([]string{"token", "-tenant", "demo", "-username", "ada", "-database-url", dbURL, "-console"}, args...), &stdout, &stderr, env(vars))
		if err == nil && !strings.Contains(stderr.String(), `"msg":"console link issued"`) {
			t.Errorf("stderr: %s", stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), "dk_") {
			t.Errorf("token -console showed a token:\n%s%s", stdout.String(), stderr.String())
		}
		return strings.TrimSpace(stdout.String()), err
	}
	code := `[A-Za-z0-9_-]{43}$`
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"default address", nil, nil, `^http://127\.0\.0\.1:8080/console/link\?code=` + code},
		{"DESKKIT_ADDR", map[string]string{envAddr: "0.0.0.0:9000"}, nil, `^http://127\.0\.0\.1:9000/console/link\?code=` + code},
		{"-base-url", nil, []string{"-base-url", "https://desk.example.com/"}, `^https://desk\.example\.com/console/link\?code=` + code},
	} {
		got, err := link(tc.vars, tc.args...)
		if err != nil || !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("%s: %q, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := link(nil, "-base-url", "ftp://x"); err == nil || !strings.Contains(err.Error(), "-base-url must be") {
		t.Errorf("-base-url ftp://x: %v", err)
	}
	for _, args := range [][]string{
		{"token", "-tenant", "demo", "-username", "ada", "-database-url", dbURL, "-base-url", "https://x.example"},
		{"token", "-revoke", "-console", "-database-url", dbURL},
	} {
		if err := runStdin(ctx, args, strings.NewReader("dk_x\n"), io.Discard, io.Discard, env(nil)); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestTokenPortalLink runs the server and token -portal beside it, as an
// operator would: the link printed opens a console session on the running
// server limited to its scopes, once; no secret to sign with, a link
// signed with another secret, bad scopes and flags that do not go together
// are refused. Both databases, with the server secret kept in the database
// and given in DESKKIT_SECRET.
func TestTokenPortalLink(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		secret := strings.Repeat("s3cret-", 6)
		// No server has kept a secret in the database yet, and none is in
		// the environment.
		var stdout strings.Builder
		err := run(context.Background(), []string{"token", "-tenant", "acme", "-username", "ann", "-database-url", rawURL, "-portal", "trash"}, &stdout, io.Discard, env(nil))
		if err == nil || !strings.Contains(err.Error(), "-portal: no server secret") || !strings.Contains(err.Error(), envSecret) || stdout.Len() > 0 {
			t.Errorf("no secret anywhere: %q, %v", stdout.String(), err)
		}
		if strings.HasPrefix(rawURL, "sqlite:") {
			// DESKKIT_SECRET on both: the database keeps none.
			base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envSecret: secret})
			checkPortalLinks(t, rawURL, base, map[string]string{envSecret: secret})
			return
		}
		// The secret the server created and keeps in the database.
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL})
		checkPortalLinks(t, rawURL, base, nil)
	})
}

func checkPortalLinks(t *testing.T, rawURL, base string, vars map[string]string) {
	t.Helper()
	ctx := context.Background()
	portal := func(vars map[string]string, args ...string) (string, string, error) {
		var stdout, stderr strings.Builder
		err := run(ctx, append([]string{"token", "-tenant", "acme", "-username", "ann", "-database-url", rawURL, "-base-url", base}, args...), &stdout, &stderr, env(vars))
		return stdout.String(), stderr.String(), err
	}
	out, logs, err := portal(vars, "-portal", "trash")
	if err != nil {
		t.Fatalf("token -portal trash: %v\n%s", err, logs)
	}
	link := strings.TrimSpace(out)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/console/portal\?t=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$`).MatchString(out) {
		t.Fatalf("token -portal printed %q, want the link alone", out)
	}
	if !strings.Contains(logs, `"msg":"console link issued"`) || !strings.Contains(logs, `"scopes":"trash"`) || strings.Contains(logs, "t=") || strings.Contains(logs, "dk_") {
		t.Errorf("token -portal logged:\n%s", logs)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	b := newPortalBrowser(t, base)
	if status, body := b.open(u.RequestURI()); status != http.StatusSeeOther {
		t.Fatalf("trash link on the running server: %d\n%s", status, body)
	}
	if status, _ := b.send(http.MethodGet, "/console/trash", nil); status != http.StatusOK {
		t.Errorf("trash link, GET /console/trash: %d", status)
	}
	for _, path := range []string{"/console/channels", "/console/profile"} {
		if status, _ := b.send(http.MethodGet, path, nil); status != http.StatusForbidden {
			t.Errorf("trash link, GET %s: %d, want 403", path, status)
		}
	}
	if status, _ := newPortalBrowser(t, base).open(u.RequestURI()); status == http.StatusSeeOther {
		t.Error("the trash link opened a second session")
	}

	// Two scopes, for an admin (the channels are admins'): the channels
	// too, the profile still not.
	out, logs, err = portal(vars, "-portal", "channels, trash", "-admin")
	if err != nil {
		t.Fatalf("token -portal channels,trash: %v\n%s", err, logs)
	}
	u, _ = url.Parse(strings.TrimSpace(out))
	b = newPortalBrowser(t, base)
	if status, body := b.open(u.RequestURI()); status != http.StatusSeeOther {
		t.Fatalf("channels,trash link: %d\n%s", status, body)
	}
	for path, want := range map[string]int{"/console/channels": http.StatusOK, "/console/trash": http.StatusOK, "/console/profile": http.StatusForbidden} {
		if status, _ := b.send(http.MethodGet, path, nil); status != want {
			t.Errorf("channels,trash link, GET %s: %d, want %d", path, status, want)
		}
	}

	// Signed with another secret: the server refuses it.
	out, _, err = portal(map[string]string{envSecret: strings.Repeat("other-", 7)}, "-portal", "trash")
	if err != nil {
		t.Fatalf("token -portal with another secret: %v", err)
	}
	u, _ = url.Parse(strings.TrimSpace(out))
	if status, _ := newPortalBrowser(t, base).open(u.RequestURI()); status == http.StatusSeeOther {
		t.Error("a link signed with another secret opened a session")
	}

	for _, tc := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{vars, []string{"-portal", "trash,billing"}, `-portal: unknown scope "billing"`},
		{vars, []string{"-portal", ""}, "-portal needs at least one scope"},
		{vars, []string{"-portal", "trash", "-console"}, "-portal and -console exclude each other"},
		{vars, []string{"-portal", "trash", "-ttl", "1h"}, "-ttl goes with a token"},
		{map[string]string{envSecret: "short"}, []string{"-portal", "trash"}, envSecret + " must be at least"},
	} {
		out, _, err := portal(tc.vars, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("%q: %q, %v; want an error with %q", tc.args, out, err, tc.want)
		}
	}
	if err := runStdin(ctx, []string{"token", "-revoke", "-portal", "trash", "-database-url", rawURL}, strings.NewReader("dk_x\n"), io.Discard, io.Discard, env(vars)); err == nil || !strings.Contains(err.Error(), "no -portal") {
		t.Errorf("-revoke -portal: %v", err)
	}
}
