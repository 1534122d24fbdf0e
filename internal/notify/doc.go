// Package notify holds what the kinds of channel share to send a message
// and read the far end's answer. The kinds themselves (webhook, e-mail,
// WeCom, DingTalk) are packages of their own under channel; package
// channel stores channels and drives them. It knows no database, so that
// a job can drive it for queued delivery with retries.
//
// # Overview
//
// A Message is one event to deliver, checked by CheckMessage (Checked also
// compacts its data) before any kind sends it; a Target is one channel as
// its kind needs it; a Reply is what the far end answered. A Sender holds
// what the kinds send with: the SSRF-guarded HTTP client, the mailer, the
// clock and the application's name. Its Post sends one request through
// the guard, PostRobot one robot message whose JSON errcode it reads.
//
// Every request goes through Sender.HTTP, the SSRF guard: no
// proxy, no redirect followed (a 3xx is a failure that says where it
// pointed, masked by MaskURL: the scheme and host, never the path or
// query), at most 64 KiB of a reply read, one deadline for it all.
// NewWebhookSecret, ParseWebhookSecret and Sign are the Standard Webhooks
// signing that the webhook kind and its tests use.
//
// # Errors
//
// A failed send is a *Failure saying what the far end answered (the
// status, the robot's errcode and errmsg, the refused addresses) or why it
// could not be reached, with Retryable for a job: timeouts, connection
// errors, 408, 429, 5xx and the robots' rate limits are worth a retry;
// redirects, other 4xx, other errcodes and blocked addresses are not. A
// Failure matches ErrBlocked when the guard refused the address and
// ErrFailed otherwise, and its ClientMessage is its Reason: far-end text
// in it is cut short and stripped of control characters. A malformed
// Target or Message is a *deskkit.InputError and nothing is sent.
//
// # Testing
//
// The kinds' tests run each protocol against a real HTTP server on
// loopback that checks the exact request (webhook signatures are checked
// with the official standard-webhooks library) and answers success and
// each kind of failure, and e-mail through a real SMTP server.
package notify
