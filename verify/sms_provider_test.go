package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// smsTestTemplates has a template of its own for SIGNUP, one for every
// other bizKey, and the notice's, in zh-CN and en.
func smsTestTemplates() verify.SMSTemplates {
	return verify.SMSTemplates{
		Codes: map[verify.BizKey]map[string]string{
			verify.AnyBizKey: {"zh-CN": "T_ANY_ZH", "en": "T_ANY_EN"},
			"SIGNUP":         {"zh-CN": "T_SIGNUP_ZH"},
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
			s, err := verify.NewAliyunSMSSender(verify.AliyunSMSConfig{
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
			s, err := verify.NewTencentSMSSender(verify.TencentSMSConfig{
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
				{verify.SMS{To: "+8613800138000", Text: "changed", BizKey: verify.ModifyMobile, NewAddress: "+86*******8000"}, "T_NOTICE_ZH", pc.params("mobile", "+86*******8000")},
				{verify.SMS{To: "+8613800138000", Text: "changed", BizKey: verify.ModifyMobile, NewAddress: "+86*******8000", Locale: "en"}, "T_NOTICE_EN", pc.params("mobile", "+86*******8000")},
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
	s, err := verify.NewAliyunSMSSender(verify.AliyunSMSConfig{AccessKeyID: "id", AccessKeySecret: "secret", SignName: "s", Templates: tpl, Endpoint: p.URL})
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
		{"tencent", "per-number daily limit", 200, "LimitExceeded.PhoneNumberDailyLimit", false, want{200, "LimitExceeded.PhoneNumberDailyLimit", true}, "PhoneNumberDailyLimit"},
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
			var se *verify.SMSError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want an *SMSError", err, err)
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
		var se *verify.SMSError
		if !errors.As(err, &se) || !se.Retryable || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: error %v, want a retryable *SMSError wrapping context.Canceled", pc.name, err)
		}
		if err := s.SendSMS(context.Background(), verify.SMS{To: "13800138000", Code: "123456", BizKey: "SIGNIN"}); err == nil || !strings.Contains(err.Error(), "E.164") {
			t.Errorf("%s: a number without +: %v", pc.name, err)
		}
	}
}

func TestNewTemplateSMSSendersValidate(t *testing.T) {
	without := func(b verify.BizKey) verify.SMSTemplates {
		tpl := verify.SMSTemplates{Codes: map[verify.BizKey]map[string]string{}, Notice: map[string]string{"zh-CN": "N"}}
		for _, k := range verify.SMSBizKeys() {
			if k != b {
				tpl.Codes[k] = map[string]string{"zh-CN": "T_" + string(k)}
			}
		}
		return tpl
	}
	tests := []struct {
		name string
		tpl  verify.SMSTemplates
		want string // in the error; "" for none
	}{
		{"every bizKey its own", without(""), ""},
		{"AnyBizKey", smsTestTemplates(), ""},
		{"a bizKey without a template", without("REALNAME_AUTH_SUBMIT"), "REALNAME_AUTH_SUBMIT"},
		{"a bizKey with another locale only", func() verify.SMSTemplates {
			tpl := without("SIGNIN")
			tpl.Codes["SIGNIN"] = map[string]string{"en": "T"}
			return tpl
		}(), "no template for locale zh-CN of bizKey SIGNIN"},
		{"the default locale elsewhere", func() verify.SMSTemplates {
			tpl := smsTestTemplates()
			tpl.DefaultLocale = "en"
			return tpl
		}(), ""},
		{"no notice", func() verify.SMSTemplates {
			tpl := smsTestTemplates()
			tpl.Notice = map[string]string{"en": "N"}
			return tpl
		}(), "Notice has no template for locale zh-CN"},
		{"an e-mail-only bizKey", func() verify.SMSTemplates {
			tpl := smsTestTemplates()
			tpl.Codes["MODIFY_EMAIL"] = map[string]string{"zh-CN": "T"}
			return tpl
		}(), `"MODIFY_EMAIL" is not an SMS bizKey`},
		{"a blank template id", func() verify.SMSTemplates {
			tpl := smsTestTemplates()
			tpl.Codes["SIGNIN"] = map[string]string{"en": " "}
			return tpl
		}(), "template id is empty"},
		{"nothing", verify.SMSTemplates{}, "no template for locale zh-CN of bizKey SIGNUP, SIGNIN,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, aerr := verify.NewAliyunSMSSender(verify.AliyunSMSConfig{AccessKeyID: "id", AccessKeySecret: "s", SignName: "n", Templates: tt.tpl})
			_, terr := verify.NewTencentSMSSender(verify.TencentSMSConfig{SecretID: "id", SecretKey: "s", SDKAppID: "1400000000", SignName: "n", Templates: tt.tpl})
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
		a    verify.AliyunSMSConfig
		tc   verify.TencentSMSConfig
		want string
	}{
		{"no credentials", verify.AliyunSMSConfig{SignName: "n", Templates: tpl}, verify.TencentSMSConfig{SDKAppID: "1", SignName: "n", Templates: tpl}, "needs"},
		{"no sign name", verify.AliyunSMSConfig{AccessKeyID: "i", AccessKeySecret: "s", Templates: tpl}, verify.TencentSMSConfig{SecretID: "i", SecretKey: "s", SDKAppID: "1", Templates: tpl}, "SignName"},
		{"http to a remote host", verify.AliyunSMSConfig{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Endpoint: "http://dysmsapi.aliyuncs.com"},
			verify.TencentSMSConfig{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Endpoint: "http://sms.tencentcloudapi.com"}, "Endpoint"},
		{"an endpoint with a path", verify.AliyunSMSConfig{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Endpoint: "https://dysmsapi.aliyuncs.com/x"},
			verify.TencentSMSConfig{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Endpoint: "https://sms.tencentcloudapi.com/x?y"}, "Endpoint"},
		{"negative concurrency", verify.AliyunSMSConfig{AccessKeyID: "i", AccessKeySecret: "s", SignName: "n", Templates: tpl, Concurrency: -1},
			verify.TencentSMSConfig{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Concurrency: -1}, "Concurrency"},
	} {
		_, aerr := verify.NewAliyunSMSSender(tt.a)
		_, terr := verify.NewTencentSMSSender(tt.tc)
		for name, err := range map[string]error{"aliyun": aerr, "tencent": terr} {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s %s: error %v, want one naming %q", tt.name, name, err, tt.want)
			}
		}
	}
	if _, err := verify.NewTencentSMSSender(verify.TencentSMSConfig{SecretID: "i", SecretKey: "s", SDKAppID: "1", SignName: "n", Templates: tpl, Region: "ap guangzhou"}); err == nil {
		t.Error("a region with a space passed")
	}
}
