package verify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/limiter"
)

// limitsTable holds the Verifier's rate limits; see package limiter.
const limitsTable = "deskkit_verify_limits"

// takeLimits counts one event at now (Unix milliseconds) against each
// limit and refuses with a
// *deskkit.RateLimitError as soon as one is exhausted (limiter.Take). Call
// it inside a transaction: a refusal should roll back the limits taken
// before it.
func (v *Verifier) takeLimits(ctx context.Context, tx bun.IDB, now int64, limits []limiter.Limit) error {
	return v.takeLimitsThen(ctx, tx, now, limits, nil)
}

// takeLimitsThen is takeLimits followed, if every limit fits, by then's
// statement, in the same statement where the database can
// (limiter.TakeThen); nil then is none.
func (v *Verifier) takeLimitsThen(ctx context.Context, tx bun.IDB, now int64, limits []limiter.Limit, then func(fits string) bun.Query) error {
	var err error
	if then == nil {
		err = limiter.Take(ctx, tx, limitsTable, now, limits)
	} else {
		err = limiter.TakeThen(ctx, tx, limitsTable, now, limits, then)
	}
	if err != nil {
		v.noteRefusal(ctx, err)
		var rl *deskkit.RateLimitError
		if errors.As(err, &rl) {
			return err
		}
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

// giveBack returns one event, taken at takenAt (Unix milliseconds), to
// the limit of key, if the window that counted it is still open.
func giveBack(ctx context.Context, tx bun.IDB, key string, takenAt int64) error {
	if err := limiter.GiveBack(ctx, tx, limitsTable, key, takenAt); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

// The limits of a send of kind k to address by user u; the user's own
// limit comes last. The interval and the hour are the user's for that
// address, so that one user's sends never block another's; the day of the
// address is everybody's, in every tenant, its holder's included, counted
// under a keyed hash of the address.
func (v *Verifier) sendLimits(u User, k Kind, b BizKey, address string) []limiter.Limit {
	ls := []limiter.Limit{
		{
			Name: limitResendInterval,
			Key:  "send-interval:" + userPart(u) + ":" + string(k) + ":" + string(b) + ":" + address,
			Max:  1, Window: v.cfg.ResendInterval,
			Msg: deskkit.Textf("a code for %s was sent to this address less than %s ago", string(b), deskkit.DurationText(v.cfg.ResendInterval)),
		},
		{
			Name: limitPerHour,
			Key:  "send-address:" + userPart(u) + ":" + string(k) + ":" + address,
			Max:  v.cfg.SendsPerHour, Window: time.Hour,
			Msg: deskkit.Textf("at most %d codes an hour may go to one address", v.cfg.SendsPerHour),
		},
	}
	return append(ls, limiter.Limit{
		Name: limitPerAddressPerDay,
		Key:  "send-any:" + string(k) + ":" + v.addressTag(k, address),
		Max:  v.cfg.SendsPerAddressPerDay, Window: 24 * time.Hour,
		Msg: deskkit.Textf("this address has had %d codes today, the most it may get from all accounts", v.cfg.SendsPerAddressPerDay),
	}, limiter.Limit{
		Name: limitPerDay,
		Key:  userSendKey(u),
		Max:  v.cfg.SendsPerDay, Window: 24 * time.Hour,
		Msg: deskkit.Textf("at most %d codes a day may be requested", v.cfg.SendsPerDay),
	})
}

// addressTag names address in the limit shared by every user and tenant:
// an HMAC-SHA256 under a key derived from the server secret, so the table
// holds nothing a tenant could read another's address from. E-mail
// addresses are folded to lower case first: one mailbox is one mailbox
// however its local part is written.
func (v *Verifier) addressTag(k Kind, address string) string {
	if k == KindEmail {
		address = strings.ToLower(address)
	}
	mac := hmac.New(sha256.New, v.addressKey)
	mac.Write([]byte(string(k) + "\x00" + address))
	var sum [sha256.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0]))
}

func userSendKey(u User) string { return "send-user:" + userPart(u) }

// userPart names u in limit keys: "<tenant>:<user>". The keys are built by
// concatenation, not fmt, as they are on every send and check.
func userPart(u User) string {
	return strconv.FormatInt(u.TenantID, 10) + ":" + strconv.FormatInt(u.ID, 10)
}

// failureLimit is the limit of wrong checks of user u, across codes.
func (v *Verifier) failureLimit(u User) limiter.Limit {
	return limiter.Limit{
		Name: limitFailuresPerDay,
		Key:  "fail-user:" + userPart(u),
		Max:  v.cfg.FailuresPerDay, Window: 24 * time.Hour,
		Msg: deskkit.Textf("at most %d wrong codes a day", v.cfg.FailuresPerDay),
	}
}
