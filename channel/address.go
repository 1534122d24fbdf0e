package channel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// normalize is normalizeInput for p, who must also be allowed the kind of
// channel in names: ErrForbidden if the kind is for admins alone and p is
// not one. The registry has already asked whether p may do the action.
func (r *ChannelRegistry) normalize(p deskkit.Principal, in Input) (Channel, *string, error) {
	if t, err := ParseType(in.Type); err == nil && kindOf(t).Info().Permission == kind.Admins && !p.Admin {
		return Channel{}, nil, ErrForbidden
	}
	return normalizeInput(r.sender.HTTP, in)
}

// normalizeInput checks what a client sent to add, replace or test a
// channel and returns it as stored: the canonical type, the name, the
// normalised address, and the secret. The secret is nil unless the type
// takes one and one was sent; "" then means "remove it". in.ID is copied,
// not checked: its rules differ by operation.
func normalizeInput(c *safehttp.Client, in Input) (Channel, *string, error) {
	t, err := ParseType(in.Type)
	if err != nil {
		return Channel{}, nil, err
	}
	if err := deskkit.CheckUniqueName("name", in.Name, MaxNameRunes); err != nil {
		return Channel{}, nil, err
	}
	address, err := normalizeAddress(c, t, in.Address)
	if err != nil {
		return Channel{}, nil, err
	}
	secret, err := normalizeSecret(t, in.Secret)
	if err != nil {
		return Channel{}, nil, err
	}
	return Channel{ID: in.ID, Type: t, Name: in.Name, Address: address}, secret, nil
}

// normalizeSecret checks a secret a client sent for a channel of type t:
// its kind's rules, after the bound and the trim all kinds share. nil
// from a client means nothing.
func normalizeSecret(t Type, secret *string) (*string, error) {
	if secret == nil {
		return nil, nil
	}
	if len(*secret) > MaxSecretBytes {
		return nil, deskkit.Invalid("secret", "must be at most %d bytes", MaxSecretBytes)
	}
	s, err := kindOf(t).Secret(strings.TrimSpace(*secret))
	if errors.Is(err, kind.ErrNoSecret) {
		return nil, errNoSecret(t)
	}
	return s, err
}

// normalizeAddress checks a channel's address for type t and returns it as
// stored, by its kind's rules, after the bound and the trim all kinds
// share. Errors are *deskkit.InputError values naming "address", or, for a
// URL whose host is a literal address the SSRF guard refuses (or
// "localhost"), an error matching ErrAddressBlocked. Names are not
// resolved here: the guard checks what they resolve to when a message is
// sent.
func normalizeAddress(c *safehttp.Client, t Type, address string) (string, error) {
	if len(address) > MaxAddressBytes {
		return "", deskkit.Invalid("address", "must be at most %d bytes", MaxAddressBytes)
	}
	address = strings.TrimSpace(address)
	if address == "" {
		return "", deskkit.Invalid("address", "is required")
	}
	address, err := kindOf(t).Address(c, address)
	if errors.Is(err, safehttp.ErrBlocked) {
		// The guard's error first, so that its ClientMessage (why:
		// loopback, private, metadata) is the one the client reads.
		return "", fmt.Errorf("%w: %w", err, ErrAddressBlocked)
	}
	return address, err
}
