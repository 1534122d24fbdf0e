package main

import (
	"context"
	"io"
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
