package verify

import (
	"errors"
	"fmt"
	"time"
)

// smsRefusal is an *sms.Error as the Verifier reads it, without importing
// package sms (which imports verify).
type smsRefusal interface {
	error
	SMSRefusal() (retryable, throttled bool, retryAfter time.Duration)
}

// defaultSMSRetryAfter is sms.DefaultRetryAfter, the wait of a throttle
// without a hint.
const defaultSMSRetryAfter = time.Minute

// sendError is the error of a send whose sender refused the message or
// could not reach its gateway: ErrSendFailed wrapping the sender's error,
// and, when a provider throttled the message (an *sms.Error with
// Throttled), ErrSendThrottled too, with the wait for Retry-After.
func sendError(err error) error {
	if se, ok := errors.AsType[smsRefusal](err); ok {
		if _, throttled, wait := se.SMSRefusal(); throttled {
			if wait <= 0 { // a host's own sms.Error may leave it out
				wait = defaultSMSRetryAfter
			}
			return &throttledError{err: err, wait: wait}
		}
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
