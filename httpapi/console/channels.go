package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
)

// channelRoutes registers the channel pages: the list, the add and replace
// forms, tests, enabling and disabling, deletion through a confirmation,
// a webhook's signing secret revealed (through a confirmation) and rotated,
// a channel's deliveries with its chart, a delivery's attempts, resend and
// recover. Every read and change is the registry call the API makes
// (httpapi/channel.go, httpapi/event.go) with the session's principal, so
// the registry's authorization (admins, or the host's Authorizer) decides:
// the pages hide actions from non-admins, but never refuse on their own.
func (c *Console) channelRoutes() {
	c.sections.Channels = true
	c.page(ScopeChannels, "GET "+c.base+"channels", c.channelsPage)
	c.page(ScopeChannels, "GET "+c.base+"channels/new", c.newChannelPage)
	c.page(ScopeChannels, "POST "+c.base+"channels", c.addChannel)
	c.page(ScopeChannels, "GET "+c.base+"channels/{id}", c.channelPage)
	c.page(ScopeChannels, "GET "+c.base+"channels/{id}/edit", c.editChannelPage)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}", c.replaceChannel)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/test", c.testChannel)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/enable", c.switchChannel(true))
	c.page(ScopeChannels, "GET "+c.base+"channels/{id}/{action}", c.confirmChannel) // disable, delete, reveal
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/disable", c.switchChannel(false))
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/reveal", c.revealSecret)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/rotate", c.rotateSecret)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/delete", c.deleteChannel)
	c.page(ScopeChannels, "POST "+c.base+"channels/{id}/recover", c.recoverChannel)
	c.page(ScopeChannels, "GET "+c.base+"deliveries/{id}", c.deliveryPage)
	c.page(ScopeChannels, "POST "+c.base+"deliveries/{id}/resend", c.resendDelivery)
}

// typeChoice is a channel type the forms offer, in the reader's words.
type typeChoice struct {
	Value, Label, Field, Hint, SecretHint string
	Headers                               bool // it sends custom headers
}

// channelTypes are the types the forms offer: the registry's, in its
// order, with its words in r's language.
func (c *Console) channelTypes(r *http.Request) []typeChoice {
	l := c.localizer(r)
	var out []typeChoice
	for _, ti := range channel.TypeInfos() {
		ch := typeChoice{Value: string(ti.Type), Label: l.Write(ti.Label), Field: l.Write(ti.Field), Hint: capital(l.Write(ti.Hint)), Headers: ti.Headers}
		if !ti.SecretHint.IsZero() {
			ch.SecretHint = l.Write(ti.SecretHint)
		}
		out = append(out, ch)
	}
	return out
}

// channelTypeLabel is t in r's words: its label, or its name for a type
// no kind has.
func (c *Console) channelTypeLabel(r *http.Request, t channel.Type) string {
	for _, ct := range c.channelTypes(r) {
		if ct.Value == string(t) {
			return ct.Label
		}
	}
	return string(t)
}

// chartHours is how far back the chart of a channel's deliveries looks.
const chartHours = 24

// channelRow is a channel in the list, with its last day's deliveries.
type channelRow struct {
	channel.Channel
	TypeLabel                  string
	Succeeded, Failed, Pending int
}

type channelsView struct {
	List  []channelRow
	Admin bool // shows the actions; the registry decides whether they work
}

// channelsPage lists the tenant's channels with their state, subscriptions
// and last day's deliveries: two registry calls, whatever the number of
// channels (ListAll, and DeliveryTotalsAll for every channel at once). The
// counts are for those who may read deliveries: for anybody else the page
// is the registry's refusal (403), as the deliveries API is.
func (c *Console) channelsPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	list, err := c.cfg.Channels.ListAll(r.Context(), s.Principal)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	totals, err := c.cfg.Channels.DeliveryTotalsAll(r.Context(), s.Principal, chartHours)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := channelsView{Admin: s.Principal.Admin, List: make([]channelRow, len(list))}
	for i, ch := range list {
		t := totals[ch.ID]
		v.List[i] = channelRow{Channel: ch, TypeLabel: c.channelTypeLabel(r, ch.Type), Succeeded: t.Succeeded, Failed: t.Failed, Pending: t.Pending}
	}
	c.render(w, r, s, http.StatusOK, "channels", v)
}

// findChannel is the tenant's channel id as the list shows it to s: the
// registry's Get, one channel rather than the list.
func (c *Console) findChannel(r *http.Request, s *consoleSession, id int64) (channel.Channel, error) {
	return c.cfg.Channels.Get(r.Context(), s.Principal, id)
}

// channelForm is the add and replace form as the person filled it in.
type channelForm struct {
	ID           int64
	Type         string
	Name         string
	Address      string
	Secret       string
	RemoveSecret bool
	Events       []string // the registered types ticked
	More         string   // other types and prefixes, comma-separated
	RateLimit    string   // messages a second, as typed; "" for none
	// Headers are the custom headers' rows that were filled in, in
	// order (a row with neither name nor value is dropped).
	Headers []channel.Header
}

// headerRow is a row of the form's custom headers, numbered from 1.
type headerRow struct {
	No          int
	Name, Value string
}

// blankHeaderRows is how many empty name/value rows the form offers
// beyond the channel's headers (at most channel.MaxHeaders rows in all):
// the form needs no script to add a row; for more, save and edit again.
const blankHeaderRows = 3

// eventChoice is a registered event type the form offers.
type eventChoice struct {
	Index             int // the checkbox's number, for its id
	Name, Description string
	Example           string // the event as a webhook receives it, indented
	Checked           bool
}

type channelFormView struct {
	Form       channelForm
	Types      []typeChoice
	TypeLabel  string // the form's type in words
	Field      string // the address field's label
	TypeHint   string // what its address is
	SecretHint string // the secret its type takes; "" for none
	// HeaderRows are the custom headers' rows, the form's and blank ones,
	// for a type that sends custom headers; nil otherwise.
	HeaderRows []headerRow
	// Events are the catalogue's types, by service.
	Events []eventGroup
	Edit   bool
	Result *testOutcome // a test of the form's values
}

// testOutcome is what a test's far end answered.
type testOutcome struct {
	OK        bool
	MessageID string
	Secret    string // the throwaway secret of a webhook test
	Reason    string // why the far end did not take it
	Key       string // the eKey the API answers then (channel_test_failed)
	Status    int    // the reply's HTTP status; 0 without one
	Response  string // the start of the reply, masked as attempts' are
}

// formView fills the events the form offers from the registry's catalogue.
func (c *Console) formView(r *http.Request, f channelForm, edit bool) channelFormView {
	v := channelFormView{Form: f, Types: c.channelTypes(r), Edit: edit, TypeLabel: f.Type,
		Field: c.tr(r, "Address"), TypeHint: c.tr(r, "The channel's address.")}
	for _, ct := range v.Types {
		if ct.Value == f.Type {
			v.TypeLabel, v.Field, v.TypeHint, v.SecretHint = ct.Label, ct.Field, ct.Hint, ct.SecretHint
			if ct.Headers {
				rows := slices.Clone(f.Headers)
				for i := 0; i < blankHeaderRows && len(rows) < channel.MaxHeaders; i++ {
					rows = append(rows, channel.Header{})
				}
				for i, h := range rows {
					v.HeaderRows = append(v.HeaderRows, headerRow{No: i + 1, Name: h.Name, Value: h.Value})
				}
			}
		}
	}
	known := map[string]bool{}
	types := c.cfg.Channels.EventTypes()
	for _, t := range types {
		known[t.Name] = true
	}
	v.Events = c.eventGroups(r, types, f.Events)
	// What the catalogue does not name (prefixes) goes to the free field.
	var more []string
	for _, e := range f.Events {
		if !known[e] {
			more = append(more, e)
		}
	}
	if len(more) > 0 && v.Form.More == "" {
		v.Form.More = strings.Join(more, ", ")
		v.Form.Events = slices.DeleteFunc(slices.Clone(f.Events), func(e string) bool { return !known[e] })
	}
	return v
}

// readChannelForm reads the posted form.
func readChannelForm(r *http.Request) channelForm {
	f := channelForm{
		Type:         r.PostForm.Get("channelType"),
		Name:         r.PostForm.Get("name"),
		Address:      strings.TrimSpace(r.PostForm.Get("address")),
		Secret:       r.PostForm.Get("secret"),
		RemoveSecret: r.PostForm.Get("removeSecret") == "on",
		Events:       r.PostForm["events"],
		More:         r.PostForm.Get("more"),
		RateLimit:    strings.TrimSpace(r.PostForm.Get("rateLimit")),
	}
	names, values := r.PostForm["headerName"], r.PostForm["headerValue"]
	for i := range max(len(names), len(values)) {
		var h channel.Header
		if i < len(names) {
			h.Name = strings.TrimSpace(names[i])
		}
		if i < len(values) {
			h.Value = values[i]
		}
		if h.Name != "" || strings.TrimSpace(h.Value) != "" {
			f.Headers = append(f.Headers, h)
		}
	}
	return f
}

// input is the form as the registry takes it, as the API's body would
// carry it.
func (f channelForm) input() channel.Input {
	in := channel.Input{ID: f.ID, Type: f.Type, Name: f.Name, Address: f.Address}
	switch {
	case f.RemoveSecret:
		in.Secret = new(string)
	case f.Secret != "":
		in.Secret = &f.Secret
	}
	events := slices.Clone(f.Events)
	for part := range strings.SplitSeq(f.More, ",") {
		if p := strings.TrimSpace(part); p != "" {
			events = append(events, p)
		}
	}
	in.Events = events
	// Never nil: a test of the form sends the form's headers, not the
	// stored channel's.
	in.Headers = append([]channel.Header{}, f.Headers...)
	if f.RateLimit != "" {
		// A text that is no number is NaN, which the registry refuses
		// with its message naming rateLimit, as the API's.
		in.RateLimit = math.NaN()
		if v, err := strconv.ParseFloat(f.RateLimit, 64); err == nil {
			in.RateLimit = v
		}
	}
	return in
}

func (c *Console) newChannelPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	f := channelForm{Type: string(channel.Types()[0])}
	for _, ct := range c.channelTypes(r) {
		if ct.Value == r.URL.Query().Get("type") {
			f.Type = ct.Value
		}
	}
	c.render(w, r, s, http.StatusOK, "channels_form", c.formView(r, f, false))
}

// addedView is the page after an add: the secret, shown on this page (an
// admin may reveal it again later).
type addedView struct {
	Channel channel.Channel
	Secret  string
}

func (c *Console) addChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	f := readChannelForm(r)
	if r.PostForm.Get("do") == "test" {
		c.testForm(w, r, s, f, false)
		return
	}
	added, err := c.cfg.Channels.Add(r.Context(), s.Principal, f.input())
	if err != nil {
		c.renderProblem(w, r, s, "channels_form", c.formView(r, f, false), c.problem(r, err))
		return
	}
	if added.Secret != "" {
		// The answer of the POST itself: the secret is in no URL, no
		// cookie and no later page (the page is not stored: no-store).
		c.render(w, r, s, http.StatusCreated, "channels_added", addedView{Channel: added.Channel, Secret: added.Secret})
		return
	}
	setFlash(w, r, c.tr(r, "Added channel “%s”.", added.Name))
	redirect(w, r, fmt.Sprintf("%schannels/%d", c.base, added.ID))
}

// channelOf is the channel the path's id names, as s's principal may see
// it; false when the answer is written already (a bad id, a lookup that
// failed).
func (c *Console) channelOf(w http.ResponseWriter, r *http.Request, s *consoleSession) (channel.Channel, bool) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return channel.Channel{}, false
	}
	ch, err := c.findChannel(r, s, id)
	if err != nil {
		c.fail(w, r, s, err)
		return channel.Channel{}, false
	}
	return ch, true
}

func (c *Console) editChannelPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ch, ok := c.channelOf(w, r, s)
	if !ok {
		return
	}
	f := channelForm{ID: ch.ID, Type: string(ch.Type), Name: ch.Name, Address: ch.Address, Events: ch.Events, Headers: ch.Headers}
	if ch.RateLimit > 0 {
		f.RateLimit = strconv.FormatFloat(ch.RateLimit, 'f', -1, 64)
	}
	c.render(w, r, s, http.StatusOK, "channels_form", c.formView(r, f, true))
}

func (c *Console) replaceChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return
	}
	f := readChannelForm(r)
	f.ID = id
	if r.PostForm.Get("do") == "test" {
		c.testForm(w, r, s, f, true)
		return
	}
	ch, err := c.cfg.Channels.Replace(r.Context(), s.Principal, f.input())
	if err != nil {
		c.renderProblem(w, r, s, "channels_form", c.formView(r, f, true), c.problem(r, err))
		return
	}
	setFlash(w, r, c.tr(r, "Saved channel “%s”.", ch.Name))
	redirect(w, r, fmt.Sprintf("%schannels/%d", c.base, ch.ID))
}

// test sends a test message as the API's test does, and says what the far
// end answered. A far end that refuses is no error of the console's: the
// answer is the page, with the reason (the API's 502 channel_test_failed).
func (c *Console) test(r *http.Request, s *consoleSession, in channel.Input) (testOutcome, shownProblem) {
	res, err := c.cfg.Channels.Test(r.Context(), s.Principal, in)
	var de *channel.DeliveryError
	switch {
	case err == nil:
		return testOutcome{OK: true, MessageID: res.MessageID, Secret: res.Secret, Status: res.StatusCode, Response: res.Response}, shownProblem{Status: http.StatusOK}
	case errors.As(err, &de) && !de.Blocked:
		p := c.problem(r, de)
		return testOutcome{Reason: p.Message, Key: p.Key, Status: de.Status, Response: de.Response}, shownProblem{Status: p.Status}
	}
	return testOutcome{}, c.problem(r, err)
}

// testForm tests the values of the add or replace form without saving
// them, and shows the form again with the answer.
func (c *Console) testForm(w http.ResponseWriter, r *http.Request, s *consoleSession, f channelForm, edit bool) {
	out, p := c.test(r, s, f.input())
	v := c.formView(r, f, edit)
	if p.Message == "" {
		v.Result = &out
	}
	c.renderProblem(w, r, s, "channels_form", v, p)
}

// testChannel tests the stored channel, signed with its own secret, and
// shows its page with the far end's answer.
func (c *Console) testChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ch, ok := c.channelOf(w, r, s)
	if !ok {
		return
	}
	out, p := c.test(r, s, channel.Input{ID: ch.ID, Type: string(ch.Type), Name: ch.Name, Address: ch.Address})
	if p.Message != "" {
		c.render(w, r, s, p.Status, "error", p.errorView)
		return
	}
	c.showChannel(w, r, s, ch, p.Status, &out)
}

// channelConfirmView is the confirmation of a disable or a delete.
type channelConfirmView struct {
	Channel  channel.Channel
	Action   string
	Question string
	Button   string
	Back     string
}

func (c *Console) confirmChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, okID := pathInt(r, "id")
	action := r.PathValue("action")
	if okID && action == "test" {
		// The address htmx showed after a test's POST, loaded again.
		redirect(w, r, fmt.Sprintf("%schannels/%d", c.base, id))
		return
	}
	if !okID || (action != "disable" && action != "delete" && action != "reveal") {
		c.noSuchPage(w, r, s)
		return
	}
	ch, err := c.findChannel(r, s, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := channelConfirmView{Channel: ch, Action: action, Back: c.backToChannels(r.URL.Query().Get("back"), ch.ID)}
	switch action {
	case "reveal":
		v.Question = c.tr(r, "Reveal the signing secret of webhook “%s”? Whoever sees it can sign requests that its receiver takes. The reveal is recorded: the tenant's channels hear of it (channel.secret.revealed).", ch.Name)
		v.Button = c.tr(r, "Reveal the secret")
	case "disable":
		v.Question = c.tr(r, "Disable channel “%s”? It gets no new deliveries until it is enabled again, its pending deliveries end FAILED, and the tenant's other channels hear of it (channel.disabled).", ch.Name)
		v.Button = c.tr(r, "Disable channel")
	default:
		v.Question = c.tr(r, "Delete channel “%s” for good? Its pending deliveries end FAILED, and its log goes with the retention.", ch.Name)
		if ti, ok := channel.TypeInfoOf(ch.Type); ok && ti.OwnSecret {
			v.Question += " " + c.tr(r, "A webhook added again gets a new secret.")
		}
		v.Button = c.tr(r, "Delete channel")
	}
	c.render(w, r, s, http.StatusOK, "channels_confirm", v)
}

// switchChannel is the handler that enables a channel (on) or disables
// it, through the registry's Enable or Disable, and says which.
func (c *Console) switchChannel(on bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *consoleSession) {
		id, ok := c.pathID(w, r, s, "id")
		if !ok {
			return
		}
		turn := c.cfg.Channels.Disable
		if on {
			turn = c.cfg.Channels.Enable
		}
		ch, err := turn(r.Context(), s.Principal, id)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		if on {
			setFlash(w, r, c.tr(r, "Enabled channel “%s”: it gets the events published from now on. Failed deliveries come back with Recover.", ch.Name))
		} else {
			setFlash(w, r, c.tr(r, "Disabled channel “%s”.", ch.Name))
		}
		redirect(w, r, c.backToChannels(r.PostForm.Get("back"), ch.ID))
	}
}

func (c *Console) deleteChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return
	}
	// The name for the message, read first: after the delete it is gone.
	ch, err := c.findChannel(r, s, id)
	if err == nil {
		err = c.cfg.Channels.Delete(r.Context(), s.Principal, id)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	setFlash(w, r, c.tr(r, "Deleted channel “%s”.", ch.Name))
	redirect(w, r, c.base+"channels")
}

// backToChannels is where an enable or disable returns: the list, or the
// channel's page.
func (c *Console) backToChannels(v string, id int64) string {
	if v == "list" {
		return c.base + "channels"
	}
	return fmt.Sprintf("%schannels/%d", c.base, id)
}

// deliveryStatuses are the filter's choices.
var deliveryStatuses = []struct{ Value, Label string }{
	{"", text("Every status")}, {channel.DeliveryPending, text("Pending")}, {channel.DeliverySucceeded, text("Succeeded")}, {channel.DeliveryFailed, text("Failed")},
}

// deliveryStatusLabel is the text of a delivery's status (its filter
// choice's); the status itself when it is none of them.
func deliveryStatusLabel(status string) string {
	for _, s := range deliveryStatuses {
		if s.Value != "" && s.Value == status {
			return s.Label
		}
	}
	return status
}

const deliveriesPageSize = 20

// channelView is a channel's page.
type channelView struct {
	Channel   channel.Channel
	TypeLabel string
	Test      *testOutcome
	Chart     chart
	Statuses  any
	Status    string
	// Types are the event types the filter offers: those of the catalogue
	// that the channel's subscription takes, with what it names exactly
	// beside them; Type is the one chosen ("" for every type).
	Types []string
	Type  string
	// From and To are the time range as typed (datetime-local values, in
	// Zone); Zone names the reader's time zone, in which they are read.
	From, To string
	Zone     string
	// Filtered: a filter beyond the status is set.
	Filtered bool
	Page     channel.DeliveryPage
	PageNo   int
	Pages    int
	Prev     string
	Next     string
	Since    string // the recover form's default: a day ago, in the reader's time zone
	Admin    bool
	// Headers: the channel's type sends custom headers, which the page
	// lists (values masked as the registry answered them).
	Headers bool
	// OwnSecret: the channel's type has a signing secret of deskkit's,
	// which the page offers to reveal and rotate.
	OwnSecret bool
	Overlaps  any
	Signings  any
}

func (c *Console) channelPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ch, ok := c.channelOf(w, r, s)
	if !ok {
		return
	}
	c.showChannel(w, r, s, ch, http.StatusOK, nil)
}

// showChannel writes the channel's page: its facts, the chart of its last
// day, and a page of its deliveries under the filter (status, event type,
// from and to, the times read in the reader's zone). A filter the
// registry refuses is the page again with its message, answered 400.
func (c *Console) showChannel(w http.ResponseWriter, r *http.Request, s *consoleSession, ch channel.Channel, status int, test *testOutcome) {
	q := r.URL.Query()
	zone := c.zoneOf(r)
	v := channelView{Channel: ch, TypeLabel: c.channelTypeLabel(r, ch.Type), Test: test, Statuses: deliveryStatuses,
		Status: q.Get("status"), Type: q.Get("type"), From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")),
		Zone: c.zoneViewOf(r).Label(), PageNo: 1, Admin: s.Principal.Admin,
		Since: localInput(c.cfg.Now().Add(-24*time.Hour), zone), Overlaps: overlapChoices, Signings: signingChoices}
	v.Filtered = v.Type != "" || v.From != "" || v.To != ""
	v.Types = c.filterTypes(ch, v.Type)
	if ti, ok := channel.TypeInfoOf(ch.Type); ok {
		v.OwnSecret, v.Headers = ti.OwnSecret, ti.Headers
	}
	if p := q.Get("page"); p != "" {
		n, err := httpapi.ParseInt("page", p, 1, channel.MaxPageNo)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		v.PageNo = n
	}
	f, err := c.deliveryFilter(r, v, zone)
	var page channel.DeliveryPage
	if err == nil {
		page, err = c.cfg.Channels.Deliveries(r.Context(), s.Principal, ch.ID, f, v.PageNo, deliveriesPageSize)
	}
	var bad *deskkit.InputError
	if errors.As(err, &bad) {
		// The page, with the filter as typed and its refusal above it.
		counts, cerr := c.cfg.Channels.DeliveryCounts(r.Context(), s.Principal, ch.ID, chartHours)
		if cerr != nil {
			c.fail(w, r, s, cerr)
			return
		}
		v.Chart = newChart(counts, zone, func(f string, a ...any) string { return c.tr(r, f, a...) })
		c.renderProblem(w, r, s, "channels_channel", v, c.problem(r, err))
		return
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	counts, err := c.cfg.Channels.DeliveryCounts(r.Context(), s.Principal, ch.ID, chartHours)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Page, v.Chart = page, newChart(counts, c.zoneOf(r), func(f string, a ...any) string { return c.tr(r, f, a...) })
	v.Pages = int((page.Total + deliveriesPageSize - 1) / deliveriesPageSize)
	link := func(n int) string {
		u := url.Values{}
		for _, kv := range [][2]string{{"status", v.Status}, {"type", v.Type}, {"from", v.From}, {"to", v.To}} {
			if kv[1] != "" {
				u.Set(kv[0], kv[1])
			}
		}
		if n > 1 {
			u.Set("page", strconv.Itoa(n))
		}
		if len(u) == 0 {
			return fmt.Sprintf("%schannels/%d#deliveries", c.base, ch.ID)
		}
		return fmt.Sprintf("%schannels/%d?%s#deliveries", c.base, ch.ID, u.Encode())
	}
	if v.PageNo > 1 {
		v.Prev = link(v.PageNo - 1)
	}
	if v.PageNo < v.Pages {
		v.Next = link(v.PageNo + 1)
	}
	c.render(w, r, s, status, "channels_channel", v)
}

// deliveryFilter is the filter of v, its times read in zone: a
// datetime-local value (2026-11-24T09:00, seconds allowed) or a date as
// the API takes it (httpapi.ParseTime). A time that is neither is a
// *deskkit.InputError naming its field.
func (c *Console) deliveryFilter(r *http.Request, v channelView, zone *time.Location) (channel.DeliveryFilter, error) {
	f := channel.DeliveryFilter{Status: v.Status}
	if v.Type != "" {
		f.Types = []string{v.Type}
	}
	var err error
	if f.From, err = parseFilterTime("from", v.From, zone); err != nil {
		return f, err
	}
	f.To, err = parseFilterTime("to", v.To, zone)
	return f, err
}

// parseFilterTime reads a time of a filter: "" is the zero time; else
// as parseLocal, in zone.
func parseFilterTime(field, s string, zone *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := parseLocal(field, s, zone); err == nil {
		return t, nil
	}
	return time.Time{}, deskkit.Invalid(field, "must be a date and time such as 2026-11-24T09:00")
}

// filterTypes are the event types the deliveries filter offers for ch:
// the catalogue's types that its subscription takes (all of them for a
// channel that takes every event), the exact types it names that the
// catalogue lacks, and chosen, if it is none of them, sorted.
func (c *Console) filterTypes(ch channel.Channel, chosen string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range c.cfg.Channels.EventTypes() {
		if subscribes(ch.Events, t.Name) {
			add(t.Name)
		}
	}
	for _, e := range ch.Events {
		if !strings.HasSuffix(e, ".*") {
			add(e)
		}
	}
	add(chosen)
	slices.Sort(out)
	return out
}

// subscribes reports whether a subscription (types and prefixes ending in
// ".*"; empty for every event) takes events of type t.
func subscribes(events []string, t string) bool {
	if len(events) == 0 {
		return true
	}
	for _, e := range events {
		if e == t {
			return true
		}
		if p, ok := strings.CutSuffix(e, "*"); ok && strings.HasSuffix(p, ".") && strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// recoverChannel queues the channel's failed deliveries since a moment
// again, as POST /event/channel/{id}/recover does.
func (c *Console) recoverChannel(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return
	}
	raw := strings.TrimSpace(r.PostForm.Get("since"))
	loc := c.zoneOf(r)
	since, err := parseLocal("since", raw, loc)
	if err != nil {
		c.plainErrorIn(w, r, s, http.StatusBadRequest, c.tr(r, "Since must be a date and time such as 2026-11-24T09:00 (%s).", offsetName(c.cfg.Now(), loc)))
		return
	}
	n, err := c.cfg.Channels.Recover(r.Context(), s.Principal, id, since)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if n == 1 {
		setFlash(w, r, c.tr(r, "Queued 1 failed delivery since %s again, with the whole retry schedule.", formatIn(since, loc)))
	} else {
		setFlash(w, r, c.tr(r, "Queued %d failed deliveries since %s again, each with the whole retry schedule.", n, formatIn(since, loc)))
	}
	redirect(w, r, fmt.Sprintf("%schannels/%d", c.base, id))
}

// deliveryView is a delivery's page: the event as sent and each attempt's
// request beside its answer.
type deliveryView struct {
	channel.DeliveryDetail
	ID        int64
	TypeLabel string // the channel's type, for people; "" once deleted
	Status    string // the delivery's status, for people
	Payload   string // the event's payload, pretty-printed
	Attempts  []attemptView
}

// attemptView is one attempt: its request's and its answer's bodies
// pretty-printed where they are JSON.
type attemptView struct {
	channel.AttemptDetail
	RequestBody  string
	ResponseBody string
}

// pretty is s indented when it is JSON, else s as it is.
func pretty(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

func (c *Console) deliveryPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return
	}
	d, err := c.cfg.Channels.Inspect(r.Context(), s.Principal, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := deliveryView{DeliveryDetail: d, ID: id, Status: deliveryStatusLabel(d.Delivery.Status), Payload: pretty(string(d.Event.Payload))}
	if d.Channel.Type != "" {
		v.TypeLabel = c.channelTypeLabel(r, d.Channel.Type)
	}
	for i := len(d.Attempts) - 1; i >= 0; i-- { // the newest first
		a := d.Attempts[i]
		v.Attempts = append(v.Attempts, attemptView{AttemptDetail: a, RequestBody: pretty(a.Request.Body), ResponseBody: pretty(a.Response.Body)})
	}
	c.render(w, r, s, http.StatusOK, "channels_delivery", v)
}

func (c *Console) resendDelivery(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	id, ok := c.pathID(w, r, s, "id")
	if !ok {
		return
	}
	d, err := c.cfg.Channels.Resend(r.Context(), s.Principal, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	setFlash(w, r, c.tr(r, "Delivery %d of %s is due now: one more attempt.", d.ID, d.EventType))
	redirect(w, r, fmt.Sprintf("%schannels/%d#delivery-%d", c.base, d.ChannelID, d.ID))
}

// secretView is the page that shows a webhook's signing secret once: after
// a reveal, or a rotation (Rotated).
type secretView struct {
	Channel channel.Channel
	channel.SigningSecret
	Rotated bool
}

// overlapChoices are the rotate form's overlaps, in seconds as the API
// takes them; the default (a day) is channel.DefaultSecretOverlap.
var overlapChoices = []struct {
	Seconds int64
	Label   string
}{
	{0, text("None: the old secret stops at once")}, {3600, text("1 hour")}, {86400, text("1 day")},
	{3 * 86400, text("3 days")}, {7 * 86400, text("7 days")},
}

// signingChoices are the ways a webhook signs, as the rotate form offers
// them and the channel's page names them.
var signingChoices = []struct {
	Value channel.Signing
	Label string
}{
	{channel.SigningHMAC, text("HMAC-SHA256 with a shared secret (v1)")},
	{channel.SigningEd25519, text("Ed25519: the receiver holds a public key (v1a)")},
	{channel.SigningBoth, text("Both: each request carries the two signatures")},
}

// signingLabel is the words of s (its form choice's); s itself when it
// is none of them.
func signingLabel(s channel.Signing) string {
	for _, c := range signingChoices {
		if c.Value == s {
			return c.Label
		}
	}
	return string(s)
}

// revealSecret shows the webhook's signing secret, as POST
// /event/channel/{id}/secret/reveal answers it (the registry records the
// reveal), in the answer of the POST: in no URL and no later page.
func (c *Console) revealSecret(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ch, ok := c.channelOf(w, r, s)
	if !ok {
		return
	}
	sec, err := c.cfg.Channels.RevealSecret(r.Context(), s.Principal, ch.ID)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, http.StatusOK, "channels_secret", secretView{Channel: ch, SigningSecret: sec})
}

// rotateSecret rotates the webhook's signing secret from the channel
// page's form, as POST /event/channel/{id}/secret/rotate does, and shows
// the new secret.
func (c *Console) rotateSecret(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ch, ok := c.channelOf(w, r, s)
	if !ok {
		return
	}
	rot := channel.SecretRotation{Secret: strings.TrimSpace(r.PostForm.Get("secret")), Signing: channel.Signing(r.PostForm.Get("signing"))}
	if v := r.PostForm.Get("overlap"); v != "" {
		n, err := httpapi.ParseInt("overlap", v, 0, int(channel.MaxSecretOverlap/time.Second))
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		d := time.Duration(n) * time.Second
		rot.Overlap = &d
	}
	sec, err := c.cfg.Channels.RotateSecret(r.Context(), s.Principal, ch.ID, rot)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	ch.PreviousSecretUntil, ch.Signing, ch.PublicKey = sec.PreviousSecretUntil, sec.Signing, sec.PublicKey
	c.render(w, r, s, http.StatusOK, "channels_secret", secretView{Channel: ch, SigningSecret: sec, Rotated: true})
}
