package verify_test

import (
	"context"
	"errors"
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

// eventually calls fn until it returns nil, for at most 10 s, waiting
// 20 ms between calls, and returns its last error: for work the Verifier
// does in the background.
func eventually(fn func() error) error {
	deadline := time.After(10 * time.Second)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-deadline:
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

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
// back, its limits kept.
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
		if err := eventually(func() error {
			_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code)
			return err
		}); err != nil {
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
		// At once, without waiting out the interval: none of the four
		// counted toward the interval nor the user's day of 2.
		if err := eventually(send); err != nil {
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
