package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/limiter"
	"github.com/deskkit/deskkit/internal/notify"
)

// limitsTable holds the test and resend throttles; see package limiter.
const limitsTable = "deskkit_channel_limits"

// TestEventType is the event type of test messages.
const TestEventType = "channel.test"

// Test sends one real test message through the protocol of the channel
// that in describes (type, name and address as they would be added, so a
// channel can be tried before it is saved), within the registry's Timeout
// (10s by default) in all: a TestEventType event to a webhook, markdown to
// the robots, a message to each e-mail address.
//
// A webhook's message carries in.Headers, or, when in.Headers is nil, the
// headers of the stored channel named as below, on the same terms as its
// secret (the address must be that channel's).
//
// A webhook's message is signed with the secret of the stored channel that
// in.ID names, or else of the tenant's channel of that type and name, when
// in.Address is that channel's address; otherwise with a throwaway secret,
// returned in the result so that the receiver can be checked. A DingTalk
// robot signs with in.Secret when given, or else with the stored channel's
// secret on the same terms, or not at all. A stored secret never signs a
// message to another address: signed for an address the caller picks, a
// webhook message could be replayed to the real receiver, and a DingTalk
// signature, which covers only a timestamp, would let the caller post
// anything to the robot for an hour.
//
// Tests are throttled per tenant (Config.TestsPerMinute messages a minute,
// a test of an e-mail channel counting one per address), counted in the
// database before the send whatever its outcome, so that the throttle
// holds across replicas and the endpoint is no relay for spam.
// A failure is a *DeliveryError saying what the far end answered
// (ErrDeliveryFailed), or ErrAddressBlocked when the guard refused the
// address. Only admins, and principals the Authorizer allows ActionTest,
// may test (ErrForbidden otherwise).
func (r *ChannelRegistry) Test(ctx context.Context, p deskkit.Principal, in Input) (TestResult, error) {
	ctx, call := r.ops.Start(ctx, "channel.Test", "")
	v, err := r.test(ctx, p, in)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) test(ctx context.Context, p deskkit.Principal, in Input) (TestResult, error) {
	tenantID, err := r.authorize(ctx, p, ActionTest)
	if err != nil {
		return TestResult{}, err
	}
	if in.ID != 0 {
		if err := deskkit.CheckID("id", in.ID); err != nil {
			return TestResult{}, err
		}
	}
	c, secret, err := r.normalize(p, in)
	if err != nil {
		return TestResult{}, err
	}
	headers, err := normalizeHeaders(c.Type, in.Headers)
	if err != nil {
		return TestResult{}, err
	}

	var stored storedChannel
	found := false
	if in.ID != 0 {
		if stored, err = r.stored(ctx, tenantID, in.ID); err != nil {
			return TestResult{}, err
		}
		if stored.Type != c.Type {
			return TestResult{}, deskkit.Invalid("channelType", "is %s but channel %d is %s", c.Type, in.ID, stored.Type)
		}
		found = true
	} else if stored, found, err = r.storedByName(ctx, tenantID, c.Type, c.Name); err != nil {
		return TestResult{}, err
	}
	// A stored secret signs only a message to the stored address: signed
	// for an address the caller picks, the message would be a signature
	// the caller could replay to the real receiver, and a DingTalk
	// signature covers only the time, so it would let the caller post
	// anything to the robot for an hour.
	ownSecret := found && stored.Address == c.Address

	k := kindOf(c.Type)
	plan, err := k.Test(c.Address, stored.Secret, ownSecret, secret)
	if err != nil {
		return TestResult{}, fmt.Errorf("channel: %w", err)
	}
	res := TestResult{Secret: plan.Shown}
	signing := plan.Signing
	if found {
		c.ID = stored.ID
	}

	if err := r.takeTest(ctx, tenantID, plan.Messages); err != nil {
		return TestResult{}, err
	}

	msg := r.testMessage(c)
	res.MessageID = msg.ID
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	// The headers given, or, when none were (nil), the stored channel's,
	// on the terms of its secret: its values may be secrets too.
	if in.Headers == nil && ownSecret {
		headers = stored.Headers
	}
	c.Headers = headers
	target := storedChannel{Channel: c, Secret: signing}
	if ownSecret && signing == stored.Secret {
		// The stored channel's keys sign, as every delivery is signed: its
		// ed25519 key too, and during a rotation's overlap the ones they
		// replaced.
		target.Key, target.Previous, target.PreviousKey, target.PreviousUntil = stored.Key, stored.Previous, stored.PreviousKey, stored.PreviousUntil
	}
	rep, err := r.sendOnce(ctx, k, target.target(k), msg)
	if err != nil {
		return TestResult{}, publicReply(err, target, rep)
	}
	res.StatusCode, res.Response = rep.Status, shownReply(target, rep)
	return res, nil
}

// timeout bounds one test message in all.
func (r *ChannelRegistry) timeout() time.Duration {
	if r.cfg.Timeout > 0 {
		return r.cfg.Timeout
	}
	return DefaultTimeout
}

// takeTest counts a test of n messages against the tenant's throttle.
func (r *ChannelRegistry) takeTest(ctx context.Context, tenantID int64, n int) error {
	if r.cfg.TestsPerMinute < 0 {
		return nil
	}
	l := limiter.Limit{
		Name: "tests_per_minute", Key: fmt.Sprintf("test:%d", tenantID), Max: r.cfg.TestsPerMinute, Window: time.Minute, Cost: n,
		Msg: deskkit.Textf("at most %d test messages a minute per tenant (a test of an e-mail channel counts one per address)", r.cfg.TestsPerMinute),
	}
	return deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		return limiter.Take(ctx, tx, limitsTable, r.now(), []limiter.Limit{l})
	})
}

// testMessage is the message of a test of c.
func (r *ChannelRegistry) testMessage(c Channel) notify.Message {
	data := map[string]any{"channelType": c.Type, "name": c.Name}
	if c.ID != 0 {
		data["id"] = c.ID
	}
	b, _ := json.Marshal(data) // a map of strings and an int64 always encodes
	return notify.Message{
		ID:    NewEventID(),
		Type:  TestEventType,
		Time:  r.cfg.Now().UTC(),
		Title: fmt.Sprintf("Test message for channel %s", c.Name),
		Text: fmt.Sprintf("This is a test message from %s for the %s channel **%s**. If you can read it, the channel works.",
			r.cfg.AppName, kindOf(c.Type).Info().Name, c.Name),
		Data: b,
	}
}

// takeResend counts one resend or recover against the tenant's throttle,
// through tx: refused, the caller's transaction rolls back, and a resend
// or recover that fails for another reason (a disabled channel) counts
// nothing.
func (r *ChannelRegistry) takeResend(ctx context.Context, tx bun.IDB, tenantID int64) error {
	if r.cfg.ResendsPerMinute < 0 {
		return nil
	}
	l := limiter.Limit{
		Name: "resends_per_minute", Key: fmt.Sprintf("resend:%d", tenantID), Max: r.cfg.ResendsPerMinute, Window: time.Minute,
		Msg: deskkit.Textf("at most %d resends and recovers a minute per tenant", r.cfg.ResendsPerMinute),
	}
	return limiter.Take(ctx, tx, limitsTable, r.now(), []limiter.Limit{l})
}

func limiterPurge(ctx context.Context, db bun.IDB, now int64) (int64, error) {
	return limiter.Purge(ctx, db, limitsTable, now)
}
