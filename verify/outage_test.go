package verify_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

var errOutage = errors.New("test: the database is away")

// outage is a bun query hook that fails every statement of the database,
// BEGIN and COMMIT included, while down is set: the database gone away,
// on either backend.
type outage struct{ down atomic.Bool }

var _ bun.QueryHook = (*outage)(nil)

func (o *outage) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	if !o.down.Load() {
		return ctx
	}
	c, cancel := context.WithCancelCause(ctx)
	cancel(errOutage)
	return c
}

func (o *outage) AfterQuery(context.Context, *bun.QueryEvent) {}

// smsFunc is an SMSSender that calls its function.
type smsFunc func(ctx context.Context, m verify.SMS) error

func (f smsFunc) SendSMS(ctx context.Context, m verify.SMS) error { return f(ctx, m) }

// logWatch is a slog handler that hands the messages of its records to
// a channel (dropping them when no one reads): what a test waits on to
// know that the Verifier did something in the background.
type logWatch chan string

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }

func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case w <- r.Message:
	default:
	}
	return nil
}

func (w logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w logWatch) WithGroup(string) slog.Handler      { return w }

// startRun runs v.Run until stop is called or the test ends; stop
// returns once Run has.
func startRun(t *testing.T, v *verify.Verifier) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- v.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-ran; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitLog waits, up to 10 s, for a record of msg in w.
func waitLog(t *testing.T, w logWatch, msg string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case m := <-w:
			if m == msg {
				return
			}
		case <-timeout.C:
			t.Fatalf("no %q logged in 10 s", msg)
		}
	}
}

// Messages the tests wait for.
const (
	logSettleLater = "verify: could not record the outcome of a send; Run records it once the database is back"
	logSettled     = "verify: recorded the outcome of a send after a retry"
)

// outageFixture is a Verifier whose SMS sender runs gateway, over a
// database the test can cut off.
func outageFixture(t *testing.T, db *bun.DB, cfg *verify.Config, gateway smsFunc) (*fixture, *outage) {
	t.Helper()
	f := setup(t, db, cfg)
	o := &outage{}
	db.AddQueryHook(o)
	c := verify.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.Now = f.clock.Now
	v, err := verify.New(db, f.dir, gateway, f.sink, secret, &c)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	return f, o
}

// TestCodeDeliveredDuringOutage is fault 1.1 of issue 12: the gateway took
// the message, the database went away before the code was marked active,
// and the code stayed pending for ever. Now the send answers success (the
// code is on its way) and the code becomes usable once the database is
// back (here recorded by SendNotices, as a host without Run has it), its
// limits kept.
func TestCodeDeliveredDuringOutage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var o *outage
		var delivered atomic.Value
		f, o := outageFixture(t, db, nil, func(_ context.Context, m verify.SMS) error {
			o.down.Store(true) // cut between the send and the activation
			delivered.Store(m.Code)
			return nil
		})
		sent, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
		if err != nil {
			t.Fatalf("send during the outage: %v, want success: the gateway took the message", err)
		}
		if sent.ExpiresInSeconds != int(verify.DefaultCodeTTL/time.Second) {
			t.Errorf("sent %+v", sent)
		}
		code, _ := delivered.Load().(string)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err == nil {
			t.Fatal("a check passed with the database away")
		}
		o.down.Store(false)
		if _, err := f.v.SendNotices(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
			t.Fatalf("the delivered code once the database is back: %v", err)
		}
		// The message went out: its interval holds.
		var rl *deskkit.RateLimitError
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); !errors.As(err, &rl) {
			t.Errorf("a second send at once: %v, want the interval", err)
		}
	})
}

// TestFailedSendGivesItsLimitsBack: a send whose message did not go out
// counts toward no limit, so the retry the answer invites is not refused,
// also when the database was away when the send failed.
func TestFailedSendGivesItsLimitsBack(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var o *outage
		var failing, cut atomic.Bool
		f, o := outageFixture(t, db, &verify.Config{SendsPerDay: 2}, func(_ context.Context, m verify.SMS) error {
			if cut.Load() {
				o.down.Store(true)
			}
			if failing.Load() {
				return errGatewayDown
			}
			return nil
		})
		send := func() error {
			_, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
			return err
		}
		failing.Store(true)
		for i := range 3 {
			if err := send(); !errors.Is(err, verify.ErrSendFailed) {
				t.Fatalf("failed send %d: %v, want ErrSendFailed", i+1, err)
			}
		}
		// The gateway down and the database cut: the counts go back once
		// the database is.
		cut.Store(true)
		if err := send(); !errors.Is(err, verify.ErrSendFailed) {
			t.Fatalf("failed send during an outage: %v, want ErrSendFailed", err)
		}
		cut.Store(false)
		o.down.Store(false)
		failing.Store(false)
		// Once the outcome is recorded (SendNotices, as a host without Run
		// has it), at once, without waiting out the interval: none of the
		// four counted toward the interval nor the user's day of 2.
		if _, err := f.v.SendNotices(ctx); err != nil {
			t.Fatal(err)
		}
		if err := send(); err != nil {
			t.Fatalf("the retry after failed sends: %v", err)
		}
		f.clock.Advance(verify.DefaultResendInterval)
		if err := send(); err != nil {
			t.Fatalf("the second send of the day: %v", err)
		}
		f.clock.Advance(verify.DefaultResendInterval)
		var rl *deskkit.RateLimitError
		if err := send(); !errors.As(err, &rl) {
			t.Fatalf("the third send of a 2-a-day user: %v, want the daily limit", err)
		}
	})
}

// TestClientHangingUpDoesNotCutTheSend: a client that goes away while the
// gateway holds its message does not cancel the send. Were it cancelled,
// the send would count as one that did not go out and give its limits
// back, while the gateway may have taken the message: a way to send codes
// without limits, by hanging up each time.
func TestClientHangingUpDoesNotCutTheSend(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		held := make(chan struct{})
		release := make(chan struct{})
		var delivered atomic.Value
		f, _ := outageFixture(t, db, nil, func(ctx context.Context, m verify.SMS) error {
			close(held)
			<-release // the client has hung up by now
			if err := ctx.Err(); err != nil {
				return err // as an HTTP client would, its request cut short
			}
			delivered.Store(m.Code)
			return nil
		})
		ctx, hangUp := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
			done <- err
		}()
		<-held
		hangUp()
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("send whose client hung up: %v, want the send finished", err)
		}
		code, _ := delivered.Load().(string)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
			t.Errorf("the code delivered after the client hung up: %v", err)
		}
	})
}

// TestRunRecordsOutcomesAfterOutage: with Run running, the outcome of a
// send the database could not take is recorded by Run once the database
// is back, without another call.
func TestRunRecordsOutcomesAfterOutage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		logs := make(logWatch, 1024)
		var o *outage
		var delivered atomic.Value
		f, o := outageFixture(t, db, &verify.Config{Logger: slog.New(logs)}, func(_ context.Context, m verify.SMS) error {
			o.down.Store(true)
			delivered.Store(m.Code)
			return nil
		})
		startRun(t, f.v)
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); err != nil {
			t.Fatalf("send during the outage: %v", err)
		}
		waitLog(t, logs, logSettleLater)
		o.down.Store(false)
		waitLog(t, logs, logSettled)
		code, _ := delivered.Load().(string)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
			t.Fatalf("the delivered code once Run recorded it: %v", err)
		}
	})
}

// TestRunStopsRetryingOnShutdown: what Run has not recorded when it stops
// is not retried behind the host's back (the code stays unusable), and
// waits for the next Run or SendNotices, which records it.
func TestRunStopsRetryingOnShutdown(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var o *outage
		var delivered atomic.Value
		f, o := outageFixture(t, db, nil, func(_ context.Context, m verify.SMS) error {
			o.down.Store(true)
			delivered.Store(m.Code)
			return nil
		})
		stop := startRun(t, f.v)
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); err != nil {
			t.Fatalf("send during the outage: %v", err)
		}
		stop()
		// Run has returned, and with it everything that retried: with the
		// database back, nothing records the outcome on its own.
		o.down.Store(false)
		code, _ := delivered.Load().(string)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeMissing) {
			t.Fatalf("the code after Run stopped: %v, want ErrCodeMissing (still pending)", err)
		}
		if _, err := f.v.SendNotices(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
			t.Fatalf("the code once SendNotices recorded it: %v", err)
		}
	})
}

// TestOutcomeGivenUpAfterCodeTTL: an outcome the database could not take
// within the code's lifetime is dropped (the code is worth nothing by
// then), and the code stays unusable.
func TestOutcomeGivenUpAfterCodeTTL(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		logs := make(logWatch, 1024)
		var o *outage
		f, o := outageFixture(t, db, &verify.Config{Logger: slog.New(logs)}, func(context.Context, verify.SMS) error {
			o.down.Store(true)
			return nil
		})
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); err != nil {
			t.Fatalf("send during the outage: %v", err)
		}
		waitLog(t, logs, logSettleLater)
		o.down.Store(false)
		f.clock.Advance(verify.DefaultCodeTTL)
		if _, err := f.v.SendNotices(ctx); err != nil {
			t.Fatal(err)
		}
		waitLog(t, logs, "verify: gave up recording the outcome of a send: its codes have expired")
		var pending int
		if err := db.NewRaw("SELECT count(*) FROM deskkit_verify_codes WHERE state = 'pending'").Scan(ctx, &pending); err != nil {
			t.Fatal(err)
		}
		if pending != 1 {
			t.Errorf("%d pending codes, want the one whose outcome was given up", pending)
		}
	})
}
