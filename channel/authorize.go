package channel

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// Action is what a principal asks to do with a tenant's channels.
type Action string

// The actions an Authorizer is asked about.
const (
	ActionAdd     Action = "add"
	ActionReplace Action = "replace"
	ActionDelete  Action = "delete"
	ActionTest    Action = "test"
	// ActionEnable and ActionDisable are enabling a channel again and
	// disabling one by hand.
	ActionEnable  Action = "enable"
	ActionDisable Action = "disable"
	// ActionViewDeliveries is reading a channel's deliveries and their
	// attempts (Deliveries, Attempts).
	ActionViewDeliveries Action = "view-deliveries"
	// ActionResend is one more attempt of a delivery (Resend).
	ActionResend Action = "resend"
	// ActionRecover is queueing a channel's failed deliveries again
	// (Recover).
	ActionRecover Action = "recover"
	// ActionViewAddresses is seeing addresses in full in a list: a robot's
	// URL carries its key, a webhook's often a token. Listing itself is
	// open to every user of the tenant; without this action the addresses
	// come masked (see MaskAddress).
	ActionViewAddresses Action = "view-addresses"
	// ActionRevealSecret is showing a webhook's current signing secret
	// (RevealSecret): each reveal is an event and a log line.
	ActionRevealSecret Action = "reveal-secret"
	// ActionRotateSecret is giving a webhook a new signing secret, the
	// old one signing beside it for an overlap (RotateSecret).
	ActionRotateSecret Action = "rotate-secret"
)

// Authorizer tells whether a principal who is not an admin may do a with
// the channels of their tenant. Without one only admin principals
// (deskkit.Principal.Admin) may add, replace, delete, test, enable and
// disable channels, see addresses in full, reveal and rotate webhooks'
// signing secrets, and read, resend and recover deliveries; every user of the tenant may list them, masked.
// Admins are never asked about: they may do everything within their tenant.
// An error it returns aborts the operation and is passed on.
//
// The registry asks it before it opens a transaction or takes a lock, so
// it may do I/O (a directory, a remote policy service) without holding up
// writers. A refusal is ErrForbidden (httpapi: 403).
type Authorizer interface {
	CanManageChannels(ctx context.Context, p deskkit.Principal, a Action) (bool, error)
}

// authorize returns p's tenant if p may do a, ErrUnauthenticated for an
// invalid principal, and ErrForbidden if it may not.
func (r *ChannelRegistry) authorize(ctx context.Context, p deskkit.Principal, a Action) (int64, error) {
	tenantID, err := tenant(p)
	if err != nil {
		return 0, err
	}
	ok, err := r.may(ctx, p, a)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrForbidden
	}
	return tenantID, nil
}

// may asks whether the valid principal p may do a.
func (r *ChannelRegistry) may(ctx context.Context, p deskkit.Principal, a Action) (bool, error) {
	if p.Admin {
		return true, nil
	}
	if r.cfg.Authorizer == nil {
		return false, nil
	}
	ok, err := r.cfg.Authorizer.CanManageChannels(ctx, p, a)
	if err != nil {
		return false, fmt.Errorf("channel: authorize: %w", err)
	}
	return ok, nil
}

// masked is what a masked part of an address shows.
const masked = notify.Masked

// MaskAddress is a channel's address as List shows it to a principal who
// may not see addresses in full:
//
//   - WEBHOOK: the scheme and host (with its port) and "/***" for the
//     path and query, whatever they were:
//     https://hooks.example.com/***.
//   - ENTERPRISE_CHAT and WORKPLACE_CHAT: the URL with every query value,
//     the robot's key or access_token among them, replaced by "***":
//     https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***.
//   - SLACK: the scheme and host and "/services/***" for the webhook's
//     three path parts: https://hooks.slack.com/services/***.
//   - EMAIL: unchanged; the addresses are the tenant's own people.
//
// An address that does not parse as a URL is masked whole ("***").
//
// Text that quotes a URL is masked by the same rule: a webhook's redirect
// names where it points as https://HOST/*** in every failure reason
// (attempts, lastError, disabledReason, test results), and a principal who
// sees addresses masked sees every URL in a disabled reason or an attempt's
// error so (a reason stored by an older version may quote a redirect's
// Location whole).
func MaskAddress(t Type, address string) string { return kindOf(t).Mask(address) }

// urlsInText finds the http and https URLs in a text: up to a space, a
// quote, a bracket or a character no URL carries unencoded.
var urlsInText = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>()\[\]{}|\\^` + "`" + `]+`)

// maskURLs returns text with every http or https URL in it masked as
// MaskAddress masks a webhook: its scheme and host followed by "/***". The
// registry shows disabled reasons and attempts' errors so to a principal
// who sees addresses masked: a reason may quote a URL that carries a token
// (reasons stored before deskkit masked a redirect's Location did, or a
// robot's errmsg).
func maskURLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlsInText.ReplaceAllStringFunc(text, notify.MaskURL)
}
