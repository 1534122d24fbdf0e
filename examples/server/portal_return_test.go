package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/deskkit/deskkit/internal/database"
)

// TestTokenPortalReturn: `token -portal -return URL -host-origins ORIGINS`
// prints a link that the server, run with the same -host-origins
// (DESKKIT_HOST_ORIGINS), opens with "Back to deskkit" leading to URL; a
// -return off the origins, or without -portal, is refused naming the flag
// and the rule, before anything is written. Both databases.
func TestTokenPortalReturn(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		const host = "https://app.example.com"
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envHostOrigins: host})
		link := issueFor(t, rawURL, "-tenant", "demo", "-username", "ann", "-portal", "trash", "-return", host+"/projects?tab=trash",
			"-host-origins", host, "-base-url", base)
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		res, err := browser.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		token := regexp.MustCompile(`name="t" value="([^"]+)"`).FindSubmatch(b)
		if token == nil {
			t.Fatalf("the link's page (%d) has no form:\n%s", res.StatusCode, b)
		}
		res, err = browser.PostForm(base+"/console/portal", url.Values{"t": {string(token[1])}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.Request.URL.Path != "/console/trash" || !strings.Contains(string(b), `id="back-to-host" href="https://app.example.com/projects?tab=trash"`) ||
			!strings.Contains(string(b), "Back to deskkit") {
			t.Errorf("the portal's trash (%s, %d) lacks the way back:\n%s", res.Request.URL.Path, res.StatusCode, b)
		}

		ctx := context.Background()
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-portal", "trash", "-return", "https://evil.example/app", "-host-origins", host}, "-return: must be on one of the host's origins: https://app.example.com"},
			{[]string{"-portal", "trash", "-return", "http://app.example.com/app", "-host-origins", host}, "-return: must be on one of the host's origins"},
			{[]string{"-portal", "trash", "-return", "https://app.example.com/app"}, "-return: is not accepted: the console lists no host origins"},
			{[]string{"-portal", "trash", "-return", "javascript:alert(1)", "-host-origins", host}, "-return: must be an absolute http or https URL"},
			{[]string{"-return", "https://app.example.com/app", "-host-origins", host}, "-return goes with -portal"},
		} {
			var stderr bytes.Buffer
			args := append([]string{"token", "-database-url", rawURL, "-tenant", "nowhere", "-username", "x"}, tc.args...)
			err := run(ctx, args, io.Discard, &stderr, env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
			}
		}
		var stderr bytes.Buffer
		if err := run(ctx, []string{"token", "-database-url", rawURL, "-tenant", "nowhere", "-username", "x", "-host-origins", "https://app.example.com/path"},
			io.Discard, &stderr, env(nil)); err == nil || !strings.Contains(stderr.String(), "must be an origin such as") {
			t.Errorf("-host-origins with a path: %v\n%s", err, stderr.String())
		}
		db, err := database.Open(rawURL, database.Options{MaxOpenConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if n, err := db.NewSelect().Table("deskkit_tenants").Where("name = ?", "nowhere").Count(ctx); err != nil || n != 0 {
			t.Errorf("refused commands created %d tenants (%v)", n, err)
		}
	})
}
