package channel_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// BenchmarkPublish measures what publishing adds to a host's write
// transaction: "bare" inserts one row in a transaction, "publish" does the
// same and publishes an event to the tenant's three subscribed webhooks
// (the trash's goal: at most 1.3x of bare), its statement prepared as
// once Run has started; "messages" publishes it with a Heading and Body,
// as deskkit's services do. No worker runs: this is the publisher's cost
// alone.
//
//	go test -run '^$' -bench Publish ./channel/
func BenchmarkPublish(b *testing.B) {
	for _, backend := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		b.Run(string(backend), func(b *testing.B) {
			db := dbtest.Open(b, backend)
			ctx := context.Background()
			if err := channel.Migrate(ctx, db); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "CREATE TABLE bench_things (id BIGINT PRIMARY KEY, name TEXT NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			r, err := channel.New(db, sendSecret, nil, &channel.Config{AllowPrivateNetworks: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.RegisterEventTypes(hostTypes...); err != nil {
				b.Fatal(err)
			}
			// A publish given the database rather than a transaction
			// prepares Publish's statement on PostgreSQL, as Run does when
			// it starts; tenant 30 has no channel.
			if err := r.Publish(ctx, db, 30, deskkit.Event{Type: "task.trashed", Title: "prepare"}); err != nil {
				b.Fatal(err)
			}
			admin := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
			for i, events := range [][]string{nil, {"task.*"}, {"task.trashed", "sprint.trashed"}} {
				_, err := r.Add(ctx, admin, channel.Input{Type: "WEBHOOK", Name: string(rune('a' + i)),
					Address: "https://hooks.example.com/" + string(rune('a'+i)), Events: events})
				if err != nil {
					b.Fatal(err)
				}
			}
			// A channel of another tenant, which the publish must skip.
			if _, err := r.Add(ctx, deskkit.Principal{UserID: 2, TenantID: 20, Admin: true},
				channel.Input{Type: "WEBHOOK", Name: "x", Address: "https://hooks.example.com/x"}); err != nil {
				b.Fatal(err)
			}
			var id int64
			for _, mode := range []string{"bare", "publish", "messages"} {
				publish, messages := mode != "bare", mode == "messages"
				b.Run(mode, func(b *testing.B) {
					for b.Loop() {
						id++
						err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
							if _, err := tx.ExecContext(ctx, "INSERT INTO bench_things (id, name) VALUES (?, ?)", id, "thing"); err != nil {
								return err
							}
							if !publish {
								return nil
							}
							ev := deskkit.Event{Type: "task.trashed", Title: "Task trashed",
								Data: map[string]any{"projectId": 1, "trashId": id, "targetName": "Fix the login"}}
							if messages {
								// As the trash publishes: a heading and body
								// of key and arguments.
								ev.Title = ""
								ev.Heading = deskkit.Textf("Task %s moved to the trash", `"Fix the login"`)
								ev.Body = deskkit.Textf("%s moved task %s of project %d to the trash.", "Ada", `"Fix the login"`, 1)
							}
							return r.Publish(ctx, tx, 10, ev)
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
