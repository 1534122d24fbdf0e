package channel

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/email"
	"github.com/deskkit/deskkit/internal/notify"
)

// TestRegisteredKinds: the list of kinds is the documented types, in
// their order, with their quotas and aliases.
func TestRegisteredKinds(t *testing.T) {
	want := []Type{Webhook, Email, EnterpriseChat, WorkplaceChat}
	if diff := cmp.Diff(want, Types()); diff != "" {
		t.Errorf("Types() (-want +got):\n%s", diff)
	}
	quotas := map[Type]int{Webhook: 5, Email: 20, EnterpriseChat: 10, WorkplaceChat: 10, "SMS": 0}
	for typ, q := range quotas {
		if got := typ.Quota(); got != q {
			t.Errorf("%s.Quota() = %d, want %d", typ, got, q)
		}
	}
	if MaxEmailAddrs != email.MaxAddrs {
		t.Errorf("MaxEmailAddrs = %d, but the e-mail kind allows %d", MaxEmailAddrs, email.MaxAddrs)
	}
}

// TestUnknownKindSend: a stored channel of a type no kind has (a row
// written by hand) fails its sends as a malformed target, an InputError
// naming "kind", and nothing is sent.
func TestUnknownKindSend(t *testing.T) {
	for _, typ := range []Type{"SMS", ""} {
		k := kindOf(typ)
		_, err := k.Send(context.Background(), &notify.Sender{}, k.Target("ops", "https://example.com/hook", ""), notify.Message{})
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "kind" {
			t.Fatalf("%q: Send = %v, want an InputError for kind", typ, err)
		}
		if !errors.Is(err, deskkit.ErrInvalid) || errors.Is(err, notify.ErrFailed) {
			t.Errorf("%q: Send = %v: want deskkit.ErrInvalid, not ErrFailed", typ, err)
		}
		if got := MaskAddress(typ, "https://example.com/hook?key=k"); got != masked {
			t.Errorf("%q: MaskAddress = %q, want %q", typ, got, masked)
		}
	}
}
