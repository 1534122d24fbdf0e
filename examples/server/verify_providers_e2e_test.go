package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskkit/deskkit/verify/verifytest"
)

// TestTemplateSMSProvidersEndToEnd runs the MODIFY_MOBILE flow through the
// reference server configured as a user configures it for Aliyun or
// Tencent Cloud SMS (-sms-provider, keys from the environment), against a
// fake of the provider on loopback that checks every request's
// signature, on both databases: the codes are read back from the
// template parameters the fake got, and the notice to the old number goes
// out as its own template.
func TestTemplateSMSProvidersEndToEnd(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		for _, provider := range []string{"aliyun", "tencent"} {
			t.Run(provider, func(t *testing.T) {
				vars := map[string]string{
					envDatabaseURL: rawURL, envSMSProvider: provider,
					envSMSSignName:  "深科技",
					envSMSTemplates: "*=T_CODE, MODIFY_MOBILE=T_MODIFY, notice=T_NOTICE, en:*=T_CODE_EN",
				}
				var fake *verifytest.SMSProvider
				var codeParam, noticeParam, oldTo, newTo string
				if provider == "aliyun" {
					fake = verifytest.NewAliyunSMSProvider(t, "LTAI5tExample", "aliyun-secret-value")
					vars[envAliyunKeyID], vars[envAliyunKeySecret] = "LTAI5tExample", "aliyun-secret-value"
					codeParam, noticeParam, oldTo, newTo = "code", "mobile", "8613800138000", "8613700137000"
				} else {
					fake = verifytest.NewTencentSMSProvider(t, "AKIDExample", "tencent-secret-value")
					vars[envTencentSecretID], vars[envTencentSecretKey], vars[envTencentAppID] = "AKIDExample", "tencent-secret-value", "1400006666"
					codeParam, noticeParam, oldTo, newTo = "1", "1", "+8613800138000", "+8613700137000"
				}
				vars[envSMSEndpoint] = fake.URL
				base, logs := startServer(t, vars)
				user := provider + "-ann"
				ann, _ := issue(t, rawURL, "-tenant", provider, "-username", user, "-mobile", "13800138000", "-country", "CN")

				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				await := func(to, template string) map[string]string {
					t.Helper()
					m, err := fake.Await(ctx, to, func(m verifytest.ProviderSMS) bool { return m.TemplateID == template })
					if err != nil {
						t.Fatalf("%v; bad signatures: %v", err, fake.BadSignatures())
					}
					if m.SignName != "深科技" || (provider == "tencent" && m.AppID != "1400006666") {
						t.Errorf("message %+v", m)
					}
					return m.Params
				}

				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13800138000", "country": "CN"}, nil)
				code := await(oldTo, "T_MODIFY")[codeParam]
				var link struct{ LinkSecret string }
				ok(t, base, ann, http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
					"bizKey": {"MODIFY_MOBILE"}, "mobile": {"+8613800138000"}, "country": {"CN"}, "verificationCode": {code},
				}.Encode(), nil, &link)
				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13700137000", "country": "CN"}, nil)
				code = await(newTo, "T_MODIFY")[codeParam]
				var d struct{ Mobile string }
				ok(t, base, ann, http.MethodPatch, "/api/v1/user/current/mobile", map[string]any{
					"bizKey": "MODIFY_MOBILE", "mobile": "13700137000", "country": "CN", "itc": 86, "verificationCode": code, "linkSecret": link.LinkSecret,
				}, &d)
				if d.Mobile != "+8613700137000" {
					t.Fatalf("mobile after MODIFY_MOBILE: %+v", d)
				}
				// The notice goes to the old number from the outbox, as
				// its own template with the new number masked.
				if got := await(oldTo, "T_NOTICE")[noticeParam]; got != "+86*******7000" {
					t.Errorf("notice parameter %q, want the new number masked", got)
				}
				// Any other bizKey takes the * template.
				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "PASSWORD_UPDATE", "mobile": "13700137000", "country": "CN"}, nil)
				if len(await(newTo, "T_CODE")[codeParam]) != 6 {
					t.Error("no code in the * template")
				}

				// A refusal for throttling is the API's send failure, and
				// the next send goes through.
				fake.Refuse(func(verifytest.ProviderSMS) (int, string) {
					if provider == "aliyun" {
						return 0, "isv.BUSINESS_LIMIT_CONTROL"
					}
					return 200, "LimitExceeded.PhoneNumberOneHourLimit"
				})
				status, env := call(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "SIGNIN", "mobile": "13700137000", "country": "CN"})
				if status < 500 {
					t.Errorf("a throttled send answered %d %v", status, env)
				}
				fake.Refuse(nil)
				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "SIGNIN", "mobile": "13700137000", "country": "CN"}, nil)
				await(newTo, "T_CODE")

				if bad := fake.BadSignatures(); len(bad) != 0 {
					t.Errorf("requests with bad signatures: %v", bad)
				}
				for _, secret := range []string{"aliyun-secret-value", "tencent-secret-value", code} {
					if strings.Contains(logs.String(), secret) {
						t.Errorf("the log holds %q", secret)
					}
				}
				if provider == "aliyun" && !strings.Contains(logs.String(), "isv.BUSINESS_LIMIT_CONTROL") ||
					provider == "tencent" && !strings.Contains(logs.String(), "LimitExceeded.PhoneNumberOneHourLimit") {
					t.Errorf("the log does not name the provider's code:\n%s", logs.String())
				}
			})
		}
	})
}
