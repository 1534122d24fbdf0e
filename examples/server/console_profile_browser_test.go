package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskkit/deskkit/internal/smtptest"
)

// wrongCode is a code that is not code: its first digit changed.
func wrongCode(code string) string {
	d := byte('0' + (code[0]-'0'+1)%10)
	return string(d) + code[1:]
}

// enterCode types code into the step's #code field and submits it with
// button, then waits for sel.
func (tb *tab) enterCode(code, button, sel string) {
	tb.t.Helper()
	tb.submit(sel, chromedp.SetValue(chromedp.CSS("#code"), code), chromedp.Click(chromedp.CSS(button)))
}

// TestConsoleProfile edits the profile, then changes the e-mail address
// through the guided flow with codes read from the in-test SMTP server (a
// code to the current address, its check, a code to the new one, the
// change), meeting the resend limit's countdown and a wrong code's attempts
// left on the way, and changes the mobile number the same way through a
// loopback SMS gateway, on both databases.
func TestConsoleProfile(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		mail := smtptest.Start(t)
		sms := startGateway(t)
		base, _ := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envSMTPAddr: mail.Addr, envSMTPFrom: "Deskkit <noreply@example.com>",
			envSMSProvider: "http", envSMSHTTPURL: sms.URL + "/send",
		})
		ann := issueFor(t, rawURL, "-tenant", "demo", "-username", "ann", "-email", "ann@example.com", "-mobile", "13800138000", "-country", "CN")
		tb := newTab(t, base)
		tb.signIn(ann)

		// The profile, and an edit of it.
		tb.open("/console/profile", "#profile-form")
		if got := tb.text("#email"); got != "ann@example.com" {
			t.Errorf("the profile shows the e-mail address %q", got)
		}
		tb.inspect("profile")
		tb.submit("[role=status]",
			chromedp.SetValue(chromedp.CSS("#p-full"), "Ann Example"),
			chromedp.Click(chromedp.CSS("#save-profile")),
		)
		if msg := tb.text("[role=status]"); msg != "Your profile is saved." {
			t.Errorf("after saving the profile: %q", msg)
		}
		var d struct{ FullName, Email, Mobile string }
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current", nil, &d)
		if d.FullName != "Ann Example" {
			t.Errorf("the API answers fullName %q after the edit", d.FullName)
		}
		// A username the service refuses: its message, the form kept.
		evalIn[bool](tb, `document.querySelector("#p-username").removeAttribute("maxlength"), true`)
		tb.submit("[role=alert]",
			chromedp.SetValue(chromedp.CSS("#p-username"), strings.Repeat("x", 101)),
			chromedp.Click(chromedp.CSS("#save-profile")),
		)
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "username must be at most 100 characters") {
			t.Errorf("a username too long: %q", msg)
		}

		// Step 1: a code to the current address.
		tb.open("/console/profile/email", "#send-current")
		tb.inspect("profile-email-start")
		tb.submit("#code", chromedp.Click(chromedp.CSS("#send-current")))
		if got := tb.text("#sent"); !strings.Contains(got, "ann@example.com") {
			t.Errorf("after the send: %q", got)
		}
		subject, _ := lastMail(t, mail, "ann@example.com")
		code := codeIn(t, subject)

		// The resend interval: a countdown that runs, the button waiting.
		if wait := evalIn[string](tb, `document.querySelector("#wait").getAttribute("data-countdown")`); wait != "60" {
			t.Errorf("the countdown starts at %q, want the resend interval, 60", wait)
		}
		if !evalIn[bool](tb, `document.querySelector("#resend").disabled`) {
			t.Errorf("the resend button is enabled during the countdown")
		}
		tb.do(chromedp.Poll[chromedp.Void](`document.querySelector("#wait .countdown").textContent !== "60 seconds"`, chromedp.WithPollingTimeout(10*time.Second)))
		tb.inspect("profile-email-check")
		// Sent anyway (the form without the script's wait): the service's
		// limit, its message and its wait, and the code field is still there.
		tb.submit("p.error", chromedp.Evaluate[chromedp.Void](`(function () { var b = document.querySelector("#resend"); b.disabled = false; setTimeout(function () { b.click(); }, 0); })()`))
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "Try again in") {
			t.Errorf("a resend within the interval: %q", msg)
		}
		if wait := evalIn[string](tb, `document.querySelector("#wait").getAttribute("data-countdown")`); wait == "" || wait == "0" {
			t.Errorf("the limit's page has no countdown: %q", wait)
		}
		tb.screenshots("profile-email-limit")

		// Step 2: a wrong code says how many attempts are left; the right
		// one passes.
		tb.enterCode(wrongCode(code), "#check", "p.error")
		if msg := tb.text("[role=alert]"); !strings.Contains(msg, "4 attempts are left") {
			t.Errorf("a wrong code: %q", msg)
		}
		tb.enterCode(code, "#check", "#address")

		// Step 3: a code to the new address.
		tb.inspect("profile-email-new")
		tb.submit("#code",
			chromedp.SendKeys(chromedp.CSS("#address"), "ann@new.example"),
			chromedp.Click(chromedp.CSS("#send-new")),
		)
		tb.inspect("profile-email-confirm")
		subject, _ = lastMail(t, mail, "ann@new.example")

		// Step 4: the change.
		tb.enterCode(codeIn(t, subject), "#confirm", "p.flash, p.error")
		if msg := tb.text("main > p"); msg != "Your e-mail address is now ann@new.example. A notice goes to the old one." {
			t.Errorf("after the change: %q", msg)
		}
		if got := tb.text("#email"); got != "ann@new.example" {
			t.Errorf("the profile shows %q after the change", got)
		}
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current", nil, &d)
		if d.Email != "ann@new.example" {
			t.Errorf("the API answers the e-mail address %q after the change", d.Email)
		}

		// The mobile number, the same way over the SMS gateway.
		tb.submit("#send-current", chromedp.Click(chromedp.CSS("#change-mobile")))
		tb.submit("#code", chromedp.Click(chromedp.CSS("#send-current")))
		tb.enterCode(codeIn(t, sms.last(t, "+8613800138000")), "#check", "#address")
		if c := evalIn[string](tb, `document.querySelector("#country").value`); c != "CN" {
			t.Errorf("the country field holds %q, want the current number's, CN", c)
		}
		tb.submit("#code",
			chromedp.SendKeys(chromedp.CSS("#address"), "137 0013 7000"),
			chromedp.Click(chromedp.CSS("#send-new")),
		)
		tb.inspect("profile-mobile-confirm")
		tb.enterCode(codeIn(t, sms.last(t, "+8613700137000")), "#confirm", "p.flash, p.error")
		if msg := tb.text("main > p"); !strings.HasPrefix(msg, "Your mobile number is now +8613700137000.") {
			t.Errorf("after the mobile change: %q", msg)
		}
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current", nil, &d)
		if d.Mobile != "+8613700137000" {
			t.Errorf("the API answers the mobile %q after the change", d.Mobile)
		}
		tb.noConsoleErrors()
	})
}
