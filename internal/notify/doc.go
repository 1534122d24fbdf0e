// Package notify sends one message through one channel's protocol and
// tells from the far end's answer whether it was taken. It is the sending
// half of package channel, which stores channels and calls it; it knows no
// database, so that a job can drive it for queued delivery with retries.
//
// # Overview
//
// A Sender delivers a Message to a Target of one Kind:
//
//   - KindWebhook: a POST of {"type", "timestamp", "data"} signed by the
//     Standard Webhooks library (headers webhook-id, webhook-timestamp,
//     webhook-signature: "v1," and the base64 HMAC-SHA256 of
//     id.timestamp.body keyed by the decoded "whsec_" secret). Any 2xx is
//     success. The signed timestamp is the attempt's (Sender.Now), the
//     body's is the event's, so a retry is signed afresh while
//     webhook-id, the same on every attempt, lets the receiver drop
//     duplicates.
//   - KindWeCom: a WeCom group robot's markdown message, "**Title**" and
//     the text, cut to MaxWeComBytes on a character boundary. Success is
//     a 2xx reply that is JSON with errcode 0: WeCom answers HTTP 200 to
//     its refusals.
//   - KindDingTalk: a DingTalk custom robot's markdown message, with the
//     channel's name in title and text so that a robot in keyword mode
//     finds it; with a secret, the URL gets DingTalk's timestamp and sign
//     parameters. Success is errcode 0.
//   - KindEmail: one e-mail to each address, so recipients do not see one
//     another, subject "[AppName] Title", a footer naming the channel.
//
// Every request goes through a *safehttp.Client, the SSRF guard: no
// proxy, no redirect followed (a 3xx is a failure that says where it
// pointed, masked by MaskURL: the scheme and host, never the path or
// query), at most 64 KiB of a reply read, one deadline for it all.
//
// # Errors
//
// Send returns nil, or a *Failure saying what the far end answered (the
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
// The tests run each protocol against a real HTTP server on loopback that
// checks the exact request (webhook signatures are checked with the
// official standard-webhooks library) and answers success and each kind
// of failure, and e-mail through a real SMTP server (internal/smtptest).
package notify
