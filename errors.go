package deskkit

import (
	"errors"
	"time"

	"golang.org/x/text/language"
)

// Sentinel errors shared by every service: the classes of error. Service
// packages re-export the ones they return (trash.ErrNotFound is ErrNotFound)
// and declare their own, more specific errors with NewError, which also
// match their class through errors.Is.
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
	// *InputError values carrying the field and the rule, or service errors
	// of this class made by NewError.
	ErrInvalid = errors.New("deskkit: invalid input")
	// ErrRateLimited: a quota is exhausted. Errors that wrap it are
	// *RateLimitError values carrying when to retry.
	ErrRateLimited = errors.New("deskkit: rate limited")
	// ErrUnavailable: a dependency (the database, above all) cannot answer in
	// time. The request may succeed if retried later; nothing was changed.
	ErrUnavailable = errors.New("deskkit: service unavailable")
)

// ClientMessager is implemented by errors whose message is meant for the
// client as it is. httpapi sends ClientMessage as the envelope's msg; the
// text of any other error never leaves the server.
type ClientMessager interface {
	ClientMessage() string
}

// RetryAfterer is implemented by errors that know when the client may try
// again; httpapi sends it as the Retry-After header.
type RetryAfterer interface {
	RetryAfterDuration() time.Duration
}

// Error is a service's own sentinel error: it has a text for logs, a message
// for the client, and a class among the sentinels above that it also
// matches, so errors.Is(verify.ErrCodeExpired, deskkit.ErrInvalid) holds
// while httpapi can still give it a key of its own.
type Error struct {
	class error
	text  string
	msg   Text
}

// NewError returns a service error of class (one of the sentinels of this
// package) with text for logs and msg for the client. The msg is English
// and its key in the catalogues of Messages; it is no format.
func NewError(class error, text, msg string) *Error {
	return &Error{class: class, text: text, msg: Plain(msg)}
}

// NewErrorf is NewError with the client's message written as a format and
// its arguments, the format being the message's key in the catalogues.
func NewErrorf(class error, text, format string, args ...any) *Error {
	return &Error{class: class, text: text, msg: Textf(format, args...)}
}

func (e *Error) Error() string { return e.text }

// ClientMessage is the message for the client.
func (e *Error) ClientMessage() string { return e.msg.String() }

// LocalizedMessage is the message for the client in tag's language.
func (e *Error) LocalizedMessage(m *Messages, tag language.Tag) string {
	return e.msg.LocalizedMessage(m, tag)
}

// Is makes errors.Is(e, class) true.
func (e *Error) Is(target error) bool { return target == e.class }

// InputError says which request field broke which rule. Its message is meant
// for the client: "pageSize must be between 1 and 2000".
type InputError struct {
	Field string // the field as the client spelt it, e.g. "filters[1].op"
	// Rule is what the field must be, e.g. "must be between 1 and 2000":
	// a format and its arguments (Invalid), or Plain("is required"), so
	// that it is written in the reader's language. It nests in another
	// rule as an argument: "the %s e-mail address %s".
	Rule Text
}

// Invalid returns an *InputError for field and a rule written as a format.
// The format is the rule's key in the catalogues of Messages, so that the
// rule can be written in another language (LocalizedMessage); arguments
// that are LocalizedMessagers (a Text, another rule) are translated too.
func Invalid(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Rule: Textf(format, args...)}
}

// LocalizedMessage is ClientMessage in tag's language: the field as it is
// (the client spelt it) and the rule translated.
func (e *InputError) LocalizedMessage(m *Messages, tag language.Tag) string {
	return e.Field + " " + e.Rule.LocalizedMessage(m, tag)
}

func (e *InputError) Error() string { return e.Field + " " + e.Rule.String() }

// ClientMessage is the field and the rule: "pageSize must be between 1 and 2000".
func (e *InputError) ClientMessage() string { return e.Error() }

// Is makes errors.Is(err, ErrInvalid) true for every *InputError.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// RateLimitError says that a quota is exhausted and when the caller may try
// again.
type RateLimitError struct {
	// Message is for the client, e.g. "at most 5 codes an hour": a format
	// and its arguments, or Plain, so that it is written in the reader's
	// language.
	Message    Text
	RetryAfter time.Duration // at least one second when sent over HTTP
}

// RateLimited returns a *RateLimitError with msg for the client.
func RateLimited(retryAfter time.Duration, msg Text) *RateLimitError {
	return &RateLimitError{Message: msg, RetryAfter: retryAfter}
}

// LocalizedMessage is Message in tag's language.
func (e *RateLimitError) LocalizedMessage(m *Messages, tag language.Tag) string {
	return e.Message.LocalizedMessage(m, tag)
}

func (e *RateLimitError) Error() string { return e.Message.String() }

// ClientMessage is Message in English.
func (e *RateLimitError) ClientMessage() string { return e.Message.String() }

// RetryAfterDuration is RetryAfter.
func (e *RateLimitError) RetryAfterDuration() time.Duration { return e.RetryAfter }

// Is makes errors.Is(err, ErrRateLimited) true for every *RateLimitError.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }
