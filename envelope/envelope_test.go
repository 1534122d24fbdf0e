package envelope_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/envelope"
)

func TestWrite(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name    string
		status  int
		env     envelope.Envelope
		want    string
		status2 int
	}{
		{"success", 200, envelope.OK(map[string]int{"total": 2}, at), `{"code":"S","msg":"Success","data":{"total":2},"datetime":"2026-11-22T08:30:00Z","ext":{}}`, 200},
		{"success without data", 200, envelope.OK(nil, at), `{"code":"S","msg":"Success","data":null,"datetime":"2026-11-22T08:30:00Z","ext":{}}`, 200},
		{"error", 404, envelope.Error(envelope.CodeBusiness, "resource_not_found", "the resource does not exist", at), `{"code":"E1","msg":"the resource does not exist","data":null,"datetime":"2026-11-22T08:30:00Z","ext":{"eKey":"resource_not_found"}}`, 404},
		{"nil ext becomes {}", 200, envelope.Envelope{Code: "S", Msg: "Success", Datetime: "2026-11-22T08:30:00Z"}, `{"code":"S","msg":"Success","data":null,"datetime":"2026-11-22T08:30:00Z","ext":{}}`, 200},
		{"data that cannot be marshalled", 200, envelope.OK(make(chan int), at), `{"code":"E2","msg":"internal server error","data":null,"datetime":"2026-11-22T08:30:00Z","ext":{"eKey":"internal_error"}}`, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			envelope.Write(rec, tc.status, tc.env)
			if rec.Code != tc.status2 {
				t.Errorf("status = %d, want %d", rec.Code, tc.status2)
			}
			if diff := cmp.Diff(tc.want+"\n", rec.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}
