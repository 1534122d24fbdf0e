package channel_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

func openExampleDB() (*bun.DB, func()) {
	dir, err := os.MkdirTemp("", "channel-example")
	if err != nil {
		log.Fatal(err)
	}
	dsn := "file:" + filepath.Join(dir, "example.db") + "?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	sqldb.SetMaxOpenConns(8)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// A tenant adds a webhook and the host delivers an event to it. The
// receiver checks the signature with a Standard Webhooks library and the
// secret the add answered.
func Example() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	if err := channel.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}

	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		wh, _ := standardwebhooks.NewWebhook(secret)
		fmt.Println("receiver: signature valid:", wh.Verify(body, r.Header) == nil)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	serverSecret := []byte("an example secret of 32 bytes or more")
	// The receiver is on loopback, which only development may reach.
	reg, err := channel.New(db, serverSecret, nil, &channel.Config{AllowPrivateNetworks: true})
	if err != nil {
		log.Fatal(err)
	}
	// Only admins manage channels, unless Config.Authorizer allows others.
	ann := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	added, err := reg.Add(ctx, ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: receiver.URL + "/hooks"})
	if err != nil {
		log.Fatal(err)
	}
	secret = added.Secret // shown this once; the registry keeps it encrypted

	results, err := reg.Deliver(ctx, ann.TenantID, channel.Event{
		Type: "task.trashed", Title: `Task "Write docs" moved to the trash`, Data: map[string]any{"taskId": 42},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		fmt.Printf("channel %d (%s %s): delivered: %v\n", r.ChannelID, r.Type, r.Name, r.Err == nil)
	}
	// Output:
	// receiver: signature valid: true
	// channel 1 (WEBHOOK ops): delivered: true
}
