package channel

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// carl is a user of ann's tenant who is not an admin.
var carl = deskkit.Principal{UserID: 4, TenantID: 10}

// fakeAuthorizer answers from a table of allowed actions and records what
// it was asked.
type fakeAuthorizer struct {
	CanManageChannelsFn func(ctx context.Context, p deskkit.Principal, a Action) (bool, error)

	mu    sync.Mutex
	asked []Action
}

var _ Authorizer = (*fakeAuthorizer)(nil)

func (f *fakeAuthorizer) CanManageChannels(ctx context.Context, p deskkit.Principal, a Action) (bool, error) {
	f.mu.Lock()
	f.asked = append(f.asked, a)
	f.mu.Unlock()
	return f.CanManageChannelsFn(ctx, p, a)
}

// limitRows counts the rows of the test throttle: a refused test must not
// have taken a unit.
func (f *storeFixture) limitRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.db.NewRaw("SELECT count(*) FROM "+limitsTable).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A user who is not an admin may not add, replace, delete or test a
// channel, and nothing changes when they try; they may list, masked.
func TestAuthorizeDefault(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "ops", Address: hookURL(1)})
		wecom := f.add(t, f.ann, Input{Type: "WECHAT", Name: "wecom", Address: weComURL})
		ding := f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: dingTalkURL, Secret: str(dingSecret)})
		mail := f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "ann@example.com"})
		before, fullBefore := f.counts(t), f.list(t, f.ann, "WEBHOOK")

		if _, err := f.r.Add(ctx, carl, Input{Type: "WEBHOOK", Name: "mine", Address: hookURL(2)}); !errors.Is(err, ErrForbidden) {
			t.Errorf("add as carl: %v, want ErrForbidden", err)
		}
		if _, err := f.r.Replace(ctx, carl, Input{ID: hook.ID, Type: "WEBHOOK", Name: "ops", Address: "https://evil.example.com/steal"}); !errors.Is(err, ErrForbidden) {
			t.Errorf("replace as carl: %v, want ErrForbidden", err)
		}
		if err := f.r.Delete(ctx, carl, hook.ID); !errors.Is(err, ErrForbidden) {
			t.Errorf("delete as carl: %v, want ErrForbidden", err)
		}
		if _, err := f.r.Test(ctx, carl, Input{ID: hook.ID, Type: "WEBHOOK", Name: "ops", Address: hookURL(1)}); !errors.Is(err, ErrForbidden) {
			t.Errorf("test as carl: %v, want ErrForbidden", err)
		}
		if _, err := f.r.Test(ctx, carl, Input{Type: "WEBHOOK", Name: "new", Address: hookURL(3)}); !errors.Is(err, ErrForbidden) {
			t.Errorf("test of a new channel as carl: %v, want ErrForbidden", err)
		}
		if got := f.counts(t); got != before {
			t.Errorf("counts after refusals = %+v, want %+v", got, before)
		}
		if d := cmp.Diff(fullBefore, f.list(t, f.ann, "WEBHOOK")); d != "" {
			t.Errorf("webhooks changed by refused requests (-before +after):\n%s", d)
		}
		if n := f.limitRows(t); n != 0 {
			t.Errorf("a refused test took %d throttle rows", n)
		}

		// Lists: full for the admin, masked for carl.
		for _, c := range []struct {
			typ       string
			id        int64
			full, got string
		}{
			{"WEBHOOK", hook.ID, hookURL(1), "https://hooks.example.com/***"},
			{"ENTERPRISE_CHAT", wecom.ID, weComURL, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***"},
			{"WORKPLACE_CHAT", ding.ID, dingTalkURL, "https://oapi.dingtalk.com/robot/send?access_token=***"},
			{"EMAIL", mail.ID, "ann@example.com", "ann@example.com"},
		} {
			admin := f.list(t, f.ann, c.typ)
			if len(admin) != 1 || admin[0].ID != c.id || admin[0].Address != c.full {
				t.Errorf("admin list %s = %+v, want address %q", c.typ, admin, c.full)
			}
			user := f.list(t, carl, c.typ)
			if len(user) != 1 || user[0].ID != c.id || user[0].Address != c.got {
				t.Errorf("carl's list %s = %+v, want address %q", c.typ, user, c.got)
			}
		}
	})
}

// A host's Authorizer decides for non-admins, per action, before anything
// is written; its error is passed on; admins are never asked about.
func TestAuthorizeCustom(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		down := errors.New("policy service down")
		auth := &fakeAuthorizer{CanManageChannelsFn: func(_ context.Context, p deskkit.Principal, a Action) (bool, error) {
			switch {
			case p.UserID == 99:
				return false, down
			case p == carl:
				return a == ActionAdd || a == ActionReplace || a == ActionViewAddresses, nil
			}
			return false, nil
		}}
		r, err := New(db, storeSecret, nil, &Config{Now: f.clock.Now, Authorizer: auth})
		if err != nil {
			t.Fatal(err)
		}
		a, err := r.Add(ctx, carl, Input{Type: "WEBHOOK", Name: "carl's", Address: hookURL(1)})
		if err != nil {
			t.Fatalf("add as carl, allowed: %v", err)
		}
		if _, err := r.Replace(ctx, carl, Input{ID: a.ID, Type: "WEBHOOK", Name: "carl's", Address: hookURL(2)}); err != nil {
			t.Errorf("replace as carl, allowed: %v", err)
		}
		if err := r.Delete(ctx, carl, a.ID); !errors.Is(err, ErrForbidden) {
			t.Errorf("delete as carl, not allowed: %v, want ErrForbidden", err)
		}
		l, err := r.List(ctx, carl, "WEBHOOK")
		if err != nil || len(l) != 1 || l[0].Address != hookURL(2) {
			t.Errorf("carl's list, addresses allowed = %+v, %v; want %s in full", l, err, hookURL(2))
		}
		dan := deskkit.Principal{UserID: 5, TenantID: 10}
		if l, err := r.List(ctx, dan, "WEBHOOK"); err != nil || len(l) != 1 || l[0].Address != "https://hooks.example.com/***" {
			t.Errorf("dan's list = %+v, %v; want masked", l, err)
		}
		broken := deskkit.Principal{UserID: 99, TenantID: 10}
		if _, err := r.Add(ctx, broken, Input{Type: "WEBHOOK", Name: "x", Address: hookURL(3)}); !errors.Is(err, down) {
			t.Errorf("add with the authorizer down: %v, want its error", err)
		}
		if _, err := r.List(ctx, broken, "WEBHOOK"); !errors.Is(err, down) {
			t.Errorf("list with the authorizer down: %v, want its error", err)
		}
		want := []Action{ActionAdd, ActionReplace, ActionDelete, ActionViewAddresses, ActionViewAddresses, ActionAdd, ActionViewAddresses}
		if d := cmp.Diff(want, auth.asked); d != "" {
			t.Errorf("actions asked (-want +got):\n%s", d)
		}
		auth.asked = nil
		admin := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		if err := r.Delete(ctx, admin, a.ID); err != nil {
			t.Errorf("delete as admin: %v", err)
		}
		if len(auth.asked) != 0 {
			t.Errorf("the authorizer was asked about an admin: %v", auth.asked)
		}
	})
}

func TestMaskAddress(t *testing.T) {
	for _, c := range []struct {
		t       Type
		in, out string
	}{
		{Webhook, "https://hooks.example.com/h/1?token=abc", "https://hooks.example.com/***"},
		{Webhook, "http://hooks.example.com:8080", "http://hooks.example.com:8080/***"},
		{Webhook, "https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/***"},
		{EnterpriseChat, weComURL, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?debug=1&key=k", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?debug=***&key=***"},
		{WorkplaceChat, dingTalkURL, "https://oapi.dingtalk.com/robot/send?access_token=***"},
		{Email, "a@example.com,b@example.com", "a@example.com,b@example.com"},
		{Webhook, "not a url", "***"},
		{"SMS", "https://x.example.com/", "***"},
	} {
		if got := MaskAddress(c.t, c.in); got != c.out {
			t.Errorf("MaskAddress(%s, %q) = %q, want %q", c.t, c.in, got, c.out)
		}
	}
}
