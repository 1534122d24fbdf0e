package main

import "fmt"

// Development mode.
//
// The server runs in development mode when nothing in its configuration
// marks a deployment: no DESKKIT_SECRET (the server keeps a secret of its
// own in the database, and warns that this is not for production), no SMTP
// server (-smtp-addr) and the log SMS provider (-sms-provider log, the
// default when none is configured). That is how "go run ./examples/server"
// starts on a fresh machine. There the log senders show verification
// codes, in clear, as the "code" attribute of the lines "verify: SMS not
// sent, logged" and "verify: mail not sent, logged", and the server says
// so at start (a WARN line, and its printed lines): the first start's curl
// lines ask for a code, and this is where someone trying the server reads
// it.
//
// -dev-log-codes (DESKKIT_DEV_LOG_CODES) decides instead when given:
// =false hides codes in development mode too; =true shows them outside it
// (an SMTP server on loopback for the mail, the log for SMS), but is
// refused with DESKKIT_SECRET set, which marks a production configuration:
// that never logs a code.

// development reports whether cfg is development mode's.
func (cfg verifyConfig) development() bool {
	return cfg.secret == nil && cfg.smtp.Addr == "" && cfg.smsProvider == "log"
}

// settleLogCodes decides whether the log senders show codes, once the
// flags and the environment are read: given tells whether -dev-log-codes
// or its variable was set.
func (cfg *verifyConfig) settleLogCodes(given bool) error {
	switch {
	case !given:
		cfg.devLogCodes = cfg.development()
	case cfg.devLogCodes && cfg.secret != nil:
		return fmt.Errorf("-dev-log-codes (%s) shows verification codes in the log: refused with %s set, which marks a production configuration", envDevLogCodes, envSecret)
	}
	return nil
}

// mailCodes is where the code of an e-mail the server sends can be read.
type mailCodes int

const (
	codesHidden mailCodes = iota // logged, without the code
	codesLogged                  // logged, with the code
	codesMailed                  // sent through the SMTP server
)

func (cfg verifyConfig) mailCodes() mailCodes {
	switch {
	case cfg.smtp.Addr != "":
		return codesMailed
	case cfg.devLogCodes:
		return codesLogged
	}
	return codesHidden
}
