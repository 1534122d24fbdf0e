package notify

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"ok", 10, "ok"},
		{"  padded \n", 10, "padded"},
		{"a\r\n\tb", 10, "a b"},
		{"red\x1b[31m", 10, "red [31m"},
		{"\u202eevil", 10, "evil"},
		{"bad\xffbyte", 10, "bad byte"},
		{"abcdefghijk", 10, "abcdefghij…"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghi jk", 10, "abcdefghi…"}, // no space before the ellipsis
		{strings.Repeat("验", 11), 10, strings.Repeat("验", 10) + "…"},
		{"", 10, ""},
	}
	for _, tt := range tests {
		if got := clean(tt.in, tt.limit); got != tt.want {
			t.Errorf("clean(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{"99999999999999999999", maxRetryAfter},
		{"864000", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(30 * 24 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "…"}, // "…" is 3 bytes: nothing else fits
		{"abcdef", 5, "ab…"},
		{"a验证", 6, "a…"}, // 7 bytes; "a验" + "…" would be 7
		{"a验证", 7, "a验证"},
		{"a验证x", 7, "a验…"},
	}
	for _, tt := range tests {
		got := Cut(tt.in, tt.limit)
		if got != tt.want || len(got) > tt.limit {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

// TestWebhookBody: the body carries the message's compact data as it is
// (no HTML escaping, no reordering), after the type and the event's time
// in UTC, as the body spliced by hand before it did.
