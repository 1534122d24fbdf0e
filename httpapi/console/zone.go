package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

// ZoneResolver is an optional hook: the time zones the console shows a
// user's times in.
type ZoneResolver interface {
	// TimeZones returns the IANA time zone names ("Asia/Shanghai") of p's
	// user and of p's tenant, "" for none. A name the console cannot load,
	// or an error (logged), counts as none.
	TimeZones(ctx context.Context, p deskkit.Principal) (user, tenant string, err error)
}

// ZoneParam is the query parameter that picks the console's time zone
// ("?tz=Asia/Shanghai"), as the footer's picker sends it: the choice is
// kept in the cookie ZoneCookie. A zone the host's ZoneResolver gives
// comes first (the footer then names it, with no picker); without one,
// the picked zone; without that, UTC, and a script preselects the
// browser's zone in the picker. Pages show times to the minute with the
// offset ("2026-11-24 17:00 UTC+8") and read the forms' times (the
// trash's day, "since", the deliveries' range) in the zone; the API
// answers and takes RFC 3339 whatever the zone.
const (
	ZoneParam  = "tz"
	ZoneCookie = "deskkit-tz"
)

// zoneFrom says where a page's time zone came from.
type zoneFrom string

const (
	zoneFromUser    zoneFrom = "user"
	zoneFromTenant  zoneFrom = "tenant"
	zoneFromPicked  zoneFrom = "picked"
	zoneFromDefault zoneFrom = "default"
)

// zone is the time zone a request's times are shown and read in.
type zone struct {
	loc  *time.Location
	name string
	from zoneFrom
}

// utcZone is the zone of a request that has none.
var utcZone = zone{loc: time.UTC, name: "UTC", from: zoneFromDefault}

// zoneKey keys a request context's zone.
type zoneKey struct{}

// zonePicks are the zones the footer's picker offers, one or two for each
// of the world's common offsets; the zone in use is added when it is
// another (a host's, or one the browser's script preselected and sent).
var zonePicks = []string{
	"UTC", "Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Denver",
	"America/Chicago", "America/New_York", "America/Halifax", "America/Sao_Paulo", "Atlantic/Azores",
	"Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Athens", "Europe/Moscow",
	"Africa/Lagos", "Africa/Cairo", "Africa/Johannesburg", "Asia/Dubai", "Asia/Karachi",
	"Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta",
	"Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei", "Asia/Singapore", "Asia/Tokyo",
	"Asia/Seoul", "Australia/Perth", "Australia/Adelaide", "Australia/Sydney", "Pacific/Auckland",
}

// zones caches the zones loaded by name: at most every IANA name once.
var zones sync.Map // name -> *time.Location

// loadZone loads the IANA time zone name; false for a name that is not
// one (or "Local", the server's own, which is no reader's).
func loadZone(name string) (*time.Location, bool) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), true
	}
	if name == "" || name == "Local" || len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_+-", r))
	}) {
		return nil, false
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	zones.Store(name, l)
	return l, true
}

// switchZone keeps the zone a request picked with ZoneParam in ZoneCookie,
// for a year, and returns r with it.
func (c *Console) switchZone(w http.ResponseWriter, r *http.Request) *http.Request {
	name := r.URL.Query().Get(ZoneParam)
	if _, ok := loadZone(name); ok {
		http.SetCookie(w, &http.Cookie{
			Name: ZoneCookie, Value: url.QueryEscape(name), Path: c.base, MaxAge: 365 * 24 * 3600,
			HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode,
		})
	} else if ck, err := r.Cookie(ZoneCookie); err == nil {
		name, _ = url.QueryUnescape(ck.Value)
	}
	if l, ok := loadZone(name); ok {
		return r.WithContext(context.WithValue(r.Context(), zoneKey{}, zone{loc: l, name: name, from: zoneFromPicked}))
	}
	return r
}

// withHostZone returns r in the zone the host's ZoneResolver gives p's
// user, else p's tenant; r as it is without one.
func (c *Console) withHostZone(r *http.Request, p deskkit.Principal) *http.Request {
	if c.cfg.Zones == nil {
		return r
	}
	user, tenant, err := c.cfg.Zones.TimeZones(r.Context(), p)
	if err != nil {
		c.cfg.Logger.WarnContext(r.Context(), "console: time zones", "error", err)
		return r
	}
	for _, z := range []zone{{name: user, from: zoneFromUser}, {name: tenant, from: zoneFromTenant}} {
		if l, ok := loadZone(z.name); ok {
			z.loc = l
			return r.WithContext(context.WithValue(r.Context(), zoneKey{}, z))
		}
	}
	return r
}

// requestZone is the zone r's times are shown and read in.
func requestZone(r *http.Request) zone {
	if z, ok := r.Context().Value(zoneKey{}).(zone); ok {
		return z
	}
	return utcZone
}

// zoneOf is the location r's times are shown and read in.
func (c *Console) zoneOf(r *http.Request) *time.Location { return requestZone(r).loc }

// offsetName is the UTC offset of loc at t as a reader writes it: "UTC",
// "UTC+8", "UTC+5:30", "UTC-3".
func offsetName(t time.Time, loc *time.Location) string {
	_, off := t.In(loc).Zone()
	if off == 0 {
		return "UTC"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	if m := off % 3600 / 60; m != 0 {
		return fmt.Sprintf("UTC%s%d:%02d", sign, off/3600, m)
	}
	return fmt.Sprintf("UTC%s%d", sign, off/3600)
}

// formatIn is how pages show an instant: to the minute, in loc, with its
// offset ("2026-11-24 15:04 UTC+8").
func formatIn(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04") + " " + offsetName(t, loc)
}

// zoneView is the footer's account of the zone: which it is, and the
// picker when the host gives none.
type zoneView struct {
	Name   string
	Offset string // its offset now
	From   string // user, tenant, picked or default
	Picks  []zoneView
	Chosen bool // for a pick: the zone in use
}

// Label is the zone as pages name it: "UTC", "Asia/Shanghai (UTC+8)".
func (v zoneView) Label() string {
	if v.Name == "UTC" {
		return v.Name
	}
	return v.Name + " (" + v.Offset + ")"
}

// zoneViewOf is r's zone for the footer.
func (c *Console) zoneViewOf(r *http.Request) zoneView {
	z, now := requestZone(r), c.cfg.Now()
	v := zoneView{Name: z.name, Offset: offsetName(now, z.loc), From: string(z.from)}
	if z.from == zoneFromUser || z.from == zoneFromTenant {
		return v
	}
	names := zonePicks
	if !slices.Contains(names, z.name) {
		names = append([]string{z.name}, names...)
	}
	for _, n := range names {
		if l, ok := loadZone(n); ok {
			v.Picks = append(v.Picks, zoneView{Name: n, Offset: offsetName(now, l), Chosen: n == z.name})
		}
	}
	return v
}

// zoned is a value a sub-template is given with the page's zone, for
// its times: {{template "health" ($.In .Channel)}}, then .V and .Date.
type zoned struct {
	V   any
	loc *time.Location
}

// Date writes t in the page's zone.
func (z zoned) Date(t time.Time) string { return formatIn(t, z.loc) }

// DatePtr writes *t in the page's zone; "" for nil.
func (z zoned) DatePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return formatIn(*t, z.loc)
}

// parseLocal reads a form's moment in loc: a datetime-local value, a
// date (its midnight), or RFC 3339 with its own offset.
func parseLocal(field, s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return httpapi.ParseTime(field, s)
}

// localInput is t as a datetime-local field's value in loc.
func localInput(t time.Time, loc *time.Location) string { return t.In(loc).Format("2006-01-02T15:04") }
