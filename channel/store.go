package channel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
)

// Storage. Every query filters on tenant_id, so another tenant's channel
// behaves exactly as one that does not exist. Addresses and secrets are
// stored sealed (crypto.go); only Add's answer ever shows a secret.
//
// Lock order: a write that changes how many channels of a type a tenant
// has takes that (tenant, type) row of deskkit_channel_counts first, then
// channel rows. Add and Delete do; Replace changes no count and locks only
// its channel row.
//
// Every statement that changes what a delivery uses (type, name, address,
// secret, enabled) adds 1 to the row's version, in the same statement, so
// that the worker's cache of opened channels (cache.go) sees the change at
// its next claim: Replace, Enable and disable do. The failure clock's
// updates change nothing sent and leave it.

// channelRow is a row of deskkit_channels as the registry reads it.
type channelRow struct {
	bun.BaseModel `bun:"table:deskkit_channels,alias:c"`

	ID             int64   `bun:"id"`
	Type           Type    `bun:"channel_type"`
	Name           string  `bun:"name"`
	AddressEnc     string  `bun:"address_enc"`
	SecretEnc      *string `bun:"secret_enc"`
	Enabled        bool    `bun:"enabled"`
	Events         *string `bun:"events"`
	DisabledReason *string `bun:"disabled_reason"`
	// DisabledReasonJSON is the reason's key and arguments, for rows
	// disabled since they are kept (see disable).
	DisabledReasonJSON *string `bun:"disabled_reason_json"`
	DisabledAt         *int64  `bun:"disabled_at_ms"`
	// The health (see setHealth).
	DisabledBy           *int64  `bun:"disabled_by"`
	FailingSince         *int64  `bun:"failing_since_ms"`
	FailedAttempts       int     `bun:"failed_attempts"`
	LastFailureStatus    *int    `bun:"last_failure_status"`
	LastFailureError     *string `bun:"last_failure_error"`
	LastFailureErrorJSON *string `bun:"last_failure_error_json"`
	// PreviousSecretEnc is a webhook's secret that a rotation replaced,
	// sealed, and PreviousUntil (Unix ms) when it stops signing; both nil
	// when no overlap runs (see RotateSecret).
	PreviousSecretEnc *string `bun:"previous_secret_enc"`
	PreviousUntil     *int64  `bun:"previous_secret_until_ms"`
	// Signing is what signs a webhook's requests: nil for its HMAC secret
	// alone. Ed25519KeyEnc is its ed25519 signing key, sealed, and
	// Ed25519PublicKey the key's public key; PreviousKeyEnc the key a
	// rotation replaced, signing until PreviousUntil.
	Signing          *string `bun:"signing"`
	Ed25519KeyEnc    *string `bun:"ed25519_key_enc"`
	Ed25519PublicKey *string `bun:"ed25519_public_key"`
	PreviousKeyEnc   *string `bun:"previous_ed25519_key_enc"`
	// HeadersEnc are a webhook's custom headers, sealed (fieldHeaders);
	// nil for none.
	HeadersEnc *string `bun:"headers_enc"`
}

// unsealedColumns are the columns List and Get leave out: the sealed keys,
// which they never show.
var unsealedColumns = []string{"secret_enc", "previous_secret_enc", "ed25519_key_enc", "previous_ed25519_key_enc"}

// Add stores a new channel for p's tenant and returns it with its id; a
// WEBHOOK channel's answer also carries its new signing secret, which only
// RevealSecret and RotateSecret show again. in.ID must be 0. A WORKPLACE_CHAT channel takes an
// optional DingTalk signing secret in in.Secret; no other type takes one.
//
// Only admins, and principals the Config's Authorizer allows, may add.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// the field (Input's fields give the rules); an error matching ErrAddressBlocked for a
// URL whose host the SSRF guard refuses; *QuotaError when the tenant has
// as many channels of the type as Type.Quota allows; ErrNameTaken.
func (r *ChannelRegistry) Add(ctx context.Context, p deskkit.Principal, in Input) (Added, error) {
	ctx, call := r.ops.Start(ctx, "channel.Add", "")
	v, err := r.add(ctx, p, in)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) add(ctx context.Context, p deskkit.Principal, in Input) (Added, error) {
	tenantID, err := r.authorize(ctx, p, ActionAdd)
	if err != nil {
		return Added{}, err
	}
	if in.ID != 0 {
		return Added{}, deskkit.Invalid("id", "must not be sent when adding a channel: the new channel's id is in the answer")
	}
	ch, secret, err := r.normalize(p, in)
	if err != nil {
		return Added{}, err
	}
	if ch.Events, err = r.normalizeEvents(in.Events); err != nil {
		return Added{}, err
	}
	if err := checkRateLimit(in.RateLimit); err != nil {
		return Added{}, err
	}
	if ch.Headers, err = normalizeHeaders(ch.Type, in.Headers); err != nil {
		return Added{}, err
	}
	var added Added
	if added.Secret, err = kindOf(ch.Type).NewSecret(); err != nil {
		return Added{}, fmt.Errorf("channel: add: %w", err)
	} else if added.Secret != "" {
		secret = &added.Secret
	}
	addressEnc, secretEnc, err := r.sealRow(tenantID, ch.Type, ch.Address, secret)
	if err != nil {
		return Added{}, err
	}
	headersEnc, err := r.sealHeaders(tenantID, ch.Type, ch.Headers)
	if err != nil {
		return Added{}, err
	}
	now := r.now()
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := takeQuota(ctx, tx, tenantID, ch.Type); err != nil {
			return err
		}
		err := tx.NewRaw(`INSERT INTO deskkit_channels
    (tenant_id, channel_type, name, name_folded, address_enc, secret_enc, headers_enc, events, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id`, tenantID, string(ch.Type), ch.Name, deskkit.FoldName(ch.Name), addressEnc, secretEnc, headersEnc,
			encodeEvents(ch.Events), now, now).Scan(ctx, &ch.ID)
		if err != nil || in.RateLimit == 0 {
			return err
		}
		return r.setRateLimit(ctx, tx, tenantID, ch.ID, in.RateLimit, now)
	})
	if err != nil {
		return Added{}, writeError("add", err)
	}
	ch.Enabled, ch.Health = true, HealthHealthy
	if ownsSecret(ch.Type) {
		ch.Signing = SigningHMAC
	}
	ch.RateLimit = in.RateLimit
	ch.InFlightLimit, _ = r.worker.Limits()
	if ch.Events == nil {
		ch.Events = []string{}
	}
	if ch.Headers == nil {
		ch.Headers = []Header{}
	}
	added.Channel = ch
	return added, nil
}

// takeQuota counts one more channel of type t for the tenant, or refuses
// with a *QuotaError. One guarded upsert, so that two transactions cannot
// both take the last unit: on PostgreSQL the second waits for the first's
// row lock and then sees its count; SQLite runs one writer at a time.
func takeQuota(ctx context.Context, tx bun.IDB, tenantID int64, t Type) error {
	quota := t.Quota()
	if quota < 1 {
		return &QuotaError{Type: t, Quota: max(quota, 0)}
	}
	var n []int
	err := tx.NewRaw(`INSERT INTO deskkit_channel_counts AS cc (tenant_id, channel_type, n)
VALUES (?, ?, 1)
ON CONFLICT (tenant_id, channel_type) DO UPDATE SET n = cc.n + 1
WHERE cc.n < ?
RETURNING n`, tenantID, string(t), quota).Scan(ctx, &n)
	if err != nil {
		return fmt.Errorf("take quota: %w", err)
	}
	if len(n) == 0 {
		return &QuotaError{Type: t, Quota: quota}
	}
	return nil
}

// Replace overwrites the name and address of p's tenant's channel in.ID,
// validated exactly as Add validates them, and returns the channel. The
// type cannot change. A WEBHOOK channel keeps its signing secret
// (RotateSecret changes it); for a WORKPLACE_CHAT channel, in.Secret nil keeps the stored secret, "" removes
// it and any other value replaces it.
//
// Errors: those of Add but the quota (ErrForbidden for a principal who may
// not replace), and ErrNotFound for an id that names no channel of the
// tenant.
func (r *ChannelRegistry) Replace(ctx context.Context, p deskkit.Principal, in Input) (Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.Replace", "")
	v, err := r.replace(ctx, p, in)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) replace(ctx context.Context, p deskkit.Principal, in Input) (Channel, error) {
	tenantID, err := r.authorize(ctx, p, ActionReplace)
	if err != nil {
		return Channel{}, err
	}
	if in.ID == 0 {
		return Channel{}, deskkit.Invalid("id", "is required to replace a channel")
	}
	if err := deskkit.CheckID("id", in.ID); err != nil {
		return Channel{}, err
	}
	ch, secret, err := r.normalize(p, in)
	if err != nil {
		return Channel{}, err
	}
	if ch.Events, err = r.normalizeEvents(in.Events); err != nil {
		return Channel{}, err
	}
	if err := checkRateLimit(in.RateLimit); err != nil {
		return Channel{}, err
	}
	if ch.Headers, err = normalizeHeaders(ch.Type, in.Headers); err != nil {
		return Channel{}, err
	}
	addressEnc, secretEnc, err := r.sealRow(tenantID, ch.Type, ch.Address, secret)
	if err != nil {
		return Channel{}, err
	}
	headersEnc, err := r.sealHeaders(tenantID, ch.Type, ch.Headers)
	if err != nil {
		return Channel{}, err
	}
	now := r.now()
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var stored channelRow
		err := tx.NewSelect().Model(&stored).Column("channel_type", "enabled", "disabled_reason", "disabled_reason_json", "disabled_at_ms",
			"disabled_by", "failing_since_ms", "failed_attempts", "last_failure_status", "last_failure_error", "last_failure_error_json",
			"signing", "ed25519_public_key", "previous_secret_until_ms").
			Where("c.tenant_id = ? AND c.id = ?", tenantID, ch.ID).
			Scan(ctx)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case stored.Type != ch.Type:
			return deskkit.Invalid("channelType", "cannot change from %s to %s; delete the channel and add a new one", stored.Type, ch.Type)
		}
		ch.Enabled = stored.Enabled
		if ownsSecret(ch.Type) {
			ch.Signing = SigningHMAC
			if stored.Signing != nil {
				ch.Signing = Signing(*stored.Signing)
			}
			if stored.Ed25519PublicKey != nil {
				ch.PublicKey = *stored.Ed25519PublicKey
			}
		}
		if u := stored.PreviousUntil; u != nil && *u > now {
			t := time.UnixMilli(*u).UTC()
			ch.PreviousSecretUntil = &t
		}
		var reason deskkit.Text
		reason, ch.DisabledDate = disabled(stored)
		ch.DisabledReason = r.reader(ctx).Write(reason)
		hs := storedChannel{Channel: ch}
		setHealth(r.reader(ctx), &hs, stored)
		ch = hs.Channel
		q := tx.NewUpdate().Model((*channelRow)(nil)).
			Set("name = ?", ch.Name).
			Set("name_folded = ?", deskkit.FoldName(ch.Name)).
			Set("address_enc = ?", addressEnc).
			Set("headers_enc = ?", headersEnc).
			Set("events = ?", encodeEvents(ch.Events)).
			Set("updated_at_ms = ?", now).
			Set("version = version + 1"). // the worker's cache sees the change
			// A rotation's overlap that has ended goes with the write.
			Set("previous_secret_enc = CASE WHEN previous_secret_until_ms > ? THEN previous_secret_enc END", now).
			Set("previous_ed25519_key_enc = CASE WHEN previous_secret_until_ms > ? THEN previous_ed25519_key_enc END", now).
			Set("previous_secret_until_ms = CASE WHEN previous_secret_until_ms > ? THEN previous_secret_until_ms END", now).
			Where("c.tenant_id = ? AND c.id = ? AND c.channel_type = ?", tenantID, ch.ID, string(ch.Type))
		// Only a sent secret touches the column, so that a replace that
		// keeps the secret cannot write back one read before a parallel
		// replace set another.
		if secret != nil {
			q = q.Set("secret_enc = ?", secretEnc)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound // deleted since the select
		}
		return r.setRateLimit(ctx, tx, tenantID, ch.ID, in.RateLimit, now)
	})
	if err != nil {
		return Channel{}, writeError("replace", err)
	}
	if ch.Events == nil {
		ch.Events = []string{}
	}
	if ch.Headers == nil {
		ch.Headers = []Header{}
	}
	chans := []Channel{ch}
	if err := r.withFlow(ctx, r.db, tenantID, chans); err != nil {
		return Channel{}, err
	}
	if err := r.withHealth(ctx, r.db, tenantID, chans); err != nil {
		return Channel{}, err
	}
	return chans[0], nil
}

// List returns p's tenant's channels of channelType (a canonical name or
// an alias, see ParseType) in id order, never with a secret; an empty
// slice when there are none. Every user of the tenant may list; a
// principal who is not an admin and whom the Authorizer does not allow
// ActionViewAddresses sees each address as MaskAddress writes it, and
// every URL in a disabled reason masked so.
//
// Errors: ErrUnauthenticated; a *deskkit.InputError naming channelType; an
// error of the Authorizer.
func (r *ChannelRegistry) List(ctx context.Context, p deskkit.Principal, channelType string) ([]Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.List", "")
	v, err := r.listChannels(ctx, p, channelType)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) listChannels(ctx context.Context, p deskkit.Principal, channelType string) ([]Channel, error) {
	if _, err := tenant(p); err != nil {
		return nil, err
	}
	t, err := ParseType(channelType)
	if err != nil {
		return nil, err
	}
	return r.list(ctx, p, t)
}

// ListAll is List of every type: p's tenant's channels in id order.
//
// Errors: ErrUnauthenticated; an error of the Authorizer.
func (r *ChannelRegistry) ListAll(ctx context.Context, p deskkit.Principal) ([]Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.ListAll", "")
	v, err := r.listAll(ctx, p)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) listAll(ctx context.Context, p deskkit.Principal) ([]Channel, error) {
	return r.list(ctx, p, "")
}

// list is List of type t, or of every type if t is "".
func (r *ChannelRegistry) list(ctx context.Context, p deskkit.Principal, t Type) ([]Channel, error) {
	tenantID, err := tenant(p)
	if err != nil {
		return nil, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return nil, err
	}
	var out []Channel
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) error {
		var rows []channelRow
		q := db.NewSelect().Model(&rows).
			ExcludeColumn(unsealedColumns...).
			Where("c.tenant_id = ?", tenantID).
			OrderExpr("c.id")
		if t != "" {
			q = q.Where("c.channel_type = ?", string(t))
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("channel: list: %w", err)
		}
		stored, err := r.openRows(r.reader(ctx), tenantID, rows)
		if err != nil {
			return err
		}
		out = make([]Channel, len(stored))
		for i, s := range stored {
			out[i] = listed(s, full)
		}
		if err := r.withFlow(ctx, db, tenantID, out); err != nil {
			return err
		}
		return r.withHealth(ctx, db, tenantID, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listed is s as List shows it: never with its secret, and with the
// address and the URLs of a disabled reason masked unless full.
func listed(s storedChannel, full bool) Channel {
	c := s.Channel
	c.Headers = slices.Clone(s.Headers)
	if c.Headers == nil {
		c.Headers = []Header{}
	}
	if !full {
		c.Headers = maskedHeaders(s.Headers)
		c.Address = MaskAddress(s.Type, s.Address)
		c.DisabledReason = maskURLs(s.DisabledReason)
		c.LastError = maskURLs(s.LastError)
	}
	return c
}

// reader is the Localizer of ctx's reader, which writes what the registry
// stored as messages (a disabled reason, an attempt's error): English
// without one; one that names a language but no Messages (WithLanguage on
// a bare context) writes from Config.Messages.
func (r *ChannelRegistry) reader(ctx context.Context) deskkit.Localizer {
	l, ok := deskkit.LocalizerOf(ctx)
	if ok && l.Messages() == nil {
		return r.cfg.Messages.Localizer(l.Language())
	}
	return l
}

// Get returns p's tenant's channel id exactly as List shows it: never with
// a secret, and masked for a principal who is not an admin and whom the
// Authorizer does not allow ActionViewAddresses. Every user of the tenant
// may get a channel, as every user may list them.
//
// Errors: ErrUnauthenticated; a *deskkit.InputError naming id; ErrNotFound
// for an id that names no channel of the tenant (another tenant's channel
// included); an error of the Authorizer.
func (r *ChannelRegistry) Get(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.Get", "")
	v, err := r.get(ctx, p, id)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) get(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	tenantID, err := tenant(p)
	if err != nil {
		return Channel{}, err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return Channel{}, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return Channel{}, err
	}
	var chans []Channel
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) error {
		var row channelRow
		err := db.NewSelect().Model(&row).
			ExcludeColumn(unsealedColumns...).
			Where("c.tenant_id = ? AND c.id = ?", tenantID, id).
			Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("channel: get: %w", err)
		}
		s, err := r.openRow(r.reader(ctx), tenantID, row)
		if err != nil {
			return err
		}
		chans = []Channel{listed(s, full)}
		if err := r.withFlow(ctx, db, tenantID, chans); err != nil {
			return err
		}
		return r.withHealth(ctx, db, tenantID, chans)
	})
	if err != nil {
		return Channel{}, err
	}
	return chans[0], nil
}

// Delete deletes p's tenant's channel id, which frees its unit of the
// type's quota; its pending deliveries end FAILED ("channel deleted").
//
// Errors: ErrUnauthenticated; ErrForbidden for a principal who may not
// delete; a *deskkit.InputError naming id; ErrNotFound for an id that names
// no channel of the tenant.
func (r *ChannelRegistry) Delete(ctx context.Context, p deskkit.Principal, id int64) error {
	ctx, call := r.ops.Start(ctx, "channel.Delete", "")
	err := r.deleteChannel(ctx, p, id)
	call.End(err)
	r.wrote(ctx, p, err)
	return err
}

func (r *ChannelRegistry) deleteChannel(ctx context.Context, p deskkit.Principal, id int64) error {
	tenantID, err := r.authorize(ctx, p, ActionDelete)
	if err != nil {
		return err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return err
	}
	now := r.now()
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		// The type comes first, so that the count row is locked before the
		// channel row (the lock order). It never changes, so reading it
		// unlocked is safe.
		var t Type
		err := tx.NewSelect().Model((*channelRow)(nil)).Column("channel_type").
			Where("c.tenant_id = ? AND c.id = ?", tenantID, id).
			Scan(ctx, &t)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.NewUpdate().Table("deskkit_channel_counts").
			Set("n = n - 1").
			Where("tenant_id = ? AND channel_type = ? AND n > 0", tenantID, string(t)).
			Exec(ctx)
		if err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*channelRow)(nil)).
			Where("c.tenant_id = ? AND c.id = ?", tenantID, id).
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound // deleted since the select; the rollback restores the count
		}
		// Nothing is left to deliver to; attempts in flight record
		// their outcomes.
		if _, err = outbox.FailPending(ctx, tx, tenantID, outboxKind, id, reasonDeleted, time.UnixMilli(now)); err != nil {
			return err
		}
		return outbox.ForgetTargets(ctx, tx, outboxKind, tenantID, []int64{id})
	})
	if err != nil {
		return writeError("delete", err)
	}
	return nil
}

// storedChannel is a channel with its secret decrypted ("" if none), for
// the senders; during a rotation's overlap, with the secret it replaced
// and when that stops signing.
type storedChannel struct {
	Channel
	Secret        string
	Previous      string
	PreviousUntil time.Time
	// Key and PreviousKey are a webhook's ed25519 signing keys ("whsk_"),
	// as Secret and Previous are its HMAC secrets.
	Key, PreviousKey string
}

// target is s as its kind sends to it: the kind's target, with the
// previous secret of a rotation's overlap.
func (s storedChannel) target(k kind.Kind) notify.Target {
	t := k.Target(s.Name, s.Address, s.Secret)
	if s.Key != "" {
		t = webhook.WithKey(t, s.Key)
	}
	t.Previous, t.PreviousUntil, t.PreviousKey = s.Previous, s.PreviousUntil, s.PreviousKey
	for _, h := range s.Headers {
		t.Headers = append(t.Headers, [2]string{h.Name, h.Value})
	}
	return t
}

// stored returns the tenant's channel id, or ErrNotFound.
func (r *ChannelRegistry) stored(ctx context.Context, tenantID, id int64) (storedChannel, error) {
	var row channelRow
	err := r.db.NewSelect().Model(&row).
		Where("c.tenant_id = ? AND c.id = ?", tenantID, id).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return storedChannel{}, ErrNotFound
	}
	if err != nil {
		return storedChannel{}, fmt.Errorf("channel: read: %w", err)
	}
	return r.openRow(r.reader(ctx), tenantID, row)
}

// storedByName returns the tenant's channel of type t named name (without
// case: deskkit.FoldName), and whether there is one.
func (r *ChannelRegistry) storedByName(ctx context.Context, tenantID int64, t Type, name string) (storedChannel, bool, error) {
	var row channelRow
	err := r.db.NewSelect().Model(&row).
		Where("c.tenant_id = ? AND c.name_folded = ? AND c.channel_type = ?", tenantID, deskkit.FoldName(name), string(t)).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return storedChannel{}, false, nil
	}
	if err != nil {
		return storedChannel{}, false, fmt.Errorf("channel: read: %w", err)
	}
	s, err := r.openRow(r.reader(ctx), tenantID, row)
	return s, err == nil, err
}

// storedByIDs returns those of ids that name channels of the tenant, in id
// order; the others are simply absent.
func (r *ChannelRegistry) storedByIDs(ctx context.Context, tenantID int64, ids []int64) ([]storedChannel, error) {
	if len(ids) == 0 {
		return []storedChannel{}, nil
	}
	rows, err := r.rowsByIDs(ctx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	return r.openRows(r.reader(ctx), tenantID, rows)
}

// rowsByIDs reads those of ids that name channels of the tenant, in id
// order, as stored (not decrypted).
func (r *ChannelRegistry) rowsByIDs(ctx context.Context, tenantID int64, ids []int64) ([]channelRow, error) {
	var rows []channelRow
	err := r.db.NewSelect().Model(&rows).
		Where("c.tenant_id = ? AND c.id IN (?)", tenantID, bun.List(ids)).
		OrderExpr("c.id").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("channel: read: %w", err)
	}
	return rows, nil
}

// storedAll returns every channel of the tenant, in id order.
func (r *ChannelRegistry) storedAll(ctx context.Context, tenantID int64) ([]storedChannel, error) {
	var rows []channelRow
	err := r.db.NewSelect().Model(&rows).
		Where("c.tenant_id = ?", tenantID).
		OrderExpr("c.id").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("channel: read: %w", err)
	}
	return r.openRows(r.reader(ctx), tenantID, rows)
}

// openRows opens rows of the tenant, in their order, their disabled
// reasons written by l.
func (r *ChannelRegistry) openRows(l deskkit.Localizer, tenantID int64, rows []channelRow) ([]storedChannel, error) {
	out := make([]storedChannel, 0, len(rows))
	for _, row := range rows {
		s, err := r.openRow(l, tenantID, row)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// sealRow seals a channel's address and, if not nil or "", its secret, for
// the row of the tenant. secretEnc is nil when there is no secret.
func (r *ChannelRegistry) sealRow(tenantID int64, t Type, address string, secret *string) (addressEnc string, secretEnc *string, err error) {
	if addressEnc, err = r.seal.seal(address, sealAAD(tenantID, t, fieldAddress)); err != nil {
		return "", nil, err
	}
	if secret != nil && *secret != "" {
		s, err := r.seal.seal(*secret, sealAAD(tenantID, t, fieldSecret))
		if err != nil {
			return "", nil, err
		}
		secretEnc = &s
	}
	return addressEnc, secretEnc, nil
}

// sealHeaders seals a channel's custom headers for the row of the tenant;
// nil for none.
func (r *ChannelRegistry) sealHeaders(tenantID int64, t Type, hs []Header) (*string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	s, err := r.seal.seal(encodeHeaders(hs), sealAAD(tenantID, t, fieldHeaders))
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// openRow decrypts a row of the tenant; l writes its disabled reason.
func (r *ChannelRegistry) openRow(l deskkit.Localizer, tenantID int64, row channelRow) (storedChannel, error) {
	address, err := r.seal.open(row.AddressEnc, sealAAD(tenantID, row.Type, fieldAddress))
	if err != nil {
		return storedChannel{}, fmt.Errorf("channel %d address: %w", row.ID, err)
	}
	events, err := decodeEvents(row.Events)
	if err != nil {
		return storedChannel{}, fmt.Errorf("channel %d: %w", row.ID, err)
	}
	s := storedChannel{Channel: Channel{ID: row.ID, Type: row.Type, Name: row.Name, Address: address,
		Enabled: row.Enabled, Events: events}}
	if row.HeadersEnc != nil {
		plain, err := r.seal.open(*row.HeadersEnc, sealAAD(tenantID, row.Type, fieldHeaders))
		if err != nil {
			return storedChannel{}, fmt.Errorf("channel %d headers: %w", row.ID, err)
		}
		if s.Headers, err = decodeHeaders(plain); err != nil {
			return storedChannel{}, fmt.Errorf("channel %d: %w", row.ID, err)
		}
	}
	var reason deskkit.Text
	reason, s.DisabledDate = disabled(row)
	s.DisabledReason = l.Write(reason)
	setHealth(l, &s, row)
	if row.SecretEnc != nil {
		if s.Secret, err = r.seal.open(*row.SecretEnc, sealAAD(tenantID, row.Type, fieldSecret)); err != nil {
			return storedChannel{}, fmt.Errorf("channel %d secret: %w", row.ID, err)
		}
	}
	if row.PreviousUntil != nil {
		s.PreviousUntil = time.UnixMilli(*row.PreviousUntil).UTC()
		if s.PreviousUntil.After(r.cfg.Now()) {
			until := s.PreviousUntil
			s.PreviousSecretUntil = &until
		}
	}
	// Read when the row was read whole (List and Get leave it out): the
	// senders check PreviousUntil at each send, so that an overlap ends on
	// time for a channel the worker keeps opened.
	if row.PreviousSecretEnc != nil && s.PreviousSecretUntil != nil {
		if s.Previous, err = r.seal.open(*row.PreviousSecretEnc, sealAAD(tenantID, row.Type, fieldPreviousSecret)); err != nil {
			return storedChannel{}, fmt.Errorf("channel %d previous secret: %w", row.ID, err)
		}
	}
	if ownsSecret(row.Type) {
		s.Signing = SigningHMAC
		if row.Signing != nil {
			s.Signing = Signing(*row.Signing)
		}
		if row.Ed25519PublicKey != nil {
			s.PublicKey = *row.Ed25519PublicKey
		}
	}
	if row.Ed25519KeyEnc != nil {
		if s.Key, err = r.seal.open(*row.Ed25519KeyEnc, sealAAD(tenantID, row.Type, fieldKey)); err != nil {
			return storedChannel{}, fmt.Errorf("channel %d key: %w", row.ID, err)
		}
	}
	if row.PreviousKeyEnc != nil && s.PreviousSecretUntil != nil {
		if s.PreviousKey, err = r.seal.open(*row.PreviousKeyEnc, sealAAD(tenantID, row.Type, fieldPreviousKey)); err != nil {
			return storedChannel{}, fmt.Errorf("channel %d previous key: %w", row.ID, err)
		}
	}
	return s, nil
}

// disabled returns the reason and date of a row's disabling; the zero
// Text and nil while it is enabled. A row disabled before reasons were
// kept as messages has its English reason alone (see outbox.ReadText).
func disabled(row channelRow) (deskkit.Text, *time.Time) {
	if row.Enabled {
		return deskkit.Text{}, nil
	}
	reason := outbox.ReadText(row.DisabledReason, row.DisabledReasonJSON)
	var at *time.Time
	if row.DisabledAt != nil {
		t := time.UnixMilli(*row.DisabledAt).UTC()
		at = &t
	}
	return reason, at
}

// writeError returns err of a write transaction as the caller sees it:
// the registry's own errors as they are, a refused name as ErrNameTaken,
// anything else wrapped.
func writeError(op string, err error) error {
	var ie *deskkit.InputError
	var qe *QuotaError
	switch {
	case errors.Is(err, ErrNotFound), errors.As(err, &ie), errors.As(err, &qe):
		return err
	case nameTaken(err):
		return ErrNameTaken
	}
	return fmt.Errorf("channel: %s: %w", op, err)
}

// nameTaken reports whether err is a unique index on the name refusing a
// write: (tenant_id, name), or (tenant_id, name_folded), the name without
// case (names.go). A writer lost the race for a name to another. (SQLite
// names the columns, and "deskkit_channels.name" is a prefix of both.)
func nameTaken(err error) bool {
	return database.UniqueViolation(err, "deskkit_channels_name_unique", "deskkit_channels.tenant_id, deskkit_channels.name") ||
		database.UniqueViolation(err, nameFoldedIndex, "deskkit_channels.tenant_id, deskkit_channels.name_folded")
}

// checkRateLimit checks a channel's rate limit: 0 (none) to MaxRateLimit
// messages a second.
func checkRateLimit(rate float64) error {
	if !(rate >= 0 && rate <= MaxRateLimit) {
		return deskkit.Invalid("rateLimit", "must be between 0 (none: the server's default applies) and %d messages a second", MaxRateLimit)
	}
	return nil
}

// setRateLimit sets channel id's own rate limit in tx, 0 for none.
func (r *ChannelRegistry) setRateLimit(ctx context.Context, tx bun.Tx, tenantID, id int64, rate float64, now int64) error {
	floor, _ := r.worker.Limits()
	return outbox.SetTargetRate(ctx, tx, outboxKind, tenantID, id, rate, floor, time.UnixMilli(now))
}

// withFlow fills in chans' rate limits, in-flight limits and pauses, as
// the outbox keeps them for the tenant's channels: one query.
func (r *ChannelRegistry) withFlow(ctx context.Context, db bun.IDB, tenantID int64, chans []Channel) error {
	ids := make([]int64, len(chans))
	for i, c := range chans {
		ids[i] = c.ID
	}
	states, err := outbox.TargetStates(ctx, db, outboxKind, tenantID, ids)
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	floor, ceiling := r.worker.Limits()
	now := r.cfg.Now()
	for i := range chans {
		s := states[chans[i].ID]
		chans[i].RateLimit = s.Rate
		chans[i].InFlightLimit = s.Limit(floor, ceiling)
		if s.PausedUntil.After(now) {
			until := s.PausedUntil.UTC()
			chans[i].PausedUntil = &until
		}
	}
	return nil
}
