// Package i18n holds the languages deskkit writes its messages in, picks
// one for a reader, and translates a message into it.
//
// A message's key is its English text: the format string (with fmt's
// verbs) that the code passes, such as "must be at most %d characters".
// English therefore needs no catalogue; each other language has one, a JSON
// object of key to translation, in which the translation may reorder the
// arguments with indexed verbs (%[2]s). Catalogues ship embedded for
// Simplified Chinese (messages/zh-Hans.json), and a host adds languages or
// overrides messages with Bundle.Load.
//
// Languages are matched with golang.org/x/text/language, which knows that
// zh, zh-CN and zh-Hans all mean Simplified Chinese and reads
// Accept-Language's quality values. Messages are formatted with fmt, not
// with golang.org/x/text/message: its printer writes numbers the locale's
// way (2000 as "2,000" in English), which would change every English
// message a client has already seen.
package i18n

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/language"
)

// The languages deskkit ships.
var (
	English           = language.English
	SimplifiedChinese = language.SimplifiedChinese
)

//go:embed messages/*.json
var shipped embed.FS

// Bundle is a set of languages and their catalogues. It is safe for
// concurrent use; Load may run while others translate.
type Bundle struct {
	mu      sync.RWMutex
	tags    []language.Tag // English first: the source language
	matcher language.Matcher
	msgs    map[language.Tag]map[string]string
}

// registered are the catalogues the module's packages ship beside the
// shared one (a kind of channel's own messages), in the order of Register.
var registered struct {
	sync.Mutex
	list []fs.FS
}

// Register adds a catalogue that New loads after the shared one: the
// messages a package of the module ships with its code, such as a kind of
// channel's. It is meant for a package's init, and loads as Load does.
func Register(fsys fs.FS) {
	registered.Lock()
	defer registered.Unlock()
	registered.list = append(registered.list, fsys)
}

// New returns a bundle of English, the shipped catalogue and those
// registered.
func New() *Bundle {
	b := &Bundle{tags: []language.Tag{English}, msgs: map[language.Tag]map[string]string{}}
	registered.Lock()
	all := append([]fs.FS{shipped}, registered.list...)
	registered.Unlock()
	for _, fsys := range all {
		if err := b.Load(fsys); err != nil {
			panic(fmt.Sprintf("i18n: the shipped catalogues: %v", err)) // a build error, caught by the tests
		}
	}
	return b
}

// Load reads every *.json file of fsys (its root and a "messages"
// folder), each the catalogue of the language its name gives as a BCP 47
// tag ("zh-Hans.json", "ja.json"): a JSON object of English text to
// translation. A language already known gets the messages added or
// replaced; a new one joins the bundle. A translation must use the same
// fmt verbs as its key, so that no argument goes missing or is read as
// another type.
func (b *Bundle) Load(fsys fs.FS) error {
	var files []string
	for _, dir := range []string{".", "messages"} {
		names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
		if err != nil {
			return err
		}
		files = append(files, names...)
	}
	for _, name := range files {
		tag, err := language.Parse(strings.TrimSuffix(path.Base(name), ".json"))
		if err != nil {
			return fmt.Errorf("i18n: %s: the file name is no language tag: %w", name, err)
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		var msgs map[string]string
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return fmt.Errorf("i18n: %s: %w", name, err)
		}
		for key, msg := range msgs {
			if !slices.Equal(Verbs(key), Verbs(msg)) {
				return fmt.Errorf("i18n: %s: %q: the translation's verbs %v differ from the key's %v", name, key, Verbs(msg), Verbs(key))
			}
		}
		b.add(tag, msgs)
	}
	return nil
}

func (b *Bundle) add(tag language.Tag, msgs map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// English is the keys themselves; a catalogue of it overrides
	// wordings, as for any language.
	m := b.msgs[tag]
	if m == nil {
		m = map[string]string{}
		b.msgs[tag] = m
		if !slices.Contains(b.tags, tag) {
			b.tags = append(b.tags, tag)
		}
	}
	for k, v := range msgs {
		m[k] = v
	}
	b.matcher = language.NewMatcher(b.tags)
}

// Tags lists the bundle's languages, English first.
func (b *Bundle) Tags() []language.Tag {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return slices.Clone(b.tags)
}

// Match picks the language of a reader from what is known of them, most
// telling first: typically the request's Accept-Language header, then the
// user's preferred locale, then the tenant's default, then the server's
// default. Each choice is an Accept-Language value or a single tag ("zh-CN",
// "en"); "" and choices that name none of the bundle's languages are
// skipped. A tag names a language of the bundle only as Exact says: the
// same language in the same script (zh, zh-CN, zh-SG and zh-Hans-HK are
// zh-Hans; zh-TW, zh-HK, zh-MO and zh-Hant are not, and go on down the
// choices, to a host's zh-Hant catalogue if it added one). With none
// left, Match answers English.
func (b *Bundle) Match(choices ...string) language.Tag {
	tag, _ := b.Matched(choices...)
	return tag
}

// Matched is Match, and whether a choice matched: false when it answers
// English because none did.
func (b *Bundle) Matched(choices ...string) (language.Tag, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, c := range choices {
		if strings.TrimSpace(c) == "" {
			continue
		}
		wanted, _, err := language.ParseAcceptLanguage(c)
		if err != nil {
			continue
		}
		// In the order of their weights: "zh-TW, zh;q=0.9" is zh-Hans.
		for _, t := range wanted {
			if tag, ok := exactIn(b.matcher, b.tags, t); ok {
				return tag, true
			}
		}
	}
	return English, false
}

// Exact is the bundle's language that tag names exactly, and whether it
// names one: a language whose catalogue has tag's language and script, once
// the likely subtags are filled in (zh-CN and zh-Hans-CN are zh-Hans; en-US
// and en-GB are en, whose text names no region). The closest language
// (x/text's matcher) is not enough: zh-TW (Traditional Chinese) is no
// zh-Hans, and tlh (Klingon) no en. Match uses the same rule. A tag that is no valid BCP 47 tag, or
// names no language (und), names none.
func (b *Bundle) Exact(tag string) (language.Tag, bool) {
	return Exact(b.Tags(), tag)
}

// Parse reads a valid BCP 47 language tag (RFC 5646): well-formed, and
// each subtag in the IANA registry as golang.org/x/text knows it, so that
// "klingon" (a well-formed language subtag that names no language) is
// refused and "tlh" taken. Case is free; an underscore (zh_CN), which
// language.Parse would take for a hyphen, is refused: no BCP 47 tag has one.
func Parse(tag string) (language.Tag, error) {
	if strings.Contains(tag, "_") {
		return language.Und, fmt.Errorf("i18n: %q: subtags are joined by hyphens", tag)
	}
	return language.Parse(tag)
}

// UnknownSubtag is the subtag that Parse's err says no registry has
// ("klingon" is none such: no language subtag has 5 to 8 letters, so it is
// ill-formed for Parse), "" if err says none.
func UnknownSubtag(err error) string {
	var v language.ValueError
	if errors.As(err, &v) {
		return v.Subtag()
	}
	return ""
}

// Exact is Bundle.Exact for the languages tags.
func Exact(tags []language.Tag, tag string) (language.Tag, bool) {
	t, err := Parse(tag)
	if err != nil {
		return language.Und, false
	}
	return exactIn(language.NewMatcher(tags), tags, t)
}

// ExactTag is Exact for a parsed tag, with m the matcher of tags
// (language.NewMatcher(tags)): for callers that match many tags against
// one list.
func ExactTag(m language.Matcher, tags []language.Tag, t language.Tag) (language.Tag, bool) {
	return exactIn(m, tags, t)
}

// exactIn is Exact for a tag, with m the matcher of tags.
func exactIn(m language.Matcher, tags []language.Tag, t language.Tag) (language.Tag, bool) {
	if _, conf := t.Base(); conf != language.Exact {
		return language.Und, false // und, or a script or region alone
	}
	if slices.Contains(tags, t) {
		return t, true
	}
	_, i, conf := m.Match(t)
	if conf == language.No || !sameWriting(t, tags[i]) {
		return language.Und, false
	}
	return tags[i], true
}

// sameWriting reports whether a and b are the same language in the same
// script, as their likely subtags say.
func sameWriting(a, b language.Tag) bool {
	ab, _ := a.Base()
	bb, _ := b.Base()
	as, _ := a.Script()
	bs, _ := b.Script()
	return ab == bb && as == bs
}

// Sprintf formats the message key (its English text) with args in tag's
// language: its translation if the bundle has one, else the English text.
func (b *Bundle) Sprintf(tag language.Tag, key string, args ...any) string {
	return fmt.Sprintf(b.Text(tag, key), args...)
}

// Text is key's translation into tag's language, or key itself. A tag
// that is none of the bundle's languages is matched to the closest (zh-CN
// to zh-Hans).
func (b *Bundle) Text(tag language.Tag, key string) string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	m, ok := b.msgs[tag]
	if !ok && tag != English {
		if _, i, conf := b.matcher.Match(tag); conf != language.No {
			m = b.msgs[b.tags[i]]
		}
	}
	if m != nil {
		if msg, ok := m[key]; ok {
			return msg
		}
	}
	return key
}

// Has tells whether tag's catalogue translates key.
func (b *Bundle) Has(tag language.Tag, key string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, ok := b.msgs[tag][key]
	return ok
}

// Verbs lists the fmt verbs of format in the order they take their
// arguments, each as the argument's index and the verb's letter ("1d",
// "2s"); "%%" is none. Indexed verbs (%[2]s) count from their index.
func Verbs(format string) []string {
	var out []string
	arg := 1
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		// Flags, width and precision.
		for i < len(format) && strings.IndexByte("+-# 0123456789.*", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] == '[' {
			end := strings.IndexByte(format[i:], ']')
			if end < 0 {
				break
			}
			if n, err := strconv.Atoi(format[i+1 : i+end]); err == nil {
				arg = n
			}
			i += end + 1
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		out = append(out, fmt.Sprintf("%d%c", arg, format[i]))
		arg++
	}
	slices.Sort(out)
	return out
}
