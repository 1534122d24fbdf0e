package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// tablePublisher publishes an event by inserting a row through the db it
// is given, as a real publisher does: the row exists exactly when the
// caller's transaction commits.
type tablePublisher struct {
	fail  error // returned after the insert, when set
	calls int
}

var _ deskkit.Publisher = (*tablePublisher)(nil)

func (p *tablePublisher) Publish(ctx context.Context, db bun.IDB, tenantID int64, ev deskkit.Event) error {
	p.calls++
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	title, text := ev.Message(nil, language.English)
	if _, err := db.ExecContext(ctx, "INSERT INTO test_events (tenant_id, event_id, event_type, title, body, data) VALUES (?, ?, ?, ?, ?, ?)",
		tenantID, ev.ID, ev.Type, title, text, string(data)); err != nil {
		return err
	}
	return p.fail
}

type publishedRow struct {
	TenantID int64  `bun:"tenant_id"`
	EventID  string `bun:"event_id"`
	Type     string `bun:"event_type"`
	Title    string `bun:"title"`
	Body     string `bun:"body"`
	Data     string `bun:"data"`
}

func published(t *testing.T, db *bun.DB) []publishedRow {
	t.Helper()
	var rows []publishedRow
	if err := db.NewSelect().Table("test_events").Column("tenant_id", "event_id", "event_type", "title", "body", "data").
		OrderExpr("event_type, title").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// data decodes an event's data for cmp.
func data(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("data %s: %v", s, err)
	}
	return m
}

func setupPublisher(t *testing.T, db *bun.DB) (*fixture, *tablePublisher) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `CREATE TABLE test_events (tenant_id BIGINT NOT NULL, event_id VARCHAR(100) NOT NULL,
  event_type VARCHAR(100) NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL, data TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	pub := &tablePublisher{}
	f := setup(t, db, &verify.Config{Publisher: pub})
	return f, pub
}

// TestChangeEvents: a committed change publishes its event inside the
// change's transaction, with the data documented by EventTypes.
func TestChangeEvents(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f, _ := setupPublisher(t, db)
		dora := f.dir.Add(verify.User{ID: 4, TenantID: 10, Username: "dora", FullName: "Dora Diaz", Email: "dora@example.com"})

		// A modify by a user without a display name: the actor's name is "".
		f.changeMobile(t, f.v, annMobile, newMobile)
		// A bind by a user who has one: no old address.
		if _, err := f.v.SendSMS(ctx, dora, verify.SMSSend{BizKey: verify.BindMobile, Mobile: "13600136000", Country: "CN"}); err != nil {
			t.Fatal(err)
		}
		code := f.sink.LastCode("+8613600136000")
		if _, err := f.v.ChangeMobile(ctx, dora, verify.MobileChange{BizKey: verify.BindMobile, Mobile: "13600136000", Country: "CN", Code: code}); err != nil {
			t.Fatal(err)
		}
		// An e-mail change.
		code = f.sendEmail(t, dora, verify.ModifyEmail, "dora@example.com")
		link, err := f.v.CheckEmail(ctx, dora, verify.EmailCheck{BizKey: verify.ModifyEmail, Email: "dora@example.com", Code: code})
		if err != nil {
			t.Fatal(err)
		}
		code = f.sendEmail(t, dora, verify.ModifyEmail, "d.diaz@example.org")
		if _, err := f.v.ChangeEmail(ctx, dora, verify.EmailChange{BizKey: verify.ModifyEmail, Email: "d.diaz@example.org", Code: code, LinkSecret: link.Secret}); err != nil {
			t.Fatal(err)
		}

		rows := published(t, db)
		type event struct {
			Tenant      int64
			Type, Title string
			Text        string
			Data        map[string]any
		}
		var got []event
		ids := map[string]bool{}
		for _, r := range rows {
			got = append(got, event{r.TenantID, r.Type, r.Title, r.Body, data(t, r.Data)})
			if !strings.HasPrefix(r.EventID, "msg_") || ids[r.EventID] {
				t.Errorf("event id %q: want a new msg_ id", r.EventID)
			}
			ids[r.EventID] = true
		}
		want := []event{{
			Tenant: 10, Type: "user.email.changed", Title: "Dora Diaz changed their e-mail address",
			Text: "Dora Diaz changed their e-mail address from d***@example.com to d***@example.org.",
			Data: map[string]any{"tenantId": 10.0, "actor": map[string]any{"id": 4.0, "name": "Dora Diaz"}, "userId": 4.0,
				"oldAddress": "d***@example.com", "newAddress": "d***@example.org"},
		}, {
			Tenant: 10, Type: "user.mobile.changed", Title: "Dora Diaz added a mobile number",
			Text: "Dora Diaz added the mobile number +86*******6000.",
			Data: map[string]any{"tenantId": 10.0, "actor": map[string]any{"id": 4.0, "name": "Dora Diaz"}, "userId": 4.0,
				"oldAddress": nil, "newAddress": "+86*******6000"},
		}, {
			Tenant: 10, Type: "user.mobile.changed", Title: "ann changed their mobile number",
			Text: "ann changed their mobile number from +86*******8000 to +86*******7000.",
			Data: map[string]any{"tenantId": 10.0, "actor": map[string]any{"id": 1.0, "name": ""}, "userId": 1.0,
				"oldAddress": "+86*******8000", "newAddress": "+86*******7000"},
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}

		// The catalogue's examples have the keys of the real data.
		for _, et := range verify.EventTypes() {
			b, err := json.Marshal(et.Example)
			if err != nil {
				t.Fatal(err)
			}
			keys := func(m map[string]any) []string {
				var out []string
				for k := range m {
					out = append(out, k)
				}
				return out
			}
			if diff := cmp.Diff(keys(want[2].Data), keys(data(t, string(b))), cmpSorted); diff != "" || et.About.IsZero() {
				t.Errorf("%s: example keys (-want +got):\n%s", et.Name, diff)
			}
		}
		if got := len(verify.EventTypes()); got != 2 {
			t.Errorf("%d event types, want 2", got)
		}
	})
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestChangeEventRolledBack: a change that fails publishes nothing and
// writes nothing (not the address, not the notice; the code and secret
// stay unspent, so the same change goes through afterwards), whether the
// publisher refuses the event or the change rolls back after the event
// was published (the Directory refuses the address, taken meanwhile).
func TestChangeEventRolledBack(t *testing.T) {
	refused := errors.New("unknown event type")
	for _, tc := range []struct {
		name    string
		arrange func(f *fixture, pub *tablePublisher)
		undo    func(f *fixture, pub *tablePublisher)
		want    error
	}{{
		name:    "publisher refuses",
		arrange: func(_ *fixture, pub *tablePublisher) { pub.fail = refused },
		undo:    func(_ *fixture, pub *tablePublisher) { pub.fail = nil },
		want:    refused,
	}, {
		name: "address taken after the publish",
		arrange: func(f *fixture, _ *tablePublisher) {
			f.dir.WhenSetting(func() { f.dir.SetAddress(2, verify.KindSMS, newMobile) })
		},
		undo: func(f *fixture, _ *tablePublisher) {
			f.dir.WhenSetting(nil)
			f.dir.SetAddress(2, verify.KindSMS, bobMobile)
		},
		want: deskkit.ErrConflict,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
				ctx := context.Background()
				f, pub := setupPublisher(t, db)
				link := f.modifyLink(t)
				code := f.sendSMS(t, f.ann, verify.ModifyMobile, newMobile)
				change := verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: newMobile, Country: "CN", Code: code, LinkSecret: link}
				tc.arrange(f, pub)
				if _, err := f.v.ChangeMobile(ctx, f.ann, change); !errors.Is(err, tc.want) {
					t.Fatalf("change: %v, want %v", err, tc.want)
				}
				if got := f.dir.Get(1).Mobile; got != annMobile {
					t.Errorf("mobile %s after a failed change", got)
				}
				// The event was written, and went with the rollback.
				if pub.calls != 1 {
					t.Errorf("Publish called %d times, want 1", pub.calls)
				}
				if got := published(t, db); len(got) != 0 {
					t.Errorf("a failed change published %+v", got)
				}
				if got := notices(t, db); len(got) != 0 {
					t.Errorf("a failed change left notices %+v", got)
				}
				tc.undo(f, pub)
				if _, err := f.v.ChangeMobile(ctx, f.ann, change); err != nil {
					t.Fatalf("the same change again: %v", err)
				}
				if got := published(t, db); len(got) != 1 {
					t.Errorf("%d events after the change, want 1", len(got))
				}
			})
		})
	}
}

// sendEmail sends a code by e-mail and returns it.
func (f *fixture) sendEmail(t *testing.T, p deskkit.Principal, b verify.BizKey, email string) string {
	t.Helper()
	if _, err := f.v.SendEmail(context.Background(), p, verify.EmailSend{BizKey: b, ToAddress: [][]string{{email}}}); err != nil {
		t.Fatalf("send %s to %s: %v", b, email, err)
	}
	code := f.sink.LastCode(email)
	if len(code) != 6 {
		t.Fatalf("code %q sent to %s is not 6 digits", code, email)
	}
	return code
}
