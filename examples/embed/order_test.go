package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/logsender"
)

// TestServicesCheckTheRegistry: the trash and the Verifier, given the
// channel registry as their publisher before their event types are
// registered with it, fail in New with the error that names the call a
// host forgot, rather than at their first publish; in newApp's order
// (register, then build) they start.
func TestServicesCheckTheRegistry(t *testing.T) {
	db, err := openDB(filepath.Join(t.TempDir(), "order.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, verify.Migrate, channel.Migrate} {
		if err := migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
	}
	secret := []byte("0123456789abcdef0123456789abcdef-order")
	reg, err := channel.New(db, secret, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	logSender := logsender.Sender{}
	newTrash := func() error {
		_, err := trash.New(db, &host{db: db}, &trash.Config{Publisher: reg})
		return err
	}
	newVerifier := func() error {
		_, err := verify.New(db, hostUsers{db}, logSender, logSender, secret, &verify.Config{Publisher: reg})
		return err
	}
	for name, c := range map[string]struct {
		build func() error
		want  string
	}{
		"trash":  {newTrash, "trash: the publisher does not know event type task.trashed: call ChannelRegistry.RegisterEventTypes(trash.EventTypes()...) before trash.New"},
		"verify": {newVerifier, "verify: the publisher does not know event type user.mobile.changed: call ChannelRegistry.RegisterEventTypes(verify.EventTypes()...) before verify.New"},
	} {
		if err := c.build(); err == nil || err.Error() != c.want {
			t.Errorf("%s before registering: %v, want %q", name, err, c.want)
		}
	}
	if err := reg.RegisterEventTypes(trash.EventTypes()...); err != nil {
		t.Fatal(err)
	}
	if err := newTrash(); err != nil {
		t.Errorf("trash once registered: %v", err)
	}
	if err := reg.RegisterEventTypes(verify.EventTypes()...); err != nil {
		t.Fatal(err)
	}
	if err := newVerifier(); err != nil {
		t.Errorf("verify once registered: %v", err)
	}
}
