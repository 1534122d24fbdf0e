package deskkit_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/trash"
)

// hostTasks is the host's side of the trash: a real host brings its task
// back, or deletes it for good, through tx.
type hostTasks struct{}

func (hostTasks) Restore(context.Context, bun.Tx, trash.Entry) error { return nil }
func (hostTasks) Purge(context.Context, bun.Tx, trash.Entry) error   { return nil }

// hostTokens is the host's authentication: a fixed table here.
type hostTokens map[string]deskkit.Principal

func (t hostTokens) Authenticate(_ context.Context, token string) (deskkit.Principal, error) {
	if p, ok := t[token]; ok {
		return p, nil
	}
	return deskkit.Principal{}, deskkit.ErrUnauthenticated
}

// A host builds the event channels and registers the trash's event types
// before anything publishes, builds the trash with the registry as its
// Publisher, puts a deleted task in the trash in its own transaction (which
// publishes task.trashed there too), and serves deskkit's API beside its
// own routes. The registry's Run, in a goroutine of a real host, would
// deliver the event to the tenant's channels.
func Example() {
	dir, err := os.MkdirTemp("", "deskkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// SQLite as deskkit needs it (see Storage): IMMEDIATE transactions, a
	// busy timeout, the write-ahead log; a bounded pool.
	sqldb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_busy_timeout=10000&_foreign_keys=1&_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	sqldb.SetMaxOpenConns(8)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	ctx := context.Background()
	for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, channel.Migrate} {
		if err := migrate(ctx, db); err != nil {
			log.Fatal(err)
		}
	}
	secret := bytes.Repeat([]byte("s"), channel.MinSecretLength) // a real one is random, the same in every replica
	reg, err := channel.New(db, secret, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.RegisterEventTypes(trash.EventTypes()...); err != nil {
		log.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }
	tr, err := trash.New(db, hostTasks{}, &trash.Config{Publisher: reg, Now: now})
	if err != nil {
		log.Fatal(err)
	}

	ann := deskkit.Principal{UserID: 7, TenantID: 1}
	err = deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
		// ... the host deletes task 42 from its own tables through tx ...
		_, err := tr.Add(ctx, tx, ann, trash.NewEntry{
			ProjectID: 3, TargetType: trash.TargetTask, TargetID: 42, TargetName: "Write the release notes", CreatedBy: 7,
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	api, err := httpapi.New(&httpapi.Config{Authenticator: hostTokens{"ann-token": ann}, Trash: tr, Channels: reg, Now: now})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tasks", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "the host's own route") })
	handler := api.Wrap(mux) // /api/v1 to deskkit as it came, the rest to the host's mux

	for _, target := range []string{"/tasks", "/api/v1/task/trash/search?targetType=TASK"} {
		req := httptest.NewRequest("GET", target, nil)
		req.Header.Set("Authorization", "Bearer ann-token")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Print(target, " -> ", rec.Code, ": ")
		var env struct {
			Code string
			Data struct {
				Total int
				List  []trash.Entry
			}
		}
		if json.Unmarshal(rec.Body.Bytes(), &env) != nil {
			fmt.Print(rec.Body.String())
			continue
		}
		fmt.Println(env.Code, env.Data.Total, env.Data.List[0].TargetName)
	}
	// Output:
	// /tasks -> 200: the host's own route
	// /api/v1/task/trash/search?targetType=TASK -> 200: S 1 Write the release notes
}

// A service declares its own errors with NewError: each has its own
// identity (httpapi gives it its own error key) and also matches its class,
// so code that only cares about the class keeps working.
func ExampleNewError() {
	errCodeExpired := deskkit.NewError(deskkit.ErrInvalid, "verify: code expired", "the code has expired; ask for a new one")

	err := fmt.Errorf("check code: %w", errCodeExpired)
	fmt.Println(errors.Is(err, errCodeExpired), errors.Is(err, deskkit.ErrInvalid), errors.Is(err, deskkit.ErrNotFound))

	var m deskkit.ClientMessager
	if errors.As(err, &m) {
		fmt.Println(m.ClientMessage())
	}
	// Output:
	// true true false
	// the code has expired; ask for a new one
}

// Input errors name the field and the rule; their message is meant for the
// client as it is.
func ExampleCheckName() {
	for _, name := range []string{"Write docs", "   ", "tab\there", "bad \xff byte", "a much too long name"} {
		fmt.Println(deskkit.CheckName("name", name, 12))
	}
	// Output:
	// <nil>
	// name is required
	// name must not contain control characters
	// name must be valid UTF-8
	// name must be at most 12 characters
}

// A quota error carries when to try again; httpapi sends it as Retry-After.
func ExampleRateLimitError() {
	var err error = &deskkit.RateLimitError{Message: deskkit.Plain("at most 5 codes an hour"), RetryAfter: 90 * time.Second}
	var r deskkit.RetryAfterer
	fmt.Println(errors.Is(err, deskkit.ErrRateLimited), errors.As(err, &r) && r.RetryAfterDuration() == 90*time.Second)
	// Output:
	// true true
}

// A principal names a user of a tenant; services refuse one that does not.
func ExamplePrincipal_Valid() {
	fmt.Println(deskkit.Principal{UserID: 7, TenantID: 1}.Valid(), deskkit.Principal{UserID: 7}.Valid())
	// Output:
	// true false
}

// A host wraps its log handler: what deskkit logs for a request carries
// the request's id.
func ExampleLogHandler() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime})))
	ctx := deskkit.WithRequestID(context.Background(), "4bf92f3577b34da6")
	logger.ErrorContext(ctx, "unexpected error", slog.String("path", "/api/v1/task/trash/7"))
	logger.InfoContext(context.Background(), "no request")
	// Output:
	// {"level":"ERROR","msg":"unexpected error","path":"/api/v1/task/trash/7","request_id":"4bf92f3577b34da6"}
	// {"level":"INFO","msg":"no request"}
}
