package verify

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/limiter"
	"github.com/deskkit/deskkit/verify/texts"
)

// States of a code row.
const (
	statePending = "pending" // created, not yet accepted by the sender: unusable
	stateActive  = "active"
	stateUsed    = "used"
	stateFailed  = "failed" // its send failed
)

// SMSSend asks for a code by text message.
type SMSSend struct {
	BizKey  BizKey
	Mobile  string // any form NormalizeMobile takes
	Country string // ISO 3166-1 region: "CN"
}

// EmailSend asks for a code by e-mail, to every address of ToAddress (an
// array of arrays, as the API receives it; flattened, duplicates dropped,
// at most MaxEmailRecipients). Each address gets a code of its own.
type EmailSend struct {
	BizKey    BizKey
	ToAddress [][]string
}

// Sent tells the client how long the code is valid and when it may ask
// again for the same address.
type Sent struct {
	ExpiresInSeconds int `json:"expiresInSeconds" minimum:"1" description:"How long the code is valid (300 by default)."`
	ResendInSeconds  int `json:"resendInSeconds" minimum:"0" description:"When the same address may get another code for this bizKey (60 by default)."`
}

// SMSCheck checks a code sent by text message.
type SMSCheck struct {
	BizKey  BizKey
	Mobile  string
	Country string
	Code    string // 1 to 8 digits; shorter ones are padded with leading zeros to 6
}

// EmailCheck checks a code sent by e-mail.
type EmailCheck struct {
	BizKey BizKey
	Email  string
	Code   string
}

// Link is what a successful check answers: a secret that proves, for
// LinkSecretTTL and once, that the user received the code at that address
// for that bizKey.
type Link struct {
	Secret string `json:"linkSecret" pattern:"^dkl_[A-Za-z0-9_-]{43}$" description:"Proves, once and for 10 minutes, that the current user received the code at this address for this bizKey. changeMobile and changeEmail take it: with MODIFY_*, one won on the current address; with BIND_*, one won on the new address, instead of its code. The host redeems the others."`
}

// Proof is what a redeemed link secret proved.
type Proof struct {
	Kind    Kind
	BizKey  BizKey
	Address string
}

// How a send is recorded, in detail (the doc comment below says the contract):
//
// No sender runs inside a database transaction. A send first stores the
// code as pending (unusable) with its limits in one transaction, then calls
// the sender, then records the outcome:
//
//   - the sender took the message: the code becomes active and the send
//     counts toward the limits;
//   - the sender refused it or could not be reached (nothing went out): the
//     code is marked failed, the limits its send took are given back, so
//     the retry the answer invites is not refused by them, and the answer
//     is ErrSendFailed (502), or ErrSendThrottled (503) when the provider
//     throttled it.
//
// The outcome is recorded by a guarded update: an activation is that one
// statement, a failure a transaction that also gives the limits back. If
// the database cannot take it (an outage between the send and the record),
// the outcome waits in the Verifier, and Run retries it with a growing
// pause (0.1 s doubling to 5 s), for up to CodeTTL; SendNotices tries it
// too, for hosts that do not run Run. A code delivered during an outage
// becomes usable once the database is back, and a send that delivered
// answers success, not an error inviting a retry. Only a process that stops
// (or whose Run stops) before the database is back loses the record, and
// then the code stays unusable and counted, never wrongly usable.
//
// The sender runs within the request's deadline, but a client that hangs
// up does not cut it short: a message the gateway may have taken is never
// counted as one that did not go out. A sender that answers an error after
// taking the message (a reply lost past the deadline) gets its limits back:
// the gateway's word is what the Verifier goes by.

// SendSMS sends a code for req.BizKey to the mobile number, which must be
// the user's own or one no other user of the tenant has (ErrAddressTaken);
// BIND_MOBILE needs a user without a number (ErrAlreadyBound),
// MODIFY_MOBILE one with a number (ErrNotBound). Other errors: a
// *deskkit.RateLimitError (see Config), ErrSendFailed or ErrSendThrottled,
// *deskkit.InputError values.
//
// The sender runs outside any transaction, within the request's deadline;
// a client that hangs up does not cut it short. A code becomes usable only
// once the sender took the message. An outcome the database could not take
// is recorded later by Run (or SendNotices), for up to CodeTTL.
func (v *Verifier) SendSMS(ctx context.Context, p deskkit.Principal, req SMSSend) (Sent, error) {
	ctx, call := v.ops.Start(ctx, "verify.SendSMS", "")
	r, err := v.sendSMS(ctx, p, req)
	countCode(ctx, v.tel.sent, "sms", call.End(err))
	return r, err
}

func (v *Verifier) sendSMS(ctx context.Context, p deskkit.Principal, req SMSSend) (Sent, error) {
	if err := checkBizKey(KindSMS, req.BizKey); err != nil {
		return Sent{}, err
	}
	m, err := NormalizeMobile(req.Mobile, req.Country)
	if err != nil {
		return Sent{}, err
	}
	return v.send(ctx, p, KindSMS, req.BizKey, []string{m.E164})
}

// SendEmail sends a code for req.BizKey to each address, with the rules
// and errors of SendSMS; every address must pass them, or nothing is sent
// to any.
func (v *Verifier) SendEmail(ctx context.Context, p deskkit.Principal, req EmailSend) (Sent, error) {
	ctx, call := v.ops.Start(ctx, "verify.SendEmail", "")
	r, err := v.sendEmail(ctx, p, req)
	countCode(ctx, v.tel.sent, "email", call.End(err))
	return r, err
}

func (v *Verifier) sendEmail(ctx context.Context, p deskkit.Principal, req EmailSend) (Sent, error) {
	if err := checkBizKey(KindEmail, req.BizKey); err != nil {
		return Sent{}, err
	}
	to, err := normalizeRecipients(req.ToAddress)
	if err != nil {
		return Sent{}, err
	}
	return v.send(ctx, p, KindEmail, req.BizKey, to)
}

// current is u's address of kind k.
func current(u User, k Kind) string {
	if k == KindSMS {
		return u.Mobile
	}
	return u.Email
}

// bindRule checks the rules of the bizKeys that change an address.
func bindRule(u User, k Kind, b BizKey) error {
	switch b {
	case BindMobile, BindEmail:
		if current(u, k) != "" {
			return ErrAlreadyBound
		}
	case ModifyMobile, ModifyEmail:
		if current(u, k) == "" {
			return ErrNotBound
		}
	}
	return nil
}

// taken reports whether another user of u's tenant holds address.
func (v *Verifier) taken(ctx context.Context, u User, k Kind, address string) (bool, error) {
	if address == current(u, k) {
		return false, nil
	}
	holder, err := v.dir.Holder(ctx, u.TenantID, k, address)
	if err != nil {
		return false, fmt.Errorf("verify: find holder: %w", err)
	}
	return holder != 0 && holder != u.ID, nil
}

// pendingCode is a code row a send wrote, pending until settle. Its row is
// named by its key (the user, kind, bizKey and address) and its hash: a
// row whose hash changed was replaced by a later send.
type pendingCode struct {
	user    User // its TenantID and ID
	kind    Kind
	bizKey  BizKey
	address string
	code    string
	hash    string
	limits  []string // the keys of the limits its send took, once each
	takenAt int64    // when it took them, Unix milliseconds
}

func (v *Verifier) send(ctx context.Context, p deskkit.Principal, k Kind, b BizKey, addrs []string) (Sent, error) {
	u, err := v.user(ctx, p)
	if err != nil {
		return Sent{}, err
	}
	if err := bindRule(u, k, b); err != nil {
		return Sent{}, err
	}
	refused := false
	for _, a := range addrs {
		t, err := v.taken(ctx, u, k, a)
		if err != nil {
			return Sent{}, err
		}
		refused = refused || t
	}
	addrs = slices.Sorted(slices.Values(addrs)) // the lock order of code rows
	var codes []pendingCode
	err = deskkit.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		codes = codes[:0]
		var limits []limiter.Limit
		keys := map[string][]string{}
		for _, a := range addrs {
			ls := v.sendLimits(u, k, b, a)
			if refused {
				// Only the user's own limit: the address's limits guard
				// its holder from floods, and nothing goes to it, so
				// counting there would let anyone block the holder's codes.
				ls = ls[len(ls)-1:]
			}
			limits = append(limits, ls...)
			for _, l := range ls {
				if l.Max > 0 {
					keys[a] = append(keys[a], l.Key)
				}
			}
		}
		now := v.now()
		if refused {
			// The limits count the refused send, and nothing else happens.
			return v.takeLimits(ctx, tx, now, limits)
		}
		var values strings.Builder
		var args []any
		for i, a := range addrs {
			code, err := newCode()
			if err != nil {
				return err
			}
			pc := pendingCode{
				user: User{ID: u.ID, TenantID: u.TenantID}, kind: k, bizKey: b, address: a,
				code: code, hash: v.hashCode(v.codeKeys[0], u, k, b, a, code), limits: keys[a], takenAt: now,
			}
			codes = append(codes, pc)
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?, ?, ?, ?, ?, ?, 0, ?, ?)")
			args = append(args, u.TenantID, u.ID, k, b, a, pc.hash, statePending, now, now+v.cfg.CodeTTL.Milliseconds())
		}
		// The code rows are written by the statement that takes the
		// limits, if every limit fits (on SQLite, by a second statement),
		// and without RETURNING: settle finds each row by its key and
		// hash.
		return v.takeLimitsThen(ctx, tx, now, limits, func(fits string) bun.Query {
			return tx.NewRaw(`INSERT INTO deskkit_verify_codes
    (tenant_id, user_id, kind, biz_key, address, code_hash, state, attempts, created_at_ms, expires_at_ms)
SELECT * FROM (VALUES `+values.String()+`) AS v WHERE `+fits+`
ON CONFLICT (tenant_id, user_id, kind, biz_key, address) DO UPDATE SET
    code_hash = excluded.code_hash, state = excluded.state, attempts = 0,
    created_at_ms = excluded.created_at_ms, expires_at_ms = excluded.expires_at_ms`, args...)
		})
	})
	if err != nil {
		return Sent{}, err
	}
	if refused {
		return Sent{}, ErrAddressTaken
	}
	// Outside the transaction: the rows are pending, so a code whose send
	// fails, or never finishes because the process dies, is never usable.
	// The request's deadline bounds the sends, but a client that hangs up
	// does not cut them short: a message the gateway may have taken must
	// not be counted as one that never went.
	dctx := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(dctx, d)
		defer cancel()
	}
	for i, pc := range codes {
		if err := v.deliverCode(dctx, k, b, pc); err != nil {
			v.cfg.Logger.WarnContext(ctx, "verify: send failed", slog.String("kind", string(k)),
				slog.String("bizKey", string(b)), slog.String("to", mask(k, pc.address)), slog.Any("error", err))
			// What went out is usable and counted; what did not is
			// neither, so the retry the client is invited to make is not
			// refused by the limits of a send that never happened.
			v.settle(dctx, codes[:i], stateActive)
			v.settle(dctx, codes[i:], stateFailed)
			return Sent{}, sendError(err)
		}
	}
	// The messages are out: their codes become usable even if the client
	// has gone meanwhile, or the database is away (then Run retries), and
	// the answer is a success, since a code is on its way.
	v.settle(dctx, codes, stateActive)
	return Sent{
		ExpiresInSeconds: int(v.cfg.CodeTTL / time.Second),
		ResendInSeconds:  int(v.cfg.ResendInterval / time.Second),
	}, nil
}

func (v *Verifier) deliverCode(ctx context.Context, k Kind, b BizKey, pc pendingCode) error {
	set, locale := v.templates.forContext(ctx)
	data := texts.Data{
		AppName: v.cfg.AppName, BizKey: string(b), Purpose: purpose(b).LocalizedMessage(v.cfg.Messages, set.tag), Code: pc.code,
		Minutes: int(v.cfg.CodeTTL.Round(time.Minute) / time.Minute),
	}
	t := set.code(b)
	if k == KindSMS {
		// A text message needs the text alone, not the e-mail's parts
		// (the HTML one costs most).
		var text strings.Builder
		if err := t.sms.Execute(&text, data); err != nil {
			return fmt.Errorf("verify: render template: %w", err)
		}
		return v.sms.SendSMS(ctx, SMS{To: pc.address, Text: text.String(), BizKey: b, Code: pc.code, Locale: locale})
	}
	msg, err := t.render(data)
	if err != nil {
		return err
	}
	return v.mail.SendMail(ctx, deskkit.Mail{To: pc.address, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, BizKey: string(b), Code: pc.code})
}

// newCode returns CodeDigits random decimal digits from crypto/rand.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("verify: random code: %w", err)
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// hashCode is the keyed hash of code in its context: a hash copied to
// another user's, bizKey's or address's row does not pass there.
func (v *Verifier) hashCode(key []byte, u User, k Kind, b BizKey, address, code string) string {
	mac := hmac.New(sha256.New, key)
	buf := make([]byte, 0, 128)
	buf = strconv.AppendInt(buf, u.TenantID, 10)
	buf = append(buf, 0)
	buf = strconv.AppendInt(buf, u.ID, 10)
	for _, s := range [...]string{string(k), string(b), address, code} {
		buf = append(buf, 0)
		buf = append(buf, s...)
	}
	mac.Write(buf)
	var sum [sha256.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0]))
}

// matches compares code with the stored hash in constant time, under the
// current key and the previous one.
func (v *Verifier) matches(stored string, u User, k Kind, b BizKey, address, code string) bool {
	ok := 0
	for _, key := range v.codeKeys {
		ok |= subtle.ConstantTimeCompare([]byte(stored), []byte(v.hashCode(key, u, k, b, address, code)))
	}
	return ok == 1
}

// normalizeCode reads a code of 1 to 8 digits; one given as a JSON number
// lost its leading zeros, so shorter codes are padded back to CodeDigits.
func normalizeCode(code string) (string, error) {
	if code == "" {
		return "", deskkit.Invalid("verificationCode", "is required")
	}
	if len(code) > 8 || strings.Trim(code, "0123456789") != "" {
		return "", deskkit.Invalid("verificationCode", "must be 1 to 8 digits")
	}
	if len(code) < CodeDigits {
		code = strings.Repeat("0", CodeDigits-len(code)) + code
	}
	return code, nil
}

// CheckSMS checks a code sent by SendSMS and answers a link secret. Errors:
// ErrCodeWrong, ErrCodeExpired, ErrCodeMissing, ErrCodeExhausted,
// ErrTooManyFailures, ErrAddressTaken (another user of the tenant holds
// the address now), *deskkit.InputError values.
func (v *Verifier) CheckSMS(ctx context.Context, p deskkit.Principal, req SMSCheck) (Link, error) {
	ctx, call := v.ops.Start(ctx, "verify.CheckSMS", "")
	r, err := v.checkSMS(ctx, p, req)
	countCode(ctx, v.tel.checked, "sms", call.End(err))
	return r, err
}

func (v *Verifier) checkSMS(ctx context.Context, p deskkit.Principal, req SMSCheck) (Link, error) {
	if err := checkBizKey(KindSMS, req.BizKey); err != nil {
		return Link{}, err
	}
	m, err := NormalizeMobile(req.Mobile, req.Country)
	if err != nil {
		return Link{}, err
	}
	return v.check(ctx, p, KindSMS, req.BizKey, m.E164, req.Code)
}

// CheckEmail checks a code sent by SendEmail, as CheckSMS does.
func (v *Verifier) CheckEmail(ctx context.Context, p deskkit.Principal, req EmailCheck) (Link, error) {
	ctx, call := v.ops.Start(ctx, "verify.CheckEmail", "")
	r, err := v.checkEmail(ctx, p, req)
	countCode(ctx, v.tel.checked, "email", call.End(err))
	return r, err
}

func (v *Verifier) checkEmail(ctx context.Context, p deskkit.Principal, req EmailCheck) (Link, error) {
	if err := checkBizKey(KindEmail, req.BizKey); err != nil {
		return Link{}, err
	}
	email, err := NormalizeEmail("email", req.Email)
	if err != nil {
		return Link{}, err
	}
	return v.check(ctx, p, KindEmail, req.BizKey, email, req.Code)
}

func (v *Verifier) check(ctx context.Context, p deskkit.Principal, k Kind, b BizKey, address, code string) (Link, error) {
	code, err := normalizeCode(code)
	if err != nil {
		return Link{}, err
	}
	if !p.Valid() {
		return Link{}, ErrUnauthenticated
	}
	// A check needs no more of the user than the principal names: the
	// code's row is the user's by its key.
	u := User{ID: p.UserID, TenantID: p.TenantID}
	if taken, err := v.taken(ctx, u, k, address); err != nil {
		return Link{}, err
	} else if taken {
		// Someone else took the address since the code went out: it
		// proves nothing the user could use.
		return Link{}, ErrAddressTaken
	}
	link, err := v.newLink(u, k, b, address, v.hashCode(v.codeKeys[0], u, k, b, address, code))
	if err != nil {
		return Link{}, err
	}
	var wrong error
	err = deskkit.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		wrong, err = v.consume(ctx, tx, u, k, b, address, code, &link)
		return err // a wrong code commits: its attempt and failure count
	})
	if err != nil {
		return Link{}, err
	}
	if wrong != nil {
		return Link{}, wrong
	}
	return Link{Secret: link.secret}, nil
}

// consume checks code against u's code for (k, b, address) inside tx and,
// if it matches, uses it up, and with link, stores that link secret for
// it. A wrong code comes back as wrong with a nil err, and the caller
// commits, so that the attempt and the failure count hold; every other
// refusal is err, and the caller rolls back.
//
// The failure limit is held before the comparison, by a guarded update
// that locks its row: parallel checks of one user queue on the
// failure-limit row, so no two compare at once, and none compares once the
// limit is reached. One guarded update of the code row then counts the
// attempt and, if the code's keyed hash is the row's, uses the code up
// (on PostgreSQL, the link secret is written by the same statement). Only
// a wrong code then takes a unit of the failure limit, under the lock the
// hold took.
func (v *Verifier) consume(ctx context.Context, tx bun.IDB, u User, k Kind, b BizKey, address, code string, link *newLink) (wrong, err error) {
	fl := v.failureLimit(u)
	now := v.now()
	if err := limiter.Hold(ctx, tx, limitsTable, now, fl); err != nil {
		v.noteRefusal(ctx, err)
		var rl *deskkit.RateLimitError
		if errors.As(err, &rl) {
			return nil, fmt.Errorf("%w: %w", ErrTooManyFailures, err)
		}
		return nil, fmt.Errorf("verify: %w", err)
	}
	// The row's hash is compared with the code's under each key (the
	// current secret's and the previous one's) by the database: the hashes
	// are keyed, so equality of the stored value tells an attacker nothing
	// a wrong answer does not.
	hashes := make([]string, len(v.codeKeys))
	for i, key := range v.codeKeys {
		hashes[i] = v.hashCode(key, u, k, b, address, code)
	}
	use := tx.NewRaw(`UPDATE deskkit_verify_codes SET attempts = attempts + 1,
    state = CASE WHEN code_hash IN (?) THEN ? ELSE state END
WHERE tenant_id = ? AND user_id = ? AND kind = ? AND biz_key = ? AND address = ?
  AND state = ? AND attempts < ? AND expires_at_ms > ?
RETURNING state, attempts`, bun.List(hashes), stateUsed, u.TenantID, u.ID, k, b, address, stateActive, MaxAttempts, now)
	q := use
	if link != nil && v.postgres {
		q = tx.NewRaw(`WITH c AS (?), l AS (INSERT INTO deskkit_verify_links
    (tenant_id, user_id, kind, biz_key, address, secret_hash, code_hash, created_at_ms, expires_at_ms)
    SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? FROM c WHERE c.state = ?)
SELECT state, attempts FROM c`, use, u.TenantID, u.ID, k, b, address, link.secretHash, link.codeHash, link.createdAt, link.expiresAt, stateUsed)
	}
	var state string
	var attempts int
	err = q.Scan(ctx, &state, &attempts)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, v.whyUnusable(ctx, tx, u, k, b, address, now)
	case err != nil:
		return nil, fmt.Errorf("verify: count attempt: %w", err)
	}
	if state != stateUsed {
		if err := v.takeLimits(ctx, tx, now, []limiter.Limit{fl}); err != nil {
			return nil, err
		}
		return &wrongCode{left: MaxAttempts - attempts}, nil
	}
	if link != nil && !v.postgres {
		if err := link.store(ctx, tx, u, k, b, address); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// whyUnusable tells why no code could be checked.
func (v *Verifier) whyUnusable(ctx context.Context, tx bun.IDB, u User, k Kind, b BizKey, address string, now int64) error {
	var row struct {
		State     string `bun:"state"`
		Attempts  int    `bun:"attempts"`
		ExpiresAt int64  `bun:"expires_at_ms"`
	}
	err := tx.NewSelect().Table("deskkit_verify_codes").Column("state", "attempts", "expires_at_ms").
		Where("tenant_id = ? AND user_id = ? AND kind = ? AND biz_key = ? AND address = ?", u.TenantID, u.ID, k, b, address).
		Scan(ctx, &row)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrCodeMissing
	case err != nil:
		return fmt.Errorf("verify: read code: %w", err)
	case row.State == stateUsed:
		return &codeUsed{bind: b == BindMobile || b == BindEmail}
	case row.State != stateActive:
		return ErrCodeMissing
	case row.Attempts >= MaxAttempts:
		return ErrCodeExhausted
	case row.ExpiresAt <= now:
		return ErrCodeExpired
	}
	return ErrCodeMissing
}

// codeUsed is ErrCodeMissing for a code that a check (or a change) used
// up, with a message that says so rather than "request one first".
type codeUsed struct{ bind bool }

func (e *codeUsed) Error() string { return "verify: code already used" }

func (e *codeUsed) Unwrap() error { return ErrCodeMissing }

func (e *codeUsed) ClientMessage() string { return e.text().String() }

// LocalizedMessage is ClientMessage in tag's language.
func (e *codeUsed) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.text().LocalizedMessage(m, tag)
}

func (e *codeUsed) text() deskkit.Text {
	if e.bind {
		return deskkit.Textf("the code sent for this bizKey and address was already used by a check: " +
			"change the address with the linkSecret that check answered (alone, or with this verificationCode), or request a new code")
	}
	return deskkit.Textf("the code sent for this bizKey and address was already used: request a new code")
}

// wrongCode is ErrCodeWrong with the attempts left in its message.
type wrongCode struct{ left int }

func (e *wrongCode) Error() string { return ErrCodeWrong.Error() }

func (e *wrongCode) Unwrap() error { return ErrCodeWrong }

func (e *wrongCode) ClientMessage() string { return e.text().String() }

// LocalizedMessage is ClientMessage in tag's language.
func (e *wrongCode) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.text().LocalizedMessage(m, tag)
}

func (e *wrongCode) text() deskkit.Text {
	if e.left <= 0 {
		return deskkit.Textf("%s; no attempts are left: request a new code", ErrCodeWrong)
	}
	if e.left == 1 {
		return deskkit.Textf("%s; 1 attempt is left", ErrCodeWrong)
	}
	return deskkit.Textf("%s; %d attempts are left", ErrCodeWrong, e.left)
}

// linkPrefix starts every link secret, so that one pasted in the wrong
// place is recognisable.
const linkPrefix = "dkl_"

// newLink is a new link secret for what a check is about to prove, with
// codeHash, the keyed hash of the code whose check proves it. The hash
// lets a BIND_* change that carries both the code and the secret tell
// whether they belong together (see bindPair). consume stores it, in the
// transaction that uses the code up.
type newLink struct {
	secret, secretHash, codeHash string
	createdAt, expiresAt         int64 // Unix milliseconds
}

func (v *Verifier) newLink(u User, k Kind, b BizKey, address, codeHash string) (newLink, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return newLink{}, fmt.Errorf("verify: random link secret: %w", err)
	}
	secret := linkPrefix + base64.RawURLEncoding.EncodeToString(buf)
	now := v.now()
	return newLink{secret: secret, secretHash: hashLink(secret), codeHash: codeHash, createdAt: now, expiresAt: now + LinkSecretTTL.Milliseconds()}, nil
}

// store writes l, the link secret of u's check for (k, b, address).
func (l *newLink) store(ctx context.Context, tx bun.IDB, u User, k Kind, b BizKey, address string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO deskkit_verify_links
    (tenant_id, user_id, kind, biz_key, address, secret_hash, code_hash, created_at_ms, expires_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, u.TenantID, u.ID, k, b, address, l.secretHash, l.codeHash, l.createdAt, l.expiresAt)
	if err != nil {
		return fmt.Errorf("verify: store link secret: %w", err)
	}
	return nil
}

func hashLink(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Redeem spends a link secret that a check of a code for bizKey answered
// to the principal, and returns what it proved. Hosts guard their own
// flows with it (a password update after PASSWORD_UPDATE). db may be the
// host's transaction, so that the secret is spent only if the host's
// change commits; nil uses the Verifier's database. A secret not good for
// the user and bizKey (see Link) is ErrLinkSecret.
func (v *Verifier) Redeem(ctx context.Context, db bun.IDB, p deskkit.Principal, bizKey BizKey, secret string) (Proof, error) {
	ctx, call := v.ops.Start(ctx, "verify.Redeem", "")
	r, err := v.redeemSecret(ctx, db, p, bizKey, secret)
	call.End(err)
	return r, err
}

func (v *Verifier) redeemSecret(ctx context.Context, db bun.IDB, p deskkit.Principal, bizKey BizKey, secret string) (Proof, error) {
	if !p.Valid() {
		return Proof{}, ErrUnauthenticated
	}
	if db == nil {
		db = v.db
	}
	return v.redeem(ctx, db, p.TenantID, p.UserID, bizKey, secret)
}

func (v *Verifier) redeem(ctx context.Context, db bun.IDB, tenantID, userID int64, b BizKey, secret string) (Proof, error) {
	p, _, err := v.redeemLink(ctx, db, tenantID, userID, b, secret)
	return p, err
}

// redeemLink is redeem that also answers the keyed hash of the code whose
// check won the secret ("" for a secret stored before that was kept).
func (v *Verifier) redeemLink(ctx context.Context, db bun.IDB, tenantID, userID int64, b BizKey, secret string) (p Proof, codeHash string, err error) {
	if !strings.HasPrefix(secret, linkPrefix) {
		return Proof{}, "", ErrLinkSecret
	}
	var rows []struct {
		Kind     Kind           `bun:"kind"`
		Address  string         `bun:"address"`
		CodeHash sql.NullString `bun:"code_hash"`
	}
	err = db.NewRaw(`UPDATE deskkit_verify_links SET used = TRUE
WHERE secret_hash = ? AND tenant_id = ? AND user_id = ? AND biz_key = ? AND NOT used AND expires_at_ms > ?
RETURNING kind, address, code_hash`, hashLink(secret), tenantID, userID, b, v.now()).Scan(ctx, &rows)
	if err != nil {
		return Proof{}, "", fmt.Errorf("verify: redeem link secret: %w", err)
	}
	if len(rows) == 0 {
		return Proof{}, "", ErrLinkSecret
	}
	return Proof{Kind: rows[0].Kind, BizKey: b, Address: rows[0].Address}, rows[0].CodeHash.String, nil
}
