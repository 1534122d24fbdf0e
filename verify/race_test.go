package verify_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// parallel runs fn n times at once, released together, and returns the
// errors.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// tally counts errors by the sentinel they match; nil counts as "ok".
func tally(t *testing.T, errs []error, sentinels map[string]error) map[string]int {
	t.Helper()
	out := map[string]int{}
next:
	for _, err := range errs {
		if err == nil {
			out["ok"]++
			continue
		}
		for name, s := range sentinels {
			if errors.Is(err, s) {
				out[name]++
				continue next
			}
		}
		t.Errorf("unexpected error: %v", err)
	}
	return out
}

func TestParallelChecks(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		errs := parallel(20, func(int) error {
			_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code)
			return err
		})
		got := tally(t, errs, map[string]error{"missing": verify.ErrCodeMissing})
		if got["ok"] != 1 || got["missing"] != 19 {
			t.Errorf("20 parallel checks of one code: %v, want exactly one success", got)
		}
	})
}

// TestParallelBindPairs: the same BIND_MOBILE pair of a checked code and
// its link secret, sent 10 times at once, binds once; the others are
// refused (the secret spent, or the number bound by then).
func TestParallelBindPairs(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.carl, verify.BindMobile, newMobile)
		link, err := f.checkSMS(f.carl, verify.BindMobile, newMobile, code)
		if err != nil {
			t.Fatal(err)
		}
		errs := parallel(10, func(int) error {
			_, err := f.v.ChangeMobile(context.Background(), f.carl, verify.MobileChange{BizKey: verify.BindMobile, Mobile: newMobile, Country: "CN", Code: code, LinkSecret: link.Secret})
			return err
		})
		got := tally(t, errs, map[string]error{"spent": deskkit.ErrInvalid, "bound": verify.ErrAlreadyBound})
		if got["ok"] != 1 || got["spent"]+got["bound"] != 9 {
			t.Errorf("10 parallel binds with one pair: %v, want exactly one success", got)
		}
		if m := f.dir.Get(f.carl.UserID).Mobile; m != newMobile {
			t.Errorf("Carl's number %q", m)
		}
	})
}

func TestParallelWrongGuesses(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		errs := parallel(20, func(int) error {
			_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code))
			return err
		})
		got := tally(t, errs, map[string]error{"wrong": verify.ErrCodeWrong, "exhausted": verify.ErrCodeExhausted})
		if got["wrong"] != verify.MaxAttempts || got["exhausted"] != 20-verify.MaxAttempts {
			t.Errorf("20 parallel wrong guesses: %v, want %d compared", got, verify.MaxAttempts)
		}
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeExhausted) {
			t.Errorf("the right code after: %v", err)
		}
	})
}

func TestParallelSends(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		errs := parallel(10, func(int) error {
			_, err := f.v.SendSMS(context.Background(), f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
			return err
		})
		got := tally(t, errs, map[string]error{"limited": deskkit.ErrRateLimited})
		if got["ok"] != 1 || got["limited"] != 9 || f.sink.Sent() != 1 {
			t.Errorf("10 parallel sends: %v, %d sent; want one", got, f.sink.Sent())
		}
	})
}

// TestReplicas: two Verifiers, each with its own pool, over one PostgreSQL
// database, as two server replicas are: every limit holds across them.
func TestReplicas(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(context.Background(), &schema); err != nil {
		t.Fatal(err)
	}
	other := dbtest.OpenSchema(dbtest.RequirePostgres(t), schema)
	t.Cleanup(func() { other.Close() })

	f := setup(t, db, &verify.Config{SendsPerHour: 3, SendsPerDay: 4, FailuresPerDay: 6})
	g := &fixture{dir: f.dir, sink: f.sink, clock: f.clock, db: other, ann: f.ann, bob: f.bob}
	g.v = g.newVerifier(t, secret, &verify.Config{SendsPerHour: 3, SendsPerDay: 4, FailuresPerDay: 6})
	replicas := []*fixture{f, g}
	ctx := context.Background()
	send := func(r *fixture, b verify.BizKey) error {
		_, err := r.v.SendSMS(ctx, r.ann, verify.SMSSend{BizKey: b, Mobile: annMobile, Country: "CN"})
		return err
	}

	// The interval: parallel sends through both, one goes out.
	errs := parallel(10, func(i int) error { return send(replicas[i%2], "SIGNIN") })
	if got := tally(t, errs, map[string]error{"limited": deskkit.ErrRateLimited}); got["ok"] != 1 {
		t.Errorf("parallel sends through two replicas: %v", got)
	}
	// The address's hour: 3 across both.
	if err := send(g, "SIGNUP"); err != nil {
		t.Fatal(err)
	}
	if err := send(f, "PASSWORD_UPDATE"); err != nil {
		t.Fatal(err)
	}
	if err := send(g, "SIGN_CANCEL"); !errors.Is(err, deskkit.ErrRateLimited) {
		t.Errorf("4th send to one address across replicas: %v", err)
	}
	// One code, checked through both at once: one success.
	code := f.sink.LastCode(annMobile)
	errs = parallel(10, func(i int) error {
		_, err := replicas[i%2].checkSMS(f.ann, "PASSWORD_UPDATE", annMobile, code)
		return err
	})
	if got := tally(t, errs, map[string]error{"missing": verify.ErrCodeMissing, "wrong": verify.ErrCodeWrong}); got["ok"] != 1 {
		t.Errorf("parallel checks through two replicas: %v", got)
	}
	// Wrong guesses through both never pass MaxAttempts per code...
	code = f.sink.LastCode(annMobile) // the SIGNUP code
	errs = parallel(10, func(i int) error {
		_, err := replicas[i%2].checkSMS(f.ann, "SIGNUP", annMobile, wrong(code))
		return err
	})
	got := tally(t, errs, map[string]error{"wrong": verify.ErrCodeWrong, "exhausted": verify.ErrCodeExhausted})
	if got["wrong"] != verify.MaxAttempts {
		t.Errorf("parallel wrong guesses through two replicas: %v", got)
	}
	// ...nor the user's failures per day (6: 5 counted above, 1 left).
	f.clock.Advance(time.Hour)
	if err := send(f, "SIGNIN"); err != nil {
		t.Fatal(err)
	}
	code = f.sink.LastCode(annMobile)
	errs = parallel(6, func(i int) error {
		_, err := replicas[i%2].checkSMS(f.ann, "SIGNIN", annMobile, wrong(code))
		return err
	})
	got = tally(t, errs, map[string]error{"wrong": verify.ErrCodeWrong, "failures": verify.ErrTooManyFailures})
	if got["wrong"] != 1 || got["failures"] != 5 {
		t.Errorf("failures across replicas: %v, want 1 more wrong then refusals", got)
	}
	// The user's day: 4 sends (one of them the SIGNIN above) across both.
	if err := send(g, "SIGNUP"); !errors.Is(err, deskkit.ErrRateLimited) {
		t.Errorf("5th send of a 4-a-day user across replicas: %v", err)
	}
}

func TestKeyRotation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		newSecret := []byte(strings.Repeat("n", 40))
		f.v = f.newVerifier(t, newSecret, nil)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeWrong) {
			t.Fatalf("a code of the old secret, the old secret dropped: %v", err)
		}
		f.v = f.newVerifier(t, newSecret, &verify.Config{PreviousSecret: secret})
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
			t.Fatalf("a code of the previous secret: %v", err)
		}
	})
}

// TestNothingInClear: no code or link secret appears in the database or in
// the log, even when sends fail and notices are logged.
func TestNothingInClear(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var logs bytes.Buffer
		f := setup(t, db, &verify.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		var secrets []string
		link := f.modifyLink(t)
		secrets = append(secrets, link, f.sink.LastCode(annMobile))
		code := f.sendSMS(t, f.ann, verify.ModifyMobile, newMobile)
		secrets = append(secrets, code)
		f.sink.FailWith(errGatewayDown) // the notice fails and is logged
		if _, err := f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: newMobile, Country: "CN", Code: code, LinkSecret: link}); err != nil {
			t.Fatal(err)
		}
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Fatalf("SendNotices with the gateway down: %d, %v", n, err)
		}
		f.clock.Advance(time.Minute)
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: newMobile, Country: "CN"}); !errors.Is(err, verify.ErrSendFailed) {
			t.Fatalf("send with the gateway down: %v", err)
		}
		f.sink.FailWith(nil)
		code = f.sendSMS(t, f.bob, "SIGNIN", bobMobile)
		secrets = append(secrets, code)
		if !strings.Contains(logs.String(), "notice not sent") {
			t.Errorf("the failed notice was not logged: %s", logs.String())
		}

		var dump strings.Builder
		for _, table := range []string{"deskkit_verify_codes", "deskkit_verify_links", "deskkit_verify_limits",
			"deskkit_outbox_events", "deskkit_outbox_deliveries", "deskkit_outbox_attempts"} {
			rows, err := db.QueryContext(ctx, "SELECT * FROM "+table)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					switch v := v.(type) {
					case []byte:
						dump.Write(v)
					case string:
						dump.WriteString(v)
					}
					dump.WriteByte('|')
				}
			}
			rows.Close()
		}
		if !strings.Contains(dump.String(), "+86*******7000") {
			t.Fatalf("the dump misses the notice row; is it empty? %s", dump.String())
		}
		for _, s := range secrets {
			if s == "" {
				t.Fatal("a secret of the test is empty")
			}
			// Whole words only: a hex hash or a timestamp may hold any
			// six digits in a row.
			word := regexp.MustCompile(`\b` + regexp.QuoteMeta(s) + `\b`)
			if word.MatchString(dump.String()) {
				t.Errorf("%q is in the database in clear", s)
			}
			if word.MatchString(logs.String()) {
				t.Errorf("%q is in the log", s)
			}
		}
	})
}
