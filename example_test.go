package deskkit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/deskkit/deskkit"
)

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
	var err error = &deskkit.RateLimitError{Message: "at most 5 codes an hour", RetryAfter: 90 * time.Second}
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
