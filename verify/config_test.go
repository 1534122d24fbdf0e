package verify_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
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

// TestNewChecksThePublisher: a publisher that says it lacks one of the
// Verifier's event types fails New with the error that names the type and
// the call that registers it; one that knows them, one that cannot say,
// and none at all are accepted.
func TestNewChecksThePublisher(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := verify.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	dir, s := verifytest.NewDirectory(), &verifytest.Sink{}
	for _, c := range []struct {
		name  string
		known []string
		want  string
	}{
		{"none of them", nil,
			"verify: the publisher does not know event type user.mobile.changed: call ChannelRegistry.RegisterEventTypes(verify.EventTypes()...) before verify.New"},
		{"the mobile one only", []string{verify.EventMobileChanged, "task.trashed"},
			"verify: the publisher does not know event type user.email.changed: call ChannelRegistry.RegisterEventTypes(verify.EventTypes()...) before verify.New"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pub := knowingPublisher{known: map[string]bool{}}
			for _, name := range c.known {
				pub.known[name] = true
			}
			_, err := verify.New(db, dir, s, s, secret, &verify.Config{Publisher: pub})
			if err == nil {
				t.Fatal("New succeeded")
			}
			if d := cmp.Diff(c.want, err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
	both := knowingPublisher{known: map[string]bool{verify.EventMobileChanged: true, verify.EventEmailChanged: true}}
	for name, pub := range map[string]deskkit.Publisher{"none": nil, "knows them": both, "cannot say": plainPublisher{}} {
		if _, err := verify.New(db, dir, s, s, secret, &verify.Config{Publisher: pub}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
