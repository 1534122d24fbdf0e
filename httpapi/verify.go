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
		Op("getCurrentUser", http.MethodGet, "/user/current", h.detail),
		Op("updateCurrentUser", http.MethodPatch, "/user/current", h.updateProfile),
		Op("getCurrentUserTenant", http.MethodGet, "/user/current/tenant", h.tenant),
		Op("sendSmsCode", http.MethodPost, "/user/current/sms/send", h.sendSMS),
		Op("sendEmailCode", http.MethodPost, "/user/current/email/send", h.sendEmail),
		Op("checkSmsCode", http.MethodGet, "/user/current/sms/check", h.checkSMS),
		Op("checkEmailCode", http.MethodGet, "/user/current/email/check", h.checkEmail),
		Op("changeMobile", http.MethodPatch, "/user/current/mobile", h.changeMobile),
		Op("changeEmail", http.MethodPatch, "/user/current/email", h.changeEmail),
	}
}

type verifyHandlers struct{ v VerifyService }

// digits is a field SPEC.md writes as a number in bodies: mobile, itc,
// verificationCode. It takes a JSON number (an integer written without
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
	Body struct {
		Username  *string `json:"username"`
		FirstName *string `json:"firstName"`
		LastName  *string `json:"lastName"`
		FullName  *string `json:"fullName"`
		Landline  *string `json:"landline"`
		Avatar    *string `json:"avatar"`
		Title     *string `json:"title"`
		Gender    *string `json:"gender"`
		Address   *string `json:"address"`
	} `body:"json"`
}

type smsSendRequest struct {
	Body struct {
		BizKey  verify.BizKey `json:"bizKey"`
		Mobile  digits        `json:"mobile"`
		Country string        `json:"country"`
	} `body:"json"`
}

type emailSendRequest struct {
	Body struct {
		BizKey    verify.BizKey `json:"bizKey"`
		ToAddress [][]string    `json:"toAddress"`
	} `body:"json"`
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
	Body struct {
		BizKey     verify.BizKey `json:"bizKey"`
		Mobile     digits        `json:"mobile"`
		Country    string        `json:"country"`
		ITC        digits        `json:"itc"`
		Code       digits        `json:"verificationCode"`
		LinkSecret string        `json:"linkSecret"`
	} `body:"json"`
}

type emailChangeRequest struct {
	Body struct {
		BizKey     verify.BizKey `json:"bizKey"`
		Email      string        `json:"email"`
		Code       digits        `json:"verificationCode"`
		LinkSecret string        `json:"linkSecret"`
	} `body:"json"`
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
