package channel_test

// What the delivery log and the disabled reasons keep of addresses: a
// redirect's Location and a reply that echoes the request are masked
// before they are stored, and a principal who sees addresses masked sees
// every URL in a reason masked, on SQLite and PostgreSQL.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// redirected is where the redirecting receiver points: a path and a query
// that carry tokens.
const redirected = "https://moved.invalid/moved/t0k3n12345?sig=abc%2Bdef"

// leaks are the parts of redirected that no stored or masked text may
// hold.
var leaks = []string{"t0k3n12345", "sig=", "abc%2Bdef", "abc+def", "/moved/"}

// storedTexts returns every text the database keeps about the tenant's
// deliveries and channels: disabled reasons, deliveries' last errors,
// attempts' errors (in English and as messages) and replies, and events' data (channel.disabled quotes
// the reason).
func storedTexts(t *testing.T, db *bun.DB) string {
	t.Helper()
	ctx := context.Background()
	var all []string
	for _, q := range []string{
		"SELECT COALESCE(disabled_reason, '') || ' ' || COALESCE(disabled_reason_json, '') FROM deskkit_channels",
		"SELECT COALESCE(last_error, '') || ' ' || COALESCE(last_error_json, '') FROM deskkit_outbox_deliveries",
		"SELECT COALESCE(error, '') || ' ' || COALESCE(error_json, '') || ' ' || COALESCE(response, '') FROM deskkit_outbox_attempts",
		"SELECT title || ' ' || body || ' ' || data FROM deskkit_outbox_events",
	} {
		var got []string
		if err := db.NewRaw(q).Scan(ctx, &got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		all = append(all, got...)
	}
	return strings.Join(all, "\n")
}

func wantNoLeak(t *testing.T, what, text string, leaks ...string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(text, l) {
			t.Errorf("%s holds %q: %s", what, l, text)
		}
	}
}

// A webhook that redirects is disabled with a reason that names where the
// redirect points as a masked address does (https://moved.invalid/***):
// stored so, listed so to a non-admin and to an admin, in the attempts, in
// the channel.disabled event, and in a test's failure.
func TestRedirectReasonMasked(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{DisableAfter: time.Minute, DisableMinFailures: 2})
		ctx := context.Background()
		moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Location", redirected)
			w.WriteHeader(http.StatusPermanentRedirect)
		}))
		t.Cleanup(moved.Close)
		watcher := f.add(t, f.ann, "WEBHOOK", "watcher", f.recv.URL+"/w", nil)
		hook := f.add(t, f.ann, "WEBHOOK", "hook", moved.URL+"/hook", nil)

		// Two failed attempts a minute apart disable it.
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.clock.Advance(2 * time.Minute)
		f.publish(t, 10, newEvent("task.restored"))
		for f.run(t) > 0 {
		}
		const where = "308 to https://moved.invalid/***"
		c := f.channel(t, hook.ID)
		if c.Enabled || !strings.Contains(c.DisabledReason, where) {
			t.Fatalf("the admin's view of the redirecting channel: %+v", c)
		}
		wantNoLeak(t, "the admin's disabled reason", c.DisabledReason, leaks...)

		carl := deskkit.Principal{UserID: 3, TenantID: 10}
		list, err := f.r.ListAll(ctx, carl)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.ID == hook.ID && (c.Address != strings.TrimSuffix(moved.URL, "/")+"/***" || !strings.Contains(c.DisabledReason, where)) {
				t.Errorf("the non-admin's view: %+v", c)
			}
			wantNoLeak(t, "the non-admin's list", c.DisabledReason, leaks...)
		}

		d := f.deliveries(t, hook.ID)
		if len(d) != 2 {
			t.Fatalf("the redirecting channel has %d deliveries, want 2", len(d))
		}
		for _, d := range d {
			for _, a := range f.attempts(t, d.ID) {
				if !strings.Contains(a.Error, where) {
					t.Errorf("attempt %+v does not name the masked Location", a)
				}
			}
		}
		if l := f.deliveries(t, watcher.ID); len(l) != 3 {
			t.Errorf("the watcher has %d deliveries, want 3 with channel.disabled", len(l))
		}
		stored := storedTexts(t, db)
		if !strings.Contains(stored, where) {
			t.Errorf("nothing stored names the masked Location:\n%s", stored)
		}
		wantNoLeak(t, "the database", stored, leaks...)

		// A test of the address fails saying the same.
		_, err = f.r.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "hook", Address: moved.URL + "/hook"})
		var de *channel.DeliveryError
		if !errors.As(err, &de) || !strings.Contains(de.ClientMessage(), where) {
			t.Fatalf("test of the redirecting webhook: %v", err)
		}
		wantNoLeak(t, "the test's failure", de.ClientMessage()+de.Error(), leaks...)
	})
}

// A reason stored before the mask (or a robot's errmsg) may quote a URL in
// full: an admin reads it as stored, a non-admin with every URL masked.
func TestStoredReasonMaskedForNonAdmins(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		if _, err := f.r.Disable(ctx, f.ann, hook.ID); err != nil {
			t.Fatal(err)
		}
		old := "deliveries failed for 5 days (10 attempts); the last: the webhook answered a redirect (308 to " + redirected + "), which is not followed: use the final URL"
		if _, err := db.NewRaw("UPDATE deskkit_channels SET disabled_reason = ?, disabled_reason_json = NULL WHERE id = ?", old, hook.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if c := f.channel(t, hook.ID); c.DisabledReason != old {
			t.Errorf("the admin reads %q, want it as stored", c.DisabledReason)
		}
		list, err := f.r.ListAll(ctx, deskkit.Principal{UserID: 3, TenantID: 10})
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %+v, %v", list, err)
		}
		want := "deliveries failed for 5 days (10 attempts); the last: the webhook answered a redirect (308 to https://moved.invalid/***), which is not followed: use the final URL"
		if list[0].DisabledReason != want {
			t.Errorf("the non-admin reads\n%q, want\n%q", list[0].DisabledReason, want)
		}
	})
}

// echoURI is a receiver that answers 404 quoting the request's URI in the
// spellings a server may use: as sent, decoded, and encoded again.
func echoURI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		decoded, _ := url.QueryUnescape(r.RequestURI)
		pathDecoded, _ := url.PathUnescape(r.RequestURI)
		token := r.URL.Query().Get("token") + r.URL.Query().Get("key")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "Cannot POST "+r.RequestURI+"\n"+
			"decoded: "+decoded+"\n"+
			"path-decoded: "+pathDecoded+"\n"+
			"encoded: "+url.QueryEscape(r.RequestURI)+"\n"+
			"lower: "+strings.ToLower(r.RequestURI)+"\n"+
			"token: "+token+" / "+url.QueryEscape(token)+"\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A reply that echoes the request's URI is stored with the address's path
// and query masked in every spelling: raw, percent-encoded and decoded; a
// robot's key too.
func TestEchoedURIMasked(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		echo := echoURI(t)
		hook := f.add(t, f.ann, "WEBHOOK", "hook", echo.URL+"/echouri/1?token=s3cr3t%2Bt0k3n%2Fq9", nil)
		robot := f.add(t, f.ann, "WECHAT", "robot", echo.URL+"/cgi-bin/webhook/send?key=k3y%2Bof%2Fthe-robot", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 2 {
			t.Fatalf("claimed %d, want 2", n)
		}
		for _, c := range []channel.Added{hook, robot} {
			d := f.only(t, c.ID)
			a := f.attempts(t, d.ID)
			// A webhook's path and query are masked whole, a robot's key
			// alone, as MaskAddress shows each.
			want := []string{"Cannot POST ***\n", "\ndecoded: ***\n", "\nencoded: ***\n", "\nlower: ***\n", "\ntoken: *** / ***\n"}
			if c.ID == robot.ID {
				want = []string{"Cannot POST /cgi-bin/webhook/send?key=***\n", "\ndecoded: /cgi-bin/webhook/send?key=***\n",
					"\nencoded: %2Fcgi-bin%2Fwebhook%2Fsend%3Fkey%3D***\n", "\ntoken: *** / ***\n"}
			}
			missing := false
			for _, w := range want {
				missing = missing || len(a) != 1 || !strings.Contains(a[0].Response, w)
			}
			if missing || a[0].StatusCode != 404 {
				t.Errorf("%s: attempts %+v", c.Name, a)
				continue
			}
			wantNoLeak(t, c.Name+"'s reply", a[0].Response,
				"s3cr3t", "t0k3n", "echouri", "k3y", "of%2Fthe", "of/the", "the-robot")
		}
		wantNoLeak(t, "the database", storedTexts(t, db), "s3cr3t", "t0k3n", "k3y", "the-robot")
	})
}

// resendOnly lets non-admins resend deliveries and nothing else: they see
// addresses masked.
type resendOnly struct{}

func (resendOnly) CanManageChannels(_ context.Context, _ deskkit.Principal, a channel.Action) (bool, error) {
	return a == channel.ActionResend, nil
}

// A resend answers the delivery as Deliveries shows it: to a principal who
// may resend but not see addresses, every URL of its error masked.
func TestResendAnswerMasked(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{Authorizer: resendOnly{}})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d := f.deliveries(t, hook.ID)
		if len(d) != 1 {
			t.Fatalf("%d deliveries, want 1", len(d))
		}
		old := "the webhook answered a redirect (308 to " + redirected + "), which is not followed: use the final URL"
		if _, err := db.NewRaw("UPDATE deskkit_outbox_deliveries SET last_error = ? WHERE id = ?", old, d[0].ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := f.r.Resend(ctx, deskkit.Principal{UserID: 3, TenantID: 10}, d[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "the webhook answered a redirect (308 to https://moved.invalid/***), which is not followed: use the final URL"
		if got.LastError != want {
			t.Errorf("the resend answers the non-admin\n%q, want\n%q", got.LastError, want)
		}
		got, err = f.r.Resend(ctx, f.ann, d[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastError != old {
			t.Errorf("the resend answers the admin %q, want it as stored", got.LastError)
		}
	})
}
