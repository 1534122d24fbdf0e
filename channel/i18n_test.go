package channel_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// A test's failure reads in English as before, and in Chinese with what the
// far end said quoted as it came.
func TestTestFailureLanguages(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh-CN")
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{TestsPerMinute: -1})
		ctx := context.Background()
		port := f.recv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
		strict, err := channel.New(db, sendSecret, nil, &channel.Config{Resolver: loopbackResolver{}, Now: f.clock.Now, TestsPerMinute: -1})
		if err != nil {
			t.Fatal(err)
		}
		loopback := url.URL{Scheme: "http", Host: "hooks.example.com:" + strconv.Itoa(int(port)), Path: "/hook"}
		for _, tc := range []struct {
			r              *channel.ChannelRegistry
			in             channel.Input
			status         int
			body           string
			en, zh         string
			wantBlocked    bool
			wantQuotaError bool
		}{
			{f.r, channel.Input{Type: "WEBHOOK", Name: "ops", Address: f.recv.URL + "/hook"}, http.StatusGone, "{}",
				"the webhook answered 410 Gone", "Webhook 返回 410 Gone", false, false},
			{f.r, channel.Input{Type: "WORKPLACE_CHAT", Name: "alerts", Address: f.recv.URL + "/robot/send?access_token=tok"}, http.StatusOK, `{"errcode":660026,"errmsg":"too fast"}`,
				"DingTalk answered errcode 660026: too fast", "钉钉返回 errcode 660026: too fast", false, false},
			{f.r, channel.Input{Type: "ENTERPRISE_CHAT", Name: "wecom", Address: f.recv.URL + "/cgi-bin/webhook/send?key=k"}, http.StatusOK, `<html>`,
				"WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?", "企业微信 返回 200 OK，但不是机器人的 JSON errcode：该地址是企业微信机器人吗？", false, false},
			{strict, channel.Input{Type: "WEBHOOK", Name: "ops", Address: loopback.String()}, 0, "",
				"address is loopback (this server itself), which channels may not reach; in development, channel.Config.AllowPrivateNetworks (the reference server's -channel-allow-private-networks) lets channels reach loopback and private networks",
				"地址是回环地址（即本服务器），通道不能访问；开发环境中可通过 channel.Config.AllowPrivateNetworks（参考服务器的 -channel-allow-private-networks）允许通道访问回环地址和私有网络", true, false},
		} {
			if tc.status != 0 {
				f.recv.answer(tc.status, tc.body)
			}
			_, err := tc.r.Test(ctx, f.ann, tc.in)
			var de *channel.DeliveryError
			if !errors.As(err, &de) || de.Blocked != tc.wantBlocked {
				t.Fatalf("%s: %v", tc.in.Type, err)
			}
			if got := de.ClientMessage(); got != tc.en {
				t.Errorf("en %q, want %q", got, tc.en)
			}
			if got := de.LocalizedMessage(msgs, language.English); got != tc.en {
				t.Errorf("LocalizedMessage en %q, want %q", got, tc.en)
			}
			if got := de.LocalizedMessage(msgs, zh); got != tc.zh {
				t.Errorf("zh %q, want %q", got, tc.zh)
			}
		}
		// A host's own reason, no message of the catalogues, is told as it is.
		de := &channel.DeliveryError{Reason: deskkit.Plain("custom")}
		if got := de.LocalizedMessage(msgs, zh); got != "custom" {
			t.Errorf("a host's DeliveryError: %q", got)
		}
	})
}

// Rules composed of rules and ordinals translate every part.
func TestComposedRuleLanguages(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh")
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{TestsPerMinute: -1})
		for _, tc := range []struct {
			in     channel.Input
			en, zh string
		}{
			{channel.Input{Type: "EMAIL", Name: "team", Address: "a@example.com,,b@example.com"},
				"address the 2nd e-mail address is empty: separate addresses by single commas", "address 第 2 个邮箱为空：邮箱之间请用单个英文逗号分隔"},
			{channel.Input{Type: "WORKPLACE_CHAT", Name: "d", Address: "https://oapi.dingtalk.com/robot/other?access_token=t"},
				"address must be a DingTalk robot URL: https://HOST/robot/send?access_token=TOKEN (the path must be /robot/send)",
				"address 必须是钉钉机器人 URL：https://HOST/robot/send?access_token=TOKEN（路径必须是 /robot/send）"},
		} {
			_, err := f.r.Add(context.Background(), f.ann, tc.in)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("%v: %v", tc.in, err)
			}
			if got := ie.ClientMessage(); got != tc.en {
				t.Errorf("en %q, want %q", got, tc.en)
			}
			if got := ie.LocalizedMessage(msgs, zh); got != tc.zh {
				t.Errorf("zh %q, want %q", got, tc.zh)
			}
		}
	})
}

// An event published with a Heading and Body reaches a DingTalk robot and
// an e-mail channel in the language of the receiving tenant, written at
// delivery from its stored messages, a translation too long for an event
// cut to its bounds; an event published with a Title and Text, and one
// stored before deskkit kept messages, go as published in every language.
func TestEventLanguages(t *testing.T) {
	long := strings.Repeat("长", 250) + " %d"
	msgs, err := deskkit.NewMessages(fstest.MapFS{"zh-Hans.json": {Data: []byte(`{"Order %d shipped": "订单 %d 已发货", "%d parcels left the warehouse.": "%d 个包裹已出库。", "Order %d is late": "` + long + `"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	shipped := deskkit.EventType{Name: "order.shipped", Description: "An order was shipped.", Example: map[string]any{"orderId": 1}}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{Messages: msgs, TenantLanguage: func(_ context.Context, tenantID int64) (string, error) {
			if tenantID == 10 {
				return "zh-CN,zh;q=0.9", nil
			}
			return "", nil
		}})
		if err := f.r.RegisterEventTypes(shipped); err != nil {
			t.Fatal(err)
		}
		zhDing := f.add(t, f.ann, "WORKPLACE_CHAT", "ding", f.recv.URL+"/robot/send?access_token=zh", nil)
		f.add(t, f.eve, "WORKPLACE_CHAT", "ding", f.recv.URL+"/robot/send?access_token=en", nil)
		f.add(t, f.ann, "EMAIL", "team", "zh@example.com", nil)
		for _, tenant := range []int64{10, 20} {
			f.publish(t, tenant, deskkit.Event{Type: "order.shipped", Heading: deskkit.Textf("Order %d shipped", 7),
				Body: deskkit.Textf("%d parcels left the warehouse.", 2), Data: map[string]any{"orderId": 7}})
			f.publish(t, tenant, deskkit.Event{Type: "task.trashed", Title: "Task 7 was trashed", Text: "by Ann"})
		}
		// Tenant 10's robot only: an event whose translation is too long,
		// and one stored as before deskkit kept messages.
		f.publish(t, 10, deskkit.Event{ID: "msg_late", Type: "order.shipped", Heading: deskkit.Textf("Order %d is late", 8)})
		f.publish(t, 10, deskkit.Event{ID: "msg_old", Type: "order.shipped", Heading: deskkit.Textf("Order %d shipped", 9)})
		if _, err := db.NewUpdate().Table("deskkit_outbox_events").Set("messages = NULL").Where("event_id = 'msg_old'").Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := f.run(t); n != 10 {
			t.Fatalf("ran %d attempts, want 10", n)
		}
		mails := f.sendFixture.mail.To("zh@example.com")
		if len(mails) != 4 {
			t.Fatalf("%d mails, want 4", len(mails))
		}
		for _, m := range mails {
			parts, err := m.Parts()
			if err != nil {
				t.Fatal(err)
			}
			switch m.Subject() {
			case "[deskkit] 订单 7 已发货":
				if parts["text/plain"] != "2 个包裹已出库。\n\n-- \n此邮件由 deskkit 发送至邮件通道 \"team\"。" {
					t.Errorf("mail text %q", parts["text/plain"])
				}
			case "[deskkit] Task 7 was trashed", "[deskkit] Order 9 shipped", "[deskkit] " + strings.Repeat("长", 199) + "…":
			default:
				t.Errorf("mail subject %q", m.Subject())
			}
		}
		got := map[string][]string{}
		f.recv.mu.Lock()
		for i, r := range f.recv.reqs {
			var body struct {
				Markdown struct{ Title, Text string } `json:"markdown"`
			}
			if err := json.Unmarshal(f.recv.bodies[i], &body); err != nil {
				t.Fatal(err)
			}
			tok := r.URL.Query().Get("access_token")
			got[tok] = append(got[tok], body.Markdown.Title+" | "+body.Markdown.Text)
		}
		f.recv.mu.Unlock()
		cut := strings.Repeat("长", 199) + "…"
		for tok, want := range map[string][]string{
			"zh": {"[ding] 订单 7 已发货 | #### [ding] 订单 7 已发货\n\n2 个包裹已出库。", "[ding] Task 7 was trashed | #### [ding] Task 7 was trashed\n\nby Ann",
				"[ding] " + cut + " | #### [ding] " + cut, "[ding] Order 9 shipped | #### [ding] Order 9 shipped"},
			"en": {"[ding] Order 7 shipped | #### [ding] Order 7 shipped\n\n2 parcels left the warehouse.", "[ding] Task 7 was trashed | #### [ding] Task 7 was trashed\n\nby Ann"},
		} {
			slices.Sort(want)
			slices.Sort(got[tok])
			if !slices.Equal(got[tok], want) {
				t.Errorf("%s robot got %q, want %q", tok, got[tok], want)
			}
		}
		// Send, outside the queue, writes it in the tenant's language too.
		if err := f.r.Send(context.Background(), 10, zhDing.ID, deskkit.Event{Type: "order.shipped", Heading: deskkit.Textf("Order %d shipped", 5)}); err != nil {
			t.Fatal(err)
		}
		f.recv.mu.Lock()
		last := string(f.recv.bodies[len(f.recv.bodies)-1])
		f.recv.mu.Unlock()
		if !strings.Contains(last, "订单 5 已发货") {
			t.Errorf("Send wrote %s", last)
		}
	})
}

// An event has its title and text one way: a Heading beside a Title is
// refused, as is a Body without a Heading; a Heading's English is checked
// as a Title is.
func TestEventMessagesChecked(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		for _, tc := range []struct {
			ev    deskkit.Event
			field string
		}{
			{deskkit.Event{Type: "task.trashed", Title: "Task 7", Heading: deskkit.Textf("Task %d", 7)}, "title"},
			{deskkit.Event{Type: "task.trashed", Text: "by Ann", Heading: deskkit.Textf("Task %d", 7)}, "title"},
			{deskkit.Event{Type: "task.trashed", Body: deskkit.Textf("by %s", "Ann")}, "body"},
			{deskkit.Event{Type: "task.trashed", Heading: deskkit.Textf("Task %s", strings.Repeat("x", 200))}, "title"},
			{deskkit.Event{Type: "task.trashed", Heading: deskkit.Textf("Task %s", "a\nb")}, "title"},
			{deskkit.Event{Type: "task.trashed", Heading: deskkit.Textf("Task %d", 7), Body: deskkit.Textf("%s", strings.Repeat("x", 3001))}, "text"},
		} {
			err := f.r.Publish(context.Background(), db, 10, tc.ev)
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%+v: %v, want an InputError of %s", tc.ev, err, tc.field)
			}
		}
	})
}
