package glossary_test

import (
	"strings"
	"testing"

	"github.com/deskkit/deskkit/internal/i18n/glossary"
)

func TestCheck(t *testing.T) {
	for text, want := range map[string]string{
		// The glossary's own examples of what not to write.
		"可重新获取验证码的剩余时间： 60 秒.":      `a space after '：'`,
		"40 个条目符合。":                 `uses "条目": the glossary writes 记录`,
		"已从回收站永久删除 3 个记录":           `uses "永久删除"`,
		"保留至清除":                     `uses "保留至清除": the glossary writes 永久保留`,
		"渠道 %q 已停用":                 `uses "渠道"`,
		"该通道已停用":                    `uses "停用": the glossary writes 禁用`,
		"每小时投递数":                    `uses "投递": the glossary writes 推送`,
		"待投递 3":                     `uses "待投递": the glossary writes 待推送`,
		"对端已接收测试消息。":                `uses "对端已接收"`,
		"添加您的电子邮件地址":                `uses "添加您的电子邮件地址": the glossary writes 绑定邮箱`,
		"请粘贴 Bearer 令牌以登录。":         `uses "Bearer 令牌"`,
		"请求过多。":                     `uses "请求过多"`,
		"你无权执行此操作":                  `uses "你": the glossary writes 您`,
		"职位":                        `uses "职位"`,
		"必须是 MALE、FEMALE 或 UNKNOWN": "shows the machine word FEMALE",
		"状态：PENDING":                "shows the machine word PENDING",
		"已发送至 138****8000, 5 分钟内有效": `half-width ',' inside Chinese text`,
		"确定彻底删除吗?":                  `half-width '?' inside Chinese text`,
		"第 %d 项 (%q)":               `half-width '(' inside Chinese text`,
		"必须以 \"whsec_\" 开头":         `half-width '"' inside Chinese text`,
		"此操作已完成。 请刷新页面":             `a space after '。'`,
	} {
		faults := glossary.Check(text)
		if !strings.Contains(strings.Join(faults, "\n"), want) {
			t.Errorf("Check(%q) = %q, want a fault %q", text, faults, want)
		}
	}
	for _, text := range []string{
		// The glossary's examples of tone.
		"60 秒后可重新获取验证码。",
		"验证码已发送至 138****8000，5 分钟内有效。",
		"确定彻底删除项目“官网改版”回收站中的全部 11 条记录（含任务和迭代）吗？",
		"共 40 条记录",
		// A machine word with its reading, for the developer who sends it.
		"必须是 MALE（男）、FEMALE（女）或 UNKNOWN（保密）",
		"必须是 PENDING（待推送）、SUCCEEDED（推送成功）或 FAILED（推送失败）",
		// Half-width marks among Latin letters, digits and code.
		"必须是 RFC 3339 或 yyyy-MM-dd HH:mm:ss 格式的日期",
		"钉钉机器人 URL：https://HOST/robot/send?access_token=TOKEN",
		"不能带片段（#...）：片段不会被发送",
		"可通过 channel.Config.AllowPrivateNetworks 允许",
		// English and machine words are not the glossary's.
		"Bearer token", "PENDING", "WeCom robot",
	} {
		if faults := glossary.Check(text); len(faults) > 0 {
			t.Errorf("Check(%q) = %q, want none", text, faults)
		}
	}
	// A longer term is reported, not the shorter ones inside it.
	if faults := glossary.Check("添加您的电子邮件地址"); len(faults) != 1 {
		t.Errorf("Check of the longest term: %q, want 1 fault", faults)
	}
	if faults := glossary.Check("电子邮件地址或电子邮件"); len(faults) != 2 {
		t.Errorf("Check of a longer and a shorter term: %q, want 2 faults", faults)
	}
}

func TestCheckCatalogue(t *testing.T) {
	faults := glossary.CheckCatalogue(map[string]string{"Pending": "待投递", "Trash": "回收站", "Save": "保存"})
	if len(faults) != 1 || !strings.HasPrefix(faults[0], `"Pending": "待投递" uses "待投递"`) {
		t.Errorf("CheckCatalogue = %q", faults)
	}
}
