package verify_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/logsender"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// phone is an SMSSender that prints each message with its code masked: a
// host passes a real sender (one of the packages under verify/sms).
type phone struct{ last string }

var sixDigits = regexp.MustCompile(`\b\d{6}\b`)

func (p *phone) SendSMS(_ context.Context, m verify.SMS) error {
	p.last = m.Code
	fmt.Println("SMS to", m.To+":", sixDigits.ReplaceAllString(m.Text, "######"))
	return nil
}

func openExampleDB() (*bun.DB, func()) {
	dir, err := os.MkdirTemp("", "verify-example")
	if err != nil {
		log.Fatal(err)
	}
	dsn := "file:" + filepath.Join(dir, "example.db") + "?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	sqldb.SetMaxOpenConns(8)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// A user proves a number by checking the code sent to it; the check
// answers a link secret, which the host redeems, once, for its own flow:
// here a password change after PASSWORD_UPDATE.
func Example() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	if err := verify.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	// The host's users, behind a verify.Directory; an in-memory one here.
	users := verifytest.NewDirectory()
	ann := users.Add(verify.User{ID: 1, TenantID: 1, Username: "ann", Mobile: "+8613800138000", Country: "CN"})

	sms := &phone{}
	secret := []byte("an example secret of at least 32 bytes; use crypto/rand")
	v, err := verify.New(db, users, sms, logsender.Sender{}, secret, nil)
	if err != nil {
		log.Fatal(err)
	}

	if _, err := v.SendSMS(ctx, ann, verify.SMSSend{BizKey: verify.PasswordUpdate, Mobile: "138 0013 8000", Country: "CN"}); err != nil {
		log.Fatal(err)
	}
	typo := "000000"
	if sms.last == typo {
		typo = "111111"
	}
	_, err = v.CheckSMS(ctx, ann, verify.SMSCheck{BizKey: verify.PasswordUpdate, Mobile: "+8613800138000", Country: "CN", Code: typo})
	fmt.Println("a wrong code:", errors.Is(err, verify.ErrCodeWrong))
	link, err := v.CheckSMS(ctx, ann, verify.SMSCheck{BizKey: verify.PasswordUpdate, Mobile: "+8613800138000", Country: "CN", Code: sms.last})
	if err != nil {
		log.Fatal(err)
	}

	// In the host's password-change transaction:
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		proof, err := v.Redeem(ctx, tx, ann, verify.PasswordUpdate, link.Secret)
		if err != nil {
			return err
		}
		fmt.Println("proved", proof.Address, "for", proof.BizKey)
		return nil // ... and update the password through tx
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = v.Redeem(ctx, nil, ann, verify.PasswordUpdate, link.Secret)
	fmt.Println("a second redemption:", errors.Is(err, verify.ErrLinkSecret))
	// Output:
	// SMS to +8613800138000: ###### is your deskkit code to change your password. It expires in 5 minutes. Do not share it.
	// a wrong code: true
	// proved +8613800138000 for PASSWORD_UPDATE
	// a second redemption: true
}

// Mobile numbers are checked against their country and kept in E.164.
func ExampleNormalizeMobile() {
	m, err := verify.NormalizeMobile("138 0013 8000", "cn")
	fmt.Println(m.E164, m.Country, m.ITC, err)
	_, err = verify.NormalizeMobile("+1 201 555 0123", "CN")
	fmt.Println(err)
	// Output:
	// +8613800138000 CN 86 <nil>
	// mobile must be a valid phone number of CN
}

// The types of the events a Verifier publishes through Config.Publisher,
// for the host's catalogue, each with an example of its data.
func ExampleEventTypes() {
	for _, et := range verify.EventTypes() {
		data, err := json.Marshal(et.Example)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(et.Name, string(data))
	}
	// Output:
	// user.mobile.changed {"tenantId":1,"actor":{"id":7,"name":"Ann Lee"},"userId":7,"oldAddress":"+86*******8000","newAddress":"+86*******7000"}
	// user.email.changed {"tenantId":1,"actor":{"id":7,"name":"Ann Lee"},"userId":7,"oldAddress":"a***@example.com","newAddress":"a***@example.org"}
}

// A host runs the Verifier's notice worker beside its HTTP server, until
// it is told to stop; the worker then finishes the notice in flight. (No
// output: the example is compiled, not run, as it waits for a signal.)
func ExampleVerifier_Run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, done := openExampleDB()
	defer done()
	if err := verify.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	secret := []byte("an example secret of at least 32 bytes; use crypto/rand")
	v, err := verify.New(db, verifytest.NewDirectory(), logsender.Sender{}, logsender.Sender{}, secret, nil)
	if err != nil {
		log.Fatal(err)
	}
	// The host serves HTTP (httpapi mounting v) in another goroutine.
	if err := v.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
