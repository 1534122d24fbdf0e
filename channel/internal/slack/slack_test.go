package slack_test

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/slack"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// guard is an SSRF guard as a server's, which refuses loopback; private
// one that a test's allows.
var (
	guard   = safehttp.New(safehttp.Config{})
	private = safehttp.New(safehttp.Config{AllowPrivateNetworks: true})
)

const slackURL = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"

func TestSlackInfo(t *testing.T) {
	in := slack.Kind{}.Info()
	if in.Type != "SLACK" || len(in.Aliases) != 0 || in.Quota != 10 || in.Permission != kind.Managers || in.OwnSecret || !in.SecretHint.IsZero() {
		t.Errorf("Info = %+v", in)
	}
	if in.Messages == nil || in.Hint.IsZero() || in.Doc.Summary != "a Slack incoming webhook" {
		t.Errorf("Info lacks its catalogue, hint or summary: %+v", in)
	}
	if s, err := (slack.Kind{}).Secret(""); s != nil || err != nil {
		t.Errorf(`Secret("") = %v, %v; want nil, nil`, s, err)
	}
	if _, err := (slack.Kind{}).Secret("xoxb-1"); !errors.Is(err, kind.ErrNoSecret) {
		t.Errorf("Secret(xoxb-1) = %v, want ErrNoSecret", err)
	}
	if s, err := (slack.Kind{}).NewSecret(); s != "" || err != nil {
		t.Errorf("NewSecret = %q, %v", s, err)
	}
	if tst, err := (slack.Kind{}).Test(slackURL, "", true, nil); tst != kind.One || err != nil {
		t.Errorf("Test = %+v, %v; want kind.One", tst, err)
	}
}

func TestSlackAddress(t *testing.T) {
	accepted := []struct {
		name, address string
	}{
		{"Slack's", slackURL},
		{"GovSlack's host", "https://hooks.slack-gov.com/services/T0/B0/x-y_Z"},
		{"loopback where allowed, http and a port", "http://127.0.0.1:8080/services/T1/B2/abc"},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			got, err := slack.Kind{}.Address(private, tt.address)
			if err != nil || got != tt.address {
				t.Errorf("Address(%q) = %q, %v; want it as sent", tt.address, got, err)
			}
		})
	}

	const shape = "https://hooks.slack.com/services/T.../B.../XXXX"
	refused := []struct {
		name, address, rule string // rule: what the refusal says
	}{
		{"two parts", "https://hooks.slack.com/services/T0/B0", shape},
		{"four parts", "https://hooks.slack.com/services/T0/B0/X/Y", shape},
		{"a trailing slash", "https://hooks.slack.com/services/T0/B0/X/", shape},
		{"an empty part", "https://hooks.slack.com/services/T0//X", shape},
		{"another path", "https://hooks.slack.com/workflows/T0/B0/X", shape},
		{"the path's case", "https://hooks.slack.com/Services/T0/B0/X", shape},
		{"no path", "https://hooks.slack.com", shape},
		{"a percent-escape", "https://hooks.slack.com/services/T0/B0/X%41", shape},
		{"an escaped slash", "https://hooks.slack.com/services/T0/B0%2FX/Y", shape},
		{"a dot part", "https://hooks.slack.com/services/T0/./X", shape},
		{"a query", slackURL + "?x=1", "without a query"},
		{"an empty query", slackURL + "?", "without a query"},
		{"a fragment", slackURL + "#x", "fragment"},
		{"not http", "ftp://hooks.slack.com/services/T0/B0/X", "http or https"},
		{"user information", "https://u:p@hooks.slack.com/services/T0/B0/X", "user name"},
		{"no host", "https:///services/T0/B0/X", "host"},
		{"a space", "https://hooks.slack.com/services/T0/B0/X Y", "printable"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slack.Kind{}.Address(private, tt.address)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != "address" || !strings.Contains(ie.Rule.String(), tt.rule) {
				t.Errorf("Address(%q) = %v, want an address refusal saying %q", tt.address, err, tt.rule)
			}
		})
	}

	t.Run("loopback where the guard refuses it", func(t *testing.T) {
		if _, err := (slack.Kind{}).Address(guard, "https://127.0.0.1/services/T0/B0/X"); !errors.Is(err, safehttp.ErrBlocked) {
			t.Errorf("Address = %v, want the guard's refusal", err)
		}
	})
}

func TestSlackMaskHidden(t *testing.T) {
	k := slack.Kind{}
	masks := map[string]string{
		slackURL:                               "https://hooks.slack.com/services/***",
		"http://127.0.0.1:8080/services/a/b/c": "http://127.0.0.1:8080/services/***",
		"not a url":                            "***",
		"":                                     "***",
	}
	for in, want := range masks {
		if got := k.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	want := []string{
		slackURL,
		"/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"T00000000", "B00000000", "XXXXXXXXXXXXXXXXXXXXXXXX",
	}
	if diff := cmp.Diff(want, k.Hidden(slackURL)); diff != "" {
		t.Errorf("Hidden (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"not a url"}, k.Hidden("not a url")); diff != "" {
		t.Errorf("Hidden of no URL (-want +got):\n%s", diff)
	}
}

// FuzzAddress: Address never panics, and accepts only what the sender
// can parse and Mask and Hidden hide: Mask shows the scheme and host
// alone, and Hidden names the path and each of its parts.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{
		slackURL, "http://127.0.0.1:8080/services/a/b/c", "https://[::1]/services/a/b/c",
		"https://h/services/a/b", "https://h/services/a/b/c/", "https://h/services/a/b/c?x", "https://h/services/a/b/c#x",
		"https://h/services/%2F/b/c", "https://h:0/services/a/b/c", "https://h/services/a/b/c\x00", "//h/services/a/b/c", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := slack.Kind{}.Address(private, s)
		if err != nil {
			return
		}
		if got != s {
			t.Fatalf("Address(%q) = %q: not as sent", s, got)
		}
		u, err := notify.ParseURL(s)
		if err != nil {
			t.Fatalf("Address accepted %q, which the sender cannot parse: %v", s, err)
		}
		if m := (slack.Kind{}).Mask(s); m != u.Scheme+"://"+u.Host+"/services/***" {
			t.Fatalf("Mask(%q) = %q", s, m)
		}
		path, err := url.PathUnescape(u.EscapedPath())
		if err != nil || path != u.EscapedPath() {
			t.Fatalf("accepted %q, whose path has escapes", s)
		}
		hidden := slack.Kind{}.Hidden(s)
		parts := strings.Split(strings.TrimPrefix(path, "/services/"), "/")
		for _, p := range append(parts, path) {
			if !slices.Contains(hidden, p) {
				t.Fatalf("Hidden(%q) = %q lacks %q", s, hidden, p)
			}
		}
	})
}
