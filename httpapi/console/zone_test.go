package console

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// fixedZones is a ZoneResolver with fixed answers.
type fixedZones struct {
	user, tenant string
	err          error
}

func (z fixedZones) TimeZones(context.Context, deskkit.Principal) (string, string, error) {
	return z.user, z.tenant, z.err
}

// TestTimeZones: pages show times in the zone the host gives the user,
// else the tenant, else the one the reader picked in the footer (kept in
// a cookie), else UTC, and say which; a name that is no zone is ignored.
func TestTimeZones(t *testing.T) {
	since := time.Date(2026, 11, 24, 7, 30, 0, 0, time.UTC)
	chans := healthChannels{list: []channel.Channel{
		{ID: 2, Type: channel.Webhook, Name: "sick", Address: "https://b.example.com/h", Enabled: true, Events: []string{}, Health: channel.HealthFailing,
			FailingSince: &since, FailedAttempts: 4, LastError: "refused"},
	}}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		for _, c := range []struct {
			name      string
			zones     ZoneResolver
			path      string
			cookie    string
			want      []string
			setCookie string // the cookie's value the answer sets; "" for none
		}{
			{name: "UTC by default", path: "/console/channels",
				want: []string{"Failing since 2026-11-24 07:30 UTC:", "Times are shown in UTC.", `data-browser-zone`, `<option value="Asia/Shanghai">Asia/Shanghai (UTC+8)</option>`}},
			{name: "picked", path: "/console/channels?tz=Asia/Shanghai", setCookie: "Asia%2FShanghai",
				want: []string{"Failing since 2026-11-24 15:30 UTC+8:", "Times are shown in Asia/Shanghai (UTC+8).", `<option value="Asia/Shanghai" selected>`}},
			{name: "kept in the cookie", path: "/console/channels", cookie: "Asia%2FKolkata",
				want: []string{"Failing since 2026-11-24 13:00 UTC+5:30:", "Times are shown in Asia/Kolkata (UTC+5:30)."}},
			{name: "a zone not offered is added", path: "/console/channels", cookie: "America%2FSt_Johns",
				want: []string{"Failing since 2026-11-24 04:00 UTC-3:30:", `<option value="America/St_Johns" selected>America/St_Johns (UTC-3:30)</option>`}},
			{name: "no zone", path: "/console/channels?tz=Mars/Olympus_Mons", cookie: "..%2Fetc",
				want: []string{"Failing since 2026-11-24 07:30 UTC:", "Times are shown in UTC."}},
			{name: "the user's", zones: fixedZones{user: "America/New_York", tenant: "Asia/Tokyo"}, path: "/console/channels?tz=Asia/Shanghai", setCookie: "Asia%2FShanghai",
				want: []string{"Failing since 2026-11-24 02:30 UTC-5:", "Times are shown in America/New_York (UTC-5), the time zone of your account."}},
			{name: "the tenant's", zones: fixedZones{user: "Nowhere", tenant: "Asia/Tokyo"}, path: "/console/channels", cookie: "Asia%2FShanghai",
				want: []string{"Failing since 2026-11-24 16:30 UTC+9:", "Times are shown in Asia/Tokyo (UTC+9), the time zone of your tenant."}},
			{name: "the host fails", zones: fixedZones{err: errors.New("directory down")}, path: "/console/channels", cookie: "Asia%2FShanghai",
				want: []string{"Failing since 2026-11-24 15:30 UTC+8:", "Times are shown in Asia/Shanghai (UTC+8)."}},
			{name: "in Chinese", path: "/console/channels?lang=zh-CN", cookie: "Asia%2FShanghai",
				want: []string{"自 2026-11-24 15:30 UTC+8 起异常", "时间按 Asia/Shanghai (UTC+8) 显示。", "使用此时区"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := setup(t, db, func(cfg *Config) { cfg.Channels, cfg.Zones = chans, c.zones }, false)
				cks := []*http.Cookie{f.signIn(f.token)}
				if c.cookie != "" {
					cks = append(cks, &http.Cookie{Name: ZoneCookie, Value: c.cookie})
				}
				a := f.do(http.MethodGet, c.path, nil, cks...)
				if a.StatusCode != http.StatusOK {
					t.Fatalf("%d\n%s", a.StatusCode, a.body)
				}
				body := html.UnescapeString(a.body)
				for _, w := range c.want {
					if !strings.Contains(body, w) {
						t.Errorf("the page lacks %q", w)
					}
				}
				if c.zones != nil && c.name != "the host fails" && strings.Contains(a.body, `name="tz"`) {
					t.Error("the page offers a picker where the host gives the zone")
				}
				set := ""
				for _, ck := range a.Cookies() {
					if ck.Name == ZoneCookie {
						set = ck.Value
					}
				}
				if set != c.setCookie {
					t.Errorf("the answer set the zone cookie to %q, want %q", set, c.setCookie)
				}
			})
		}
	})
}

// TestTrashDayInZone: the trash's "deleted on" day is the reader's day:
// at UTC+8, 2026-11-24 runs from 16:00 UTC the day before.
func TestTrashDayInZone(t *testing.T) {
	shanghai, ok := loadZone("Asia/Shanghai")
	if !ok {
		t.Fatal("Asia/Shanghai does not load")
	}
	_, q, _, err := parseTrashForm(url.Values{"deleted": {"2026-11-24"}}, shanghai, func(f string, a ...any) string { return f })
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC)
	if len(q.Filters) != 2 || q.Filters[0].Op != trash.OpGreaterThanEqual || !q.Filters[0].Value.(time.Time).Equal(from) ||
		q.Filters[1].Op != trash.OpLessThan || !q.Filters[1].Value.(time.Time).Equal(to) {
		t.Errorf("filters %+v, want [%v, %v)", q.Filters, from, to)
	}
}

// TestLoadZone refuses what is no IANA zone name, and the server's Local.
func TestLoadZone(t *testing.T) {
	for _, n := range []string{"UTC", "Asia/Shanghai", "America/Argentina/Buenos_Aires", "Etc/GMT+8"} {
		if _, ok := loadZone(n); !ok {
			t.Errorf("loadZone(%q) refused it", n)
		}
	}
	for _, n := range []string{"", "Local", "../../etc/passwd", "Asia/Shang hai", "Mars/Olympus_Mons", strings.Repeat("A", 65)} {
		if _, ok := loadZone(n); ok {
			t.Errorf("loadZone(%q) took it", n)
		}
	}
}

// FuzzZoneParsers: a zone name and a form's moment from anyone never make
// the console panic; a name taken loads to the same zone again, and a
// moment taken is one the reader's zone can show.
func FuzzZoneParsers(f *testing.F) {
	for _, s := range []string{"Asia/Shanghai", "UTC", "Local", "../x", "2026-11-24T09:30", "2026-11-24", "2026-11-24T09:30:00+08:00"} {
		f.Add(s)
	}
	shanghai, _ := loadZone("Asia/Shanghai")
	f.Fuzz(func(t *testing.T, s string) {
		if l, ok := loadZone(s); ok {
			if again, ok := loadZone(s); !ok || again != l {
				t.Fatalf("loadZone(%q) took it once only", s)
			}
			if s == "Local" || len(s) > 64 {
				t.Fatalf("loadZone(%q) took it", s)
			}
		}
		if tm, err := parseLocal("since", s, shanghai); err == nil && formatIn(tm, shanghai) == "" {
			t.Fatalf("parseLocal(%q) = %v, which shows as nothing", s, tm)
		}
	})
}
