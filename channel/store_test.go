package channel

// The storage conformance suite, on SQLite and PostgreSQL. It is an
// internal test because the senders' helpers (stored, storedByName,
// storedByIDs) are unexported; everything else goes through the public
// methods.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	dkmigrate "github.com/deskkit/deskkit/internal/migrate"
)

var storeSecret = []byte("0123456789abcdef0123456789abcdef-channel-test")

// storeFixture is a registry over a fresh database, with two tenants.
type storeFixture struct {
	r     *ChannelRegistry
	db    *bun.DB
	clock *clocktest.Clock
	ann   deskkit.Principal // tenant 10
	bob   deskkit.Principal // tenant 10
	eve   deskkit.Principal // tenant 20
}

func newStoreFixture(t *testing.T, db *bun.DB) *storeFixture {
	t.Helper()
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	f := &storeFixture{
		db:    db,
		clock: clocktest.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)),
		ann:   deskkit.Principal{UserID: 1, TenantID: 10, Admin: true},
		bob:   deskkit.Principal{UserID: 2, TenantID: 10, Admin: true},
		eve:   deskkit.Principal{UserID: 3, TenantID: 20, Admin: true},
	}
	f.r = f.registry(t, storeSecret, nil)
	return f
}

func (f *storeFixture) registry(t *testing.T, secret, previous []byte) *ChannelRegistry {
	t.Helper()
	r, err := New(f.db, secret, nil, &Config{Now: f.clock.Now, PreviousSecret: previous})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *storeFixture) add(t *testing.T, p deskkit.Principal, in Input) Added {
	t.Helper()
	a, err := f.r.Add(context.Background(), p, in)
	if err != nil {
		t.Fatalf("add %+v: %v", in, err)
	}
	return a
}

func (f *storeFixture) list(t *testing.T, p deskkit.Principal, typ string) []Channel {
	t.Helper()
	l, err := f.r.List(context.Background(), p, typ)
	if err != nil {
		t.Fatalf("list %s: %v", typ, err)
	}
	return l
}

// rows counts the channels of each table: what a refused request must
// leave as it was.
type rowCounts struct {
	Channels int // rows of deskkit_channels
	Counted  int // sum of deskkit_channel_counts.n
}

func (f *storeFixture) counts(t *testing.T) rowCounts {
	t.Helper()
	ctx := context.Background()
	var c rowCounts
	if err := f.db.NewRaw("SELECT count(*) FROM deskkit_channels").Scan(ctx, &c.Channels); err != nil {
		t.Fatal(err)
	}
	if err := f.db.NewRaw("SELECT coalesce(sum(n), 0) FROM deskkit_channel_counts").Scan(ctx, &c.Counted); err != nil {
		t.Fatal(err)
	}
	return c
}

func hookURL(n int) string { return fmt.Sprintf("https://hooks.example.com/h/%d?token=tok%d", n, n) }

const (
	weComURL    = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wecom-key-4711"
	dingTalkURL = "https://oapi.dingtalk.com/robot/send?access_token=dingtalk-token-0815"
	dingSecret  = "SECb1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
)

func str(s string) *string { return &s }

// on is c as an answer shows a channel that is enabled, with every event.
func on(c Channel) Channel {
	c.Enabled, c.Health = true, HealthHealthy
	if c.Events == nil {
		c.Events = []string{}
	}
	if c.InFlightLimit == 0 {
		c.InFlightLimit = DefaultMaxInFlightPerChannel // a new channel's: the floor
	}
	if c.Type == Webhook && c.Signing == "" {
		c.Signing = SigningHMAC // a new webhook's
	}
	if c.Headers == nil {
		c.Headers = []Header{} // answers write none as []
	}
	return c
}

// unflowed is s as the worker's reads return it: without the flow that
// List and Get add (withFlow).
func unflowed(s storedChannel) storedChannel {
	s.InFlightLimit = 0
	if len(s.Headers) == 0 {
		s.Headers = nil // read as none, not as an answer's []
	}
	return s
}

// Add then List, for every type: aliases in, canonical names out, the
// address normalised, in id order; the webhook's secret shown once.
func TestStoreAddList(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		for _, typ := range []string{"WEBHOOK", "EMAIL", "ENTERPRISE_CHAT", "WECHAT", "WORKPLACE_CHAT", "DINGTALK"} {
			if l := f.list(t, f.ann, typ); l == nil || len(l) != 0 {
				t.Errorf("empty list of %s = %#v, want an empty slice", typ, l)
			}
		}
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "ops hook", Address: " " + hookURL(1) + " "})
		if hook.ID < 1 || !cmp.Equal(hook.Channel, on(Channel{ID: hook.ID, Type: Webhook, Name: "ops hook", Address: hookURL(1)})) {
			t.Errorf("added webhook = %+v", hook.Channel)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(hook.Secret, "whsec_"))
		if !strings.HasPrefix(hook.Secret, "whsec_") || err != nil || len(raw) != 32 {
			t.Errorf("webhook secret %q: want whsec_ and 32 bytes in base64 (%v)", hook.Secret, err)
		}
		mail := f.add(t, f.ann, Input{Type: "EMAIL", Name: "ops mail", Address: "Ann@Example.COM, bob@example.org ,ann@example.com"})
		wecom := f.add(t, f.ann, Input{Type: "WECHAT", Name: "wecom", Address: weComURL})
		ding := f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)})
		ding2 := f.add(t, f.ann, Input{Type: "WORKPLACE_CHAT", Name: "ding unsigned", Address: dingTalkURL, Secret: str("")})
		hook2 := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "second", Address: hookURL(2)})
		for _, a := range []Added{mail, wecom, ding, ding2} {
			if a.Secret != "" {
				t.Errorf("%s channel %q: the answer shows a secret", a.Type, a.Name)
			}
		}
		if hook2.Secret == hook.Secret {
			t.Error("two webhooks got the same secret")
		}
		want := map[string][]Channel{
			"WEBHOOK":         {hook.Channel, hook2.Channel},
			"EMAIL":           {on(Channel{ID: mail.ID, Type: Email, Name: "ops mail", Address: "Ann@example.com,bob@example.org,ann@example.com"})},
			"ENTERPRISE_CHAT": {on(Channel{ID: wecom.ID, Type: EnterpriseChat, Name: "wecom", Address: weComURL})},
			"WECHAT":          {on(Channel{ID: wecom.ID, Type: EnterpriseChat, Name: "wecom", Address: weComURL})},
			"WORKPLACE_CHAT":  {on(Channel{ID: ding.ID, Type: WorkplaceChat, Name: "ding", Address: dingTalkURL}), on(Channel{ID: ding2.ID, Type: WorkplaceChat, Name: "ding unsigned", Address: dingTalkURL})},
			"DINGTALK":        {on(Channel{ID: ding.ID, Type: WorkplaceChat, Name: "ding", Address: dingTalkURL}), on(Channel{ID: ding2.ID, Type: WorkplaceChat, Name: "ding unsigned", Address: dingTalkURL})},
		}
		for typ, w := range want {
			if diff := cmp.Diff(w, f.list(t, f.ann, typ)); diff != "" {
				t.Errorf("list %s (-want +got):\n%s", typ, diff)
			}
			// Another user of the tenant sees the same; another tenant nothing.
			if diff := cmp.Diff(w, f.list(t, f.bob, typ)); diff != "" {
				t.Errorf("bob's list %s (-want +got):\n%s", typ, diff)
			}
			if l := f.list(t, f.eve, typ); len(l) != 0 {
				t.Errorf("another tenant lists %s: %+v", typ, l)
			}
		}
		if _, err := f.r.List(ctx, f.ann, "wechat"); !isInvalid(err, "channelType") {
			t.Errorf("list of a lower-case type: %v; want an input error for channelType", err)
		}
		// The secrets are stored (for the senders), never listed.
		for id, want := range map[int64]string{hook.ID: hook.Secret, ding.ID: dingSecret, ding2.ID: "", mail.ID: "", wecom.ID: ""} {
			s, err := f.r.stored(ctx, 10, id)
			if err != nil || s.Secret != want {
				t.Errorf("stored secret of %d = %q, %v; want %q", id, s.Secret, err, want)
			}
		}
		var created, updated int64
		if err := db.NewRaw("SELECT created_at_ms, updated_at_ms FROM deskkit_channels WHERE id = ?", hook.ID).Scan(ctx, &created, &updated); err != nil {
			t.Fatal(err)
		}
		if now := f.clock.Now().UnixMilli(); created != now || updated != now {
			t.Errorf("created %d, updated %d; want the clock's %d", created, updated, now)
		}
	})
}

// Get answers one channel of the caller's tenant exactly as List shows it,
// masked alike, and nothing of another tenant or that is not there.
func TestStoreGet(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		down := errors.New("policy service down")
		auth := &fakeAuthorizer{CanManageChannelsFn: func(_ context.Context, p deskkit.Principal, a Action) (bool, error) {
			switch p.UserID {
			case 99:
				return false, down
			case 6:
				return a == ActionViewAddresses, nil
			}
			return false, nil
		}}
		r, err := New(db, storeSecret, nil, &Config{Now: f.clock.Now, Authorizer: auth})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, in := range []Input{
			{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)},
			{Type: "EMAIL", Name: "mail", Address: "ann@example.com"},
			{Type: "WECHAT", Name: "wecom", Address: weComURL},
			{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)},
		} {
			a, err := r.Add(ctx, f.ann, in)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, a.ID)
		}
		// A disabled channel whose reason quotes a URL, masked for some.
		if _, err := r.Disable(ctx, f.ann, ids[0]); err != nil {
			t.Fatal(err)
		}
		reason := "the webhook answered a redirect (308 to https://moved.invalid/t0k3n?sig=x)"
		if _, err := db.NewRaw("UPDATE deskkit_channels SET disabled_reason = ?, disabled_reason_json = NULL WHERE id = ?", reason, ids[0]).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		theirs, err := r.Add(ctx, f.eve, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(2)})
		if err != nil {
			t.Fatal(err)
		}

		viewer := deskkit.Principal{UserID: 6, TenantID: 10} // allowed full addresses
		for _, p := range []deskkit.Principal{f.ann, carl, viewer} {
			list, err := r.ListAll(ctx, p)
			if err != nil || len(list) != len(ids) {
				t.Fatalf("list as %+v: %+v, %v", p, list, err)
			}
			for _, want := range list {
				got, err := r.Get(ctx, p, want.ID)
				if err != nil {
					t.Fatalf("get %d as %+v: %v", want.ID, p, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("get %d as %+v differs from the list (-list +get):\n%s", want.ID, p, diff)
				}
			}
		}
		got, err := r.Get(ctx, carl, ids[0])
		if err != nil || got.Address != "https://hooks.example.com/***" || strings.Contains(got.DisabledReason, "t0k3n") || got.Enabled {
			t.Errorf("carl's get of the disabled webhook: %+v, %v; want masked", got, err)
		}
		if got, err := r.Get(ctx, viewer, ids[0]); err != nil || got.Address != hookURL(1) || got.DisabledReason != reason {
			t.Errorf("the viewer's get: %+v, %v; want in full", got, err)
		}

		// Another tenant's id, from either side, and an id that is not there.
		if _, err := r.Get(ctx, f.ann, theirs.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("ann gets eve's channel: %v, want ErrNotFound", err)
		}
		if _, err := r.Get(ctx, f.eve, ids[0]); !errors.Is(err, ErrNotFound) {
			t.Errorf("eve gets ann's channel: %v, want ErrNotFound", err)
		}
		if _, err := r.Get(ctx, f.ann, theirs.ID+1000); !errors.Is(err, ErrNotFound) {
			t.Errorf("a missing id: %v, want ErrNotFound", err)
		}
		if _, err := r.Get(ctx, f.ann, 0); !isInvalid(err, "id") {
			t.Errorf("id 0: %v, want an input error on id", err)
		}
		if _, err := r.Get(ctx, deskkit.Principal{}, ids[0]); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("no principal: %v, want ErrUnauthenticated", err)
		}
		if _, err := r.Get(ctx, deskkit.Principal{UserID: 99, TenantID: 10}, ids[0]); !errors.Is(err, down) {
			t.Errorf("the authorizer down: %v, want its error", err)
		}
	})
}

// isInvalid reports whether err is an input error naming field.
func isInvalid(err error, field string) bool {
	var ie *deskkit.InputError
	return errors.As(err, &ie) && ie.Field == field && errors.Is(err, ErrInvalid)
}

// Every refused add names its field (or is blocked) and writes nothing.
func TestStoreAddRefuses(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "taken", Address: hookURL(1)})
		before := f.counts(t)
		for _, c := range []struct {
			in    Input
			field string // "" for blocked
		}{
			{Input{ID: 5, Type: "WEBHOOK", Name: "n", Address: hookURL(2)}, "id"},
			{Input{ID: -1, Type: "WEBHOOK", Name: "n", Address: hookURL(2)}, "id"},
			{Input{Type: "SMS", Name: "n", Address: hookURL(2)}, "channelType"},
			{Input{Type: "WEBHOOK", Name: "", Address: hookURL(2)}, "name"},
			{Input{Type: "WEBHOOK", Name: strings.Repeat("名", MaxNameRunes+1), Address: hookURL(2)}, "name"},
			{Input{Type: "WEBHOOK", Name: "n", Address: "not a url"}, "address"},
			{Input{Type: "WEBHOOK", Name: "n", Address: hookURL(2), Secret: str("SECx")}, "secret"},
			{Input{Type: "EMAIL", Name: "n", Address: "a@example.com,nope"}, "address"},
			{Input{Type: "WECHAT", Name: "n", Address: dingTalkURL}, "address"},
			{Input{Type: "DINGTALK", Name: "n", Address: weComURL}, "address"},
			{Input{Type: "DINGTALK", Name: "n", Address: dingTalkURL, Secret: str("not-sec")}, "secret"},
			{Input{Type: "WEBHOOK", Name: "n", Address: "http://127.0.0.1:8080/hook"}, ""},
			{Input{Type: "WEBHOOK", Name: "n", Address: "http://[::ffff:169.254.169.254]/"}, ""},
			{Input{Type: "WEBHOOK", Name: "n", Address: "http://localhost/"}, ""},
		} {
			a, err := f.r.Add(ctx, f.ann, c.in)
			if c.field == "" {
				if !errors.Is(err, ErrAddressBlocked) {
					t.Errorf("add %q: %v; want ErrAddressBlocked", c.in.Address, err)
				}
			} else if !isInvalid(err, c.field) {
				t.Errorf("add %+v: %v; want an input error for %s", c.in, err, c.field)
			}
			if !cmp.Equal(a, Added{}) {
				t.Errorf("add %+v: refused but answered %+v", c.in, a)
			}
		}
		if _, err := f.r.Add(ctx, f.ann, Input{Type: "EMAIL", Name: "taken", Address: "a@example.com"}); err != ErrNameTaken {
			t.Errorf("add of a taken name (other type): %v; want ErrNameTaken", err)
		}
		if _, err := f.r.Add(ctx, deskkit.Principal{}, Input{Type: "WEBHOOK", Name: "n", Address: hookURL(3)}); err != ErrUnauthenticated {
			t.Errorf("add without a principal: %v", err)
		}
		if after := f.counts(t); after != before {
			t.Errorf("refused adds changed the tables: %+v, then %+v", before, after)
		}
		// Names are per tenant.
		f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "taken", Address: hookURL(4)})
	})
}

// Quotas are exact at the edge: of 12 parallel adds of webhooks, exactly 5
// succeed; a delete frees one unit; other types and tenants have their own.
func TestStoreQuotaParallel(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		const tries = 12
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			added []Added
			fails []error
			start = make(chan struct{})
		)
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				a, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook %d", i), Address: hookURL(i)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails = append(fails, err)
				} else {
					added = append(added, a)
				}
			}()
		}
		close(start)
		wg.Wait()
		quota := Webhook.Quota()
		if len(added) != quota || len(fails) != tries-quota {
			t.Fatalf("%d added, %d refused; want %d and %d", len(added), len(fails), quota, tries-quota)
		}
		for _, err := range fails {
			var qe *QuotaError
			if !errors.As(err, &qe) || *qe != (QuotaError{Type: Webhook, Quota: 5}) ||
				!errors.Is(err, ErrQuotaExceeded) || !errors.Is(err, deskkit.ErrConflict) {
				t.Errorf("refusal %v; want a *QuotaError for 5 WEBHOOK channels", err)
			}
		}
		if got := f.counts(t); got != (rowCounts{Channels: quota, Counted: quota}) {
			t.Errorf("tables hold %+v after the race; want %d channels counted", got, quota)
		}
		if l := f.list(t, f.ann, "WEBHOOK"); len(l) != quota {
			t.Errorf("%d webhooks listed, want %d", len(l), quota)
		}
		// Other types and tenants are not held back.
		f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "a@example.com"})
		f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "eve", Address: hookURL(99)})
		// A delete frees exactly one unit.
		if err := f.r.Delete(ctx, f.ann, added[0].ID); err != nil {
			t.Fatal(err)
		}
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "after delete", Address: hookURL(100)})
		if _, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: "one more", Address: hookURL(101)}); !errors.Is(err, ErrQuotaExceeded) {
			t.Errorf("add past the quota after a delete: %v; want ErrQuotaExceeded", err)
		}
	})
}

// Each type's quota is Quota's, sequentially.
func TestStoreQuotaEveryType(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		address := map[Type]func(int) string{
			Email: func(i int) string { return fmt.Sprintf("u%d@example.com", i) },
		}
		for _, fake := range kindtest.Fakes {
			address[Type(fake.Type)] = func(int) string { return fake.Address("https://far.example.com") }
		}
		for _, typ := range Types() {
			for i := range typ.Quota() {
				f.add(t, f.ann, Input{Type: string(typ), Name: fmt.Sprintf("%s %d", typ, i), Address: address[typ](i)})
			}
			_, err := f.r.Add(ctx, f.ann, Input{Type: string(typ), Name: string(typ) + " over", Address: address[typ](99)})
			var qe *QuotaError
			if !errors.As(err, &qe) || qe.Type != typ || qe.Quota != typ.Quota() {
				t.Errorf("%s past its quota of %d: %v", typ, typ.Quota(), err)
			}
		}
	})
}

// Of parallel adds of one name, exactly one wins; the losers get
// ErrNameTaken and leave nothing behind, not even a quota unit.
func TestStoreNameUniqueParallel(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		const tries = 8
		errs := make(chan error, tries)
		start := make(chan struct{})
		for i := range tries {
			go func() {
				<-start
				typ, address := "WEBHOOK", hookURL(i)
				if i%2 == 1 {
					typ, address = "EMAIL", "ops@example.com"
				}
				_, err := f.r.Add(ctx, f.ann, Input{Type: typ, Name: "ops", Address: address})
				errs <- err
			}()
		}
		close(start)
		won, taken := 0, 0
		for range tries {
			switch err := <-errs; {
			case err == nil:
				won++
			case err == ErrNameTaken:
				taken++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if won != 1 || taken != tries-1 {
			t.Errorf("%d won, %d taken; want 1 and %d", won, taken, tries-1)
		}
		if got := f.counts(t); got != (rowCounts{Channels: 1, Counted: 1}) {
			t.Errorf("tables hold %+v; want one channel counted once", got)
		}
	})
}

func TestStoreReplace(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)})
		ding := f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)})
		f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "a@example.com"})
		eves := f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "eve's", Address: hookURL(9)})
		f.clock.Advance(time.Minute)

		got, err := f.r.Replace(ctx, f.bob, Input{ID: hook.ID, Type: "WEBHOOK", Name: "renamed", Address: " " + hookURL(2)})
		want := on(Channel{ID: hook.ID, Type: Webhook, Name: "renamed", Address: hookURL(2)})
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("replace = %+v, %v; want %+v", got, err, want)
		}
		if diff := cmp.Diff([]Channel{want}, f.list(t, f.ann, "WEBHOOK")); diff != "" {
			t.Errorf("list after replace (-want +got):\n%s", diff)
		}
		if s, err := f.r.stored(ctx, 10, hook.ID); err != nil || s.Secret != hook.Secret {
			t.Errorf("webhook secret after replace = %q, %v; want it kept", s.Secret, err)
		}
		var updated int64
		if err := db.NewRaw("SELECT updated_at_ms FROM deskkit_channels WHERE id = ?", hook.ID).Scan(ctx, &updated); err != nil || updated != f.clock.Now().UnixMilli() {
			t.Errorf("updated_at_ms = %d, %v; want the clock's", updated, err)
		}
		// The same name again, and an alias of the stored type.
		if _, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "renamed", Address: hookURL(3)}); err != nil {
			t.Errorf("replace keeping the name: %v", err)
		}
		// DingTalk's secret: nil keeps, a value sets, "" removes.
		dingSecret2 := "SEC" + strings.Repeat("f", 64)
		for _, c := range []struct {
			secret *string
			want   string
		}{{nil, dingSecret}, {str(dingSecret2), dingSecret2}, {nil, dingSecret2}, {str(""), ""}, {nil, ""}} {
			if _, err := f.r.Replace(ctx, f.ann, Input{ID: ding.ID, Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: c.secret}); err != nil {
				t.Fatalf("replace ding with secret %v: %v", c.secret, err)
			}
			if s, err := f.r.stored(ctx, 10, ding.ID); err != nil || s.Secret != c.want || s.Type != WorkplaceChat {
				t.Errorf("after replace with secret %v: stored %+v, %v; want secret %q", c.secret, s, err, c.want)
			}
		}

		before := f.counts(t)
		snapshot := f.list(t, f.ann, "WEBHOOK")
		for _, c := range []struct {
			p     deskkit.Principal
			in    Input
			check func(error) bool
			what  string
		}{
			{f.ann, Input{Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, func(err error) bool { return isInvalid(err, "id") }, "id required"},
			{f.ann, Input{ID: -3, Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, func(err error) bool { return isInvalid(err, "id") }, "positive id"},
			{f.ann, Input{ID: 999999, Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, isNotFound, "unknown id"},
			{f.ann, Input{ID: eves.ID, Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, isNotFound, "another tenant's id"},
			{f.eve, Input{ID: hook.ID, Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, isNotFound, "another tenant replacing"},
			{f.ann, Input{ID: hook.ID, Type: "EMAIL", Name: "x", Address: "a@example.com"}, func(err error) bool {
				var ie *deskkit.InputError
				return errors.As(err, &ie) && ie.Field == "channelType" &&
					ie.Rule.String() == "cannot change from WEBHOOK to EMAIL; delete the channel and add a new one"
			}, "type change"},
			{f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "mail", Address: hookURL(4)}, func(err error) bool { return err == ErrNameTaken }, "taken name"},
			{f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "x", Address: "ftp://example.com"}, func(err error) bool { return isInvalid(err, "address") }, "bad address"},
			{f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "x", Address: "http://10.1.2.3/"}, func(err error) bool { return errors.Is(err, ErrAddressBlocked) }, "blocked address"},
			{f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "x", Address: hookURL(4), Secret: str("SEC1")}, func(err error) bool { return isInvalid(err, "secret") }, "webhook secret"},
			{deskkit.Principal{TenantID: 10}, Input{ID: hook.ID, Type: "WEBHOOK", Name: "x", Address: hookURL(4)}, func(err error) bool { return err == ErrUnauthenticated }, "no user"},
		} {
			got, err := f.r.Replace(ctx, c.p, c.in)
			if !c.check(err) || !cmp.Equal(got, Channel{}) {
				t.Errorf("%s: %+v, %v", c.what, got, err)
			}
		}
		if diff := cmp.Diff(snapshot, f.list(t, f.ann, "WEBHOOK")); diff != "" {
			t.Errorf("refused replaces changed the list (-before +after):\n%s", diff)
		}
		if s, err := f.r.stored(ctx, 20, eves.ID); err != nil || s.Name != "eve's" || s.Address != hookURL(9) {
			t.Errorf("eve's channel after ann's attempts: %+v, %v", s, err)
		}
		if after := f.counts(t); after != before {
			t.Errorf("refused replaces changed the tables: %+v, then %+v", before, after)
		}
	})
}

func isNotFound(err error) bool { return err == ErrNotFound }

func TestStoreDelete(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		a := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "a", Address: hookURL(1)})
		b := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "b", Address: hookURL(2)})
		e := f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "e", Address: hookURL(3)})
		before := f.counts(t)
		for _, c := range []struct {
			p     deskkit.Principal
			id    int64
			check func(error) bool
		}{
			{f.ann, 0, func(err error) bool { return isInvalid(err, "id") }},
			{f.ann, -1, func(err error) bool { return isInvalid(err, "id") }},
			{f.ann, 999999, isNotFound},
			{f.ann, e.ID, isNotFound},
			{f.eve, a.ID, isNotFound},
			{deskkit.Principal{UserID: 1}, a.ID, func(err error) bool { return err == ErrUnauthenticated }},
		} {
			if err := f.r.Delete(ctx, c.p, c.id); !c.check(err) {
				t.Errorf("delete %d as %+v: %v", c.id, c.p, err)
			}
		}
		if after := f.counts(t); after != before {
			t.Errorf("refused deletes changed the tables: %+v, then %+v", before, after)
		}
		if err := f.r.Delete(ctx, f.bob, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.r.Delete(ctx, f.ann, a.ID); err != ErrNotFound {
			t.Errorf("second delete: %v; want ErrNotFound", err)
		}
		if diff := cmp.Diff([]Channel{b.Channel}, f.list(t, f.ann, "WEBHOOK")); diff != "" {
			t.Errorf("list after delete (-want +got):\n%s", diff)
		}
		if got := f.counts(t); got != (rowCounts{Channels: 2, Counted: 2}) {
			t.Errorf("tables after a delete: %+v; want 2 channels counted", got)
		}
		if _, err := f.r.stored(ctx, 10, a.ID); err != ErrNotFound {
			t.Errorf("stored of a deleted channel: %v", err)
		}
	})
}

func TestStoreUnauthenticated(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		for _, p := range []deskkit.Principal{{}, {UserID: 1}, {TenantID: 10}, {UserID: -1, TenantID: 10}} {
			in := Input{Type: "WEBHOOK", Name: "n", Address: hookURL(1)}
			_, addErr := f.r.Add(ctx, p, in)
			in.ID = 1
			_, replaceErr := f.r.Replace(ctx, p, in)
			_, listErr := f.r.List(ctx, p, "WEBHOOK")
			deleteErr := f.r.Delete(ctx, p, 1)
			for name, err := range map[string]error{"add": addErr, "replace": replaceErr, "list": listErr, "delete": deleteErr} {
				if err != ErrUnauthenticated {
					t.Errorf("%s as %+v: %v; want ErrUnauthenticated", name, p, err)
				}
			}
		}
		if got := f.counts(t); got != (rowCounts{}) {
			t.Errorf("tables hold %+v", got)
		}
	})
}

// A database dump shows neither an address (a robot's URL is its key) nor
// a secret.
func TestStoreNoPlaintextInDatabase(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)})
		f.add(t, f.ann, Input{Type: "WECHAT", Name: "wecom", Address: weComURL})
		f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)})
		f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "private.person@example.com"})
		var dump []struct {
			TenantID   int64   `bun:"tenant_id"`
			Type       string  `bun:"channel_type"`
			Name       string  `bun:"name"`
			AddressEnc string  `bun:"address_enc"`
			SecretEnc  *string `bun:"secret_enc"`
		}
		if err := db.NewRaw("SELECT tenant_id, channel_type, name, address_enc, secret_enc FROM deskkit_channels").Scan(ctx, &dump); err != nil {
			t.Fatal(err)
		}
		if len(dump) != 4 {
			t.Fatalf("%d rows, want 4", len(dump))
		}
		var all strings.Builder
		for _, row := range dump {
			fmt.Fprintf(&all, "%d|%s|%s|%s|", row.TenantID, row.Type, row.Name, row.AddressEnc)
			if row.SecretEnc != nil {
				all.WriteString(*row.SecretEnc)
			}
			if !strings.HasPrefix(row.AddressEnc, "v1:") {
				t.Errorf("%s: address_enc %q is not sealed", row.Name, row.AddressEnc)
			}
		}
		secretB64 := strings.TrimPrefix(hook.Secret, "whsec_")
		for _, leak := range []string{"hooks.example.com", "tok1", "wecom-key-4711", "dingtalk-token-0815", "private.person", dingSecret, dingSecret[3:20], secretB64, secretB64[:16]} {
			if strings.Contains(all.String(), leak) {
				t.Errorf("the table shows %q", leak)
			}
		}
	})
}

// After a rotation, channels sealed under the old secret read with
// PreviousSecret and fail without it; a row copied to another tenant does
// not decrypt there.
func TestStoreRotation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "old", Address: hookURL(1)})
		rotatedSecret := []byte("a brand new server secret of 32+ bytes")

		rotated := f.registry(t, rotatedSecret, storeSecret)
		l, err := rotated.List(ctx, f.ann, "WEBHOOK")
		if err != nil || len(l) != 1 || !cmp.Equal(l[0], hook.Channel) {
			t.Errorf("list after rotation with PreviousSecret = %+v, %v", l, err)
		}
		if s, err := rotated.stored(ctx, 10, hook.ID); err != nil || s.Secret != hook.Secret {
			t.Errorf("stored after rotation = %q, %v; want the old secret", s.Secret, err)
		}
		fresh, err := rotated.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: "new", Address: hookURL(2)})
		if err != nil {
			t.Fatal(err)
		}

		forgot := f.registry(t, rotatedSecret, nil)
		if _, err := forgot.List(ctx, f.ann, "WEBHOOK"); !errors.Is(err, errUnsealable) {
			t.Errorf("list of an old channel without PreviousSecret: %v; want errUnsealable", err)
		}
		if s, err := forgot.stored(ctx, 10, fresh.ID); err != nil || s.Secret != fresh.Secret || s.Address != hookURL(2) {
			t.Errorf("a channel sealed after the rotation: %+v, %v", s, err)
		}

		// A sealed row moved to another tenant: its aad no longer matches.
		if _, err := db.NewRaw("UPDATE deskkit_channels SET tenant_id = 20 WHERE id = ?", fresh.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := forgot.stored(ctx, 20, fresh.ID); !errors.Is(err, errUnsealable) {
			t.Errorf("a row moved to another tenant: %v; want errUnsealable", err)
		}
	})
}

// The senders' helpers: by id, by type and name, by ids; all of one tenant.
func TestStoreStoredHelpers(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)})
		ding := f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)})
		mail := f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "a@example.com, b@example.com"})
		eve := f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(2)})
		wantHook := unflowed(storedChannel{Channel: hook.Channel, Secret: hook.Secret})
		wantDing := unflowed(storedChannel{Channel: ding.Channel, Secret: dingSecret})
		wantMail := unflowed(storedChannel{Channel: on(Channel{ID: mail.ID, Type: Email, Name: "mail", Address: "a@example.com,b@example.com"})})

		if s, err := f.r.stored(ctx, 10, hook.ID); err != nil || !cmp.Equal(s, wantHook) {
			t.Errorf("stored = %+v, %v; want %+v", s, err, wantHook)
		}
		if _, err := f.r.stored(ctx, 10, eve.ID); err != ErrNotFound {
			t.Errorf("stored of another tenant's id: %v", err)
		}
		for _, c := range []struct {
			tenant int64
			t      Type
			name   string
			want   storedChannel
			ok     bool
		}{
			{10, WorkplaceChat, "ding", wantDing, true},
			{10, Webhook, "hook", wantHook, true},
			{20, Webhook, "hook", unflowed(storedChannel{Channel: eve.Channel, Secret: eve.Secret}), true},
			{10, Webhook, "ding", storedChannel{}, false}, // the name is of another type
			{10, Webhook, "Hook", wantHook, true},         // names are unique without case
			{30, Webhook, "hook", storedChannel{}, false},
		} {
			s, ok, err := f.r.storedByName(ctx, c.tenant, c.t, c.name)
			if err != nil || ok != c.ok || !cmp.Equal(s, c.want) {
				t.Errorf("storedByName(%d, %s, %q) = %+v, %v, %v", c.tenant, c.t, c.name, s, ok, err)
			}
		}
		got, err := f.r.storedByIDs(ctx, 10, []int64{mail.ID, eve.ID, 999999, hook.ID, ding.ID, hook.ID})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]storedChannel{wantHook, wantDing, wantMail}, got); diff != "" {
			t.Errorf("storedByIDs (-want +got):\n%s", diff)
		}
		if got, err := f.r.storedByIDs(ctx, 10, nil); err != nil || got == nil || len(got) != 0 {
			t.Errorf("storedByIDs of none = %#v, %v; want an empty slice", got, err)
		}
		if got, err := f.r.storedByIDs(ctx, 20, []int64{hook.ID}); err != nil || len(got) != 0 {
			t.Errorf("storedByIDs of another tenant's ids = %+v, %v", got, err)
		}
	})
}

// Migrate runs again without harm, and the down migration removes every
// table the up migration made.
func TestStoreMigrateTwiceAndDown(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)})
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if l := f.list(t, f.ann, "WEBHOOK"); len(l) != 1 {
			t.Errorf("after a second Migrate: %+v", l)
		}
		d, err := dkmigrate.DialectOf(db)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := dkmigrate.Migrations(d, migrationFiles, foldedNamesStep(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		m := migrate.NewMigrator(db, ms, migrate.WithTableName("deskkit_channel_migrations"),
			migrate.WithLocksTableName("deskkit_channel_migrations_locks"), migrate.WithTemplateData(d))
		if _, err := m.Rollback(ctx); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		for _, table := range []string{"deskkit_channels", "deskkit_channel_counts", "deskkit_channel_limits"} {
			if _, err := db.NewRaw("SELECT 1 FROM ?", bun.Ident(table)).Exec(ctx); err == nil {
				t.Errorf("%s is still there after the rollback", table)
			}
		}
		if err := Migrate(ctx, db); err != nil {
			t.Fatalf("migrate after rollback: %v", err)
		}
		if l := f.list(t, f.ann, "WEBHOOK"); len(l) != 0 {
			t.Errorf("after rollback and migrate: %+v", l)
		}
		// The folded names are back too: a name in another case is taken.
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: hookURL(1)})
		if _, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: "HOOK", Address: hookURL(2)}); err != ErrNameTaken {
			t.Errorf("after rollback and migrate, HOOK beside hook: %v; want ErrNameTaken", err)
		}
	})
}
