package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// healthChannels serves the channel list and pages from fixed channels;
// every other method is the nil interface's (a panic: not called).
type healthChannels struct {
	httpapi.ChannelService
	list []channel.Channel
}

func (h healthChannels) ListAll(context.Context, deskkit.Principal) ([]channel.Channel, error) {
	return h.list, nil
}

func (h healthChannels) DeliveryTotalsAll(context.Context, deskkit.Principal, int) (map[int64]channel.DeliveryTotals, error) {
	return map[int64]channel.DeliveryTotals{}, nil
}

// The channel list shows each channel's health as a badge in words, with
// what explains it, in English and in Chinese.
func TestChannelListHealth(t *testing.T) {
	since := time.Date(2026, 11, 24, 7, 30, 0, 0, time.UTC)
	off := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	share, by := 0.75, int64(3)
	chans := healthChannels{list: []channel.Channel{
		{ID: 1, Type: channel.Webhook, Name: "fine", Address: "https://a.example.com/h", Enabled: true, Events: []string{}, Health: channel.HealthHealthy},
		{ID: 2, Type: channel.Webhook, Name: "sick", Address: "https://b.example.com/h", Enabled: true, Events: []string{}, Health: channel.HealthFailing,
			FailingSince: &since, FailedAttempts: 4, LastStatusCode: 500, LastError: "the webhook answered 500 Internal Server Error",
			Attempts24h: 8, AttemptsSucceeded24h: 6, SuccessShare24h: &share},
		{ID: 3, Type: channel.Webhook, Name: "off", Address: "https://c.example.com/h", Enabled: false, Events: []string{}, Health: channel.HealthDisabled,
			DisabledReason: "disabled by user 3", DisabledDate: &off, DisabledBy: &by, DisabledByName: "Grace Hopper"},
	}}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Channels = chans }, false)
		ck := f.signIn(f.token)
		for _, c := range []struct {
			lang string
			want []string
		}{
			{"en", []string{
				`<span class="badge ok health">Healthy</span>`,
				`<span class="badge pending health">Failing</span>`,
				"Failing since 2026-11-24 07:30 UTC: 4 failed attempts in a row",
				"Last error (HTTP 500): the webhook answered 500 Internal Server Error",
				"75% of attempts succeeded in the last 24 hours",
				`<span class="badge failed health">Disabled</span>`,
				"Disabled by Grace Hopper",
			}},
			{"zh-CN", []string{
				`<span class="badge ok health">正常</span>`,
				`<span class="badge pending health">异常</span>`,
				"自 2026-11-24 07:30 UTC 起异常：已连续失败 4 次",
				"最后一次错误（HTTP 500）：",
				"最近 24 小时尝试成功率 75%",
				`<span class="badge failed health">已禁用</span>`,
				"由 Grace Hopper 禁用",
			}},
		} {
			a := f.do(http.MethodGet, "/console/channels?lang="+c.lang, nil, ck)
			if a.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d\n%s", c.lang, a.StatusCode, a.body)
			}
			for _, w := range c.want {
				if !strings.Contains(a.body, w) {
					t.Errorf("%s: the list lacks %q", c.lang, w)
				}
			}
		}
	})
}
