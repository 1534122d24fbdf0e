package sms_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/aliyun"
	"github.com/deskkit/deskkit/verify/sms/tencent"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// The template providers' shared behaviour, run on both: the table of
// templates, failures, classification of the providers' codes.

var smsTestMessage = verify.SMS{To: "+8613800138000", Text: "Your code is 482913.", BizKey: verify.ModifyMobile, Code: "482913"}

// smsTestTemplates has a template of its own for SIGNUP, one for every
// other bizKey, and the notice's, in zh-CN and en.
func smsTestTemplates() sms.Templates {
	return sms.Templates{
		Codes: map[verify.BizKey]map[string]string{
			sms.AnyBizKey: {"zh-CN": "T_ANY_ZH", "en": "T_ANY_EN"},
			"SIGNUP":      {"zh-CN": "T_SIGNUP_ZH"},
		},
		Notice: map[string]string{"zh-CN": "T_NOTICE_ZH", "en": "T_NOTICE_EN"},
	}
}

// smsProviderCase runs the same checks on both providers.
type smsProviderCase struct {
	name string
	// start starts the fake provider and a sender signed with secret
	// (the provider's own, or another to test a bad signature).
	start func(t *testing.T, secret string) (*verifytest.SMSProvider, verify.SMSSender)
	// to is how the provider gets +8613800138000.
	to string
	// params is how the provider gets a template's one parameter.
	params func(name, value string) map[string]string
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 27, 0, 30, 0, 0, time.UTC) }

var smsProviderCases = []smsProviderCase{
	{
		name: "aliyun",
		start: func(t *testing.T, secret string) (*verifytest.SMSProvider, verify.SMSSender) {
			p := verifytest.NewAliyunSMSProvider(t, "LTAIexample", "aliyun-secret")
			s, err := aliyun.New(aliyun.Config{
				AccessKeyID: "LTAIexample", AccessKeySecret: secret, SignName: "阿里云短信测试",
				Templates: smsTestTemplates(), Endpoint: p.URL, Now: fixedNow,
			})
			if err != nil {
				t.Fatal(err)
			}
			return p, s
		},
		to:     "8613800138000",
		params: func(name, value string) map[string]string { return map[string]string{name: value} },
	},
	{
		name: "tencent",
		start: func(t *testing.T, secret string) (*verifytest.SMSProvider, verify.SMSSender) {
			p := verifytest.NewTencentSMSProvider(t, "AKIDexample", "tencent-secret")
			s, err := tencent.New(tencent.Config{
				SecretID: "AKIDexample", SecretKey: secret, SDKAppID: "1400006666", SignName: "腾讯云短信测试",
				Templates: smsTestTemplates(), Endpoint: p.URL, Now: fixedNow,
			})
			if err != nil {
				t.Fatal(err)
			}
			return p, s
		},
		to:     "+8613800138000",
		params: func(_, value string) map[string]string { return map[string]string{"1": value} },
	},
}

func TestTemplateSMSSenders(t *testing.T) {
	for _, pc := range smsProviderCases {
		t.Run(pc.name, func(t *testing.T) {
			secret := map[string]string{"aliyun": "aliyun-secret", "tencent": "tencent-secret"}[pc.name]
			p, s := pc.start(t, secret)
			sign, app := "阿里云短信测试", ""
			if pc.name == "tencent" {
				sign, app = "腾讯云短信测试", "1400006666"
			}
			msgs := []struct {
				m        verify.SMS
				template string
				params   map[string]string
			}{
				{smsTestMessage, "T_ANY_ZH", pc.params("code", "482913")},
				{verify.SMS{To: "+8613800138000", Text: "x 123456", BizKey: "SIGNUP", Code: "123456"}, "T_SIGNUP_ZH", pc.params("code", "123456")},
				{verify.SMS{To: "+8613800138000", Text: "x 223456", BizKey: "SIGNIN", Code: "223456", Locale: "en"}, "T_ANY_EN", pc.params("code", "223456")},
				// SIGNUP has no en template of its own: AnyBizKey's en
				// one comes before SIGNUP's own zh-CN one.
				{verify.SMS{To: "+8613800138000", Text: "x 323456", BizKey: "SIGNUP", Code: "323456", Locale: "EN"}, "T_ANY_EN", pc.params("code", "323456")},
				{verify.SMS{To: "+8613800138000", Text: "x 423456", BizKey: "SIGNIN", Code: "423456", Locale: "fr"}, "T_ANY_ZH", pc.params("code", "423456")},
				// A notice's parameter is the new number's last four
				// digits, by default.
				{verify.SMS{To: "+8613800138000", Text: "changed", BizKey: verify.ModifyMobile, NewAddress: "+86*******7000"}, "T_NOTICE_ZH", pc.params("mobile", "7000")},
				{verify.SMS{To: "+8613800138000", Text: "changed", BizKey: verify.ModifyMobile, NewAddress: "+86*******7000", Locale: "en"}, "T_NOTICE_EN", pc.params("mobile", "7000")},
			}
			var want []verifytest.ProviderSMS
			for _, c := range msgs {
				if err := s.SendSMS(context.Background(), c.m); err != nil {
					t.Fatalf("%+v: %v", c.m, err)
				}
				want = append(want, verifytest.ProviderSMS{To: pc.to, SignName: sign, TemplateID: c.template, Params: c.params, AppID: app})
			}
			if diff := cmp.Diff(want, p.Messages()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if bad := p.BadSignatures(); len(bad) != 0 {
				t.Errorf("bad signatures: %v", bad)
			}
		})
	}
}

// SIGNUP's template here prefers SIGNUP's own en one when it has one.
func TestSMSTemplatesPreferTheBizKeysOwn(t *testing.T) {
	p := verifytest.NewAliyunSMSProvider(t, "id", "secret")
	tpl := smsTestTemplates()
	tpl.Codes["SIGNUP"]["en"] = "T_SIGNUP_EN"
	tpl.DefaultLocale = "en"
	s, err := aliyun.New(aliyun.Config{AccessKeyID: "id", AccessKeySecret: "secret", SignName: "s", Templates: tpl, Endpoint: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []verify.SMS{
		{To: "+8613800138000", BizKey: "SIGNUP", Code: "123456", Locale: "zh-cn"},
		{To: "+8613800138000", BizKey: "SIGNUP", Code: "123456"},
	} {
		if err := s.SendSMS(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range p.Messages() {
		got = append(got, m.TemplateID)
	}
	if diff := cmp.Diff([]string{"T_SIGNUP_ZH", "T_SIGNUP_EN"}, got); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
}

func TestTemplateSMSSenderFailures(t *testing.T) {
	type want struct {
		status    int
		code      string
		retryable bool
	}
	tests := []struct {
		provider     string
		name         string
		status       int
		code         string
		wrongSecret  bool
		want         want
		wantInErrMsg string
	}{
		{"aliyun", "per-number throttling", 0, "isv.BUSINESS_LIMIT_CONTROL", false, want{200, "isv.BUSINESS_LIMIT_CONTROL", true}, "isv.BUSINESS_LIMIT_CONTROL"},
		{"aliyun", "API throttling", 400, "Throttling.User", false, want{400, "Throttling.User", true}, "Throttling.User"},
		{"aliyun", "5xx", 503, "ServiceUnavailable", false, want{503, "ServiceUnavailable", true}, "503"},
		{"aliyun", "bad number", 0, "isv.MOBILE_NUMBER_ILLEGAL", false, want{200, "isv.MOBILE_NUMBER_ILLEGAL", false}, "MOBILE_NUMBER_ILLEGAL"},
		{"aliyun", "template refused", 0, "isv.SMS_TEMPLATE_ILLEGAL", false, want{200, "isv.SMS_TEMPLATE_ILLEGAL", false}, "SMS_TEMPLATE_ILLEGAL"},
		{"aliyun", "wrong secret", 0, "", true, want{400, "SignatureDoesNotMatch", false}, "SignatureDoesNotMatch"},
		{"tencent", "request throttling", 0, "RequestLimitExceeded", false, want{200, "RequestLimitExceeded", true}, "RequestLimitExceeded"},
		{"tencent", "per-number daily limit", 200, "LimitExceeded.PhoneNumberDailyLimit", false, want{200, "LimitExceeded.PhoneNumberDailyLimit", false}, "PhoneNumberDailyLimit"},
		{"tencent", "per-number bad number", 200, "InvalidParameterValue.IncorrectPhoneNumber", false, want{200, "InvalidParameterValue.IncorrectPhoneNumber", false}, "IncorrectPhoneNumber"},
		{"tencent", "template refused", 0, "FailedOperation.TemplateIncorrectOrUnapproved", false, want{200, "FailedOperation.TemplateIncorrectOrUnapproved", false}, "TemplateIncorrectOrUnapproved"},
		{"tencent", "internal error", 0, "InternalError.Timeout", false, want{200, "InternalError.Timeout", true}, "InternalError.Timeout"},
		{"tencent", "5xx", 502, "", false, want{502, "", true}, "502"},
		{"tencent", "wrong secret", 0, "", true, want{200, "AuthFailure.SignatureFailure", false}, "AuthFailure.SignatureFailure"},
	}
	for _, tt := range tests {
		t.Run(tt.provider+" "+tt.name, func(t *testing.T) {
			var pc smsProviderCase
			for _, c := range smsProviderCases {
				if c.name == tt.provider {
					pc = c
				}
			}
			secret := tt.provider + "-secret"
			if tt.wrongSecret {
				secret = "not-the-secret"
			}
			p, s := pc.start(t, secret)
			p.Refuse(func(verifytest.ProviderSMS) (int, string) { return tt.status, tt.code })
			err := s.SendSMS(context.Background(), smsTestMessage)
			var se *sms.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want an *sms.Error", err, err)
			}
			got := want{se.Status, se.Code, se.Retryable}
			if got != tt.want {
				t.Errorf("status, code, retryable = %+v, want %+v", got, tt.want)
			}
			if se.Provider != tt.provider || se.RequestID == "" {
				t.Errorf("provider %q, request id %q", se.Provider, se.RequestID)
			}
			if !strings.Contains(err.Error(), tt.wantInErrMsg) {
				t.Errorf("error %q does not name %q", err, tt.wantInErrMsg)
			}
			if strings.Contains(err.Error(), smsTestMessage.Code) || strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds the code or the secret", err)
			}
			if n := len(p.Messages()); n != 0 {
				t.Errorf("%d messages accepted", n)
			}
		})
	}
}

func TestTemplateSMSSenderUnreachable(t *testing.T) {
	for _, pc := range smsProviderCases {
		_, s := pc.start(t, pc.name+"-secret")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := s.SendSMS(ctx, smsTestMessage)
		var se *sms.Error
		if !errors.As(err, &se) || !se.Retryable || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: error %v, want a retryable *sms.Error wrapping context.Canceled", pc.name, err)
		}
		if err := s.SendSMS(context.Background(), verify.SMS{To: "13800138000", Code: "123456", BizKey: "SIGNIN"}); err == nil || !strings.Contains(err.Error(), "E.164") {
			t.Errorf("%s: a number without +: %v", pc.name, err)
		}
	}
}

func TestNewTemplateSMSSendersValidate(t *testing.T) {
	without := func(b verify.BizKey) sms.Templates {
		tpl := sms.Templates{Codes: map[verify.BizKey]map[string]string{}, Notice: map[string]string{"zh-CN": "N"}}
		for _, k := range verify.SMSBizKeys() {
			if k != b {
				tpl.Codes[k] = map[string]string{"zh-CN": "T_" + string(k)}
			}
		}
		return tpl
	}
	tests := []struct {
		name string
		tpl  sms.Templates
		want string // in the error; "" for none
	}{
		{"every bizKey its own", without(""), ""},
		{"AnyBizKey", smsTestTemplates(), ""},
		{"a bizKey without a template", without("REALNAME_AUTH_SUBMIT"), "REALNAME_AUTH_SUBMIT"},
		{"a bizKey with another locale only", func() sms.Templates {
			tpl := without("SIGNIN")
			tpl.Codes["SIGNIN"] = map[string]string{"en": "T"}
			return tpl
		}(), "no template for locale zh-CN of bizKey SIGNIN"},
		{"the default locale elsewhere", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.DefaultLocale = "en"
			return tpl
		}(), ""},
		{"no notice", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Notice = map[string]string{"en": "N"}
			return tpl
		}(), "Notice has no template for locale zh-CN"},
		{"an e-mail-only bizKey", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Codes["MODIFY_EMAIL"] = map[string]string{"zh-CN": "T"}
			return tpl
		}(), `"MODIFY_EMAIL" is not an SMS bizKey`},
		{"a blank template id", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Codes["SIGNIN"] = map[string]string{"en": " "}
			return tpl
		}(), "template id is empty"},
		{"nothing", sms.Templates{}, "no template for locale zh-CN of bizKey SIGNUP, SIGNIN,"},
		{"a default locale that is no language", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.DefaultLocale = "klingon"
			return tpl
		}(), `DefaultLocale: "klingon" is not a BCP 47 language tag`},
		{"a template locale that is no language", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Codes["SIGNIN"] = map[string]string{"zh-CN": "T", "zh-Hanz": "T2"}
			return tpl
		}(), `Codes[SIGNIN]: "zh-Hanz" is not a BCP 47 language tag`},
		{"a notice locale that is no language", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Notice["english"] = "N2"
			return tpl
		}(), `Notice: "english" is not a BCP 47 language tag`},
		{"a valid locale without a catalogue", func() sms.Templates {
			tpl := smsTestTemplates()
			tpl.Notice["zh-TW"] = "N2"
			return tpl
		}(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, aerr := aliyun.New(aliyun.Config{AccessKeyID: "id", AccessKeySecret: "s", SignName: "n", Templates: tt.tpl})
			_, terr := tencent.New(tencent.Config{SecretID: "id", SecretKey: "s", SDKAppID: "1400000000", SignName: "n", Templates: tt.tpl})
			for name, err := range map[string]error{"aliyun": aerr, "tencent": terr} {
				if tt.want == "" && err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
					t.Errorf("%s: error %v, want one naming %q", name, err, tt.want)
				}
			}
		})
	}
	tpl := smsTestTemplates()
	for _, tt := range []struct {
		name string
		a    aliyun.Config
		tc   tencent.Config
		want string
	}{
		{"no credentials", aliyun.Config{SignName: "n", Templates: tpl}, tencent.Config{SDKAppID: "1", SignName: "n", Templates: tpl}, "needs"},
		{"no sign name", aliyun.Config{AccessKeyID: "i", AccessKeySecret: "s", Templates: tpl}, tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", Templates: tpl}, "SignName"},
		{"http to a remote host", aliyun.Config{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Endpoint: "http://dysmsapi.aliyuncs.com"},
			tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Endpoint: "http://sms.tencentcloudapi.com"}, "Endpoint"},
		{"an endpoint with a path", aliyun.Config{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Endpoint: "https://dysmsapi.aliyuncs.com/x"},
			tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Endpoint: "https://sms.tencentcloudapi.com/x?y"}, "Endpoint"},
		{"negative concurrency", aliyun.Config{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Concurrency: -1},
			tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Concurrency: -1}, "Concurrency"},
	} {
		_, aerr := aliyun.New(tt.a)
		_, terr := tencent.New(tt.tc)
		for name, err := range map[string]error{"aliyun": aerr, "tencent": terr} {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s %s: error %v, want one naming %q", tt.name, name, err, tt.want)
			}
		}
	}
	if _, err := tencent.New(tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Region: "ap guangzhou"}); err == nil {
		t.Error("a region with a space passed")
	}
}

// smsClass is how a sender took a provider's refusal.
type smsClass struct {
	Retryable, Throttled bool
	RetryAfter           time.Duration
}

var (
	final     = smsClass{}
	retry     = smsClass{Retryable: true}
	throttled = func(wait time.Duration) smsClass { return smsClass{true, true, wait} }
)

// smsClassCase is a provider's refusal and how it must be taken.
type smsClassCase struct {
	refusal verifytest.Refusal
	want    smsClass
}

// checkClassification sends a message through each refusal of the fake
// provider pc and compares how the sender took it.
func checkClassification(t *testing.T, provider string, cases []smsClassCase) {
	t.Helper()
	var pc smsProviderCase
	for _, c := range smsProviderCases {
		if c.name == provider {
			pc = c
		}
	}
	p, s := pc.start(t, provider+"-secret")
	for _, c := range cases {
		p.RefuseWith(func(verifytest.ProviderSMS) verifytest.Refusal { return c.refusal })
		err := s.SendSMS(context.Background(), smsTestMessage)
		se, ok := errors.AsType[*sms.Error](err)
		if !ok {
			t.Errorf("%+v: error %v, want an *sms.Error", c.refusal, err)
			continue
		}
		if got := (smsClass{se.Retryable, se.Throttled, se.RetryAfter}); got != c.want {
			t.Errorf("%s (status %d): %+v, want %+v", c.refusal.Code, c.refusal.Status, got, c.want)
		}
		if se.Code != c.refusal.Code {
			t.Errorf("code %q, want %q", se.Code, c.refusal.Code)
		}
		// A throttled send is ErrSendThrottled to the Verifier's caller.
		if got := errors.Is(err, verify.ErrSendThrottled); got {
			t.Errorf("%s: the sender's own error matches ErrSendThrottled", c.refusal.Code)
		}
	}
}

// TestAliyunErrorClassification: each code SendSms answers is taken as
// Alibaba Cloud's documentation of its API errors says ("API错误码" of
// SMS, and the API gateway's common errors).
func TestAliyunErrorClassification(t *testing.T) {
	r := func(status int, code, msg string) verifytest.Refusal {
		return verifytest.Refusal{Status: status, Code: code, Message: msg}
	}
	checkClassification(t, "aliyun", []smsClassCase{
		// "系统错误": call again.
		{r(0, "isp.SYSTEM_ERROR", "系统错误"), retry},
		// The per-number limits, by the window the message names.
		{r(0, "isv.BUSINESS_LIMIT_CONTROL", "触发分钟级流控Permits:1"), throttled(time.Minute)},
		{r(0, "isv.BUSINESS_LIMIT_CONTROL", "触发小时级流控Permits:5"), throttled(time.Hour)},
		{r(0, "isv.BUSINESS_LIMIT_CONTROL", "触发天级流控Permits:10"), final},
		{r(0, "isv.BUSINESS_LIMIT_CONTROL", "业务限流"), throttled(sms.DefaultRetryAfter)},
		// The provider's own Retry-After beats the window of the message.
		{verifytest.Refusal{Code: "isv.BUSINESS_LIMIT_CONTROL", Message: "触发分钟级流控Permits:1", RetryAfter: "17"}, throttled(17 * time.Second)},
		// The account's day and month: as Tencent's daily limits, final.
		{r(0, "isv.DAY_LIMIT_CONTROL", "触发日发送限额"), final},
		{r(0, "isv.MONTH_LIMIT_CONTROL", "触发月发送限额"), final},
		{r(0, "isv.MOBILE_NUMBER_ILLEGAL", ""), final},
		{r(0, "isv.SMS_TEMPLATE_ILLEGAL", ""), final},
		{r(0, "isv.SMS_SIGNATURE_ILLEGAL", ""), final},
		{r(0, "isv.TEMPLATE_MISSING_PARAMETERS", ""), final},
		{r(0, "isv.PARAM_LENGTH_LIMIT", ""), final},
		{r(0, "isv.OUT_OF_SERVICE", ""), final},
		{r(0, "isv.AMOUNT_NOT_ENOUGH", ""), final},
		{r(0, "isp.RAM_PERMISSION_DENY", ""), final},
		{r(0, "isv.BLACK_KEY_CONTROL_LIMIT", ""), final},
		// The API gateway.
		{r(http.StatusBadRequest, "Throttling", ""), throttled(sms.DefaultRetryAfter)},
		{r(http.StatusBadRequest, "Throttling.User", ""), throttled(sms.DefaultRetryAfter)},
		{verifytest.Refusal{Status: http.StatusTooManyRequests, Code: "Throttling.Api", RetryAfter: "9"}, throttled(9 * time.Second)},
		{r(http.StatusInternalServerError, "InternalError", ""), retry},
		{r(http.StatusServiceUnavailable, "ServiceUnavailable", ""), retry},
		{r(http.StatusForbidden, "Forbidden.RAM", ""), final},
		{r(http.StatusNotFound, "InvalidAccessKeyId.NotFound", ""), final},
		// A code the documentation does not list: by the status.
		{r(http.StatusBadGateway, "isp.SOMETHING_NEW", ""), retry},
		{r(http.StatusTooManyRequests, "isv.SOMETHING_NEW", ""), throttled(sms.DefaultRetryAfter)},
		{verifytest.Refusal{Status: http.StatusTooManyRequests, Code: "isv.SOMETHING_NEW", RetryAfter: "100000"}, throttled(time.Hour)},
		{r(0, "isv.SOMETHING_NEW", ""), final},
	})
}

// TestTencentErrorClassification: each code SendSms answers is taken as
// Tencent Cloud's documentation of the SMS API 2021-01-11 (and of API
// 3.0's common errors) says, as its SDK's errors.go lists them.
func TestTencentErrorClassification(t *testing.T) {
	req := func(code string) verifytest.Refusal { return verifytest.Refusal{Code: code} }              // Error.Code
	num := func(code string) verifytest.Refusal { return verifytest.Refusal{Status: 200, Code: code} } // SendStatusSet[0].Code
	checkClassification(t, "tencent", []smsClassCase{
		{req("RequestLimitExceeded"), throttled(sms.DefaultRetryAfter)},
		{req("RequestLimitExceeded.UinLimitExceeded"), throttled(sms.DefaultRetryAfter)},
		{req("RequestLimitExceeded.IPLimitExceeded"), throttled(sms.DefaultRetryAfter)},
		{req("RequestLimitExceeded.GlobalRegionUinLimitExceeded"), throttled(sms.DefaultRetryAfter)},
		{verifytest.Refusal{Status: http.StatusTooManyRequests, Code: "RequestLimitExceeded", RetryAfter: "3"}, throttled(3 * time.Second)},
		{num("LimitExceeded.PhoneNumberThirtySecondLimit"), throttled(30 * time.Second)},
		{num("LimitExceeded.PhoneNumberOneHourLimit"), throttled(time.Hour)},
		{num("LimitExceeded.DeliveryFrequencyLimit"), throttled(sms.DefaultRetryAfter)},
		// Daily limits do not clear within the notices' schedule: final,
		// as Aliyun's isv.DAY_LIMIT_CONTROL.
		{req("LimitExceeded.AppDailyLimit"), final},
		{num("LimitExceeded.PhoneNumberDailyLimit"), final},
		{num("LimitExceeded.PhoneNumberSameContentDailyLimit"), final},
		{req("LimitExceeded.AppMainlandChinaDailyLimit"), final},
		{req("LimitExceeded.AppGlobalDailyLimit"), final},
		{req("LimitExceeded.DailyLimit"), final},
		// No limit at all, despite its prefix.
		{num("LimitExceeded.AppCountryOrRegionInBlacklist"), final},
		{req("InternalError"), retry},
		{req("InternalError.Timeout"), retry},
		{req("InternalError.SendAndRecvFail"), retry},
		{req("InternalError.ParseBackendResponseFail"), retry},
		{req("InternalError.UnknownError"), retry},
		{req("ServiceUnavailable"), retry},
		// InternalError.* that the same request meets again.
		{req("InternalError.RequestTimeException"), final},
		{req("InternalError.JsonParseFail"), final},
		{req("InternalError.RestApiInterfaceNotExist"), final},
		{req("InternalError.SigFieldMissing"), final},
		{req("InternalError.SigVerificationFail"), final},
		{req("InternalError.OtherError"), final},
		{req("AuthFailure.SignatureFailure"), final},
		{req("AuthFailure.SecretIdNotFound"), final},
		{req("UnauthorizedOperation.SmsSdkAppIdVerifyFail"), final},
		{req("FailedOperation.TemplateIncorrectOrUnapproved"), final},
		{req("FailedOperation.SignatureIncorrectOrUnapproved"), final},
		{req("FailedOperation.InsufficientBalanceInSmsPackage"), final},
		{num("FailedOperation.PhoneNumberInBlacklist"), final},
		{num("InvalidParameterValue.IncorrectPhoneNumber"), final},
		{req("InvalidParameterValue.TemplateParameterLengthLimit"), final},
		// A code the documentation does not list: by the status.
		{req("LimitExceeded.SomethingNew"), final},
		{verifytest.Refusal{Status: http.StatusBadGateway}, retry},
		{verifytest.Refusal{Status: http.StatusTooManyRequests}, throttled(sms.DefaultRetryAfter)},
	})
}

// TestTemplateSMSSenderMasksEchoedNumber: a provider that echoes the
// number in its message (in any of the spellings it may use) gets it
// masked in the error, as the code is cut out.
func TestTemplateSMSSenderMasksEchoedNumber(t *testing.T) {
	for _, pc := range smsProviderCases {
		p, s := pc.start(t, pc.name+"-secret")
		p.RefuseWith(func(verifytest.ProviderSMS) verifytest.Refusal {
			return verifytest.Refusal{Status: 200, Code: "isv.MOBILE_NUMBER_ILLEGAL",
				Message: "number +8613800138000 (8613800138000, 13800138000) refused; code 482913"}
		})
		err := s.SendSMS(context.Background(), smsTestMessage)
		if err == nil {
			t.Fatalf("%s: no error", pc.name)
		}
		for _, leak := range []string{"13800138000", "0013800", "482913"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: error %q holds %q", pc.name, err, leak)
			}
		}
		if !strings.Contains(err.Error(), "+*********8000 (*********8000, *******8000) refused; code [code]") {
			t.Errorf("%s: error %q, want the number masked and the code cut out", pc.name, err)
		}
	}
}

// TestNoticeNumber: a notice's parameter is the new number's last four
// digits unless the templates ask for it masked; Tencent refuses the
// masked one, 14 characters, from an account without enterprise
// verification, and a bad NoticeNumber is refused by the constructor.
func TestNoticeNumber(t *testing.T) {
	notice := verify.SMS{To: "+8613800138000", Text: "changed", BizKey: verify.ModifyMobile, NewAddress: "+86*******7000"}
	for _, tt := range []struct {
		provider string
		number   sms.NoticeNumber
		want     string // the parameter; "" for a refusal
	}{
		{"aliyun", "", "7000"},
		{"aliyun", sms.NoticeLastFour, "7000"},
		{"aliyun", sms.NoticeMasked, "+86*******7000"},
		{"tencent", "", "7000"},
		{"tencent", sms.NoticeMasked, ""},
	} {
		tpl := smsTestTemplates()
		tpl.NoticeNumber = tt.number
		var p *verifytest.SMSProvider
		var s verify.SMSSender
		var err error
		if tt.provider == "aliyun" {
			p = verifytest.NewAliyunSMSProvider(t, "id", "secret")
			s, err = aliyun.New(aliyun.Config{AccessKeyID: "id", AccessKeySecret: "secret", SignName: "s", Templates: tpl, Endpoint: p.URL})
		} else {
			p = verifytest.NewTencentSMSProvider(t, "id", "secret")
			s, err = tencent.New(tencent.Config{SecretID: "id", SecretKey: "secret", SDKAppID: "1400006666", SignName: "s", Templates: tpl, Endpoint: p.URL})
		}
		if err != nil {
			t.Fatal(err)
		}
		err = s.SendSMS(context.Background(), notice)
		if tt.want == "" {
			se, ok := errors.AsType[*sms.Error](err)
			if !ok || se.Code != "InvalidParameterValue.TemplateParameterLengthLimit" || se.Retryable {
				t.Errorf("%s %q: error %v, want a final TemplateParameterLengthLimit", tt.provider, tt.number, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %q: %v", tt.provider, tt.number, err)
		}
		msgs := p.Messages()
		if len(msgs) != 1 || (msgs[0].Params["mobile"] != tt.want && msgs[0].Params["1"] != tt.want) {
			t.Errorf("%s %q: %+v, want the parameter %q", tt.provider, tt.number, msgs, tt.want)
		}
	}
	tpl := smsTestTemplates()
	tpl.NoticeNumber = "full"
	_, aerr := aliyun.New(aliyun.Config{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl})
	_, terr := tencent.New(tencent.Config{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl})
	for _, err := range []error{aerr, terr} {
		if err == nil || !strings.Contains(err.Error(), `NoticeNumber is "full"`) {
			t.Errorf("NoticeNumber full: %v", err)
		}
	}
}
