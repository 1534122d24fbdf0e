package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustedProxiesFlag runs the server as a user does behind a
// TLS-terminating proxy at 127.0.0.1: with -trusted-proxies (here through
// its variable) the console's session cookie is Secure and named __Host-
// when the proxy says https, and the access log records the client the
// proxy names; without it the same headers, which any client can send,
// change nothing.
func TestTrustedProxiesFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		cookie  string
		secure  bool
		logLine string
	}{
		{"trusted", map[string]string{envTrustedProxies: "127.0.0.1, ::1"}, "__Host-deskkit-console", true, `"client":"198.51.100.7"`},
		{"not trusted", map[string]string{}, "deskkit-console", false, `"client":"127.0.0.1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.vars[envDatabaseURL] = "sqlite:" + filepath.Join(t.TempDir(), "deskkit.db")
			s := startServing(t, nil, tc.vars)
			req, err := http.NewRequest(http.MethodPost, s.base+"/console/signin", strings.NewReader(url.Values{"token": {s.token}}.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Header.Set("X-Forwarded-For", "198.51.100.7")
			req.Header.Set("X-Forwarded-Proto", "https")
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			var got *http.Cookie
			for _, c := range res.Cookies() {
				if strings.HasSuffix(c.Name, "deskkit-console") {
					got = c
				}
			}
			if res.StatusCode != http.StatusSeeOther || got == nil || got.Name != tc.cookie || got.Secure != tc.secure {
				t.Errorf("sign-in: %d, cookie %+v; want %s, Secure %v", res.StatusCode, got, tc.cookie, tc.secure)
			}
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			if logs := s.stderr.String(); !strings.Contains(logs, `"path":"/console/signin","status":303`) || !strings.Contains(logs, tc.logLine) {
				t.Errorf("the access log lacks %s:\n%s", tc.logLine, logs)
			}
		})
	}
}

// TestTrustedProxiesFlagErrors: a bad -trusted-proxies stops the server at
// start, naming the flag or its variable and the entry.
func TestTrustedProxiesFlagErrors(t *testing.T) {
	ctx := context.Background()
	var stderr strings.Builder
	if err := run(ctx, []string{"-trusted-proxies", "10.0.0.0/8,proxy.internal"}, io.Discard, &stderr, env(nil)); !errors.Is(err, errUsage) ||
		!strings.Contains(stderr.String(), `-trusted-proxies: "proxy.internal" must be an IP address`) {
		t.Errorf("bad flag: %v\n%s", err, stderr.String())
	}
	err := run(ctx, nil, io.Discard, io.Discard, env(map[string]string{envTrustedProxies: "10.0.0.0/33"}))
	if err == nil || !strings.Contains(err.Error(), envTrustedProxies) || !strings.Contains(err.Error(), `"10.0.0.0/33" must be an IP address`) {
		t.Errorf("bad variable: %v", err)
	}
}
