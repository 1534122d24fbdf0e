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
)

// modifyLink wins a MODIFY_MOBILE link secret on Ann's current number.
func (f *fixture) modifyLink(t *testing.T) string {
	t.Helper()
	code := f.sendSMS(t, f.ann, verify.ModifyMobile, annMobile)
	link, err := f.checkSMS(f.ann, verify.ModifyMobile, annMobile, code)
	if err != nil {
		t.Fatal(err)
	}
	return link.Secret
}

func TestModifyMobile(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		link := f.modifyLink(t)
		code := f.sendSMS(t, f.ann, verify.ModifyMobile, newMobile)
		change := verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: "13700137000", Country: "CN", ITC: 86, Code: code, LinkSecret: link}

		// A typo does not burn the secret.
		typo := change
		typo.Code = wrong(code)
		if _, err := f.v.ChangeMobile(ctx, f.ann, typo); !errors.Is(err, verify.ErrCodeWrong) {
			t.Fatalf("typo: %v", err)
		}
		// Nor does an itc that disagrees with the country.
		bad := change
		bad.ITC = 1
		var ie *deskkit.InputError
		if _, err := f.v.ChangeMobile(ctx, f.ann, bad); !errors.As(err, &ie) || ie.Field != "itc" {
			t.Fatalf("itc 1 with CN: %v", err)
		}
		d, err := f.v.ChangeMobile(ctx, f.ann, change)
		if err != nil {
			t.Fatal(err)
		}
		if d.Mobile != newMobile || f.dir.Get(1).Mobile != newMobile {
			t.Fatalf("mobile after the change: %q", d.Mobile)
		}
		// The notice went to the old number, after the change, masked,
		// and once: SendNotices finds nothing left.
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Fatalf("SendNotices after the change: %d, %v; want 0", n, err)
		}
		sent := f.sink.SMS()
		last := sent[len(sent)-1]
		if last.To != annMobile || last.Code != "" || !strings.Contains(last.Text, "+86*******7000") {
			t.Errorf("notice: %+v", last)
		}
		// Code and secret are spent.
		if _, err := f.v.ChangeMobile(ctx, f.ann, change); err == nil {
			t.Fatal("the same change twice succeeded")
		}
	})
}

// TestLinkSecretBypass: a secret won by checking a code sent to an address
// that is not the user's current one proves nothing about the current one.
func TestLinkSecretBypass(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		// Mallory has Ann's session but not her phone: she checks a
		// MODIFY_MOBILE code sent to a number she holds.
		mallory := "+8613600136000"
		c1 := f.sendSMS(t, f.ann, verify.ModifyMobile, mallory)
		link, err := f.checkSMS(f.ann, verify.ModifyMobile, mallory, c1)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		c2 := f.sendSMS(t, f.ann, verify.ModifyMobile, mallory)
		_, err = f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: mallory, Country: "CN", Code: c2, LinkSecret: link.Secret})
		if !errors.Is(err, verify.ErrLinkSecret) {
			t.Fatalf("change with a secret won elsewhere: %v, want ErrLinkSecret", err)
		}
		if f.dir.Get(1).Mobile != annMobile {
			t.Fatal("the mobile changed")
		}
		// A secret of another bizKey, even on the current number, is refused too.
		code := f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		signin, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: mallory, Country: "CN", Code: c2, LinkSecret: signin.Secret})
		if !errors.Is(err, verify.ErrLinkSecret) {
			t.Fatalf("change with a SIGNIN secret: %v, want ErrLinkSecret", err)
		}
		// The refusals rolled back: the right secret and the same code work.
		_, err = f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: mallory, Country: "CN", Code: c2, LinkSecret: f.modifyLink(t)})
		if err != nil {
			t.Fatalf("with the right secret: %v", err)
		}
	})
}

func TestLinkSecretRules(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		change := func(link string) error {
			f.clock.Advance(time.Minute)
			code := f.sendSMS(t, f.ann, verify.ModifyMobile, newMobile)
			_, err := f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: newMobile, Country: "CN", Code: code, LinkSecret: link})
			return err
		}
		// Expired after LinkSecretTTL.
		link := f.modifyLink(t)
		f.clock.Advance(verify.LinkSecretTTL)
		if err := change(link); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("expired secret: %v", err)
		}
		// Bound to the user: Bob cannot use Ann's.
		link = f.modifyLink(t)
		f.clock.Advance(time.Minute) // the interval is per address, whoever asks
		bobCode := f.sendSMS(t, f.bob, verify.ModifyMobile, newMobile)
		_, err := f.v.ChangeMobile(ctx, f.bob, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: newMobile, Country: "CN", Code: bobCode, LinkSecret: link})
		if !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("Ann's secret used by Bob: %v", err)
		}
		for _, s := range []string{"", "nonsense", "dkl_" + strings.Repeat("A", 43)} {
			err := change(s)
			if s == "" {
				var ie *deskkit.InputError
				if !errors.As(err, &ie) || ie.Field != "linkSecret" {
					t.Errorf("no secret: %v", err)
				}
				continue
			}
			if !errors.Is(err, verify.ErrLinkSecret) {
				t.Errorf("secret %q: %v", s, err)
			}
		}
		// The library's own redemption, for a host's flow.
		code := f.sendSMS(t, f.ann, verify.PasswordUpdate, annMobile)
		pw, err := f.checkSMS(f.ann, verify.PasswordUpdate, annMobile, code)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.v.Redeem(ctx, nil, f.ann, verify.SignCancel, pw.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("redeem for another bizKey: %v", err)
		}
		proof, err := f.v.Redeem(ctx, nil, f.ann, verify.PasswordUpdate, pw.Secret)
		if err != nil || proof != (verify.Proof{Kind: verify.KindSMS, BizKey: verify.PasswordUpdate, Address: annMobile}) {
			t.Errorf("redeem: %+v, %v", proof, err)
		}
		if _, err := f.v.Redeem(ctx, nil, f.ann, verify.PasswordUpdate, pw.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("second redemption: %v", err)
		}
	})
}

func TestBind(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		// Ann has an e-mail address: BIND_EMAIL is refused, before sending.
		_, err := f.v.SendEmail(ctx, f.ann, verify.EmailSend{BizKey: verify.BindEmail, ToAddress: [][]string{{"ann2@example.com"}}})
		if !errors.Is(err, verify.ErrAlreadyBound) {
			t.Errorf("BIND_EMAIL for Ann: %v", err)
		}
		// Carl has none: MODIFY_EMAIL is refused, BIND_EMAIL works without a secret.
		_, err = f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: verify.ModifyEmail, ToAddress: [][]string{{"carl@example.com"}}})
		if !errors.Is(err, verify.ErrNotBound) {
			t.Errorf("MODIFY_EMAIL for Carl: %v", err)
		}
		// Ann's address is taken.
		_, err = f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: verify.BindEmail, ToAddress: [][]string{{"ann@EXAMPLE.com"}}})
		if !errors.Is(err, verify.ErrAddressTaken) {
			t.Errorf("BIND_EMAIL to Ann's address: %v", err)
		}
		if _, err := f.v.SendEmail(ctx, f.carl, verify.EmailSend{BizKey: verify.BindEmail, ToAddress: [][]string{{"Carl@Example.com"}}}); err != nil {
			t.Fatal(err)
		}
		code := f.sink.LastCode("Carl@example.com")
		d, err := f.v.ChangeEmail(ctx, f.carl, verify.EmailChange{BizKey: verify.BindEmail, Email: "Carl@EXAMPLE.COM", Code: code})
		if err != nil {
			t.Fatal(err)
		}
		if d.Email != "Carl@example.com" {
			t.Errorf("email %q, want the domain lower-cased only", d.Email)
		}
		if n, err := f.v.SendNotices(ctx); err != nil || n != 0 {
			t.Errorf("SendNotices after a bind: %d, %v; want 0", n, err)
		}
		if got := f.sink.Sent(); got != 1 {
			t.Errorf("%d messages: a bind sends no notice (there was no old address)", got)
		}
	})
}

// TestTakenAtChange: an address another user took between the send and the
// change is refused, and nothing is spent.
func TestTakenAtChange(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.carl, verify.BindMobile, newMobile)
		f.dir.Add(verify.User{ID: 5, TenantID: 10, Username: "eve", Mobile: newMobile, Country: "CN"})
		if _, err := f.checkSMS(f.carl, verify.BindMobile, newMobile, code); !errors.Is(err, verify.ErrAddressTaken) {
			t.Fatalf("check of an address taken meanwhile: %v", err)
		}
		_, err := f.v.ChangeMobile(ctx, f.carl, verify.MobileChange{BizKey: verify.BindMobile, Mobile: newMobile, Country: "CN", Code: code})
		if !errors.Is(err, verify.ErrAddressTaken) {
			t.Fatalf("taken meanwhile: %v", err)
		}
	})
}

// TestBindAfterCheck is item 3.5 of issue 12: the docs say send, then
// check, but for BIND_* the check used the code up and the change then
// answered "request one first". The link secret that checking the same
// new address answered is now the proof, bound to the user, the tenant,
// the bizKey and the address, and good once; the message of a used code
// says what happened.
func TestBindAfterCheck(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		dora := f.dir.Add(verify.User{ID: 4, TenantID: 10, Username: "dora"})
		erin := f.dir.Add(verify.User{ID: 5, TenantID: 20, Username: "erin"}) // another tenant
		code := f.sendSMS(t, f.carl, verify.BindMobile, newMobile)
		link, err := f.checkSMS(f.carl, verify.BindMobile, newMobile, code)
		if err != nil {
			t.Fatal(err)
		}
		bind := func(p deskkit.Principal, mobile, code, secret string) error {
			_, err := f.v.ChangeMobile(ctx, p, verify.MobileChange{BizKey: verify.BindMobile, Mobile: mobile, Country: "CN", Code: code, LinkSecret: secret})
			return err
		}
		// The code the check used: the message says so, and what to do.
		err = bind(f.carl, newMobile, code, "")
		var cm deskkit.ClientMessager
		if !errors.Is(err, verify.ErrCodeMissing) || !errors.As(err, &cm) ||
			!strings.Contains(cm.ClientMessage(), "already used by a check") || !strings.Contains(cm.ClientMessage(), "linkSecret") {
			t.Fatalf("bind with the code a check used: %v, want ErrCodeMissing saying it was used", err)
		}
		if strings.Contains(cm.ClientMessage(), "request one first") {
			t.Errorf("message %q", cm.ClientMessage())
		}
		// Both proofs at once, but not of one check: refused, nothing spent
		// (TestBindWithCheckedCodeAndSecret has the pair that belongs together).
		var ie *deskkit.InputError
		if err := bind(f.carl, newMobile, wrong(code), link.Secret); !errors.As(err, &ie) || ie.Field != "linkSecret" {
			t.Errorf("a secret with another code: %v, want an input error on linkSecret", err)
		}
		// The secret proves this address only, for this user only.
		if err := bind(f.carl, "+8613600136000", "", link.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("secret of another address: %v, want ErrLinkSecret", err)
		}
		if err := bind(dora, newMobile, "", link.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("Carl's secret used by Dora: %v, want ErrLinkSecret", err)
		}
		if err := bind(erin, newMobile, "", link.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("Carl's secret used in another tenant: %v, want ErrLinkSecret", err)
		}
		// ...and for BIND_MOBILE only: a SIGNIN check of the address is no proof.
		signin := f.sendSMS(t, dora, "SIGNIN", "+8613600136000")
		other, err := f.checkSMS(dora, "SIGNIN", "+8613600136000", signin)
		if err != nil {
			t.Fatal(err)
		}
		if err := bind(dora, "+8613600136000", "", other.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("a SIGNIN secret for BIND_MOBILE: %v, want ErrLinkSecret", err)
		}
		// The refusals spent nothing: the secret binds Carl's number.
		d, err := f.v.ChangeMobile(ctx, f.carl, verify.MobileChange{BizKey: verify.BindMobile, Mobile: "137 0013 7000", Country: "CN", LinkSecret: link.Secret})
		if err != nil {
			t.Fatalf("bind with the check's link secret: %v", err)
		}
		if d.Mobile != newMobile {
			t.Errorf("mobile %q, want %q", d.Mobile, newMobile)
		}
		// Good once: a secret already spent (here by Redeem) proves nothing.
		c2 := f.sendSMS(t, dora, verify.BindMobile, "+8613600136000")
		l2, err := f.checkSMS(dora, verify.BindMobile, "+8613600136000", c2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.v.Redeem(ctx, nil, dora, verify.BindMobile, l2.Secret); err != nil {
			t.Fatal(err)
		}
		if err := bind(dora, "+8613600136000", "", l2.Secret); !errors.Is(err, verify.ErrLinkSecret) {
			t.Errorf("a spent secret: %v, want ErrLinkSecret", err)
		}
		// Other bizKeys: the used code's message says to request a new one.
		if _, err := f.checkSMS(dora, "SIGNIN", "+8613600136000", signin); !errors.As(err, &cm) || !strings.Contains(cm.ClientMessage(), "already used: request a new code") {
			t.Errorf("second check of a SIGNIN code: %v", err)
		}
	})
}

// TestBindWithCheckedCodeAndSecret is fault 8 of issue 19: after a check
// answered a link secret, a BIND_* change carrying both that secret and
// the code the check used (the natural request: the seed's body has both
// fields, and a client that checked first has both) was refused
// "linkSecret must be empty when verificationCode is given". The pair
// passes now when the secret is the one that checking this code for this
// address answered; every other pair is an input error on linkSecret that
// spends nothing, and a replay is refused.
func TestBindWithCheckedCodeAndSecret(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		dora := f.dir.Add(verify.User{ID: 4, TenantID: 10, Username: "dora"})
		for _, tc := range []struct {
			kind          verify.Kind
			bizKey        verify.BizKey
			address       string // as stored
			written       string // as the change writes it
			other         string // another free address
			send          func(p deskkit.Principal, address string) string
			check         func(p deskkit.Principal, address, code string) (verify.Link, error)
			bind          func(p deskkit.Principal, address, code, secret string) (verify.Detail, error)
			currentOfCarl func() string
		}{
			{
				kind: verify.KindSMS, bizKey: verify.BindMobile, address: newMobile, written: "137 0013 7000", other: "+8613600136000",
				send: func(p deskkit.Principal, address string) string { return f.sendSMS(t, p, verify.BindMobile, address) },
				check: func(p deskkit.Principal, address, code string) (verify.Link, error) {
					return f.checkSMS(p, verify.BindMobile, address, code)
				},
				bind: func(p deskkit.Principal, address, code, secret string) (verify.Detail, error) {
					return f.v.ChangeMobile(ctx, p, verify.MobileChange{BizKey: verify.BindMobile, Mobile: address, Country: "CN", ITC: 86, Code: code, LinkSecret: secret})
				},
				currentOfCarl: func() string { return f.dir.Get(f.carl.UserID).Mobile },
			},
			{
				kind: verify.KindEmail, bizKey: verify.BindEmail, address: "Carl@example.com", written: " Carl@EXAMPLE.com", other: "carl@example.org",
				send: func(p deskkit.Principal, address string) string {
					t.Helper()
					if _, err := f.v.SendEmail(ctx, p, verify.EmailSend{BizKey: verify.BindEmail, ToAddress: [][]string{{address}}}); err != nil {
						t.Fatalf("send to %s: %v", address, err)
					}
					return f.sink.LastCode(address)
				},
				check: func(p deskkit.Principal, address, code string) (verify.Link, error) {
					return f.v.CheckEmail(ctx, p, verify.EmailCheck{BizKey: verify.BindEmail, Email: address, Code: code})
				},
				bind: func(p deskkit.Principal, address, code, secret string) (verify.Detail, error) {
					return f.v.ChangeEmail(ctx, p, verify.EmailChange{BizKey: verify.BindEmail, Email: address, Code: code, LinkSecret: secret})
				},
				currentOfCarl: func() string { return f.dir.Get(f.carl.UserID).Email },
			},
		} {
			t.Run(string(tc.kind), func(t *testing.T) {
				checked := func(p deskkit.Principal, address, code string) string {
					t.Helper()
					link, err := tc.check(p, address, code)
					if err != nil {
						t.Fatalf("check %s: %v", address, err)
					}
					return link.Secret
				}
				code := tc.send(f.carl, tc.address)
				secret := checked(f.carl, tc.address, code)

				// Pairs that do not belong together: an input error on
				// linkSecret that names the rule, and nothing changes.
				otherSecret := checked(f.carl, tc.other, tc.send(f.carl, tc.other))
				dorasSecret := checked(dora, tc.address, tc.send(dora, tc.address))
				f.clock.Advance(verify.DefaultResendInterval)
				newer := tc.send(f.carl, tc.address) // replaces the used code; the secret still remembers its own
				for _, bad := range []struct {
					name                  string
					p                     deskkit.Principal
					address, code, secret string
				}{
					{"another code", f.carl, tc.written, wrong(code), secret},
					{"the code sent after the check", f.carl, tc.written, newer, secret},
					{"a secret of another address", f.carl, tc.written, code, otherSecret},
					{"the pair for another address", f.carl, tc.other, code, secret},
					{"another user's secret", f.carl, tc.written, code, dorasSecret},
					{"another user's pair", dora, tc.written, code, secret},
					{"an unknown secret", f.carl, tc.written, code, "dkl_made_up"},
				} {
					_, err := tc.bind(bad.p, bad.address, bad.code, bad.secret)
					var ie *deskkit.InputError
					if !errors.As(err, &ie) || ie.Field != "linkSecret" || !strings.Contains(ie.Rule.String(), "checking this verificationCode") {
						t.Errorf("%s: %v, want an input error on linkSecret naming the rule", bad.name, err)
					}
					if got := tc.currentOfCarl(); got != "" {
						t.Fatalf("%s: Carl's address is %q", bad.name, got)
					}
				}
				// None of them counted a failure or touched a code: the
				// code sent after the check is still active, unattempted.
				var row struct {
					State    string `bun:"state"`
					Attempts int    `bun:"attempts"`
				}
				if err := db.NewSelect().Table("deskkit_verify_codes").Column("state", "attempts").
					Where("user_id = ? AND biz_key = ? AND address = ?", f.carl.UserID, tc.bizKey, tc.address).Scan(ctx, &row); err != nil {
					t.Fatal(err)
				}
				if row.State != "active" || row.Attempts != 0 {
					t.Errorf("the newer code after refused pairs: %+v, want active, 0 attempts", row)
				}

				// The pair of one check: accepted, the address changes.
				d, err := tc.bind(f.carl, tc.written, code, secret)
				if err != nil {
					t.Fatalf("bind with the checked code and its secret: %v", err)
				}
				if got := tc.currentOfCarl(); got != tc.address {
					t.Errorf("Carl's address %q, want %q", got, tc.address)
				}
				if (tc.kind == verify.KindSMS && d.Mobile != tc.address) || (tc.kind == verify.KindEmail && d.Email != tc.address) {
					t.Errorf("detail %+v, want %s", d, tc.address)
				}
				// It used up nothing but the secret: the check consumed the
				// code, once.
				if err := db.NewSelect().Table("deskkit_verify_codes").Column("state", "attempts").
					Where("user_id = ? AND biz_key = ? AND address = ?", f.carl.UserID, tc.bizKey, tc.address).Scan(ctx, &row); err != nil {
					t.Fatal(err)
				}
				if row.State != "active" || row.Attempts != 0 {
					t.Errorf("the newer code after the bind: %+v, want active, 0 attempts", row)
				}

				// Replayed: Carl has the address now.
				if _, err := tc.bind(f.carl, tc.written, code, secret); !errors.Is(err, verify.ErrAlreadyBound) {
					t.Errorf("replay: %v, want ErrAlreadyBound", err)
				}
				// Replayed after the host cleared the address: the secret
				// was spent.
				f.dir.SetAddress(f.carl.UserID, tc.kind, "")
				_, err = tc.bind(f.carl, tc.written, code, secret)
				var ie *deskkit.InputError
				if !errors.As(err, &ie) || ie.Field != "linkSecret" {
					t.Errorf("replay of a spent pair: %v, want an input error on linkSecret", err)
				}
				if _, err := tc.bind(f.carl, tc.written, "", secret); !errors.Is(err, verify.ErrLinkSecret) {
					t.Errorf("the spent secret alone: %v, want ErrLinkSecret", err)
				}
				if got := tc.currentOfCarl(); got != "" {
					t.Errorf("Carl's address after the replays: %q", got)
				}
			})
		}
	})
}

// TestBindPairWithSecretOfBefore: a link secret won before secrets kept the
// hash of their code (code_hash NULL, as the migration leaves them) cannot
// tell which code it belongs to: in a pair it is refused and not spent,
// and alone it still binds.
func TestBindPairWithSecretOfBefore(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, nil)
		code := f.sendSMS(t, f.carl, verify.BindMobile, newMobile)
		link, err := f.checkSMS(f.carl, verify.BindMobile, newMobile, code)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewUpdate().Table("deskkit_verify_links").Set("code_hash = NULL").Where("user_id = ?", f.carl.UserID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		bind := func(code string) error {
			_, err := f.v.ChangeMobile(ctx, f.carl, verify.MobileChange{BizKey: verify.BindMobile, Mobile: newMobile, Country: "CN", Code: code, LinkSecret: link.Secret})
			return err
		}
		var ie *deskkit.InputError
		if err := bind(code); !errors.As(err, &ie) || ie.Field != "linkSecret" {
			t.Errorf("a pair with a secret of before: %v, want an input error on linkSecret", err)
		}
		if err := bind(""); err != nil {
			t.Errorf("the secret of before alone: %v", err)
		}
		if m := f.dir.Get(f.carl.UserID).Mobile; m != newMobile {
			t.Errorf("Carl's number %q, want %s", m, newMobile)
		}
	})
}
