package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// countingTrash is a host's wrapper of the trash (an audit, a metric): it
// counts the searches that go through it.
type countingTrash struct {
	httpapi.TrashService
	searches atomic.Int64
}

func (c *countingTrash) Search(ctx context.Context, p deskkit.Principal, q trash.Query) (trash.Page, error) {
	c.searches.Add(1)
	return c.TrashService.Search(ctx, p, q)
}

// A service wrapped once and handed to the API and the console is called
// through the wrapper by both: the console takes the API's interfaces.
func TestWrappedServiceReachesAPIAndPages(t *testing.T) {
	var wrapped *countingTrash
	f := setup(t, dbtest.OpenSQLite(t), func(c *Config) {
		wrapped = &countingTrash{TrashService: c.Trash}
		c.Trash = wrapped
	}, false)
	api, err := httpapi.New(&httpapi.Config{Authenticator: f.dir, Trash: wrapped})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, httpapi.Prefix+"/task/trash/search?projectId=1&targetType=TASK", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || wrapped.searches.Load() != 1 {
		t.Fatalf("the API's search: %d, %d searches through the wrapper\n%s", rec.Code, wrapped.searches.Load(), rec.Body)
	}
	a := f.do(http.MethodGet, "/console/trash?project=1", nil, f.signIn(f.token))
	if a.StatusCode != http.StatusOK || wrapped.searches.Load() != 2 {
		t.Errorf("the trash page: %d, %d searches through the wrapper, want 2", a.StatusCode, wrapped.searches.Load())
	}
}
