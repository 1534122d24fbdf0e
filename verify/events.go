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
// the host's publisher: user.mobile.changed and user.email.changed, for a
// modify and a bind alike, with data {tenantId, actor {id, name}, userId,
// oldAddress, newAddress}: the actor is the user (name: FullName, or ""),
// the addresses masked ("+86*******8000", "a***@example.com"), oldAddress
// null for a bind. The heading and body name the user by FullName, else
// Username, in a tenant's language (channel.Config.TenantLanguage).
func EventTypes() []deskkit.EventType {
	old := "+86*******8000"
	oldEmail := "a***@example.com"
	return []deskkit.EventType{{
		Name:    EventMobileChanged,
		Service: deskkit.ServiceVerify,
		About:   deskkit.Textf("A user added or changed their mobile number after confirming it with a verification code. Both numbers are shown partly hidden."),
		Example: contactChanged{TenantID: 1, Actor: &deskkit.Actor{ID: 7, Name: "Ann Lee"}, UserID: 7,
			OldAddress: &old, NewAddress: "+86*******7000"},
	}, {
		Name:    EventEmailChanged,
		Service: deskkit.ServiceVerify,
		About:   deskkit.Textf("A user added or changed their e-mail address after confirming it with a verification code. Both addresses are shown partly hidden."),
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
	typ := EventMobileChanged
	if k == KindEmail {
		typ = EventEmailChanged
	}
	data := contactChanged{
		TenantID:   u.TenantID,
		Actor:      &deskkit.Actor{ID: u.ID, Name: u.FullName},
		UserID:     u.ID,
		NewAddress: mask(k, address),
	}
	// The text names the user as people know them; the actor carries the
	// directory's display name only.
	var name any = u.FullName
	if u.FullName == "" {
		name = u.Username
	}
	if u.FullName == "" && u.Username == "" {
		name = deskkit.Textf("User %d", u.ID)
	}
	if old != "" {
		m := mask(k, old)
		data.OldAddress = &m
	}
	title, text := contactTexts(typ, name, data.OldAddress, data.NewAddress)
	ev := deskkit.Event{ID: deskkit.NewEventID(), Type: typ, Time: v.cfg.Now(), Heading: title, Body: text, Data: data}
	if err := v.cfg.Publisher.Publish(ctx, tx, u.TenantID, ev); err != nil {
		return fmt.Errorf("verify: publish %s: %w", typ, err)
	}
	return nil
}

// contactTexts are the heading and body of a contact change: by name, from
// old (nil for a bind) to address, both masked.
func contactTexts(typ string, name any, old *string, address string) (title, text deskkit.Text) {
	if typ == EventEmailChanged {
		if old == nil {
			// "a e-mail address" (sic): the title as published since the
			// first release, kept byte for byte.
			return deskkit.Textf("%s added a e-mail address", name), deskkit.Textf("%s added the e-mail address %s.", name, address)
		}
		return deskkit.Textf("%s changed their e-mail address", name), deskkit.Textf("%s changed their e-mail address from %s to %s.", name, *old, address)
	}
	if old == nil {
		return deskkit.Textf("%s added a mobile number", name), deskkit.Textf("%s added the mobile number %s.", name, address)
	}
	return deskkit.Textf("%s changed their mobile number", name), deskkit.Textf("%s changed their mobile number from %s to %s.", name, *old, address)
}
