package channel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/email"
	"github.com/deskkit/deskkit/internal/notify"
)

// TestRegisteredKinds: the list of kinds is the documented types, in
// their order, with their quotas and aliases.
func TestRegisteredKinds(t *testing.T) {
	want := []Type{Webhook, Email, EnterpriseChat, WorkplaceChat, "FEISHU", "SLACK"}
	if diff := cmp.Diff(want, Types()); diff != "" {
		t.Errorf("Types() (-want +got):\n%s", diff)
	}
	quotas := map[Type]int{Webhook: 5, Email: 20, EnterpriseChat: 10, WorkplaceChat: 10, "FEISHU": 10, "SLACK": 10, "SMS": 0}
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

// TestRefusalsNameEveryKind: the refusals that list kinds (a type no kind
// has, a secret given to a kind that takes none) are written from the
// registry, in every language: each registered type in the list, with
// its aliases, joined the language's way.
func TestRefusalsNameEveryKind(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	_, typeErr := ParseType("SMS")
	secretErr := errNoSecret("X-TYPE")
	for _, tag := range msgs.Languages() {
		typeMsg := typeErr.(deskkit.LocalizedMessager).LocalizedMessage(msgs, tag)
		secretMsg := secretErr.(deskkit.LocalizedMessager).LocalizedMessage(msgs, tag)
		for _, ti := range TypeInfos() {
			if !strings.Contains(typeMsg, string(ti.Type)) {
				t.Errorf("%s: %q does not name %s", tag, typeMsg, ti.Type)
			}
			for _, a := range ti.Aliases {
				if !strings.Contains(typeMsg, a) {
					t.Errorf("%s: %q does not name the alias %s", tag, typeMsg, a)
				}
			}
			if takes := !ti.SecretHint.IsZero(); takes != strings.Contains(secretMsg, string(ti.Type)) {
				t.Errorf("%s: %q names %s: %v, want %v", tag, secretMsg, ti.Type, !takes, takes)
			}
		}
		if tag != language.English && strings.Contains(typeMsg, ", ") {
			t.Errorf("%s: %q joins the list the English way", tag, typeMsg)
		}
	}
}
