package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// ErrcodeBusy is both robots' errcode for "system busy, try again".
const ErrcodeBusy = -1

// RobotRateWindow is the window of both robots' limit of 20 messages: a
// retry before it has passed is refused again.
const RobotRateWindow = time.Minute

// RobotFields name the members of a robot's JSON answer that hold its
// code, zero for success, and the code's message: errcode and errmsg for
// WeCom and DingTalk, code and msg for Feishu.
type RobotFields struct{ Code, Msg string }

// Errcode are WeCom's and DingTalk's fields.
var Errcode = RobotFields{Code: "errcode", Msg: "errmsg"}

// Explainer fills in the Reason and retry fields of f, a robot's refusal
// with its Errcode and Errmsg set.
type Explainer func(f *Failure)

// PostRobot sends body as JSON to a robot at u and reads its answer: who
// names the robot in a failure's reason, explain says what a non-zero
// errcode means. Success is a 2xx reply that is JSON with errcode 0: the
// robots answer HTTP 200 to their refusals.
func (s *Sender) PostRobot(ctx context.Context, who deskkit.Text, u *url.URL, body any, explain Explainer) (Reply, error) {
	return s.PostRobotAs(ctx, who, u, body, Errcode, explain)
}

// PostRobotAs is PostRobot for a robot whose answer holds its code and
// message in fields; the Failure's Errcode and Errmsg are them.
func (s *Sender) PostRobotAs(ctx context.Context, who deskkit.Text, u *url.URL, body any, fields RobotFields, explain Explainer) (Reply, error) {
	b, err := Marshal(body)
	if err != nil {
		return Reply{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	r, f := s.Post(ctx, who, u, h, b)
	if f != nil {
		return Answered(u, h, b, r), f
	}
	return Answered(u, h, b, r), robotFailure(who, r, fields, explain)
}

// robotFailure reads a robot's 2xx reply: nil for code 0, the failure
// otherwise, also for a reply that is not a robot's JSON (the address is
// some other web page, which answers 200 to anything).
func robotFailure(who deskkit.Text, r *safehttp.Reply, fields RobotFields, explain Explainer) error {
	var members map[string]json.RawMessage
	var code *int
	var msg string
	if !r.Truncated && json.Unmarshal(r.Body, &members) == nil {
		if json.Unmarshal(members[fields.Code], &code) != nil {
			code = nil
		}
		_ = json.Unmarshal(members[fields.Msg], &msg) // a message that is no string is none
	}
	if code == nil {
		f := &Failure{Status: r.Status}
		f.say(deskkit.Textf("%s answered %s but not with a robot's JSON errcode: is the address a %s robot?", who, statusText(r.Status), who))
		return f
	}
	if *code == 0 {
		return nil
	}
	f := &Failure{Status: r.Status, Errcode: *code, Errmsg: clean(msg, maxErrmsgRunes)}
	explain(f)
	return f
}

// ErrcodeText is "errcode 93000: invalid webhook url".
func ErrcodeText(f *Failure) string {
	if f.Errmsg == "" {
		return "errcode " + strconv.Itoa(f.Errcode)
	}
	return "errcode " + strconv.Itoa(f.Errcode) + ": " + f.Errmsg
}

// Join is the heading, and the text after a blank line when there is any.
func Join(heading, text string) string {
	if strings.TrimSpace(text) == "" {
		return heading
	}
	return heading + "\n\n" + text
}

// Cut returns s if it has at most limit bytes, and otherwise its longest
// prefix that, with "…" after it, has at most limit bytes and ends on a
// rune boundary.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const more = "…"
	n := limit - len(more)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}
