package deskkit_test

import (
	"encoding/json"
	"testing"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// A Text read back from its JSON writes, in every language, what the Text
// itself writes: the key and each argument keep their kinds, so a %d stays
// a number and a nested Text is translated too.
func TestTextRoundTrip(t *testing.T) {
	m, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	texts := []deskkit.Text{
		deskkit.Textf("the webhook answered %d %s", 410, "Gone"),
		deskkit.Textf("timed out after %s", deskkit.DurationText(10*time.Second)),
		deskkit.Textf("%s: %v %d %d %g %t %s", "a", int8(-3), uint16(7), int64(-1<<40), 2.5, true, 1500*time.Millisecond),
		deskkit.Textf("%s", deskkit.Invalid("channelType", "must be %s", deskkit.Textf("1 minute"))),
	}
	for _, tx := range texts {
		raw, err := json.Marshal(tx)
		if err != nil {
			t.Fatal(err)
		}
		var back deskkit.Text
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		for _, tag := range []language.Tag{language.English, language.SimplifiedChinese} {
			if got, want := back.LocalizedMessage(m, tag), tx.LocalizedMessage(m, tag); got != want {
				t.Errorf("%s in %s: got %q, want %q", raw, tag, got, want)
			}
		}
	}
	// The Chinese is Chinese: the round trip did not just keep English.
	back := deskkit.Textf("timed out after %s", deskkit.DurationText(10*time.Second))
	if got := back.LocalizedMessage(m, language.SimplifiedChinese); got == back.String() {
		t.Errorf("not translated: %q", got)
	}
}

func TestTextNull(t *testing.T) {
	raw, err := json.Marshal(deskkit.Text{})
	if err != nil || string(raw) != "null" {
		t.Fatalf("zero Text: %s, %v", raw, err)
	}
	var back deskkit.Text
	if err := json.Unmarshal([]byte("null"), &back); err != nil || !back.IsZero() {
		t.Fatalf("null: %v, %v", back, err)
	}
	for _, bad := range []string{`{}`, `{"k":"x %d","a":[{}]}`, `{"k":"x","a":[{"t":{}}]}`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
