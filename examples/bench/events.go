package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// The benchmark's events are task.trashed events as the trash service
// publishes them: its data type (trash.EntryEventData), its title and text,
// with realistic names and ids.

// taskNames are the trashed tasks' names, used in turn.
var taskNames = []string{
	"Fix login redirect loop",
	"Migrate billing to the new invoice API",
	"Write onboarding checklist for support agents",
	"Flaky test: export CSV with 10k rows",
	"Update the privacy policy link in the footer",
	"Investigate slow search on the ticket list",
}

// actorNames are the users who trash them, in turn.
var actorNames = []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson"}

// trashedEvent returns the i-th task.trashed event of a tenant, with a new
// id and the current time, as trash.Trash.Add publishes it.
func trashedEvent(tenant int64, i int) deskkit.Event {
	name := taskNames[i%len(taskNames)]
	actor := deskkit.Actor{ID: 1000 + int64(i%len(actorNames)), Name: actorNames[i%len(actorNames)]}
	project := 100 + tenant*10 + int64(i%7)
	return deskkit.Event{
		ID:   deskkit.NewEventID(),
		Type: trash.EventTaskTrashed,
		// deskkit keeps an event's time to the millisecond.
		Time:  time.Now().UTC().Truncate(time.Millisecond),
		Title: fmt.Sprintf("Task %q moved to the trash", name),
		Text:  fmt.Sprintf("%s moved task %q of project %d to the trash.", actor.Name, name, project),
		Data: trash.EntryEventData{
			Actor:      &actor,
			ProjectID:  project,
			TrashID:    50000 + int64(i),
			TargetType: trash.TargetTask,
			TargetID:   200000 + tenant*100000 + int64(i),
			TargetName: name,
		},
	}
}

// webhookBody is the JSON body deskkit posts for ev published in tenant,
// byte for byte: Standard Webhooks' {"type", "timestamp", "data"}, the data
// with the "tenantId" Publish adds first. River's jobs and the plain client
// post it.
func webhookBody(tenant int64, ev deskkit.Event) ([]byte, error) {
	data, ok := ev.Data.(trash.EntryEventData)
	if !ok {
		return nil, fmt.Errorf("event %s: data is %T, not trash.EntryEventData", ev.ID, ev.Data)
	}
	return json.Marshal(struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      any       `json:"data"`
	}{ev.Type, ev.Time, struct {
		TenantID int64 `json:"tenantId"`
		trash.EntryEventData
	}{tenant, data}})
}

// newSigningSecret returns a webhook signing secret as deskkit makes them:
// "whsec_" and the base64 of 32 random bytes.
func newSigningSecret() string {
	return "whsec_" + base64.StdEncoding.EncodeToString(randomBytes(32))
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// message is one webhook message for River's jobs and the plain client:
// where it goes and what it carries, as deskkit would send it.
type message struct {
	URL    string `json:"url"` // the receiver's URL of the channel
	ID     string `json:"id"`  // webhook-id
	Secret string `json:"secret"`
	Body   []byte `json:"body"` // base64 in JSON, so that River's jsonb keeps it byte for byte
}

// messages returns the messages of a backlog: for each tenant, events
// events, each to each of the tenant's channels, at the receiver's base
// URL with the paths and a secret per channel as deskkit's channels of
// the same layout get.
func messages(base string, l layout) ([]message, error) {
	secrets := map[string]string{}
	out := make([]message, 0, l.deliveries())
	for t := range l.tenants {
		tenant := l.firstTenant + int64(t)
		for i := range l.events {
			ev := trashedEvent(tenant, i)
			body, err := webhookBody(tenant, ev)
			if err != nil {
				return nil, err
			}
			for c := range l.channels {
				path := channelPath(hookPath, tenant, c)
				if secrets[path] == "" {
					secrets[path] = newSigningSecret()
				}
				out = append(out, message{URL: base + path, ID: ev.ID, Secret: secrets[path], Body: body})
			}
		}
	}
	return out, nil
}

// layout is how a backlog is spread: tenants numbered from firstTenant,
// each with channels webhooks and events events, each event delivered to
// every channel of its tenant.
type layout struct {
	firstTenant int64
	tenants     int
	channels    int
	events      int
}

// deliveries is how many deliveries the layout makes.
func (l layout) deliveries() int { return l.tenants * l.channels * l.events }

// String describes the layout, for the output.
func (l layout) String() string {
	tenants := "tenants"
	if l.tenants == 1 {
		tenants = "tenant"
	}
	return fmt.Sprintf("%d %s x %d webhook channels x %d events = %d deliveries (%d per channel)",
		l.tenants, tenants, l.channels, l.events, l.deliveries(), l.events)
}

// channelPath is the receiver's path of a tenant's c-th channel (from 0):
// prefix, "t" and the tenant, "/c" and the channel's number.
func channelPath(prefix string, tenant int64, c int) string {
	return fmt.Sprintf("%st%d/c%d", prefix, tenant, c+1)
}
