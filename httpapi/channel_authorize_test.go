package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// With the registry's default Authorizer, a user who is not an admin gets
// 403 for every write and for a test, changes nothing, and sees addresses
// masked; the admin sees them in full.
func TestChannelAuthorize(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{Authorizer: registryDefault{}})
		var hook channel.Added
		e.call(t, http.MethodPost, channelPath, "admin",
			`{"channelType": "WEBHOOK", "name": "ops", "address": "https://hooks.example.com/deskkit?token=t0k", "headers": [{"name": "Authorization", "value": "Bearer s3cr3t-value"}]}`).wantOK(t, &hook)
		var robot channel.Added
		e.call(t, http.MethodPost, channelPath, "admin",
			`{"channelType": "WECHAT", "name": "robot", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wecom-key-4711"}`).wantOK(t, &robot)

		for _, c := range []struct{ name, method, path, body string }{
			{"add", http.MethodPost, channelPath, `{"channelType": "WEBHOOK", "name": "mine", "address": "https://alice.example.com/"}`},
			{"replace", http.MethodPut, channelPath, fmt.Sprintf(`{"id": %d, "channelType": "WEBHOOK", "name": "ops", "address": "https://alice.example.com/steal"}`, hook.ID)},
			{"delete", http.MethodDelete, fmt.Sprintf("%s/%d", channelPath, robot.ID), ""},
			{"test", http.MethodPost, channelTestPath, fmt.Sprintf(`{"id": %d, "channelType": "WEBHOOK", "name": "ops", "address": "https://hooks.example.com/deskkit?token=t0k"}`, hook.ID)},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := e.call(t, c.method, c.path, "alice", c.body)
				if a.status != http.StatusForbidden || a.key != httpapi.KeyForbidden || a.code != "E1" || string(a.data) != "null" {
					t.Errorf("got %d %s %s, want 403 E1 %s; body %s", a.status, a.code, a.key, httpapi.KeyForbidden, a.raw)
				}
			})
		}

		if len(hook.Headers) != 1 || hook.Headers[0].Value != "Bearer s3cr3t-value" {
			t.Errorf("the add's answer: headers %+v", hook.Headers)
		}
		want := []channel.Channel{hook.Channel}
		if d := cmp.Diff(want, e.list(t, "admin", "WEBHOOK")); d != "" {
			t.Errorf("admin's webhooks (-want +got):\n%s", d)
		}
		masked := []channel.Channel{{ID: hook.ID, Type: channel.Webhook, Name: "ops", Address: "https://hooks.example.com/***", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC,
			Headers: []channel.Header{{Name: "Authorization", Value: "***"}}}}
		if d := cmp.Diff(masked, e.list(t, "alice", "WEBHOOK", "t0k", "/deskkit", "s3cr3t")); d != "" {
			t.Errorf("alice's webhooks (-want +got):\n%s", d)
		}
		robots := []channel.Channel{{ID: robot.ID, Type: channel.EnterpriseChat, Name: "robot", Address: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Headers: []channel.Header{}}}
		if d := cmp.Diff(robots, e.list(t, "alice", "WECHAT", "wecom-key-4711")); d != "" {
			t.Errorf("alice's robots (-want +got):\n%s", d)
		}
	})
}
