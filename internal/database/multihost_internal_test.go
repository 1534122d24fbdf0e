package database

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParsePostgres(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		addrs     []string
		readWrite bool
		dsn       string // "" to skip the check
	}{
		{"postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&sslmode=disable",
			[]string{"h1:5432", "h2:5433"}, true, "postgres://u@h1:5432/db?sslmode=disable"},
		{"postgresql://u:p%40w@h1,h2/db", []string{"h1:5432", "h2:5432"}, false, "postgresql://u:p%40w@h1:5432/db"},
		{"postgres://[::1]:6000,127.0.0.1/db?target_session_attrs=any", []string{"[::1]:6000", "127.0.0.1:5432"}, false, "postgres://[::1]:6000/db"},
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", []string{"127.0.0.1:5432"}, false, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{"postgres://h/db?target_session_attrs=read-write", []string{"h:5432"}, true, "postgres://h:5432/db"},
	} {
		got, err := parsePostgres(tc.raw)
		if err != nil {
			t.Errorf("parsePostgres(%q): %v", tc.raw, err)
			continue
		}
		if !reflect.DeepEqual(got.addrs, tc.addrs) || got.readWrite != tc.readWrite || (tc.dsn != "" && got.dsn != tc.dsn) {
			t.Errorf("parsePostgres(%q) = %+v; want addrs %v, readWrite %v, dsn %q", tc.raw, got, tc.addrs, tc.readWrite, tc.dsn)
		}
		if got.multi() != (len(tc.addrs) > 1 || tc.readWrite) {
			t.Errorf("parsePostgres(%q).multi() = %v", tc.raw, got.multi())
		}
	}
}

func TestParsePostgresRefuses(t *testing.T) {
	for raw, names := range map[string]string{
		"postgres://u@h1:5432,h2:5433/db?target_session_attrs=primary":   "target_session_attrs",
		"postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-only": "target_session_attrs",
		"postgres://u@h1:5432,,h2/db":                                    "empty host",
		"postgres://u@h1:x/db":                                           "port",
		"postgres://u@h1:70000/db":                                       "port",
		"postgres://u@::1:5432/db":                                       "IPv6",
		"postgres://u@[::1/db":                                           "]",
		"postgres://u@h1,h2/db?sslmode=verify-full":                      "sslmode",
		"postgres://u@h1,h2/db?host=h3":                                  "host parameter",
		"postgres://u@h1/db?host=h3,h4":                                  "host parameter",
		"postgres:///db?host=h3&target_session_attrs=read-write":         "target_session_attrs",
		"mysql://h/db":                                                   "postgres://",
	} {
		if got, err := parsePostgres(raw); err == nil {
			t.Errorf("parsePostgres(%q) = %+v, want an error naming %s", raw, got, names)
		} else if !strings.Contains(err.Error(), names) {
			t.Errorf("parsePostgres(%q): %v; want it to name %s", raw, err, names)
		}
	}
}

func TestKeywordURL(t *testing.T) {
	for raw, want := range map[string]string{
		"host=h1,h2 port=5432,5433 dbname=test user=postgres target_session_attrs=read-write": "postgres://postgres@h1:5432,h2:5433/test?target_session_attrs=read-write",
		"host=h1,h2 port=6000 dbname=test sslmode=disable":                                    "postgres://h1:6000,h2:6000/test?sslmode=disable",
		"host = ::1 dbname='my db' user=u password='it\\'s'":                                  "postgres://u:it%27s@[::1]/my%20db",
	} {
		got, err := keywordURL(raw)
		if err != nil || got != want {
			t.Errorf("keywordURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
		if !keywordDSN(raw) {
			t.Errorf("keywordDSN(%q) = false", raw)
		}
	}
	for raw, names := range map[string]string{
		"host=h1,h2,h3 port=1,2":   "port",
		"host=/var/run/postgresql": "host",
		"dbname='open":             "unterminated",
		"host=h1 host=h2":          "twice",
	} {
		if got, err := keywordURL(raw); err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("keywordURL(%q) = %q, %v; want an error naming %s", raw, got, err, names)
		}
	}
	for _, raw := range []string{"postgres://h/db", "sqlite:x.db", "", "x y=1"} {
		if keywordDSN(raw) {
			t.Errorf("keywordDSN(%q) = true", raw)
		}
	}
}

// FuzzMultiHostURL: parsePostgres never panics, and what it accepts it
// reads the same way again from the URL it gives pgdriver (with the
// hosts put back): the hosts, the session, and a DSN pgdriver's
// url.Parse takes, without target_session_attrs.
func FuzzMultiHostURL(f *testing.F) {
	for _, s := range []string{
		"postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
		"postgresql://u:p@[::1]:6000,127.0.0.1/db?sslmode=disable",
		"postgres:///db?host=h",
		"postgres://u@h1,,h2/db",
		"postgres://a@b@h:1/x?y=z#frag",
		"postgres://",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := parsePostgres(raw)
		if err != nil {
			return
		}
		u, err := url.Parse(got.dsn)
		if err != nil {
			t.Fatalf("parsePostgres(%q) gave pgdriver a URL it cannot parse: %q: %v", raw, got.dsn, err)
		}
		if u.Query().Has("target_session_attrs") {
			t.Fatalf("parsePostgres(%q) left target_session_attrs in %q", raw, got.dsn)
		}
		if len(got.addrs) > 0 && u.Host != got.addrs[0] {
			t.Fatalf("parsePostgres(%q): the DSN's host %q is not the first host %q", raw, u.Host, got.addrs[0])
		}
		if len(got.addrs) == 0 {
			return // no host part to put back (pgdriver's default host)
		}
		if got.readWrite {
			u.RawQuery += "&target_session_attrs=read-write"
		}
		u.Host = "HOSTS"
		again, err := parsePostgres(strings.Replace(u.String(), "HOSTS", strings.Join(got.addrs, ","), 1))
		if err != nil {
			t.Fatalf("parsePostgres(%q) accepted, but refuses its own form: %v", raw, err)
		}
		if !reflect.DeepEqual(again.addrs, got.addrs) || again.readWrite != got.readWrite {
			t.Fatalf("parsePostgres(%q) = %v %v, read again %v %v", raw, got.addrs, got.readWrite, again.addrs, again.readWrite)
		}
	})
}
