package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/verifytest"
)

var errGatewayDown = errors.New("gateway down")

// errThrottled is a template provider's throttle of a message, with its
// wait.
var errThrottled = &sms.Error{Provider: "aliyun", Status: 200, Code: "isv.BUSINESS_LIMIT_CONTROL", Message: "触发分钟级流控Permits:1",
	Retryable: true, Throttled: true, RetryAfter: 42 * time.Second}

// The addresses of the verify fixture, all in tenant 1 ("Acme").
const (
	aliceMobile = "+8613800138000" // alice's; she has alice@example.com too
	bobMobile   = "+8613900139000" // bob's; he has no e-mail address
	adminEmail  = "admin@example.com"
	aliceEmail  = "alice@example.com"
	freeMobile  = "+8613700137000" // nobody's
	freeEmail   = "new@example.com"
)

// The users of tenant 1 in the directory, one for each token.
var (
	adminUser = verify.User{ID: admin.UserID, TenantID: 1, Username: "admin", Email: adminEmail, Gender: "UNKNOWN"}
	aliceUser = verify.User{ID: alice.UserID, TenantID: 1, Username: "alice", FirstName: "Alice", LastName: "Liddell", FullName: "Alice Liddell",
		Mobile: aliceMobile, Country: "CN", Email: aliceEmail, Gender: "FEMALE"}
	bobUser   = verify.User{ID: bob.UserID, TenantID: 1, Username: "bob", Mobile: bobMobile, Country: "CN", Gender: "MALE"}
	carolUser = verify.User{ID: carol.UserID, TenantID: 1, Username: "carol"}
	daveUser  = verify.User{ID: dave.UserID, TenantID: 1, Username: "dave"}
)

// verifyHost is what a host gives the Verifier: the users of tenant 1 in a
// fake directory (carol and dave have no addresses), a sink for messages
// and a clock.
type verifyHost struct {
	v     *verify.Verifier
	dir   *verifytest.Directory
	sink  *verifytest.Sink
	clock *clocktest.Clock
}

// newVerifyHost returns a Verifier over db, migrated, with its fakes.
func newVerifyHost(t testing.TB, db *bun.DB) *verifyHost {
	t.Helper()
	if err := verify.Migrate(context.Background(), db); err != nil {
		t.Fatalf("verify.Migrate: %v", err)
	}
	h := &verifyHost{dir: verifytest.NewDirectory(), sink: &verifytest.Sink{}, clock: clocktest.New(now)}
	h.dir.AddTenant(1, "Acme")
	for _, u := range []verify.User{adminUser, aliceUser, bobUser, carolUser, daveUser} {
		h.dir.Add(u)
	}
	v, err := verify.New(db, h.dir, h.sink, h.sink, []byte("0123456789abcdef0123456789abcdef-httpapi-test"),
		&verify.Config{Now: h.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("verify.New: %v", err)
	}
	h.v = v
	return h
}

// sendSMS sends p a code for bizKey to mobile (E.164) through the Verifier
// and returns it.
func (h *verifyHost) sendSMS(t testing.TB, p deskkit.Principal, bizKey verify.BizKey, mobile string) string {
	t.Helper()
	if _, err := h.v.SendSMS(context.Background(), p, verify.SMSSend{BizKey: bizKey, Mobile: mobile, Country: "CN"}); err != nil {
		t.Fatalf("send %s to %s: %v", bizKey, mobile, err)
	}
	return h.sentCode(t, mobile)
}

// sendEmail sends p a code for bizKey to email through the Verifier and
// returns it.
func (h *verifyHost) sendEmail(t testing.TB, p deskkit.Principal, bizKey verify.BizKey, email string) string {
	t.Helper()
	if _, err := h.v.SendEmail(context.Background(), p, verify.EmailSend{BizKey: bizKey, ToAddress: [][]string{{email}}}); err != nil {
		t.Fatalf("send %s to %s: %v", bizKey, email, err)
	}
	return h.sentCode(t, email)
}

func (h *verifyHost) sentCode(t testing.TB, address string) string {
	t.Helper()
	code := h.sink.LastCode(address)
	if len(code) != verify.CodeDigits {
		t.Fatalf("code %q sent to %s is not %d digits", code, address, verify.CodeDigits)
	}
	return code
}

// checkSMS checks a code through the Verifier and returns the link secret.
func (h *verifyHost) checkSMS(t testing.TB, p deskkit.Principal, bizKey verify.BizKey, mobile, code string) string {
	t.Helper()
	link, err := h.v.CheckSMS(context.Background(), p, verify.SMSCheck{BizKey: bizKey, Mobile: mobile, Country: "CN", Code: code})
	if err != nil {
		t.Fatalf("check %s code for %s: %v", bizKey, mobile, err)
	}
	return link.Secret
}

// checkEmail checks a code through the Verifier and returns the link
// secret.
func (h *verifyHost) checkEmail(t testing.TB, p deskkit.Principal, bizKey verify.BizKey, email, code string) string {
	t.Helper()
	link, err := h.v.CheckEmail(context.Background(), p, verify.EmailCheck{BizKey: bizKey, Email: email, Code: code})
	if err != nil {
		t.Fatalf("check %s code for %s: %v", bizKey, email, err)
	}
	return link.Secret
}

// wrongChecks enters n wrong codes for address: a mobile number in E.164,
// or an e-mail address.
func (h *verifyHost) wrongChecks(t testing.TB, p deskkit.Principal, bizKey verify.BizKey, address, code string, n int) {
	t.Helper()
	for range n {
		var err error
		if strings.HasPrefix(address, "+") {
			_, err = h.v.CheckSMS(context.Background(), p, verify.SMSCheck{BizKey: bizKey, Mobile: address, Country: "CN", Code: wrongCode(code)})
		} else {
			_, err = h.v.CheckEmail(context.Background(), p, verify.EmailCheck{BizKey: bizKey, Email: address, Code: wrongCode(code)})
		}
		if !errors.Is(err, verify.ErrCodeWrong) {
			t.Fatalf("wrong %s code for %s: %v, want ErrCodeWrong", bizKey, address, err)
		}
	}
}

// wrongCode returns a code that is not code.
func wrongCode(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}

// detailOf is u as getCurrentUser shows it.
func detailOf(u verify.User) verify.Detail {
	d := verify.Detail{
		ID: u.ID, TenantID: u.TenantID, TenantName: "Acme", Username: u.Username,
		FirstName: u.FirstName, LastName: u.LastName, FullName: u.FullName,
		Mobile: u.Mobile, Country: u.Country, Email: u.Email, Landline: u.Landline,
		Avatar: u.Avatar, Title: u.Title, Gender: u.Gender, Address: u.Address,
	}
	if u.Mobile != "" {
		d.ITC = verify.ITC(u.Country)
	}
	return d
}

// answer is a response as the verify tests read it.
type answer struct {
	status int
	header http.Header
	code   string // the envelope's
	msg    string
	key    string // ext.eKey
	data   json.RawMessage
	raw    []byte
}

// call sends a request with a JSON body (none if "") and decodes the
// envelope it answers.
func (e *env) call(t *testing.T, method, target, token, body string) answer {
	t.Helper()
	resp, raw := e.do(t, method, target, token, body)
	var env struct {
		Code string          `json:"code"`
		Msg  string          `json:"msg"`
		Data json.RawMessage `json:"data"`
		Ext  map[string]any  `json:"ext"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: body is not an envelope: %v: %s", method, target, err, raw)
	}
	key, _ := env.Ext["eKey"].(string)
	return answer{status: resp.StatusCode, header: resp.Header, code: env.Code, msg: env.Msg, key: key, data: env.Data, raw: raw}
}

// envelopeCodes is the envelope code of each error key, as the error table
// has it.
var envelopeCodes = map[string]string{
	httpapi.KeyValidation: "E0", httpapi.KeyUnauthorized: "E0",
	httpapi.KeyNotFound: "E1", httpapi.KeyConflict: "E1",
	httpapi.KeyTooManyRequests: "E3", httpapi.KeyServiceUnavailable: "E2",
	httpapi.KeyCodeWrong: "E1", httpapi.KeyCodeExpired: "E1", httpapi.KeyCodeMissing: "E1",
	httpapi.KeyCodeExhausted: "E3", httpapi.KeyTooManyFailures: "E3", httpapi.KeySendFailed: "E2", httpapi.KeySendThrottled: "E2",
	httpapi.KeyAddressTaken: "E1", httpapi.KeyAlreadyBound: "E1", httpapi.KeyNotBound: "E1",
	httpapi.KeyLinkSecretRefused: "E1",
	httpapi.KeyChannelNameTaken:  "E1", httpapi.KeyChannelQuotaExceeded: "E3",
	httpapi.KeyChannelAddressBlocked: "E1", httpapi.KeyChannelTestFailed: "E2",
	httpapi.KeyMethodNotAllowed: "E0", httpapi.KeyRouteNotFound: "E0",
}

// wantError checks an error answer: status, envelope code, key, and for
// a 400 param_validation_error that msg names field first.
func (a answer) wantError(t *testing.T, status int, key, field string) {
	t.Helper()
	if a.status != status || a.key != key || a.code != envelopeCodes[key] || string(a.data) != "null" {
		t.Errorf("got %d %s %s, want %d %s %s; body %s", a.status, a.code, a.key, status, envelopeCodes[key], key, a.raw)
	}
	if field != "" && !strings.HasPrefix(a.msg, field+" ") {
		t.Errorf("msg %q does not name %s", a.msg, field)
	}
}

// wantOK checks a success and decodes its data into v.
func (a answer) wantOK(t *testing.T, v any) {
	t.Helper()
	if a.status != http.StatusOK || a.code != "S" {
		t.Fatalf("got %d %s %s, want 200 S; body %s", a.status, a.code, a.key, a.raw)
	}
	if err := json.Unmarshal(a.data, v); err != nil {
		t.Fatalf("data %s: %v", a.data, err)
	}
}

// wantRetryAfter checks the Retry-After header.
func (a answer) wantRetryAfter(t *testing.T, want time.Duration) {
	t.Helper()
	if got, want := a.header.Get("Retry-After"), strconv.Itoa(int(want/time.Second)); got != want {
		t.Errorf("Retry-After %q, want %q; body %s", got, want, a.raw)
	}
}

// The current user's routes.
const (
	currentPath = "/api/v1/user/current"
	tenantPath  = "/api/v1/user/current/tenant"
	smsSendPath = "/api/v1/user/current/sms/send"
	mailSend    = "/api/v1/user/current/email/send"
	smsCheck    = "/api/v1/user/current/sms/check"
	mailCheck   = "/api/v1/user/current/email/check"
	mobilePath  = "/api/v1/user/current/mobile"
	emailPath   = "/api/v1/user/current/email"
)

// smsCheckTarget is the SMS check of code for mobile (as written, with
// country CN).
func smsCheckTarget(bizKey, mobile, code string) string {
	return smsCheck + "?" + url.Values{"bizKey": {bizKey}, "mobile": {mobile}, "country": {"CN"}, "verificationCode": {code}}.Encode()
}

func mailCheckTarget(bizKey, email, code string) string {
	return mailCheck + "?" + url.Values{"bizKey": {bizKey}, "email": {email}, "verificationCode": {code}}.Encode()
}

// jsonOf is v as a JSON body.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVerifyCurrentUser(t *testing.T) {
	e := setup(t)
	var d verify.Detail
	e.call(t, http.MethodGet, currentPath, "alice", "").wantOK(t, &d)
	if diff := cmp.Diff(detailOf(aliceUser), d); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if d.ITC != 86 {
		t.Errorf("itc %d, want 86", d.ITC)
	}
	var td verify.TenantDetail
	e.call(t, http.MethodGet, tenantPath, "carol", "").wantOK(t, &td)
	if diff := cmp.Diff(verify.TenantDetail{ID: 1, Name: "Acme"}, td); diff != "" {
		t.Errorf("tenant (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name, target, token string
		status              int
		key, field          string
	}{
		{"unknown parameter", currentPath + "?id=3", "alice", 400, httpapi.KeyValidation, "id"},
		{"tenant unknown parameter", tenantPath + "?tenantId=2", "alice", 400, httpapi.KeyValidation, "tenantId"},
		{"user gone", currentPath, "nomad", 404, httpapi.KeyNotFound, ""},
		{"tenant gone", tenantPath, "nomad", 404, httpapi.KeyNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodGet, tc.target, tc.token, "").wantError(t, tc.status, tc.key, tc.field)
		})
	}
}

// Every route wants a bearer token.
func TestVerifyRoutesRequireToken(t *testing.T) {
	e := setup(t)
	for _, r := range []struct{ method, target, body string }{
		{http.MethodGet, currentPath, ""},
		{http.MethodPatch, currentPath, `{"title": "x"}`},
		{http.MethodGet, tenantPath, ""},
		{http.MethodPost, smsSendPath, `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`},
		{http.MethodPost, mailSend, `{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`},
		{http.MethodGet, smsCheckTarget("SIGNIN", "13800138000", "123456"), ""},
		{http.MethodGet, mailCheckTarget("SIGNIN", aliceEmail, "123456"), ""},
		{http.MethodPatch, mobilePath, `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1}`},
		{http.MethodPatch, emailPath, `{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": 1}`},
	} {
		a := e.call(t, r.method, r.target, "", r.body)
		a.wantError(t, 401, httpapi.KeyUnauthorized, "")
		if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s %s: WWW-Authenticate %q", r.method, r.target, a.header.Get("WWW-Authenticate"))
		}
	}
	if n := len(e.vh.sink.Recipients()); n != 0 {
		t.Errorf("%d messages sent without a token", n)
	}
}

func TestVerifyUpdateProfile(t *testing.T) {
	e := setup(t)
	var d verify.Detail
	e.call(t, http.MethodPatch, currentPath, "alice",
		`{"username": "  alice2 ", "firstName": "Al", "lastName": null, "avatar": "https://example.com/a.png", "gender": "UNKNOWN", "address": "", "landline": "+86 10 1234 5678"}`).
		wantOK(t, &d)
	want := aliceUser
	want.Username, want.FirstName, want.Avatar, want.Gender, want.Landline = "alice2", "Al", "https://example.com/a.png", "UNKNOWN", "+86 10 1234 5678"
	want.FullName = "Al Liddell" // it follows its parts: the new firstName, the lastName kept
	if diff := cmp.Diff(detailOf(want), d); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.vh.dir.Get(alice.UserID)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}

	long := func(n int) string { return `"` + strings.Repeat("é", n) + `"` }
	for _, tc := range []struct {
		name, body string
		status     int
		key, field string
	}{
		{"username taken", `{"username": "bob"}`, 409, httpapi.KeyConflict, ""},
		{"username blank", `{"username": "  "}`, 400, httpapi.KeyValidation, "username"},
		{"username too long", `{"username": ` + long(101) + `}`, 400, httpapi.KeyValidation, "username"},
		{"username a number", `{"username": 5}`, 400, httpapi.KeyValidation, "username"},
		{"firstName too long", `{"firstName": ` + long(101) + `}`, 400, httpapi.KeyValidation, "firstName"},
		{"lastName too long", `{"lastName": ` + long(101) + `}`, 400, httpapi.KeyValidation, "lastName"},
		{"fullName too long", `{"fullName": ` + long(101) + `}`, 400, httpapi.KeyValidation, "fullName"},
		{"title too long", `{"title": ` + long(101) + `}`, 400, httpapi.KeyValidation, "title"},
		{"landline too long", `{"landline": ` + long(41) + `}`, 400, httpapi.KeyValidation, "landline"},
		{"address too long", `{"address": ` + long(201) + `}`, 400, httpapi.KeyValidation, "address"},
		{"avatar too long", `{"avatar": "https://example.com/` + strings.Repeat("a", 381) + `"}`, 400, httpapi.KeyValidation, "avatar"},
		{"avatar not http", `{"avatar": "ftp://example.com/a.png"}`, 400, httpapi.KeyValidation, "avatar"},
		{"gender unknown", `{"gender": "OTHER"}`, 400, httpapi.KeyValidation, "gender"},
		{"gender empty", `{"gender": ""}`, 400, httpapi.KeyValidation, "gender"},
		{"control character", `{"title": "a\u0007b"}`, 400, httpapi.KeyValidation, "title"},
		{"unknown field", `{"nickname": "al"}`, 400, httpapi.KeyValidation, "nickname"},
		{"mobile is not a profile field", `{"mobile": "13700137000"}`, 400, httpapi.KeyValidation, "mobile"},
		{"no body", ``, 400, httpapi.KeyValidation, "body"},
		{"not an object", `["title"]`, 400, httpapi.KeyValidation, "body"},
		{"two objects", `{"title": "a"} {"title": "b"}`, 400, httpapi.KeyValidation, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodPatch, currentPath, "alice", tc.body).wantError(t, tc.status, tc.key, tc.field)
		})
	}
	if diff := cmp.Diff(want, e.vh.dir.Get(alice.UserID)); diff != "" {
		t.Errorf("a refused update changed the directory (-want +got):\n%s", diff)
	}
	e.call(t, http.MethodPatch, currentPath+"?dryRun=true", "alice", `{"title": "x"}`).wantError(t, 400, httpapi.KeyValidation, "dryRun")
}

func TestVerifySendSMS(t *testing.T) {
	e := setup(t)
	// mobile as a JSON number and as a string written in several ways; each
	// bizKey has its own resend interval.
	for i, body := range []string{
		`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`,
		`{"bizKey": "SIGNUP", "mobile": "13800138000", "country": "cn"}`,
		`{"bizKey": "PASSWORD_FORGET", "mobile": "+86 138-0013-8000", "country": "CN"}`,
		`{"bizKey": "SIGN_CANCEL", "mobile": "(138) 0013 8000", "country": " CN "}`,
	} {
		var sent verify.Sent
		e.call(t, http.MethodPost, smsSendPath, "alice", body).wantOK(t, &sent)
		if diff := cmp.Diff(verify.Sent{ExpiresInSeconds: 300, ResendInSeconds: 60}, sent); diff != "" {
			t.Errorf("%s: data (-want +got):\n%s", body, diff)
		}
		if got := e.vh.sink.Recipients(); len(got) != i+1 || got[i] != aliceMobile {
			t.Errorf("%s: sent to %v, want %s last", body, got, aliceMobile)
		}
	}

	for _, tc := range []struct {
		name, token, body string
		status            int
		key, field        string
	}{
		{"bizKey missing", "alice", `{"mobile": 13800138000, "country": "CN"}`, 400, httpapi.KeyValidation, "bizKey"},
		{"bizKey of e-mail only", "alice", `{"bizKey": "INVOICE_APPLY_SUCCESS", "mobile": 13800138000, "country": "CN"}`, 400, httpapi.KeyValidation, "bizKey"},
		{"bizKey a number", "alice", `{"bizKey": 1, "mobile": 13800138000, "country": "CN"}`, 400, httpapi.KeyValidation, "bizKey"},
		{"mobile missing", "alice", `{"bizKey": "SIGNIN", "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile null", "alice", `{"bizKey": "SIGNIN", "mobile": null, "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile negative", "alice", `{"bizKey": "SIGNIN", "mobile": -13800138000, "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile with exponent", "alice", `{"bizKey": "SIGNIN", "mobile": 1.38e10, "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile a boolean", "alice", `{"bizKey": "SIGNIN", "mobile": true, "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile letters", "alice", `{"bizKey": "SIGNIN", "mobile": "138abc", "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile too short", "alice", `{"bizKey": "SIGNIN", "mobile": 123, "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile too long", "alice", `{"bizKey": "SIGNIN", "mobile": "` + strings.Repeat("1", 33) + `", "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"mobile a landline", "alice", `{"bizKey": "SIGNIN", "mobile": "010 1234 5678", "country": "CN"}`, 400, httpapi.KeyValidation, "mobile"},
		{"country missing", "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000}`, 400, httpapi.KeyValidation, "country"},
		{"country unknown", "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "XX"}`, 400, httpapi.KeyValidation, "country"},
		{"country too long", "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "` + strings.Repeat("C", 17) + `"}`, 400, httpapi.KeyValidation, "country"},
		{"unknown field", "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN", "itc": 86}`, 400, httpapi.KeyValidation, "itc"},
		{"another user's number", "alice", `{"bizKey": "SIGNIN", "mobile": 13900139000, "country": "CN"}`, 409, httpapi.KeyAddressTaken, ""},
		{"bind with a number", "alice", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN"}`, 409, httpapi.KeyAlreadyBound, ""},
		{"modify without a number", "carol", `{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN"}`, 409, httpapi.KeyNotBound, ""},
		{"user gone", "nomad", `{"bizKey": "SIGNIN", "mobile": 13700137000, "country": "CN"}`, 404, httpapi.KeyNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodPost, smsSendPath, tc.token, tc.body).wantError(t, tc.status, tc.key, tc.field)
		})
	}
	e.call(t, http.MethodPost, smsSendPath+"?mobile=13700137000", "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`).
		wantError(t, 400, httpapi.KeyValidation, "mobile")

	// The gateway refuses: 502, and no code was sent. (SIGNIN: alice's
	// refused SIGNIN to bob's number above does not hold bob's back.)
	e.vh.sink.FailWith(errGatewayDown)
	e.call(t, http.MethodPost, smsSendPath, "bob", `{"bizKey": "SIGNIN", "mobile": 13900139000, "country": "CN"}`).
		wantError(t, 502, httpapi.KeySendFailed, "")
	e.vh.sink.FailWith(nil)
	if got := e.vh.sink.LastCode(bobMobile); got != "" {
		t.Errorf("a code reached bob: %q", got)
	}

	// The provider throttles: 503 with the provider's wait, in the
	// reader's language, and again no code; the send took no limit.
	e.vh.sink.FailWith(errThrottled)
	a := e.call(t, http.MethodPost, smsSendPath, "bob", `{"bizKey": "SIGNIN", "mobile": 13900139000, "country": "CN"}`)
	a.wantError(t, 503, httpapi.KeySendThrottled, "")
	a.wantRetryAfter(t, 42*time.Second)
	if a.msg != "the SMS provider is throttling messages: try again later" {
		t.Errorf("msg %q", a.msg)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+smsSendPath, strings.NewReader(`{"bizKey": "SIGNIN", "mobile": 13900139000, "country": "CN"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer bob")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var zh struct{ Msg string }
	err = json.NewDecoder(resp.Body).Decode(&zh)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 503 || zh.Msg != "短信发送过于频繁，服务商暂不接收，请稍后重试" {
		t.Errorf("in Chinese: %d %q (%v)", resp.StatusCode, zh.Msg, err)
	}
	e.vh.sink.FailWith(nil)
	if got := e.vh.sink.LastCode(bobMobile); got != "" {
		t.Errorf("a code reached bob: %q", got)
	}
	e.call(t, http.MethodPost, smsSendPath, "bob", `{"bizKey": "SIGNIN", "mobile": 13900139000, "country": "CN"}`).wantOK(t, &verify.Sent{})
}

// One code per bizKey and address per 60 s: 429 with the wait.
func TestVerifySendInterval(t *testing.T) {
	e := setup(t)
	body := `{"bizKey": "MODIFY_MOBILE", "mobile": 13800138000, "country": "CN"}`
	e.call(t, http.MethodPost, smsSendPath, "alice", body).wantOK(t, &verify.Sent{})
	a := e.call(t, http.MethodPost, smsSendPath, "alice", body)
	a.wantError(t, 429, httpapi.KeyTooManyRequests, "")
	a.wantRetryAfter(t, 60*time.Second)
	e.vh.clock.Advance(45 * time.Second)
	e.call(t, http.MethodPost, smsSendPath, "alice", body).wantRetryAfter(t, 15*time.Second)
	// Another bizKey to the same number is not held back.
	e.call(t, http.MethodPost, smsSendPath, "alice", `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`).wantOK(t, &verify.Sent{})
	e.vh.clock.Advance(15 * time.Second)
	e.call(t, http.MethodPost, smsSendPath, "alice", body).wantOK(t, &verify.Sent{})

	mail := `{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`
	e.call(t, http.MethodPost, mailSend, "alice", mail).wantOK(t, &verify.Sent{})
	a = e.call(t, http.MethodPost, mailSend, "alice", mail)
	a.wantError(t, 429, httpapi.KeyTooManyRequests, "")
	a.wantRetryAfter(t, 60*time.Second)
}

// 10 codes an hour to one address, 20 requests a day by one user.
func TestVerifySendLimits(t *testing.T) {
	e := setup(t)
	start := e.vh.clock.Now()
	send := func(mobile string) answer {
		t.Helper()
		e.vh.clock.Advance(verify.DefaultResendInterval)
		return e.call(t, http.MethodPost, smsSendPath, "alice", jsonOf(t, map[string]string{"bizKey": "SIGNIN", "mobile": mobile, "country": "CN"}))
	}
	for range verify.DefaultSendsPerHour {
		send(aliceMobile).wantOK(t, &verify.Sent{})
	}
	a := send(aliceMobile)
	a.wantError(t, 429, httpapi.KeyTooManyRequests, "")
	// The hour opened with the first send, one interval after start.
	a.wantRetryAfter(t, start.Add(verify.DefaultResendInterval+time.Hour).Sub(e.vh.clock.Now()))
	if !strings.Contains(a.msg, "an hour") {
		t.Errorf("msg %q does not name the hourly limit", a.msg)
	}

	for range verify.DefaultSendsPerDay - verify.DefaultSendsPerHour {
		send(freeMobile).wantOK(t, &verify.Sent{})
	}
	a = send("+8613600136000")
	a.wantError(t, 429, httpapi.KeyTooManyRequests, "")
	a.wantRetryAfter(t, start.Add(verify.DefaultResendInterval+24*time.Hour).Sub(e.vh.clock.Now()))
	if !strings.Contains(a.msg, "a day") {
		t.Errorf("msg %q does not name the daily limit", a.msg)
	}
	if got := len(e.vh.sink.Recipients()); got != verify.DefaultSendsPerDay {
		t.Errorf("%d codes sent, want %d", got, verify.DefaultSendsPerDay)
	}
}

func TestVerifySendEmail(t *testing.T) {
	e := setup(t)
	// Nested arrays are flattened and duplicates dropped; each address gets
	// a code of its own.
	var sent verify.Sent
	e.call(t, http.MethodPost, mailSend, "alice",
		`{"bizKey": "SIGNIN", "toAddress": [["ann@example.com", "ann@EXAMPLE.com"], [" ann@example.com "], [], ["Bob@Example.COM"]]}`).wantOK(t, &sent)
	if diff := cmp.Diff(verify.Sent{ExpiresInSeconds: 300, ResendInSeconds: 60}, sent); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	got := e.vh.sink.Recipients()
	slices.Sort(got)
	if diff := cmp.Diff([]string{"Bob@example.com", "ann@example.com"}, got); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	// Five different addresses, however repeated, pass; a sixth does not.
	five := `[["a@example.com", "b@example.com"], ["c@example.com", "d@example.com", "e@example.com"], ["a@example.com", "E@EXAMPLE.COM"]]`
	e.call(t, http.MethodPost, mailSend, "alice", `{"bizKey": "SIGNUP", "toAddress": `+five+`}`).
		wantError(t, 400, httpapi.KeyValidation, "toAddress")
	five = `[["a@example.com", "b@example.com"], ["c@example.com", "d@example.com", "e@example.com"], ["a@example.com", "e@EXAMPLE.COM"]]`
	e.call(t, http.MethodPost, mailSend, "alice", `{"bizKey": "SIGNUP", "toAddress": `+five+`}`).wantOK(t, &sent)

	for _, tc := range []struct {
		name, token, body string
		status            int
		key, field        string
	}{
		{"six addresses", "alice", `{"bizKey": "SIGNIN", "toAddress": [["a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com", "f@example.com"]]}`, 400, httpapi.KeyValidation, "toAddress"},
		{"no address", "alice", `{"bizKey": "SIGNIN", "toAddress": [[]]}`, 400, httpapi.KeyValidation, "toAddress"},
		{"toAddress missing", "alice", `{"bizKey": "SIGNIN"}`, 400, httpapi.KeyValidation, "toAddress"},
		{"toAddress a string", "alice", `{"bizKey": "SIGNIN", "toAddress": "ann@example.com"}`, 400, httpapi.KeyValidation, "toAddress"},
		{"toAddress flat", "alice", `{"bizKey": "SIGNIN", "toAddress": ["ann@example.com"]}`, 400, httpapi.KeyValidation, "toAddress"},
		{"not an address", "alice", `{"bizKey": "SIGNIN", "toAddress": [["ann@example.com"], ["ann"]]}`, 400, httpapi.KeyValidation, "toAddress[1][0]"},
		{"address with a name", "alice", `{"bizKey": "SIGNIN", "toAddress": [["Ann <ann@example.com>"]]}`, 400, httpapi.KeyValidation, "toAddress[0][0]"},
		{"address without a domain name", "alice", `{"bizKey": "SIGNIN", "toAddress": [["ann@localhost"]]}`, 400, httpapi.KeyValidation, "toAddress[0][0]"},
		{"address too long", "alice", `{"bizKey": "SIGNIN", "toAddress": [["` + strings.Repeat("a", 89) + `@example.com"]]}`, 400, httpapi.KeyValidation, "toAddress[0][0]"},
		{"bizKey of SMS only", "alice", `{"bizKey": "MODIFY_MOBILE", "toAddress": [["ann@example.com"]]}`, 400, httpapi.KeyValidation, "bizKey"},
		{"unknown field", "alice", `{"bizKey": "SIGNIN", "toAddress": [["ann@example.com"]], "cc": []}`, 400, httpapi.KeyValidation, "cc"},
		{"another user's address", "alice", `{"bizKey": "SIGNIN", "toAddress": [["x@example.com"], ["admin@EXAMPLE.com"]]}`, 409, httpapi.KeyAddressTaken, ""},
		{"bind with an address", "alice", `{"bizKey": "BIND_EMAIL", "toAddress": [["new@example.com"]]}`, 409, httpapi.KeyAlreadyBound, ""},
		{"modify without an address", "bob", `{"bizKey": "MODIFY_EMAIL", "toAddress": [["new@example.com"]]}`, 409, httpapi.KeyNotBound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodPost, mailSend, tc.token, tc.body).wantError(t, tc.status, tc.key, tc.field)
		})
	}
	if e.vh.sink.LastCode("x@example.com") != "" {
		t.Error("a send refused for another user's address went to the other recipient")
	}

	e.vh.sink.FailWith(errGatewayDown)
	e.call(t, http.MethodPost, mailSend, "bob", `{"bizKey": "BIND_EMAIL", "toAddress": [["new@example.com"]]}`).
		wantError(t, 502, httpapi.KeySendFailed, "")
}

func TestVerifyCheckSMS(t *testing.T) {
	e := setup(t)
	code := e.vh.sendSMS(t, alice, "SIGNIN", aliceMobile)
	// Five wrong attempts, counted down in msg; then the code is dead.
	for _, left := range []string{"4 attempts are left", "3 attempts are left", "2 attempts are left", "1 attempt is left", "no attempts are left"} {
		a := e.call(t, http.MethodGet, smsCheckTarget("SIGNIN", "13800138000", wrongCode(code)), "alice", "")
		a.wantError(t, 400, httpapi.KeyCodeWrong, "")
		if !strings.Contains(a.msg, left) {
			t.Errorf("msg %q, want it to say %q", a.msg, left)
		}
	}
	a := e.call(t, http.MethodGet, smsCheckTarget("SIGNIN", "13800138000", code), "alice", "")
	a.wantError(t, 429, httpapi.KeyCodeExhausted, "")
	if ra := a.header.Get("Retry-After"); ra != "" {
		t.Errorf("a dead code has Retry-After %q: a new code can be requested now", ra)
	}

	// A new code, checked with the number written another way.
	e.vh.clock.Advance(verify.DefaultResendInterval)
	code = e.vh.sendSMS(t, alice, "SIGNIN", aliceMobile)
	var link verify.Link
	e.call(t, http.MethodGet, smsCheckTarget("SIGNIN", "+86 138 0013 8000", code), "alice", "").wantOK(t, &link)
	if !strings.HasPrefix(link.Secret, "dkl_") {
		t.Errorf("link secret %q", link.Secret)
	}
	e.call(t, http.MethodGet, smsCheckTarget("SIGNIN", "13800138000", code), "alice", "").wantError(t, 400, httpapi.KeyCodeMissing, "")
	// Each bizKey is its own namespace.
	code = e.vh.sendSMS(t, alice, "SIGNUP", aliceMobile)
	e.call(t, http.MethodGet, smsCheckTarget("SIGN_CANCEL", "13800138000", code), "alice", "").wantError(t, 400, httpapi.KeyCodeMissing, "")
	// Codes live 5 minutes.
	e.vh.clock.Advance(verify.DefaultCodeTTL)
	e.call(t, http.MethodGet, smsCheckTarget("SIGNUP", "13800138000", code), "alice", "").wantError(t, 400, httpapi.KeyCodeExpired, "")

	// Another user's number.
	e.call(t, http.MethodGet, smsCheckTarget("SIGNIN", "13900139000", "123456"), "alice", "").wantError(t, 409, httpapi.KeyAddressTaken, "")

	for _, tc := range []struct {
		name, target, field string
	}{
		{"code not digits", smsCheckTarget("SIGNIN", "13800138000", "12a456"), "verificationCode"},
		{"code too long", smsCheckTarget("SIGNIN", "13800138000", "123456789"), "verificationCode"},
		{"code given twice", smsCheckTarget("SIGNIN", "13800138000", "123456") + "&verificationCode=1", "verificationCode"},
		{"code missing", smsCheck + "?bizKey=SIGNIN&mobile=13800138000&country=CN", "verificationCode"},
		{"country missing", smsCheck + "?bizKey=SIGNIN&mobile=13800138000&verificationCode=123456", "country"},
		{"country unknown", smsCheck + "?bizKey=SIGNIN&mobile=13800138000&country=ZZ&verificationCode=123456", "country"},
		{"mobile not a number", smsCheckTarget("SIGNIN", "thirteen", "123456"), "mobile"},
		{"bizKey of e-mail", smsCheckTarget("MODIFY_EMAIL", "13800138000", "123456"), "bizKey"},
		{"unknown parameter", smsCheckTarget("SIGNIN", "13800138000", "123456") + "&itc=86", "itc"},
		{"code in the body", smsCheckTarget("SIGNIN", "13800138000", "123456") + "&verificationcode=1", "verificationcode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodGet, tc.target, "alice", "").wantError(t, 400, httpapi.KeyValidation, tc.field)
		})
	}
}

// 20 wrong codes a day across codes; then even a right code is refused
// until the day is over.
func TestVerifyFailuresPerDay(t *testing.T) {
	e := setup(t)
	start := e.vh.clock.Now()
	keys := []verify.BizKey{"SIGNIN", "SIGNUP", "PASSWORD_FORGET", "PASSWORD_UPDATE"}
	for _, b := range keys { // 4 codes x 5 wrong attempts
		e.vh.wrongChecks(t, alice, b, aliceMobile, e.vh.sendSMS(t, alice, b, aliceMobile), verify.MaxAttempts)
	}
	e.vh.clock.Advance(time.Hour)
	code := e.vh.sendEmail(t, alice, "SIGNIN", aliceEmail)
	a := e.call(t, http.MethodGet, mailCheckTarget("SIGNIN", aliceEmail, code), "alice", "")
	a.wantError(t, 429, httpapi.KeyTooManyFailures, "")
	a.wantRetryAfter(t, start.Add(24*time.Hour).Sub(e.vh.clock.Now()))
	// Changes check codes too.
	e.call(t, http.MethodPatch, emailPath, "bob", `{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": 123456}`).
		wantError(t, 400, httpapi.KeyCodeMissing, "") // bob has failures left
	a = e.call(t, http.MethodPatch, mobilePath, "alice",
		`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456, "linkSecret": "dkl_x"}`)
	a.wantError(t, 429, httpapi.KeyTooManyFailures, "")
	a.wantRetryAfter(t, start.Add(24*time.Hour).Sub(e.vh.clock.Now()))

	e.vh.clock.Advance(23 * time.Hour)
	var link verify.Link
	e.call(t, http.MethodGet, mailCheckTarget("SIGNIN", aliceEmail, code), "alice", "").wantError(t, 400, httpapi.KeyCodeExpired, "")
	code = e.vh.sendEmail(t, alice, "SIGNIN", aliceEmail)
	e.call(t, http.MethodGet, mailCheckTarget("SIGNIN", "alice@EXAMPLE.COM", code), "alice", "").wantOK(t, &link)
}

func TestVerifyCheckEmail(t *testing.T) {
	e := setup(t)
	code := e.vh.sendEmail(t, alice, "PASSWORD_UPDATE", aliceEmail)
	e.call(t, http.MethodGet, mailCheckTarget("PASSWORD_UPDATE", aliceEmail, wrongCode(code)), "alice", "").
		wantError(t, 400, httpapi.KeyCodeWrong, "")
	var link verify.Link
	e.call(t, http.MethodGet, mailCheckTarget("PASSWORD_UPDATE", " alice@Example.com ", code), "alice", "").wantOK(t, &link)
	// The host redeems the secret for its own flow, once.
	proof, err := e.vh.v.Redeem(t.Context(), nil, alice, "PASSWORD_UPDATE", link.Secret)
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	if diff := cmp.Diff(verify.Proof{Kind: verify.KindEmail, BizKey: "PASSWORD_UPDATE", Address: aliceEmail}, proof); diff != "" {
		t.Errorf("proof (-want +got):\n%s", diff)
	}
	e.call(t, http.MethodGet, mailCheckTarget("PASSWORD_UPDATE", aliceEmail, code), "alice", "").wantError(t, 400, httpapi.KeyCodeMissing, "")
	// Another user cannot check alice's code: the address is hers.
	code = e.vh.sendEmail(t, alice, "SIGNIN", aliceEmail)
	e.call(t, http.MethodGet, mailCheckTarget("SIGNIN", aliceEmail, code), "bob", "").wantError(t, 409, httpapi.KeyAddressTaken, "")
	// Codes are per user: carol's code to a free address is not bob's.
	code = e.vh.sendEmail(t, carol, "SIGNIN", freeEmail)
	e.call(t, http.MethodGet, mailCheckTarget("SIGNIN", freeEmail, code), "bob", "").wantError(t, 400, httpapi.KeyCodeMissing, "")
	// An address taken since the code went out proves nothing.
	code = e.vh.sendEmail(t, carol, "BIND_EMAIL", "carol@example.org")
	e.vh.dir.SetAddress(dave.UserID, verify.KindEmail, "carol@example.org")
	e.call(t, http.MethodGet, mailCheckTarget("BIND_EMAIL", "carol@example.org", code), "carol", "").wantError(t, 409, httpapi.KeyAddressTaken, "")

	for _, tc := range []struct{ name, target, field string }{
		{"email not an address", mailCheckTarget("SIGNIN", "alice", "123456"), "email"},
		{"email too long", mailCheckTarget("SIGNIN", strings.Repeat("a", 89)+"@example.com", "123456"), "email"},
		{"email missing", mailCheck + "?bizKey=SIGNIN&verificationCode=123456", "email"},
		{"bizKey of SMS", mailCheckTarget("BIND_MOBILE", aliceEmail, "123456"), "bizKey"},
		{"code not digits", mailCheckTarget("SIGNIN", aliceEmail, "-12345"), "verificationCode"},
		{"unknown parameter", mailCheckTarget("SIGNIN", aliceEmail, "123456") + "&mobile=1", "mobile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodGet, tc.target, "alice", "").wantError(t, 400, httpapi.KeyValidation, tc.field)
		})
	}
}

// A code that starts with 0, given as a JSON number (its zero lost),
// passes: the service pads it back.
func TestVerifyCodeAsNumberKeepsLeadingZero(t *testing.T) {
	e := setup(t)
	var code string
	for i := 0; !strings.HasPrefix(code, "0"); i++ {
		if i == 300 { // one chance in 10^13
			t.Fatal("no code started with 0 in 300 sends")
		}
		// A day passes between sends: past the resend interval and every
		// send window, whatever the number of tries.
		e.vh.clock.Advance(24 * time.Hour)
		e.call(t, http.MethodPost, smsSendPath, "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN"}`).wantOK(t, &verify.Sent{})
		code = e.vh.sentCode(t, freeMobile)
	}
	number := strings.TrimLeft(code, "0")
	if number == "" {
		number = "0"
	}
	var d verify.Detail
	e.call(t, http.MethodPatch, mobilePath, "carol",
		`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": `+number+`}`).wantOK(t, &d)
	if d.Mobile != freeMobile || d.Country != "CN" || d.ITC != 86 {
		t.Errorf("detail %+v, want mobile %s CN 86", d, freeMobile)
	}
	if got := e.vh.dir.Get(carol.UserID).Mobile; got != freeMobile {
		t.Errorf("directory has %q, want %s", got, freeMobile)
	}
	// A bound number gets no notice: there was no old one.
	for _, r := range e.vh.sink.Recipients() {
		if strings.HasPrefix(r, "notice:") {
			t.Errorf("notice sent: %s", r)
		}
	}
}

// The whole MODIFY_MOBILE flow over HTTP, with the bypass it must refuse.
func TestVerifyModifyMobileFlow(t *testing.T) {
	e := setup(t)
	sent := func(body string) {
		t.Helper()
		e.call(t, http.MethodPost, smsSendPath, "alice", body).wantOK(t, &verify.Sent{})
	}
	check := func(mobile, code string) string {
		t.Helper()
		var link verify.Link
		e.call(t, http.MethodGet, smsCheckTarget("MODIFY_MOBILE", mobile, code), "alice", "").wantOK(t, &link)
		return link.Secret
	}

	// The bypass: a link secret won on the new number proves nothing about
	// the current one.
	sent(`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN"}`)
	wonOnNew := check("13700137000", e.vh.sentCode(t, freeMobile))
	e.vh.clock.Advance(verify.DefaultResendInterval)
	sent(`{"bizKey": "MODIFY_MOBILE", "mobile": "137 0013 7000", "country": "CN"}`)
	newCode := e.vh.sentCode(t, freeMobile)
	change := func(code, link string) answer {
		t.Helper()
		return e.call(t, http.MethodPatch, mobilePath, "alice", jsonOf(t, map[string]any{
			"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "+86", "verificationCode": code, "linkSecret": link,
		}))
	}
	change(newCode, wonOnNew).wantError(t, 403, httpapi.KeyLinkSecretRefused, "")
	change(newCode, "dkl_made_up").wantError(t, 403, httpapi.KeyLinkSecretRefused, "")
	if got := e.vh.dir.Get(alice.UserID).Mobile; got != aliceMobile {
		t.Fatalf("mobile changed to %s by a bypass", got)
	}

	// (1) a code to the current number, (2) checked: the link secret.
	sent(`{"bizKey": "MODIFY_MOBILE", "mobile": "+86 138 0013 8000", "country": "CN"}`)
	link := check(aliceMobile, e.vh.sentCode(t, aliceMobile))
	// Without the secret, or with the new number's code wrong: refused, and
	// neither the code of step 3 nor the secret is spent.
	e.call(t, http.MethodPatch, mobilePath, "alice", `{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456}`).
		wantError(t, 400, httpapi.KeyValidation, "linkSecret")
	change(wrongCode(newCode), link).wantError(t, 400, httpapi.KeyCodeWrong, "")
	// (3) was the code sent to the new number above; (4) the change.
	var d verify.Detail
	change(newCode, link).wantOK(t, &d)
	want := aliceUser
	want.Mobile = freeMobile
	if diff := cmp.Diff(detailOf(want), d); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if !slices.Contains(e.vh.sink.Recipients(), "notice:"+aliceMobile) {
		t.Errorf("no notice to the old number; sent %v", e.vh.sink.Recipients())
	}
	// Replayed: the number is alice's now.
	change(newCode, link).wantError(t, 400, httpapi.KeyValidation, "mobile")
	// The secret was spent.
	e.vh.clock.Advance(verify.DefaultResendInterval)
	sent(`{"bizKey": "MODIFY_MOBILE", "mobile": 13600136000, "country": "CN"}`)
	a := e.call(t, http.MethodPatch, mobilePath, "alice", jsonOf(t, map[string]any{
		"bizKey": "MODIFY_MOBILE", "mobile": "13600136000", "country": "CN", "verificationCode": e.vh.sentCode(t, "+8613600136000"), "linkSecret": link,
	}))
	a.wantError(t, 403, httpapi.KeyLinkSecretRefused, "")
}

func TestVerifyChangeMobileErrors(t *testing.T) {
	e := setup(t)
	code := e.vh.sendSMS(t, carol, "BIND_MOBILE", freeMobile)
	for _, tc := range []struct {
		name, token, body string
		status            int
		key, field        string
	}{
		{"bizKey not a change", "carol", `{"bizKey": "SIGNIN", "mobile": 13700137000, "country": "CN", "verificationCode": 1}`, 400, httpapi.KeyValidation, "bizKey"},
		{"bizKey of e-mail", "carol", `{"bizKey": "BIND_EMAIL", "mobile": 13700137000, "country": "CN", "verificationCode": 1}`, 400, httpapi.KeyValidation, "bizKey"},
		{"itc of another country", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 1, "verificationCode": 1}`, 400, httpapi.KeyValidation, "itc"},
		{"itc letters", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "x86", "verificationCode": 1}`, 400, httpapi.KeyValidation, "itc"},
		{"itc plus alone", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "+", "verificationCode": 1}`, 400, httpapi.KeyValidation, "itc"},
		{"itc negative", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": -86, "verificationCode": 1}`, 400, httpapi.KeyValidation, "itc"},
		{"itc zero", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 0, "verificationCode": 1}`, 400, httpapi.KeyValidation, "itc"},
		{"code missing", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN"}`, 400, httpapi.KeyValidation, "verificationCode"},
		{"code too long", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456789}`, 400, httpapi.KeyValidation, "verificationCode"},
		{"code a fraction", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1.5}`, 400, httpapi.KeyValidation, "verificationCode"},
		{"code with a sign", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "+123456"}`, 400, httpapi.KeyValidation, "verificationCode"},
		{"mobile missing", "carol", `{"bizKey": "BIND_MOBILE", "country": "CN", "verificationCode": 1}`, 400, httpapi.KeyValidation, "mobile"},
		{"link secret with bind", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1, "linkSecret": "dkl_x"}`, 400, httpapi.KeyValidation, "linkSecret"},
		{"unknown field", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1, "code": 1}`, 400, httpapi.KeyValidation, "code"},
		{"already one's number", "alice", `{"bizKey": "MODIFY_MOBILE", "mobile": 13800138000, "country": "CN", "verificationCode": 1, "linkSecret": "dkl_x"}`, 400, httpapi.KeyValidation, "mobile"},
		{"no code sent for it", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13600136000, "country": "CN", "verificationCode": 123456}`, 400, httpapi.KeyCodeMissing, ""},
		{"bind with a number", "alice", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1}`, 409, httpapi.KeyAlreadyBound, ""},
		{"modify without a number", "carol", `{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1, "linkSecret": "dkl_x"}`, 409, httpapi.KeyNotBound, ""},
		{"another user's number", "carol", `{"bizKey": "BIND_MOBILE", "mobile": 13900139000, "country": "CN", "verificationCode": 1}`, 409, httpapi.KeyAddressTaken, ""},
		{"user gone", "nomad", `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1}`, 404, httpapi.KeyNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodPatch, mobilePath, tc.token, tc.body).wantError(t, tc.status, tc.key, tc.field)
		})
	}
	if got := e.vh.dir.Get(carol.UserID).Mobile; got != "" {
		t.Fatalf("carol's number changed to %s by a refused request", got)
	}

	// The number is taken while the change runs: the directory refuses.
	e.vh.dir.WhenSetting(func() { e.vh.dir.SetAddress(dave.UserID, verify.KindSMS, freeMobile) })
	body := `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "` + code + `"}`
	e.call(t, http.MethodPatch, mobilePath, "carol", body).wantError(t, 409, httpapi.KeyConflict, "")
	e.vh.dir.WhenSetting(nil)
	e.vh.dir.SetAddress(dave.UserID, verify.KindSMS, "")
	// The refused change left the code unspent.
	var d verify.Detail
	e.call(t, http.MethodPatch, mobilePath, "carol", body).wantOK(t, &d)
	if d.Mobile != freeMobile {
		t.Errorf("mobile %q, want %s", d.Mobile, freeMobile)
	}
	// A dead code.
	code = e.vh.sendSMS(t, dave, "BIND_MOBILE", "+8613600136000")
	e.vh.wrongChecks(t, dave, "BIND_MOBILE", "+8613600136000", code, verify.MaxAttempts)
	e.call(t, http.MethodPatch, mobilePath, "dave", `{"bizKey": "BIND_MOBILE", "mobile": 13600136000, "country": "CN", "verificationCode": "`+code+`"}`).
		wantError(t, 429, httpapi.KeyCodeExhausted, "")
	// An expired one.
	e.vh.clock.Advance(verify.DefaultResendInterval)
	code = e.vh.sendSMS(t, dave, "BIND_MOBILE", "+8613600136000")
	e.vh.clock.Advance(verify.DefaultCodeTTL)
	e.call(t, http.MethodPatch, mobilePath, "dave", `{"bizKey": "BIND_MOBILE", "mobile": 13600136000, "country": "CN", "verificationCode": "`+code+`"}`).
		wantError(t, 400, httpapi.KeyCodeExpired, "")
}

func TestVerifyChangeEmail(t *testing.T) {
	e := setup(t)
	// BIND_EMAIL: the code alone is the proof.
	code := e.vh.sendEmail(t, bob, "BIND_EMAIL", freeEmail)
	var d verify.Detail
	e.call(t, http.MethodPatch, emailPath, "bob", `{"bizKey": "BIND_EMAIL", "email": " new@Example.COM ", "verificationCode": "`+code+`"}`).wantOK(t, &d)
	if d.Email != freeEmail {
		t.Errorf("email %q, want %s", d.Email, freeEmail)
	}

	// MODIFY_EMAIL: a link secret won on the current address, a code sent
	// to the new one.
	link := e.vh.checkEmail(t, alice, "MODIFY_EMAIL", aliceEmail, e.vh.sendEmail(t, alice, "MODIFY_EMAIL", aliceEmail))
	var sent verify.Sent
	e.call(t, http.MethodPost, mailSend, "alice", `{"bizKey": "MODIFY_EMAIL", "toAddress": [["alice@example.org"]]}`).wantOK(t, &sent)
	code = e.vh.sentCode(t, "alice@example.org")
	for _, tc := range []struct {
		name, token, body string
		status            int
		key, field        string
	}{
		{"without link secret", "alice", `{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": "` + code + `"}`, 400, httpapi.KeyValidation, "linkSecret"},
		{"email not an address", "alice", `{"bizKey": "MODIFY_EMAIL", "email": "alice", "verificationCode": 1, "linkSecret": "dkl_x"}`, 400, httpapi.KeyValidation, "email"},
		{"email a number", "alice", `{"bizKey": "MODIFY_EMAIL", "email": 5, "verificationCode": 1, "linkSecret": "dkl_x"}`, 400, httpapi.KeyValidation, "email"},
		{"bizKey of SMS", "alice", `{"bizKey": "MODIFY_MOBILE", "email": "alice@example.org", "verificationCode": 1, "linkSecret": "dkl_x"}`, 400, httpapi.KeyValidation, "bizKey"},
		{"unknown field", "alice", `{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": 1, "linkSecret": "dkl_x", "mobile": 1}`, 400, httpapi.KeyValidation, "mobile"},
		{"wrong code", "alice", `{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": "` + wrongCode(code) + `", "linkSecret": "` + link + `"}`, 400, httpapi.KeyCodeWrong, ""},
		{"another user's secret: the code is checked first", "bob", `{"bizKey": "MODIFY_EMAIL", "email": "bob@example.org", "verificationCode": 1, "linkSecret": "` + link + `"}`, 400, httpapi.KeyCodeMissing, ""},
		{"bind with an address", "alice", `{"bizKey": "BIND_EMAIL", "email": "alice@example.org", "verificationCode": 1}`, 409, httpapi.KeyAlreadyBound, ""},
		{"modify without an address", "carol", `{"bizKey": "MODIFY_EMAIL", "email": "carol@example.org", "verificationCode": 1, "linkSecret": "dkl_x"}`, 409, httpapi.KeyNotBound, ""},
		{"another user's address", "alice", `{"bizKey": "MODIFY_EMAIL", "email": "admin@example.com", "verificationCode": 1, "linkSecret": "dkl_x"}`, 409, httpapi.KeyAddressTaken, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, http.MethodPatch, emailPath, tc.token, tc.body).wantError(t, tc.status, tc.key, tc.field)
		})
	}
	// A secret of MODIFY_EMAIL is no proof for MODIFY_MOBILE.
	e.vh.clock.Advance(verify.DefaultResendInterval)
	mcode := e.vh.sendSMS(t, alice, "MODIFY_MOBILE", freeMobile)
	e.call(t, http.MethodPatch, mobilePath, "alice", `{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "`+mcode+`", "linkSecret": "`+link+`"}`).
		wantError(t, 403, httpapi.KeyLinkSecretRefused, "")

	e.call(t, http.MethodPatch, emailPath, "alice", `{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": "`+code+`", "linkSecret": "`+link+`"}`).wantOK(t, &d)
	if d.Email != "alice@example.org" {
		t.Errorf("email %q, want alice@example.org", d.Email)
	}
	if !slices.Contains(e.vh.sink.Recipients(), "notice:"+aliceEmail) {
		t.Errorf("no notice to the old address; sent %v", e.vh.sink.Recipients())
	}
}

// Unknown body fields and unknown query parameters are 400 on every route
// that takes a body, before anything happens.
func TestVerifyUnknownFieldsAndParameters(t *testing.T) {
	e := setup(t)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPatch, currentPath, `{"title": "x", "extra": 1}`},
		{http.MethodPost, smsSendPath, `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN", "extra": 1}`},
		{http.MethodPost, mailSend, `{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]], "extra": 1}`},
		{http.MethodPatch, mobilePath, `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1, "extra": 1}`},
		{http.MethodPatch, emailPath, `{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": 1, "extra": 1}`},
	} {
		a := e.call(t, r.method, r.path, "carol", r.body)
		a.wantError(t, 400, httpapi.KeyValidation, "extra")
		if a.msg != "extra is not a field of this request" {
			t.Errorf("%s %s: msg %q", r.method, r.path, a.msg)
		}
		valid := strings.Replace(r.body, `, "extra": 1`, "", 1)
		a = e.call(t, r.method, r.path+"?extra=1", "carol", valid)
		a.wantError(t, 400, httpapi.KeyValidation, "extra")
		if a.msg != "extra is not a parameter of this operation" {
			t.Errorf("%s %s?extra=1: msg %q", r.method, r.path, a.msg)
		}
	}
	if got := e.vh.sink.Recipients(); len(got) != 0 {
		t.Errorf("refused requests sent %v", got)
	}
	if diff := cmp.Diff(carolUser, e.vh.dir.Get(carol.UserID)); diff != "" {
		t.Errorf("refused requests changed carol (-want +got):\n%s", diff)
	}
}

// A database that cannot answer is 503 with Retry-After, on every route
// that reaches it.
func TestVerifyDatabaseDown(t *testing.T) {
	e := setup(t)
	e.db.Close()
	e.vh.dir.FailWith(e.db.PingContext(t.Context()))
	for _, r := range []struct{ method, target, body string }{
		{http.MethodGet, currentPath, ""},
		{http.MethodPatch, currentPath, `{"title": "x"}`},
		{http.MethodGet, tenantPath, ""},
		{http.MethodPost, smsSendPath, `{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`},
		{http.MethodPost, mailSend, `{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`},
		{http.MethodGet, smsCheckTarget("SIGNIN", "13800138000", "123456"), ""},
		{http.MethodGet, mailCheckTarget("SIGNIN", aliceEmail, "123456"), ""},
		{http.MethodPatch, mobilePath, `{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 1, "linkSecret": "dkl_x"}`},
		{http.MethodPatch, emailPath, `{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": 1, "linkSecret": "dkl_x"}`},
	} {
		a := e.call(t, r.method, r.target, "alice", r.body)
		a.wantError(t, 503, httpapi.KeyServiceUnavailable, "")
		a.wantRetryAfter(t, httpapi.DefaultRetryAfter)
	}
	// The user directory alone down: the same.
	e.vh.dir.FailWith(fmt.Errorf("directory: %w", deskkit.ErrUnavailable))
	e.call(t, http.MethodGet, currentPath, "alice", "").wantError(t, 503, httpapi.KeyServiceUnavailable, "")
}

// A "+" left unencoded in the check's query string arrives as a space:
// " 8613800138000" still finds the code, since the number parser reads a
// leading 86 with country CN as the country's code.
func TestVerifyCheckUnencodedPlus(t *testing.T) {
	e := setup(t)
	code := e.vh.sendSMS(t, alice, "SIGNIN", aliceMobile)
	target := smsCheck + "?bizKey=SIGNIN&country=CN&verificationCode=" + code + "&mobile=" + aliceMobile
	var link verify.Link
	e.call(t, http.MethodGet, target, "alice", "").wantOK(t, &link)
	if !strings.HasPrefix(link.Secret, "dkl_") {
		t.Errorf("link secret %q", link.Secret)
	}
}

// TestVerifyBindWithCheckedCodeAndSecret is fault 8 of issue 19 over HTTP,
// on both databases: after GET .../check answered a linkSecret, the PATCH
// that carries both that linkSecret and the same verificationCode (the
// natural body: the source system's has both fields) answered 400
// "linkSecret must be empty when verificationCode is given". It binds now;
// a pair that does not belong together is 400 naming linkSecret and
// changes nothing, and a replay is refused.
func TestVerifyBindWithCheckedCodeAndSecret(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := setupOn(t, db)
		for _, tc := range []struct {
			kind    verify.Kind
			address string
			send    func() string
			check   func(code string) string // the GET target
			body    func(code, secret string) string
			current func() string
		}{
			{
				kind: verify.KindSMS, address: freeMobile,
				send:  func() string { return e.vh.sendSMS(t, carol, verify.BindMobile, freeMobile) },
				check: func(code string) string { return smsCheckTarget("BIND_MOBILE", "13700137000", code) },
				body: func(code, secret string) string {
					return jsonOf(t, map[string]any{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": code, "linkSecret": secret})
				},
				current: func() string { return e.vh.dir.Get(carol.UserID).Mobile },
			},
			{
				kind: verify.KindEmail, address: freeEmail,
				send:  func() string { return e.vh.sendEmail(t, carol, verify.BindEmail, freeEmail) },
				check: func(code string) string { return mailCheckTarget("BIND_EMAIL", " new@EXAMPLE.com", code) },
				body: func(code, secret string) string {
					return jsonOf(t, map[string]any{"bizKey": "BIND_EMAIL", "email": freeEmail, "verificationCode": code, "linkSecret": secret})
				},
				current: func() string { return e.vh.dir.Get(carol.UserID).Email },
			},
		} {
			t.Run(string(tc.kind), func(t *testing.T) {
				path := map[verify.Kind]string{verify.KindSMS: mobilePath, verify.KindEmail: emailPath}[tc.kind]
				code := tc.send()
				var link verify.Link
				e.call(t, http.MethodGet, tc.check(code), "carol", "").wantOK(t, &link)

				// Pairs that are not of that check: 400 on linkSecret, the
				// rule in msg, nothing changed and nothing spent.
				for _, bad := range []struct{ name, code, secret string }{
					{"another code", wrongCode(code), link.Secret},
					{"an unknown secret", code, "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"},
				} {
					a := e.call(t, http.MethodPatch, path, "carol", tc.body(bad.code, bad.secret))
					a.wantError(t, 400, httpapi.KeyValidation, "linkSecret")
					if !strings.Contains(a.msg, "checking this verificationCode") {
						t.Errorf("%s: msg %q does not give the rule", bad.name, a.msg)
					}
					if got := tc.current(); got != "" {
						t.Fatalf("%s: carol's address changed to %s", bad.name, got)
					}
				}

				// The natural request: the check's code and its secret.
				var d verify.Detail
				e.call(t, http.MethodPatch, path, "carol", tc.body(code, link.Secret)).wantOK(t, &d)
				if got := tc.current(); got != tc.address {
					t.Errorf("carol's address %q, want %s", got, tc.address)
				}
				if (tc.kind == verify.KindSMS && (d.Mobile != freeMobile || d.ITC != 86)) || (tc.kind == verify.KindEmail && d.Email != freeEmail) {
					t.Errorf("detail %+v, want %s", d, tc.address)
				}

				// Replayed: carol has the address now; and once it is gone
				// again, the secret is spent.
				e.call(t, http.MethodPatch, path, "carol", tc.body(code, link.Secret)).wantError(t, 409, httpapi.KeyAlreadyBound, "")
				e.vh.dir.SetAddress(carol.UserID, tc.kind, "")
				e.call(t, http.MethodPatch, path, "carol", tc.body(code, link.Secret)).wantError(t, 400, httpapi.KeyValidation, "linkSecret")
				if got := tc.current(); got != "" {
					t.Errorf("carol's address after the replays: %q", got)
				}
			})
		}
	})
}
