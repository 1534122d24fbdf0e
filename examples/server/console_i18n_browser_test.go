package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// newTabIn is newTab for a person whose browser asks for acceptLanguage
// (the Accept-Language header of every request it makes).
func newTabIn(t *testing.T, base, acceptLanguage string) *tab {
	t.Helper()
	tb := newTab(t, base)
	err := chromedp.Do(tb.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": acceptLanguage}})
		return err
	}))
	if err != nil {
		t.Fatalf("Accept-Language %s: %v", acceptLanguage, err)
	}
	return tb
}

// han matches a Chinese character.
var han = regexp.MustCompile(`\p{Han}`)

// wantChinese checks that the page is the Simplified Chinese one and that
// sel's text holds want.
func (tb *tab) wantChinese(sel, want string) {
	tb.t.Helper()
	if lang := evalIn[string](tb, `document.documentElement.lang`); lang != "zh-CN" {
		tb.t.Errorf("%s: <html lang=%q>, want zh-CN", tb.location(), lang)
	}
	if got := tb.text(sel); !strings.Contains(got, want) {
		tb.t.Errorf("%s: %s says %q, want %q", tb.location(), sel, got, want)
	}
}

// TestConsoleChinese runs the console's pages in a browser that asks for
// Chinese (Accept-Language zh-CN): the sign-in page, the trash with a
// restore through its confirmation, the channel pages with a channel
// added through the form and a delivery made, the profile and a refusal,
// each in Simplified Chinese and through the same accessibility, keyboard
// and width checks as the English runs, on both databases. With
// DESKKIT_SCREENSHOTS=DIR the pages' screenshots (NAME-zh-CN-360.png and
// -1440.png) are kept.
func TestConsoleChinese(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base := startChannelConsole(t, rawURL)
		recv := startHookReceiver(t)
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		trashedTask(t, base, admin, 1, "Alpha report")
		trashedTask(t, base, admin, 1, "Beta plan")
		tb := newTabIn(t, base, "zh-CN,zh;q=0.9,en;q=0.5")

		tb.open("/console/signin", "#token")
		tb.wantChinese("h1", "登录")
		tb.wantChinese("label[for=token]", "访问令牌")
		tb.inspect("signin-zh-CN")
		tb.signIn(admin)

		// The trash: search, rows, and a restore through its confirmation.
		tb.open("/console/trash", "#results")
		tb.wantChinese("h1", "回收站")
		tb.wantChinese("#results .count", "共 2 条记录。")
		tb.wantChinese(`#results thead`, "删除人")
		tb.wantChinese(`label[for=f-deleted]`, "删除时间（UTC）")
		// Dates keep their format; the words around them change.
		if d := tb.text(`#results td[data-label="删除时间"]`); !strings.HasSuffix(d, " UTC") {
			t.Errorf("a deletion date reads %q", d)
		}
		tb.inspect("trash-zh-CN")
		tb.submit("#confirm", chromedp.Click(chromedp.CSS(`#results tbody a[href*="/restore"]`)))
		tb.wantChinese("#question", "恢复到项目“Website”吗？")
		tb.wantChinese("#confirm", "恢复任务")
		tb.inspect("trash-confirm-zh-CN")
		tb.submit("[role=status]", chromedp.Click(chromedp.CSS("#confirm")))
		tb.wantChinese("[role=status]", "已恢复任务“")

		// A refusal of the service, in Chinese.
		tb.open("/console/trash/999999/restore", "[role=alert]")
		tb.wantChinese("[role=alert]", "资源不存在。")
		tb.wantRefusal("[role=alert]", "资源不存在。", "resource_not_found")

		// Channels: the form, a refusal of the registry, the add, a
		// delivery, the channel's page and the list.
		tb.open("/console/channels/new", "#c-name")
		tb.wantChinese("h1", "添加通道")
		tb.wantChinese("label[for=c-name]", "名称")
		tb.inspect("channels-new-zh-CN")
		tb.submit("[role=alert]",
			chromedp.SendKeys(chromedp.CSS("#c-name"), "ops"),
			chromedp.SendKeys(chromedp.CSS("#c-address"), "ftp://example.com/x"),
			chromedp.Click(chromedp.CSS("#save")),
		)
		if msg := tb.text("[role=alert]"); strings.Contains(msg, "must be") || !han.MatchString(msg) {
			t.Errorf("a bad address, in Chinese: %q", msg)
		}
		tb.submit("#secret",
			chromedp.SetValue(chromedp.CSS("#c-address"), recv.URL+"/hook"),
			chromedp.Click(chromedp.CSS("#save")),
		)
		tb.wantChinese("h1", "通道“ops”已添加")
		tb.wantChinese("#copy", "复制")
		tb.submit("#deliveries", chromedp.Click(chromedp.CSS("#continue")))
		chPath := tb.location()
		ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "hello"}, nil)
		// The status is shown in words: SUCCEEDED is 推送成功.
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "SUCCEEDED"), "the delivery to succeed")
		tb.wantChinese("#delivery-list tbody tr .status", "推送成功")
		tb.wantChinese("#chart-h", "每小时推送数")
		tb.wantChinese("#delivery-count", "共 1 条推送记录。")
		if got := evalIn[string](tb, `document.querySelector("#chart-desc").textContent`); !strings.Contains(got, "推送成功 1 条") {
			t.Errorf("the chart's description: %q", got)
		}
		tb.inspect("channels-channel-zh-CN")
		tb.submit("#attempts", chromedp.Click(chromedp.CSS(`#delivery-list tbody tr:first-child a[href^="/console/deliveries/"]`)))
		tb.wantChinese("h1", "推送")
		tb.wantChinese("#back", "返回通道“ops”")
		tb.wantChinese("#attempts .code", "状态码：200")
		tb.wantChinese("#event-h", "推送的事件")
		tb.inspect("channels-delivery-zh-CN")
		tb.open("/console/channels", "#channels")
		tb.wantChinese("h1", "通道")
		tb.wantChinese(`#channels td[data-label="最近 24 小时"]`, "推送成功 1，推送失败 0，待推送 0")
		tb.wantChinese(`#channels td[data-label="状态"]`, "正常")
		tb.inspect("channels-zh-CN")

		// The profile.
		tb.open("/console/profile", "#profile-form")
		tb.wantChinese("h1", "个人资料")
		tb.wantChinese("label[for=p-username]", "用户名")
		tb.inspect("profile-zh-CN")
		tb.submit("ol.steps", chromedp.Click(chromedp.CSS("#change-email")))
		tb.wantChinese("h1", "绑定邮箱")
		tb.wantChinese("ol.steps", "验证码")
		tb.inspect("profile-change-zh-CN")

		// The switch: English on request, kept by its cookie.
		tb.open("/console/trash?lang=en", "#results")
		if h := tb.text("h1"); h != "Trash" {
			t.Errorf("after ?lang=en the trash says %q", h)
		}
		tb.open("/console/channels", "#channels")
		if h := tb.text("h1"); h != "Channels" {
			t.Errorf("the switch to English was not kept: %q", h)
		}
		tb.noConsoleErrors()
	})
}
