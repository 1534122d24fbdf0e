package httpapi_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/trash"
)

// openSQLite opens the SQLite file at path with the settings deskkit needs
// (see the trash package's example): IMMEDIATE transactions, a busy
// timeout, the write-ahead log and foreign keys, and a bounded pool.
func openSQLite(path string) (*bun.DB, error) {
	sqldb, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1")
	if err != nil {
		return nil, err
	}
	sqldb.SetMaxOpenConns(8)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// bearer is the host's token check: a fixed table here.
type bearer map[string]deskkit.Principal

func (b bearer) Authenticate(_ context.Context, token string) (deskkit.Principal, error) {
	if p, ok := b[token]; ok {
		return p, nil
	}
	return deskkit.Principal{}, fmt.Errorf("token %q: %w", token, deskkit.ErrUnauthenticated)
}

// noHost restores and purges nothing: a real host updates its tasks in tx.
type noHost struct{}

func (noHost) Restore(context.Context, bun.Tx, trash.Entry) error { return nil }
func (noHost) Purge(context.Context, bun.Tx, trash.Entry) error   { return nil }

// send sends a request to h and prints the status and the body.
func send(h http.Handler, method, target, token string) {
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("X-Request-Id", "req-1") // echoed in X-Request-Id and an error's ext.requestId
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	extra := ""
	if allow := rec.Header().Get("Allow"); allow != "" {
		extra = " Allow: " + allow
	}
	if ra := rec.Header().Get("Retry-After"); ra != "" {
		extra = " Retry-After: " + ra
	}
	fmt.Printf("%s %s -> %d%s %s\n", method, target, rec.Code, extra, strings.TrimSpace(string(body)))
}

var exampleNow = func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }

// A host mounts the trash's API: every answer is an envelope, every route
// rejects parameters it does not know, and Allow lists only the methods that
// serve a path.
func Example() {
	dir, err := os.MkdirTemp("", "deskkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := openSQLite(filepath.Join(dir, "example.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	tr, err := trash.New(db, noHost{}, &trash.Config{Now: exampleNow})
	if err != nil {
		log.Fatal(err)
	}
	ann := deskkit.Principal{UserID: 1, TenantID: 1}
	if _, err := tr.Add(ctx, db, ann, trash.NewEntry{ProjectID: 7, TargetType: trash.TargetTask, TargetID: 70, TargetName: "Write the docs", CreatedBy: 1}); err != nil {
		log.Fatal(err)
	}

	api, err := httpapi.New(&httpapi.Config{Authenticator: bearer{"ann-token": ann}, Trash: tr, Now: exampleNow})
	if err != nil {
		log.Fatal(err)
	}
	send(api, "GET", "/api/v1/task/trash/count?projectId=7", "ann-token")
	send(api, "DELETE", "/api/v1/task/trash/1?dryRun=true", "ann-token")
	send(api, "POST", "/api/v1/task/trash/search", "ann-token")
	send(api, "GET", "/api/v1/task/trash/count?projectId=7", "")
	// Output:
	// GET /api/v1/task/trash/count?projectId=7 -> 200 {"code":"S","msg":"Success","data":1,"datetime":"2026-11-22T10:00:00Z","ext":{}}
	// DELETE /api/v1/task/trash/1?dryRun=true -> 400 {"code":"E0","msg":"dryRun is not a parameter of this operation","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"param_validation_error","requestId":"req-1"}}
	// POST /api/v1/task/trash/search -> 405 Allow: GET {"code":"E0","msg":"method POST is not allowed on /api/v1/task/trash/search; allowed: GET","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"method_not_allowed","requestId":"req-1"}}
	// GET /api/v1/task/trash/count?projectId=7 -> 401 {"code":"E0","msg":"a valid bearer token is required","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"unauthorized","requestId":"req-1"}}
}

type noteIn struct {
	Text string `json:"text"`
}

// A host adds a route of its own: path parameters through r.PathValue,
// the query parameters it names (any other is 400), the body through
// DecodeJSON, and input errors answered 400 naming the field.
func ExampleServer_Handle() {
	api, err := httpapi.New(&httpapi.Config{Authenticator: bearer{"t": {UserID: 1, TenantID: 1}}, Now: exampleNow})
	if err != nil {
		log.Fatal(err)
	}
	api.Handle(http.MethodPost, "/demo/task/{id}/note", func(r *http.Request, p deskkit.Principal) (any, error) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id < 1 {
			return nil, deskkit.Invalid("id", "must be a positive integer")
		}
		var in noteIn
		if err := httpapi.DecodeJSON(r, &in); err != nil {
			return nil, err
		}
		if err := deskkit.CheckText("text", in.Text, 200); err != nil {
			return nil, err
		}
		return map[string]any{"task": id, "pinned": r.URL.Query().Get("pin") == "true", "text": in.Text}, nil
	}, "pin")
	post := func(target, body string) {
		req := httptest.NewRequest("POST", target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("X-Request-Id", "req-1")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	post("/api/v1/demo/task/5/note?pin=true", `{"text":"call back"}`)
	post("/api/v1/demo/task/x/note", `{"text":"call back"}`)
	post("/api/v1/demo/task/5/note?pinned=true", `{"text":"call back"}`)
	// Output:
	// 200 {"code":"S","msg":"Success","data":{"pinned":true,"task":5,"text":"call back"},"datetime":"2026-11-22T10:00:00Z","ext":{}}
	// 400 {"code":"E0","msg":"id must be a positive integer","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"param_validation_error","requestId":"req-1"}}
	// 400 {"code":"E0","msg":"pinned is not a parameter of this operation","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"param_validation_error","requestId":"req-1"}}
}

// An error that says the service cannot answer now is a 503 with
// Retry-After, never a 500; a service's own error gives the client its
// message through deskkit.ClientMessager.
func ExampleServer_WriteError() {
	api, err := httpapi.New(&httpapi.Config{Authenticator: bearer{"t": {UserID: 1, TenantID: 1}}, Now: exampleNow})
	if err != nil {
		log.Fatal(err)
	}
	errCodeExpired := deskkit.NewError(deskkit.ErrInvalid, "verify: code expired", "the code has expired; ask for a new one")
	api.Handle(http.MethodPost, "/demo/down", func(*http.Request, deskkit.Principal) (any, error) {
		return nil, fmt.Errorf("load tasks: %w", deskkit.ErrUnavailable)
	})
	api.Handle(http.MethodPost, "/demo/verify", func(*http.Request, deskkit.Principal) (any, error) {
		return nil, errCodeExpired
	})
	send(api, "POST", "/api/v1/demo/down", "t")
	send(api, "POST", "/api/v1/demo/verify", "t")
	fmt.Println(errors.Is(errCodeExpired, deskkit.ErrInvalid))
	// Output:
	// POST /api/v1/demo/down -> 503 Retry-After: 5 {"code":"E2","msg":"the service is temporarily unavailable; retry after 5 seconds","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"service_unavailable","requestId":"req-1"}}
	// POST /api/v1/demo/verify -> 400 {"code":"E0","msg":"the code has expired; ask for a new one","data":null,"datetime":"2026-11-22T10:00:00Z","ext":{"eKey":"param_validation_error","requestId":"req-1"}}
	// true
}
