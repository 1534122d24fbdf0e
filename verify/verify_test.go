package verify_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
)

var secret = []byte("0123456789abcdef0123456789abcdef-test-secret")

// fixture is a Verifier with its fakes.
type fixture struct {
	v     *verify.Verifier
	dir   *verifytest.Directory
	sink  *verifytest.Sink
	clock *clocktest.Clock
	db    *bun.DB
	ann   deskkit.Principal // +8613800138000, ann@example.com
	bob   deskkit.Principal // +8613900139000, no e-mail
	carl  deskkit.Principal // no addresses
}

const (
	annMobile = "+8613800138000"
	annEmail  = "ann@example.com"
	bobMobile = "+8613900139000"
	newMobile = "+8613700137000"
)

func setup(t *testing.T, db *bun.DB, cfg *verify.Config) *fixture {
	t.Helper()
	if err := verify.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: verifytest.NewDirectory(), sink: &verifytest.Sink{}, clock: clocktest.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)), db: db}
	f.ann = f.dir.Add(verify.User{ID: 1, TenantID: 10, Username: "ann", Mobile: annMobile, Country: "CN", Email: annEmail})
	f.bob = f.dir.Add(verify.User{ID: 2, TenantID: 10, Username: "bob", Mobile: bobMobile, Country: "CN"})
	f.carl = f.dir.Add(verify.User{ID: 3, TenantID: 10, Username: "carl"})
	f.v = f.newVerifier(t, secret, cfg)
	return f
}

func (f *fixture) newVerifier(t *testing.T, s []byte, cfg *verify.Config) *verify.Verifier {
	t.Helper()
	c := verify.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.Now = f.clock.Now
	v, err := verify.New(f.db, f.dir, f.sink, f.sink, s, &c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sendSMS sends a code and returns it.
func (f *fixture) sendSMS(t *testing.T, p deskkit.Principal, b verify.BizKey, mobile string) string {
	t.Helper()
	if _, err := f.v.SendSMS(context.Background(), p, verify.SMSSend{BizKey: b, Mobile: mobile, Country: "CN"}); err != nil {
		t.Fatalf("send %s to %s: %v", b, mobile, err)
	}
	code := f.sink.LastCode(mobile)
	if len(code) != 6 {
		t.Fatalf("code %q sent to %s is not 6 digits", code, mobile)
	}
	return code
}

func (f *fixture) checkSMS(p deskkit.Principal, b verify.BizKey, mobile, code string) (verify.Link, error) {
	return f.v.CheckSMS(context.Background(), p, verify.SMSCheck{BizKey: b, Mobile: mobile, Country: "CN", Code: code})
}

// wrong returns a code that is not code.
func wrong(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}

func TestSendAndCheck(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		// Another way of writing the number finds the same code.
		link, err := f.checkSMS(f.ann, "SIGNIN", "138 0013 8000", code)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(link.Secret, "dkl_") || len(link.Secret) < 4+22 {
			t.Errorf("link secret %q: want dkl_ and at least 128 bits", link.Secret)
		}
		// Single use.
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeMissing) {
			t.Errorf("second check: %v, want ErrCodeMissing", err)
		}
		// Each bizKey is its own namespace.
		code = f.sendSMS(t, f.ann, "SIGNUP", annMobile)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeMissing) {
			t.Errorf("SIGNUP code checked as SIGNIN: %v, want ErrCodeMissing", err)
		}
	})
}

func TestCheckErrors(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)

		if _, err := f.checkSMS(f.ann, "SIGNUP", annMobile, code); !errors.Is(err, verify.ErrCodeMissing) {
			t.Errorf("other bizKey: %v, want ErrCodeMissing", err)
		}
		if _, err := f.checkSMS(f.bob, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrAddressTaken) {
			t.Errorf("Bob checks Ann's number: %v, want ErrAddressTaken", err)
		}
		// Codes are per user: Carl's code to a free number is not Bob's.
		carls := f.sendSMS(t, f.carl, "SIGNIN", newMobile)
		if _, err := f.checkSMS(f.bob, "SIGNIN", newMobile, carls); !errors.Is(err, verify.ErrCodeMissing) {
			t.Errorf("Bob checks Carl's code: %v, want ErrCodeMissing", err)
		}
		_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code))
		if !errors.Is(err, verify.ErrCodeWrong) || !errors.Is(err, deskkit.ErrInvalid) {
			t.Fatalf("wrong code: %v, want ErrCodeWrong", err)
		}
		var cm deskkit.ClientMessager
		if !errors.As(err, &cm) || !strings.Contains(cm.ClientMessage(), "4 attempts are left") {
			t.Errorf("wrong code message: %v", err)
		}
		// A new code replaces the old one.
		f.clock.Advance(time.Minute)
		newCode := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		if newCode != code {
			if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeWrong) {
				t.Errorf("replaced code: %v, want ErrCodeWrong", err)
			}
		}
		// Expiry.
		f.clock.Advance(verify.DefaultCodeTTL)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, newCode); !errors.Is(err, verify.ErrCodeExpired) {
			t.Errorf("expired code: %v, want ErrCodeExpired", err)
		}
		// Input errors name the field.
		for _, tc := range []struct {
			req   verify.SMSCheck
			field string
		}{
			{verify.SMSCheck{BizKey: "NOPE", Mobile: annMobile, Country: "CN", Code: "123456"}, "bizKey"},
			{verify.SMSCheck{BizKey: "MODIFY_EMAIL", Mobile: annMobile, Country: "CN", Code: "123456"}, "bizKey"},
			{verify.SMSCheck{BizKey: "SIGNIN", Mobile: "12", Country: "CN", Code: "123456"}, "mobile"},
			{verify.SMSCheck{BizKey: "SIGNIN", Mobile: annMobile, Country: "XX", Code: "123456"}, "country"},
			{verify.SMSCheck{BizKey: "SIGNIN", Mobile: "+12015550123", Country: "CN", Code: "123456"}, "mobile"},
			{verify.SMSCheck{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN", Code: "12345a"}, "verificationCode"},
			{verify.SMSCheck{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN", Code: "123456789"}, "verificationCode"},
		} {
			_, err := f.v.CheckSMS(ctx, f.ann, tc.req)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%+v: %v, want an input error on %s", tc.req, err, tc.field)
			}
		}
	})
}

func TestCodePadding(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		// Send until a code with a leading zero comes up; one in ten does.
		for i := 0; i < 200; i++ {
			f.clock.Advance(25 * time.Hour) // past every send limit's window
			code := f.sendSMS(t, f.carl, "SIGNIN", newMobile)
			if code[0] != '0' {
				continue
			}
			if _, err := f.checkSMS(f.carl, "SIGNIN", newMobile, strings.TrimLeft(code, "0")); err != nil {
				t.Fatalf("code %s without its leading zeros: %v", code, err)
			}
			return
		}
		t.Fatal("no code with a leading zero in 200 sends")
	})
}

func TestAttemptLimit(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		for i := 1; i <= verify.MaxAttempts; i++ {
			if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code)); !errors.Is(err, verify.ErrCodeWrong) {
				t.Fatalf("wrong attempt %d: %v", i, err)
			}
		}
		_, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code)
		if !errors.Is(err, verify.ErrCodeExhausted) || !errors.Is(err, deskkit.ErrRateLimited) {
			t.Fatalf("right code after %d wrong: %v, want ErrCodeExhausted", verify.MaxAttempts, err)
		}
	})
}

func TestFailuresPerDay(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, &verify.Config{FailuresPerDay: 3})
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		for range 3 {
			if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code)); !errors.Is(err, verify.ErrCodeWrong) {
				t.Fatal(err)
			}
		}
		// Across codes: another bizKey is refused too, before comparing.
		other := f.sendSMS(t, f.ann, "SIGNUP", annMobile)
		_, err := f.checkSMS(f.ann, "SIGNUP", annMobile, other)
		var ra deskkit.RetryAfterer
		if !errors.Is(err, verify.ErrTooManyFailures) || !errors.As(err, &ra) {
			t.Fatalf("after 3 failures: %v, want ErrTooManyFailures with a retry time", err)
		}
		if got := ra.RetryAfterDuration(); got != 24*time.Hour {
			t.Errorf("retry after %s, want 24h", got)
		}
		// Successes do not count: Bob is not limited by Ann.
		bobCode := f.sendSMS(t, f.bob, "SIGNIN", bobMobile)
		if _, err := f.checkSMS(f.bob, "SIGNIN", bobMobile, bobCode); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(24 * time.Hour)
		other = f.sendSMS(t, f.ann, "SIGNUP", annMobile)
		if _, err := f.checkSMS(f.ann, "SIGNUP", annMobile, other); err != nil {
			t.Fatalf("a day later: %v", err)
		}
	})
}

// TestRightCodesCostNoFailures: a check holds the user's failure limit
// while it compares, and only a wrong code takes from it: right codes,
// however many, leave the whole allowance.
func TestRightCodesCostNoFailures(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, &verify.Config{FailuresPerDay: 1})
		for i := range 3 {
			code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
			if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err != nil {
				t.Fatalf("right code %d: %v", i+1, err)
			}
			f.clock.Advance(verify.DefaultResendInterval)
		}
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code)); !errors.Is(err, verify.ErrCodeWrong) {
			t.Fatalf("the first wrong code after right ones: %v, want ErrCodeWrong", err)
		}
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrTooManyFailures) {
			t.Fatalf("after the one failure of the day: %v, want ErrTooManyFailures", err)
		}
	})
}

func TestSendLimits(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, &verify.Config{SendsPerHour: 3, SendsPerDay: 5})
		send := func(p deskkit.Principal, b verify.BizKey, mobile string) error {
			_, err := f.v.SendSMS(ctx, p, verify.SMSSend{BizKey: b, Mobile: mobile, Country: "CN"})
			return err
		}
		if err := send(f.ann, "SIGNIN", annMobile); err != nil {
			t.Fatal(err)
		}
		// The interval per (bizKey, address).
		err := send(f.ann, "SIGNIN", annMobile)
		var rl *deskkit.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != time.Minute {
			t.Fatalf("second send: %v, want a rate limit of 60s", err)
		}
		f.clock.Advance(59 * time.Second)
		if err := send(f.ann, "SIGNIN", annMobile); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
			t.Fatalf("after 59s: %v, want a rate limit of 1s", err)
		}
		// Other bizKeys are other intervals, but the same address.
		if err := send(f.ann, "SIGNUP", annMobile); err != nil {
			t.Fatal(err)
		}
		if err := send(f.ann, "PASSWORD_UPDATE", annMobile); err != nil {
			t.Fatal(err)
		}
		if err := send(f.ann, "SIGN_CANCEL", annMobile); !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "an hour") {
			t.Fatalf("4th code to one address in an hour: %v", err)
		}
		// The user's day: 3 sent; a refused send (Bob's number) counts too.
		if err := send(f.ann, "SIGNIN", bobMobile); !errors.Is(err, verify.ErrAddressTaken) {
			t.Fatalf("Bob's number: %v, want ErrAddressTaken", err)
		}
		// ...but not toward Bob's: his own codes still go out.
		if err := send(f.bob, "SIGNIN", bobMobile); err != nil {
			t.Fatalf("Bob's own send after Ann's refused one: %v", err)
		}
		if err := send(f.ann, "SIGNIN", newMobile); err != nil {
			t.Fatal(err)
		}
		if err := send(f.ann, "SIGNUP", newMobile); !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "a day") {
			t.Fatalf("6th send of the day: %v", err)
		}
		f.clock.Advance(24 * time.Hour)
		if err := send(f.ann, "SIGNUP", newMobile); err != nil {
			t.Fatalf("next day: %v", err)
		}
	})
}

func TestSendFailure(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, &verify.Config{SendsPerDay: 2})
		f.sink.FailWith(errGatewayDown)
		_, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
		if !errors.Is(err, verify.ErrSendFailed) {
			t.Fatalf("send with the gateway down: %v", err)
		}
		f.sink.FailWith(nil)
		// No usable code is left: every code is refused as missing.
		for _, code := range []string{"000000", "123456"} {
			if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); !errors.Is(err, verify.ErrCodeMissing) {
				t.Errorf("check after a failed send: %v, want ErrCodeMissing", err)
			}
		}
		// Nothing went out, so the failed send counted toward no limit:
		// two more at once, then the day is over.
		f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		f.clock.Advance(time.Minute)
		f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		f.clock.Advance(time.Minute)
		var rl *deskkit.RateLimitError
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); !errors.As(err, &rl) {
			t.Fatalf("third send of a 2-a-day user: %v", err)
		}
	})
}

// mailFunc is a deskkit.Mailer that calls its function.
type mailFunc func(ctx context.Context, m deskkit.Mail) error

func (f mailFunc) SendMail(ctx context.Context, m deskkit.Mail) error { return f(ctx, m) }

// TestEmailPartlySent: of a send to two addresses, the first goes out and
// the second does not. The first code is usable and its send counted; the
// second is not usable, and its limits are given back, so that a send to
// it again at once goes out.
func TestEmailPartlySent(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		var failing atomic.Bool
		failing.Store(true)
		mail := mailFunc(func(ctx context.Context, m deskkit.Mail) error {
			if m.To == "c2@example.com" && failing.Load() {
				return errGatewayDown
			}
			return f.sink.SendMail(ctx, m)
		})
		v, err := verify.New(db, f.dir, f.sink, mail, secret, &verify.Config{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		send := func(to ...string) error {
			var addrs [][]string
			for _, a := range to {
				addrs = append(addrs, []string{a})
			}
			_, err := v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: "SIGNIN", ToAddress: addrs})
			return err
		}
		check := func(a, code string) error {
			_, err := v.CheckEmail(ctx, f.carl, verify.EmailCheck{BizKey: "SIGNIN", Email: a, Code: code})
			return err
		}
		if err := send("c1@example.com", "c2@example.com"); !errors.Is(err, verify.ErrSendFailed) {
			t.Fatalf("send with the second address failing: %v, want ErrSendFailed", err)
		}
		if got := f.sink.Recipients(); len(got) != 1 || got[0] != "c1@example.com" {
			t.Fatalf("recipients %v, want c1 alone", got)
		}
		if err := check("c2@example.com", "123456"); !errors.Is(err, verify.ErrCodeMissing) {
			t.Errorf("check of the address nothing went to: %v, want ErrCodeMissing", err)
		}
		if err := check("c1@example.com", f.sink.LastCode("c1@example.com")); err != nil {
			t.Errorf("the code that went out: %v", err)
		}
		failing.Store(false)
		var rl *deskkit.RateLimitError
		if err := send("c1@example.com"); !errors.As(err, &rl) {
			t.Errorf("a second send to c1 at once: %v, want its interval", err)
		}
		if err := send("c2@example.com"); err != nil {
			t.Fatalf("a second send to c2 at once: %v, want success: its first took nothing", err)
		}
		if err := check("c2@example.com", f.sink.LastCode("c2@example.com")); err != nil {
			t.Errorf("c2's code: %v", err)
		}
	})
}

func TestEmailRecipients(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		f.dir.Add(verify.User{ID: 4, TenantID: 10, Username: "dora", Email: "dora@example.com"})
		// Flattened, normalized, duplicates dropped.
		_, err := f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: "SIGNIN", ToAddress: [][]string{{"c1@Example.COM", " c1@example.com"}, {"c2@example.com"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.sink.Sent(); got != 2 {
			t.Fatalf("%d mails, want 2", got)
		}
		for _, a := range []string{"c1@example.com", "c2@example.com"} {
			if _, err := f.v.CheckEmail(ctx, f.carl, verify.EmailCheck{BizKey: "SIGNIN", Email: a, Code: f.sink.LastCode(a)}); err != nil {
				t.Errorf("check %s: %v", a, err)
			}
		}
		// One address held by someone else: nothing is sent to any.
		f.clock.Advance(time.Hour)
		_, err = f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: "SIGNIN", ToAddress: [][]string{{"c1@example.com"}, {"dora@example.com"}}})
		if !errors.Is(err, verify.ErrAddressTaken) {
			t.Fatalf("with Dora's address: %v", err)
		}
		if got := f.sink.Sent(); got != 2 {
			t.Errorf("%d mails after a refused send, want still 2", got)
		}
		for _, tc := range []struct {
			to    [][]string
			field string
		}{
			{nil, "toAddress"},
			{[][]string{{}}, "toAddress"},
			{[][]string{{"a@example.com", "b@example.com"}, {"c@example.com", "d@example.com", "e@example.com", "f@example.com"}}, "toAddress"},
			{[][]string{{"a@example.com"}, {"x", "b@example.com"}}, "toAddress[1][0]"},
			{[][]string{{"Ann <a@example.com>"}}, "toAddress[0][0]"},
			{[][]string{{`"a b"@example.com`}}, "toAddress[0][0]"},
			{[][]string{{strings.Repeat("a", 95) + "@example.com"}}, "toAddress[0][0]"},
		} {
			_, err := f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: "SIGNIN", ToAddress: tc.to})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%q: %v, want an input error on %s", tc.to, err, tc.field)
			}
		}
	})
}

func TestProfile(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		s := func(s string) *string { return &s }
		d, err := f.v.UpdateProfile(ctx, f.ann, verify.Profile{FullName: s("Ann Smith"), Gender: s("FEMALE"), Avatar: s("https://example.com/a.png")})
		if err != nil {
			t.Fatal(err)
		}
		want := verify.Detail{ID: 1, TenantID: 10, TenantName: "tenant 10", Username: "ann", FullName: "Ann Smith", Gender: "FEMALE",
			Avatar: "https://example.com/a.png", Mobile: annMobile, Country: "CN", ITC: 86, Email: annEmail}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("detail (-want +got):\n%s", diff)
		}
		if _, err := f.v.UpdateProfile(ctx, f.ann, verify.Profile{Username: s("bob")}); !errors.Is(err, deskkit.ErrConflict) {
			t.Errorf("Bob's username: %v, want a conflict", err)
		}
		for _, tc := range []struct {
			p     verify.Profile
			field string
		}{
			{verify.Profile{Username: s(" ")}, "username"},
			{verify.Profile{Username: s(strings.Repeat("a", 101))}, "username"},
			{verify.Profile{FirstName: s(strings.Repeat("é", 101))}, "firstName"},
			{verify.Profile{Title: s("a\x00b")}, "title"},
			{verify.Profile{Landline: s(strings.Repeat("1", 41))}, "landline"},
			{verify.Profile{Avatar: s("javascript:alert(1)")}, "avatar"},
			{verify.Profile{Avatar: s("https://example.com/" + strings.Repeat("a", 400))}, "avatar"},
			{verify.Profile{Address: s(strings.Repeat("a", 201))}, "address"},
			{verify.Profile{Gender: s("male")}, "gender"},
		} {
			_, err := f.v.UpdateProfile(ctx, f.ann, tc.p)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%s: %v, want an input error on it", tc.field, err)
			}
		}
		if got := f.dir.Get(1); got.FullName != "Ann Smith" || got.Username != "ann" {
			t.Errorf("refused updates changed the user: %+v", got)
		}
		tn, err := f.v.Tenant(ctx, f.ann)
		if err != nil || tn != (verify.TenantDetail{ID: 10, Name: "tenant 10"}) {
			t.Errorf("tenant: %+v, %v", tn, err)
		}
	})
}

func TestGendersIsACopy(t *testing.T) {
	got := verify.Genders()
	if diff := cmp.Diff([]string{"MALE", "FEMALE", "UNKNOWN"}, got); diff != "" {
		t.Fatalf("Genders (-want +got):\n%s", diff)
	}
	got[0] = "NOBODY"
	if again := verify.Genders(); again[0] != "MALE" {
		t.Errorf("writing to Genders' answer changed the next answer: %q", again)
	}
}

// plainKeys are n SMS or e-mail bizKeys that neither bind nor modify.
func plainKeys(t *testing.T, k verify.Kind, n int) []verify.BizKey {
	t.Helper()
	all := verify.SMSBizKeys()
	if k == verify.KindEmail {
		all = verify.EmailBizKeys()
	}
	var out []verify.BizKey
	for _, b := range all {
		if !strings.HasPrefix(string(b), "BIND_") && !strings.HasPrefix(string(b), "MODIFY_") && len(out) < n {
			out = append(out, b)
		}
	}
	if len(out) < n {
		t.Fatalf("only %d plain bizKeys", len(out))
	}
	return out
}

// TestOneUserCannotExhaustAnothersAllowance is fault 1.2 of issue 12:
// mallory's 10 codes to vic's future address made vic's BIND_EMAIL 429 for
// an hour, and one user's send blocked another's for a minute.
func TestOneUserCannotExhaustAnothersAllowance(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		mallory := f.dir.Add(verify.User{ID: 5, TenantID: 10, Username: "mallory"})
		vic := f.dir.Add(verify.User{ID: 6, TenantID: 10, Username: "vic"})
		const vicEmail = "vic@acme.test"
		send := func(p deskkit.Principal, b verify.BizKey) error {
			_, err := f.v.SendEmail(ctx, p, verify.EmailSend{BizKey: b, ToAddress: [][]string{{vicEmail}}})
			return err
		}
		// Mallory's hour to the address: BIND_EMAIL and 9 others.
		for _, b := range append([]verify.BizKey{verify.BindEmail}, plainKeys(t, verify.KindEmail, verify.DefaultSendsPerHour-1)...) {
			if err := send(mallory, b); err != nil {
				t.Fatalf("mallory's %s: %v", b, err)
			}
		}
		var rl *deskkit.RateLimitError
		if err := send(mallory, "SIGN_CANCEL"); !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "an hour") {
			t.Fatalf("mallory's 11th send in the hour: %v, want the hourly limit", err)
		}
		// Vic, at once: neither mallory's hour nor her minute on
		// BIND_EMAIL is his.
		if err := send(vic, verify.BindEmail); err != nil {
			t.Fatalf("vic's BIND_EMAIL after mallory's sends: %v", err)
		}
		code := f.sink.LastCode(vicEmail)
		if _, err := f.v.ChangeEmail(ctx, vic, verify.EmailChange{BizKey: verify.BindEmail, Email: vicEmail, Code: code}); err != nil {
			t.Fatalf("vic binds the address: %v", err)
		}
		// The minute is still each user's own, per bizKey and address.
		if err := send(vic, "SIGNIN"); err != nil {
			t.Fatal(err)
		}
		if err := send(vic, "SIGNIN"); !errors.As(err, &rl) || rl.RetryAfter != verify.DefaultResendInterval {
			t.Errorf("vic's second SIGNIN at once: %v, want the %s interval", err, verify.DefaultResendInterval)
		}
	})
}

// TestSendsPerAddressAcrossUsersAndTenants: many accounts, in many tenants,
// together get at most SendsPerAddressPerDay codes to one address a day,
// and one account's whole day is not enough to use the cap up.
func TestSendsPerAddressAcrossUsersAndTenants(t *testing.T) {
	if verify.DefaultSendsPerDay >= verify.DefaultSendsPerAddressPerDay {
		t.Fatalf("one account's day (%d) can use up an address's day (%d)", verify.DefaultSendsPerDay, verify.DefaultSendsPerAddressPerDay)
	}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		const target = newMobile
		send := func(p deskkit.Principal, b verify.BizKey) error {
			_, err := f.v.SendSMS(ctx, p, verify.SMSSend{BizKey: b, Mobile: target, Country: "CN"})
			return err
		}
		keys := plainKeys(t, verify.KindSMS, verify.DefaultSendsPerHour)
		// One account's whole day: 10 in the first hour, 10 in the next.
		first := f.dir.Add(verify.User{ID: 100, TenantID: 100, Username: "u100"})
		for hour := range 2 {
			for _, b := range keys {
				if err := send(first, b); err != nil {
					t.Fatalf("hour %d, %s: %v", hour, b, err)
				}
			}
			f.clock.Advance(time.Hour)
		}
		var rl *deskkit.RateLimitError
		if err := send(first, "SIGNIN"); !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "a day may be requested") {
			t.Fatalf("the account's 21st send: %v, want its daily limit", err)
		}
		// Other accounts in other tenants share the address's day.
		sent := verify.DefaultSendsPerDay
		for id := int64(101); sent < verify.DefaultSendsPerAddressPerDay; id++ {
			p := f.dir.Add(verify.User{ID: id, TenantID: id, Username: "u"})
			for _, b := range keys[:min(len(keys), verify.DefaultSendsPerAddressPerDay-sent)] {
				if err := send(p, b); err != nil {
					t.Fatalf("send %d to the address: %v", sent+1, err)
				}
				sent++
			}
		}
		late := f.dir.Add(verify.User{ID: 200, TenantID: 200, Username: "late"})
		err := send(late, "SIGNIN")
		if !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "from all accounts") {
			t.Fatalf("send %d to one address in a day: %v, want the address's daily cap", sent+1, err)
		}
		if want := 22 * time.Hour; rl.RetryAfter != want {
			t.Errorf("retry after %s, want %s (the day opened with the first send)", rl.RetryAfter, want)
		}
		// Holding the address is no exception: a directory's address is
		// not always proved.
		holder := f.dir.Add(verify.User{ID: 300, TenantID: 300, Username: "holder", Mobile: target, Country: "CN"})
		if err := send(holder, "SIGNIN"); !errors.As(err, &rl) || !strings.Contains(rl.Message.String(), "from all accounts") {
			t.Fatalf("a holder's send past the cap: %v, want the address's daily cap", err)
		}
		// The shared count names the address by a keyed hash only.
		var keysStored []string
		if err := db.NewSelect().Table("deskkit_verify_limits").Column("limit_key").Where("limit_key LIKE 'send-any:%'").Scan(ctx, &keysStored); err != nil {
			t.Fatal(err)
		}
		if len(keysStored) != 1 || strings.Contains(keysStored[0], "13700137000") {
			t.Errorf("shared limit keys %q: want one, without the number", keysStored)
		}
		f.clock.Advance(22 * time.Hour)
		if err := send(late, "SIGNIN"); err != nil {
			t.Errorf("the next day: %v", err)
		}
	})
}
