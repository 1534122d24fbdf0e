package eventcat_test

import (
	"encoding/json"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/eventcat"
)

// Data sets tenantId as the publisher does: first when the example has
// none, in place when it has one; an example that is no object is an
// error, not a payload.
func TestData(t *testing.T) {
	for _, c := range []struct {
		example any
		want    string
	}{
		{nil, `{"tenantId":1}`},
		{map[string]any{}, `{"tenantId":1}`},
		{struct {
			A int `json:"a"`
		}{2}, `{"tenantId":1,"a":2}`},
		{struct {
			T int `json:"tenantId"`
			A int `json:"a"`
		}{1, 2}, `{"tenantId":1,"a":2}`},
		{json.RawMessage(`{"tenantId": 5, "a": 2}`), `{"a":2,"tenantId":1}`},
	} {
		got, err := eventcat.Data(deskkit.EventType{Name: "x.y", Example: c.example})
		if err != nil || string(got) != c.want {
			t.Errorf("Data(%v) = %s, %v; want %s", c.example, got, err, c.want)
		}
	}
	for _, bad := range []any{[]int{1}, "text", json.RawMessage(`null`)} {
		if got, err := eventcat.Payload(deskkit.EventType{Name: "x.y", Example: bad}); err == nil {
			t.Errorf("Payload(%v) = %s, want an error", bad, got)
		}
	}
}
