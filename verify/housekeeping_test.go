package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/texts"
	"github.com/deskkit/deskkit/verify/verifytest"
)

func count(t *testing.T, db *bun.DB, table string) int {
	t.Helper()
	n, err := db.NewSelect().Table(table).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPurge(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		f.modifyLink(t)
		f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		if n, err := f.v.Purge(ctx); err != nil || n != 0 {
			t.Fatalf("purge of fresh rows: %d, %v", n, err)
		}
		f.clock.Advance(25 * time.Hour)
		n, err := f.v.Purge(ctx)
		if err != nil || n == 0 {
			t.Fatalf("purge a day later: %d, %v", n, err)
		}
		for _, table := range []string{"deskkit_verify_codes", "deskkit_verify_links", "deskkit_verify_limits"} {
			if left := count(t, db, table); left != 0 {
				t.Errorf("%s: %d rows left after a day", table, left)
			}
		}
	})
}

func TestTemplates(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, &verify.Config{
			AppName: "Acme <b>",
			Templates: map[verify.BizKey]texts.Template{
				"SIGNIN": {SMS: "Acme sign-in code {{.Code}} ({{.Minutes}} min)", HTML: "<p>{{.AppName}}: {{.Code}}</p>"},
			},
		})
		f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		sms := f.sink.SMS()[0]
		if want := "Acme sign-in code " + sms.Code + " (5 min)"; sms.Text != want {
			t.Errorf("SMS %q, want %q", sms.Text, want)
		}
		if _, err := f.v.SendEmail(ctx, f.ann, verify.EmailSend{BizKey: "SIGNIN", ToAddress: [][]string{{annEmail}}}); err != nil {
			t.Fatal(err)
		}
		mail := f.sink.Mail()[0]
		if want := "<p>Acme &lt;b&gt;: " + mail.Code + "</p>"; mail.HTML != want {
			t.Errorf("HTML %q, want %q (escaped)", mail.HTML, want)
		}
		if !strings.Contains(mail.Subject, mail.Code) || !strings.Contains(mail.Text, "sign in") {
			t.Errorf("the default subject and text: %q, %q", mail.Subject, mail.Text)
		}
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := verify.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	dir, s := verifytest.NewDirectory(), &verifytest.Sink{}
	for _, c := range []struct {
		name   string
		secret []byte
		cfg    *verify.Config
	}{
		{"short secret", []byte("short"), nil},
		{"code TTL over 10m", secret, &verify.Config{CodeTTL: 11 * time.Minute}},
		{"short previous secret", secret, &verify.Config{PreviousSecret: []byte("x")}},
		{"negative limit", secret, &verify.Config{SendsPerDay: -1}},
		{"negative address limit", secret, &verify.Config{SendsPerAddressPerDay: -1}},
		{"template of an unknown bizKey", secret, &verify.Config{Templates: map[verify.BizKey]texts.Template{"NOPE": {SMS: "x"}}}},
		{"template that does not parse", secret, &verify.Config{Templates: map[verify.BizKey]texts.Template{"SIGNIN": {SMS: "{{.Code"}}}},
		{"template with an unknown field", secret, &verify.Config{Notice: &texts.Template{Text: "{{.Nope}}"}}},
	} {
		if _, err := verify.New(db, dir, s, s, c.secret, c.cfg); err == nil {
			t.Errorf("%s: New succeeded", c.name)
		}
	}
	if _, err := verify.New(db, dir, s, s, secret, nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestUnauthenticated: a principal that names nobody gets nowhere.
func TestUnauthenticated(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := setup(t, db, nil)
	ctx := context.Background()
	nobody := deskkit.Principal{}
	for name, err := range map[string]error{
		"detail": func() error { _, err := f.v.Detail(ctx, nobody); return err }(),
		"send": func() error {
			_, err := f.v.SendSMS(ctx, nobody, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
			return err
		}(),
		"check": func() error {
			_, err := f.v.CheckSMS(ctx, nobody, verify.SMSCheck{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN", Code: "123456"})
			return err
		}(),
		"redeem": func() error { _, err := f.v.Redeem(ctx, nil, nobody, "SIGNIN", "dkl_x"); return err }(),
	} {
		if !errors.Is(err, deskkit.ErrUnauthenticated) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestStorageErrorIsNoLimit: a database that fails while a limit is taken
// is an error of its own, never a rate limit the client would wait out.
func TestStorageErrorIsNoLimit(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		if _, err := db.ExecContext(ctx, "DROP TABLE deskkit_verify_limits"); err != nil {
			t.Fatal(err)
		}
		_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code)
		if err == nil || errors.Is(err, deskkit.ErrRateLimited) {
			t.Errorf("check without the limits table: %v, want a storage error", err)
		}
		_, err = f.v.SendSMS(ctx, f.bob, verify.SMSSend{BizKey: "SIGNIN", Mobile: bobMobile, Country: "CN"})
		if err == nil || errors.Is(err, deskkit.ErrRateLimited) {
			t.Errorf("send without the limits table: %v, want a storage error", err)
		}
	})
}
