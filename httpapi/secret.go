package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// secretRoutes reveal and rotate a webhook's signing secret. Both are
// POSTs: each is an act the registry records (an event and a log line),
// and neither answer may be cached.
func secretRoutes(s ChannelService) []operation {
	h := secretHandlers{s: s}
	return []operation{
		op("revealEventChannelSecret", http.MethodPost, "/event/channel/{id}/secret/reveal", revealEventChannelSecretDoc, h.reveal),
		op("rotateEventChannelSecret", http.MethodPost, "/event/channel/{id}/secret/rotate", rotateEventChannelSecretDoc, h.rotate),
	}
}

type secretHandlers struct {
	s ChannelService
}

// secretRotateBody is what a rotation takes; {} rotates to a new secret
// of deskkit's with the default overlap.
type secretRotateBody struct {
	_              struct{}         `additionalProperties:"false" description:"A rotation of a webhook's signing secret: {} makes a new secret and keeps the old one signing for a day."`
	Secret         *string          `json:"secret" nullable:"true" writeOnly:"true" pattern:"^whsec_[A-Za-z0-9+/]{43}=$" example:"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=" description:"The new secret, whsec_ and the standard base64 of 32 bytes (what Standard Webhooks libraries take), different from the current one; absent or null has deskkit make one."`
	OverlapSeconds *int64           `json:"overlapSeconds" nullable:"true" minimum:"0" maximum:"604800" example:"86400" description:"How long, in seconds, the replaced secret keeps signing beside the new one, at most 604800 (7 days); 0 ends it at once; absent or null for 86400 (a day)."`
	Signing        *channel.Signing `json:"signing" nullable:"true" enum:"hmac,ed25519,hmac+ed25519" description:"What signs from now on: hmac, ed25519 or hmac+ed25519; absent or null keeps what signs now. A new ed25519 key is made whenever ed25519 signs (its public key is in the answer; the signing key is never shown). What signed before keeps signing beside it during the overlap, so that a receiver moves from HMAC to ed25519 as it moves from one secret to the next. secret is refused with ed25519 alone."`
}

type secretRotateRequest struct {
	ID   int64            `path:"id" minimum:"1" example:"42" description:"Id of the webhook."`
	Body secretRotateBody `body:"json"`
}

func (h secretHandlers) reveal(ctx context.Context, p deskkit.Principal, req channelIDRequest) (channel.SigningSecret, error) {
	return h.s.RevealSecret(ctx, p, req.ID)
}

func (h secretHandlers) rotate(ctx context.Context, p deskkit.Principal, req secretRotateRequest) (channel.SigningSecret, error) {
	var rot channel.SecretRotation
	if req.Body.Signing != nil {
		rot.Signing = *req.Body.Signing
	}
	if req.Body.Secret != nil {
		rot.Secret = *req.Body.Secret
		if rot.Secret == "" {
			return channel.SigningSecret{}, deskkit.Invalid("secret", `must be "whsec_" and the base64 of 32 bytes, or absent for a new secret of deskkit's`)
		}
	}
	if n := req.Body.OverlapSeconds; n != nil {
		if *n < 0 || *n > int64(channel.MaxSecretOverlap/time.Second) {
			return channel.SigningSecret{}, deskkit.Invalid("overlapSeconds", "must be between 0 (the old secret stops signing at once) and %d (7 days)", int64(channel.MaxSecretOverlap/time.Second))
		}
		d := time.Duration(*n) * time.Second
		rot.Overlap = &d
	}
	return h.s.RotateSecret(ctx, p, req.ID, rot)
}

var secretForbidden = errDoc{name: "ChannelSecretForbidden", key: KeyForbidden, when: "The caller is not an admin, and the host's channel.Authorizer (if it has one) does not allow them to reveal or rotate signing secrets. Asked before anything is read or written."}

var secretNotWebhook = errDoc{key: KeyValidation, when: "The body is malformed, or id names a channel that is not a webhook: only webhooks have a signing secret of deskkit's."}

const exampleSigningSecret = `{"channelId": 42, "signing": "hmac", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=", "previousSecretUntil": null}`

var revealEventChannelSecretDoc = &doc{
	tag:     "channel",
	summary: "Reveal a webhook's signing secret",
	description: prose(`
		Answers the current signing secret of the caller's tenant's webhook id, for a receiver that
		lost it. Only admins, or users the host's channel.Authorizer allows (action reveal-secret),
		may: anyone else is 403 forbidden. Each reveal is recorded before the secret is answered: a
		channel.secret.revealed event (with the caller as actor) goes to the tenant's subscribed
		channels, and the server logs the reveal, never the secret. A POST, so that no cache or
		prefetch reveals it. A channel that is not a webhook is 400: other types have no secret of
		deskkit's. A webhook that signs with ed25519 answers its public key (publicKey), never its
		signing key, and no secret when it signs with ed25519 alone. During a rotation's overlap,
		previousSecretUntil says when the replaced secret stops signing beside this one.
	`),
	ok:      "OK. data is the webhook's current signing secret.",
	errors:  []errDoc{secretNotWebhook, secretForbidden, channelMissing},
	example: example{data: raw(exampleSigningSecret)},
}

var rotateEventChannelSecretDoc = &doc{
	tag:     "channel",
	summary: "Rotate a webhook's signing secret",
	description: prose(`
		Gives the caller's tenant's webhook id a new signing secret, the one in secret or else one
		deskkit makes, and answers it. It signs every request from now on. The secret it replaces
		keeps signing beside it for overlapSeconds (a day if absent, at most 7 days; 0 ends it at
		once): until then each delivery and test carries both signatures, space-separated in
		webhook-signature ("v1,<new> v1,<old>"), as Standard Webhooks lays out, so that a receiver
		holding either secret verifies every request; move the receiver to the new secret within the
		overlap. After it only the new secret signs. A rotation during an overlap starts a new one:
		the secret before the current one stops at once.

		signing chooses what signs from now on: hmac (v1, signatures under the whsec_ secret),
		ed25519 (v1a, signatures under a key that never leaves the server; the receiver verifies
		with the answer's publicKey, whpk_ and the base64 of 32 bytes) or hmac+ed25519; absent keeps
		what signs now. A new ed25519 key is made whenever ed25519 signs, and what signed before
		keeps signing beside the new keys during the overlap, so that a receiver moves from HMAC to
		ed25519 (or back) without a request it cannot verify. Only admins, or users the host's
		channel.Authorizer allows (action rotate-secret), may: anyone else is 403 forbidden. Each
		rotation publishes channel.secret.rotated (with the caller as actor) and is logged, never
		with a secret. A channel that is not a webhook is 400, as is a secret that is not whsec_ and
		the base64 of 32 bytes, or is the current one.
	`),
	ok:     "OK. data is the new signing secret, and when the replaced one stops signing (null for an overlap of 0).",
	errors: []errDoc{secretNotWebhook, secretForbidden, channelMissing},
	example: example{
		body: raw(`{"overlapSeconds": 86400}`),
		data: raw(`{"channelId": 42, "signing": "hmac", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=", "previousSecretUntil": "2026-11-24T10:00:00Z"}`),
	},
	more: map[string]example{
		"given":   {summary: "A secret of the client's, the old one ending at once", body: raw(`{"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=", "overlapSeconds": 0}`)},
		"ed25519": {summary: "From HMAC to ed25519, HMAC signing beside it for a week", body: raw(`{"signing": "ed25519", "overlapSeconds": 604800}`)},
	},
}
