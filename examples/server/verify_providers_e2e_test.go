package main

import (
	"bytes"
	"context"
	"encoding/json"
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
				// its own template with the new number's last four
				// digits: what the Tencent fake, as Tencent for an
				// account without enterprise verification, takes (at
				// most 12 characters; "+86*******7000" has 14).
				if got := await(oldTo, "T_NOTICE")[noticeParam]; got != "7000" {
					t.Errorf("notice parameter %q, want the new number's last four digits", got)
				}
				// Any other bizKey takes the * template.
				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "PASSWORD_UPDATE", "mobile": "13700137000", "country": "CN"}, nil)
				if len(await(newTo, "T_CODE")[codeParam]) != 6 {
					t.Error("no code in the * template")
				}

				// A throttled send is 503 verification_send_throttled
				// with the provider's wait as Retry-After: the window its
				// code or message names, or its own Retry-After header.
				sendSignin := map[string]any{"bizKey": "SIGNIN", "mobile": "13700137000", "country": "CN"}
				type throttle struct {
					refusal    verifytest.Refusal
					retryAfter string
				}
				throttles := map[string][]throttle{
					"aliyun": {
						{verifytest.Refusal{Code: "isv.BUSINESS_LIMIT_CONTROL", Message: "触发分钟级流控Permits:1"}, "60"},
						{verifytest.Refusal{Status: http.StatusBadRequest, Code: "Throttling.User", RetryAfter: "7"}, "7"},
					},
					"tencent": {
						{verifytest.Refusal{Status: 200, Code: "LimitExceeded.PhoneNumberThirtySecondLimit"}, "30"},
						{verifytest.Refusal{Code: "RequestLimitExceeded", RetryAfter: "7"}, "7"},
					},
				}[provider]
				for _, c := range throttles {
					fake.RefuseWith(func(verifytest.ProviderSMS) verifytest.Refusal { return c.refusal })
					got := sendForAnswer(t, base, ann, sendSignin)
					if got.status != http.StatusServiceUnavailable || got.key != "verification_send_throttled" || got.retryAfter != c.retryAfter {
						t.Errorf("%s: a throttled send answered %+v, want 503 verification_send_throttled, Retry-After %s", c.refusal.Code, got, c.retryAfter)
					}
				}
				// A refusal that is no throttle stays 502, and the number
				// the provider echoes is masked in the log.
				fake.RefuseWith(func(verifytest.ProviderSMS) verifytest.Refusal {
					code := "isv.MOBILE_NUMBER_ILLEGAL"
					if provider == "tencent" {
						code = "InvalidParameterValue.IncorrectPhoneNumber"
					}
					return verifytest.Refusal{Status: 200, Code: code, Message: "invalid mobile number 8613700137000"}
				})
				if got := sendForAnswer(t, base, ann, sendSignin); got.status != http.StatusBadGateway || got.key != "verification_send_failed" || got.retryAfter != "" {
					t.Errorf("a refused number answered %+v, want 502 verification_send_failed without Retry-After", got)
				}
				fake.Refuse(nil)
				ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", sendSignin, nil)
				await(newTo, "T_CODE")

				if bad := fake.BadSignatures(); len(bad) != 0 {
					t.Errorf("requests with bad signatures: %v", bad)
				}
				for _, secret := range []string{"aliyun-secret-value", "tencent-secret-value", code, "8613700137000"} {
					if strings.Contains(logs.String(), secret) {
						t.Errorf("the log holds %q", secret)
					}
				}
				if provider == "aliyun" && !strings.Contains(logs.String(), "isv.BUSINESS_LIMIT_CONTROL") ||
					provider == "tencent" && !strings.Contains(logs.String(), "LimitExceeded.PhoneNumberThirtySecondLimit") {
					t.Errorf("the log does not name the provider's code:\n%s", logs.String())
				}
				if !strings.Contains(logs.String(), "invalid mobile number *********7000") {
					t.Errorf("the log does not show the echoed number masked:\n%s", logs.String())
				}
			})
		}
	})
}

// sendAnswer is what the API answered a send.
type sendAnswer struct {
	status          int
	key, retryAfter string
}

// sendForAnswer posts a send of an SMS code as token.
func sendForAnswer(t *testing.T, base, token string, body any) sendAnswer {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/user/current/sms/send", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Ext struct {
			EKey string `json:"eKey"`
		} `json:"ext"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return sendAnswer{status: res.StatusCode, key: env.Ext.EKey, retryAfter: res.Header.Get("Retry-After")}
}
