package deskkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/text/language"
)

// storedText is a Text's JSON form; see Text.MarshalJSON.
type storedText struct {
	Key   string      `json:"k"`
	Plain bool        `json:"p,omitempty"`
	Args  []storedArg `json:"a,omitempty"`
}

type storedArg struct {
	S *string        `json:"s,omitempty"`
	I *int64         `json:"i,omitempty"`
	U *uint64        `json:"u,omitempty"`
	F *float64       `json:"f,omitempty"`
	B *bool          `json:"b,omitempty"`
	D *time.Duration `json:"d,omitempty"`
	T *storedText    `json:"t,omitempty"`
}

// MarshalJSON writes what t is, not what it says: its key and its
// arguments, each with its kind, so that a message stored now (a channel's
// reason for being disabled, an attempt's error) is written later in the
// language of whoever reads it. The stored form:
//
//	{"k": "the webhook answered %d %s", "a": [{"i": 410}, {"s": "Gone"}]}
//
// "k" is the key (the English format); "p": true marks a key that is no
// format but the message itself; "a" lists the arguments, each one of "s"
// (a string), "i" (a signed integer), "u" (an unsigned one), "f" (a
// float), "b" (a bool), "d" (a time.Duration, in nanoseconds) and "t" (a
// Text). An argument of another kind is kept as the string its English
// message gives (fmt's %v, or its client message for a LocalizedMessager
// other than deskkit's *InputError and *Error, which are kept as Texts),
// which is what a %s or %v verb writes of it.
// The zero Text is null.
func (t Text) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.stored())
}

func (t Text) stored() *storedText {
	s := &storedText{Key: t.format, Plain: t.plain}
	for _, a := range t.args {
		s.Args = append(s.Args, storeArg(a))
	}
	return s
}

func storeArg(a any) storedArg {
	switch v := a.(type) {
	case Text:
		return storedArg{T: v.stored()}
	case string:
		return storedArg{S: &v}
	case time.Duration:
		return storedArg{D: &v}
	case bool:
		return storedArg{B: &v}
	case int:
		return int64Arg(int64(v))
	case int8:
		return int64Arg(int64(v))
	case int16:
		return int64Arg(int64(v))
	case int32:
		return int64Arg(int64(v))
	case int64:
		return int64Arg(v)
	case uint:
		return uint64Arg(uint64(v))
	case uint8:
		return uint64Arg(uint64(v))
	case uint16:
		return uint64Arg(uint64(v))
	case uint32:
		return uint64Arg(uint64(v))
	case uint64:
		return uint64Arg(v)
	case float32:
		f := float64(v)
		return storedArg{F: &f}
	case float64:
		return storedArg{F: &v}
	case *InputError:
		return storedArg{T: Textf("%s %s", v.Field, v.Rule).stored()}
	case *Error:
		return storedArg{T: v.msg.stored()}
	case LocalizedMessager:
		s := v.LocalizedMessage(nil, language.English)
		return storedArg{S: &s}
	}
	s := fmt.Sprint(a)
	return storedArg{S: &s}
}

func int64Arg(v int64) storedArg   { return storedArg{I: &v} }
func uint64Arg(v uint64) storedArg { return storedArg{U: &v} }

// UnmarshalJSON reads what MarshalJSON wrote; null is the zero Text.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s *storedText
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil {
		*t = Text{}
		return nil
	}
	v, err := s.text()
	if err != nil {
		return err
	}
	*t = v
	return nil
}

var errStoredText = errors.New("deskkit: a stored message's argument has no value")

func (s *storedText) text() (Text, error) {
	if s.Key == "" {
		return Text{}, errors.New("deskkit: a stored message has no key")
	}
	t := Text{format: s.Key, plain: s.Plain}
	for _, a := range s.Args {
		var v any
		switch {
		case a.S != nil:
			v = *a.S
		case a.I != nil:
			v = *a.I
		case a.U != nil:
			v = *a.U
		case a.F != nil:
			v = *a.F
		case a.B != nil:
			v = *a.B
		case a.D != nil:
			v = *a.D
		case a.T != nil:
			nested, err := a.T.text()
			if err != nil {
				return Text{}, err
			}
			v = nested
		default:
			return Text{}, errStoredText
		}
		t.args = append(t.args, v)
	}
	return t, nil
}
