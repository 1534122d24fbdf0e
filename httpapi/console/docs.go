package console

import "net/http"

// docsRoutes serves /docs: the API's OpenAPI document (/api/v1/openapi.json,
// served by httpapi) rendered by Redoc's standalone bundle, vendored in
// static/ and pinned (static/README.md). It is public, as the document is,
// and under the console's Content-Security-Policy: Redoc runs without eval
// and inline script; it injects styles (style-src 'unsafe-inline') and runs
// its search in a blob: worker (worker-src blob:).
func (c *Console) docsRoutes() {
	c.mux.HandleFunc("GET "+c.cfg.DocsPath, func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, nil, http.StatusOK, "docs", nil)
	})
}
