package verify

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

// AliyunSMSConfig is how an AliyunSMSSender reaches Alibaba Cloud SMS
// (阿里云短信服务).
type AliyunSMSConfig struct {
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
	Templates SMSTemplates
	// Endpoint is the API's root URL; "https://dysmsapi.aliyuncs.com" if
	// "". It must be https but on a loopback host (tests).
	Endpoint string
	// Client sends the requests; without one, a client with a 10-second
	// timeout that does not follow redirects and keeps Concurrency idle
	// connections to the endpoint.
	Client *http.Client
	// Concurrency is as in HTTPSMSConfig: DefaultSMSConcurrency if 0.
	Concurrency int
	// Now is the clock requests are dated by (the provider refuses one
	// more than 15 minutes off); time.Now if nil.
	Now func() time.Time
}

// AliyunSMSSender is an SMSSender over Alibaba Cloud SMS: it sends each
// message as the template its SMSTemplates give for the bizKey and locale,
// with the code as ${code} (a notice: the new number as ${mobile}), under
// the signature name. It is safe for concurrent use.
//
// It calls SendSms (version 2017-05-25) as an RPC-style request whose
// parameters are in the query, signed with signature V3
// (ACS3-HMAC-SHA256) as Alibaba Cloud's "V3 request structure and
// signature" documents it: it is a small client of its own, since the
// module proxy does not serve Alibaba Cloud's dysmsapi SDK module.
type AliyunSMSSender struct {
	endpoint  *url.URL
	keyID     string
	secret    string
	signName  string
	templates SMSTemplates
	client    *http.Client
	now       func() time.Time
}

var _ SMSSender = (*AliyunSMSSender)(nil)

// NewAliyunSMSSender checks cfg and returns a sender. It does not connect.
// A bizKey of SMSBizKeys without a template for the default locale is an
// error here, not at its first send.
func NewAliyunSMSSender(cfg AliyunSMSConfig) (*AliyunSMSSender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	u, _ := providerEndpoint("AliyunSMSConfig", c.Endpoint) // validate checked it
	s := &AliyunSMSSender{
		endpoint: u, keyID: c.AccessKeyID, secret: c.AccessKeySecret, signName: c.SignName,
		templates: c.Templates, client: c.Client, now: c.Now,
	}
	if s.client == nil {
		s.client = defaultSMSClient(c.Concurrency)
	}
	return s, nil
}

// withDefaults returns a copy of c with the defaults filled in and the
// templates copied, as the module's constructors all begin.
func (c *AliyunSMSConfig) withDefaults() *AliyunSMSConfig {
	out := *c
	if out.Endpoint == "" {
		out.Endpoint = aliyunEndpoint
	}
	if out.Concurrency == 0 {
		out.Concurrency = DefaultSMSConcurrency
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	out.SignName = strings.TrimSpace(out.SignName)
	out.Templates = out.Templates.withDefaults()
	return &out
}

// validate checks an AliyunSMSConfig that withDefaults filled in.
func (c *AliyunSMSConfig) validate() error {
	if c.AccessKeyID == "" || c.AccessKeySecret == "" || c.SignName == "" {
		return errors.New("verify: AliyunSMSConfig needs AccessKeyID, AccessKeySecret and SignName")
	}
	if c.Concurrency < 0 {
		return errors.New("verify: AliyunSMSConfig.Concurrency must not be negative")
	}
	if _, err := providerEndpoint("AliyunSMSConfig", c.Endpoint); err != nil {
		return err
	}
	return c.Templates.validate("AliyunSMSConfig")
}

// SendSMS asks Alibaba Cloud to send m. It returns nil when the answer is
// 200 with Code "OK", and otherwise an error: a number that is not E.164,
// or an *SMSError with the provider's code (isv.BUSINESS_LIMIT_CONTROL and
// Throttling.* are Retryable, as are 5xx answers and an unreachable
// endpoint; a refused AccessKey, signature name, template or number is
// not), wrapping ctx's error when ctx ended first. No error contains the
// code.
func (s *AliyunSMSSender) SendSMS(ctx context.Context, m SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("verify: SMS: %q is not an E.164 number", m.To)
	}
	id, value := s.templates.template(m)
	name := "code"
	if m.Code == "" {
		name = "mobile"
	}
	param, err := json.Marshal(map[string]string{name: value})
	if err != nil {
		return fmt.Errorf("verify: aliyun SMS: %w", err)
	}
	// Mainland numbers go with their 86 prefix, others with their country
	// code, in both cases without the "+".
	query := canonicalQuery(map[string]string{
		"PhoneNumbers": strings.TrimPrefix(m.To, "+"), "SignName": s.signName,
		"TemplateCode": id, "TemplateParam": string(param),
	})
	u := *s.endpoint
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return fmt.Errorf("verify: aliyun SMS: %w", err)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	headers := map[string]string{
		"host":                  u.Host,
		"x-acs-action":          aliyunAction,
		"x-acs-version":         aliyunVersion,
		"x-acs-date":            s.now().UTC().Format(aliyunDateLayout),
		"x-acs-signature-nonce": hex.EncodeToString(nonce[:]),
		"x-acs-content-sha256":  sha256Hex(nil),
	}
	for name, value := range headers {
		if name != "host" {
			req.Header.Set(name, value)
		}
	}
	req.Header.Set("Authorization", aliyunAuthorization(s.keyID, s.secret, http.MethodPost, "/", query, headers, nil))
	req.Header.Set("Accept", "application/json")
	status, reply, err := smsPost(s.client, req)
	if err != nil {
		return &SMSError{Provider: "aliyun", Retryable: true, Err: err}
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
	return &SMSError{
		Provider: "aliyun", Status: status, Code: a.Code, Message: providerExcerpt(a.Message, m), RequestID: a.RequestID,
		Retryable: status >= 500 || status == http.StatusTooManyRequests || a.Code == "isv.BUSINESS_LIMIT_CONTROL" ||
			a.Code == "Throttling" || strings.HasPrefix(a.Code, "Throttling.") || a.Code == "ServiceUnavailable" || a.Code == "InternalError",
	}
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
	canonical.WriteString("\n" + signed + "\n" + sha256Hex(body))
	toSign := aliyunAlgorithm + "\n" + sha256Hex([]byte(canonical.String()))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(toSign))
	return aliyunAlgorithm + " Credential=" + keyID + ",SignedHeaders=" + signed + ",Signature=" + hex.EncodeToString(mac.Sum(nil))
}
