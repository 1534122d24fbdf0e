package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/notify"
)

func TestWebhookBody(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.FixedZone("CST", 8*3600))
	for _, data := range []string{`{}`, `{"tenantId":1,"a":"<b>&\u2028"}`, "{\"raw\":\"\u2028<>\"}", `{"n":[1,2,{"x":null}],"a":0}`} {
		got, err := notify.Marshal(body{Type: "task.trashed", Timestamp: at.UTC(), Data: json.RawMessage(data)})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":"task.trashed","timestamp":"2026-11-23T02:00:00.123456789Z","data":` + data + `}`
		if string(got) != want {
			t.Errorf("body = %s, want %s", got, want)
		}
	}
}
