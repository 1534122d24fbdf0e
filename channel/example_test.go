package channel_test

import (
	"context"
	"database/sql"
	"encoding/json"
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
	secret = added.Secret // shown here; the registry keeps it encrypted

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

// A host registers its event types, a tenant's admin subscribes a webhook
// to some of them, the host publishes an event in the transaction of its
// change, and Run delivers it, with retries if the receiver fails.
func ExampleChannelRegistry_Publish() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	if err := channel.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	got := make(chan string)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		w.WriteHeader(http.StatusNoContent)
		got <- r.Header.Get("webhook-id") + " " + ev.Type + " " + string(ev.Data)
	}))
	defer receiver.Close()

	reg, err := channel.New(db, []byte("an example secret of 32 bytes or more"), nil,
		&channel.Config{AllowPrivateNetworks: true})
	if err != nil {
		log.Fatal(err)
	}
	err = reg.RegisterEventTypes(deskkit.EventType{
		Name: "invoice.paid", Description: "An invoice was paid.", Example: map[string]any{"invoiceId": 7},
	})
	if err != nil {
		log.Fatal(err)
	}
	ann := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	_, err = reg.Add(ctx, ann, channel.Input{Type: "WEBHOOK", Name: "billing", Address: receiver.URL + "/hooks",
		Events: []string{"invoice.*"}})
	if err != nil {
		log.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- reg.Run(runCtx) }()

	// The host's change and its event commit together, or neither does.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// ... the host's own writes through tx ...
		return reg.Publish(ctx, tx, ann.TenantID, deskkit.Event{
			ID: "msg_invoice_7_paid", Type: "invoice.paid", Title: "Invoice 7 was paid",
			Data: map[string]any{"invoiceId": 7},
		})
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	stop()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// msg_invoice_7_paid invoice.paid {"tenantId":1,"invoiceId":7}
}
