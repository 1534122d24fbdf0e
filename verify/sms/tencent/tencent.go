// Package tencent is a verify.SMSSender over Tencent Cloud SMS
// (腾讯云短信), a template provider: it sends approved templates, not the
// Verifier's text.
//
// # Overview
//
// New takes a CAM user's API key allowed sms:SendSms, the SMS
// application's SdkAppId, the approved signature, and an sms.Templates
// table of approved template ids ("1110") by bizKey and locale, each with
// one parameter, {1}. Requests are signed with TC3-HMAC-SHA256 and dated
// by Config.Now; Tencent Cloud refuses one more than 5 minutes off. An
// account without enterprise verification takes parameters of at most 12
// characters: keep sms.NoticeLastFour.
//
// # Errors
//
// A refusal is a *sms.Error with Provider "tencent" and Tencent
// Cloud's code, classified as Sender.SendSMS lists: request and
// per-number frequency limits are throttled, internal errors retryable,
// daily limits and every refusal of the key, signature, template or
// number final.
//
// # Testing
//
// verifytest.NewTencentSMSProvider is a fake of the API on loopback that
// checks each request's signature.
package tencent

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smsprovider"
	"github.com/deskkit/deskkit/verify/sms"
)

// Tencent Cloud SMS's API: SendSms, version 2021-01-11, signed with
// TC3-HMAC-SHA256.
const (
	tencentEndpoint    = "https://sms.tencentcloudapi.com"
	tencentService     = "sms"
	tencentAction      = "SendSms"
	tencentVersion     = "2021-01-11"
	tencentRegion      = "ap-guangzhou"
	tencentAlgorithm   = "TC3-HMAC-SHA256"
	tencentContentType = "application/json; charset=utf-8"
)

// Config is how a Sender reaches Tencent Cloud SMS
// (腾讯云短信).
type Config struct {
	// SecretID and SecretKey are a CAM user's API key, allowed
	// sms:SendSms. Required.
	SecretID  string
	SecretKey string
	// SDKAppID is the SMS application's SdkAppId ("1400006666").
	// Required.
	SDKAppID string
	// SignName is the approved signature (签名内容) every message
	// carries. Required.
	SignName string
	// Templates maps bizKeys and locales to approved template ids
	// ("1110"). A code's template has one parameter, {1}, the code; a
	// notice's has one, {1}, the new number masked.
	Templates sms.Templates
	// Region is the API region, X-TC-Region; "ap-guangzhou" if "".
	Region string
	// Endpoint is the API's root URL; "https://sms.tencentcloudapi.com" if
	// "". It must be https but on a loopback host (tests).
	Endpoint string
	// Client sends the requests; without one, a client with a 10-second
	// timeout that does not follow redirects and keeps Concurrency idle
	// connections to the endpoint.
	Client *http.Client
	// Concurrency is how many messages are expected in flight at once,
	// which sizes the default client's pool: sms.DefaultConcurrency if 0.
	Concurrency int
	// Now is the clock requests are dated by (the provider refuses one
	// more than 5 minutes off); time.Now if nil.
	Now func() time.Time
}

// Sender is a verify.SMSSender over Tencent Cloud SMS: it sends each
// message as the template its sms.Templates give for the bizKey and locale,
// with the code as its one parameter (a notice: the new number), under the
// signature name. It is safe for concurrent use.
//
// It calls SendSms (version 2021-01-11) with a JSON body, signed with
// TC3-HMAC-SHA256 as Tencent Cloud's "Signature v3" documents it: it is a
// small client of its own, pinned by deskkit's tests to the signing
// example Tencent Cloud publishes, since the module proxy serves Tencent's
// SDK only as its 2021 monolith, not its per-product sms module, and a
// sender needs one call of it. Numbers the provider echoes are masked in
// its errors, as codes are cut out.
type Sender struct {
	endpoint  *url.URL
	secretID  string
	secretKey string
	appID     string
	signName  string
	region    string
	templates sms.Templates
	client    *http.Client
	now       func() time.Time
}

var _ verify.SMSSender = (*Sender)(nil)

// New checks cfg and returns a sender. It does not
// connect. A bizKey of verify.SMSBizKeys without a template for the default
// locale is an error here, not at its first send.
func New(cfg Config) (*Sender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	u, _ := smsprovider.Endpoint("tencent: Config", c.Endpoint) // validate checked it
	s := &Sender{
		endpoint: u, secretID: c.SecretID, secretKey: c.SecretKey, appID: c.SDKAppID, signName: c.SignName,
		region: c.Region, templates: c.Templates, client: c.Client, now: c.Now,
	}
	if s.client == nil {
		s.client = smsprovider.Client(c.Concurrency)
	}
	return s, nil
}

// withDefaults returns a copy of c with the defaults filled in and the
// templates copied, as the module's constructors all begin.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.Endpoint == "" {
		out.Endpoint = tencentEndpoint
	}
	if out.Region == "" {
		out.Region = tencentRegion
	}
	if out.Concurrency == 0 {
		out.Concurrency = sms.DefaultConcurrency
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	out.SignName = strings.TrimSpace(out.SignName)
	out.SDKAppID = strings.TrimSpace(out.SDKAppID)
	out.Templates = smsprovider.WithDefaults(out.Templates)
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.SecretID == "" || c.SecretKey == "" || c.SDKAppID == "" || c.SignName == "" {
		return errors.New("tencent: Config needs SecretID, SecretKey, SDKAppID and SignName")
	}
	if c.Concurrency < 0 {
		return errors.New("tencent: Config.Concurrency must not be negative")
	}
	if strings.ContainsFunc(c.Region, func(r rune) bool { return !(r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z') }) {
		return fmt.Errorf("tencent: Config.Region %q is not a region such as ap-guangzhou", c.Region)
	}
	if _, err := smsprovider.Endpoint("tencent: Config", c.Endpoint); err != nil {
		return err
	}
	return smsprovider.CheckTemplates(c.Templates, "tencent: Config")
}

// SendSMS asks Tencent Cloud to send m. It returns nil when the answer is
// 200 with the number's SendStatus Code "Ok", and otherwise an error: a
// number that is not E.164, or a *sms.Error with the provider's code, the
// request's (Error.Code) or the number's (SendStatusSet[0].Code),
// classified by a table of the codes Tencent Cloud's documentation
// lists: RequestLimitExceeded (and its .UinLimitExceeded,
// .IPLimitExceeded, .GlobalRegionUinLimitExceeded),
// LimitExceeded.PhoneNumberThirtySecondLimit, .PhoneNumberOneHourLimit
// and .DeliveryFrequencyLimit are Throttled and Retryable; InternalError,
// InternalError.Timeout, .SendAndRecvFail, .ParseBackendResponseFail,
// .UnknownError, ServiceUnavailable, 5xx answers and an unreachable
// endpoint are Retryable; daily limits (LimitExceeded.AppDailyLimit,
// .PhoneNumberDailyLimit, ...), a country refused by the application
// (LimitExceeded.AppCountryOrRegionInBlacklist), a request the provider
// cannot take (InternalError.RequestTimeException, .JsonParseFail,
// .RestApiInterfaceNotExist, .SigFieldMissing), AuthFailure.* and a
// refused signature, template or number are neither. It wraps ctx's
// error when ctx ended first. No error contains the code, or the number
// unmasked.
func (s *Sender) SendSMS(ctx context.Context, m verify.SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("tencent: %q is not an E.164 number", m.To)
	}
	id, value := smsprovider.Template(s.templates, m)
	body, err := json.Marshal(struct {
		PhoneNumberSet   []string
		SmsSdkAppId      string // the API's spelling
		SignName         string
		TemplateId       string // the API's spelling
		TemplateParamSet []string
	}{[]string{m.To}, s.appID, s.signName, id, []string{value}})
	if err != nil {
		return fmt.Errorf("tencent: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint.String(), strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("tencent: %w", err)
	}
	timestamp := s.now().Unix()
	req.Header.Set("Content-Type", tencentContentType)
	req.Header.Set("X-TC-Action", tencentAction)
	req.Header.Set("X-TC-Version", tencentVersion)
	req.Header.Set("X-TC-Region", s.region)
	req.Header.Set("X-TC-Timestamp", strconv.FormatInt(timestamp, 10))
	req.Header.Set("Authorization", tc3Authorization(s.secretID, s.secretKey, tencentService, timestamp, http.MethodPost, "/", "",
		map[string]string{"content-type": tencentContentType, "host": s.endpoint.Host, "x-tc-action": tencentAction}, body))
	status, reply, retryAfter, err := smsprovider.Post(s.client, req)
	if err != nil {
		return &sms.Error{Provider: "tencent", Retryable: true, Err: err}
	}
	var a struct {
		Response struct {
			Error *struct {
				Code    string
				Message string
			}
			SendStatusSet []struct {
				Code    string
				Message string
			}
			RequestID string `json:"RequestId"`
		}
	}
	e := &sms.Error{Provider: "tencent", Status: status}
	switch {
	case json.Unmarshal(reply, &a) != nil:
		e.Message = smsprovider.Excerpt(string(reply), m)
	case a.Response.Error != nil:
		e.Code, e.Message = a.Response.Error.Code, smsprovider.Excerpt(a.Response.Error.Message, m)
	case len(a.Response.SendStatusSet) != 1:
		e.Message = fmt.Sprintf("%d send statuses for one number", len(a.Response.SendStatusSet))
	case !strings.EqualFold(a.Response.SendStatusSet[0].Code, "Ok"):
		e.Code, e.Message = a.Response.SendStatusSet[0].Code, smsprovider.Excerpt(a.Response.SendStatusSet[0].Message, m)
	case status == http.StatusOK:
		return nil
	}
	e.RequestID = a.Response.RequestID
	c, known := codes[e.Code]
	smsprovider.Classify(e, c, known, smsprovider.ParseRetryAfter(retryAfter, s.now()))
	return e
}

// codes classifies the codes SendSms answers: the SMS API's own, as
// Tencent Cloud documents them (SMS API 2021-01-11, "错误码",
// https://cloud.tencent.com/document/api/382/52075, and the constants of
// its SDK, tencentcloud-sdk-go tencentcloud/sms/v20210111/errors.go), and
// the common ones of API 3.0. A code not listed is taken by the HTTP
// status: a 5xx retryable, a 429 throttled, any other final.
var codes = map[string]smsprovider.Class{
	// Common codes: the request rate of the account, the IP or the
	// region ("请求的次数超过了频率限制"). The SDK's own retry is for
	// RequestLimitExceeded (tencentcloud/common/ratelimitretry.go; its
	// Python SDK adds .UinLimitExceeded and .GlobalRegionUinLimitExceeded).
	"RequestLimitExceeded":                              smsprovider.Throttled,
	"RequestLimitExceeded.UinLimitExceeded":             smsprovider.Throttled,
	"RequestLimitExceeded.IPLimitExceeded":              smsprovider.Throttled,
	"RequestLimitExceeded.GlobalRegionUinLimitExceeded": smsprovider.Throttled,
	"InternalError":                                     smsprovider.Retry, // "内部错误"
	"ServiceUnavailable":                                smsprovider.Retry, // "当前服务暂时不可用"
	"ResourceUnavailable":                               smsprovider.Retry,
	// Per-number limits that clear within the notices' schedule, each
	// with the window its name says; "命中了频率限制策略" names none.
	"LimitExceeded.PhoneNumberThirtySecondLimit": {Retryable: true, Throttled: true, Wait: 30 * time.Second},
	"LimitExceeded.PhoneNumberOneHourLimit":      {Retryable: true, Throttled: true, Wait: time.Hour},
	"LimitExceeded.DeliveryFrequencyLimit":       smsprovider.Throttled,
	// Limits of a day: they do not clear within the notices' schedule,
	// as Aliyun's isv.DAY_LIMIT_CONTROL does not.
	"LimitExceeded.AppDailyLimit":                    smsprovider.Final,
	"LimitExceeded.DailyLimit":                       smsprovider.Final,
	"LimitExceeded.AppGlobalDailyLimit":              smsprovider.Final,
	"LimitExceeded.AppMainlandChinaDailyLimit":       smsprovider.Final,
	"LimitExceeded.AppCountryOrRegionDailyLimit":     smsprovider.Final,
	"LimitExceeded.PhoneNumberDailyLimit":            smsprovider.Final,
	"LimitExceeded.PhoneNumberSameContentDailyLimit": smsprovider.Final,
	// Not a limit: the application does not send to this country or
	// region, until someone changes its list in the console.
	"LimitExceeded.AppCountryOrRegionInBlacklist": smsprovider.Final,
	"LimitExceeded.PhoneNumberCountLimit":         smsprovider.Final,
	// The provider failed inside: a timeout towards the carrier
	// ("请求下发短信超时"), a lost packet ("接口超时或后短信收发包超时"), a
	// carrier's answer it could not read, an unknown error.
	"InternalError.Timeout":                  smsprovider.Retry,
	"InternalError.SendAndRecvFail":          smsprovider.Retry,
	"InternalError.ParseBackendResponseFail": smsprovider.Retry,
	"InternalError.UnknownError":             smsprovider.Retry,
	// InternalError.* that the same request meets again: a clock more
	// than 10 minutes off ("请求发起时间不正常"), a body or interface
	// the provider does not take, a request without or with a bad Sig,
	// and "其他错误", to be raised with its support.
	"InternalError.RequestTimeException":     smsprovider.Final,
	"InternalError.JsonParseFail":            smsprovider.Final,
	"InternalError.RestApiInterfaceNotExist": smsprovider.Final,
	"InternalError.SigFieldMissing":          smsprovider.Final,
	"InternalError.SigVerificationFail":      smsprovider.Final,
	"InternalError.OtherError":               smsprovider.Final,
	// Refusals of the account, the key, the signature, the template, the
	// content or the number, each to be fixed by a person.
	"AuthFailure.SignatureFailure":                                    smsprovider.Final,
	"AuthFailure.SignatureExpire":                                     smsprovider.Final,
	"AuthFailure.SecretIdNotFound":                                    smsprovider.Final,
	"AuthFailure.InvalidSecretId":                                     smsprovider.Final,
	"AuthFailure.InvalidAuthorization":                                smsprovider.Final,
	"AuthFailure.UnauthorizedOperation":                               smsprovider.Final,
	"UnauthorizedOperation.RequestPermissionDeny":                     smsprovider.Final,
	"UnauthorizedOperation.RequestIpNotInWhitelist":                   smsprovider.Final,
	"UnauthorizedOperation.SdkAppIdIsDisabled":                        smsprovider.Final,
	"UnauthorizedOperation.SerivceSuspendDueToArrears":                smsprovider.Final, // the SDK's spelling
	"UnauthorizedOperation.ServiceSuspendDueToArrears":                smsprovider.Final,
	"UnauthorizedOperation.SmsSdkAppIdVerifyFail":                     smsprovider.Final,
	"UnauthorizedOperation.IndividualUserMarketingSmsPermissionDeny":  smsprovider.Final,
	"FailedOperation.ContainSensitiveWord":                            smsprovider.Final,
	"FailedOperation.FailResolvePacket":                               smsprovider.Final,
	"FailedOperation.JsonParseFail":                                   smsprovider.Final,
	"FailedOperation.InsufficientBalanceInSmsPackage":                 smsprovider.Final,
	"FailedOperation.MarketingSendTimeConstraint":                     smsprovider.Final,
	"FailedOperation.MissingSignatureList":                            smsprovider.Final,
	"FailedOperation.MissingTemplateList":                             smsprovider.Final,
	"FailedOperation.PhoneNumberInBlacklist":                          smsprovider.Final,
	"FailedOperation.PhoneNumberParseFail":                            smsprovider.Final,
	"FailedOperation.SignatureIncorrectOrUnapproved":                  smsprovider.Final,
	"FailedOperation.TemplateIncorrectOrUnapproved":                   smsprovider.Final,
	"FailedOperation.TemplateParamSetNotMatchApprovedTemplate":        smsprovider.Final,
	"FailedOperation.TemplateUnapprovedOrNotExist":                    smsprovider.Final,
	"FailedOperation.OtherError":                                      smsprovider.Final,
	"FailedOperation.ParametersOtherError":                            smsprovider.Final,
	"InvalidParameter":                                                smsprovider.Final,
	"InvalidParameter.AppidAndBizId":                                  smsprovider.Final,
	"InvalidParameter.DirtyWordFound":                                 smsprovider.Final,
	"InvalidParameter.InvalidParameters":                              smsprovider.Final,
	"InvalidParameterValue.ContentLengthLimit":                        smsprovider.Final,
	"InvalidParameterValue.IncorrectPhoneNumber":                      smsprovider.Final,
	"InvalidParameterValue.ProhibitedUseUrlInTemplateParameter":       smsprovider.Final,
	"InvalidParameterValue.SdkAppIdNotExist":                          smsprovider.Final,
	"InvalidParameterValue.TemplateParameterFormatError":              smsprovider.Final,
	"InvalidParameterValue.TemplateParameterLengthLimit":              smsprovider.Final,
	"MissingParameter":                                                smsprovider.Final,
	"MissingParameter.EmptyPhoneNumberSet":                            smsprovider.Final,
	"UnsupportedOperation.ContainDomesticAndInternationalPhoneNumber": smsprovider.Final,
	"UnsupportedOperation.ChineseMainlandTemplateToGlobalPhone":       smsprovider.Final,
	"UnsupportedOperation.GlobalTemplateToChineseMainlandPhone":       smsprovider.Final,
	"UnsupportedOperation.UnsuportedRegion":                           smsprovider.Final, // the SDK's spelling
	"UnsupportedOperation.UnsupportedRegion":                          smsprovider.Final,
}

// tc3Authorization is the Authorization header of TC3-HMAC-SHA256: the
// canonical request (method, URI, query, the headers in lower case with
// trimmed lower-case values, sorted, the list of their names, the body's
// SHA-256) hashed into the string to sign (algorithm, timestamp, the
// credential scope date/service/tc3_request with the UTC date of the
// timestamp, hash), signed with HMAC-SHA256 under the key derived from
// "TC3"+secretKey through the date, the service and "tc3_request".
// headers are lower-case names and must include content-type and host.
func tc3Authorization(secretID, secretKey, service string, timestamp int64, method, uri, query string, headers map[string]string, body []byte) string {
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	slices.Sort(names)
	var canonical strings.Builder
	canonical.WriteString(method + "\n" + uri + "\n" + query + "\n")
	for _, n := range names {
		canonical.WriteString(n + ":" + strings.ToLower(strings.TrimSpace(headers[n])) + "\n")
	}
	signed := strings.Join(names, ";")
	canonical.WriteString("\n" + signed + "\n" + smsprovider.SHA256Hex(body))
	date := time.Unix(timestamp, 0).UTC().Format(time.DateOnly)
	scope := date + "/" + service + "/tc3_request"
	toSign := tencentAlgorithm + "\n" + strconv.FormatInt(timestamp, 10) + "\n" + scope + "\n" + smsprovider.SHA256Hex([]byte(canonical.String()))
	key := hmacSHA256([]byte("TC3"+secretKey), date)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "tc3_request")
	return tencentAlgorithm + " Credential=" + secretID + "/" + scope + ", SignedHeaders=" + signed +
		", Signature=" + hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, msg string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}
