package channel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// A webhook's signing secret: revealed to an admin on demand, and rotated
// with an overlap in which the old secret signs beside the new one.

// The event types of a webhook's signing secret, which New registers.
const (
	// EventSecretRevealed: someone revealed a webhook's signing secret
	// (RevealSecret).
	EventSecretRevealed = "channel.secret.revealed"
	// EventSecretRotated: someone gave a webhook a new signing secret
	// (RotateSecret).
	EventSecretRotated = "channel.secret.rotated"
)

// Bounds of a rotation's overlap (SecretRotation.Overlap).
const (
	// DefaultSecretOverlap is how long the replaced secret signs beside
	// the new one when a rotation names no overlap: a day.
	DefaultSecretOverlap = 24 * time.Hour
	// MaxSecretOverlap is the longest overlap: 7 days.
	MaxSecretOverlap = 7 * 24 * time.Hour
)

// Signing is what signs a webhook's requests, as Standard Webhooks lays
// out its signatures.
type Signing string

// The ways a webhook signs.
const (
	// SigningHMAC: a "v1," signature, HMAC-SHA256 under the channel's
	// "whsec_" secret, which the receiver holds too. Every webhook's at
	// first.
	SigningHMAC Signing = "hmac"
	// SigningEd25519: a "v1a," signature, ed25519 under a signing key
	// that never leaves deskkit; the receiver verifies with its public
	// key ("whpk_", Channel.PublicKey), which cannot sign.
	SigningEd25519 Signing = "ed25519"
	// SigningBoth: both signatures on every request.
	SigningBoth Signing = "hmac+ed25519"
)

// hmac and ed25519 say whether s signs with each.
func (s Signing) hmac() bool    { return s == SigningHMAC || s == SigningBoth }
func (s Signing) ed25519() bool { return s == SigningEd25519 || s == SigningBoth }

// parseSigning reads a Signing a client sent; "" is none.
func parseSigning(s string) (Signing, error) {
	switch v := Signing(s); v {
	case "", SigningHMAC, SigningEd25519, SigningBoth:
		return v, nil
	}
	return "", deskkit.Invalid("signing", "must be hmac, ed25519 or hmac+ed25519")
}

// SecretRotation is what a client sends to rotate a webhook's signing
// secret.
type SecretRotation struct {
	// Secret is the new HMAC secret, "whsec_" and the standard base64 of
	// 32 bytes (what a Standard Webhooks library takes, and the form Add
	// gives); "" has deskkit make one. It must differ from the current
	// secret. A rotation to SigningEd25519 takes none.
	Secret string
	// Signing is what signs from now on: "" keeps what signs now. The
	// rotation makes a new ed25519 key when it signs with ed25519 (the
	// key is never taken from a client, and never shown: its public key
	// is). Whatever signed before signs beside the new keys during the
	// overlap, so that a webhook moves from HMAC to ed25519, or back, as
	// it moves from one secret to the next.
	Signing Signing
	// Overlap is how long the secret it replaces keeps signing beside it:
	// nil for DefaultSecretOverlap, 0 to end it at once, at most
	// MaxSecretOverlap.
	Overlap *time.Duration
}

// SigningSecret is a webhook's current signing secret, as RevealSecret and
// RotateSecret answer it.
type SigningSecret struct {
	_         struct{} `additionalProperties:"false" description:"A webhook's current signing secret, and how long the secret it replaced still signs beside it."`
	ChannelID int64    `json:"channelId" minimum:"1" description:"The channel's id."`
	// Signing is what signs the webhook's requests now.
	Signing Signing `json:"signing" description:"What signs the webhook's requests now: hmac (the secret), ed25519 (the key whose public key is publicKey) or hmac+ed25519."`
	// Secret is the HMAC secret; "" when the webhook signs with ed25519
	// alone.
	Secret string `json:"secret,omitempty" pattern:"^whsec_[A-Za-z0-9+/]{43}=$" description:"The channel's current signing secret, whsec_ and the base64 of 32 bytes, for the receiver to check the v1, signatures of webhook-signature with a Standard Webhooks library; absent when the webhook signs with ed25519 alone."`
	// PublicKey is the ed25519 key's public key; "" when the webhook signs
	// with HMAC alone.
	PublicKey string `json:"publicKey,omitempty" pattern:"^whpk_[A-Za-z0-9+/]{43}=$" description:"When the webhook signs with ed25519: the public key, whpk_ and the base64 of 32 bytes, with which the receiver verifies the v1a, signatures. The signing key is never shown."`
	// PreviousSecretUntil is when the secret the last rotation replaced
	// stops signing beside this one, UTC; nil when none does.
	PreviousSecretUntil *time.Time `json:"previousSecretUntil" description:"While the secret that the last rotation replaced still signs beside this one (each request carries both signatures, space-separated in webhook-signature), when it stops, UTC; null when none does."`
}

// ChannelSecretData is the data of channel.secret.revealed and
// channel.secret.rotated: which webhook, and who.
type ChannelSecretData struct {
	TenantID  int64  `json:"tenantId,omitempty"` // set by Publish
	ChannelID int64  `json:"channelId"`
	Name      string `json:"name"`
	// Actor is the user who revealed or rotated the secret.
	Actor *deskkit.Actor `json:"actor"`
	// Signing and PublicKey are, for a rotation, what signs from now on
	// and, when an ed25519 key does, its public key.
	Signing   Signing `json:"signing,omitempty"`
	PublicKey string  `json:"publicKey,omitempty"`
	// PreviousSecretUntil is, for a rotation, when the replaced secret
	// stops signing; nil when it stopped at once.
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty"`
}

// secretEventTypes are the catalogue's entries of the secret's events.
func secretEventTypes() []deskkit.EventType {
	until := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	return []deskkit.EventType{{
		Name:    EventSecretRevealed,
		Service: deskkit.ServiceChannel,
		About: deskkit.Textf("Someone revealed a webhook's signing secret: whoever saw it can sign requests that the webhook's receiver takes. " +
			"Rotate the secret if that was not meant to happen."),
		Example: ChannelSecretData{TenantID: 1, ChannelID: 7, Name: "Ops webhook", Actor: &deskkit.Actor{ID: 3, Name: "Ada"}},
	}, {
		Name:    EventSecretRotated,
		Service: deskkit.ServiceChannel,
		About: deskkit.Textf("Someone gave a webhook a new signing secret. For a while the old secret signs beside the new one, " +
			"so that the receiver can move to the new secret; then only the new one signs."),
		Example: ChannelSecretData{TenantID: 1, ChannelID: 7, Name: "Ops webhook", Actor: &deskkit.Actor{ID: 3, Name: "Ada"}, Signing: SigningHMAC, PreviousSecretUntil: &until},
	}}
}

// revealedBody is channel.secret.revealed's body: who revealed the secret,
// by name when the host's directory knows the user.
func revealedBody(a *deskkit.Actor) deskkit.Text {
	if a.Name != "" {
		return deskkit.Textf("Revealed by %s. Whoever saw it can sign requests that the webhook's receiver takes: rotate the secret if that was not meant to happen.", clipRunes(a.Name, 100))
	}
	return deskkit.Textf("Revealed by user %d. Whoever saw it can sign requests that the webhook's receiver takes: rotate the secret if that was not meant to happen.", a.ID)
}

// rotatedBody is channel.secret.rotated's body: who rotated the secret, by
// name when the host's directory knows the user, and until when the old
// one signs (nil: it stopped at once).
func rotatedBody(a *deskkit.Actor, until *time.Time) deskkit.Text {
	switch {
	case until == nil && a.Name != "":
		return deskkit.Textf("Rotated by %s. The old secret stopped signing at once.", clipRunes(a.Name, 100))
	case until == nil:
		return deskkit.Textf("Rotated by user %d. The old secret stopped signing at once.", a.ID)
	case a.Name != "":
		return deskkit.Textf("Rotated by %s. Until %s the old secret signs beside the new one; then only the new one signs.", clipRunes(a.Name, 100), until.Format("2006-01-02 15:04 UTC"))
	}
	return deskkit.Textf("Rotated by user %d. Until %s the old secret signs beside the new one; then only the new one signs.", a.ID, until.Format("2006-01-02 15:04 UTC"))
}

// errNoOwnSecret is the refusal of a reveal or a rotation of a channel of
// type t, whose secret (if any) deskkit does not make.
func errNoOwnSecret(t Type) error {
	return deskkit.Invalid("id", "names a %s channel: only webhooks have a signing secret of deskkit's to reveal or rotate", string(t))
}

// ownsSecret says whether deskkit makes the signing secrets of type t.
func ownsSecret(t Type) bool { return kindOf(t).Info().OwnSecret }

// RevealSecret returns p's tenant's webhook id's current signing secret
// and, for a webhook that signs with ed25519, its public key (never the
// signing key; no secret when ed25519 signs alone). Each reveal publishes channel.secret.revealed to the tenant's subscribed
// channels, with p's user as actor, and writes a log line (the channel,
// tenant and user; never the secret), before the secret is returned: a
// reveal whose event cannot be written reveals nothing.
//
// Only admins, and principals the Authorizer allows ActionRevealSecret,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// id, also for a channel that is not a webhook; ErrNotFound for an id that
// names no channel of the tenant.
func (r *ChannelRegistry) RevealSecret(ctx context.Context, p deskkit.Principal, id int64) (SigningSecret, error) {
	ctx, call := r.ops.Start(ctx, "channel.RevealSecret", "")
	v, err := r.revealSecret(ctx, p, id)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) revealSecret(ctx context.Context, p deskkit.Principal, id int64) (SigningSecret, error) {
	tenantID, err := r.authorize(ctx, p, ActionRevealSecret)
	if err != nil {
		return SigningSecret{}, err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return SigningSecret{}, err
	}
	s, err := r.stored(ctx, tenantID, id)
	if err != nil {
		return SigningSecret{}, err
	}
	if !ownsSecret(s.Type) {
		return SigningSecret{}, errNoOwnSecret(s.Type)
	}
	now := r.cfg.Now()
	actor := r.actor(ctx, tenantID, p.UserID)
	err = r.Publish(ctx, r.db, tenantID, deskkit.Event{
		ID:      deskkit.NewEventID(),
		Type:    EventSecretRevealed,
		Time:    now,
		Heading: deskkit.Textf("The signing secret of webhook %q was revealed", clipRunes(s.Name, 100)),
		Body:    revealedBody(actor),
		Data:    ChannelSecretData{ChannelID: id, Name: s.Name, Actor: actor},
	})
	if err != nil {
		return SigningSecret{}, fmt.Errorf("channel: reveal secret: %w", err)
	}
	r.cfg.Logger.InfoContext(ctx, "channel: signing secret revealed",
		slog.Int64("tenant", tenantID), slog.Int64("channel", id), slog.Int64("user", p.UserID))
	return SigningSecret{ChannelID: id, Signing: s.Signing, Secret: s.Secret, PublicKey: s.PublicKey, PreviousSecretUntil: s.PreviousSecretUntil}, nil
}

// RotateSecret gives p's tenant's webhook id a new signing secret, rot.Secret
// or one deskkit makes, and returns it: the only answer that shows it,
// but for a later RevealSecret. The new secret signs every message from
// now on; the one it replaces signs beside it for rot.Overlap (a day if
// nil, at most MaxSecretOverlap; 0 ends it at once), so that each
// delivery and test in the overlap carries both signatures,
// space-separated in webhook-signature ("v1,<new> v1,<old>"), as
// Standard Webhooks lays out: a receiver verifies with either secret, and
// moves to the new one within the overlap. After it the old secret signs
// nothing; it is cleared from the row by the channel's next write or by
// Purge. A rotation during an overlap starts a new one: the secret before
// the current one signs no more.
//
// rot.Signing chooses what signs from now on ("" keeps what signs now):
// a rotation to a scheme with ed25519 makes a new ed25519 key, whose
// public key the answer gives ("v1a," signatures), and one with HMAC a
// new secret ("v1,"). The overlap's old keys are whatever signed before,
// so a webhook moves between HMAC and ed25519 as it moves between
// secrets.
//
// The old secret and key are stored sealed as the current ones are (see
// New), under fields of their own. The rotation publishes channel.secret.rotated, with
// p's user as actor, in the transaction of its write, and writes a log
// line without either secret.
//
// Only admins, and principals the Authorizer allows ActionRotateSecret,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// id (also for a channel that is not a webhook), secret (not "whsec_" and
// the base64 of 32 bytes, the current secret, or given for ed25519 alone),
// signing or overlap; ErrNotFound
// for an id that names no channel of the tenant.
func (r *ChannelRegistry) RotateSecret(ctx context.Context, p deskkit.Principal, id int64, rot SecretRotation) (SigningSecret, error) {
	ctx, call := r.ops.Start(ctx, "channel.RotateSecret", "")
	v, err := r.rotateSecret(ctx, p, id, rot)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) rotateSecret(ctx context.Context, p deskkit.Principal, id int64, rot SecretRotation) (SigningSecret, error) {
	tenantID, err := r.authorize(ctx, p, ActionRotateSecret)
	if err != nil {
		return SigningSecret{}, err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return SigningSecret{}, err
	}
	signing, err := parseSigning(string(rot.Signing))
	if err != nil {
		return SigningSecret{}, err
	}
	overlap := DefaultSecretOverlap
	if rot.Overlap != nil {
		overlap = *rot.Overlap
	}
	if overlap < 0 || overlap > MaxSecretOverlap {
		return SigningSecret{}, deskkit.Invalid("overlap", "must be between 0 (the old secret stops signing at once) and %s", deskkit.DurationText(MaxSecretOverlap))
	}
	if rot.Secret != "" {
		if signing == SigningEd25519 {
			return SigningSecret{}, deskkit.Invalid("secret", "is not taken by a rotation to ed25519 alone: the webhook then has no HMAC secret")
		}
		if _, err := notify.ParseWebhookSecret(rot.Secret); err != nil {
			return SigningSecret{}, err
		}
	}
	// Both made before the transaction, used if the signing wants them.
	secret := rot.Secret
	if secret == "" {
		if secret, err = notify.NewWebhookSecret(); err != nil {
			return SigningSecret{}, fmt.Errorf("channel: rotate secret: %w", err)
		}
	}
	key, err := notify.NewSigningKey()
	if err != nil {
		return SigningSecret{}, fmt.Errorf("channel: rotate secret: %w", err)
	}
	now := r.cfg.Now()
	out := SigningSecret{ChannelID: id}
	var until *int64
	if overlap > 0 {
		t := now.Add(overlap).UTC()
		out.PreviousSecretUntil = &t
		ms := t.UnixMilli()
		until = &ms
	}
	actor := r.actor(ctx, tenantID, p.UserID)
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var row channelRow
		q := tx.NewSelect().Model(&row).Column("id", "channel_type", "name", "secret_enc", "ed25519_key_enc", "signing").
			Where("c.tenant_id = ? AND c.id = ?", tenantID, id)
		if r.pg {
			// Two rotations at once: the second reads the first's keys.
			q = q.For("UPDATE")
		}
		err := q.Scan(ctx)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case !ownsSecret(row.Type):
			return errNoOwnSecret(row.Type)
		}
		out.Signing = signing
		if out.Signing == "" {
			out.Signing = SigningHMAC
			if row.Signing != nil {
				out.Signing = Signing(*row.Signing)
			}
		}
		// What signs now: its keys sign beside the new ones during the
		// overlap.
		var current, currentKey string
		if row.SecretEnc != nil {
			if current, err = r.seal.open(*row.SecretEnc, sealAAD(tenantID, row.Type, fieldSecret)); err != nil {
				return fmt.Errorf("channel %d secret: %w", id, err)
			}
		}
		if row.Ed25519KeyEnc != nil {
			if currentKey, err = r.seal.open(*row.Ed25519KeyEnc, sealAAD(tenantID, row.Type, fieldKey)); err != nil {
				return fmt.Errorf("channel %d key: %w", id, err)
			}
		}
		if rot.Secret != "" && rot.Secret == current {
			return deskkit.Invalid("secret", "must differ from the channel's current secret")
		}
		var secretEnc, keyEnc, publicKey, previousEnc, previousKeyEnc *string
		seal := func(dst **string, plain, field string) error {
			s, err := r.seal.seal(plain, sealAAD(tenantID, row.Type, field))
			*dst = &s
			return err
		}
		if out.Signing.hmac() {
			out.Secret = secret
			if err := seal(&secretEnc, secret, fieldSecret); err != nil {
				return err
			}
		}
		if out.Signing.ed25519() {
			if out.PublicKey, err = notify.PublicKeyOf(key); err != nil {
				return err
			}
			publicKey = &out.PublicKey
			if err := seal(&keyEnc, key, fieldKey); err != nil {
				return err
			}
		}
		if until != nil && current != "" {
			if err := seal(&previousEnc, current, fieldPreviousSecret); err != nil {
				return err
			}
		}
		if until != nil && currentKey != "" {
			if err := seal(&previousKeyEnc, currentKey, fieldPreviousKey); err != nil {
				return err
			}
		}
		var signingCol *string
		if out.Signing != SigningHMAC {
			signingCol = (*string)(&out.Signing)
		}
		_, err = tx.NewUpdate().Model((*channelRow)(nil)).
			Set("secret_enc = ?", secretEnc).
			Set("ed25519_key_enc = ?", keyEnc).
			Set("ed25519_public_key = ?", publicKey).
			Set("signing = ?", signingCol).
			Set("previous_secret_enc = ?", previousEnc).
			Set("previous_ed25519_key_enc = ?", previousKeyEnc).
			Set("previous_secret_until_ms = ?", until).
			Set("updated_at_ms = ?", now.UnixMilli()).
			Set("version = version + 1"). // the worker's cache sees the change
			Where("c.tenant_id = ? AND c.id = ?", tenantID, id).
			Exec(ctx)
		if err != nil {
			return err
		}
		body := rotatedBody(actor, out.PreviousSecretUntil)
		return r.Publish(ctx, tx, tenantID, deskkit.Event{
			ID:      deskkit.NewEventID(),
			Type:    EventSecretRotated,
			Time:    now,
			Heading: deskkit.Textf("Webhook %q has a new signing secret", clipRunes(row.Name, 100)),
			Body:    body,
			Data: ChannelSecretData{ChannelID: id, Name: row.Name, Actor: actor, Signing: out.Signing, PublicKey: out.PublicKey,
				PreviousSecretUntil: out.PreviousSecretUntil},
		})
	})
	if err != nil {
		return SigningSecret{}, writeError("rotate secret", err)
	}
	r.cfg.Logger.InfoContext(ctx, "channel: signing secret rotated",
		slog.Int64("tenant", tenantID), slog.Int64("channel", id), slog.Int64("user", p.UserID),
		slog.String("signing", string(out.Signing)), slog.Duration("overlap", overlap))
	return out, nil
}

// clearEndedOverlaps clears the previous secrets whose overlap has ended
// (Purge): they sign nothing, and a dump need not hold them.
func (r *ChannelRegistry) clearEndedOverlaps(ctx context.Context, now int64) (int64, error) {
	res, err := r.db.NewUpdate().Table("deskkit_channels").
		Set("previous_secret_enc = NULL").
		Set("previous_ed25519_key_enc = NULL").
		Set("previous_secret_until_ms = NULL").
		Set("version = version + 1").
		Where("previous_secret_until_ms <= ?", now).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("channel: clear ended overlaps: %w", err)
	}
	return res.RowsAffected()
}
