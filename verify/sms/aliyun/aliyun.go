// Package aliyun is a verify.SMSSender over Alibaba Cloud SMS
// (阿里云短信服务), a template provider: it sends approved templates, not
// the Verifier's text.
//
// # Overview
//
// New takes a RAM user's AccessKey allowed dysmsapi:SendSms, the approved
// signature name, and an sms.Templates table of approved template codes
// ("SMS_123456789") by bizKey and locale: a code's template has the
// parameter ${code}, a notice's ${mobile}. Requests are signed with
// signature V3 (ACS3-HMAC-SHA256) and dated by Config.Now; Alibaba Cloud
// refuses one more than 15 minutes off.
//
// # Errors
//
// A refusal is a *sms.Error with Provider "aliyun" and Alibaba
// Cloud's code, classified as Sender.SendSMS lists: the per-number limits
// of a minute or an hour (isv.BUSINESS_LIMIT_CONTROL) and the API
// gateway's Throttling are throttled, system errors retryable, the day's
// and month's limits and every refusal of the account, signature,
// template or number final.
//
// # Testing
//
// verifytest.NewAliyunSMSProvider is a fake of the API on loopback that
// checks each request's signature.
package aliyun

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smsprovider"
	"github.com/deskkit/deskkit/verify/sms"
)

// Alibaba Cloud SMS's API: Dysmsapi's SendSms, version 2017-05-25, signed
// with signature V3.
const (
	aliyunEndpoint   = "https://dysmsapi.aliyuncs.com"
	aliyunAction     = "SendSms"
	aliyunVersion    = "2017-05-25"
	aliyunAlgorithm  = "ACS3-HMAC-SHA256"
	aliyunDateLayout = "2006-01-02T15:04:05Z"
)

// Config is how a Sender reaches Alibaba Cloud SMS
// (阿里云短信服务).
type Config struct {
	// AccessKeyID and AccessKeySecret are a RAM user's AccessKey, allowed
	// dysmsapi:SendSms. Required.
	AccessKeyID     string
	AccessKeySecret string
	// SignName is the approved signature name (签名名称) every message
	// carries. Required.
	SignName string
	// Templates maps bizKeys and locales to approved template codes
	// ("SMS_123456789"). A code's template has the parameter ${code}; a
	// notice's has ${mobile}, the new number masked.
	Templates sms.Templates
	// Endpoint is the API's root URL; "https://dysmsapi.aliyuncs.com" if
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
	// more than 15 minutes off); time.Now if nil.
	Now func() time.Time
}

// Sender is a verify.SMSSender over Alibaba Cloud SMS: it sends each
// message as the template its sms.Templates give for the bizKey and locale,
// with the code as ${code} (a notice: the new number as ${mobile}), under
// the signature name. It is safe for concurrent use.
//
// It calls SendSms (version 2017-05-25) as an RPC-style request whose
// parameters are in the query, signed with signature V3
// (ACS3-HMAC-SHA256) as Alibaba Cloud's "V3 request structure and
// signature" documents it, pinned by deskkit's tests to the signing
// example Alibaba Cloud publishes: it is a small client of its own, since
// the module proxy does not serve Alibaba Cloud's dysmsapi SDK module, and
// a sender needs one call of it. Numbers the provider echoes are masked
// in its errors, as codes are cut out.
type Sender struct {
	endpoint  *url.URL
	keyID     string
	secret    string
	signName  string
	templates sms.Templates
	client    *http.Client
	now       func() time.Time
}

var _ verify.SMSSender = (*Sender)(nil)

// New checks cfg and returns a sender. It does not connect.
// A bizKey of verify.SMSBizKeys without a template for the default locale is an
// error here, not at its first send.
func New(cfg Config) (*Sender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	u, _ := smsprovider.Endpoint("aliyun: Config", c.Endpoint) // validate checked it
	s := &Sender{
		endpoint: u, keyID: c.AccessKeyID, secret: c.AccessKeySecret, signName: c.SignName,
		templates: c.Templates, client: c.Client, now: c.Now,
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
		out.Endpoint = aliyunEndpoint
	}
	if out.Concurrency == 0 {
		out.Concurrency = sms.DefaultConcurrency
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	out.SignName = strings.TrimSpace(out.SignName)
	out.Templates = smsprovider.WithDefaults(out.Templates)
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.AccessKeyID == "" || c.AccessKeySecret == "" || c.SignName == "" {
		return errors.New("aliyun: Config needs AccessKeyID, AccessKeySecret and SignName")
	}
	if c.Concurrency < 0 {
		return errors.New("aliyun: Config.Concurrency must not be negative")
	}
	if _, err := smsprovider.Endpoint("aliyun: Config", c.Endpoint); err != nil {
		return err
	}
	return smsprovider.CheckTemplates(c.Templates, "aliyun: Config")
}

// SendSMS asks Alibaba Cloud to send m. It returns nil when the answer is
// 200 with Code "OK", and otherwise an error: a number that is not E.164,
// or a *sms.Error with the provider's code, classified by a table of the
// codes Alibaba Cloud's documentation lists: isp.SYSTEM_ERROR,
// InternalError, ServiceUnavailable, 5xx answers and an unreachable
// endpoint are Retryable; isv.BUSINESS_LIMIT_CONTROL (a per-number limit
// a minute or an hour, by its message) and Throttling are Throttled and
// Retryable; the day's and month's limits (isv.DAY_LIMIT_CONTROL,
// isv.MONTH_LIMIT_CONTROL, isv.BUSINESS_LIMIT_CONTROL for a day) and a
// refused AccessKey, signature name, template or number are neither. It
// wraps ctx's error when ctx ended first. No error contains the code, or
// the number unmasked.
func (s *Sender) SendSMS(ctx context.Context, m verify.SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("aliyun: %q is not an E.164 number", m.To)
	}
	id, value := smsprovider.Template(s.templates, m)
	name := "code"
	if m.Code == "" {
		name = "mobile"
	}
	param, err := json.Marshal(map[string]string{name: value})
	if err != nil {
		return fmt.Errorf("aliyun: %w", err)
	}
	// Mainland numbers go with their 86 prefix, others with their country
	// code, in both cases without the "+".
	query := smsprovider.CanonicalQuery(map[string]string{
		"PhoneNumbers": strings.TrimPrefix(m.To, "+"), "SignName": s.signName,
		"TemplateCode": id, "TemplateParam": string(param),
	})
	u := *s.endpoint
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return fmt.Errorf("aliyun: %w", err)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	headers := map[string]string{
		"host":                  u.Host,
		"x-acs-action":          aliyunAction,
		"x-acs-version":         aliyunVersion,
		"x-acs-date":            s.now().UTC().Format(aliyunDateLayout),
		"x-acs-signature-nonce": hex.EncodeToString(nonce[:]),
		"x-acs-content-sha256":  smsprovider.SHA256Hex(nil),
	}
	for name, value := range headers {
		if name != "host" {
			req.Header.Set(name, value)
		}
	}
	req.Header.Set("Authorization", aliyunAuthorization(s.keyID, s.secret, http.MethodPost, "/", query, headers, nil))
	req.Header.Set("Accept", "application/json")
	status, reply, retryAfter, err := smsprovider.Post(s.client, req)
	if err != nil {
		return &sms.Error{Provider: "aliyun", Retryable: true, Err: err}
	}
	var a struct {
		Code      string `json:"Code"`
		Message   string `json:"Message"`
		RequestID string `json:"RequestId"`
	}
	if json.Unmarshal(reply, &a) != nil {
		a.Code, a.Message = "", string(reply)
	}
	if status == http.StatusOK && a.Code == "OK" {
		return nil
	}
	e := &sms.Error{Provider: "aliyun", Status: status, Code: a.Code, Message: smsprovider.Excerpt(a.Message, m), RequestID: a.RequestID}
	c, known := codes[a.Code]
	if a.Code == "isv.BUSINESS_LIMIT_CONTROL" {
		c = aliyunBusinessLimit(a.Message)
	}
	smsprovider.Classify(e, c, known, smsprovider.ParseRetryAfter(retryAfter, s.now()))
	return e
}

// codes classifies the codes SendSms answers, as Alibaba Cloud's
// "API错误码" of SMS documents them
// (https://help.aliyun.com/zh/sms/developer-reference/api-error-codes),
// and those of its API gateway ("错误代码表", the common client and server
// errors: Throttling, InternalError, ServiceUnavailable, ...). A code not
// listed is taken by the HTTP status: a 5xx retryable, a 429 throttled,
// any other final.
var codes = map[string]smsprovider.Class{
	// "系统错误": the documentation's answer is to call again.
	"isp.SYSTEM_ERROR": smsprovider.Retry,
	// "业务限流": the per-number frequency limits (by default, for codes
	// under one signature, 1 a minute, 5 an hour, 10 a day); which one,
	// the message says (aliyunBusinessLimit).
	"isv.BUSINESS_LIMIT_CONTROL": smsprovider.Throttled,
	// "触发日发送限额", "触发月发送限额": the account's total for the day
	// or the month, set in the console. It clears at the next day or
	// month, past the notices' schedule and any client's patience: final,
	// as Tencent's LimitExceeded.AppDailyLimit is.
	"isv.DAY_LIMIT_CONTROL":   smsprovider.Final,
	"isv.MONTH_LIMIT_CONTROL": smsprovider.Final,
	// Refusals of the account, the signature, the template or the number,
	// each to be fixed by a person.
	"isp.RAM_PERMISSION_DENY":           smsprovider.Final,
	"isv.OUT_OF_SERVICE":                smsprovider.Final, // "业务停机": the balance is used up
	"isv.AMOUNT_NOT_ENOUGH":             smsprovider.Final,
	"isv.PRODUCT_UN_SUBSCRIPT":          smsprovider.Final,
	"isv.PRODUCT_UNSUBSCRIBE":           smsprovider.Final,
	"isv.ACCOUNT_NOT_EXISTS":            smsprovider.Final,
	"isv.ACCOUNT_ABNORMAL":              smsprovider.Final,
	"isv.SMS_SIGNATURE_SCENE_ILLEGAL":   smsprovider.Final,
	"isv.SMS_SIGNATURE_ILLEGAL":         smsprovider.Final,
	"isv.SMS_SIGN_ILLEGAL":              smsprovider.Final,
	"isv.SIGN_STATE_ILLEGAL":            smsprovider.Final,
	"isv.EXTEND_CODE_ERROR":             smsprovider.Final,
	"isv.SMS_TEMPLATE_ILLEGAL":          smsprovider.Final,
	"isv.SMS_CONTENT_ILLEGAL":           smsprovider.Final,
	"isv.TEMPLATE_MISSING_PARAMETERS":   smsprovider.Final,
	"isv.INVALID_PARAMETERS":            smsprovider.Final,
	"isv.INVALID_JSON_PARAM":            smsprovider.Final,
	"isv.PARAM_LENGTH_LIMIT":            smsprovider.Final,
	"isv.PARAM_NOT_SUPPORT_URL":         smsprovider.Final,
	"isv.BLACK_KEY_CONTROL_LIMIT":       smsprovider.Final,
	"isv.MOBILE_NUMBER_ILLEGAL":         smsprovider.Final,
	"isv.MOBILE_COUNT_OVER_LIMIT":       smsprovider.Final,
	"isv.DOMESTIC_NUMBER_NOT_SUPPORTED": smsprovider.Final,
	"isv.DENY_IP_RANGE":                 smsprovider.Final,
	// The API gateway: its own throttling of calls ("Request was denied
	// due to request throttling"; Throttling.User, Throttling.Api for a
	// user's or an API's flow control) and failures inside.
	"Throttling":         smsprovider.Throttled,
	"Throttling.User":    smsprovider.Throttled,
	"Throttling.Api":     smsprovider.Throttled,
	"InternalError":      smsprovider.Retry,
	"ServiceUnavailable": smsprovider.Retry,
	// The request itself: a bad key or signature, a clock off by more
	// than 15 minutes, a nonce used twice (each request has a new one).
	"SignatureDoesNotMatch":       smsprovider.Final,
	"IncompleteSignature":         smsprovider.Final,
	"InvalidAccessKeyId.NotFound": smsprovider.Final,
	"InvalidAccessKeyId.Inactive": smsprovider.Final,
	"InvalidTimeStamp.Expired":    smsprovider.Final,
	"SignatureNonceUsed":          smsprovider.Retry,
	"Forbidden.RAM":               smsprovider.Final,
	"Forbidden.RiskControl":       smsprovider.Final,
	"Forbidden.UserVerification":  smsprovider.Final,
	"MissingParameter":            smsprovider.Final,
	"InvalidParameter":            smsprovider.Final,
}

// aliyunBusinessLimit is the class of an isv.BUSINESS_LIMIT_CONTROL by
// its message, which names the limit hit: "触发分钟级流控Permits:1" (a
// minute), "触发小时级流控Permits:5" (an hour), "触发天级流控Permits:10"
// (a day, which does not clear within the notices' schedule: final). A
// message that names none is a throttle of sms.DefaultRetryAfter.
func aliyunBusinessLimit(msg string) smsprovider.Class {
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "分钟级") || strings.Contains(lower, "minute"):
		return smsprovider.Class{Retryable: true, Throttled: true, Wait: time.Minute}
	case strings.Contains(msg, "小时级") || strings.Contains(lower, "hour"):
		return smsprovider.Class{Retryable: true, Throttled: true, Wait: time.Hour}
	case strings.Contains(msg, "天级") || strings.Contains(lower, "day"):
		return smsprovider.Final
	}
	return smsprovider.Throttled
}

// aliyunAuthorization is the Authorization header of signature V3: the
// canonical request (method, URI, the canonical query, the headers named
// host, content-type and x-acs-* in lower case with trimmed values, sorted,
// the list of their names, the body's SHA-256) hashed into the string to
// sign, "ACS3-HMAC-SHA256\n" + hash, whose HMAC-SHA256 under the secret
// is the signature. headers are lower-case names; x-acs-content-sha256
// among them must be the body's hash.
func aliyunAuthorization(keyID, secret, method, uri, query string, headers map[string]string, body []byte) string {
	names := make([]string, 0, len(headers))
	for n := range headers {
		if n == "host" || n == "content-type" || strings.HasPrefix(n, "x-acs-") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var canonical strings.Builder
	canonical.WriteString(method + "\n" + uri + "\n" + query + "\n")
	for _, n := range names {
		canonical.WriteString(n + ":" + strings.TrimSpace(headers[n]) + "\n")
	}
	signed := strings.Join(names, ";")
	canonical.WriteString("\n" + signed + "\n" + smsprovider.SHA256Hex(body))
	toSign := aliyunAlgorithm + "\n" + smsprovider.SHA256Hex([]byte(canonical.String()))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(toSign))
	return aliyunAlgorithm + " Credential=" + keyID + ",SignedHeaders=" + signed + ",Signature=" + hex.EncodeToString(mac.Sum(nil))
}
