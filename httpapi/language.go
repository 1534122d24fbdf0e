package httpapi

import (
	"context"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// Languages chooses the language a reader is answered in, once per
// request: the API's ServeHTTP and the console's pages both ask it, and
// put what it answers on the request's context (deskkit.WithLocalizer),
// where every answer, page and service reads it (deskkit.LocalizerOf).
//
// The choice is the first that Messages has, in this order: the request's
// own choices (Accept-Language, and before it whatever the caller lets a
// reader pick, such as the console's language switch), then, only when
// none of those named a language of Messages, the user's preferred locale
// and the tenant's default locale from the LocaleResolver, then the
// default language. A choice that names none of Messages' languages is
// skipped (zh-TW reads no Simplified Chinese; see deskkit.Messages.Match).
type Languages struct {
	m       *deskkit.Messages
	def     language.Tag // the default, if hasDef
	hasDef  bool
	locales deskkit.LocaleResolver
}

// NewLanguages returns the Languages of m (nil: the languages deskkit
// ships), with def the default language, a BCP 47 tag that names one of
// m's languages exactly ("en", "zh-CN"; "" for none), and locales, the
// host's hook for a principal's locales (nil for none). It returns an
// error when def names none of m's languages.
func NewLanguages(m *deskkit.Messages, def string, locales deskkit.LocaleResolver) (*Languages, error) {
	if m == nil {
		m, _ = deskkit.NewMessages() // the shipped catalogues cannot fail
	}
	l := &Languages{m: m, locales: locales}
	if def != "" {
		tag, err := defaultLanguage(m, def)
		if err != nil {
			return nil, err
		}
		l.def, l.hasDef = tag, true
	}
	return l, nil
}

// Messages is what the Localizers of l write from.
func (l *Languages) Messages() *deskkit.Messages { return l.m }

// Default is the Localizer of the default language: English when there
// is none.
func (l *Languages) Default() deskkit.Localizer {
	if l.hasDef {
		return l.m.Localizer(l.def)
	}
	return l.m.Localizer(language.English)
}

// Origin tells where Resolve found a reader's language.
type Origin int

const (
	// FromNothing: nothing named a language of Messages and there is no
	// default. The reader gets English, and the request's context gets no
	// Localizer, so that a service keeps its own default (a template SMS
	// provider's locale).
	FromNothing Origin = iota
	// FromRequest: one of the request's own choices.
	FromRequest
	// FromPrincipal: the user's or the tenant's locale.
	FromPrincipal
	// FromDefault: the default language.
	FromDefault
)

// Resolve is the language of a reader who names choices (each an
// Accept-Language value or one tag; empty ones are skipped) and, if p is
// not nil and valid, is p: the first choice that names a language of
// Messages, else p's locales (the LocaleResolver is asked only then, so
// that a host's lookup costs nothing on a request that names its
// language), else the default. It answers the Localizer and where it came
// from; with FromNothing, the Localizer writes English.
//
// A request known first without its principal (to answer a refused
// token) and then with it is resolved twice: with its choices and nil,
// then, unless the first answered FromRequest, with p and no choices.
//
// The error is the LocaleResolver's: one wrapping deskkit.ErrUnavailable
// is an outage, and the request is answered as for any error.
func (l *Languages) Resolve(ctx context.Context, p *deskkit.Principal, choices ...string) (deskkit.Localizer, Origin, error) {
	if tag, ok := l.m.Matched(choices...); ok {
		return l.m.Localizer(tag), FromRequest, nil
	}
	if p != nil && p.Valid() && l.locales != nil {
		user, tenant, err := l.locales.Locales(ctx, *p)
		if err != nil {
			return deskkit.Localizer{}, FromNothing, err
		}
		if tag, ok := l.m.Matched(user, tenant); ok {
			return l.m.Localizer(tag), FromPrincipal, nil
		}
	}
	if l.hasDef {
		return l.m.Localizer(l.def), FromDefault, nil
	}
	return l.m.Localizer(language.English), FromNothing, nil
}
