package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/deskkit/deskkit/httpapi"
)

// Issue 12, 3.6: messages that misled. A code written as a number with a
// leading zero (as the seed's "number" invites) is invalid JSON, and the
// 400 said only where; it now says why and how to write it. A flat
// toAddress said "must be an array", which it was.
func TestDecodeMessages(t *testing.T) {
	e := setup(t)
	body := `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 024172}`
	a := e.call(t, http.MethodPatch, mobilePath, "alice", body)
	a.wantError(t, 400, httpapi.KeyValidation, "verificationCode")
	want := fmt.Sprintf(`verificationCode is not valid JSON: a number cannot start with 0 (024172, at byte %d); write it as a string: "024172"`, strings.Index(body, "024172")+1)
	if a.msg != want {
		t.Errorf("msg %q, want %q", a.msg, want)
	}

	a = e.call(t, http.MethodPost, mailSend, "alice", `{"bizKey": "SIGNIN", "toAddress": ["ann@example.com"]}`)
	a.wantError(t, 400, httpapi.KeyValidation, "toAddress")
	if a.msg != "toAddress must be an array of arrays of addresses" {
		t.Errorf("msg %q", a.msg)
	}
}
