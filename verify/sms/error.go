package sms

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a provider's refusal of a message, or a failure to reach it,
// as the senders under verify/sms answer. Its text never holds the code,
// nor the number unmasked. A host's own verify.SMSSender may return one
// too: the Verifier reads Retryable to retry a notice or not, and
// Throttled and RetryAfter to answer a code's send with
// verify.ErrSendThrottled.
type Error struct {
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
	// verify.Verifier.SendNotices): the provider could not be reached,
	// failed inside (a 5xx, a system error its documentation says to call
	// again after), or throttled it for a window that ends that soon
	// (Throttled). A refused credential, signature name, template or
	// number is not retryable, nor is a daily or monthly limit: it does
	// not clear within the schedule. Each sender's documentation lists its
	// provider's codes and how it takes them.
	Retryable bool
	// Throttled says that the provider refused the message for its rate
	// limits (an HTTP 429, Aliyun isv.BUSINESS_LIMIT_CONTROL, Tencent
	// RequestLimitExceeded, ...): a send of a code then fails with
	// verify.ErrSendThrottled, which httpapi answers 503 with Retry-After.
	Throttled bool
	// RetryAfter is, when Throttled, how long to wait: the provider's
	// hint (a Retry-After header, or the window its code names, as
	// Tencent LimitExceeded.PhoneNumberThirtySecondLimit does), else
	// DefaultRetryAfter; 0 otherwise.
	RetryAfter time.Duration
	// Err is the transport's error when the provider could not be reached
	// (a timeout, a refused connection, ctx done), or nil.
	Err error
}

// DefaultRetryAfter is the wait of a throttled message whose provider
// gave no hint: a minute, the window of the providers' tightest
// per-number limit (Aliyun's default of one code a minute) and the
// Verifier's verify.DefaultResendInterval.
const DefaultRetryAfter = time.Minute

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("verify: " + e.Provider + " SMS")
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
		return b.String()
	}
	b.WriteString(" answered")
	if e.Status != 0 {
		b.WriteString(" " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status))
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
func (e *Error) Unwrap() error { return e.Err }

// SMSRefusal returns Retryable, Throttled and RetryAfter: package verify,
// which this package imports, reads an Error through it.
func (e *Error) SMSRefusal() (retryable, throttled bool, retryAfter time.Duration) {
	return e.Retryable, e.Throttled, e.RetryAfter
}
