package verify

import (
	"slices"

	"github.com/deskkit/deskkit"
)

// BizKey is the business purpose of a code: each is its own namespace, so a
// code sent for SIGNIN never passes a check for MODIFY_MOBILE.
type BizKey string

// The bizKeys the Verifier itself acts on. Every other key of SMSBizKeys
// and EmailBizKeys is accepted too: its check answers a link secret that
// the host redeems for its own flow (Verifier.Redeem).
const (
	ModifyMobile   BizKey = "MODIFY_MOBILE"
	BindMobile     BizKey = "BIND_MOBILE"
	ModifyEmail    BizKey = "MODIFY_EMAIL"
	BindEmail      BizKey = "BIND_EMAIL"
	PasswordUpdate BizKey = "PASSWORD_UPDATE"
	SignCancel     BizKey = "SIGN_CANCEL"
)

var smsBizKeys = []BizKey{
	"SIGNUP", "SIGNIN", "PASSWORD_FORGET", "PASSWORD_UPDATE", "SIGN_CANCEL",
	"MODIFY_MOBILE", "BIND_MOBILE", "PAY_PASSWORD_UPDATE", "REALNAME_AUTH_SUBMIT",
	"REALNAME_AUTH_PASSED", "REALNAME_AUDIT_FAILURE", "SYS_EXCEPTION_NOTICE",
	"SYS_RECOVERY_NOTICE", "SYS_SECURITY_NOTICE", "LICENSE_SENT", "CHANNEL_TEST",
	"TODO_REALNAME_AUTH", "TODO_BUSINESS_CONSULTATION", "TODO_OFFLINE_SERVICE",
	"TODO_TICKET", "TODO_TRANSFER_CONFIRM", "TODO_INVOICE_CONFIRM",
	"TODO_WITHDRAW_CONFIRM", "RECHARGE_SUCCESS", "WITHDRAW_SUCCESS",
	"ORDER_PAY_SUCCESS", "ORDER_PAY_PENDING", "ORDER_PAY_TIMEOUT", "ORDER_TO_EXPIRE",
	"ORDER_CHANGE_SUCCESS", "TICKET_REPLY_REMINDER", "TESTING_EXEC_STARTED",
	"TESTING_EXEC_FINISHED", "TESTING_EXEC_FAILED", "TESTING_TASK_OVERDUE",
	"INDICATOR_MODIFY_SUBMIT", "INDICATOR_AUDIT_PASSED", "INDICATOR_AUDIT_FAILED",
	"EVENT_NOTICE",
}

var emailBizKeys = []BizKey{
	"EVENT_NOTICE", "SIGNUP", "SIGNIN", "PASSWORD_FORGET", "PASSWORD_UPDATE",
	"SIGN_CANCEL", "MODIFY_EMAIL", "BIND_EMAIL", "PAY_PASSWORD_UPDATE",
	"REALNAME_AUTH_SUBMIT", "REALNAME_AUTH_PASSED", "REALNAME_AUDIT_FAILURE",
	"SYS_EXCEPTION_NOTICE", "SYS_RECOVERY_NOTICE", "SYS_SECURITY_NOTICE",
	"LICENSE_SENT", "CHANNEL_TEST", "TODO_REALNAME_AUTH", "TODO_BUSINESS_CONSULTATION",
	"TODO_OFFLINE_SERVICE", "TODO_TICKET", "TODO_TRANSFER_CONFIRM",
	"TODO_INVOICE_CONFIRM", "TODO_WITHDRAW_CONFIRM", "RECHARGE_SUCCESS",
	"WITHDRAW_SUCCESS", "ORDER_PAY_SUCCESS", "ORDER_PAY_PENDING", "ORDER_PAY_TIMEOUT",
	"ORDER_TO_EXPIRE", "ORDER_CHANGE_SUCCESS", "TICKET_REPLY_REMINDER",
	"INVOICE_APPLY_SUCCESS", "COUPON_DISTRIBUTION", "COUPON_TO_EXPIRE",
	"BLOG_SUBSCRIPTION_NOTICE", "TESTING_EXEC_STARTED", "TESTING_EXEC_FINISHED",
	"TESTING_EXEC_FAILED", "TESTING_TASK_OVERDUE", "INDICATOR_MODIFY_SUBMIT",
	"INDICATOR_AUDIT_PASSED", "INDICATOR_AUDIT_FAILED",
}

// SMSBizKeys lists the bizKeys of SMS codes, in the order of the source system's API.
func SMSBizKeys() []BizKey { return slices.Clone(smsBizKeys) }

// EmailBizKeys lists the bizKeys of e-mail codes, in the order of the source system's API.
func EmailBizKeys() []BizKey { return slices.Clone(emailBizKeys) }

// Kind is the kind of address a code goes to.
type Kind string

// The kinds of address.
const (
	KindSMS   Kind = "SMS"
	KindEmail Kind = "EMAIL"
)

// bizKeys are the keys valid for the kind.
func (k Kind) bizKeys() []BizKey {
	if k == KindSMS {
		return smsBizKeys
	}
	return emailBizKeys
}

// checkBizKey returns an *deskkit.InputError unless b is a bizKey of kind k.
func checkBizKey(k Kind, b BizKey) error {
	if b == "" {
		return deskkit.Invalid("bizKey", "is required")
	}
	if !slices.Contains(k.bizKeys(), b) {
		if k == KindSMS {
			return deskkit.Invalid("bizKey", "must be one of the SMS bizKeys (SIGNUP, SIGNIN, MODIFY_MOBILE, BIND_MOBILE, ...; see the API documentation)")
		}
		return deskkit.Invalid("bizKey", "must be one of the e-mail bizKeys (SIGNUP, SIGNIN, MODIFY_EMAIL, BIND_EMAIL, ...; see the API documentation)")
	}
	return nil
}
