package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// verifyRoutes are the current user's operations.
func verifyRoutes(v VerifyService) []Operation {
	h := verifyHandlers{v}
	return []Operation{
		Op("getCurrentUser", http.MethodGet, "/user/current", h.detail).With(getCurrentUserDoc),
		Op("updateCurrentUser", http.MethodPatch, "/user/current", h.updateProfile).With(updateCurrentUserDoc),
		Op("getCurrentUserTenant", http.MethodGet, "/user/current/tenant", h.tenant).With(getCurrentUserTenantDoc),
		Op("sendSmsCode", http.MethodPost, "/user/current/sms/send", h.sendSMS).With(sendSmsCodeDoc),
		Op("sendEmailCode", http.MethodPost, "/user/current/email/send", h.sendEmail).With(sendEmailCodeDoc),
		Op("checkSmsCode", http.MethodGet, "/user/current/sms/check", h.checkSMS).With(checkSmsCodeDoc),
		Op("checkEmailCode", http.MethodGet, "/user/current/email/check", h.checkEmail).With(checkEmailCodeDoc),
		Op("changeMobile", http.MethodPatch, "/user/current/mobile", h.changeMobile).With(changeMobileDoc),
		Op("changeEmail", http.MethodPatch, "/user/current/email", h.changeEmail).With(changeEmailDoc),
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

// profileRequest is the body of PATCH /user/current. A field that is
// absent or null stays as it is.
type profileRequest struct {
	Body profileBody `body:"json"`
}

type profileBody struct {
	Username  *string `json:"username"`
	FirstName *string `json:"firstName"`
	LastName  *string `json:"lastName"`
	FullName  *string `json:"fullName"`
	Landline  *string `json:"landline"`
	Avatar    *string `json:"avatar"`
	Title     *string `json:"title"`
	Gender    *string `json:"gender"`
	Address   *string `json:"address"`
}

type smsSendRequest struct {
	Body smsSendBody `body:"json"`
}

type smsSendBody struct {
	BizKey  verify.BizKey `json:"bizKey"`
	Mobile  digits        `json:"mobile"`
	Country string        `json:"country"`
}

type emailSendRequest struct {
	Body emailSendBody `body:"json"`
}

type emailSendBody struct {
	BizKey    verify.BizKey `json:"bizKey"`
	ToAddress [][]string    `json:"toAddress"`
}

type smsCheckRequest struct {
	BizKey  string `query:"bizKey,required"`
	Mobile  string `query:"mobile,required"`
	Country string `query:"country,required"`
	Code    string `query:"verificationCode,required"`
}

type emailCheckRequest struct {
	BizKey string `query:"bizKey,required"`
	Email  string `query:"email,required"`
	Code   string `query:"verificationCode,required"`
}

type mobileChangeRequest struct {
	Body mobileChangeBody `body:"json"`
}

type mobileChangeBody struct {
	BizKey     verify.BizKey `json:"bizKey"`
	Mobile     digits        `json:"mobile"`
	Country    string        `json:"country"`
	ITC        digits        `json:"itc"`
	Code       digits        `json:"verificationCode"`
	LinkSecret string        `json:"linkSecret"`
}

type emailChangeRequest struct {
	Body emailChangeBody `body:"json"`
}

type emailChangeBody struct {
	BizKey     verify.BizKey `json:"bizKey"`
	Email      string        `json:"email"`
	Code       digits        `json:"verificationCode"`
	LinkSecret string        `json:"linkSecret"`
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
	return h.v.SendSMS(ctx, p, verify.SMSSend{BizKey: b.BizKey, Mobile: string(b.Mobile), Country: b.Country})
}

func (h verifyHandlers) sendEmail(ctx context.Context, p deskkit.Principal, req emailSendRequest) (verify.Sent, error) {
	return h.v.SendEmail(ctx, p, verify.EmailSend{BizKey: req.Body.BizKey, ToAddress: req.Body.ToAddress})
}

func (h verifyHandlers) checkSMS(ctx context.Context, p deskkit.Principal, req smsCheckRequest) (verify.Link, error) {
	return h.v.CheckSMS(ctx, p, verify.SMSCheck{BizKey: verify.BizKey(req.BizKey), Mobile: req.Mobile, Country: req.Country, Code: req.Code})
}

func (h verifyHandlers) checkEmail(ctx context.Context, p deskkit.Principal, req emailCheckRequest) (verify.Link, error) {
	return h.v.CheckEmail(ctx, p, verify.EmailCheck{BizKey: verify.BizKey(req.BizKey), Email: req.Email, Code: req.Code})
}

func (h verifyHandlers) changeMobile(ctx context.Context, p deskkit.Principal, req mobileChangeRequest) (verify.Detail, error) {
	b := req.Body
	code, err := itc(b.ITC)
	if err != nil {
		return verify.Detail{}, err
	}
	return h.v.ChangeMobile(ctx, p, verify.MobileChange{
		BizKey: b.BizKey, Mobile: string(b.Mobile), Country: b.Country, ITC: code,
		Code: string(b.Code), LinkSecret: b.LinkSecret,
	})
}

func (h verifyHandlers) changeEmail(ctx context.Context, p deskkit.Principal, req emailChangeRequest) (verify.Detail, error) {
	b := req.Body
	return h.v.ChangeEmail(ctx, p, verify.EmailChange{BizKey: b.BizKey, Email: b.Email, Code: string(b.Code), LinkSecret: b.LinkSecret})
}

var getCurrentUserDoc = &Doc{
	Tag:         "user",
	Summary:     "Query the detail of the current user",
	Description: "Returns the current user (the token's principal) as the host's user directory holds them, with the tenant's name: the mobile number in E.164 with its region (country) and telephone code (itc, 0 without a number). Fields the user has not set are empty strings. A user or tenant that no longer exists in the directory is 404. It takes no parameters: any query parameter is 400.",
	OK:          "OK. data is the current user.",
	Errors: []ErrorDoc{
		userGone,
	},
	Example: Example{Data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
}

var updateCurrentUserDoc = &Doc{
	Tag:         "user",
	Summary:     "Update the current user's profile",
	Description: "Changes the fields of the current user's profile that the body names, and returns the updated detail. A field that is absent or null stays as it is; an empty string clears it, except username and gender, which must hold a value. Rules: username 1 to 100 characters (trimmed), unique in the tenant (409 resource_conflict otherwise); firstName, lastName, fullName and title at most 100 characters; landline at most 40; avatar an http or https URL of at most 400 (or empty); address at most 200; gender MALE, FEMALE or UNKNOWN; no control characters anywhere. A bad field is 400, msg naming it. The mobile number and e-mail address change only with proof: changeMobile, changeEmail. Unknown body fields, and any query parameter, are 400.",
	OK:          "OK. data is the updated user.",
	Errors: []ErrorDoc{
		userGone,
		{Key: KeyConflict, When: "Another user of the tenant has the username."},
	},
	Example: Example{Body: raw(`{"firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "title": "Engineer"}`), Data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "Engineer", "gender": "FEMALE", "address": ""}`)},
	More: map[string]Example{
		"avatar": {Summary: "Set the avatar, clear the address", Body: raw(`{"avatar": "https://example.com/alice.png", "address": "", "gender": "FEMALE"}`)},
	},
}

var getCurrentUserTenantDoc = &Doc{
	Tag:         "user",
	Summary:     "Query the tenant of the current user",
	Description: "Returns the current user's tenant (organisation) as the host's user directory holds it; a tenant that no longer exists is 404. It takes no parameters: any query parameter is 400.",
	OK:          "OK. data is the tenant.",
	Errors: []ErrorDoc{
		userGone,
	},
	Example: Example{Data: raw(`{"id": 1, "name": "Acme"}`)},
}

// sendErrors are the answers of sendSmsCode and sendEmailCode besides
// success.
var sendErrors = []ErrorDoc{
	userGone,
	{Key: KeyAddressTaken},
	{Key: KeyAlreadyBound},
	{Key: KeyNotBound},
	sendLimited,
	sendFailed,
}

var sendSmsCodeDoc = &Doc{
	Tag:         "user",
	Summary:     "Send a verification code by SMS",
	Description: "Sends a verification code for bizKey by text message to mobile, a number of the region country. Each bizKey is a namespace of its own: a code sent for SIGNIN never passes a check for MODIFY_MOBILE. data says how long the code is valid and when the number may get another.\n\nThe number must be the user's own or one no other user of the tenant has (409 verification_address_taken: no code is sent, but the attempt counts toward the user's daily requests). BIND_MOBILE is for a user without a number (409 verification_already_bound otherwise), MODIFY_MOBILE for one with a number (409 verification_not_bound otherwise). A bad field is 400, msg naming it. Unknown body fields, and any query parameter, are 400.\n\nLimits (the defaults; the host may set others): one code per bizKey and number per 60 seconds and 10 codes per number an hour, both counted per user, so that one user's sends never hold back another user's codes; 30 codes per number a day from all users of all tenants together, so that many accounts cannot flood one phone (using that up takes more than one account's whole day); 20 code requests per user a day. A send refused because another user has the address (409) counts toward the user's daily requests only (counting it against the address would let anyone block its holder's codes), and a send that did not go out (502) toward none. A request over a limit is 429 too_many_requests with Retry-After, the seconds until that limit's window ends (60 after a send for the same bizKey and address); windows are fixed and open with the first request after the last window closed.\n\nA code is 6 random digits, valid for 5 minutes and once; a new send for the same bizKey and address replaces the previous code. If the SMS gateway refuses the message or cannot be reached, nothing went out: the answer is 502 verification_send_failed, no usable code is left, and the send gives back what it took of the limits, so that it may be retried at once. Once the gateway has accepted the message the answer is success and the code becomes usable, even if the database was briefly unavailable meanwhile: the server records the delivery as soon as the database is back, within the code's 5 minutes.\n\nThe proof flow of MODIFY_MOBILE: (1) sendSmsCode with MODIFY_MOBILE to the current number; (2) checkSmsCode with that code, which answers a linkSecret; (3) sendSmsCode with MODIFY_MOBILE to the new number; (4) changeMobile with the new number, the code of step 3 and the linkSecret. BIND_MOBILE, for a user without a number, takes one proof of the new number: sendSmsCode with BIND_MOBILE to it, then changeMobile with that code and without linkSecret; or, when the client checks the code first (checkSmsCode uses it up), changeMobile with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkSmsCode answers a linkSecret that the host redeems for its own flow (a password update, cancelling an account).",
	OK:          "OK. The code went out; data says for how long it is valid.",
	Errors:      sendErrors,
	Example:     Example{Body: raw(`{"bizKey": "MODIFY_MOBILE", "mobile": 13800138000, "country": "CN"}`), Data: raw(`{"expiresInSeconds": 300, "resendInSeconds": 60}`)},
	More: map[string]Example{
		"string": {Summary: "mobile as written", Body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "+86 137-0013-7000", "country": "cn"}`)},
	},
}

var sendEmailCodeDoc = &Doc{
	Tag:         "user",
	Summary:     "Send a verification code by e-mail",
	Description: "Sends a verification code for bizKey by e-mail to every address of toAddress, an array of arrays of addresses that is flattened, with duplicates dropped (addresses compare with the domain in lower case): 1 to 5 different addresses must remain, each a bare address of at most 100 characters. Each address gets a code of its own, in a message of its own, and every address must pass the rules, or nothing is sent to any. Each bizKey is a namespace of its own. data says how long the codes are valid and when the addresses may get others.\n\nAn address must be the user's own or one no other user of the tenant has (409 verification_address_taken: nothing is sent, but the attempt counts toward the user's daily requests). BIND_EMAIL is for a user without an address (409 verification_already_bound otherwise), MODIFY_EMAIL for one with an address (409 verification_not_bound otherwise). A bad field is 400, msg naming it (toAddress[1][0]). Unknown body fields, and any query parameter, are 400.\n\nLimits (the defaults; the host may set others): one code per bizKey and address per 60 seconds and 10 codes per address (each recipient) an hour, both counted per user, so that one user's sends never hold back another user's codes; 30 codes per address a day from all users of all tenants together, so that many accounts cannot flood one mailbox (using that up takes more than one account's whole day); 20 code requests per user a day, each recipient counting one. A send refused because another user has the address (409) counts toward the user's daily requests only (counting it against the address would let anyone block its holder's codes), and a send that did not go out (502) toward none. A request over a limit is 429 too_many_requests with Retry-After, the seconds until that limit's window ends (60 after a send for the same bizKey and address); windows are fixed and open with the first request after the last window closed.\n\nA code is 6 random digits, valid for 5 minutes and once; a new send for the same bizKey and address replaces the previous code. If the mail server refuses a message or cannot be reached, the answer is 502 verification_send_failed: the addresses whose messages did not go out have no usable code, and their sends give back what they took of the limits, so that they may be retried at once; a message that went out before the failure keeps its code, usable and counted. Once the mail server has accepted the messages the answer is success and the codes become usable, even if the database was briefly unavailable meanwhile: the server records the delivery as soon as the database is back, within the codes' 5 minutes.\n\nThe proof flow of MODIFY_EMAIL: (1) sendEmailCode with MODIFY_EMAIL to the current address; (2) checkEmailCode with that code, which answers a linkSecret; (3) sendEmailCode with MODIFY_EMAIL to the new address; (4) changeEmail with the new address, the code of step 3 and the linkSecret. BIND_EMAIL, for a user without an address, takes one proof of the new address: sendEmailCode with BIND_EMAIL to it, then changeEmail with that code and without linkSecret; or, when the client checks the code first (checkEmailCode uses it up), changeEmail with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkEmailCode answers a linkSecret that the host redeems for its own flow.",
	OK:          "OK. The codes went out; data says for how long they are valid.",
	Errors:      sendErrors,
	Example:     Example{Body: raw(`{"bizKey": "MODIFY_EMAIL", "toAddress": [["alice@example.com"]]}`), Data: raw(`{"expiresInSeconds": 300, "resendInSeconds": 60}`)},
	More: map[string]Example{
		"several": {Summary: "Several, with a duplicate", Body: raw(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com", "alice@EXAMPLE.com"], ["ann@example.org"]]}`)},
	},
}

// checkErrors are the answers of checkSmsCode and checkEmailCode besides
// success.
var checkErrors = []ErrorDoc{
	{Key: KeyValidation},
	{Key: KeyCodeWrong},
	{Key: KeyCodeExpired},
	{Key: KeyCodeMissing},
	takenSince,
	{Key: KeyCodeExhausted},
	{Key: KeyTooManyFailures},
}

var checkSmsCodeDoc = &Doc{
	Tag:         "user",
	Summary:     "Check an SMS verification code",
	Description: "Checks a code that sendSmsCode sent the current user for the same bizKey and number (written in any form sendSmsCode takes) and, if it is right, uses it up and answers a linkSecret: proof, good once and for 10 minutes, that the user received a code at this number for this bizKey. All four parameters are required; a bad one is 400, msg naming it, and so are parameters it does not define. An address another user of the tenant holds is 409 verification_address_taken. A check reads no more of the user than the token's ids: for a user the directory no longer has there is simply no code (400 verification_code_missing), not 404.\n\nverificationCode is 1 to 8 digits; a code shorter than 6 is padded with leading zeros, so one whose leading zero was lost (12345 for 012345) passes. A code that does not match is 400 verification_code_wrong (msg says how many attempts are left); one that matches a code that expired (5 minutes) is 400 verification_code_expired; with no usable code for this bizKey and address (never sent, replaced, its send failed, or used) the answer is 400 verification_code_missing; for a code already used, msg says so and, with BIND_*, points at the linkSecret its check answered, which changeMobile or changeEmail takes, alone or with that code. A code survives 5 wrong attempts; then it is dead, 429 verification_code_exhausted, and a new one must be requested. A user may enter 20 wrong codes a day (by default), across codes and bizKeys; once they have, every check and change is 429 verification_failures_exceeded with Retry-After, even with a right code. A right code does not count as a failure.\n\nThe proof flow of MODIFY_MOBILE: (1) sendSmsCode with MODIFY_MOBILE to the current number; (2) checkSmsCode with that code, which answers a linkSecret; (3) sendSmsCode with MODIFY_MOBILE to the new number; (4) changeMobile with the new number, the code of step 3 and the linkSecret. BIND_MOBILE, for a user without a number, takes one proof of the new number: sendSmsCode with BIND_MOBILE to it, then changeMobile with that code and without linkSecret; or, when the client checks the code first (checkSmsCode uses it up), changeMobile with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkSmsCode answers a linkSecret that the host redeems for its own flow (a password update, cancelling an account).",
	OK:          "OK. The code was right; data holds the link secret.",
	Errors:      checkErrors,
	Example:     Example{Data: raw(`{"linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	Params: []Param{
		{Name: "bizKey", Description: "The bizKey the code was sent for.", Example: "MODIFY_MOBILE", Schema: `{"$ref": "#/components/schemas/SmsBizKey"}`},
		{Name: "mobile", Description: "The number the code was sent to, in any form sendSmsCode takes.", Example: "13800138000", Schema: `{"type": "string", "minLength": 1, "maxLength": 32, "pattern": "^[0-9 ().+-]+$"}`},
		{Name: "country", Description: "The number's region: an ISO 3166-1 alpha-2 code.", Example: "CN", Schema: `{"type": "string", "minLength": 1, "maxLength": 16}`},
		{Name: "verificationCode", Description: "The code received: 1 to 8 digits; a shorter one is padded with leading zeros to 6.", Example: "012345", Schema: `{"type": "string", "pattern": "^[0-9]{1,8}$", "minLength": 1, "maxLength": 8}`},
	},
}

var checkEmailCodeDoc = &Doc{
	Tag:         "user",
	Summary:     "Check an e-mail verification code",
	Description: "Checks a code that sendEmailCode sent the current user for the same bizKey and address and, if it is right, uses it up and answers a linkSecret: proof, good once and for 10 minutes, that the user received a code at this address for this bizKey. All three parameters are required; a bad one is 400, msg naming it, and so are parameters it does not define. An address another user of the tenant holds is 409 verification_address_taken. A check reads no more of the user than the token's ids: for a user the directory no longer has there is simply no code (400 verification_code_missing), not 404.\n\nverificationCode is 1 to 8 digits; a code shorter than 6 is padded with leading zeros, so one whose leading zero was lost (12345 for 012345) passes. A code that does not match is 400 verification_code_wrong (msg says how many attempts are left); one that matches a code that expired (5 minutes) is 400 verification_code_expired; with no usable code for this bizKey and address (never sent, replaced, its send failed, or used) the answer is 400 verification_code_missing; for a code already used, msg says so and, with BIND_*, points at the linkSecret its check answered, which changeMobile or changeEmail takes, alone or with that code. A code survives 5 wrong attempts; then it is dead, 429 verification_code_exhausted, and a new one must be requested. A user may enter 20 wrong codes a day (by default), across codes and bizKeys; once they have, every check and change is 429 verification_failures_exceeded with Retry-After, even with a right code. A right code does not count as a failure.\n\nThe proof flow of MODIFY_EMAIL: (1) sendEmailCode with MODIFY_EMAIL to the current address; (2) checkEmailCode with that code, which answers a linkSecret; (3) sendEmailCode with MODIFY_EMAIL to the new address; (4) changeEmail with the new address, the code of step 3 and the linkSecret. BIND_EMAIL, for a user without an address, takes one proof of the new address: sendEmailCode with BIND_EMAIL to it, then changeEmail with that code and without linkSecret; or, when the client checks the code first (checkEmailCode uses it up), changeEmail with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkEmailCode answers a linkSecret that the host redeems for its own flow.",
	OK:          "OK. The code was right; data holds the link secret.",
	Errors:      checkErrors,
	Example:     Example{Data: raw(`{"linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	Params: []Param{
		{Name: "bizKey", Description: "The bizKey the code was sent for.", Example: "MODIFY_EMAIL", Schema: `{"$ref": "#/components/schemas/EmailBizKey"}`},
		{Name: "email", Description: "The address the code was sent to.", Example: "alice@example.com", Schema: `{"type": "string", "format": "email", "minLength": 1, "maxLength": 100}`},
		{Name: "verificationCode", Description: "The code received: 1 to 8 digits; a shorter one is padded with leading zeros to 6.", Example: "012345", Schema: `{"type": "string", "pattern": "^[0-9]{1,8}$", "minLength": 1, "maxLength": 8}`},
	},
}

// changeErrors are the answers of changeMobile and changeEmail besides
// success: a code checked as checkSmsCode checks it, a link secret spent,
// and the address changed, in one transaction.
var changeErrors = []ErrorDoc{
	{Key: KeyValidation},
	{Key: KeyCodeWrong},
	{Key: KeyCodeExpired},
	{Key: KeyCodeMissing},
	linkRefused,
	userGone,
	{Key: KeyAddressTaken},
	{Key: KeyAlreadyBound},
	{Key: KeyNotBound},
	{Key: KeyConflict},
	{Key: KeyCodeExhausted},
	{Key: KeyTooManyFailures},
}

var changeMobileDoc = &Doc{
	Tag:         "user",
	Summary:     "Change the current user's mobile number",
	Description: "Changes the current user's mobile number, with proof, and returns the updated detail. With MODIFY_MOBILE (the user has a number), linkSecret is what checkSmsCode answered for a MODIFY_MOBILE code sent to the current number, and verificationCode a MODIFY_MOBILE code sent to the new number. With BIND_MOBILE (the user has none), one proof of the new number is enough: verificationCode, a BIND_MOBILE code sent to it; or, once checkSmsCode has used that code up, linkSecret, what that check answered, alone or with that same verificationCode (the body of a client that checked first): the pair passes when linkSecret is the one that checking this very code for this number answered. The code is not checked again (its check used it up, once), so the pair spends the linkSecret only. A pair that is not of one check (another code; a linkSecret unknown, used, expired, of another user, or won on another number) is 400 param_validation_error, msg naming linkSecret and the rule, and spends nothing; replaying the pair after the change is 409 verification_already_bound. itc, if given, must be the telephone code of country.\n\nThe code is checked first (with the rules and errors of checking a code: 400 verification_code_wrong, _expired, _missing; 429 verification_code_exhausted, verification_failures_exceeded), in the same transaction that spends the link secret and changes the address: a wrong code leaves the link secret unspent, and a refused change leaves both. A code that a check already used up is 400 verification_code_missing, msg saying so and, with BIND_*, pointing at the linkSecret that check answered. A linkSecret that is unknown, used, expired (10 minutes), of another user or bizKey, or won on the wrong address is 403 link_secret_invalid: with MODIFY_* it must have been won on the current address (a code checked for the new address proves nothing about the old), with BIND_* on the new one. BIND_* for a user who has an address of that kind is 409 verification_already_bound, MODIFY_* for one who has none 409 verification_not_bound; an address another user of the tenant has is 409 verification_address_taken, and 409 resource_conflict if the address changed meanwhile (a concurrent change). A MODIFY_* without linkSecret, a BIND_* whose verificationCode and linkSecret are not of one check, no verificationCode (with MODIFY_*, or with BIND_* without linkSecret), the user's current address, and bad fields are 400 param_validation_error, msg naming the field. After the change, a notice goes to the old number (from the outbox, retried, sent once even with several servers), and the event user.mobile.changed to the tenant's channels that subscribe to it (both addresses masked). Unknown body fields, and any query parameter, are 400.\n\nThe proof flow of MODIFY_MOBILE: (1) sendSmsCode with MODIFY_MOBILE to the current number; (2) checkSmsCode with that code, which answers a linkSecret; (3) sendSmsCode with MODIFY_MOBILE to the new number; (4) changeMobile with the new number, the code of step 3 and the linkSecret. BIND_MOBILE, for a user without a number, takes one proof of the new number: sendSmsCode with BIND_MOBILE to it, then changeMobile with that code and without linkSecret; or, when the client checks the code first (checkSmsCode uses it up), changeMobile with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkSmsCode answers a linkSecret that the host redeems for its own flow (a password update, cancelling an account).",
	OK:          "OK. data is the updated user.",
	Errors:      changeErrors,
	Example:     Example{Body: raw(`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": 12345, "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`), Data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613700137000", "country": "CN", "itc": 86, "email": "alice@example.com", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
	More: map[string]Example{
		"bind":            {Summary: "BIND_MOBILE, digits as strings", Body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "137 0013 7000", "country": "CN", "itc": "+86", "verificationCode": "012345"}`)},
		"bindChecked":     {Summary: "BIND_MOBILE after checkSmsCode used the code up: its linkSecret instead", Body: raw(`{"bizKey": "BIND_MOBILE", "mobile": "13700137000", "country": "CN", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
		"bindCheckedPair": {Summary: "BIND_MOBILE after checkSmsCode: the code it checked and the linkSecret it answered", Body: raw(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	},
}

var changeEmailDoc = &Doc{
	Tag:         "user",
	Summary:     "Change the current user's e-mail address",
	Description: "Changes the current user's e-mail address, with proof, and returns the updated detail. With MODIFY_EMAIL (the user has an address), linkSecret is what checkEmailCode answered for a MODIFY_EMAIL code sent to the current address, and verificationCode a MODIFY_EMAIL code sent to the new address. With BIND_EMAIL (the user has none), one proof of the new address is enough: verificationCode, a BIND_EMAIL code sent to it; or, once checkEmailCode has used that code up, linkSecret, what that check answered, alone or with that same verificationCode (the body of a client that checked first): the pair passes when linkSecret is the one that checking this very code for this address answered. The code is not checked again (its check used it up, once), so the pair spends the linkSecret only. A pair that is not of one check (another code; a linkSecret unknown, used, expired, of another user, or won on another address) is 400 param_validation_error, msg naming linkSecret and the rule, and spends nothing; replaying the pair after the change is 409 verification_already_bound. The address is stored trimmed, its domain in lower case.\n\nThe code is checked first (with the rules and errors of checking a code: 400 verification_code_wrong, _expired, _missing; 429 verification_code_exhausted, verification_failures_exceeded), in the same transaction that spends the link secret and changes the address: a wrong code leaves the link secret unspent, and a refused change leaves both. A code that a check already used up is 400 verification_code_missing, msg saying so and, with BIND_*, pointing at the linkSecret that check answered. A linkSecret that is unknown, used, expired (10 minutes), of another user or bizKey, or won on the wrong address is 403 link_secret_invalid: with MODIFY_* it must have been won on the current address (a code checked for the new address proves nothing about the old), with BIND_* on the new one. BIND_* for a user who has an address of that kind is 409 verification_already_bound, MODIFY_* for one who has none 409 verification_not_bound; an address another user of the tenant has is 409 verification_address_taken, and 409 resource_conflict if the address changed meanwhile (a concurrent change). A MODIFY_* without linkSecret, a BIND_* whose verificationCode and linkSecret are not of one check, no verificationCode (with MODIFY_*, or with BIND_* without linkSecret), the user's current address, and bad fields are 400 param_validation_error, msg naming the field. After the change, a notice goes to the old address (from the outbox, retried, sent once even with several servers), and the event user.email.changed to the tenant's channels that subscribe to it (both addresses masked). Unknown body fields, and any query parameter, are 400.\n\nThe proof flow of MODIFY_EMAIL: (1) sendEmailCode with MODIFY_EMAIL to the current address; (2) checkEmailCode with that code, which answers a linkSecret; (3) sendEmailCode with MODIFY_EMAIL to the new address; (4) changeEmail with the new address, the code of step 3 and the linkSecret. BIND_EMAIL, for a user without an address, takes one proof of the new address: sendEmailCode with BIND_EMAIL to it, then changeEmail with that code and without linkSecret; or, when the client checks the code first (checkEmailCode uses it up), changeEmail with the linkSecret that check answered, alone or with that same code. For every other bizKey, checkEmailCode answers a linkSecret that the host redeems for its own flow.",
	OK:          "OK. data is the updated user.",
	Errors:      changeErrors,
	Example:     Example{Body: raw(`{"bizKey": "MODIFY_EMAIL", "email": "alice@example.org", "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`), Data: raw(`{"id": 2, "tenantId": 1, "tenantName": "Acme", "username": "alice", "firstName": "Alice", "lastName": "Liddell", "fullName": "Alice Liddell", "mobile": "+8613800138000", "country": "CN", "itc": 86, "email": "alice@example.org", "landline": "", "avatar": "https://example.com/alice.png", "title": "", "gender": "FEMALE", "address": ""}`)},
	More: map[string]Example{
		"bind":            {Summary: "BIND_EMAIL, the code as a number", Body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "verificationCode": 12345}`)},
		"bindChecked":     {Summary: "BIND_EMAIL after checkEmailCode used the code up: its linkSecret instead", Body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
		"bindCheckedPair": {Summary: "BIND_EMAIL after checkEmailCode: the code it checked and the linkSecret it answered", Body: raw(`{"bizKey": "BIND_EMAIL", "email": "bob@example.com", "verificationCode": "012345", "linkSecret": "dkl_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`)},
	},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	userGone    = ErrorDoc{Name: "CurrentUserNotFound", Key: KeyNotFound, When: "The token's user or tenant no longer exists in the host's user directory."}
	sendLimited = ErrorDoc{Name: "SendTooManyRequests", Key: KeyTooManyRequests, When: "A send limit is reached. By default: one code per bizKey and address per 60 seconds and 10 per address an hour, both per user; 30 per address a day from all users of all tenants together; 20 requests per user a day, a send refused with 409 verification_address_taken included. A send that did not go out (502 verification_send_failed) counts toward none. msg says which limit; retry after Retry-After seconds."}
	sendFailed  = ErrorDoc{Name: "SendFailed", Key: KeySendFailed, When: "The SMS gateway or mail server refused the message, could not be reached, or did not answer in time: by its word nothing went out, so no usable code is left for that address, and the send gave back what it took of the limits, so that it may be retried at once. A send the gateway or mail server answered that it accepted is never answered so, even if the database was briefly unavailable meanwhile: its code becomes usable once the database is back."}
	linkRefused = ErrorDoc{Name: "LinkSecretRefused", Key: KeyLinkSecretRefused, When: "The linkSecret is unknown, used, expired (10 minutes), of another user or bizKey, or was won on the wrong address: with MODIFY_*, any but the current one; with BIND_*, any but the new one."}
	takenSince  = ErrorDoc{Name: "CheckConflict", Key: KeyAddressTaken, When: "verification_address_taken: another user of the tenant holds the address now (it was taken since the code went out); the code proves nothing the user could use."}
)
