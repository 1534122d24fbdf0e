package deskkit

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors shared by every service. Service packages re-export the ones
// they return (trash.ErrNotFound is ErrNotFound), so callers may test with
// either name through errors.Is.
var (
	// ErrUnauthenticated: no principal, or a credential that names none.
	ErrUnauthenticated = errors.New("deskkit: unauthenticated")
	// ErrForbidden: the principal is known but may not do this.
	ErrForbidden = errors.New("deskkit: forbidden")
	// ErrNotFound: the resource does not exist in the principal's tenant.
	ErrNotFound = errors.New("deskkit: not found")
	// ErrConflict: the request contradicts the current state.
	ErrConflict = errors.New("deskkit: conflict")
	// ErrInvalid: a request field breaks a rule. Errors that wrap it are
	// *InputError values carrying the field and the rule.
	ErrInvalid = errors.New("deskkit: invalid input")
	// ErrRateLimited: a quota is exhausted. Errors that wrap it are
	// *RateLimitError values carrying when to retry.
	ErrRateLimited = errors.New("deskkit: rate limited")
)

// InputError says which request field broke which rule. Its message is meant
// for the client: "pageSize must be between 1 and 2000".
type InputError struct {
	Field string // the field as the client spelt it, e.g. "filters[1].op"
	Rule  string // what the field must be, e.g. "must be between 1 and 2000"
}

// Invalid returns an *InputError for field and a rule written as a format.
func Invalid(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

func (e *InputError) Error() string { return e.Field + " " + e.Rule }

// Is makes errors.Is(err, ErrInvalid) true for every *InputError.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// RateLimitError says that a quota is exhausted and when the caller may try
// again.
type RateLimitError struct {
	Message    string        // for the client, e.g. "at most 5 codes an hour"
	RetryAfter time.Duration // at least one second when sent over HTTP
}

func (e *RateLimitError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrRateLimited) true for every *RateLimitError.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }
