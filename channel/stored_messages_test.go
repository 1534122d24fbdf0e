package channel_test

// What the registry stores for readers to see later (a channel's disabled
// reason, an attempt's error, a delivery's last error) is kept as a
// message, its key and arguments, and written in the reader's language
// when read: the language of the context's deskkit.Localizer, which
// httpapi sets per request. What the far end said is quoted inside as it
// came; a row written before messages were kept reads as its English.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// chinese is a context whose reader reads Simplified Chinese.
func chinese(t *testing.T) (context.Context, *deskkit.Messages) {
	t.Helper()
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	return deskkit.WithLocalizer(context.Background(), msgs.Localizer(language.MustParse("zh-Hans"))), msgs
}

func TestStoredMessagesInReadersLanguage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{
			RetrySchedule: []time.Duration{0, time.Hour, time.Hour},
			DisableAfter:  time.Minute, DisableMinFailures: 2,
		})
		zh, _ := chinese(t)
		en := context.Background()
		f.recv.answer(503, "down")
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)

		// Two failures two minutes apart disable it.
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.clock.Advance(2 * time.Minute)
		f.publish(t, 10, newEvent("task.restored"))
		for f.run(t) > 0 {
		}

		get := func(ctx context.Context) channel.Channel {
			t.Helper()
			c, err := f.r.Get(ctx, f.ann, hook.ID)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		const (
			failedEN = "deliveries failed for 2 minutes (2 attempts); the last: the webhook answered 503 Service Unavailable"
			failedZH = "推送已连续失败 2 分钟（尝试 2 次）；最后一次：Webhook 返回 503 Service Unavailable"
			lastEN   = "the webhook answered 503 Service Unavailable"
			lastZH   = "Webhook 返回 503 Service Unavailable"
		)
		if c := get(en); c.Enabled || c.DisabledReason != failedEN {
			t.Fatalf("in English: %+v", c)
		}
		if c := get(zh); c.DisabledReason != failedZH {
			t.Errorf("in Chinese the reason is %q, want %q", c.DisabledReason, failedZH)
		}
		// A context that names the language alone is written from the
		// registry's Config.Messages.
		if c := get(deskkit.WithLanguage(en, language.MustParse("zh-CN"))); c.DisabledReason != failedZH {
			t.Errorf("with the language alone the reason is %q, want %q", c.DisabledReason, failedZH)
		}
		list, err := f.r.ListAll(zh, f.ann)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.ID == hook.ID && c.DisabledReason != failedZH {
				t.Errorf("listed in Chinese: %q", c.DisabledReason)
			}
		}

		page, err := f.r.Deliveries(zh, f.ann, hook.ID, channel.DeliveryFilter{}, 1, 10)
		if err != nil || len(page.List) != 2 {
			t.Fatalf("deliveries: %+v, %v", page, err)
		}
		last := map[string]int{}
		for _, d := range page.List {
			last[d.LastError]++
			attempts, err := f.r.Attempts(zh, f.ann, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range attempts {
				if a.Error != lastZH {
					t.Errorf("attempt %d of delivery %d in Chinese: %q, want %q", a.AttemptNo, d.ID, a.Error, lastZH)
				}
			}
		}
		// Each failed once and ended with the channel.
		if want := map[string]int{"通道已禁用": 2}; len(last) != 1 || last["通道已禁用"] != 2 {
			t.Errorf("last errors in Chinese: %v, want %v", last, want)
		}
		if d := f.deliveries(t, hook.ID)[0]; d.LastError != "channel disabled" {
			t.Errorf("last error in English: %q", d.LastError)
		}

		// A pending delivery's last error is the failure's.
		f.recv.answer(503, "down")
		ok := f.add(t, f.ann, "WEBHOOK", "other", f.recv.URL+"/other", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		if l, err := f.r.Deliveries(zh, f.ann, ok.ID, channel.DeliveryFilter{}, 1, 10); err != nil || len(l.List) != 1 || l.List[0].LastError != lastZH {
			t.Errorf("a failed delivery in Chinese: %+v, %v", l, err)
		}
		if d := f.only(t, ok.ID); d.LastError != lastEN {
			t.Errorf("a failed delivery in English: %q", d.LastError)
		}

		// Rows written before messages were kept (only the English
		// columns) read as they are in every language.
		ctx := context.Background()
		for _, q := range []string{
			"UPDATE deskkit_channels SET disabled_reason_json = NULL",
			"UPDATE deskkit_outbox_deliveries SET last_error_json = NULL",
			"UPDATE deskkit_outbox_attempts SET error_json = NULL",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if c := get(zh); c.DisabledReason != failedEN {
			t.Errorf("an old reason in Chinese: %q, want the English as stored", c.DisabledReason)
		}
		l, err := f.r.Deliveries(zh, f.ann, ok.ID, channel.DeliveryFilter{}, 1, 10)
		if err != nil || len(l.List) != 1 || l.List[0].LastError != lastEN {
			t.Fatalf("an old last error in Chinese: %+v, %v", l, err)
		}
		if a, err := f.r.Attempts(zh, f.ann, l.List[0].ID); err != nil || len(a) != 1 || a[0].Error != lastEN {
			t.Errorf("an old attempt's error in Chinese: %+v, %v", a, err)
		}
	})
}

// A robot's refusal that echoes its key is masked in every language: the
// key is masked in the message's arguments, not in its English text.
func TestDeliveryErrorMaskedInChinese(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		zh, msgs := chinese(t)
		const key = "secret-robot-key-4711"
		in := channel.Input{Type: "WECHAT", Name: "robot", Address: f.recv.URL + "/cgi-bin/webhook/send?key=" + key}
		robot := f.add(t, f.ann, in.Type, in.Name, in.Address, nil)
		f.recv.answer(200, `{"errcode":93000,"errmsg":"invalid webhook url, key=`+key+`"}`)

		in.ID = robot.ID
		_, err := f.r.Test(zh, f.ann, in)
		de, ok := err.(*channel.DeliveryError)
		if !ok {
			t.Fatalf("test: %v", err)
		}
		const (
			wantEN = "WeCom answered errcode 93000: invalid webhook url, key=***"
			wantZH = "企业微信返回 errcode 93000: invalid webhook url, key=***"
		)
		if got := de.ClientMessage(); got != wantEN {
			t.Errorf("in English %q, want %q", got, wantEN)
		}
		if got := de.LocalizedMessage(msgs, language.MustParse("zh-Hans")); got != wantZH {
			t.Errorf("in Chinese %q, want %q", got, wantZH)
		}

		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d, err := f.r.Deliveries(zh, f.ann, robot.ID, channel.DeliveryFilter{}, 1, 10)
		if err != nil || len(d.List) != 1 || d.List[0].LastError != wantZH {
			t.Fatalf("the delivery in Chinese: %+v, %v", d, err)
		}
		if a, err := f.r.Attempts(zh, f.ann, d.List[0].ID); err != nil || len(a) != 1 || a[0].Error != wantZH {
			t.Errorf("the attempt in Chinese: %+v, %v", a, err)
		}
		wantNoLeak(t, "the database", storedTexts(t, db), key)
		if s := storedTexts(t, db); !strings.Contains(s, `key=***"}`) {
			t.Errorf("the stored message lacks the masked errmsg:\n%s", s)
		}
	})
}
