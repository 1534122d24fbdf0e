package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/language"
)

//go:embed static templates
var embedded embed.FS

// assets are the embedded static files, served under a path that carries a
// hash of them all, so that they can be cached for a year and a new build
// is fetched anew.
type assets struct {
	version string
	base    string // the console's base path
	files   map[string][]byte
}

func loadAssets(base string) (*assets, error) {
	a := &assets{files: map[string][]byte{}, base: base}
	h := sha256.New()
	err := fs.WalkDir(embedded, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Base(p)
		if fix, ok := assetFixes[name]; ok {
			if !bytes.Contains(b, []byte(fix.old)) {
				return fmt.Errorf("%s no longer holds %q: check the fix in assetFixes against the new version", name, fix.old)
			}
			b = bytes.ReplaceAll(b, []byte(fix.old), []byte(fix.new))
		}
		a.files[name] = b
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: static files: %w", err)
	}
	a.version = hex.EncodeToString(h.Sum(nil))[:12]
	return a, nil
}

// assetFixes change a vendored file as it is served, so that the file in
// static/ stays byte for byte the one published (its sha256 in
// static/README.md). Redoc 2 shows its logo from cdn.redoc.ly in the
// sidebar, with no option to turn it off: the console makes no request
// outside its own origin (and the CSP would refuse it, logging a
// violation), so the logo's URL becomes an empty data: URL, which fails to
// load and makes Redoc hide the image (its onError).
var assetFixes = map[string]struct{ old, new string }{
	"redoc.standalone.js": {`src:"https://cdn.redoc.ly/redoc/logo-mini.svg"`, `src:"data:,"`},
}

// url is the versioned path of a static file.
func (a *assets) url(name string) (string, error) {
	if _, ok := a.files[name]; !ok {
		return "", fmt.Errorf("console: no static file %q", name)
	}
	return a.base + "static/" + a.version + "/" + name, nil
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	b, ok := c.assets.files[r.PathValue("name")]
	if !ok || r.PathValue("version") != c.assets.version || strings.HasSuffix(r.PathValue("name"), ".md") {
		c.plainError(w, r, http.StatusNotFound, c.tr(r, "There is no such file."))
		return
	}
	ct := mime.TypeByExtension(path.Ext(r.PathValue("name")))
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// pageTemplate is one page parsed with the layout.
type pageTemplate struct {
	t *template.Template
}

// parsePages parses each templates/*.html but the layout into a template
// set of its own with the layout, so that every page defines "content"
// (and "title") without colliding with the others.
func (c *Console) parsePages(a *assets, tag language.Tag) (map[string]*pageTemplate, error) {
	funcs := template.FuncMap{
		// t and tf write a page text (its English text, a literal the
		// completeness test finds) in the page's language.
		"t":    func(key string) string { return c.i18n.sprintf(tag, key) },
		"tf":   func(key string, args ...any) string { return c.i18n.sprintf(tag, key, args...) },
		"lang": func() string { return htmlLang(tag) },
		"langs": func() []langLink {
			var ls []langLink
			for _, t := range c.i18n.messages().Languages() {
				ls = append(ls, langLink{Tag: htmlLang(t), Name: languageName(t), Current: t == tag})
			}
			return ls
		},
		"static":  a.url,
		"base":    func() string { return c.base },
		"docs":    func() string { return c.cfg.DocsPath },
		"hasDocs": func() bool { return !c.cfg.NoDocs },
		"openapi": func() string { return c.cfg.OpenAPIURL },
		"product": func() string { return c.cfg.ProductName },
		"logo":    func() string { return c.cfg.LogoURL },
		"accent": func() template.CSS {
			// validated: a CSS hex colour, nothing else
			if c.cfg.AccentColor == "" {
				return ""
			}
			return template.CSS("--accent: " + c.cfg.AccentColor)
		},
		// deliveryStatus, gender and signing give a stored value's text,
		// for t.
		"deliveryStatus": deliveryStatusLabel,
		"gender":         genderLabel,
		// percent writes a share (0 to 1) as a whole percentage, rounded
		// down, so that 100% means every attempt, for tf.
		"percent": func(f *float64) string {
			if f == nil {
				return ""
			}
			return strconv.FormatFloat(math.Floor(*f*100+1e-9), 'f', -1, 64) + "%"
		},
		// deref is the value of an id that may be nil (0 then).
		"deref": func(p *int64) int64 {
			if p == nil {
				return 0
			}
			return *p
		},
		"signing": signingLabel,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(embedded, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: layout: %w", err)
	}
	names, err := fs.Glob(embedded, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*pageTemplate{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(embedded, n); err != nil {
			return nil, fmt.Errorf("console: page %s: %w", name, err)
		}
		pages[name] = &pageTemplate{t: t}
	}
	return pages, nil
}

// languageName is a language's name in itself, for the language switch.
func languageName(t language.Tag) string {
	switch htmlLang(t) {
	case "en":
		return "English"
	case "zh-CN":
		return "简体中文"
	}
	return t.String()
}

// langLink is a language the pages offer to switch to.
type langLink struct {
	Tag, Name string
	Current   bool
}

// view is what the layout renders: the page's own data in Data.
type view struct {
	Session *consoleSession // nil when signed out
	CSRF    string          // the session's CSRF token for forms that change something
	Flash   string          // a message from the request before (an action done)
	Error   string          // a message about this request (a refusal)
	// ErrorKey is the eKey the API answers for the error of Error, if
	// it is one the API answers.
	ErrorKey string
	Nav      sections // the sections the navigation links to
	Data     any
	// Zone is the time zone the page's times are in, for the footer;
	// Date, DatePtr and In write times in it.
	Zone zoneView
	loc  *time.Location
}

// Date writes t in the page's time zone: {{$.Date .CreatedDate}}.
func (v view) Date(t time.Time) string { return formatIn(t, v.loc) }

// DatePtr writes *t in the page's time zone; "" for nil.
func (v view) DatePtr(t *time.Time) string { return v.In(nil).DatePtr(t) }

// In gives a sub-template x with the page's time zone: {{template "health"
// ($.In .Channel)}}, which reads .V and writes .Date.
func (v view) In(x any) zoned { return zoned{V: x, loc: v.loc} }

// render writes page name in the layout with status. s is nil for pages
// shown signed out. A pending flash message is shown and consumed.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *consoleSession, status int, name string, data any) {
	c.renderMsg(w, r, s, status, name, data, "")
}

// renderMsg is render with an error message above the page's content, for
// a form shown again with what was wrong with it.
func (c *Console) renderMsg(w http.ResponseWriter, r *http.Request, s *consoleSession, status int, name string, data any, errMsg string) {
	c.renderError(w, r, s, status, name, data, errorView{Message: errMsg})
}

// renderProblem is render with an error the API answers too (problem)
// above the page's content, with its status and Retry-After.
func (c *Console) renderProblem(w http.ResponseWriter, r *http.Request, s *consoleSession, name string, data any, p shownProblem) {
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	c.renderError(w, r, s, p.Status, name, data, p.errorView)
}

// renderError is render with ev above the page's content; an errorView
// as the page's data is shown there when ev is empty.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, s *consoleSession, status int, name string, data any, ev errorView) {
	tag := c.lang(r)
	pages, ok := c.pages[tag]
	if !ok {
		tag, pages = language.English, c.pages[language.English]
	}
	p, ok := pages[name]
	if !ok {
		panic("console: no page " + name)
	}
	if d, ok := data.(errorView); ok && ev.Message == "" {
		ev = d
	}
	v := view{Session: s, Data: data, Error: ev.Message, ErrorKey: ev.Key, Flash: takeFlash(w, r),
		Zone: c.zoneViewOf(r), loc: c.zoneOf(r)}
	if s != nil {
		v.CSRF = s.CSRF
		v.Nav = c.navFor(s)
		c.nameSession(r, s)
	}
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console: render", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", htmlLang(tag))
	// Pages hold a tenant's data and the session's CSRF token: no cache,
	// no back-forward copy kept on disk.
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Cookie, HX-Request, Accept-Language")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// Flash messages survive one redirect in a cookie of their own: what an
// action did ("Restored task 7"), shown by the page the redirect lands on.
// Its name has the __Host- prefix when the client came over https.
func flashCookieName(r *http.Request) string {
	if secure(r) {
		return "__Host-deskkit-flash"
	}
	return "deskkit-flash"
}

// setFlash keeps msg for the next page this client renders.
func setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	http.SetCookie(w, &http.Cookie{
		Name: flashCookieName(r), Value: encodeFlash(msg), Path: "/", MaxAge: 60,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode,
	})
}

func takeFlash(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(flashCookieName(r))
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{
		Name: flashCookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode,
	})
	msg, ok := decodeFlash(ck.Value)
	if !ok {
		return ""
	}
	return msg
}

// redirect answers a form's POST with 303 to target (a path of the
// console), after which the browser GETs it.
func redirect(w http.ResponseWriter, r *http.Request, target string) {
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// encodeFlash makes msg a cookie value: base64url, cut to a size every
// browser keeps.
func encodeFlash(msg string) string {
	if len(msg) > 600 {
		msg = msg[:600]
	}
	return base64.RawURLEncoding.EncodeToString([]byte(msg))
}

func decodeFlash(v string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}
