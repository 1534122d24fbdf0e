package envelope_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/deskkit/deskkit/envelope"
)

// An answer is an envelope: OK for a success, with its data; Error for a
// failure, with its code, its stable key and a sentence for a person. The
// HTTP status goes beside it.
func Example() {
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

	rec := httptest.NewRecorder()
	envelope.Write(rec, http.StatusOK, envelope.OK(map[string]int{"total": 3}, at))
	fmt.Print(rec.Code, " ", rec.Body.String())

	rec = httptest.NewRecorder()
	envelope.Write(rec, http.StatusNotFound, envelope.Error(envelope.CodeBusiness, "resource_not_found", "trash entry 7 does not exist", at))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 200 {"code":"S","msg":"Success","data":{"total":3},"datetime":"2026-11-22T08:00:00Z","ext":{}}
	// 404 {"code":"E1","msg":"trash entry 7 does not exist","data":null,"datetime":"2026-11-22T08:00:00Z","ext":{"eKey":"resource_not_found"}}
}
