package envelope_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/deskkit/deskkit/envelope"
)

// BenchmarkWriteOK is a success envelope of a search page's size (10
// entries), as every search answers.
func BenchmarkWriteOK(b *testing.B) {
	type entry struct {
		ID          int64     `json:"id"`
		ProjectID   int64     `json:"projectId"`
		TargetType  string    `json:"targetType"`
		TargetName  string    `json:"targetName"`
		SprintID    *int64    `json:"sprintId"`
		DeletedBy   int64     `json:"deletedBy"`
		DeletedDate time.Time `json:"deletedDate"`
	}
	page := struct {
		Total int64   `json:"total"`
		List  []entry `json:"list"`
	}{Total: 100}
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	for i := range 10 {
		page.List = append(page.List, entry{ID: int64(i), ProjectID: 7, TargetType: "TASK", TargetName: "Task 7 design zephyrine", DeletedBy: 3, DeletedDate: at})
	}
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		envelope.Write(rec, 200, envelope.OK(page, at))
	}
}
