package verifytest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// ProviderSMS is a message a fake template provider accepted.
type ProviderSMS struct {
	// To is the number as the provider got it: Aliyun's PhoneNumbers
	// ("8613800138000"), Tencent's PhoneNumberSet[0] ("+8613800138000").
	To string
	// SignName and TemplateID are the signature name and the template id
	// (Aliyun's TemplateCode, Tencent's TemplateId).
	SignName, TemplateID string
	// Params are the template's parameters: Aliyun's TemplateParam object
	// ({"code": "123456"}), Tencent's TemplateParamSet by position, "1"
	// for the first ({1} in the template).
	Params map[string]string
	// AppID is Tencent's SmsSdkAppId; "" for Aliyun.
	AppID string
}

// SMSProvider is a fake Alibaba Cloud or Tencent Cloud SMS API on a
// loopback httptest server, for tests of an aliyun.Sender or a
// tencent.Sender (packages under verify/sms) and of a host's wiring of them. It checks each
// request's signature by computing it again, with the algorithm the
// provider documents (written here apart from the senders' own), and
// answers a bad one as the provider does (Aliyun: 400
// SignatureDoesNotMatch; Tencent: AuthFailure.SignatureFailure). The
// Tencent fake refuses, as Tencent does for an account without enterprise
// verification, a template parameter of more than 12 characters
// (InvalidParameterValue.TemplateParameterLengthLimit). It accepts every
// other well-signed message, unless Refuse or RefuseWith says otherwise,
// and keeps it. It is safe for concurrent use.
type SMSProvider struct {
	// URL is the server's root, for the sender's Endpoint.
	URL string

	provider string // "aliyun" or "tencent"
	keyID    string
	secret   string

	mu       sync.Mutex
	msgs     []ProviderSMS
	bad      []string // why each refused signature was refused
	refuse   func(ProviderSMS) Refusal
	arrived  chan struct{} // closed at the next message
	requests int
}

// NewAliyunSMSProvider starts a fake Alibaba Cloud Dysmsapi that knows one
// AccessKey, and stops it when t ends.
func NewAliyunSMSProvider(t testing.TB, accessKeyID, accessKeySecret string) *SMSProvider {
	return startProvider(t, "aliyun", accessKeyID, accessKeySecret)
}

// NewTencentSMSProvider starts a fake Tencent Cloud SMS API that knows one
// API key, and stops it when t ends.
func NewTencentSMSProvider(t testing.TB, secretID, secretKey string) *SMSProvider {
	return startProvider(t, "tencent", secretID, secretKey)
}

func startProvider(t testing.TB, provider, keyID, secret string) *SMSProvider {
	t.Helper()
	p := &SMSProvider{provider: provider, keyID: keyID, secret: secret, arrived: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Refuse sets how the provider answers a well-signed message: f returns
// an HTTP status and a provider error code to refuse it, or 0 and "" to
// accept it; nil accepts every one. Status 0 with a code is the
// provider's usual refusal: Aliyun's 200 with that Code
// (isv.BUSINESS_LIMIT_CONTROL), Tencent's 200 with that Error.Code
// (RequestLimitExceeded). Tencent's status 200 with a code is a failure of
// the one number in SendStatusSet (LimitExceeded.PhoneNumberDailyLimit).
// Any other status (503) is answered with it, and the code if any.
func (p *SMSProvider) Refuse(f func(ProviderSMS) (status int, code string)) {
	if f == nil {
		p.RefuseWith(nil)
		return
	}
	p.RefuseWith(func(m ProviderSMS) Refusal {
		status, code := f(m)
		return Refusal{Status: status, Code: code}
	})
}

// Refusal is how a fake provider answers a message it refuses (see
// RefuseWith); the zero Refusal accepts the message.
type Refusal struct {
	// Status and Code are as Refuse's.
	Status int
	Code   string
	// Message is the provider's message with the code (Aliyun's Message,
	// Tencent's Error.Message or SendStatus Message); Code if "". Real
	// providers echo the number in some ("触发天级流控Permits:10",
	// "invalid mobile number 8613800138000").
	Message string
	// RetryAfter is the answer's Retry-After header, "" for none.
	RetryAfter string
}

// RefuseWith is Refuse with the whole answer: f returns how to refuse a
// well-signed message, or the zero Refusal to accept it; nil accepts
// every one.
func (p *SMSProvider) RefuseWith(f func(ProviderSMS) Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = f
}

// tencentParamLimit is the most characters Tencent Cloud takes in one
// template parameter from an account without enterprise verification.
const tencentParamLimit = 12

// Messages returns the messages accepted so far, in order.
func (p *SMSProvider) Messages() []ProviderSMS {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProviderSMS(nil), p.msgs...)
}

// BadSignatures returns why each request whose signature did not check
// was refused; a test that expects none asserts it is empty.
func (p *SMSProvider) BadSignatures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bad...)
}

// Await waits until a message accepted to the number (as in
// ProviderSMS.To) satisfies match (nil: any), and returns the last such
// one; it returns ctx's error if ctx ends first.
func (p *SMSProvider) Await(ctx context.Context, to string, match func(ProviderSMS) bool) (ProviderSMS, error) {
	for {
		p.mu.Lock()
		next := p.arrived
		for i := len(p.msgs) - 1; i >= 0; i-- {
			if m := p.msgs[i]; m.To == to && (match == nil || match(m)) {
				p.mu.Unlock()
				return m, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-next:
		case <-ctx.Done():
			return ProviderSMS{}, fmt.Errorf("no message to %s: %w", to, ctx.Err())
		}
	}
}

func (p *SMSProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	var m ProviderSMS
	if p.provider == "aliyun" {
		m, err = p.aliyunRequest(r, body)
	} else {
		m, err = p.tencentRequest(r, body)
	}
	p.mu.Lock()
	p.requests++
	reqID := "fake-" + strconv.Itoa(p.requests)
	var ref Refusal
	switch {
	case err != nil:
		p.bad = append(p.bad, err.Error())
	case p.provider == "tencent" && tencentTooLong(m) != "":
		ref = Refusal{Code: "InvalidParameterValue.TemplateParameterLengthLimit", Message: tencentTooLong(m)}
	case p.refuse != nil:
		ref = p.refuse(m)
	}
	if err == nil && ref.Code == "" && (ref.Status == 0 || ref.Status == http.StatusOK) {
		p.msgs = append(p.msgs, m)
		close(p.arrived)
		p.arrived = make(chan struct{})
	}
	p.mu.Unlock()
	status, code, msg := ref.Status, ref.Code, ref.Message
	if msg == "" {
		msg = code
	}
	w.Header().Set("Content-Type", "application/json")
	if ref.RetryAfter != "" {
		w.Header().Set("Retry-After", ref.RetryAfter)
	}
	switch {
	case err != nil && p.provider == "aliyun":
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"Code": "SignatureDoesNotMatch", "Message": err.Error(), "RequestId": reqID})
	case err != nil:
		writeJSON(w, tencentAnswer(reqID, "AuthFailure.SignatureFailure", err.Error(), nil))
	case p.provider == "aliyun":
		if status == 0 {
			status = http.StatusOK
		}
		if code == "" && status == http.StatusOK {
			code, msg = "OK", "OK"
		}
		w.WriteHeader(status)
		writeJSON(w, map[string]string{"Code": code, "Message": msg, "RequestId": reqID, "BizId": reqID})
	case status == 0 && code != "":
		writeJSON(w, tencentAnswer(reqID, code, msg, nil))
	case status == 0 || status == http.StatusOK:
		sendCode := "Ok"
		if code != "" {
			sendCode = code
		} else {
			msg = "send success"
		}
		writeJSON(w, tencentAnswer(reqID, "", "", []map[string]any{{
			"SerialNo": reqID, "PhoneNumber": m.To, "Fee": 1, "SessionContext": "", "Code": sendCode, "Message": msg, "IsoCode": "CN",
		}}))
	default:
		w.WriteHeader(status)
		writeJSON(w, tencentAnswer(reqID, code, msg, nil))
	}
}

// tencentTooLong says which of m's template parameters is longer than
// Tencent takes from an account without enterprise verification, as
// Tencent's message says it; "" if none is.
func tencentTooLong(m ProviderSMS) string {
	for i := 1; i <= len(m.Params); i++ {
		if v := m.Params[strconv.Itoa(i)]; utf8.RuneCountInString(v) > tencentParamLimit {
			return fmt.Sprintf("template parameter %d has %d characters, more than the %d an account without enterprise verification may send",
				i, utf8.RuneCountInString(v), tencentParamLimit)
		}
	}
	return ""
}

func writeJSON(w io.Writer, v any) {
	_ = json.NewEncoder(w).Encode(v) //nolint:errcheck // the client's loss
}

func tencentAnswer(reqID, code, msg string, statuses []map[string]any) map[string]any {
	resp := map[string]any{"RequestId": reqID}
	if code != "" {
		resp["Error"] = map[string]string{"Code": code, "Message": msg}
	} else {
		resp["SendStatusSet"] = statuses
	}
	return map[string]any{"Response": resp}
}

// aliyunRequest checks a SendSms request's V3 signature (ACS3-HMAC-SHA256)
// and reads its message.
func (p *SMSProvider) aliyunRequest(r *http.Request, body []byte) (ProviderSMS, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		return ProviderSMS{}, fmt.Errorf("%s %s, want POST /", r.Method, r.URL.Path)
	}
	if a, v := r.Header.Get("x-acs-action"), r.Header.Get("x-acs-version"); a != "SendSms" || v != "2017-05-25" {
		return ProviderSMS{}, fmt.Errorf("action %q version %q, want SendSms 2017-05-25", a, v)
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", r.Header.Get("x-acs-date")); err != nil {
		return ProviderSMS{}, fmt.Errorf("x-acs-date %q is not yyyy-MM-ddTHH:mm:ssZ", r.Header.Get("x-acs-date"))
	}
	if r.Header.Get("x-acs-signature-nonce") == "" {
		return ProviderSMS{}, errors.New("no x-acs-signature-nonce")
	}
	if err := checkACS3(r, body, p.keyID, p.secret); err != nil {
		return ProviderSMS{}, err
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return ProviderSMS{}, err
	}
	m := ProviderSMS{To: query.Get("PhoneNumbers"), SignName: query.Get("SignName"), TemplateID: query.Get("TemplateCode")}
	if err := json.Unmarshal([]byte(query.Get("TemplateParam")), &m.Params); err != nil && query.Get("TemplateParam") != "" {
		return ProviderSMS{}, fmt.Errorf("TemplateParam: %w", err)
	}
	return m, nil
}

// checkACS3 checks r's signature V3 (ACS3-HMAC-SHA256) under the
// AccessKey keyID, secret, computing it again as Alibaba Cloud documents.
func checkACS3(r *http.Request, body []byte, keyID, secret string) error {
	payloadHash := hexSHA256(body)
	if got := r.Header.Get("x-acs-content-sha256"); got != payloadHash {
		return fmt.Errorf("x-acs-content-sha256 %q is not the body's hash", got)
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "ACS3-HMAC-SHA256 ")
	if !ok {
		return errors.New("the Authorization header is not ACS3-HMAC-SHA256")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	if fields["Credential"] != keyID {
		return fmt.Errorf("unknown AccessKey %q", fields["Credential"])
	}
	// Every header named host, content-type or x-acs-* is signed.
	headers := map[string]string{"host": r.Host}
	for name, values := range r.Header {
		lower := strings.ToLower(name)
		if lower == "content-type" || strings.HasPrefix(lower, "x-acs-") {
			headers[lower] = values[0]
		}
	}
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	sort.Strings(names)
	if signed := strings.Join(names, ";"); fields["SignedHeaders"] != signed {
		return fmt.Errorf("SignedHeaders %q, want %q", fields["SignedHeaders"], signed)
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = rfc3986(k) + "=" + rfc3986(query.Get(k))
	}
	canonical := r.Method + "\n" + r.URL.EscapedPath() + "\n" + strings.Join(pairs, "&") + "\n"
	for _, n := range names {
		canonical += n + ":" + strings.TrimSpace(headers[n]) + "\n"
	}
	canonical += "\n" + strings.Join(names, ";") + "\n" + payloadHash
	if want := hex.EncodeToString(mac([]byte(secret), "ACS3-HMAC-SHA256\n"+hexSHA256([]byte(canonical)))); !hmac.Equal([]byte(fields["Signature"]), []byte(want)) {
		return errors.New("the signature does not match")
	}
	return nil
}

// rfc3986 encodes as Alibaba Cloud's documentation suggests from a form
// encoder: + becomes %20, * %2A, and %7E ~ again.
func rfc3986(s string) string {
	return strings.NewReplacer("+", "%20", "*", "%2A", "%7E", "~").Replace(url.QueryEscape(s))
}

// tencentRequest checks a SendSms request's TC3-HMAC-SHA256 signature and
// reads its message.
func (p *SMSProvider) tencentRequest(r *http.Request, body []byte) (ProviderSMS, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.URL.RawQuery != "" {
		return ProviderSMS{}, fmt.Errorf("%s %s, want POST / without a query", r.Method, r.URL)
	}
	if a, v := r.Header.Get("X-TC-Action"), r.Header.Get("X-TC-Version"); a != "SendSms" || v != "2021-01-11" {
		return ProviderSMS{}, fmt.Errorf("action %q version %q, want SendSms 2021-01-11", a, v)
	}
	if r.Header.Get("X-TC-Region") == "" {
		return ProviderSMS{}, errors.New("no X-TC-Region")
	}
	if err := checkTC3(r, body, p.keyID, p.secret, "sms"); err != nil {
		return ProviderSMS{}, err
	}
	var req struct {
		PhoneNumberSet   []string
		SmsSdkAppId      string
		SignName         string
		TemplateId       string
		TemplateParamSet []string
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return ProviderSMS{}, fmt.Errorf("body: %w", err)
	}
	if len(req.PhoneNumberSet) != 1 {
		return ProviderSMS{}, fmt.Errorf("PhoneNumberSet has %d numbers; the fake takes one", len(req.PhoneNumberSet))
	}
	m := ProviderSMS{To: req.PhoneNumberSet[0], SignName: req.SignName, TemplateID: req.TemplateId, AppID: req.SmsSdkAppId, Params: map[string]string{}}
	for i, v := range req.TemplateParamSet {
		m.Params[strconv.Itoa(i+1)] = v
	}
	return m, nil
}

// checkTC3 checks r's TC3-HMAC-SHA256 signature under the key secretID,
// secretKey for service, computing it again as Tencent Cloud documents.
func checkTC3(r *http.Request, body []byte, keyID, secret, service string) error {
	ts, err := strconv.ParseInt(r.Header.Get("X-TC-Timestamp"), 10, 64)
	if err != nil {
		return fmt.Errorf("X-TC-Timestamp %q", r.Header.Get("X-TC-Timestamp"))
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "TC3-HMAC-SHA256 ")
	if !ok {
		return errors.New("the Authorization header is not TC3-HMAC-SHA256")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	date := time.Unix(ts, 0).UTC().Format("2006-01-02")
	if want := keyID + "/" + date + "/" + service + "/tc3_request"; fields["Credential"] != want {
		return fmt.Errorf("credential %q, want %q", fields["Credential"], want)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !sort.StringsAreSorted(signed) || !contains(signed, "content-type") || !contains(signed, "host") {
		return fmt.Errorf("SignedHeaders %q: sorted, with content-type and host", fields["SignedHeaders"])
	}
	canonical := r.Method + "\n" + r.URL.EscapedPath() + "\n" + r.URL.RawQuery + "\n"
	for _, n := range signed {
		v := r.Header.Get(n)
		if n == "host" {
			v = r.Host
		}
		canonical += n + ":" + strings.ToLower(strings.TrimSpace(v)) + "\n"
	}
	canonical += "\n" + fields["SignedHeaders"] + "\n" + hexSHA256(body)
	toSign := "TC3-HMAC-SHA256\n" + strconv.FormatInt(ts, 10) + "\n" + date + "/" + service + "/tc3_request\n" + hexSHA256([]byte(canonical))
	key := mac([]byte("TC3"+secret), date)
	key = mac(key, service)
	key = mac(key, "tc3_request")
	if want := hex.EncodeToString(mac(key, toSign)); !hmac.Equal([]byte(fields["Signature"]), []byte(want)) {
		return errors.New("the signature does not match")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}
