package channel_test

// The kinds' conformance suite: every registered kind that sends over
// HTTP, added, listed, replaced, tested, delivered to, refused and removed
// at a far end that checks what its service checks (kindtest.Fakes), on
// SQLite and PostgreSQL. E-mail, which has an SMTP server instead, is
// covered by send_test.go and events_test.go.

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestEveryKindHasAFake: a kind the registry gains is in the suite.
func TestEveryKindHasAFake(t *testing.T) {
	var want, got []string
	for _, typ := range channel.Types() {
		if typ != channel.Email {
			want = append(want, string(typ))
		}
	}
	for _, f := range kindtest.Fakes {
		got = append(got, f.Type)
	}
	if !slices.Equal(want, got) {
		t.Errorf("kindtest.Fakes are for %v, want one for each kind that sends over HTTP, in the registry's order: %v", got, want)
	}
}

func TestKindConformance(t *testing.T) {
	for _, fake := range kindtest.Fakes {
		t.Run(fake.Type, func(t *testing.T) {
			dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
				conform(t, db, fake)
			})
		})
	}
}

func conform(t *testing.T, db *bun.DB, fake kindtest.Fake) {
	ctx := context.Background()
	f := newEvFixture(t, db, channel.Config{})
	far := fake.Start(t, f.clock.Now)
	info, ok := channel.TypeInfoOf(channel.Type(fake.Type))
	if !ok {
		t.Fatalf("%s is no registered type", fake.Type)
	}
	var secret *string
	if fake.Secret != "" {
		secret = &fake.Secret
	}
	address := fake.Address(far.URL)

	// Added: the secret deskkit makes is shown once, for the kinds that
	// make one.
	added := f.add(t, f.ann, fake.Type, "conformance", address, secret)
	if (added.Secret != "") != info.OwnSecret || added.Type != info.Type || added.Address != address {
		t.Fatalf("Add = %+v, want type %s, address %s, a secret shown: %v", added, info.Type, address, info.OwnSecret)
	}
	signing := fake.Secret
	if info.OwnSecret {
		signing = added.Secret
	}

	// Listed by its type and each alias: whole for an admin, masked for
	// a user who may not see addresses.
	user := deskkit.Principal{UserID: 3, TenantID: f.ann.TenantID}
	for _, name := range append([]string{fake.Type}, info.Aliases...) {
		for _, c := range []struct {
			p    deskkit.Principal
			want string
		}{{f.ann, address}, {user, channel.MaskAddress(info.Type, address)}} {
			l, err := f.r.List(ctx, c.p, name)
			if err != nil || len(l) != 1 || l[0].ID != added.ID || l[0].Address != c.want {
				t.Fatalf("List(%s) as %+v = %+v, %v; want the channel at %s", name, c.p, l, err, c.want)
			}
		}
	}
	if masked := channel.MaskAddress(info.Type, address); masked == address {
		t.Errorf("MaskAddress(%s) shows the address whole: %s", info.Type, masked)
	}

	// Custom headers: a kind takes them as its TypeInfo says; one that
	// does not refuses them naming the field, and keeps the channel as
	// it was.
	withHeaders := channel.Input{ID: added.ID, Type: fake.Type, Name: "conformance", Address: address,
		Headers: []channel.Header{{Name: "X-Conformance", Value: "yes"}}}
	got, err := f.r.Replace(ctx, f.ann, withHeaders)
	switch {
	case info.Headers && (err != nil || len(got.Headers) != 1 || got.Headers[0].Value != "yes"):
		t.Fatalf("Replace with headers: %+v, %v; want them taken", got.Headers, err)
	case !info.Headers && !isInputError(err, "headers"):
		t.Fatalf("Replace with headers: %v; want an input error naming headers", err)
	}

	// Replaced: the name changes, the secret stays, the headers go.
	in := channel.Input{ID: added.ID, Type: fake.Type, Name: "conformance 2", Address: address}
	if _, err := f.r.Replace(ctx, f.ann, in); err != nil {
		t.Fatalf("Replace: %v", err)
	}

	// A test of the stored channel, signed with its secret.
	far.Expect(signing, kindtest.Want{Title: "conformance 2", Type: "channel.test"})
	if _, err := f.r.Test(ctx, f.ann, in); err != nil {
		_, faults := far.Taken()
		t.Fatalf("Test: %v (the far end: %v)", err, faults)
	}

	// An event, through the outbox: delivered once, as the service wants.
	ev := newEvent("task.trashed")
	far.Expect(signing, kindtest.Want{Title: ev.Title, Type: ev.Type})
	f.publish(t, f.ann.TenantID, ev)
	f.run(t)
	if d := f.only(t, added.ID); d.Status != channel.DeliverySucceeded {
		_, faults := far.Taken()
		t.Fatalf("the delivery %+v (the far end: %v)", d, faults)
	}
	if taken, faults := far.Taken(); taken != 2 || len(faults) != 0 {
		t.Fatalf("the far end took %d messages, refused %v; want the test and the event", taken, faults)
	}

	// A message the service refuses (here: not holding what it must) is a
	// failed test that says so.
	far.Expect(signing, kindtest.Want{Title: "a title no message has", Type: "no.type"})
	_, err = f.r.Test(ctx, f.ann, in)
	var de *channel.DeliveryError
	if !errors.Is(err, channel.ErrDeliveryFailed) || !errors.As(err, &de) || de.ClientMessage() == "" {
		t.Errorf("a refused test: %v, want ErrDeliveryFailed saying why", err)
	}

	// The hook removed at the far end: the channel is disabled when the
	// kind says the answer means so, and otherwise stays for a retry.
	far.SetGone(true)
	f.publish(t, f.ann.TenantID, newEvent("task.trashed"))
	f.run(t)
	c := f.channel(t, added.ID)
	if c.Enabled == fake.Disables {
		t.Errorf("after the far end's %d %q the channel is enabled: %v, want %v", fake.Gone.Status, fake.Gone.Body, c.Enabled, !fake.Disables)
	}
}
