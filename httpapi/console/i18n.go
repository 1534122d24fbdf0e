package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// catalogue is the console's own texts in Simplified Chinese, keyed by
// their English text as deskkit's catalogues are.
//
//go:embed messages/*.json
var catalogue embed.FS

// LocaleResolver is an optional hook: the preferred locale of p's user and
// the default locale of p's tenant (BCP 47 tags such as "zh-CN" or "en";
// "" for none), which choose the pages' language after the request's
// Accept-Language. It has the method of the host directory's locale hook, so
// one directory serves the API and the console. Config.Locales sets it; when
// that is nil, Config.Authenticator or Config.Names is used if it
// implements the method. An error is logged and counts as no locale.
type LocaleResolver interface {
	Locales(ctx context.Context, p deskkit.Principal) (user, tenant string, err error)
}

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
// deskkit's with the console's catalogue.
type i18n struct {
	host    *deskkit.Messages // Config.Messages, perhaps nil
	own     *deskkit.Messages // deskkit's languages and the console's catalogue
	locales LocaleResolver
}

func newI18n(cfg Config) (*i18n, error) {
	own, err := deskkit.NewMessages(catalogue)
	if err != nil {
		return nil, err
	}
	l := &i18n{host: cfg.Messages, own: own, locales: cfg.Locales}
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
	if l.locales == nil {
		if lr, ok := cfg.Authenticator.(LocaleResolver); ok && cfg.Authenticator != nil {
			l.locales = lr
		} else if lr, ok := cfg.Names.(LocaleResolver); ok && cfg.Names != nil {
			l.locales = lr
		}
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

// requestLanguage picks the language of r: the one switched to
// (LanguageParam, LanguageCookie), Accept-Language, then p's user's and
// tenant's locales (when p is known and a LocaleResolver is), then
// Config.DefaultLanguage.
func (c *Console) requestLanguage(r *http.Request, p *deskkit.Principal) language.Tag {
	choices := make([]string, 0, 6)
	choices = append(choices, r.URL.Query().Get(LanguageParam))
	if ck, err := r.Cookie(LanguageCookie); err == nil {
		choices = append(choices, ck.Value)
	}
	choices = append(choices, r.Header.Get("Accept-Language"))
	m := c.i18n.messages()
	// The LocaleResolver may do I/O: it is asked only when the request
	// itself names no language the console has.
	if tag, ok := m.Matched(choices...); ok {
		return tag
	}
	choices = choices[:0]
	if p != nil && c.i18n.locales != nil {
		user, tenant, err := c.i18n.locales.Locales(r.Context(), *p)
		if err != nil {
			c.cfg.Logger.WarnContext(r.Context(), "console: locales of the session's user and tenant", slog.Any("error", err))
		} else {
			choices = append(choices, user, tenant)
		}
	}
	choices = append(choices, c.cfg.DefaultLanguage)
	return m.Match(choices...)
}

// withLanguage returns r carrying its language (deskkit.WithLanguage),
// with p's locales when p is not nil.
func (c *Console) withLanguage(r *http.Request, p *deskkit.Principal) *http.Request {
	return r.WithContext(deskkit.WithLanguage(r.Context(), c.requestLanguage(r, p)))
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

// lang is the language r is answered in.
func (c *Console) lang(r *http.Request) language.Tag {
	if t, ok := deskkit.LanguageOf(r.Context()); ok {
		return t
	}
	return c.requestLanguage(r, nil)
}

// tr writes the page text format (its English text, a literal) with args in
// r's language.
func (c *Console) tr(r *http.Request, format string, args ...any) string {
	return c.i18n.sprintf(c.lang(r), format, args...)
}

// localized is err's client message in r's language, "" if it has none.
func (c *Console) localized(r *http.Request, err error) string {
	return localizedIn(c.i18n.messages(), c.lang(r), err)
}

// localizedIn is err's client message in tag's language, "" if it has none.
func localizedIn(m *deskkit.Messages, tag language.Tag, err error) string {
	var lm deskkit.LocalizedMessager
	if errors.As(err, &lm) {
		return lm.LocalizedMessage(m, tag)
	}
	var cm deskkit.ClientMessager
	if errors.As(err, &cm) {
		return cm.ClientMessage()
	}
	return ""
}
