package deskkit

import (
	"fmt"
	"io/fs"
	"reflect"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit/internal/i18n"
)

// Messages holds the languages deskkit writes its messages in: English,
// Simplified Chinese, and whatever a host adds. It picks a reader's language
// (Match) and renders a message in it (Sprintf, and the LocalizedMessage
// methods of deskkit's errors and Text). A host makes one with NewMessages
// and hands it to what renders messages (the HTTP API, the verification
// service); it is safe for concurrent use.
//
// A nil *Messages renders every message in English.
//
// A message's key is its English text, the fmt format the code writes
// ("must be at most %d characters"), so English needs no catalogue and
// stays exactly as clients have seen it; machine words (field names,
// bizKeys, codes, enum values, URLs) are the same in every language.
// Languages are matched with golang.org/x/text/language, which reads
// Accept-Language's quality values and knows which tags mean the same
// language. Messages are formatted with fmt from catalogues keyed by the
// English text rather than with golang.org/x/text/message, whose printer
// writes numbers the locale's way (2000 as "2,000" in English) and so would
// change English messages, or with github.com/nicksnyder/go-i18n, whose
// messages are keyed by ids and written in templates: deskkit's messages are
// fmt formats already, their arguments are mostly machine words, and a
// catalogue keyed by the English text needs no id per message and cannot
// fall out of step with it. deskkit's tests fail when the code writes a
// message the shipped Chinese catalogue lacks, or the catalogue keeps one
// the code no longer writes.
type Messages struct {
	b *i18n.Bundle
}

// NewMessages returns the messages deskkit ships (English and Simplified
// Chinese) with the host's catalogues on top. Each catalogue is an fs.FS
// whose *.json files (at its root or in a "messages" folder) are named by a
// BCP 47 language tag ("zh-Hans.json", "ja.json") and hold a JSON object of
// English text to translation: a language already known gets the messages
// added or replaced, a new one joins. The English text of a message is its
// fmt format ("must be at most %d characters"); a translation must use the
// same verbs, and may reorder them with indexes ("%[2]s 的 %[1]d"). An
// "en.json" catalogue rewords English messages.
//
// It returns an error, and no Messages, when a catalogue cannot be read or
// a translation's verbs differ from its key's.
func NewMessages(catalogues ...fs.FS) (*Messages, error) {
	b := i18n.New()
	for _, c := range catalogues {
		if err := b.Load(c); err != nil {
			return nil, fmt.Errorf("deskkit: %w", err)
		}
	}
	return &Messages{b: b}, nil
}

// Languages lists the languages of m, English first.
func (m *Messages) Languages() []language.Tag {
	if m == nil {
		return []language.Tag{language.English}
	}
	return m.b.Tags()
}

// Match picks the language of a reader from what is known of them, most
// telling first: typically the request's Accept-Language header, then the
// user's preferred locale, then the tenant's default, then the server's.
// Each choice is an Accept-Language value (quality values order it) or one
// tag ("zh-CN", "en"). A tag matches a language of m as Language says: the
// same language in the same script (zh, zh-CN, zh-SG, zh-Hans and
// zh-Hans-CN match Simplified Chinese; zh-TW, zh-HK, zh-MO and zh-Hant do
// not, and go on down the choices, to a zh-Hant catalogue when the host
// added one). Empty choices and those that match none of m's languages
// are skipped; with none left, Match answers English.
func (m *Messages) Match(choices ...string) language.Tag {
	if m == nil {
		return language.English
	}
	return m.b.Match(choices...)
}

// Matched is Match, and whether one of the choices matched a language of m:
// false when Match answers English because none did, so that a caller can
// tell a reader who asked for English from one who asked for nothing m has.
// A nil *Messages matches nothing.
func (m *Messages) Matched(choices ...string) (language.Tag, bool) {
	if m == nil {
		return language.English, false
	}
	return m.b.Matched(choices...)
}

// Language is the language of m that tag names exactly, and whether it
// names one: tag has the language and script of one of m's catalogues,
// once its likely subtags are filled in (zh, zh-CN and zh-Hans-CN name
// zh-Hans; en-US and en-GB name en, whose text names no region), the rule
// Match follows for each choice: zh-TW (Traditional Chinese) names no
// language of the shipped catalogues, nor does tlh, nor anything that is
// no valid BCP 47 tag. A nil *Messages has English only.
func (m *Messages) Language(tag string) (language.Tag, bool) {
	if m == nil {
		return i18n.Exact([]language.Tag{language.English}, tag)
	}
	return m.b.Exact(tag)
}

// Sprintf formats the message key (its English text, a fmt format) with
// args in tag's language: its translation if m has one, else the English
// text. Arguments that are themselves messages (a Text, an *InputError, any
// LocalizedMessager) are rendered in tag's language too.
func (m *Messages) Sprintf(tag language.Tag, key string, args ...any) string {
	args = localizeArgs(m, tag, args)
	if m == nil {
		return fmt.Sprintf(key, args...)
	}
	return m.b.Sprintf(tag, key, args...)
}

// Has tells whether m translates key into tag's language; English has every
// key.
func (m *Messages) Has(tag language.Tag, key string) bool {
	if tag == language.English {
		return true
	}
	return m != nil && m.b.Has(tag, key)
}

// text is key's translation, or key, with no formatting: for messages that
// are no format.
func (m *Messages) text(tag language.Tag, key string) string {
	if m == nil {
		return key
	}
	return m.b.Text(tag, key)
}

func localizeArgs(m *Messages, tag language.Tag, args []any) []any {
	var out []any
	for i, a := range args {
		if l, ok := a.(LocalizedMessager); ok {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = l.LocalizedMessage(m, tag)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// LocalizedMessager is implemented by messages for people that can be
// written in another language than English: deskkit's errors meant for the
// client (*InputError, *Error, *RateLimitError and the services' own), and
// Text. LocalizedMessage with language.English, or with a nil *Messages, is
// the English message, as ClientMessage or String gives it, byte for byte.
// Where a LocalizedMessager is the argument of a Text, the Text writes it
// with LocalizedMessage, in English too: an error's client message, not its
// Error.
type LocalizedMessager interface {
	LocalizedMessage(m *Messages, tag language.Tag) string
}

// Text is a message for a person: an English fmt format, which is also its
// key in the catalogues, and its arguments. String writes it in English;
// LocalizedMessage in another language. Arguments that are LocalizedMessagers
// (a Text in a Text) are rendered in the same language.
type Text struct {
	format string
	args   []any
	plain  bool // format is no format but the message itself
}

// Plain returns the Text of a message that is no format ("is required",
// "100% sure"): msg is its key, written in another language where a
// catalogue translates it, and as it is where none does (a host's own
// English message). The zero Text for "".
func Plain(msg string) Text {
	if msg == "" {
		return Text{}
	}
	return Text{format: msg, plain: true}
}

// Textf returns the Text of format and args. The format must be a literal
// for deskkit's own messages, so that the test of the catalogues finds it.
func Textf(format string, args ...any) Text {
	return Text{format: format, args: args}
}

// String is the message in English.
func (t Text) String() string {
	if t.plain {
		return t.format
	}
	return fmt.Sprintf(t.format, localizeArgs(nil, language.English, t.args)...)
}

// Key is the English format: the message's key in the catalogues.
func (t Text) Key() string { return t.format }

// IsZero tells whether t is the zero Text, no message at all.
func (t Text) IsZero() bool { return t.format == "" }

// LocalizedMessage is the message in tag's language.
func (t Text) LocalizedMessage(m *Messages, tag language.Tag) string {
	if t.plain {
		return m.text(tag, t.format)
	}
	return m.Sprintf(tag, t.format, t.args...)
}

// MapStrings returns t with f applied to each of its string arguments and
// to those of the messages among them (a Text, an *InputError's rule, an
// *Error's message), however deep; the formats are left as they are. An
// argument that is an error, a fmt.Stringer or another LocalizedMessager
// becomes f of its English text; numbers, bools and durations stay. It
// masks, in every language the message is written in, what the message
// quotes of the outside world: a channel so hides, in what a far end
// answered, the secrets the far end echoed.
func (t Text) MapStrings(f func(string) string) Text {
	if t.plain || len(t.args) == 0 {
		return t
	}
	args := make([]any, len(t.args))
	for i, a := range t.args {
		args[i] = mapArg(a, f)
	}
	return Text{format: t.format, args: args}
}

func mapArg(a any, f func(string) string) any {
	switch v := a.(type) {
	case string:
		return f(v)
	case Text:
		return v.MapStrings(f)
	case *InputError:
		return Textf("%s %s", f(v.Field), v.Rule.MapStrings(f))
	case *Error:
		return v.msg.MapStrings(f)
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, time.Duration:
		return a
	case LocalizedMessager:
		return f(v.LocalizedMessage(nil, language.English))
	case error:
		return f(v.Error())
	case fmt.Stringer:
		return f(v.String())
	}
	if r := reflect.ValueOf(a); r.Kind() == reflect.String {
		return f(r.String())
	}
	return a
}
