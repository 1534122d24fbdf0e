package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	bunmigrate "github.com/uptrace/bun/migrate"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/internal/outbox"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// noticeRow is a notice's delivery in the outbox, as the tests read it.
type noticeRow struct {
	TargetID int64   `bun:"target_id"`
	Status   string  `bun:"status"`
	Attempts int     `bun:"attempts"`
	Payload  string  `bun:"payload"`
	Error    *string `bun:"last_error"`
}

func notices(t *testing.T, db bun.IDB) []noticeRow {
	t.Helper()
	var rows []noticeRow
	err := db.NewSelect().Table("deskkit_outbox_deliveries").Column("target_id", "status", "attempts", "payload", "last_error").
		Where("kind = 'verify.notice'").OrderExpr("id").Scan(context.Background(), &rows)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// mobileChange prepares the change of ann's mobile number from one number
// to another, as a client does: a code to the current number, checked,
// then a code to the new one.
func (f *fixture) mobileChange(t *testing.T, from, to string) verify.MobileChange {
	t.Helper()
	// The resend interval of both numbers is over.
	f.clock.Advance(2 * time.Minute)
	code := f.sendSMS(t, f.ann, verify.ModifyMobile, from)
	link, err := f.checkSMS(f.ann, verify.ModifyMobile, from, code)
	if err != nil {
		t.Fatal(err)
	}
	code = f.sendSMS(t, f.ann, verify.ModifyMobile, to)
	return verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: to, Country: "CN", Code: code, LinkSecret: link.Secret}
}

// changeMobile changes ann's mobile number through v.
func (f *fixture) changeMobile(t *testing.T, v *verify.Verifier, from, to string) {
	t.Helper()
	if _, err := v.ChangeMobile(context.Background(), f.ann, f.mobileChange(t, from, to)); err != nil {
		t.Fatalf("change %s to %s: %v", from, to, err)
	}
}

// failedNotice changes ann's mobile number with the gateway down for the
// notice: the change's own send of it fails.
func (f *fixture) failedNotice(t *testing.T, from, to string) {
	t.Helper()
	req := f.mobileChange(t, from, to)
	f.sink.FailWith(errGatewayDown)
	defer f.sink.FailWith(nil)
	if _, err := f.v.ChangeMobile(context.Background(), f.ann, req); err != nil {
		t.Fatalf("a failed notice failed the change: %v", err)
	}
}

// noticesTo counts the notices (messages without a code) sent to address.
func noticesTo(sink *verifytest.Sink, address string) int {
	n := 0
	for _, r := range sink.Recipients() {
		if r == "notice:"+address {
			n++
		}
	}
	return n
}

// TestNoticeRetries: a notice whose send fails stays in the outbox and is
// sent again on the notices' schedule (0, 1 min, 5 min, 30 min, 2 h, each
// +-10 %), not before; one that fails five times is dropped, logged.
func TestNoticeRetries(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var logs bytes.Buffer
		f := setup(t, db, &verify.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		// The change's own send fails, then three more on the schedule,
		// each retried after its delay and not before.
		f.failedNotice(t, annMobile, newMobile)
		f.sink.FailWith(errGatewayDown)
		for i, delay := range []time.Duration{0, time.Minute, 5 * time.Minute, 30 * time.Minute} {
			if i > 0 {
				f.clock.Advance(delay * 89 / 100)
				if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
					t.Fatalf("attempt %d: SendNotices: %d, %v", i+1, n, err)
				}
				if got := notices(t, db); len(got) != 1 || got[0].Attempts != i {
					t.Fatalf("before attempt %d is due: %+v", i+1, got)
				}
				f.clock.Advance(delay * 22 / 100)
				if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
					t.Fatalf("attempt %d: SendNotices: %d, %v", i+1, n, err)
				}
			}
			got := notices(t, db)
			if len(got) != 1 || got[0].Attempts != i+1 || got[0].Status != "PENDING" || got[0].Error == nil ||
				!strings.Contains(*got[0].Error, "gateway down") {
				t.Fatalf("after attempt %d: %+v", i+1, got)
			}
		}
		if !strings.Contains(logs.String(), "notice not sent") {
			t.Errorf("the failed notice was not logged: %s", logs.String())
		}
		// The fifth attempt, 2 h later, works.
		f.sink.FailWith(nil)
		f.clock.Advance(2*time.Hour + 12*time.Minute)
		if n, err := f.v.SendNotices(ctx); err != nil || n != 1 {
			t.Fatalf("the last attempt: SendNotices: %d, %v", n, err)
		}
		if got := notices(t, db); got[0].Status != "SUCCEEDED" || got[0].Attempts != 5 {
			t.Errorf("after the last attempt: %+v", got)
		}
		if n := noticesTo(f.sink, annMobile); n != 1 {
			t.Errorf("%d notices to the old number, want 1", n)
		}

		// A notice that fails five times is dropped, with an error logged.
		f.failedNotice(t, newMobile, annMobile)
		f.sink.FailWith(errGatewayDown)
		for range 4 {
			f.clock.Advance(3 * time.Hour)
			if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
				t.Fatalf("SendNotices: %d, %v", n, err)
			}
		}
		if got := notices(t, db); got[1].Status != "FAILED" || got[1].Attempts != 5 {
			t.Errorf("after five failures: %+v", got[1])
		}
		if !strings.Contains(logs.String(), "notice dropped after failed attempts") {
			t.Errorf("the dropped notice was not logged: %s", logs.String())
		}
		f.sink.FailWith(nil)
		f.clock.Advance(3 * time.Hour)
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Errorf("a dropped notice was sent: %d, %v", n, err)
		}
	})
}

// smtpRefusal is an SMTP server's reply as go-mail's *SendError gives it
// (the smtp package's errors): a code, temporary when it is 4xx.
type smtpRefusal int

func (e smtpRefusal) Error() string  { return fmt.Sprintf("SMTP %d", int(e)) }
func (e smtpRefusal) ErrorCode() int { return int(e) }
func (e smtpRefusal) IsTemp() bool   { return int(e)/100 == 4 }

// TestNoticeFinalFailure: a notice whose sender refuses it for good (a
// template provider's error that is not Retryable, an SMTP 5xx) is not
// retried: its first failure ends it FAILED, with the cause recorded and
// logged; one that is Retryable (or says nothing of itself) stays pending.
func TestNoticeFinalFailure(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var logs bytes.Buffer
		f := setup(t, db, &verify.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		numbers := []string{annMobile, newMobile}
		for i, tt := range []struct {
			name   string
			err    error
			status string
			inErr  string // in the recorded error
		}{
			{"a refused template", &sms.Error{Provider: "tencent", Status: 200, Code: "FailedOperation.TemplateIncorrectOrUnapproved", Message: "template not approved"},
				"FAILED", "refused the notice for good, not retried: verify: tencent SMS answered 200 OK: FailedOperation.TemplateIncorrectOrUnapproved"},
			{"a refused key", &sms.Error{Provider: "aliyun", Status: 400, Code: "SignatureDoesNotMatch"}, "FAILED", "SignatureDoesNotMatch"},
			{"an SMTP 550", smtpRefusal(550), "FAILED", "SMTP 550"},
			{"a retryable provider error", &sms.Error{Provider: "aliyun", Status: 200, Code: "isp.SYSTEM_ERROR", Retryable: true}, "PENDING", "isp.SYSTEM_ERROR"},
			{"an SMTP 451", smtpRefusal(451), "PENDING", "SMTP 451"},
			{"an error that says nothing", errGatewayDown, "PENDING", "gateway down"},
		} {
			req := f.mobileChange(t, numbers[i%2], numbers[(i+1)%2])
			f.sink.FailWith(tt.err)
			if _, err := f.v.ChangeMobile(ctx, f.ann, req); err != nil {
				t.Fatalf("%s: the change failed: %v", tt.name, err)
			}
			f.sink.FailWith(nil)
			got := notices(t, db)[i]
			if got.Status != tt.status || got.Attempts != 1 || got.Error == nil || !strings.Contains(*got.Error, tt.inErr) {
				t.Errorf("%s: %+v (error %v), want %s after 1 attempt, the error naming %q", tt.name, got, deref(got.Error), tt.status, tt.inErr)
			}
		}
		if n := strings.Count(logs.String(), "notice dropped: the sender refused it for good"); n != 3 {
			t.Errorf("%d notices logged as refused for good, want 3:\n%s", n, logs.String())
		}
		// The refused ones are never tried again; the others are, once due.
		f.clock.Advance(3 * time.Hour)
		if n, err := f.v.SendNotices(ctx); err != nil || n != 3 {
			t.Fatalf("SendNotices: %d, %v; want the 3 pending ones sent", n, err)
		}
		for i, got := range notices(t, db) {
			if want := map[bool]string{true: "FAILED", false: "SUCCEEDED"}[i < 3]; got.Status != want {
				t.Errorf("notice %d after SendNotices: %+v, want %s", i, got, want)
			}
		}
	})
}

// TestNoticeThrottled: a notice its provider throttled is retried no
// sooner than the provider asked (SMSError.RetryAfter, up to 2 hours),
// even when the schedule's next delay is shorter.
func TestNoticeThrottled(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		req := f.mobileChange(t, annMobile, newMobile)
		f.sink.FailWith(&sms.Error{Provider: "tencent", Status: 200, Code: "LimitExceeded.PhoneNumberOneHourLimit",
			Retryable: true, Throttled: true, RetryAfter: time.Hour})
		if _, err := f.v.ChangeMobile(ctx, f.ann, req); err != nil {
			t.Fatal(err)
		}
		f.sink.FailWith(nil)
		// The schedule's next delay (1 minute) is over; the provider's
		// hour is not.
		f.clock.Advance(59 * time.Minute)
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Fatalf("before the provider's hour: SendNotices: %d, %v", n, err)
		}
		f.clock.Advance(time.Minute)
		if n, err := f.v.SendNotices(ctx); err != nil || n != 1 {
			t.Fatalf("after the provider's hour: SendNotices: %d, %v", n, err)
		}
		if got := notices(t, db); got[0].Status != "SUCCEEDED" || got[0].Attempts != 2 {
			t.Errorf("the notice: %+v", got[0])
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestNoticeContent: the notice goes to the old address, says the masked
// new one, and carries only what it needs.
func TestNoticeContent(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		f.changeMobile(t, f.v, annMobile, newMobile)
		got := notices(t, db)
		if len(got) != 1 || got[0].TargetID != 1 {
			t.Fatalf("the outbox: %+v", got)
		}
		// Sent, the notice's payload (the old address in clear) is not
		// kept: the outbox drops a finished delivery's payload.
		if got[0].Payload != "" {
			t.Errorf("payload kept after the notice was sent: %s", got[0].Payload)
		}
		// Without Run, the change sent it; nothing is left to send.
		if got[0].Status != "SUCCEEDED" || got[0].Attempts != 1 {
			t.Errorf("the notice after the change: %+v", got[0])
		}
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Fatalf("SendNotices: %d, %v", n, err)
		}
		sms := f.sink.SMS()
		wantSMS := verify.SMS{To: annMobile, BizKey: verify.ModifyMobile, NewAddress: "+86*******7000",
			Text: "deskkit: the mobile number of your account was changed to +86*******7000. If this was not you, contact your administrator."}
		if diff := cmp.Diff(wantSMS, sms[len(sms)-1]); diff != "" {
			t.Errorf("notice (-want +got):\n%s", diff)
		}
	})
}

// TestNoticeOnce: one notice, two Verifiers over one database (two
// replicas, each running its worker, each with a pool of its own on
// PostgreSQL) and SendNotices called over and over meanwhile: the old
// address gets exactly one message. Three rounds, the second made through
// a third Verifier that sends the notice itself.
func TestNoticeOnce(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		other := db
		if db.Dialect().Name().String() == "pg" {
			var schema string
			if err := db.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
				t.Fatal(err)
			}
			other = dbtest.OpenSchema(dbtest.RequirePostgres(t), schema)
			t.Cleanup(func() { other.Close() })
		}
		v2, err := verify.New(other, f.dir, f.sink, f.sink, secret, &verify.Config{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		// Before the workers start: nothing stale is due.
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Fatalf("SendNotices: %d, %v", n, err)
		}

		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		t.Cleanup(func() { stop(); wg.Wait() })
		for _, v := range []*verify.Verifier{f.v, v2} {
			wg.Go(func() {
				if err := v.Run(runCtx); err != nil {
					t.Errorf("Run: %v", err)
				}
			})
		}
		// The host's own ticker, as fast as it can go.
		var byTicker int
		wg.Go(func() {
			for runCtx.Err() == nil {
				n, err := v2.SendNotices(runCtx)
				if err != nil && runCtx.Err() == nil {
					t.Errorf("SendNotices: %v", err)
				}
				byTicker += n
			}
		})

		rounds := [][2]string{{annMobile, newMobile}, {newMobile, annMobile}, {annMobile, newMobile}}
		// Round 2 goes through a Verifier that does not run Run: the
		// change sends its notice itself, as the workers wake for it.
		noRun := f.newVerifier(t, secret, nil)
		for i, r := range rounds {
			via := f.v
			if i == 1 {
				via = noRun
			}
			f.changeMobile(t, via, r[0], r[1])
			waitFor(t, func() bool {
				rows := notices(t, db)
				return len(rows) == i+1 && rows[i].Status == "SUCCEEDED"
			})
		}
		stop()
		wg.Wait()

		// annMobile was the old number of rounds 1 and 3, newMobile of 2.
		if a, n := noticesTo(f.sink, annMobile), noticesTo(f.sink, newMobile); a != 2 || n != 1 {
			t.Errorf("notices: %d to %s, want 2; %d to %s, want 1", a, annMobile, n, newMobile)
		}
		for i, n := range notices(t, db) {
			if n.Status != "SUCCEEDED" || n.Attempts != 1 {
				t.Errorf("notice %d: %+v, want SUCCEEDED after 1 attempt", i+1, n)
			}
		}
		t.Logf("the ticker sent %d of %d", byTicker, len(rounds))
	})
}

// waitFor waits, up to 10 s, until cond holds: for what other goroutines
// do, not for time to pass (the clock is the test's).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNoticeMigration: notices left in the old deskkit_verify_notices
// table move into the outbox, their attempts counted, and go out once;
// the table is dropped, and rolling the migration back brings unsent
// notices back into it.
func TestNoticeMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		// The schema as it was, before the outbox.
		first := fstest.MapFS{}
		for _, name := range []string{"20261122000001_create_verify.tx.up.sql", "20261122000001_create_verify.tx.down.sql"} {
			b, err := os.ReadFile("migrations/" + name)
			if err != nil {
				t.Fatal(err)
			}
			first[name] = &fstest.MapFile{Data: b}
		}
		if err := migrate.Run(ctx, db, "deskkit_verify_migrations", first); err != nil {
			t.Fatal(err)
		}
		created := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC).UnixMilli()
		if _, err := db.ExecContext(ctx, `INSERT INTO deskkit_verify_notices (tenant_id, user_id, kind, biz_key, address, new_address, created_at_ms, attempts)
VALUES (10, 1, 'SMS', 'MODIFY_MOBILE', '+8613800138000', '+86*******7000', ?, 0),
       (10, 1, 'EMAIL', 'MODIFY_EMAIL', 'ann@example.com', 'a***@example.org', ?, 3)`, created, created); err != nil {
			t.Fatal(err)
		}

		f := setup(t, db, nil) // runs verify.Migrate
		if _, err := db.NewSelect().Table("deskkit_verify_notices").Count(ctx); err == nil {
			t.Error("deskkit_verify_notices is still there")
		}
		got := notices(t, db)
		if len(got) != 2 || got[0].Attempts != 0 || got[1].Attempts != 3 || got[0].Status != "PENDING" {
			t.Fatalf("the outbox after the migration: %+v", got)
		}
		if n, err := f.v.SendNotices(ctx); err != nil || n != 2 {
			t.Fatalf("SendNotices: %d, %v", n, err)
		}
		sms, mail := f.sink.SMS(), f.sink.Mail()
		if len(sms) != 1 || sms[0].To != annMobile || !strings.Contains(sms[0].Text, "+86*******7000") {
			t.Errorf("the SMS notice: %+v", sms)
		}
		if len(mail) != 1 || mail[0].To != annEmail || !strings.Contains(mail[0].Text, "a***@example.org") ||
			mail[0].BizKey != string(verify.ModifyEmail) {
			t.Errorf("the e-mail notice: %+v", mail)
		}
		if got := notices(t, db); got[0].Attempts != 1 || got[1].Attempts != 4 || got[1].Status != "SUCCEEDED" {
			t.Errorf("the outbox after sending: %+v", got)
		}
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Errorf("SendNotices again: %d, %v", n, err)
		}

		// Rolled back, the table holds the notices not sent yet.
		f.failedNotice(t, annMobile, newMobile)
		d, err := migrate.DialectOf(db)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := migrate.Migrations(d, os.DirFS("migrations"))
		if err != nil {
			t.Fatal(err)
		}
		m := newMigrator(db, ms, d)
		if _, err := m.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		var back []struct {
			UserID     int64  `bun:"user_id"`
			Address    string `bun:"address"`
			NewAddress string `bun:"new_address"`
			BizKey     string `bun:"biz_key"`
		}
		if err := db.NewSelect().Table("deskkit_verify_notices").Column("user_id", "address", "new_address", "biz_key").Scan(ctx, &back); err != nil {
			t.Fatal(err)
		}
		if len(back) != 1 || back[0].Address != annMobile || back[0].NewAddress != "+86*******7000" || back[0].UserID != 1 ||
			back[0].BizKey != "MODIFY_MOBILE" {
			t.Errorf("rolled back: %+v", back)
		}
		if got := notices(t, db); len(got) != 0 {
			t.Errorf("the outbox still has notices after the rollback: %+v", got)
		}
	})
}

func newMigrator(db *bun.DB, ms *bunmigrate.Migrations, d migrate.Dialect) *bunmigrate.Migrator {
	return bunmigrate.NewMigrator(db, ms,
		bunmigrate.WithTableName("deskkit_verify_migrations"),
		bunmigrate.WithLocksTableName("deskkit_verify_migrations_locks"),
		bunmigrate.WithTemplateData(d))
}

// TestPurgeNotices: Purge deletes notices sent or dropped a day ago, with
// their attempts and events (their payload is an address), and nothing
// else of the outbox.
func TestPurgeNotices(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		f.changeMobile(t, f.v, annMobile, newMobile)
		f.failedNotice(t, newMobile, annMobile)
		// Another kind's delivery, finished long ago.
		now := f.clock.Now()
		if _, _, err := outbox.NewEnqueuer(db, "channel", outbox.OneTarget).Enqueue(ctx, db,
			outbox.Event{TenantID: 10, ID: "msg_other", Type: "task.trashed", Time: now, Title: "t"}, []any{int64(5), nil}, now, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "UPDATE deskkit_outbox_deliveries SET status = 'SUCCEEDED', due_at_ms = NULL, finished_at_ms = 0 WHERE kind = 'channel'"); err != nil {
			t.Fatal(err)
		}
		tables := func() [3]int {
			return [3]int{count(t, db, "deskkit_outbox_events"), count(t, db, "deskkit_outbox_deliveries"), count(t, db, "deskkit_outbox_attempts")}
		}
		if got := tables(); got != [3]int{3, 3, 2} {
			t.Fatalf("events, deliveries, attempts: %v", got)
		}
		f.clock.Advance(23 * time.Hour)
		if _, err := f.v.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if got := tables(); got != [3]int{3, 3, 2} {
			t.Fatalf("after a purge within the day: %v", got)
		}
		f.clock.Advance(2 * time.Hour)
		if _, err := f.v.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		// The sent notice went; the pending one and the channel's stay.
		if got := tables(); got != [3]int{2, 2, 1} {
			t.Errorf("after a purge a day later: %v", got)
		}
		got := notices(t, db)
		if len(got) != 1 || got[0].Status != "PENDING" {
			t.Errorf("notices left: %+v", got)
		}
	})
}
