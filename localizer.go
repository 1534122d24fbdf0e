package deskkit

import (
	"context"

	"golang.org/x/text/language"
)

// Localizer writes messages in one reader's language: the language a
// request resolved once, and the Messages it writes from. httpapi resolves
// it for every API request and console page and puts it on the request's
// context (WithLocalizer), where the services and the senders they call
// find it (LocalizerOf): a verification code is written in the language
// of the request that asked for it, an error in the language of the
// request that met it, and nothing negotiates the language again.
//
// The zero Localizer writes English.
type Localizer struct {
	m   *Messages
	tag language.Tag
}

// Localizer returns the Localizer of tag's language, written from m; a
// tag that is none of m's languages writes English (see Language).
func (m *Messages) Localizer(tag language.Tag) Localizer {
	return Localizer{m: m, tag: tag}
}

// Language is the reader's language: English for the zero Localizer.
func (l Localizer) Language() language.Tag {
	if l.tag == (language.Tag{}) {
		return language.English
	}
	return l.tag
}

// Messages is what l writes from (nil writes English).
func (l Localizer) Messages() *Messages { return l.m }

// Sprintf formats the message key (its English text) with args in l's
// language, as Messages.Sprintf does.
func (l Localizer) Sprintf(key string, args ...any) string {
	return l.m.Sprintf(l.Language(), key, args...)
}

// Write is msg (a Text, or a deskkit error meant for the client) in l's
// language.
func (l Localizer) Write(msg LocalizedMessager) string {
	return msg.LocalizedMessage(l.m, l.Language())
}

type localizerKey struct{}

// WithLocalizer returns a copy of ctx that carries l: the reader's language
// for everything written for the request (its errors, the messages sent
// for it). The HTTP API sets it once per request, from the language the
// reader asked for and the host's locales.
func WithLocalizer(ctx context.Context, l Localizer) context.Context {
	return context.WithValue(ctx, localizerKey{}, l)
}

// LocalizerOf is the Localizer WithLocalizer put in ctx, and false when
// none (the zero Localizer, English, then).
func LocalizerOf(ctx context.Context) (Localizer, bool) {
	l, ok := ctx.Value(localizerKey{}).(Localizer)
	return l, ok
}

// WithLanguage returns a copy of ctx whose Localizer writes in tag's
// language from the Messages of ctx's Localizer, if it has one: for a
// caller outside the HTTP API (a job, a test) that knows its reader's
// language.
func WithLanguage(ctx context.Context, tag language.Tag) context.Context {
	l, _ := LocalizerOf(ctx)
	return WithLocalizer(ctx, Localizer{m: l.m, tag: tag})
}

// LanguageOf is the language of ctx's Localizer, and false when ctx has
// none.
func LanguageOf(ctx context.Context) (language.Tag, bool) {
	l, ok := LocalizerOf(ctx)
	return l.Language(), ok
}
