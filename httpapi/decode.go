package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// DecodeJSON reads r's body, a single JSON object, into dst. Unknown fields,
// keys given twice at any depth, wrong types, numbers out of range,
// malformed JSON and a non-JSON content type are all *deskkit.InputError
// values naming the field where there is one. A body over the server's
// limit (Config.MaxBodyBytes, 1 MiB by default) is an error the server
// answers 413 request_too_large, naming the limit. Keys match field names exactly: encoding/json would
// take "MOBILE" for the field mobile, DecodeJSON answers that it is not a
// field of this request. A key given twice in one object is refused at
// any depth, since the last would otherwise win.
//
// The message says what the field must be from its Go type ("toAddress
// must be an array of arrays of addresses"), and a number written with a
// leading zero (024172, not JSON) is named as such, with the advice to
// write it as a string.
//
// A string holding bytes that are not UTF-8 is refused, naming its field
// ("name must be valid UTF-8"), as the same bytes in a query are: encoding/json
// would silently store each as U+FFFD. So is an escape of half a surrogate
// pair without its other half ("\ud800"), which encodes no character and
// which encoding/json would also turn into U+FFFD; a pair
// ("\ud83d\ude00") is the character it encodes, and "\ufffd" written as
// such is taken as written.
func DecodeJSON(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return deskkit.Invalid("Content-Type", "must be application/json")
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return jsonError(err, nil, nil)
	}
	if err := checkKeys(body, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, body, reflect.TypeOf(dst))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err, body, reflect.TypeOf(dst))
		}
		return deskkit.Invalid("body", "must hold exactly one JSON object")
	}
	// checkKeys names the string that is not UTF-8; this catches what it
	// cannot reach (a string nested deeper than maxKeyDepth), never
	// anything else: outside strings such bytes are no JSON.
	if !utf8.Valid(body) {
		return deskkit.Invalid("body", "must be valid UTF-8")
	}
	return nil
}

// bodyTooLarge is a body over the server's limit, answered 413
// request_too_large with a message that names the limit.
type bodyTooLarge struct{ err *http.MaxBytesError }

func (e *bodyTooLarge) Error() string         { return e.ClientMessage() }
func (e *bodyTooLarge) Unwrap() error         { return e.err }
func (e *bodyTooLarge) ClientMessage() string { return e.text().String() }
func (e *bodyTooLarge) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.text().LocalizedMessage(m, tag)
}
func (e *bodyTooLarge) text() deskkit.Text {
	return deskkit.Textf("body must be at most %d bytes", e.err.Limit)
}

// jsonError turns a decoding error into the client's message; body and
// dst, the body read and the destination's type, let it say more.
func jsonError(err error, body []byte, dst reflect.Type) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return deskkit.Invalid("body", "is required: a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return deskkit.Invalid("body", "must be complete JSON; it ends early")
	case errors.As(err, &tooBig):
		return &bodyTooLarge{tooBig}
	case errors.As(err, &syntax):
		if in := leadingZero(body, syntax.Offset); in != nil {
			return in
		}
		return deskkit.Invalid("body", "must be valid JSON; error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return deskkit.Invalid("body", "must be a JSON object")
		}
		if ft := fieldType(dst, typ.Field); ft != nil && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) {
			// Say what the whole field must be ("an array of arrays of
			// addresses"), not what the element that failed is.
			return deskkit.Invalid(typ.Field, "must be %s", describe(ft, lastWord(typ.Field)))
		}
		return deskkit.Invalid(typ.Field, "must be %s", jsonKind(typ))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return deskkit.Invalid(name, "is not a field of this request")
	default:
		return deskkit.Invalid("body", "must be a valid JSON object")
	}
}

// objectKey is the key a value at the end of the text follows.
var objectKey = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:\s*$`)

// leadingZero explains a syntax error at offset that is a number written
// with a leading zero (024172, as a code or a phone number invites): JSON
// has no such number, and a string keeps the zero.
func leadingZero(body []byte, offset int64) *deskkit.InputError {
	bad := int(offset) - 1 // the byte the decoder refused
	if bad < 1 || bad >= len(body) || !isDigit(body[bad]) || body[bad-1] != '0' {
		return nil
	}
	start := bad - 1
	if start > 0 && body[start-1] == '-' {
		start--
	}
	if start > 0 && (isDigit(body[start-1]) || strings.IndexByte(".eE+-", body[start-1]) >= 0) {
		return nil // the 0 is inside a number, not its start
	}
	end := bad
	for end < len(body) && (isDigit(body[end]) || strings.IndexByte(".eE+-", body[end]) >= 0) {
		end++
	}
	num := string(body[start:end])
	field := "body"
	if m := objectKey.FindSubmatch(body[:start]); m != nil {
		if key, err := strconv.Unquote(`"` + string(m[1]) + `"`); err == nil {
			field = key
		}
	}
	return deskkit.Invalid(field, "is not valid JSON: a number cannot start with 0 (%s, at byte %d); write it as a string: %q", num, start+1, num)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// fieldType is the type of the field a dotted path ("a.b", as
// encoding/json names fields) names in dst, through pointers, slices and
// maps; nil if there is none.
func fieldType(dst reflect.Type, path string) reflect.Type {
	t := dst
	for _, key := range strings.Split(path, ".") {
		t = elemOf(t)
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		t = fieldsOf(t)[key]
	}
	return t
}

// elemOf is t without pointers, slices, arrays and maps.
func elemOf(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
	return nil
}

// describe says what a JSON value of type t is, for "must be ...": "an
// array of arrays of addresses". noun names plain strings (the field's own
// name: toAddress holds addresses); it stays as it is in every language.
func describe(t reflect.Type, noun string) deskkit.Text {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		return deskkit.Textf("an array of %s", plural(t.Elem(), noun))
	}
	return jsonKind(&json.UnmarshalTypeError{Type: t})
}

// plural names values of type t, many of them: a deskkit.Text, or a noun
// made from a name of the code.
func plural(t reflect.Type, noun string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return deskkit.Textf("arrays of %s", plural(t.Elem(), noun))
	case reflect.String:
		if t == digitsType {
			return deskkit.Textf("digit strings")
		}
		if t.Name() != "string" && t.Name() != "" {
			return pluralize(lastWord(t.Name()))
		}
		if noun == "" {
			return deskkit.Textf("strings")
		}
		return pluralize(noun)
	case reflect.Bool:
		return deskkit.Textf("true or false values")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return deskkit.Textf("integers")
	case reflect.Float32, reflect.Float64:
		return deskkit.Textf("numbers")
	default:
		return deskkit.Textf("objects")
	}
}

// lastWord is the last word of a camelCase name, in lower case: "toAddress"
// and "filters.toAddress" give "address".
func lastWord(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndexFunc(name, unicode.IsUpper)
	if i < 0 {
		i = 0
	}
	return strings.ToLower(name[i:])
}

// pluralize is the English plural of a noun, well enough for field names;
// a noun that already ends in a single s is taken as plural.
func pluralize(w string) string {
	switch {
	case w == "":
		return "strings"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return w + "es"
	case strings.HasSuffix(w, "s"):
		return w
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ies"
	default:
		return w + "s"
	}
}

func jsonKind(e *json.UnmarshalTypeError) deskkit.Text {
	if e.Type == digitsType {
		return deskkit.Textf("digits, written as a number or a string")
	}
	switch e.Type.Kind().String() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		if strings.HasPrefix(e.Value, "number") {
			return deskkit.Textf("an integer that fits %s", e.Type.Kind().String())
		}
		return deskkit.Textf("an integer")
	case "float32", "float64":
		return deskkit.Textf("a number")
	case "string":
		return deskkit.Textf("a string")
	case "bool":
		return deskkit.Textf("true or false")
	case "slice", "array":
		return deskkit.Textf("an array")
	default:
		return deskkit.Textf("a %s", e.Type.Kind().String())
	}
}

// maxKeyDepth bounds checkKeys' recursion; deeper bodies are left to
// encoding/json, which refuses them.
const maxKeyDepth = 1000

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkKeys walks body's tokens beside dst's type, before encoding/json
// decodes it, for what encoding/json lets through: a key given twice in
// one object (the last would win), a key that names a field of a struct
// only without regard to case, and a string (key or value) that is not
// UTF-8 or holds half a surrogate pair (see DecodeJSON), which encoding/json
// would turn into U+FFFD. Objects decoded into maps, interfaces and
// json.Unmarshalers are checked for duplicates and UTF-8 only. Malformed
// JSON is left to the decoder, which says where it is.
func checkKeys(body []byte, dst reflect.Type) error {
	w := walker{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
	w.dec.UseNumber()
	var in *deskkit.InputError
	if err := w.value(dst, "", 0); errors.As(err, &in) {
		return in
	}
	return nil
}

// walker reads the tokens of body.
type walker struct {
	dec  *json.Decoder
	body []byte
}

// token reads the next token; a string token is checked as written in the
// body, before encoding/json replaced what is not UTF-8. field names it: a
// key is named by the object it is in, "body" at the top.
func (w walker) token(field string) (json.Token, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	if _, ok := tok.(string); ok {
		// Between start and the end of the token: the string as written,
		// after the delimiters (',' ':') and spaces before it.
		if err := checkUTF8(cmp.Or(field, "body"), w.body[start:w.dec.InputOffset()]); err != nil {
			return nil, err
		}
	}
	return tok, nil
}

// checkUTF8 refuses raw, a JSON string as written, when it holds bytes that
// are not UTF-8 or an escape of half a surrogate pair without the other half.
func checkUTF8(field string, raw []byte) error {
	if !utf8.Valid(raw) {
		return deskkit.Invalid(field, "must be valid UTF-8")
	}
	for i := bytes.IndexByte(raw, '\\'); i >= 0 && i+1 < len(raw); {
		if raw[i+1] != 'u' {
			i = nextEscape(raw, i+2)
			continue
		}
		r := hex4(raw[i+2:])
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00 && len(raw) >= i+12 && raw[i+6] == '\\' && raw[i+7] == 'u' &&
			0xdc00 <= hex4(raw[i+8:]) && hex4(raw[i+8:]) < 0xe000:
			i = nextEscape(raw, i+12) // a pair
		case utf16.IsSurrogate(r):
			return deskkit.Invalid(field, "must be valid UTF-8; %s alone is half of a surrogate pair, no character", string(raw[i:i+6]))
		default:
			i = nextEscape(raw, i+6)
		}
	}
	return nil
}

// nextEscape is the index of the first backslash of raw at or after i, or -1.
func nextEscape(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	if j := bytes.IndexByte(raw[i:], '\\'); j >= 0 {
		return i + j
	}
	return -1
}

// hex4 is the value of the four hex digits b starts with (the decoder has
// checked them, since the token was read); -1 if it does not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(n)
}

func (w walker) value(t reflect.Type, path string, depth int) error {
	if depth > maxKeyDepth {
		return errors.New("too deep")
	}
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	t = plain(t)
	switch tok {
	case json.Delim('{'):
		return w.object(t, path, depth)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for w.dec.More() {
			if err := w.value(elem, path, depth+1); err != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return err
	}
	return nil
}

func (w walker) object(t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = fieldsOf(t)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		name := key
		if path != "" {
			name = path + "." + key
		}
		if seen[key] {
			return deskkit.Invalid(name, "must be given once")
		}
		seen[key] = true
		var vt reflect.Type
		switch {
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				return deskkit.Invalid(name, "is not a field of this request")
			}
			vt = ft
		case t != nil && t.Kind() == reflect.Map:
			vt = t.Elem()
		}
		if err := w.value(vt, name, depth+1); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return err
}

// plain is t without pointers; nil for a type that decodes JSON itself
// (json.Unmarshaler), whose keys are its own business.
func plain(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// fieldCache holds fieldsOf's answers: request types are few and fixed.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf is the JSON keys of struct t, with the types they decode into.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := jsonFields(t, map[string]reflect.Type{})
	fieldCache.Store(t, f)
	return f
}

// jsonFields adds the JSON keys of struct t, as encoding/json names them
// (the json tag's name, else the Go name; embedded structs without a name
// promote theirs), with the types they decode into.
// A field of t shadows a promoted one of the same name, as in Go.
func jsonFields(t reflect.Type, out map[string]reflect.Type) map[string]reflect.Type {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = f.Type
		}
	}
	for _, et := range embedded {
		jsonFields(et, out)
	}
	return out
}
