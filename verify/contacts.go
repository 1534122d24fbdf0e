package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
)

// How a change checks its proofs, in detail (the doc comment below says the contract):
//
// In detail: the change is refused (ErrLinkSecret) unless the secret was
// won for this user, this bizKey and the address that is the user's current
// one when the change commits (MODIFY_*) or the new address (BIND_*): a
// secret won by checking some other, unheld address proves nothing. The
// code is checked first, in the transaction that spends the secret and
// writes the new address through the Directory, so a typo in the code does
// not burn the secret, and a refused change (an address taken meanwhile)
// spends neither. A BIND_* secret passes only for the user and tenant it
// was won by, the same bizKey and the same new address, once. A client that
// checked first holds both the code and the secret and may send both (the
// source system's body has both fields): the pair passes when the secret is
// the one that checking this very code for this address answered. The
// secret remembers the keyed hash of the code whose check won it, and the
// change compares the code with that hash; it does not check the code
// again, since the check used it up, so the code is consumed once, by the
// check, and the pair spends only the secret. A pair that does not belong
// together (another code, a secret won elsewhere, by another user, unknown,
// spent or expired) is an input error on linkSecret that spends nothing and
// counts no failure (the secret alone would have been proof enough), and a
// replay is refused: ErrAlreadyBound, or, if the address went meanwhile,
// the spent secret. Secrets won before the hash was kept pass alone only. A
// change with a code that a check used up answers ErrCodeMissing with a
// message that says so and points at the link secret. After a MODIFY_*
// change a notice goes to the old address. EmailChange follows the same
// rules.

// MobileChange changes the principal's mobile number. With MODIFY_MOBILE,
// LinkSecret is what checking a MODIFY_MOBILE code sent to the current
// number answered, and Code is a MODIFY_MOBILE code sent to the new number.
// With BIND_MOBILE one proof of the new number is enough: Code, a
// BIND_MOBILE code sent to it, or LinkSecret, what checking that code
// answered, alone or with that same Code; a Code and a LinkSecret not of
// one check are an input error on linkSecret. The code is checked first,
// in the transaction that spends the secret and writes the address: a
// wrong code does not burn the secret, and a refused change spends neither.
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

// ChangeMobile changes the principal's mobile number with proof, as
// MobileChange says, and returns the updated detail. A notice to the old
// number is written into the outbox in the change's transaction and sent
// after the commit (see Run); with Config.Publisher, EventMobileChanged is
// published in that transaction, and an error of the publisher fails the
// change. Besides the errors of CheckSMS: ErrAlreadyBound, ErrNotBound,
// ErrAddressTaken, ErrLinkSecret, *deskkit.InputError values.
func (v *Verifier) ChangeMobile(ctx context.Context, p deskkit.Principal, req MobileChange) (Detail, error) {
	ctx, call := v.ops.Start(ctx, "verify.ChangeMobile", "")
	r, err := v.changeMobile(ctx, p, req)
	call.End(err)
	return r, err
}

func (v *Verifier) changeMobile(ctx context.Context, p deskkit.Principal, req MobileChange) (Detail, error) {
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
	ctx, call := v.ops.Start(ctx, "verify.ChangeEmail", "")
	r, err := v.changeEmail(ctx, p, req)
	call.End(err)
	return r, err
}

func (v *Verifier) changeEmail(ctx context.Context, p deskkit.Principal, req EmailChange) (Detail, error) {
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
	// secret that checking the code answered (the check used the code up),
	// alone or with that same code, as a client that checked first sends it.
	bindBySecret := !modify && c.linkSecret != ""
	var code string
	if !bindBySecret || c.code != "" {
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
	err = deskkit.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if bindBySecret {
			if err := v.bindProof(ctx, tx, u, c, code); err != nil {
				return err
			}
		} else if wrong, err = v.consume(ctx, tx, u, c.kind, c.bizKey, c.address, code, nil); err != nil || wrong != nil {
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
		// The event first: a publisher that refuses it stops the change
		// before the host's tables are touched; one that took it is
		// rolled back with the change if the Directory refuses it.
		if err := v.publishChange(ctx, tx, u, c.kind, old, c.address); err != nil {
			return err
		}
		if err := c.apply(ctx, tx, u); err != nil {
			return fmt.Errorf("verify: set %s: %w", c.field, err)
		}
		if old == "" {
			return nil
		}
		return v.enqueueNotice(ctx, tx, u, notice{Kind: c.kind, BizKey: c.bizKey, Address: old, NewAddress: mask(c.kind, c.address), Locale: v.locale(ctx)})
	})
	if err != nil {
		return Detail{}, err
	}
	if wrong != nil {
		return Detail{}, wrong
	}
	if old != "" {
		v.noticeCommitted(context.WithoutCancel(ctx))
	}
	return v.Detail(ctx, p)
}

// bindProof spends, inside tx, the link secret of a BIND_* change: the
// secret of a check of this bizKey, by this user, for this new address,
// spent only if the change commits. With code (normalized; "" for none)
// the secret must also be the one that checking that very code answered:
// the code is not checked again, since that check used it up, but
// compared with the hash of the code the secret remembers. A pair that
// does not belong together (either one unknown, spent, expired, or won
// elsewhere) is an input error naming linkSecret, as a pair always was
// before: the client gave two proofs that disagree, and neither is spent.
// A wrong code in a pair costs no failure: the secret alone would have
// been proof enough.
func (v *Verifier) bindProof(ctx context.Context, tx bun.IDB, u User, c change, code string) error {
	proof, codeHash, err := v.redeemLink(ctx, tx, u.TenantID, u.ID, c.bizKey, c.linkSecret)
	if err != nil && (code == "" || !errors.Is(err, ErrLinkSecret)) {
		return err
	}
	ok := err == nil && proof.Kind == c.kind && proof.Address == c.address
	if code == "" {
		if !ok {
			return ErrLinkSecret
		}
		return nil
	}
	if !ok || codeHash == "" || !v.matches(codeHash, u, c.kind, c.bizKey, c.address, code) {
		return deskkit.Invalid("linkSecret",
			"must be the linkSecret that checking this verificationCode for this %s answered with %s, unused and at most %d minutes old; or give only one of the two",
			c.field, c.bizKey, int(LinkSecretTTL/time.Minute))
	}
	return nil
}

// Purge deletes codes and link secrets that expired a day ago or more,
// rate-limit windows that have closed, and notices (with their attempts,
// which hold the old address) sent or dropped a day ago or more, and
// returns how many rows went; none of them could still pass a check,
// refuse a request or be sent. Hosts run it now and then.
func (v *Verifier) Purge(ctx context.Context) (int64, error) {
	ctx, call := v.ops.Start(ctx, "verify.Purge", "")
	r, err := v.purge(ctx)
	call.End(err)
	return r, err
}

func (v *Verifier) purge(ctx context.Context) (int64, error) {
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
	n, err := outbox.PurgeKind(ctx, v.db, noticeKind, time.UnixMilli(dayAgo), 500)
	total += n
	if err != nil {
		return total, fmt.Errorf("verify: purge: %w", err)
	}
	return total, nil
}
