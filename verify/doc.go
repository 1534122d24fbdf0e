// Package verify lets the signed-in user prove that they receive messages
// at an address, and change their profile and contact addresses, the
// latter only with that proof.
//
// A Verifier is built by New over the library's tables (Migrate), the
// host's user store (a Directory), a sender of text messages (SMSSender),
// a deskkit.Mailer, and the server secret. httpapi mounts it under
// /api/v1/user/current. The flow is always send, then check:
//
//	SendSMS / SendEmail   a code for a bizKey goes to an address
//	CheckSMS / CheckEmail the code comes back; the answer is a link secret
//	ChangeMobile / ChangeEmail, or Redeem   the link secret is spent
//
// Every bizKey of the source system's API is accepted (SMSBizKeys,
// EmailBizKeys), each its own namespace of codes. The Verifier acts on
// four of them itself; the host redeems the link secret of any other for
// its own flow with Redeem, inside its transaction if it likes. The
// Verifier's own errors (ErrCodeWrong, ErrSendFailed, ...) each match one
// of deskkit's classes too; bad fields are *deskkit.InputError values.
//
// # Senders
//
// The senders live in packages of their own under verify/: each of
// sms/gateway (a JSON POST to the host's gateway), sms/twilio, sms/aliyun
// and sms/tencent (template providers, configured with package sms) is an
// SMSSender; smtp is a deskkit.Mailer; logsender is both, and logs
// instead of sending, for development.
//
// # Codes, secrets and limits
//
// A code is 6 digits, valid Config.CodeTTL, good for MaxAttempts wrong
// checks, and stored only as a keyed hash under the server secret. A link
// secret is good once, for LinkSecretTTL, for the user, bizKey and address
// it was won for. Every limit of Config holds across replicas (see
// Config). No sender runs inside a database transaction: a code is stored
// as pending, sent, then made usable, or given back with its limits when
// the sender refused it (ErrSendFailed, or ErrSendThrottled).
//
// # Notices and events
//
// After MODIFY_MOBILE or MODIFY_EMAIL a notice goes to the old address,
// written into the module's outbox in the change's transaction and sent
// after the commit by Run, or by the change itself and SendNotices; it is
// retried on a schedule, and Purge deletes it a day after. With
// Config.Publisher set, a committed change publishes EventMobileChanged or
// EventEmailChanged. Codes and notices are written from the templates of
// package verify/texts, in the language of the request's context.
//
// # Testing
//
// Package verifytest has an in-memory Directory, a scripted FuncDirectory,
// a Sink that records what is sent, fakes of Alibaba Cloud and Tencent
// Cloud SMS, and RunDirectoryTests, the suite for a host's own Directory.
package verify
