package channel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Types hands out a copy: changing it changes neither the next answer nor
// what ParseType accepts.
func TestTypesIsACopy(t *testing.T) {
	want := Types() // TestRegisteredKinds checks the list itself
	got := Types()
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
