package deskkit

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"
)

// Event is something that happened in a tenant, for the tenant's event
// channels: "task.trashed", "user.email.changed", or a host's own type.
//
// A service publishes an event through a Publisher inside the transaction
// that makes the change, so that the event exists exactly when the change
// does: rolled back, nothing is sent; committed, it is delivered even if
// the process dies the next instant.
//
// An event says what happened in one of two ways. With Heading (and Body),
// messages, it is written in the language of each tenant it goes to, when
// it is delivered: the robots' title and markdown and the e-mail's subject
// and body (channel.Config.TenantLanguage); deskkit's own events are
// written so. With Title (and Text), strings, it goes as they say to every
// tenant, as a host's events may go on doing; so does every event stored
// before deskkit kept messages, in its stored English. An event has one or
// the other, never both. The webhook's JSON carries neither: its data are
// the same in every language.
type Event struct {
	// ID identifies the event and is its idempotency key: publishing an id
	// a second time in one tenant adds nothing. It is also the webhook-id
	// of Standard Webhooks, the same on every attempt, on which receivers
	// drop duplicates: "msg_" and up to 96 printable ASCII characters
	// without "." or spaces. NewEventID makes one; "" gets a new one.
	ID string
	// Type names the event, e.g. "task.trashed": 1 to 100 of a-z, 0-9,
	// ".", "_" and "-". A publisher refuses a type nobody registered.
	Type string
	// Time is when the event happened; the publisher's clock if zero.
	Time time.Time
	// Title is one line: the robots' heading and the e-mail subject.
	// Required unless Heading is set, at most 200 characters.
	Title string
	// Text is the body: markdown for the robots, plain text for e-mail,
	// at most 3000 characters; "" sends the title alone.
	Text string
	// Heading and Body are the title and text as messages, a key and its
	// arguments (Textf), for an event written in each reader's language;
	// Title and Text are then "". Their English (Text.String) is checked
	// as Title and Text are, and is what a publisher stores as the title
	// and text, so that whatever reads those reads English; each delivery
	// writes them anew in the receiving tenant's language, with the
	// catalogues of the publisher's Messages. A translation longer than
	// the bounds is cut to them ("…" ends it); one that is no single line
	// sends the English. A zero Body sends the heading alone; a Body
	// without a Heading is refused. A Publisher of the host's own reads
	// the English with Heading.String() (or Message).
	Heading Text
	Body    Text
	// Data is the webhook's "data": a value that encodes as a JSON object;
	// nil sends {}. The publisher sets its "tenantId" to the tenant the
	// event is published in, and refuses a top-level key that differs
	// from "tenantId" or "actor" in case alone ("TenantID"): receivers
	// that match keys without case would read it in place of deskkit's.
	Data any
}

// Message is ev's title and text in tag's language: Heading and Body
// written with m when Heading is set (a nil m, or English, writes the
// English), else Title and Text as they are.
func (ev Event) Message(m *Messages, tag language.Tag) (title, text string) {
	if ev.Heading.IsZero() {
		return ev.Title, ev.Text
	}
	if !ev.Body.IsZero() {
		text = ev.Body.LocalizedMessage(m, tag)
	}
	return ev.Heading.LocalizedMessage(m, tag), text
}

// EventType describes a type of event, for the catalogue that users read
// (GET /api/v1/event/types, the console's channel form) and that
// subscriptions are checked against. Its JSON tags are the catalogue's
// keys, so that a client may decode an answer's types into it.
type EventType struct {
	// Name is the Event.Type, e.g. "task.trashed".
	Name string `json:"type"`
	// About says when the event happens, in a sentence or two written for
	// the host's users, as a message (Textf) that the catalogue writes in
	// each reader's language. deskkit's types set it.
	About Text `json:"-"`
	// Description is the English description of a type without About: a
	// host's type written before About, which reads the same in every
	// language. Describe writes whichever the type has.
	Description string `json:"description"`
	// Service is who publishes the type: ServiceTrash, ServiceVerify,
	// ServiceChannel, or the host's own name for a group of its types
	// (1 to 40 of a-z, 0-9, "_" and "-"); "" is ServiceHost. The console
	// groups the subscription's checkboxes by it.
	Service string `json:"service,omitempty"`
	// Example is an example of the event's data, without "tenantId" (the
	// publisher adds it), or with it: the catalogue sets it to 1. It must
	// encode as a JSON object; nil is {}. Unless Schema is given, the
	// schema of the data is reflected from its Go type, so a value of the
	// data's own type (trash.EntryEventData) describes it best.
	Example any `json:"example"`
	// Schema is the JSON Schema (draft 2020-12) of the event's data,
	// tenantId included, for a type whose data's Go type does not say
	// enough (a map): a JSON object. Nil reflects it from Example.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// The services of EventType.Service.
const (
	ServiceTrash   = "trash"   // the trash's events (trash.EventTypes)
	ServiceVerify  = "verify"  // the verification service's (verify.EventTypes)
	ServiceChannel = "channel" // the channel registry's (channel.EventTypes)
	ServiceHost    = "host"    // the host's own, when EventType.Service is ""
)

// ServiceName is t's Service, ServiceHost for "".
func (t EventType) ServiceName() string {
	if t.Service == "" {
		return ServiceHost
	}
	return t.Service
}

// Describe is t's description in tag's language: About written with m (a
// nil m, or English, writes the English), else Description as it is.
func (t EventType) Describe(m *Messages, tag language.Tag) string {
	if t.About.IsZero() {
		return t.Description
	}
	return t.About.LocalizedMessage(m, tag)
}

// Actor is who caused an event, in the data of the services' events
// ("actor"); null there when nobody did (retention, a channel disabled for
// its failures).
type Actor struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Publisher writes an event into the caller's transaction. The trash and
// verification services publish through one (trash.Config.Publisher,
// verify.Config.Publisher); channel.ChannelRegistry is the one deskkit
// provides, and hosts publish their own events through it too.
//
// Publish only writes rows through db, the caller's transaction (or the
// database itself, for an event outside any transaction): it does no
// network I/O and calls back into nothing, so that it is safe under the
// caller's locks. It returns an error, and the caller rolls back, when the
// event is malformed or its type unknown; a publisher that can tell its
// types in advance implements EventTypeChecker too.
type Publisher interface {
	Publish(ctx context.Context, db bun.IDB, tenantID int64, ev Event) error
}

// EventTypeChecker is what a Publisher may also implement to say, before
// anything is published, whether it knows an event type. The services'
// constructors (trash.New, verify.New) ask a publisher that implements it
// for each of their types, and fail when one is missing, rather than
// leaving every operation that publishes to fail later. A publisher that
// does not implement it is taken on trust. channel.ChannelRegistry
// implements it: it knows the types registered with RegisterEventTypes.
type EventTypeChecker interface {
	KnowsEventType(name string) bool
}

// UnknownEventType returns the first of types that p says, as an
// EventTypeChecker, it does not know, or "" if it knows them all or does
// not implement EventTypeChecker. The services' constructors refuse a
// publisher for which it is not "".
func UnknownEventType(p Publisher, types []EventType) string {
	c, ok := p.(EventTypeChecker)
	if !ok {
		return ""
	}
	for _, t := range types {
		if !c.KnowsEventType(t.Name) {
			return t.Name
		}
	}
	return ""
}

// idEncoding is lower-case base32 without padding: ids that are safe in
// URLs, headers and file names, and case-insensitive to read aloud.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewEventID returns a new event id: "msg_" and 26 characters of
// lower-case base32 encoding 128 random bits.
func NewEventID() string {
	b := make([]byte, 16)
	// crypto/rand.Read never fails since Go 1.24: it crashes the program
	// rather than return weak bytes.
	_, _ = rand.Read(b)
	return "msg_" + idEncoding.EncodeToString(b)
}
