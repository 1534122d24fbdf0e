package console

import (
	"context"
	"embed"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

// catalogue is the console's own texts in Simplified Chinese, keyed by
// their English text as deskkit's catalogues are.
//
//go:embed messages/*.json
var catalogue embed.FS

// LocaleResolver is an optional hook: the preferred locale of p's user and
// the default locale of p's tenant, which choose the pages' language after
// the request's own choices. It is deskkit.LocaleResolver, so one directory
// serves the API and the console. Config.Locales sets it; when that is nil,
// Config.Authenticator or Config.Names is used if it implements the method.
// Its error is answered as the API answers it: one wrapping
// deskkit.ErrUnavailable is the page "try again" (503), any other is
// logged and a 500 page.
type LocaleResolver = deskkit.LocaleResolver

// LanguageParam is the query parameter that switches the console's
// language ("?lang=zh-CN", "?lang=en"): the choice is kept in the cookie
// LanguageCookie and comes before Accept-Language.
const (
	LanguageParam  = "lang"
	LanguageCookie = "deskkit-lang"
)

// text is the mark of a page text kept in a table and written through the
// template function t: the console's completeness test finds it.
func text(s string) string { return s }

// i18n is how the console writes its texts: the host's Messages first, then
// deskkit's with the console's catalogue; langs picks the reader's
// language, as the API's does.
type i18n struct {
	host  *deskkit.Messages // Config.Messages, perhaps nil
	own   *deskkit.Messages // deskkit's languages and the console's catalogue
	langs *httpapi.Languages
}

func newI18n(cfg Config) (*i18n, error) {
	own, err := deskkit.NewMessages(catalogue)
	if err != nil {
		return nil, err
	}
	l := &i18n{host: cfg.Messages, own: own}
	// As httpapi.Config.DefaultLanguage: a default must name a language
	// the pages have exactly (zh-CN, not zh-TW, which is no Simplified
	// Chinese).
	if _, ok := l.messages().Language(cfg.DefaultLanguage); !ok {
		var have []string
		for _, t := range l.messages().Languages() {
			have = append(have, t.String())
		}
		return nil, fmt.Errorf("console: Config.DefaultLanguage %q names no language of the console's messages (%s)", cfg.DefaultLanguage, strings.Join(have, ", "))
	}
	locales := cfg.Locales
	if locales == nil {
		if lr, ok := cfg.Authenticator.(LocaleResolver); ok && cfg.Authenticator != nil {
			locales = lr
		} else if lr, ok := cfg.Names.(LocaleResolver); ok && cfg.Names != nil {
			locales = lr
		}
	}
	if l.langs, err = httpapi.NewLanguages(l.messages(), cfg.DefaultLanguage, locales); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return l, nil
}

// messages is the Messages that picks languages and renders the services'
// errors: the host's when it gave one.
func (l *i18n) messages() *deskkit.Messages {
	if l.host != nil {
		return l.host
	}
	return l.own
}

// sprintf writes the text key in tag's language: the host's translation or
// English rewording if it has one, else the console's.
func (l *i18n) sprintf(tag language.Tag, key string, args ...any) string {
	if l.host != nil && (tag == language.English || l.host.Has(tag, key)) {
		return l.host.Sprintf(tag, key, args...)
	}
	return l.own.Sprintf(tag, key, args...)
}

// htmlLang is the lang attribute of a page in tag's language.
func htmlLang(tag language.Tag) string {
	if b, _ := tag.Base(); b.String() == "zh" {
		if s, _ := tag.Script(); s.String() == "Hans" {
			return "zh-CN"
		}
	}
	return tag.String()
}

// askedKey marks a request context whose Localizer is one the request
// asked for (LanguageParam, LanguageCookie, Accept-Language): a page asks
// no locales then.
type askedKey struct{}

// withLanguage returns r with its Localizer on its context
// (deskkit.WithLocalizer): the language the request asks for (the one
// switched to with LanguageParam or kept in LanguageCookie, then
// Accept-Language), else the default. A signed-in page then asks the
// session's locales (withLocales).
func (c *Console) withLanguage(r *http.Request) *http.Request {
	choices := make([]string, 0, 3)
	choices = append(choices, r.URL.Query().Get(LanguageParam))
	if ck, err := r.Cookie(LanguageCookie); err == nil {
		choices = append(choices, ck.Value)
	}
	choices = append(choices, r.Header.Get("Accept-Language"))
	l, from, _ := c.i18n.langs.Resolve(r.Context(), nil, choices...) // without a principal, no lookup fails
	ctx := deskkit.WithLocalizer(r.Context(), l)
	if from == httpapi.FromRequest {
		ctx = context.WithValue(ctx, askedKey{}, true)
	}
	return r.WithContext(ctx)
}

// withLocales returns r in the language of p's user or tenant when the
// request asked for none the console has and a LocaleResolver tells
// them, as the API's requests are; the resolver's error is the caller's
// to answer.
func (c *Console) withLocales(r *http.Request, p deskkit.Principal) (*http.Request, error) {
	if r.Context().Value(askedKey{}) != nil {
		return r, nil
	}
	l, from, err := c.i18n.langs.Resolve(r.Context(), &p)
	if err != nil || from != httpapi.FromPrincipal {
		return r, err
	}
	return r.WithContext(deskkit.WithLocalizer(r.Context(), l)), nil
}

// switchLanguage keeps the language a request switched to with
// LanguageParam in LanguageCookie, for a year.
func (c *Console) switchLanguage(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get(LanguageParam)
	if v == "" {
		return
	}
	if _, err := language.Parse(v); err != nil || len(v) > 35 {
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: LanguageCookie, Value: url.QueryEscape(v), Path: c.base, MaxAge: 365 * 24 * 3600,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode,
	})
}

// localizer is r's Localizer (withLanguage's), the default's for a
// request that did not come through ServeHTTP; a language set outside
// (deskkit.WithLanguage) is written from the console's messages.
func (c *Console) localizer(r *http.Request) deskkit.Localizer {
	l, ok := deskkit.LocalizerOf(r.Context())
	switch {
	case !ok:
		return c.i18n.langs.Default()
	case l.Messages() != c.i18n.messages():
		return c.i18n.messages().Localizer(l.Language())
	}
	return l
}

// lang is the language r is answered in.
func (c *Console) lang(r *http.Request) language.Tag {
	return c.localizer(r).Language()
}

// tr writes the page text format (its English text, a literal) with args in
// r's language.
func (c *Console) tr(r *http.Request, format string, args ...any) string {
	return c.i18n.sprintf(c.lang(r), format, args...)
}
