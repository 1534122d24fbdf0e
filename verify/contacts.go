package verify

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
)

// MobileChange changes the principal's mobile number. With MODIFY_MOBILE,
// LinkSecret is what checking a MODIFY_MOBILE code sent to the current
// number answered, and Code is a MODIFY_MOBILE code sent to the new number.
// With BIND_MOBILE (for a user without a number) one proof of the new
// number is enough: Code, a BIND_MOBILE code sent to it, or, once a check
// has used that code up, LinkSecret, what checking it answered (and Code
// empty).
type MobileChange struct {
	BizKey     BizKey
	Mobile     string
	Country    string
	ITC        int // optional; if given, it must be the country's code
	Code       string
	LinkSecret string
}

// EmailChange changes the principal's e-mail address, as MobileChange does
// the mobile number, with MODIFY_EMAIL and BIND_EMAIL.
type EmailChange struct {
	BizKey     BizKey
	Email      string
	Code       string
	LinkSecret string
}

// ChangeMobile changes the principal's mobile number with proof and returns
// the updated detail; a notice goes to the old number after the commit.
// Besides the errors of CheckSMS: ErrAlreadyBound, ErrNotBound,
// ErrAddressTaken, ErrLinkSecret (the secret is unknown, spent, expired, or
// was not won on the user's current number), *deskkit.InputError values.
// The code is checked first, in the same transaction that spends the link
// secret and changes the number: a wrong code leaves the secret unspent,
// and a refused change leaves both.
func (v *Verifier) ChangeMobile(ctx context.Context, p deskkit.Principal, req MobileChange) (Detail, error) {
	if req.BizKey != ModifyMobile && req.BizKey != BindMobile {
		return Detail{}, deskkit.Invalid("bizKey", "must be MODIFY_MOBILE or BIND_MOBILE")
	}
	m, err := NormalizeMobile(req.Mobile, req.Country)
	if err != nil {
		return Detail{}, err
	}
	if err := checkITC(req.ITC, m); err != nil {
		return Detail{}, err
	}
	c := change{kind: KindSMS, bizKey: req.BizKey, field: "mobile", address: m.E164, code: req.Code, linkSecret: req.LinkSecret,
		apply: func(ctx context.Context, tx bun.Tx, u User) error {
			return v.dir.SetMobile(ctx, tx, u.TenantID, u.ID, u.Mobile, m.E164, m.Country)
		}}
	return v.change(ctx, p, c)
}

// ChangeEmail changes the principal's e-mail address, as ChangeMobile does
// the mobile number.
func (v *Verifier) ChangeEmail(ctx context.Context, p deskkit.Principal, req EmailChange) (Detail, error) {
	if req.BizKey != ModifyEmail && req.BizKey != BindEmail {
		return Detail{}, deskkit.Invalid("bizKey", "must be MODIFY_EMAIL or BIND_EMAIL")
	}
	email, err := NormalizeEmail("email", req.Email)
	if err != nil {
		return Detail{}, err
	}
	c := change{kind: KindEmail, bizKey: req.BizKey, field: "email", address: email, code: req.Code, linkSecret: req.LinkSecret,
		apply: func(ctx context.Context, tx bun.Tx, u User) error {
			return v.dir.SetEmail(ctx, tx, u.TenantID, u.ID, u.Email, email)
		}}
	return v.change(ctx, p, c)
}

// change is one contact change.
type change struct {
	kind       Kind
	bizKey     BizKey
	field      string // "mobile" or "email"
	address    string // the new one, normalized
	code       string
	linkSecret string
	apply      func(ctx context.Context, tx bun.Tx, u User) error
}

func (v *Verifier) change(ctx context.Context, p deskkit.Principal, c change) (Detail, error) {
	modify := c.bizKey == ModifyMobile || c.bizKey == ModifyEmail
	// BIND_* takes one proof of the new address: its code, or the link
	// secret that checking the code answered (the check used the code up).
	bindBySecret := !modify && c.linkSecret != ""
	if bindBySecret && c.code != "" {
		return Detail{}, deskkit.Invalid("linkSecret", "must be empty when verificationCode is given with %s: give one of them, the code or the linkSecret its check answered", c.bizKey)
	}
	var code string
	if !bindBySecret {
		var err error
		if code, err = normalizeCode(c.code); err != nil {
			return Detail{}, err
		}
	}
	u, err := v.user(ctx, p)
	if err != nil {
		return Detail{}, err
	}
	if err := bindRule(u, c.kind, c.bizKey); err != nil {
		return Detail{}, err
	}
	old := current(u, c.kind)
	switch {
	case modify && c.linkSecret == "":
		return Detail{}, deskkit.Invalid("linkSecret", "is required with %s: check a code sent to your current address first", c.bizKey)
	case c.address == old:
		return Detail{}, deskkit.Invalid(c.field, "is already your address")
	}
	if t, err := v.taken(ctx, u, c.kind, c.address); err != nil {
		return Detail{}, err
	} else if t {
		return Detail{}, ErrAddressTaken
	}
	var wrong error
	var noticeID int64
	err = database.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		noticeID = 0
		if bindBySecret {
			// The secret of a check of this bizKey, by this user, for
			// this new address; spent only if the change commits.
			proof, err := v.redeem(ctx, tx, u.TenantID, u.ID, c.bizKey, c.linkSecret)
			if err != nil {
				return err
			}
			if proof.Kind != c.kind || proof.Address != c.address {
				return ErrLinkSecret
			}
		} else if wrong, err = v.consume(ctx, tx, u, c.kind, c.bizKey, c.address, code); err != nil || wrong != nil {
			return err
		}
		if modify {
			proof, err := v.redeem(ctx, tx, u.TenantID, u.ID, c.bizKey, c.linkSecret)
			if err != nil {
				return err
			}
			if proof.Kind != c.kind || proof.Address != old {
				// Won on some other address: it proves nothing about the
				// current one. Rolling back leaves code and secret unspent.
				return ErrLinkSecret
			}
		}
		if err := c.apply(ctx, tx, u); err != nil {
			return fmt.Errorf("verify: set %s: %w", c.field, err)
		}
		if old == "" {
			return nil
		}
		return tx.NewRaw(`INSERT INTO deskkit_verify_notices (tenant_id, user_id, kind, biz_key, address, new_address, created_at_ms, attempts)
VALUES (?, ?, ?, ?, ?, ?, ?, 0) RETURNING id`, u.TenantID, u.ID, c.kind, c.bizKey, old, mask(c.kind, c.address), v.now()).Scan(ctx, &noticeID)
	})
	if err != nil {
		return Detail{}, err
	}
	if wrong != nil {
		return Detail{}, wrong
	}
	if noticeID != 0 {
		// After the commit, and never fatal: the change is done.
		v.sendNotices(context.WithoutCancel(ctx), noticeID)
	}
	return v.Detail(ctx, p)
}

// noticeRow is a notice waiting in the outbox.
type noticeRow struct {
	ID         int64  `bun:"id"`
	Kind       Kind   `bun:"kind"`
	BizKey     BizKey `bun:"biz_key"`
	Address    string `bun:"address"`
	NewAddress string `bun:"new_address"`
	Attempts   int    `bun:"attempts"`
}

// SendNotices sends the notices of address changes that are still in the
// outbox (their first send failed, or the process stopped before it), and
// returns how many went out. A notice that failed noticeAttempts times is
// dropped with a log line. Hosts run it now and then (the reference server
// does, every minute).
func (v *Verifier) SendNotices(ctx context.Context) (int, error) {
	return v.sendNotices(ctx, 0), nil
}

const noticeAttempts = 5

// sendNotices sends notice id, or (id 0) every notice in the outbox, and
// returns how many were sent. Failures are logged.
func (v *Verifier) sendNotices(ctx context.Context, id int64) int {
	var rows []noticeRow
	q := v.db.NewSelect().Table("deskkit_verify_notices").
		Column("id", "kind", "biz_key", "address", "new_address", "attempts").
		OrderExpr("id").Limit(100)
	if id != 0 {
		q = q.Where("id = ?", id)
	}
	if err := q.Scan(ctx, &rows); err != nil {
		v.cfg.Logger.ErrorContext(ctx, "verify: read notices", slog.Any("error", err))
		return 0
	}
	sent := 0
	for _, n := range rows {
		err := v.deliverNotice(ctx, n)
		if err == nil || n.Attempts+1 >= noticeAttempts {
			if err != nil {
				v.cfg.Logger.ErrorContext(ctx, "verify: notice dropped after failed attempts", slog.Int64("notice", n.ID),
					slog.String("to", mask(n.Kind, n.Address)), slog.Int("attempts", n.Attempts+1), slog.Any("error", err))
			} else {
				sent++
			}
			if _, derr := v.db.NewDelete().Table("deskkit_verify_notices").Where("id = ?", n.ID).Exec(ctx); derr != nil {
				v.cfg.Logger.ErrorContext(ctx, "verify: delete notice", slog.Int64("notice", n.ID), slog.Any("error", derr))
			}
			continue
		}
		v.cfg.Logger.WarnContext(ctx, "verify: notice not sent; it stays in the outbox", slog.Int64("notice", n.ID),
			slog.String("to", mask(n.Kind, n.Address)), slog.Any("error", err))
		if _, uerr := v.db.NewUpdate().Table("deskkit_verify_notices").Set("attempts = attempts + 1").Where("id = ?", n.ID).Exec(ctx); uerr != nil {
			v.cfg.Logger.ErrorContext(ctx, "verify: count notice attempt", slog.Int64("notice", n.ID), slog.Any("error", uerr))
		}
	}
	return sent
}

func (v *Verifier) deliverNotice(ctx context.Context, n noticeRow) error {
	msg, err := v.templates.notice.render(TemplateData{AppName: v.cfg.AppName, BizKey: n.BizKey, Purpose: noticePurpose(n.Kind), NewAddress: n.NewAddress})
	if err != nil {
		return err
	}
	if n.Kind == KindSMS {
		return v.sms.SendSMS(ctx, SMS{To: n.Address, Text: msg.SMS, BizKey: n.BizKey})
	}
	return v.mail.SendMail(ctx, deskkit.Mail{To: n.Address, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, BizKey: string(n.BizKey)})
}

// Purge deletes codes and link secrets that expired a day ago or more and
// rate-limit windows that have closed, and returns how many rows went.
// Nothing it deletes could still pass a check or refuse a request; it only
// keeps the tables small. Hosts run it now and then.
func (v *Verifier) Purge(ctx context.Context) (int64, error) {
	now := v.now()
	dayAgo := now - 24*3600*1000
	var total int64
	for _, q := range []*bun.DeleteQuery{
		v.db.NewDelete().Table("deskkit_verify_codes").Where("expires_at_ms < ?", dayAgo),
		v.db.NewDelete().Table("deskkit_verify_links").Where("expires_at_ms < ?", dayAgo),
		v.db.NewDelete().Table("deskkit_verify_limits").Where("window_end_ms < ?", now),
	} {
		res, err := q.Exec(ctx)
		if err != nil {
			return total, fmt.Errorf("verify: purge: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
