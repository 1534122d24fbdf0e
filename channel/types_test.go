package channel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Types hands out a copy: changing it changes neither the next answer nor
// what ParseType accepts. (TestRegisteredKinds pins the list itself.)
func TestTypesIsACopy(t *testing.T) {
	want := Types()
	if len(want) == 0 || want[0] != Webhook {
		t.Fatalf("Types() = %v, want WEBHOOK first", want)
	}
	got := Types()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Types() (-want +got):\n%s", d)
	}
	got[0] = "SMS"
	if d := cmp.Diff(want, Types()); d != "" {
		t.Errorf("Types() after a caller changed its copy (-want +got):\n%s", d)
	}
	if _, err := ParseType("SMS"); err == nil {
		t.Error(`ParseType("SMS") passed after a caller changed its copy of Types`)
	}
	if typ, err := ParseType("WEBHOOK"); err != nil || typ != Webhook {
		t.Errorf(`ParseType("WEBHOOK") = %q, %v`, typ, err)
	}
}
