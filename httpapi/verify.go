package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"

	"github.com/swaggest/jsonschema-go"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// verifyRoutes are the current user's operations.
func verifyRoutes(v VerifyService) []operation {
	h := verifyHandlers{v}
	return []operation{
		op("getCurrentUser", http.MethodGet, "/user/current", getCurrentUserDoc, h.detail),
		op("updateCurrentUser", http.MethodPatch, "/user/current", updateCurrentUserDoc, h.updateProfile),
		op("getCurrentUserTenant", http.MethodGet, "/user/current/tenant", getCurrentUserTenantDoc, h.tenant),
		op("sendSmsCode", http.MethodPost, "/user/current/sms/send", sendSmsCodeDoc, h.sendSMS),
		op("sendEmailCode", http.MethodPost, "/user/current/email/send", sendEmailCodeDoc, h.sendEmail),
		op("checkSmsCode", http.MethodGet, "/user/current/sms/check", checkSmsCodeDoc, h.checkSMS),
		op("checkEmailCode", http.MethodGet, "/user/current/email/check", checkEmailCodeDoc, h.checkEmail),
		op("changeMobile", http.MethodPatch, "/user/current/mobile", changeMobileDoc, h.changeMobile),
		op("changeEmail", http.MethodPatch, "/user/current/email", changeEmailDoc, h.changeEmail),
	}
}

type verifyHandlers struct{ v VerifyService }

// digits is a field the source system's API writes as a number in bodies:
// mobile, itc, verificationCode. It takes a JSON number (an integer written without
// sign, fraction or exponent) or a JSON string, and keeps the digits as
// written; the service checks them. A code sent as a number has lost its
// leading zeros, which the service pads back.
type digits string

var digitsType = reflect.TypeFor[digits]()

func (d *digits) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = digits(s)
		return nil
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return &json.UnmarshalTypeError{Value: "number " + string(b), Type: digitsType}
		}
	}
	*d = digits(b)
	return nil
}

// The fields written as digits, each with its own schema: a JSON number
// or a string.
type (
	mobileNumber     struct{ digits }
	verificationCode struct{ digits }
	telephoneCode    struct{ digits }
)

// digitsSchema is a number or a string, as digits takes them.
func digitsSchema(description string, example any, number, str *jsonschema.Schema) (jsonschema.Schema, error) {
	number.WithType(jsonschema.Integer.Type())
	str.WithType(jsonschema.String.Type())
	var s jsonschema.Schema
	s.WithDescription(description).WithExamples(example).WithOneOf(number.ToSchemaOrBool(), str.ToSchemaOrBool())
	return s, nil
}

func (mobileNumber) JSONSchema() (jsonschema.Schema, error) {
	return digitsSchema("A mobile number of the region country: a JSON number of its digits (13800138000), or a string written as a person would (\"13800138000\", \"138 0013 8000\", \"+86 138-0013-8000\"): digits, spaces, dashes, dots, parentheses and a leading +, at most 32 characters. It must be valid for the region and able to receive text messages.", 13800138000,
		(&jsonschema.Schema{}).WithFormat("int64").WithMinimum(0).WithDescription("The number's digits as a JSON number."),
		(&jsonschema.Schema{}).WithMinLength(1).WithMaxLength(32).WithPattern(`^[0-9 ().+-]+$`).WithDescription("The number as written."))
}

func (verificationCode) JSONSchema() (jsonschema.Schema, error) {
	return digitsSchema("The code received: 1 to 8 digits, as a JSON number or a string. Codes have 6 digits; a shorter one is padded with leading zeros, so a code written as a number that lost its leading zero passes (12345 for 012345).", "012345",
		(&jsonschema.Schema{}).WithFormat("int32").WithMinimum(0).WithMaximum(99999999).WithDescription("The code's digits as a JSON number."),
		(&jsonschema.Schema{}).WithMinLength(1).WithMaxLength(8).WithPattern(`^[0-9]{1,8}$`).WithDescription("The code as a string of digits."))
}

func (telephoneCode) JSONSchema() (jsonschema.Schema, error) {
	return digitsSchema("The international telephone code of country (86 for CN), as a JSON number or a string, optionally after a +. Optional; if given it must be the country's.", 86,
		(&jsonschema.Schema{}).WithFormat("int32").WithMinimum(1).WithMaximum(999),
		(&jsonschema.Schema{}).WithMinLength(1).WithMaxLength(4).WithPattern(`^\+?[1-9][0-9]{0,2}$`))
}

// smsBizKey and emailBizKey are the bizKeys of SMS and of e-mail codes.
type (
	smsBizKey   string
	emailBizKey string
)

func (smsBizKey) Enum() []any   { return bizKeys(verify.SMSBizKeys()) }
func (emailBizKey) Enum() []any { return bizKeys(verify.EmailBizKeys()) }

func bizKeys(keys []verify.BizKey) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// itc reads the international telephone code: digits, optionally after a
// "+"; "" is none.
func itc(d digits) (int, error) {
	s := string(d)
	if s == "" {
		return 0, nil
	}
	if s[0] == '+' {
		s = s[1:]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 999 || s[0] == '-' || s[0] == '+' {
		return 0, deskkit.Invalid("itc", "must be a telephone country code of 1 to 3 digits, such as 86")
	}
	return n, nil
}

type profileRequest struct {
	Body profileBody `body:"json"`
}

type profileBody struct {
	_         struct{} `additionalProperties:"false" description:"The fields to change. A field that is absent or null stays as it is; an empty string clears it (except username and gender, which must hold a value). Text must not contain control characters; lengths count characters."`
	Username  *string  `json:"username" minLength:"1" maxLength:"100" description:"Trimmed; unique in the tenant."`
	FirstName *string  `json:"firstName" maxLength:"100"`
	LastName  *string  `json:"lastName" maxLength:"100"`
	FullName  *string  `json:"fullName" maxLength:"100"`
	Landline  *string  `json:"landline" maxLength:"40"`
	Avatar    *string  `json:"avatar" maxLength:"400" description:"An http or https URL of an image, or empty for none."`
	Title     *string  `json:"title" maxLength:"100"`
	Gender    *string  `json:"gender" enum:"MALE,FEMALE,UNKNOWN"`
	Address   *string  `json:"address" maxLength:"200"`
}

type smsSendRequest struct {
	Body smsSendBody `body:"json"`
}

type smsSendBody struct {
	_       struct{}     `additionalProperties:"false" description:"Where to send an SMS code, and for what."`
	BizKey  smsBizKey    `json:"bizKey" required:"true"`
	Mobile  mobileNumber `json:"mobile" required:"true"`
	Country string       `json:"country" required:"true" minLength:"1" maxLength:"16" example:"CN" description:"The mobile number's region: an ISO 3166-1 alpha-2 code, any case (CN, US)."`
}

type emailSendRequest struct {
	Body emailSendBody `body:"json"`
}

type emailSendBody struct {
	_         struct{}         `additionalProperties:"false" description:"Where to send e-mail codes, and for what."`
	BizKey    emailBizKey      `json:"bizKey" required:"true"`
	ToAddress [][]emailAddress `json:"toAddress" minItems:"1" required:"true" description:"The recipients, as an array of arrays of addresses: flattened, duplicates dropped (addresses compare with the domain in lower case); 1 to 5 different addresses must remain. Each is a bare address (ann@example.com, no name or brackets) of at most 100 characters, with a domain name."`
}

// emailAddress is one address of toAddress.
type emailAddress string

func (emailAddress) InlineJSONSchema() {}

func (emailAddress) PrepareJSONSchema(s *jsonschema.Schema) error {
	s.WithFormat("email").WithMinLength(1).WithMaxLength(100)
	return nil
}

type smsCheckRequest struct {
	BizKey  smsBizKey `query:"bizKey" required:"true" example:"MODIFY_MOBILE" description:"The bizKey the code was sent for."`
	Mobile  string    `query:"mobile" required:"true" minLength:"1" maxLength:"32" pattern:"^[0-9 ().+-]+$" example:"13800138000" description:"The number the code was sent to, in any form sendSmsCode takes."`
	Country string    `query:"country" required:"true" minLength:"1" maxLength:"16" example:"CN" description:"The number's region: an ISO 3166-1 alpha-2 code."`
	Code    string    `query:"verificationCode" required:"true" minLength:"1" maxLength:"8" pattern:"^[0-9]{1,8}$" example:"012345" description:"The code received: 1 to 8 digits; a shorter one is padded with leading zeros to 6."`
}

type emailCheckRequest struct {
	BizKey emailBizKey `query:"bizKey" required:"true" example:"MODIFY_EMAIL" description:"The bizKey the code was sent for."`
	Email  string      `query:"email" required:"true" minLength:"1" maxLength:"100" format:"email" example:"alice@example.com" description:"The address the code was sent to."`
	Code   string      `query:"verificationCode" required:"true" minLength:"1" maxLength:"8" pattern:"^[0-9]{1,8}$" example:"012345" description:"The code received: 1 to 8 digits; a shorter one is padded with leading zeros to 6."`
}

type mobileChangeRequest struct {
	Body mobileChangeBody `body:"json"`
}

type mobileChangeBody struct {
	_          struct{}         `additionalProperties:"false" description:"The new mobile number and its proof: with MODIFY_MOBILE, verificationCode and linkSecret; with BIND_MOBILE, verificationCode, linkSecret, or both when they are of one check."`
	BizKey     string           `json:"bizKey" enum:"MODIFY_MOBILE,BIND_MOBILE" required:"true" description:"MODIFY_MOBILE for a user who has a number, BIND_MOBILE for one who has none."`
	Mobile     mobileNumber     `json:"mobile" required:"true"`
	Country    string           `json:"country" required:"true" minLength:"1" maxLength:"16" example:"CN" description:"The mobile number's region: an ISO 3166-1 alpha-2 code, any case (CN, US)."`
	ITC        telephoneCode    `json:"itc"`
	Code       verificationCode `json:"verificationCode"`
	LinkSecret string           `json:"linkSecret" description:"With MODIFY_MOBILE, required: what checkSmsCode answered for a MODIFY_MOBILE code sent to the current number. With BIND_MOBILE, instead of verificationCode or with it: what checkSmsCode answered for the BIND_MOBILE code sent to the new number, which that check used up. Given with verificationCode, it must be the linkSecret that checking that very code answered: otherwise 400, msg naming linkSecret, and nothing is spent."`
}

type emailChangeRequest struct {
	Body emailChangeBody `body:"json"`
}

type emailChangeBody struct {
	_          struct{}         `additionalProperties:"false" description:"The new e-mail address and its proof: with MODIFY_EMAIL, verificationCode and linkSecret; with BIND_EMAIL, verificationCode, linkSecret, or both when they are of one check."`
	BizKey     string           `json:"bizKey" enum:"MODIFY_EMAIL,BIND_EMAIL" required:"true" description:"MODIFY_EMAIL for a user who has an address, BIND_EMAIL for one who has none."`
	Email      string           `json:"email" minLength:"1" maxLength:"100" format:"email" required:"true" description:"The new address: bare (no name or brackets), with a domain name; stored trimmed, the domain in lower case."`
	Code       verificationCode `json:"verificationCode"`
	LinkSecret string           `json:"linkSecret" description:"With MODIFY_EMAIL, required: what checkEmailCode answered for a MODIFY_EMAIL code sent to the current address. With BIND_EMAIL, instead of verificationCode or with it: what checkEmailCode answered for the BIND_EMAIL code sent to the new address, which that check used up. Given with verificationCode, it must be the linkSecret that checking that very code answered: otherwise 400, msg naming linkSecret, and nothing is spent."`
}

type noRequest struct{}

func (h verifyHandlers) detail(ctx context.Context, p deskkit.Principal, _ noRequest) (verify.Detail, error) {
	return h.v.Detail(ctx, p)
}

func (h verifyHandlers) tenant(ctx context.Context, p deskkit.Principal, _ noRequest) (verify.TenantDetail, error) {
	return h.v.Tenant(ctx, p)
}

func (h verifyHandlers) updateProfile(ctx context.Context, p deskkit.Principal, req profileRequest) (verify.Detail, error) {
	b := req.Body
	return h.v.UpdateProfile(ctx, p, verify.Profile{
		Username: b.Username, FirstName: b.FirstName, LastName: b.LastName, FullName: b.FullName,
		Landline: b.Landline, Avatar: b.Avatar, Title: b.Title, Gender: b.Gender, Address: b.Address,
	})
}

func (h verifyHandlers) sendSMS(ctx context.Context, p deskkit.Principal, req smsSendRequest) (verify.Sent, error) {
	b := req.Body
	return h.v.SendSMS(ctx, p, verify.SMSSend{BizKey: verify.BizKey(b.BizKey), Mobile: string(b.Mobile.digits), Country: b.Country})
}

func (h verifyHandlers) sendEmail(ctx context.Context, p deskkit.Principal, req emailSendRequest) (verify.Sent, error) {
	return h.v.SendEmail(ctx, p, verify.EmailSend{BizKey: verify.BizKey(req.Body.BizKey), ToAddress: addresses(req.Body.ToAddress)})
}

// addresses is toAddress as the service takes it.
func addresses(in [][]emailAddress) [][]string {
	out := make([][]string, len(in))
	for i, list := range in {
		out[i] = make([]string, len(list))
		for j, a := range list {
			out[i][j] = string(a)
		}
	}
	return out
}

func (h verifyHandlers) checkSMS(ctx context.Context, p deskkit.Principal, req smsCheckRequest) (verify.Link, error) {
	return h.v.CheckSMS(ctx, p, verify.SMSCheck{BizKey: verify.BizKey(req.BizKey), Mobile: req.Mobile, Country: req.Country, Code: req.Code})
}

func (h verifyHandlers) checkEmail(ctx context.Context, p deskkit.Principal, req emailCheckRequest) (verify.Link, error) {
	return h.v.CheckEmail(ctx, p, verify.EmailCheck{BizKey: verify.BizKey(req.BizKey), Email: req.Email, Code: req.Code})
}

func (h verifyHandlers) changeMobile(ctx context.Context, p deskkit.Principal, req mobileChangeRequest) (verify.Detail, error) {
	b := req.Body
	code, err := itc(b.ITC.digits)
	if err != nil {
		return verify.Detail{}, err
	}
	return h.v.ChangeMobile(ctx, p, verify.MobileChange{
		BizKey: verify.BizKey(b.BizKey), Mobile: string(b.Mobile.digits), Country: b.Country, ITC: code,
		Code: string(b.Code.digits), LinkSecret: b.LinkSecret,
	})
}

func (h verifyHandlers) changeEmail(ctx context.Context, p deskkit.Principal, req emailChangeRequest) (verify.Detail, error) {
	b := req.Body
	return h.v.ChangeEmail(ctx, p, verify.EmailChange{BizKey: verify.BizKey(b.BizKey), Email: b.Email, Code: string(b.Code.digits), LinkSecret: b.LinkSecret})
}

var getCurrentUserDoc = &doc{
	tag:     "user",
	summary: "Query the detail of the current user",
	description: prose(`
		Returns the current user (the token's principal) as the host's user directory holds them,
		with the tenant's name: the mobile number in E.164 with its region (country) and telephone
		code (itc, 0 without a number). Fields the user has not set are empty strings. A user or
		tenant that no longer exists in the directory is 404.
	`),
	ok: "OK. data is the current user.",
	errors: []errDoc{
		userGone,
	},
	example: example{data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
}

var updateCurrentUserDoc = &doc{
	tag:     "user",
	summary: "Update the current user's profile",
	description: prose(`
		Changes the fields of the current user's profile that the body names, and returns the
		updated detail. A field that is absent or null stays as it is; an empty string clears it,
		except username and gender, which must hold a value. Rules: username 1 to 100 characters
		(trimmed), unique in the tenant (409 resource_conflict otherwise); firstName, lastName,
		fullName and title at most 100 characters; landline at most 40; avatar an http or https URL
		of at most 400 (or empty); address at most 200; gender MALE, FEMALE or UNKNOWN; no control
		characters anywhere. A bad field is 400, msg naming it. A body that sets firstName or
		lastName without fullName sets fullName to the parts joined (the part it leaves as stored):
		given name, a space, family name (Alice Liddell), or family then given name without a space
		when either is in a CJK script (王小明); joined longer than 100 characters, it is 400
		naming fullName. The mobile number and e-mail address change only with proof: changeMobile,
		changeEmail.
	`),
	ok: "OK. data is the updated user.",
	errors: []errDoc{
		userGone,
		{key: KeyConflict, when: "Another user of the tenant has the username."},
	},
	example: example{body: raw(`{"firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "title": "Engineer"}`), data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "Engineer", "gender": "FEMALE", "address": ""}`)},
	more: map[string]example{
		"avatar": {summary: "Set the avatar, clear the address", body: raw(`{"avatar": "https://example.com/alice.png", "address": "", "gender": "FEMALE"}`)},
		"names":  {summary: "Set the name's parts; fullName follows (王小明)", body: raw(`{"firstName": "小明", "lastName": "王"}`)},
	},
}

var getCurrentUserTenantDoc = &doc{
	tag:         "user",
	summary:     "Query the tenant of the current user",
	description: "Returns the current user's tenant (organisation) as the host's user directory holds it; a tenant that no longer exists is 404.",
	ok:          "OK. data is the tenant.",
	errors: []errDoc{
		userGone,
	},
	example: example{data: raw(`{"id": 1, "name": "Acme"}`)},
}

// sendErrors are the answers of sendSmsCode and sendEmailCode besides
// success.
var sendErrors = []errDoc{
	userGone,
	{key: KeyAddressTaken},
	{key: KeyAlreadyBound},
	{key: KeyNotBound},
	sendLimited,
	sendFailed,
}

// smsSendErrors are sendSmsCode's: sendErrors, and an SMS provider's
// throttle.
var smsSendErrors = slices.Concat(sendErrors, []errDoc{sendThrottled})

var sendSmsCodeDoc = &doc{
	tag:     "user",
	summary: "Send a verification code by SMS",
	description: prose(`
		Sends a verification code for bizKey by text message to mobile, a number of the region
		country. Each bizKey is a namespace of its own: a code sent for SIGNIN never passes a check
		for MODIFY_MOBILE. data says how long the code is valid and when the number may get another.

		The number must be the user's own or one no other user of the tenant has (409
		verification_address_taken: no code is sent, but the attempt counts toward the user's daily
		requests). BIND_MOBILE is for a user without a number (409 verification_already_bound
		otherwise), MODIFY_MOBILE for one with a number (409 verification_not_bound otherwise). A
		bad field is 400, msg naming it.

		Limits (the defaults; the host may set others): one code per bizKey and number per 60
		seconds and 10 codes per number an hour, both counted per user, so that one user's sends
		never hold back another user's codes; 30 codes per number a day from all users of all
		tenants together, so that many accounts cannot flood one phone (using that up takes more
		than one account's whole day); 20 code requests per user a day. A send refused because
		another user has the address (409) counts toward the user's daily requests only (counting it
		against the address would let anyone block its holder's codes), and a send that did not go
		out (502) toward none. A request over a limit is 429 too_many_requests with Retry-After, the
		seconds until that limit's window ends (60 after a send for the same bizKey and address);
		windows are fixed and open with the first request after the last window closed.

		A code is 6 random digits, valid for 5 minutes and once; a new send for the same bizKey and
		address replaces the previous code. If the SMS gateway refuses the message or cannot be
		reached, nothing went out: the answer is 502 verification_send_failed, no usable code is
		left, and the send gives back what it took of the limits, so that it may be retried at once.
		If the SMS provider refused it for its rate limits (per number or per account), the answer
		is 503 verification_send_throttled instead, with Retry-After: the provider's wait, or 60
		seconds when it gave none. Once the gateway has accepted the message the answer is success
		and the code becomes usable, even if the database was briefly unavailable meanwhile: the
		server records the delivery as soon as the database is back, within the code's 5 minutes.

		The proof flows of MODIFY_* and BIND_* are described under changeMobile.
	`),
	ok:      "OK. The code went out; data says for how long it is valid.",
	errors:  smsSendErrors,
	example: example{body: raw(`{"bizKey": "MODIFY_MOBILE", "mobile": 13800138000, "country": "CN"}`), data: raw(`{"expiresInSeconds": 300, "resendInSeconds": 60}`)},
	more: map[string]example{
		"string": {summary: "mobile as written", body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "+86 137-0013-7000", "country": "cn"}`)},
	},
}

var sendEmailCodeDoc = &doc{
	tag:     "user",
	summary: "Send a verification code by e-mail",
	description: prose(`
		Sends a verification code for bizKey by e-mail to every address of toAddress, an array of
		arrays of addresses that is flattened, with duplicates dropped (addresses compare with the
		domain in lower case): 1 to 5 different addresses must remain, each a bare address of at
		most 100 characters. Each address gets a code of its own, in a message of its own, and every
		address must pass the rules, or nothing is sent to any. Each bizKey is a namespace of its
		own. data says how long the codes are valid and when the addresses may get others.

		An address must be the user's own or one no other user of the tenant has (409
		verification_address_taken: nothing is sent, but the attempt counts toward the user's daily
		requests). BIND_EMAIL is for a user without an address (409 verification_already_bound
		otherwise), MODIFY_EMAIL for one with an address (409 verification_not_bound otherwise). A
		bad field is 400, msg naming it (toAddress[1][0]).

		Limits (the defaults; the host may set others): one code per bizKey and address per 60
		seconds and 10 codes per address (each recipient) an hour, both counted per user, so that
		one user's sends never hold back another user's codes; 30 codes per address a day from all
		users of all tenants together, so that many accounts cannot flood one mailbox (using that up
		takes more than one account's whole day); 20 code requests per user a day, each recipient
		counting one. A send refused because another user has the address (409) counts toward the
		user's daily requests only (counting it against the address would let anyone block its
		holder's codes), and a send that did not go out (502) toward none. A request over a limit is
		429 too_many_requests with Retry-After, the seconds until that limit's window ends (60 after
		a send for the same bizKey and address); windows are fixed and open with the first request
		after the last window closed.

		A code is 6 random digits, valid for 5 minutes and once; a new send for the same bizKey and
		address replaces the previous code. If the mail server refuses a message or cannot be
		reached, the answer is 502 verification_send_failed: the addresses whose messages did not go
		out have no usable code, and their sends give back what they took of the limits, so that
		they may be retried at once; a message that went out before the failure keeps its code,
		usable and counted. Once the mail server has accepted the messages the answer is success and
		the codes become usable, even if the database was briefly unavailable meanwhile: the server
		records the delivery as soon as the database is back, within the codes' 5 minutes.

		The proof flows of MODIFY_* and BIND_* are described under changeEmail.
	`),
	ok:      "OK. The codes went out; data says for how long they are valid.",
	errors:  sendErrors,
	example: example{body: raw(`{"bizKey": "MODIFY_EMAIL", "toAddress": [["alice@example.com"]]}`), data: raw(`{"expiresInSeconds": 300, "resendInSeconds": 60}`)},
	more: map[string]example{
		"several": {summary: "Several, with a duplicate", body: raw(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com", "alice@EXAMPLE.com"], ["ann@example.org"]]}`)},
	},
}

// checkErrors are the answers of checkSmsCode and checkEmailCode besides
// success.
var checkErrors = []errDoc{
	{key: KeyValidation},
	{key: KeyCodeWrong},
	{key: KeyCodeExpired},
	{key: KeyCodeMissing},
	takenSince,
	{key: KeyCodeExhausted},
	{key: KeyTooManyFailures},
}

// codeChecks is how checkSmsCode and checkEmailCode check a code, as both
// documents say it.
const codeChecks = `
		verificationCode is 1 to 8 digits; a code shorter than 6 is padded with leading zeros, so
		one whose leading zero was lost (12345 for 012345) passes. A code that does not match is 400
		verification_code_wrong (msg says how many attempts are left); one that matches a code that
		expired (5 minutes) is 400 verification_code_expired; with no usable code for this bizKey
		and address (never sent, replaced, its send failed, or used) the answer is 400
		verification_code_missing; for a code already used, msg says so and, with BIND_*, points at
		the linkSecret its check answered, which changeMobile or changeEmail takes, alone or with
		that code. A code survives 5 wrong attempts; then it is dead, 429
		verification_code_exhausted, and a new one must be requested. A user may enter 20 wrong
		codes a day (by default), across codes and bizKeys; once they have, every check and change
		is 429 verification_failures_exceeded with Retry-After, even with a right code. A right code
		does not count as a failure.`

var checkSmsCodeDoc = &doc{
	tag:     "user",
	summary: "Check an SMS verification code",
	description: prose(`
		Checks a code that sendSmsCode sent the current user for the same bizKey and number (written
		in any form sendSmsCode takes) and, if it is right, uses it up and answers a linkSecret:
		proof, good once and for 10 minutes, that the user received a code at this number for this
		bizKey. All four parameters are required; a bad one is 400, msg naming it, and so are
		parameters it does not define. An address another user of the tenant holds is 409
		verification_address_taken. A check reads no more of the user than the token's ids: for a
		user the directory no longer has there is simply no code (400 verification_code_missing),
		not 404.

` + codeChecks + `

		The proof flows of MODIFY_* and BIND_* are described under changeMobile.
	`),
	ok:      "OK. The code was right; data holds the link secret.",
	errors:  checkErrors,
	example: example{data: raw(`{"linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
}

var checkEmailCodeDoc = &doc{
	tag:     "user",
	summary: "Check an e-mail verification code",
	description: prose(`
		Checks a code that sendEmailCode sent the current user for the same bizKey and address and,
		if it is right, uses it up and answers a linkSecret: proof, good once and for 10 minutes,
		that the user received a code at this address for this bizKey. All three parameters are
		required; a bad one is 400, msg naming it, and so are parameters it does not define. An
		address another user of the tenant holds is 409 verification_address_taken. A check reads no
		more of the user than the token's ids: for a user the directory no longer has there is
		simply no code (400 verification_code_missing), not 404.

` + codeChecks + `

		The proof flows of MODIFY_* and BIND_* are described under changeEmail.
	`),
	ok:      "OK. The code was right; data holds the link secret.",
	errors:  checkErrors,
	example: example{data: raw(`{"linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
}

// changeErrors are the answers of changeMobile and changeEmail besides
// success: a code checked as checkSmsCode checks it, a link secret spent,
// and the address changed, in one transaction.
var changeErrors = []errDoc{
	{key: KeyValidation},
	{key: KeyCodeWrong},
	{key: KeyCodeExpired},
	{key: KeyCodeMissing},
	linkRefused,
	userGone,
	{key: KeyAddressTaken},
	{key: KeyAlreadyBound},
	{key: KeyNotBound},
	{key: KeyConflict},
	{key: KeyCodeExhausted},
	{key: KeyTooManyFailures},
}

// changeChecks is what changeMobile and changeEmail check, in their
// order, as both documents say it.
const changeChecks = `
		The code is checked first (with the rules and errors of checking a code: 400
		verification_code_wrong, _expired, _missing; 429 verification_code_exhausted,
		verification_failures_exceeded), in the same transaction that spends the link secret and
		changes the address: a wrong code leaves the link secret unspent, and a refused change
		leaves both. A code that a check already used up is 400 verification_code_missing, msg
		saying so and, with BIND_*, pointing at the linkSecret that check answered. A linkSecret
		that is unknown, used, expired (10 minutes), of another user or bizKey, or won on the wrong
		address is 403 link_secret_invalid: with MODIFY_* it must have been won on the current
		address (a code checked for the new address proves nothing about the old), with BIND_* on
		the new one. BIND_* for a user who has an address of that kind is 409
		verification_already_bound, MODIFY_* for one who has none 409 verification_not_bound; an
		address another user of the tenant has is 409 verification_address_taken, and 409
		resource_conflict if the address changed meanwhile (a concurrent change). A MODIFY_* without
		linkSecret, a BIND_* whose verificationCode and linkSecret are not of one check, no
		verificationCode (with MODIFY_*, or with BIND_* without linkSecret), the user's current
		address, and bad fields are 400 param_validation_error, msg naming the field.`

var changeMobileDoc = &doc{
	tag:     "user",
	summary: "Change the current user's mobile number",
	description: prose(`
		Changes the current user's mobile number, with proof, and returns the updated detail. With
		MODIFY_MOBILE (the user has a number), linkSecret is what checkSmsCode answered for a
		MODIFY_MOBILE code sent to the current number, and verificationCode a MODIFY_MOBILE code
		sent to the new number. With BIND_MOBILE (the user has none), one proof of the new number is
		enough: verificationCode, a BIND_MOBILE code sent to it; or, once checkSmsCode has used that
		code up, linkSecret, what that check answered, alone or with that same verificationCode (the
		body of a client that checked first): the pair passes when linkSecret is the one that
		checking this very code for this number answered. The code is not checked again (its check
		used it up, once), so the pair spends the linkSecret only. A pair that is not of one check
		(another code; a linkSecret unknown, used, expired, of another user, or won on another
		number) is 400 param_validation_error, msg naming linkSecret and the rule, and spends
		nothing; replaying the pair after the change is 409 verification_already_bound. itc, if
		given, must be the telephone code of country.

` + changeChecks + `
		After the
		change, a notice goes to the old number (from the outbox, retried, sent once even with
		several servers), and the event user.mobile.changed to the tenant's channels that subscribe
		to it (both addresses masked).

		The proof flow of MODIFY_MOBILE: (1) sendSmsCode with MODIFY_MOBILE to the current number;
		(2) checkSmsCode with that code, which answers a linkSecret; (3) sendSmsCode with
		MODIFY_MOBILE to the new number; (4) changeMobile with the new number, the code of step 3
		and the linkSecret. BIND_MOBILE, for a user without a number, takes one proof of the new
		number: sendSmsCode with BIND_MOBILE to it, then changeMobile with that code and without
		linkSecret; or, when the client checks the code first (checkSmsCode uses it up),
		changeMobile with the linkSecret that check answered, alone or with that same code. For
		every other bizKey, checkSmsCode answers a linkSecret that the host redeems for its own flow
		(a password update, cancelling an account).
	`),
	ok:      "OK. data is the updated user.",
	errors:  changeErrors,
	example: example{body: raw(`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": 12345, "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`), data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613700137000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
	more: map[string]example{
		"bind":            {summary: "BIND_MOBILE, digits as strings", body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "137 0013 7000", "country": "CN", "itc": "+86", "verificationCode": "012345"}`)},
		"bindChecked":     {summary: "BIND_MOBILE after checkSmsCode used the code up: its linkSecret instead", body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "13700137000", "country": "CN", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
		"bindCheckedPair": {summary: "BIND_MOBILE after checkSmsCode: the code it checked and the linkSecret it answered", body: raw(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	},
}

var changeEmailDoc = &doc{
	tag:     "user",
	summary: "Change the current user's e-mail address",
	description: prose(`
		Changes the current user's e-mail address, with proof, and returns the updated detail. With
		MODIFY_EMAIL (the user has an address), linkSecret is what checkEmailCode answered for a
		MODIFY_EMAIL code sent to the current address, and verificationCode a MODIFY_EMAIL code sent
		to the new address. With BIND_EMAIL (the user has none), one proof of the new address is
		enough: verificationCode, a BIND_EMAIL code sent to it; or, once checkEmailCode has used
		that code up, linkSecret, what that check answered, alone or with that same verificationCode
		(the body of a client that checked first): the pair passes when linkSecret is the one that
		checking this very code for this address answered. The code is not checked again (its check
		used it up, once), so the pair spends the linkSecret only. A pair that is not of one check
		(another code; a linkSecret unknown, used, expired, of another user, or won on another
		address) is 400 param_validation_error, msg naming linkSecret and the rule, and spends
		nothing; replaying the pair after the change is 409 verification_already_bound. The address
		is stored trimmed, its domain in lower case.

` + changeChecks + `
		After the
		change, a notice goes to the old address (from the outbox, retried, sent once even with
		several servers), and the event user.email.changed to the tenant's channels that subscribe
		to it (both addresses masked).

		The proof flow of MODIFY_EMAIL: (1) sendEmailCode with MODIFY_EMAIL to the current address;
		(2) checkEmailCode with that code, which answers a linkSecret; (3) sendEmailCode with
		MODIFY_EMAIL to the new address; (4) changeEmail with the new address, the code of step 3
		and the linkSecret. BIND_EMAIL, for a user without an address, takes one proof of the new
		address: sendEmailCode with BIND_EMAIL to it, then changeEmail with that code and without
		linkSecret; or, when the client checks the code first (checkEmailCode uses it up),
		changeEmail with the linkSecret that check answered, alone or with that same code. For every
		other bizKey, checkEmailCode answers a linkSecret that the host redeems for its own flow.
	`),
	ok:      "OK. data is the updated user.",
	errors:  changeErrors,
	example: example{body: raw(`{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`), data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.org", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
	more: map[string]example{
		"bind":            {summary: "BIND_EMAIL, the code as a number", body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "verificationCode": 12345}`)},
		"bindChecked":     {summary: "BIND_EMAIL after checkEmailCode used the code up: its linkSecret instead", body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
		"bindCheckedPair": {summary: "BIND_EMAIL after checkEmailCode: the code it checked and the linkSecret it answered", body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	userGone      = errDoc{name: "CurrentUserNotFound", key: KeyNotFound, when: "The token's user or tenant no longer exists in the host's user directory."}
	sendLimited   = errDoc{name: "SendTooManyRequests", key: KeyTooManyRequests, when: "A send limit is reached. By default: one code per bizKey and address per 60 seconds and 10 per address an hour, both per user; 30 per address a day from all users of all tenants together; 20 requests per user a day, a send refused with 409 verification_address_taken included. A send that did not go out (502 verification_send_failed) counts toward none. msg says which limit; retry after Retry-After seconds."}
	sendFailed    = errDoc{name: "SendFailed", key: KeySendFailed, when: "The SMS gateway or mail server refused the message, could not be reached, or did not answer in time: by its word nothing went out, so no usable code is left for that address, and the send gave back what it took of the limits, so that it may be retried at once. A send the gateway or mail server answered that it accepted is never answered so, even if the database was briefly unavailable meanwhile: its code becomes usable once the database is back."}
	sendThrottled = errDoc{key: KeySendThrottled, when: "The SMS provider refused the message for its rate limits (per number or per account): nothing went out, no usable code is left, and the send gave back what it took of the limits. Retry after Retry-After seconds: the provider's wait, or 60 when it gave none."}
	linkRefused   = errDoc{name: "LinkSecretRefused", key: KeyLinkSecretRefused, when: "The linkSecret is unknown, used, expired (10 minutes), of another user or bizKey, or was won on the wrong address: with MODIFY_*, any but the current one; with BIND_*, any but the new one."}
	takenSince    = errDoc{name: "CheckConflict", key: KeyAddressTaken, when: "verification_address_taken: another user of the tenant holds the address now (it was taken since the code went out); the code proves nothing the user could use."}
)
