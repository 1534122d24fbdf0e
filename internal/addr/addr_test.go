package addr

import "testing"

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true,
		"10.0.0.1": false, "example.com": false, "": false, "localhost.example.com": false, "[::1]": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestIsE164(t *testing.T) {
	for s, want := range map[string]bool{
		"+8613800138000": true, "+12": true, "+123456789012345": true,
		"+1234567890123456": false, "+0123": false, "8613800138000": false, "+1": false, "+12a": false, "": false,
	} {
		if got := IsE164(s); got != want {
			t.Errorf("IsE164(%q) = %v, want %v", s, got, want)
		}
	}
}
