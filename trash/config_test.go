package trash_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// knowingPublisher is a deskkit.Publisher that is also a
// deskkit.EventTypeChecker: it knows the types in known.
type knowingPublisher struct{ known map[string]bool }

var (
	_ deskkit.Publisher        = knowingPublisher{}
	_ deskkit.EventTypeChecker = knowingPublisher{}
)

func (knowingPublisher) Publish(context.Context, bun.IDB, int64, deskkit.Event) error { return nil }

func (p knowingPublisher) KnowsEventType(name string) bool { return p.known[name] }

// plainPublisher is a deskkit.Publisher that cannot say what it knows.
type plainPublisher struct{}

func (plainPublisher) Publish(context.Context, bun.IDB, int64, deskkit.Event) error { return nil }

// knowing returns a publisher that knows every trash event type but skip.
func knowing(skip ...string) knowingPublisher {
	p := knowingPublisher{known: map[string]bool{}}
	for _, et := range trash.EventTypes() {
		p.known[et.Name] = true
	}
	for _, name := range skip {
		delete(p.known, name)
	}
	return p
}

// TestNewRefusesBadConfig: New answers a bad setting, and a publisher
// that says it lacks one of the trash's event types, with the error that
// names it; the message is what a host reads at start-up.
func TestNewRefusesBadConfig(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	for _, c := range []struct {
		name     string
		restorer trash.Restorer
		cfg      *trash.Config
		want     string
	}{
		{"no restorer", nil, nil, "trash: restorer is required"},
		{"negative batch", &fakeRestorer{}, &trash.Config{BatchSize: -1}, "trash: BatchSize must not be negative"},
		{"negative retention", &fakeRestorer{}, &trash.Config{Retention: -time.Hour}, "trash: Retention must not be negative"},
		{"publisher without the types", &fakeRestorer{}, &trash.Config{Publisher: knowingPublisher{}},
			"trash: the publisher does not know event type task.trashed: call ChannelRegistry.RegisterEventTypes(trash.EventTypes()...) before trash.New"},
		{"publisher without one type", &fakeRestorer{}, &trash.Config{Publisher: knowing(trash.EventSprintCleared)},
			"trash: the publisher does not know event type sprint.cleared: call ChannelRegistry.RegisterEventTypes(trash.EventTypes()...) before trash.New"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := trash.New(db, c.restorer, c.cfg)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if d := cmp.Diff(c.want, err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

// TestNewAcceptsPublishers: a publisher that knows the trash's types, and
// one that cannot say, are both accepted, as is none.
func TestNewAcceptsPublishers(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := trash.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	more := knowing()
	more.known["host.own"] = true
	for name, pub := range map[string]deskkit.Publisher{
		"none":       nil,
		"knows them": knowing(),
		"knows more": more,
		"cannot say": plainPublisher{},
	} {
		if _, err := trash.New(db, &fakeRestorer{}, &trash.Config{Publisher: pub}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
