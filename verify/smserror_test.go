package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
)

// TestSendThrottled: a code whose provider throttled it fails with
// ErrSendThrottled, which is also ErrSendFailed (the limits are given
// back) and carries the provider's wait; a refusal that is no throttle is
// ErrSendFailed alone, without a wait.
func TestSendThrottled(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db, &verify.Config{SendsPerDay: 1})
		send := func() error {
			_, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"})
			return err
		}
		f.sink.FailWith(&sms.Error{Provider: "tencent", Status: 200, Code: "LimitExceeded.PhoneNumberThirtySecondLimit",
			Retryable: true, Throttled: true, RetryAfter: 30 * time.Second})
		err := send()
		for _, target := range []error{verify.ErrSendThrottled, verify.ErrSendFailed, deskkit.ErrUnavailable} {
			if !errors.Is(err, target) {
				t.Errorf("throttled send: %v does not match %v", err, target)
			}
		}
		var ra deskkit.RetryAfterer
		if !errors.As(err, &ra) || ra.RetryAfterDuration() != 30*time.Second {
			t.Errorf("throttled send: %v, want a RetryAfterer of 30s", err)
		}
		var cm deskkit.ClientMessager
		if !errors.As(err, &cm) || cm.ClientMessage() != "the SMS provider is throttling messages: try again later" {
			t.Errorf("throttled send: client message %v", err)
		}
		if se, ok := errors.AsType[*sms.Error](err); !ok || se.Code != "LimitExceeded.PhoneNumberThirtySecondLimit" {
			t.Errorf("throttled send: %v, want the provider's *sms.Error inside", err)
		}

		// A host's own sender may leave the wait out: the default.
		f.sink.FailWith(&sms.Error{Provider: "gateway", Status: 429, Retryable: true, Throttled: true})
		if err := send(); !errors.As(err, &ra) || ra.RetryAfterDuration() != sms.DefaultRetryAfter {
			t.Errorf("throttled send without a wait: %v, want a RetryAfterer of %s", err, sms.DefaultRetryAfter)
		}

		f.sink.FailWith(&sms.Error{Provider: "tencent", Status: 200, Code: "LimitExceeded.PhoneNumberDailyLimit"})
		err = send()
		if !errors.Is(err, verify.ErrSendFailed) || errors.Is(err, verify.ErrSendThrottled) {
			t.Errorf("refused send: %v, want ErrSendFailed and not ErrSendThrottled", err)
		}
		if errors.As(err, &ra) {
			t.Errorf("refused send: %v carries a wait", err)
		}
		// Neither send counted toward the user's one send a day.
		f.sink.FailWith(nil)
		if err := send(); err != nil {
			t.Errorf("a send after two failed ones: %v", err)
		}
	})
}
