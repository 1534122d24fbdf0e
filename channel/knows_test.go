package channel_test

import (
	"context"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestKnowsEventType: the registry is a deskkit.EventTypeChecker that
// knows its own types and those registered, and nothing else, so that
// trash.New and verify.New can refuse it before their types are
// registered.
func TestKnowsEventType(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	r, err := channel.New(db, sendSecret, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var checker deskkit.EventTypeChecker = r
	if !checker.KnowsEventType(channel.EventTypes()[0].Name) {
		t.Errorf("the registry does not know its own %s", channel.EventTypes()[0].Name)
	}
	if checker.KnowsEventType("task.trashed") {
		t.Error("task.trashed known before it was registered")
	}
	if err := r.RegisterEventTypes(hostTypes...); err != nil {
		t.Fatal(err)
	}
	for _, et := range hostTypes {
		if !checker.KnowsEventType(et.Name) {
			t.Errorf("%s not known once registered", et.Name)
		}
	}
	if checker.KnowsEventType("task") || checker.KnowsEventType("") {
		t.Error("a name that is not registered is known")
	}
	var none *channel.ChannelRegistry
	if none.KnowsEventType("task.trashed") {
		t.Error("a nil registry knows a type")
	}
}
