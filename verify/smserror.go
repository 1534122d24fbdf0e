package verify

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SMSError is a provider's refusal of a message, or a failure to reach
// it, as the senders under verify/sms answer. Its text never holds the
// code, nor the number unmasked. A host's own SMSSender may return one
// too: the Verifier reads Retryable to retry a notice or not, and
// Throttled and RetryAfter to answer a code's send with ErrSendThrottled.
type SMSError struct {
	// Provider is "aliyun", "tencent", "twilio" or "http" (package gateway);
	// a host's own sender: its own name.
	Provider string
	// Status is the HTTP status of the answer; 0 when none came.
	Status int
	// Code is the provider's error code ("isv.BUSINESS_LIMIT_CONTROL",
	// "LimitExceeded.PhoneNumberDailyLimit", "AuthFailure.SignatureFailure"),
	// or "" when the provider gave none.
	Code string
	// Message is the provider's message, or the start of its answer.
	Message string
	// RequestID is the provider's id of the request, to quote to its
	// support; "" when none came.
	RequestID string
	// Retryable says whether the same message may be accepted within
	// minutes to hours (the notices' schedule, see
	// Verifier.SendNotices): the provider could not be reached, failed inside (a
	// 5xx, a system error its documentation says to call again after), or
	// throttled it for a window that ends that soon (Throttled). A refused
	// credential, signature name, template or number is not retryable, nor
	// is a daily or monthly limit: it does not clear within the schedule.
	// Each sender's documentation lists its provider's codes and how it
	// takes them.
	Retryable bool
	// Throttled says that the provider refused the message for its rate
	// limits (an HTTP 429, Aliyun isv.BUSINESS_LIMIT_CONTROL, Tencent
	// RequestLimitExceeded, ...): a send of a code then fails with
	// ErrSendThrottled, which httpapi answers 503 with Retry-After.
	Throttled bool
	// RetryAfter is, when Throttled, how long to wait: the provider's
	// hint (a Retry-After header, or the window its code names, as
	// Tencent LimitExceeded.PhoneNumberThirtySecondLimit does), else
	// DefaultSMSRetryAfter; 0 otherwise.
	RetryAfter time.Duration
	// Err is the transport's error when the provider could not be reached
	// (a timeout, a refused connection, ctx done), or nil.
	Err error
}

// DefaultSMSRetryAfter is the wait of a throttled message whose provider
// gave no hint: a minute, the window of the providers' tightest
// per-number limit (Aliyun's default of one code a minute) and the
// Verifier's DefaultResendInterval.
const DefaultSMSRetryAfter = time.Minute

// sendError is the error of a send whose sender refused the message or
// could not reach its gateway: ErrSendFailed wrapping the sender's error,
// and, when a provider throttled the message (an *SMSError with
// Throttled), ErrSendThrottled too, with the wait for Retry-After.
func sendError(err error) error {
	if se, ok := errors.AsType[*SMSError](err); ok && se.Throttled {
		wait := se.RetryAfter
		if wait <= 0 { // a host's own SMSError may leave it out
			wait = DefaultSMSRetryAfter
		}
		return &throttledError{err: err, wait: wait}
	}
	return fmt.Errorf("%w: %w", ErrSendFailed, err)
}

// throttledError is a send a provider throttled. Its client message is
// ErrSendThrottled's, and it matches ErrSendFailed as every failed send
// does.
type throttledError struct {
	err  error
	wait time.Duration
}

func (e *throttledError) Error() string { return ErrSendThrottled.Error() + ": " + e.err.Error() }

func (e *throttledError) Unwrap() []error { return []error{ErrSendThrottled, ErrSendFailed, e.err} }

// RetryAfterDuration is the provider's wait, for Retry-After.
func (e *throttledError) RetryAfterDuration() time.Duration { return e.wait }

func (e *SMSError) Error() string {
	var b strings.Builder
	b.WriteString("verify: " + e.Provider + " SMS")
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
		return b.String()
	}
	b.WriteString(" answered")
	if e.Status != 0 {
		b.WriteString(" " + statusText(e.Status))
	}
	if e.Code != "" {
		b.WriteString(": " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// Unwrap is Err.
func (e *SMSError) Unwrap() error { return e.Err }

func statusText(status int) string {
	return strconv.Itoa(status) + " " + http.StatusText(status)
}
