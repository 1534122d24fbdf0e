// Package addr holds the small address checks that several deskkit
// packages make the same way: the mailer and the SMS senders (credentials
// in clear only to a loopback host), the reference server (SMTP without
// TLS by default on loopback), the directory and senders (E.164), and
// verify and channel (e-mail addresses).
package addr

import (
	"net"
	"strings"
)

// IsLoopbackHost reports whether host (a name or an IP address, without a
// port) is "localhost" or a loopback IP: traffic to it never leaves the
// machine.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsE164 reports whether s is written as an E.164 number: "+", then 2 to 15
// digits, the first not 0. It checks the form only; whether the number
// exists is the phone-number library's question.
func IsE164(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
