// Package sms holds what verify's SMS senders share, and its subpackages
// are the senders: each is a verify.SMSSender.
//
// # Overview
//
//   - gateway POSTs each message as JSON to an HTTP gateway of the host's
//     own.
//   - twilio sends through Twilio's Messages API.
//   - aliyun and tencent send through Alibaba Cloud SMS (阿里云短信服务)
//     and Tencent Cloud SMS (腾讯云短信), the template providers.
//
// verify/logsender's Sender, which logs instead of sending, is for
// development.
//
// # Template providers
//
// In mainland China an SMS goes through a provider such as Alibaba Cloud
// SMS or Tencent Cloud SMS, and only as a template approved beforehand,
// sent by its id under an approved signature name, with parameters: the
// text the Verifier renders is not sent. The aliyun and tencent senders
// take a Templates table mapping each bizKey (or AnyBizKey) and locale to
// a template id, plus the notice's template; verify.SMS.Locale picks the
// locale.
//
// # Errors
//
// Each sender answers a refusal, or a provider it cannot reach, with a
// *Error carrying the provider's code and its class, as each
// sender's SendSMS lists: Retryable, Throttled (with a RetryAfter; a
// code's send then fails with verify.ErrSendThrottled, which httpapi
// answers 503 with Retry-After), or final. No error holds the code, nor
// the number unmasked.
//
// # Testing
//
// Package verifytest has fakes of Alibaba Cloud and Tencent Cloud SMS
// (verifytest.SMSProvider) on loopback that check each request's
// signature as the provider documents and can be told to refuse.
package sms

import "github.com/deskkit/deskkit/verify"

// DefaultConcurrency is how many messages a sender without its own
// client expects to have in flight at once: its client keeps that many
// idle connections to the provider.
const DefaultConcurrency = 64

// DefaultLocale is the locale of Templates without one: mainland China's
// Simplified Chinese, where template providers are the rule.
const DefaultLocale = "zh-CN"

// AnyBizKey in Templates.Codes names the template of every bizKey that
// has none of its own: many hosts use one approved "your code is ${code}"
// template for every purpose.
const AnyBizKey verify.BizKey = "*"

// NoticeNumber is how the parameter of a notice's template (to the old
// number, after a change) shows the new number.
type NoticeNumber string

// The ways a notice's parameter shows the new number +8613700137000.
const (
	// NoticeLastFour is its last four digits, "7000": the default. It fits
	// every provider's limit on a parameter, Tencent Cloud's 12 characters
	// for an account without enterprise verification included (Tencent
	// refuses a longer one with
	// InvalidParameterValue.TemplateParameterLengthLimit).
	NoticeLastFour NoticeNumber = "last4"
	// NoticeMasked is the number masked as the notice's text and an
	// e-mail notice show it, "+86*******7000": 14 characters for a
	// mainland number, so for Tencent only with enterprise verification.
	NoticeMasked NoticeNumber = "masked"
)

// Templates is the table of pre-approved templates a template provider
// (aliyun, tencent) sends: such providers send no free text, only a
// template, approved beforehand, by its id, with parameters.
//
// A code's template has one parameter, the code; a notice's (to the old
// number, after a change) has one, the new number as NoticeNumber says:
// its last four digits, "8000", by default. How each provider names them
// is in its sender's documentation.
type Templates struct {
	// DefaultLocale is the locale of a message whose SMS.Locale is "" or
	// has no template: DefaultLocale if "".
	DefaultLocale string
	// Codes maps a bizKey, or AnyBizKey for all those without their own,
	// and a locale ("zh-CN", "en") to a template id. Every bizKey of
	// verify.SMSBizKeys must have a template for DefaultLocale, its own or
	// AnyBizKey's: a sender is refused at construction, not at the first
	// send.
	Codes map[verify.BizKey]map[string]string
	// Notice maps a locale to the template id of the notice sent to the
	// old number when a user's mobile number changes. DefaultLocale's is
	// required.
	Notice map[string]string
	// NoticeNumber is how the notice's parameter shows the new number:
	// NoticeLastFour if "", or NoticeMasked.
	NoticeNumber NoticeNumber
}
