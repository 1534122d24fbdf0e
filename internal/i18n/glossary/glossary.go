// Package glossary holds what deskkit's Simplified Chinese glossary rules
// out, and checks texts against it, so that the API's messages, the
// console, SMS, e-mail and robot messages read as one product.
//
// The glossary (GLOSSARY-zh.md of the project's brief) sets one term for
// each thing: 通道 for a channel, 推送 for a delivery, 禁用 for disable,
// 彻底删除 for clearing the trash for good, 记录 for its entries, 邮件 for
// the e-mail kind and 邮箱 for an address, 手机号, 职务, 访问令牌, 操作过于
// 频繁. It addresses the reader as 您, and writes punctuation full width
// (，。：？！（）“”) as part of the catalogue entry, with no space after it.
// Check reports a text that breaks these rules; the tests of each
// catalogue (internal/i18n, httpapi/console) and of the shipped templates
// run it over every entry.
package glossary

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Term is a word the glossary rules out, and the one to write instead.
type Term struct {
	Not, Use string
}

// Terms are the glossary's third column ("not"), with the term that
// replaces each, and 你 (the glossary addresses the reader as 您). Longer
// terms come first, so that a text is told the most precise one.
var Terms = []Term{
	{"添加您的电子邮件地址", "绑定邮箱"},
	{"电子邮件地址", "邮箱"},
	{"电子邮件", "邮件 (the channel kind) or 邮箱 (an address)"},
	{"保留至清除", "永久保留"},
	{"永久清除", "彻底删除"},
	{"永久删除", "彻底删除"},
	{"清除", "彻底删除"},
	{"清理时间", "自动删除时间"},
	{"条目", "记录"},
	{"渠道", "通道"},
	{"待投递", "待推送"},
	{"投递", "推送"},
	{"尝试记录", "尝试 / 尝试次数"},
	{"下次尝试", "下次重试"},
	{"重新排队", "重新推送 / 重新推送失败消息"},
	{"停用", "禁用"},
	{"对端已接收", "测试通过"},
	{"手机号码", "手机号"},
	{"职位", "职务"},
	{"Bearer 令牌", "访问令牌"},
	{"请求过多", "操作过于频繁"},
	{"WeCom robot", "企业微信机器人"},
	{"你", "您"},
}

// Values are machine words of the API that the glossary keeps from
// readers (a delivery's status, a gender): a text may name one only with
// its reading after it in full-width brackets, as "PENDING（待推送）", for
// a developer who must send the word itself.
var Values = map[string]string{
	"PENDING":   "待推送",
	"SUCCEEDED": "推送成功",
	"FAILED":    "推送失败",
	"MALE":      "男",
	"FEMALE":    "女",
	"UNKNOWN":   "保密",
}

var valueRE = regexp.MustCompile(`\b(PENDING|SUCCEEDED|FAILED|MALE|FEMALE|UNKNOWN)\b`)

// halfWidth is the punctuation the glossary writes full width in Chinese
// text: a mark of it next to a Chinese character (spaces between left
// aside) is half-width punctuation inside Chinese text. Next to Latin
// letters and digits it is code or a format (HH:mm:ss, task.*) and stays.
const halfWidth = `,.:;?!()"`

// stops are the half-width marks that end a clause: one followed by a
// space or ending a Chinese text is English punctuation (", " and ". "),
// whatever stands next to it.
const stops = `,.:;?!`

// fullWidth is the full-width punctuation after which no space comes (a
// line break may).
const fullWidth = "，。：；？！、"

// Check lists how text breaks the glossary, one line per fault; none when
// it keeps it. Text that holds no Chinese character is English or a
// machine word, which the glossary does not govern, and passes.
func Check(text string) []string {
	if !strings.ContainsFunc(text, isHan) {
		return nil
	}
	var faults []string
	for _, t := range Terms {
		if strings.Contains(text, t.Not) && !coveredByLonger(text, t) {
			faults = append(faults, fmt.Sprintf("uses %q: the glossary writes %s", t.Not, t.Use))
		}
	}
	for _, m := range valueRE.FindAllStringIndex(text, -1) {
		word := text[m[0]:m[1]]
		if gloss := "（" + Values[word] + "）"; !strings.HasPrefix(text[m[1]:], gloss) {
			faults = append(faults, fmt.Sprintf("shows the machine word %s: write %s, or %s%s where the reader must send the word", word, Values[word], word, gloss))
		}
	}
	runes := []rune(text)
	for i, r := range runes {
		switch {
		case strings.ContainsRune(halfWidth, r) && (isHan(neighbour(runes, i, -1)) || isHan(neighbour(runes, i, 1))),
			strings.ContainsRune(stops, r) && (i+1 == len(runes) || runes[i+1] == ' '):
			faults = append(faults, fmt.Sprintf("half-width %q inside Chinese text at %q: write it full width", r, around(runes, i)))
		case strings.ContainsRune(fullWidth, r) && i+1 < len(runes) && (runes[i+1] == ' ' || runes[i+1] == '\t' || runes[i+1] == '\u3000'):
			faults = append(faults, fmt.Sprintf("a space after %q at %q", r, around(runes, i)))
		}
	}
	return faults
}

// CheckCatalogue is Check over every translation of a catalogue (English
// text to translation), each fault prefixed by the entry's key.
func CheckCatalogue(catalogue map[string]string) []string {
	var faults []string
	for key, text := range catalogue {
		for _, f := range Check(text) {
			faults = append(faults, fmt.Sprintf("%q: %q %s", key, text, f))
		}
	}
	return faults
}

// coveredByLonger tells whether every use of t.Not in text is part of a
// longer term of Terms that is also in text, which is then the one
// reported.
func coveredByLonger(text string, t Term) bool {
	n := strings.Count(text, t.Not)
	for _, l := range Terms {
		if l.Not != t.Not && strings.Contains(l.Not, t.Not) {
			n -= strings.Count(text, l.Not) * strings.Count(l.Not, t.Not)
		}
	}
	return n <= 0
}

// neighbour is the rune next to runes[i] in direction dir (-1 or 1),
// spaces skipped; 0 at either end.
func neighbour(runes []rune, i, dir int) rune {
	for j := i + dir; j >= 0 && j < len(runes); j += dir {
		if runes[j] != ' ' {
			return runes[j]
		}
	}
	return 0
}

// around is the text about runes[i], to show where a fault is.
func around(runes []rune, i int) string {
	return string(runes[max(0, i-6):min(len(runes), i+7)])
}

func isHan(r rune) bool {
	return r != utf8.RuneError && unicode.Is(unicode.Han, r)
}

// CheckCatalogueFile is CheckCatalogue over the JSON catalogue at path,
// which must hold at least min entries (a smaller one is not the shipped
// catalogue: the caller read the wrong file).
func CheckCatalogueFile(path string, min int) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var catalogue map[string]string
	if err := json.Unmarshal(raw, &catalogue); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(catalogue) < min {
		return nil, fmt.Errorf("%s holds %d entries, fewer than %d: not the shipped catalogue", path, len(catalogue), min)
	}
	return CheckCatalogue(catalogue), nil
}
