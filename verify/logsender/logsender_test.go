package logsender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/logsender"
)

// logLines decodes the JSON lines of buf without their time.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		delete(m, "time")
		lines = append(lines, m)
	}
	return lines
}

func TestSender(t *testing.T) {
	const code = "482913"
	sms := verify.SMS{To: "+8613800138000", Text: "Your code is " + code + ".", BizKey: verify.BindMobile, Code: code}
	mail := deskkit.Mail{
		To: "ann@example.com", Subject: "Code " + code, Text: "Your code is " + code + ".",
		HTML: "<b>" + code + "</b>", BizKey: string(verify.BindEmail), Code: code,
	}
	tests := []struct {
		name      string
		showCodes bool
		want      []map[string]any
	}{
		{
			name: "production",
			want: []map[string]any{
				{"level": "INFO", "msg": "verify: SMS not sent, logged", "to": "+8613800138000", "bizKey": "BIND_MOBILE"},
				{"level": "INFO", "msg": "verify: mail not sent, logged", "to": "ann@example.com", "bizKey": "BIND_EMAIL", "subject": "Code [code]"},
			},
		},
		{
			name:      "ShowCodes",
			showCodes: true,
			want: []map[string]any{
				{"level": "INFO", "msg": "verify: SMS not sent, logged", "to": "+8613800138000", "bizKey": "BIND_MOBILE", "text": "Your code is 482913.", "code": "482913"},
				{"level": "INFO", "msg": "verify: mail not sent, logged", "to": "ann@example.com", "bizKey": "BIND_EMAIL", "subject": "Code 482913", "text": "Your code is 482913.", "code": "482913"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := logsender.Sender{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), ShowCodes: tt.showCodes}
			if err := s.SendSMS(context.Background(), sms); err != nil {
				t.Fatal(err)
			}
			if err := s.SendMail(context.Background(), mail); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), code); got != tt.showCodes {
				t.Errorf("code in the log = %v, want %v:\n%s", got, tt.showCodes, buf.String())
			}
			if diff := cmp.Diff(tt.want, logLines(t, &buf)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSenderDefaultLoggerAndCtx(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	var s logsender.Sender
	if err := s.SendSMS(context.Background(), verify.SMS{To: "+15005550006", Text: "code 777111", Code: "777111"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "to=+15005550006") || strings.Contains(buf.String(), "777111") {
		t.Errorf("default logger got %q", buf.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SendMail(ctx, deskkit.Mail{To: "a@example.com"}); err == nil {
		t.Error("SendMail with a cancelled ctx succeeded")
	}
}
