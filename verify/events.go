package verify

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// The types of the events the Verifier publishes (Config.Publisher).
const (
	EventMobileChanged = "user.mobile.changed"
	EventEmailChanged  = "user.email.changed"
)

// contactChanged is the data of EventMobileChanged and EventEmailChanged.
type contactChanged struct {
	TenantID int64          `json:"tenantId"`
	Actor    *deskkit.Actor `json:"actor"`
	UserID   int64          `json:"userId"`
	// OldAddress is null for a bind (the user had none).
	OldAddress *string `json:"oldAddress"`
	NewAddress string  `json:"newAddress"`
}

// EventTypes returns the types of the events the Verifier publishes, for
// the host to register with its publisher's catalogue.
func EventTypes() []deskkit.EventType {
	old := "+86*******8000"
	oldEmail := "a***@example.com"
	return []deskkit.EventType{{
		Name:        EventMobileChanged,
		Description: "A user changed or added their mobile number, proved by verification codes; both numbers are masked.",
		Example: contactChanged{TenantID: 1, Actor: &deskkit.Actor{ID: 7, Name: "Ann Lee"}, UserID: 7,
			OldAddress: &old, NewAddress: "+86*******7000"},
	}, {
		Name:        EventEmailChanged,
		Description: "A user changed or added their e-mail address, proved by verification codes; both addresses are masked.",
		Example: contactChanged{TenantID: 1, Actor: &deskkit.Actor{ID: 7, Name: "Ann Lee"}, UserID: 7,
			OldAddress: &oldEmail, NewAddress: "a***@example.org"},
	}}
}

// publishChange publishes the event of a committed contact change through
// tx, the change's transaction: u is the user before the change, old its
// address of kind k ("" for none), address the new one.
func (v *Verifier) publishChange(ctx context.Context, tx bun.Tx, u User, k Kind, old, address string) error {
	if v.cfg.Publisher == nil {
		return nil
	}
	typ, what := EventMobileChanged, "mobile number"
	if k == KindEmail {
		typ, what = EventEmailChanged, "e-mail address"
	}
	data := contactChanged{
		TenantID:   u.TenantID,
		Actor:      &deskkit.Actor{ID: u.ID, Name: u.FullName},
		UserID:     u.ID,
		NewAddress: mask(k, address),
	}
	// The text names the user as people know them; the actor carries the
	// directory's display name only.
	name := u.FullName
	if name == "" {
		name = u.Username
	}
	if name == "" {
		name = fmt.Sprintf("User %d", u.ID)
	}
	title := fmt.Sprintf("%s added a %s", name, what)
	text := fmt.Sprintf("%s added the %s %s.", name, what, data.NewAddress)
	if old != "" {
		m := mask(k, old)
		data.OldAddress = &m
		title = fmt.Sprintf("%s changed their %s", name, what)
		text = fmt.Sprintf("%s changed their %s from %s to %s.", name, what, m, data.NewAddress)
	}
	ev := deskkit.Event{ID: deskkit.NewEventID(), Type: typ, Time: v.cfg.Now(), Title: title, Text: text, Data: data}
	if err := v.cfg.Publisher.Publish(ctx, tx, u.TenantID, ev); err != nil {
		return fmt.Errorf("verify: publish %s: %w", typ, err)
	}
	return nil
}
